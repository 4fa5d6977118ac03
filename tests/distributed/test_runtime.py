"""The distributed runtime in one process: sessions on a master over gRPC, steps placed
across tasks, errors, timeouts, lost tasks, concurrency. Results are compared with a local
session running the same graph."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.distributed import server as server_lib
from tests.distributed.conftest import Cluster

pytestmark = pytest.mark.timeout(60)


def _mlp(seed: int = 1):
    """A 2-layer MLP with variables on the PS and the model on worker 1."""
    rng = np.random.RandomState(seed)
    with tf.device("/job:ps/task:0"):
        w1 = tf.Variable(rng.randn(8, 16).astype(np.float32) * 0.3, name="w1")
        b1 = tf.Variable(np.zeros(16, np.float32), name="b1")
        w2 = tf.Variable(rng.randn(16, 3).astype(np.float32) * 0.3, name="w2")
        gs = tf.train.get_or_create_global_step()
    with tf.device("/job:worker/task:1"):
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(h, w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        train = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=gs)
    return x, y, loss, train, gs


def _train(session_factory, steps: int = 20):
    g = tf.Graph()
    with g.as_default():
        x, y, loss, train, gs = _mlp()
        init = tf.global_variables_initializer()
        rng = np.random.RandomState(0)
        xs = rng.randn(steps, 32, 8).astype(np.float32)
        ys = rng.randint(0, 3, (steps, 32))
        losses = []
        with session_factory(g) as s:
            s.run(init)
            for i in range(steps):
                losses.append(s.run([loss, train], {x: xs[i], y: ys[i]})[0])
            final_step = s.run(gs)
    return np.array(losses), final_step


def test_local_server_runs_a_step_and_lists_its_devices(graph):
    server = server_lib.Server.create_local_server()
    try:
        assert server.target.startswith("grpc://localhost:")
        assert server.server_def.job_name == "localhost"
        x = tf.placeholder(tf.float32, [None])
        y = x * 2.0 + 1.0
        with tf.Session(server.target) as s:
            np.testing.assert_allclose(s.run(y, {x: [1.0, 2.0]}), [3.0, 5.0])
            (dev,) = s.list_devices()
            assert dev.name == "/job:localhost/replica:0/task:0/device:CPU:0"
    finally:
        server.stop(0)


@pytest.mark.parametrize("via_rpc", [True, False], ids=["grpc_master", "inprocess_master"])
def test_training_on_a_cluster_matches_one_process(cluster, via_rpc):
    local_losses, local_step = _train(lambda g: tf.Session(
        graph=g, config=tf.ConfigProto(allow_soft_placement=True)))

    def remote(g):
        config = tf.ConfigProto()
        config.rpc_options.use_rpc_for_inprocess_master = via_rpc
        return tf.Session(cluster.target, graph=g, config=config)

    losses, step = _train(remote)
    assert step == local_step == 20
    np.testing.assert_allclose(losses, local_losses, rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]


def test_a_distributed_step_fuses_a_layers_product_bias_and_relu_as_a_local_one(cluster,
                                                                                graph):
    """The master optimizes a step of tensorflux CPU tasks as a local session does: a
    layer's MatMul + bias + Relu on a worker is one _FusedMatMul there (its weights and
    bias pushed from the PS), and the values are a local session's, bit for bit."""
    rng = np.random.RandomState(3)
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(rng.randn(8, 16).astype(np.float32), name="w")
        b = tf.Variable(rng.randn(16).astype(np.float32), name="b")
    with tf.device("/job:worker/task:1"):
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        h = tf.nn.relu(tf.matmul(x, w) + b, name="h")
    feed = {x: rng.randn(5, 8).astype(np.float32)}
    meta = tf.RunMetadata()
    with cluster.session(graph) as s:
        s.run(tf.global_variables_initializer())
        got = s.run(h, feed, options=tf.RunOptions(output_partition_graphs=True),
                    run_metadata=meta)
    fused = [n for g in meta.partition_graphs for n in g.node if n.op == "_FusedMatMul"]
    assert [(n.name, n.device) for n in fused] == [("h", "/job:worker/replica:0/task:1/"
                                                         "device:CPU:0")]
    assert not [n for g in meta.partition_graphs for n in g.node
                if n.op in ("MatMul", "Relu", "AddV2")]
    with tf.Session(graph=graph, config=tf.ConfigProto(allow_soft_placement=True)) as s:
        s.run(tf.global_variables_initializer())
        want = s.run(h, feed)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("config_threads,env_threads,want",
                         [(3, "5", 3), (0, "5", 5)], ids=["config", "environment"])
