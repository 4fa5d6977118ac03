"""CPU kernels of the random ops (tensorflux/ops/random_ops.py).

Generator state. TensorFlow keeps the kernel of a stateful op alive for the whole Session
(its OpSegment), so a random op continues one sequence across runs, whichever fetches a run
asks for. Here each random node owns one state per Session (`GeneratorState`), kept in the
device's ResourceMgr under the private container `_random_ops` and created on the node's
first run: seeded from (seed, seed2) when either is non-zero, from OS entropy otherwise. A
lock guards it, since concurrent steps may run the same node (the candidate samplers keep
theirs the same way, through `state_getter`).

RandomUniform, RandomStandardNormal, TruncatedNormal and RandomUniformInt draw TensorFlow's
own stream, so a seeded op gives TF's values: the Philox generator keyed on `seed` with its
128-bit counter starting at `seed2` << 64 (TF's GuardedPhiloxRandom), each run taking the
stream at the counter and moving it on by 256 blocks per output (ReserveRandomOutputs(n,
256)), and the distributions spending the stream as the stateless ops do (lib/philox.py).
RandomShuffle takes TF's row order too (a Fisher-Yates pass over one word of the stream
per row), and Multinomial TF's samples (`tf_multinomial`; TF's values wherever TF runs the
batch in one shard). The other stateful samplers (gamma, Poisson, candidate samplers, crop
boxes) draw from a NumPy Generator seeded from the same pair; their values are not TF's
bits, their seeding rules are.

A large output is drawn in chunks that check the step between them (kernels/interrupt.py):
Philox draws on the intra-op threads, each chunk from the counter of its first value; the
NumPy samplers' blocks continue the Generator's stream in order; the values are those of
one call either way. A step stopped in the middle leaves its state moved on past the
whole output.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from tensorflux.framework import errors, resource_guard
from tensorflux.kernels import interrupt, intra_op
from tensorflux.kernels.registry import kernel_factory
from tensorflux.lib import philox

RANDOM_CONTAINER = "_random_ops"
_MASK64, _MASK128 = (1 << 64) - 1, (1 << 128) - 1


class GeneratorState:
    """One random node's state in one Session: TF's Philox stream position and, for the
    samplers that draw through NumPy, a Generator; the lock guards both."""

    __slots__ = ("lock", "seed", "seed2", "counter", "_gen")

    def __init__(self, seed: int, seed2: int):
        self.lock = threading.Lock()
        if seed == 0 and seed2 == 0:  # unseeded: OS entropy, as TF's New64()
            seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
        self.seed, self.seed2 = seed & _MASK64, seed2 & _MASK64
        self.counter = self.seed2 << 64
        self._gen = None

    @property
    def gen(self) -> np.random.Generator:
        """The NumPy Generator of the samplers that are not Philox-based."""
        if self._gen is None:
            self._gen = np.random.default_rng([self.seed, self.seed2])
        return self._gen

    def reserve(self, n: int, blocks_per_value: int = 256) -> tuple[np.ndarray, np.ndarray]:
        """The Philox (key, counter) for an output of n values; the stream moves on by
        `blocks_per_value` blocks per value (TF's ReserveRandomOutputs(n, 256); a shuffle's
        ReserveSamples32 is a quarter block per word). Call with the lock held."""
        c = self.counter
        self.counter = (c + math.ceil(blocks_per_value * n)) & _MASK128
        return (np.array([self.seed], np.uint64),
                np.array([c & _MASK64, c >> 64], np.uint64))


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


# Time per output byte of the Philox draws relative to a fill (interrupt.blocked).
_COST = 32
# Outputs of this many values and more are drawn in chunks of at most _CHUNK_VALUES on the
# intra-op threads (~25 ns a normal here: a chunk is a millisecond or two).
_SPLIT_VALUES = 1 << 17
_CHUNK_VALUES = 1 << 16


def counter_plus(counter, blocks: int) -> np.ndarray:
    """The 128-bit Philox counter (low word first) moved on by `blocks`."""
    counter = np.asarray(counter, np.uint64).reshape(-1)
    lo = (int(counter[0]) + blocks) % 2**64
    hi = (int(counter[1]) + (int(counter[0]) + blocks) // 2**64) % 2**64
    return np.array([lo, hi], np.uint64)


def draw_philox(ctx, dist, out_dtype, dims, key, counter, *args):
    """dist(key, counter, n, *args, out_dtype) shaped `dims`. A large output is drawn in
    chunks of 4k values on the intra-op threads (checking the step between chunks), each
    from the counter where its first value's Philox block lies (every distribution here
    spends a fixed number of blocks per 4 values), so the values are those of one call."""
    n = int(np.prod(dims, dtype=np.int64))
    itemsize = np.dtype(out_dtype).itemsize
    resource_guard.check_shape(dims, out_dtype, ctx)
    if n < _SPLIT_VALUES and not interrupt.blocked(n * itemsize, _COST):
        return dist(key, counter, n, *args, out_dtype).reshape(dims)
    per_4 = 256 if dist is philox.truncated_normal else (2 if itemsize == 8 else 1)
    chunk = max(1, min(_CHUNK_VALUES, interrupt.BLOCK_BYTES // (itemsize * _COST))) + 3 >> 2
    out = np.empty(n, out_dtype)

    def fill(lo, hi):  # groups of 4 values [lo, hi)
        a, b = 4 * lo, min(n, 4 * hi)
        out[a:b] = dist(key, counter_plus(counter, lo * per_4), b - a, *args, out_dtype)

    with interrupt.scope(ctx):  # the step parallel_for checks between chunks
        intra_op.parallel_for(fill, -(-n // 4), chunk, intra_op.workers(ctx))
    return out.reshape(dims)


def _drawn(ctx, n: int, dtype, draw) -> np.ndarray:
    """n values of `dtype` from `draw(count)` (a NumPy Generator's method), drawn in blocks
    of the flat stream that check step `ctx` between them."""
    out = np.empty(n, dtype)
    for lo, hi in interrupt.flat_spans(ctx, n, out.itemsize):
        out[lo:hi] = draw(hi - lo)
    return out


_SAMPLERS = {"RandomUniform": philox.uniform, "RandomStandardNormal": philox.normal,
             "TruncatedNormal": philox.truncated_normal}


@kernel_factory("RandomUniform", "RandomStandardNormal", "TruncatedNormal")
def _random_float(node):
    dist = _SAMPLERS[node.op]
    out_dtype = node.attrs["dtype"].as_numpy_dtype
    state_of = state_getter(node)

    def compute(ctx, shape):
        dims = _dims(shape)
        resource_guard.check_shape(dims, out_dtype, ctx)
        state = state_of(ctx)
        with state.lock:
            key, counter = state.reserve(math.prod(dims))
        return draw_philox(ctx, dist, out_dtype, dims, key, counter)

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
        state = state_of(ctx)
        with state.lock:
            key, counter = state.reserve(math.prod(dims))
        return draw_philox(ctx, philox.uniform_int, np_dtype, dims, key, counter, lo, hi)

    return compute


@kernel_factory("RandomShuffle")
def _random_shuffle(node):
    state_of = state_getter(node)

    def compute(ctx, value):
        value = np.asarray(value)
        if value.ndim == 0 or value.shape[0] <= 1 or value.size <= 1:
            return value.copy()  # as TF: no draw
        rows = value.shape[0]
        state = state_of(ctx)
        with state.lock:
            if rows < 2**31 - 1:  # TF's order: a word of the stream per row but the last
                key, counter = state.reserve(rows - 1, 0.25)
            else:
                perm = state.gen.permutation(rows)
        if rows < 2**31 - 1:
            perm = philox.shuffle_permutation(key, counter, rows,  # long: in pieces
                                              between=lambda: interrupt.check(ctx))
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
        state = state_of(ctx)
        with state.lock:  # TF reserves 2 x num_samples rounded up to 4, per row
            key, counter = state.reserve(batch * -(-n // 4) * 8)
        return tf_multinomial(ctx, logits, n, key, counter, np_dtype)

    return compute


def tf_multinomial(ctx, logits: np.ndarray, num_samples: int, key, counter, out_dtype):
    """TF's CPU Multinomial draw from the Philox stream at (key, counter): sample j of the
    batch's rows, in order, takes words 2j and 2j + 1 as a double u in [0, 1), and row b's
    index is the first class whose running sum of exp(logit - the row's finite max) exceeds
    u * the row's total (non-finite logits count zero). One stream over all rows, as TF
    runs the rows in one shard (a row of a sampling loop always; TF splits large batches
    over its threads, each shard skipping ahead, which this does not follow)."""
    batch, classes = logits.shape
    resource_guard.check_shape((batch, num_samples), np.float64, ctx)
    u = np.empty(batch * num_samples)  # sample j: words 2j, 2j + 1 (half a block)
    for lo, hi in interrupt.flat_spans(ctx, u.size, u.itemsize, align=2, cost=_COST):
        w = philox.words(key, counter_plus(counter, lo // 2), 2 * (hi - lo))
        u[lo:hi] = philox.uint64_to_double(w[0::2], w[1::2])
    u = u.reshape(batch, num_samples)
    out = np.empty((batch, num_samples), out_dtype)
    values = logits.astype(np.float64)
    finite = np.isfinite(values)
    cdf = total = None
    for idx in interrupt.regions(u.shape, u.itemsize, ctx):  # blocks of rows or of one
        rows, cols = (idx + (slice(None), slice(None)))[:2]
        for b in range(batch)[rows] if isinstance(rows, slice) else (rows,):
            if cdf is None or cdf[0] != b:
                row_max = values[b][finite[b]].max(initial=np.finfo(logits.dtype).min) \
                    if np.issubdtype(logits.dtype, np.floating) else values[b].max(initial=0)
                probs = np.where(finite[b], np.exp(values[b] - row_max), 0.0)
                cdf = (b, np.cumsum(probs))
                total = cdf[1][-1] if classes else 0.0
            out[b, cols] = np.searchsorted(cdf[1], u[b, cols] * total, side="right")
    return out


