"""The dataflow executor's control-flow machinery, on hand-built graphs of primitives:
dead values through Switch/Merge, frames and iterations through Enter/Exit/NextIteration,
loop invariants, nested loops, parallel_iterations, asynchronous kernels, deadlines.

(The tf.cond / tf.while_loop builders come with the control-flow issue; these tests pin the
runtime semantics they will rely on.)
"""

import threading
import time
from dataclasses import replace

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import common_shapes, op_registry
from tensorflux.framework.op_def_library import apply_op
from tensorflux.kernels import registry as kernel_registry
from tensorflux.ops import control_flow_ops as cf
from tensorflux.runtime.exec_options import ExecOptions
from tests.threads_util import assert_close_cancels_blocked_runs


def _enter(x, frame, is_constant=False, parallel_iterations=10):
    return apply_op("Enter", data=x, frame_name=frame, is_constant=is_constant,
                    parallel_iterations=parallel_iterations)


def _while(cond_fn, body_fn, init, frame, parallel_iterations=10, invariants=()):
    """A while loop from primitives (as tf.while_loop builds it) over one loop variable.

    Returns the Exit tensor. `invariants` are tensors entered with is_constant=True and
    passed to cond_fn/body_fn after the loop variable.
    """
    enter = _enter(init, frame, parallel_iterations=parallel_iterations)
    inv = [_enter(t, frame, is_constant=True, parallel_iterations=parallel_iterations)
           for t in invariants]
    # Everything inside the loop is built clear of enclosing control dependencies (they
    # belong to another frame); ops without inputs (constants) in the condition or the body
    # get a control edge from the loop's frame instead, as the while_loop builder does.
    with tf.control_dependencies(None):
        merge, _ = cf.merge([enter, enter])  # input 1 is rewired to NextIteration below
        with tf.control_dependencies([merge.op]):
            pred = apply_op("LoopCond", input=cond_fn(merge, *inv))
        out_false, out_true = cf.switch(merge, pred)
        pivot = tf.identity(out_true)
        with tf.control_dependencies([pivot.op]):
            body = body_fn(pivot, *inv)
        nxt = apply_op("NextIteration", data=body)
        merge.op._update_input(1, nxt)
        return apply_op("Exit", data=out_false)


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


# These tests pin the frame machinery: cheap loops would otherwise be compiled
# (runtime/compiled_loops.py; tests/control_flow/test_builders.py runs both ways).
FRAMES = ExecOptions(compile_loops=False)


def _session(config=None, **options) -> tf.Session:
    """A Session running loops on the frames (`options` change other ExecOptions)."""
    return tf.Session(config=config, exec_options=replace(FRAMES, **options))


@pytest.fixture(params=["dataflow", "reference"])
def strategy(request):
    """The semantics tests run on the dataflow executor and on the reference executor."""
    return request.param


def test_switch_merge_runs_only_the_taken_branch(graph, strategy):
    pred = tf.placeholder(tf.bool, [])
    x = tf.constant(3.0)
    f, t = cf.switch(x, pred)
    taken_true = t * 10.0
    taken_false = f - 1.0
    out, index = cf.merge([taken_false, taken_true])
    with _session(strategy=strategy) as s:
        assert s.run([out, index], {pred: True}) == [30.0, 1]
        assert s.run([out, index], {pred: False}) == [2.0, 0]
        # Fetching a tensor on the untaken branch is an error, not a silent None.
        with pytest.raises(tf.errors.InvalidArgumentError, match="dead"):
            s.run(taken_true, {pred: False})


def test_dead_values_propagate_through_chains_and_control_edges(graph, strategy):
    pred = tf.placeholder(tf.bool, [])
    f, t = cf.switch(tf.constant(1.0), pred)
    chain = tf.identity(tf.identity(t) + 1.0)
    with tf.control_dependencies([chain]):
        gated = tf.constant(7.0) + 0.0  # dead when the true branch is dead
    out, _ = cf.merge([gated, f])
    with _session(strategy=strategy) as s:
        assert s.run(out, {pred: True}) == 7.0
        assert s.run(out, {pred: False}) == 1.0


