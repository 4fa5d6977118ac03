"""Step statistics (RunOptions.trace_level), the Chrome-trace timeline, memory statistics."""

import gc
import json
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.client import timeline

CPU = "/job:localhost/replica:0/task:0/device:CPU:"
FULL = tf.RunOptions.FULL_TRACE


def _graph():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [4, 4], name="p")
        with tf.device("/cpu:0"):
            a = tf.matmul(p, p, name="a")
        with tf.device("/cpu:1"):
            b = tf.tanh(a, name="b")
            c = tf.reduce_sum(b * 2.0, name="c")
        with tf.device("/cpu:0"):
            out = tf.add(c, a, name="out")
    return g, p, out


def _traced_run(sess, fetch, feeds, level=FULL):
    md = tf.RunMetadata()
    opts = tf.RunOptions(trace_level=level, output_partition_graphs=True)
    value = sess.run(fetch, feeds, options=opts, run_metadata=md)
    return value, md


def test_full_trace_fills_step_stats_per_device():
    g, p, out = _graph()
    x = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2})) as s:
        before = time.time() * 1e6
        value, md = _traced_run(s, out, {p: x})
        after = time.time() * 1e6
        np.testing.assert_allclose(value, s.run(out, {p: x}), rtol=1e-6)
    stats = {d.device: d for d in md.step_stats.dev_stats}
    assert set(stats) == {CPU + "0", CPU + "1"}
    for gd in md.partition_graphs:
        dev = stats[gd.node[0].device]
        assert {n.name for n in gd.node} == {ns.node_name for ns in dev.node_stats}
        for ns in dev.node_stats:
            assert before - 1000 <= ns.all_start_micros <= after
            assert 0 <= ns.op_end_rel_micros <= ns.all_end_rel_micros < after - before + 1000
            assert ns.thread_id in dev.thread_names
            assert ns.timeline_label.startswith(f"{ns.node_name} = ")
    by_name = {ns.node_name: ns for d in stats.values() for ns in d.node_stats}
    a = by_name["a"]
    assert a.timeline_label == "a = MatMul(_arg_p_0_0, _arg_p_0_0)"
    (out_a,) = a.output
    assert [d.size for d in out_a.tensor_description.shape.dim] == [4, 4]
    assert out_a.tensor_description.dtype == tf.float32.as_datatype_enum
    assert out_a.tensor_description.allocation_description.requested_bytes == 64
    assert a.memory[0].allocator_name == "cpu_0" and a.memory[0].total_bytes == 64
    send = next(ns for ns in stats[CPU + "0"].node_stats if ns.node_name.startswith("a/_send"))
    recv = next(ns for ns in stats[CPU + "1"].node_stats if ns.node_name.startswith("a/_recv"))
    # TensorFlow's labels for transfers: tensor name and the device at the other end.
    assert send.timeline_label.endswith(f"@{CPU}1)") and "edge_" in send.timeline_label
    assert recv.timeline_label.endswith(f"@{CPU}0)")


@pytest.mark.parametrize("level", [tf.RunOptions.SOFTWARE_TRACE, FULL])
def test_single_device_trace_and_no_trace(level):
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(np.ones((8, 8), np.float32))
        y = tf.matmul(x, x, name="y")
    with tf.Session(graph=g) as s:
        md = tf.RunMetadata()
        s.run(y, run_metadata=md)
        assert not md.step_stats.dev_stats  # untraced: nothing recorded...
        (step,) = s._steps.values()
        assert step._traced_parts is None  # ...and no traced executor exists
        value, md = _traced_run(s, y, None, level)
    np.testing.assert_array_equal(value, np.full((8, 8), 8.0, np.float32))
    (dev,) = md.step_stats.dev_stats
    assert "y" in {ns.node_name for ns in dev.node_stats}


def test_timeline_is_valid_chrome_trace_json_with_transfer_arrows():
    g, p, out = _graph()
    x = np.ones((4, 4), np.float32)
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2})) as s:
        _, md = _traced_run(s, out, {p: x})
    assert tf.client.timeline.Timeline is timeline.Timeline
    trace = json.loads(timeline.Timeline(md.step_stats).generate_chrome_trace_format(
        show_dataflow=True, show_memory=True))
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert {"ph", "name", "pid"} <= set(e)
        if e["ph"] == "X":
            assert {"ts", "dur", "tid", "cat", "args"} <= set(e)
            assert e["dur"] >= 1 and "name" in e["args"] and "op" in e["args"]
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
    assert f"{CPU}0 Compute" in processes.values() and f"{CPU}1 Compute" in processes.values()
    lanes = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    assert lanes and all(e["pid"] in processes for e in lanes)
    ops = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    assert ops["a"]["name"] == "MatMul" and processes[ops["a"]["pid"]] == f"{CPU}0 Compute"
    assert processes[ops["b"]["pid"]] == f"{CPU}1 Compute"
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "t"}
    assert starts and set(starts) == set(ends)
    transfers = [i for i, e in starts.items() if e["name"].startswith("edge_")]
    assert len(transfers) == 2  # a to cpu:1, c back to cpu:0
    for i in transfers:
        assert starts[i]["pid"] != ends[i]["pid"] and ends[i]["ts"] >= starts[i]["ts"]
    assert any(e["ph"] == "C" and e["cat"] == "Memory" for e in events)
    analysis = timeline.Timeline(md.step_stats).analyze_step_stats()
    assert analysis.allocator_maximums["cpu_0"].num_bytes >= 64


def test_memory_statistics_per_device():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [256, 256], name="p")
        with tf.device("/cpu:1"):
            y = tf.matmul(p, p, name="y")  # 256 KiB, on cpu:1
            z = tf.reduce_sum(y)
            w = tf.reduce_sum(tf.tanh(y))
    size = 256 * 256 * 4
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2})) as s:
        dev1 = s._device_mgr.lookup(CPU + "1")
        start = dev1.memory_stats()
        assert start["bytes_limit"] == 256 << 20 and start["bytes_in_use"] == 0
        x = np.ones((256, 256), np.float32)
        s.run(z, {p: x})  # untraced: MatMul is expensive, so it is counted...
        gc.collect()
        after = dev1.memory_stats()
        assert after["num_allocs"] == 1 and after["peak_bytes_in_use"] == size
        assert after["largest_alloc_size"] == size
        assert after["bytes_in_use"] == 0  # ...and the product died with the step
        s.run(w, {p: x}, options=tf.RunOptions(trace_level=FULL))  # traced: all counted
        gc.collect()
        assert dev1.peak_bytes_in_use >= 2 * size  # the product and its tanh at once
        assert dev1.bytes_in_use < size
        dev1.memory.reset_peak()
        assert dev1.peak_bytes_in_use == dev1.bytes_in_use
        assert s._device_mgr.lookup(CPU + "0").memory_stats()["largest_alloc_size"] < size
