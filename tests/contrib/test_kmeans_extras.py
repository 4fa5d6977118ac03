"""tf.contrib.factorization.KMeans beyond the basics: KMC2 seeding (against a NumPy
replay of the chains, its statistics, rounds over several batches, determinism) and
mini-batch steps per iteration (against a NumPy replay; S steps over a data set's batches
are one Lloyd iteration)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.factorization import KMC2_INIT, KMeans
from tensorflux.lib import philox
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(60)
RNG = np.random.default_rng(5)
DATA = RNG.permutation(np.concatenate(
    [RNG.normal(c, 0.3, (40, 2)) for c in ((0, 0), (6, 0), (0, 6), (6, 6))])
).astype(np.float32)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _chain(distances, seed):
    """One KMC2 chain in NumPy (the op's rule: move to i when d_i > u d_current)."""
    u = philox.uint32_to_float(philox.words(np.array([seed], np.uint64),
                                            np.zeros(2, np.uint64), len(distances) - 1))
    current = 0
    for i in range(1, len(distances)):
        if distances[i] > u[i - 1] * distances[current]:
            current = i
    return current


def _kmc2_round(batch, centers, k, length, seed):
    """The centers after one init_op run (module docstring of clustering_ops)."""
    if not centers:
        return [batch[0]]  # the first run picks the first row alone
    centers = list(centers)
    to_add = max(min(k - len(centers), len(batch) // length), 1)
    for i in range(to_add):
        subset = batch[i * length:(i + 1) * length]
        d = ((subset[:, None].astype(np.float64) - np.array(centers)[None]) ** 2).sum(-1)
        centers.append(subset[_chain(d.min(1).astype(np.float32), seed)])
    return centers


def _kmeans(k, **kwargs):
    x = tf.placeholder(tf.float32, [None, 2])
    parts = KMeans(x, k, **kwargs).training_graph()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return x, parts, sess


@pytest.mark.parametrize("k, length, seed", [(4, 20, 0), (4, 40, 7), (3, 160, 2),
                                             (6, 10, 11)])
def test_kmc2_two_rounds_equal_the_numpy_replay(k, length, seed):
    """The first round picks the first row; the second adds up to rows // L centers."""
    x, parts, sess = _kmeans(k, initial_clusters=KMC2_INIT, kmc2_chain_length=length,
                             random_seed=seed)
    done, centers, init_op = parts[3], parts[4], parts[5]
    want = []
    for batch in (DATA, DATA[::-1]):
        sess.run(init_op, {x: batch})
        want = _kmc2_round(batch, want, k, length, seed)
        got = sess.run(centers)
        np.testing.assert_array_equal(got[:len(want)], np.array(want))
        assert sess.run(done) == (len(want) == k)
    assert len(want) == min(k, 1 + max(len(DATA) // length, 1))


def test_kmc2_rounds_over_several_batches_until_all_centers_are_there():
    k, length, seed = 5, 30, 3
    x, parts, sess = _kmeans(k, initial_clusters=KMC2_INIT, kmc2_chain_length=length,
                             random_seed=seed)
    done, centers_var, init_op = parts[3], parts[4], parts[5]
    selected = [v for v in tf.global_variables() if "clusters_selected" in v.op.name][0]
    want, runs = [], 0
    while not sess.run(done):
        batch = np.roll(DATA, -37 * runs, axis=0)[:50]  # 50 rows: one center a round
        sess.run(init_op, {x: batch})
        want = _kmc2_round(batch, want, k, length, seed)
        runs += 1
        assert sess.run(selected) == len(want)
    assert runs == k  # 50 rows < 2 L: one center a round
    centers = sess.run(centers_var)
    np.testing.assert_array_equal(centers, np.array(want))
    rows = {tuple(r) for r in DATA}
    assert all(tuple(c) in rows for c in centers) and len({tuple(c) for c in centers}) == k
    sess.run(init_op, {x: DATA[::-1]})  # initialized: nothing changes
    np.testing.assert_array_equal(sess.run(centers_var), centers)


def test_kmc2_seeds_spread_over_separated_clusters():
    """Far points are picked with high probability: each of 4 well separated blobs gets a
    center in most seeds (plain uniform seeding would cover all 4 in ~9% of draws)."""
    covered = 0
    for seed in range(20):
        with tf.Graph().as_default():
            x, parts, sess = _kmeans(4, initial_clusters=KMC2_INIT, kmc2_chain_length=40,
                                     random_seed=seed)
            sess.run(parts[5], {x: DATA})  # the first row
            sess.run(parts[5], {x: DATA})  # 160 rows // 40: the 3 others
            centers = sess.run(parts[4])
        blobs = {(int(c[0] > 3), int(c[1] > 3)) for c in centers}
        covered += len(blobs) == 4
    assert covered >= 17


def test_kmc2_is_deterministic_under_a_seed():
    def centers(seed):
        with tf.Graph().as_default():
            x, parts, sess = _kmeans(4, initial_clusters=KMC2_INIT, kmc2_chain_length=8,
                                     random_seed=seed)
            for _ in range(2):
                sess.run(parts[5], {x: DATA[::3]})
            return sess.run(parts[4])
    np.testing.assert_array_equal(centers(5), centers(5))
    assert any(not np.array_equal(centers(5), centers(s)) for s in (6, 7, 8))


def test_kmc2_then_training_and_cosine_centers():
    x, parts, sess = _kmeans(4, initial_clusters=KMC2_INIT, kmc2_chain_length=40,
                             distance_metric="cosine", random_seed=1)
    for _ in range(2):
        sess.run(parts[5], {x: DATA + 10})
    assert sess.run(parts[3])
    centers = sess.run(parts[4])
    np.testing.assert_allclose(np.linalg.norm(centers, axis=1), 1, rtol=1e-5)
    unit = (DATA + 10) / np.linalg.norm(DATA + 10, axis=1, keepdims=True)
    assert all(np.abs(unit - c).max(1).min() < 1e-6 for c in centers)
    sess.run(parts[6], {x: DATA + 10})
    np.testing.assert_allclose(np.linalg.norm(sess.run(parts[4]), axis=1), 1, rtol=1e-5)


def _minibatch_replay(batches, start, steps):
    """TF1's mini-batch k-means with `steps` per iteration, in NumPy: the centers and the
    updated copy after each step."""
    updated = start.astype(np.float64)
    centers = updated.copy() if steps > 1 else updated  # one array when S is 1
    counts = np.zeros(len(start)) if steps > 1 else np.ones(len(start))
    left, history = steps, []
    for batch in batches:
        assign = ((batch[:, None] - centers[None]) ** 2).sum(-1).argmin(1)
        for c in np.unique(assign):
            pts = batch[assign == c]
            updated[c] += (pts.sum(0) - len(pts) * updated[c]) / (counts[c] + len(pts))
            counts[c] += len(pts)
        if steps > 1:
            left -= 1
            if left <= 0:
                centers, counts, left = updated.copy(), np.zeros(len(start)), steps
        history.append((centers.copy(), updated.copy()))
    return history


@pytest.mark.parametrize("steps", [1, 2, 3, 5])
def test_mini_batch_steps_per_iteration_equal_the_numpy_replay(steps):
    start = DATA[[0, 1, 2, 3]]
    x, parts, sess = _kmeans(4, initial_clusters=start, use_mini_batch=True,
                             mini_batch_steps_per_iteration=steps)
    sess.run(parts[5], {x: DATA})
    updated = [v for v in tf.global_variables() if "clusters_updated" in v.op.name]
    batches = [DATA[i * 16:(i + 1) * 16] for i in range(10)]
    for batch, (want_centers, want_updated) in zip(
            batches, _minibatch_replay(batches, start, steps), strict=True):
        sess.run(parts[6], {x: batch})
        np.testing.assert_allclose(sess.run(parts[4]), want_centers, rtol=1e-5, atol=1e-5)
        if updated:
            np.testing.assert_allclose(sess.run(updated[0]), want_updated, rtol=1e-5,
                                       atol=1e-5)
    assert bool(updated) == (steps > 1)


def test_an_iteration_over_all_batches_is_a_lloyd_step():
    start = DATA[[0, 1, 2, 3]]
    x, parts, sess = _kmeans(4, initial_clusters=start, use_mini_batch=True,
                             mini_batch_steps_per_iteration=8)
    sess.run(parts[5], {x: DATA})
    want = start.astype(np.float64)
    for _ in range(2):
        for i in range(8):
            sess.run(parts[6], {x: DATA[i * 20:(i + 1) * 20]})
        assign = ((DATA[:, None] - want[None]) ** 2).sum(-1).argmin(1)
        want = np.stack([DATA[assign == c].mean(0) if (assign == c).any() else want[c]
                         for c in range(4)])
        np.testing.assert_allclose(sess.run(parts[4]), want, rtol=1e-5, atol=1e-5)


def test_full_batch_ignores_steps_per_iteration():
    x, parts, sess = _kmeans(4, initial_clusters=DATA[:4], mini_batch_steps_per_iteration=3)
    assert not [v for v in tf.global_variables() if "update_in_steps" in v.op.name]
    sess.run(parts[5], {x: DATA})
    sess.run(parts[6], {x: DATA})
    assert not np.array_equal(sess.run(parts[4]), DATA[:4])


def test_kmc2_with_steps_per_iteration_seeds_both_copies():
    x, parts, sess = _kmeans(4, initial_clusters=KMC2_INIT, kmc2_chain_length=40,
                             use_mini_batch=True, mini_batch_steps_per_iteration=2)
    for _ in range(2):
        sess.run(parts[5], {x: DATA})
    updated = [v for v in tf.global_variables() if "clusters_updated" in v.op.name][0]
    np.testing.assert_array_equal(sess.run(updated), sess.run(parts[4]))


@pytest.mark.parametrize("kwargs", [{"mini_batch_steps_per_iteration": 0},
                                    {"mini_batch_steps_per_iteration": 1.5},
                                    {"kmc2_chain_length": -3}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        KMeans(tf.placeholder(tf.float32, [None, 2]), 3, **kwargs)


def test_kmc2_on_an_empty_batch_is_an_invalid_argument():
    x, parts, sess = _kmeans(2, initial_clusters=KMC2_INIT)
    with pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(parts[5], {x: np.zeros((0, 2), np.float32)})


def test_kmeans_plus_plus_seeding_is_tensorflows():
    """KMeans' k-means++ centers are the KmeansPlusPlusInitialization op's, whose picks
    are TensorFlow's (tests/contrib/test_factorization_raw_ops.py's recorded case 0)."""
    points = np.random.RandomState(0).randn(30, 3).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3])
    parts = KMeans(x, 5, initial_clusters="kmeans_plus_plus", random_seed=1,
                   kmeans_plus_plus_num_retries=-1).training_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(parts[5], {x: points})
        np.testing.assert_array_equal(sess.run(parts[4]), points[[7, 20, 19, 22, 3]])


@pytest.mark.oracle
@pytest.mark.parametrize("seed", [0, 7])
def test_random_init_draws_tensorflows_rows(seed):
    """TF1's random init draws random_uniform([missing], 0, rows, int64, seed) and gathers:
    the oracle's draw picks the rows KMeans picks."""
    rows = run_tf(f"""
draw = tf.random.uniform([4], 0, {len(DATA)}, dtype=tf.int64, seed={seed})
with tf.Session() as sess:
    result = sess.run(draw).tolist()
""")
    x, parts, sess = _kmeans(4, random_seed=seed)
    sess.run(parts[5], {x: DATA})
    np.testing.assert_array_equal(sess.run(parts[4]), DATA[rows])
