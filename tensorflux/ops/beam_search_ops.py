"""The GatherTree op (beam search's backtracking: the ids of each beam's whole path from
the per-step ids and parent beams) and its wrapper `gather_tree`. Kernel:
kernels/cpu/beam_search_ops.py."""

from __future__ import annotations

from tensorflux.framework import common_shapes
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor

define_op("GatherTree",
          inputs=["step_ids: T", "parent_ids: T", "max_sequence_lengths: int32",
                  "end_token: T"], outputs=["beams: T"], attrs=["T: {int32}"],
          shape_fn=common_shapes.unchanged)
not_differentiable("GatherTree")


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token, name=None):
    """Full beams [max_time, batch, beam] from step ids and parent beam ids: each beam
    traced back from its last step (per batch entry, `max_sequence_lengths`), positions
    after its first `end_token` set to `end_token`."""
    return apply_op("GatherTree", step_ids=convert_to_tensor(step_ids),
                    parent_ids=convert_to_tensor(parent_ids),
                    max_sequence_lengths=convert_to_tensor(max_sequence_lengths),
                    end_token=convert_to_tensor(end_token), name=name)
