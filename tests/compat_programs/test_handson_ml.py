"""What Aurelien Geron's Hands-On Machine Learning (first edition) notebooks found
(docs/tf1_programs.md, "ageron/handson-ml"): in TensorFlow 1 a variable's "v:0" is its ref
tensor, so `graph.get_tensor_by_name("hidden1/kernel:0")` (chapter 11's l1 regularisation) and
`get_tensor_by_name("theta:0").eval()` after `import_meta_graph` (chapter 9) are the
variable's value; in tensorflux "v:0" is the resource handle of a VarHandleOp."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def test_get_tensor_by_name_of_a_layer_kernel_is_a_value_ops_read():
    x = tf.placeholder(tf.float32, [None, 3], name="X")
    tf.layers.dense(x, 2, name="hidden1", kernel_initializer=tf.constant_initializer(-1.5))
    w = tf.get_default_graph().get_tensor_by_name("hidden1/kernel:0")
    assert w.shape.as_list() == [3, 2] and w.dtype.base_dtype == tf.float32
    reg = tf.reduce_sum(tf.abs(w)) + 2.0 * tf.reduce_sum(w)  # chapter 11's reg_losses
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(reg) == pytest.approx(9.0 - 18.0)
        np.testing.assert_array_equal(sess.run(w), np.full((3, 2), -1.5, np.float32))


def test_variable_by_name_after_import_meta_graph_evaluates_to_its_value(tmp_path):
    theta = tf.Variable([[1.0], [2.0]], name="theta")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(theta.initializer)
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default() as g:
        saver = tf.train.import_meta_graph(path + ".meta")
        restored = g.get_tensor_by_name("theta:0")
        with tf.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_array_equal(restored.eval(), [[1.0], [2.0]])
            # a fetch by name is the value too, as TF1's ref fetch
            np.testing.assert_array_equal(sess.run("theta:0"), [[1.0], [2.0]])
            np.testing.assert_array_equal(sess.run([b"theta:0"])[0], [[1.0], [2.0]])


def test_a_bare_handle_and_v_handle_still_fetch_the_handle():
    from tensorflux.kernels.cpu.state_ops import ResourceHandle
    from tensorflux.ops import state_ops

    v = tf.Variable([3.0], name="v")
    h = state_ops.var_handle_op(tf.float32, [1], name="bare")
    assert tf.get_default_graph().get_tensor_by_name("bare:0") is h
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert isinstance(sess.run(v.handle), ResourceHandle)
        assert isinstance(sess.run("bare:0"), ResourceHandle)


@pytest.mark.oracle
def test_variable_name_lookups_match_tensorflow():
    program = """
    with tf.variable_scope("hidden1"):
        tf.get_variable("kernel", [3, 2], initializer=tf.constant_initializer(0.5))
    w = tf.get_default_graph().get_tensor_by_name("hidden1/kernel:0")
    reg = tf.reduce_sum(tf.abs(w)) + tf.reduce_sum(w * w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        result = [float(sess.run(reg)), sess.run("hidden1/kernel:0").tolist(),
                  w.shape.as_list()]
    """
    ours, theirs = run_both(program, tf)
    assert ours == theirs


def test_config_operation_timeout_in_ms_bounds_a_blocked_dequeue():
    # chapter 12: a dequeue from an empty queue under ConfigProto(operation_timeout_in_ms)
    # raises DeadlineExceededError (it blocked forever); RunOptions.timeout_in_ms wins
    q = tf.FIFOQueue(capacity=10, dtypes=[tf.float32], shapes=[()])
    v = tf.placeholder(tf.float32)
    enqueue, output = q.enqueue([v]), q.dequeue() + 1
    config = tf.ConfigProto(operation_timeout_in_ms=100)
    with tf.Session(config=config) as sess:
        sess.run(enqueue, feed_dict={v: 1.0})
        assert sess.run(output) == 2.0
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(output)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(output, options=tf.RunOptions(timeout_in_ms=50))
