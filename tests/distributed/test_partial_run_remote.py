"""Partial runs on a cluster: `tf.Session("grpc://...").partial_run_setup/partial_run`
through the master's PartialRunSetup and RunStep(partial_run_handle) (distributed/
dist_partial_run.py, client.py), and their parts on every task (worker.py `_PartialStep`).

The rules and messages are TensorFlow's master's, read off TensorFlow 2.21 servers: the
oracle tests run one program with every pairing of TensorFlow and tensorflux clients,
masters and workers, and compare the results.
"""

from __future__ import annotations

import gc
import subprocess
import textwrap
import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.distributed import server as server_lib
from tensorflux.framework.rendezvous_key import create_key
from tests import oracle
from tests.distributed.conftest import Cluster
from tests.distributed.test_interop import _free_port
from tests.runtime.test_partial_run import interleaved_partial_runs

pytestmark = pytest.mark.timeout(120)

PS, WORKER = "/job:ps/task:0", "/job:worker/task:0"


@pytest.fixture
def pair():
    """One PS and one worker (the master)."""
    c = Cluster(1, 1)
    yield c
    c.stop()


def _leftovers(cluster: Cluster) -> dict:
    """What partial runs leave on the cluster: step threads, steps, rendezvous, runs."""
    servers = cluster.workers + cluster.ps
    return {
        "threads": [t.name for t in threading.enumerate()
                    if t.name.startswith("tfx-partial-")],
        "steps": sum(len(s._worker._partial_steps) for s in servers),
        "rendezvous": sum(len(s._worker.rendezvous_mgr) for s in servers),
        "runs": sum(len(m.partial_runs) for s in servers
                    for m in s._master._sessions.values()),
    }


def _wait_released(cluster: Cluster, timeout: float = 10.0, **expected) -> None:
    """The cluster's leftovers come to `expected` (default: nothing; None: any number)
    within `timeout` seconds."""
    want = {"threads": 0, "steps": 0, "rendezvous": 0, "runs": 0, **expected}
    deadline = time.monotonic() + timeout
    while True:
        left = _leftovers(cluster)
        got = {k: None if want[k] is None else len(v) if isinstance(v, list) else v
               for k, v in left.items()}
        if got == want:
            return
        assert time.monotonic() < deadline, f"left: {left}, wanted {want}"
        time.sleep(0.05)


def _abc(graph):
    """TF's docstring example, r1 = a + b on the PS and r2 = r1 * c on the worker."""
    with graph.as_default():
        with tf.device(PS):
            a = tf.placeholder(tf.float32, shape=[], name="a")
            b = tf.placeholder(tf.float32, shape=[], name="b")
            r1 = tf.add(a, b, name="r1")
        with tf.device(WORKER):
            c = tf.placeholder(tf.float32, shape=[], name="c")
            r2 = tf.multiply(r1, c, name="r2")
    return a, b, c, r1, r2


@pytest.mark.parametrize("via_rpc", [True, False])
def test_the_classic_example_across_two_tasks(pair, graph, via_rpc):
    a, b, c, r1, r2 = _abc(graph)
    with pair.session(graph, via_rpc=via_rpc) as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        assert h == "0"  # the master's count, as TensorFlow's
        res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        assert res == 3.0 and isinstance(res, np.float32)
        # A step per task (the PS's part has run: its thread has ended).
        _wait_released(pair, threads=1, steps=2, runs=1, rendezvous=2)
        assert sess.partial_run(h, r2, feed_dict={c: res}) == 9.0
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="^Must run PartialRunSetup before performing partial runs$"):
            sess.partial_run(h, r2)
        _wait_released(pair)
        h = sess.partial_run_setup({"one": r1, "two": [r2]}, (a, b, c))
        assert h == "1"
        out = sess.partial_run(h, {"x": "r1:0", "y": (a,)}, feed_dict={"a:0": 1, b: 2})
        assert out["x"] == 3.0 and out["y"][0] == 1.0  # a fed fetch answers with the feed
        assert sess.partial_run(h, [r2], feed_dict={c: 4}) == [12.0]
        assert sess.partial_run("7", []) == []  # nothing asked: no call
    _wait_released(pair)


