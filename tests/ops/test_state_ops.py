"""Resource variable ops: handles, reads, assignments, gathers, scatters, their errors,
copy-on-write snapshots, thread safety, and agreement of the static and dataflow executors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorflux as tf
import tensorflux.kernels.cpu.state_ops  # noqa: F401 - registers the kernels
import tensorflux.ops.state_ops as state_ops
import tensorflux.variables.variables  # noqa: F401
from tensorflux.framework import errors, op_registry
from tensorflux.kernels import registry as kernel_registry
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu.state_ops import ResourceHandle
from tests import oracle
from tests.op_test_util import STRATEGIES

EXECUTORS = ["auto", "dataflow", "reference"]


def make_session(kind: str, graph=None, config=None) -> tf.Session:
    return tf.Session(graph=graph, config=config, exec_options=STRATEGIES[kind])


@pytest.fixture(params=EXECUTORS)
def executor(request):
    return request.param


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _stored(sess, name: str, container: str = ""):
    """The array the session's CPU:0 ResourceMgr holds for variable `name` (white box)."""
    var = sess._device_mgr.devices[0].resource_mgr.get(container, name)
    return None if var is None else var.value


# ---- registry ----------------------------------------------------------------------------

STATE_OPS = ["VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
             "AssignSubVariableOp", "VarIsInitializedOp", "DestroyResourceOp", "VariableShape",
             "ResourceGather", "ResourceScatterAdd", "ResourceScatterSub",
             "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMin",
             "ResourceScatterMax", "ResourceScatterUpdate", "ResourceScatterNdAdd",
             "ResourceScatterNdSub", "ResourceScatterNdUpdate", "ResourceCountUpTo"]


@pytest.mark.parametrize("op_type", STATE_OPS)
def test_registered_with_shape_fn_kernel_and_gradient(op_type):
    opdef = op_registry.get(op_type)
    assert opdef.shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None


# ---- handles -----------------------------------------------------------------------------


def test_handle_value_is_a_resource_handle_and_can_be_fed_back(graph, executor):
    h = state_ops.var_handle_op(tf.float32, [2], shared_name="shared", name="vh")
    assert h.dtype == tf.resource and h.shape.as_list() == []
    init = state_ops.assign_variable_op(h, [1.0, 2.0])
    p = tf.placeholder(tf.resource)
    read = state_ops.read_variable_op(p, tf.float32)
    with make_session(executor) as sess:
        value = sess.run(h)
        assert isinstance(value, ResourceHandle)
        assert (value.name, value.container, value.dtype, value.shape) == \
            ("shared", "", tf.float32, (2,))
        assert value.device.endswith("device:CPU:0")
        sess.run(init)
        np.testing.assert_array_equal(sess.run(read, {p: value}), [1.0, 2.0])


def test_shared_name_defaults_to_the_op_name(graph):
    h = state_ops.var_handle_op(tf.int32, [], name="counter")
    with tf.Session() as sess:
        assert sess.run(h).name == "counter"


def test_variables_live_in_each_sessions_resource_mgr(graph):
    v = tf.Variable(1.0, name="v")
    s1, s2 = tf.Session(), tf.Session()
    s1.run(v.initializer)
    s1.run(v.assign(5.0))
    with pytest.raises(errors.FailedPreconditionError):
        s2.run(v)
    s2.run(v.initializer)
    assert s1.run(v) == 5.0 and s2.run(v) == 1.0
    s1.close()
    s2.close()


def test_container_scope_places_the_variable_in_that_container(graph):
    with tf.container("experiment"):
        v = tf.Variable([1, 2], name="v")
    assert v.op.get_attr("container") == b"experiment"
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(_stored(sess, "v", "experiment"), [1, 2])
        tf.Session.reset("", ["experiment"])
        with pytest.raises(errors.FailedPreconditionError):
            sess.run(v)


# ---- uninitialized variables -------------------------------------------------------------


