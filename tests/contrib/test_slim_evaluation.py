"""slim.evaluation over saved checkpoints: evaluate_once runs eval_op num_evals times and
returns final_op (streaming metrics against NumPy), writes the summary at the checkpoint's
global step, restores only `variables_to_restore`; evaluation_loop evaluates each new
checkpoint and ends after max_number_of_evaluations or a timeout; checkpoints_iterator and
wait_for_new_checkpoint; the slim.metrics / slim.losses aliases against NumPy."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

import tensorflux as tf

slim = tf.contrib.slim

_W = np.array([[1.0, -1.0, 0.5], [0.2, 0.3, -0.7]], np.float32)


def _save_model(logdir, step, w=_W):
    with tf.Graph().as_default():
        tf.get_variable("w", initializer=tf.constant(w))
        global_step = tf.train.get_or_create_global_step()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(global_step, step))
            return tf.train.Saver().save(sess, os.path.join(logdir, "model.ckpt"),
                                         global_step=step)


def _batches():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 5, 2)).astype(np.float32)
    ys = rng.integers(0, 3, (4, 5))
    return xs, ys


def _eval_graph():
    """Logits of one batch per run (fed by a counter) and slim's streaming metrics."""
    xs, ys = _batches()
    tf.train.get_or_create_global_step()
    counter = tf.Variable(0, trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES])
    index = tf.assign_add(counter, 1) - 1
    x = tf.gather(tf.constant(xs), index)
    y = tf.gather(tf.constant(ys, tf.int64), index)
    w = tf.get_variable("w", shape=[2, 3])
    logits = tf.matmul(x, w)
    predictions = tf.argmax(logits, 1)
    values, updates = slim.metrics.aggregate_metric_map({
        "accuracy": slim.metrics.streaming_accuracy(predictions, y),
        "recall_at_2": slim.metrics.streaming_recall_at_k(logits, y, 2),
        "mean_logit": slim.metrics.streaming_mean(logits),
    })
    tf.summary.scalar("eval/accuracy", values["accuracy"])
    return values, updates


def _expected(num_batches, w=_W):
    xs, ys = _batches()
    logits = xs[:num_batches] @ w
    top2 = np.argsort(-logits, axis=-1)[..., :2]
    return {"accuracy": np.mean(logits.argmax(-1) == ys[:num_batches]),
            "recall_at_2": np.mean((top2 == ys[:num_batches, :, None]).any(-1)),
            "mean_logit": logits.mean()}


def _summary_steps(logdir, tag):
    steps = []
    for path in glob.glob(os.path.join(logdir, "events.out.tfevents.*")):
        for event in tf.train.summary_iterator(path):
            steps += [(event.step, v.simple_value) for v in event.summary.value if v.tag == tag]
    return steps


def test_evaluate_once_metrics_and_summary(tmp_path):
    ckpt = _save_model(str(tmp_path / "train"), 7)
    eval_dir = str(tmp_path / "eval")
    with tf.Graph().as_default():
        values, updates = _eval_graph()
        got = slim.evaluation.evaluate_once("", ckpt, eval_dir, num_evals=3,
                                            eval_op=list(updates.values()),
                                            final_op=values)
    want = _expected(3)
    for name, value in want.items():
        assert got[name] == pytest.approx(value, rel=1e-5), name
    assert _summary_steps(eval_dir, "eval/accuracy") == [
        (7, pytest.approx(want["accuracy"], rel=1e-6))]


def test_evaluate_once_variables_to_restore(tmp_path):
    ckpt = _save_model(str(tmp_path), 1)
    with tf.Graph().as_default():
        w = tf.get_variable("w", shape=[2, 3])
        local = tf.Variable(5.0, collections=[tf.GraphKeys.LOCAL_VARIABLES])
        tf.train.get_or_create_global_step()
        got = slim.evaluation.evaluate_once(
            "", ckpt, str(tmp_path / "eval"), num_evals=1, eval_op=tf.no_op(),
            final_op=[w, local], summary_op=None,
            variables_to_restore=[w, tf.train.get_global_step()])
    np.testing.assert_array_equal(got[0], _W)
    assert got[1] == 5.0
    # as in TF, a restored model skips initial_op: a global variable left out of the
    # checkpoint leaves the model not ready
    with tf.Graph().as_default():
        w = tf.get_variable("w", shape=[2, 3])
        extra = tf.get_variable("extra", initializer=tf.constant(5.0))
        tf.train.get_or_create_global_step()
        with pytest.raises(RuntimeError, match="extra"):
            slim.evaluation.evaluate_once(
                "", ckpt, str(tmp_path / "eval"), eval_op=tf.no_op(), summary_op=None,
                initial_op=tf.variables_initializer([extra]),
                variables_to_restore=[w, tf.train.get_global_step()])


def test_evaluation_loop_each_checkpoint_then_timeout(tmp_path):
    train_dir = str(tmp_path / "train")
    _save_model(train_dir, 3, w=np.zeros_like(_W))
    with tf.Graph().as_default():
        values, updates = _eval_graph()
        got = slim.evaluation.evaluation_loop(
            "", train_dir, str(tmp_path / "eval"), num_evals=2,
            eval_op=list(updates.values()), final_op=values["accuracy"],
            eval_interval_secs=0, max_number_of_evaluations=1)
        assert got == pytest.approx(_expected(2, np.zeros_like(_W))["accuracy"])
        # no newer checkpoint: the loop evaluates the latest once, then times out
        calls = []
        got = slim.evaluation.evaluation_loop(
            "", train_dir, str(tmp_path / "eval"), num_evals=1,
            eval_op=list(updates.values()), final_op=values["accuracy"],
            eval_interval_secs=0, timeout=0.05,
            timeout_fn=lambda: calls.append(1) or True)
    assert calls == [1]
    assert [s for s, _ in _summary_steps(str(tmp_path / "eval"), "eval/accuracy")] == [3, 3]