def test_the_checks_of_calls_and_setups(pair, graph):
    a, b, c, r1, r2 = _abc(graph)
    with graph.as_default():
        r3 = r2 + 1.0
        needs_c = tf.multiply(c, 2.0, name="needs_c")
    with pair.session(graph) as sess:
        h = sess.partial_run_setup([r1, r2, needs_c], [a, b, c])
        calls = [  # (fetches, feeds, message); none of them changes the run
            ([r2], {a: 1.0, b: 2.0}, "Fetch c:0 can't be computed from the feeds that have "
             "been fed so far."),
            ([r1, needs_c], {}, "Fetch c:0 can't be computed"),  # the last fetch's first
            ([needs_c, r1], {}, "Fetch a:0 can't be computed"),
            ([r3], {}, "The fetch add:0 was not specified in partial_run_setup."),
        ]
        for fetches, feeds, message in calls:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.partial_run(h, fetches, feed_dict=feeds)
            assert info.value.message.startswith(message)
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
        for fetches, feeds, message in [
                ([], {a: 3.0}, "The feed a:0 has already been fed."),
                ([r1], {}, "The fetch r1:0 has already been fetched."),
                ([], {c: 1.0, "a:0": 1.0}, "The feed a:0 has already been fed.")]:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.partial_run(h, fetches, feed_dict=feeds)
            assert info.value.message == message
        assert sess.partial_run(h, [r2, needs_c], feed_dict={c: 3.0}) == [9.0, 6.0]
        h = sess.partial_run_setup([r2], [r1, a, c])  # through fed r1 to its producer's a
        with pytest.raises(tf.errors.InvalidArgumentError, match="^Fetch a:0 can't be"):
            sess.partial_run(h, r2, feed_dict={r1: 10.0, c: 2.0})
        setups = [
            (([a, r1], [a, b]), tf.errors.InvalidArgumentError, "a:0 is both fed and fetched."),
            (([r1], [a, a]), tf.errors.InvalidArgumentError,
             'Endpoint "a:0" fed more than once.'),
            (([], [a]), tf.errors.InvalidArgumentError,
             "Must specify at least one target to fetch or execute."),
            (([r1], [3]), TypeError, "Cannot interpret argument `feed` key as Tensor"),
        ]
        for args, cls, message in setups:
            with pytest.raises(cls) as info:
                sess.partial_run_setup(*args)
            assert message in str(info.value)
        h = sess.partial_run_setup([r1, r2.op], [a, b])
        with pytest.raises(RuntimeError, match="partial_run\\(\\) requires empty"):
            sess.partial_run(h, r2.op, feed_dict={a: 1.0})
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.partial_run(h, r1, feed_dict={a: [1.0, 2.0]})
        for handle in ("nonsense", None):
            with pytest.raises(tf.errors.InvalidArgumentError, match="^Must run PartialRun"):
                sess.partial_run(handle, r1, feed_dict={a: 1.0})
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.partial_run_setup([r1], [a, b])
    _wait_released(pair)


def test_variables_targets_and_kernel_errors(pair, graph):
    with graph.as_default():
        a = tf.placeholder(tf.float32, shape=[], name="a")
        b = tf.placeholder(tf.float32, shape=[], name="b")
        r1 = a + b
        with tf.device(PS):
            v = tf.Variable(0.0, name="v", use_resource=False)
            inc = tf.assign_add(v, 1.0)
            inc_by_a = tf.assign_add(v, a)
            check = tf.Assert(a < 0, [a], name="check")
            x = tf.placeholder(tf.float32, name="x")
            s = tf.placeholder(tf.int32, name="s")
            y = tf.reshape(x, s, name="y")
        with tf.device(WORKER):
            plus_v = v + a  # reads v once the feed has come (see the module docstring)
            z = tf.add(x, 1.0, name="z")
            w = tf.add(y, 1.0, name="w")
    with pair.session(graph) as sess:
        sess.run(v.initializer)
        h = sess.partial_run_setup([r1, inc.op], [a, b])
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0  # the last call ...
        assert sess.run(v) == 1.0  # ... waited for the target on the PS
        h = sess.partial_run_setup([r1, inc_by_a.op], [a, b])
        assert sess.partial_run(h, r1, feed_dict={a: 10, b: 2}) == 12.0
        assert sess.run(v) == 11.0
        h = sess.partial_run_setup([inc, r1, plus_v], [a, b])
        assert sess.partial_run(h, inc) == 12.0
        assert sess.partial_run(h, [r1, plus_v], feed_dict={a: 1, b: 2}) == [3.0, 13.0]
        h = sess.partial_run_setup([r1, check], [a, b])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"assertion failed: \[1\]"):
            sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        # A kernel's error on the PS fails the call that waits for it, naming the node,
        # and ends the run on every task.
        h = sess.partial_run_setup([z, y, w], [x, s])
        np.testing.assert_array_equal(sess.partial_run(h, z, feed_dict={x: [1, 2, 3]}),
                                      [2, 3, 4])
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.partial_run(h, y, feed_dict={s: [2, 2]})
        assert "Input to reshape is a tensor with 3 values" in info.value.message
        assert "{{node y}}" in info.value.message
        _wait_released(pair)
        with pytest.raises(tf.errors.InvalidArgumentError, match="^Must run PartialRun"):
            sess.partial_run(h, w)
        # The graph grows while a run is open (ExtendSession): the run keeps its step.
        h = sess.partial_run_setup([r1, plus_v], [a, b])
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 1}) == 2.0
        with graph.as_default():
            assert sess.run(tf.constant(5.0) * 2.0) == 10.0
        assert sess.partial_run(h, plus_v) == 13.0
    _wait_released(pair)


