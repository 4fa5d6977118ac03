"""Wire compatibility with TensorFlow 2.21 (the oracle venv): (a) a TensorFlow client uses a
tensorflux cluster; (b) a tensorflux master drives a TensorFlow worker task."""

from __future__ import annotations

import socket
import subprocess
import textwrap

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.distributed import server as server_lib
from tests import oracle

pytestmark = [pytest.mark.oracle, pytest.mark.timeout(120)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def tf_cluster():
    """1 PS and 2 workers of tensorflux, for a TensorFlow client."""
    if not oracle.available():
        pytest.skip("TensorFlow oracle venv not installed")
    workers, ps = server_lib.create_local_cluster(2, 1)
    yield workers, ps
    for s in workers + ps:
        s.stop(0)


def test_a_tensorflow_client_uses_a_tensorflux_cluster(tf_cluster):
    workers, _ = tf_cluster
    # TF1's default reference variables (VariableV2, Assign, ...), as a real client has them.
    result = oracle.run_tf(f"""
        import time
        target = {workers[0].target!r}
        out = {{}}
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.ones((2, 2), np.float32), name="v")
        with tf.device("/job:worker/task:1"):
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            y = tf.matmul(x, v)
        z = tf.reduce_sum(y)
        inc = v.assign_add(tf.ones([2, 2]))
        with tf.Session(target) as s:
            s.run(v.initializer)
            out["run"] = s.run([y, z], {{x: [[1, 2]]}})
            s.run(inc)
            out["after_inc"] = s.run(z, {{x: [[1, 2]]}})
            out["devices"] = sorted(d.name for d in s.list_devices())
            f = s.make_callable(z, [x])
            out["callable"] = f(np.ones((3, 2), np.float32))
            meta = tf.RunMetadata()
            s.run(z, {{x: [[1, 2]]}},
                  options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                  run_metadata=meta)
            out["traced_devices"] = sorted({{d.device for d in meta.step_stats.dev_stats}})
            w = tf.constant(3.0) * 2  # the graph grows: ExtendSession
            out["extended"] = s.run(w)
            xx = tf.placeholder(tf.float32, name="xx")
            try:
                s.run(tf.reshape(xx, [5], name="bad_reshape"), {{xx: [[1, 2]]}})
            except tf.errors.InvalidArgumentError as e:
                out["error"] = [type(e).__name__, str(e)]
            q = tf.FIFOQueue(2, tf.float32)
            start = time.time()
            try:
                s.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=300))
            except tf.errors.DeadlineExceededError:
                out["deadline_s"] = time.time() - start
            h = s.partial_run_setup([y, z], [x])
            out["partial"] = [s.partial_run(h, y, feed_dict={{x: [[1, 1]]}}),
                              s.partial_run(h, z)]
        tf.Session.reset(target)
        with tf.Session(target) as s:
            try:
                s.run(v)
                out["after_reset"] = "still initialized"
            except tf.errors.FailedPreconditionError:
                out["after_reset"] = "uninitialized"
        result = out
    """)
    np.testing.assert_allclose(result["run"][0], [[3.0, 3.0]])
    assert result["run"][1] == 6.0 and result["after_inc"] == 12.0
    assert result["devices"] == sorted(
        [f"/job:{j}/replica:0/task:{t}/device:CPU:0" for j, t in
         (("ps", 0), ("worker", 0), ("worker", 1))])
    assert result["callable"] == 24.0
    assert len(result["traced_devices"]) == 3
    assert result["extended"] == 6.0
    cls, text = result["error"]
    assert cls == "InvalidArgumentError" and "bad_reshape" in text
    assert result["deadline_s"] < 10
    np.testing.assert_allclose(result["partial"][0], [[4.0, 4.0]])
    assert result["partial"][1] == 8.0
    assert result["after_reset"] == "uninitialized"


_TF_WORKER = """
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
cluster = tf.train.ClusterSpec({"worker": sys.argv[1].split(",")})
server = tf.train.Server(cluster, job_name="worker", task_index=1)
print("ready", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def tf_worker():
    """Our worker:0 (its server yielded) and TensorFlow's worker:1 in a process of its own."""
    if not oracle.available():
        pytest.skip("TensorFlow oracle venv not installed")
    ours, theirs = f"localhost:{_free_port()}", f"localhost:{_free_port()}"
    proc = subprocess.Popen([str(oracle.ORACLE_PYTHON), "-c", textwrap.dedent(_TF_WORKER),
                             f"{ours},{theirs}", "100"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    server = None
    try:
        assert proc.stdout.readline().strip() == "ready"
        server = server_lib.Server({"worker": [ours, theirs]}, "worker", 0)
        yield server
    finally:
        if server is not None:
            server.stop(0)
        proc.kill()
        proc.wait(10)


def test_a_tensorflux_master_drives_a_tensorflow_worker(tf_worker):
    server = tf_worker
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/job:worker/task:1"):  # TensorFlow's task
            w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
            y = tf.nn.relu(tf.matmul(x, w) - 5.0)
            s1 = tf.reduce_sum(y, axis=1)
            i, acc = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + s1),
                                   [tf.constant(0), tf.zeros([2])])
        z = acc * 2.0  # ours again
        with tf.Session(server.target) as s:
            names = sorted(d.name for d in s.list_devices())
            got_y, got_z = s.run([y, z], {x: np.ones((2, 3), np.float32)})
            # Another signature: its transfers on TensorFlow's task are other kernels
            # (TensorFlow keeps a session's _Send/_Recv kernels by node name).
            got_s1 = s.run(s1, {x: np.ones((2, 3), np.float32)})
            with pytest.raises(tf.errors.InvalidArgumentError):
                with tf.device("/job:worker/task:1"):
                    bad = tf.reshape(x, [7])
                s.run(bad, {x: np.ones((2, 3), np.float32)})
    assert names == ["/job:worker/replica:0/task:0/device:CPU:0",
                     "/job:worker/replica:0/task:1/device:CPU:0"]
    np.testing.assert_allclose(got_y, [[1.0, 4.0], [1.0, 4.0]])
    np.testing.assert_allclose(got_z, [30.0, 30.0])
    np.testing.assert_allclose(got_s1, [5.0, 5.0])


def test_a_tensorflux_master_trains_ref_variables_on_a_tensorflow_worker(tf_worker):
    """TF1's reference variables on TensorFlow's task: their reads (the step builder's
    `_RefRead`, an op TensorFlow lacks) go to that task as TensorFlow's own Identity."""
    server = tf_worker
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/job:worker/task:1"):  # TensorFlow's task
            w = tf.Variable(np.ones((3, 2), np.float32), name="w")
            b = tf.get_variable("b", [2], initializer=tf.zeros_initializer(),
                                use_resource=False)
            doubled = w * 2.0  # a read of the ref on that task, fetched
        y = tf.matmul(x, w) + b  # reads crossing to ours
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(y))
        feed = {x: np.ones((2, 3), np.float32)}
        with tf.Session(server.target) as s:
            s.run(tf.global_variables_initializer())
            got_y = s.run(y, feed)
            s.run(train, feed)
            got_w, got_b, got_doubled = s.run([w, b, doubled])
    np.testing.assert_allclose(got_y, np.full((2, 2), 3.0))
    # d(sum y)/dw = the column sums of x (2 each), d/db = the batch (2)
    np.testing.assert_allclose(got_w, np.full((3, 2), 0.8), rtol=1e-6)
    np.testing.assert_allclose(got_b, [-0.2, -0.2], rtol=1e-6)
    np.testing.assert_allclose(got_doubled, np.full((3, 2), 1.6), rtol=1e-6)
