"""Every execution strategy against the reference executor (runtime/exec_options.py,
runtime/reference_executor.py): random graphs over several devices, with and without
control flow, errors, deadlines, and tracing on the same strategy as untraced runs.

(Op cases run under every strategy in tests/op_test_util.py's `check_value`; the
control-flow tests in tests/ops/test_control_flow_*.py through their `loop_mode` fixture.)
"""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops import control_flow_ops as cf
from tensorflux.runtime import exec_options as exec_options_lib
from tensorflux.runtime.exec_options import ExecOptions
from tests import threads_util
from tests.op_test_util import STRATEGIES
from tests.runtime.test_partition import _random_dag

# Multi-device ways to run a step, besides STRATEGIES: compiled partitions each on a
# thread of its own (as with intra_op_parallelism_threads=1) instead of merged.
MULTI = dict(STRATEGIES, threads=ExecOptions(cpu_devices_share_cores=False),
             reference_threads=ExecOptions(strategy="reference",
                                           cpu_devices_share_cores=False))
CONFIG = tf.ConfigProto(device_count={"CPU": 3})
TIMEOUT = tf.RunOptions(timeout_in_ms=20_000)


def _run_all(graph, fetches, feeds, strategies=MULTI, config=CONFIG, runs=2):
    """{strategy: [values of each run]}, and the executor types each strategy built."""
    results, kinds = {}, {}
    for name, options in strategies.items():
        with tf.Session(graph=graph, config=config, exec_options=options) as s:
            results[name] = [s.run(fetches, feeds, options=TIMEOUT) for _ in range(runs)]
            kinds[name] = {type(ex).__name__ for st in s._steps.values()
                           for _, ex, _ in st.parts}
    return results, kinds


def _assert_all_equal_reference(results):
    want = results["reference"]
    for name, got in results.items():
        for w_run, g_run in zip(want, got, strict=True):
            for w, g in zip(w_run, g_run, strict=True):
                np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("seed", range(4))
def test_random_graphs_on_three_devices(seed):
    rng = np.random.default_rng(seed)
    g = tf.Graph()
    with g.as_default():
        fetches, expected, feeds = _random_dag(rng, 3, 40)
    results, kinds = _run_all(g, fetches, feeds)
    for v, e in zip(results["reference"][0], expected, strict=True):
        np.testing.assert_allclose(v, e, rtol=1e-5)
    _assert_all_equal_reference(results)
    assert kinds["reference"] == {"ReferenceExecutor"}
    assert kinds["auto"] == {"StaticExecutor"} == kinds["threads"]
    assert kinds["dataflow"] == {"Executor"}


def _random_control_flow(rng, devices: int):
    """A random program of elementwise ops, conds and while loops (loops nested in conds
    and conds in loops), its ops spread over `devices` devices."""
    x = tf.placeholder(tf.float32, [3], name="x")
    feeds = {x: np.array([0.5, -1.0, 2.0], np.float32)}

    def device():
        return tf.device(f"/cpu:{rng.integers(0, devices)}")

    def plain(v, depth):
        with device():
            if rng.random() < 0.5:
                return tf.tanh(v * float(rng.uniform(0.5, 1.5))) + 0.1
            return v * 0.5 + tf.reduce_sum(v) * 0.1

    def block(v, depth):
        kind = rng.integers(0, 3) if depth < 2 else 0
        if kind == 0:
            return plain(v, depth)
        if kind == 1:
            a, b = rng.integers(0, 2, 2)
            with device():
                pred = tf.reduce_sum(v) > float(rng.uniform(-1, 1))
            # (Work after a loop on a branch, maybe on another device, waits for the loop's
            # Exits: dead ones too, when the branch is not taken.)
            return tf.cond(pred, lambda: plain(block(v, depth + 1), depth) if a else v + 1.0,
                           lambda: block(v * 2.0, depth + 1) if b else v - 1.0)
        n = int(rng.integers(0, 4))
        _, out = tf.while_loop(lambda i, u: i < n, lambda i, u: (i + 1, block(u, depth + 1)),
                               [tf.constant(0), v])
        return out

    outs = []
    v = x
    for _ in range(4):
        v = block(v, 0)
        outs.append(v)
    return outs, feeds


