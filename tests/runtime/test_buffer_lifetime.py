"""Buffer lifetime within a step (issue 20 part 5): every executor lets an intermediate go
as soon as its last consumer ran — in straight-line code, inside while-loop frames, and
for gradients, whose apply ops run as soon as the gradient exists — so a step's peak memory
is bounded by what is alive at once, not by everything the step makes. Checked with
tracemalloc (NumPy reports its buffers to it) and with the values against NumPy."""

from __future__ import annotations

import queue
import tracemalloc
import weakref
from types import SimpleNamespace

import numpy as np
import pytest

import tensorflux as tf
from tests.op_test_util import STRATEGIES

ROWS, COLS = 1024, 1024  # float32: 4 MiB a value
MIB = 1 << 20
CHAIN = 8


def _traced_peak(fn):
    """(result, tracemalloc's peak above the start) of `fn()`."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def _chain(x):
    """CHAIN kernels that each allocate a new 4 MiB value (reverse and roll never write into
    their input), each value read by the next one only."""
    for k in range(CHAIN):
        x = tf.reverse(x, [0]) if k % 2 else tf.roll(x, 1, 1)
    return tf.reduce_sum(x, 1)


def _chain_numpy(x):
    for k in range(CHAIN):
        x = x[::-1] if k % 2 else np.roll(x, 1, 1)
    return x.sum(1)


# (name, strategy)
_LIFETIME_CASES = [("auto", "auto"), ("dataflow", "dataflow"), ("frames", "frames")]


@pytest.mark.parametrize("case", _LIFETIME_CASES, ids=[c[0] for c in _LIFETIME_CASES])
def test_straight_line_values_die_at_their_last_consumer(case):
    """Eight 4 MiB values, one after another: at most about three alive at once."""
    value = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [ROWS, COLS])
        out = _chain(x)
    with tf.Session(graph=g, exec_options=STRATEGIES[case[1]]) as sess:
        sess.run(out, {x: value})  # the first run builds the step
        got, peak = _traced_peak(lambda: sess.run(out, {x: value}))
    np.testing.assert_allclose(got, _chain_numpy(value), rtol=1e-5, atol=1e-3)
    assert peak < 3.5 * 4 * MIB, f"{peak / MIB:.1f} MiB alive at once"


@pytest.mark.parametrize("case", _LIFETIME_CASES, ids=[c[0] for c in _LIFETIME_CASES])
def test_values_made_in_a_while_loop_die_in_their_iteration(case):
    """A loop whose body makes eight 4 MiB values per iteration, over six iterations: the
    peak is the body's, not the loop's (frames free what an iteration no longer needs)."""
    value = np.random.default_rng(1).standard_normal((ROWS, COLS)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [ROWS, COLS])
        _, acc = tf.while_loop(lambda i, a: i < 6,
                               lambda i, a: (i + 1, a + _chain(x)),
                               [tf.constant(0), tf.zeros([ROWS])])
    with tf.Session(graph=g, exec_options=STRATEGIES[case[1]]) as sess:
        sess.run(acc, {x: value})
        got, peak = _traced_peak(lambda: sess.run(acc, {x: value}))
    np.testing.assert_allclose(got, 6 * _chain_numpy(value), rtol=1e-4, atol=1e-2)
    assert peak < 4.5 * 4 * MIB, f"{peak / MIB:.1f} MiB alive at once"


def test_apply_ops_run_as_soon_as_their_gradient_exists():
    """The static schedule runs an optimizer's update of the last layer right after its
    gradient, before the first layer's backprop, so the gradient does not live to the
    step's end; the trained weights are those of the same step in plain NumPy."""
    rng = np.random.default_rng(2)
    x_value = rng.standard_normal((64, 256)).astype(np.float32)
    w1_value = rng.standard_normal((256, 512)).astype(np.float32) * 0.05
    w2_value = rng.standard_normal((512, 1024)).astype(np.float32) * 0.05
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [64, 256])
        w1 = tf.Variable(w1_value, name="w1")
        w2 = tf.Variable(w2_value, name="w2")
        h = tf.matmul(x, w1, name="layer1")
        loss = tf.reduce_sum(tf.matmul(h, w2, name="layer2"))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    with tf.Session(graph=g) as sess:
        sess.run(tf.variables_initializer([w1, w2]))
        sess.run(train, {x: x_value})
        got1, got2 = sess.run([w1, w2])
        (step,) = [s for s in sess._steps.values() if s.num_fetches == 0][-1:]
        (ex,) = [ex for _, ex, _ in step.parts]
    ones = np.ones((64, 1024), np.float32)
    dh = ones @ w2_value.T
    np.testing.assert_allclose(got2, w2_value - 0.01 * (x_value @ w1_value).T @ ones,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got1, w1_value - 0.01 * x_value.T @ dh, rtol=1e-4, atol=1e-3)
    lines = ex.source.splitlines()
    line_of = {ex._line_nodes[k + 1].name: k for k in range(len(lines))
               if ex._line_nodes.get(k + 1) is not None}
    update_w2 = next(k for name, k in line_of.items() if "update_w2" in name)
    first_layer_grad = line_of["gradients/layer1_grad/MatMul_1"]
    assert update_w2 < first_layer_grad


