"""Clusters of `tensorflux-server` processes: the command, its flags, signals, shutdown from
the job, tasks killed and restarted (tensorflux/server.py, distributed/control.py and
distributed/launcher.py). Every server listens on loopback and is killed at the end.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux import server as server_cli
from tensorflux.distributed import control, rpc
from tensorflux.distributed.launcher import LocalCluster, free_ports

FAST_FAIL = {"TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT": "2"}
PS0 = "/job:ps/replica:0/task:0"


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch):
    """No TF_CONFIG or TENSORFLUX_* settings of the caller leak into a test."""
    for name in list(os.environ):
        if name == "TF_CONFIG" or name.startswith("TENSORFLUX_RPC") or \
                name.startswith("TENSORFLUX_TLS"):
            monkeypatch.delenv(name)


class _Background:
    """Runs `fn` on a daemon thread and keeps its result or exception."""

    def __init__(self, fn):
        self.value = self.error = None
        self.done_at: float | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn):
        try:
            self.value = fn()
        except Exception as e:  # noqa: BLE001 - kept for the test to check
            self.error = e
        self.done_at = time.monotonic()

    def join(self, timeout: float):
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"still running after {timeout}s"
        return self


# ---- the command's flags ---------------------------------------------------------------

BAD_FLAGS = [
    (["--task_index", "x"], "'x'"),
    (["--job_name", "ps", "--ps_hosts", "localhost:99999"], "'localhost:99999'"),
    (["--job_name", "ps", "--cluster_spec", "ps|"], "'ps|'"),
    (["--job_name", "ps", "--cluster_spec", '{"ps": "h:1"}'], "'h:1'"),
    (["--ps_hosts", "localhost:1", "--cluster_spec", "ps|localhost:1"], "not both"),
    (["--job_name", "ps", "--worker_hosts", "localhost:0"], "'ps'"),
    (["--worker_hosts", "localhost:0", "--device_count_cpu", "0"], "'0'"),
    (["--worker_hosts", "localhost:0", "--token_file", "/nonexistent/token"],
     "'/nonexistent/token'"),
    (["--worker_hosts", "localhost:0", "--tls_key", __file__], "--tls_cert"),
    (["--bogus"], "--bogus"),
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("argv,quoted", BAD_FLAGS, ids=[" ".join(a) for a, _ in BAD_FLAGS])
def test_malformed_flags_exit_2_with_one_line(argv, quoted, capsys):
    assert server_cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("tensorflux-server: error: "), err
    assert quoted in err


@pytest.mark.timeout(30)
@pytest.mark.parametrize("tf_config,quoted", [
    ('{"cluster": [', "TF_CONFIG"),
    ('{"cluster": {"ps": ["localhost:0"]}, "task": {"type": "ps", "index": 3}}', "3"),
    ('{"cluster": {"ps": ["localhost:0"], "worker": ["localhost:0"]}}', "job_name"),
])
def test_malformed_tf_config_exits_2(tf_config, quoted, monkeypatch, capsys):
    monkeypatch.setenv("TF_CONFIG", tf_config)
    assert server_cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and quoted in err, err


@pytest.mark.timeout(30)
def test_errors_of_the_process_are_one_line_without_traceback():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = [subprocess.Popen([sys.executable, "-m", "tensorflux.server", *argv],
                             env={**env, **extra}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for argv, extra in ((["--ps_hosts=nohost", "--job_name=ps"], {}),
                                ([], {"TF_CONFIG": "[1, 2]"}))]
    for p, quoted in zip(runs, ("'nohost'", "'[1, 2]'"), strict=True):
        out, err = p.communicate(timeout=25)
        assert p.returncode == 2, err
        assert out == "" and err.count("\n") == 1 and quoted in err, err


@pytest.mark.timeout(30)
def test_flags_win_over_the_environment(tmp_path):
    token = tmp_path / "token"
    token.write_text("from-file\n")
    args = server_cli.make_parser().parse_args(
        ["--token_file", str(token), "--unavailable_timeout", "7"])
    env = {"TENSORFLUX_RPC_TOKEN": "from-env", "TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT": "3",
           "TENSORFLUX_RPC_MAX_REQUEST_BYTES": "1000"}
    config = server_cli.rpc_config_from_flags(args, env)
    assert (config.token, config.unavailable_timeout, config.max_request_bytes) == \
        ("from-file", 7.0, 1000)
    plain = server_cli.rpc_config_from_flags(server_cli.make_parser().parse_args([]), env)
    assert (plain.token, plain.unavailable_timeout) == ("from-env", 3.0)


# ---- a cluster of processes ------------------------------------------------------------

def _regression_graph(ps: str | None, worker: str | None):
    """A linear regression whose variables live on `ps` and whose math runs on `worker`
    (None: no device)."""
    g = tf.Graph()
    with g.as_default():
        with tf.device(ps):
            w = tf.Variable(np.array([[0.5], [-0.25], [1.0]], np.float32), name="w")
            b = tf.Variable(0.1, name="b")
        with tf.device(worker):
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            y = tf.placeholder(tf.float32, [None, 1], name="y")
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    return g, (x, y, loss, train, init, w, b)


def _train(sess, ops, steps: int = 5):
    x, y, loss, train, init, w, b = ops
    rng = np.random.default_rng(0)
    data = rng.standard_normal((16, 3)).astype(np.float32)
    target = data @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 3.0
    sess.run(init)
    losses = [sess.run([loss, train], {x: data, y: target})[0] for _ in range(steps)]
    return losses, sess.run(w), sess.run(b)


@pytest.mark.timeout(60)
def test_model_on_ps_matches_a_local_session_and_tasks_stop_cleanly():
    g, ops = _regression_graph(None, None)
    with tf.Session(graph=g) as sess:
        local = _train(sess, ops)
    with LocalCluster(2, 1, extra_args=["--device_count_cpu=2"]) as cluster:
        g, ops = _regression_graph("/job:ps/task:0", "/job:worker/task:1")
        with tf.Session(cluster.targets["worker"][0], graph=g) as sess:
            remote = _train(sess, ops)
            devices = sorted(d.name for d in sess.list_devices())
        for a, b in zip(local, remote, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)
        assert devices == sorted(f"/job:{j}/replica:0/task:{t}/device:CPU:{i}"
                                 for j, t in (("ps", 0), ("worker", 0), ("worker", 1))
                                 for i in (0, 1))
        log = cluster.stderr("worker", 0)
        assert " created: " in log and " closed" in log, log
        assert tf.train.Server.shutdown_job(cluster.cluster_spec, "ps") == ["/job:ps/task:0"]
        assert cluster.wait("ps", 0, timeout=15) == 0
        assert cluster.terminate("worker", 1) == 0
        assert cluster.signal("worker", 0, 2) == 0  # SIGINT
        assert "SIGTERM: stopping" in cluster.stderr("worker", 1)


def test_a_task_served_here_trains_with_the_cluster_ps():
    """`served_here`: worker:0 is this process's Server (a between-graph script's client
    beside it), the PS a started process; training matches a local session."""
    g, ops = _regression_graph(None, None)
    with tf.Session(graph=g) as sess:
        local = _train(sess, ops)
    with LocalCluster(1, 1, served_here=[("worker", 0)]) as cluster:
        assert [p.pid for p in cluster.processes["worker"]] == []
        assert cluster.targets["worker"][0].startswith("grpc://localhost:")
        with pytest.raises(ValueError, match="served in the caller's process"):
            cluster.kill("worker", 0)
        server = tf.train.Server(cluster.cluster_spec, job_name="worker", task_index=0)
        g, ops = _regression_graph("/job:ps/task:0", "/job:worker/task:0")
        with tf.Session(server.target, graph=g) as sess:
            remote = _train(sess, ops)
        server.stop()
    for a, b in zip(local, remote, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def _queue_graph():
    """A queue on the PS whose dequeued value the worker doubles, a queue on the worker,
    and a PS variable."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            ps_queue = tf.FIFOQueue(4, tf.float32, shapes=[], name="ps_queue")
            from_ps = ps_queue.dequeue()
            v = tf.Variable(1.0, name="v")
        with tf.device("/job:worker/task:0"):
            doubled = from_ps * 2.0
            worker_queue = tf.FIFOQueue(4, tf.float32, shapes=[], name="worker_queue")
            from_worker = worker_queue.dequeue()
        inc = v.assign_add(1.0)
        init = tf.global_variables_initializer()
    return g, doubled, from_worker, v, inc, init


