"""Candidate samplers and ComputeAccidentalHits (tensorflux/ops/candidate_sampling_ops.py):
op definitions as TensorFlow's, static shapes, seed rules, the sampled classes and expected
counts equal to TensorFlow's bit for bit under the same seeds (pinned values here, and every
sampler against the oracle), each sampler's empirical frequencies against its distribution
(chi-square bounds) and against TensorFlow's sampler, accidental hits equal to TensorFlow's,
and run-time errors.

TensorFlow runs once per test session (tests/sampling_oracle.py, shared with the sampled-loss
tests): every oracle comparison reads that one result.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors, op_registry
from tensorflux.kernels import registry as kernel_registry
from tests.op_test_util import STRATEGIES
from tests.sampling_oracle import (
    ALL_OPS,
    DISTORTION,
    DRAWS,
    EXACT_PROGRAM,
    HITS,
    UNIGRAMS,
    UNIQUE_RUNS,
    VOCAB,
    tensorflow_results,
)

pytestmark = pytest.mark.usefixtures("fresh_graph")


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# ---- distributions, from their definitions ---------------------------------------------------


def log_uniform_probs(range_max: int) -> np.ndarray:
    k = np.arange(range_max, dtype=np.float64)
    return (np.log(k + 2) - np.log(k + 1)) / np.log(range_max + 1)



def unigram_probs() -> np.ndarray:
    w = np.asarray(UNIGRAMS) ** DISTORTION
    return w / w.sum()


# (name, builder(true_classes, num_sampled, unique, seed), probabilities, range)
SAMPLERS = [
    ("uniform", lambda t, n, u, s: tf.nn.uniform_candidate_sampler(t, 1, n, u, 30, seed=s),
     np.full(30, 1 / 30), 30),
    ("log_uniform",
     lambda t, n, u, s: tf.nn.log_uniform_candidate_sampler(t, 1, n, u, 30, seed=s),
     log_uniform_probs(30), 30),
    ("fixed_unigram", lambda t, n, u, s: tf.nn.fixed_unigram_candidate_sampler(
        t, 1, n, u, 7, distortion=DISTORTION, unigrams=UNIGRAMS, seed=s), unigram_probs(), 7),
]


def chi2_bound(df: int) -> float:
    """A bound a chi-square statistic of `df` degrees of freedom passes with probability
    about 1 - 1e-5 (mean + 6 standard deviations)."""
    return df + 6.0 * np.sqrt(2.0 * df)


def assert_fits(counts: np.ndarray, probs: np.ndarray) -> None:
    """Pearson's goodness of fit of `counts` to `probs`; classes of probability 0 never
    appear."""
    assert not counts[probs == 0].any()
    expected = probs * counts.sum()
    live = probs > 0
    stat = np.sum((counts[live] - expected[live]) ** 2 / expected[live])
    assert stat < chi2_bound(int(live.sum()) - 1), (stat, counts, expected)


def assert_same_distribution(a: np.ndarray, b: np.ndarray) -> None:
    """Two count vectors of equal totals from one distribution (chi-square homogeneity)."""
    assert a.sum() == b.sum()
    live = (a + b) > 0
    stat = np.sum((a[live] - b[live]) ** 2 / (a[live] + b[live]))
    assert stat < chi2_bound(int(live.sum()) - 1), (stat, a, b)


# ---- TensorFlow, once ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def theirs():
    return tensorflow_results()["samplers"]


# ---- definitions and shapes ----------------------------------------------------------------


@pytest.mark.parametrize("op_type", ALL_OPS)
def test_registered_with_kernel_and_no_gradient(op_type):
    opdef = op_registry.get(op_type)
    assert opdef.is_stateful == (op_type != "ComputeAccidentalHits")
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) == op_registry.NOT_DIFFERENTIABLE


@pytest.mark.oracle
@pytest.mark.parametrize("op_type", ALL_OPS)
def test_op_definitions_match_tensorflow(theirs, op_type):
    import json

    from google.protobuf import json_format

    ours = json_format.MessageToDict(op_registry.get(op_type).to_proto())
    assert json.loads(theirs["opdefs"][op_type]) == ours


def test_static_shapes_and_dtypes():
    labels = tf.placeholder(tf.int64, [None, 2])
    for out in (tf.nn.uniform_candidate_sampler(labels, 2, 5, False, 10),
                tf.nn.learned_unigram_candidate_sampler(labels, 2, 5, True, 10),
                tf.nn.all_candidate_sampler(labels, 2, 5, True)):
        assert [t.shape.as_list() for t in out] == [[5], [None, 2], [5]]
        assert [t.dtype for t in out] == [tf.int64, tf.float32, tf.float32]
    assert out.sampled_candidates is out[0] and out.sampled_expected_count is out[2]
    hits = tf.nn.compute_accidental_hits(labels, out[0], num_true=2)
    assert [t.shape.as_list() for t in hits] == [[None]] * 3
    assert [t.dtype for t in hits] == [tf.int32, tf.int64, tf.float32]
    assert hits.ids is hits[1]


@pytest.mark.parametrize("build,error,message", [
    (lambda: tf.nn.uniform_candidate_sampler(tf.placeholder(tf.int64, [3]), 1, 4, False, 10),
     ValueError, "Shape must be rank 2 but is rank 1"),
    (lambda: tf.nn.uniform_candidate_sampler([[1]], 0, 4, False, 10), ValueError,
     "Attr 'num_true' of 'UniformCandidateSampler' Op passed 0 less than minimum 1"),
    (lambda: tf.nn.log_uniform_candidate_sampler([[1]], 1, 4, False, 0), ValueError,
     "Attr 'range_max' of 'LogUniformCandidateSampler' Op passed 0 less than minimum 1"),
    (lambda: tf.nn.uniform_candidate_sampler(tf.constant([[1]], tf.int32), 1, 4, False, 10),
     TypeError, "int32 that does not match expected type of int64"),
    (lambda: tf.nn.compute_accidental_hits(tf.placeholder(tf.int64, [3, 2]), [1, 2], 1),
     ValueError, "Dimension must be 1 but is 2"),
    (lambda: tf.nn.compute_accidental_hits([[1]], [[1, 2]], 1), ValueError,
     "Shape must be rank 1 but is rank 2"),
])
def test_graph_construction_errors(build, error, message):
    with pytest.raises(error, match=message):
        build()


# ---- seeds ---------------------------------------------------------------------------------


def _samplers_of_every_kind(seed=None):
    labels = tf.constant([[1], [3]], tf.int64)
    return [tf.nn.uniform_candidate_sampler(labels, 1, 6, True, 1000, seed=seed),
            tf.nn.log_uniform_candidate_sampler(labels, 1, 6, False, 1000, seed=seed),
            tf.nn.learned_unigram_candidate_sampler(labels, 1, 6, True, 1000, seed=seed),
            tf.nn.fixed_unigram_candidate_sampler(labels, 1, 6, False, 1000,
                                                  unigrams=np.ones(1000), seed=seed)]


def test_fixed_seeds_repeat_in_a_new_session_and_runs_differ():
    ops = [s.sampled_candidates for s in _samplers_of_every_kind(seed=7)]
    with tf.Session() as s1:
        first = [s1.run(ops) for _ in range(3)]
    with tf.Session() as s2:
        again = [s2.run(ops) for _ in range(3)]
    for a, b in zip(first, again, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    for k in range(len(ops)):
        assert not np.array_equal(first[0][k], first[1][k])


def test_graph_seed_alone_repeats_and_unseeded_ops_differ():
    def build(graph_seed):
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(graph_seed)
            ops = [s.sampled_candidates for s in _samplers_of_every_kind()]
        with tf.Session(graph=g) as sess:
            return sess.run(ops)

    for x, y in zip(build(3), build(3), strict=True):
        np.testing.assert_array_equal(x, y)
    unseeded = [s.sampled_candidates for s in _samplers_of_every_kind()]
    with tf.Session() as s1, tf.Session() as s2:
        a, b = s1.run(unseeded), s2.run(unseeded)
    assert all(not np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_every_strategy_gives_the_same_sequence():
    tf.set_random_seed(11)
    ops = [s.sampled_candidates for s in _samplers_of_every_kind()]
    seqs = []
    for options in STRATEGIES.values():
        with tf.Session(exec_options=options) as sess:
            seqs.append([a for _ in range(2) for a in sess.run(ops)])
    for seq in seqs[1:]:
        for a, b in zip(seqs[0], seq, strict=True):
            np.testing.assert_array_equal(a, b)


# ---- distributions -------------------------------------------------------------------------


@pytest.mark.parametrize("name,build,probs,range_max", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_frequencies_fit_the_distribution(name, build, probs, range_max):
    sampled, true_count, sampled_count = run(build([[0]], DRAWS, False, 5))
    assert sampled.min() >= 0 and sampled.max() < range_max
    assert_fits(np.bincount(sampled, minlength=range_max), probs)
    # without `unique`, a class's expected count is its probability times num_sampled
    np.testing.assert_allclose(sampled_count, probs[sampled] * DRAWS, rtol=1e-6)
    np.testing.assert_allclose(true_count, [[probs[0] * DRAWS]], rtol=1e-6)


# ---- TensorFlow's values --------------------------------------------------------------------


@pytest.fixture(scope="module")
def exact_ours():
    ns = {"tf": tf, "np": np}
    exec(EXACT_PROGRAM, ns)  # noqa: S102 - the program TensorFlow runs too
    return ns["exact"]


# TensorFlow 2.21's outputs of EXACT_PROGRAM (sampled classes; expected counts as float32).
PINNED = {
    "log_uniform_100k/0": (
        [2599, 6639, 721, 45, 56, 2, 27, 5913, 0, 1552, 1673, 4914, 628, 50528, 76974, 1],
        [0.7827350497245789, 0.08273102343082428, 6.774727808078751e-05, 0.992119550704956],
        [0.0026019159704446793, 0.001019739080220461, 0.009333877824246883,
         0.13570448756217957, 0.1112310141324997, 0.8610730767250061, 0.2118811160326004]),
    "uniform/0": (
        [544, 691, 127, 140, 298, 847, 799, 836, 133, 982, 416, 227, 307, 811, 19, 712],
        [0.05000000074505806] * 8, [0.05000000074505806] * 7),
    "fixed_reserved_unique/1": (
        [11, 9, 7, 5, 10], [0.0, 0.0],
        [0.6155991554260254, 0.7741751670837402, 0.5251437425613403, 0.36980417370796204,
         0.6155991554260254]),
}


@pytest.mark.parametrize("key", sorted(PINNED))
def test_sampled_values_are_tensorflows(exact_ours, key):
    classes, true_counts, sampled_counts = PINNED[key]
    got_classes, got_true, got_sampled = exact_ours[key]
    assert got_classes[:len(classes)] == classes
    np.testing.assert_array_equal(np.float32(np.ravel(got_true)[:len(true_counts)]),
                                  np.float32(true_counts))
    np.testing.assert_array_equal(np.float32(got_sampled[:len(sampled_counts)]),
                                  np.float32(sampled_counts))


@pytest.mark.oracle
def test_every_sampler_draws_tensorflows_values(exact_ours):
    """Each sampler, unique or not, three runs in one Session: classes and both expected
    counts equal to TensorFlow's."""
    exact = tensorflow_results()["exact"]
    assert sorted(exact) == sorted(exact_ours)
    for key in sorted(exact):
        for mine, want, what in zip(exact_ours[key], exact[key],
                                    ("sampled", "true_expected", "sampled_expected"),
                                    strict=True):
            np.testing.assert_array_equal(np.asarray(mine, np.float64),
                                          np.asarray(want, np.float64), err_msg=f"{key} {what}")


