"""The placer: explicit requests, colocation, soft placement, errors, the cost model.

Error messages were read off TensorFlow 2.21 for the same graphs (the oracle test checks the
ones that do not depend on how a graph is pruned).
"""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.protos import step_stats_pb2
from tensorflux.runtime import cost_model, placer, step_graph
from tensorflux.runtime.device import Device, DeviceMgr
from tests.oracle import run_tf

CPU = "/job:localhost/replica:0/task:0/device:CPU:"
# No constant folding: the test graphs are made of constants.
L0 = tf.GraphOptions(optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0))


def _config(n, **kw):
    return tf.ConfigProto(device_count={"CPU": n}, **kw)


def _placed(sess):
    """node name -> device of every node in the session's cached steps."""
    out = {}
    for step in sess._steps.values():
        for part in step.partition_graphs.values():
            for n in part.nodes:
                out[n.name] = n.device
    return out


def test_op_device_shows_the_request_as_tensorflow_does():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            a = tf.constant(1.0, name="a")
        with tf.device("/job:ps/task:2"), tf.device("/gpu:0"):
            b = tf.constant(1.0, name="b")
        with tf.device("/job:ps/task:2"), tf.device(None):
            c = tf.constant(1.0, name="c")
        with tf.device(tf.DeviceSpec(device_type="CPU", device_index=3)):
            d = tf.constant(1.0, name="d")
        with tf.device(lambda op: "/cpu:2"):
            e = tf.constant(1.0, name="e")
        with tf.device("/job:w"), tf.device(lambda op: "/cpu:2"):
            f = tf.constant(1.0, name="f")
        with tf.device("/cpu:0"), tf.colocate_with(a):
            h = tf.constant(1.0, name="h")
    # Read off TensorFlow 2.21 (tf.compat.v1) for the same blocks.
    assert [t.device for t in (a, b, c, d, e, f, h)] == [
        "/device:CPU:1", "/job:ps/task:2/device:GPU:0", "", "/device:CPU:3", "/cpu:2",
        "/job:w/device:CPU:2", "/device:CPU:1"]
    assert h.op.colocation_groups() == [b"loc:@a"]


def test_explicit_requests_are_placed_and_op_device_is_unchanged():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [3], name="p")
        with tf.device("/cpu:1"):
            a = tf.add(p, 1.0, name="a")
        with tf.device("/device:CPU:2"):
            b = tf.multiply(a, 2.0, name="b")
        c = tf.identity(b, name="c")
    with tf.Session(graph=g, config=_config(3)) as s:
        np.testing.assert_allclose(s.run(c, {p: [1, 2, 3]}), [4, 6, 8])
        where = _placed(s)
    assert where["a"] == CPU + "1" and where["b"] == CPU + "2"
    assert a.device == "/device:CPU:1" and c.device == ""


def test_list_devices():
    with tf.Session(graph=tf.Graph(), config=_config(3)) as s:
        devs = s.list_devices()
    assert [d.name for d in devs] == [CPU + str(i) for i in range(3)]
    assert {d.device_type for d in devs} == {"CPU"}
    assert all(d.memory_limit_bytes == 268435456 for d in devs)  # TensorFlow's figure
    assert len({d.incarnation for d in devs}) == 3
    assert repr(devs[0]).startswith(f"_DeviceAttributes({CPU}0, CPU, 268435456, ")


def test_unknown_device_names_node_and_devices_or_falls_back_softly():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:5"):
            a = tf.constant(1.0, name="a")
        out = tf.identity(a, name="out")
    with tf.Session(graph=g, config=_config(2)) as s:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            s.run(out)
    msg = str(info.value)
    assert ("Cannot assign a device for operation a: {{node a}} was explicitly assigned to "
            f"/device:CPU:5 but available devices are [ {CPU}0, {CPU}1 ]. Make sure the "
            "device specification refers to a valid device.") in msg
    with tf.Session(graph=g, config=_config(2, allow_soft_placement=True)) as s:
        assert s.run(out) == 1.0


def test_gpu_request_without_gpu():
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        out = tf.sin(tf.constant(0.5), name="out")
    with tf.Session(graph=g) as s, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="explicitly assigned to /device:GPU:0"):
        s.run(out)
    with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True)) as s:
        assert abs(s.run(out) - np.sin(0.5)) < 1e-6
        assert _placed(s)["out"] == CPU + "0"


def _colocation_conflict_graph():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            x = tf.constant(1.0, name="x")
        with tf.colocate_with(x):
            y = tf.identity(x, name="y")
        y.op._set_device("/cpu:1")
    return g, y


def test_colocation_conflict_names_both_nodes_and_devices():
    g, y = _colocation_conflict_graph()
    with tf.Session(graph=g, config=_config(2)) as s:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            s.run(y)
    # TensorFlow 2.21's words for the same graph.
    assert ("Cannot colocate nodes {{colocation_node y}} and {{colocation_node x}}: Cannot "
            "merge devices with incompatible ids: '/device:CPU:1' and '/device:CPU:0'"
            in str(info.value))
    with tf.Session(graph=g, config=_config(2, allow_soft_placement=True)) as s:
        assert s.run(y) == 1.0
        where = _placed(s)
    assert where["x"] == where["y"]


