"""Keras model configs, JSON and HDF5 files (tensorflux/keras/saving.py): every layer of
the layer table through get_config/from_config with the same outputs, Sequential and
functional models through to_json/model_from_json and save/load_model, Keras's layer
order, the errors, and (oracle) files written by tf_keras loaded here and the other way
round with the same predictions."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle
from tests.keras.test_layers_vs_tensorflow import CASES, INPUTS

h5py = pytest.importorskip("h5py")
keras = tf.keras
L = keras.layers

# The layer-table cases that are one layer applied to one named input (the others add
# TF ops between layers, which a functional model cannot hold in TF1 Keras either).
_ONE_LAYER = re.compile(r"^tf\.keras\.layers\.(?P<layer>.+)\((?P<x>xd|x1|x2|x3|ids)"
                        r"(?:, training=(?P<training>True|False))?\)$")
LAYER_CASES = [c for c in CASES if _ONE_LAYER.match(c) and "Lambda(" not in c]


@pytest.fixture(autouse=True)
def _fresh_session():
    keras.backend.clear_session()
    yield


def _one_layer_model(case, module):
    m = _ONE_LAYER.match(case)
    x = INPUTS[m["x"]]
    inp = module.keras.Input(batch_shape=x.shape, dtype=str(x.dtype), name="x")
    layer = eval("module.keras.layers." + m["layer"], {"module": module,  # noqa: S307
                                                        "tf": module})
    out = layer(inp)
    outs = out if isinstance(out, list) else [out]
    return module.keras.Model(inp, outs), x


def _set_weights(model, seed=0):
    rng = np.random.RandomState(seed)
    model.set_weights([(rng.rand(*w.shape) + 0.5).astype(w.dtype) if w.size else w
                       for w in model.get_weights()])


def _predict(model, x):
    out = model.predict(x)
    return out if isinstance(out, list) else [out]


def test_layer_table_covers_the_layers():
    assert len(LAYER_CASES) >= 60


@pytest.mark.timeout(300)
def test_every_layer_config_round_trips_with_the_same_outputs():
    for case in LAYER_CASES:
        keras.backend.clear_session()
        model, x = _one_layer_model(case, tf)
        _set_weights(model)
        config = model.get_config()
        json.dumps(config)  # JSON-ready
        again = keras.Model.from_config(json.loads(json.dumps(config)))
        assert again.get_config() == config, case
        again.set_weights(model.get_weights())
        for a, b in zip(_predict(model, x), _predict(again, x), strict=True):
            np.testing.assert_array_equal(a, b, err_msg=case)


def _functional():
    a = L.Input((6,), name="in_a")
    b = L.Input((6,), name="in_b")
    shared = L.Dense(5, name="shared", activation="elu")
    h = L.Concatenate(name="cat")([shared(a), shared(b)])
    h2 = L.Add(name="sum")([L.Dense(4, name="d1")(h), L.Dense(4, use_bias=False,
                                                              name="d2")(h)])
    o1 = L.Dense(2, activation="sigmoid", name="o1")(h2)
    o2 = L.Dense(3, activation="softmax", name="o2")(h)
    return keras.Model([a, b], [o1, o2], name="two_heads")


def test_functional_layers_in_keras_order():
    # tf_keras 2.21 orders these layers so (deepest first, ties by the first visit from
    # the outputs); get_weights and HDF5 files follow the order.
    model = _functional()
    assert [layer.name for layer in model.layers] == [
        "in_a", "in_b", "shared", "cat", "d1", "d2", "sum", "o1", "o2"]
    assert [w.name for w in model.weights][:3] == [
        "shared/kernel:0", "shared/bias:0", "d1/kernel:0"]


def test_functional_model_json_and_hdf5_round_trip(tmp_path):
    model = _functional()
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=["mse", "categorical_crossentropy"],
                  metrics=["accuracy"])
    _set_weights(model, 3)
    xs = [np.random.RandomState(1).randn(4, 6).astype(np.float32) for _ in range(2)]
    text = model.to_json()
    config = json.loads(text)
    assert config["class_name"] == "Functional"
    assert config["config"]["input_layers"] == [["in_a", 0, 0], ["in_b", 0, 0]]
    shared = next(c for c in config["config"]["layers"] if c["name"] == "shared")
    assert shared["inbound_nodes"] == [[["in_a", 0, 0, {}]], [["in_b", 0, 0, {}]]]
    cat = next(c for c in config["config"]["layers"] if c["name"] == "cat")
    assert cat["inbound_nodes"] == [[["shared", 0, 0, {}], ["shared", 1, 0, {}]]]
    rebuilt = keras.models.model_from_json(text)
    assert [layer.name for layer in rebuilt.layers] == [layer.name for layer in model.layers]
    assert rebuilt.count_params() == model.count_params()

    path = tmp_path / "model.h5"
    model.save(str(path))
    with h5py.File(path, "r") as f:
        assert json.loads(f.attrs["model_config"])["config"]["name"] == "two_heads"
        training = json.loads(f.attrs["training_config"])
        assert training["loss"] == ["mse", "categorical_crossentropy"]
        assert training["optimizer_config"]["class_name"] == "Adam"
        names = f["model_weights"]["shared"].attrs["weight_names"]
        assert [n.decode() if isinstance(n, bytes) else n for n in names] == [
            "shared/kernel:0", "shared/bias:0"]
    loaded = keras.models.load_model(str(path))
    for a, b in zip(_predict(model, xs), _predict(loaded, xs), strict=True):
        np.testing.assert_array_equal(a, b)
    assert type(loaded.optimizer).__name__ == "Adam"
    ys = [np.zeros((4, 2), np.float32), np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]]
    before = loaded.evaluate(xs, ys, verbose=0)
    loaded.fit(xs, ys, epochs=3, verbose=0)
    assert loaded.evaluate(xs, ys, verbose=0)[0] < before[0]
    uncompiled = keras.models.load_model(str(path), compile=False)
    assert getattr(uncompiled, "optimizer", None) is None


def test_sequential_rnn_model_round_trip(tmp_path):
    model = keras.Sequential([
        L.Embedding(20, 6, input_length=5),
        L.Bidirectional(L.LSTM(4, return_sequences=True)),
        L.TimeDistributed(L.Dense(3)),
        L.GRU(3, reset_after=True, recurrent_activation="sigmoid"),
        L.Dense(2, kernel_regularizer=keras.regularizers.l2(0.01))])
    _set_weights(model, 5)
    x = np.random.RandomState(0).randint(0, 20, (3, 5)).astype(np.int32)
    config = json.loads(model.to_json())["config"]
    assert [c["class_name"] for c in config["layers"]] == [
        "InputLayer", "Embedding", "Bidirectional", "TimeDistributed", "GRU", "Dense"]
    gru = config["layers"][4]["config"]
    assert gru["reset_after"] is True and gru["recurrent_activation"] == "sigmoid"
    path = tmp_path / "rnn.h5"
    keras.models.save_model(model, str(path))
    loaded = keras.models.load_model(str(path))
    np.testing.assert_array_equal(model.predict(x), loaded.predict(x))
    clone = keras.models.clone_model(model)
    assert clone.get_config()["layers"][1:] == [
        {**c, "config": {**c["config"]}} for c in config["layers"][1:]]


def test_weights_by_name_and_mismatches(tmp_path):
    model = _functional()
    _set_weights(model, 2)
    path = str(tmp_path / "w.h5")
    model.save_weights(path)
    kernel = model.get_layer("shared").get_weights()[0]
    keras.backend.clear_session()
    a = L.Input((6,), name="in_a")
    b = L.Input((6,), name="in_b")
    shared = L.Dense(5, name="shared", activation="elu")
    out = L.Dense(7, name="other")(shared(a))
    partial = keras.Model([a, b], [out, shared(b)])
    partial.load_weights(path, by_name=True)
    np.testing.assert_array_equal(partial.get_layer("shared").get_weights()[0], kernel)
    with pytest.raises(ValueError, match="containing 5 layers into a model with 2"):
        partial.load_weights(path)
    mismatched = keras.Model(a, L.Dense(3, name="o1")(a))
    with pytest.raises(ValueError, match="o1"):
        mismatched.load_weights(path, by_name=True)
    mismatched.load_weights(path, by_name=True, skip_mismatch=True)


def test_errors(tmp_path):
    model = _functional()
    weights = str(tmp_path / "w.h5")
    model.save_weights(weights)
    with pytest.raises(ValueError, match="No model config"):
        keras.models.load_model(weights)
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not an hdf5 file at all")
    with pytest.raises(OSError):
        keras.models.load_model(str(bad))

    class Sub(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(2)

        def call(self, x):
            return self.d(x)

    with pytest.raises(NotImplementedError, match="Subclassed"):
        Sub().get_config()
    lam = keras.Sequential([L.Lambda(lambda t: t * 2.0, input_shape=(3,))])
    with pytest.raises(ValueError, match="lambda"):
        lam.to_json()
    text = model.to_json().replace('"Concatenate"', '"MyConcat"')
    with pytest.raises(ValueError, match="Unknown layer: MyConcat.*custom_objects"):
        keras.models.model_from_json(text)
    again = keras.models.model_from_json(text, custom_objects={"MyConcat": L.Concatenate})
    assert again.get_layer("cat").__class__ is L.Concatenate
    gru = {"class_name": "GRU", "config": {"units": 2, "stateful": True}}
    with pytest.raises(ValueError, match="stateful"):
        keras.models.model_from_config(gru)


def test_custom_layer_and_named_lambda_function(tmp_path):
    class Scale(L.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return x * self.factor

    def double(t):
        return t * 2.0

    model = keras.Sequential([L.Dense(3, input_shape=(4,)), Scale(3.0), L.Lambda(double)])
    x = np.ones((2, 4), np.float32)
    path = str(tmp_path / "custom.h5")
    model.save(path)
    with pytest.raises(ValueError, match="Unknown layer: Scale"):
        keras.models.load_model(path)
    with keras.utils.custom_object_scope({"Scale": Scale, "double": double}):
        loaded = keras.models.load_model(path)
    assert loaded.layers[1].factor == 3.0
    np.testing.assert_array_equal(model.predict(x), loaded.predict(x))


# ---- against tf_keras --------------------------------------------------------------------
_ORACLE_CASES = [c for c in LAYER_CASES if "reset_after=True" not in c]
# One oracle program both ways: MODE "save" builds each one-layer model in tf_keras, sets
# seeded weights and saves it (case<i>.h5); "load" loads the files tensorflux wrote.
_TF_PROGRAM = """
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
CASES, DIR, MODE = {cases!r}, {dir!r}, {mode!r}
INPUTS = {{k: np.array(v, d) for k, (v, d) in {inputs!r}.items()}}
preds = []
for i, case in enumerate(CASES):
    with tf.Graph().as_default(), tf.Session().as_default():
        tf.keras.backend.set_session(tf.get_default_session())
        x = INPUTS[{key!r}(case)]
        if MODE == "load":
            model = tf.keras.models.load_model(os.path.join(DIR, "ours%d.h5" % i))
        else:
            name = case.split("(x")[0].split("(ids")[0]
            inp = tf.keras.Input(batch_shape=x.shape, dtype=str(x.dtype), name="x")
            out = eval(name + "(inp)", {{"tf": tf, "inp": inp}})
            model = tf.keras.Model(inp, out if isinstance(out, list) else [out])
            rng = np.random.RandomState(i)
            model.set_weights([(rng.rand(*w.shape) + 0.5).astype(w.dtype)
                               for w in model.get_weights()])
            model.save(os.path.join(DIR, "case%d.h5" % i))
        out = model.predict(x)
        preds.append([np.asarray(p) for p in (out if isinstance(out, list) else [out])])