@pytest.mark.oracle
@pytest.mark.parametrize("name,build,probs,range_max", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_frequencies_match_tensorflow(theirs, name, build, probs, range_max):
    ours = np.bincount(run(build([[0]], DRAWS, False, 5))[0], minlength=30)
    assert_same_distribution(ours, theirs["freq"][name])


def _tries_matching(probs32, counts, num_sampled: int) -> int | None:
    """The number of draws n that explains expected counts with `unique`: p * num_sampled
    exactly (float32) if n == num_sampled (no draw repeated), else 1 - (1 - p) ** n to a
    few float32 ulps (TensorFlow's C library float log1p/expm1 and ours may differ there)."""
    probs32 = np.asarray(probs32, np.float32)
    counts = np.asarray(counts, np.float32)
    if np.array_equal(probs32 * np.float32(num_sampled), counts):
        return num_sampled
    p = probs32.astype(np.float64)
    for n in range(num_sampled + 1, 5000):
        if np.allclose(-np.expm1(n * np.log1p(-p)), counts, rtol=1e-6, atol=0):
            return n
    return None


P0 = log_uniform_probs(30)[:1].astype(np.float32)


def _unique_runs(runs: int, seed: int):
    """Per-class inclusion counts and the draws each run took (log-uniform, 5 of 30)."""
    op = tf.nn.log_uniform_candidate_sampler([[0]], 1, 5, True, 30, seed=seed)
    inclusion, tries = np.zeros(30, np.int64), []
    with tf.Session() as sess:
        for _ in range(runs):
            sampled, true_count, _ = sess.run(op)
            assert len(set(sampled.tolist())) == 5
            inclusion[sampled] += 1
            tries.append(_tries_matching(P0, true_count[0], 5))
    return inclusion, np.array(tries, np.float64)


def _reference_unique_runs(runs: int, rng) -> np.ndarray:
    """The same statistics from a one-draw-at-a-time NumPy reference."""
    probs = log_uniform_probs(30)
    inclusion = np.zeros(30, np.int64)
    for _ in range(runs):
        picked: set[int] = set()
        while len(picked) < 5:
            picked.add(int(rng.choice(30, p=probs)))
        inclusion[list(picked)] += 1
    return inclusion


def test_unique_sampling_matches_one_at_a_time_draws():
    inclusion, tries = _unique_runs(UNIQUE_RUNS, seed=8)
    reference = _reference_unique_runs(UNIQUE_RUNS, np.random.default_rng(8))
    assert_same_distribution(inclusion, reference)
    assert tries.min() >= 5 and tries.mean() > 5


@pytest.mark.oracle
def test_unique_sampling_matches_tensorflow(theirs):
    inclusion, tries = _unique_runs(UNIQUE_RUNS, seed=9)
    assert_same_distribution(inclusion, theirs["unique_inclusion"])
    their_tries = np.array([_tries_matching(P0, [c], 5)
                            for c in theirs["unique_class0_counts"]], np.float64)
    spread = np.sqrt((tries.var() + their_tries.var()) / UNIQUE_RUNS)
    assert abs(tries.mean() - their_tries.mean()) < 5 * spread


@pytest.mark.parametrize("unique", [True, False], ids=["unique", "with_repeats"])
def test_log_uniform_in_c_draws_the_numpy_paths_values(monkeypatch, unique):
    """The log-uniform sampler's tries in C (philox.log_uniform) give the NumPy path's
    samples, try counts and expected counts bit for bit: ranges from 1 to a million, small
    ranges where 4n + 16 tries do not find n distinct classes (the NumPy path then)."""
    from tensorflux.kernels.cpu import candidate_sampling_ops as kernels
    from tensorflux.kernels.cpu.random_ops import GeneratorState
    from tensorflux.lib import philox

    if philox._native is None:
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(0)
    for range_max in (1, 2, 5, 64, 100, 50000, 10**6):
        sampler = kernels._LogUniform(range_max)
        true_classes = rng.integers(0, range_max, (4, 1))
        for n in (1, 3, 64, 200):
            if unique and n > range_max:
                continue
            for seed in range(3):
                fast = kernels._sample_batch(None, sampler, GeneratorState(seed, 7),
                                             true_classes, (1, n, unique))
                with monkeypatch.context() as m:
                    m.setattr(philox, "_native", None)
                    slow = kernels._sample_batch(None, sampler, GeneratorState(seed, 7),
                                                 true_classes, (1, n, unique))
                for a, b in zip(fast, slow, strict=True):
                    assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), \
                        (range_max, n, seed)
    with pytest.raises(ValueError):
        philox._native.log_uniform(np.zeros(4, np.uint32), np.empty(2, np.int64), 0, 1.0,
                                   False)


