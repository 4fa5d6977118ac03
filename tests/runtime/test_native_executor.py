"""The dataflow executor's driver loop in C (`_native.c` DataflowCore/ReadyQueue, used by
runtime/executor.py) against the loop in Python: the same results on random graphs with and
without control flow and dead values, the same typed errors naming the failing node, the
same deadlines and cancellation. Every test runs with the C loop (when the extension is
built) and with `executor.NATIVE_CORE = False`; both are compared with the reference
executor.
"""

import threading

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import common_shapes, errors, op_registry
from tensorflux.framework.op_def_library import apply_op
from tensorflux.kernels import registry as kernel_registry
from tensorflux.kernels.cpu import native
from tensorflux.ops import control_flow_ops as cf
from tensorflux.runtime import executor
from tensorflux.runtime.exec_options import ExecOptions
from tests.runtime import test_executor  # noqa: F401 - registers _TestBlockForever
from tests.runtime.test_partition import _random_dag
from tests.runtime.test_strategies import _random_control_flow
from tests.threads_util import assert_close_cancels_blocked_runs

FRAMES = ExecOptions(strategy="dataflow", compile_loops=False, straight_line=False)
OPTIONS = {"reference": ExecOptions(strategy="reference"),
           "dataflow": ExecOptions(strategy="dataflow"), "frames": FRAMES}
LOOPS = ["native", "python"]


@pytest.fixture(params=LOOPS)
def loop(request, monkeypatch):
    """Which driver loop the dataflow executors of the test use."""
    if request.param == "native" and not native.available():
        pytest.skip("the C extension is not built (or TENSORFLUX_NATIVE=0)")
    monkeypatch.setattr(executor, "NATIVE_CORE", request.param == "native")
    return request.param


def _executors(sess):
    return [ex for st in sess._steps.values() for _, ex, _ in st.parts
            if isinstance(ex, executor.Executor)]


def _run(graph, fetches, feeds, options, config=None, loop=None):
    with tf.Session(graph=graph, config=config, exec_options=options) as s:
        got = s.run(fetches, feeds)
        if loop is not None:
            for ex in _executors(s):
                assert (ex.core is not None) == (loop == "native")
    return got


def _assert_same(got, want):
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


# ---- the same values ----------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_random_control_flow_equals_the_reference(loop, seed):
    rng = np.random.default_rng(300 + seed)
    g = tf.Graph()
    with g.as_default():
        fetches, feeds = _random_control_flow(rng, 2)
    config = tf.ConfigProto(device_count={"CPU": 2})
    want = _run(g, fetches, feeds, OPTIONS["reference"], config)
    for name in ("dataflow", "frames"):
        _assert_same(_run(g, fetches, feeds, OPTIONS[name], config, loop), want)


@pytest.mark.parametrize("seed", range(3))
def test_random_dags_equal_the_reference(loop, seed):
    rng = np.random.default_rng(400 + seed)
    g = tf.Graph()
    with g.as_default():
        fetches, expected, feeds = _random_dag(rng, 1, 60)
    got = _run(g, fetches, feeds, FRAMES, loop=loop)
    for v, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(v, e, rtol=1e-5)
    _assert_same(got, _run(g, fetches, feeds, OPTIONS["reference"]))


def test_dead_values_through_identity_chains_and_control_edges(loop):
    """Pass-through nodes (Identity, NoOp) on an untaken branch are dead, a Merge takes the
    live one, and work after a dead NoOp through a control edge is dead too."""
    g = tf.Graph()
    with g.as_default():
        pred = tf.placeholder(tf.bool, [])
        x = tf.placeholder(tf.float32, [2])
        f, t = cf.switch(x, pred)
        chains = []
        for side in (f, t):
            v = side
            for _ in range(20):
                v = tf.identity(v)
            chains.append(v)
        gate = tf.no_op()
        with tf.control_dependencies([chains[1].op]):
            gate = tf.no_op()
        with tf.control_dependencies([gate]):
            after = tf.identity(chains[1]) * 2.0
        merged, index = cf.merge([chains[0] + 1.0, after])
        always = tf.identity(x) - 1.0
    feeds_of = [{pred: p, x: np.array([1.0, 2.0], np.float32)} for p in (True, False)]
    for feeds in feeds_of:
        want = _run(g, [merged, index, always], feeds, OPTIONS["reference"])
        _assert_same(_run(g, [merged, index, always], feeds, FRAMES, loop=loop), want)


