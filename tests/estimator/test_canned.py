"""Canned estimators: DNN and linear classifiers and regressors over feature columns, with
TF1's variable names, prediction keys and evaluation metrics."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

fc = tf.feature_column
RNG = np.random.default_rng(3)
X = RNG.normal(size=(200, 4)).astype(np.float32)
COLOR = np.array(["red", "green", "blue", "red"] * 50)
Y_BIN = ((X[:, 0] + X[:, 1] > 0) ^ (COLOR == "blue")).astype(np.int64)
Y_MULTI = (np.argmax(X[:, :3], axis=1)).astype(np.int64)
Y_REG = (X @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 1.0).astype(np.float32)
COLUMNS = [fc.numeric_column("x", shape=4), fc.indicator_column(
    fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"]))]


def _input(y, epochs=None, shuffle=True, n=200):
    return tf.estimator.inputs.numpy_input_fn({"x": X[:n], "color": COLOR[:n]}, y[:n],
                                              batch_size=40, num_epochs=epochs,
                                              shuffle=shuffle)


@pytest.mark.parametrize("make, y, metric, bound, names", [
    (lambda d: tf.estimator.DNNClassifier([16], COLUMNS, model_dir=d,
                                          optimizer=tf.train.AdamOptimizer(0.05)),
     Y_BIN, "accuracy", 0.9, {"dnn/hiddenlayer_0/kernel", "dnn/logits/bias"}),
    (lambda d: tf.estimator.DNNClassifier([16, 8], COLUMNS, model_dir=d, n_classes=3,
                                          optimizer=tf.train.AdamOptimizer(0.05)),
     Y_MULTI, "accuracy", 0.9, {"dnn/hiddenlayer_1/kernel", "dnn/logits/kernel"}),
    (lambda d: tf.estimator.DNNRegressor([16], COLUMNS, model_dir=d,
                                         optimizer=tf.train.AdamOptimizer(0.05)),
     Y_REG, "average_loss", -0.5, {"dnn/hiddenlayer_0/bias"}),
    (lambda d: tf.estimator.LinearRegressor(COLUMNS, model_dir=d,
                                            optimizer=tf.train.GradientDescentOptimizer(0.01)),
     Y_REG, "average_loss", -0.01, {"linear/linear_model/x/weights",
                                    "linear/linear_model/color_indicator/weights",
                                    "linear/linear_model/bias_weights"}),
    (lambda d: tf.estimator.LinearClassifier(COLUMNS[:1], model_dir=d, n_classes=3),
     Y_MULTI, "accuracy", 0.85, {"linear/linear_model/x/weights"}),
    (lambda d: tf.estimator.DNNLinearCombinedClassifier(
        model_dir=d, linear_feature_columns=COLUMNS[1:], dnn_feature_columns=COLUMNS,
        dnn_hidden_units=[16], dnn_optimizer=tf.train.AdamOptimizer(0.05)),
     Y_BIN, "accuracy", 0.85, {"dnn/hiddenlayer_0/kernel", "dnn/logits/kernel",
                               "linear/linear_model/color_indicator/weights"}),
    (lambda d: tf.estimator.DNNLinearCombinedRegressor(
        model_dir=d, linear_feature_columns=COLUMNS, dnn_feature_columns=COLUMNS[:1],
        dnn_hidden_units=[8], linear_optimizer=tf.train.GradientDescentOptimizer(0.01)),
     Y_REG, "average_loss", -0.5, {"linear/linear_model/x/weights",
                                   "dnn/hiddenlayer_0/bias"}),
])
def test_canned_estimators_learn(tmp_path, make, y, metric, bound, names):
    est = make(str(tmp_path))
    est.train(_input(y), steps=150)
    result = est.evaluate(_input(y, epochs=1, shuffle=False))
    value = result[metric]
    assert (value > bound) if bound > 0 else (value < -bound), (metric, value)
    assert names <= set(est.get_variable_names())
    assert result["global_step"] == 150


def test_classifier_predictions_metrics_and_vocabulary(tmp_path):
    labels = np.where(Y_BIN == 1, "yes", "no")
    est = tf.estimator.DNNClassifier([8], COLUMNS, model_dir=str(tmp_path),
                                     label_vocabulary=["no", "yes"],
                                     optimizer=tf.train.AdamOptimizer(0.05))
    est.train(_input(labels), steps=100)
    result = est.evaluate(_input(labels, epochs=1, shuffle=False))
    assert {"accuracy", "accuracy_baseline", "auc", "auc_precision_recall", "precision",
            "recall", "label/mean", "prediction/mean", "average_loss", "loss",
            "global_step"} == set(result)
    np.testing.assert_allclose(result["label/mean"], Y_BIN.mean(), rtol=1e-5)
    # The loss is summed over each batch of 40: its mean is 40 times the average loss.
    np.testing.assert_allclose(result["loss"], 40 * result["average_loss"], rtol=1e-4)
    rows = list(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X[:3], "color": COLOR[:3]}, shuffle=False)))
    assert set(rows[0]) == {"logits", "logistic", "probabilities", "class_ids", "classes",
                            "all_class_ids", "all_classes"}
    for r in rows:
        np.testing.assert_allclose(r["probabilities"].sum(), 1.0, rtol=1e-6)
        assert r["classes"][0] == [b"no", b"yes"][int(r["class_ids"][0])]
        assert int(r["class_ids"][0]) == int(r["logits"][0] > 0)


def test_baselines_learn_the_label_distribution(tmp_path):
    # Batches in order (whole passes over the 200 examples): a shuffle queue's batches
    # depend on how far its filling thread got, and Adam's last steps on which labels
    # they held (a loaded machine once ended 0.036 from the distribution).
    clf = tf.estimator.BaselineClassifier(model_dir=str(tmp_path / "c"), n_classes=3,
                                          optimizer=tf.train.AdamOptimizer(0.1))
    clf.train(_input(Y_MULTI, shuffle=False), steps=200)
    probs = next(clf.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X[:1], "color": COLOR[:1]}, shuffle=False)))["probabilities"]
    want = np.bincount(Y_MULTI, minlength=3) / len(Y_MULTI)
    np.testing.assert_allclose(probs, want, atol=0.03)
    reg = tf.estimator.BaselineRegressor(model_dir=str(tmp_path / "r"),
                                         optimizer=tf.train.AdamOptimizer(0.1))
    reg.train(_input(Y_REG, shuffle=False), steps=300)
    pred = next(reg.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X[:1], "color": COLOR[:1]}, shuffle=False)))["predictions"]
    np.testing.assert_allclose(pred, [Y_REG.mean()], atol=0.15)
    assert reg.get_variable_names().count("baseline/bias") == 1


def test_canned_argument_errors():
    with pytest.raises(ValueError, match="n_classes must be > 1"):
        tf.estimator.DNNClassifier([4], COLUMNS, n_classes=1)
    with pytest.raises(ValueError, match="label_vocabulary"):
        tf.estimator.LinearClassifier(COLUMNS, n_classes=3, label_vocabulary=["a", "b"])
    with pytest.raises(ValueError, match="Either linear_feature_columns"):
        tf.estimator.DNNLinearCombinedClassifier()
    with pytest.raises(ValueError, match="dnn_hidden_units must be defined"):
        tf.estimator.DNNLinearCombinedRegressor(dnn_feature_columns=COLUMNS)
