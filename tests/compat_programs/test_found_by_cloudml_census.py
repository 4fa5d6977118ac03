"""Found by GoogleCloudPlatform/cloudml-samples' census trainers: a custom model_fn whose
PREDICT spec has one export output, `{'prediction': PredictOutput(...)}`, is served through
the default signature ("serving_default"), which TF1's EstimatorSpec adds for a single
output; tensorflux exported only 'prediction' ("Export includes no default signature!").
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

DEFAULT = "serving_default"


def _output(graph):
    with graph.as_default():
        return tf.estimator.export.PredictOutput({"y": tf.constant([1.0])})


def test_a_single_export_output_is_also_the_default():
    g = tf.Graph()
    out = _output(g)
    with g.as_default():
        given = {"prediction": out}
        spec = tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.PREDICT,
                                          predictions={"y": tf.constant([1.0])},
                                          export_outputs=given)
    assert spec.export_outputs == {"prediction": out, DEFAULT: out}
    assert given == {"prediction": out}  # the caller's dict is left alone


def test_several_export_outputs_need_a_default_and_values_must_be_outputs():
    g = tf.Graph()
    out = _output(g)
    with g.as_default():
        p = {"y": tf.constant([1.0])}
        mode = tf.estimator.ModeKeys.PREDICT
        with pytest.raises(ValueError, match="Multiple export_outputs were provided, but none "
                           "of them is specified as the default"):
            tf.estimator.EstimatorSpec(mode, predictions=p, export_outputs={"a": out, "b": out})
        spec = tf.estimator.EstimatorSpec(mode, predictions=p,
                                          export_outputs={"a": out, DEFAULT: out})
        assert set(spec.export_outputs) == {"a", DEFAULT}
        with pytest.raises(TypeError, match="Values in export_outputs must be ExportOutput "
                           "objects"):
            tf.estimator.EstimatorSpec(mode, predictions=p, export_outputs={"a": p["y"]})
        with pytest.raises(TypeError, match="export_outputs must be dict"):
            tf.estimator.EstimatorSpec(mode, predictions=p, export_outputs=[out])


def _model_fn(features, labels, mode):
    w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.0))
    y = features["x"] * w
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": y}, export_outputs={
            "prediction": tf.estimator.export.PredictOutput({"y": y})})
    loss = tf.reduce_mean(tf.square(y - labels))
    train = tf.train.GradientDescentOptimizer(0.0).minimize(
        loss, global_step=tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)


def test_the_exported_model_is_served_through_its_default_signature(tmp_path):
    est = tf.estimator.Estimator(_model_fn, model_dir=str(tmp_path / "model"))
    est.train(lambda: ({"x": tf.constant([1.0, 2.0])}, tf.constant([2.0, 4.0])), max_steps=1)
    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None])})
    path = est.export_saved_model(str(tmp_path / "export"), receiver)
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], path)
        assert set(meta.signature_def) == {"prediction", DEFAULT}
        sig = meta.signature_def[DEFAULT]
        got = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: [1.5, -1.0]})
    np.testing.assert_array_equal(got, [3.0, -2.0])
