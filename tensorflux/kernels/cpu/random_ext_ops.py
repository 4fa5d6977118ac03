"""CPU kernels of tensorflux/ops/random_ext_ops.py: gamma and Poisson samples from each
node's per-Session Generator (kernels/cpu/random_ops.py explains the state), and
RandomGammaGrad from the derivatives of the regularized incomplete gamma function."""

from __future__ import annotations

import warnings

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu._math_common import _LOW_PRECISION, _binary
from tensorflux.kernels.cpu.random_ops import _dims, state_getter
from tensorflux.kernels.cpu.special_math_ops import _igamma_grad_a, _scipy
from tensorflux.kernels.registry import kernel, kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


@kernel_factory("RandomGamma")
def _random_gamma(node):
    state_of = state_getter(node)

    def compute(ctx, shape, alpha):
        dims = _dims(shape)
        work = alpha.astype(np.float64)
        state = state_of(ctx)
        with state.lock:
            out = state.gen.standard_gamma(work, size=dims + alpha.shape)
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
        state = state_of(ctx)
        with state.lock:
            out = state.gen.poisson(np.where(np.isfinite(lam), lam, 0), size=dims + lam.shape)
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
