"""tf.keras models in graph mode: Sequential, functional and subclassed models; compile,
fit (History, validation, callbacks), evaluate, predict, the batch methods, weights I/O,
and the errors Keras raises for bad input."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

keras = tf.keras
L = keras.layers


@pytest.fixture(autouse=True)
def _fresh_graph():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    rng = np.random.RandomState(0)
    order = rng.permutation(len(x))
    x, y = x[order], d.target[order]
    return (x[:1400], y[:1400]), (x[1400:], y[1400:])


def _mlp(**compile_kwargs):
    model = keras.Sequential([L.Dense(8, activation="relu", input_shape=(4,)),
                              L.Dense(3, activation="softmax")])
    model.compile(**{"optimizer": "sgd", "loss": "categorical_crossentropy",
                     "metrics": ["accuracy"], **compile_kwargs})
    return model


def _data(n=20, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 4).astype(np.float32)
    y = keras.utils.to_categorical(rng.randint(0, 3, n), 3)
    return x, y


def test_sequential_on_digits_reaches_high_accuracy(digits):
    (x, y), (xt, yt) = digits
    tf.set_random_seed(1)
    np.random.seed(1)  # fit's shuffles
    model = keras.Sequential([L.Dense(32, activation="relu", input_shape=(64,)),
                              L.Dropout(0.1), L.Dense(10, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(0.005), loss="categorical_crossentropy",
                  metrics=["acc"])
    history = model.fit(x, keras.utils.to_categorical(y, 10), batch_size=32, epochs=12,
                        verbose=0, validation_split=0.1)
    assert history.history["acc"][-1] > history.history["acc"][0]
    loss, acc = model.evaluate(xt, keras.utils.to_categorical(yt, 10), verbose=0)
    assert acc > 0.9, acc
    assert set(history.history) == {"loss", "acc", "val_loss", "val_acc"}


def test_functional_cnn_on_digits_with_sparse_labels(digits):
    (x, y), (xt, yt) = digits
    tf.set_random_seed(2)
    np.random.seed(2)
    inp = keras.Input(shape=(8, 8, 1))
    h = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
    h = L.BatchNormalization(momentum=0.9)(h)
    h = L.MaxPooling2D()(h)
    h = L.Flatten()(h)
    out = L.Dense(10, activation="softmax")(h)
    model = keras.Model(inp, out)
    model.compile(keras.optimizers.Adam(lr=0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x.reshape(-1, 8, 8, 1), y, batch_size=64, epochs=6, verbose=0)
    _, acc = model.evaluate(xt.reshape(-1, 8, 8, 1), yt, verbose=0)
    assert acc > 0.9, acc
    # the batch norm's moving statistics were updated by fit
    moving_mean = model.get_layer("batch_normalization").moving_mean
    assert np.abs(keras.backend.get_value(moving_mean)).sum() > 0


def test_fit_evaluate_predict_shapes_and_history():
    model = _mlp()
    x, y = _data(20)
    hist = model.fit(x, y, batch_size=8, epochs=3, verbose=0, validation_data=_data(6, 1))
    assert hist is model.history and hist.epoch == [0, 1, 2]
    assert list(hist.history) == ["loss", "acc", "val_loss", "val_acc"]  # TF1 Keras names
    assert all(len(v) == 3 for v in hist.history.values())
    assert hist.params["epochs"] == 3 and hist.params["samples"] == 20
    assert model.metrics_names == ["loss", "acc"]
    loss, acc = model.evaluate(x, y, batch_size=7, verbose=0)
    assert 0.0 <= acc <= 1.0 and loss > 0
    assert model.predict(x, batch_size=6).shape == (20, 3)
    np.testing.assert_allclose(model.predict(x).sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(model.predict_on_batch(x[:5]), model.predict(x[:5]),
                               rtol=1e-6)
    before = model.test_on_batch(x, y)
    after = model.train_on_batch(x, y)
    assert len(before) == 2 and len(after) == 2
    # evaluate equals the batch-size-weighted mean of its batches
    whole = model.test_on_batch(x, y)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=7, verbose=0), whole,
                               rtol=1e-5)


def test_loss_only_model_returns_scalars():
    model = keras.Sequential([L.Dense(1, input_dim=4)])
    model.compile("rmsprop", "mse")
    x = np.random.rand(10, 4).astype(np.float32)
    y = x.sum(axis=1)  # rank 1 target for a [batch, 1] output
    assert isinstance(model.train_on_batch(x, y), float)
    assert isinstance(model.evaluate(x, y, verbose=0), float)


def test_sequential_built_from_data_and_layer_names():
    model = keras.Sequential()
    model.add(L.Dense(5, activation="tanh"))
    model.add(L.Dense(2))
    assert not model.built
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32), verbose=0)
    assert [w.name for w in model.weights] == ["dense/kernel:0", "dense/bias:0",
                                               "dense_1/kernel:0", "dense_1/bias:0"]
    assert [layer.name for layer in model.layers] == ["dense", "dense_1"]
    assert model.get_layer("dense_1") is model.layers[1]
    assert model.get_layer(index=0) is model.layers[0]
    with pytest.raises(ValueError, match="No such layer"):
        model.get_layer("nope")


def test_functional_model_multi_io_and_calling_a_model():
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    h = L.concatenate([L.Dense(4)(a), b])
    out1 = L.Dense(1, name="reg")(h)
    out2 = L.Dense(3, activation="softmax", name="cls")(h)
    model = keras.Model([a, b], [out1, out2])
    assert model.input_names == ["a", "b"] and model.output_names == ["reg", "cls"]
    model.compile("adam", {"reg": "mse", "cls": "categorical_crossentropy"},
                  metrics={"cls": "acc"}, loss_weights=[1.0, 0.5])
    assert model.metrics_names == ["loss", "reg_loss", "cls_loss", "cls_acc"]
    xa, xb = np.random.rand(6, 3), np.random.rand(6, 2)
    ys = [np.random.rand(6, 1), keras.utils.to_categorical([0, 1, 2, 0, 1, 2], 3)]
    values = model.train_on_batch({"a": xa, "b": xb}, ys)
    np.testing.assert_allclose(values[0], values[1] + 0.5 * values[2], rtol=1e-5)
    r, c = model.predict([xa, xb])
    assert r.shape == (6, 1) and c.shape == (6, 3)
    # a model called on new tensors shares its weights
    pa, pb = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 2])
    r2, c2 = model([pa, pb])
    sess = keras.backend.get_session()
    np.testing.assert_allclose(sess.run(c2, {pa: xa, pb: xb}), c, rtol=1e-5)
    assert len(tf.trainable_variables()) == 6


def test_nested_sequential_inside_functional():
    inner = keras.Sequential([L.Dense(4, activation="relu", input_shape=(3,)), L.Dense(2)])
    x = keras.Input((3,))
    model = keras.Model(x, L.Activation("softmax")(inner(x)))
    model.compile("sgd", "categorical_crossentropy")
    assert len(model.trainable_weights) == 4
    model.fit(np.random.rand(8, 3), keras.utils.to_categorical([0, 1] * 4, 2), verbose=0)


def test_subclassed_model_trains():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = L.Dense(8, activation="relu")
            self.drop = L.Dropout(0.2)
            self.out = L.Dense(3, activation="softmax")

        def call(self, inputs, training=None):
            return self.out(self.drop(self.hidden(inputs), training=training))

    model = Net()
    model.compile("adam", "categorical_crossentropy", metrics=["acc"])
    x, y = _data(24)
    hist = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert len(hist.history["loss"]) == 2
    assert len(model.trainable_weights) == 4
    assert model.trainable_weights[0].name == "net/dense/kernel:0"
    assert model.predict(x).shape == (24, 3)


def test_callbacks_early_stopping_lambda_scheduler_terminate(tmp_path):
    model = _mlp()
    x, y = _data(16)
    seen = []
    lr_values = []
    callbacks = [
        keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(e)),
        keras.callbacks.LearningRateScheduler(lambda e: 0.1 / (e + 1)),
        keras.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: lr_values.append(
            keras.backend.get_value(model.optimizer.lr))),
        keras.callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=100.0),
    ]
    hist = model.fit(x, y, epochs=10, verbose=0, callbacks=callbacks)
    assert seen == [0, 1] and hist.epoch == [0, 1]  # no improvement of 100: stop at once
    np.testing.assert_allclose(lr_values, [0.1, 0.05], rtol=1e-6)
    assert hist.history["lr"] == pytest.approx([0.1, 0.05])

    class NaNAt(keras.callbacks.Callback):
        def on_batch_end(self, batch, logs=None):
            logs["loss"] = float("nan")

    hist = model.fit(x, y, epochs=5, batch_size=4, verbose=0,
                     callbacks=[NaNAt(), keras.callbacks.TerminateOnNaN()])
    assert hist.epoch == [0]


def test_model_checkpoint_and_weights_round_trip(tmp_path):
    model = _mlp()
    x, y = _data(12)
    path = str(tmp_path / "w.{epoch:02d}")
    model.fit(x, y, epochs=2, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(path, save_weights_only=True)])
    assert (tmp_path / "w.02.index").exists()
    saved = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in saved])
    assert all(not w.any() for w in model.get_weights())
    model.load_weights(str(tmp_path / "w.02"))
    for a, b in zip(model.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="weight list of length 1"):
        model.set_weights([saved[0]])
    model.save_weights(str(tmp_path / "w.h5"))  # Keras's HDF5 layout (test_saving.py)
    model.set_weights([np.zeros_like(w) for w in saved])
    model.load_weights(str(tmp_path / "w.h5"))
    for a, b in zip(model.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(a, b)


def test_sequence_and_generator_inputs():
    x, y = _data(20)

    class Batches(keras.utils.Sequence):
        def __init__(self):
            self.epochs_ended = 0

        def __len__(self):
            return 4

        def __getitem__(self, i):
            return x[i * 5:(i + 1) * 5], y[i * 5:(i + 1) * 5]

        def on_epoch_end(self):
            self.epochs_ended += 1

    model = _mlp()
    seq = Batches()
    hist = model.fit(seq, epochs=2, verbose=0)
    assert seq.epochs_ended == 2 and len(hist.history["loss"]) == 2

    def gen():
        while True:
            yield x[:5], y[:5]

    model.fit_generator(gen(), steps_per_epoch=3, epochs=1, verbose=0)
    assert model.predict(Batches()).shape == (20, 3)


def test_sample_and_class_weights():
    model = _mlp()
    x, y = _data(10)
    zero = model.test_on_batch(x, y, sample_weight=np.zeros(10))
    assert zero[0] == 0.0
    model.fit(x, y, class_weight={0: 1.0, 1: 2.0, 2: 0.5}, verbose=0)


@pytest.mark.parametrize("bad, error, match", [
    (dict(x=np.zeros((5, 3)), y=np.zeros((5, 3))), ValueError,
     r"expected dense_input to have shape \(4,\) but got array with shape \(3,\)"),
    (dict(x=np.zeros((5, 4, 1)), y=np.zeros((5, 3))), ValueError, "to have 2 dimensions"),
    (dict(x=np.zeros((5, 4)), y=np.zeros((5, 2))), ValueError,
     r"expected dense_1 to have shape \(3,\)"),
    (dict(x=np.zeros((5, 4)), y=np.zeros((6, 3))), ValueError,
     "Found 5 input samples and 6 target samples"),
    (dict(x=[np.zeros((5, 4)), np.zeros((5, 4))], y=np.zeros((5, 3))), ValueError,
     "Expected to see 1 array"),
])
def test_fit_rejects_data_that_does_not_fit(bad, error, match):
    model = _mlp()
    with pytest.raises(error, match=match):
        model.fit(verbose=0, **bad)


def test_compile_rejects_unknown_names():
    model = keras.Sequential([L.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match="Unknown optimizer: adamw"):
        model.compile("adamw", "mse")
    with pytest.raises(ValueError, match="Unknown loss function: msee"):
        model.compile("adam", "msee")
    with pytest.raises(TypeError, match="Invalid keyword"):
        model.compile("adam", "mse", bogus=1)
    with pytest.raises(ValueError, match="Unknown metric function: nope"):
        model.compile("adam", "mse", metrics=["nope"])
    with pytest.raises(RuntimeError, match="must compile"):
        keras.Sequential([L.Dense(2, input_shape=(3,))]).fit(np.zeros((2, 3)),
                                                             np.zeros((2, 2)))


@pytest.mark.parametrize("make", [
    lambda: tf.train.GradientDescentOptimizer(0.5),
    lambda: keras.optimizers.SGD(0.1, 0.9, True),
    lambda: keras.optimizers.RMSprop(),
    lambda: keras.optimizers.Adagrad(0.1),
    lambda: keras.optimizers.Adadelta(1.0),
    lambda: keras.optimizers.Adam(lr=0.01, decay=0.01, clipnorm=1.0),
], ids=["tf.train", "sgd", "rmsprop", "adagrad", "adadelta", "adam"])
def test_tf_train_optimizer_and_keras_optimizers_train(make):
    x, y = _data(30)
    model = _mlp(optimizer=make())
    first = model.evaluate(x, y, verbose=0)[0]
    model.fit(x, y, epochs=5, batch_size=30, verbose=0)
    assert model.evaluate(x, y, verbose=0)[0] < first


def test_keras_optimizer_defaults_and_learning_rate_variable():
    adam = keras.optimizers.Adam()
    assert adam.get_config()["learning_rate"] == 0.001 and adam._epsilon == 1e-7
    assert keras.optimizers.SGD(lr=0.2).get_config()["learning_rate"] == 0.2
    model = _mlp(optimizer=adam)
    keras.backend.set_value(model.optimizer.lr, 0.5)
    assert keras.backend.get_value(model.optimizer.learning_rate) == pytest.approx(0.5)
    x, y = _data(8)
    model.train_on_batch(x, y)
    assert keras.backend.get_value(model.optimizer.iterations) == 1
    with pytest.raises(TypeError, match="Unexpected keyword"):
        keras.optimizers.Adam(bogus=1)


def test_summary_lists_layers(capsys):
    model = _mlp()
    model.summary()
    text = capsys.readouterr().out
    assert 'Model: "sequential"' in text and "dense_1 (Dense)" in text
    assert "Total params: 67" in text


def test_regularizers_and_constraints_in_training():
    model = keras.Sequential([L.Dense(3, input_shape=(4,), kernel_regularizer="l2",
                                      kernel_constraint=keras.constraints.max_norm(0.5),
                                      activity_regularizer=keras.regularizers.l1(0.01))])
    model.compile("sgd", "mse")
    assert len(model.losses) == 2
    x = np.random.rand(8, 4).astype(np.float32)
    model.fit(x, np.random.rand(8, 3) * 10, epochs=3, verbose=0)
    kernel = keras.backend.get_value(model.layers[0].kernel)
    assert np.all(np.linalg.norm(kernel, axis=0) <= 0.5 + 1e-5)


def test_sequence_tagger_and_text_classifier():
    seqs = keras.preprocessing.sequence.pad_sequences([[1, 5, 3], [4, 2], [7, 8, 9, 1]] * 4,
                                                      maxlen=5)
    tagger = keras.Sequential([L.Embedding(10, 4, input_length=5),
                               L.Bidirectional(L.LSTM(3, return_sequences=True)),
                               L.TimeDistributed(L.Dense(2, activation="softmax"))])
    tagger.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    tags = np.random.RandomState(0).randint(0, 2, (12, 5))
    tagger.fit(seqs, tags, epochs=1, verbose=0, sample_weight=np.ones(12))
    assert tagger.predict(seqs).shape == (12, 5, 2)
    assert len(tagger.evaluate(seqs, tags[..., None], verbose=0)) == 2
    clf = keras.Sequential([L.Embedding(10, 8, input_length=5), L.Conv1D(4, 3),
                            L.GlobalMaxPooling1D(), L.Dense(1, activation="sigmoid")])
    clf.compile("rmsprop", "binary_crossentropy", metrics=["acc"])
    clf.fit(seqs, np.arange(12) % 2, epochs=1, verbose=0)
    assert clf.predict_classes(seqs).shape == (12, 1)


def test_an_unbuilt_sequential_called_on_an_input():
    """The layers' calls inside the model's call each record into their own recorder (an
    empty recorder once removed the enclosing one)."""
    model = keras.Sequential([L.Dense(3, "tanh"), L.BatchNormalization(), L.Dense(1)])
    out = model(keras.Input((2,)))
    assert out.shape.as_list() == [None, 1]
    assert len(model.weights) == 8 and len(model.updates) == 2


def test_a_private_layer_class_gets_tensorflows_name():
    class _Block(keras.layers.Layer):
        pass

    assert _Block().name == "private__block"  # as tf_keras names it


def _sparse_and_dense_models(keras):
    """The same two-layer model on a sparse Input and on a dense one, equal weights."""
    models = []
    for sparse in (True, False):
        inp = keras.Input(shape=(6,), sparse=sparse)
        h = keras.layers.Dense(4, activation="relu")(inp)
        models.append(keras.Model(inp, keras.layers.Dense(3, activation="softmax")(h)))
        models[-1].compile("sgd", "sparse_categorical_crossentropy", metrics=["acc"])
    models[0].set_weights(models[1].get_weights())
    return models


def test_sparse_input_trains_as_its_dense_twin():
    """Keras's sparse Input (a sparse placeholder; Dense multiplies it with
    sparse_tensor_dense_matmul) fed SparseTensorValues or SciPy matrices, batch by batch:
    the same predictions, losses and weights as the dense model on the densified data."""
    keras = tf.keras
    rng = np.random.RandomState(0)
    dense = ((rng.rand(10, 6) < 0.3) * rng.rand(10, 6)).astype(np.float32)
    idx = np.argwhere(dense)
    x = tf.SparseTensorValue(idx, dense[dense != 0], dense.shape)
    y = rng.randint(0, 3, 10)
    with tf.Graph().as_default():
        sparse_model, dense_model = _sparse_and_dense_models(keras)
        assert isinstance(sparse_model.inputs[0], tf.SparseTensor)
        np.testing.assert_allclose(sparse_model.predict(x, batch_size=4),
                                   dense_model.predict(dense, batch_size=4), rtol=1e-6)
        got = sparse_model.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
        want = dense_model.fit(dense, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
        np.testing.assert_allclose(got.history["loss"], want.history["loss"], rtol=1e-5)
        for a, b in zip(sparse_model.get_weights(), dense_model.get_weights(), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(sparse_model.evaluate(x, y, verbose=0),
                                   dense_model.evaluate(dense, y, verbose=0), rtol=1e-5)
        scipy_sparse = pytest.importorskip("scipy.sparse")
        np.testing.assert_allclose(sparse_model.predict(scipy_sparse.csr_matrix(dense)),
                                   dense_model.predict(dense), rtol=1e-6)
        assert sparse_model.layers[0].get_config()["sparse"] is True
