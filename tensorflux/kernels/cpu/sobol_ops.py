"""CPU kernel of SobolSample (tensorflux/ops/sobol_ops.py), on SciPy's unscrambled Sobol
engine, which uses the same Joe-Kuo direction numbers and the same (Gray-code) point order as
TensorFlow: TensorFlow's point i (from 0) is the engine's point skip + 1 + i.
"""

from __future__ import annotations

import warnings

import numpy as np

from tensorflux.framework import resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import _invalid
from tensorflux.kernels.registry import kernel_factory

_MAX_DIM = 21200  # TensorFlow's bound (its table of direction numbers)
_BITS = 30
_COST = 8  # a value of the engine takes ~30 ns: blocks of ~2**18 values (interrupt.spans)


@kernel_factory("SobolSample", expensive=True)
def _sobol_sample(node):
    dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, dim, num_results, skip):
        for value, what in ((dim, "dim"), (num_results, "num_results"), (skip, "skip")):
            if np.ndim(value) != 0:
                raise _invalid(f"{what} must be a scalar, got shape {list(np.shape(value))}")
        dim, num, skip = int(dim), int(num_results), int(skip)
        if dim < 1:
            raise _invalid("dim must be at least one")
        if dim > _MAX_DIM:
            raise _invalid(f"dim must be at most {_MAX_DIM}")
        if num < 1:
            raise _invalid("num_results must be at least one")
        if skip < 0:
            raise _invalid("skip must be non-negative")
        if skip + 1 + num > 2 ** _BITS:
            raise _invalid(f"skip + num_results must be below 2^{_BITS}, got {skip + num}")
        resource_guard.check_shape((num, dim), np.float64, ctx)
        from scipy.stats import qmc

        engine = qmc.Sobol(dim, scramble=False, bits=_BITS)
        engine.fast_forward(skip + 1)
        out = np.empty((num, dim), dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy warns when n is not a power of two
            # The engine goes on from where it stopped: blocks of points are the points of
            # one call; the step is checked between them.
            for lo, hi in interrupt.spans(num, dim * _COST):
                out[lo:hi] = engine.random(hi - lo)
        return out

    return compute
