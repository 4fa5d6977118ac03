"""tf.layers semantics that TF1 programs rely on: variable names and scopes, reuse,
collections (trainable, regularization losses, update ops), the Layer API, shapes, and
bad input. Facts checked with the oracle (TF 2.21 tf.compat.v1 with tf_keras)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _names(variables):
    return [v.name for v in variables]


def test_default_names_are_unique_and_variables_named_as_tf1():
    x = tf.placeholder(tf.float32, [None, 8])
    a, b = tf.layers.dense(x, 5), tf.layers.dense(x, 5)
    assert (a.name, b.name) == ("dense/BiasAdd:0", "dense_1/BiasAdd:0")
    layer = tf.layers.Dense(3, name="fc")
    assert (layer(x).name, layer(x).name) == ("fc/BiasAdd:0", "fc/BiasAdd_1:0")
    assert _names(layer.weights) == ["fc/kernel:0", "fc/bias:0"]
    y = tf.layers.conv2d(tf.placeholder(tf.float32, [None, 6, 6, 2]), 4, 3)
    assert y.name == "conv2d/BiasAdd:0" and y.shape.as_list() == [None, 4, 4, 4]
    assert _names(tf.global_variables())[-2:] == ["conv2d/kernel:0", "conv2d/bias:0"]


def test_reuse_by_argument_and_by_variable_scope():
    x = tf.placeholder(tf.float32, [None, 8])
    tf.layers.dense(x, 3, name="fc")
    with pytest.raises(ValueError, match="Variable fc/kernel already exists, disallowed"):
        tf.layers.dense(x, 3, name="fc")
    shared = tf.layers.dense(x, 3, name="fc", reuse=True)
    assert shared.name == "fc_2/BiasAdd:0" and len(tf.global_variables()) == 2
    with pytest.raises(ValueError, match="Trying to share variable fc/kernel"):
        tf.layers.dense(x, 4, name="fc", reuse=True)
    with tf.variable_scope("s"):
        tf.layers.dense(x, 2, name="z")
    with tf.variable_scope("s", reuse=True):
        assert tf.layers.dense(x, 2, name="z").name == "s_1/z/BiasAdd:0"
    with tf.variable_scope("t", reuse=tf.AUTO_REUSE):
        tf.layers.dense(x, 2, name="w")
        tf.layers.dense(x, 2, name="w")
    assert len(tf.global_variables()) == 6


def test_layer_properties_and_collections():
    x = tf.placeholder(tf.float32, [None, 6, 6, 3])
    conv = tf.layers.Conv2D(4, 3, kernel_regularizer=lambda w: 0.1 * tf.reduce_sum(w),
                            activity_regularizer=lambda o: tf.reduce_sum(o))
    bn = tf.layers.BatchNormalization()
    y = bn(conv(x), training=True)
    assert conv.built and bn.built
    assert _names(conv.trainable_weights) == ["conv2d/kernel:0", "conv2d/bias:0"]
    assert _names(bn.trainable_variables) == ["batch_normalization/gamma:0",
                                              "batch_normalization/beta:0"]
    assert _names(bn.non_trainable_weights) == ["batch_normalization/moving_mean:0",
                                                "batch_normalization/moving_variance:0"]
    assert len(bn.weights) == len(bn.variables) == 4 and bn.count_params() == 16
    assert [t.name for t in conv.losses] == ["conv2d/kernel/Regularizer/mul:0",
                                             "conv2d/ActivityRegularizer/truediv:0"]
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == conv.losses
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == bn.updates and len(bn.updates) == 2
    assert _names(tf.trainable_variables()) == ["conv2d/kernel:0", "conv2d/bias:0",
                                                "batch_normalization/gamma:0",
                                                "batch_normalization/beta:0"]
    assert y.shape.as_list() == [None, 4, 4, 4]
    assert conv.input_spec.axes == {-1: 3} and conv.scope_name == "conv2d"
    frozen = tf.layers.Dense(2, trainable=False)
    frozen(tf.zeros([1, 3]))
    assert frozen.trainable_weights == [] and len(frozen.non_trainable_weights) == 2
    assert len(tf.trainable_variables()) == 4


def test_batch_norm_training_flag_as_bool_and_tensor():
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
    tf.layers.batch_normalization(x, training=False)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    flag = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, training=flag, momentum=0.5)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    mean = [v for v in tf.global_variables() if v.name == "batch_normalization_1/moving_mean:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(updates, {flag: False})
        np.testing.assert_allclose(sess.run(mean[0]), 0.0)
        got = sess.run([y] + updates, {flag: True})[0]
        np.testing.assert_allclose(sess.run(mean[0]), [2.25, 2.75, 3.25])
    xv = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(got, (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-3), rtol=1e-5)


def test_dropout_training_flag():
    x = tf.ones([200, 50])
    flag = tf.placeholder_with_default(False, [])
    y = tf.layers.dropout(x, rate=0.5, training=flag, seed=1)
    assert tf.layers.dropout(x, 0.5).op.type == "Identity"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), 1.0)
        kept = sess.run(y, {flag: True})
    assert set(np.unique(kept)) <= {0.0, 2.0} and 0.4 < (kept > 0).mean() < 0.6


def test_compute_output_shape_and_flatten():
    assert tf.layers.Dense(7).compute_output_shape([None, 3, 5]).as_list() == [None, 3, 7]
    conv = tf.layers.Conv2D(4, 3, strides=2, padding="same")
    assert conv.compute_output_shape([2, 9, 8, 3]).as_list() == [2, 5, 4, 4]
    tconv = tf.layers.Conv2DTranspose(2, 3, strides=2)
    assert tconv.compute_output_shape([2, 8, 8, 3]).as_list() == [2, 17, 17, 2]
    pool = tf.layers.MaxPooling1D(2, 2)
    assert pool.compute_output_shape([None, 9, 3]).as_list() == [None, 4, 3]
    flat = tf.layers.flatten(tf.placeholder(tf.float32, [None, 3, None]))
    assert flat.shape.as_list() == [None, None]
    assert tf.layers.flatten(tf.zeros([2, 3, 4])).shape.as_list() == [2, 12]


def test_channels_first_matches_channels_last():
    rng = np.random.RandomState(0)
    xv = rng.randn(2, 5, 6, 3).astype(np.float32)
    init = tf.constant_initializer(rng.randn(3 * 3 * 3 * 4).astype(np.float32))
    last = tf.layers.conv2d(xv, 4, 3, padding="same", kernel_initializer=init,
                            bias_initializer=tf.constant_initializer(0.5))
    first = tf.layers.conv2d(np.transpose(xv, (0, 3, 1, 2)), 4, 3, padding="same",
                             data_format="channels_first", kernel_initializer=init,
                             bias_initializer=tf.constant_initializer(0.5))
    pool_first = tf.layers.max_pooling2d(first, 2, 2, data_format="channels_first")
    pool_last = tf.layers.max_pooling2d(last, 2, 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, c, d = sess.run([last, first, pool_last, pool_first])
    np.testing.assert_allclose(np.transpose(b, (0, 2, 3, 1)), a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.transpose(d, (0, 2, 3, 1)), c, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("build, error, message", [
    (lambda: tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2), ValueError,
     r"last dimension of the inputs to a Dense layer should be defined. Found None. Full "
     r"input shape received: \(\?, \?\)"),
    (lambda: tf.layers.dense(tf.placeholder(tf.float32), 2), ValueError, "<unknown>"),
    (lambda: tf.layers.dense(tf.zeros([3]), 2), ValueError, "expected min_ndim=2"),
    (lambda: tf.layers.conv2d(tf.zeros([2, 5, 5]), 2, 3), ValueError, "expected ndim=4"),
    (lambda: tf.layers.conv2d(tf.placeholder(tf.float32, [None, 5, 5, None]), 2, 3),
     ValueError, "channel dimension of the inputs should be defined"),
    (lambda: tf.layers.conv2d(tf.zeros([1, 5, 5, 1]), 2, 3, padding="full"), ValueError,
     "padding"),
    (lambda: tf.layers.conv2d(tf.zeros([1, 5, 5, 1]), 2, (3, 3, 3)), ValueError,
     "kernel_size"),
    (lambda: tf.layers.max_pooling2d(tf.zeros([1, 5, 5, 1]), 2, 2, data_format="NHWC"),
     ValueError, "data_format"),
    (lambda: tf.layers.batch_normalization(tf.zeros([2, 3]), fused=True), ValueError,
     "fused=True"),
    (lambda: tf.layers.batch_normalization(tf.zeros([2, 3]), renorm=True,
                                           renorm_clipping={"rmx": 2.0}), ValueError,
     "invalid keys for `renorm_clipping`"),
    (lambda: tf.layers.Dense(2, bogus=1), TypeError, "bogus"),
])
def test_bad_input(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_second_call_checks_the_input_spec():
    layer = tf.layers.Dense(2)
    layer(tf.zeros([1, 3]))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        layer(tf.zeros([1, 4]))


def test_regularizers_and_constraints():
    l1, l2 = tf.contrib.layers.l1_regularizer(0.5), tf.contrib.layers.l2_regularizer(0.25)
    both = tf.contrib.layers.l1_l2_regularizer(0.5, 0.25)
    assert tf.contrib.layers.l2_regularizer(0.0)(tf.ones([2])) is None
    assert tf.contrib.layers.sum_regularizer([None]) is None
    for bad in (1, -0.5):
        with pytest.raises(ValueError):
            tf.contrib.layers.l2_regularizer(bad)
    w = tf.constant([[1.0, -2.0], [3.0, 0.5]])
    y = tf.layers.dense(tf.ones([1, 2]), 2, kernel_initializer=tf.constant_initializer(0.5),
                        kernel_regularizer=both, kernel_constraint=lambda k: k * 0)
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)[0].name == \
        "dense/kernel/Regularizer/l1_l2_regularizer:0"
    tf.add_to_collection(tf.GraphKeys.WEIGHTS, w)
    total = tf.contrib.layers.apply_regularization(l1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([l1(w), l2(w), both(w), total, tf.losses.get_regularization_loss(), y])
    assert got[:4] == pytest.approx([3.25, 1.78125, 5.03125, 3.25])
    assert got[4] == pytest.approx(0.5 * 2 + 0.25 * 0.5 + 3.25)
    layer_kernel = tf.trainable_variables()[0]
    assert layer_kernel.constraint is not None


def test_identity_initializer():
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.initializers.identity(gain=2.0)([2, 3])),
                                      2 * np.eye(2, 3))
    with pytest.raises(ValueError, match="2D"):
        tf.initializers.identity()([2, 2, 2])


@pytest.mark.parametrize("shape", [[4, 3], [3, 5], [2, 3, 6], [6, 6]])
def test_orthogonal_initializer(shape):
    value = tf.orthogonal_initializer(gain=2.0, seed=1)(shape)
    with tf.Session() as sess:
        got = sess.run(value)
    assert got.shape == tuple(shape) and got.dtype == np.float32
    flat = got.reshape(-1, shape[-1]) / 2.0
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, np.eye(len(gram)), atol=1e-5)
    with pytest.raises(ValueError, match="at least two-dimensional"):
        tf.initializers.orthogonal()([3])
    layer = tf.layers.Dense(4, kernel_initializer=tf.initializers.orthogonal())
    layer(tf.zeros([1, 4]))


@pytest.mark.parametrize("make, shape", [
    (lambda x, fmt: tf.layers.conv1d(x, 3, 2, strides=2, padding="same", data_format=fmt,
                                     name="l"), (2, 7, 2)),
    (lambda x, fmt: tf.layers.conv3d(x, 3, 2, data_format=fmt, name="l"), (2, 3, 4, 3, 2)),
    (lambda x, fmt: tf.layers.separable_conv2d(x, 3, 2, depth_multiplier=2, data_format=fmt,
                                               name="l"), (2, 5, 4, 2)),
    (lambda x, fmt: tf.layers.separable_conv1d(x, 3, 3, padding="same", data_format=fmt,
                                               name="l"), (2, 6, 2)),
    (lambda x, fmt: tf.layers.conv2d_transpose(x, 3, 3, strides=2, data_format=fmt,
                                               name="l"), (2, 3, 4, 2)),
    (lambda x, fmt: tf.layers.conv3d_transpose(x, 3, 2, strides=2, padding="same",
                                               data_format=fmt, name="l"), (1, 2, 3, 2, 2)),
    (lambda x, fmt: tf.layers.average_pooling3d(x, 2, 1, data_format=fmt), (2, 3, 4, 3, 2)),
    (lambda x, fmt: tf.layers.max_pooling1d(x, 2, 1, padding="same", data_format=fmt),
     (2, 5, 3)),
    (lambda x, fmt: tf.layers.batch_normalization(
        x, axis=1 if fmt == "channels_first" else -1, training=True, name="l"), (3, 2, 2, 4)),
])
def test_channels_first_layers_match_channels_last(make, shape):
    """Each layer with channels_first data gives the transpose of its channels_last result
    (same weights: the same deterministic initializers, a fresh graph each)."""
    xv = np.random.RandomState(1).randn(*shape).astype(np.float32)
    to_first = (0, len(shape) - 1) + tuple(range(1, len(shape) - 1))
    results = []
    for fmt, data in (("channels_last", xv), ("channels_first", np.transpose(xv, to_first))):
        with tf.Graph().as_default():
            with tf.variable_scope("", initializer=tf.random_uniform_initializer(seed=7)):
                y = make(tf.constant(data), fmt)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                results.append(sess.run(y))
    back = np.argsort(to_first)
    np.testing.assert_allclose(np.transpose(results[1], back), results[0], rtol=1e-4,
                               atol=1e-5)


def test_custom_layer_subclass():
    class Scale(tf.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [input_shape[-1].value],
                                     initializer=tf.ones_initializer(),
                                     regularizer=lambda w: tf.reduce_sum(w))
            self.count = self.add_weight("count", [], initializer=tf.zeros_initializer(),
                                         trainable=False)
            super().build(input_shape)

        def call(self, inputs):
            self.add_update(tf.assign_add(self.count, 1.0))
            self.add_loss(tf.reduce_mean(inputs))
            return inputs * self.w

        def compute_output_shape(self, input_shape):
            return input_shape

    layer = Scale(name="scale")
    assert layer.name == "scale" and not layer.built
    y = layer(tf.ones([2, 3]))
    assert layer.built and _names(layer.trainable_weights) == ["scale/w:0"]
    assert _names(layer.non_trainable_weights) == ["scale/count:0"]
    assert len(layer.losses) == 2 and len(layer.updates) == 1
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == layer.updates
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(y), np.ones((2, 3)))
        assert sess.run(layer.losses) == [3.0, 1.0]
