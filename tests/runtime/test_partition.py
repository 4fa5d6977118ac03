"""The partitioner and the per-step rendezvous: Send/Recv pairs, control edges, bfloat16
transfers, Recv scheduling, optimized partition graphs, aborts and cleanup."""

import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.runtime import graph_runner, partition
from tensorflux.runtime import rendezvous as rendezvous_lib
from tensorflux.runtime.step_graph import Node

CPU = "/job:localhost/replica:0/task:0/device:CPU:"


def _config(n, intra_op_threads=0, **graph_options):
    """n CPU devices. With intra_op_threads=1 each kernel runs on one core and the compiled
    partitions of a step each on a thread of its own; otherwise (kernels spread over all the
    cores) they run merged on the caller's thread."""
    return tf.ConfigProto(device_count={"CPU": n}, intra_op_parallelism_threads=intra_op_threads,
                          graph_options=tf.GraphOptions(**graph_options))


def _partition_graphs(sess, fetches, feeds=None, options=None):
    md = tf.RunMetadata()
    opts = options or tf.RunOptions()
    opts.output_partition_graphs = True
    value = sess.run(fetches, feeds, options=opts, run_metadata=md)
    return value, {gd.node[0].device: gd for gd in md.partition_graphs}


def _ops(gd, op):
    return [n for n in gd.node if n.op == op]


def test_one_recv_per_tensor_and_destination():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [3], name="p")
        with tf.device("/cpu:0"):
            a = tf.square(p, name="a")
        with tf.device("/cpu:1"):
            on1 = [tf.multiply(a, float(i), name=f"m{i}") for i in range(3)]
        with tf.device("/cpu:2"):
            on2 = [tf.add(a, float(i), name=f"s{i}") for i in range(2)]
        with tf.device("/cpu:0"):
            out = tf.add_n(on1 + on2, name="out")
    with tf.Session(graph=g, config=_config(3)) as s:
        x = np.array([1.0, 2.0, 3.0], np.float32)
        value, graphs = _partition_graphs(s, out, {p: x})
    np.testing.assert_allclose(value, x ** 2 * 5 + 1)
    sends = _ops(graphs[CPU + "0"], "_Send")
    a_sends = [n for n in sends if list(n.input) == ["a"]]
    assert len(a_sends) == 2  # one per destination device
    for dev, users in ((CPU + "1", ["m0", "m1", "m2"]), (CPU + "2", ["s0", "s1"])):
        recvs = _ops(graphs[dev], "_Recv")
        a_recvs = [r for r in recvs if r.attr["tensor_name"].s.decode().endswith("_a_0")]
        assert len(a_recvs) == 1, [r.name for r in recvs]
        inputs = {n.name: list(n.input) for n in graphs[dev].node}
        for u in users:
            assert inputs[u][0] == a_recvs[0].name
        assert a_recvs[0].attr["send_device"].s.decode() == CPU + "0"
        assert a_recvs[0].attr["recv_device"].s.decode() == dev


def test_control_edges_across_devices_order_the_step():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            v = tf.Variable(0.0, name="v")
            bump = v.assign_add(1.0)
        with tf.device("/cpu:1"), tf.control_dependencies([bump]):
            seen = tf.identity(tf.constant(5.0), name="seen")
        with tf.device("/cpu:0"), tf.control_dependencies([seen]):
            after = v.read_value()
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=_config(2)) as s:
        s.run(init)
        value, graphs = _partition_graphs(s, after)
        assert value == 1.0
        assert s.run(after) == 2.0
    on1 = graphs[CPU + "1"]
    ctrl = [n for n in _ops(on1, "_Recv") if n.attr["tensor_name"].s.decode().endswith("ctrl")]
    assert len(ctrl) == 1 and f"^{ctrl[0].name}" in {i for n in on1.node for i in n.input}
    dummies = [n for n in graphs[CPU + "0"].node if "_ctrl_dummy" in n.name]
    assert dummies and dummies[0].op == "Const"


def _bf16_graph():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [64], name="p")
        with tf.device("/cpu:0"):
            a = tf.sin(p, name="a") * 3.0
            k = tf.cast(p[:4] * 0.0, tf.int32, name="k") + tf.range(4)
        with tf.device("/cpu:1"):
            b = tf.exp(a, name="b")
            kk = k * 2
        with tf.device("/cpu:0"):
            out = tf.identity(b, name="out")
    return g, p, out, kk


