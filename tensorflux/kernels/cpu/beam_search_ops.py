"""CPU kernel of tensorflux/ops/beam_search_ops.py: GatherTree."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu._nn_common import _invalid
from tensorflux.kernels.registry import kernel


@kernel("GatherTree")
def _gather_tree(ctx, step_ids, parent_ids, max_sequence_lengths, end_token):
    if step_ids.ndim != 3 or step_ids.shape != parent_ids.shape:
        raise _invalid(f"step_ids and parent_ids must be of shape [max_time, batch_size, "
                       f"beam_width], got {list(step_ids.shape)} and "
                       f"{list(parent_ids.shape)}")
    max_time, batch, beams = step_ids.shape
    lengths = np.asarray(max_sequence_lengths).reshape(-1)
    if lengths.shape != (batch,):
        raise _invalid(f"max_sequence_lengths must be of shape [{batch}], got "
                       f"{list(lengths.shape)}")
    end = int(end_token)
    out = np.full(step_ids.shape, end, dtype=step_ids.dtype)
    for b in range(batch):
        last = min(int(lengths[b]), max_time)
        for k in range(beams):
            parent = k
            for t in range(last - 1, -1, -1):
                out[t, b, k] = step_ids[t, b, parent]
                parent = parent_ids[t, b, parent]
                if not 0 <= parent < beams and t > 0:
                    raise _invalid(f"parent id {parent} outside [0, {beams})")
            ended = False
            for t in range(last):  # everything after the first end token is the end token
                if ended:
                    out[t, b, k] = end
                elif out[t, b, k] == end:
                    ended = True
    return out
