"""`save_weights` / `load_weights` against TensorFlow 2.21's Keras (tf_keras, TF1 graph
mode): weights TensorFlow saved load here and predict alike, and the other way round (files
in TensorFlow's format, TENSORFLUX_CHECKPOINT_FORMAT=tensorflow); for a Sequential model
(restored before it is built), a functional and a subclassed one, each saved with a trained
optimizer (whose slots and iterations a compiled model restores: training goes on alike)
and without one; both sides write the same keys."""

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

pytestmark = pytest.mark.oracle

MODELS = """
K = tf.keras
X = np.array([[1, 2], [3, 4], [-1, 0.5], [0, 1]], np.float32)
Y = np.array([[1], [0], [2], [1]], np.float32)
CASES = [(kind, compiled) for kind in ("seq", "fun", "sub") for compiled in (1, 0)]

class Sub(K.Model):
    def __init__(self):
        super().__init__()
        self.hidden = K.layers.Dense(3, activation="tanh")
        self.head = K.layers.Dense(1)

    def call(self, x):
        return self.head(self.hidden(x))

def make(kind, built=True):
    if kind == "seq":
        first = K.layers.Dense(4, activation="tanh",
                               **({"input_shape": (2,)} if built else {}))
        return K.Sequential([first, K.layers.BatchNormalization(), K.layers.Dense(1)])
    if kind == "fun":
        x = K.Input((2,))
        h = K.layers.Dense(4, activation="relu")(x)
        return K.Model(x, K.layers.Dense(1)(K.layers.Concatenate()([h, x])))
    return Sub()

OPTIMIZERS = {"seq": lambda: K.optimizers.Adam(0.05),
              "fun": lambda: K.optimizers.SGD(0.05, momentum=0.9),
              "sub": lambda: K.optimizers.RMSprop(0.01)}

def keys(path):
    return sorted(n for n, _ in tf.train.list_variables(path))
"""

# per case: trains (when compiled), saves, trains two more steps
WRITE = MODELS + """
result = {}
for kind, compiled in CASES:
    K.backend.clear_session()
    model = make(kind)
    if compiled:
        model.compile(OPTIMIZERS[kind](), "mse")
        for _ in range(3):
            model.train_on_batch(X, Y)
    pred = model.predict(X)
    path = "%s/%s_%d/weights" % (DIR, kind, compiled)
    model.save_weights(path)
    rec = {"path": path, "saved": model.get_weights(), "pred": pred, "keys": keys(path),
           "latest": tf.train.latest_checkpoint("%s/%s_%d" % (DIR, kind, compiled))}
    if compiled:
        rec["losses"] = [model.train_on_batch(X, Y) for _ in range(2)]
        rec["after"] = model.get_weights()
    result["%s_%d" % (kind, compiled)] = rec
"""

# per case: loads into a model that has no optimizer (unbuilt where the kind allows) and
# predicts; loads into a compiled one and trains two steps, then saves what it has
READ = MODELS + """
result = {}
for kind, compiled in CASES:
    name = "%s_%d" % (kind, compiled)
    K.backend.clear_session()
    model = make(kind, built=False)
    status = model.load_weights(PATHS[name])
    rec = {"pred": model.predict(X), "restored": model.get_weights()}
    status.assert_existing_objects_matched()
    try:
        status.assert_consumed()
        rec["consumed"] = True
    except AssertionError:
        rec["consumed"] = False
    if compiled:
        K.backend.clear_session()
        model = make(kind, built=False)
        model.compile(OPTIMIZERS[kind](), "mse")
        status = model.load_weights(PATHS[name])
        rec["losses"] = [model.train_on_batch(X, Y) for _ in range(2)]
        status.assert_consumed()
        rec["after"] = model.get_weights()
        rec["iter"] = int(K.backend.get_value(model.optimizer.iterations))
        model.save_weights("%s/%s/weights" % (DIR, name))
        rec["keys"] = keys("%s/%s/weights" % (DIR, name))
    result[name] = rec
"""


def _here(code: str, **names):
    tf.keras.backend.clear_session()
    ns = {"tf": tf, "np": np, **names}
    exec(code, ns)  # noqa: S102 - our own program text
    return ns["result"]


def _check(written: dict, read: dict) -> None:
    for name, w in written.items():
        r = read[name]
        assert w["latest"] == w["path"], name
        assert len(r["restored"]) == len(w["saved"]), name
        for got, want in zip(r["restored"], w["saved"], strict=True):
            np.testing.assert_array_equal(got, want, err_msg=name)
        np.testing.assert_allclose(r["pred"], w["pred"], rtol=1e-5, atol=1e-6, err_msg=name)
        # a checkpoint with an optimizer is not consumed by a model without one
        assert r["consumed"] == (not name.endswith("_1")), name
        if "after" in w:
            assert r["keys"] == w["keys"], name
            assert r["iter"] == 5, name
            np.testing.assert_allclose(r["losses"], w["losses"], rtol=2e-5, err_msg=name)
            for got, want in zip(r["after"], w["after"], strict=True):
                np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=name)


@pytest.mark.timeout(300)
def test_we_load_what_tensorflow_saved(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    (tmp_path / "tf").mkdir()
    (tmp_path / "ours").mkdir()
    theirs = oracle.run_tf(f"DIR = {str(tmp_path / 'tf')!r}\n" + WRITE, timeout=240)
    paths = {name: rec["path"] for name, rec in theirs.items()}
    ours = _here(READ, DIR=str(tmp_path / "ours"), PATHS=paths)
    _check(theirs, ours)


@pytest.mark.timeout(300)
def test_tensorflow_loads_what_we_saved(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    monkeypatch.setenv("TENSORFLUX_CHECKPOINT_FORMAT", "tensorflow")
    (tmp_path / "tf").mkdir()
    (tmp_path / "ours").mkdir()
    ours = _here(WRITE, DIR=str(tmp_path / "ours"))
    paths = {name: rec["path"] for name, rec in ours.items()}
    theirs = oracle.run_tf(f"DIR = {str(tmp_path / 'tf')!r}\nPATHS = {paths!r}\n" + READ,
                           timeout=240)
    _check(ours, theirs)