def test_read_of_uninitialized_variable(graph, executor):
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable(3.0, name="w")
    with make_session(executor) as sess:
        with pytest.raises(errors.FailedPreconditionError) as e:
            sess.run(v)
        msg = e.value.message
        assert msg.startswith("Could not find variable v. This could mean that the variable "
                              "has been deleted. In TF1, it can also mean the variable is "
                              "uninitialized. Debug info: container=localhost, status error "
                              "message=Container localhost does not exist.")
        assert "v/Read/ReadVariableOp" in msg
        sess.run(w.initializer)  # now the container exists
        with pytest.raises(errors.FailedPreconditionError,
                           match="Resource localhost/v/N10tensorflow3VarE does not exist"):
            sess.run(v.value())
        assert sess.run(w) == 3.0  # the session stays usable


@pytest.mark.parametrize("make", [
    lambda v: v.assign_add([1.0, 1.0]),
    lambda v: v.assign_sub([1.0, 1.0]),
    lambda v: v.sparse_read([0]),
    lambda v: tf.scatter_add(v, [0], [1.0]),
    lambda v: state_ops.variable_shape(v.handle),
], ids=["assign_add", "assign_sub", "gather", "scatter_add", "variable_shape"])
def test_updates_of_uninitialized_variable_are_not_found(graph, make):
    v = tf.Variable([1.0, 2.0], name="v")
    t = make(v)
    with tf.Session() as sess:
        with pytest.raises(errors.NotFoundError,
                           match=r"^Resource localhost/v/N10tensorflow3VarE does not exist\."):
            sess.run(t)


# ---- static checks -----------------------------------------------------------------------


def test_static_dtype_mismatch_is_a_value_error_naming_the_node(graph):
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match=r"^Trying to read variable with wrong dtype\. "
                       r"Expected float got int32 for '\{\{node AssignVariableOp\}\}"):
        state_ops.assign_variable_op(v.handle, tf.constant([1, 2]))
    with pytest.raises(ValueError, match="Expected float got int32"):
        state_ops.read_variable_op(v.handle, tf.int32)
    with pytest.raises(ValueError, match="Tensor conversion requested dtype float32 for "
                       "Tensor with dtype int32"):
        v.assign(tf.constant([1, 2]))


@pytest.mark.parametrize("make", [
    lambda v: state_ops.assign_variable_op(v.handle, tf.constant([1.0, 2.0])),
    lambda v: state_ops.assign_add_variable_op(v.handle, tf.constant([1.0, 2.0])),
    lambda v: state_ops.assign_sub_variable_op(v.handle, tf.constant([1.0, 2.0])),
], ids=["assign", "assign_add", "assign_sub"])
def test_static_shape_mismatch_is_a_value_error(graph, make):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0, 5.0], name="v")
    with pytest.raises(ValueError, match=r"^Dimension 0 in both shapes must be equal, but are "
                       r"5 and 2\. Shapes are \[5\] and \[2\]\. for '\{\{node "):
        make(v)


def test_variable_assign_with_static_shape_mismatch(graph):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0, 5.0], name="v")
    with pytest.raises(ValueError, match=r"Cannot assign value to variable ' v:0': Shape "
                       r"mismatch\.The variable shape \(5,\), and the assigned value shape "
                       r"\(2,\) are incompatible\."):
        v.assign([1.0, 2.0])


