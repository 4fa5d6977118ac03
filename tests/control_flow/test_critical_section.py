"""tf.CriticalSection (control_flow/critical_section.py) and the mutex ops under it
(ops/mutex_ops.py, kernels/cpu/mutex_ops.py): graph-time checks as TF1 makes them, and
mutual exclusion across concurrent Session.run calls, a failing step releasing the lock,
cancellation of a step waiting for it."""

from __future__ import annotations

import time

import numpy as np
import pytest

import tensorflux as tf
from tests.control_flow.conftest import LOOP_MODES, session
from tests.oracle import run_tf
from tests.threads_util import blocked_steps, join, start, wait_until


def _counter():
    return tf.get_variable("v", initializer=0, use_resource=True)


def _read_modify_write(v, inside: list):
    """fn for execute: reads v, passes through a py_func that records how many threads
    are inside at once (and lets others run), writes the value + 1."""
    def enter(x):
        inside.append(1)
        peak = len(inside)
        time.sleep(0.0005)  # invites another thread in (no timing is checked)
        inside.pop()
        return np.int32(x), np.int32(peak)

    def fn():
        x = v.read_value()
        y, peak = tf.py_func(enter, [x], [tf.int32, tf.int32], stateful=True)
        with tf.control_dependencies([v.assign(y + 1)]):
            return tf.identity(peak)
    return fn


@pytest.mark.parametrize("mode", list(LOOP_MODES))
def test_execute_is_mutually_exclusive_across_threads(graph, mode):
    v = _counter()
    inside: list = []
    peak = tf.CriticalSection().execute(_read_modify_write(v, inside))
    threads, runs, peaks = 8, 12, []
    with session(mode) as sess:
        sess.run(v.initializer)

        def worker():
            for _ in range(runs):
                peaks.append(sess.run(peak))

        join(*[start(worker) for _ in range(threads)], timeout=60)
        assert sess.run(v.read_value()) == threads * runs
    assert len(peaks) == threads * runs and max(peaks) == 1


def test_two_executes_in_one_step_run_one_after_the_other(graph):
    v = _counter()
    inside: list = []
    cs = tf.CriticalSection()
    a = cs.execute(_read_modify_write(v, inside))
    b = cs.execute(_read_modify_write(v, inside))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run([a, b]) == [1, 1]
        assert sess.run(v.read_value()) == 2


def test_a_failing_step_releases_the_lock(graph):
    v = tf.get_variable("v", initializer=0.0, use_resource=True)
    p = tf.placeholder(tf.float32, [])
    out = tf.CriticalSection().execute(
        lambda: v.assign(tf.debugging.check_numerics(v.read_value() + p, "bad value")))
    short = tf.RunOptions(timeout_in_ms=5000)  # a held lock fails here instead of hanging
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad value"):
            sess.run(out, {p: np.nan})
        assert sess.run(out, {p: 2.0}, options=short) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(out, {p: np.inf})
        assert sess.run(out, {p: 3.0}, options=short) == 5.0


def test_fetching_inside_fn_without_the_release_still_releases_at_step_end(graph):
    v = _counter()
    inner = []

    def fn():
        inner.append(v.assign_add(1))
        return inner[0]
    out = tf.CriticalSection().execute(fn)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(inner[0])  # MutexLock runs, ConsumeMutexLock does not
        assert sess.run(out, options=tf.RunOptions(timeout_in_ms=5000)) == 2


def test_a_step_waiting_for_the_lock_times_out_and_can_retry(graph):
    q = tf.FIFOQueue(4, tf.float32)
    cs = tf.CriticalSection()
    blocked = cs.execute(q.dequeue)  # holds the lock while it waits for an element
    other = cs.execute(lambda: tf.constant(7.0))
    with tf.Session() as sess:
        got = []
        t = start(lambda: got.append(sess.run(blocked)))
        wait_until(blocked_steps(sess, 1))
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(other, options=tf.RunOptions(timeout_in_ms=200))
        sess.run(q.enqueue(1.5))
        join(t)
        assert got == [1.5]
        assert sess.run(other) == 7.0


def test_session_close_cancels_steps_waiting_for_the_lock(graph):
    q = tf.FIFOQueue(4, tf.float32)
    cs = tf.CriticalSection()
    blocked = cs.execute(q.dequeue)
    waiting = cs.execute(lambda: tf.constant(1.0))
    sess = tf.Session()
    caught = []

    def run(fetch):
        try:
            sess.run(fetch)
        except tf.errors.CancelledError as e:
            caught.append(e)

    threads = [start(run, blocked)]
    wait_until(blocked_steps(sess, 1))
    threads += [start(run, waiting) for _ in range(3)]
    wait_until(blocked_steps(sess, 4))
    sess.close()
    join(*threads)
    assert len(caught) == 4


