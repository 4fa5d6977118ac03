"""Estimator heads (tf.estimator.BinaryClassHead & co., tf.contrib.estimator's factories):
loss, predictions and eval metrics against NumPy on small logits and labels, the train op,
and argument errors. TF1.15's formulas: per-example loss times the weight, reduced by
loss_reduction (SUM_OVER_BATCH_SIZE: over batch * dimension); `average_loss` is the weighted
mean of the per-example losses."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorflux as tf

H = tf.estimator
C = tf.contrib.estimator
SUM = tf.losses.Reduction.SUM


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _sigmoid_ce(labels, z):
    return np.maximum(z, 0) - z * labels + np.log1p(np.exp(-np.abs(z)))


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _poisson_full(y, z):
    stirling = np.where(y > 1, y * np.log(np.maximum(y, 1)) - y +
                        0.5 * np.log(2 * math.pi * np.maximum(y, 1)), 0.0)
    return np.exp(z) - y * z + stirling


def _wmean(v, w):
    w = np.broadcast_to(w, v.shape)
    return float((v * w).sum() / w.sum())


BIN_Z = np.array([[1.0], [-2.0], [0.5]], np.float32)
BIN_Y = np.array([[1], [0], [0]], np.int64)
W3 = np.array([1.0, 2.0, 3.0], np.float32)
MC_Z = np.array([[1.0, 2.0, 3.0], [3.0, 0.0, 1.0], [0.0, 0.5, 0.2]], np.float32)
MC_Y = np.array([2, 1, 1])
ML_Z = np.array([[1.0, -2.0, 3.0], [3.0, 0.0, -1.0]], np.float32)
ML_Y = np.array([[1, 0, 1], [0, 1, 0]], np.int64)
RG_Z = np.array([[1.0, 2.0], [3.0, 0.0]], np.float32)
RG_Y = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
PO_Z = np.array([[1.0], [0.0], [0.5]], np.float32)
PO_Y = np.array([[1.0], [3.0], [0.0]], np.float32)
LR_Y = np.array([[1.0], [0.3], [0.0]], np.float32)


def _binary_expect():
    ce, p = _sigmoid_ce(BIN_Y, BIN_Z), _sigmoid(BIN_Z)
    w = W3[:, None]
    return ((ce * w).sum() / 3, {
        "average_loss": _wmean(ce, w), "accuracy": 0.5, "label/mean": 1 / 6,
        "accuracy_baseline": 5 / 6, "prediction/mean": _wmean(p, w), "precision": 0.25,
        "recall": 1.0, "accuracy/positive_threshold_0.7": 1.0,
        "precision/positive_threshold_0.7": 1.0, "recall/positive_threshold_0.7": 1.0,
        "accuracy/positive_threshold_0.6": 0.5, "precision/positive_threshold_0.6": 0.25,
        "recall/positive_threshold_0.6": 1.0},
        {"logistic": p, "class_ids": [[1], [0], [1]], "classes": [[b"1"], [b"0"], [b"1"]],
         "probabilities": np.concatenate([1 - p, p], 1), "all_class_ids": [[0, 1]] * 3})


def _multi_class_expect():
    p = _softmax(MC_Z)
    ce = -np.log(p[np.arange(3), MC_Y])[:, None]
    return (ce.sum(), {"average_loss": ce.mean(), "accuracy": 2 / 3},
            {"probabilities": p, "class_ids": [[2], [0], [1]],
             "classes": [[b"c"], [b"a"], [b"b"]], "all_classes": [[b"a", b"b", b"c"]] * 3})


def _multi_label_expect():
    ce = _sigmoid_ce(ML_Y, ML_Z).mean(-1, keepdims=True)
    p = _sigmoid(ML_Z)
    return (ce.mean(), {"average_loss": ce.mean(),
                        "accuracy/positive_threshold_0.5": ((p >= 0.5) == ML_Y).mean()},
            {"probabilities": p})


def _regression_expect():
    sq, w = (RG_Z - RG_Y) ** 2, np.array([[2.0], [1.0]])
    return ((sq * w).sum() / 4, {"average_loss": _wmean(sq, w),
                                 "prediction/mean": _wmean(RG_Z, w),
                                 "label/mean": _wmean(RG_Y, w)}, {"predictions": RG_Z})


def _poisson_expect():
    loss = _poisson_full(PO_Y, PO_Z)
    return (loss.mean(), {"average_loss": loss.mean(), "label/mean": PO_Y.mean(),
                          "prediction/mean": np.exp(PO_Z).mean()},
            {"predictions": np.exp(PO_Z), "logits": PO_Z})


def _logistic_expect():
    ce = _sigmoid_ce(LR_Y, PO_Z)
    return (ce.mean(), {"average_loss": ce.mean(), "label/mean": LR_Y.mean()},
            {"predictions": _sigmoid(PO_Z)})


def _named_expect():
    loss, metrics, _ = _multi_class_expect()
    return loss / 3 + 0.5, {f"{k}/digit": v for k, v in metrics.items()}, {}


CASES = {
    "binary": (lambda: H.BinaryClassHead(weight_column="w", thresholds=[0.7, 0.6]), BIN_Z,
               BIN_Y, {"w": W3}, None, _binary_expect),
    "binary_contrib": (lambda: C.binary_classification_head(
        tf.feature_column.numeric_column("w", normalizer_fn=lambda w: w * 2.0), [0.7, 0.6]),
        BIN_Z, BIN_Y, {"w": W3 / 2}, None, _binary_expect),
    "multi_class": (lambda: H.MultiClassHead(3, label_vocabulary=["a", "b", "c"],
                                             loss_reduction=SUM), MC_Z,
                    np.array([[b"c"], [b"b"], [b"b"]]), {}, None, _multi_class_expect),
    "multi_class_named": (lambda: C.multi_class_head(3, name="digit"), MC_Z, MC_Y, {},
                          [0.25, 0.25], _named_expect),
    "multi_label": (lambda: C.multi_label_head(3, thresholds=[0.5]), ML_Z, ML_Y, {}, None,
                    _multi_label_expect),
    "regression": (lambda: C.regression_head(weight_column="w", label_dimension=2), RG_Z,
                   RG_Y, {"w": np.array([[2.0], [1.0]], np.float32)}, None,
                   _regression_expect),
    "poisson": (lambda: H.PoissonRegressionHead(), PO_Z, PO_Y, {}, None, _poisson_expect),
    "logistic": (lambda: C.logistic_regression_head(), PO_Z, LR_Y, {}, None,
                 _logistic_expect),
}


def _run_spec(head, logits, labels, features, reg, mode):
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        reg_t = [tf.constant(r) for r in reg] if reg else None
        spec = head.create_estimator_spec(
            {k: tf.constant(v) for k, v in features.items()}, mode, tf.constant(logits),
            labels=tf.constant(labels), regularization_losses=reg_t)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer(),
                      tf.tables_initializer()])
            sess.run([u for _, u in spec.eval_metric_ops.values()])
            metrics = sess.run({k: v for k, (v, _) in spec.eval_metric_ops.items()})
            loss, preds = sess.run([spec.loss, spec.predictions])
        return loss, metrics, preds, spec


@pytest.mark.parametrize("case", sorted(CASES))
def test_head_loss_metrics_and_predictions(case):
    make, logits, labels, features, reg, expect = CASES[case]
    loss, metrics, preds, spec = _run_spec(make(), logits, labels, features, reg, "eval")
    want_loss, want_metrics, want_preds = expect()
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    for k, v in want_metrics.items():
        np.testing.assert_allclose(metrics[k], v, rtol=1e-4, atol=1e-6, err_msg=k)
    for k, v in want_preds.items():
        got = preds[k]
        if np.asarray(v).dtype.kind in "SO":
            assert got.tolist() == v, k
        else:
            np.testing.assert_allclose(got, v, rtol=1e-5, err_msg=k)


def test_metric_and_prediction_keys():
    keys = {
        "binary": {"average_loss", "accuracy", "accuracy_baseline", "auc",
                   "auc_precision_recall", "label/mean", "prediction/mean", "precision",
                   "recall", "accuracy/positive_threshold_0.7",
                   "precision/positive_threshold_0.7", "recall/positive_threshold_0.7",
                   "accuracy/positive_threshold_0.6", "precision/positive_threshold_0.6",
                   "recall/positive_threshold_0.6"},
        "multi_class": {"average_loss", "accuracy"},
        "multi_class_named": {"average_loss/digit", "accuracy/digit",
                              "regularization_loss/digit"},
        "multi_label": {"average_loss", "auc", "auc_precision_recall",
                        "accuracy/positive_threshold_0.5",
                        "precision/positive_threshold_0.5",
                        "recall/positive_threshold_0.5"},
        "regression": {"average_loss", "prediction/mean", "label/mean"},
    }
    preds = {"binary": {"logits", "logistic", "probabilities", "class_ids", "classes",
                        "all_class_ids", "all_classes"},
             "multi_class": {"logits", "probabilities", "class_ids", "classes",
                             "all_class_ids", "all_classes"},
             "multi_label": {"logits", "probabilities"},
             "regression": {"predictions"}, "poisson": {"predictions", "logits"}}
    for case, (make, logits, labels, features, reg, _) in CASES.items():
        _, metrics, predictions, spec = _run_spec(make(), logits, labels, features, reg,
                                                  "eval")
        if case in keys:
            assert set(metrics) == keys[case], case
        if case in preds:
            assert set(predictions) == preds[case], case


def test_export_outputs_and_predict_mode():
    with tf.Graph().as_default():
        z = tf.constant(MC_Z)
        outs = {
            "bin": H.BinaryClassHead().create_estimator_spec({}, "infer", tf.constant(BIN_Z)),
            "mc": H.MultiClassHead(3).create_estimator_spec({}, "infer", z),
            "ml": H.MultiLabelHead(3).create_estimator_spec({}, "infer", z),
            "rg": H.RegressionHead(3).create_estimator_spec({}, "infer", z),
            "rg1": H.RegressionHead().create_estimator_spec({}, "infer",
                                                            tf.constant(BIN_Z))}
        exp = tf.estimator.export
        assert set(outs["bin"].export_outputs) == {"serving_default", "classification",
                                                   "regression", "predict"}
        assert isinstance(outs["bin"].export_outputs["regression"], exp.RegressionOutput)
        for k in ("mc", "ml"):
            assert set(outs[k].export_outputs) == {"serving_default", "classification",
                                                   "predict"}
            assert outs[k].export_outputs["serving_default"] is \
                outs[k].export_outputs["classification"]
        assert isinstance(outs["rg"].export_outputs["regression"], exp.PredictOutput)
        assert isinstance(outs["rg1"].export_outputs["serving_default"],
                          exp.RegressionOutput)
        assert outs["mc"].loss is None and outs["mc"].train_op is None
        assert set(outs["ml"].predictions) == {"logits", "probabilities", "classes"}
        with tf.Session() as sess:
            assert sess.run(outs["ml"].predictions["classes"]).tolist() == \
                [[b"0", b"1", b"2"]] * 3


def test_train_op_from_optimizer_or_train_op_fn():
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable([[0.0, 0.0, 0.0]])
        logits = tf.constant(MC_Z) + w
        head = H.MultiClassHead(3)
        spec = head.create_estimator_spec({}, "train", logits[:, :3], tf.constant(MC_Y),
                                          optimizer=tf.train.GradientDescentOptimizer(0.1))
        spec2 = head.create_estimator_spec(
            {}, "train", logits[:, :3], tf.constant(MC_Y),
            train_op_fn=lambda loss: tf.train.GradientDescentOptimizer(0.1).minimize(loss))
        with pytest.raises(ValueError, match="train_op_fn and optimizer cannot both be None"):
            head.create_estimator_spec({}, "train", logits, tf.constant(MC_Y))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(spec.loss)
            sess.run(spec.train_op)
            assert sess.run(step) == 1
            sess.run(spec2.train_op)
            assert sess.run(step) == 1 and sess.run(spec.loss) < before


def test_loss_fn_and_loss_method():
    def loss_fn(labels, logits, features):
        return tf.abs(labels - logits) * features["scale"]

    head = C.regression_head(loss_fn=loss_fn, loss_reduction=SUM)
    with tf.Graph().as_default():
        loss = head.loss(tf.constant(PO_Y), tf.constant(PO_Z),
                         features={"scale": tf.constant([[2.0], [2.0], [2.0]])},
                         regularization_losses=[tf.constant(1.0)])
        keras_sum = H.BinaryClassHead(loss_reduction=tf.keras.losses.Reduction.SUM).loss(
            tf.constant(BIN_Y), tf.constant(BIN_Z))
        auto = H.BinaryClassHead(loss_reduction=tf.keras.losses.Reduction.AUTO).loss(
            tf.constant(BIN_Y), tf.constant(BIN_Z))
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(loss),
                                       2 * np.abs(PO_Y - PO_Z).sum() + 1.0, rtol=1e-6)
            ce = _sigmoid_ce(BIN_Y, BIN_Z)
            np.testing.assert_allclose(sess.run([keras_sum, auto]), [ce.sum(), ce.mean()],
                                       rtol=1e-6)


@pytest.mark.parametrize("make, match", [
    (lambda: H.MultiClassHead(2), "n_classes must be > 2"),
    (lambda: H.MultiLabelHead(1), "n_classes must be > 1"),
    (lambda: H.BinaryClassHead(thresholds=[1.5]), "thresholds not in"),
    (lambda: H.BinaryClassHead(label_vocabulary="ab"), "list or a tuple"),
    (lambda: H.MultiClassHead(3, label_vocabulary=["a"]), "label_vocabulary"),
    (lambda: H.RegressionHead(0), "label_dimension"),
    (lambda: H.RegressionHead(loss_reduction=tf.losses.Reduction.NONE), "loss_reduction"),
    (lambda: H.RegressionHead(loss_reduction=tf.keras.losses.Reduction.NONE),
     "loss_reduction"),
    (lambda: H.RegressionHead(loss_fn=lambda labels, x: x), "logits"),
    (lambda: H.MultiHead([H.RegressionHead()]), "name"),
    (lambda: H.MultiHead([H.RegressionHead(name="a")], [1.0, 2.0]), "same size"),
    (lambda: H.MultiLabelHead(3, classes_for_class_based_metrics=[5]), "class_id"),
])
def test_head_argument_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_label_and_logits_shape_errors():
    head = H.MultiClassHead(3)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="logits_dimension"):
            head.loss(tf.constant(MC_Y), tf.constant(BIN_Z))
        with pytest.raises(ValueError, match="labels dimension"):
            head.loss(tf.constant(ML_Y), tf.constant(ML_Z))
        with pytest.raises(ValueError, match="labels Tensor"):
            head.create_estimator_spec({}, "eval", tf.constant(MC_Z))
        with pytest.raises(ValueError, match="should be integer"):
            head.loss(tf.constant([["a"], ["b"], ["c"]]), tf.constant(MC_Z))
        ids = tf.placeholder(tf.int64, [None, 1])
        loss = head.loss(ids, tf.constant(MC_Z))
        binary = tf.placeholder(tf.float32, [None, 1])
        binary_loss = H.BinaryClassHead().loss(binary, tf.constant(BIN_Z))
        with tf.Session() as sess:
            for t, feed in ((loss, {ids: [[0], [5], [1]]}),
                            (binary_loss, {binary: [[0.0], [2.0], [1.0]]}),
                            (binary_loss, {binary: [[0.0], [-1.0], [1.0]]})):
                with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must"):
                    sess.run(t, feed)
            assert sess.run(binary_loss, {binary: [[0.0], [0.5], [1.0]]}) > 0


def test_multi_label_sparse_labels_and_class_metrics():
    head = H.MultiLabelHead(3, label_vocabulary=["x", "y", "z"],
                            classes_for_class_based_metrics=["z", 0])
    with tf.Graph().as_default():
        labels = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], ["x", "z", "y"], [2, 2])
        spec = head.create_estimator_spec({}, "eval", tf.constant(ML_Z), labels)
        with tf.Session() as sess:
            sess.run([tf.local_variables_initializer(), tf.tables_initializer()])
            np.testing.assert_allclose(sess.run(spec.loss),
                                       _sigmoid_ce(ML_Y, ML_Z).mean(), rtol=1e-5)
        assert {"auc/z", "auc/x", "auc_precision_recall/z", "probability_mean/x"} <= \
            set(spec.eval_metric_ops)


def test_multi_head_loss_predictions_and_metrics():
    head = C.multi_head([C.multi_class_head(3, name="a"), C.regression_head(name="b")],
                        head_weights=[2.0, 0.5])
    logits = np.concatenate([MC_Z, PO_Z], 1)
    labels = {"a": MC_Y, "b": PO_Y}
    with tf.Graph().as_default():
        t_labels = {k: tf.constant(v) for k, v in labels.items()}
        spec = head.create_estimator_spec({}, "eval", tf.constant(logits), t_labels)
        loss_spec = head.create_loss({}, "eval", tf.constant(logits), t_labels)
        split = head.predictions({"a": tf.constant(MC_Z), "b": tf.constant(PO_Z)})
        with pytest.raises(ValueError, match="labels must be a dict"):
            head.loss(tf.constant(MC_Y), tf.constant(logits))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            sess.run([u for _, u in spec.eval_metric_ops.values()])
            metrics = sess.run({k: v for k, (v, _) in spec.eval_metric_ops.items()})
            loss, merged, preds = sess.run([spec.loss, loss_spec.training_loss,
                                            spec.predictions])
            by_key = sess.run(split)
    ce = -np.log(_softmax(MC_Z)[np.arange(3), MC_Y])
    sq = (PO_Z - PO_Y) ** 2
    np.testing.assert_allclose(loss, 2.0 * ce.mean() + 0.5 * sq.mean(), rtol=1e-5)
    np.testing.assert_allclose(merged, loss, rtol=1e-6)
    np.testing.assert_allclose(metrics["loss/a"], ce.mean(), rtol=1e-5)
    np.testing.assert_allclose(metrics["loss/b"], sq.mean(), rtol=1e-5)
    assert set(metrics) == {"loss/a", "loss/b", "average_loss/a", "accuracy/a",
                            "average_loss/b", "prediction/mean/b", "label/mean/b"}
    np.testing.assert_allclose(preds[("b", "predictions")], PO_Z)
    np.testing.assert_allclose(by_key[("a", "probabilities")], _softmax(MC_Z), rtol=1e-6)
    with tf.Graph().as_default():
        out = head.create_estimator_spec({}, "infer", tf.constant(logits)).export_outputs
    assert set(out) == {"serving_default", "a", "a/classification", "a/predict", "b",
                        "b/regression", "b/predict", "predict"}
    assert {"a/class_ids", "b/predictions"} <= set(out["predict"].outputs)
