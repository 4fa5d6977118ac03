"""TF1 reference variables (variables/ref_variable.py): VariableV2 graphs, the Variable API,
optimizers, savers and placement, against resource variables and TensorFlow 1."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tensorflux.variables.ref_variable import RefVariable
from tests.oracle import run_tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


@pytest.fixture
def ref_default():
    """tf.disable_resource_variables() for one test."""
    tf.disable_resource_variables()
    try:
        yield
    finally:
        tf.enable_resource_variables()


# ---- which kind of variable is made --------------------------------------------------------


def _kind(v) -> str:
    return v.op.type


def test_default_stays_resource(graph):
    assert tf.resource_variables_enabled()
    assert _kind(tf.Variable(1.0)) == "VarHandleOp"
    assert _kind(tf.get_variable("g", [])) == "VarHandleOp"


CHOICES = [
    # (how, default use_resource, expected op type)
    ("Variable(use_resource=False)", True, "VariableV2"),
    ("get_variable(use_resource=False)", True, "VariableV2"),
    ("variable_scope(use_resource=False)", True, "VariableV2"),
    ("variable_scope(use_resource=False) Variable", True, "VariableV2"),
    ("Variable()", False, "VariableV2"),
    ("get_variable()", False, "VariableV2"),
    ("Variable(use_resource=True)", False, "VarHandleOp"),
    ("variable_scope(use_resource=True)", False, "VarHandleOp"),
    ("partitioned get_variable()", False, "VariableV2"),
]


@pytest.mark.parametrize("how,default,expected", CHOICES)
def test_kind_of_variable(graph, how, default, expected):
    if not default:
        tf.disable_resource_variables()
    try:
        assert tf.resource_variables_enabled() is default
        if how.startswith("Variable("):
            use = {"Variable()": None, "Variable(use_resource=False)": False,
                   "Variable(use_resource=True)": True}[how]
            v = tf.Variable(1.0, use_resource=use)
        elif how.startswith("get_variable"):
            v = tf.get_variable("v", [2], use_resource=False if "False" in how else None)
        elif how.startswith("partitioned"):
            pv = tf.get_variable("p", [4, 2], partitioner=tf.fixed_size_partitioner(2))
            assert len(list(pv)) == 2
            v = list(pv)[1]
        else:
            use = "use_resource=True" not in how
            with tf.variable_scope("s", use_resource=not use):
                v = tf.Variable(1.0) if how.endswith("Variable") else \
                    tf.get_variable("v", [2])
        assert _kind(v) == expected
        assert isinstance(v, tf.Variable)
        assert isinstance(v, RefVariable) is (expected == "VariableV2")
    finally:
        tf.enable_resource_variables()


# ---- graph shape ---------------------------------------------------------------------------


def test_nodes_names_and_colocation(graph):
    w = tf.Variable(tf.zeros([3, 2]), name="w", use_resource=False)
    c = tf.Variable(lambda: tf.ones([2]), name="c", use_resource=False)
    assert w.name == "w:0" and w.op.type == "VariableV2" and w.dtype == tf.float32
    assert w._ref().dtype == tf.float32._as_ref
    assert w.value().name == "w/read:0" and w.value() is w.value()
    assert w.value().op.type == "Identity"
    assert w.initializer.name == "w/Assign" and w.initializer.type == "Assign"
    assert w.initial_value.name == "zeros:0"
    assert c.initial_value.name == "c/Initializer/ones:0"
    assert graph.get_operation_by_name("w/Assign").get_attr("_class") == [b"loc:@w"]
    assert graph.get_operation_by_name("c").get_attr("_class") == [b"loc:@c"]
    assert sorted(w.op.node_def.attr) == ["container", "dtype", "shape", "shared_name"]
    assert w.read_value().name == "read:0"
    assert tf.convert_to_tensor(w) is w.value()
    assert w.op.type in ["Variable", "VariableV2"]  # multi-GPU device functions test this


UPDATE_OPS = [
    # (method, args, op type, expected value after a 0-initialized [4] variable)
    ("assign", ([1.0, 2.0, 3.0, 4.0],), "Assign", [1, 2, 3, 4]),
    ("assign_add", ([1.0, 1.0, 1.0, 1.0],), "AssignAdd", [1, 1, 1, 1]),
    ("assign_sub", ([1.0, 1.0, 1.0, 1.0],), "AssignSub", [-1, -1, -1, -1]),
    ("scatter_add", ("slices", [2.0, 3.0]), "ScatterAdd", [0, 2, 0, 3]),
    ("scatter_sub", ("slices", [2.0, 3.0]), "ScatterSub", [0, -2, 0, -3]),
    ("scatter_update", ("slices", [2.0, 3.0]), "ScatterUpdate", [0, 2, 0, 3]),
    ("scatter_max", ("slices", [2.0, 3.0]), "ScatterMax", [0, 2, 0, 3]),
    ("scatter_min", ("slices", [-2.0, 3.0]), "ScatterMin", [0, -2, 0, 0]),
    ("scatter_nd_update", ([[1], [3]], [2.0, 3.0]), "ScatterNdUpdate", [0, 2, 0, 3]),
    ("scatter_nd_add", ([[1], [3]], [2.0, 3.0]), "ScatterNdAdd", [0, 2, 0, 3]),
    ("scatter_nd_sub", ([[1], [3]], [2.0, 3.0]), "ScatterNdSub", [0, -2, 0, -3]),
]


@pytest.mark.parametrize("method,args,op_type,expected", UPDATE_OPS)
def test_update_methods(graph, method, args, op_type, expected):
    v = tf.Variable(tf.zeros([4]), name="v", use_resource=False)
    if args[0] == "slices":
        args = (tf.IndexedSlices(tf.constant(args[1]), tf.constant([1, 3])),)
    out = getattr(v, method)(*args)
    assert out.op.type == op_type and out.dtype == tf.float32._as_ref
    assert out.op.get_attr("_class") == [b"loc:@v"]
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(out), expected)
        np.testing.assert_array_equal(sess.run(v), expected)


TF1_FUNCTIONS = [
    ("assign", lambda v: tf.assign(v, [5, 6]), "Assign", [5, 6]),
    ("assign_add", lambda v: tf.assign_add(v, [5, 6]), "AssignAdd", [6, 8]),
    ("scatter_update", lambda v: tf.scatter_update(v, [0], [9]), "ScatterUpdate", [9, 2]),
    ("scatter_add", lambda v: tf.scatter_add(v, [1], [9]), "ScatterAdd", [1, 11]),
    ("count_up_to", lambda v: tf.count_up_to(v, 10), "CountUpTo", [1, 2]),
]


@pytest.mark.parametrize("name,build,op_type,expected", TF1_FUNCTIONS)
def test_tf1_functions(graph, name, build, op_type, expected):
    v = tf.Variable([1, 2], name="v", use_resource=False)
    if name == "count_up_to":
        v = tf.Variable(1, name="n", use_resource=False)
        expected = [1, 2]
    out = build(v)
    assert out.op.type == op_type
    with tf.Session() as sess:
        sess.run(v.initializer)
        if name == "count_up_to":
            assert [sess.run(out), sess.run(v)] == expected
        else:
            np.testing.assert_array_equal(sess.run(out), expected)


def test_assign_without_shape_validation_reshapes(graph):
    v = tf.Variable([1.0, 2.0], name="v", use_resource=False, validate_shape=False)
    longer = tf.assign(v, [1.0, 2.0, 3.0], validate_shape=False)
    assert not longer.op.get_attr("validate_shape")
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(longer), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])


def test_initialization_state_and_errors(graph):
    v = tf.Variable([1.0, 2.0], name="v", use_resource=False)
    init = tf.is_variable_initialized(v)
    assert init.op.type == "IsVariableInitialized"
    report = tf.report_uninitialized_variables()
    with tf.Session() as sess:
        assert not sess.run(init)
        assert list(sess.run(report)) == [b"v"]
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value v"):
            sess.run(v.value())
        np.testing.assert_array_equal(sess.run(v.initialized_value()), [1.0, 2.0])
        sess.run(v.initializer)
        assert sess.run(init)
        v.load([3.0, 4.0], sess)
        np.testing.assert_array_equal(v.eval(sess), [3.0, 4.0])


def test_count_up_to_limit(graph):
    v = tf.Variable(0, name="n", use_resource=False)
    up = v.count_up_to(2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(up), sess.run(up)] == [0, 1]
        with pytest.raises(errors.OutOfRangeError):
            sess.run(up)


def test_reads_follow_control_dependencies(graph):
    v = tf.Variable(1.0, name="v", use_resource=False)
    inc = v.assign_add(1.0)
    with tf.control_dependencies([inc]):
        after = v.read_value()
        doubled = v.read_value() * 2
        identity = tf.identity(v)  # Identity of the snapshot "v/read", as in TF1
        scaled = v * 10.0  # Mul of "v/read" and a constant made under the dependency
    assert identity.op.inputs[0] is v.value() and scaled.op.inputs[0] is v.value()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after) == 2.0
        assert sess.run(doubled) == 6.0
        assert sess.run(identity) == 4.0
        assert sess.run(scaled) == 50.0
        assert sess.run(v.value()) == 5.0


def test_reads_after_grouped_updates_see_them(graph):
    """A constraint applied after an optimizer-like grouped update (Keras's max-norm):
    every op reading the snapshot after the update sees the updated value, as TF1's
    aliasing "v/read" does, though only the innermost ops carry the control input."""
    v = tf.Variable([3.0, 4.0], name="v", use_resource=False)
    update = tf.group(v.assign_add([3.0, 4.0]))
    with tf.control_dependencies([update]):
        norm = tf.sqrt(tf.reduce_sum(tf.square(v)))
        scaled = v * (5.0 / norm)
    assert not scaled.op.control_inputs
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(scaled), [3.0, 4.0])


def test_cond_returning_an_update_made_outside(graph):
    v = tf.Variable(0, name="v", use_resource=False)
    p = tf.placeholder(tf.bool, [])
    outside = tf.assign_add(v, 1)
    r = tf.cond(p, lambda: outside, lambda: tf.constant(-1))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(r, {p: False}) == -1
        assert sess.run(v) == 1
        assert sess.run(r, {p: True}) == 2


def test_sparse_read_is_absent_and_gather_reads_the_snapshot(graph):
    v = tf.Variable([[1.0], [2.0], [3.0]], name="v", use_resource=False)
    assert not hasattr(v, "sparse_read")
    rows = tf.gather(v, [2, 0])
    loss = tf.reduce_sum(rows * rows)
    grad, = tf.gradients(loss, [v])
    assert isinstance(grad, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(rows), [[3.0], [1.0]])
        np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(grad)), [[2.0], [0], [6.0]])


def test_gradients_through_every_read(graph):
    v = tf.Variable([1.0, 2.0], name="v", use_resource=False)
    loss = tf.reduce_sum(v * 3.0) + tf.reduce_sum(v.read_value() * v.value())
    grad, = tf.gradients(loss, [v])
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(grad), [5.0, 7.0])


def test_proto_round_trip_and_meta_graph(graph, tmp_path):
    v = tf.Variable([1.0, 2.0], name="v", use_resource=False)
    d = v.to_proto()
    assert (d.variable_name, d.initializer_name, d.snapshot_name, d.is_resource) == \
        ("v:0", "v/Assign", "v/read:0", False)
    again = tf.Variable.from_proto(d)
    assert isinstance(again, RefVariable) and again.op is v.op
    assert again.value() is v.value()
    tf.train.export_meta_graph(str(tmp_path / "m.meta"))
    g2 = tf.Graph()
    with g2.as_default():
        tf.train.import_meta_graph(str(tmp_path / "m.meta"))
        got, = tf.global_variables()
        assert isinstance(got, RefVariable) and got.op.type == "VariableV2"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(got), [1.0, 2.0])


# ---- optimizers: ref and resource variables train to the same values -------------------


OPTIMIZERS = [
    ("GradientDescent", lambda: tf.train.GradientDescentOptimizer(0.1)),
    ("Momentum", lambda: tf.train.MomentumOptimizer(0.1, 0.9)),
    ("Nesterov", lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True)),
    ("Adagrad", lambda: tf.train.AdagradOptimizer(0.1)),
    ("AdagradDA", lambda: tf.train.AdagradDAOptimizer(
        0.1, tf.train.get_or_create_global_step(), l1_regularization_strength=0.01)),
    ("Adadelta", lambda: tf.train.AdadeltaOptimizer(1.0)),
    ("RMSProp", lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5)),
    ("CenteredRMSProp", lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True)),
    ("Adam", lambda: tf.train.AdamOptimizer(0.1)),
    ("Ftrl", lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01)),
    ("FtrlV2", lambda: tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1)),
    ("ProximalGD", lambda: tf.train.ProximalGradientDescentOptimizer(
        0.1, l1_regularization_strength=0.01)),
    ("ProximalAdagrad", lambda: tf.train.ProximalAdagradOptimizer(
        0.1, l1_regularization_strength=0.01)),
]


def _train(make_opt, use_resource: bool, steps: int = 4):
    """A dense and an embedding (sparse gradient) variable trained `steps` times."""
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", initializer=np.linspace(-1, 1, 6, dtype=np.float32)
                            .reshape(3, 2), use_resource=use_resource)
        emb = tf.get_variable("emb", initializer=np.arange(8, dtype=np.float32)
                              .reshape(4, 2) / 8, use_resource=use_resource)
        x = tf.constant([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0]])
        rows = tf.nn.embedding_lookup(emb, [0, 3, 3])
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - 1.0)) + tf.reduce_sum(rows * rows)
        train = make_opt().minimize(loss, global_step=gs)
        kinds = {v.op.type for v in tf.global_variables() if v.op.name != "global_step"}
        applies = sorted({op.type for op in g.get_operations()
                          if "Apply" in op.type or op.type.startswith(("Scatter",
                                                                      "ResourceScatter"))})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            values = sess.run([w, emb])
    return values, kinds, applies


@pytest.mark.parametrize("name,make_opt", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_every_optimizer_trains_a_ref_variable_as_a_resource_one(name, make_opt):
    ref, ref_kinds, ref_applies = _train(make_opt, use_resource=False)
    res, res_kinds, res_applies = _train(make_opt, use_resource=True)
    assert ref_kinds == {"VariableV2"} and res_kinds == {"VarHandleOp"}
    assert [a.removeprefix("Resource") for a in res_applies] == ref_applies
    assert not any(a.startswith("Resource") for a in ref_applies)
    for a, b in zip(ref, res, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert not np.allclose(ref[0], np.linspace(-1, 1, 6).reshape(3, 2))  # it trained


@pytest.mark.parametrize("use_resource", [False, True])
def test_moving_average_shadows_are_of_the_variables_kind(graph, use_resource):
    v = tf.Variable([1.0, 2.0], name="v", use_resource=use_resource)
    ema = tf.train.ExponentialMovingAverage(0.5)
    update = ema.apply([v])
    assert ema.average(v).op.type == ("VarHandleOp" if use_resource else "VariableV2")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(v, [3.0, 4.0]))
        sess.run(update)
        np.testing.assert_allclose(sess.run(ema.average(v)), [2.0, 3.0])


# ---- savers and placement ----------------------------------------------------------------


@pytest.mark.parametrize("sharded", [False, True])
def test_saver_round_trip_partitioned(tmp_path, sharded):
    config = tf.ConfigProto(device_count={"CPU": 2})

    def build():
        with tf.device("/cpu:0"):
            p = tf.get_variable("p", initializer=tf.constant(np.arange(12, dtype=np.float32)
                                                             .reshape(6, 2)),
                                partitioner=tf.fixed_size_partitioner(3), use_resource=False)
        with tf.device("/cpu:1"):
            s = tf.get_variable("s", initializer=np.float32(3.0), use_resource=False)
        return p, s

    g = tf.Graph()
    with g.as_default():
        p, s = build()
        saver = tf.train.Saver(sharded=sharded)
        save_ops = [op for op in g.get_operations() if op.name.startswith("save")]
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(s.assign(7.0))
            path = saver.save(sess, str(tmp_path / "ckpt"))
    types = {op.type for op in save_ops}
    assert "AssignVariableOp" not in types and "Assign" in types
    assert len([op for op in save_ops if op.type == "SaveV2"]) == (2 if sharded else 1)
    g2 = tf.Graph()
    with g2.as_default():
        p, s = build()
        with tf.Session(config=config) as sess:
            tf.train.Saver(sharded=sharded).restore(sess, path)
            np.testing.assert_array_equal(sess.run(p.as_tensor()),
                                          np.arange(12).reshape(6, 2))
            assert sess.run(s) == 7.0


def test_replica_device_setter_and_type_test_device_functions(graph):
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker")):
        a = tf.Variable(1.0, name="a", use_resource=False)
        b = tf.Variable(2.0, name="b", use_resource=False)
        s = a + b
    assert (a.device, b.device) == ("/job:ps/task:0", "/job:ps/task:1")
    assert a.value().device == "/job:ps/task:0" and s.device == "/job:worker"

    def assign_to_device(op):  # the multi-GPU TF1 idiom
        return "/cpu:0" if op.node_def.op in ["Variable", "VariableV2"] else "/gpu:0"

    with tf.device(assign_to_device):
        c = tf.Variable(1.0, name="c", use_resource=False)
        d = c * 2.0
    assert tf.DeviceSpec.from_string(c.device).device_type == "CPU"
    assert tf.DeviceSpec.from_string(d.device).device_type == "GPU"


# ---- TensorFlow 1 ------------------------------------------------------------------------

_PROGRAM = """
x = tf.placeholder(tf.float32, [None, 3], name="x")
w = tf.Variable(tf.zeros([3, 2]), name="w")
b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
gs = tf.train.get_or_create_global_step()
loss = tf.reduce_sum(tf.matmul(x, w) + b)
train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=gs)
up = tf.scatter_update(b, [0], [5.0])
ok = tf.is_variable_initialized(w)
saver = tf.train.Saver()
"""

_KEPT = ("VariableV2", "Assign", "AssignAdd", "ApplyAdam", "ScatterUpdate",
         "IsVariableInitialized", "SaveV2", "RestoreV2")


def _shape_of(g) -> list:
    out = []
    for op in g.get_operations():
        if op.type in _KEPT or op.name.endswith("/read"):
            coloc = list(op.get_attr("_class")) if "_class" in op.node_def.attr else []
            out.append([op.name, op.type, [t.dtype.name for t in op.inputs],
                        [c.decode() if isinstance(c, bytes) else c for c in coloc]])
    return sorted(out)


@pytest.mark.oracle
@pytest.mark.timeout(300)
def test_graph_matches_tensorflow1(ref_default):
    g = tf.Graph()
    with g.as_default():
        exec(_PROGRAM, {"tf": tf})  # noqa: S102 - the same program text TensorFlow runs
        ours = _shape_of(g)
    theirs = run_tf(_PROGRAM + f"""