def test_missing_kernel_on_the_requested_device_type():
    # A GPU device of an imaginary machine: Cumsum has no GPU kernel.
    devices = [Device("localhost", 0, 0, "CPU", 0, 1), Device("localhost", 0, 0, "GPU", 0, 1)]
    mgr = DeviceMgr(devices)
    g = tf.Graph()
    with g.as_default():
        with tf.device("/gpu:0"):
            a = tf.identity(tf.constant([1.0], name="c"), name="a")
            with tf.colocate_with(a):
                b = tf.cumsum(a, name="b")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        placer.place(step_graph.build([], [b], []), mgr)
    msg = str(info.value)
    assert "Cannot assign a device for operation b" in msg
    assert "no supported kernel for GPU devices" in msg and "op Cumsum" in msg
    assert "/job:localhost/replica:0/task:0/device:GPU:0" in msg
    assert "colocated with a" in msg
    sg = step_graph.build([], [b], [])
    placer.place(sg, mgr, allow_soft_placement=True)
    assert {n.name: n.device[-5:] for n in sg.nodes}["b"] == "CPU:0"
    sg = step_graph.build([], [a], [])
    placer.place(sg, mgr)  # GPUs come first when nothing narrows the type
    assert {n.name: n.device[-5:] for n in sg.nodes}["a"] == "GPU:0"
    for d in devices:
        d.shutdown()


def test_bad_device_string_is_a_value_error_quoting_it():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Unknown attribute 'foo' is encountered while "
                                             "parsing the device spec: '/foo:1'"), \
                tf.device("/foo:1"):
            pass
        with pytest.raises(ValueError, match="'/cpu:x'"), tf.device("/cpu:x"):
            pass


@pytest.mark.oracle
def test_error_messages_match_tensorflow():
    got = run_tf("""
result = []
with tf.Graph().as_default():
    try:
        with tf.device("/foo:1"): pass
    except ValueError as e:
        result.append(str(e))
g = tf.Graph()
with g.as_default():
    with tf.device("/cpu:0"):
        x = tf.constant(1.0, name="x")
    with tf.colocate_with(x):
        y = tf.identity(x, name="y")
    y.op._set_device("/cpu:1")
try:
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2})) as s:
        s.run(y)
except tf.errors.InvalidArgumentError as e:
    result.append(e.message.splitlines()[-2 if "[[" in e.message else -1])
""")
    assert got[0] == "Unknown attribute 'foo' is encountered while parsing the device spec: " \
        "'/foo:1'."
    assert ("Cannot colocate nodes {{colocation_node y}} and {{colocation_node x}}: Cannot "
            "merge devices with incompatible ids: '/device:CPU:1' and '/device:CPU:0'") in got[1]


def test_variables_live_with_their_reads_and_updates():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            v = tf.Variable([1.0, 2.0], name="v")
        with tf.device("/cpu:0"):
            inc = v.assign_add([1.0, 1.0])
            r = v.read_value()
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=_config(2)) as s:
        s.run(init)
        s.run(inc)
        np.testing.assert_allclose(s.run(r), [2.0, 3.0])
        where = _placed(s)
    assert where["v"] == CPU + "1"
    assert all(where[n] == CPU + "1" for n in where if "AssignAddVariableOp" in n)


def test_a_resource_consumer_requesting_another_device_follows_the_resource():
    # TensorFlow 2.21 places these graphs so, with no error, also when the read is the
    # session's first step (nothing pinned yet): a read of a variable on CPU:0 requested
    # on CPU:1 runs on CPU:0; two reads of an unplaced variable requesting CPU:1 and CPU:2
    # both run on CPU:1, with the variable.
    from tensorflux.ops import state_ops

    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            v = tf.Variable([1.0], name="v")
        with tf.device("/cpu:1"):
            r = state_ops.read_variable_op(v.handle, tf.float32, name="r")
        u = tf.Variable([2.0], name="u")
        with tf.device("/cpu:1"):
            r1 = state_ops.read_variable_op(u.handle, tf.float32, name="r1")
        with tf.device("/cpu:2"):
            r2 = state_ops.read_variable_op(u.handle, tf.float32, name="r2")
    with tf.Session(graph=g, config=_config(3)) as s:
        with pytest.raises(tf.errors.FailedPreconditionError):
            s.run([r, r1, r2])
        where = _placed(s)
    assert where["r"] == where["v"] == CPU + "0"
    assert where["r1"] == where["r2"] == where["u"] == CPU + "1"


def test_log_device_placement_prints_tensorflow_lines(capsys):
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, name="p")
        with tf.device("/cpu:1"):
            b = tf.add(p, 2.0, name="b")
    with tf.Session(graph=g, config=_config(2, log_device_placement=True)) as s:
        s.run(b, {p: 1.0})
    lines = capsys.readouterr().out.splitlines()
    # TensorFlow prints `name: (Op): device` on stdout, one line per node.
    assert f"b: (AddV2): {CPU}1" in lines
    assert f"b/y: (Const): {CPU}1" in lines