@pytest.mark.parametrize("unique", [True, False], ids=["unique", "with_repeats"])
def test_log_uniform_from_the_stream_equals_the_tries_over_its_words(unique):
    """philox.log_uniform_at (words made from (key, counter) as the tries need them, half
    a block a try) against philox.log_uniform over the same words: values and tries bit for
    bit, an odd number of tries included, and both give up past 4n + 16 tries (with
    repeats: n)."""
    from tensorflux.lib import philox

    if philox._native is None:
        pytest.skip("the C extension is not built")
    key = np.array([0x1234_5678_9ABC_DEF0], np.uint64)
    for counter in ([0, 0], [2**64 - 3, 5], [77, 0]):
        counter = np.array(counter, np.uint64)
        for span, n in ((50000, 64), (50000, 1), (7, 3), (100, 65), (5, 5), (2, 2),
                        (300, 299)):
            at = philox.log_uniform_at(key, counter, n, span, np.log1p(span), unique)
            over = philox.log_uniform(philox.WordStream(key, counter), n, span,
                                      np.log1p(span), unique)
            if over is None:
                assert at is None
                continue
            assert at is not None and at[1] == over[1]
            assert at[0].tobytes() == over[0].tobytes()
    with pytest.raises(ValueError):
        philox._native.log_uniform_at(1, 0, 0, np.empty(2, np.int64), 0, 1.0, False, 4)
    assert philox._native.log_uniform_at(1, 0, 0, np.empty(2, np.int64), 9, 1.0, False, 1) \
        == -1