def test_counting_loop(graph, strategy):
    n = tf.placeholder(tf.int32, [])
    limit_out = _while(lambda i, lim: tf.less(i, lim), lambda i, lim: i + 1,
                       tf.constant(0), "count", invariants=[n])  # 1000 iterations below
    with _session(strategy=strategy) as s:
        assert s.run(limit_out, {n: 10}) == 10
        assert s.run(limit_out, {n: 0}) == 0
        assert s.run(limit_out, {n: 1000}) == 1000


@pytest.mark.parametrize("parallel_iterations", [1, 2, 10])
def test_loop_results_do_not_depend_on_parallel_iterations(graph, parallel_iterations, strategy):
    # x <- x * 1.5 + 1 for 50 iterations; every iteration reads a loop invariant too.
    scale = tf.constant(1.5)
    counter_init = tf.constant([0.0, 1.0])  # [i, x] packed to keep one loop variable
    limit = tf.constant(50.0)

    def cond(v, c, lim):
        return tf.less(v[0], lim)

    def step(v, c, lim):
        return tf.stack([v[0] + 1.0, v[1] * c + 1.0])

    out = _while(cond, step, counter_init, "pi", parallel_iterations=parallel_iterations,
                 invariants=[scale, limit])
    expected = 1.0
    for _ in range(50):
        expected = expected * 1.5 + 1.0
    with _session(strategy=strategy) as s:
        i, x = s.run(out)
    assert i == 50.0 and x == pytest.approx(expected, rel=1e-5)


def test_nested_loops(graph, strategy):
    # for i in range(4): for j in range(3): total += i * j   (sum = 18)
    def outer_body(v):
        i, total = v[0], v[1]
        inner = _while(lambda w, lim: tf.less(w[0], lim),
                       lambda w, lim: tf.stack([w[0] + 1.0, w[1] + w[2] * w[0], w[2]]),
                       tf.stack([0.0, total, i]), "inner", invariants=[tf.constant(3.0)])
        return tf.stack([i + 1.0, inner[1]])

    out = _while(lambda v, lim: tf.less(v[0], lim), lambda v, lim: outer_body(v),
                 tf.constant([0.0, 0.0]), "outer", invariants=[tf.constant(4.0)])
    with _session(strategy=strategy) as s:
        i, total = s.run(out)
    assert i == 4.0 and total == 18.0


def test_loop_inside_untaken_branch_is_dead_and_finishes(graph, strategy):
    pred = tf.placeholder(tf.bool, [])
    f, t = cf.switch(tf.constant(0), pred)
    looped = _while(lambda i, lim: tf.less(i, lim), lambda i, lim: i + 1, t, "branch",
                    invariants=[tf.constant(5)])
    out, _ = cf.merge([f, looped])
    with _session(strategy=strategy) as s:
        assert s.run(out, {pred: True}) == 5
        assert s.run(out, {pred: False}) == 0


# ---- asynchronous kernels, cancellation, deadlines -------------------------------------

if op_registry.lookup("_TestBlockForever") is None:
    op_registry.define_op("_TestBlockForever", inputs=["x: float"], outputs=["y: float"],
                          shape_fn=common_shapes.unchanged, stateful=True)
    op_registry.not_differentiable("_TestBlockForever")

    @kernel_registry.kernel_factory("_TestBlockForever", is_async=True)
    def _block_forever(node):
        def compute(ctx, done, x):
            # Never completes by itself; only cancellation finishes it.
            token = ctx.cancellation.get_token()
            if not ctx.cancellation.register(
                    token, lambda: done(tf.errors.CancelledError(None, None, "cancelled"))):
                done(tf.errors.CancelledError(None, None, "cancelled"))

        return compute

    @kernel_registry.kernel_factory("_TestBlockForever", device="GPU", is_async=True)
    def _block_forever_gpu(node):
        return _block_forever(node)


