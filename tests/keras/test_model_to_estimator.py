"""tf.keras.estimator.model_to_estimator: the Estimator starts from the Keras model's
weights, computes its compiled loss and metrics, trains with a copy of its optimizer, and
predicts by output name."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 8)).astype(np.float32)
Y = (X[:, 0] > 0).astype(np.int32)


def _sequential(lr=0.05):
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
        tf.keras.layers.Dropout(0.5),
        tf.keras.layers.Dense(2, activation="softmax")])
    model.compile(tf.keras.optimizers.SGD(lr), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def _input(model, labels=True, batch=64):
    features = {model.input_names[0]: X}
    return tf.estimator.inputs.numpy_input_fn(features, Y if labels else None,
                                              batch_size=batch, num_epochs=1, shuffle=False)


def test_starts_from_the_keras_weights(tmp_path):
    model = _sequential(lr=0.0)  # training moves nothing: the estimator must equal Keras
    model.fit(X, Y, epochs=2, verbose=0)
    keras_loss, keras_acc = model.evaluate(X, Y, verbose=0)
    want = model.predict(X)
    est = tf.keras.estimator.model_to_estimator(keras_model=model,
                                                model_dir=str(tmp_path / "est"))
    est.train(_input(model), steps=1)
    got = np.stack([p[model.output_names[0]]
                    for p in est.predict(_input(model, labels=False))])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # dropout off: PREDICT
    result = est.evaluate(_input(model))
    assert result["global_step"] == 1
    np.testing.assert_allclose(result["loss"], keras_loss, rtol=1e-5)
    np.testing.assert_allclose(result["acc"], keras_acc, rtol=1e-6)


def test_training_continues_and_checkpoints(tmp_path):
    model = _sequential(lr=0.5)
    est = tf.keras.estimator.model_to_estimator(keras_model=model,
                                                model_dir=str(tmp_path / "est"))
    with pytest.raises(ValueError, match="Could not find trained model"):
        est.evaluate(_input(model))  # as TensorFlow's: nothing trained yet
    est.train(_input(model, batch=16), steps=1)
    first = est.evaluate(_input(model))["loss"]
    est.train(_input(model, batch=16), steps=60)
    trained = est.evaluate(_input(model))
    assert trained["loss"] < first and trained["acc"] > 0.6  # chance 0.5 (dropout, 64 rows)
    again = tf.keras.estimator.model_to_estimator(keras_model=model,
                                                  model_dir=str(tmp_path / "est"))
    assert again.evaluate(_input(model))["loss"] == pytest.approx(trained["loss"])


def test_functional_two_outputs_from_a_saved_model(tmp_path):
    a = tf.keras.Input((8,), name="a")
    b = tf.keras.Input((3,), name="b")
    h = tf.keras.layers.Dense(8, activation="tanh")(tf.keras.layers.Concatenate()([a, b]))
    cls = tf.keras.layers.Dense(2, activation="softmax", name="cls")(h)
    reg = tf.keras.layers.Dense(1, name="reg")(h)
    model = tf.keras.Model([a, b], [cls, reg])
    model.compile("adam", {"cls": "sparse_categorical_crossentropy", "reg": "mse"},
                  metrics={"cls": ["accuracy"]})
    path = str(tmp_path / "m.h5")
    model.save(path)
    est = tf.keras.estimator.model_to_estimator(keras_model_path=path,
                                                model_dir=str(tmp_path / "est"))
    B = RNG.standard_normal((64, 3)).astype(np.float32)
    labels = {"cls": Y, "reg": X[:, :1] * 2.0}
    fn = tf.estimator.inputs.numpy_input_fn({"a": X, "b": B}, labels, batch_size=16,
                                            num_epochs=None, shuffle=True)
    once = tf.estimator.inputs.numpy_input_fn({"a": X, "b": B}, labels, batch_size=64,
                                              num_epochs=1, shuffle=False)
    est.train(fn, steps=1)
    before = est.evaluate(once, steps=1)
    est.train(fn, steps=30)
    after = est.evaluate(once, steps=1)
    assert set(after) >= {"loss", "cls_acc", "global_step"}
    assert after["loss"] < before["loss"]
    predictions = next(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"a": X, "b": B}, batch_size=64, shuffle=False)))
    assert set(predictions) == {"cls", "reg"} and predictions["cls"].shape == (2,)


def test_bad_arguments():
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match="has not been compiled"):
        tf.keras.estimator.model_to_estimator(keras_model=model)
    with pytest.raises(ValueError, match="Either `keras_model` or `keras_model_path`"):
        tf.keras.estimator.model_to_estimator()
    with pytest.raises(ValueError, match="but not both"):
        tf.keras.estimator.model_to_estimator(keras_model=model, keras_model_path="x.h5")
