"""Keras layers, models and optimizers in object-based checkpoints: TensorFlow's keys
("model/layer_with_weights-0/kernel/...", a subclassed model's attribute names, an
optimizer's "iter", hyperparameters and slots) and training that goes on after a restore
exactly as it would have without one."""

import numpy as np
import pytest

import tensorflux as tf

K = tf.keras
X = np.array([[1, 2], [3, 4], [-1, 0.5], [0, 1]], np.float32)
Y = np.array([[1], [0], [2], [1]], np.float32)

OPTIMIZERS = {
    "adam": lambda: K.optimizers.Adam(0.05),
    "amsgrad": lambda: K.optimizers.Adam(0.05, amsgrad=True),
    "sgd": lambda: K.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "rmsprop": lambda: K.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: K.optimizers.Adagrad(0.1),
    "adadelta": lambda: K.optimizers.Adadelta(1.0),
    "adamax": lambda: K.optimizers.Adamax(0.05),
    "nadam": lambda: K.optimizers.Nadam(0.05),
    "tf.train.Adam": lambda: tf.train.AdamOptimizer(0.05),
    "tf.train.Momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9),
}


def _model(optimizer):
    model = K.Sequential([K.layers.Dense(3, "tanh", input_shape=(2,)),
                          K.layers.BatchNormalization(), K.layers.Dropout(0.0),
                          K.layers.Dense(1)])
    model.compile(optimizer, "mse")
    return model


