"""Security by default: TLS, shared tokens, request size limits, and hostile requests that
get a status while the server keeps serving (a bounded fuzz of every service method)."""

from __future__ import annotations

import random
import shutil
import subprocess

import grpc
import pytest

import tensorflux as tf
from tensorflux.distributed import rpc
from tensorflux.distributed import server as server_lib
from tensorflux.protos import master_pb2, worker_pb2

pytestmark = pytest.mark.timeout(90)


def _rpc_session(target, graph=None):
    config = tf.ConfigProto()
    config.rpc_options.use_rpc_for_inprocess_master = True
    return tf.Session(target, graph=graph, config=config)


@pytest.fixture
def pki(tmp_path):
    """A CA and a server certificate for localhost (openssl's command line)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl command not found")

    def run(*args):
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True,
                       timeout=60)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
        "/CN=tensorflux-test-ca", "-keyout", "ca.key", "-out", "ca.pem")
    (tmp_path / "san.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout",
        "server.key", "-out", "server.csr")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", "server.pem")
    return {name: (tmp_path / name).read_bytes() for name in
            ("ca.pem", "server.pem", "server.key")}, tmp_path


def test_tls_sessions_work_and_plain_clients_are_refused(pki, monkeypatch, graph):
    files, path = pki
    config = rpc.RpcConfig(server_cert=files["server.pem"], server_key=files["server.key"],
                           root_ca=files["ca.pem"], unavailable_timeout=2.0)
    server = server_lib.Server({"w": ["localhost:0"]}, "w", 0, rpc_config=config)
    try:
        c = tf.constant(5.0) * 2.0
        monkeypatch.setenv("TENSORFLUX_TLS_ROOT_CA", str(path / "ca.pem"))
        with _rpc_session(server.target) as s:
            assert s.run(c) == 10.0
        monkeypatch.delenv("TENSORFLUX_TLS_ROOT_CA")
        monkeypatch.setenv("TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT", "1")
        rpc.CHANNELS.forget(server.target[len("grpc://"):])
        with pytest.raises(tf.errors.UnavailableError):
            with _rpc_session(server.target) as s:
                s.run(c)
    finally:
        server.stop(0)


def test_tokens_are_checked_on_every_call(monkeypatch, graph):
    server = server_lib.Server({"w": ["localhost:0"]}, "w", 0,
                               rpc_config=rpc.RpcConfig(token="s3cret"))
    try:
        c = tf.constant(1.0)
        with _rpc_session(server.target) as s:
            with pytest.raises(tf.errors.UnauthenticatedError):
                s.run(c)
        monkeypatch.setenv("TENSORFLUX_RPC_TOKEN", "wrong")
        with _rpc_session(server.target) as s:
            with pytest.raises(tf.errors.UnauthenticatedError):
                s.run(c)
        monkeypatch.setenv("TENSORFLUX_RPC_TOKEN", "s3cret")
        with _rpc_session(server.target) as s:
            assert s.run(c) == 1.0
    finally:
        server.stop(0)


def test_oversized_requests_are_refused(graph):
    server = server_lib.Server({"w": ["localhost:0"]}, "w", 0,
                               rpc_config=rpc.RpcConfig(max_request_bytes=1 << 20))
    try:
        x = tf.placeholder(tf.float32, [None])
        y = x + 1.0
        with _rpc_session(server.target) as s:
            assert list(s.run(y, {x: [1.0]})) == [2.0]
            with pytest.raises(tf.errors.ResourceExhaustedError):
                s.run(y, {x: [0.0] * (1 << 19)})  # 2 MiB of floats
            assert list(s.run(y, {x: [2.0]})) == [3.0]
    finally:
        server.stop(0)


def _valid_requests(handle: str) -> dict[str, bytes]:
    """One well-formed request per method (the fuzzer mutates them)."""
    gd = tf.Graph()
    with gd.as_default():
        tf.constant(1.0, name="c")
    m, w = master_pb2, worker_pb2
    reqs = {
        "/tensorflow.MasterService/CreateSession": m.CreateSessionRequest(
            graph_def=gd.as_graph_def()),
        "/tensorflow.MasterService/ExtendSession": m.ExtendSessionRequest(
            session_handle=handle, graph_def=gd.as_graph_def(), current_graph_version=1),
        "/tensorflow.MasterService/RunStep": m.RunStepRequest(
            session_handle=handle, fetch=["c:0"]),
        "/tensorflow.MasterService/PartialRunSetup": m.PartialRunSetupRequest(
            session_handle=handle, fetch=["c:0"]),
        "/tensorflow.MasterService/ListDevices": m.ListDevicesRequest(session_handle=handle),
        "/tensorflow.MasterService/MakeCallable": m.MakeCallableRequest(
            session_handle=handle),
        "/tensorflow.MasterService/RunCallable": m.RunCallableRequest(
            session_handle=handle, handle=1),
        "/tensorflow.MasterService/ReleaseCallable": m.ReleaseCallableRequest(
            session_handle=handle, handle=1),
        "/tensorflow.WorkerService/GetStatus": w.GetStatusRequest(),
        "/tensorflow.WorkerService/RegisterGraph": w.RegisterGraphRequest(
            graph_def=gd.as_graph_def()),
        "/tensorflow.WorkerService/RunGraph": w.RunGraphRequest(graph_handle="x", step_id=3),
        "/tensorflow.WorkerService/RecvTensor": w.RecvTensorRequest(
            step_id=3, rendezvous_key="/job:w/replica:0/task:0/device:CPU:0;1;"
            "/job:w/replica:0/task:0/device:CPU:0;t;0:0"),
        "/tensorflow.WorkerService/CleanupGraph": w.CleanupGraphRequest(step_id=3),
        "/tensorflow.WorkerService/DeregisterGraph": w.DeregisterGraphRequest(
            graph_handle="x"),
        "/tensorflow.WorkerService/Logging": w.LoggingRequest(fetch_step_id=[1]),
        "/tensorflow.WorkerService/Tracing": w.TracingRequest(),
    }
    return {path: r.SerializeToString() for path, r in reqs.items()}


def _mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        if kind < 0.4 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind < 0.7:
            b[rng.randrange(len(b) + 1):] = bytes(rng.randrange(256)
                                                  for _ in range(rng.randint(0, 16)))
        elif b:
            del b[rng.randrange(len(b)):]
    return bytes(b)


def test_every_method_survives_a_bounded_fuzz(graph):
    server = server_lib.Server({"w": ["localhost:0"]}, "w", 0)
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    try:
        c = tf.constant(1.0, name="c")
        with _rpc_session(server.target) as s:
            s.run(c)
            handle = s._remote.handle
            rng = random.Random(14)
            for path, data in _valid_requests(handle).items():
                call = channel.unary_unary(path)
                for _ in range(25):
                    try:
                        call(_mutate(data, rng), timeout=5)
                    except grpc.RpcError as e:
                        # A status of TensorFlow's codes; never a crash or a hang.
                        assert e.code() != grpc.StatusCode.DEADLINE_EXCEEDED or \
                            path.endswith("RecvTensor"), (path, e)
            assert s.run(c) == 1.0  # the server kept serving and the session still works
    finally:
        channel.close()
        server.stop(0)


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g