def test_scatter_static_shape_checks(graph):
    v = tf.Variable(np.zeros((3, 2), np.float32), name="v")
    with pytest.raises(ValueError, match=r"Dimension 1 in both shapes must be equal, but are 3 "
                       r"and 2\. Shapes are \[2,3\] and \[2,2\]\."):
        state_ops.resource_scatter_update(v.handle, [0, 2], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    state_ops.resource_scatter_add(v.handle, [0, 1], 10.0)  # scalar updates are allowed


# ---- run-time checks ---------------------------------------------------------------------


def test_runtime_shape_checks(graph, executor):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0, 5.0], name="v")
    p = tf.placeholder(tf.float32)
    assign = v.assign(p)
    relaxed = state_ops.assign_variable_op(v.handle, p, validate_shape=False)
    add = v.assign_add(p)
    with make_session(executor) as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError, match=r"^Trying to assign to variable "
                           r"with tensor with wrong shape\. Expected \[5\] got \[2\]"):
            sess.run(assign, {p: [1.0, 2.0]})
        with pytest.raises(errors.InvalidArgumentError, match=r"^Cannot update variable with "
                           r"shape \[5\] using a Tensor with shape \[3\], shapes must be "
                           r"equal\."):
            sess.run(add, {p: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(sess.run(v), [1, 2, 3, 4, 5])
        sess.run(relaxed, {p: [7.0, 8.0]})  # validate_shape=False may change the shape
        np.testing.assert_array_equal(sess.run(v.value()), [7.0, 8.0])


def test_runtime_dtype_mismatch_through_a_fed_handle(graph):
    v = tf.Variable([1.0, 2.0], name="v")
    p = tf.placeholder(tf.resource)
    read = state_ops.read_variable_op(p, tf.int32)
    assign = state_ops.assign_add_variable_op(p, tf.constant([1, 2]))
    with tf.Session() as sess:
        sess.run(v.initializer)
        h = sess.run(v.handle)
        with pytest.raises(errors.InvalidArgumentError, match="Trying to read variable with "
                           "wrong dtype. Expected float got int32"):
            sess.run(read, {p: h})
        with pytest.raises(errors.InvalidArgumentError, match="wrong dtype. Expected float "
                           "got int32"):
            sess.run(assign, {p: h})
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


# ---- ResourceGather ----------------------------------------------------------------------

PARAMS = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
GATHER_CASES = [
    ("rows", PARAMS, [2, 0, 2], 0),
    ("matrix_indices", PARAMS, [[1, 3], [0, 0]], 0),
    ("scalar_index", PARAMS, 1, 0),
    ("vector_params", np.array([5, 6, 7], np.int64), [2, 1], 0),
    ("batch_dims_1", PARAMS, [[0, 2], [1, 1], [2, 0], [1, 2]], 1),
    ("batch_dims_neg", PARAMS, [[0, 2], [1, 1], [2, 0], [1, 2]], -1),
]


def _batched_gather(params, indices, batch_dims):
    indices = np.asarray(indices)
    if batch_dims < 0:
        batch_dims += indices.ndim
    if batch_dims == 0:
        return params[indices]
    return np.stack([_batched_gather(p, i, batch_dims - 1)
                     for p, i in zip(params, indices, strict=True)])


@pytest.mark.parametrize("name,params,indices,batch_dims", GATHER_CASES,
                         ids=[c[0] for c in GATHER_CASES])
def test_resource_gather(graph, executor, name, params, indices, batch_dims):
    v = tf.Variable(params, name="v")
    out = state_ops.resource_gather(v.handle, indices, v.dtype, batch_dims=batch_dims)
    expected = _batched_gather(params, indices, batch_dims)
    assert out.shape.as_list() == list(expected.shape)
    with make_session(executor) as sess:
        sess.run(v.initializer)
        got = sess.run(out)
    assert got.dtype == params.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("indices,message", [
    ([0, 7, 2], r"indices\[1\] = 7 is not in \[0, 5\)"),
    ([-1], r"indices\[0\] = -1 is not in \[0, 5\)"),
    ([[1, 9]], r"indices\[0,1\] = 9 is not in \[0, 5\)"),
])
def test_gather_out_of_range_names_the_node_and_session_stays_usable(graph, executor, indices,
                                                                     message):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0, 5.0], name="v")
    g = v.sparse_read(indices, name="lookup")
    with make_session(executor) as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError, match="^" + message) as e:
            sess.run(g)
        assert "lookup" in e.value.message and e.value.node_name == "lookup"
        np.testing.assert_array_equal(sess.run(v.sparse_read([4, 0])), [5.0, 1.0])
        np.testing.assert_array_equal(sess.run(v), [1, 2, 3, 4, 5])


def test_gradients_flow_to_the_handle(graph):
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="v")
    dense, = tf.gradients(tf.reduce_sum(v.value() * 2.0), v)
    sparse, = tf.gradients(tf.reduce_sum(v.sparse_read([0, 2, 0]) * 3.0), [v])
    assert hasattr(sparse, "indices") and hasattr(sparse, "dense_shape")
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(dense), np.full((3, 2), 2.0))
        values, indices, shape = sess.run([sparse.values, sparse.indices, sparse.dense_shape])
    np.testing.assert_array_equal(values, np.full((3, 2), 3.0))
    np.testing.assert_array_equal(indices, [0, 2, 0])
    np.testing.assert_array_equal(shape, [3, 2])


