"""tf.losses: every loss and reduction against NumPy and against TensorFlow (one oracle
run evaluates the whole table), collections, names and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

R = tf.losses.Reduction
_rng = np.random.RandomState(0)
# Inputs shared by every case (the oracle gets the same numbers).
DATA = {
    "lab": _rng.rand(4, 3).astype(np.float32),
    "pred": _rng.rand(4, 3).astype(np.float32),
    "bin": (_rng.rand(4, 3) > 0.5).astype(np.float32),
    "logits": _rng.randn(4, 3).astype(np.float32),
    "onehot": np.eye(3, dtype=np.float32)[[0, 2, 1, 2]],
    "ids": np.array([0, 2, 1, 2], np.int32),
    "w_col": np.array([[1.0], [0.0], [2.0], [0.5]], np.float32),
    "w_full": (_rng.rand(4, 3) * (_rng.rand(4, 3) > 0.3)).astype(np.float32),
    "w_row": np.array([1.0, 0.0, 2.0, 0.5], np.float32),
    "unit_a": (lambda a: a / np.linalg.norm(a, axis=1, keepdims=True))(_rng.randn(4, 3)),
    "unit_b": (lambda a: a / np.linalg.norm(a, axis=1, keepdims=True))(_rng.randn(4, 3)),
}
_REDUCTIONS = ["NONE", "SUM", "MEAN", "SUM_OVER_BATCH_SIZE", "SUM_BY_NONZERO_WEIGHTS"]
# Each case is an expression in `tf`, `R` and the DATA names, the same in both libraries.
CASES = [f"tf.losses.mean_squared_error(lab, pred, weights={w}, reduction=R.{r})"
         for w in ("1.0", "w_col", "w_full", "0.0") for r in _REDUCTIONS] + [
    "tf.losses.absolute_difference(lab, pred, weights=w_col)",
    "tf.losses.huber_loss(lab, pred * 3, delta=0.7)",
    "tf.losses.huber_loss(lab, pred * 3, weights=w_full, reduction=R.NONE)",
    "tf.losses.hinge_loss(bin, logits)",
    "tf.losses.hinge_loss(bin, logits, weights=w_col, reduction=R.SUM)",
    "tf.losses.log_loss(bin, pred)",
    "tf.losses.log_loss(bin, pred, epsilon=0.1, reduction=R.MEAN, weights=w_full)",
    "tf.losses.cosine_distance(unit_a, unit_b, axis=1)",
    "tf.losses.cosine_distance(unit_a, unit_b, dim=1, weights=w_col, reduction=R.NONE)",
    "tf.losses.mean_pairwise_squared_error(lab, pred)",
    "tf.losses.mean_pairwise_squared_error(lab, pred, weights=w_col)",
    "tf.losses.sigmoid_cross_entropy(bin, logits)",
    "tf.losses.sigmoid_cross_entropy(bin, logits, label_smoothing=0.2, weights=w_full)",
    "tf.losses.softmax_cross_entropy(onehot, logits)",
    "tf.losses.softmax_cross_entropy(onehot, logits, label_smoothing=0.1, weights=w_row)",
    "tf.losses.softmax_cross_entropy(onehot, logits, reduction=R.NONE)",
    "tf.losses.sparse_softmax_cross_entropy(ids, logits)",
    "tf.losses.sparse_softmax_cross_entropy(ids[:, None], logits, weights=w_col)",
    "tf.losses.sparse_softmax_cross_entropy(ids, logits, weights=w_row, reduction=R.MEAN)",
    "tf.losses.compute_weighted_loss(lab, weights=w_full, reduction=R.SUM_OVER_BATCH_SIZE)",
    "tf.losses.compute_weighted_loss(lab * 0, weights=0.0)",
]


def _evaluate_cases(tf_module):
    """Values and names of every case, built in one fresh graph of `tf_module`."""
    with tf_module.Graph().as_default():
        env = {k: tf_module.constant(v) for k, v in DATA.items()}
        env.update(tf=tf_module, R=tf_module.losses.Reduction)
        losses = [eval(case, env) for case in CASES]  # noqa: S307 - our own table
        with tf_module.Session() as sess:
            values = sess.run(losses)
        return values, [t.name for t in losses]


def _numpy_mse(lab, pred, w, reduction):
    w = np.broadcast_to(np.float32(w), lab.shape)
    weighted = (pred - lab) ** 2 * w
    total = weighted.sum()
    denom = {"NONE": None, "SUM": 1.0, "MEAN": w.sum(), "SUM_OVER_BATCH_SIZE": lab.size,
             "SUM_BY_NONZERO_WEIGHTS": np.count_nonzero(w)}[reduction]
    if denom is None:
        return weighted
    return total / denom if denom else np.float32(0)


@pytest.mark.parametrize("w", ["1.0", "w_col", "w_full", "0.0"])
@pytest.mark.parametrize("reduction", _REDUCTIONS)
def test_mean_squared_error_every_reduction_vs_numpy(w, reduction):
    with tf.Graph().as_default():
        weights = DATA[w] if w in DATA else float(w)
        loss = tf.losses.mean_squared_error(DATA["lab"], DATA["pred"], weights=weights,
                                            reduction=getattr(R, reduction))
        got = tf.Session().run(loss)
    np.testing.assert_allclose(got, _numpy_mse(DATA["lab"], DATA["pred"], weights, reduction),
                               rtol=1e-5, atol=1e-6)


def test_cross_entropies_vs_numpy():
    logits, onehot, ids = DATA["logits"], DATA["onehot"], DATA["ids"]
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    smooth = onehot * 0.9 + 0.1 / 3
    bin_ = DATA["bin"]
    sig = np.maximum(logits, 0) - logits * bin_ + np.log1p(np.exp(-np.abs(logits)))
    with tf.Graph().as_default():
        got = tf.Session().run([
            tf.losses.softmax_cross_entropy(onehot, logits, label_smoothing=0.1),
            tf.losses.sparse_softmax_cross_entropy(ids, logits),
            tf.losses.sigmoid_cross_entropy(bin_, logits)])
    np.testing.assert_allclose(got[0], -(smooth * log_softmax).sum(1).mean(), rtol=1e-5)
    np.testing.assert_allclose(got[1], -log_softmax[np.arange(4), ids].mean(), rtol=1e-5)
    np.testing.assert_allclose(got[2], sig.mean(), rtol=1e-5)


@pytest.mark.oracle
def test_every_case_matches_tensorflow():
    ours, our_names = _evaluate_cases(tf)
    code = f"""