@pytest.mark.timeout(60)
def test_a_killed_task_fails_the_running_step_naming_it(monkeypatch):
    monkeypatch.setenv("TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT", "2")
    with LocalCluster(1, 1, env=FAST_FAIL) as cluster:
        g, doubled, from_worker, *_ = _queue_graph()
        sess = tf.Session(cluster.targets["worker"][0], graph=g)
        step = _Background(lambda: sess.run(doubled))
        time.sleep(1.0)  # the step waits in the PS queue's dequeue
        assert step.done_at is None
        killed = time.monotonic()
        cluster.kill("ps", 0)
        step.join(15)
        assert isinstance(step.error, (tf.errors.UnavailableError, tf.errors.AbortedError)), \
            step.error
        assert PS0 in step.error.message and step.done_at - killed < 10
        assert "step of session" in cluster.stderr("worker", 0)

        # The master's own task dies: the client's call fails once the (2 s) wait for an
        # unreachable task is over.
        step = _Background(lambda: sess.run(from_worker))
        time.sleep(1.0)
        killed = time.monotonic()
        cluster.kill("worker", 0)
        step.join(20)
        assert isinstance(step.error, tf.errors.UnavailableError), step.error
        assert cluster.targets["worker"][0] in step.error.message
        assert step.done_at - killed < 12
        sess.close()  # the master is gone: nothing to free (after the 2 s wait)