def test_log_uniform_counts_in_c_are_the_numpy_paths(monkeypatch):
    """philox.log_uniform_counts (the expected counts in one C loop) against the NumPy path
    (probabilities, then `_expected_counts`), bit for bit: every class of small ranges and
    random ones of large ranges, with and without repeated tries."""
    from tensorflux.kernels.cpu import candidate_sampling_ops as kernels
    from tensorflux.lib import philox

    if philox._native is None:
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(1)
    for range_max in (1, 7, 1000, 50000, 10**6, 2**31 - 1):
        sampler = kernels._LogUniform(range_max)
        values = np.concatenate([np.arange(min(range_max, 1000)),
                                 rng.integers(0, range_max, 500)]).astype(np.int64)
        values = values[:values.size // 5 * 5]
        for num_sampled, num_tries in ((64, 64), (64, 65), (1, 300), (8192, 9000)):
            fast = philox.log_uniform_counts(values.reshape(-1, 5), sampler.log_range,
                                             num_sampled, num_tries)
            with monkeypatch.context() as m:
                m.setattr(philox, "_native", None)
                slow = kernels._expected_counts(sampler.probability(values), num_sampled,
                                                num_tries)
            assert fast.shape == (values.size // 5, 5) and fast.dtype == np.float32
            assert fast.reshape(-1).tobytes() == slow.tobytes(), (range_max, num_tries)
    with pytest.raises(ValueError, match="int64 values"):
        philox._native.log_uniform_counts(np.zeros(3, np.int64), np.empty(2, np.float32),
                                          1.0, 1, 1)


def test_learned_unigram_learns_the_true_classes():
    labels = tf.placeholder(tf.int64, [None, 1])
    op = tf.nn.learned_unigram_candidate_sampler(labels, 1, DRAWS, False, 6, seed=3)
    seen = [[2], [2], [2], [5]]
    with tf.Session() as sess:
        for _ in range(10):
            sess.run(op, {labels: seen})
        sampled, true_count, _ = sess.run(op, {labels: [[0]]})
    weights = np.ones(6) + np.bincount(np.ravel(seen * 10), minlength=6)
    assert_fits(np.bincount(sampled, minlength=6), weights / weights.sum())
    assert true_count[0, 0] == pytest.approx(DRAWS / weights.sum(), rel=1e-6)
    with tf.Session() as sess:  # a new Session starts from uniform counts again
        assert sess.run(op, {labels: [[0]]})[1][0, 0] == pytest.approx(DRAWS / 6, rel=1e-6)


def test_all_candidate_sampler():
    sampled, true_count, sampled_count = run(tf.nn.all_candidate_sampler([[2, 0]], 2, 4, True))
    np.testing.assert_array_equal(sampled, np.arange(4))
    np.testing.assert_array_equal(true_count, np.ones((1, 2), np.float32))
    np.testing.assert_array_equal(sampled_count, np.ones(4, np.float32))


@pytest.mark.parametrize("unique", [False, True])
def test_every_class_when_num_sampled_is_range_max_minus_one(unique):
    sampled, _, count = run(tf.nn.log_uniform_candidate_sampler([[0]], 1, 9, unique, 10,
                                                                seed=2))
    assert sampled.shape == (9,) and sampled.max() < 10 and np.all(count > 0)
    if unique:
        assert len(set(sampled.tolist())) == 9


# ---- expected counts equal TensorFlow's --------------------------------------------------------


@pytest.mark.oracle
def test_expected_counts_equal_tensorflow(theirs):
    sampled, true_count, sampled_count = theirs["log_uniform_counts"]
    ours = tf.nn.log_uniform_candidate_sampler([[3], [77], [99999], [0]], 1, 64, False,
                                               100000, seed=1)
    asked = tf.nn.log_uniform_candidate_sampler(sampled.reshape(1, -1), 64, 64, False,
                                                100000)
    got_true, got_asked = run([ours.true_expected_count, asked.true_expected_count])
    np.testing.assert_array_equal(got_true, true_count)
    np.testing.assert_array_equal(got_asked.reshape(-1), sampled_count)
    uniform = run(tf.nn.uniform_candidate_sampler([[4, 1]], 2, 3, False, 7))
    np.testing.assert_array_equal(uniform[1], theirs["uniform_counts"][1])
    np.testing.assert_array_equal(uniform[2], theirs["uniform_counts"][2])


@pytest.mark.oracle
@pytest.mark.parametrize("key,sampler,num_sampled,probs", [
    ("log_uniform_unique", tf.nn.log_uniform_candidate_sampler, 10, log_uniform_probs(50)),
    ("uniform_unique", tf.nn.uniform_candidate_sampler, 40, np.full(50, 0.02))])
def test_unique_expected_counts_follow_tensorflows_formula(theirs, key, sampler, num_sampled,
                                                           probs):
    """TensorFlow's expected counts with `unique` are the float32 formula for some number of
    draws, and so are ours: for the same draws, the same numbers."""
    ours = run(sampler(np.arange(50).reshape(1, 50), 50, num_sampled, True, 50, seed=1))
    for sampled, true_count, sampled_count in (theirs[key], ours):
        assert _tries_matching(probs.astype(np.float32), true_count[0], num_sampled)
        np.testing.assert_array_equal(sampled_count, true_count[0][sampled])


@pytest.mark.oracle
def test_learned_unigram_counts_equal_tensorflow(theirs):
    op = tf.nn.learned_unigram_candidate_sampler([[0, 2], [2, 2]], 2, 3, False, 5, seed=4)
    with tf.Session() as sess:
        ours = [sess.run(op)[1] for _ in range(4)]
    np.testing.assert_array_equal(np.array(ours), np.array(theirs["learned"]))


@pytest.mark.oracle
def test_fixed_unigram_counts_equal_tensorflow(theirs, tmp_path):
    vocab = tmp_path / "vocab.csv"
    vocab.write_text(VOCAB)
    sharded = tf.nn.fixed_unigram_candidate_sampler(
        [[0, 1, 2, 3]], 4, 2, False, 4, unigrams=[1., 2., 3., 4., 5., 6., 7., 8., 9.],
        distortion=0.5, num_reserved_ids=2, num_shards=3, shard=1)
    from_file = tf.nn.fixed_unigram_candidate_sampler(
        [list(range(7))], 7, 3, False, 7, vocab_file=str(vocab), num_reserved_ids=2,
        distortion=0.8)
    got_sharded, got_file = run([sharded.true_expected_count, from_file.true_expected_count])
    np.testing.assert_array_equal(got_sharded, theirs["fixed_sharded"])
    np.testing.assert_array_equal(got_file, theirs["fixed_vocab"])
    assert got_file[0, 0] == 0 and got_file[0, 1] == 0  # reserved ids


# ---- ComputeAccidentalHits ---------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("index", range(len(HITS)))
def test_accidental_hits_equal_tensorflow(theirs, index):
    true, sampled, num_true = HITS[index]
    ours = run(tf.nn.compute_accidental_hits(tf.constant(true, tf.int64),
                                             tf.constant(sampled, tf.int64), num_true))
    for got, want in zip(ours, theirs["hits"][index], strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_accidental_hits_point_at_the_last_equal_candidate():
    indices, ids, weights = run(tf.nn.compute_accidental_hits([[5, 1], [0, 9]], [1, 5, 1, 9],
                                                              num_true=2))
    np.testing.assert_array_equal(indices, [0, 0, 1])
    np.testing.assert_array_equal(ids, [1, 2, 3])
    np.testing.assert_array_equal(weights, np.full(3, np.finfo(np.float32).min))


def test_accidental_hits_in_c_equal_the_numpy_path(monkeypatch):
    """native.accidental_hits (a hash of the candidates) against the NumPy path (sort and
    search): repeated candidates, several true classes a row, no candidates, no rows,
    negative and large ids."""
    from tensorflux.kernels.cpu import native

    if not native.available():
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(5)
    cases = [(rng.integers(0, 30, (20, k)), rng.integers(0, 30, n)) for k in (1, 2, 3)
             for n in (1, 8, 40)]
    cases += [(np.zeros((4, 1), np.int64), np.zeros(0, np.int64)),
              (np.zeros((0, 2), np.int64), np.arange(5)),
              (np.array([[-3, 2**62], [7, -3]]), np.array([2**62, -3, 9, -3]))]
    true_in = tf.placeholder(tf.int64)
    sampled_in = tf.placeholder(tf.int64, [None])
    for true, sampled in cases:
        hits = tf.nn.compute_accidental_hits(true_in, sampled_in, true.shape[1])
        feed = {true_in: true, sampled_in: sampled}
        fast = run(hits, feed)
        with monkeypatch.context() as m:
            m.setattr(native, "_mod", None)
            slow = run(hits, feed)
        for a, b in zip(fast, slow, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), (true, sampled)
    with pytest.raises(ValueError, match="accidental_hits"):
        native._mod.accidental_hits(np.zeros(4, np.int64), np.zeros(2, np.int64), 1,
                                    np.empty(3, np.int32), np.empty(4, np.int64))


# ---- run-time errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("build,message", [
    (lambda: tf.nn.uniform_candidate_sampler([[0]], 1, 31, True, 30),
     "Sampler's range is too small."),
    (lambda: tf.nn.log_uniform_candidate_sampler([[5]], 1, 2, False, 5),
     r"`true_candidate` out of range \[0, 5\), received 5"),
    (lambda: tf.nn.learned_unigram_candidate_sampler([[-1]], 1, 2, False, 5),
     r"`true_candidate` out of range \[0, 5\), received -1"),
    (lambda: tf.nn.fixed_unigram_candidate_sampler([[0]], 1, 2, False, 3),
     "Must provide either vocab_file or unigrams."),
    (lambda: tf.nn.fixed_unigram_candidate_sampler([[0]], 1, 2, False, 3, vocab_file="v",
                                                   unigrams=[1, 2, 3]),
     "Must only provide one of vocab_file and unigrams."),
    (lambda: tf.nn.fixed_unigram_candidate_sampler([[0]], 1, 2, False, 5, unigrams=[1, 2]),
     "range is 5 must be equal to weights size  2"),
])
def test_run_time_errors(build, message):
    with pytest.raises(errors.InvalidArgumentError, match=message):
        run(build())


def test_num_true_is_checked_at_run_time():
    labels = tf.placeholder(tf.int64)
    op = tf.nn.uniform_candidate_sampler(labels, 2, 1, False, 5)
    with pytest.raises(errors.InvalidArgumentError, match="must have num_true columns"):
        run(op, {labels: [[1]]})
    with pytest.raises(errors.InvalidArgumentError, match="must be a matrix"):
        run(op, {labels: [1, 2]})


def test_vocab_file_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,1\nb,x\n")
    with pytest.raises(errors.InvalidArgumentError, match="Wrong vocabulary format at line: b,x"):
        run(tf.nn.fixed_unigram_candidate_sampler([[0]], 1, 1, False, 2, vocab_file=str(bad)))
    with pytest.raises(errors.NotFoundError):
        run(tf.nn.fixed_unigram_candidate_sampler([[0]], 1, 1, False, 2,
                                                  vocab_file=str(tmp_path / "none.csv")))


@pytest.mark.oracle
def test_range_error_message_is_tensorflows(theirs):
    assert theirs["too_small"] == "Sampler's range is too small."


@pytest.mark.parametrize("sampler", ["uniform", "log_uniform", "learned_unigram",
                                     "fixed_unigram"])
def test_draws_in_blocks_give_the_one_call_values(sampler, monkeypatch):
    """A big draw (and the log-uniform's probabilities) runs in blocks with the step
    checked between them (a deadline stops it: scripts/interrupt_sweep.py); the blocks give
    the values of one call."""
    from tensorflux.kernels.cpu import candidate_sampling_ops as kernels

    def run():
        g = tf.Graph()
        with g.as_default():
            fn = getattr(tf.nn, f"{sampler}_candidate_sampler")
            more = {"unigrams": [1.0 + (k % 7) for k in range(300)]} \
                if sampler == "fixed_unigram" else {}
            out = fn(tf.constant([[1, 2]], tf.int64), 2, 5000, False, 300, seed=3, **more)
        with tf.Session(graph=g) as sess:
            return sess.run(out)

    whole = run()
    monkeypatch.setattr(kernels, "DRAW_BLOCK", 64)
    monkeypatch.setattr(kernels, "LOG_BLOCK", 7)  # log-uniform's expected counts too
    for a, b in zip(run(), whole, strict=True):
        np.testing.assert_array_equal(a, b)