def test_the_lock_waits_for_fns_outside_inputs(graph):
    v = _counter()
    x = tf.identity(tf.constant(3), name="outside")
    cs = tf.CriticalSection(name="cs")
    cs.execute(lambda: v.assign_add(x))
    lock = graph.get_operation_by_name("critical_section_execute/MutexLock")
    [gate] = lock.control_inputs
    assert gate.type == "NoOp"
    assert {op.name for op in gate.control_inputs} == {"v", "outside"}
    release = graph.get_operation_by_name("critical_section_execute/ConsumeMutexLock")
    assert release.inputs[0].op is lock
    assert release.colocation_groups() == [b"loc:@cs"]


def test_outputs_keep_fns_structure(graph):
    v = _counter()
    cs = tf.CriticalSection()
    out = cs.execute(lambda: {"a": v.assign_add(1), "b": (tf.constant(2.0), v.read_value())})
    op = cs.execute(lambda: v.assign_add(10).op)
    assert isinstance(op, tf.Operation) and op.type == "NoOp"
    with pytest.raises(TypeError):  # as in TF: a TensorArray is no control input
        cs.execute(lambda: tf.TensorArray(tf.float32, 2).write(0, 1.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        got = sess.run(out)
        assert got["a"] == 1 and got["b"][0] == 2.0 and got["b"][1] in (0, 1)
        sess.run(op)
        assert sess.run(v.read_value()) == 11


# ---- against TensorFlow ------------------------------------------------------------------

PROGRAM = """
v = tf.get_variable("v", initializer=0, use_resource=True)
p = tf.placeholder(tf.int32, [], name="p")
cs = tf.CriticalSection(name="cs")
a = tf.identity(cs.execute(lambda: v.assign_add(p)), name="a")
errors = []
for build in (lambda: cs.execute(lambda: cs.execute(v.read_value)),
              lambda: cs.execute(lambda: tf.raw_ops.MutexLock(mutex=cs._handle)),
              lambda: tf.CriticalSection(name="other").execute(v.read_value),
              lambda: tf.CriticalSection(name="shared").execute(
                  v.read_value, exclusive_resource_access=False)):
    try:
        build()
        errors.append(None)
    except ValueError as e:
        errors.append(str(e)[:41])
lock = tf.get_default_graph().get_operation_by_name("critical_section_execute/MutexLock")
gate = sorted(c.name for op in lock.control_inputs for c in op.control_inputs)
"""

RUN = """
with tf.Session() as sess:
    sess.run(v.initializer)
    values = [sess.run(a, {p: 2}), sess.run(a, {p: 3})]
"""


@pytest.mark.oracle
def test_graph_checks_and_values_as_tensorflows(graph):
    want = run_tf(PROGRAM + RUN + "result = [errors, gate, [int(x) for x in values]]")
    scope: dict = {"tf": tf}
    exec(PROGRAM + RUN, scope)
    assert [scope["errors"], scope["gate"], [int(x) for x in scope["values"]]] == want
    assert want[0][0].startswith("Attempting to lock a CriticalSection")
    assert want[0][2].startswith("This execution would access resources")
    assert want[1] == ["p", "v"] and want[2] == [2, 5]


@pytest.mark.oracle
def test_meta_graphs_cross_both_ways(graph, tmp_path):
    theirs, ours = tmp_path / "theirs.meta", tmp_path / "ours.meta"
    run_tf(PROGRAM + f"tf.train.export_meta_graph({str(theirs)!r})")
    scope: dict = {"tf": tf}
    exec(PROGRAM, scope)
    tf.train.export_meta_graph(str(ours))
    load = """
tf.train.import_meta_graph({path!r})
g = tf.get_default_graph()
a, p = g.get_tensor_by_name("a:0"), g.get_tensor_by_name("p:0")
with tf.Session() as sess:
    sess.run(g.get_operation_by_name("v/Assign"))
    values = [int(sess.run(a, {{p: 2}})), int(sess.run(a, {{p: 3}}))]
"""
    assert run_tf(load.format(path=str(ours)) + "result = values") == [2, 5]
    with tf.Graph().as_default():
        scope = {"tf": tf}
        exec(load.format(path=str(theirs)), scope)
        assert scope["values"] == [2, 5]