@pytest.mark.timeout(60)
def test_a_restarted_ps_aborts_the_old_session_and_a_new_one_works(monkeypatch):
    monkeypatch.setenv("TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT", "10")
    with LocalCluster(1, 1, env=FAST_FAIL) as cluster:
        g, _, _, v, inc, init = _queue_graph()
        target = cluster.targets["worker"][0]
        with tf.Session(target, graph=g) as old:
            old.run(init)
            assert old.run(inc) == 2.0
            cluster.kill("ps", 0)
            cluster.restart("ps", 0)
            with pytest.raises(tf.errors.AbortedError, match="restarted"):
                old.run(inc)
        with tf.Session(target, graph=g) as new:
            with pytest.raises(tf.errors.FailedPreconditionError):
                new.run(v)  # the new PS has not initialized it
            new.run(init)
            assert new.run(inc) == 2.0


@pytest.mark.timeout(60)
def test_sigterm_cancels_the_running_step_and_exits_0():
    with LocalCluster(1, 1, extra_args=["--grace=20"]) as cluster:
        g, doubled, *_ = _queue_graph()
        with tf.Session(cluster.targets["worker"][0], graph=g) as sess:
            step = _Background(lambda: sess.run(doubled))
            time.sleep(1.0)
            started = time.monotonic()
            assert cluster.terminate("ps", 0) == 0
            assert time.monotonic() - started < 10  # the step was cancelled, not waited for
            step.join(15)
            assert isinstance(step.error, (tf.errors.CancelledError,
                                           tf.errors.UnavailableError,
                                           tf.errors.AbortedError)), step.error
        assert "SIGTERM: stopping" in cluster.stderr("ps", 0)
        assert cluster.terminate("worker", 0) == 0


