"""Tests of tf.nn.dynamic_rnn, bidirectional_dynamic_rnn and static_bidirectional_rnn
(tensorflux/nn/rnn.py): equality with static_rnn on the same weights, sequence-length
masking (zero outputs, copied-through states, the loop stopping after the longest
sequence), time-major layout, unknown batch and time sizes, finite-difference gradients of
a tiny LSTM through the while loop (issue 4, item 7), errors, and an oracle comparison of
outputs, states and gradients with TensorFlow on the same weights.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle
from tests.nn.test_rnn_cell import (
    CONFIGS,
    _flat,
    inputs_array,
    numeric_gradient_check,
    ref_lstm,
    ref_static_rnn,
    set_weights,
)

rc = tf.nn.rnn_cell
T, B, D = 3, 2, 5
LOOP_CONFIGS = ["basic_rnn", "gru", "basic_lstm", "lstm_proj", "multi", "multi_concat"]


def _cell(config):
    return eval(CONFIGS[config], {"rc": rc, "tf": tf})  # noqa: S307 - fixed test table


def _run(fetches, feed, init_weights=True):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        if init_weights:
            set_weights(sess)
        return sess.run(fetches, feed)


# ---- dynamic_rnn == static_rnn --------------------------------------------------------------

@pytest.mark.parametrize("seq_len", [None, [3, 1], [2, 0]], ids=["full", "3-1", "2-0"])
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_dynamic_equals_static(config, seq_len):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [B, T, D])
        cell = _cell(config)
        d_out, d_state = tf.nn.dynamic_rnn(cell, x, sequence_length=seq_len, dtype=tf.float64)
        # The same cell object: its variables (captured at the first call) are shared.
        s_out, s_state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float64,
                                          sequence_length=seq_len)
        assert len(tf.global_variables()) == len(cell.trainable_weights)
        assert d_out.shape.as_list() == [B, T, cell.output_size]
        got = _run([d_out, _flat(d_state), tf.stack(s_out, axis=1), _flat(s_state)],
                   {x: inputs_array().transpose(1, 0, 2)})
    np.testing.assert_allclose(got[0], got[2], atol=1e-12)
    for a, b in zip(got[1], got[3], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_variable_and_op_names():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [B, T, D])
        out, state = tf.nn.dynamic_rnn(rc.BasicLSTMCell(4), x, dtype=tf.float32)
        assert [v.name for v in tf.global_variables()] == ["rnn/basic_lstm_cell/kernel:0",
                                                           "rnn/basic_lstm_cell/bias:0"]
        ops = [op.name for op in tf.get_default_graph().get_operations()]
        assert "rnn/while/basic_lstm_cell/MatMul" in ops
        assert out.op.name == "rnn/transpose_1"
        assert isinstance(state, rc.LSTMStateTuple)


def test_reuse_scopes_share_weights():
    """A second tower in a reusing scope (True or AUTO_REUSE), with new cell objects, uses
    the first tower's variables."""
    with tf.Graph().as_default():
        x = tf.constant(inputs_array().transpose(1, 0, 2))
        with tf.variable_scope("model"):
            o1, _ = tf.nn.dynamic_rnn(rc.LSTMCell(3), x, dtype=tf.float64)
        with tf.variable_scope("model", reuse=True):
            o2, _ = tf.nn.dynamic_rnn(rc.LSTMCell(3), x, dtype=tf.float64)
        with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
            o3, _ = tf.nn.static_rnn(rc.LSTMCell(3), tf.unstack(x, axis=1), dtype=tf.float64,
                                     scope="rnn")
        assert [v.name for v in tf.global_variables()] == ["model/rnn/lstm_cell/kernel:0",
                                                           "model/rnn/lstm_cell/bias:0"]
        a, b, c = _run([o1, o2, tf.stack(o3, axis=1)], {})
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, c, atol=1e-12)


# ---- values: masking, layouts, unknown sizes ------------------------------------------------

def _lstm_reference(w, xs, seq_len, init=None):
    step = lambda x, s: ref_lstm({k.split("/", 2)[2]: v for k, v in w.items()}, x, s)  # noqa: E731
    state = init if init is not None else (np.zeros((xs.shape[1], 4)),) * 2
    return ref_static_rnn(step, list(xs), state, seq_len)