def test_bfloat16_transfers_are_cast_nodes_within_bfloat16_tolerance():
    g, p, out, kk = _bf16_graph()
    x = np.linspace(-2, 2, 64).astype(np.float32)
    with tf.Session(graph=g, config=_config(2)) as s:
        exact = s.run(out, {p: x})
    with tf.Session(graph=g, config=_config(2, enable_bfloat16_sendrecv=True)) as s:
        (lossy, ints), graphs = _partition_graphs(s, [out, kk], {p: x})
    np.testing.assert_allclose(exact, np.exp(np.sin(x) * 3), rtol=1e-5)
    np.testing.assert_allclose(lossy, exact, rtol=2e-2)  # bf16 tolerance, twice rounded
    assert not np.array_equal(lossy, exact)
    assert lossy.dtype == np.float32 and ints.tolist() == [0, 2, 4, 6]
    casts0 = {n.name: n for n in _ops(graphs[CPU + "0"], "Cast")}
    casts1 = {n.name: n for n in _ops(graphs[CPU + "1"], "Cast")}
    narrow = [n for n in casts0.values() if n.attr["DstT"].type == tf.bfloat16.as_datatype_enum]
    assert narrow and all(n.attr["SrcT"].type == tf.float32.as_datatype_enum for n in narrow)
    assert any(n.attr["DstT"].type == tf.float32.as_datatype_enum for n in casts1.values())
    sends = _ops(graphs[CPU + "0"], "_Send")
    by_input = {n.input[0]: n for n in sends}
    assert by_input[narrow[0].name].attr["T"].type == tf.bfloat16.as_datatype_enum
    ints_sent = [n for n in sends if n.attr["T"].type == tf.int32.as_datatype_enum]
    assert len(ints_sent) == 1 and not ints_sent[0].input[0].startswith("k/_bf16")


def test_recv_scheduling_delays_recvs_behind_the_critical_path():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            early = tf.identity(tf.constant(np.ones((128, 128), np.float32)) * 2.0,
                                name="early")
        with tf.device("/cpu:1"):
            x = tf.constant(np.ones((128, 128), np.float32), name="x")
            for i in range(6):
                x = tf.matmul(x, x, name=f"m{i}") * 0.01
            out = tf.add(x, early, name="out")
    l0 = tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)
    with tf.Session(graph=g, config=_config(2, optimizer_options=l0)) as s:
        plain, graphs_plain = _partition_graphs(s, out)
    with tf.Session(graph=g, config=_config(2, optimizer_options=l0,
                                            enable_recv_scheduling=True)) as s:
        sched, graphs = _partition_graphs(s, out)
    np.testing.assert_array_equal(plain, sched)
    (recv,) = _ops(graphs[CPU + "1"], "_Recv")
    (recv_plain,) = _ops(graphs_plain[CPU + "1"], "_Recv")
    assert list(recv_plain.input) == []
    # It waits for a late node of the matmul chain, not for the start of the step.
    assert len(recv.input) == 1 and recv.input[0] in {"^m4", "^m5", "^mul_4", "^mul_5"}


def test_cse_and_folding_are_visible_in_partition_graphs():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None], name="p")
        with tf.device("/cpu:0"):
            c = tf.constant(2.0) * tf.constant(3.0)  # folds
            a1, a2 = p + c, p + c  # one survives CSE
        with tf.device("/cpu:1"):
            out = tf.identity(a1, name="o1") * tf.identity(a2, name="o2")
    l0 = tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)
    x = np.arange(3, dtype=np.float32)
    with tf.Session(graph=g, config=_config(2)) as s:
        v1, graphs1 = _partition_graphs(s, out, {p: x})
    with tf.Session(graph=g, config=_config(2, optimizer_options=l0)) as s:
        v0, graphs0 = _partition_graphs(s, out, {p: x})
    np.testing.assert_array_equal(v1, v0)

    def count(graphs, op):
        return sum(len(_ops(gd, op)) for gd in graphs.values())

    assert count(graphs0, "AddV2") == 2 and count(graphs1, "AddV2") == 1
    assert count(graphs0, "Mul") == 2 and count(graphs1, "Mul") == 1  # 2*3 folded
    assert count(graphs0, "Identity") == 2 and count(graphs1, "Identity") == 1
    assert count(graphs1, "_Recv") == 1 and count(graphs0, "_Recv") == 2


class _RecordingRendezvous(rendezvous_lib.LocalRendezvous):
    made: list = []

    def __init__(self):
        super().__init__()
        _RecordingRendezvous.made.append(self)


@pytest.fixture
def recording_rendezvous(monkeypatch):
    _RecordingRendezvous.made = []
    monkeypatch.setattr(graph_runner, "LocalRendezvous", _RecordingRendezvous)
    return _RecordingRendezvous.made


