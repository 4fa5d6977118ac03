"""tf.TensorArray: the operations and their static shapes, the run-time errors (messages as
TensorFlow's kernels word them), use inside tf.while_loop, and gradients."""

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def test_construction_names_and_attributes(graph):
    ta = tf.TensorArray(tf.float32, size=3, element_shape=[2])
    assert (ta.handle.name, ta.flow.name, ta.handle.op.type) == (
        "TensorArray:0", "TensorArray:1", "TensorArrayV3")
    op = ta.handle.op
    assert op.get_attr("clear_after_read") and op.get_attr("identical_element_shapes")
    assert not op.get_attr("dynamic_size") and op.get_attr("dtype") == tf.float32
    w = ta.write(0, [1.0, 2.0])
    assert w.flow.name == "TensorArrayWrite/TensorArrayWriteV3:0"
    assert w.handle is ta.handle and w.read(1).shape.as_list() == [2]
    assert ta.write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).stack().shape.as_list() == [3, 2]


def test_write_read_stack_unstack_gather_scatter_concat_split(graph):
    ta = tf.TensorArray(tf.float32, size=3, clear_after_read=False)  # read more than once
    values = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    unstacked = ta.unstack(values)
    assert unstacked.read(0).shape.as_list() == [2]
    ops = {
        "read": unstacked.read(2),
        "stack": unstacked.stack(),
        "gather": tf.TensorArray(tf.float32, size=3, clear_after_read=False).unstack(values)
        .gather([2, 0, 2]),
        "scatter": tf.TensorArray(tf.float32, size=3).scatter([2, 0], [[1.0], [2.0]])
        .write(1, [5.0]).stack(),
        "concat": tf.TensorArray(tf.float32, size=2, infer_shape=False).write(0, [1.0, 2.0])
        .write(1, [3.0]).concat(),
        "split": tf.TensorArray(tf.float32, size=2, infer_shape=False)
        .split([1.0, 2.0, 3.0], [2, 1]).read(0),
        "size": unstacked.size(),
        "dynamic": tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(0, 1.0)
        .write(3, 2.0).stack(),
        "dynamic_size": tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(4, 1.0)
        .size(),
        "partial": tf.TensorArray(tf.float32, size=3).write(0, [1.0]).stack(),
        "empty": tf.TensorArray(tf.float32, size=0, element_shape=[2, 3]).stack(),
        "identity": unstacked.identity().read(1),
    }
    with tf.Session() as s:
        got = s.run(ops)
    np.testing.assert_array_equal(got["read"], [5, 6])
    np.testing.assert_array_equal(got["stack"], [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(got["gather"], [[5, 6], [1, 2], [5, 6]])
    np.testing.assert_array_equal(got["scatter"], [[2], [5], [1]])
    np.testing.assert_array_equal(got["concat"], [1, 2, 3])
    np.testing.assert_array_equal(got["split"], [1, 2])
    assert got["size"] == 3 and got["dynamic_size"] == 5
    np.testing.assert_array_equal(got["dynamic"], [1, 0, 0, 2])  # unwritten: zeros
    np.testing.assert_array_equal(got["partial"], [[1], [0], [0]])
    assert got["empty"].shape == (0, 2, 3)
    np.testing.assert_array_equal(got["identity"], [3, 4])


def test_close_and_clear_after_read(graph):
    ta = tf.TensorArray(tf.float32, size=2, clear_after_read=False).write(0, 1.0)
    with tf.Session() as s:
        assert s.run([ta.read(0), ta.read(0)]) == [1.0, 1.0]
        s.run(ta.close())


def _read_twice(ta):
    first = ta.read(0)
    with tf.control_dependencies([first]):
        return [first, ta.read(0)]


@pytest.mark.parametrize("build, message", [
    (lambda: tf.TensorArray(tf.float32, size=3).write(0, [1.0]).write(0, [2.0]).read(0),
     "Could not write to TensorArray index 0 because it has already been written to."),
    (lambda: _read_twice(tf.TensorArray(tf.float32, size=3).write(0, [1.0])),
     "Could not read index 0 twice because it was cleared after a previous read \\(perhaps "
     "try setting clear_after_read = false\\?\\)."),
    (lambda: tf.TensorArray(tf.float32, size=3).write(0, [1.0]).read(5),
     "Tried to read from index 5 but array size is: 3"),
    (lambda: tf.TensorArray(tf.float32, size=3).write(5, [1.0]).flow,
     "Tried to write to index 5 but array is not resizeable and size is: 3"),
    (lambda: tf.TensorArray(tf.float32, size=2).split([1.0, 2.0, 3.0], [2, 1]).flow,
     "because the value shape is \\[1\\] which is incompatible with the TensorArray's "
     "inferred element shape: \\[2\\] \\(consider setting infer_shape=False\\)."),
    (lambda: tf.TensorArray(tf.float32, size=2).unstack([1.0, 2.0, 3.0]).flow,
     "Max scatter index must be < array size \\(2 vs. 2\\)"),
    (lambda: tf.TensorArray(tf.float32, size=3).write(0, tf.placeholder_with_default(
        [1.0], [None])).write(1, tf.placeholder_with_default([1.0, 2.0], [None])).stack(),
     "incompatible with the TensorArray's inferred element shape"),
])
def test_run_time_errors(graph, build, message):
    fetch = build()
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            s.run(fetch)


def test_construction_errors(graph):
    ta = tf.TensorArray(tf.float32, size=3, element_shape=[2])
    with pytest.raises(ValueError, match="Inconsistent shapes: saw \\(3,\\) but expected \\(2,\\)"):
        ta.write(0, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="TensorArray dtype is float32 but Op is trying to "
                                        "write dtype int32"):
        ta.write(0, tf.constant([1, 2]))
    with pytest.raises(ValueError, match="Argument `size` must be provided"):
        tf.TensorArray(tf.float32)
    with pytest.raises(ValueError, match="Both 'flow' and 'handle'"):
        tf.TensorArray(tf.float32, handle=ta.handle)


def test_tensor_arrays_in_a_while_loop(graph):
    n = tf.placeholder(tf.int32, [])
    xs = tf.placeholder(tf.float32, [None, 2])
    inputs = tf.TensorArray(tf.float32, size=n).unstack(xs)
    out = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

    def body(i, acc, out):
        acc = acc + inputs.read(i)
        return i + 1, acc, out.write(i, acc)

    _, _, out = tf.while_loop(lambda i, *_: i < n, body, [0, tf.zeros([2]), out])
    stacked = out.stack()
    xv = np.arange(10, dtype=np.float32).reshape(5, 2)
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(stacked, {n: 5, xs: xv}), np.cumsum(xv, 0))


def test_tensor_array_gradients(graph):
    x = tf.placeholder(tf.float64, [3, 2])
    ta = tf.TensorArray(tf.float64, size=3)
    unstacked = ta.unstack(x)
    y = tf.reduce_sum(unstacked.read(0) * 2.0) + tf.reduce_sum(unstacked.read(2) ** 2)
    (g,) = tf.gradients(y, x)
    gathered = tf.TensorArray(tf.float64, size=3, clear_after_read=False).scatter(
        [2, 0, 1], x).gather([1, 1])  # element 1 is x[2], read twice
    (gg,) = tf.gradients(tf.reduce_sum(gathered * [[1.0, 2.0], [3.0, 4.0]]), x)
    split = tf.TensorArray(tf.float64, size=2, infer_shape=False).split(
        tf.reshape(x, [6]), [4, 2])
    (gs,) = tf.gradients(tf.reduce_sum(split.concat() * np.arange(6.0)), x)
    xv = np.arange(6.0).reshape(3, 2)
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(g, {x: xv}), [[2, 2], [0, 0], [8, 10]])
        np.testing.assert_array_equal(s.run(gg, {x: xv}), [[0, 0], [0, 0], [4, 6]])
        np.testing.assert_array_equal(s.run(gs, {x: xv}), np.arange(6.0).reshape(3, 2))


def test_stack_ops(graph):
    from tensorflux.ops import tensor_array_ops as ta_ops

    h = ta_ops.stack_v2(-1, tf.float32)
    push = ta_ops.stack_push_v2(h, tf.constant(3.0))
    with tf.control_dependencies([push]):
        pop = ta_ops.stack_pop_v2(h, tf.float32)
    with tf.control_dependencies([pop]):
        empty = ta_ops.stack_pop_v2(h, tf.float32)
    with tf.Session() as s:
        assert s.run(pop) == 3.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="is empty"):
            s.run(empty)
