"""tf.estimator: an Estimator trains, evaluates, predicts and exports a model_fn's model;
numbers are checked against NumPy on the checkpoint's own weights."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

import tensorflux as tf

RNG = np.random.default_rng(0)
X = RNG.normal(size=(96, 3)).astype(np.float32)
TRUE_W = np.array([[1.5], [-2.0], [0.5]], np.float32)
Y = (X @ TRUE_W + 0.25).astype(np.float32)


def linear_model_fn(features, labels, mode, params, config):
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": pred, "double": 2 * pred})
    loss = tf.reduce_mean(tf.square(pred - labels))
    step = tf.train.GradientDescentOptimizer(params["lr"]).minimize(
        loss, global_step=tf.train.get_global_step())
    metrics = {"mae": tf.metrics.mean_absolute_error(labels, pred)}
    assert isinstance(config, tf.estimator.RunConfig)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step,
                                      eval_metric_ops=metrics)


def _input(batch=32, epochs=None, shuffle=True, x=X, y=Y):
    return tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=batch,
                                              num_epochs=epochs, shuffle=shuffle)


@pytest.fixture
def trained(tmp_path):
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "m"),
                                 params={"lr": 0.1})
    est.train(_input(), steps=60)
    return est


def test_train_evaluate_predict_against_numpy(trained):
    w, b = trained.get_variable_value("w"), trained.get_variable_value("b")
    assert trained.get_variable_value("global_step") == 60
    np.testing.assert_allclose(w, TRUE_W, atol=0.05)
    pred = X @ w + b
    # Batches of 32 over 96 rows: the mean of the batch losses is the mean loss.
    result = trained.evaluate(_input(epochs=1, shuffle=False))
    assert result["global_step"] == 60
    np.testing.assert_allclose(result["loss"], np.mean((pred - Y) ** 2), rtol=1e-4)
    np.testing.assert_allclose(result["mae"], np.mean(np.abs(pred - Y)), rtol=1e-4)
    two = trained.evaluate(_input(epochs=None, shuffle=False), steps=2, name="two")
    np.testing.assert_allclose(two["loss"], np.mean((pred[:64] - Y[:64]) ** 2), rtol=1e-4)
    assert glob.glob(os.path.join(trained.model_dir, "eval", "events.out.tfevents.*"))
    assert glob.glob(os.path.join(trained.model_dir, "eval_two", "events.out.tfevents.*"))

    rows = list(trained.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X[:5]}, batch_size=2, shuffle=False)))
    assert len(rows) == 5 and set(rows[0]) == {"y", "double"}
    np.testing.assert_allclose(np.stack([r["y"] for r in rows]), pred[:5], rtol=1e-5)
    batches = list(trained.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X[:5]}, batch_size=2, shuffle=False), predict_keys=["double"],
        yield_single_examples=False))
    assert [b["double"].shape for b in batches] == [(2, 1), (2, 1), (1, 1)]


def test_steps_max_steps_and_checkpoints(tmp_path):
    cfg = tf.estimator.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=10,
                                 keep_checkpoint_max=2, log_step_count_steps=5)
    est = tf.estimator.Estimator(linear_model_fn, config=cfg, params={"lr": 0.05})
    est.train(_input(), steps=25)
    est.train(_input(), steps=5)
    assert est.get_variable_value("global_step") == 30
    est.train(_input(), max_steps=20)  # already past: skipped
    assert est.get_variable_value("global_step") == 30
    est.train(_input(), max_steps=33)
    assert est.get_variable_value("global_step") == 33
    kept = sorted(int(p.split("-")[-1].split(".")[0])
                  for p in glob.glob(str(tmp_path / "model.ckpt-*.index")))
    assert kept == [30, 33]
    assert est.latest_checkpoint().endswith("model.ckpt-33")
    # The input ends: training stops at the end of one epoch (96 rows / 32 = 3 steps).
    est.train(_input(epochs=1, shuffle=False))
    assert est.get_variable_value("global_step") == 36


def test_dataset_input_fn_params_and_labels_free_model(tmp_path):
    def input_fn(params):
        ds = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(params["batch"])
        return ds.repeat()

    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path),
                                 params={"lr": 0.1, "batch": 16})
    est.train(input_fn, steps=30)
    assert est.get_variable_value("global_step") == 30

    def unsupervised(features, mode):
        v = tf.get_variable("v", [], initializer=tf.ones_initializer())
        return tf.estimator.EstimatorSpec(mode, predictions=features * v)

    est2 = tf.estimator.Estimator(unsupervised, model_dir=str(tmp_path / "u"))
    with pytest.raises(ValueError, match="does not take labels"):
        est2.train(_input(), steps=1)


@pytest.mark.parametrize("call, match", [
    (lambda est: est.train(_input(), steps=1, max_steps=2), "both steps and max_steps"),
    (lambda est: est.train(_input(), steps=0), "steps > 0"),
    (lambda est: est.evaluate(_input(epochs=1)), "Could not find trained model"),
    (lambda est: next(est.predict(_input(epochs=1))), "Could not find trained model"),
    (lambda est: est.evaluate(_input(epochs=1), steps=-1), "steps > 0"),
])
def test_call_errors(tmp_path, call, match):
    est = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path),
                                 params={"lr": 0.1})
    with pytest.raises(ValueError, match=match):
        call(est)


def test_construction_and_spec_errors(tmp_path):
    with pytest.raises(ValueError, match="must include features"):
        tf.estimator.Estimator(lambda inputs, mode: None)
    with pytest.raises(ValueError, match="different values"):
        tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "a"),
                               config=tf.estimator.RunConfig(model_dir=str(tmp_path / "b")))
    with pytest.raises(ValueError, match="both save_checkpoints_steps"):
        tf.estimator.RunConfig(save_checkpoints_steps=5, save_checkpoints_secs=30)
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError, match="Missing train_op"):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.TRAIN, loss=loss)
        with pytest.raises(ValueError, match="Missing loss"):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.EVAL)
        with pytest.raises(ValueError, match="Missing predictions"):
            tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.PREDICT)
        with pytest.raises(ValueError, match="Loss must be scalar"):
            tf.estimator.EstimatorSpec("eval", loss=tf.constant([1.0, 2.0]))
        with pytest.raises(TypeError, match="eval_metric_ops"):
            tf.estimator.EstimatorSpec("eval", loss=loss, eval_metric_ops={"m": loss})
    with pytest.raises(ValueError, match="shuffle must be provided"):
        tf.estimator.inputs.numpy_input_fn({"x": X}, Y)
    with pytest.raises(ValueError, match="mismatched"):
        with tf.Graph().as_default():
            tf.estimator.inputs.numpy_input_fn({"x": X}, Y[:5], shuffle=False)()


def test_nan_loss_stops_training(tmp_path):
    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [], initializer=tf.ones_initializer())
        loss = tf.reduce_mean(features["x"]) * w * np.float32(np.nan)
        step = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step)

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    with pytest.raises(tf.train.NanLossDuringTrainingError):
        est.train(_input(), steps=3)


def test_train_and_evaluate_exports_a_servable_model(tmp_path):
    with tf.Graph().as_default():  # the receiver_fn makes its own in the export's graph
        receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [None, 3])})
    est = tf.estimator.Estimator(
        linear_model_fn, params={"lr": 0.1},
        config=tf.estimator.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=20))
    result, exports = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(_input(), max_steps=40),
        tf.estimator.EvalSpec(_input(epochs=1, shuffle=False), steps=None, throttle_secs=0,
                              exporters=[tf.estimator.LatestExporter("lin", receiver_fn,
                                                                     exports_to_keep=1)]))
    assert result["global_step"] == 40 and result["loss"] < 0.1
    assert len(exports) >= 2  # after the step-20 checkpoint and at the end
    kept = os.listdir(tmp_path / "export" / "lin")
    assert len(kept) == 1
    export_dir = exports[-1]
    assert os.fsdecode(export_dir).endswith(kept[0])
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                          os.fsdecode(export_dir))
        sig = meta.signature_def["serving_default"]
        got = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: X[:4]})
    w, b = est.get_variable_value("w"), est.get_variable_value("b")
    np.testing.assert_allclose(got, X[:4] @ w + b, rtol=1e-5)


def test_warm_start_from_another_model(tmp_path):
    source = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "src"),
                                    params={"lr": 0.1})
    source.train(_input(), steps=40)
    w = source.get_variable_value("w")
    # Warm-started: training starts from the source's weights (a zero learning rate
    # keeps them), the global step from zero.
    warm = tf.estimator.Estimator(
        linear_model_fn, model_dir=str(tmp_path / "warm"), params={"lr": 0.0},
        warm_start_from=tf.estimator.WarmStartSettings(str(tmp_path / "src"), "w"))
    warm.train(_input(), steps=1)
    np.testing.assert_allclose(warm.get_variable_value("w"), w)
    np.testing.assert_allclose(warm.get_variable_value("b"), 0.0)  # not matched
    assert warm.get_variable_value("global_step") == 1
    # A directory alone warm-starts every trainable variable.
    everything = tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "all"),
                                        params={"lr": 0.0},
                                        warm_start_from=str(tmp_path / "src"))
    everything.train(_input(), steps=1)
    np.testing.assert_allclose(everything.get_variable_value("b"),
                               source.get_variable_value("b"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file or checkpoints"):
        tf.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "x"),
                               params={"lr": 0.1},
                               warm_start_from=str(tmp_path / "empty")).train(_input(),
                                                                              steps=1)
