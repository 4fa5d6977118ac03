"""CPU kernels of tensorflux/ops/random_ext_ops.py: gamma and Poisson samples, TensorFlow's
values from each node's per-Session Philox stream (kernels/cpu/random_ops.py explains the
state), and RandomGammaGrad from the derivatives of the regularized incomplete gamma
function."""

from __future__ import annotations

import math
import warnings

import numpy as np

from tensorflux.framework import errors, resource_guard
from tensorflux.kernels.cpu._math_common import _LOW_PRECISION, _binary
from tensorflux.kernels.cpu.random_ops import _dims, state_getter
from tensorflux.kernels.cpu.special_math_ops import _igamma_grad_a, _scipy
from tensorflux.kernels.cpu.stateless_random_ops import _by_output
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib import philox_samplers

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


# Both draw TF's values: each run reserves 256 Philox blocks per output of the node's stream
# (TF's ReserveRandomOutputs(n, 256)) and samples as TF's stateless kernels do
# (lib/philox_samplers.py; TF computes the stateful ones in double too).


@kernel_factory("RandomGamma")
def _random_gamma(node):
    state_of = state_getter(node)

    def compute(ctx, shape, alpha):
        dims = _dims(shape)
        work = alpha.astype(np.float64).reshape(-1)
        resource_guard.check_shape(dims + alpha.shape, np.float64, ctx)
        num_samples = math.prod(dims)
        if num_samples == 0 or work.size == 0:
            return np.zeros(dims + alpha.shape, alpha.dtype)
        state = state_of(ctx)
        with state.lock:
            key, counter = state.reserve(num_samples * work.size)
        out = _by_output(ctx, philox_samplers.gamma, key, counter, work, num_samples)
        return out.reshape(dims + alpha.shape).astype(alpha.dtype)

    return compute


@kernel_factory("RandomPoissonV2")
def _random_poisson(node):
    state_of = state_getter(node)
    out_dtype = np.dtype(node.attrs["dtype"].as_numpy_dtype)
    highest = float(np.finfo(out_dtype).max if out_dtype.kind == "f"
                    else np.iinfo(out_dtype).max)

    def compute(ctx, shape, rate):
        dims = _dims(shape)
        lam = rate.astype(np.float64).reshape(-1)
        if np.any(lam < 0):
            raise errors.InvalidArgumentError(None, None, "rate must be non-negative")
        resource_guard.check_shape(dims + rate.shape, np.float64, ctx)
        lam = np.where(np.isfinite(lam), lam, 0)
        num_samples = math.prod(dims)
        if num_samples == 0 or lam.size == 0:
            return np.zeros(dims + rate.shape, out_dtype)
        state = state_of(ctx)
        with state.lock:
            key, counter = state.reserve(num_samples * lam.size)
        out = _by_output(ctx, philox_samplers.poisson, key, counter, lam, num_samples,
                         highest)
        return out.reshape(dims + rate.shape).astype(out_dtype)

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