def test_merges_with_dead_and_live_control_inputs(loop):
    """A Merge waits for its control inputs, dead ones too (they do not kill it), and is
    dead only when every data input is."""
    g = tf.Graph()
    with g.as_default():
        pred = tf.placeholder(tf.bool, [])
        x = tf.placeholder(tf.float32, [])
        f, t = cf.switch(x, pred)
        f2, t2 = cf.switch(tf.identity(x) * 3.0, pred)
        inputs = [f + 1.0, t * 2.0]
        with tf.control_dependencies([tf.identity(f).op, tf.identity(t).op]):
            m, m_index = cf.merge(inputs)
        inputs = [tf.identity(f2), f - 1.0]
        with tf.control_dependencies([tf.no_op()]):
            both_dead_when_true, _ = cf.merge(inputs)
        after = tf.identity(both_dead_when_true) + 1.0
        out, _ = cf.merge([after, tf.identity(t2)])
    fetches = [m, m_index, out]
    for p in (True, False):
        feeds = {pred: p, x: 2.0}
        _assert_same(_run(g, fetches, feeds, FRAMES, loop=loop),
                     _run(g, fetches, feeds, OPTIONS["reference"]))


def test_while_loop_with_cond_inside_and_identity_chain_body(loop):
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [])

        def body(i, acc):
            v = acc
            for _ in range(5):
                v = tf.identity(v)
            v = tf.cond(tf.equal(i % 3, 0), lambda: v + 1.0, lambda: v * 1.5)
            return i + 1, v

        _, out = tf.while_loop(lambda i, acc: i < n, body, [tf.constant(0), tf.constant(1.0)])
    for k in (0, 1, 7):
        want = _run(g, out, {n: k}, OPTIONS["reference"])
        assert _run(g, out, {n: k}, FRAMES, loop=loop) == want


def test_identity_chain_forwards_the_very_value(loop):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3])
        v = x
        for _ in range(100):
            v = tf.identity(v)
        with tf.control_dependencies([tf.no_op() for _ in range(50)]):
            v = tf.identity(v)
    feed = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(_run(g, v, {x: feed}, FRAMES, loop=loop), feed)


def test_a_value_nothing_reads_is_not_kept(loop, monkeypatch):
    """`v.assign(...)` returns a read of v that Adam's sparse update uses only as a control
    input: the executor drops it at once, so the scatter after it updates v in place
    instead of copying it (the read would otherwise hold v's buffer to the step's end)."""
    from tensorflux.kernels.cpu import state_ops

    copies = []
    own_value = state_ops.own_value

    def counting(var):
        before = id(var.value)
        arr = own_value(var)
        copies.append(id(arr) != before)
        return arr

    monkeypatch.setattr(state_ops, "own_value", counting)
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.ones((4, 3), np.float32))
        read = v.assign(v.read_value() * 2.0)  # nothing reads this read's value
        with tf.control_dependencies([read]):
            update = tf.scatter_add(v, [1], [[1.0, 2.0, 3.0]])
        with tf.control_dependencies([update]):
            out = v.read_value() + 0.0
        with tf.Session(graph=g, exec_options=FRAMES) as s:
            s.run(v.initializer)
            got = s.run(out)
            assert all((ex.core is not None) == (loop == "native") for ex in _executors(s))
    np.testing.assert_array_equal(got, [[2, 2, 2], [3, 4, 5], [2, 2, 2], [2, 2, 2]])
    assert copies == [False]


# ---- errors, deadlines, cancellation -----------------------------------------------------

if op_registry.lookup("_TestFailAbove") is None:
    op_registry.define_op("_TestFailAbove", inputs=["x: float"], outputs=["y: float"],
                          attrs=["limit: float"], shape_fn=common_shapes.unchanged)
    op_registry.not_differentiable("_TestFailAbove")

    @kernel_registry.kernel_factory("_TestFailAbove")
    def _fail_above(node):
        limit = node.attrs["limit"]

        def compute(ctx, x):
            if np.any(x > limit):
                raise errors.InvalidArgumentError(None, None, f"value above {limit}")
            return x

        return compute

    op_registry.define_op("_TestWrongOutputs", inputs=["x: float"],
                          outputs=["a: float", "b: float"],
                          shape_fn=lambda op: [op.inputs[0].get_shape()] * 2)
    op_registry.not_differentiable("_TestWrongOutputs")

    @kernel_registry.kernel("_TestWrongOutputs")
    def _wrong_outputs(ctx, x):
        return (x, x, x) if np.any(x > 1.0) else [x, x + 1.0]  # a list is fine too


def test_kernel_error_in_a_chain_is_typed_and_names_the_node(loop):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [])
        v = x
        for _ in range(10):
            v = tf.identity(v)
        v = apply_op("_TestFailAbove", x=v, limit=2.0, name="fails")
        for _ in range(10):
            v = tf.identity(v)
    with tf.Session(graph=g, exec_options=FRAMES) as s:
        assert s.run(v, {x: 1.0}) == 1.0
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            s.run(v, {x: 3.0})
        assert "value above 2.0" in str(e.value) and e.value.op.name == "fails"
        assert s.run(v, {x: 0.5}) == 0.5  # the session stays usable