@pytest.mark.parametrize("time_major", [False, True])
def test_sequence_length_masking_and_early_stop(time_major):
    """Rows past their length get zero outputs and keep their state; outputs past the
    longest sequence (the loop stopped there) read as zeros; the batch size is unknown."""
    xs = inputs_array(t=5, b=3)
    seq_len = [2, 0, 3]
    with tf.Graph().as_default():
        shape = [5, None, D] if time_major else [None, 5, D]
        x = tf.placeholder(tf.float64, shape)
        sl = tf.placeholder(tf.int64, [None])
        out, state = tf.nn.dynamic_rnn(rc.BasicLSTMCell(4), x, sequence_length=sl,
                                       dtype=tf.float64, time_major=time_major)
        assert out.shape.as_list() == ([5, None, 4] if time_major else [None, 5, 4])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w = set_weights(sess)
            feed_x = xs if time_major else xs.transpose(1, 0, 2)
            got_out, got_state = sess.run([out, state], {x: feed_x, sl: seq_len})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Expected shape"):
                sess.run(out, {x: feed_x, sl: seq_len[:2]})
    want_out, want_state = _lstm_reference(w, xs, seq_len)
    want_out = np.array(want_out)
    if not time_major:
        want_out = want_out.transpose(1, 0, 2)
    np.testing.assert_allclose(got_out, want_out, atol=1e-12)
    np.testing.assert_allclose(got_state.c, want_state[0], atol=1e-12)
    np.testing.assert_allclose(got_state.h, want_state[1], atol=1e-12)


def test_unknown_time_and_initial_state():
    xs = inputs_array(t=4, b=2)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2, None, D])
        c0 = tf.placeholder(tf.float64, [2, 4])
        h0 = tf.placeholder(tf.float64, [2, 4])
        init = rc.LSTMStateTuple(c0, h0)
        out, state = tf.nn.dynamic_rnn(rc.BasicLSTMCell(4), x, initial_state=init,
                                       parallel_iterations=1, scope="mine")
        assert out.shape.as_list() == [2, None, 4]
        assert tf.global_variables()[0].name == "mine/basic_lstm_cell/kernel:0"
        rng = np.random.RandomState(3)
        c0v, h0v = rng.uniform(-1, 1, (2, 4)), rng.uniform(-1, 1, (2, 4))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w = set_weights(sess)
            got_out, got_state = sess.run([out, state], {x: xs.transpose(1, 0, 2), c0: c0v,
                                                         h0: h0v})
    want_out, want_state = _lstm_reference(w, xs, None, init=(c0v, h0v))
    np.testing.assert_allclose(got_out, np.array(want_out).transpose(1, 0, 2), atol=1e-12)
    np.testing.assert_allclose(got_state.h, want_state[1], atol=1e-12)


def test_parallel_iterations_do_not_change_results():
    xs = inputs_array(t=6, b=2).transpose(1, 0, 2)
    results = []
    for p in (1, 32):
        with tf.Graph().as_default():
            x = tf.constant(xs)
            out, state = tf.nn.dynamic_rnn(_cell("multi"), x, sequence_length=[6, 4],
                                           dtype=tf.float64, parallel_iterations=p)
            results.append(_run([out, _flat(state)], {}))
    np.testing.assert_array_equal(results[0][0], results[1][0])


def test_nested_inputs_and_outputs():
    """A cell taking a tuple of inputs and giving a tuple of outputs (TF allows both)."""

    class Pair(rc.RNNCell):
        state_size = 3
        output_size = (3, 2)

        def call(self, inputs, state):
            a, b = inputs
            w = tf.get_variable("w", [a.shape[1] + 3, 3], dtype=a.dtype)
            h = tf.tanh(tf.matmul(tf.concat([a, state], 1), w)) + tf.reduce_sum(b)
            return (h, h[:, :2]), h

    with tf.Graph().as_default():
        a = tf.constant(inputs_array(b=2, t=3, d=4).transpose(1, 0, 2))
        b = tf.constant(np.ones((2, 3, 1)))
        (o1, o2), state = tf.nn.dynamic_rnn(Pair(), (a, b), dtype=tf.float64)
        assert [v.name for v in tf.global_variables()] == ["rnn/pair/w:0"]
        assert o1.shape.as_list() == [2, 3, 3] and o2.shape.as_list() == [2, 3, 2]
        got = _run([o1, o2, state], {})
    np.testing.assert_allclose(got[0][:, :, :2], got[1])
    np.testing.assert_allclose(got[0][:, -1], got[2])


# ---- gradients (issue 4, item 7: an LSTM gradient check) ------------------------------------

