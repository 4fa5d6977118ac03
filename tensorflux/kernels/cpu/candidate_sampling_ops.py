"""CPU kernels of the candidate samplers and ComputeAccidentalHits
(tensorflux/ops/candidate_sampling_ops.py).

A sampler here is a distribution over [0, range_max) with two methods: `draw(gen, n)`, n
independent classes, and `probability(values)`, float32 probabilities computed in the
precision TensorFlow uses, so that expected counts for given classes equal TensorFlow's.
Each sampler node owns a generator per Session, seeded as every random op's is
(`random_ops.state_getter`); the learned unigram sampler keeps its class counts beside it.
The sampled values need not equal TensorFlow's bits; their distribution and the expected
counts are TensorFlow's.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu.random_ops import GeneratorState, state_getter
from tensorflux.kernels.registry import kernel_factory

_F32 = np.float32


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# ---- distributions -----------------------------------------------------------------------


class _Uniform:
    """P(k) = 1 / range."""

    def __init__(self, range_max: int):
        self.range = range_max
        self._p = _F32(1.0 / range_max)

    def draw(self, gen, n: int) -> np.ndarray:
        return gen.integers(0, self.range, n, dtype=np.int64)

    def probability(self, values: np.ndarray) -> np.ndarray:
        return np.full(values.shape, self._p, _F32)


class _LogUniform:
    """P(k) = log((k + 2) / (k + 1)) / log(range + 1): k = floor(exp(u log(range + 1))) - 1
    for u uniform in [0, 1)."""

    def __init__(self, range_max: int):
        self.range = range_max
        self._log_range = np.log1p(float(range_max))

    def draw(self, gen, n: int) -> np.ndarray:
        values = np.exp(gen.random(n) * self._log_range).astype(np.int64) - 1
        return values % self.range  # exp may round up to range + 1 itself

    def probability(self, values: np.ndarray) -> np.ndarray:
        v = values.astype(np.float64)
        return (np.log((v + 2.0) / (v + 1.0)) / self._log_range).astype(_F32)


class _Weighted:
    """P(k) = weights[k] / total, drawn by inverting the cumulative weights."""

    def __init__(self, weights: np.ndarray):
        self.range = weights.size
        self.set_weights(weights)

    def set_weights(self, weights: np.ndarray) -> None:
        self.weights = weights
        self._cdf = np.cumsum(weights, dtype=np.float64)

    def draw(self, gen, n: int) -> np.ndarray:
        u = gen.random(n) * self._cdf[-1]
        # side="right": a class of weight 0 is never drawn
        return np.minimum(np.searchsorted(self._cdf, u, side="right"), self.range - 1)


class _FixedUnigram(_Weighted):
    """Float32 weights and their float32 total summed in order, as TensorFlow keeps them."""

    def __init__(self, weights: np.ndarray):
        super().__init__(weights)
        self._total = np.cumsum(weights, dtype=_F32)[-1] if weights.size else _F32(0)

    def probability(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(values.shape, _F32)
        ok = (values >= 0) & (values < self.range)
        out[ok] = self.weights[values[ok]] / self._total
        return out


class _LearnedUnigram(_Weighted):
    """Integer counts, all 1 at first; `update` adds the true classes of a run."""

    def __init__(self, range_max: int):
        super().__init__(np.ones(range_max, np.int64))
        self.total = range_max

    def probability(self, values: np.ndarray) -> np.ndarray:
        return self.weights[values].astype(_F32) / _F32(self.total)

    def update(self, values: np.ndarray) -> None:
        counts = self.weights.copy()
        np.add.at(counts, values, 1)
        self.total += values.size
        self.set_weights(counts)


class _LearnedState(GeneratorState):
    """A learned unigram node's generator and counts in one Session."""

    __slots__ = ("sampler",)

    def __init__(self, seed: int, seed2: int, range_max: int):
        super().__init__(seed, seed2)
        self.sampler = _LearnedUnigram(range_max)


# ---- drawing a batch and its expected counts -----------------------------------------------


def _draw_unique(sampler, gen, n: int) -> tuple[np.ndarray, int]:
    """n distinct classes in the order a one-at-a-time draw finds them, and how many draws
    that took: a stream of draws is extended until it holds n distinct values."""
    stream = np.empty(0, np.int64)
    chunk = max(2 * n, 16)
    while True:
        stream = np.concatenate([stream, sampler.draw(gen, chunk)])
        _, first = np.unique(stream, return_index=True)
        if first.size >= n:
            first = np.sort(first)[:n]
            return stream[first], int(first[-1]) + 1
        chunk = stream.size


def _expected_counts(p: np.ndarray, num_sampled: int, num_tries: int) -> np.ndarray:
    """p * num_sampled (float32, as TensorFlow computes it) when no draw was repeated, else
    1 - (1 - p) ** num_tries, computed in float64 from the float32 p and rounded (TensorFlow
    evaluates it with the C library's float log1p and expm1, within a few ulps of this)."""
    if num_tries == num_sampled:
        return p * _F32(num_sampled)
    return (-np.expm1(num_tries * np.log1p(-p.astype(np.float64)))).astype(_F32)


def _check_true_classes(true_classes, num_true: int, range_max: int) -> np.ndarray:
    true_classes = np.asarray(true_classes)
    if true_classes.ndim != 2:
        raise _invalid("true_classes must be a matrix")
    if true_classes.shape[1] != num_true:
        raise _invalid(f"true_classes must have num_true columns, expected: "
                       f"{true_classes.shape[1]} was: {num_true}")
    flat = true_classes.reshape(-1)
    bad = (flat < 0) | (flat >= range_max)
    if bad.any():
        raise _invalid(f"`true_candidate` out of range [0, {range_max}), received "
                       f"{int(flat[np.argmax(bad)])}")
    return flat


def _sample_batch(sampler, gen, true_classes, attrs):
    """The three outputs of a sampler op for one run."""
    num_true, num_sampled, unique = attrs
    flat = _check_true_classes(true_classes, num_true, sampler.range)
    if unique:
        if num_sampled > sampler.range:
            raise _invalid("Sampler's range is too small.")
        sampled, num_tries = _draw_unique(sampler, gen, num_sampled)
    else:
        sampled, num_tries = sampler.draw(gen, num_sampled), num_sampled
    sampled_count = _expected_counts(sampler.probability(sampled), num_sampled, num_tries)
    true_count = _expected_counts(sampler.probability(flat), num_sampled, num_tries)
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
            sampled, sampled_count, true_count = _sample_batch(sampler, state.gen,
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
            sampled, sampled_count, true_count = _sample_batch(state.sampler, state.gen,
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
    kept = counts[ids % num_shards == shard].astype(np.float64)
    distortion = float(_F32(attrs["distortion"]))
    weights = np.power(kept, distortion).astype(_F32)
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
