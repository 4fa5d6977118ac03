"""CPU kernel of UnicodeScript (tensorflux/ops/unicode_script_ops.py): a binary search of
the script runs of tensorflux/lib/unicode_scripts.py."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel
from tensorflux.lib.unicode_scripts import script_of

# script_of's time per output byte against a fill's (a search and five passes an element):
# the blocks it writes between checks of the step stay a few milliseconds long
_COST = 64


@kernel("UnicodeScript")
def _unicode_script(ctx, x):
    x = np.asarray(x)
    if not interrupt.blocked(x.size * 4, _COST):
        return script_of(x)
    flat, out = x.reshape(-1), np.empty(x.size, np.int32)
    for lo, hi in interrupt.flat_spans(ctx, x.size, 4, cost=_COST):
        out[lo:hi] = script_of(flat[lo:hi])  # each element by itself: the values of one call
    return out.reshape(x.shape)
