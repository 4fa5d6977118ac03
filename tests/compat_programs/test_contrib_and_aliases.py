"""The small TF1 API gaps that public example programs hit (issue 17, docs/tf1_programs.md):
`from tensorflow.contrib import rnn`, `tf.contrib.rnn.*`, `tf.contrib.layers.flatten`, the
contrib initializers, `tf.arg_min`/`tf.arg_max`. Facts checked with the oracle (TF 2.21
tf.compat.v1; contrib facts from TF 1.15's documented behaviour)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def test_contrib_rnn_import_is_the_core_cells_and_static_rnn():
    from tensorflux.contrib import rnn
    assert rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    assert rnn.static_rnn is tf.nn.static_rnn
    assert tf.contrib.rnn.static_bidirectional_rnn is tf.nn.static_bidirectional_rnn
    assert {"GRUCell", "LSTMCell", "MultiRNNCell", "DropoutWrapper", "LSTMStateTuple"} <= set(
        rnn.__all__)


def test_contrib_rnn_static_lstm_over_split_steps_trains():
    from tensorflux.contrib import rnn
    x = tf.placeholder(tf.float32, [None, 5, 3])
    steps = tf.unstack(x, 5, 1)
    cell = rnn.BasicLSTMCell(4, forget_bias=1.0)
    outputs, _ = rnn.static_rnn(cell, steps, dtype=tf.float32)
    assert len(outputs) == 5 and outputs[-1].shape.as_list() == [None, 4]
    assert [v.name for v in tf.trainable_variables()] == [
        "rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]
    loss = tf.reduce_mean(tf.square(outputs[-1] - 0.5))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    data = np.random.default_rng(0).standard_normal((6, 5, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: data})
        for _ in range(20):
            sess.run(train, {x: data})
        assert sess.run(loss, {x: data}) < first


def test_contrib_layers_flatten_names_shape_and_values():
    x = tf.placeholder(tf.float32, [None, 3, 4, 2])
    y = tf.contrib.layers.flatten(x)
    assert y.shape.as_list() == [None, 24]
    assert y.op.name.startswith("Flatten/")
    z = tf.contrib.layers.flatten(x, scope="flat", outputs_collections="outs")
    assert z.op.name.startswith("flat/") and tf.get_collection("outs") == [z]
    data = np.arange(2 * 24, dtype=np.float32).reshape(2, 3, 4, 2)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: data}), data.reshape(2, 24))
    partly = tf.contrib.layers.flatten(tf.placeholder(tf.float32, [2, None, 4]))
    assert partly.shape.as_list() == [2, None]


@pytest.mark.parametrize("uniform", [True, False])
def test_xavier_initializer_spread(uniform):
    init = tf.contrib.layers.xavier_initializer(uniform=uniform, seed=3)
    w = tf.get_variable("w", [200, 300], initializer=init)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(w)
    n = (200 + 300) / 2.0
    if uniform:
        limit = np.sqrt(3.0 / n)
        assert np.abs(values).max() <= limit and np.abs(values).max() > 0.95 * limit
        assert abs(values.std() - limit / np.sqrt(3.0)) < 0.02 * limit
    else:  # contrib: truncated normal of stddev sqrt(1.3 / n), cut at two stddevs
        stddev = np.sqrt(1.3 / n)
        assert np.abs(values).max() <= 2 * stddev + 1e-6
        assert abs(values.std() - 0.88 * stddev) < 0.05 * stddev


def test_variance_scaling_initializer_fans_and_errors():
    he = tf.contrib.layers.variance_scaling_initializer()  # factor 2, FAN_IN, normal
    w = tf.get_variable("conv", [3, 3, 16, 32], initializer=he)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(w)
    stddev = np.sqrt(1.3 * 2.0 / (3 * 3 * 16))
    assert np.abs(values).max() <= 2 * stddev + 1e-6
    uni = tf.contrib.layers.variance_scaling_initializer(1.0, "FAN_OUT", uniform=True)
    v = uni([10, 40])
    with tf.Session() as sess:
        assert np.abs(sess.run(v)).max() <= np.sqrt(3.0 / 40)
    with pytest.raises(TypeError, match="non-floating"):
        tf.contrib.layers.variance_scaling_initializer(dtype=tf.int32)
    with pytest.raises(TypeError, match="Unknown mode"):
        tf.contrib.layers.variance_scaling_initializer(mode="fan_in")
    assert tf.contrib.layers.xavier_initializer_conv2d is tf.contrib.layers.xavier_initializer


def test_arg_min_and_arg_max_are_the_raw_ops():
    x = tf.constant([[1.0, 3.0, 0.5], [4.0, 2.0, 9.0]])
    a, b = tf.arg_max(x, 1), tf.arg_min(x, 0, output_type=tf.int32)
    assert (a.op.type, b.op.type, a.dtype, b.dtype) == ("ArgMax", "ArgMin", tf.int64, tf.int32)
    assert a.op.name == "ArgMax"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(a), [1, 2])
        np.testing.assert_array_equal(sess.run(b), [0, 1, 0])
    # the nearest-neighbour example: the index of the smallest L1 distance
    train = tf.placeholder(tf.float32, [None, 4])
    query = tf.placeholder(tf.float32, [4])
    pred = tf.arg_min(tf.reduce_sum(tf.abs(tf.add(train, tf.negative(query))),
                                    reduction_indices=1), 0)
    rows = np.eye(4, dtype=np.float32)
    with tf.Session() as sess:
        assert sess.run(pred, {train: rows, query: rows[2] * 0.9}) == 2
    with pytest.raises(ValueError, match="None values not supported"):
        tf.arg_max(x, None)
    with pytest.raises(ValueError, match="Expected dimension in the range"):
        tf.arg_min(x, 2)