def _two_branches(g, n=512, depth=3):
    with g.as_default():
        a = tf.constant(np.ones((n, n), np.float32), name="a")
        b = tf.constant(np.ones((n, n), np.float32), name="b")
        x, y = a, b
        for i in range(depth):
            x = tf.matmul(x, a, name=f"x{i}")
            y = tf.matmul(y, b, name=f"y{i}")
        return tf.add(x, y, name="out")


def test_cost_model_spreads_heavy_independent_branches():
    g = tf.Graph()
    out = _two_branches(g)
    # One core per kernel: two CPU devices can work side by side.
    with tf.Session(graph=g, config=_config(2, graph_options=L0,
                                            intra_op_parallelism_threads=1)) as s:
        s.run(out)
        where = _placed(s)
        (step,) = s._steps.values()
    assert {where[f"x{i}"] for i in range(3)} != {where[f"y{i}"] for i in range(3)}
    assert len({where[f"x{i}"] for i in range(3)}) == 1  # a chain stays together
    assert step.placement.has_choices and step.placement.makespan_us > 0
    # Kernels on all cores (the default): the CPU devices share them, nothing to gain.
    with tf.Session(graph=g, config=_config(2, graph_options=L0)) as s:
        s.run(out)
        assert set(_placed(s).values()) == {CPU + "0"}


def test_cheap_graphs_stay_on_the_first_device():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None, 4], name="p")
        outs = [tf.reduce_sum(tf.nn.relu(p * float(i) + 1.0)) for i in range(20)]
        total = tf.add_n(outs)
    with tf.Session(graph=g, config=_config(4)) as s:
        s.run(total, {p: np.ones((2, 4), np.float32)})
        assert set(_placed(s).values()) == {CPU + "0"}


def test_partial_requests_leave_the_choice_inside_the_spec():
    g = tf.Graph()
    with g.as_default(), tf.device("/device:CPU:*"):
        out = _two_branches(g, n=384, depth=2)
    with tf.Session(graph=g, config=_config(3)) as s:
        s.run(out)
        assert all(d.startswith(CPU) for d in _placed(s).values())


def _costs_with_measurements(g, heavy, micros):
    model = cost_model.CostModel()
    stats = step_stats_pb2.StepStats()
    dev = stats.dev_stats.add(device=CPU + "0")
    for name in heavy:
        dev.node_stats.add(node_name=name, op_end_rel_micros=micros)
    assert model.record_step_stats(stats, {CPU + "0": "CPU"})
    assert model.version == 1
    return model


def test_measured_costs_replace_static_estimates():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(np.ones(8, np.float32))
        left = tf.sin(c, name="left")
        right = tf.cos(c, name="right")
        out = tf.add(left, right, name="out")
    mgr = DeviceMgr([Device("localhost", 0, 0, "CPU", i, 1) for i in range(2)])

    def place(model):
        sg = step_graph.build([], [out], [])
        placer.place(sg, mgr, costs=cost_model.StepCosts(model))
        return {n.name: n.device[-1] for n in sg.nodes}

    assert set(place(cost_model.CostModel()).values()) == {"0"}  # statically: tiny ops
    where = place(_costs_with_measurements(g, ["left", "right"], 20_000))
    assert where["left"] != where["right"]  # measured: 20 ms each, worth two devices


def test_traced_runs_feed_the_cost_model_and_stateful_nodes_stay():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.ones((64, 64), np.float32), name="v")
        out = _two_branches(g, n=256, depth=2) + tf.reduce_sum(v)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=_config(2, graph_options=L0,
                                            intra_op_parallelism_threads=1)) as s:
        s.run(init)
        placed_v = s._stateful_placements["v"]
        s.run(out)
        first = next(st for k, st in s._steps.items() if k[1] == (out,))
        assert first.rebuild_on_new_costs
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        s.run(out, options=opts, run_metadata=tf.RunMetadata())
        assert s._cost_model.version >= 1
        assert s._cost_model.measured_compute_micros("x0", "CPU") is not None
        value = s.run(out)
        second = next(st for k, st in s._steps.items() if k[1] == (out,))
        assert second is not first  # rebuilt with the measured costs
        assert _placed(s)["v"] == placed_v
    np.testing.assert_allclose(value, 2 * 256.0 ** 2 + 64 * 64, rtol=1e-5)


def test_whole_graph_colocation_keeps_adam_state_consistent():
    # The initializer step never sees Adam's reads of beta1_power inside
    # colocate_with(w); placing by step alone would split the variables of one group.
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(np.ones((4, 3), np.float32))
        with tf.device("/cpu:1"):
            w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        b = tf.Variable(np.zeros(2, np.float32), name="b")
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b))
        train = tf.train.AdamOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=_config(2)) as s:
        s.run(init)
        for _ in range(3):
            s.run(train)
        assert s.run(loss) < 4 * 2 * 9