def test_checkpoint_waiting(tmp_path):
    assert slim.evaluation.wait_for_new_checkpoint(str(tmp_path), timeout=0.01) is None
    assert list(slim.evaluation.checkpoints_iterator(str(tmp_path), timeout=0.01)) == []
    first = _save_model(str(tmp_path), 1)
    assert slim.evaluation.wait_for_new_checkpoint(str(tmp_path), timeout=0.01) == first
    assert slim.evaluation.wait_for_new_checkpoint(str(tmp_path), first, timeout=0.01) is None
    assert list(slim.evaluation.checkpoints_iterator(str(tmp_path), timeout=0.01)) == [first]


def test_metrics_against_numpy():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, 12)
    predictions = rng.integers(0, 4, 12)
    scores = rng.random(12).astype(np.float32)
    binary = (rng.random(12) > 0.5)
    with tf.Graph().as_default():
        metrics = {
            "accuracy": slim.metrics.streaming_accuracy(tf.constant(predictions),
                                                        tf.constant(labels)),
            "iou": slim.metrics.streaming_mean_iou(tf.constant(predictions),
                                                   tf.constant(labels), 4),
            "precision": slim.metrics.streaming_precision(tf.constant(scores > 0.5),
                                                          tf.constant(binary)),
            "auc": slim.metrics.streaming_auc(tf.constant(scores), tf.constant(binary)),
            "less": slim.metrics.streaming_percentage_less(tf.constant(scores), 0.3),
            "mse": slim.metrics.streaming_mean_squared_error(tf.constant(scores),
                                                             tf.constant(binary * 1.0,
                                                                         tf.float32)),
        }
        values, updates = slim.metrics.aggregate_metrics(*metrics.values())
        batch_accuracy = slim.metrics.accuracy(tf.constant(predictions), tf.constant(labels),
                                               weights=tf.constant(labels > 0, tf.float32))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            sess.run(updates)
            got = dict(zip(metrics, sess.run(values), strict=True))
            got_batch = sess.run(batch_accuracy)
    ious = []
    for c in range(4):
        inter = np.sum((predictions == c) & (labels == c))
        union = np.sum((predictions == c) | (labels == c))
        if union:
            ious.append(inter / union)
    assert got["accuracy"] == pytest.approx(np.mean(predictions == labels))
    assert got["iou"] == pytest.approx(np.mean(ious), rel=1e-5)
    assert got["precision"] == pytest.approx(np.sum((scores > 0.5) & binary) /
                                             np.sum(scores > 0.5))
    assert 0.0 <= got["auc"] <= 1.0
    assert got["less"] == pytest.approx(np.mean(scores < 0.3))
    assert got["mse"] == pytest.approx(np.mean((scores - binary) ** 2), rel=1e-5)
    mask = labels > 0
    assert got_batch == pytest.approx(np.mean(predictions[mask] == labels[mask]))
    with pytest.raises(ValueError, match="at least one"):
        slim.metrics.aggregate_metrics()


def test_losses_old_argument_order_and_total():
    logits = np.array([[2.0, -1.0, 0.5], [0.1, 0.2, 0.3]], np.float32)
    onehot = np.array([[1, 0, 0], [0, 0, 1]], np.float32)
    with tf.Graph().as_default():
        tf.get_variable("w", initializer=tf.constant([3.0]),
                        regularizer=lambda w: 0.5 * tf.reduce_sum(w * w))
        ce = slim.losses.softmax_cross_entropy(tf.constant(logits), tf.constant(onehot))
        sparse = slim.losses.sparse_softmax_cross_entropy(tf.constant(logits),
                                                          tf.constant([0, 2]), weights=2.0)
        mse = slim.losses.mean_squared_error(tf.constant([1.0, 2.0]), tf.constant([0.0, 4.0]))
        hinge = slim.losses.hinge_loss(tf.constant([0.5, -2.0]), tf.constant([1.0, 0.0]))
        assert len(slim.losses.get_losses()) == 3
        assert len(slim.losses.get_regularization_losses()) == 1
        total = slim.losses.get_total_loss()
        without = slim.losses.get_total_loss(add_regularization_losses=False, name="plain")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            ce, sparse, mse, hinge, total, without = sess.run(
                [ce, sparse, mse, hinge, total, without])
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    want_ce = -np.mean((onehot * log_softmax).sum(1))
    assert ce == pytest.approx(want_ce, rel=1e-5)
    assert sparse == pytest.approx(2 * want_ce, rel=1e-5)
    assert mse == pytest.approx(2.5)
    np.testing.assert_allclose(hinge, [0.5, 0.0])
    assert without == pytest.approx(ce + sparse + mse, rel=1e-5)
    assert total == pytest.approx(without + 4.5, rel=1e-5)


def test_evaluation_in_a_session():
    # TF-Slim's early API (its walkthrough still calls it): eval_op num_evals times in a
    # session the caller made, then final_op
    with tf.Graph().as_default():
        values, updates = _eval_graph()
        tf.get_variable_scope().reuse_variables()
        w = tf.get_variable("w")
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(tf.assign(w, _W))
            got = slim.evaluation.evaluation(sess, num_evals=2, eval_op=list(updates.values()),
                                             final_op=values["accuracy"])
    assert got == pytest.approx(_expected(2)["accuracy"])