result = []
for op in tf.get_default_graph().get_operations():
    if op.type in {_KEPT!r} or op.name.endswith("/read"):
        coloc = list(op.get_attr("_class")) if "_class" in op.node_def.attr else []
        result.append([op.name, op.type, [t.dtype.name for t in op.inputs],
                       [c.decode() for c in coloc]])
result.sort()
""")
    assert ours == theirs


_TRAIN_AND_SAVE = """
feed = {x: np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], np.float32)}
sess = tf.Session()
sess.run(tf.global_variables_initializer())
for _ in range(3):
    sess.run(train, feed)
SAVE
values = sess.run([w, b, gs])
"""


@pytest.mark.oracle
@pytest.mark.timeout(300)
def test_checkpoints_and_meta_graphs_interchange_with_tensorflow1(ref_default, tmp_path):
    ours_prefix, theirs_prefix = str(tmp_path / "ours"), str(tmp_path / "theirs")
    g = tf.Graph()
    with g.as_default():
        scope = {"tf": tf, "np": np, "PREFIX": ours_prefix}
        # TensorFlow's bundle format (tensorflux's own checkpoints are another format).
        exec(_PROGRAM + _TRAIN_AND_SAVE.replace("SAVE", "saver.save_tf_bundle(sess, PREFIX)\n"
                                               "tf.train.export_meta_graph(PREFIX + '.meta')"),
             scope)  # noqa: S102
        ours = scope["values"]
        scope["sess"].close()
    got = run_tf(_PROGRAM + _TRAIN_AND_SAVE.replace("SAVE", f"saver.save(sess, {theirs_prefix!r})")
                 + f"""