def test_lstm_gradient_check_through_while_loop():
    """Tiny LSTM (batch 2, 3 steps, 4 units): tf.gradients through the while loop against
    central differences, for the kernel, the bias, the inputs and the initial state."""
    rng = np.random.RandomState(5)
    with tf.Graph().as_default():
        x = tf.Variable(rng.uniform(-1, 1, (2, 3, 3)), name="x")
        h0 = tf.Variable(rng.uniform(-1, 1, (2, 4)), name="h0")
        c0 = tf.Variable(rng.uniform(-1, 1, (2, 4)), name="c0")
        out, state = tf.nn.dynamic_rnn(rc.BasicLSTMCell(4), x, sequence_length=[3, 2],
                                       initial_state=rc.LSTMStateTuple(c0, h0))
        proj = tf.constant(rng.standard_normal((2, 3, 4)))
        loss = tf.reduce_sum(out * proj) + tf.reduce_sum(state.c * state.c) + \
            tf.reduce_sum(tf.sin(state.h))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            set_weights(sess, tf.trainable_variables()[3:])  # the cell's kernel and bias
            feed = {}
            worst = numeric_gradient_check(loss, tf.trainable_variables(), feed, sess,
                                           n_checks=20)
    assert worst < 1e-6


def test_training_reduces_loss():
    rng = np.random.RandomState(0)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        x = tf.constant(rng.standard_normal((4, 5, 3)).astype(np.float32))
        target = tf.constant(rng.uniform(-0.5, 0.5, (4, 5, 2)).astype(np.float32))
        out, _ = tf.nn.dynamic_rnn(rc.MultiRNNCell([rc.GRUCell(6), rc.LSTMCell(2)]), x,
                                   dtype=tf.float32)
        loss = tf.reduce_mean(tf.square(out - target))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(30):
                sess.run(train)
            last = sess.run(loss)
    assert last < 0.5 * first


# ---- bidirectional --------------------------------------------------------------------------

def _reverse_rows(xs, seq_len):
    out = xs.copy()
    for b, n in enumerate(seq_len):
        out[:n, b] = xs[:n, b][::-1]
    return out


def test_reverse_sequence():
    xs = inputs_array(t=4, b=3)
    w = np.random.RandomState(2).standard_normal(xs.shape)
    with tf.Graph().as_default():
        from tensorflux.nn import rnn

        x = tf.constant(xs)
        y = rnn.reverse_sequence(x, [4, 0, 2], seq_axis=0, batch_axis=1)
        yb = rnn.reverse_sequence(tf.transpose(x, [1, 0, 2]), tf.constant([4, 0, 2], tf.int64),
                                  seq_axis=1, batch_axis=0)
        (dx,) = tf.gradients(tf.reduce_sum(y * w), x)
        got, got_b, got_dx = _run([y, yb, dx], {}, init_weights=False)
    np.testing.assert_array_equal(got, _reverse_rows(xs, [4, 0, 2]))
    np.testing.assert_array_equal(got_b, _reverse_rows(xs, [4, 0, 2]).transpose(1, 0, 2))
    np.testing.assert_array_equal(got_dx, _reverse_rows(w, [4, 0, 2]))


def test_static_bidirectional_equals_dynamic_bidirectional():
    xs = inputs_array(t=4, b=2)
    seq_len = [4, 2]
    with tf.Graph().as_default():
        x = tf.constant(xs)
        fw, bw = rc.GRUCell(3), rc.BasicLSTMCell(2)
        (out_fw, out_bw), (st_fw, st_bw) = tf.nn.bidirectional_dynamic_rnn(
            fw, bw, x, sequence_length=seq_len, dtype=tf.float64, time_major=True)
        assert [v.name for v in tf.global_variables()][:2] == [
            "bidirectional_rnn/fw/gru_cell/gates/kernel:0",
            "bidirectional_rnn/fw/gru_cell/gates/bias:0"]
        s_out, s_fw, s_bw = tf.nn.static_bidirectional_rnn(
            fw, bw, tf.unstack(x), sequence_length=seq_len, dtype=tf.float64)
        got = _run([tf.concat([out_fw, out_bw], 2), tf.stack(s_out), st_fw, s_fw,
                    _flat(st_bw), _flat(s_bw)], {})
    np.testing.assert_allclose(got[0], got[1], atol=1e-12)
    np.testing.assert_allclose(got[2], got[3], atol=1e-12)
    # The backward half at time 0 has read each row's whole sequence.
    assert not np.allclose(got[0][0, 1, 3:], 0) and np.allclose(got[0][2:, 1], 0)


# ---- errors -------------------------------------------------------------------------------

