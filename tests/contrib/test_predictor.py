"""tf.contrib.predictor: from_saved_model and from_estimator give callables over a
signature, in graphs of their own."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

X = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
W = np.array([[1.0], [-2.0], [0.5]], np.float32)


def _saved_model(path):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(W)
        y = tf.matmul(x, w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.saved_model.simple_save(sess, str(path), {"x": x}, {"y": y, "twice": y * 2})


def test_from_saved_model(tmp_path):
    _saved_model(tmp_path / "sm")
    predict = tf.contrib.predictor.from_saved_model(str(tmp_path / "sm"))
    out = predict({"x": X})
    assert sorted(out) == ["twice", "y"]
    np.testing.assert_allclose(out["y"], X @ W, rtol=1e-6)
    np.testing.assert_allclose(out["twice"], 2 * X @ W, rtol=1e-6)
    assert predict.graph is not tf.get_default_graph()
    assert sorted(predict.feed_tensors) == ["x"] and "Predictor" in repr(predict)
    with pytest.raises(ValueError, match="unexpected keys"):
        predict({"z": X})
    with pytest.raises(ValueError, match="Could not find signature def with key nope"):
        tf.contrib.predictor.from_saved_model(str(tmp_path / "sm"), signature_def_key="nope")
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.contrib.predictor.from_saved_model(str(tmp_path / "sm"), signature_def_key="a",
                                              signature_def=object())


def test_from_estimator(tmp_path):
    column = tf.feature_column.numeric_column("x", shape=[3])
    est = tf.estimator.LinearRegressor([column], model_dir=str(tmp_path / "est"))
    y = X @ W
    est.train(tf.estimator.inputs.numpy_input_fn({"x": X}, y, batch_size=6, num_epochs=None,
                                                  shuffle=False), steps=5)
    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 3], name="x")})
    predict = tf.contrib.predictor.from_estimator(est, receiver)
    got = predict({"x": X})
    want = np.stack([p["predictions"] for p in est.predict(
        tf.estimator.inputs.numpy_input_fn({"x": X}, batch_size=6, shuffle=False))])
    np.testing.assert_allclose(got["predictions"], want, rtol=1e-5)