g2 = tf.Graph()
with g2.as_default():
    s2 = tf.train.import_meta_graph({ours_prefix + ".meta"!r})
    with tf.Session() as sess2:
        s2.restore(sess2, {ours_prefix!r})
        restored = sess2.run(["w:0", "b:0", "global_step:0"])
        kinds = sorted({{op.type for op in g2.get_operations()
                        if op.type in ("VariableV2", "VarHandleOp")}})
result = [[np.asarray(v) for v in values], [np.asarray(v) for v in restored], kinds]
""")
    theirs, restored_by_tf, kinds = got
    assert kinds == ["VariableV2"]
    for a, b in zip(ours, restored_by_tf, strict=True):
        np.testing.assert_allclose(a, b)
    for a, b in zip(ours, theirs, strict=True):  # the same training as TensorFlow's
        np.testing.assert_allclose(a, b, rtol=1e-5)
    g3 = tf.Graph()
    with g3.as_default():
        s3 = tf.train.import_meta_graph(theirs_prefix + ".meta")
        assert {v.op.type for v in tf.global_variables()} == {"VariableV2"}
        with tf.Session() as sess:
            s3.restore(sess, theirs_prefix)
            for a, b in zip(sess.run(["w:0", "b:0", "global_step:0"]), theirs, strict=True):
                np.testing.assert_allclose(a, b)


# ---- cost: a ref read copies no more than a resource read ------------------------------


def test_training_steps_copy_no_more_than_resource_variables(monkeypatch):
    """Reads through `_RefRead` are snapshots without copies, as ReadVariableOp's: a
    training step's updates find the variables' arrays unshared as often as with resource
    variables (copy-on-write copies counted, kernels/cpu/state_ops.py `own_value` and its
    one-call form `native.own_many`)."""
    from tensorflux.kernels.cpu import native
    from tensorflux.kernels.cpu import state_ops as state_kernels
    from tensorflux.kernels.cpu import training_ops as training_kernels

    real = state_kernels.own_value
    count = []

    def counting(var):
        before = id(var.value)
        out = real(var)
        if id(out) != before:
            count.append(var)
        return out

    real_many = native.own_many

    def counting_many(vars_):  # the update kernels' one call for all their variables
        before = [id(v.value) for v in vars_]
        out = real_many(vars_)
        if isinstance(out, list):
            count.extend(v for v, b, a in zip(vars_, before, out, strict=True) if id(a) != b)
        return out

    monkeypatch.setattr(state_kernels, "own_value", counting)
    monkeypatch.setattr(training_kernels, "own_value", counting)
    monkeypatch.setattr(native, "own_many", counting_many)

    def copies(use_resource: bool) -> tuple[int, int]:
        g = tf.Graph()
        with g.as_default():
            h = tf.constant(np.ones((8, 16), np.float32))
            for i, n in enumerate((32, 32, 4)):
                w = tf.get_variable(f"w{i}", [h.shape[1], n], use_resource=use_resource)
                read = w.read_value()
                h = tf.nn.relu(tf.matmul(h, read))
            train = tf.train.AdamOptimizer(0.01).minimize(tf.reduce_sum(h * h))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                count.clear()
                for _ in range(3):
                    sess.run(train)
                alone = len(count)
                count.clear()
                # a fetched read the update waits for stays a snapshot: a copy
                _, got = sess.run([train, read])
                assert not np.array_equal(got, sess.run(w))
                return alone, len(count)

    assert copies(use_resource=False) == copies(use_resource=True) == (0, 1)


# ---- distributed steps -------------------------------------------------------------------


def _ps_model(spec, use_resource):
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(cluster=spec)), \
            tf.variable_scope(tf.get_variable_scope(), use_resource=use_resource):
        gs = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", initializer=tf.constant([[0.5], [-1.0], [2.0]]))
        emb = tf.get_variable("emb", [6, 1], partitioner=tf.fixed_size_partitioner(2),
                              initializer=tf.constant_initializer(0.25))
        x = tf.constant([[1.0, 2.0, 3.0], [0.0, 1.0, -1.0]])
        pred = tf.matmul(x, w) + tf.nn.embedding_lookup(emb, [1, 4])
        loss = tf.reduce_sum(tf.square(pred))
        train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=gs)
        init = tf.global_variables_initializer()
    return g, init, train, [w, emb.as_tensor() if hasattr(emb, "as_tensor") else emb, gs]


@pytest.mark.timeout(60)
def test_distributed_steps_on_parameter_servers():
    from tests.distributed.conftest import Cluster

    cluster = Cluster(1, 2)
    try:
        spec = cluster.workers[0].server_def.cluster
        g, init, train, fetch = _ps_model(spec, use_resource=False)
        variables = g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
        assert {v.op.type for v in variables} == {"VariableV2"}
        assert {v.device.split("/task:")[0] for v in variables} == {"/job:ps"}
        meta = tf.RunMetadata()
        with cluster.session(g) as sess:
            sess.run(init)
            for _ in range(3):
                sess.run(train)
            sess.run(train, options=tf.RunOptions(output_partition_graphs=True),
                     run_metadata=meta)
            got = sess.run(fetch)
        on_ps = {n.op for pg in meta.partition_graphs for n in pg.node
                 if "/job:ps/" in n.device}
        assert {"VariableV2", "ApplyAdam", "Assign"} <= on_ps, on_ps
        assert not on_ps & {"VarHandleOp", "ResourceApplyAdam"}
    finally:
        cluster.stop()
    g, init, train, fetch = _ps_model(None, use_resource=True)
    with g.as_default(), tf.Session() as sess:
        sess.run(init)
        for _ in range(4):
            sess.run(train)
        want = sess.run(fetch)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
