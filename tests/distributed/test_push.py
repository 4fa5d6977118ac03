"""Tensors pushed between tensorflux tasks (tensorflux/distributed/push.py): every
transport gives the same results as TensorFlow's pull, only edges between two tensorflux
tasks are pushed, a lost stream fails the steps waiting on it, and the listener lets in
only holders of a ticket."""

from __future__ import annotations

import random
import socket
import threading
import time

import grpc
import numpy as np
import pytest

import tensorflux as tf
from tensorflux.distributed import dist_step, push, rpc, wire
from tensorflux.distributed import server as server_lib
from tensorflux.distributed.worker import Worker

from .conftest import Cluster

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def pair():
    """1 worker + 1 PS, in this process."""
    c = Cluster(1, 1)
    yield c
    c.stop()


@pytest.fixture
def recv_tensor_calls(monkeypatch):
    calls = []
    original = Worker.recv_value

    def counted(self, step_id, key, timeout):
        calls.append(key)
        return original(self, step_id, key, timeout)

    monkeypatch.setattr(Worker, "recv_value", counted)
    return calls


def _model():
    """Both directions, a large and a small tensor, a dead branch and loop frames."""
    with tf.device("/job:ps/task:0"):
        big = tf.Variable(np.arange(100_000, dtype=np.float32), name="big")
        small = tf.Variable(2.0, name="small")
    with tf.device("/job:worker/task:0"):
        pred = tf.placeholder(tf.bool, [])
        grad = big * small  # PS -> worker
        picked = tf.cond(pred, lambda: tf.reduce_sum(grad), lambda: -small)

        def body(i, acc):
            with tf.device("/job:ps/task:0"):
                part = small * tf.cast(i, tf.float32)
            return i + 1, acc + part

        _, looped = tf.while_loop(lambda i, acc: i < 4, body, [0, 0.0])
    with tf.device("/job:ps/task:0"):
        update = big.assign_add(grad * 0.5)  # worker -> PS
    return big, small, pred, picked, looped, update


@pytest.mark.parametrize("mode,kind", [("1", "socket"), ("grpc", "grpc"), ("0", None)],
                         ids=["socket", "grpc_stream", "pull"])
def test_every_transport_gives_the_same_results(pair, graph, monkeypatch,
                                                recv_tensor_calls, mode, kind):
    monkeypatch.setenv("TENSORFLUX_RPC_PUSH", mode)
    big, small, pred, picked, looped, update = _model()
    start = np.arange(100_000, dtype=np.float32)
    with pair.session(graph) as s:
        s.run([big.initializer, small.initializer])
        assert s.run(picked, {pred: True}) == pytest.approx(2 * start.sum(), rel=1e-5)
        assert s.run(picked, {pred: False}) == -2.0
        assert s.run(looped) == pytest.approx(12.0)
        s.run(update)
        np.testing.assert_allclose(s.run(big), start * 2.0)
    streams = {t: st.kind for w in pair.workers + pair.ps
               for t, st in w._worker.rendezvous_mgr.pushers._streams.items()}
    if kind is None:
        assert recv_tensor_calls and not streams
    else:
        assert recv_tensor_calls == [] and set(streams.values()) == {kind}
        assert set(streams) == {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"}


def test_only_edges_between_tensorflux_tasks_are_pushed(pair, graph, monkeypatch,
                                                        recv_tensor_calls):
    """A task that is not tensorflux (as a TensorFlow worker's devices say) gets
    TensorFlow's RecvTensor both ways."""
    monkeypatch.setattr(dist_step, "_ends_steps_itself", lambda mgr, task: "ps" not in task)
    big, small, pred, picked, looped, update = _model()
    with pair.session(graph) as s:
        s.run([big.initializer, small.initializer])
        assert s.run(picked, {pred: False}) == -2.0
        graphs = [g for w in pair.workers + pair.ps
                  for sess in w._worker._sessions.values() for g in sess.graphs.values()]
    assert recv_tensor_calls  # the worker pulled from the PS ...
    assert graphs and all(not g.push_out and not g.push_in for g in graphs)  # ... no marks


def test_tensors_over_the_request_limit_are_fetched_with_recv_tensor(graph,
                                                                      recv_tensor_calls):
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    spec = {"worker": [f"localhost:{ports[0]}"], "ps": [f"localhost:{ports[1]}"]}
    config = rpc.RpcConfig(max_request_bytes=1 << 20)
    servers = [server_lib.Server(spec, job, 0, rpc_config=config) for job in spec]
    try:
        with tf.device("/job:ps/task:0"):
            big = tf.random_uniform([1 << 19], seed=1)  # 2 MiB
            small = tf.constant(3.0)
        with tf.device("/job:worker/task:0"):
            out = tf.reduce_sum(big) + small
        with tf.Session(servers[0].target, graph=graph) as s:
            value, total = s.run([big, out])
        assert total == pytest.approx(value.sum(dtype=np.float64) + 3.0, rel=1e-4)
        assert len(recv_tensor_calls) == 1  # the big one; the small one was pushed
    finally:
        for srv in servers:
            srv.stop(0)


@pytest.mark.parametrize("mode", ["1", "grpc"], ids=["socket", "grpc_stream"])
def test_a_lost_push_stream_fails_the_step_waiting_on_it(pair, graph, monkeypatch, mode):
    monkeypatch.setenv("TENSORFLUX_RPC_PUSH", mode)
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.float32)
        enqueue = q.enqueue(1.0)
        x = q.dequeue() + 1.0
    with tf.device("/job:worker/task:0"):
        y = x * 2.0
    with pair.session(graph) as s:
        s.run(enqueue)
        assert s.run(y) == 4.0  # the PS's stream to the worker is open now
        pushers = pair.ps[0]._worker.rendezvous_mgr.pushers

        def cut():
            time.sleep(0.5)
            for stream in list(pushers._streams.values()):
                if stream.kind == "socket":
                    stream.sock.shutdown(socket.SHUT_RDWR)
                else:
                    stream.future.cancel()

        threading.Thread(target=cut, daemon=True).start()
        start = time.monotonic()
        with pytest.raises(tf.errors.UnavailableError, match="push"):
            s.run(y)  # waits on the dequeue, then on a push that cannot come
        assert time.monotonic() - start < 10
        s.run(enqueue)
        assert s.run(y) == 4.0  # a new stream carries the next step


