"""tf.estimator's BestExporter, add_metrics, the parse-spec helpers and
tf.estimator.experimental's early stopping and read_eval_metrics."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensorflux as tf


def _write_evals(eval_dir, rows):
    """Evaluation summaries as Estimator.evaluate writes them: one event per step."""
    writer = tf.summary.FileWriter(str(eval_dir))
    for step, values in rows:
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag=k, simple_value=v)
                                             for k, v in values.items()]), step)
    writer.close()


def test_read_eval_metrics(tmp_path):
    _write_evals(tmp_path / "eval", [(20, {"loss": 3.0, "acc": 0.5}), (10, {"loss": 4.0})])
    _write_evals(tmp_path / "eval", [(30, {"loss": 2.5})])
    got = tf.estimator.experimental.read_eval_metrics(str(tmp_path / "eval"))
    assert list(got) == [10, 20, 30]
    assert got[20] == {"loss": 3.0, "acc": 0.5} and got[30] == {"loss": 2.5}
    assert tf.estimator.experimental.read_eval_metrics(str(tmp_path / "none")) == {}


class _FakeEstimator:
    def __init__(self, model_dir):
        self.model_dir = str(model_dir)
        self.exports = []

    def eval_dir(self, name=None):
        return os.path.join(self.model_dir, "eval" if not name else f"eval_{name}")

    def export_saved_model(self, export_path, fn, assets_extra, as_text, checkpoint_path):
        self.exports.append(checkpoint_path)
        path = os.path.join(export_path, str(len(self.exports)))
        os.makedirs(path)
        return path


def test_best_exporter_exports_improvements_only(tmp_path):
    est = _FakeEstimator(tmp_path)
    exporter = tf.estimator.BestExporter(serving_input_receiver_fn=lambda: None,
                                         exports_to_keep=2)
    path = str(tmp_path / "export" / "best")
    os.makedirs(path)
    for i, loss in enumerate([3.0, 2.0, 2.5, 1.0, 0.5]):
        exporter.export(est, path, f"ckpt-{i}", {"loss": loss}, False)
    assert est.exports == ["ckpt-0", "ckpt-1", "ckpt-3", "ckpt-4"]
    assert sorted(os.listdir(path)) == ["3", "4"]  # exports_to_keep
    # a resumed run starts from the best evaluation in the event files
    _write_evals(tmp_path / "eval", [(10, {"loss": 1.5}), (20, {"loss": 0.9})])
    resumed = _FakeEstimator(tmp_path)
    fresh = tf.estimator.BestExporter(serving_input_receiver_fn=lambda: None)
    fresh.export(resumed, path, "c1", {"loss": 1.0}, False)
    fresh.export(resumed, path, "c2", {"loss": 0.8}, False)
    assert resumed.exports == ["c2"]


def test_best_exporter_arguments_and_compare():
    with pytest.raises(ValueError, match="serving_input_receiver_fn"):
        tf.estimator.BestExporter()
    with pytest.raises(ValueError, match="positive number"):
        tf.estimator.BestExporter(serving_input_receiver_fn=lambda: None, exports_to_keep=0)
    exporter = tf.estimator.BestExporter(serving_input_receiver_fn=lambda: None)
    with pytest.raises(ValueError, match="no loss is found"):
        exporter._compare_fn({"loss": 1.0}, {"acc": 1.0})
    assert isinstance(exporter, tf.estimator.Exporter)


class _Context:
    stopped = False

    def request_stop(self):
        self.stopped = True


def _steps(hook, n):
    ctx = _Context()
    for _ in range(n):
        hook.after_run(ctx, None)
    return ctx.stopped


@pytest.mark.parametrize("make, rows, stops", [
    (lambda e: tf.estimator.experimental.stop_if_no_decrease_hook(
        e, "loss", 20, run_every_secs=None, run_every_steps=1),
     [(10, 3.0), (20, 2.0), (30, 2.5), (40, 2.1)], True),  # best at 20, 40 - 20 >= 20
    (lambda e: tf.estimator.experimental.stop_if_no_decrease_hook(
        e, "loss", 30, run_every_secs=None, run_every_steps=1),
     [(10, 3.0), (20, 2.0), (30, 2.5), (40, 2.1)], False),
    (lambda e: tf.estimator.experimental.stop_if_no_increase_hook(
        e, "loss", 10, run_every_secs=None, run_every_steps=1),
     [(10, 1.0), (20, 2.0), (30, 3.0)], False),
    (lambda e: tf.estimator.experimental.stop_if_higher_hook(
        e, "loss", 2.9, run_every_secs=None, run_every_steps=1),
     [(10, 3.0)], True),
    (lambda e: tf.estimator.experimental.stop_if_higher_hook(
        e, "loss", 2.9, min_steps=20, run_every_secs=None, run_every_steps=1),
     [(10, 3.0)], False),
    (lambda e: tf.estimator.experimental.stop_if_lower_hook(
        e, "loss", 1.0, run_every_secs=None, run_every_steps=1),
     [(10, 3.0), (20, 0.5)], True),
])
def test_early_stopping_hooks(tmp_path, make, rows, stops):
    est = _FakeEstimator(tmp_path)
    _write_evals(tmp_path / "eval", [(step, {"loss": v}) for step, v in rows])
    assert _steps(make(est), 1) is stops


def test_early_stopping_schedule_and_errors(tmp_path):
    calls = []
    hook = tf.estimator.experimental.make_early_stopping_hook(
        None, lambda: calls.append(1) or len(calls) == 2, run_every_secs=None,
        run_every_steps=3)
    assert not _steps(hook, 5) and len(calls) == 1  # asked at the 3rd step only
    assert _steps(hook, 1) and len(calls) == 2
    with pytest.raises(ValueError, match="Exactly one of"):
        tf.estimator.experimental.make_early_stopping_hook(None, lambda: False,
                                                           run_every_secs=1,
                                                           run_every_steps=1)
    with pytest.raises(TypeError, match="callable"):
        tf.estimator.experimental.make_early_stopping_hook(None, 3)


def test_parse_example_specs():
    columns = [tf.feature_column.numeric_column("x", shape=[2])]
    spec = tf.estimator.classifier_parse_example_spec(columns, "y", weight_column="w")
    assert spec["y"] == tf.FixedLenFeature((1,), tf.int64)
    assert spec["w"] == tf.FixedLenFeature((1,), tf.float32)
    assert spec["x"] == tf.FixedLenFeature((2,), tf.float32)
    spec = tf.estimator.classifier_parse_example_spec(
        columns, "y", weight_column=tf.feature_column.numeric_column("w2"))
    assert spec["w2"] == tf.FixedLenFeature((1,), tf.float32)
    spec = tf.estimator.regressor_parse_example_spec(columns, "y", label_dimension=3,
                                                     label_default=0.0)
    assert spec["y"] == tf.FixedLenFeature((3,), tf.float32, 0.0)
    with pytest.raises(ValueError, match="label should not be used as feature"):
        tf.estimator.classifier_parse_example_spec(columns, "x")


def test_add_metrics_and_call_logit_fn(tmp_path):
    x = np.random.default_rng(0).standard_normal((32, 2)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    columns = [tf.feature_column.numeric_column("x", shape=[2])]
    est = tf.estimator.LinearClassifier(columns, model_dir=str(tmp_path / "m"))
    fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=None,
                                            shuffle=False)
    est.train(fn, steps=5)

    def metric_fn(labels, predictions):
        return {"mean_prob": tf.metrics.mean(predictions["logistic"])}

    more = tf.estimator.add_metrics(est, metric_fn)
    once = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=1,
                                              shuffle=False)
    result = more.evaluate(once)
    assert "mean_prob" in result and "accuracy" in result and 0 < result["mean_prob"] < 1
    with pytest.raises(ValueError, match="may take only"):
        tf.estimator.add_metrics(est, lambda labels, mode: {})
    with tf.Graph().as_default():
        logits = tf.estimator.experimental.call_logit_fn(
            lambda features, mode: features["a"] * 2.0, {"a": tf.constant(1.0)}, "train",
            None, None)
        assert logits.op.type == "Mul"
        with pytest.raises(ValueError, match="logit_fn should return a Tensor"):
            tf.estimator.experimental.call_logit_fn(lambda features: 3, {}, "train", None,
                                                    None)