# ---- scatters ----------------------------------------------------------------------------

SCATTER_CASES = [
    ("ResourceScatterAdd", np.add, np.float32),
    ("ResourceScatterSub", np.subtract, np.float32),
    ("ResourceScatterMul", np.multiply, np.float64),
    ("ResourceScatterDiv", np.divide, np.float32),
    ("ResourceScatterMin", np.minimum, np.int32),
    ("ResourceScatterMax", np.maximum, np.int64),
    ("ResourceScatterUpdate", None, np.float32),
]


@pytest.mark.parametrize("width", [3, 80], ids=["ufunc_at", "row_by_row"])
@pytest.mark.parametrize("op_type,ufunc,np_dtype", SCATTER_CASES,
                         ids=[c[0] for c in SCATTER_CASES])
def test_scatter_with_duplicate_indices(graph, executor, op_type, ufunc, np_dtype, width):
    """Rows of 3 go through ufunc.at, rows of 80 row by row (kernels/cpu/state_ops.py):
    both give ufunc.at's values exactly, duplicates applied in order."""
    rng = np.random.default_rng(width)
    init = rng.integers(2, 50, (4, width)).astype(np_dtype)
    indices = np.array([[3, 0], [3, 0]], np.int32)
    updates = rng.integers(1, 10, (2, 2, width)).astype(np_dtype)
    expected = init.copy()
    if ufunc is None:
        expected[[3, 0]] = updates[1]  # the last update of an index wins
    else:
        ufunc.at(expected, indices, updates)
    v = tf.Variable(init, name="v")
    op = state_ops.resource_scatter(op_type, v.handle, indices, updates)
    with make_session(executor) as sess:
        sess.run(v.initializer)
        sess.run(op)
        got = sess.run(v)
    if np_dtype == np.float32 and op_type == "ResourceScatterDiv":
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_type,ufunc", [("ResourceScatterAdd", np.add),
                                           ("ResourceScatterSub", np.subtract)])
@pytest.mark.parametrize("row_shape", [(5,), (64,), (3, 4)])
def test_scatter_add_sub_rows_in_order(graph, op_type, ufunc, np_dtype, row_shape):
    """Add and Sub of whole rows (native.scatter_rows when the C extension is built): many
    duplicates of non-integer values give ufunc.at's bits, each row's updates applied one at
    a time in the order of the indices."""
    rng = np.random.default_rng(len(row_shape) * 100 + row_shape[0])
    init = rng.standard_normal((7,) + row_shape).astype(np_dtype)
    indices = rng.integers(0, 7, (40, 3)).astype(np.int32)
    updates = (rng.standard_normal((40, 3) + row_shape) * 1e3).astype(np_dtype)
    expected = init.copy()
    ufunc.at(expected, indices, updates)
    v = tf.Variable(init, name="v")
    op = state_ops.resource_scatter(op_type, v.handle, indices, updates)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(op)
        np.testing.assert_array_equal(sess.run(v), expected)


@pytest.mark.skipif(not native.available(), reason="the C extension is not built")
def test_native_scatter_rows_refuses_what_it_cannot_do():
    target = np.zeros((3, 4), np.float32)
    rows = np.ones((2, 4), np.float32)
    assert native.scatter_rows(target, np.array([2, 2]), rows, False)
    np.testing.assert_array_equal(target[2], [2, 2, 2, 2])
    assert not native.scatter_rows(target, np.array([0, 1]), rows.astype(np.float64), False)
    assert not native.scatter_rows(target, np.array([0]), rows, False)  # count mismatch
    assert not native.scatter_rows(np.zeros(3, np.float32), np.array([0]), np.ones(1), False)
    with pytest.raises(ValueError, match="out of range"):
        native.scatter_rows(target, np.array([0, 3]), rows, True)
    np.testing.assert_array_equal(target[0], 0)  # nothing written before the refusal


