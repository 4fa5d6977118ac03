"""CPU kernels of tensorflux/ops/stateless_random_ops.py.

Every kernel draws TensorFlow's Philox stream and spends it as TensorFlow's kernel does
(tensorflux/lib/philox.py for uniform, normal, truncated normal and integers;
tensorflux/lib/philox_samplers.py for the rejection samplers). StatelessMultinomial and
StatelessParameterizedTruncatedNormal consume one stream across rows / batches, as
TensorFlow does when it runs them in one shard (small outputs).

A large output is drawn in blocks that check the step between them (kernels/interrupt.py):
each block starts at the Philox counter of its first value (`_draw`), or, for the
rejection samplers, draws a span of outputs, each from blocks of its own (`_by_output`);
the values are those of one call.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors, resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu.random_ops import _dims, tf_multinomial
from tensorflux.kernels.cpu.random_ops import draw_philox as _draw
from tensorflux.kernels.registry import kernel_factory
from tensorflux.lib import philox, philox_samplers

_PHILOX, _AUTO = 1, 3


def _bad(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _seed_key_counter(seed):
    seed = np.asarray(seed)
    if seed.shape != (2,):
        raise _bad(f"seed must have shape [2], not [{','.join(map(str, seed.shape))}]")
    return philox.key_counter_from_seed(seed)


def _check_key_counter(key, counter, alg):
    key, counter = np.asarray(key), np.asarray(counter)
    if int(alg) not in (_PHILOX, _AUTO):
        raise _bad(f"Unsupported algorithm id: {int(alg)} (tensorflux's stateless ops run "
                   "Philox only)")
    if key.shape != (1,):
        raise _bad(f"key must have shape [1], not [{','.join(map(str, key.shape))}]. "
                   "(Note that batched keys are not supported yet.)")
    if counter.ndim != 1 or counter.shape[0] < 2:
        raise _bad(f"counter must be a vector with at least 2 elements, got shape "
                   f"[{','.join(map(str, counter.shape))}]")
    return key, counter


_DISTRIBUTIONS = {"Uniform": philox.uniform, "Normal": philox.normal,
                  "TruncatedNormal": philox.truncated_normal}


def _float_kernel(op_type: str, dist, seeded: bool):
    @kernel_factory(op_type)
    def factory(node):
        out_dtype = node.attrs["dtype"].as_numpy_dtype

        if seeded:
            def compute(ctx, shape, seed):
                key, counter = _seed_key_counter(seed)
                return _draw(ctx, dist, out_dtype, _dims(shape), key, counter)
        else:
            def compute(ctx, shape, key, counter, alg):
                key, counter = _check_key_counter(key, counter, alg)
                return _draw(ctx, dist, out_dtype, _dims(shape), key, counter)

        return compute

    return factory


for _name, _dist in _DISTRIBUTIONS.items():
    _op = "StatelessTruncatedNormal" if _name == "TruncatedNormal" else f"StatelessRandom{_name}"
    _float_kernel(_op, _dist, seeded=True)
    _float_kernel(_op + "V2", _dist, seeded=False)


def _int_range(minval, maxval):
    if np.ndim(minval) or np.ndim(maxval):
        raise _bad(f"minval must be 0-D, got shape {list(np.shape(minval))}"
                   if np.ndim(minval) else
                   f"maxval must be 0-D, got shape {list(np.shape(maxval))}")
    if not minval < maxval:
        raise _bad(f"Need minval < maxval, got {minval} >= {maxval}")


@kernel_factory("StatelessRandomUniformInt")
def _uniform_int(node):
    out_dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, shape, seed, minval, maxval):
        dims = _dims(shape)
        key, counter = _seed_key_counter(seed)
        _int_range(minval, maxval)
        return _draw(ctx, philox.uniform_int, out_dtype, dims, key, counter, minval, maxval)

    return compute


@kernel_factory("StatelessRandomUniformIntV2")
def _uniform_int_v2(node):
    out_dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, shape, key, counter, alg, minval, maxval):
        dims = _dims(shape)
        key, counter = _check_key_counter(key, counter, alg)
        _int_range(minval, maxval)
        return _draw(ctx, philox.uniform_int, out_dtype, dims, key, counter, minval, maxval)

    return compute


@kernel_factory("StatelessRandomUniformFullInt")
def _uniform_full_int(node):
    out_dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, shape, seed):
        if np.asarray(seed).dtype.kind == "u":
            raise _bad(f"Invalid seed type: {np.asarray(seed).dtype.name}")
        key, counter = _seed_key_counter(seed)
        return _draw(ctx, philox.uniform_full_int, out_dtype, _dims(shape), key, counter)

    return compute


@kernel_factory("StatelessRandomUniformFullIntV2")
def _uniform_full_int_v2(node):
    out_dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, shape, key, counter, alg):
        key, counter = _check_key_counter(key, counter, alg)
        return _draw(ctx, philox.uniform_full_int, out_dtype, _dims(shape), key, counter)

    return compute


@kernel_factory("StatelessRandomGetKeyCounter")
def _get_key_counter(node):
    def compute(ctx, seed):
        return _seed_key_counter(seed)

    return compute


@kernel_factory("StatelessRandomGetKeyCounterAlg")
def _get_key_counter_alg(node):
    def compute(ctx, seed):
        key, counter = _seed_key_counter(seed)
        return key, counter, np.int32(_PHILOX)

    return compute


@kernel_factory("StatelessRandomGetAlg")
def _get_alg(node):
    return lambda ctx: np.int32(_PHILOX)


@kernel_factory("StatelessMultinomial")
def _multinomial(node):
    out_dtype = node.attrs["output_dtype"].as_numpy_dtype

    def compute(ctx, logits, num_samples, seed):
        logits = np.asarray(logits)
        if logits.ndim != 2:
            raise _bad(f"logits should be a matrix, got shape {list(logits.shape)}")
        num_samples = int(num_samples)
        if num_samples < 0:
            raise _bad(f"num_samples should be nonnegative, got {num_samples}")
        batch, classes = logits.shape
        if classes == 0 and batch * num_samples:
            raise _bad("num_classes should be positive, got 0")
        key, counter = _seed_key_counter(seed)
        return tf_multinomial(ctx, logits, num_samples, key, counter, out_dtype)

    return compute


# ---- rejection samplers (tensorflux/lib/philox_samplers.py) ---------------------------------


def _sample_dims(shape, params_shape) -> tuple:
    dims = _dims(shape)
    params_shape = tuple(params_shape)
    if params_shape and dims[len(dims) - len(params_shape):] != params_shape:
        raise _bad(f"Shape passed in must end with broadcasted shape: "
                   f"[{','.join(map(str, dims))}] vs [{','.join(map(str, params_shape))}]")
    return dims


# The rejection samplers: ~0.2-2 us per value (interrupt.blocked's cost per byte of float64).
_SAMPLER_COST = 128


def _by_output(ctx, sampler, key, counter, params, num_samples: int, *args,
               prefix: bool = False):
    """sampler(key, counter, params, [*args before num_samples if prefix], num_samples,
    *args) of shape (num_samples, params.size); a large one in blocks of the outputs'
    parameter-major order (each output draws from blocks of its own) that check the step
    between them."""
    lead = args if prefix else ()
    tail = () if prefix else args
    total = params.size * num_samples
    if not interrupt.blocked(total * 8, _SAMPLER_COST):
        return sampler(key, counter, params, *lead, num_samples, *tail)
    flat = np.empty(total)
    for lo, hi in interrupt.flat_spans(ctx, total, 8, cost=_SAMPLER_COST):
        flat[lo:hi] = sampler(key, counter, params, *lead, num_samples, *tail, span=(lo, hi))
    return flat.reshape(params.size, num_samples).T


@kernel_factory("StatelessRandomPoisson")
def _poisson(node):
    out_dtype = np.dtype(node.attrs["dtype"].as_numpy_dtype)
    highest = float(np.finfo(out_dtype).max if out_dtype.kind == "f"
                    else np.iinfo(out_dtype).max)

    def compute(ctx, shape, seed, lam):
        dims = _sample_dims(shape, np.shape(lam))
        key, counter = _seed_key_counter(seed)
        n = int(np.prod(dims, dtype=np.int64))
        if n == 0:
            return np.zeros(dims, out_dtype)
        resource_guard.check_shape(dims, np.float64, ctx)
        num_samples = n // max(np.size(lam), 1)
        samples = _by_output(ctx, philox_samplers.poisson, key, counter, np.asarray(lam),
                             num_samples, highest)
        return samples.astype(out_dtype).reshape(dims)

    return compute


@kernel_factory("StatelessRandomGammaV3")
def _gamma(node):
    def compute(ctx, shape, key, counter, alg, alpha):
        key, counter = _check_key_counter(key, counter, alg)
        dims = _sample_dims(shape, np.shape(alpha))
        n = int(np.prod(dims, dtype=np.int64))
        alpha = np.asarray(alpha)
        if n == 0:
            return np.zeros(dims, alpha.dtype)
        if alpha.size == 0:
            raise _bad("Input alpha should have non-zero element count, got: 0")
        resource_guard.check_shape(dims, np.float64, ctx)
        samples = _by_output(ctx, philox_samplers.gamma, key, counter, alpha,
                             n // alpha.size)
        return samples.astype(alpha.dtype).reshape(dims)

    return compute


@kernel_factory("StatelessRandomBinomial")
def _binomial(node):
    out_dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, shape, seed, counts, probs):
        try:
            params = np.broadcast_shapes(np.shape(counts), np.shape(probs))
        except ValueError:
            raise _bad(f"counts and probs must have compatible batch dimensions: "
                       f"{list(np.shape(counts))} vs. {list(np.shape(probs))}") from None
        dims = _sample_dims(shape, params)
        key, counter = _seed_key_counter(seed)
        n = int(np.prod(dims, dtype=np.int64))
        if n == 0:
            return np.zeros(dims, out_dtype)
        resource_guard.check_shape(dims, np.float64, ctx)
        batches = int(np.prod(params, dtype=np.int64))
        samples = _by_output(ctx, philox_samplers.binomial, key, counter,
                             np.broadcast_to(counts, params), n // batches,
                             np.broadcast_to(probs, params), prefix=True)
        return samples.astype(out_dtype).reshape(dims)

    return compute


@kernel_factory("StatelessParameterizedTruncatedNormal")
def _parameterized_truncated_normal(node):
    def compute(ctx, shape, seed, means, stddevs, minvals, maxvals):
        values = [np.asarray(v) for v in (means, stddevs, minvals, maxvals)]
        try:
            params = np.broadcast_shapes(*(v.shape for v in values))
        except ValueError:
            raise _bad("means, stddevs, minvals and maxvals must have compatible batch "
                       "dimensions") from None
        dims = _sample_dims(shape, params)
        key, counter = _seed_key_counter(seed)
        n = int(np.prod(dims, dtype=np.int64))
        if n == 0:
            return np.zeros(dims, values[0].dtype)
        resource_guard.check_shape(dims, values[0].dtype, ctx)
        batches = int(np.prod(params, dtype=np.int64))
        try:
            samples = philox_samplers.parameterized_truncated_normal(
                key, counter, *(np.broadcast_to(v, params) for v in values), n // batches,
                poll=lambda: interrupt.check(ctx))
        except ValueError as e:
            raise _bad(str(e)) from None
        return samples.reshape(dims)

    return compute


@kernel_factory("RngReadAndSkip")
def _rng_read_and_skip(node):
    """Returns a Generator's Philox state [counter_lo, counter_hi, key] (int64) and moves
    its 128-bit counter on by 256 blocks per requested output (TF's reservation)."""
    from tensorflux.framework import dtypes
    from tensorflux.kernels.cpu.state_ops import _existing, as_handle

    def compute(ctx, resource, alg, delta):
        if int(alg) not in (_PHILOX, _AUTO):
            raise _bad(f"Unsupported algorithm id: {int(alg)}")
        var = _existing(ctx, as_handle(resource), dtypes.int64, "update")
        with var.lock:
            state = np.asarray(var.value)
            if state.shape != (3,):
                raise _bad(f"The size of the state must be 3 for Philox; got "
                           f"{state.size}")
            old = state.copy()
            lo, hi = old[:2].view(np.uint64)
            skip = np.uint64(int(delta) * philox.RESERVED_SAMPLES_PER_OUTPUT % 2**64)
            with np.errstate(over="ignore"):
                new_lo = lo + skip
                new_hi = hi + np.uint64(new_lo < skip)
            var.value = np.array([new_lo, new_hi, old[2:].view(np.uint64)[0]],
                                 np.uint64).view(np.int64)
        return old

    return compute