@pytest.mark.timeout(60)
def test_tasks_from_tf_config_and_shutdown_job(tmp_path):
    spec = {job: [f"localhost:{port}"] for job, port in zip(("ps", "worker"), free_ports(2),
                                                               strict=True)}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = {job: subprocess.Popen(
        [sys.executable, "-m", "tensorflux.server"], stdout=subprocess.PIPE,
        stderr=(tmp_path / f"{job}.log").open("w"), text=True, env={**env, "TF_CONFIG": json.dumps(
            {"cluster": spec, "task": {"type": job, "index": 0}})}) for job in spec}
    try:
        for job, p in procs.items():
            assert p.stdout.readline().strip() == (  # (else see tmp_path/<job>.log)
                f"tensorflux-server: /job:{job}/replica:0/task:0 serving at "
                f"grpc://{spec[job][0]}")
        g, ops = _regression_graph("/job:ps/task:0", None)
        with tf.Session(f"grpc://{spec['worker'][0]}", graph=g) as sess:
            losses, _, _ = _train(sess, ops, steps=2)
            assert losses[1] < losses[0]
        cluster = tf.train.ClusterSpec(spec)
        assert control.shutdown_job(cluster, "worker") == ["/job:worker/task:0"]
        assert tf.train.Server.shutdown_job(cluster, "ps") == ["/job:ps/task:0"]
        assert [p.wait(15) for p in procs.values()] == [0, 0]
        assert tf.train.Server.shutdown_job(cluster, "ps") == []  # gone already: fine
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
            p.stdout.close()


@pytest.mark.timeout(30)
def test_a_task_that_cannot_start_is_reported_with_its_stderr():
    with pytest.raises(RuntimeError, match=r"(?s)exited with code 2.*unrecognized"):
        LocalCluster(1, 0, extra_args=["--bogus"])


def _make_certificates(tmp_path) -> dict[str, str]:
    """A CA and a certificate for localhost it signed (EC keys, valid one day)."""

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
            "-subj", "/CN=tensorflux-test-ca")
    openssl("req", *ec, "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=localhost")
    (tmp_path / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n")
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "tls.pem", "-days", "1", "-extfile", "san.ext")
    (tmp_path / "token").write_text("s3cret\n")
    return {name: str(tmp_path / name) for name in ("ca.pem", "tls.key", "tls.pem", "token")}


@pytest.mark.timeout(60)
@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_token_and_mutual_tls_flags(tmp_path, monkeypatch):
    files = _make_certificates(tmp_path)
    flags = ["--token_file", files["token"], "--tls_cert", files["tls.pem"], "--tls_key",
             files["tls.key"], "--tls_client_ca", files["ca.pem"], "--tls_root_ca",
             files["ca.pem"]]
    with LocalCluster(1, 1, extra_args=flags, env=FAST_FAIL) as cluster:
        for name, value in (("RPC_TOKEN", "s3cret"), ("TLS_ROOT_CA", files["ca.pem"]),
                            ("TLS_CLIENT_CERT", files["tls.pem"]),
                            ("TLS_CLIENT_KEY", files["tls.key"])):
            monkeypatch.setenv(f"TENSORFLUX_{name}", value)
        g, doubled, _, v, inc, init = _queue_graph()
        with tf.Session(cluster.targets["worker"][0], graph=g) as sess:
            sess.run(init)
            assert sess.run(inc) == 2.0  # the worker calls the PS over mutual TLS
        good = rpc.RpcConfig.from_env()
        bad = dataclasses.replace(good, token="wrong")
        with pytest.raises(tf.errors.UnauthenticatedError):
            control.shutdown(cluster.targets["ps"][0], bad)
        with pytest.raises(tf.errors.UnavailableError):  # plaintext to a TLS server
            control.shutdown(cluster.targets["ps"][0], rpc.RpcConfig(token="s3cret"))
        assert cluster.processes["ps"][0].poll() is None
        assert control.shutdown_job(cluster.cluster_spec, "ps", good) == ["/job:ps/task:0"]
        assert cluster.wait("ps", 0, timeout=15) == 0