def test_a_tasks_kernels_split_over_its_intra_op_threads_fixed_at_start(
        monkeypatch, config_threads, env_threads, want):
    """A task's kernels split over its config's intra-op threads (else
    TF_NUM_INTRAOP_THREADS's, else the cores), read when the server starts, as a local
    session reads them when it is made: a later change of the variable changes nothing."""
    from tensorflux.kernels import intra_op
    from tensorflux.protos import worker_pb2

    monkeypatch.setattr(intra_op, "blas_threads", lambda: 1)  # (the project's policy)
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", env_threads)
    server = server_lib.Server.create_local_server(
        config=tf.ConfigProto(intra_op_parallelism_threads=config_threads))
    try:
        monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "7")
        worker = server._worker
        worker.create_worker_session(
            worker_pb2.CreateWorkerSessionRequest(session_handle="s1"))
        for handle in ("", "s1"):
            ctx = type("Ctx", (), {"session": worker._sessions[handle]})()
            assert intra_op.workers(ctx) == want
    finally:
        server.stop(0)


def test_a_step_waiting_on_another_task_rests_the_kernel_helpers(cluster, graph,
                                                                  monkeypatch):
    """A task that waits for a tensor or a reply from another task stops its kernel pool's
    helpers from spinning (native.helpers_rest), so that they leave the cores to the
    process it waits for; a local session never does, and the step's values are those of
    one process."""
    from tensorflux.kernels.cpu import native

    rests = []
    real = native.helpers_rest
    monkeypatch.setattr(native, "helpers_rest", lambda: (rests.append(1), real()))
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.arange(12, dtype=np.float32).reshape(3, 4), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [2, 3])
        y = tf.nn.relu(tf.matmul(x, w))
    feed = {x: np.ones((2, 3), np.float32)}
    expected = np.maximum(np.ones((2, 3), np.float32) @ np.arange(12.0).reshape(3, 4), 0)
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as local:
        local.run(w.initializer)
        np.testing.assert_array_equal(local.run(y, feed), expected)
    assert not rests
    with cluster.session(graph, via_rpc=False) as sess:
        sess.run(w.initializer)
        rests.clear()
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(y, feed), expected)
    assert rests  # the worker waited on the PS (its reply, or w itself) at least once


def test_variables_live_on_the_ps_across_sessions(cluster, graph):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    inc = v.assign_add(1.0)
    with cluster.session(graph) as s:
        s.run(v.initializer)
        s.run(inc)
    config = tf.ConfigProto()
    with tf.Session(cluster.workers[1].target, graph=graph, config=config) as s:
        assert s.run(v) == 2.0
        tf.Session.reset(cluster.workers[1].target)
    with cluster.session(graph) as s:
        with pytest.raises(tf.errors.FailedPreconditionError):
            s.run(v)


def test_a_step_spans_three_tasks_with_control_flow(cluster, graph):
    with tf.device("/job:ps/task:0"):
        a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tf.device("/job:worker/task:1"):
        i0 = tf.constant(0)

        def body(i, acc):
            with tf.device("/job:ps/task:0"):
                step = tf.reduce_sum(a) * tf.cast(i, tf.float32)
            return i + 1, acc + step

        _, total = tf.while_loop(lambda i, acc: i < 5, body, [i0, tf.constant(0.0)])
        pred = tf.placeholder(tf.bool, [])
        out = tf.cond(pred, lambda: total * 2.0, lambda: total - 1.0)
    with cluster.session(graph) as s:
        assert s.run(out, {pred: True}) == pytest.approx(15.0 * 10 * 2)
        assert s.run(out, {pred: False}) == pytest.approx(15.0 * 10 - 1)


def test_large_tensors_cross_tasks_without_a_size_cap(cluster, graph):
    with tf.device("/job:ps/task:0"):
        big = tf.random_uniform([6 * 1024 * 1024], seed=3)  # 24 MiB, over gRPC's 4 MiB
    with tf.device("/job:worker/task:1"):
        total = tf.reduce_sum(big)
    with cluster.session(graph) as s:
        value, summed = s.run([big, total])
    assert value.shape == (6 * 1024 * 1024,) and value.dtype == np.float32
    assert summed == pytest.approx(value.sum(dtype=np.float64), rel=1e-4)


