"""CPU kernels of tensorflux/ops/random_ext_ops.py: gamma and Poisson samples from each
node's per-Session Generator (kernels/cpu/random_ops.py explains the state), and
RandomGammaGrad from the derivatives of the regularized incomplete gamma function."""

from __future__ import annotations

import math
import warnings

import numpy as np

from tensorflux.framework import errors, resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import _LOW_PRECISION, _binary
from tensorflux.kernels.cpu.random_ops import _dims, state_getter
from tensorflux.kernels.cpu.special_math_ops import _igamma_grad_a, _scipy
from tensorflux.kernels.registry import kernel, kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


_COST = 4  # NumPy's gamma and Poisson samplers: ~40 ns a value (interrupt.blocked)


def _per_parameter(ctx, dims, params, draw, dtype=np.float64):
    """draw(params, size=dims + params.shape): one sample per parameter per index of
    `dims`, drawn in C order; a large output in blocks of that order that check step
    `ctx` between them (the generator's stream continues across calls: the same values)."""
    rows, per = math.prod(dims), params.size
    if not interrupt.blocked(rows * per * 8, _COST):
        return draw(params, dims + params.shape)
    flat = params.reshape(-1)
    out = np.empty((rows, per), dtype)
    for idx in interrupt.regions(out.shape, out.itemsize, ctx, _COST):
        if len(idx) == 1:  # whole rows
            out[idx] = draw(flat, (idx[0].stop - idx[0].start, per))
        else:  # part of one row
            out[idx] = draw(flat[idx[1]], (idx[1].stop - idx[1].start,))
    return out.reshape(dims + params.shape)


@kernel_factory("RandomGamma")
def _random_gamma(node):
    state_of = state_getter(node)

    def compute(ctx, shape, alpha):
        dims = _dims(shape)
        work = alpha.astype(np.float64)
        resource_guard.check_shape(dims + alpha.shape, np.float64, ctx)
        state = state_of(ctx)
        with state.lock:
            out = _per_parameter(ctx, dims, work, lambda p, size: state.gen.standard_gamma(
                p, size=size))
        return np.asarray(out).astype(alpha.dtype)

    return compute


@kernel_factory("RandomPoissonV2")
def _random_poisson(node):
    state_of = state_getter(node)
    out_dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, shape, rate):
        dims = _dims(shape)
        lam = rate.astype(np.float64)
        if np.any(lam < 0):
            raise errors.InvalidArgumentError(None, None, "rate must be non-negative")
        resource_guard.check_shape(dims + lam.shape, np.float64, ctx)
        lam = np.where(np.isfinite(lam), lam, 0)
        state = state_of(ctx)
        with state.lock:
            out = _per_parameter(ctx, dims, lam, lambda p, size: state.gen.poisson(
                p, size=size), np.int64)
        return np.asarray(out).astype(out_dtype)

    return compute


def _gamma_sample_grad(alpha, sample):
    """d sample / d alpha at fixed CDF value: -(dP/dalpha) / (dP/dx)."""
    special = _scipy("gammaln")
    a = np.asarray(alpha, np.float64)
    x = np.asarray(sample, np.float64)
    log_density = (a - 1) * np.log(x) - x - special.gammaln(a)
    out = -_igamma_grad_a(special, a, x) / np.exp(log_density)
    dtype = np.asarray(alpha).dtype
    return out.astype(np.float32 if dtype in _LOW_PRECISION else dtype)


kernel("RandomGammaGrad")(_binary(_gamma_sample_grad))
