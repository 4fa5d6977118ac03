"""CPU kernel of UnicodeScript (tensorflux/ops/unicode_script_ops.py): a binary search of
the script runs of tensorflux/lib/unicode_scripts.py."""

from __future__ import annotations

from tensorflux.kernels.registry import kernel
from tensorflux.lib.unicode_scripts import script_of


@kernel("UnicodeScript")
def _unicode_script(ctx, x):
    return script_of(x)
