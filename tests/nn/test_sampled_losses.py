"""`tf.nn.sampled_softmax_loss` and `tf.nn.nce_loss` (tensorflux/nn/nn_impl.py): losses and
gradients with fixed `sampled_values` against a NumPy reference and against TensorFlow (the
same program in both, tests/sampling_oracle.py), sharded weights with both partition
strategies, finite-difference gradients, the default sampler's seeds, the full softmax
recovered with every class sampled, edge cases and errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tests import oracle
from tests.sampling_oracle import LOSS_CASES, LOSS_PROGRAM, tensorflow_results

LOWEST = np.finfo(np.float32).min


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


# ---- reference ---------------------------------------------------------------------------------


def reference_logits(x, w, b, labels, sampled, true_count, sampled_count, remove):
    """[batch, num_true + num_sampled] logits and targets, from the definitions."""
    x, w, b = (np.asarray(a, np.float64) for a in (x, w, b))
    true_logits = np.einsum("bd,bkd->bk", x, w[labels]) + b[labels] - np.log(true_count)
    sampled_logits = x @ w[sampled].T + b[sampled] - np.log(sampled_count)
    if remove:  # a true class hits its last position among the candidates only
        last = {int(v): j for j, v in enumerate(sampled)}
        for i, row in enumerate(labels):
            for v in row:
                if int(v) in last:
                    sampled_logits[i, last[int(v)]] = LOWEST
    num_true = labels.shape[1]
    targets = np.concatenate([np.full(labels.shape, 1.0 / num_true),
                              np.zeros(sampled_logits.shape)], axis=1)
    return np.concatenate([true_logits, sampled_logits], axis=1), targets


def reference_loss(kind, *args):
    logits, targets = reference_logits(*args)
    if kind == "sampled_softmax_loss":
        peak = logits.max(axis=1, keepdims=True)
        log_z = peak[:, 0] + np.log(np.exp(logits - peak).sum(axis=1))
        return -(targets * logits).sum(axis=1) + log_z
    losses = np.maximum(logits, 0) - logits * targets + np.log1p(np.exp(-np.abs(logits)))
    return losses.sum(axis=1)


def run_program():
    ns = {"tf": tf, "np": np}
    exec(LOSS_PROGRAM, ns)  # noqa: S102 - the program TensorFlow runs too
    return ns["result"]


@pytest.fixture(scope="module")
def ours():
    with tf.Graph().as_default():
        return run_program()


# ---- values and gradients with fixed sampled values -------------------------------------------


@pytest.mark.parametrize("case", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_losses_match_the_reference(ours, case):
    name, kind, _, _, _, remove = case
    x, w, b, labels, sampled, true_count, sampled_count = ours[name]["inputs"]
    want = reference_loss(kind, x, w, b, labels, sampled, true_count, sampled_count, remove)
    np.testing.assert_allclose(ours[name]["loss"], want, rtol=1e-5, atol=1e-5)


@pytest.mark.oracle
@pytest.mark.parametrize("case", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_losses_and_gradients_match_tensorflow(ours, case):
    name = case[0]
    theirs = tensorflow_results()["losses"][name]
    for a, b in zip(ours[name]["inputs"], theirs["inputs"], strict=True):
        np.testing.assert_array_equal(a, b)  # the same data on both sides
    assert ours[name]["loss"].dtype == np.float32
    np.testing.assert_allclose(ours[name]["loss"], theirs["loss"], rtol=1e-5, atol=1e-5)
    for got, want in zip(ours[name]["grads"], theirs["grads"], strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _problem(dtype=np.float32, num_true=1, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 4)).astype(dtype)
    w = (0.5 * rng.normal(size=(8, 4))).astype(dtype)
    b = rng.normal(size=8).astype(dtype)
    labels = rng.integers(0, 8, size=(3, num_true))
    return x, w, b, labels


def _fixed_values(labels, sampled):
    true_count = np.full(labels.shape, 0.4, np.float32)
    sampled_count = np.linspace(0.2, 0.9, len(sampled)).astype(np.float32)
    return (tf.constant(np.asarray(sampled), tf.int64), tf.constant(true_count),
            tf.constant(sampled_count))


@pytest.mark.parametrize("kind", ["sampled_softmax_loss", "nce_loss"])
def test_gradients_reach_weights_as_indexed_slices_biases_and_inputs(kind):
    x, w, b, labels = _problem()
    weights = tf.Variable(w)
    biases, inputs = tf.Variable(b), tf.constant(x)
    loss = getattr(tf.nn, kind)(weights, biases, labels, inputs, 4, 8,
                                sampled_values=_fixed_values(labels, [1, 2, 5, 6]))
    assert loss.shape.as_list() == [3] and loss.dtype == tf.float32
    gw, gb, gx = tf.gradients(loss, [weights, biases, inputs])
    assert isinstance(gw, tf.IndexedSlices) and isinstance(gb, tf.IndexedSlices)
    assert gx.shape.as_list() == [3, 4]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        gw_value = sess.run(gw)
    assert sorted(set(gw_value.indices.tolist())) == sorted(
        set(labels.ravel().tolist()) | {1, 2, 5, 6})


@pytest.mark.parametrize("kind", ["sampled_softmax_loss", "nce_loss"])
@pytest.mark.parametrize("num_true", [1, 2])
def test_finite_difference_gradients(kind, num_true):
    x, w, b, labels = _problem(np.float64, num_true)
    inputs = tf.placeholder(tf.float64, x.shape)
    weights = tf.placeholder(tf.float64, w.shape)
    biases = tf.placeholder(tf.float64, b.shape)
    sampled = [labels[0, 0], 3, 5, 3]
    loss = getattr(tf.nn, kind)([weights], biases, labels, inputs, 4, 8, num_true=num_true,
                                sampled_values=_fixed_values(labels, sampled),
                                remove_accidental_hits=True)
    with tf.Session():
        err = tf.test.compute_gradient_error([inputs, weights, biases],
                                             [x.shape, w.shape, b.shape], loss, [3],
                                             x_init_value=[x, w, b], delta=1e-6)
    assert err < 1e-6


@pytest.mark.parametrize("kind", ["sampled_softmax_loss", "nce_loss"])
@pytest.mark.parametrize("num_true", [1, 2])
def test_unknown_batch_size_gives_the_static_values(kind, num_true):
    # labels of unknown batch: the true rows are split off by a size computed in the graph
    x, w, b, labels = _problem(num_true=num_true)
    labels_in = tf.placeholder(tf.int64, [None, num_true])
    inputs_in = tf.placeholder(tf.float32, [None, 4])
    weights, biases = tf.Variable(w), tf.Variable(b)
    losses = []
    for lab, inp in ((labels, tf.constant(x)), (labels_in, inputs_in)):
        loss = getattr(tf.nn, kind)(weights, biases, lab, inp, 4, 8, num_true=num_true,
                                    sampled_values=_fixed_values(labels, [1, 2, 5, 6]))
        gw, gb = tf.gradients(loss, [weights, biases])
        losses.append([loss, tf.convert_to_tensor(gw), tf.convert_to_tensor(gb)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        static, dynamic = sess.run(losses, {labels_in: labels, inputs_in: x})
    want = reference_loss(kind, x, w, b, labels, [1, 2, 5, 6],
                          np.full(labels.shape, 0.4), np.linspace(0.2, 0.9, 4),
                          kind == "sampled_softmax_loss")
    np.testing.assert_allclose(static[0], want, rtol=1e-5)
    for a, d in zip(static, dynamic, strict=True):
        np.testing.assert_array_equal(a, d)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_weights_and_partitioned_variables(strategy):
    x, w, b, labels = _problem()
    values = _fixed_values(labels, [0, 7, 2])
    whole = tf.nn.sampled_softmax_loss(w, b, labels, x, 3, 8, sampled_values=values)
    shards = [w[k::3] for k in range(3)] if strategy == "mod" else np.array_split(w, 3)
    sharded = tf.nn.sampled_softmax_loss([tf.constant(s) for s in shards], b, labels, x, 3, 8,
                                         sampled_values=values, partition_strategy=strategy)
    with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
        var = tf.get_variable("w", initializer=tf.constant(w))
    partitioned = tf.nn.nce_loss(var, b, labels, x, 3, 8, sampled_values=values,
                                 partition_strategy="div")
    nce_whole = tf.nn.nce_loss(w, b, labels, x, 3, 8, sampled_values=values)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([whole, sharded, partitioned, nce_whole])
    np.testing.assert_allclose(got[1], got[0], rtol=1e-6)
    np.testing.assert_allclose(got[2], got[3], rtol=1e-6)


# ---- the default sampler -----------------------------------------------------------------------


def test_every_class_sampled_gives_the_full_softmax_loss():
    x, w, b, labels = _problem()
    sampled_values = tf.nn.all_candidate_sampler(labels, 1, 8, True)
    loss = tf.nn.sampled_softmax_loss(w, b, labels, x, 8, 8, sampled_values=sampled_values)
    full = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels[:, 0], logits=tf.matmul(x, w, transpose_b=True) + b)
    with tf.Session() as sess:
        got, want = sess.run([loss, full])
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("kind", ["sampled_softmax_loss", "nce_loss"])
def test_num_sampled_one_below_num_classes(kind):
    x, w, b, labels = _problem()
    inputs = tf.constant(x)
    loss = getattr(tf.nn, kind)(w, b, labels, inputs, 7, 8)
    (grad,) = tf.gradients(loss, [inputs])
    with tf.Session() as sess:
        values = [sess.run([loss, grad]) for _ in range(3)]
    for v, g in values:
        assert v.shape == (3,) and np.all(np.isfinite(v)) and np.all(v > 0)
        assert np.all(np.isfinite(g))


def test_seeds_repeat_and_runs_differ():
    x, w, b, labels = _problem()
    loss = tf.nn.sampled_softmax_loss(w, b, labels, x, 3, 8, seed=4)
    with tf.Session() as sess:
        first = [sess.run(loss) for _ in range(4)]
    with tf.Session() as sess:
        again = [sess.run(loss) for _ in range(4)]
    np.testing.assert_array_equal(np.array(first), np.array(again))
    assert any(not np.array_equal(first[0], f) for f in first[1:])


def test_float64_and_int32_labels():
    x, w, b, labels = _problem(np.float64)
    loss = tf.nn.nce_loss(w, b, labels.astype(np.int32), x, 4, 8)
    assert loss.dtype == tf.float64
    with tf.Session() as sess:
        assert np.all(np.isfinite(sess.run(loss)))


def test_more_samples_than_classes_fail_like_tensorflow():
    x, w, b, labels = _problem()
    loss = tf.nn.sampled_softmax_loss(w, b, labels, x, 9, 8)
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                             match="Sampler's range is too small."):
        sess.run(loss)


# ---- a seeded word2vec-style training run -----------------------------------------------------

_WORD2VEC = """
V, E, B, NS = 3000, 32, 64, 32
rng = np.random.RandomState(0)
data = (rng.zipf(1.3, 4000) % V).astype(np.int64)
tf.set_random_seed(1)
x = tf.placeholder(tf.int32, [B])
y = tf.placeholder(tf.int32, [B, 1])
emb = tf.Variable(tf.random_uniform([V, E], -1.0, 1.0))
w = tf.Variable(tf.truncated_normal([V, E], stddev=1.0 / E ** 0.5))
b = tf.Variable(tf.zeros([V]))
h = tf.nn.embedding_lookup(emb, x)
nce = tf.reduce_mean(tf.nn.nce_loss(w, b, y, h, NS, V))
softmax = tf.reduce_mean(tf.nn.sampled_softmax_loss(w, b, y, h, NS, V))
train = tf.train.GradientDescentOptimizer(1.0).minimize(nce + softmax)
losses = []
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    for step in range(15):
        i = step * B
        losses.append(s.run([nce, softmax, train], {x: data[i:i + B],
                                                     y: data[i + 1:i + B + 1, None]})[:2])
result = {"losses": np.array(losses)}
"""


@pytest.mark.oracle
@pytest.mark.timeout(300)
def test_a_seeded_word2vec_run_follows_tensorflows_losses():
    """The default samplers draw TF's negatives and the initializers TF's values, so nce_loss
    and sampled_softmax_loss follow TF's curve up to float rounding."""
    ours, theirs = oracle.run_both(_WORD2VEC, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-5, atol=1e-5)