def test_close_dropped_handles_and_deadlines_release_every_task(pair, graph):
    a, b, c, r1, r2 = _abc(graph)
    with graph.as_default(), tf.device(WORKER):
        q = tf.FIFOQueue(4, tf.float32, shapes=[])
        item = q.dequeue() + c
    sess = pair.session(graph)
    handles = [sess.partial_run_setup([r1, r2], [a, b, c]) for _ in range(5)]
    for h in handles:
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
    _wait_released(pair, threads=5, steps=10, rendezvous=10, runs=5)  # each waits for c
    del h
    handles.pop()  # the last reference to a handle object: its run ends on every task
    gc.collect()
    _wait_released(pair, threads=4, steps=8, rendezvous=8, runs=4)
    assert sess.partial_run(str(handles[0]), r2, feed_dict={c: 2}) == 6.0  # a copy works
    _wait_released(pair, threads=3, steps=6, rendezvous=6, runs=3)
    h = sess.partial_run_setup([item], [c])
    failures = []

    def call():
        try:
            sess.partial_run(h, item, feed_dict={c: 1.0})  # the queue stays empty
        except tf.errors.OpError as e:
            failures.append(e)

    caller = threading.Thread(target=call)
    caller.start()
    caller.join(0.3)
    assert caller.is_alive()
    sess.close()  # ends the three runs and the waiting call's
    caller.join(10.0)
    assert not caller.is_alive() and isinstance(failures[0], tf.errors.CancelledError)
    _wait_released(pair)
    with pair.session(graph, operation_timeout_in_ms=300) as sess:
        h = sess.partial_run_setup([item], [c])
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.partial_run(h, item, feed_dict={c: 1.0})
        with pytest.raises(tf.errors.InvalidArgumentError, match="^Must run PartialRun"):
            sess.partial_run(h, item, feed_dict={c: 1.0})
        _wait_released(pair)


def test_many_partial_runs_at_once_from_several_threads(pair, graph):
    a, b, c, r1, r2 = _abc(graph)
    with pair.session(graph) as sess:
        assert not interleaved_partial_runs(sess, a, b, c, r1, r2, threads=4, rounds=3)
    _wait_released(pair)


def test_a_step_cleaned_up_takes_no_late_transfer(pair):
    """A RecvTensor (or a partial run's RunGraph) that comes after its step was cleaned up
    (a failed or released run) fails at once instead of making a rendezvous that waits."""
    worker = pair.ps[0]._worker
    device = worker.env.device_mgr.devices[0]
    key = create_key(device.name, device.incarnation, device.name, "x:0")
    worker.end_step(42)
    with pytest.raises(tf.errors.CancelledError, match="Step 42 was cleaned up"):
        worker.recv_value(42, key, 5.0)  # (a rendezvous made for it would time out)
    assert len(worker.rendezvous_mgr) == 0 and worker.rendezvous_mgr.ended(42) is not None