def test_the_listener_lets_in_only_ticket_holders_and_checks_the_token(graph):
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    spec = {"worker": [f"localhost:{ports[0]}"], "ps": [f"localhost:{ports[1]}"]}
    config = rpc.RpcConfig(token="s3cret")
    servers = [server_lib.Server(spec, job, 0, rpc_config=config) for job in spec]
    try:
        ps = servers[1]
        channel = grpc.insecure_channel(f"localhost:{ports[1]}")
        with pytest.raises(grpc.RpcError) as info:
            channel.unary_unary(push.CONNECT_METHOD)(b"", timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        channel.close()
        stub = ps._stub_for_task("/job:ps/replica:0/task:0")

        def ticket():
            port, t, _ = push._decode_connect(stub.raw_call(push.CONNECT_METHOD, b"", 5))
            assert port and len(t) == 32
            return port, t

        port, used = ticket()
        rng = random.Random(15)
        hellos = [b"GET / HTTP/1.1\r\n\r\n" + bytes(30),  # no ticket
                  push._MAGIC + bytes(32) + b"\0\0\0\0",  # a wrong ticket
                  push._MAGIC + used + b"\1\0\0\0w" + b"\xff" * 8,  # a lying length
                  push._MAGIC + used + b"\0\0\0\0",  # a ticket used before
                  push._MAGIC + ticket()[1] + b"\1\0\0\0w" + (40).to_bytes(8, "little")
                  + bytes(rng.randrange(256) for _ in range(40))]  # junk for a message
        for hello in hellos:
            with socket.create_connection(("localhost", port), timeout=10) as conn:
                conn.sendall(hello)
                try:
                    assert conn.recv(16) == b""  # closed on us, nothing delivered
                except ConnectionResetError:
                    pass  # closed with our bytes unread
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.ones(3, np.float32))
        with tf.device("/job:worker/task:0"):
            y = v * 2.0
        cfg = tf.ConfigProto()
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TENSORFLUX_RPC_TOKEN", "s3cret")
            with tf.Session(servers[0].target, graph=graph, config=cfg) as s:
                s.run(v.initializer)
                np.testing.assert_allclose(s.run(y), [2.0] * 3)
        kinds = [st.kind for st in ps._worker.rendezvous_mgr.pushers._streams.values()]
        assert kinds == ["socket"]
    finally:
        for srv in servers:
            srv.stop(0)


def test_malformed_pushes_are_refused_with_invalid_argument():
    good = b"".join(wire.encode_pushed_tensor(7, f"/job:a/replica:0/task:0/device:CPU:0;"
                                              f"{i:016x};/job:b/replica:0/task:0/device:"
                                              f"CPU:0;t{i};0:0", np.arange(i + 3.0), False)
                    for i in range(3))
    assert [item[0] for item in wire.decode_pushed_tensors(good)] == [7, 7, 7]
    rng = random.Random(16)
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            if not data:
                break
            if rng.random() < 0.5:
                data[rng.randrange(len(data))] = rng.randrange(256)
            else:
                del data[rng.randrange(len(data)):]
        try:
            wire.decode_pushed_tensors(bytes(data))
        except tf.errors.InvalidArgumentError:
            pass


def test_stopping_a_server_does_not_wait_for_incoming_push_streams(pair, graph):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.ones(3, np.float32))
    with tf.device("/job:worker/task:0"):
        y = v * 2.0
    with pair.session(graph) as s:
        s.run(v.initializer)
        s.run(y)
    start = time.monotonic()
    pair.workers[0].stop(5.0)  # the PS's stream into it would hold the 5 s grace
    assert time.monotonic() - start < 3.0