def test_fetches_feeds_targets_and_fed_fetches(cluster, graph):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="v")
    x = tf.placeholder(tf.float32, [2], name="x")
    y = x + v
    with cluster.session(graph) as s:
        s.run(v.initializer)
        out = s.run({"y": y, "x": x, "op": v.initializer.name}, {x: [10.0, 20.0]})
        np.testing.assert_allclose(out["y"], [11.0, 22.0])
        np.testing.assert_allclose(out["x"], [10.0, 20.0])
        assert out["op"] is None
        call = s.make_callable(y, [x])
        np.testing.assert_allclose(call([1.0, 1.0]), [2.0, 3.0])


def test_the_graph_grows_between_steps(cluster, graph):
    a = tf.constant(2.0)
    with cluster.session(graph) as s:
        assert s.run(a) == 2.0
        with tf.device("/job:ps/task:0"):
            b = a * 3.0
        assert s.run(b) == 6.0


def test_errors_name_the_node_and_keep_their_class(cluster, graph):
    with tf.device("/job:ps/task:0"):
        x = tf.placeholder(tf.float32, [None], name="x")
        bad = tf.reshape(x, [3], name="bad_reshape")
    with cluster.session(graph) as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad_reshape"):
            s.run(bad, {x: [1.0, 2.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="x"):
            s.run(bad)
        assert list(s.run(bad, {x: [1.0, 2.0, 3.0]})) == [1.0, 2.0, 3.0]


def test_an_unknown_task_lists_the_clusters_tasks(cluster, graph):
    with tf.device("/job:ps/task:7"):
        c = tf.constant(1.0)
    with cluster.session(graph) as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="job:ps/replica:0/task:0"):
            s.run(c)


def test_timeouts_cancel_the_step_on_every_task(cluster, graph):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(4, tf.float32, shared_name="q")
        item = q.dequeue()
    with tf.device("/job:worker/task:1"):
        got = item + 1.0
    with cluster.session(graph) as s:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(got, options=tf.RunOptions(timeout_in_ms=300))
        assert time.monotonic() - start < 10
        s.run(q.enqueue(5.0))
        assert s.run(got) == 6.0


def test_close_cancels_a_blocked_remote_step(cluster, graph):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(4, tf.float32)
        got = q.dequeue()
    s = cluster.session(graph, via_rpc=False)
    s.run(q.size())
    caught = []

    def blocked():
        try:
            s.run(got)
        except tf.errors.OpError as e:
            caught.append(e)

    t = threading.Thread(target=blocked)
    t.start()
    time.sleep(0.3)
    s.close()
    t.join(20)
    assert not t.is_alive()
    assert caught and isinstance(caught[0], (tf.errors.CancelledError,
                                             tf.errors.AbortedError))


def test_many_threads_run_steps_on_one_cluster_session(cluster, graph):
    with tf.device("/job:ps/task:0"):
        counter = tf.Variable(0, dtype=tf.int64)
    x = tf.placeholder(tf.float32, [])
    with tf.device("/job:worker/task:1"):
        y = x * 2.0
    inc = counter.assign_add(1, use_locking=True)
    failures = []
    with cluster.session(graph) as s:
        s.run(counter.initializer)

        def work(k):
            try:
                for i in range(10):
                    assert s.run(y, {x: float(k * 100 + i)}) == 2.0 * (k * 100 + i)
                    s.run(inc)
            except Exception as e:  # noqa: BLE001 - collected
                failures.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(50)
        assert not failures
        assert s.run(counter) == 80


def test_run_metadata_merges_every_tasks_step_stats(cluster, graph):
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(np.ones((4, 4), np.float32))
    with tf.device("/job:worker/task:1"):
        b = tf.matmul(a, a)
    c = b + 1.0
    meta = tf.RunMetadata()
    with cluster.session(graph) as s:
        s.run(a.initializer)
        s.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                       output_partition_graphs=True), run_metadata=meta)
    assert len(meta.partition_graphs) == 3
    devices = {d.device for d in meta.step_stats.dev_stats}
    assert any("/job:ps/" in d for d in devices)
    assert any("/job:worker/replica:0/task:1" in d for d in devices)
    assert any("/job:worker/replica:0/task:0" in d for d in devices)