def test_scatter_scalar_updates_and_integer_division(graph):
    v = tf.Variable([7, -7, 9, 4], name="v")
    div = state_ops.resource_scatter_div(v.handle, [0, 1, 2], [2, 2, -4])
    add = state_ops.resource_scatter_add(v.handle, [3, 3], 10)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(div)
        np.testing.assert_array_equal(sess.run(v), [3, -3, -2, 4])  # rounds toward zero
        sess.run(add)
        np.testing.assert_array_equal(sess.run(v), [3, -3, -2, 24])


def test_scatter_errors_leave_the_variable_unchanged(graph, executor):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0, 5.0], name="v")
    idx = tf.placeholder(tf.int32)
    upd = tf.placeholder(tf.float32)
    op = state_ops.resource_scatter_add(v.handle, idx, upd)
    with make_session(executor) as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^indices\[1\] = 9 is not in \[0, 5\)"):
            sess.run(op, {idx: [0, 9], upd: [1.0, 1.0]})
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^Must have updates.shape = indices.shape \+ "
                                 r"params.shape\[1:\] or updates.shape = \[\], got updates.shape "
                                 r"\[3\], indices.shape \[2\], params.shape \[5\]"):
            sess.run(op, {idx: [0, 1], upd: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(sess.run(v), [1, 2, 3, 4, 5])


@pytest.mark.parametrize("fn,expected", [
    (tf.scatter_nd_add, [[10, 1], [2, 3], [4, 25]]),
    (tf.scatter_nd_sub, [[-10, 1], [2, 3], [4, -15]]),
    (tf.scatter_nd_update, [[10, 1], [2, 3], [4, 20]]),
])
def test_scatter_nd(graph, executor, fn, expected):
    v = tf.Variable(np.arange(6, dtype=np.int32).reshape(3, 2), name="v")
    out = fn(v, [[0, 0], [2, 1]], [10, 20])
    with make_session(executor) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(out), expected)


def test_scatter_nd_out_of_range(graph):
    v = tf.Variable(np.zeros((3, 2), np.float32), name="v")
    out = tf.scatter_nd_add(v, [[0, 0], [3, 1]], [1.0, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"indices\[1\] = \[3, 1\] does not index into param shape "
                                 r"\[3,2\]"):
            sess.run(out)


# ---- VarIsInitializedOp, DestroyResourceOp, VariableShape, ResourceCountUpTo -------------


def test_is_initialized_destroy_and_variable_shape(graph, executor):
    v = tf.Variable(np.zeros((2, 3), np.float32), name="v")
    shape = state_ops.variable_shape(v.handle)
    destroy = state_ops.destroy_resource_op(v.handle, ignore_lookup_error=False)
    destroy_quietly = state_ops.destroy_resource_op(v.handle)
    assert shape.shape.as_list() == [2]
    with make_session(executor) as sess:
        assert not sess.run(v.is_initialized())
        sess.run(v.initializer)
        assert sess.run(tf.is_variable_initialized(v))
        np.testing.assert_array_equal(sess.run(shape), [2, 3])
        sess.run(destroy)
        assert not sess.run(v.is_initialized())
        with pytest.raises(errors.NotFoundError,
                           match=r"^Resource localhost/v/<unknown> does not exist\."):
            sess.run(destroy)
        sess.run(destroy_quietly)
        with pytest.raises(errors.FailedPreconditionError):
            sess.run(v)


def test_reads_find_a_variable_destroyed_and_made_again(graph, executor):
    """A read keeps the variable it looked up only while nothing is removed: after a
    destroy it reports the variable missing, and it reads the one made again."""
    v = tf.Variable(np.full(3, 2.0, np.float32), name="v")
    read = v.read_value()
    destroy = state_ops.destroy_resource_op(v.handle)
    make = v.handle  # the same handle, assigned anew below
    with make_session(executor) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(read), [2.0, 2.0, 2.0])
        sess.run(destroy)
        with pytest.raises(errors.FailedPreconditionError, match="Could not find variable v"):
            sess.run(read)
        sess.run(state_ops.assign_variable_op(make, np.full(3, 5.0, np.float32)))
        np.testing.assert_array_equal(sess.run(read), [5.0, 5.0, 5.0])
        sess.run(destroy)
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(read), [2.0, 2.0, 2.0])