def test_deadline_exceeded_and_session_stays_usable(graph, strategy):
    x = tf.placeholder(tf.float32, [])
    blocked = apply_op("_TestBlockForever", x=x, name="blocked")
    fine = x + 1.0
    opts = tf.RunOptions(timeout_in_ms=200)
    with _session(strategy=strategy) as s:
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(blocked, {x: 1.0}, options=opts)
        assert s.run(fine, {x: 1.0}) == 2.0


def test_close_cancels_blocked_steps(graph, strategy):
    x = tf.placeholder(tf.float32, [])
    blocked = apply_op("_TestBlockForever", x=x, name="blocked")
    s = _session(strategy=strategy)
    caught = []

    def run():
        try:
            s.run(blocked, {x: 1.0})
        except tf.errors.CancelledError as e:
            caught.append(e)

    t = threading.Thread(target=run)
    t.start()
    for _ in range(200):
        if s._active_steps:
            break
        threading.Event().wait(0.01)
    s.close()
    t.join(timeout=10)
    assert not t.is_alive() and len(caught) == 1


def test_thousand_blocked_steps_do_not_hold_threads(graph):
    """Blocked asynchronous kernels hold no pool thread: 200 concurrent blocked steps on a
    session whose devices have 2 pool threads all get cancelled cleanly."""
    x = tf.placeholder(tf.float32, [])
    blocked = apply_op("_TestBlockForever", x=x, name="blocked")
    s = _session(tf.ConfigProto(inter_op_parallelism_threads=2))
    errors_seen = []
    threads = []
    for _ in range(200):
        t = threading.Thread(target=lambda: _expect_cancel(s, blocked, x, errors_seen))
        t.start()
        threads.append(t)
    for _ in range(500):
        if len(s._active_steps) == 200:
            break
        threading.Event().wait(0.01)
    assert len(s._active_steps) == 200
    s.close()
    for t in threads:
        t.join(timeout=10)
    assert len(errors_seen) == 200


def _expect_cancel(s, blocked, x, out):
    try:
        s.run(blocked, {x: 1.0})
    except tf.errors.CancelledError as e:
        out.append(e)


def test_expensive_kernels_overlap_on_the_pool(graph):
    a = tf.constant(np.ones((200, 200), np.float32))
    branches = [tf.matmul(a, a) for _ in range(4)]
    total = tf.add_n(branches)
    with _session(strategy="dataflow") as s:
        np.testing.assert_allclose(s.run(total), np.full((200, 200), 800.0))


# ---- the straight-line path (Executor._run_straight) ---------------------------------------


def _executor_of(sess):
    """The (single) partition executor of the session's latest cached step."""
    from tensorflux.runtime.executor import Executor

    step = list(sess._steps.values())[-1]
    (_, ex, _), = step.parts
    assert isinstance(ex, Executor)
    return ex


def _straight_and_dataflow(build_and_run):
    """build_and_run(graph, exec_options) -> results, once on the straight-line path, once
    without it."""
    out = []
    for straight in (True, False):
        with tf.Graph().as_default() as g:
            out.append(build_and_run(g, replace(FRAMES, straight_line=straight)))
    return out


def test_straight_line_results_equal_the_dataflow_executors():
    def build_and_run(g, options):
        q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
        x = tf.placeholder(tf.float32, [2])
        enq = q.enqueue([x * 2.0, tf.size(x)])
        a, n = q.dequeue()
        y = a + tf.cast(n, tf.float32)
        got = []
        with tf.Session(exec_options=options) as s:
            for i in range(3):
                s.run(enq, {x: [i, i + 1.0]})
            straight = _executor_of(s).straight is not None
            for _ in range(3):
                v, k = s.run([y, n])
                got.append((v.tolist(), int(k)))
            got.append(int(s.run(q.size())))
        return straight, got

    (on, straight), (off, dataflow) = _straight_and_dataflow(build_and_run)
    assert (on, off) == (True, False)
    assert straight == dataflow == [([2.0, 4.0], 2), ([4.0, 6.0], 2), ([6.0, 8.0], 2), 0]


