"""CPU kernels of the candidate samplers and ComputeAccidentalHits
(tensorflux/ops/candidate_sampling_ops.py).

The samplers draw TensorFlow's values bit for bit. Each run reserves 2,048 32-bit words per
sampled class of its node's Philox stream (`random_ops.GeneratorState`: 512 blocks per
class, TF's ReserveSamples32) and reads them in order, one sample after another, as TF's
SimplePhilox does:
- uniform: a 64-bit word pair (low word first) per try, rejected below 2^64 mod range
  (TF's ExactUniformInt), the accepted value mod range;
- log-uniform: a double u in [0, 1) from a word pair, floor(exp(u log(range + 1))) - 1;
- learned unigram: a 32-bit try as above, over the integer class counts (all 1 at first),
  mapped to the class whose cumulative count passes it (TF's WeightedPicker);
- fixed unigram: Walker's alias table of the distorted weights, built in TF's order; a
  float word then a 32-bit uniform bucket per sample.
With `unique`, samples are drawn one at a time until `num_sampled` distinct classes are
found; the expected counts are p * num_sampled, or 1 - (1 - p)^tries computed with the C
library's float log1pf and expm1f, as TF computes them. The vectorized draws below give the
one-at-a-time order: a rejected try only shifts which words the following samples read.
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu.random_ops import GeneratorState, state_getter
from tensorflux.kernels.registry import kernel_factory
from tensorflux.lib import philox

_F32 = np.float32
# TF reserves 2,048 32-bit samples per sampled class: 512 Philox blocks.
BLOCKS_PER_SAMPLE = 512


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# ---- distributions -----------------------------------------------------------------------


class _Uniform:
    """P(k) = 1 / range; a sample is Uniform64(range)."""

    def __init__(self, range_max: int):
        self.range = range_max
        self._p = _F32(1.0 / range_max)

    piecewise = True  # draw(n) = draw(k), then draw(n - k)

    def draw(self, words: philox.WordStream, n: int) -> np.ndarray:
        return words.uniform(n, self.range, wide=True)

    def probability(self, values: np.ndarray) -> np.ndarray:
        return np.full(values.shape, self._p, _F32)


class _LogUniform:
    """P(k) = log((k + 2) / (k + 1)) / log(range + 1), in double rounded to float."""

    def __init__(self, range_max: int):
        self.range = range_max
        self.log_range = math.log1p(range_max)

    piecewise = True

    def draw(self, words: philox.WordStream, n: int) -> np.ndarray:
        w = words.take(2 * n)
        x = philox.uint64_to_double(w[0::2], w[1::2]) * self.log_range
        e = np.exp(x)
        # exp within an ulp or so of an integer: take the C library's (TF's) value
        near = np.abs(e - np.round(e)) <= 4 * np.spacing(e)
        if near.any():
            e[near] = philox.libm_each(math.exp, x[near])
        return (e.astype(np.int64) - 1) % self.range

    def probability(self, values: np.ndarray) -> np.ndarray:
        v = values.astype(np.float64).reshape(-1)
        out = np.empty(v.size, _F32)
        # the C library's log of each ratio (TF's values; NumPy's own log may differ in
        # the last bit): in blocks, the step checked between them
        for lo, hi in interrupt.spans(v.size, 1, elements=LOG_BLOCK):
            logs = philox.libm_double("log", (v[lo:hi] + 2.0) / (v[lo:hi] + 1.0))
            out[lo:hi] = (logs / self.log_range).astype(_F32)
        return out.reshape(values.shape)


class _LearnedUnigram:
    """Integer class counts, all 1 at first (TF's WeightedPicker); `update` adds one per
    true class of a run, up to a total of 2^31 - 1."""

    def __init__(self, range_max: int):
        self.range = range_max
        self.counts = np.ones(range_max, np.int64)
        self.total = range_max
        self._cdf = None

    piecewise = True

    def draw(self, words: philox.WordStream, n: int) -> np.ndarray:
        if self._cdf is None:
            self._cdf = np.cumsum(self.counts)
        at = words.uniform(n, self.total)
        return np.searchsorted(self._cdf, at, side="right")

    def probability(self, values: np.ndarray) -> np.ndarray:
        return self.counts[values].astype(_F32) / _F32(self.total)

    def update(self, values: np.ndarray) -> None:
        values = values[:max(0, min(values.size, (1 << 31) - 1 - self.total))]
        np.add.at(self.counts, values, 1)
        self.total += values.size
        self._cdf = None


class _FixedUnigram:
    """Float32 weights (reserved ids 0), their float32 total summed in order, and Walker's
    alias table built from them as TF's DistributionSampler builds it."""

    def __init__(self, weights: np.ndarray):
        self.range = weights.size
        self.weights = weights
        self._total = np.cumsum(weights, dtype=_F32)[-1] if weights.size else _F32(0)
        self._prob, self._alt = philox.alias_table(weights)

    # draw(n) = draw(k), then draw(n - k): each sample takes its words in turn (the look
    # ahead consumes nothing), so a draw of k leaves the stream where the k-th sample of
    # one draw of n does
    piecewise = True

    def draw(self, words: philox.WordStream, n: int) -> np.ndarray:
        out = np.empty(n, np.int64)
        done = 0
        while done < n:  # vectorized up to the next rejected bucket word, then one sample
            m = n - done
            w = words.ahead(2 * m)
            r = philox.uint32_to_float(w[0::2])
            span = self.range
            bad = np.flatnonzero(w[1::2] < philox.rejected_below(span))
            k = int(bad[0]) if bad.size else m
            idx = w[1:2 * k:2].astype(np.int64) % span
            out[done:done + k] = np.where(r[:k] < self._prob[idx], idx, self._alt[idx])
            words.take(2 * k)
            done += k
            if k < m:
                r1 = philox.uint32_to_float(words.take(1))[0]
                i = int(words.uniform(1, span)[0])
                out[done] = i if r1 < self._prob[i] else self._alt[i]
                done += 1
        return out

    def probability(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(values.shape, _F32)
        ok = (values >= 0) & (values < self.range)
        out[ok] = self.weights[values[ok]] / self._total
        return out


class _LearnedState(GeneratorState):
    """A learned unigram node's stream and class counts in one Session."""

    __slots__ = ("sampler",)

    def __init__(self, seed: int, seed2: int, range_max: int):
        super().__init__(seed, seed2)
        self.sampler = _LearnedUnigram(range_max)


# ---- drawing a batch and its expected counts -----------------------------------------------


def _draw_unique(ctx, sampler, words: philox.WordStream, n: int) -> tuple[np.ndarray, int]:
    """n distinct classes in the order one-at-a-time draws find them, and how many draws
    that took: the stream of samples is extended until it holds n distinct values."""
    stream = np.empty(0, np.int64)
    chunk = max(2 * n, 16)
    while True:
        interrupt.check(ctx)
        stream = np.concatenate([stream, _draw(ctx, sampler, words, chunk)])
        _, first = np.unique(stream, return_index=True)
        if first.size >= n:
            first = np.sort(first)[:n]
            return stream[first], int(first[-1]) + 1
        chunk = stream.size


def _expected_counts(p: np.ndarray, num_sampled: int, num_tries: int) -> np.ndarray:
    """p * num_sampled in float32 when no draw was repeated, else 1 - (1 - p)^num_tries as
    -expm1f(num_tries * log1pf(-p)), each step in float32 through the C library."""
    if num_tries == num_sampled:
        return p * _F32(num_sampled)
    logs = philox.libm_float("log1pf", -p)
    return -philox.libm_float("expm1f", _F32(num_tries) * logs)


def _counts(sampler, values: np.ndarray, num_sampled: int, num_tries: int) -> np.ndarray:
    """The expected counts of `values`: `_expected_counts` of the sampler's probabilities,
    for the log-uniform sampler in one C loop when the values are few enough not to need
    checks of the step between blocks (the same library calls: the same bits)."""
    if type(sampler) is _LogUniform and values.size <= LOG_BLOCK:
        counts = philox.log_uniform_counts(values, sampler.log_range, num_sampled, num_tries)
        if counts is not None:
            return counts
    return _expected_counts(sampler.probability(values), num_sampled, num_tries)


def _check_true_classes(true_classes, num_true: int, range_max: int) -> np.ndarray:
    true_classes = np.asarray(true_classes)
    if true_classes.ndim != 2:
        raise _invalid("true_classes must be a matrix")
    if true_classes.shape[1] != num_true:
        raise _invalid(f"true_classes must have num_true columns, expected: "
                       f"{true_classes.shape[1]} was: {num_true}")
    flat = true_classes.reshape(-1)
    if native.indices_in_range(flat, range_max) or \
            (flat.size and (flat.min() >= 0 and flat.max() < range_max)):
        return flat
    bad = (flat < 0) | (flat >= range_max)
    if bad.any():
        raise _invalid(f"`true_candidate` out of range [0, {range_max}), received "
                       f"{int(flat[np.argmax(bad)])}")
    return flat


DRAW_BLOCK = 1 << 20  # samples drawn between two checks of the step (kernels/interrupt.py)
LOG_BLOCK = 1 << 17  # log-uniform probabilities (a Python log each) between two checks


def _draw(ctx, sampler, words: philox.WordStream, n: int) -> np.ndarray:
    """`sampler.draw(words, n)`, in blocks of DRAW_BLOCK samples with the step checked
    between them where the sampler's draws consume the stream one sample after another
    (`piecewise`: the blocks give the one call's values)."""
    if n <= DRAW_BLOCK or not getattr(sampler, "piecewise", False):
        return sampler.draw(words, n)
    parts = []
    for lo in range(0, n, DRAW_BLOCK):
        interrupt.check(ctx)
        parts.append(sampler.draw(words, min(DRAW_BLOCK, n - lo)))
    return np.concatenate(parts)


def _sample_batch(ctx, sampler, state: GeneratorState, true_classes, attrs):
    """The three outputs of a sampler op for one run (call with the state's lock held)."""
    num_true, num_sampled, unique = attrs
    flat = _check_true_classes(true_classes, num_true, sampler.range)
    if unique and num_sampled > sampler.range:
        raise _invalid("Sampler's range is too small.")
    key, counter = state.reserve(num_sampled, BLOCKS_PER_SAMPLE)
    drawn = None
    if type(sampler) is _LogUniform and num_sampled <= DRAW_BLOCK:
        # in C, the same tries from the stream itself (tensorflux/lib/_philox.c log_uniform)
        drawn = philox.log_uniform_at(key, counter, num_sampled, sampler.range,
                                      sampler.log_range, unique)
    if drawn is not None:
        sampled, num_tries = drawn
    elif unique:
        words = philox.WordStream(key, counter)
        sampled, num_tries = _draw_unique(ctx, sampler, words, num_sampled)
    else:
        words = philox.WordStream(key, counter)
        sampled, num_tries = _draw(ctx, sampler, words, num_sampled), num_sampled
    sampled_count = _counts(sampler, sampled, num_sampled, num_tries)
    true_count = _counts(sampler, flat, num_sampled, num_tries)
    return (sampled.astype(np.int64, copy=False), sampled_count,
            true_count.reshape(np.shape(true_classes)))


def _batch_attrs(node) -> tuple[int, int, bool]:
    return (int(node.attrs["num_true"]), int(node.attrs["num_sampled"]),
            bool(node.attrs["unique"]))


def _fixed_sampler_kernel(node, sampler):
    """The compute of a sampler op whose distribution never changes."""
    attrs = _batch_attrs(node)
    state_of = state_getter(node)

    def compute(ctx, true_classes):
        state = state_of(ctx)
        with state.lock:
            sampled, sampled_count, true_count = _sample_batch(ctx, sampler, state,
                                                               true_classes, attrs)
        return sampled, true_count, sampled_count

    return compute


@kernel_factory("UniformCandidateSampler")
def _uniform_sampler(node):
    return _fixed_sampler_kernel(node, _Uniform(int(node.attrs["range_max"])))


@kernel_factory("LogUniformCandidateSampler")
def _log_uniform_sampler(node):
    return _fixed_sampler_kernel(node, _LogUniform(int(node.attrs["range_max"])))


@kernel_factory("LearnedUnigramCandidateSampler", "ThreadUnsafeUnigramCandidateSampler")
def _learned_unigram_sampler(node):
    attrs = _batch_attrs(node)
    range_max = int(node.attrs["range_max"])
    state_of = state_getter(node, lambda s1, s2: _LearnedState(s1, s2, range_max))

    def compute(ctx, true_classes):
        state = state_of(ctx)
        with state.lock:
            sampled, sampled_count, true_count = _sample_batch(ctx, state.sampler, state,
                                                               true_classes, attrs)
            state.sampler.update(np.asarray(true_classes).reshape(-1))
        return sampled, true_count, sampled_count

    return compute


@kernel_factory("AllCandidateSampler")
def _all_sampler(node):
    num_true, num_sampled, _ = _batch_attrs(node)

    def compute(ctx, true_classes):
        _check_true_classes(true_classes, num_true, num_sampled)
        return (np.arange(num_sampled, dtype=np.int64),
                np.ones(np.shape(true_classes), _F32), np.ones(num_sampled, _F32))

    return compute


# ---- FixedUnigramCandidateSampler --------------------------------------------------------


def _read_vocab_counts(path: str) -> list[float]:
    """The last comma-separated field of each line of `path`, as a float."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None,
                                   f"{path}; No such file or directory") from None
    counts = []
    for line in lines:
        try:
            counts.append(float(line.split(",")[-1]))
        except ValueError:
            raise _invalid(f"Wrong vocabulary format at line: {line}") from None
    return counts


def _unigram_weights(attrs) -> np.ndarray:
    """The shard's float32 weights: its reserved ids (weight 0), then the counts of the ids
    it keeps raised to `distortion`. Ids after the reserved ones are numbered from the
    number of reserved ids this shard kept, as TensorFlow numbers them."""
    vocab_file, unigrams = attrs["vocab_file"], list(attrs["unigrams"])
    if isinstance(vocab_file, bytes):
        vocab_file = vocab_file.decode()
    if not vocab_file and not unigrams:
        raise _invalid("Must provide either vocab_file or unigrams.")
    if vocab_file and unigrams:
        raise _invalid("Must only provide one of vocab_file and unigrams.")
    num_shards, shard = int(attrs["num_shards"]), int(attrs["shard"])
    reserved = sum(1 for i in range(int(attrs["num_reserved_ids"])) if i % num_shards == shard)
    counts = np.asarray(_read_vocab_counts(vocab_file) if vocab_file else unigrams, _F32)
    ids = reserved + np.arange(counts.size)
    kept = counts[ids % num_shards == shard]
    # TF raises each float count to the float distortion with the C library's powf
    weights = philox.libm_float("powf", kept, _F32(attrs["distortion"]))
    weights = np.concatenate([np.zeros(reserved, _F32), weights])
    range_max = int(attrs["range_max"])
    if weights.size != range_max:
        raise _invalid(f"range is {range_max} must be equal to weights size  {weights.size}")
    return weights


@kernel_factory("FixedUnigramCandidateSampler")
def _fixed_unigram_sampler(node):
    try:
        sampler = _FixedUnigram(_unigram_weights(node.attrs))
    except errors.OpError as e:
        error = e

        def fail(ctx, true_classes):
            raise error

        return fail
    return _fixed_sampler_kernel(node, sampler)


# ---- ComputeAccidentalHits ---------------------------------------------------------------


@kernel_factory("ComputeAccidentalHits")
def _accidental_hits(node):
    num_true = int(node.attrs["num_true"])

    def compute(ctx, true_classes, sampled_candidates):
        true_classes = np.asarray(true_classes)
        sampled = np.asarray(sampled_candidates)
        if true_classes.ndim != 2 or true_classes.shape[1] != num_true:
            raise _invalid("true_candidates must be a batch_size * num_true matrix")
        if sampled.ndim != 1:
            raise _invalid("sampled_candidates must be a vector, which is typically an "
                           "output from CandidateSampler")
        hits = native.accidental_hits(true_classes.reshape(-1), sampled, num_true)
        if hits is not None:  # in C: a hash of the candidates
            return hits[0], hits[1], np.full(hits[1].size, np.finfo(_F32).min, _F32)
        # the distinct candidates, sorted, and each one's last position
        values, first_reversed = np.unique(sampled[::-1], return_index=True)
        last = sampled.size - 1 - first_reversed
        flat = true_classes.reshape(-1)
        pos = np.minimum(np.searchsorted(values, flat), max(values.size - 1, 0))
        found = values[pos] == flat if values.size else np.zeros(flat.size, bool)
        indices = (np.arange(flat.size) // max(num_true, 1))[found].astype(np.int32)
        ids = last[pos[found]].astype(np.int64)
        weights = np.full(ids.size, np.finfo(_F32).min, _F32)
        return indices, ids, weights

    return compute
