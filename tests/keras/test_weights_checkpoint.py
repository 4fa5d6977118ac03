"""`Model.save_weights` / `load_weights` in TensorFlow's object-based format (as tf_keras in
graph mode): keys and state file, round trips of Sequential, functional and subclassed
models with and without an optimizer (into models built later, training going on exactly),
load statuses, the format rules and errors, name-keyed checkpoints of earlier tensorflux
versions, ModelCheckpoint. Against TensorFlow: test_weights_vs_tensorflow.py."""

import os

import numpy as np
import pytest

import tensorflux as tf

K = tf.keras
L = K.layers
X = np.array([[1, 2], [3, 4], [-1, 0.5], [0, 1]], np.float32)
Y = np.array([[1], [0], [2], [1]], np.float32)


class _Sub(K.Model):
    def __init__(self):
        super().__init__()
        self.hidden = L.Dense(3, activation="tanh")
        self.head = L.Dense(1)

    def call(self, x):
        return self.head(self.hidden(x))


def _make(kind, built=True):
    if kind == "seq":
        first = L.Dense(4, activation="tanh", **({"input_shape": (2,)} if built else {}))
        return K.Sequential([first, L.BatchNormalization(), L.Dense(1)])
    if kind == "fun":
        x = K.Input((2,))
        h = L.Dense(4, activation="relu")(x)
        return K.Model(x, L.Dense(1)(L.Concatenate()([h, x])))
    return _Sub()


OPTIMIZERS = {"seq": lambda: K.optimizers.Adam(0.05),
              "fun": lambda: K.optimizers.SGD(0.05, momentum=0.9),
              "sub": lambda: K.optimizers.RMSprop(0.01)}


def _keys(path) -> list:
    return sorted(n for n, _ in tf.train.list_variables(path))


def _same(got, want) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["seq", "fun", "sub"])
def test_round_trip_with_the_optimizer_into_an_unbuilt_model(tmp_path, kind):
    K.backend.clear_session()
    model = _make(kind)
    model.compile(OPTIMIZERS[kind](), "mse")
    for _ in range(3):
        model.train_on_batch(X, Y)
    path = str(tmp_path / "ck" / "weights")
    assert model.save_weights(path) is None
    saved, pred = model.get_weights(), model.predict(X)
    want = [model.train_on_batch(X, Y) for _ in range(3)]
    want_weights = model.get_weights()

    K.backend.clear_session()
    model = _make(kind, built=False)
    model.compile(OPTIMIZERS[kind](), "mse")
    status = model.load_weights(path)
    with pytest.raises(AssertionError, match=r"Unresolved object in checkpoint"):
        status.assert_consumed()  # the optimizer's state waits for the train function
    np.testing.assert_array_equal(model.predict(X), pred)  # builds an unbuilt model
    _same(model.get_weights(), saved)
    got = [model.train_on_batch(X, Y) for _ in range(3)]  # slots and iterations restored
    assert status.assert_consumed() is status
    np.testing.assert_array_equal(got, want)
    _same(model.get_weights(), want_weights)


@pytest.mark.parametrize("kind", ["seq", "fun", "sub"])
def test_round_trip_without_an_optimizer(tmp_path, kind):
    K.backend.clear_session()
    model = _make(kind)
    pred = model.predict(X)
    path = str(tmp_path / "w")
    model.save_weights(path)
    assert not any("optimizer" in k for k in _keys(path))
    K.backend.clear_session()
    model = _make(kind, built=False)
    status = model.load_weights(path)
    np.testing.assert_array_equal(model.predict(X), pred)
    status.assert_consumed().assert_existing_objects_matched().assert_nontrivial_match()


def test_keys_and_state_file_are_kerass(tmp_path):
    K.backend.clear_session()
    model = _make("seq")
    model.compile(K.optimizers.Adam(0.05), "mse")
    model.train_on_batch(X, Y)
    model.save_weights(str(tmp_path / "w"))
    keys = _keys(str(tmp_path / "w"))
    layer = "layer_with_weights-0/kernel"
    assert "_CHECKPOINTABLE_OBJECT_GRAPH" in keys and "save_counter" not in str(keys)
    assert f"{layer}/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert f"{layer}/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "w"\nall_model_checkpoint_paths: "w"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "w")
    model.save_weights(str(tmp_path / "v"))  # the state file names the latest only
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [
        str(tmp_path / "v")]


