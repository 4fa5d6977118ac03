"""CPU kernels of the math ops (tensorflux/ops/math_ops.py)."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.registry import kernel


@kernel("AddV2", "Add")
def _add(ctx, x, y):
    return np.add(x, y)