def test_straight_line_is_chosen_only_for_plain_partitions_with_async_kernels(graph):
    q = tf.FIFOQueue(10, tf.float32)
    enq = q.enqueue(tf.constant(1.0))
    pred = tf.placeholder(tf.bool, [])
    f, t = cf.switch(q.dequeue(), pred)
    merged, _ = cf.merge([f, t])
    with _session(strategy="dataflow") as s:
        s.run(enq)
        assert _executor_of(s).straight is not None  # queue ops, no control flow
        s._steps.clear()
        assert s.run(merged, {pred: True}) == 1.0
        assert _executor_of(s).straight is None  # Switch/Merge: the dataflow loop


def test_straight_line_step_continues_on_the_dataflow_path_when_a_kernel_waits(
        graph, monkeypatch):
    from tensorflux.runtime import executor

    resumed = []
    resume = executor._Run.resume

    def counting_resume(self, k, entries, completions):
        resumed.append(self.ex.straight[k][0].node.op)
        return resume(self, k, entries, completions)

    monkeypatch.setattr(executor._Run, "resume", counting_resume)
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    gate = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    # One step whose dequeue (first in the order: it depends on fewer nodes) can only
    # complete once the same step's enqueue, which waits for `gate`, has run.
    deq = q.dequeue() * 10.0
    enq = q.enqueue(gate.dequeue() + 1.0)
    with _session() as s:
        out = []
        t = threading.Thread(target=lambda: out.append(s.run([deq, enq])))
        t.start()
        end = time.monotonic() + 10
        while not s._active_steps and time.monotonic() < end:
            time.sleep(0.002)
        assert t.is_alive()  # blocked: nothing in `gate` yet
        s.run(gate.enqueue(2.0))
        t.join(10)
        assert not t.is_alive()
        assert out == [[30.0, None]]
        assert resumed and resumed[0] in ("QueueDequeueV2", "QueueEnqueueV2")
        # A step that never waits stays on the straight-line path.
        count = len(resumed)
        s.run(q.enqueue(5.0))
        assert s.run(deq) == 50.0
        assert len(resumed) == count


def test_straight_line_kernel_errors_are_typed_and_name_the_node(graph):
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    enq = q.enqueue(tf.constant(1.0), name="the_enqueue")
    q2 = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    x = tf.placeholder(tf.int32, [None])
    bad = q2.enqueue(tf.cast(tf.reshape(x, [2], name="the_reshape"), tf.float32)[0])
    with _session() as s:
        s.run(q.close())
        with pytest.raises(tf.errors.CancelledError, match="is closed") as e:
            s.run(enq)
        assert "the_enqueue" in str(e.value)
        assert _executor_of(s).straight is not None
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            s.run(bad, {x: [1, 2, 3]})
        assert "the_reshape" in str(e.value)
        s.run(bad, {x: [7, 8]})
        assert s.run(q2.size()) == 1


def test_straight_line_step_blocked_after_falling_back_is_cancelled_by_close(graph):
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    y = q.dequeue() + 1.0
    assert_close_cancels_blocked_runs(_session(), y, 8)


def test_straight_line_partition_receiving_a_dead_value_matches_dataflow():
    from tensorflux.runtime import executor

    def build_and_run(g, options):
        pred = tf.placeholder(tf.bool, [])
        with tf.device("/cpu:0"):
            x = tf.constant(3.0)
            f, t = cf.switch(x, pred)
        with tf.device("/cpu:1"):  # a partition of plain ops: _Recv (maybe dead), _Send
            doubled = t * 2.0
        with tf.device("/cpu:0"):
            out, index = cf.merge([f - 1.0, doubled])
        config = tf.ConfigProto(device_count={"CPU": 2})
        with tf.Session(config=config, exec_options=options) as s:
            got = [s.run([out, index], {pred: p}) for p in (True, False, True, False)]
            modes = sorted(ex.straight is not None for st in s._steps.values()
                           for _, ex, _ in st.parts if isinstance(ex, executor.Executor))
        return [(float(o), int(i)) for o, i in got], modes

    (straight, modes_on), (dataflow, modes_off) = _straight_and_dataflow(build_and_run)
    assert straight == dataflow == [(6.0, 1), (2.0, 0), (6.0, 1), (2.0, 0)]
    assert modes_on == [False, True] and modes_off == [False, False]