def test_device_filters_keep_a_session_off_tasks_that_are_down(graph, monkeypatch):
    monkeypatch.setenv("TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT", "1")
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"localhost:{sock.getsockname()[1]}"
    spec = tf.train.ClusterSpec({"worker": ["localhost:0"], "ps": [dead]})
    server = server_lib.Server(spec, "worker", 0)
    try:
        c = tf.constant(3.0)
        config = tf.ConfigProto(device_filters=["/job:worker"])
        with tf.Session(server.target, config=config) as s:
            assert s.run(c) == 3.0
        start = time.monotonic()
        with pytest.raises(tf.errors.UnavailableError, match="job:ps"):
            with tf.Session(server.target) as s:
                s.run(c)
        assert time.monotonic() - start < 20
    finally:
        server.stop(0)


def test_a_restarted_task_aborts_the_session(graph):
    cluster = Cluster(1, 1)
    try:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0)
        with tf.device("/job:worker/task:0"):
            y = v * 2.0
        with cluster.session(graph) as s:
            s.run(v.initializer)
            assert s.run(y) == 2.0
            spec = cluster.ps[0].server_def.cluster
            cluster.ps[0].stop(0)
            cluster.ps[0] = server_lib.Server(spec, "ps", 0)
            # The channel to the old process may still be failing fast for a moment
            # (UnavailableError); once the new process answers, its new incarnation gives
            # AbortedError, never a result computed with the lost state.
            deadline = time.monotonic() + 20
            while True:
                try:
                    s.run(y)
                except tf.errors.UnavailableError:
                    assert time.monotonic() < deadline, "the restarted task never answered"
                    time.sleep(0.2)
                    continue
                except tf.errors.AbortedError:
                    break
                raise AssertionError("a step ran on a restarted task without AbortedError")
        with cluster.session(graph) as s:
            s.run(v.initializer)
            assert s.run(y) == 2.0
    finally:
        cluster.stop()


def test_malformed_requests_get_a_status_and_the_server_keeps_serving(cluster, graph):
    import grpc

    channel = grpc.insecure_channel(cluster.target[len("grpc://"):])
    for path in ("/tensorflow.MasterService/RunStep", "/tensorflow.WorkerService/RunGraph",
                 "/tensorflow.WorkerService/RecvTensor",
                 "/tensorflow.MasterService/CreateSession"):
        call = channel.unary_unary(path)
        with pytest.raises(grpc.RpcError) as info:
            call(b"\xff\xff\xff\xff garbage", timeout=10)
        assert info.value.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                                     grpc.StatusCode.ABORTED,
                                     grpc.StatusCode.NOT_FOUND), path
    from tensorflux.protos import master_pb2, worker_pb2

    run = channel.unary_unary("/tensorflow.MasterService/RunStep",
                              response_deserializer=master_pb2.RunStepResponse.FromString)
    with pytest.raises(grpc.RpcError) as info:
        run(master_pb2.RunStepRequest(session_handle="nope").SerializeToString(), timeout=10)
    assert info.value.code() == grpc.StatusCode.ABORTED
    recv = channel.unary_unary("/tensorflow.WorkerService/RecvTensor")
    with pytest.raises(grpc.RpcError) as info:
        recv(worker_pb2.RecvTensorRequest(step_id=1, rendezvous_key="a;b").SerializeToString(),
             timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    channel.close()
    c = tf.constant(1.0)
    with cluster.session(graph) as s:
        assert s.run(c) == 1.0


def test_bfloat16_transfers_apply_between_tasks(cluster, graph):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.float32([1.0, 1.0 + 2.0 ** -10, 3.14159]))
    with tf.device("/job:worker/task:1"):
        y = v * 1.0
    lossy = tf.ConfigProto(graph_options=tf.GraphOptions(enable_bfloat16_sendrecv=True))
    lossy.rpc_options.use_rpc_for_inprocess_master = True
    with tf.Session(cluster.target, graph=graph, config=lossy) as s:
        s.run(v.initializer)
        got = s.run(y)
    exact = np.float32([1.0, 1.0 + 2.0 ** -10, 3.14159])
    np.testing.assert_allclose(got, exact, rtol=1e-2)
    assert got[1] == 1.0 and got[2] != exact[2]  # rounded to bfloat16 on the way


def test_close_frees_the_sessions_state_on_every_task(cluster, graph):
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(2.0)
    with tf.device("/job:worker/task:1"):
        b = a * 3.0
    s = cluster.session(graph)
    s.run(a.initializer)
    assert s.run(b) == 6.0
    handle = s._remote.handle
    workers = [srv._worker for srv in cluster.workers + cluster.ps]
    assert all(handle in w._sessions for w in workers)
    assert sum(len(w._sessions[handle].graphs) for w in workers) >= 3
    s.close()
    assert not any(handle in w._sessions for w in workers)
    assert all(len(w.rendezvous_mgr) == 0 for w in workers)


