"""CPU kernels of the random ops (tensorflux/ops/random_ops.py).

Generator state. TensorFlow keeps the kernel of a stateful op alive for the whole Session
(its OpSegment), so a random op continues one sequence across runs, whichever fetches a run
asks for. Here each random node owns one NumPy Generator per Session (`GeneratorState`),
kept in the device's ResourceMgr under the private container `_random_ops` and created on the
node's first run: seeded from (seed, seed2) when either is non-zero, from OS entropy
otherwise. A lock guards it, since concurrent steps may run the same node (the candidate
samplers keep theirs the same way, through `state_getter`). The values need not equal
TensorFlow's bits; the seeding rules are TensorFlow's.

A large output is drawn in blocks of the flat stream that check the step between them
(kernels/interrupt.py): NumPy's generators continue one stream across calls, so the values
are those of one call. A step stopped in the middle leaves its generator part-way along.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from tensorflux.framework import dtypes, errors, resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel_factory

RANDOM_CONTAINER = "_random_ops"


class GeneratorState:
    """One random node's Generator in one Session, with the lock that guards it."""

    __slots__ = ("lock", "gen")

    def __init__(self, seed: int, seed2: int):
        self.lock = threading.Lock()
        if seed == 0 and seed2 == 0:
            self.gen = np.random.default_rng()  # unseeded: OS entropy
        else:
            mask = (1 << 64) - 1
            self.gen = np.random.default_rng([seed & mask, seed2 & mask])


def state_getter(node, make=GeneratorState):
    """A function ctx -> this node's generator state in ctx's Session (cached per device).

    Args:
      node: the random node; its `seed` and `seed2` attrs seed the generator.
      make: `make(seed, seed2)` creates the state on the node's first run in a Session
        (GeneratorState, or a subclass keeping more per-Session state).
    """
    seed, seed2 = int(node.attrs.get("seed", 0)), int(node.attrs.get("seed2", 0))
    name = node.name
    last: list = [(None, None)]  # (resource manager, state) of the last lookup, one object

    def get(ctx) -> GeneratorState:
        rm = ctx.resource_mgr
        cached_rm, state = last[0]
        if cached_rm is rm:
            return state
        state = rm.lookup_or_create(RANDOM_CONTAINER, name,
                                    lambda: make(seed, seed2))
        last[0] = (rm, state)
        return state

    return get


def _dims(shape) -> tuple[int, ...]:
    shape = np.asarray(shape)
    if shape.ndim != 1:
        raise errors.InvalidArgumentError(
            None, None, f"shape must be a vector of {{int32,int64}}, got shape "
            f"[{','.join(str(d) for d in shape.shape)}]")
    dims = tuple(int(d) for d in shape)
    for d in dims:
        if d < 0:
            raise errors.InvalidArgumentError(None, None, f"Dimension {d} must be >= 0")
    return dims


# Low-precision uniforms: exact multiples of 2**-mantissa_bits in [0, 1), as TF draws them.
_MANTISSA_BITS = {dtypes.float16: 10, dtypes.bfloat16: 7}


def _uniform(gen, dims, dtype):
    np_dtype = dtype.as_numpy_dtype
    if dtype in _MANTISSA_BITS:
        scale = 1 << _MANTISSA_BITS[dtype]
        return (gen.integers(0, scale, dims) / scale).astype(np_dtype)
    return gen.random(dims, dtype=np_dtype)


def _normal(gen, dims, dtype):
    if dtype in (dtypes.float32, dtypes.float64):
        return gen.standard_normal(dims, dtype=dtype.as_numpy_dtype)
    return gen.standard_normal(dims, dtype=np.float32).astype(dtype.as_numpy_dtype)


def _truncated(gen, dims, dtype, ctx=None):
    """Standard normal values, each redrawn while its magnitude exceeds 2 (all of them
    drawn first, then the rejected ones in order, round after round)."""
    work = np.float64 if dtype is dtypes.float64 else np.float32
    n = math.prod(dims)
    if interrupt.blocked(n * np.dtype(work).itemsize):
        return _truncated_blocked(gen, n, work, ctx).reshape(dims) \
            .astype(dtype.as_numpy_dtype, copy=False)
    out = gen.standard_normal(dims, dtype=work)
    bad = np.abs(out) > 2.0
    n = int(bad.sum())
    while n:
        out[bad] = gen.standard_normal(n, dtype=work)
        bad = np.abs(out) > 2.0
        n = int(bad.sum())
    return out.astype(dtype.as_numpy_dtype, copy=False)


def _drawn(ctx, n: int, dtype, draw) -> np.ndarray:
    """n values of `dtype` from `draw(count)`, drawn in blocks of the flat stream that
    check step `ctx` between them."""
    out = np.empty(n, dtype)
    for lo, hi in interrupt.flat_spans(ctx, n, out.itemsize):
        out[lo:hi] = draw(hi - lo)
    return out


def _truncated_blocked(gen, n: int, work, ctx) -> np.ndarray:
    """`_truncated`'s values for a large output, in blocks: the same draws in the same
    order (the rejected positions of each round in increasing order)."""
    out = _drawn(ctx, n, work, lambda k: gen.standard_normal(k, dtype=work))
    while True:
        bad = np.concatenate([lo + np.flatnonzero(np.abs(out[lo:hi]) > 2.0)
                              for lo, hi in interrupt.flat_spans(ctx, n, out.itemsize)])
        if not bad.size:
            return out
        out[bad] = _drawn(ctx, bad.size, work, lambda k: gen.standard_normal(k, dtype=work))