@pytest.mark.parametrize("seed", range(10))
def test_random_control_flow_on_two_devices(seed):
    rng = np.random.default_rng(100 + seed)
    g = tf.Graph()
    with g.as_default():
        fetches, feeds = _random_control_flow(rng, 2)
    strategies = {k: MULTI[k] for k in ("reference", "auto", "dataflow", "frames")}
    results, _ = _run_all(g, fetches, feeds, strategies,
                          tf.ConfigProto(device_count={"CPU": 2}), runs=1)
    _assert_all_equal_reference(results)


@pytest.mark.parametrize("strategy", list(MULTI))
def test_errors_are_the_same_under_every_strategy(strategy):
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None], name="p")
        with tf.device("/cpu:1"):
            r = tf.reshape(p * 2.0, [2, 2], name="bad_reshape")
        with tf.device("/cpu:0"):
            out = tf.reduce_sum(r) + 1.0
    with tf.Session(graph=g, config=CONFIG, exec_options=MULTI[strategy]) as s:
        assert s.run(out, {p: [1.0, 2.0, 3.0, 4.0]}) == 21.0
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            s.run(out, {p: [1.0, 2.0, 3.0]})
        assert "bad_reshape" in str(e.value) and "CPU:1" in str(e.value)
        assert e.value.op is not None and e.value.op.name == "bad_reshape"
        assert s.run(out, {p: [0.0, 0.0, 0.0, 1.0]}) == 3.0  # the session stays usable


def test_reference_honours_deadlines_and_queues():
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(3, tf.float32, shapes=[[]])
        enq = q.enqueue(tf.constant(2.0))
        y = q.dequeue() * 10.0
    with tf.Session(graph=g, exec_options=STRATEGIES["reference"]) as s:
        s.run(enq)
        assert s.run(y) == 20.0
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(y, options=tf.RunOptions(timeout_in_ms=100))
        s.run(enq)
        assert s.run(y) == 20.0


def test_reference_fetch_of_an_untaken_branch_is_an_error():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.bool, [])
        _, t = cf.switch(tf.constant(1.0), p)
        taken = t * 2.0
    with tf.Session(graph=g, exec_options=STRATEGIES["reference"]) as s:
        assert s.run(taken, {p: True}) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="dead"):
            s.run(taken, {p: False})


@pytest.mark.parametrize("strategy", ["auto", "threads", "dataflow", "reference"])
def test_traced_runs_use_the_untraced_strategy_and_record_every_node(strategy):
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [4], name="p")
        with tf.device("/cpu:0"):
            a = tf.square(p, name="a")
        with tf.device("/cpu:1"):
            b = tf.identity(a + 1.0, name="b")
        with tf.device("/cpu:0"):
            out = tf.reduce_sum(b, name="out")
    config = tf.ConfigProto(device_count={"CPU": 2})
    x = np.arange(4, dtype=np.float32)
    with tf.Session(graph=g, config=config, exec_options=MULTI[strategy]) as s:
        md = tf.RunMetadata()
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                             output_partition_graphs=True)
        assert s.run(out, {p: x}, options=opts, run_metadata=md) == s.run(out, {p: x}) == 18.0
        (step,) = s._steps.values()
        assert [type(ex) for _, ex, _ in step.traced_parts()] == \
            [type(ex) for _, ex, _ in step.parts]
    recorded = {d.device: {ns.node_name for ns in d.node_stats} for d in md.step_stats.dev_stats}
    for gd in md.partition_graphs:
        assert {n.name for n in gd.node} == recorded[gd.node[0].device]


def test_the_chooser():
    """choose_strategies on partitions with and without control flow (one place decides)."""
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [], name="p")
        with tf.device("/cpu:0"):
            a = p * 2.0
        with tf.device("/cpu:1"):
            b = a + 1.0
        c = tf.cond(p > 0, lambda: b, lambda: b * 3.0)
    for fetch, want in ((b, {"merged"}), (c, {"dataflow", "static"})):
        with tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2})) as s:
            s.run(fetch, {p: 1.0})
            (step,) = s._steps.values()
            plan = step.plan
            got = {"merged"} if plan.merged_order is not None else {pp.kind for pp in plan.parts}
            assert got <= want and got
    parts = [(s._device_mgr.devices[0], [])]
    plan = exec_options_lib.choose_strategies(parts, ExecOptions(strategy="reference"))
    assert [pp.kind for pp in plan.parts] == ["reference"]
    with pytest.raises(ValueError, match="strategy"):
        ExecOptions(strategy="fast")
    assert ExecOptions.from_config(
        tf.ConfigProto(intra_op_parallelism_threads=1)).cpu_devices_share_cores is False
    assert ExecOptions.from_config(None).cpu_devices_share_cores is True