# One program, run by each pairing of client and cluster (TensorFlow's or ours). It sees
# `tf`, `np`, TARGET and the devices PS and WORKER of two tasks.
_PROGRAM = """
def attempt(f):
    try:
        return f()
    except Exception as e:
        return [type(e).__name__, str(e).strip().splitlines()[-1]]
with tf.device(PS):
    a = tf.placeholder(tf.float32, shape=[], name="a")
    b = tf.placeholder(tf.float32, shape=[], name="b")
    r1 = tf.add(a, b, name="r1")
    v = tf.Variable(0.0, name="v", use_resource=False)
    inc = tf.assign_add(v, 1.0)
    x = tf.placeholder(tf.float32, name="x")
    s = tf.placeholder(tf.int32, name="s")
    y = tf.reshape(x, s, name="y")
with tf.device(WORKER):
    c = tf.placeholder(tf.float32, shape=[], name="c")
    r2 = tf.multiply(r1, c, name="r2")
    needs_c = tf.multiply(c, 2.0, name="needs_c")
    z = tf.add(x, 1.0, name="z")
r3 = r2 + 1.0
out = []
with tf.Session(TARGET) as sess:
    sess.run(v.initializer)
    h = sess.partial_run_setup([r1, r2, needs_c], [a, b, c])
    out.append(str(h))
    out.append(attempt(lambda: sess.partial_run(h, [r1, needs_c])))
    res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
    out.append(float(res))
    out.append(attempt(lambda: sess.partial_run(h, [], feed_dict={a: 3})))
    out.append(attempt(lambda: sess.partial_run(h, r1)))
    out.append(attempt(lambda: sess.partial_run(h, r3)))
    out.append(attempt(lambda: sess.partial_run(h, [], feed_dict={c: 1.0, "a:0": 1.0})))
    out.append([float(t) for t in sess.partial_run(h, [r2, needs_c], feed_dict={c: res})])
    out.append(attempt(lambda: sess.partial_run(h, r2)))
    h = sess.partial_run_setup([r1, r2], [a, b, c])
    out.append(attempt(lambda: sess.partial_run(h, r2, feed_dict={a: 1, b: 2})))
    out.append(attempt(lambda: sess.partial_run(h, r1, feed_dict={b: 1})))
    out.append(attempt(lambda: sess.partial_run_setup([a, r1], [a, b])))
    out.append(attempt(lambda: sess.partial_run_setup([r1], [a, a])))
    out.append(attempt(lambda: sess.partial_run_setup([], [a])))
    out.append(attempt(lambda: sess.partial_run("nonsense", r1, feed_dict={a: 1})))
    h = sess.partial_run_setup([r2], [r1, a, c])
    out.append(attempt(lambda: sess.partial_run(h, r2, feed_dict={r1: 10, c: 2})))
    h = sess.partial_run_setup([r1, inc.op], [a, b])
    out.append(float(sess.partial_run(h, r1, feed_dict={a: 1, b: 2})))
    out.append(float(sess.run(v)))
    h = sess.partial_run_setup([z, y], [x, s])
    out.append(sess.partial_run(h, z, feed_dict={x: [1, 2, 3]}).tolist())
    try:
        sess.partial_run(h, y, feed_dict={s: [2, 2]})
    except tf.errors.InvalidArgumentError as e:
        out.append("Input to reshape is a tensor with 3 values" in str(e))
    out.append(attempt(lambda: sess.partial_run(h, y)))
result = out
"""

# TensorFlow's servers: a PS and a worker task, and a worker task beside a tensorflux one.
_TF_SERVERS = """
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
ps, worker, ours, theirs = sys.argv[1:5]
both = tf.train.ClusterSpec({"ps": [ps], "worker": [worker]})
servers = [tf.train.Server(both, job_name=job, task_index=0) for job in ("ps", "worker")]
mixed = tf.train.ClusterSpec({"worker": [ours, theirs]})
servers.append(tf.train.Server(mixed, job_name="worker", task_index=1))
print("ready", flush=True)
time.sleep(float(sys.argv[5]))
"""


def _ours(target: str, ps: str, worker: str):
    """`_PROGRAM`'s result with tensorflux as the client."""
    ns = {"tf": tf, "np": np, "TARGET": target, "PS": ps, "WORKER": worker}
    with tf.Graph().as_default():
        exec(_PROGRAM, ns)  # noqa: S102 - the shared test program
    return ns["result"]


def _theirs(target: str, ps: str, worker: str):
    """`_PROGRAM`'s result with TensorFlow 2.21 as the client."""
    return oracle.run_tf(f"TARGET, PS, WORKER = {target!r}, {ps!r}, {worker!r}\n" + _PROGRAM)


@pytest.mark.oracle
def test_every_pairing_with_tensorflow_gives_tensorflows_answers(pair):
    """TensorFlow's client on TensorFlow's cluster is the reference; then its client on
    ours, our client on ours, our client on its cluster, and our client and master with
    its worker task (the program's WORKER part)."""
    if not oracle.available():
        pytest.skip("TensorFlow oracle venv not installed")
    addresses = [f"localhost:{_free_port()}" for _ in range(4)]
    proc = subprocess.Popen([str(oracle.ORACLE_PYTHON), "-c", textwrap.dedent(_TF_SERVERS),
                             *addresses, "100"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    mixed = None
    try:
        assert proc.stdout.readline().strip() == "ready"
        tf_target = f"grpc://{addresses[1]}"
        reference = _theirs(tf_target, PS, WORKER)
        assert reference[:3] == ["0", ["InvalidArgumentError", "Fetch c:0 can't be computed "
                                       "from the feeds that have been fed so far."], 3.0]
        assert _theirs(pair.target, PS, WORKER) == reference
        assert _ours(pair.target, PS, WORKER) == reference
        assert _ours(tf_target, PS, WORKER) == reference
        mixed = server_lib.Server({"worker": addresses[2:]}, "worker", 0)
        # (The variable on our task: a read of a reference variable placed on a
        # TensorFlow task is a `_RefRead`, which TensorFlow's workers do not have.)
        assert _ours(mixed.target, WORKER, "/job:worker/task:1") == reference
    finally:
        if mixed is not None:
            mixed.stop(0)
        proc.kill()
        proc.wait(10)
    _wait_released(pair)
