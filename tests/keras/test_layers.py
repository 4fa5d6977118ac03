"""tf.keras pieces against NumPy: activations, initializers, regularizers, constraints,
backend functions, layer outputs (recurrent steps written out in NumPy), finite-difference
gradients of the layers with new math, utils, and the errors Keras raises."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

keras = tf.keras
K = keras.backend
L = keras.layers
_rng = np.random.RandomState(3)
X = _rng.randn(4, 5).astype(np.float32)


@pytest.fixture(autouse=True)
def _fresh_graph():
    K.clear_session()
    yield
    K.clear_session()


def _run(t, feed=None):
    return K.get_session().run(t, feed)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0), "sigmoid": _sigmoid, "tanh": np.tanh,
    "softmax": _softmax, "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 *
                                                   (np.exp(x) - 1)),
    "softplus": lambda x: np.log1p(np.exp(x)), "softsign": lambda x: x / (1 + np.abs(x)),
    "linear": lambda x: x, "exponential": np.exp,
    "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0, 1),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_match_numpy(name):
    fn = keras.activations.get(name)
    np.testing.assert_allclose(_run(fn(tf.constant(X))), ACTIVATIONS[name](X), rtol=1e-5,
                               atol=1e-6)
    assert keras.activations.get(fn) is fn


def test_activation_lookup_errors():
    with pytest.raises(ValueError, match="Unknown activation function: 'nope'"):
        keras.activations.get("nope")
    with pytest.raises(TypeError, match="Could not interpret activation"):
        keras.activations.get(3)
    with pytest.raises(ValueError, match="1D"):
        keras.activations.softmax(tf.constant([1.0, 2.0]))


@pytest.mark.parametrize("name, check", [
    ("zeros", lambda v: np.all(v == 0)), ("ones", lambda v: np.all(v == 1)),
    ("random_normal", lambda v: abs(v.std() - 0.05) < 0.005),
    ("random_uniform", lambda v: v.min() >= -0.05 and v.max() <= 0.05),
    ("truncated_normal", lambda v: np.abs(v).max() <= 0.1),
    ("glorot_uniform", lambda v: np.abs(v).max() <= np.sqrt(6 / 600)),
    ("glorot_normal", lambda v: abs(v.std() - np.sqrt(2 / 600)) < 0.01),
    ("he_normal", lambda v: abs(v.std() - np.sqrt(2 / 200)) < 0.015),
    ("he_uniform", lambda v: np.abs(v).max() <= np.sqrt(6 / 200)),
    ("lecun_normal", lambda v: abs(v.std() - np.sqrt(1 / 200)) < 0.01),
    ("lecun_uniform", lambda v: np.abs(v).max() <= np.sqrt(3 / 200)),
    ("orthogonal", lambda v: np.allclose(v.T @ v, np.eye(400), atol=1e-4)),
])
def test_initializers_by_name(name, check):
    init = keras.initializers.get(name)
    shape = (400, 400) if name == "orthogonal" else (200, 400)
    assert check(_run(init(shape)))


def test_initializer_objects_and_errors():
    np.testing.assert_array_equal(_run(keras.initializers.Constant(3.0)((2,))), [3.0, 3.0])
    np.testing.assert_array_equal(_run(keras.initializers.Identity()((2, 2))), np.eye(2))
    vs = keras.initializers.VarianceScaling(2.0, "fan_out", "uniform")
    assert np.abs(_run(vs((100, 50)))).max() <= np.sqrt(3 * 2.0 / 50)
    config = keras.initializers.serialize(keras.initializers.RandomNormal(stddev=0.3))
    assert keras.initializers.deserialize(config).stddev == 0.3
    with pytest.raises(ValueError, match="Unknown initializer: nope"):
        keras.initializers.get("nope")


def test_regularizers_match_numpy():
    w = tf.constant(X)
    reg = keras.regularizers
    np.testing.assert_allclose(_run(reg.l1(0.1)(w)), 0.1 * np.abs(X).sum(), rtol=1e-5)
    np.testing.assert_allclose(_run(reg.l2(0.1)(w)), 0.1 * (X ** 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(_run(reg.l1_l2(0.1, 0.2)(w)),
                               0.1 * np.abs(X).sum() + 0.2 * (X ** 2).sum(), rtol=1e-5)
    assert reg.get("l2").l2 == 0.01 and reg.get(None) is None
    with pytest.raises(ValueError, match="Unknown regularizer"):
        reg.get("l3")


def test_constraints_match_numpy():
    w = tf.constant(X)
    c = keras.constraints
    norms = np.sqrt((X ** 2).sum(0, keepdims=True))
    np.testing.assert_allclose(_run(c.max_norm(1.0)(w)),
                               X * np.clip(norms, 0, 1.0) / (1e-7 + norms), rtol=1e-5)
    np.testing.assert_allclose(_run(c.non_neg()(w)), X * (X >= 0), rtol=1e-6)
    np.testing.assert_allclose(_run(c.unit_norm()(w)), X / (1e-7 + norms), rtol=1e-5)
    np.testing.assert_allclose(_run(c.min_max_norm(0.5, 1.5, rate=0.5)(w)),
                               X * (0.5 * np.clip(norms, 0.5, 1.5) + 0.5 * norms)
                               / (1e-7 + norms), rtol=1e-5)
    with pytest.raises(ValueError, match="Unknown constraint"):
        c.get("positive")


BACKEND = [
    ("sum", lambda t: K.sum(t, axis=1), lambda x: x.sum(1)),
    ("mean", lambda t: K.mean(t, axis=0, keepdims=True), lambda x: x.mean(0, keepdims=True)),
    ("max", lambda t: K.max(t), lambda x: x.max()),
    ("std", lambda t: K.std(t, axis=1), lambda x: x.std(1)),
    ("square", K.square, np.square), ("abs", K.abs, np.abs), ("exp", K.exp, np.exp),
    ("clip", lambda t: K.clip(t, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5)),
    ("dot", lambda t: K.dot(t, K.transpose(t)), lambda x: x @ x.T),
    ("concatenate", lambda t: K.concatenate([t, t]), lambda x: np.concatenate([x, x], -1)),
    ("reshape", lambda t: K.reshape(t, (5, 4)), lambda x: x.reshape(5, 4)),
    ("permute", lambda t: K.permute_dimensions(t, (1, 0)), lambda x: x.T),
    ("stack", lambda t: K.stack([t, t], axis=1), lambda x: np.stack([x, x], 1)),
    ("batch_flatten", lambda t: K.batch_flatten(K.reshape(t, (4, 5, 1))), lambda x: x),
    ("repeat", lambda t: K.repeat(t, 2), lambda x: np.repeat(x[:, None], 2, 1)),
    ("batch_dot", lambda t: K.batch_dot(t, t, axes=1), lambda x: (x * x).sum(1, keepdims=True)),
    ("softmax", K.softmax, _softmax), ("sigmoid", K.sigmoid, _sigmoid),
    ("hard_sigmoid", K.hard_sigmoid, ACTIVATIONS["hard_sigmoid"]),
    ("relu_alpha_max", lambda t: K.relu(t, alpha=0.1, max_value=0.6),
     lambda x: np.where(x > 0, np.minimum(x, 0.6), 0.1 * x)),
    ("cast", lambda t: K.cast(t > 0, "float32"), lambda x: (x > 0).astype(np.float32)),
    ("categorical_crossentropy",
     lambda t: K.categorical_crossentropy(K.softmax(t), K.softmax(t * 2.0)),
     lambda x: -(_softmax(x) * np.log(_softmax(2 * x))).sum(-1)),
    ("sparse_categorical_crossentropy",
     lambda t: K.sparse_categorical_crossentropy(tf.constant([0, 1, 4, 2]), K.softmax(t)),
     lambda x: -np.log(_softmax(x)[np.arange(4), [0, 1, 4, 2]])),
    ("binary_crossentropy", lambda t: K.binary_crossentropy(K.sigmoid(t), K.sigmoid(-t)),
     lambda x: -(_sigmoid(x) * np.log(_sigmoid(-x)) + _sigmoid(-x) * np.log(_sigmoid(x)))),
]


@pytest.mark.parametrize("name, fn, ref", BACKEND, ids=[b[0] for b in BACKEND])
def test_backend_functions_match_numpy(name, fn, ref):
    np.testing.assert_allclose(_run(fn(tf.constant(X))), ref(X), rtol=1e-4, atol=1e-5)


def test_backend_session_values_and_function():
    v = K.variable(np.ones((2, 3)), name="v")
    assert K.int_shape(v) == (2, 3) and K.ndim(v) == 2 and K.dtype(v) == "float32"
    np.testing.assert_array_equal(K.eval(v), np.ones((2, 3)))  # initialized by the session
    K.set_value(v, np.full((2, 3), 2.0))
    K.batch_set_value([(v, np.zeros((2, 3)))])
    assert K.batch_get_value([v])[0].sum() == 0
    p = K.placeholder(shape=(None, 3))
    assert K.int_shape(p) == (None, 3) and K.is_placeholder(p)
    f = K.function([p], [K.sum(p * 2.0)], updates=[(v, v + 1.0)])
    assert f([np.ones((4, 3))])[0] == pytest.approx(24.0)
    assert K.get_value(v)[0, 0] == 1.0
    g = K.gradients(K.sum(K.square(p)), [p])[0]
    np.testing.assert_allclose(_run(g, {p: np.ones((1, 3))}), [[2.0, 2.0, 2.0]])
    assert K.floatx() == "float32" and K.epsilon() == 1e-7
    assert K.image_data_format() == "channels_last"


def test_learning_phase_and_clear_session():
    phase = K.learning_phase()
    assert phase.name == "keras_learning_phase:0" and phase is K.learning_phase()
    x = tf.constant(np.ones((200, 10), np.float32))
    y = L.Dropout(0.5)(x)
    assert _run(y).min() == 1.0
    assert (_run(y, {phase: True}) == 0).any()
    K.clear_session()
    K.set_learning_phase(1)
    assert K.learning_phase() == 1
    assert (_run(L.Dropout(0.5)(tf.constant(np.ones((200, 10), np.float32)))) == 0).any()
    with pytest.raises(ValueError, match="0 or 1"):
        K.set_learning_phase(2)
    K.clear_session()
    assert L.Dense(2).name == "dense"  # uids restart with the graph


def _np_lstm(x, k, rk, b, units):
    h = c = np.zeros((x.shape[0], units), np.float32)
    hs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ k + h @ rk + b
        i, f, cc, o = np.split(z, 4, axis=1)
        hsig = ACTIVATIONS["hard_sigmoid"]
        c = hsig(f) * c + hsig(i) * np.tanh(cc)
        h = hsig(o) * np.tanh(c)
        hs.append(h)
    return np.stack(hs, 1), h, c


def _np_gru(x, k, rk, b, units):
    h = np.zeros((x.shape[0], units), np.float32)
    hsig = ACTIVATIONS["hard_sigmoid"]
    for t in range(x.shape[1]):
        xz, xr, xh = np.split(x[:, t] @ k + b, 3, axis=1)
        z = hsig(xz + h @ rk[:, :units])
        r = hsig(xr + h @ rk[:, units:2 * units])
        hh = np.tanh(xh + (r * h) @ rk[:, 2 * units:])
        h = z * h + (1 - z) * hh
    return h


def test_recurrent_layers_match_numpy_steps():
    x = _rng.randn(2, 6, 3).astype(np.float32)
    lstm = L.LSTM(4, return_sequences=True, return_state=True)
    seq, h, c = lstm(tf.constant(x))
    gru = L.GRU(3)
    g = gru(tf.constant(x))
    rnn = L.SimpleRNN(2, go_backwards=True)
    s = rnn(tf.constant(x))
    out = _run([seq, h, c, g, s])
    k, rk, b = lstm.get_weights()
    np.testing.assert_allclose(b[4:8], 1.0)  # unit_forget_bias
    for got, want in zip(out[:3], _np_lstm(x, k, rk, b, 4), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[3], _np_gru(x, *gru.get_weights(), 3), rtol=1e-5,
                               atol=1e-6)
    k, rk, b = rnn.get_weights()
    h = np.zeros((2, 2), np.float32)
    for t in reversed(range(6)):
        h = np.tanh(x[:, t] @ k + h @ rk + b)
    np.testing.assert_allclose(out[4], h, rtol=1e-5, atol=1e-6)
    assert [w.name for w in lstm.trainable_weights] == [
        "lstm/lstm_cell/kernel:0", "lstm/lstm_cell/recurrent_kernel:0",
        "lstm/lstm_cell/bias:0"]


def test_recurrent_initial_state_and_dropout():
    x = tf.constant(_rng.randn(2, 4, 3).astype(np.float32))
    h0 = tf.constant(np.ones((2, 5), np.float32))
    out = L.SimpleRNN(5, activation=None, use_bias=False, kernel_initializer="zeros",
                      recurrent_initializer="identity")(x, initial_state=[h0])
    np.testing.assert_allclose(_run(out), np.ones((2, 5)))
    drop = L.LSTM(3, dropout=0.5, recurrent_dropout=0.5)(x)
    a, b = _run(drop), _run(drop)
    np.testing.assert_array_equal(a, b)  # test phase: no dropout
    with pytest.raises(ValueError, match="expects 2 states"):
        L.LSTM(2)(x, initial_state=[h0])


GRADIENT_CASES = [
    ("lstm", lambda: L.LSTM(3, return_sequences=True), (2, 4, 3)),
    ("gru", lambda: L.GRU(2, reset_after=True), (2, 3, 3)),
    ("gru_v1", lambda: L.GRU(2), (2, 3, 3)),
    ("simple_rnn", lambda: L.SimpleRNN(2), (2, 3, 2)),
    ("prelu", lambda: L.PReLU(alpha_initializer="ones"), (3, 4)),
    ("depthwise", lambda: L.DepthwiseConv2D(2, depth_multiplier=2), (1, 4, 4, 2)),
    ("upsampling", lambda: L.UpSampling2D((2, 1)), (1, 2, 3, 2)),
    ("cropping", lambda: L.Cropping2D(((1, 0), (0, 1))), (1, 3, 3, 1)),
    ("elu", lambda: L.ELU(0.7), (3, 4)),
    ("relu_threshold", lambda: L.ReLU(negative_slope=0.2, threshold=0.1), (3, 4)),
    ("time_distributed", lambda: L.TimeDistributed(L.Dense(2)), (2, 3, 3)),
]


@pytest.mark.parametrize("name, make, shape", GRADIENT_CASES,
                         ids=[c[0] for c in GRADIENT_CASES])
def test_layer_gradients_by_finite_differences(name, make, shape):
    x = tf.placeholder(tf.float64, shape)
    layer = make()
    layer._dtype = tf.float64
    y = layer(x)
    K.get_session()
    # values away from the kinks of relu-like functions
    init = _rng.uniform(0.2, 1.0, shape) * np.where(_rng.rand(*shape) > 0.5, 1, -1)
    with K.get_session().as_default():
        err = tf.test.compute_gradient_error(x, list(shape), y, y.shape.as_list(),
                                             x_init_value=init)
    assert err < 1e-4, err


def test_merge_dot_and_functional_forms():
    a, b = tf.constant(X), tf.constant(X * 2.0)
    np.testing.assert_allclose(_run(L.dot([a, b], axes=1)), (X * 2 * X).sum(1, keepdims=True),
                               rtol=1e-5)
    cos = _run(L.Dot(axes=1, normalize=True)([a, a]))
    np.testing.assert_allclose(cos, 1.0, rtol=1e-5)
    np.testing.assert_allclose(_run(L.average([a, b])), 1.5 * X, rtol=1e-6)
    np.testing.assert_allclose(_run(L.subtract([a, b])), -X, rtol=1e-6)
    with pytest.raises(ValueError, match="list of inputs"):
        L.Add()(a)
    with pytest.raises(ValueError, match="matching shapes"):
        L.Concatenate()([tf.constant(np.zeros((2, 3, 4))), tf.constant(np.zeros((2, 5, 4)))])


def test_layer_errors_and_bookkeeping():
    with pytest.raises(ValueError, match="expected min_ndim=2"):
        L.Dense(2)(tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="total size of new array must be unchanged"):
        L.Reshape((4, 4))(tf.constant(X))
    with pytest.raises(TypeError, match="Keyword argument not understood: bogus"):
        L.Dense(2, bogus=1)
    with pytest.raises(ValueError, match="Invalid permutation"):
        L.Permute((1, 3))
    bn = L.BatchNormalization()
    bn(tf.constant(X))
    assert len(bn.updates) == 2 and len(bn.weights) == 4
    # TF1 Keras keeps updates and losses on the layer, out of the graph collections
    assert not tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(bn.trainable_weights) == 2
    dense = L.Dense(3, kernel_regularizer="l1", bias_regularizer="l2")
    out = dense(tf.constant(X))
    assert len(dense.losses) == 2 and dense.output is out and dense.input_shape == (4, 5)
    assert not tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    dense.set_weights([np.ones((5, 3)), np.zeros(3)])
    np.testing.assert_allclose(_run(out), X.sum(1, keepdims=True) * np.ones((1, 3)),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="not compatible"):
        dense.set_weights([np.ones((5, 2)), np.zeros(3)])


def test_custom_layer_subclass():
    class Scale(L.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)

        def build(self, input_shape):
            self.w = self.add_weight("w", shape=(int(input_shape[-1]),), initializer="ones")
            super().build(input_shape)

        def call(self, inputs):
            return inputs * self.w

    layer = Scale()
    out = layer(tf.constant(X))
    np.testing.assert_allclose(_run(out), X)
    assert layer.weights[0].name == "scale/w:0"


def test_utils_and_preprocessing():
    np.testing.assert_array_equal(keras.utils.to_categorical([[1], [0], [2]]),
                                  np.eye(3)[[1, 0, 2]])
    assert keras.utils.to_categorical([1, 2], 5).shape == (2, 5)
    with pytest.raises(ValueError, match="labels must be in"):
        keras.utils.to_categorical([3], 2)
    np.testing.assert_allclose(np.linalg.norm(keras.utils.normalize(X), axis=-1), 1.0,
                               rtol=1e-6)
    pad = keras.preprocessing.sequence.pad_sequences
    np.testing.assert_array_equal(pad([[1, 2, 3], [4]], maxlen=2), [[2, 3], [0, 4]])
    np.testing.assert_array_equal(pad([[1, 2, 3], [4]], padding="post", truncating="post",
                                      value=9), [[1, 2, 3], [4, 9, 9]])
    with pytest.raises(ValueError, match="Padding type"):
        pad([[1]], padding="middle")


def test_datasets_load_only_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="does not download"):
        keras.datasets.mnist.load_data()
    (tmp_path / "datasets").mkdir()
    np.savez(tmp_path / "datasets" / "mnist.npz", x_train=np.zeros((2, 28, 28), np.uint8),
             y_train=np.zeros(2, np.uint8), x_test=np.zeros((1, 28, 28), np.uint8),
             y_test=np.zeros(1, np.uint8))
    (x, y), (xt, yt) = keras.datasets.mnist.load_data()
    assert x.shape == (2, 28, 28) and xt.shape == (1, 28, 28)
    with pytest.raises(FileNotFoundError, match="not available"):
        keras.datasets.fashion_mnist.load_data()
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py"):
        keras.datasets.cifar10.load_data()


@pytest.mark.parametrize("make, check", [
    (lambda L: L.GaussianNoise(0.5), lambda x, y: (np.std(y - x), 0.5)),
    (lambda L: L.GaussianDropout(0.2), lambda x, y: (np.std(y / x), np.sqrt(0.2 / 0.8))),
    (lambda L: L.AlphaDropout(0.3), lambda x, y: (np.std(y), 1.0)),
    (lambda L: L.AlphaDropout(0.3), lambda x, y: (np.mean(y), 0.0)),
])
def test_noise_layers_draw_keras_noise_while_training(make, check):
    """Noise of Keras's size in the training phase, the identity outside it."""
    x = np.random.RandomState(0).randn(200, 500).astype(np.float32)
    with tf.Graph().as_default():
        layer = make(tf.keras.layers)
        noisy = layer(tf.constant(x), training=True)
        plain = layer(tf.constant(x))
        with tf.Session() as sess:
            y, same = sess.run([noisy, plain])
    np.testing.assert_array_equal(same, x)
    got, want = check(x, y)
    assert abs(got - want) < 0.02, (got, want)


@pytest.mark.parametrize("cls, shape, keep_axes", [
    ("SpatialDropout1D", (8, 20, 6), (1,)),
    ("SpatialDropout2D", (8, 5, 4, 6), (1, 2)),
    ("SpatialDropout3D", (4, 3, 3, 3, 6), (1, 2, 3)),
])
def test_spatial_dropout_drops_whole_channels(cls, shape, keep_axes):
    x = np.random.RandomState(1).rand(*shape).astype(np.float32) + 1.0
    with tf.Graph().as_default():
        y = getattr(tf.keras.layers, cls)(0.5)(tf.constant(x), training=True)
        with tf.Session() as sess:
            out = sess.run(y)
    kept = out != 0
    assert np.all(kept.all(axis=keep_axes) | (~kept).all(axis=keep_axes))
    np.testing.assert_allclose(out[kept], x[kept] * 2.0, rtol=1e-6)
    assert 0.2 < kept.mean() < 0.8