def test_count_up_to(graph, executor):
    v = tf.Variable(0, name="counter")
    up = tf.count_up_to(v, 3)
    with make_session(executor) as sess:
        sess.run(v.initializer)
        assert [sess.run(up) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(errors.OutOfRangeError, match="Reached limit of 3"):
            sess.run(up)
        assert sess.run(v) == 3


# ---- snapshots and copy-on-write ---------------------------------------------------------


def test_fetched_value_is_a_snapshot(graph, executor):
    v = tf.Variable([1.0, 2.0, 3.0], name="v")
    add = v.assign_add([1.0, 1.0, 1.0], read_value=False)
    with make_session(executor) as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        sess.run(add)
        np.testing.assert_array_equal(before, [1.0, 2.0, 3.0])
        after = sess.run(v)
        np.testing.assert_array_equal(after, [2.0, 3.0, 4.0])
        after[0] = 100.0  # writing into a fetched array never changes the variable
        np.testing.assert_array_equal(sess.run(v), [2.0, 3.0, 4.0])


def test_read_held_in_a_step_is_a_snapshot(graph, executor):
    v = tf.Variable([1.0, 2.0], name="v")
    r = v.value()
    with tf.control_dependencies([r]):
        add = v.assign_add([10.0, 10.0], read_value=False)
    with tf.control_dependencies([add]):
        scat = tf.scatter_update(v, [0], [-1.0])
    with make_session(executor) as sess:
        sess.run(v.initializer)
        got_r, got_scat = sess.run([r, scat])
        np.testing.assert_array_equal(got_r, [1.0, 2.0])
        np.testing.assert_array_equal(got_scat, [-1.0, 12.0])


def test_fed_initial_value_is_copied(graph, executor):
    v = tf.Variable(np.zeros(3, np.float32), name="v")
    add = v.assign_add([1.0, 1.0, 1.0], read_value=False)
    fed = np.array([5.0, 6.0, 7.0], np.float32)
    with make_session(executor) as sess:
        v.load(fed, sess)
        sess.run(add)
        np.testing.assert_array_equal(fed, [5.0, 6.0, 7.0])
        np.testing.assert_array_equal(sess.run(v), [6.0, 7.0, 8.0])


def test_updates_write_in_place_when_nobody_holds_the_value(graph, executor):
    v = tf.Variable(np.zeros(1000, np.float32), name="v")
    add = v.assign_add(np.ones(1000, np.float32), read_value=False)
    assign = v.assign(np.full(1000, 3.0, np.float32), read_value=False)
    scatter = state_ops.resource_scatter_add(v.handle, [0], [1.0])
    with make_session(executor) as sess:
        sess.run(v.initializer)
        # Only the id: holding the array here would itself force copies. A copy is made while
        # the old array is alive, so it always gets another id.
        storage = id(_stored(sess, "v"))
        for op in (add, assign, scatter, add):
            sess.run(op)
            assert id(_stored(sess, "v")) == storage  # no copy: nothing else held it
        held = sess.run(v)  # the caller gets a copy; the storage stays free
        sess.run(add)
        assert id(_stored(sess, "v")) == storage
        assert held[0] == 5.0 and sess.run(v)[0] == 6.0
        kept = sess.run(v.value())
        with_read = sess.run(add)  # noqa: F841 - a fetch copy, not the storage: still in place
        assert id(_stored(sess, "v")) == storage and kept[0] == 6.0


# ---- concurrency -------------------------------------------------------------------------


def _run_threads(n: int, target) -> None:
    failures: list[BaseException] = []

    def wrapped(k):
        try:
            target(k)
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=wrapped, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=100)
    assert not any(t.is_alive() for t in threads)
    if failures:
        raise failures[0]


def test_concurrent_locked_assign_add_loses_no_update(graph, executor):
    v = tf.Variable(0, name="counter")
    inc = v.assign_add(1, use_locking=True, read_value=False)
    with make_session(executor) as sess:
        sess.run(v.initializer)
        _run_threads(8, lambda _: [sess.run(inc) for _ in range(500)])
        assert sess.run(v) == 4000