def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="is not an RNNCell"):
            tf.nn.dynamic_rnn(lambda x, s: (x, s), tf.zeros([2, 3, 4]), dtype=tf.float32)
        with pytest.raises(ValueError, match="must have rank at least 3"):
            tf.nn.dynamic_rnn(rc.GRUCell(2), tf.zeros([2, 3]), dtype=tf.float32)
        with pytest.raises(ValueError, match="must be a vector of length batch_size"):
            tf.nn.dynamic_rnn(rc.GRUCell(2), tf.zeros([2, 3, 4]),
                              sequence_length=tf.zeros([2, 2], tf.int32), dtype=tf.float32)
        with pytest.raises(ValueError, match="`dtype` must be specified"):
            tf.nn.dynamic_rnn(rc.GRUCell(2), tf.zeros([2, 3, 4]))
        with pytest.raises(ValueError, match="depth of inputs"):
            tf.nn.dynamic_rnn(rc.GRUCell(2), tf.placeholder(tf.float32, [2, 3, None]),
                              dtype=tf.float32)
        with pytest.raises(ValueError, match="Time steps is not the same"):
            tf.nn.dynamic_rnn(rc.GRUCell(2), (tf.zeros([2, 3, 4]), tf.zeros([2, 4, 4])),
                              dtype=tf.float32)
        with pytest.raises(ValueError, match="Batch_size is not the same"):
            tf.nn.dynamic_rnn(rc.GRUCell(2), (tf.zeros([2, 3, 4]), tf.zeros([5, 3, 4])),
                              dtype=tf.float32)


# ---- the oracle ---------------------------------------------------------------------------

_ORACLE_CODE = """
import zlib
from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl as rc
CONFIGS = json.loads(CONFIGS_JSON)
def weights_for(name, shape):
    rng = np.random.RandomState(zlib.crc32(name.encode()) % (2 ** 31))
    return rng.uniform(-0.6, 0.6, size=shape)
def flat(s):
    return [l for x in s for l in flat(x)] if isinstance(s, (tuple, list)) else [s]
xv = np.random.RandomState(7).uniform(-1.0, 1.0, size=(4, 3, 5))
proj = np.random.RandomState(11).standard_normal((4, 3, 16))
result = {}
for key in LOOP_CONFIGS:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [4, 3, 5])
        cell = eval(CONFIGS[key])
        out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[4, 0, 2], dtype=tf.float64,
                                       time_major=True)
        n = out.shape.as_list()[-1]
        loss = tf.reduce_sum(out * proj[:, :, :n]) + tf.add_n(
            [tf.reduce_sum(tf.sin(s)) for s in flat(state)])
        params = tf.trainable_variables()
        grads = tf.gradients(loss, params + [x])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for v in tf.global_variables():
                v.load(weights_for(v.name.split(":")[0], v.shape.as_list()), sess)
            o, st, gr = sess.run((out, flat(state), grads), {x: xv})
        result[key] = {"vars": [v.name for v in params], "out": o, "state": st,
                       "grads": gr}
"""


@pytest.mark.oracle
def test_oracle_dynamic_rnn_values_and_gradients():
    """Outputs, final states and gradients (variables and inputs) of dynamic_rnn, time-major,
    sequence_length [4, 0, 2], against TensorFlow with the same weights."""
    want = oracle.run_tf(f"CONFIGS_JSON = {json.dumps(CONFIGS)!r}\n"
                         f"LOOP_CONFIGS = {LOOP_CONFIGS!r}\n" + _ORACLE_CODE, timeout=180)
    xv = inputs_array(t=4, b=3)
    proj = np.random.RandomState(11).standard_normal((4, 3, 16))
    for key in LOOP_CONFIGS:
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float64, [4, 3, 5])
            out, state = tf.nn.dynamic_rnn(_cell(key), x, sequence_length=[4, 0, 2],
                                           dtype=tf.float64, time_major=True)
            n = out.shape.as_list()[-1]
            loss = tf.reduce_sum(out * proj[:, :, :n]) + tf.add_n(
                [tf.reduce_sum(tf.sin(s)) for s in _flat(state)])
            params = tf.trainable_variables()
            grads = tf.gradients(loss, params + [x])
            o, st, gr = _run((out, _flat(state), grads), {x: xv})
        assert [v.name for v in params] == want[key]["vars"], key
        np.testing.assert_allclose(o, want[key]["out"], atol=1e-10, err_msg=key)
        for a, b in zip(st, want[key]["state"], strict=True):
            np.testing.assert_allclose(a, b, atol=1e-10, err_msg=key)
        for a, b in zip(gr, want[key]["grads"], strict=True):
            np.testing.assert_allclose(np.asarray(a), b, atol=1e-9, err_msg=key)
