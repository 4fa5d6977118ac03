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
    return interrupt.elementwise(ctx, script_of, np.asarray(x), np.int32, _COST)