def test_a_distributed_timeline_shows_every_task(cluster, graph):
    from tensorflux.client import timeline

    with tf.device("/job:ps/task:0"):
        a = tf.Variable(np.ones((8, 8), np.float32))
    with tf.device("/job:worker/task:1"):
        b = tf.matmul(a, a)
    meta = tf.RunMetadata()
    with cluster.session(graph) as s:
        s.run(a.initializer)
        s.run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
              run_metadata=meta)
    trace = timeline.Timeline(meta.step_stats).generate_chrome_trace_format()
    for task in ("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:1"):
        assert task in trace


def test_a_sharded_saver_writes_one_shard_per_ps_task(graph, tmp_path):
    import os

    cluster = Cluster(1, 2)
    try:
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(np.ones(3, np.float32), name="a")
        with tf.device("/job:ps/task:1"):
            tf.Variable(np.full(2, 2.0, np.float32), name="b")
        saver = tf.train.Saver(sharded=True)
        with cluster.session(graph) as s:
            s.run(tf.global_variables_initializer())
            path = saver.save(s, str(tmp_path / "model.ckpt"), global_step=1)
            s.run(a.assign([5.0, 5.0, 5.0]))
            saver.restore(s, tf.train.latest_checkpoint(str(tmp_path)))
            np.testing.assert_allclose(s.run(a), [1.0, 1.0, 1.0])
        data = [f for f in os.listdir(tmp_path) if ".data-" in f]
        assert len(data) == 2 and path.endswith("model.ckpt-1")
    finally:
        cluster.stop()


def test_tasks_end_their_steps_without_cleanup_calls(cluster, graph):
    """A step that went well leaves no rendezvous behind on any task, though the master
    sends no CleanupGraph to tensorflux tasks."""
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(np.ones(4, np.float32))
    with tf.device("/job:worker/task:1"):
        b = a * 2.0
    c = b + a
    workers = [srv._worker for srv in cluster.workers + cluster.ps]
    calls = []
    for w in workers:  # CleanupGraph (and the master's own task) end up here
        original = w.rendezvous_mgr.cleanup
        w.rendezvous_mgr.cleanup = lambda step_id, error=None, original=original: (
            calls.append(step_id), original(step_id, error))[1]
    with cluster.session(graph) as s:
        s.run(a.initializer)
        for _ in range(5):
            np.testing.assert_allclose(s.run(c), [3.0] * 4)
        deadline = time.monotonic() + 10
        while any(len(w.rendezvous_mgr) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(len(w.rendezvous_mgr) == 0 for w in workers)
    assert calls == []


@pytest.mark.parametrize("make_opt", [
    lambda: tf.train.GradientDescentOptimizer(0.1),
    lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    lambda: tf.train.AdagradOptimizer(0.1),
    lambda: tf.train.AdadeltaOptimizer(1.0),
    lambda: tf.train.RMSPropOptimizer(0.05, centered=True),
    lambda: tf.train.AdamOptimizer(0.05),
    lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01),
], ids=["sgd", "momentum", "adagrad", "adadelta", "rmsprop", "adam", "ftrl"])
def test_every_optimizer_trains_variables_on_a_ps_as_in_one_process(cluster, make_opt):
    """Dense and sparse (embedding) updates applied on the PS equal one process's."""

    def train(session_factory):
        g = tf.Graph()
        with g.as_default():
            with tf.device(tf.train.replica_device_setter(
                    cluster=tf.train.ClusterSpec({"ps": ["p:1"], "worker": ["w:1", "w:2"]}),
                    worker_device="/job:worker/task:1")):
                emb = tf.Variable(np.arange(20, dtype=np.float32).reshape(10, 2) / 10)
                w = tf.Variable(np.ones((2, 1), np.float32))
                ids = tf.constant([1, 3, 3, 7])
                loss = tf.reduce_sum(tf.square(tf.matmul(tf.nn.embedding_lookup(emb, ids),
                                                         w) - 1.0))
                step = make_opt().minimize(loss)
            with session_factory(g) as s:
                s.run(tf.global_variables_initializer())
                for _ in range(4):
                    s.run(step)
                return s.run([emb, w])

    local = train(lambda g: tf.Session(graph=g, config=tf.ConfigProto(
        allow_soft_placement=True)))
    remote = train(lambda g: cluster.session(g))
    for got, want in zip(remote, local, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
