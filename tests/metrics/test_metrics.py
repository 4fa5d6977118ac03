"""Streaming metrics without the oracle: variables and collections, concurrent updates,
errors at graph construction and at run time."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import threads_util


def test_local_metric_variables_and_names():
    with tf.Graph().as_default():
        acc, update = tf.metrics.accuracy([1, 0], [1, 1])
        names = [v.name for v in tf.local_variables()]
        assert names == ["accuracy/total:0", "accuracy/count:0"]
        assert [v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
        assert tf.global_variables() == [] and tf.trainable_variables() == []
        tf.metrics.accuracy([1, 0], [1, 1])
        assert tf.local_variables()[-1].name == "accuracy_1/count:0"
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(acc) == 0.0
            assert sess.run(update) == 0.5
            assert sess.run(acc) == 0.5


def test_metrics_and_updates_collections():
    with tf.Graph().as_default():
        value, update = tf.metrics.mean([1.0, 2.0], metrics_collections=["m"],
                                        updates_collections=["u"])
        assert tf.get_collection("m") == [value] and tf.get_collection("u") == [update]
        tp, tp_update = tf.metrics.true_positives([1], [1], metrics_collections=["m"],
                                                  updates_collections=["u"])
        assert tf.get_collection("m")[-1] is tp and tf.get_collection("u")[-1] is tp_update


def test_update_op_from_16_threads_counts_exactly():
    n_threads, steps = 16, 20
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        mean, update = tf.metrics.mean(x)
        tp, tp_update = tf.metrics.true_positives(tf.ones_like(x, tf.bool), x > 0)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())

            def work(i):
                for _ in range(steps):
                    sess.run([update, tp_update], {x: np.full(3, float(i))})

            threads = [threads_util.start(work, i) for i in range(n_threads)]
            threads_util.join(*threads, timeout=60)
            total, count = sess.run(tf.local_variables()[:2])
            assert count == n_threads * steps * 3
            assert total == sum(range(n_threads)) * steps * 3
            assert sess.run(tp) == (n_threads - 1) * steps * 3
            np.testing.assert_allclose(sess.run(mean), (n_threads - 1) / 2.0)


@pytest.mark.parametrize("metric", [tf.metrics.accuracy, tf.metrics.precision,
                                    tf.metrics.recall, tf.metrics.mean_absolute_error,
                                    tf.metrics.true_positives])
def test_labels_predictions_shape_mismatch_names_both(metric):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)|\(4,\).*\(3,\)"):
            metric(tf.zeros([3]), tf.zeros([4]))


def test_auc_bad_arguments():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="curve must be either ROC or PR"):
            tf.metrics.auc([1], [0.5], curve="XY")
        with pytest.raises(ValueError, match="summation_method"):
            tf.metrics.auc([1], [0.5], summation_method="simpson")
        with pytest.raises(ValueError, match="specificity"):
            tf.metrics.sensitivity_at_specificity([1], [0.5], 1.5)


def test_predictions_outside_unit_interval_fail_at_run_time():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None])
        _, update = tf.metrics.auc([1, 0], p)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(update, {p: [0.5, 1.5]})
            assert sess.run(update, {p: [0.5, 0.25]}) > 0.99


def test_mean_iou_and_per_class_against_numpy():
    labels = np.array([0, 1, 2, 2, 1, 0])
    preds = np.array([0, 2, 2, 1, 1, 0])
    cm = np.zeros((3, 3))
    np.add.at(cm, (labels, preds), 1)
    iou = np.diag(cm) / (cm.sum(0) + cm.sum(1) - np.diag(cm))
    with tf.Graph().as_default():
        miou, cm_update = tf.metrics.mean_iou(labels, preds, 3)
        pca, pca_update = tf.metrics.mean_per_class_accuracy(labels, preds, 3)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            np.testing.assert_array_equal(sess.run(cm_update), cm)
            np.testing.assert_allclose(sess.run(miou), iou.mean(), rtol=1e-6)
            np.testing.assert_allclose(sess.run(pca_update), np.diag(cm) / cm.sum(1))
            np.testing.assert_allclose(sess.run(pca), (np.diag(cm) / cm.sum(1)).mean())


@pytest.mark.parametrize("make", [
    lambda: tf.metrics.mean(tf.zeros([3]), weights=tf.ones([4])),
    lambda: tf.metrics.mean(tf.zeros([3, 2]), weights=tf.ones([2])),
    lambda: tf.metrics.accuracy(tf.zeros([3]), tf.zeros([3]), weights=tf.ones([2])),
    lambda: tf.metrics.auc(tf.zeros([3]), tf.zeros([3]), weights=tf.ones([2])),
])
def test_weights_that_cannot_broadcast(make):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="weights can not be broadcast to values"):
            make()


def test_weights_that_broadcast():
    with tf.Graph().as_default():
        _, a = tf.metrics.mean(tf.constant([[1.0, 2.0], [3.0, 4.0]]),
                               weights=tf.constant([[1.0], [0.0]]))
        _, b = tf.metrics.mean(tf.constant([[1.0, 2.0], [3.0, 4.0]]),
                               weights=tf.constant([[0.0, 1.0]]))
        _, c = tf.metrics.mean(tf.constant([1.0, 2.0]), weights=3.0)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run([a, b, c]) == [1.5, 3.0, 1.5]