def test_an_error_in_one_partition_aborts_the_others_promptly(recording_rendezvous):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            p = tf.placeholder(tf.float32, [None], name="p")
            first = tf.reshape(p + 1.0, [2], name="bad_reshape")
        with tf.device("/cpu:1"):
            middle = first * 2.0
        with tf.device("/cpu:0"):
            # cpu:0 fails in bad_reshape (3 values fed) while its _Recv of `middle` is
            # already waiting; cpu:1 waits for `first`. Only an abort of the rendezvous
            # ends the step before its deadline.
            out = tf.add(middle, 1.0, name="out")
    opts = tf.RunOptions(timeout_in_ms=20_000)
    with tf.Session(graph=g, config=_config(2, 1)) as s:
        start = time.monotonic()
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad_reshape"):
            s.run(out, {p: [1.0, 2.0, 3.0]}, options=opts)
        assert time.monotonic() - start < 5.0
        np.testing.assert_allclose(s.run(out, {p: [1.0, 2.0]}, options=opts), [5.0, 7.0])
    assert len(recording_rendezvous) == 2
    assert all(not r.pending_keys() for r in recording_rendezvous)  # nothing left behind


@pytest.mark.parametrize("intra_op_threads", [0, 1])
def test_concurrent_multi_device_steps_leave_nothing_behind(recording_rendezvous,
                                                             intra_op_threads):
    """8 threads x 50 steps on one Session: threaded partitions (one rendezvous per step,
    emptied) and merged ones (no rendezvous at all) give every thread its own results."""
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [], name="p")
        with tf.device("/cpu:0"):
            a = p + 1.0
        with tf.device("/cpu:1"):
            b = a * 3.0
        with tf.device("/cpu:2"):
            c = b - a
    failures = []
    with tf.Session(graph=g, config=_config(3, intra_op_threads)) as s:
        def worker(k):
            try:
                for i in range(50):
                    v = float(k * 100 + i)
                    if s.run(c, {p: v}) != 2 * (v + 1):
                        failures.append((k, i))
            except Exception as e:  # noqa: BLE001
                failures.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert not failures
    assert len(recording_rendezvous) == (400 if intra_op_threads == 1 else 0)
    assert all(not r.pending_keys() for r in recording_rendezvous)


def test_closing_the_session_cancels_a_blocked_multi_device_step(recording_rendezvous):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            q = tf.FIFOQueue(2, tf.float32, shapes=[[]])
            x = q.dequeue()  # blocks: nothing is ever enqueued
        with tf.device("/cpu:1"):
            y = x * 2.0  # waits in a _Recv for the dequeued value
    s = tf.Session(graph=g, config=_config(2))
    closer = threading.Timer(0.3, s.close)
    closer.start()
    start = time.monotonic()
    with pytest.raises(tf.errors.CancelledError):
        s.run(y, options=tf.RunOptions(timeout_in_ms=20_000))
    assert time.monotonic() - start < 5.0
    closer.join()
    assert all(not r.pending_keys() for r in recording_rendezvous)


def _random_dag(rng, devices: int, size: int):
    """A random DAG of adds and multiplies over two fed vectors (and control edges), its
    nodes spread over `devices` devices, and the same computation in NumPy."""
    p = tf.placeholder(tf.float32, [4], name="p")
    q = tf.placeholder(tf.float32, [4], name="q")
    feeds = {p: np.arange(4, dtype=np.float32) / 4, q: np.ones(4, np.float32) / 3}
    ours, theirs = [p, q], [feeds[p], feeds[q]]
    # Ops made first but ordered late by control inputs added at the end, so that node ids
    # do not follow the order of the step.
    early = []
    for k in range(4):
        with tf.device(f"/cpu:{rng.integers(0, devices)}"):
            early.append(tf.multiply(p, float(k), name=f"early{k}"))
    for _ in range(size):
        i, j = rng.integers(0, len(ours), 2)
        dev = f"/cpu:{rng.integers(0, devices)}"
        after = [ours[k].op for k in rng.integers(0, len(ours), 2) if k >= 2]
        with tf.device(dev), tf.control_dependencies(after if rng.random() < 0.3 else []):
            if rng.random() < 0.5:
                ours.append(tf.add(ours[i], ours[j]) * 0.5)
                theirs.append((theirs[i] + theirs[j]) * np.float32(0.5))
            else:
                ours.append(tf.tanh(ours[i] * ours[j]))
                theirs.append(np.tanh(theirs[i] * theirs[j]))
    for k, e in enumerate(early):
        for i in rng.integers(2, len(ours), 3):
            e.op._add_control_input(ours[i].op)
        theirs.append(feeds[p] * np.float32(k))
        ours.append(e)
    return ours[-10:], theirs[-10:], feeds