_SAMPLERS = {"RandomUniform": _uniform, "RandomStandardNormal": _normal,
             "TruncatedNormal": _truncated}


@kernel_factory("RandomUniform", "RandomStandardNormal", "TruncatedNormal")
def _random_float(node):
    sample = _SAMPLERS[node.op]
    dtype = node.attrs["dtype"]
    state_of = state_getter(node)

    def compute(ctx, shape):
        dims = _dims(shape)
        resource_guard.check_shape(dims, dtype, ctx)
        n = math.prod(dims)
        state = state_of(ctx)
        with state.lock:
            if sample is _truncated:
                return _truncated(state.gen, dims, dtype, ctx)
            if not interrupt.blocked(n * dtype.size):
                return sample(state.gen, dims, dtype)
            return _drawn(ctx, n, dtype.as_numpy_dtype,
                          lambda k: sample(state.gen, (k,), dtype)).reshape(dims)

    return compute


def _scalar(value, what: str):
    value = np.asarray(value)
    if value.ndim != 0:
        raise errors.InvalidArgumentError(
            None, None, f"{what} must be 0-D, got shape "
            f"[{','.join(str(d) for d in value.shape)}]")
    return int(value)


@kernel_factory("RandomUniformInt")
def _random_uniform_int(node):
    np_dtype = node.attrs["Tout"].as_numpy_dtype
    state_of = state_getter(node)

    def compute(ctx, shape, minval, maxval):
        dims = _dims(shape)
        lo, hi = _scalar(minval, "minval"), _scalar(maxval, "maxval")
        if not lo < hi and int(np.prod(dims)) > 0:
            raise errors.InvalidArgumentError(None, None, f"Need minval < maxval: {lo} >= {hi}")
        resource_guard.check_shape(dims, np_dtype, ctx)
        n = math.prod(dims)
        state = state_of(ctx)
        with state.lock:
            if not interrupt.blocked(n * np.dtype(np_dtype).itemsize):
                return state.gen.integers(lo, hi, size=dims, dtype=np_dtype)
            return _drawn(ctx, n, np_dtype, lambda k: state.gen.integers(
                lo, hi, size=k, dtype=np_dtype)).reshape(dims)

    return compute


@kernel_factory("RandomShuffle")
def _random_shuffle(node):
    state_of = state_getter(node)

    def compute(ctx, value):
        value = np.asarray(value)
        if value.ndim == 0 or value.shape[0] <= 1:
            return value.copy()
        state = state_of(ctx)
        with state.lock:
            perm = state.gen.permutation(value.shape[0])  # one shuffle: linear in the rows
        out = np.empty_like(value)
        for lo, hi in interrupt.spans(perm.size, value.size // perm.size, ctx):  # gather in blocks
            out[lo:hi] = value[perm[lo:hi]]
        return out

    return compute


@kernel_factory("Multinomial")
def _multinomial(node):
    np_dtype = node.attrs["output_dtype"].as_numpy_dtype
    state_of = state_getter(node)

    def compute(ctx, logits, num_samples):
        logits = np.asarray(logits)
        if logits.ndim != 2:
            raise errors.InvalidArgumentError(
                None, None, "logits should be a matrix, got shape "
                f"[{','.join(str(d) for d in logits.shape)}]")
        n = _scalar(num_samples, "num_samples")
        if n < 0:
            raise errors.InvalidArgumentError(None, None,
                                              f"num_samples should be nonnegative, got {n}")
        batch, classes = logits.shape
        if classes == 0 and batch > 0:
            raise errors.InvalidArgumentError(None, None,
                                              "num_classes should be positive, got 0")
        resource_guard.check_shape((batch, n), np.float64, ctx)  # u, the widest temporary
        state = state_of(ctx)
        with state.lock:
            u = _drawn(ctx, batch * n, np.float64, state.gen.random).reshape(batch, n)
        return _sample_categorical(logits.astype(np.float64), u, ctx).astype(np_dtype)

    return compute


def _sample_categorical(logits: np.ndarray, u: np.ndarray, ctx=None) -> np.ndarray:
    """Row b of the result: indices drawn by inverting the CDF of softmax(logits[b]) at u[b]
    (in blocks of u that check step `ctx` between them when it is large)."""
    out = np.zeros(u.shape, np.int64)
    if logits.size == 0:
        return out
    peak = np.max(logits, axis=1, keepdims=True)
    peak[~np.isfinite(peak)] = 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        cdf = np.cumsum(np.exp(logits - peak), axis=1)
    for idx in interrupt.regions(u.shape, u.itemsize, ctx):
        rows, cols = (idx + (slice(None), slice(None)))[:2]
        for b in range(logits.shape[0])[rows] if isinstance(rows, slice) else (rows,):
            total = cdf[b, -1]
            if np.isfinite(total) and total > 0:
                # side="right" never picks a class of probability zero
                out[b, cols] = np.searchsorted(cdf[b], u[b, cols] * total, side="right")
    return out