DATA = {{k: np.array(v, dtype=d) for k, (v, d) in {
        {k: (v.tolist(), str(v.dtype)) for k, v in DATA.items()}!r}.items()}}
CASES = {CASES!r}
with tf.Graph().as_default():
    env = {{k: tf.constant(v) for k, v in DATA.items()}}
    env.update(tf=tf, R=tf.losses.Reduction)
    losses = [eval(c, env) for c in CASES]
    with tf.Session() as sess:
        result = [[np.asarray(v) for v in sess.run(losses)], [t.name for t in losses]]
"""
    theirs, their_names = oracle.run_tf(code)
    for case, a, b in zip(CASES, ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=case)
    assert our_names == their_names


def test_collections_and_total_loss():
    with tf.Graph().as_default():
        a = tf.losses.absolute_difference([1.0, 2.0], [0.0, 0.0])
        b = tf.losses.mean_squared_error([1.0], [0.0], loss_collection=None)
        c = tf.losses.mean_squared_error([1.0], [3.0], loss_collection="mine")
        tf.losses.add_loss(tf.constant(10.0))
        tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, tf.constant(0.5))
        assert tf.losses.get_losses() == [a, tf.get_collection(tf.GraphKeys.LOSSES)[1]]
        assert tf.losses.get_losses(loss_collection="mine") == [c]
        assert b not in tf.get_collection(tf.GraphKeys.LOSSES)
        assert len(tf.losses.get_regularization_losses()) == 1
        total = tf.losses.get_total_loss()
        no_reg = tf.losses.get_total_loss(add_regularization_losses=False)
        sess = tf.Session()
        assert total.name == "total_loss:0"
        np.testing.assert_allclose(sess.run([total, no_reg, tf.losses.get_regularization_loss()]),
                                   [12.0, 11.5, 0.5])
    with tf.Graph().as_default():
        assert tf.Session().run(tf.losses.get_regularization_loss()) == 0.0
        with pytest.raises(ValueError):
            tf.losses.get_total_loss()


def test_gradient_flows_to_logits_not_labels():
    with tf.Graph().as_default():
        logits = tf.constant(DATA["logits"])
        labels = tf.constant(DATA["onehot"])
        loss = tf.losses.softmax_cross_entropy(labels, logits)
        g_logits, g_labels = tf.gradients(loss, [logits, labels])
        assert g_labels is None
        got = tf.Session().run(g_logits)
    p = np.exp(DATA["logits"]) / np.exp(DATA["logits"]).sum(1, keepdims=True)
    np.testing.assert_allclose(got, (p - DATA["onehot"]) / 4, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("build, message", [
    (lambda: tf.losses.mean_squared_error(tf.zeros((2, 3)), tf.zeros((2, 4))),
     r"Shapes \(2, 4\) and \(2, 3\) are incompatible"),
    (lambda: tf.losses.hinge_loss(tf.zeros((2, 3)), tf.zeros((3, 3))),
     r"Shapes \(3, 3\) and \(2, 3\) are incompatible"),
    (lambda: tf.losses.softmax_cross_entropy(tf.zeros((2, 3)), tf.zeros((2, 4))),
     r"Shapes \(2, 4\) and \(2, 3\)"),
    (lambda: tf.losses.mean_squared_error(tf.zeros((2, 3)), tf.zeros((2, 3)),
                                          weights=tf.ones((3,))),
     r"weights can not be broadcast to values. values.rank=2. weights.rank=1"),
    (lambda: tf.losses.mean_squared_error(tf.zeros((2, 3)), tf.zeros((2, 3)),
                                          weights=tf.ones((2, 2))), "Mismatch at dim 1"),
    (lambda: tf.losses.cosine_distance(tf.zeros((2, 3)), tf.zeros((2, 3))),
     "You must specify argument `axis`"),
    (lambda: tf.losses.mean_squared_error(None, tf.zeros((2, 3))),
     "Argument `labels` must not be None"),
    (lambda: tf.losses.absolute_difference(tf.zeros(2), tf.zeros(2), reduction="bogus"),
     "Invalid Reduction Key bogus"),
    (lambda: tf.losses.sparse_softmax_cross_entropy([0, 1, 1], tf.zeros((2, 3))),
     "labels.shape=.3,. and logits.shape=.2, 3."),
])
def test_bad_input_raises_value_error(build, message):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=message):
        build()


def test_dtypes_and_reduction_keys():
    assert R.all() == ("none", "weighted_sum", "weighted_mean", "weighted_sum_over_batch_size",
                       "weighted_sum_by_nonzero_weights", "weighted_sum_by_nonzero_weights")
    assert R.SUM_OVER_NONZERO_WEIGHTS == R.SUM_BY_NONZERO_WEIGHTS
    with tf.Graph().as_default():
        loss = tf.losses.mean_squared_error(np.ones(3), np.zeros(3))  # float64 in
        assert loss.dtype == tf.float32 and loss.shape.ndims == 0


def test_weights_checked_at_run_time_when_shapes_are_unknown():
    with tf.Graph().as_default():
        labels, weights = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
        loss = tf.losses.mean_squared_error(labels, labels * 2, weights=weights)
        with tf.Session() as sess:
            ones = np.ones((3, 3), np.float32)
            assert sess.run(loss, {labels: ones, weights: np.ones((3, 1))}) == 1.0
            assert sess.run(loss, {labels: ones, weights: 2.0}) == 2.0
            for bad in (np.ones(3), np.ones((3, 2)), np.ones((1, 3, 3))):
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match="weights can not be broadcast to values"):
                    sess.run(loss, {labels: ones, weights: bad})