# (op, the formula of TF's kernel)
_FUSED_GRADS = [("TanhGrad", lambda y, dy: dy * (1 - y * y)),
                ("SigmoidGrad", lambda y, dy: dy * y * (1 - y))]


@pytest.mark.parametrize("op", _FUSED_GRADS, ids=[c[0] for c in _FUSED_GRADS])
@pytest.mark.parametrize("shape", [(3,), (32, 512), (70001,), (0, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_fused_elementwise_grads_write_into_a_donated_input(op, shape, dtype):
    """TanhGrad/SigmoidGrad run in cache-sized blocks, writing into whichever input the
    executor donates (or one new array): bit for bit the formula's values."""
    from tensorflux.kernels import registry

    name, formula = op
    compute = registry.find_kernel(name, "CPU", {}).factory(None)
    rng = np.random.default_rng(4)
    y = rng.standard_normal(shape).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    want = formula(y, dy)
    for donated in ((), (0,), (1,), (0, 1)):
        y_in, dy_in = y.copy(), dy.copy()
        got = compute(None, y_in, dy_in, donated=donated)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        if donated and dtype != np.float16 and y.size:
            assert got is (y_in if donated[0] == 0 else dy_in)
        elif not donated:
            np.testing.assert_array_equal(y_in, y)
            np.testing.assert_array_equal(dy_in, dy)


def test_lstm_gradients_on_every_strategy_match():
    """A BasicLSTMCell's gradients (Sigmoid/Tanh grads among them, donated on the fast
    paths) are the reference executor's."""
    rng = np.random.default_rng(5)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        x = tf.constant(rng.standard_normal((4, 6, 8)).astype(np.float32))
        cell = tf.nn.rnn_cell.BasicLSTMCell(128)
        out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        grads = tf.gradients(tf.reduce_sum(out * out), tf.trainable_variables() + [x])
        init = tf.global_variables_initializer()
    results = {}
    for name in ("reference", "auto", "dataflow"):
        with tf.Session(graph=g, exec_options=STRATEGIES[name]) as sess:
            sess.run(init)
            results[name] = sess.run(grads)
    for name in ("auto", "dataflow"):
        for a, b in zip(results[name], results["reference"], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_kernel_run_on_the_inter_op_pool_lets_its_inputs_go_when_it_returns():
    """The pool's work item keeps its arguments until the pool thread runs again, which on a
    loaded machine may be long after the step went on: the inputs list is emptied when the
    kernel returns (or fails), so the values die with their last consumer."""
    from tensorflux.kernels import intra_op
    from tensorflux.runtime import executor

    run = object.__new__(executor._Run)
    run.ctx = None
    run.completions = queue.SimpleQueue()
    for kernel, failed in ((lambda ctx, x: x.sum(), False),
                           (lambda ctx, x: 1 / 0, True)):
        value = np.ones((4, 4), np.float32)
        alive, inputs = weakref.ref(value), [value]
        del value
        intra_op.kernel_started()  # as `_start` does before handing the kernel over
        run._run_on_pool(SimpleNamespace(kernel=kernel), None, 0, inputs)
        assert inputs == []
        _, _, _, outputs, error = run.completions.get_nowait()
        assert (error is not None) == failed
        if not failed:  # (a failure's traceback keeps the kernel's frame: the step ends)
            assert outputs == 16.0 and alive() is None