@pytest.mark.parametrize("strategy", list(MULTI))
def test_work_after_a_loop_on_an_untaken_branch_waits_for_its_dead_exit(strategy):
    """The loop's Exit fires dead once its frame is done; the op after it, on another
    device, gets the deadness through _Send/_Recv (otherwise that _Recv would wait)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")

        def loop_then_work():
            with tf.device("/cpu:0"):
                _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2.0),
                                     [tf.constant(0), x])
            with tf.device("/cpu:1"):
                return tf.tanh(y) + 1.0

        with tf.device("/cpu:0"):
            out = tf.cond(x > 0, loop_then_work, lambda: x - 1.0)
    options = tf.RunOptions(timeout_in_ms=10_000)
    with tf.Session(graph=g, config=CONFIG, exec_options=MULTI[strategy]) as s:
        assert s.run(out, {x: 0.5}, options=options) == pytest.approx(np.tanh(4.0) + 1.0)
        assert s.run(out, {x: -0.5}, options=options) == -1.5


def _plan_kinds(graph, fetch, feeds, config, options=None):
    with tf.Session(graph=graph, config=config, exec_options=options) as s:
        got = s.run(fetch, feeds)
        (step,) = s._steps.values()
        plan = step.plan
        kinds = ["merged"] if plan.merged_order is not None else [pp.kind for pp in plan.parts]
    return kinds, got


@pytest.mark.parametrize("devices", [1, 2])
def test_independent_heavy_kernels_run_side_by_side_with_one_intra_op_thread(devices):
    """With intra_op_parallelism_threads=1 a partition holding two heavy products that do
    not wait for each other runs on the dataflow executor (its inter-op pool runs them at
    once); a chain of them, small graphs and the default threads keep the compiled path;
    the values are the same everywhere."""
    rng = np.random.default_rng(0)
    n = 320  # 2 * 320^3 FLOP: above exec_options.HEAVY_MICROS by the cost model
    feeds_np = [rng.standard_normal((n, n)).astype(np.float32) for _ in range(2)]
    g = tf.Graph()
    with g.as_default():
        a, b = (tf.placeholder(tf.float32, [n, n]) for _ in range(2))
        with tf.device("/cpu:0"):
            pair = tf.matmul(a, a) + tf.matmul(b, b)  # independent
            chain = tf.matmul(tf.matmul(a, b), b)  # one waits for the other
            small = tf.matmul(a[:8, :8], b[:8, :8]) + tf.matmul(b[:8, :8], a[:8, :8])
    feeds = {a: feeds_np[0], b: feeds_np[1]}
    one = tf.ConfigProto(intra_op_parallelism_threads=1, device_count={"CPU": devices})
    default = tf.ConfigProto(device_count={"CPU": devices})
    kinds, got = _plan_kinds(g, pair, feeds, one)
    assert kinds == ["dataflow"]
    np.testing.assert_allclose(got, feeds_np[0] @ feeds_np[0] + feeds_np[1] @ feeds_np[1],
                               rtol=1e-4, atol=1e-3)
    assert _plan_kinds(g, pair, feeds, one, ExecOptions(concurrent_kernels=False))[0] == \
        ["static"]
    assert _plan_kinds(g, chain, feeds, one)[0] == ["static"]
    assert _plan_kinds(g, small, feeds, one)[0] == ["static"]
    assert _plan_kinds(g, pair, feeds, default)[0] in (["static"], ["merged"])


def test_side_by_side_looks_inside_each_partition_across_transfers():
    """Heavy products on two devices run side by side anyway (a partition per thread);
    a partition whose two products wait on each other through another device keeps the
    compiled path; the chooser takes the step's _Send -> _Recv edges into account."""
    n = 320
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [n, n])
        with tf.device("/cpu:0"):
            x = tf.matmul(a, a)
        with tf.device("/cpu:1"):
            y = x * 2.0 + tf.matmul(a, a)
        with tf.device("/cpu:0"):
            z = tf.matmul(y, a)  # waits for x through /cpu:1
            w = z + tf.matmul(a * 3.0, a)  # does not wait for x
    config = tf.ConfigProto(intra_op_parallelism_threads=1, device_count={"CPU": 2})
    feeds = {a: np.eye(n, dtype=np.float32)}
    kinds, got = _plan_kinds(g, z, feeds, config)
    assert kinds == ["static", "static"]
    np.testing.assert_allclose(got, 3 * np.eye(n), atol=0)
    kinds, got = _plan_kinds(g, w, feeds, config)
    assert kinds == ["dataflow", "dataflow"]  # /cpu:1's _Recv then waits asynchronously
    np.testing.assert_allclose(got, 6 * np.eye(n), atol=0)


