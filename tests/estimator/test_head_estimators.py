"""Estimators of a head (tf.estimator.DNNEstimator & co.) learning scikit-learn's digits and
iris, a MultiHead of two heads, SavedModel export of the heads' signatures served back by
tf.contrib.predictor, and tf.contrib.estimator's helpers (forward_features,
clip_gradients_by_norm, InMemoryEvaluatorHook, export_all_saved_models)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensorflux as tf

fc = tf.feature_column


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    return (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)


@pytest.fixture(scope="module")
def iris():
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_iris()
    x = d.data.astype(np.float32)
    return (x - x.mean(0)) / x.std(0), d.target.astype(np.int64)


def _input(x, y, epochs=None, shuffle=True, batch=64):
    return tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=batch,
                                              num_epochs=epochs, shuffle=shuffle)


def _cols(x):
    return [fc.numeric_column("x", shape=x.shape[1])]


def test_dnn_estimator_multi_class_head_learns_digits(digits, tmp_path):
    x, y = digits
    est = tf.estimator.DNNEstimator(
        tf.estimator.MultiClassHead(10), [32], _cols(x), model_dir=str(tmp_path),
        optimizer=tf.train.AdamOptimizer(0.01))
    est.train(_input(x[:1400], y[:1400]), steps=300)
    result = est.evaluate(_input(x[1400:], y[1400:], epochs=1, shuffle=False))
    assert result["accuracy"] > 0.85, result
    assert {"accuracy", "average_loss", "loss", "global_step"} == set(result)
    assert "dnn/hiddenlayer_0/kernel" in est.get_variable_names()
    rows = list(est.predict(tf.estimator.inputs.numpy_input_fn({"x": x[1400:1403]},
                                                               shuffle=False)))
    assert rows[0]["all_classes"].tolist() == [str(i).encode() for i in range(10)]


@pytest.mark.parametrize("make, y_of, metric, bound", [
    (lambda cols, d: tf.estimator.LinearEstimator(
        tf.contrib.estimator.binary_classification_head(label_vocabulary=["no", "yes"]),
        cols, model_dir=d, optimizer=tf.train.AdamOptimizer(0.05)),
     lambda y: np.where(y == 0, "yes", "no"), "accuracy", 0.95),
    (lambda cols, d: tf.contrib.estimator.DNNLinearCombinedEstimator(
        tf.contrib.estimator.multi_class_head(3), linear_feature_columns=cols,
        dnn_feature_columns=cols, dnn_hidden_units=[8], model_dir=d,
        dnn_optimizer=tf.train.AdamOptimizer(0.02),
        linear_optimizer=tf.train.AdamOptimizer(0.02)), lambda y: y, "accuracy", 0.85),
    (lambda cols, d: tf.estimator.DNNEstimator(
        tf.estimator.MultiLabelHead(3), [8], cols, model_dir=d,
        optimizer=tf.train.AdamOptimizer(0.02)),
     lambda y: np.eye(3, dtype=np.int64)[y], "auc", 0.9),
    (lambda cols, d: tf.estimator.LinearEstimator(
        tf.estimator.RegressionHead(), cols, model_dir=d,
        optimizer=tf.train.AdamOptimizer(0.05)),
     lambda y: y.astype(np.float32)[:, None], "average_loss", -0.15),
])
def test_estimators_of_heads_learn_iris(iris, tmp_path, make, y_of, metric, bound):
    x, y = iris
    labels = y_of(y)
    est = make(_cols(x), str(tmp_path))
    est.train(_input(x, labels), steps=200)
    value = est.evaluate(_input(x, labels, epochs=1, shuffle=False))[metric]
    assert (value > bound) if bound > 0 else (value < -bound), (metric, value)


def test_baseline_estimator_learns_the_label_mean(iris, tmp_path):
    x, y = iris
    labels = y.astype(np.float32)[:, None]
    est = tf.contrib.estimator.BaselineEstimator(
        tf.estimator.RegressionHead(), model_dir=str(tmp_path),
        optimizer=tf.train.AdamOptimizer(0.1))
    est.train(_input(x, labels, batch=150, shuffle=False), steps=150)
    np.testing.assert_allclose(est.get_variable_value("baseline/bias"), [labels.mean()],
                               atol=0.05)


def test_multi_head_trains_two_heads(iris, tmp_path):
    x, y = iris
    width = x[:, 3:4].copy()
    head = tf.contrib.estimator.multi_head(
        [tf.contrib.estimator.multi_class_head(3, name="species"),
         tf.contrib.estimator.regression_head(name="width")], head_weights=[1.0, 0.5])
    assert head.logits_dimension == 4
    est = tf.estimator.DNNEstimator(head, [16], [fc.numeric_column("x", shape=3)],
                                    model_dir=str(tmp_path),
                                    optimizer=tf.train.AdamOptimizer(0.02))
    feats = {"x": x[:, :3]}
    labels = {"species": y, "width": width}
    est.train(tf.estimator.inputs.numpy_input_fn(feats, labels, batch_size=50,
                                                 num_epochs=None, shuffle=True), steps=200)
    result = est.evaluate(tf.estimator.inputs.numpy_input_fn(
        feats, labels, batch_size=50, num_epochs=1, shuffle=False))
    assert {"accuracy/species", "average_loss/species", "loss/species",
            "average_loss/width", "prediction/mean/width", "label/mean/width",
            "loss/width", "loss", "global_step"} == set(result)
    assert result["accuracy/species"] > 0.85 and result["average_loss/width"] < 0.3
    np.testing.assert_allclose(result["loss"], result["loss/species"] +
                               0.5 * result["loss/width"], rtol=1e-4)
    row = next(iter(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": x[:2, :3]}, shuffle=False))))
    assert {("species", "class_ids"), ("width", "predictions")} <= set(row)


def _export(est, tmp_path, dim, assets_extra=None):
    spec = {"x": tf.FixedLenFeature([dim], tf.float32)}
    return est.export_saved_model(
        str(tmp_path / "export"),
        tf.estimator.export.build_parsing_serving_input_receiver_fn(spec),
        assets_extra=assets_extra)


def _examples(x):
    return [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}))
        .SerializeToString() for row in x]


def test_export_binary_head_signatures_and_serve(iris, tmp_path):
    x, y = iris
    labels = (y == 0).astype(np.int64)
    est = tf.estimator.DNNEstimator(tf.estimator.BinaryClassHead(), [8], _cols(x),
                                    model_dir=str(tmp_path / "m"),
                                    optimizer=tf.train.AdamOptimizer(0.05))
    est.train(_input(x, labels), steps=50)
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"setosa or not\n")
    export_dir = _export(est, tmp_path, 4, {"vocab/notes.txt": str(notes)})
    with open(os.path.join(os.fsdecode(export_dir), "assets.extra", "vocab", "notes.txt"),
              "rb") as f:
        assert f.read() == b"setosa or not\n"
    want = list(est.predict(tf.estimator.inputs.numpy_input_fn({"x": x[:5]},
                                                               shuffle=False)))
    serialized = _examples(x[:5])
    classify = tf.contrib.predictor.from_saved_model(export_dir)
    out = classify({"inputs": serialized})
    np.testing.assert_allclose(out["scores"], [r["probabilities"] for r in want],
                               rtol=1e-5)
    assert out["classes"].tolist() == [[b"0", b"1"]] * 5
    regress = tf.contrib.predictor.from_saved_model(export_dir,
                                                    signature_def_key="regression")
    np.testing.assert_allclose(regress({"inputs": serialized})["outputs"],
                               [r["logistic"] for r in want], rtol=1e-5)
    predict = tf.contrib.predictor.from_saved_model(export_dir, signature_def_key="predict")
    got = predict({"examples": serialized})
    assert {"logits", "logistic", "probabilities", "class_ids", "classes"} <= set(got)
    np.testing.assert_array_equal(got["class_ids"], [r["class_ids"] for r in want])


def test_export_multi_head_and_forward_features(iris, tmp_path):
    x, y = iris
    head = tf.estimator.MultiHead([tf.estimator.MultiClassHead(3, name="species"),
                                   tf.estimator.RegressionHead(name="width")])
    est = tf.estimator.DNNEstimator(head, [8], _cols(x), model_dir=str(tmp_path / "m"),
                                    optimizer=tf.train.AdamOptimizer(0.05))
    est.train(tf.estimator.inputs.numpy_input_fn(
        {"x": x}, {"species": y, "width": x[:, 3:4].copy()}, batch_size=50,
        num_epochs=None, shuffle=True), steps=20)
    (tmp_path / "extra.txt").write_bytes(b"both heads")
    export_dir = tf.contrib.estimator.export_all_saved_models(
        est, str(tmp_path / "export"), {tf.estimator.ModeKeys.PREDICT:
                                        tf.estimator.export.build_parsing_serving_input_receiver_fn(
                                            {"x": tf.FixedLenFeature([4], tf.float32)})},
        assets_extra={"extra.txt": str(tmp_path / "extra.txt")})
    with open(os.path.join(os.fsdecode(export_dir), "assets.extra", "extra.txt"), "rb") as f:
        assert f.read() == b"both heads"
    serialized = _examples(x[:3])
    species = tf.contrib.predictor.from_saved_model(export_dir)({"inputs": serialized})
    assert species["scores"].shape == (3, 3)
    width = tf.contrib.predictor.from_saved_model(
        export_dir, signature_def_key="width/regression")({"inputs": serialized})
    assert width["outputs"].shape == (3, 1)
    merged = tf.contrib.predictor.from_saved_model(
        export_dir, signature_def_key="predict")({"examples": serialized})
    assert {"species/probabilities", "width/predictions"} <= set(merged)

    plain = tf.estimator.DNNEstimator(tf.estimator.RegressionHead(), [4], _cols(x),
                                      model_dir=str(tmp_path / "p"))
    plain.train(_input(x, y.astype(np.float32)[:, None]), steps=5)
    forwarded = tf.contrib.estimator.forward_features(plain, "id")
    rows = list(forwarded.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": x[:4], "id": np.arange(4)}, shuffle=False)))
    assert [int(r["id"]) for r in rows] == [0, 1, 2, 3] and "predictions" in rows[0]
    with pytest.raises(TypeError, match="string or a list"):
        tf.contrib.estimator.forward_features(plain, 3)
    with pytest.raises(ValueError, match="SupervisedInputReceiver"):
        tf.contrib.estimator.export_saved_model_for_mode(
            plain, str(tmp_path / "x"), tf.estimator.export.build_raw_serving_input_receiver_fn(
                {"x": tf.placeholder(tf.float32, [None, 4])}), mode="eval")


def test_clip_gradients_by_norm_and_in_memory_evaluator(iris, tmp_path):
    x, y = iris
    with tf.Graph().as_default():
        w = tf.Variable([3.0, 4.0])
        opt = tf.contrib.estimator.clip_gradients_by_norm(
            tf.train.GradientDescentOptimizer(1.0), clip_norm=1.0)
        step = opt.minimize(tf.reduce_sum(w * w) / 2)  # gradient w, norm 5
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            np.testing.assert_allclose(sess.run(w), [3.0 - 0.6, 4.0 - 0.8], rtol=1e-6)
    est = tf.estimator.DNNEstimator(tf.estimator.MultiClassHead(3), [8], _cols(x),
                                    model_dir=str(tmp_path),
                                    optimizer=tf.train.AdamOptimizer(0.05))
    hook = tf.contrib.estimator.InMemoryEvaluatorHook(
        est, _input(x, y, epochs=1, shuffle=False), name="mem", every_n_iter=40)
    est.train(_input(x, y), steps=100, hooks=[hook])
    evals = tf.estimator.experimental.read_eval_metrics(est.eval_dir("mem"))
    assert list(evals) == [40, 80, 100]
    assert evals[100]["accuracy"] == pytest.approx(hook.last_results["accuracy"])
    final = est.evaluate(_input(x, y, epochs=1, shuffle=False))
    assert final["accuracy"] == pytest.approx(evals[100]["accuracy"], abs=1e-6)
    with pytest.raises(ValueError, match="every_n_iter"):
        tf.contrib.estimator.InMemoryEvaluatorHook(est, None, every_n_iter=0)
    assert tf.contrib.estimator.stop_if_higher_hook is \
        tf.estimator.experimental.stop_if_higher_hook
    assert tf.contrib.estimator.add_metrics is tf.estimator.add_metrics
    for name in ("InMemoryEvaluatorHook", "make_stop_at_checkpoint_step_hook",
                 "dnn_logit_fn_builder", "linear_logit_fn_builder", "call_logit_fn"):
        assert getattr(tf.estimator.experimental, name) is \
            getattr(tf.contrib.estimator, name), name


def test_custom_model_fn_of_logit_fn_builders_and_a_head(iris, tmp_path):
    x, y = iris
    cols = _cols(x)
    head = tf.estimator.MultiClassHead(3)
    dnn_fn = tf.contrib.estimator.dnn_logit_fn_builder(3, [8], cols, None, None)
    linear_fn = tf.contrib.estimator.linear_logit_fn_builder(3, cols)

    def model_fn(features, labels, mode, config):
        with tf.variable_scope("deep"):
            deep = tf.contrib.estimator.call_logit_fn(dnn_fn, features, mode, None, config)
        with tf.variable_scope("wide"):
            wide = tf.contrib.estimator.call_logit_fn(linear_fn, features, mode, None,
                                                      config)
        return head.create_estimator_spec(features, mode, deep + wide, labels,
                                          optimizer=tf.train.AdamOptimizer(0.05))

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    est.train(_input(x, y), steps=150)
    assert est.evaluate(_input(x, y, epochs=1, shuffle=False))["accuracy"] > 0.9
    assert {"deep/hiddenlayer_0/kernel", "deep/logits/bias",
            "wide/linear_model/x/weights"} <= set(est.get_variable_names())
    with pytest.raises(ValueError, match="units must be an int"):
        tf.contrib.estimator.dnn_logit_fn_builder("3", [8], cols, None, None)


def test_stop_at_checkpoint_step_hook_ends_an_endless_evaluation(iris, tmp_path):
    x, y = iris
    est = tf.estimator.LinearEstimator(tf.estimator.MultiClassHead(3), _cols(x),
                                       model_dir=str(tmp_path))
    est.train(_input(x, y), steps=20)
    hook = tf.contrib.estimator.make_stop_at_checkpoint_step_hook(
        est, last_step=20, wait_after_file_check_secs=0)
    result = est.evaluate(_input(x, y, epochs=None), hooks=[hook])
    assert result["global_step"] == 20


def _signature_run(export_dir, tag, key, feeds, fetch_names):
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, [tag], export_dir)
        sig = meta.signature_def[key]
        feed = {sig.inputs[k].name: v for k, v in feeds.items()}
        out = [sess.run(sig.outputs[n].name, feed) for n in fetch_names]
        train_ops = tf.get_collection("saved_model_train_op")
        if train_ops:
            sess.run(train_ops[0], feed)
            out.append(sess.run(sig.outputs["loss"].name, feed))
        return out


def test_export_train_eval_and_predict_graphs(iris, tmp_path):
    x, y = iris
    est = tf.estimator.DNNEstimator(tf.estimator.MultiClassHead(3), [8], _cols(x),
                                    model_dir=str(tmp_path / "m"),
                                    optimizer=tf.train.GradientDescentOptimizer(0.1))
    est.train(_input(x, y), steps=60)
    whole = _input(x, y, epochs=1, shuffle=False, batch=150)
    want = est.evaluate(whole)
    export_dir = est.experimental_export_all_saved_models(str(tmp_path / "export"), {
        "train": tf.contrib.estimator.build_supervised_input_receiver_fn_from_input_fn(whole),
        "eval": tf.estimator.experimental.build_raw_supervised_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [None, 4])}, tf.placeholder(tf.int64, [None])),
        "infer": tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [None, 4])})})
    feeds = {"x": x, "label": y}
    update, acc, loss = _signature_run(export_dir, "eval", "eval", feeds, [
        "metrics/accuracy/update_op", "metrics/accuracy/value", "loss"])
    np.testing.assert_allclose(acc, want["accuracy"], rtol=1e-6)
    np.testing.assert_allclose(loss, want["loss"], rtol=1e-5)
    before, after = _signature_run(export_dir, "train", "train", feeds, ["loss"])
    assert after < before
    probs, = _signature_run(export_dir, "serve", "predict", {"x": x[:2]},
                            ["probabilities"])
    assert probs.shape == (2, 3)
    with pytest.raises(ValueError, match="distinct keys"):
        tf.estimator.experimental.build_raw_supervised_input_receiver_fn(
            {"x": tf.constant([1.0])}, {"x": tf.constant([1])})