def test_kernel_error_inside_a_loop_iteration_names_the_node(loop):
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [])

        def body(i, acc):
            return i + 1, apply_op("_TestFailAbove", x=acc * 2.0, limit=50.0, name="in_loop")

        _, out = tf.while_loop(lambda i, acc: i < n, body, [tf.constant(0), tf.constant(1.0)])
    with tf.Session(graph=g, exec_options=FRAMES) as s:
        assert s.run(out, {n: 5}) == 32.0
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            s.run(out, {n: 10})
        assert e.value.op.name.endswith("in_loop")
        assert s.run(out, {n: 3}) == 8.0


def test_wrong_number_of_outputs_is_an_internal_error(loop):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [])
        a, b = apply_op("_TestWrongOutputs", x=tf.identity(x), name="wrong")
        out = tf.identity(a) + tf.identity(b)
    with tf.Session(graph=g, exec_options=FRAMES) as s:
        assert s.run(out, {x: 1.0}) == 3.0
        with pytest.raises(tf.errors.InternalError) as e:
            s.run(out, {x: 2.0})
        assert "returned 3 outputs, expected 2" in str(e.value)


def test_deadline_inside_a_loop_after_plain_work(loop):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [])

        def body(i, acc):
            v = tf.identity(tf.identity(acc) + 1.0)
            v = tf.cond(i < 2, lambda: v,
                        lambda: apply_op("_TestBlockForever", x=v, name="blocked"))
            return i + 1, v

        _, out = tf.while_loop(lambda i, acc: i < 5, body, [tf.constant(0), x])
        fine = tf.identity(x) + 1.0
    with tf.Session(graph=g, exec_options=FRAMES) as s:
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(out, {x: 1.0}, options=tf.RunOptions(timeout_in_ms=200))
        assert s.run(fine, {x: 1.0}) == 2.0


def test_close_cancels_steps_blocked_behind_plain_work(loop):
    g = tf.Graph()
    with g.as_default():
        v = tf.constant(1.0)
        for _ in range(30):
            v = tf.identity(v)
        blocked = apply_op("_TestBlockForever", x=v, name="blocked")
        with tf.control_dependencies([tf.no_op() for _ in range(10)]):
            out = tf.identity(blocked)
    assert_close_cancels_blocked_runs(tf.Session(graph=g, exec_options=FRAMES), out, 4)


def test_queue_runner_style_steps_across_threads(loop):
    """Asynchronous kernels completing on other threads (a dequeue waiting for enqueues)
    feed plain nodes that run in the loop."""
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(4, tf.float32, shapes=[[]])
        x = tf.placeholder(tf.float32, [])
        enqueue = q.enqueue(tf.identity(x) * 2.0)
        v = q.dequeue()
        for _ in range(10):
            v = tf.identity(v)
        out = v + 1.0
    with tf.Session(graph=g, exec_options=FRAMES) as s:
        got = []
        reader = threading.Thread(target=lambda: got.extend(s.run(out) for _ in range(6)))
        reader.start()
        for k in range(6):
            s.run(enqueue, {x: float(k)})
        reader.join(timeout=20)
        assert not reader.is_alive()
    assert got == [2.0 * k + 1.0 for k in range(6)]


# ---- the queue object itself -------------------------------------------------------------

@pytest.mark.skipif(not native.available(), reason="the C extension is not built")
def test_ready_queue_behaves_as_a_deque_of_the_executors_items():
    frame = object()
    ex = _chain_executor(3)
    ready = ex.core.ready()
    assert not ready and len(ready) == 0
    n = len(ex.items) * 70  # past the initial capacity
    for k, it in enumerate(ex.items * 70):
        ready.append((it, frame, k))
    assert len(ready) == n
    assert ready.popleft() == (ex.items[0], frame, 0)
    ready.push_indices([1, 0], frame, 7)
    assert len(ready) == n + 1
    for k in range(n - 1):
        assert ready.popleft()[2] == k + 1
    assert ready.popleft() == (ex.items[1], frame, 7)
    with pytest.raises(ValueError):
        ready.append((_chain_executor(1).items[0], frame, 0))  # another executor's node
    ready.clear()
    assert not ready
    with pytest.raises(IndexError):
        ready.popleft()


def _chain_executor(n):
    g = tf.Graph()
    with g.as_default():
        v = tf.constant(1.0)
        for _ in range(n - 1):
            v = tf.identity(v)
    with tf.Session(graph=g, exec_options=FRAMES) as s:
        s.run(v)
        (ex,) = _executors(s)
    return ex