def test_heavy_independent_products_run_side_by_side_with_the_default_threads():
    """With kernels split over the cores (the default), only products big enough that a
    split costs more than it saves (exec_options.HEAVY_PRODUCT_MICROS) run side by side."""
    rng = np.random.default_rng(1)
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [None, None])
        pair = tf.matmul(a, a) + tf.matmul(a * 2.0, a)
    with g.as_default():  # the cost model reads static shapes
        big = tf.placeholder(tf.float32, [640, 640])
        big_pair = tf.matmul(big, big) + tf.matmul(big * 2.0, big)
    x = rng.standard_normal((640, 640)).astype(np.float32)
    kinds, got = _plan_kinds(g, big_pair, {big: x}, None)
    assert kinds == ["dataflow"]
    np.testing.assert_allclose(got, 3 * (x @ x), rtol=1e-4, atol=1e-2)
    assert _plan_kinds(g, pair, {a: x[:64, :64]}, None)[0] == ["static"]  # unknown: small
    with g.as_default():  # on two devices that share the cores (merged when compiled)
        with tf.device("/cpu:0"):
            left = tf.matmul(big, big)
        with tf.device("/cpu:1"):
            right = tf.matmul(big * 2.0, big)
        split_pair = left + right
    kinds, got = _plan_kinds(g, split_pair, {big: x}, tf.ConfigProto(device_count={"CPU": 2}))
    assert kinds == ["dataflow", "dataflow"]
    np.testing.assert_allclose(got, 3 * (x @ x), rtol=1e-4, atol=1e-2)



