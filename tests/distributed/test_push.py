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
from tensorflux.distributed import master as master_lib
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

        old = list(pushers._streams.values())
        threading.Thread(target=cut, daemon=True).start()
        start = time.monotonic()
        with pytest.raises(tf.errors.UnavailableError, match="push"):
            s.run(y)  # waits on the dequeue, then on a push that cannot come
        assert time.monotonic() - start < 10
        # The PS learns of the loss when its reader sees the stream end (or its next
        # write fails, which fails that step, as in TF); wait for the reader under load.
        deadline = time.monotonic() + 10
        while any(st in old for st in list(pushers._streams.values())) \
                and time.monotonic() < deadline:
            time.sleep(0.01)
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
            port, t, *_ = push._decode_connect(stub.raw_call(push.CONNECT_METHOD, b"", 5))
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


def _threads_of_calls(monkeypatch):
    """The names of the threads that run RunGraph and RunStep on any task."""
    names = []
    for cls, method in ((Worker, "run_graph"), (master_lib.Master, "run_step_values")):
        original = getattr(cls, method)

        def counted(self, *args, _original=original, _name=method, **kwargs):
            names.append((_name, threading.current_thread().name))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, method, counted)
    return names


@pytest.mark.parametrize("mode,prefix", [("1", ("tfx-push-read", "tfx-push-call")),
                                         ("grpc", ("tfx-rpc",))], ids=["socket", "grpc"])
def test_run_step_and_run_graph_ride_the_push_connections(pair, graph, monkeypatch, mode,
                                                           prefix):
    """A tensorflux client's RunStep and a tensorflux master's RunGraph on another
    tensorflux task are calls on the push listener's connections (run by the thread that
    read them, or past its limit by the listener's pool); with
    TENSORFLUX_RPC_PUSH=grpc both are gRPC calls. The results are the same."""
    monkeypatch.setenv("TENSORFLUX_RPC_PUSH", mode)
    names = _threads_of_calls(monkeypatch)
    big, small, pred, picked, looped, update = _model()
    start = np.arange(100_000, dtype=np.float32)
    with pair.session(graph) as s:
        s.run([big.initializer, small.initializer])
        assert s.run(picked, {pred: True}) == pytest.approx(2 * start.sum(), rel=1e-5)
        assert s.run(looped) == pytest.approx(12.0)
        s.run(update)
        np.testing.assert_allclose(s.run(big), start * 2.0)
    assert {m for m, _ in names} == {"run_graph", "run_step_values"}
    assert all(t.startswith(prefix) for _, t in names), names


def test_a_run_graph_call_keeps_the_steps_deadline_and_its_task_serves_the_next(pair,
                                                                               graph):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.float32)
        enqueue = q.enqueue(1.0)
        x = q.dequeue() + 1.0
    with tf.device("/job:worker/task:0"):
        y = x * 2.0
    with pair.session(graph) as s:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(y, options=tf.RunOptions(timeout_in_ms=300))  # the PS waits on the queue
        assert time.monotonic() - start < 10
        s.run(enqueue)
        assert s.run(y) == 4.0


def _adam_step(n, place=True):
    """Adam over n variables on ps:0, the model on worker:0 (or no placement)."""
    with tf.device((lambda op: "/job:ps/task:0" if op.type == "VarHandleOp"
                    else "/job:worker/task:0") if place else None):
        x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        h = x
        for i in range(n):
            w = tf.Variable(np.eye(3, dtype=np.float32) * (1 + i * 0.1), name=f"w{i}")
            h = tf.tanh(tf.matmul(h, w))
        loss = tf.reduce_sum(h * h)
        train = tf.train.AdamOptimizer(0.1).minimize(loss)
    return loss, train


def test_an_optimizers_updates_on_a_ps_cross_to_the_worker_as_one_control_edge(pair, graph):
    """The train op waits for the PS's updates through one control transfer when anything
    consumes it; a train op nothing consumes waits for none (the step ends when the PS's
    part has run anyway), and neither does a gradient nobody wants (its NoOp's control
    input from a weight's read is implied by the forward pass)."""
    loss, train = _adam_step(3)
    with tf.device("/job:worker/task:0"), tf.control_dependencies([train]):
        after = tf.identity(loss)
    with pair.session(graph) as s:
        s.run(tf.global_variables_initializer())
        for fetch, crossing in ((after, 1), (train, 0)):
            md = tf.RunMetadata()
            s.run(fetch, options=tf.RunOptions(output_partition_graphs=True),
                  run_metadata=md)
            nodes = {nd.name: nd for g in md.partition_graphs for nd in g.node}
            waits = [i for i in nodes[train.name].input if i.startswith("^")]
            assert len(waits) == crossing, waits
            assert all(nodes[w[1:]].op == "_Recv" for w in waits), waits
            controls = [nd for nd in nodes.values()
                        if nd.op == "_Recv" and "_recv_ctrl_" in nd.name]
            assert len(controls) == crossing, [nd.name for nd in controls]


def _round_trip(place):
    """The Adam step, and a tensor that goes worker -> PS -> worker."""
    loss, train = _adam_step(3, place)
    with tf.device("/job:ps/task:0" if place else None):
        a = tf.Variable(1.5)
    with tf.device("/job:worker/task:0" if place else None):
        y = a * 3.0
    with tf.device("/job:ps/task:0" if place else None):
        z = y + a
    with tf.device("/job:worker/task:0" if place else None):
        out = z * a + loss
    return out, train, tf.global_variables_initializer()


def test_each_task_runs_its_part_compiled_in_the_order_of_the_whole_step(pair, graph):
    """Each task's graph runs compiled, blocking in its _Recvs in one order of the whole
    step (no deadlock though the worker's tensor goes to the PS and comes back), with the
    values of an in-process session."""
    out, train, init = _round_trip(True)
    with pair.session(graph) as s:
        s.run(init)
        got = [s.run([out, train])[0] for _ in range(3)]
        graphs = [g for w in pair.workers + pair.ps
                  for sess in w._worker._sessions.values() for g in sess.graphs.values()
                  if g.crosses_tasks]
        assert len(graphs) >= 2 and all(
            [p.kind for p in g.runner.plan.parts] == ["static"] and
            g.runner.plan.parts[0].order is not None for g in graphs)
    with tf.Graph().as_default() as local_graph:
        out, train, init = _round_trip(False)
        with tf.Session(graph=local_graph) as local:
            local.run(init)
            want = [local.run([out, train])[0] for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_run_that_starts_after_its_step_was_cleaned_up_fails_at_once():
    """Another task's failure (here: the PS's answer) can reach the master before the
    master's own part of the step has begun: that part must not wait for tensors that will
    not come."""
    from tensorflux.distributed.remote_rendezvous import RendezvousMgr

    mgr = RendezvousMgr(lambda device: device.startswith("/job:worker/"), None)
    mgr.cleanup(7, tf.errors.AbortedError(None, None, "the PS restarted"))
    key = ("/job:ps/replica:0/task:0/device:CPU:0;1;/job:worker/replica:0/task:0/device:"
           "CPU:0;w;0:0")
    rdv = mgr.start_run(7, frozenset(), frozenset({push.key_prefix(key)}))
    with pytest.raises(tf.errors.AbortedError, match="restarted"):
        rdv.recv(key, timeout=5)
    assert not mgr.start_run(8, frozenset(), frozenset())._status  # other steps run