def test_many_threads_reading_and_updating_see_consistent_snapshots(graph):
    v = tf.Variable(np.zeros(64, np.int64), name="v")
    inc = v.assign_add(np.ones(64, np.int64))
    read = v.value()
    gathered = v.sparse_read([0, 63])
    with tf.Session() as sess:
        sess.run(v.initializer)

        def work(k):
            last = -1
            for i in range(200):
                if (i + k) % 2:
                    value = sess.run(inc)
                else:
                    value = sess.run(read) if i % 4 else sess.run(gathered)
                assert (value == value[0]).all(), "torn read"
                assert value[0] >= last  # this thread's runs are ordered
                last = value[0]

        _run_threads(32, work)
        np.testing.assert_array_equal(sess.run(v), np.full(64, 3200))


# ---- every strategy ----------------------------------------------------------------------


def test_every_strategy_agrees(graph):
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="v")
    w = tf.Variable([1.0, -1.0], name="w")
    ops = [v.assign_add(tf.ones([3, 2]) * w.value()), w.assign_sub([0.5, 0.5]),
           v.sparse_read([2, 0]), tf.scatter_mul(v, [1], [[2.0, 2.0]]), [v.value(), w]]
    results = []
    for kind in EXECUTORS:
        with make_session(kind) as sess:
            sess.run([v.initializer, w.initializer])
            results.append([sess.run(op) for _ in range(3) for op in ops])
            ex_types = {type(ex).__name__ for s in sess._steps.values() for _, ex, _ in s.parts}
            assert ex_types == {{"auto": "StaticExecutor", "dataflow": "Executor",
                                 "reference": "ReferenceExecutor"}[kind]}
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            for x, y in zip(a if isinstance(a, list) else [a],
                            b if isinstance(b, list) else [b], strict=True):
                np.testing.assert_array_equal(x, y)


@pytest.mark.oracle
def test_error_classes_and_messages_match_tensorflow():
    res = oracle.run_tf("""
    tf.enable_resource_variables()
    from tensorflow.python.ops import gen_resource_variable_ops as g
    def err(f):
        try:
            f()
            return None
        except Exception as e:
            lines = [l for l in str(e).split("\\n") if l.strip() and not l.startswith(" ")
                     and not l.startswith("Graph execution") and not l.startswith("Detected")
                     and not l.startswith("Node:")]
            return [type(e).__name__, lines[0]]
    v = tf.Variable([1., 2., 3., 4., 5.], name='v')
    w = tf.Variable(1.0, name='w')
    s = tf.Session()
    out = [err(lambda: s.run(v))]
    s.run(w.initializer)
    out.append(err(lambda: s.run(v)))
    out.append(err(lambda: s.run(v.assign_add([1.] * 5))))
    s.run(v.initializer)
    out.append(err(lambda: s.run(v.sparse_read([0, 7]))))
    out.append(err(lambda: g.assign_variable_op(v.handle, tf.constant([1, 2, 3, 4, 5]))))
    out.append(err(lambda: g.assign_variable_op(v.handle, tf.constant([1., 2.]))))
    result = out
    """)
    v = tf.Graph()
    with v.as_default():
        var = tf.Variable([1., 2., 3., 4., 5.], name="v")
        w = tf.Variable(1.0, name="w")
        mine = []

        def err(f):
            try:
                f()
                return None
            except Exception as e:  # noqa: BLE001
                msg = e.message if isinstance(e, errors.OpError) else str(e)
                return [type(e).__name__, msg.split("\n")[0]]

        with tf.Session() as s:
            mine.append(err(lambda: s.run(var)))
            s.run(w.initializer)
            mine.append(err(lambda: s.run(var)))
            mine.append(err(lambda: s.run(var.assign_add([1.] * 5))))
            s.run(var.initializer)
            mine.append(err(lambda: s.run(var.sparse_read([0, 7]))))
            mine.append(err(lambda: state_ops.assign_variable_op(
                var.handle, tf.constant([1, 2, 3, 4, 5]))))
            mine.append(err(lambda: state_ops.assign_variable_op(
                var.handle, tf.constant([1., 2.]))))
    for theirs, ours in zip(res, mine, strict=True):
        assert theirs[0] == ours[0]
        # Node names and graph-construction suffixes differ only after the first sentence.
        assert ours[1].split(" for '")[0] == theirs[1].split(" for '")[0]
