"""tf.nn.raw_rnn and tf.nn.static_state_saving_rnn: against TensorFlow (one oracle program,
weights set from NumPy) and against dynamic_rnn / static_rnn on the same cell."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(120)

PROGRAM = """
rng = np.random.RandomState(0)
xv = rng.randn(5, 3, 4).astype(np.float32)
lengths = tf.constant([5, 2, 3])
inputs_ta = tf.TensorArray(tf.float32, size=5).unstack(tf.constant(xv))
cell = tf.nn.rnn_cell.LSTMCell(6)

def loop_fn(time, cell_output, cell_state, loop_state):
    emit = cell_output
    state = cell.zero_state(3, tf.float32) if cell_output is None else cell_state
    finished = time >= lengths
    nxt = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([3, 4]),
                  lambda: inputs_ta.read(time))
    loop_state = tf.constant(0) if loop_state is None else loop_state + time
    return finished, nxt, state, emit, loop_state

emit_ta, final_state, final_loop = tf.nn.raw_rnn(cell, loop_fn)
outs = [emit_ta.stack(), final_state.c, final_state.h, final_loop]
with tf.variable_scope("dyn"):
    dyn, dyn_state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(6), tf.constant(xv),
                                       sequence_length=lengths, time_major=True,
                                       dtype=tf.float32)

class Saver:
    def __init__(self):
        self.saved = {}
        self.vars = {}
    def state(self, name):
        self.vars[name] = tf.Variable(tf.ones([3, 6]) * 0.5, name=name)
        return self.vars[name]
    def save_state(self, name, value):
        return tf.assign(self.vars[name], value)

saver = Saver()
with tf.variable_scope("ssr"):
    ss_out, ss_state = tf.nn.static_state_saving_rnn(
        tf.nn.rnn_cell.LSTMCell(6), tf.unstack(tf.constant(xv)), saver, ("c_st", "h_st"))
outs += [dyn, dyn_state.h, tf.stack(ss_out), ss_state.h]
with tf.Session() as s:
    s.run(tf.global_variables_initializer())
    for i, v in enumerate(sorted(tf.trainable_variables(), key=lambda v: v.name)):
        shape = v.shape.as_list()
        s.run(v.assign(np.random.RandomState(10 + i % 2).randn(*shape).astype(np.float32) * 0.3))
    result = [np.asarray(v).tolist() for v in s.run(outs)]
    result.append(s.run(saver.vars["h_st"]).tolist())
"""


def _here():
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the test's own program
    return scope["result"]


def test_raw_rnn_equals_dynamic_rnn_and_state_is_saved():
    got = _here()
    emit, _, h, loop_state, dyn, dyn_h, ss_out, ss_h, saved_h = (np.asarray(v) for v in got)
    np.testing.assert_allclose(emit, dyn, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, dyn_h, rtol=1e-5, atol=1e-6)
    assert emit.shape == (5, 3, 6) and not emit[2:, 1].any()
    assert loop_state == sum(range(1, 6))
    np.testing.assert_allclose(saved_h, ss_h, rtol=1e-6)
    assert ss_out.shape == (5, 3, 6)


@pytest.mark.oracle
def test_against_tensorflow(monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # TF's rnn_cell lives in tf_keras
    for i, (g, w) in enumerate(zip(_here(), run_tf(PROGRAM), strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")


def test_argument_errors():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(3)
        with pytest.raises(TypeError, match="loop_fn"):
            tf.nn.raw_rnn(cell, 5)
        with pytest.raises(ValueError, match="state_name"):
            tf.nn.static_state_saving_rnn(tf.nn.rnn_cell.LSTMCell(3), [tf.zeros([2, 2])],
                                          None, "one_name")