result = preds
"""


def _input_key(case):
    return _ONE_LAYER.match(case)["x"]


def _oracle_program(mode, cases, directory):
    inputs = {k: (v.tolist(), str(v.dtype)) for k, v in INPUTS.items()}
    key_fn = ("(lambda c: __import__('re').match(" + repr(_ONE_LAYER.pattern) +
              ", c)['x'])")
    return _TF_PROGRAM.format(cases=cases, dir=str(directory), inputs=inputs, mode=mode,
                              key="KEY").replace("'KEY'", key_fn)


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tf_keras_files_load_here_and_ours_load_there(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    theirs = oracle.run_tf(_oracle_program("save", _ORACLE_CASES, tmp_path), timeout=400)
    ours_written = []
    for i, case in enumerate(_ORACLE_CASES):
        x = INPUTS[_input_key(case)]
        keras.backend.clear_session()
        model = keras.models.load_model(str(tmp_path / f"case{i}.h5"))
        for a, b in zip(_predict(model, x), theirs[i], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=case)
        keras.backend.clear_session()
        model, x = _one_layer_model(case, tf)
        _set_weights(model, i)
        model.save(str(tmp_path / f"ours{i}.h5"))
        ours_written.append(_predict(model, x))
    loaded_there = oracle.run_tf(_oracle_program("load", _ORACLE_CASES, tmp_path),
                                 timeout=400)
    for case, ours, there in zip(_ORACLE_CASES, ours_written, loaded_there, strict=True):
        for a, b in zip(ours, there, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=case)


def test_model_checkpoint_writes_whole_models(tmp_path):
    model = keras.Sequential([L.Dense(3, activation="relu", input_shape=(4,)), L.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((8, 4), np.float32), np.zeros((8, 1), np.float32)
    path = str(tmp_path / "m.{epoch:02d}.h5")
    model.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.ModelCheckpoint(path)])
    loaded = keras.models.load_model(str(tmp_path / "m.02.h5"))
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    assert type(loaded.optimizer).__name__ == "SGD"


def test_zero_padding_1d_takes_left_and_right():
    x = L.Input(batch_shape=(1, 3, 2))
    assert L.ZeroPadding1D((1, 2))(x).shape.as_list() == [1, 6, 2]
    assert L.ZeroPadding1D(2)(x).shape.as_list() == [1, 7, 2]


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop", "sgd", "nadam", "adagrad",
                                       "adadelta", "adamax"])
def test_training_resumes_from_a_saved_model_exactly(tmp_path, optimizer):
    rng = np.random.RandomState(0)
    x = rng.randn(32, 5).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = keras.Sequential([L.Dense(8, activation="tanh", input_shape=(5,)),
                              L.Dense(1, activation="sigmoid")])
    opt = {"sgd": keras.optimizers.SGD(0.1, momentum=0.9)}.get(optimizer, optimizer)
    model.compile(optimizer=opt, loss="binary_crossentropy")
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        assert len(f["optimizer_weights"].attrs["weight_names"]) >= 2
    loaded = keras.models.load_model(path)
    for m in (model, loaded):
        m.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_sgd_accumulators_of_earlier_versions_load_as_velocities(tmp_path):
    """Files written before Keras's SGD kept Keras's velocity in its "momentum" slots (no
    mark on `optimizer_weights`) held tf.train's accumulators: they load as -lr * accum,
    and training goes on as from a file written now."""
    rng = np.random.RandomState(0)
    x = rng.randn(16, 5).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = keras.Sequential([L.Dense(4, activation="tanh", input_shape=(5,)),
                              L.Dense(1, activation="sigmoid")])
    model.compile(keras.optimizers.SGD(0.1, momentum=0.9, decay=0.01), "binary_crossentropy")
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    new, old = str(tmp_path / "new.h5"), str(tmp_path / "old.h5")
    model.save(new)
    model.save(old)
    with h5py.File(old, "r+") as f:
        group = f["optimizer_weights"]
        assert group.attrs["tensorflux_sgd_velocity"]
        del group.attrs["tensorflux_sgd_velocity"]
        names = [n.decode() if isinstance(n, bytes) else n
                 for n in group.attrs["weight_names"]]
        lr = group[names[1]][()] / (1 + 0.01 * group[names[0]][()])
        for name in names[2:]:  # the slots, after the iterations and the learning rate
            group[name][...] = group[name][()] / -lr
    results = []
    for path in (new, old):
        loaded = keras.models.load_model(path)
        loaded.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
        results.append(loaded.get_weights())
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("optimizer", [
    "SGD(0.1, momentum=0.9, nesterov=True)", "Adam(beta_1=0.5, amsgrad=True)",
    "RMSprop(rho=0.8, momentum=0.1, centered=True)", "Adagrad(initial_accumulator_value=0.2)",
    "Adadelta(rho=0.9, epsilon=1e-6)", "Adamax(beta_2=0.99)", "Nadam(schedule_decay=0.01)"])
def test_optimizer_configs_keep_every_hyperparameter(optimizer):
    opt = eval("keras.optimizers." + optimizer, {"keras": keras})  # noqa: S307
    config = keras.optimizers.serialize(opt)
    assert keras.optimizers.serialize(keras.optimizers.deserialize(config)) == config


def test_loss_objects_keep_their_options(tmp_path):
    model = keras.Sequential([L.Dense(3, input_shape=(4,))])
    model.compile(optimizer="sgd",
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True))
    x = np.random.RandomState(0).randn(6, 4).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1, 2]]
    path = str(tmp_path / "m.h5")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))