def test_old_name_keyed_checkpoints_still_load(tmp_path):
    K.backend.clear_session()
    model = _make("fun")
    model.compile(K.optimizers.Adam(0.05), "mse")
    model.train_on_batch(X, Y)
    saved = model.get_weights()
    # what tensorflux's save_weights wrote before: a Saver keyed by the weights' names
    saver = tf.train.Saver(var_list={v.op.name: v for v in model.weights},
                           save_relative_paths=True)
    path = str(tmp_path / "old")
    saver.save(K.backend.get_session(), path, write_meta_graph=False)
    assert "_CHECKPOINTABLE_OBJECT_GRAPH" not in _keys(path)
    model.set_weights([np.zeros_like(w) for w in saved])
    status = model.load_weights(path)
    _same(model.get_weights(), saved)
    status.assert_consumed().assert_existing_objects_matched()
    with pytest.raises(NotImplementedError, match="by_name=True"):
        model.load_weights(path, by_name=True)
    with pytest.raises(ValueError, match="keyed by variable names"):
        _Sub().load_weights(path)  # no weights yet to find by name


def test_formats_and_errors(tmp_path):
    K.backend.clear_session()
    model = _make("seq")
    weights = model.get_weights()
    with pytest.raises(ValueError, match=r'looks like an HDF5 file. Omit the ".h5"'):
        model.save_weights(str(tmp_path / "w.h5"), save_format="tf")
    with pytest.raises(ValueError, match=r"Unknown format. Received: `save_format`=xx"):
        model.save_weights(str(tmp_path / "w"), save_format="xx")
    model.save_weights(tmp_path / "ck", save_format="tensorflow")  # a PathLike too
    model.save_weights(str(tmp_path / "h5file"), save_format="h5")
    assert not (tmp_path / "h5file.index").exists()
    for path in ("ck", "h5file"):  # each format found by looking at the files
        model.set_weights([np.zeros_like(w) for w in weights])
        model.load_weights(str(tmp_path / path))
        _same(model.get_weights(), weights)
    with pytest.raises(ValueError, match="skip_mismatch can only be set to True when "
                                         "by_name is True"):
        model.load_weights(str(tmp_path / "h5file"), skip_mismatch=True)
    with pytest.raises(NotImplementedError, match="loaded based on topology"):
        model.load_weights(str(tmp_path / "ck"), by_name=True)
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files"):
        model.load_weights(str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="into a subclassed Model which has not created"):
        _Sub().load_weights(str(tmp_path / "h5file"))


class _OtherSub(K.Model):
    def __init__(self):
        super().__init__()
        self.zz = L.Dense(3)

    def call(self, x):
        return self.zz(x)


def test_a_checkpoint_of_another_model_matches_nothing(tmp_path):
    K.backend.clear_session()
    sub = _Sub()
    sub.predict(X)
    sub.save_weights(str(tmp_path / "w"))
    with pytest.raises(AssertionError, match=r"Nothing except the root object matched.*"
                                              r"dense_\d+/kernel"):
        _make("seq").load_weights(str(tmp_path / "w"))
    with pytest.raises(AssertionError, match="Nothing to load"):
        _OtherSub().load_weights(str(tmp_path / "w"))  # nothing with values yet


def test_a_model_called_after_load_weights_restores_in_the_session_it_had(tmp_path):
    K.backend.clear_session()
    model = _Sub()
    want = model.predict(X)
    model.save_weights(str(tmp_path / "w"))
    K.backend.clear_session()
    sess = K.backend.get_session()
    model = _Sub()
    model.load_weights(str(tmp_path / "w"))
    out = model(tf.constant(X))  # the weights are made here and restored at once
    np.testing.assert_array_equal(sess.run(out), want)


def test_model_checkpoint_writes_object_based_weights(tmp_path):
    K.backend.clear_session()
    model = _make("fun")
    model.compile(K.optimizers.SGD(0.05, momentum=0.9), "mse")
    pattern = str(tmp_path / "ck" / "w.{epoch:02d}")
    model.fit(X, Y, epochs=3, verbose=0, shuffle=False,
              callbacks=[K.callbacks.ModelCheckpoint(pattern, save_weights_only=True)])
    latest = tf.train.latest_checkpoint(str(tmp_path / "ck"))
    assert latest == str(tmp_path / "ck" / "w.03")
    assert "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE" in _keys(latest)
    saved = model.get_weights()
    K.backend.clear_session()
    fresh = _make("fun")
    fresh.load_weights(latest).expect_partial()
    _same(fresh.get_weights(), saved)
    assert sorted(os.listdir(tmp_path / "ck"))[0] == "checkpoint"