def test_products_beside_heavier_split_kernels_keep_the_compiled_path():
    """With the default threads, two independent heavy products run side by side only
    where they are at least exec_options.PRODUCT_SHARE of the step's split kernels by the
    cost model: beside two independent convolutions that cost more, they keep the
    compiled path (a DCGAN discriminator on fake and real images), with the same values
    as with concurrent_kernels off."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((640, 640)).astype(np.float32)
    img = rng.standard_normal((8, 64, 64, 64)).astype(np.float32)
    w = (rng.standard_normal((3, 3, 64, 64)) * 0.05).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        big = tf.placeholder(tf.float32, [640, 640])
        im = tf.placeholder(tf.float32, [8, 64, 64, 64])
        products = tf.reduce_sum(tf.matmul(big, big) + tf.matmul(big * 2.0, big))
        convs = tf.reduce_sum(tf.nn.conv2d(im, w, [1, 1, 1, 1], "SAME")
                              + tf.nn.conv2d(im * 2.0, w, [1, 1, 1, 1], "SAME"))
        both = products + convs
    feeds = {big: x, im: img}
    assert _plan_kinds(g, products, {big: x}, None)[0] == ["dataflow"]
    kinds, got = _plan_kinds(g, both, feeds, None)
    assert kinds == ["static"]
    want = _plan_kinds(g, both, feeds, None, ExecOptions(concurrent_kernels=False))[1]
    np.testing.assert_array_equal(got, want)
    one = tf.ConfigProto(intra_op_parallelism_threads=1)  # no split: side by side
    assert _plan_kinds(g, both, feeds, one)[0] == ["dataflow"]

def _big_graph(copies=400):
    """A step of ~2,000 nodes (copies of tanh(p * 3 + 1) summed, as graph_optimizer.py's
    benchmark builds them), over COMPILE_LATER_NODES when optimizations are off."""
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [64], name="p")
        total = tf.add_n([tf.reduce_sum(tf.tanh(p * 3.0 + 1.0)) for _ in range(copies)])
    return g, p, total


L0 = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(
    opt_level=tf.OptimizerOptions.L0, do_common_subexpression_elimination=False,
    do_constant_folding=False)))


def _kinds(sess):
    return [{type(ex).__name__ for _, ex, _ in st.parts} for st in sess._steps.values()]


def test_a_big_step_runs_first_on_the_dataflow_executor_then_compiled():
    g, p, total = _big_graph()
    x = np.linspace(-1, 1, 64).astype(np.float32)
    want = np.float32(400) * np.tanh(x * np.float32(3) + np.float32(1)).sum(dtype=np.float32)
    with tf.Session(graph=g, config=L0) as s:
        values, kinds = [], []
        for _ in range(3):
            values.append(s.run(total, {p: x}))
            kinds.append(_kinds(s))
        step_nodes = sum(len(n) for _, n, _, _ in next(iter(s._steps.values()))._part_nodes)
    assert step_nodes >= exec_options_lib.COMPILE_LATER_NODES
    assert kinds == [[{"Executor"}], [{"StaticExecutor"}], [{"StaticExecutor"}]]
    assert values[0] == values[1] == values[2]  # the same kernels: the same bits
    np.testing.assert_allclose(values[0], want, rtol=1e-4)


def test_a_small_step_is_compiled_at_once_and_a_big_one_with_compile_later_off():
    g, p, total = _big_graph(copies=3)
    with tf.Session(graph=g, config=L0) as s:
        s.run(total, {p: np.zeros(64, np.float32)})
        assert _kinds(s) == [{"StaticExecutor"}]
    g, p, total = _big_graph()
    # explicit strategies never tier: "dataflow" stays dataflow
    with tf.Session(graph=g, config=L0, exec_options=ExecOptions(strategy="dataflow")) as s:
        for _ in range(2):
            s.run(total, {p: np.zeros(64, np.float32)})
        assert _kinds(s) == [{"Executor"}]


def test_a_big_steps_traced_run_follows_the_plan_of_its_time():
    g, p, total = _big_graph()
    x = np.ones(64, np.float32)
    trace = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session(graph=g, config=L0) as s:
        md = tf.RunMetadata()
        first = s.run(total, {p: x}, options=trace, run_metadata=md)
        assert len(md.step_stats.dev_stats[0].node_stats) > 1000
        step = next(iter(s._steps.values()))
        assert {type(ex).__name__ for _, ex, _ in step.traced_parts()} == {"Executor"}
        second = s.run(total, {p: x})  # compiles
        md2 = tf.RunMetadata()
        third = s.run(total, {p: x}, options=trace, run_metadata=md2)
        assert {type(ex).__name__ for _, ex, _ in step.traced_parts()} == {"StaticExecutor"}
        assert len(md2.step_stats.dev_stats[0].node_stats) > 1000
    assert first == second == third


def test_a_big_step_run_from_many_threads_at_once():
    import threading

    g, p, total = _big_graph()
    x = np.linspace(-1, 1, 64).astype(np.float32)
    with tf.Session(graph=g, config=L0) as s:
        results, failures = [], []
        barrier = threading.Barrier(8)

        def work():
            try:
                barrier.wait(timeout=30)
                for _ in range(3):
                    results.append(s.run(total, {p: x}, options=TIMEOUT))
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(e)

        threads_util.join(*[threads_util.start(work) for _ in range(8)], timeout=60)
        assert not failures, failures
        want = s.run(total, {p: x})
        assert _kinds(s) == [{"StaticExecutor"}]
    assert len(results) == 24 and all(r == want for r in results)


def test_a_big_steps_failing_first_run_names_the_node_and_the_next_run_too():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None], name="p")
        q = tf.placeholder(tf.float32, [None], name="q")
        parts = [tf.reduce_sum(tf.tanh(p * 3.0 + 1.0)) for _ in range(400)]
        bad = tf.add(p, q, name="mismatched")
        total = tf.add_n(parts) + tf.reduce_sum(bad)
    with tf.Session(graph=g, config=L0) as s:
        for _ in range(2):  # the dataflow executor's run, then the compiled one's
            with pytest.raises(tf.errors.InvalidArgumentError, match="mismatched"):
                s.run(total, {p: np.ones(3, np.float32), q: np.ones(4, np.float32)})
        assert s.run(total, {p: np.ones(3, np.float32), q: np.ones(3, np.float32)}) > 0
        assert _kinds(s) == [{"StaticExecutor"}]
