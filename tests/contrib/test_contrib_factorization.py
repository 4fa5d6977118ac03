"""tf.contrib.factorization.KMeans against NumPy: distances and assignments, a full-batch
(Lloyd) step, mini-batch running means, cosine distance, the initializations, errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib.factorization import KMeans

pytestmark = pytest.mark.timeout(60)
RNG = np.random.default_rng(0)
DATA = np.concatenate([RNG.normal(c, 0.3, (15, 3)) for c in
                       ((0, 0, 0), (4, 4, 0), (0, 4, 4))]).astype(np.float32)
START = DATA[[0, 1, 20]]


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _graph(**kwargs):
    x = tf.placeholder(tf.float32, [None, 3])
    parts = KMeans(x, 3, **kwargs).training_graph()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    sess.run(parts[5], {x: DATA})
    return x, parts, sess


def _sq_distances(points, centers):
    return ((points[:, None, :] - centers[None]) ** 2).sum(-1)


@pytest.mark.parametrize("mini_batch", [False, True])
def test_scores_and_assignments_are_the_nearest_centers(mini_batch):
    x, (all_scores, idx, scores, done, centers, _, _), sess = _graph(
        initial_clusters=START, use_mini_batch=mini_batch)
    got_all, got_idx, got_scores = sess.run([all_scores[0], idx[0], scores[0]], {x: DATA})
    want = _sq_distances(DATA, START)
    np.testing.assert_allclose(got_all, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got_idx, want.argmin(1))
    np.testing.assert_allclose(got_scores, want.min(1), rtol=1e-4, atol=1e-4)
    assert sess.run(done) and np.array_equal(sess.run(centers), START)


def test_full_batch_step_is_a_lloyd_iteration():
    x, parts, sess = _graph(initial_clusters=START)
    centers, train = parts[4], parts[6]
    want = START.astype(np.float64)
    for _ in range(3):
        sess.run(train, {x: DATA})
        assign = _sq_distances(DATA, want).argmin(1)
        want = np.stack([DATA[assign == c].sum(0) / ((assign == c).sum() + 1e-6)
                         for c in range(3)])
        np.testing.assert_allclose(sess.run(centers), want, rtol=1e-5, atol=1e-5)


def test_mini_batch_steps_keep_running_means():
    x, parts, sess = _graph(initial_clusters=START, use_mini_batch=True)
    centers, train = parts[4], parts[6]
    # TF1's counts start at 1: the initial center weighs as one point.
    want, counts = START.astype(np.float64), np.ones(3)
    for batch in (DATA[:20], DATA[20:], DATA[::3]):
        sess.run(train, {x: batch})
        assign = _sq_distances(batch, want).argmin(1)
        for c in range(3):
            k = (assign == c).sum()
            if k:
                want[c] += (batch[assign == c].sum(0) - k * want[c]) / (counts[c] + k)
                counts[c] += k
        np.testing.assert_allclose(sess.run(centers), want, rtol=1e-5, atol=1e-5)
    counts_var = [v for v in tf.global_variables() if "clusters_count" in v.op.name][0]
    np.testing.assert_array_equal(sess.run(counts_var), counts)


def test_cosine_distance_and_normalized_centers():
    x, parts, sess = _graph(initial_clusters=START, distance_metric="cosine")
    all_scores, idx, centers, train = parts[0][0], parts[1][0], parts[4], parts[6]
    unit = DATA / np.linalg.norm(DATA, axis=1, keepdims=True)
    start = START / np.linalg.norm(START, axis=1, keepdims=True)
    np.testing.assert_allclose(sess.run(all_scores, {x: DATA}), 1 - unit @ start.T,
                               atol=1e-5)
    sess.run(train, {x: DATA})
    assign = (1 - unit @ start.T).argmin(1)
    sums = np.stack([unit[assign == c].sum(0) for c in range(3)])
    np.testing.assert_allclose(sess.run(centers),
                               sums / np.linalg.norm(sums, axis=1, keepdims=True),
                               atol=1e-5)
    assert sess.run(idx, {x: DATA}).shape == (45,)


@pytest.mark.parametrize("init", ["random", "kmeans_plus_plus"])
def test_initial_centers_are_input_rows_drawn_once(init):
    x, parts, sess = _graph(initial_clusters=init, random_seed=3)
    centers, init_op = parts[4], parts[5]
    first = sess.run(centers)
    rows = {tuple(r) for r in DATA}
    assert all(tuple(c) in rows for c in first)
    sess.run(init_op, {x: DATA[::-1]})  # initialized: nothing is drawn again
    np.testing.assert_array_equal(sess.run(centers), first)
    if init == "kmeans_plus_plus":
        assert len({tuple(c) for c in first}) == 3


def test_shards_and_a_callable_initializer():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [None, 3])
    parts = KMeans([a, b], 3, initial_clusters=lambda inputs, k: START).training_graph()
    assert len(parts[0]) == len(parts[1]) == len(parts[2]) == 2
    feed = {a: DATA[:25], b: DATA[25:]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(parts[5], feed)
        sess.run(parts[6], feed)
        assign = _sq_distances(DATA, START).argmin(1)
        want = np.stack([DATA[assign == c].mean(0) for c in range(3)])
        np.testing.assert_allclose(sess.run(parts[4]), want, rtol=1e-5, atol=1e-5)


def test_random_init_takes_small_batches_whole_then_draws_the_rest():
    """TF1's greedy random init: 3 rows for 5 centers are all taken, the next batch fills
    the 2 missing (drawn from its rows)."""
    x = tf.placeholder(tf.float32, [None, 3])
    parts = KMeans(x, 5, random_seed=4).training_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(parts[5], {x: DATA[:3]})
        assert not sess.run(parts[3])
        np.testing.assert_array_equal(sess.run(parts[4])[:3], DATA[:3])
        sess.run(parts[5], {x: DATA[10:20]})
        assert sess.run(parts[3])
        rest = {tuple(r) for r in DATA[10:20]}
        assert all(tuple(c) in rest for c in sess.run(parts[4])[3:])


def test_too_few_rows_for_kmeans_plus_plus_is_an_invalid_argument():
    x = tf.placeholder(tf.float32, [None, 3])
    parts = KMeans(x, 5, initial_clusters="kmeans_plus_plus").training_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_to_sample"):
            sess.run(parts[5], {x: DATA[:3]})


@pytest.mark.parametrize("kwargs,message", [
    ({"num_clusters": 0}, "num_clusters"),
    ({"distance_metric": "manhattan"}, "distance metric"),
    ({"initial_clusters": "kmc3"}, "initialization"),
    ({"mini_batch_steps_per_iteration": 0}, "mini_batch_steps_per_iteration"),
    ({"kmc2_chain_length": 0}, "kmc2_chain_length"),
])
def test_bad_arguments_are_value_errors(kwargs, message):
    x = tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(ValueError, match=message):
        KMeans(x, **dict({"num_clusters": 3}, **kwargs))
    with pytest.raises(ValueError, match="rank-2"):
        KMeans(tf.placeholder(tf.float32, [None, 3, 1]), 3)


def test_inputs_of_unknown_width_size_the_centers_at_initialization():
    x = tf.placeholder(tf.float32, [None, None])
    parts = KMeans(x, 3, initial_clusters=START).training_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(parts[5], {x: DATA})
        sess.run(parts[6], {x: DATA})
        assert sess.run(parts[4]).shape == (3, 3)
