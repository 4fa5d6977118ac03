"""tf.debugging.enable_check_numerics / disable_check_numerics in graphs, the op-callback
registry under them (tensorflux/framework/op_callbacks.py), and CheckNumericsV2."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_callbacks
from tests import oracle


@pytest.fixture
def checking():
    tf.debugging.enable_check_numerics()
    try:
        yield
    finally:
        tf.debugging.disable_check_numerics()


def test_float_outputs_are_replaced_by_checked_ones(checking):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, name="x")
        y = tf.log(x, name="mylog")
        z = y * 2.0
        n = tf.shape(z)  # int32: not checked
        r = tf.reshape(z, [-1])  # only moves values: not checked
        assert x.op.type == "Placeholder"
        assert y.op.type == "CheckNumericsV2" and y.op.name == "mylog/CheckNumericsV2"
        assert y.op.inputs[0].op.type == "Log"
        assert z.op.type == "CheckNumericsV2" and z.op.inputs[0].op.name == "mul"
        assert n.op.type == "Shape" and r.op.type == "Reshape"
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(z, {x: [1.0, np.e]}), [0.0, 2.0], rtol=1e-6)


def test_nan_names_the_op_that_made_it(checking):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.log(x, name="mylog")
        z = tf.reduce_sum(y * 2.0)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(z, {x: [1.0, -1.0]})
    message = info.value.message
    assert ('!!! Detected Infinity or NaN in output 0 of graph op "Log" (# of outputs: 1) !!!'
            in message)
    assert "op name: mylog" in message
    assert "dtype: <dtype: 'float32'>" in message and "shape: (2,)" in message
    assert 'Input tensor: Tensor("x:0"' in message
    assert "Stack trace of op's creation" in message
    assert f" -> + {__file__} " in message or " -> + ..." in message  # the user's frame
    assert 'y = tf.log(x, name="mylog")' in message  # its source line
    assert "\n : Tensor had NaN values" in message
    assert info.value.op.name == "mylog/CheckNumericsV2"


def test_inf_signs_are_told_apart(checking):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        y = 1.0 / x
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"had \+Inf values"):
                sess.run(y, {x: [0.0, 1.0]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="had -Inf and NaN values"):
                sess.run(tf.log(x), {x: [0.0, -1.0]})


def test_stack_limits(checking):
    tf.debugging.enable_check_numerics(stack_height_limit=1, path_length_limit=12)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1])
        y = tf.sqrt(x)
    message = y.op.get_attr("message")
    message = message.decode() if isinstance(message, bytes) else message
    frames = [line for line in message.splitlines() if "+ " in line and "(L" in line]
    assert len(frames) == 1  # the innermost frame only (inside tensorflux)
    assert frames[0].split("+ ")[1].startswith("...") and len(frames[0].split()[1]) == 12


def test_gradients_are_checked_and_correct(checking):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(tf.sqrt(x))
        (g,) = tf.gradients(y, x)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(g, {x: [1.0, 4.0]}), [0.5, 0.25], rtol=1e-6)
            with pytest.raises(tf.errors.InvalidArgumentError, match="Inf"):
                sess.run(g, {x: [0.0, 4.0]})


def test_training_loop_control_flow_and_datasets_run(checking):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        w = tf.Variable(tf.ones([3, 1]))
        v = tf.get_variable("v", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + v))
        train = tf.train.AdamOptimizer(0.1).minimize(loss)
        _, loop = tf.while_loop(lambda k, a: k < 3, lambda k, a: (k + 1, a * 2.0), [0, 1.0])
        branch = tf.cond(x[0, 0] > 0, lambda: x * 2.0, lambda: x)
        it = tf.data.Dataset.from_tensor_slices(np.array([4.0, -1.0], np.float32)).map(
            tf.sqrt).make_one_shot_iterator().get_next()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train], {x: np.ones((2, 3))})[0] for _ in range(3)]
            assert losses[0] == pytest.approx(9.0) and losses[2] < losses[0]
            assert sess.run(loop) == 8.0
            assert sess.run(branch, {x: np.ones((1, 3))}).tolist() == [[2.0, 2.0, 2.0]]
            assert sess.run(it) == 2.0
            with pytest.raises(tf.errors.InvalidArgumentError, match='graph op "Sqrt"'):
                sess.run(it)
            assert saver.saver_def.restore_op_name


def test_disable_stops_new_checks_and_is_idempotent():
    tf.debugging.enable_check_numerics()
    tf.debugging.enable_check_numerics()  # idempotent: one callback
    try:
        assert len(op_callbacks.op_callbacks()) == 1
    finally:
        tf.debugging.disable_check_numerics()
    tf.debugging.disable_check_numerics()  # no-op when disabled
    assert op_callbacks.op_callbacks() == ()
    with tf.Graph().as_default():
        y = tf.log(tf.placeholder(tf.float32))
        assert y.op.type == "Log"
        with tf.Session() as sess:
            assert np.isnan(sess.run(y, {y.op.inputs[0]: -1.0}))


def test_checking_is_per_thread(checking):
    seen = []

    def build():
        with tf.Graph().as_default():
            seen.append(tf.log(tf.placeholder(tf.float32)).op.type)

    t = threading.Thread(target=build)
    t.start()
    t.join(timeout=30)
    build()
    assert seen == ["Log", "CheckNumericsV2"]


def test_op_callback_registry():
    seen = []

    def callback(op, outputs):
        seen.append(op.type)
        return [tf.identity(t) for t in outputs] if op.type == "Square" else None

    op_callbacks.add_op_callback(callback)
    try:
        with tf.Graph().as_default():
            y = tf.square(tf.constant(3.0))
            assert y.op.type == "Identity"  # the callback's own ops are not seen again
    finally:
        op_callbacks.remove_op_callback(callback)
    assert seen == ["Square"]
    with pytest.raises(KeyError):
        op_callbacks.remove_op_callback(callback)


@pytest.mark.parametrize("values, message", [
    ([1.0, np.nan], "msg : Tensor had NaN values"),
    ([np.inf], "msg : Tensor had +Inf values"),
    ([-np.inf], "msg : Tensor had -Inf values"),
    ([np.inf, -np.inf], "msg : Tensor had -Inf and +Inf values"),
    ([np.inf, np.nan], "msg : Tensor had +Inf and NaN values"),
    ([np.inf, -np.inf, np.nan], "msg : Tensor had -Inf, +Inf, and NaN values"),
])
def test_check_numerics_v2_messages(values, message):
    from tensorflux.ops.logging_ops import check_numerics_v2

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64)
        y = check_numerics_v2(x, "msg")
        with tf.Session() as sess:
            assert sess.run(y, {x: 2.0}) == 2.0
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(y, {x: values})
    assert info.value.message.splitlines()[0] == message


@pytest.mark.oracle
def test_tensorflow_reports_the_same_op():
    program = """
tf.debugging.enable_check_numerics()
try:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, name="x")
        y = tf.log(x, name="mylog") * 2.0
        result = {"name": y.op.type}
        with tf.Session() as sess:
            result["ok"] = sess.run(y, {x: [1.0]})
            try:
                sess.run(y, {x: [1.0, -1.0]})
            except tf.errors.InvalidArgumentError as e:
                result["head"] = [l for l in e.message.splitlines() if "!!!" in l][0]
                result["tail"] = [l for l in e.message.splitlines() if "Tensor had" in l][0]
finally:
    tf.debugging.disable_check_numerics()
"""
    ours, theirs = oracle.run_both(program, tf)
    assert ours["name"] == theirs["name"] == "CheckNumericsV2"
    assert ours["head"] == theirs["head"]
    assert ours["tail"].strip() == theirs["tail"].strip()
    np.testing.assert_array_equal(ours["ok"], theirs["ok"])