@pytest.mark.parametrize("intra_op_threads", [0, 1])
@pytest.mark.parametrize("seed", range(16))
def test_compiled_partitions_of_random_graphs_never_deadlock(seed, intra_op_threads):
    """Partitions without control flow run compiled: with one core per kernel each on its
    own thread, blocking in its _Recvs, in orders cut from one order of the whole step, so
    however the transfers cross, no two partitions wait for each other (a deadlock would
    hit the step's timeout); otherwise merged into that one order on one thread."""
    rng = np.random.default_rng(seed)
    g = tf.Graph()
    with g.as_default():
        fetches, expected, feeds = _random_dag(rng, 3, 60)
    with tf.Session(graph=g, config=_config(3, intra_op_threads)) as s:
        opts = tf.RunOptions(timeout_in_ms=10_000)
        for _ in range(3):
            values = s.run(fetches, feeds, options=opts)
            for v, e in zip(values, expected, strict=True):
                np.testing.assert_allclose(v, e, rtol=1e-5)
        (step,) = s._steps.values()
        kinds = {type(ex).__name__ for _, ex, _ in step.parts}
        assert kinds == {"StaticExecutor"} and len(step.partition_graphs) > 1
        assert len(step.parts) == (1 if intra_op_threads == 0 else len(step.partition_graphs))


def test_partitions_with_control_flow_stay_on_the_dataflow_executor():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [], name="p")
        with tf.device("/cpu:0"):
            a = tf.cond(p > 0, lambda: p * 2.0, lambda: p - 1.0)
        with tf.device("/cpu:1"):
            b = a + 1.0
    with tf.Session(graph=g, config=_config(2)) as s:
        assert s.run(b, {p: 3.0}) == 7.0 and s.run(b, {p: -3.0}) == -3.0
        (step,) = s._steps.values()
        assert "Executor" in {type(ex).__name__ for _, ex, _ in step.parts}


def test_merged_partitions_name_the_failing_nodes_device():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None], name="p")
        with tf.device("/cpu:0"):
            a = p * 2.0
        with tf.device("/cpu:1"):
            b = tf.reshape(a, [2], name="bad_reshape")
        with tf.device("/cpu:0"):
            c = b + 1.0
    with tf.Session(graph=g, config=_config(2)) as s:
        np.testing.assert_allclose(s.run(c, {p: [1.0, 2.0]}), [3.0, 5.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad_reshape") as info:
            s.run(c, {p: [1.0, 2.0, 3.0]})
        assert "CPU:1" in str(info.value)
        (step,) = s._steps.values()
        assert len(step.parts) == 1 and len(step.partition_graphs) == 2


def test_step_node_def_and_partition_graphs():
    f32 = tf.float32
    src = Node("src", "IdentityN", {"T": [f32, f32]}, [], [], [f32, f32])
    ctrl = Node("ctrl", "NoOp", {}, [], [], [])
    node = Node("n", "Identity", {"T": f32, "_class": ["loc:@src"]}, [(src, 1)], [ctrl], [f32])
    node.device = "/job:localhost/replica:0/task:0/device:CPU:0"
    nd = partition.step_node_def(node)
    assert list(nd.input) == ["src:1", "^ctrl"]
    assert nd.device == node.device and list(nd.attr["_class"].list.s) == [b"loc:@src"]

    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            x = tf.placeholder(tf.float32, [2], name="x")
            n = tf.no_op(name="n")
        with tf.device("/cpu:1"), tf.control_dependencies([n]):
            y = tf.identity(x, name="y")
    opts = tf.RunOptions(output_partition_graphs=True)
    rm = tf.RunMetadata()
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}, options=opts,
                                               run_metadata=rm), [1.0, 2.0])
        parts = list(rm.partition_graphs)
        assert len(parts) == 2
        ops = {nd.op for gd in parts for nd in gd.node}
        assert {"_Send", "_Recv", "Identity"} <= ops
        for gd in parts:
            names = {nd.name for nd in gd.node}
            devices = {nd.device for nd in gd.node}
            assert len(devices) == 1 and devices.pop().startswith("/job:localhost/")
            for nd in gd.node:  # every input resolves inside its partition
                for s in nd.input:
                    assert s.lstrip("^").split(":")[0] in names
        sess.run(y, {x: [1.0, 2.0]}, options=opts, run_metadata=rm)
        assert len(rm.partition_graphs) == 2  # replaced on each run, as in TensorFlow


# ------------------------------------------------------------------------------------------
# Round trips.
