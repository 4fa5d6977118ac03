"""tf.Variable, collections and initializers, tf.get_variable / tf.variable_scope, and the
init_ops initializers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorflux as tf
import tensorflux.variables.init_ops as init_ops
import tensorflux.variables.variable_scope  # noqa: F401
import tensorflux.variables.variables as variables
from tensorflux.framework import errors
from tests import oracle


def _group_works() -> bool:
    g = tf.Graph()
    with g.as_default():
        try:
            tf.group(tf.constant(1))
        except TypeError:
            return False
    return True


needs_group = pytest.mark.skipif(
    not _group_works(), reason="tf.group (control_flow/builders.py) is broken: its `_flatten` "
    "calls isinstance(x, (list, tuple)) where `tuple` is the module's tf.tuple")


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _op_names(g, prefix=""):
    return [op.name for op in g.get_operations() if op.name.startswith(prefix)]


# ---- structure and names -----------------------------------------------------------------


def test_variable_nodes_and_names(graph):
    v = tf.Variable([1.0, 2.0], name="v")
    assert isinstance(v, tf.Variable)
    assert (v.name, v.op.name, v.op.type) == ("v:0", "v", "VarHandleOp")
    assert [(op.name, op.type) for op in graph.get_operations()] == [
        ("v/Initializer/initial_value", "Const"), ("v", "VarHandleOp"),
        ("v/IsInitialized/VarIsInitializedOp", "VarIsInitializedOp"),
        ("v/Assign", "AssignVariableOp"), ("v/Read/ReadVariableOp", "ReadVariableOp")]
    assert v.handle.dtype == tf.resource and v.dtype == tf.float32
    assert v.shape.as_list() == [2] and v.get_shape().as_list() == [2]
    assert v.initializer.name == "v/Assign" and v.initializer.type == "AssignVariableOp"
    assert v.initial_value.name == "v/Initializer/initial_value:0"
    assert v._as_graph_element().name == "v/Read/ReadVariableOp:0"
    assert v.graph is graph and v.device == ""
    assert v.op.get_attr("shared_name") == b"v"
    assert graph.get_operation_by_name("v/Initializer/initial_value").colocation_groups() == \
        [b"loc:@v"]
    assert repr(v) == "<tf.Variable 'v:0' shape=(2,) dtype=float32>"


def test_reads_make_new_ops_each_time(graph):
    v = tf.Variable(1.0, name="v")
    r1, r2 = v.value(), v.value()
    assert r1 is not r2 and (r1.name, r2.name) == ("ReadVariableOp:0", "ReadVariableOp_1:0")
    rv = v.read_value()
    assert rv.op.type == "Identity" and rv.op.inputs[0].name == "Read/ReadVariableOp:0"
    t = tf.convert_to_tensor(v)
    assert t.op.type == "ReadVariableOp" and t.dtype == tf.float32
    assert tf.convert_to_tensor(v, as_ref=True) is v.handle
    with pytest.raises(ValueError, match="Incompatible type conversion requested to type "
                       "int32 for `tf.Variable of type float32"):
        tf.convert_to_tensor(v, dtype=tf.int32)


def test_unique_names_and_name_scopes(graph):
    a = tf.Variable(1.0)
    b = tf.Variable(1.0)
    c = tf.Variable(1.0, name="w")
    d = tf.Variable(1.0, name="w")
    with tf.name_scope("outer"):
        e = tf.Variable(1.0, name="w")
    assert [x.name for x in (a, b, c, d, e)] == \
        ["Variable:0", "Variable_1:0", "w:0", "w_1:0", "outer/w:0"]
    assert d.op.get_attr("shared_name") == b"w_1"


def test_callable_initial_value_ops_are_colocated(graph):
    v = tf.Variable(lambda: tf.ones([2]) * 3, name="w", trainable=False)
    ops = _op_names(graph, "w/Initializer/")
    assert ops and all(graph.get_operation_by_name(n).colocation_groups() == [b"loc:@w"]
                       for n in ops)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [3.0, 3.0])


def test_creation_escapes_control_dependencies(graph):
    gate = tf.no_op(name="gate")
    with tf.control_dependencies([gate]):
        v = tf.Variable(1.0, name="v")
        r = v.value()
    assert all(not op.control_inputs for op in graph.get_operations()
               if op.name.startswith("v"))
    assert r.op.control_inputs == [gate]


def test_caching_device(graph):
    v = tf.Variable([1.0, 2.0], name="v", caching_device="/cpu:0")
    cached = v.value()
    assert cached is v.value() and cached.op.type == "Identity"
    assert cached.device == "/device:CPU:0"
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(cached), [1.0, 2.0])


# ---- construction errors -----------------------------------------------------------------

CONSTRUCTION_ERRORS = [
    (dict(), ValueError, "The `initial_value` arg to `tf.Variable` must be specified"),
    (dict(initial_value=1.0, collections="x"), ValueError,
     "collections argument to Variable constructor must be a list, tuple, or set"),
    (dict(initial_value=1.0, constraint=3), ValueError,
     "The `constraint` argument must be a callable"),
    (dict(initial_value=[1.0, 2.0], shape=[3]), ValueError,
     r"the initial value's shape \(\(2,\)\) is not compatible with the explicitly supplied "
     r"`shape` argument \(\[3\]\)"),
    (dict(initial_value=1.0, trainable=True,
          synchronization=variables.VariableSynchronization.ON_READ), ValueError,
     "only for non-trainable variables"),
]


@pytest.mark.parametrize("kwargs,exc,message", CONSTRUCTION_ERRORS)
def test_construction_errors(graph, kwargs, exc, message):
    with pytest.raises(exc, match=message):
        tf.Variable(**kwargs)


def test_dtype_and_shape_arguments(graph):
    assert tf.Variable(1, dtype=tf.float32).dtype == tf.float32
    assert tf.Variable(3).dtype == tf.int32
    assert tf.Variable(np.zeros((2, 3), np.int64)).shape.as_list() == [2, 3]
    with pytest.raises(ValueError, match="Tensor conversion requested dtype float32"):
        tf.Variable(tf.constant(1), dtype=tf.float32)
    p = tf.placeholder_with_default([1.0, 2.0], [None])
    assert tf.Variable(p).shape.as_list() == [None]
    # TF1's variables (VariableV2) made with validate_shape=False have no static shape, so
    # that programs can assign values of other shapes (TF 2's resource variables keep
    # the initial value's shape and refuse them; tensorflux follows TF1).
    relaxed = tf.Variable([1.0, 2.0], validate_shape=False)
    assert relaxed.shape.ndims is None and relaxed.op.get_attr("shape").unknown_rank
    grown = tf.assign(relaxed, [[1.0, 2.0, 3.0]], validate_shape=False)
    with tf.Session() as sess:
        sess.run(relaxed.initializer)
        assert sess.run(grown).shape == (1, 3) and sess.run(relaxed).shape == (1, 3)
    with tf.Session() as sess:
        sess.run(relaxed.initializer)
        sess.run(relaxed.assign(tf.placeholder_with_default([1.0, 2.0, 3.0], None)))
        np.testing.assert_array_equal(sess.run(relaxed), [1.0, 2.0, 3.0])


# ---- lifecycle ---------------------------------------------------------------------------


def test_lifecycle_assign_family(graph):
    v = tf.Variable([1.0, 2.0], name="v")
    a = v.assign([5.0, 6.0])
    add = v.assign_add([1.0, 1.0])
    sub = tf.assign_sub(v, [0.5, 0.5])
    no_read = v.assign([0.0, 0.0], read_value=False)
    assert isinstance(no_read, tf.Operation) and no_read.type == "AssignVariableOp"
    assert a.op.type == "ReadVariableOp" and a.op.control_inputs[0].type == "AssignVariableOp"
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError):
            sess.run(v)
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(a), [5.0, 6.0])
        np.testing.assert_array_equal(sess.run(add), [6.0, 7.0])
        np.testing.assert_array_equal(sess.run(sub), [5.5, 6.5])
        assert sess.run(no_read) is None
        np.testing.assert_array_equal(v.eval(sess), [0.0, 0.0])
        v.load([3.0, 4.0], sess)
        with sess.as_default():
            np.testing.assert_array_equal(v.eval(), [3.0, 4.0])
        np.testing.assert_array_equal(sess.run(tf.assign(v, [9.0, 9.0])), [9.0, 9.0])


def test_initialized_value_initializes_its_variable_first(graph):
    w = tf.Variable([1.0, 2.0], name="w")
    w2 = tf.Variable(w.initialized_value() + 1.0, name="w2")
    with tf.Session() as sess:
        # TF1: cond(is_initialized(w), read w, w's initial value): w itself stays
        # uninitialized (checked against TensorFlow).
        sess.run(w2.initializer)
        np.testing.assert_array_equal(sess.run(w2), [2.0, 3.0])
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(w)
    with tf.Session() as sess:
        sess.run([w.initializer, w2.initializer])
        np.testing.assert_array_equal(sess.run(w2), [2.0, 3.0])


def test_scatter_methods_and_sparse_read(graph):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0], name="v")
    slices = tf.IndexedSlices(tf.constant([10.0, 20.0]), tf.constant([3, 0]))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v.scatter_add(slices)), [21, 2, 3, 14])
        np.testing.assert_array_equal(sess.run(v.scatter_sub(slices)), [1, 2, 3, 4])
        np.testing.assert_array_equal(sess.run(v.scatter_update(slices)), [20, 2, 3, 10])
        np.testing.assert_array_equal(sess.run(v.scatter_max(slices)), [20, 2, 3, 10])
        np.testing.assert_array_equal(sess.run(v.sparse_read([3, 1])), [10.0, 2.0])
        np.testing.assert_array_equal(sess.run(tf.scatter_update(v, [1], [7.0])),
                                      [20, 7, 3, 10])
    with pytest.raises(TypeError, match="Argument `sparse_delta` must be a "
                       "`tf.IndexedSlices`"):
        v.scatter_add(([0], [1.0]))


def test_operators_read_and_delegate(graph):
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable([3.0, 4.0], name="w")
    m = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="m")
    exprs = {"add": v + 1, "radd": 1 + v, "mul": v * w, "neg": -v, "sub": 1 - v,
             "getitem": v[0], "div": w / 2, "matmul": m @ m, "lt": v < w, "pow": v ** 2}
    assert exprs["add"].name == "add:0" and exprs["add"].op.inputs[0].op.type == \
        "ReadVariableOp"
    with tf.Session() as sess:
        sess.run([v.initializer, w.initializer, m.initializer])
        got = sess.run(exprs)
    np.testing.assert_array_equal(got["add"], [2, 3])
    np.testing.assert_array_equal(got["radd"], [2, 3])
    np.testing.assert_array_equal(got["mul"], [3, 8])
    np.testing.assert_array_equal(got["neg"], [-1, -2])
    np.testing.assert_array_equal(got["sub"], [0, -1])
    assert got["getitem"] == 1.0
    np.testing.assert_array_equal(got["div"], [1.5, 2])
    np.testing.assert_array_equal(got["matmul"], [[7, 10], [15, 22]])
    np.testing.assert_array_equal(got["lt"], [True, True])
    np.testing.assert_array_equal(got["pow"], [1, 4])
    with pytest.raises(TypeError, match="not iterable"):
        iter(v)
    with pytest.raises(TypeError):
        len(v)


def test_truth_test_follows_tf1_default_kind(graph):
    # A variable of the default kind stands where TF1 makes a reference variable: true as
    # any object (tflearn's `if not step_tensor:`); asked-for resource variables refuse.
    assert bool(tf.Variable(1.0, name="default_kind"))
    assert bool(tf.get_variable("default_get", [2]))
    explicit = [tf.Variable(1.0, name="explicit", use_resource=True)]
    with tf.variable_scope("res", use_resource=True):
        explicit.append(tf.get_variable("scoped", [2]))
    for v in explicit:
        with pytest.raises(TypeError, match="as a Python `bool` is not allowed"):
            bool(v)


def test_count_up_to_method(graph):
    v = tf.Variable(np.int64(1), name="c")
    up = v.count_up_to(2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(up) == 1
        with pytest.raises(errors.OutOfRangeError):
            sess.run(up)


def test_proto_round_trip(graph):
    v = tf.Variable([1.0, 2.0], name="v", trainable=False)
    d = v.to_proto()
    assert (d.variable_name, d.initializer_name, d.snapshot_name, d.initial_value_name) == \
        ("v:0", "v/Assign", "v/Read/ReadVariableOp:0", "v/Initializer/initial_value:0")
    assert d.is_resource and not d.trainable
    again = tf.Variable.from_proto(d)
    assert again.handle is v.handle and again.initializer is v.initializer
    assert again.dtype == tf.float32 and again.shape.as_list() == [2]
    with tf.Session() as sess:
        sess.run(again.initializer)
        np.testing.assert_array_equal(sess.run(again), [1.0, 2.0])


# ---- devices -----------------------------------------------------------------------------


def test_device_scope_places_the_variable_and_its_users(graph):
    with tf.device("/cpu:1"):
        v = tf.Variable([1.0, 2.0], name="v")
    r = v.value()
    add = v.assign_add([1.0, 1.0])
    assert v.device == "/device:CPU:1" and v.initializer.device == "/device:CPU:1"
    config = tf.ConfigProto(device_count={"CPU": 2})
    with tf.Session(config=config) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run([r, add])[1], [2.0, 3.0])
        on1 = sess._device_mgr.devices[1].resource_mgr.get("", "v")
        assert on1 is not None and sess._device_mgr.devices[0].resource_mgr.get("", "v") is None


def test_colocate_with_places_the_handle(graph):
    with tf.device("/cpu:1"):
        anchor = tf.constant(1.0, name="anchor")
    with tf.colocate_with(anchor):
        v = tf.Variable(2.0, name="v")
    assert v.op.colocation_groups() == [b"loc:@anchor"]
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        sess.run(v.initializer)
        assert sess.run(v + anchor) == 3.0
        assert sess._device_mgr.devices[1].resource_mgr.get("", "v") is not None


# ---- collections and initializers --------------------------------------------------------


def test_collections(graph):
    v = tf.Variable(1.0, name="v")
    t = tf.Variable(1.0, name="t", trainable=False)
    loc = tf.Variable(1.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    with tf.variable_scope("scope"):
        m = tf.Variable(1.0, name="m", collections=[tf.GraphKeys.GLOBAL_VARIABLES,
                                                    tf.GraphKeys.MODEL_VARIABLES])
    assert tf.global_variables() == [v, t, m] == tf.all_variables()
    assert tf.trainable_variables() == [v, loc, m]  # trainable unless told otherwise
    assert tf.local_variables() == [loc]
    assert tf.model_variables() == [m]
    assert tf.global_variables("scope") == [m] and tf.trainable_variables("v") == [v]
    assert tf.moving_average_variables() == []


@needs_group
def test_initializers_and_report_uninitialized(graph):
    v = tf.Variable([1.0, 2.0], name="v")
    loc = tf.Variable(lambda: tf.zeros([2]), name="loc",
                      collections=[tf.GraphKeys.LOCAL_VARIABLES])
    x = tf.Variable(v.read_value() + 1, name="x")
    init = tf.global_variables_initializer()
    linit = tf.local_variables_initializer()
    vinit = tf.variables_initializer([v])
    empty = tf.variables_initializer([])
    report = tf.report_uninitialized_variables()
    assert (init.name, linit.name, vinit.name, empty.name, empty.type) == \
        ("init", "init_1", "init_2", "init_3", "NoOp")
    assert sorted(op.name for op in init.control_inputs) == ["v/Assign", "x/Assign"]
    assert report.dtype == tf.string
    with tf.Session() as sess:
        assert list(sess.run(report)) == [b"v", b"x", b"loc"]
        sess.run(vinit)
        assert list(sess.run(report)) == [b"x", b"loc"]
        sess.run(init)
        assert list(sess.run(report)) == [b"loc"]
        sess.run(linit)
        assert sess.run(report).shape == (0,)
        np.testing.assert_array_equal(sess.run(x), [2.0, 3.0])
        assert sess.run(tf.is_variable_initialized(loc))
    with tf.Graph().as_default():
        none = tf.report_uninitialized_variables()
        with tf.Session() as sess:
            assert sess.run(none).shape == (0,)


def test_report_uninitialized_of_a_var_list(graph):
    v = tf.Variable(1.0, name="v")
    w = tf.Variable(2.0, name="w")
    report = tf.report_uninitialized_variables([v, w], name="report")
    assert report.op.name.startswith("report/")
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert list(sess.run(report)) == [b"v"]


# ---- get_variable and variable_scope -----------------------------------------------------


def test_get_variable_reuse_matrix(graph):
    zeros = tf.zeros_initializer()
    with tf.variable_scope("foo"):
        w = tf.get_variable("w", [2, 3], initializer=zeros)
        with pytest.raises(ValueError, match=r"^Variable foo/w already exists, disallowed\. Did "
                           r"you mean to set reuse=True or reuse=tf\.AUTO_REUSE in VarScope\?$"):
            tf.get_variable("w", [2, 3])
    with tf.variable_scope("foo", reuse=True):
        assert tf.get_variable("w", [2, 3]) is w
        assert tf.get_variable("w") is w  # no shape needed to reuse
        with pytest.raises(ValueError, match=r"^Variable foo/zz does not exist, or was not "
                           r"created with tf\.get_variable\(\)\. Did you mean to set "
                           r"reuse=tf\.AUTO_REUSE in VarScope\?$"):
            tf.get_variable("zz", [1])
        with pytest.raises(ValueError, match=r"Trying to share variable foo/w, but specified "
                           r"shape \(3, 3\) and found shape \(2, 3\)\."):
            tf.get_variable("w", [3, 3])
        with pytest.raises(ValueError, match="Trying to share variable foo/w, but specified "
                           "dtype int32 and found dtype float32."):
            tf.get_variable("w", [2, 3], dtype=tf.int32)
        with tf.variable_scope("inner"):
            assert tf.get_variable_scope().reuse is True  # inherited
    with tf.variable_scope("foo", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("w", [2, 3]) is w
        n = tf.get_variable("n", [1], initializer=zeros)
        assert tf.get_variable("n", [1]) is n
    with tf.variable_scope("foo") as scope:
        scope.reuse_variables()
        assert tf.get_variable("w") is w
    assert tf.get_variable_scope().reuse is False and tf.get_variable_scope().name == ""
    assert [v.name for v in tf.global_variables()] == ["foo/w:0", "foo/n:0"]


def test_variable_and_name_scope_names(graph):
    with tf.variable_scope("foo") as foo:
        w = tf.get_variable("w", [1])
        c = tf.constant(1.0, name="c")
        with tf.variable_scope("bar"):
            b = tf.get_variable("b", [1])
            add = tf.add(b, 1.0, name="add")
    with tf.variable_scope("foo", reuse=True):
        c1 = tf.constant(1.0, name="c")
    with tf.variable_scope(foo):
        c2 = tf.constant(1.0, name="c")
        w2 = tf.get_variable("w2", [1])
    with tf.variable_scope(None, default_name="blk"):
        x1 = tf.get_variable("x", [1])
    with tf.variable_scope(None, default_name="blk"):
        x2 = tf.get_variable("x", [1])
    with tf.name_scope("ns"):
        gv = tf.get_variable("gv", [1])
        tv = tf.Variable(1.0, name="tv")
    with tf.variable_scope("outer"):
        with tf.variable_scope("inner", auxiliary_name_scope=False):
            c3 = tf.constant(1.0, name="c")
            x3 = tf.get_variable("x3", [1])
    assert [t.name for t in (w, c, b, add, c1, c2, w2, x1, x2, gv, tv, c3, x3)] == [
        "foo/w:0", "foo/c:0", "foo/bar/b:0", "foo/bar/add:0", "foo_1/c:0", "foo_2/c:0",
        "foo/w2:0", "blk/x:0", "blk_1/x:0", "gv:0", "ns/tv:0", "outer/c:0", "outer/inner/x3:0"]
    assert foo.name == "foo" and foo.original_name_scope == "foo/"
    assert _op_names(graph, "foo/w/") == [
        "foo/w/Initializer/random_uniform/shape", "foo/w/Initializer/random_uniform/min",
        "foo/w/Initializer/random_uniform/max", "foo/w/Initializer/random_uniform/RandomUniform",
        "foo/w/Initializer/random_uniform/sub", "foo/w/Initializer/random_uniform/mul",
        "foo/w/Initializer/random_uniform", "foo/w/IsInitialized/VarIsInitializedOp",
        "foo/w/Assign", "foo/w/Read/ReadVariableOp"]


def test_variable_scope_argument_errors(graph):
    with pytest.raises(TypeError, match="If default_name is None then name_or_scope is "
                       "required"):
        tf.variable_scope(None)
    with pytest.raises(ValueError, match="The reuse parameter must be True or False or None"):
        tf.variable_scope("x", reuse="yes")
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with tf.variable_scope(None, default_name="d", reuse=True):
            pass
    with pytest.raises(TypeError, match="name_or_scope must be a string or VariableScope"):
        with tf.variable_scope(3):
            pass
    assert tf.get_variable_scope().name == "" and tf.get_default_graph().get_name_scope() == ""


def test_get_variable_initializers_and_errors(graph):
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape."):
        tf.get_variable("a", shape=[2], initializer=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="Variable b did not get an initializer, so its "
                       "`shape` argument must be specified."):
        tf.get_variable("b")
    with pytest.raises(ValueError, match="Initializer type '<dtype: 'float32'>' and explicit "
                       "dtype '<dtype: 'int32'>' don't match."):
        tf.get_variable("c", dtype=tf.int32, initializer=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="The initializer passed is not valid"):
        tf.get_variable("d", shape=[None, 2], initializer=tf.zeros_initializer())
    # Partitioned variables: tests/nn/test_embedding_ops.py.
    assert isinstance(tf.get_variable("e", [4, 2], partitioner=lambda shape, dtype: [2, 1]),
                      tf.PartitionedVariable)
    const = tf.get_variable("f", initializer=np.array([1, 2]))
    fn = tf.get_variable("g", initializer=lambda: tf.ones([3]))
    ints = tf.get_variable("h", [2], dtype=tf.int32)
    strs = tf.get_variable("s", [2], dtype=tf.string)
    with tf.variable_scope("sc", initializer=tf.constant_initializer(7.0), dtype=tf.float64):
        scoped = tf.get_variable("k", [2])
    assert const.dtype == tf.int64 and fn.shape.as_list() == [3]
    assert _op_names(graph, "h/Initializer") == ["h/Initializer/zeros"]
    assert scoped.dtype == tf.float64
    with tf.Session() as sess:
        for v in (const, fn, ints, strs, scoped):
            sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(const), [1, 2])
        np.testing.assert_array_equal(sess.run(fn), [1.0, 1.0, 1.0])
        np.testing.assert_array_equal(sess.run(ints), [0, 0])
        assert list(sess.run(strs)) == [b"", b""]
        np.testing.assert_array_equal(sess.run(scoped), [7.0, 7.0])


def test_regularizer_custom_getter_and_local_variables(graph):
    calls = []

    def getter(getter, name, *args, **kwargs):
        calls.append(name)
        kwargs["trainable"] = False
        return getter(name, *args, **kwargs)

    with tf.variable_scope("net", regularizer=lambda v: tf.reduce_sum(v.value()),
                           custom_getter=getter):
        w = tf.get_variable("w", [2], initializer=tf.ones_initializer())
        b = tf.get_variable("b", [2], initializer=tf.ones_initializer(),
                            regularizer=tf.no_regularizer)
    loc = tf.get_local_variable("loc", [1], initializer=tf.zeros_initializer())
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert calls == ["net/w", "net/b"]
    assert len(losses) == 1 and losses[0].op.name.startswith("net/w/Regularizer/")
    assert w not in tf.trainable_variables() and b not in tf.trainable_variables()
    assert tf.local_variables() == [loc] and loc not in tf.global_variables()
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(losses[0]) == 2.0


@pytest.mark.oracle
def test_scope_names_match_tensorflow():
    program = """
    with tf.variable_scope("foo"):
        w = tf.get_variable("w", [2, 3])
        c = tf.constant(1.0, name="c")
        with tf.variable_scope("bar"):
            b = tf.get_variable("b", [3], initializer=tf.zeros_initializer())
            c2 = tf.add(b, 1.0, name="add")
    with tf.variable_scope("foo", reuse=True):
        w2 = tf.get_variable("w", [2, 3])
        c3 = tf.constant(1.0, name="c")
    with tf.variable_scope("foo", reuse=tf.AUTO_REUSE):
        w3 = tf.get_variable("w", [2, 3])
        n = tf.get_variable("n", [1])
    with tf.variable_scope("foo") as scope:
        scope.reuse_variables()
        w4 = tf.get_variable("w")
        orig = scope.original_name_scope
    with tf.variable_scope(scope):
        c5 = tf.constant(1.0, name="c")
    with tf.variable_scope(None, default_name="blk"):
        x1 = tf.get_variable("x", [1])
    with tf.variable_scope(None, default_name="blk"):
        x2 = tf.get_variable("x", [1])
    with tf.variable_scope("a"):
        with tf.variable_scope(None, default_name="blk"):
            xa = tf.get_variable("x", [1])
        with tf.variable_scope(None, default_name="blk"):
            xb = tf.get_variable("x", [1])
    with tf.name_scope("ns"):
        v_ns = tf.get_variable("vns", [1])
        v_ns2 = tf.Variable(1.0, name="vns2")
    with tf.variable_scope("outer"):
        with tf.variable_scope("inner", auxiliary_name_scope=False):
            c6 = tf.constant(1.0, name="c")
            x6 = tf.get_variable("x6", [1])
    vs = tf.variable_scope("re")
    with vs:
        c7 = tf.constant(1., name="c")
    with vs:  # the same object again: a new name scope, the same variable scope
        c8 = tf.constant(1., name="c")
        r2 = tf.get_variable("r2", [1])
    with tf.variable_scope("p"):
        with tf.variable_scope("q") as q:
            pass
    with tf.variable_scope(q):
        c9 = tf.constant(1., name="c")
        qv = tf.get_variable("qv", [1])
    with tf.variable_scope("p"):
        with tf.variable_scope(q, reuse=True):
            c10 = tf.constant(1., name="c")
            qv2 = tf.get_variable("qv", [1])
            with tf.variable_scope("sub"):
                c11 = tf.constant(1., name="c")
    names = [t.name for t in [w, c, b, c2, w2, c3, w3, n, w4, c5, x1, x2, xa, xb, v_ns, v_ns2,
                              c6, x6, c7, c8, r2, c9, qv, c10, qv2, c11]]
    ops = [o.name + ":" + o.type for o in tf.get_default_graph().get_operations()]
    result = [names, orig, ops, [v.name for v in tf.global_variables()]]
    """
    theirs = oracle.run_tf("tf.enable_resource_variables()\n" + _dedent(program))
    ns = {"tf": tf}
    with tf.Graph().as_default():
        exec(_dedent(program), ns)  # noqa: S102 - the same program in tensorflux
    assert ns["result"] == theirs


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code)


# ---- initializers ------------------------------------------------------------------------


def _value(t):
    with tf.Session(graph=t.graph) as sess:
        return sess.run(t)


def test_constant_zeros_ones_initializers(graph):
    np.testing.assert_array_equal(_value(tf.constant_initializer([1, 2])([4])), [1, 2, 2, 2])
    np.testing.assert_array_equal(_value(tf.constant_initializer(3)([2, 2], dtype=tf.int32)),
                                  np.full((2, 2), 3, np.int32))
    with pytest.raises(ValueError, match="Too many elements provided. Takes at most 2, but got "
                       "3."):
        tf.constant_initializer([1, 2, 3])([2])
    z = tf.zeros_initializer()([2, 3], dtype=tf.int64)
    assert z.op.name == "zeros" and z.dtype == tf.int64
    np.testing.assert_array_equal(_value(z), np.zeros((2, 3)))
    np.testing.assert_array_equal(_value(tf.ones_initializer()([3])), [1.0, 1.0, 1.0])
    big = tf.zeros_initializer()([40, 40])
    assert _value(big).shape == (40, 40) and not _value(big).any()
    assert tf.initializers.zeros is init_ops.Zeros
    assert tf.initializers.global_variables is tf.global_variables_initializer


def test_initializer_argument_errors():
    with pytest.raises(ValueError, match=r"Argument `mode` should be one of \('fan_in', "
                       r"'fan_out', 'fan_avg'\)\. Received: bad"):
        tf.variance_scaling_initializer(mode="bad")
    with pytest.raises(ValueError, match="Argument `distribution` should be one of"):
        tf.variance_scaling_initializer(distribution="bad")
    with pytest.raises(ValueError, match="Argument `scale` must be a positive float. "
                       "Received: 0.0"):
        tf.variance_scaling_initializer(scale=0.0)
    with pytest.raises(ValueError, match="expected to be floating point"):
        tf.random_normal_initializer(dtype=tf.int32)


def _fans(shape):
    return init_ops._compute_fans(shape)


VS_CASES = [  # (initializer, shape, expected stddev or uniform limit, kind)
    (tf.glorot_uniform_initializer(seed=1), [400, 200], math.sqrt(6 / 600), "uniform"),
    (tf.glorot_normal_initializer(seed=1), [400, 200], math.sqrt(2 / 600), "truncated"),
    (tf.variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed=1),
     [3, 3, 20, 40], math.sqrt(2 / 180), "truncated"),
    (tf.variance_scaling_initializer(1.0, "fan_out", "untruncated_normal", seed=1),
     [300, 250], math.sqrt(1 / 250), "normal"),
    (tf.variance_scaling_initializer(3.0, "fan_avg", "uniform", seed=1), [100, 300],
     math.sqrt(3 * 3 / 200), "uniform"),
    (tf.random_uniform_initializer(-2.0, 3.0, seed=1), [200, 200], None, "uniform-2-3"),
    (tf.random_normal_initializer(1.0, 0.5, seed=1), [200, 200], 0.5, "normal-mean1"),
    (tf.truncated_normal_initializer(0.0, 2.0, seed=1), [200, 200], 2.0, "raw-truncated"),
    (tf.uniform_unit_scaling_initializer(1.5, seed=1), [100, 300], 1.5 * math.sqrt(3 / 100),
     "uniform"),
]


@pytest.mark.parametrize("init,shape,param,kind", VS_CASES,
                         ids=[f"{type(c[0]).__name__}-{c[3]}" for c in VS_CASES])
def test_random_initializer_statistics(graph, init, shape, param, kind):
    x = _value(init(shape)).astype(np.float64)
    assert x.shape == tuple(shape)
    if kind == "uniform":
        assert x.min() >= -param and x.max() < param
        assert abs(x.std() - param / math.sqrt(3)) < 0.05 * param
    elif kind == "uniform-2-3":
        assert x.min() >= -2.0 and x.max() < 3.0 and abs(x.mean() - 0.5) < 0.05
    elif kind == "truncated":  # the truncation correction restores the asked-for stddev
        assert abs(x.std() - param) < 0.05 * param
        assert np.abs(x).max() <= 2 * param / 0.87962566103423978 + 1e-6
    elif kind == "raw-truncated":
        assert np.abs(x).max() <= 2 * param and abs(x.std() - 0.87962566 * param) < 0.05
    elif kind == "normal":
        assert abs(x.std() - param) < 0.05 * param and np.abs(x).max() > 2 * param
    elif kind == "normal-mean1":
        assert abs(x.mean() - 1.0) < 0.02 and abs(x.std() - param) < 0.02


def test_compute_fans():
    assert _fans([]) == (1, 1) and _fans([5]) == (5, 5) and _fans([3, 4]) == (3, 4)
    assert _fans([2, 3, 4, 5]) == (24, 30)