def _keys(path) -> list:
    return sorted(n for n, _ in tf.train.list_variables(path)
                  if n != "_CHECKPOINTABLE_OBJECT_GRAPH")


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_training_continues_exactly_after_restore(tmp_path, name):
    K.backend.clear_session()
    model = _model(OPTIMIZERS[name]())
    ck = tf.train.Checkpoint(model=model)
    for _ in range(3):
        model.train_on_batch(X, Y)
    path = ck.save(str(tmp_path / "ck"), session=K.backend.get_session())
    want = [model.train_on_batch(X, Y) for _ in range(3)]
    want_weights = model.get_weights()

    K.backend.clear_session()
    model = _model(OPTIMIZERS[name]())
    status = tf.train.Checkpoint(model=model).restore(path)
    model._make_train_function()  # the slots exist before the first step (TF1's idiom)
    status.assert_consumed()
    status.run_restore_ops(K.backend.get_session())
    got = [model.train_on_batch(X, Y) for _ in range(3)]
    np.testing.assert_array_equal(got, want)
    for a, b in zip(model.get_weights(), want_weights, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_model_restored_before_it_is_built(tmp_path):
    K.backend.clear_session()
    model = _model(K.optimizers.Adam(0.05))
    model.train_on_batch(X, Y)
    path = tf.train.Checkpoint(net=model).save(str(tmp_path / "ck"),
                                               session=K.backend.get_session())
    want = model.get_weights()
    K.backend.clear_session()
    unbuilt = K.Sequential([K.layers.Dense(3, "tanh"), K.layers.BatchNormalization(),
                            K.layers.Dropout(0.0), K.layers.Dense(1)])
    status = tf.train.Checkpoint(net=unbuilt).restore(path)
    assert not unbuilt.weights
    unbuilt(K.Input((2,)))  # builds the layers: their weights bind on the next use
    session = K.backend.get_session()
    status.run_restore_ops(session)
    for a, b in zip(unbuilt.get_weights(), want, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(AssertionError, match=r"\(root\)\.net\.optimizer"):
        status.assert_consumed()  # no optimizer here


class _Block(K.layers.Layer):
    def __init__(self):
        super().__init__()
        self.inner = K.layers.Dense(2)
        self.v = tf.Variable(1.0, name="blkv")
        self.lst = [K.layers.Dense(1), K.layers.Dense(1)]

    def call(self, x):
        return self.lst[1](self.lst[0](self.inner(x))) * self.v


class _Subclassed(K.Model):
    def __init__(self):
        super().__init__()
        self.blk = _Block()
        self.out = K.layers.Dense(1)

    def call(self, x):
        return self.out(self.blk(x))


# what TensorFlow 2.21 (tf_keras, graph mode) writes for the models of the next test
KERAS_KEYS = [
    "fm/layer_with_weights-0/bias", "fm/layer_with_weights-0/bias/.OPTIMIZER_SLOT/fm/"
    "optimizer/momentum", "fm/layer_with_weights-0/kernel", "fm/layer_with_weights-0/kernel/"
    ".OPTIMIZER_SLOT/fm/optimizer/momentum", "fm/layer_with_weights-1/bias",
    "fm/layer_with_weights-1/bias/.OPTIMIZER_SLOT/fm/optimizer/momentum",
    "fm/layer_with_weights-1/kernel", "fm/layer_with_weights-1/kernel/.OPTIMIZER_SLOT/fm/"
    "optimizer/momentum", "fm/optimizer/decay", "fm/optimizer/iter",
    "fm/optimizer/learning_rate", "fm/optimizer/momentum", "lstm/cell/bias",
    "lstm/cell/kernel", "lstm/cell/recurrent_kernel", "save_counter", "sm/blk/inner/bias",
    "sm/blk/inner/kernel", "sm/blk/lst/0/bias", "sm/blk/lst/0/kernel", "sm/blk/lst/1/bias",
    "sm/blk/lst/1/kernel", "sm/blk/v", "sm/out/bias", "sm/out/kernel", "tfl/bias",
    "tfl/kernel"]


def test_functional_subclassed_and_tf_layers_keys_are_tensorflows(tmp_path):
    K.backend.clear_session()
    x = K.Input((3,))
    h = K.layers.Dense(4, name="d1")(x)
    functional = K.Model(x, K.layers.Dense(2, name="d2")(K.layers.Activation("relu")(h)))
    functional.compile(K.optimizers.SGD(0.1, momentum=0.9), "mse")
    subclassed = _Subclassed()
    subclassed(tf.zeros([1, 3]))
    tf_layer = tf.layers.Dense(2, name="tfl")
    tf_layer(tf.zeros([1, 3]))
    lstm = K.layers.LSTM(2)
    lstm(tf.zeros([1, 2, 3]))
    functional.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    ck = tf.train.Checkpoint(fm=functional, sm=subclassed, tfl=tf_layer, lstm=lstm)
    path = ck.save(str(tmp_path / "ck"), session=K.backend.get_session())
    want = sorted(k + "/.ATTRIBUTES/VARIABLE_VALUE" for k in KERAS_KEYS)
    assert _keys(path) == want
    reader = tf.train.load_checkpoint(path)
    np.testing.assert_allclose(reader.get_tensor("fm/optimizer/momentum/.ATTRIBUTES/"
                                                 "VARIABLE_VALUE"), 0.9)
    assert reader.get_tensor("fm/optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE") == 1


# per Keras optimizer: TensorFlow's children and slots (tf_keras's legacy optimizers)
OPTIMIZER_LAYOUT = {
    "sgd0": (lambda: K.optimizers.SGD(0.1), ["iter", "decay", "learning_rate", "momentum"],
             []),
    "sgd": (lambda: K.optimizers.SGD(0.1, momentum=0.5),
            ["iter", "decay", "learning_rate", "momentum"], ["momentum"]),
    "adam": (lambda: K.optimizers.Adam(amsgrad=True),
             ["iter", "beta_1", "beta_2", "decay", "learning_rate"], ["m", "v", "vhat"]),
    "rms": (lambda: K.optimizers.RMSprop(momentum=0.2, centered=True),
            ["iter", "decay", "learning_rate", "momentum", "rho"], ["mg", "momentum", "rms"]),
    "rms0": (lambda: K.optimizers.RMSprop(),
             ["iter", "decay", "learning_rate", "momentum", "rho"], ["rms"]),
    "adagrad": (lambda: K.optimizers.Adagrad(), ["iter", "decay", "learning_rate"],
                ["accumulator"]),
    "adadelta": (lambda: K.optimizers.Adadelta(), ["iter", "decay", "learning_rate", "rho"],
                 ["accum_grad", "accum_var"]),
    "adamax": (lambda: K.optimizers.Adamax(),
               ["iter", "beta_1", "beta_2", "decay", "learning_rate"], ["m", "v"]),
    "nadam": (lambda: K.optimizers.Nadam(),
              ["iter", "beta_1", "beta_2", "decay", "learning_rate", "momentum_cache"],
              ["m", "v"]),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZER_LAYOUT))
def test_keras_optimizers_look_like_tensorflows(tmp_path, name):
    make, children, slots = OPTIMIZER_LAYOUT[name]
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        opt = make()
        train = opt.minimize(tf.reduce_sum(v * v), var_list=[v])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            path = tf.train.Checkpoint(o=opt, v=v).save(str(tmp_path / "ck"), session=sess)
    keys = _keys(path)
    assert [k.split("/")[1] for k in keys if k.startswith("o/")] == sorted(children)
    assert sorted(k.split("/")[3] for k in keys if ".OPTIMIZER_SLOT" in k) == slots
    reader = tf.train.load_checkpoint(path)
    assert reader.get_tensor("o/iter/.ATTRIBUTES/VARIABLE_VALUE") == 1
    decay = reader.get_tensor("o/decay/.ATTRIBUTES/VARIABLE_VALUE")
    assert decay == (np.float32(0.004) if name == "nadam" else 0.0)
