"""Same-host shared memory for pushed tensors (tensorflux/distributed/shm.py, push.py):
values equal over shared memory and TCP, concurrent transfers, fallback, a killed task,
malformed descriptors. Servers on loopback, always stopped."""

from __future__ import annotations

import os
import random
import socket
import struct
import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.distributed import push, shm
from tensorflux.distributed.launcher import LocalCluster

from .conftest import Cluster

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.skipif(not shm.enabled(), reason="no memfd/SCM_RIGHTS here")]

PS = "/job:ps/replica:0/task:0"
WORKER = "/job:worker/replica:0/task:0"


@pytest.fixture
def pair():
    c = Cluster(1, 1)
    yield c
    c.stop()


def _transports(cluster) -> dict[str, str]:
    return {f"{w._worker.env.task_name}->{t}": kind for w in cluster.workers + cluster.ps
            for t, kind in w._worker.rendezvous_mgr.pushers.transports().items()}


def _model(dtype):
    """A [300, 200] tensor both ways (PS -> worker -> PS), a transposed (non-contiguous)
    view, and a small one that stays inline."""
    start = (np.arange(60_000) % 97).reshape(300, 200).astype(dtype)
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(start, name="v")
        small = tf.Variable(np.ones(4, dtype), name="small")
    with tf.device("/job:worker/task:0"):
        doubled = v * 2 + tf.reduce_sum(small)
        flipped = tf.transpose(v) + 1
    with tf.device("/job:ps/task:0"):
        update = v.assign_add(doubled - v)  # worker -> PS
    return start, v, small, doubled, flipped, update


DTYPES = [np.float32, np.float64, np.int64, np.int32, np.float16]


@pytest.mark.parametrize("mode", ["1", "0"], ids=["shm", "tcp"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_values_are_the_same_over_shared_memory_and_tcp(monkeypatch, graph, mode, dtype):
    monkeypatch.setenv("TENSORFLUX_PUSH_SHM", mode)
    cluster = Cluster(1, 1)
    try:
        start, v, small, doubled, flipped, update = _model(dtype)
        with cluster.session(graph) as s:
            s.run([v.initializer, small.initializer])
            got, t = s.run([doubled, flipped])
            np.testing.assert_array_equal(got, start * 2 + 4)
            np.testing.assert_array_equal(t, start.T + 1)
            s.run(update)
            np.testing.assert_array_equal(s.run(v), start + start + 4)
        kinds = set(_transports(cluster).values())
        assert kinds == ({"shm"} if mode == "1" else {"socket"})
    finally:
        cluster.stop()


def test_many_concurrent_transfers_from_several_threads(pair, graph):
    with tf.device("/job:ps/task:0"):
        base = tf.Variable(np.arange(50_000, dtype=np.float32), name="base")
        fed = tf.placeholder(tf.float32, [50_000])
        from_ps = base * fed  # PS -> worker, one per step
    with tf.device("/job:worker/task:0"):
        back = from_ps + 1.0
    with tf.device("/job:ps/task:0"):
        total = tf.reduce_sum(back * 0.0 + fed)  # worker -> PS
    errors = []
    with pair.session(graph) as s:
        s.run(base.initializer)

        def run(seed):
            rng = np.random.default_rng(seed)
            try:
                for _ in range(12):
                    x = rng.standard_normal(50_000).astype(np.float32)
                    got, t = s.run([back, total], {fed: x})
                    np.testing.assert_array_equal(got, np.arange(50_000, dtype=np.float32)
                                                  * x + 1.0)
                    assert t == pytest.approx(float(x.sum(dtype=np.float64)), abs=1e-1)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    assert not errors, [str(e) for e in errors]
    assert set(_transports(pair).values()) == {"shm"}


FALLBACKS = {
    # the consumer refuses the segment (say, its map check fails)
    "refused": lambda m: m.setattr(shm.Mapping, "__init__", _refuse),
    # the producer cannot make one (no memfd)
    "no_memfd": lambda m: m.setattr(shm, "Segment", _no_segment),
    # another kernel (another host or VM): not even tried
    "other_host": lambda m: m.setattr(push, "_decode_connect",
                                      _other_boot(push._decode_connect)),
    # the consumer does not offer it
    "not_offered": lambda m: m.setenv("TENSORFLUX_PUSH_SHM", "0"),
}


@pytest.mark.parametrize("case", list(FALLBACKS))
def test_refused_or_unavailable_shared_memory_falls_back_to_tcp(monkeypatch, graph, case):
    start, v, small, doubled, _, update = _model(np.float32)
    FALLBACKS[case](monkeypatch)
    cluster = Cluster(1, 1)
    try:
        with cluster.session(graph) as s:
            s.run([v.initializer, small.initializer])
            np.testing.assert_array_equal(s.run(doubled), start * 2 + 4)
            s.run(update)
            np.testing.assert_array_equal(s.run(v), start + start + 4)
        assert set(_transports(cluster).values()) == {"socket"}
    finally:
        cluster.stop()


def _refuse(self, fd, *args):
    os.close(fd)
    raise tf.errors.InvalidArgumentError(None, None, "refused by the test")


def _no_segment(*args, **kwargs):
    raise OSError("no memfd in this test")


def _other_boot(decode):
    def other(data):
        port, ticket, calls, limit, unix, _ = decode(data)
        return port, ticket, calls, limit, unix, b"another-kernel"
    return other


def test_a_slot_is_written_again_only_after_its_last_view_is_gone():
    segment = shm.Segment(1 << 20)
    frames = []
    releases = shm.Releases(lambda frame: frames.append(frame) or True)
    fd = os.dup(segment.fd)
    mapping = shm.Mapping(fd, segment.size, segment.nonce, releases)
    arr = np.arange(64 << 10, dtype=np.float32)  # 256 KiB
    slot, offset = segment.put(arr)
    held = mapping.array(1, [arr.size], offset, arr.nbytes, slot)[10:]  # a view of it
    while segment.put(arr * 0 - 1) is not None:  # fill the rest
        pass
    np.testing.assert_array_equal(held, arr[10:])
    del held
    releases.flush(force=True)
    assert frames and slot in shm.decode_release(frames[-1])
    segment.release(shm.decode_release(frames[-1]))
    assert segment.put(arr) is not None  # its extent is free again
    segment.close()


MALFORMED = [
    ("offset past the end", dict(offset=(1 << 20) - 64)),
    ("unaligned offset", dict(offset=65)),
    ("offset over the nonce", dict(offset=0)),
    ("size not the shape's", dict(nbytes=100)),
    ("unknown dtype", dict(dtype=99)),
    ("string dtype", dict(dtype=7)),
    ("huge shape", dict(dims=[1 << 40, 1 << 40], nbytes=4)),
    ("slot 0", dict(slot=0)),
]


@pytest.mark.parametrize("what,change", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_descriptor_out_of_range_is_invalid_argument(what, change):
    segment = shm.Segment(1 << 20)
    mapping = shm.Mapping(os.dup(segment.fd), segment.size, segment.nonce,
                          shm.Releases(lambda frame: True))
    fields = dict(dtype=1, dims=[16, 1024], offset=4096, nbytes=16 * 1024 * 4, slot=1)
    fields.update(change)
    with pytest.raises(tf.errors.InvalidArgumentError, match="descriptor"):
        mapping.array(fields["dtype"], fields["dims"], fields["offset"], fields["nbytes"],
                      fields["slot"])
    segment.close()


def test_malformed_frames_and_segments_are_invalid_argument(tmp_path):
    good = shm.encode_tensor(7, "a;b;c;d;0:0", np.zeros((16, 1024), np.float32), 3, 4096)
    assert shm.decode_tensor(good) == (7, "a;b;c;d;0:0", 1, [16, 1024], 4096, 65536, 3)
    rng = random.Random(15)
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.6 or len(data) < 2:
                data[rng.randrange(len(data))] = rng.randrange(256)
            else:
                del data[rng.randrange(1, len(data)):]
        try:
            shm.decode_tensor(bytes(data))
        except tf.errors.InvalidArgumentError:
            pass
    releases = shm.Releases(lambda frame: True)
    segment = shm.Segment(1 << 20)
    with pytest.raises(tf.errors.InvalidArgumentError, match="map check"):
        shm.Mapping(os.dup(segment.fd), segment.size, b"x" * 16, releases)
    with pytest.raises(tf.errors.InvalidArgumentError, match="bytes long"):
        shm.Mapping(os.dup(segment.fd), segment.size * 2, segment.nonce, releases)
    segment.close()
    unsealed = os.memfd_create("unsealed")
    os.ftruncate(unsealed, 1 << 20)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not sealed"):
        shm.Mapping(unsealed, 1 << 20, b"x" * 16, releases)
    path = tmp_path / "plain"
    path.write_bytes(b"\0" * (1 << 20))
    with pytest.raises(tf.errors.InvalidArgumentError, match="seal"):
        shm.Mapping(os.open(path, os.O_RDWR), 1 << 20, b"x" * 16, releases)


def test_a_malformed_descriptor_from_a_peer_ends_its_connection_not_the_task(pair, graph):
    """A producer that sends an out-of-range descriptor: its connection is dropped, the
    task goes on serving."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.arange(100_000, dtype=np.float32))
    with tf.device("/job:worker/task:0"):
        y = v * 2.0
    stub = pair.ps[0]._worker.env.stub_for_task(WORKER)
    _, ticket, _, _, unix, _ = push._decode_connect(
        stub.raw_call(push.CONNECT_METHOD, b"", 5.0))
    sock, segment = push._open_shared(unix, ticket, PS.encode())
    assert sock is not None
    try:
        frame = shm.encode_tensor(1, f"{PS}/device:CPU:0;1;{WORKER}/device:CPU:0;t;0:0",
                                  np.zeros(1 << 20, np.float32), 1, segment.size - 64)
        sock.sendall(struct.pack("<Q", len(frame)) + frame)
        sock.settimeout(10)
        try:
            assert sock.recv(1) == b""  # the consumer closed it
        except ConnectionResetError:
            pass
    finally:
        sock.close()
        segment.close()
    with pair.session(graph) as s:
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(y), np.arange(100_000, dtype=np.float32) * 2)


def _memfd_maps(pid: int) -> int:
    with open(f"/proc/{pid}/maps") as f:
        return sum("memfd:tensorflux-push" in line for line in f)


def _dev_shm() -> set:
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["1", "0"], ids=["shm", "tcp"])
def test_a_killed_task_leaves_nothing_behind(monkeypatch, mode):
    """Also: a step after the PS died between steps fails (it hung: the master's push
    stream to the dead task ended inside `Pushers._open`, under its lock)."""
    monkeypatch.setenv("TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT", "2")
    before = _dev_shm()
    env = {"TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT": "2", "TENSORFLUX_PUSH_SHM": mode}
    with LocalCluster(1, 1, env=env) as cluster:
        g = tf.Graph()
        with g.as_default():
            start, v, small, doubled, _, update = _model(np.float32)
        worker = cluster._task("worker", 0).process.pid
        with tf.Session(cluster.targets["worker"][0], graph=g) as s:
            s.run([v.initializer, small.initializer])
            for _ in range(3):
                s.run(update)
            mapped = _memfd_maps(worker)
            assert mapped >= 2 if mode == "1" else mapped == 0  # its segment toward the
            # PS, the PS's toward it
            cluster.kill("ps", 0)
            begin = time.monotonic()
            with pytest.raises((tf.errors.UnavailableError, tf.errors.AbortedError)):
                s.run(update)
            assert time.monotonic() - begin < 30
            deadline = time.monotonic() + 15
            while _memfd_maps(worker) > max(0, mapped - 2) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _memfd_maps(worker) <= max(0, mapped - 2)  # both segments unmapped
    assert _dev_shm() <= before  # nothing named in /dev/shm, ever


def test_a_hello_without_a_descriptor_is_refused(pair):
    service = pair.workers[0]._push
    stub = pair.ps[0]._worker.env.stub_for_task(WORKER)
    _, ticket, _, _, unix, _ = push._decode_connect(
        stub.raw_call(push.CONNECT_METHOD, b"", 5.0))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(unix)
        segment = shm.Segment(1 << 20)
        sock.sendall(shm.encode_hello(ticket, segment, b"x"))  # no SCM_RIGHTS
        segment.close()
        try:
            assert sock.recv(1) == b""  # closed, not admitted
        except ConnectionResetError:
            pass
    assert not service._conns


@pytest.mark.parametrize("mode", ["1", "0"], ids=["shm", "tcp"])
def test_a_step_after_its_ps_stopped_fails_instead_of_hanging(monkeypatch, graph, mode):
    """The master's push stream to a task that is gone ended inside `Pushers._open`, under
    its lock (a gRPC stream that fails at once): the step hung."""
    monkeypatch.setenv("TENSORFLUX_RPC_UNAVAILABLE_TIMEOUT", "1")
    monkeypatch.setenv("TENSORFLUX_PUSH_SHM", mode)
    start, v, small, doubled, _, update = _model(np.float32)
    cluster = Cluster(1, 1)
    try:
        with cluster.session(graph) as s:
            s.run([v.initializer, small.initializer])
            s.run(update)
            cluster.ps[0].stop(0)
            begin = time.monotonic()
            with pytest.raises((tf.errors.UnavailableError, tf.errors.AbortedError)):
                s.run(update)
            assert time.monotonic() - begin < 20
    finally:
        cluster.stop()


@pytest.mark.parametrize("mode", ["1", "0"], ids=["shm", "tcp"])
def test_a_clients_large_feeds_cross_in_shared_memory(monkeypatch, graph, mode):
    """A client's RunStep on a same-host master: feeds of 64 KiB and more go in the
    connection's segment (the call frame names them), the rest in the request; the values
    are the same either way, over many steps (slots handed back and reused)."""
    monkeypatch.setenv("TENSORFLUX_PUSH_SHM", mode)
    shared = []
    original = push._SocketStream.share

    def share(self, call_id, pairs):
        result = original(self, call_id, pairs)
        shared.append(len(result[0]))
        return result

    monkeypatch.setattr(push._SocketStream, "share", share)
    c = Cluster(1, 1)
    try:
        with tf.device("/job:worker/task:0"):
            big = tf.placeholder(tf.float32, [None])
            small = tf.placeholder(tf.float32, [3])
            out = tf.reduce_sum(big * 2.0) + tf.reduce_sum(small)
            echo = tf.identity(big)
        with c.session(graph) as s:
            rng = np.random.default_rng(0)
            for n in (100_000, 20_000, 300_000) * 8:
                x = rng.standard_normal(n).astype(np.float32)
                got, back = s.run([out, echo], {big: x, small: np.ones(3, np.float32)})
                assert got == pytest.approx(float(x.sum(dtype=np.float64)) * 2 + 3,
                                            abs=1e-1)
                np.testing.assert_array_equal(back, x)
    finally:
        c.stop()
    assert shared and max(shared) == (1 if mode == "1" else 0), shared


def test_a_malformed_call_descriptor_ends_its_connection_not_the_task(pair, graph):
    """A call frame naming a feed out of the segment: the connection is dropped, no call
    runs, the master goes on serving."""
    stub = pair.ps[0]._worker.env.stub_for_task(WORKER)
    _, ticket, calls, _, unix, _ = push._decode_connect(
        stub.raw_call(push.CONNECT_METHOD, b"", 5.0))
    assert calls & push.SHARED_TENSORS
    sock, segment = push._open_shared(unix, ticket, b"")
    assert sock is not None
    try:
        descriptor = shm.encode_tensor(1, "x:0", np.zeros(1 << 20, np.float32), 1,
                                       segment.size - 64)[1:]
        request = b"\x0a\x01h"  # RunStepRequest {session_handle: "h"}
        inner = (b"\x08\x64\x18\x01\x20" + bytes((push.RUN_STEP,)) + b"\x2a" + descriptor
                 + b"\x12" + bytes((len(request),)) + request)
        frame = b"\x12" + bytes((len(inner),)) + inner
        sock.sendall(struct.pack("<Q", len(frame)) + frame)
        sock.settimeout(10)
        try:
            assert sock.recv(1) == b""  # closed, no reply
        except ConnectionResetError:
            pass
    finally:
        sock.close()
        segment.close()
    with tf.device("/job:worker/task:0"):
        y = tf.constant(2.0) * 3.0
    with pair.session(graph) as s:
        assert s.run(y) == 6.0


def test_an_array_allocated_in_the_segment_is_pushed_without_a_copy():
    """Segment.alloc: an output produced in place. Its put sends its own slot (no copy,
    the first time only); its extent is free again only once the consumer has handed it
    back and the producer's last view is gone, in either order; one never put is free when
    its last view goes; small or unshareable arrays and a full segment: None."""
    segment = shm.Segment(1 << 20)
    frames = []
    releases = shm.Releases(lambda frame: frames.append(frame) or True)
    mapping = shm.Mapping(os.dup(segment.fd), segment.size, segment.nonce, releases)
    f32 = np.dtype(np.float32)

    def hand_back():
        releases.flush(force=True)
        segment.release(shm.decode_release(frames[-1]))

    for consumer_first in (True, False):
        out = segment.alloc((256, 256), f32)  # 256 KiB
        out[...] = np.arange(out.size, dtype=np.float32).reshape(out.shape)
        slot, offset = segment.put(out)
        view = mapping.array(1, [256, 256], offset, out.nbytes, slot)
        np.testing.assert_array_equal(view, out)
        assert not out.flags.writeable  # pushed: the producer no longer writes into it
        view_of_out = np.frombuffer(segment._mm, np.float32, out.size, offset)
        view_of_out[0] = -1.0  # the very same memory: no copy was made
        assert view[0, 0] == -1.0
        del view_of_out
        again = segment.put(out)  # a second push of it is a copy, in another extent
        assert again is not None and again[0] != slot
        segment.release([again[0]])
        if consumer_first:
            del view
            hand_back()
            assert segment.in_use() == 1  # ours still views it
            del out
        else:
            del out
            assert segment.in_use() == 1  # the consumer's still does
            del view
            hand_back()
        assert segment.alloc((1, 4), f32) is None  # too small to share: np.empty
        assert segment.in_use() == 0
    never = segment.alloc((256, 256), f32)
    assert segment.in_use() == 1
    del never
    assert segment.alloc((1 << 20,), np.dtype(np.uint8)) is None  # no room
    assert segment.in_use() == 0
    assert segment.alloc((256, 256), np.dtype(object)) is None
    assert segment.alloc((256, 256), np.dtype(">f4")) is None
    segment.close()


def _product_to_ps(also_fetched: bool):
    """A [300, 200] product made on the worker and pushed to a variable on the PS (the
    shape of a gradient and its update); `also_fetched`: the client fetches it too."""
    rng = np.random.default_rng(7)
    a0 = rng.standard_normal((300, 40)).astype(np.float32)
    b0 = rng.standard_normal((40, 200)).astype(np.float32)
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.zeros((300, 200), np.float32), name="acc")
    with tf.device("/job:worker/task:0"):
        a = tf.constant(a0)
        b = tf.placeholder(tf.float32, [40, 200])
        product = tf.matmul(a, b)
    with tf.device("/job:ps/task:0"):
        update = v.assign_add(product)
    fetches = [update.op, product] if also_fetched else [update.op]
    return a0, b0, b, v, fetches


@pytest.mark.parametrize("mode", ["1", "0"], ids=["shm", "tcp"])
@pytest.mark.parametrize("also_fetched", [False, True], ids=["pushed", "pushed+fetched"])
def test_a_product_pushed_to_a_ps_is_made_in_the_segment(monkeypatch, graph, mode,
                                                         also_fetched):
    """A MatMul whose only consumer is a pushed _Send writes its output in the push
    connection's segment (no copy on push); one that is also fetched does not. The
    values are the same either way, and over many steps the extents are reused."""
    monkeypatch.setenv("TENSORFLUX_PUSH_SHM", mode)
    made, segments = [], set()
    original = shm.Segment.alloc

    def alloc(self, shape, dtype):
        out = original(self, shape, dtype)
        if out is not None:
            made.append(out.shape)
            segments.add(self)
        return out

    monkeypatch.setattr(shm.Segment, "alloc", alloc)
    c = Cluster(1, 1)
    try:
        a0, b0, b, v, fetches = _product_to_ps(also_fetched)
        with c.session(graph) as s:
            s.run(v.initializer)
            total = np.zeros((300, 200), np.float64)
            for step in range(40):
                feed = b0 * (step % 5 - 2)
                got = s.run(fetches, {b: feed})
                expected = a0.astype(np.float64) @ feed.astype(np.float64)
                total += expected
                if also_fetched:
                    np.testing.assert_allclose(got[1], expected, rtol=1e-4, atol=1e-3)
            np.testing.assert_allclose(s.run(v), total, rtol=1e-4, atol=1e-2)
    finally:
        c.stop()
    if mode == "1" and not also_fetched:
        assert len(made) >= 38 and set(made) == {(300, 200)}
        assert all(seg.in_use() < 40 for seg in segments)  # handed back, reused
    else:
        assert made == []


def _adam_model(rng, ps, worker):
    """A [300, 200] weight and a bias on `ps`, the model on `worker`, Adam (devices None:
    an in-process session's)."""
    w0 = rng.standard_normal((300, 200)).astype(np.float32) * 0.1
    with tf.device(ps):
        w = tf.Variable(w0, name="w")
        bias = tf.Variable(np.zeros(200, np.float32), name="bias")
    with tf.device(worker):
        x = tf.placeholder(tf.float32, [64, 300])
        loss = tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(x, w) + bias) - 1.0))
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
    with tf.device(ps):
        bump = w.assign_add(tf.ones_like(w))
    return x, w, bias, loss, train, bump


@pytest.mark.parametrize("mode", ["1", "0"], ids=["shm", "tcp"])
def test_training_with_gradients_made_in_the_segment_matches_in_process(monkeypatch, mode):
    """Adam on a PS with the weight's gradient made in the worker's push segment (a MatMul
    pushed without a copy): the losses, an assign in between and the final values match an
    in-process session bit for bit."""
    monkeypatch.setenv("TENSORFLUX_PUSH_SHM", mode)
    made = []
    original = shm.Segment.alloc

    def alloc(self, shape, dtype):
        out = original(self, shape, dtype)
        if out is not None:
            made.append(tuple(shape))
        return out

    monkeypatch.setattr(shm.Segment, "alloc", alloc)
    rng = np.random.default_rng(3)
    feeds = [rng.standard_normal((64, 300)).astype(np.float32) for _ in range(6)]
    results = []
    c = Cluster(1, 1)
    try:
        for target in (None, c.target):
            g = tf.Graph()
            with g.as_default():
                tf.set_random_seed(0)
                x, w, bias, loss, train, bump = _adam_model(
                    np.random.default_rng(3), target and "/job:ps/task:0",
                    target and "/job:worker/task:0")
                init = tf.global_variables_initializer()
            with tf.Session(target or "", graph=g) as s:
                s.run(init)
                got = []
                for step in range(12):
                    got.append(s.run([loss, train], {x: feeds[step % 6]})[0])
                    if step == 5:
                        s.run(bump)
                got += s.run([w, bias])
                results.append(got)
    finally:
        c.stop()
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)
    if mode == "1":  # each step's gradient of the weight
        assert made.count((300, 200)) >= 12, made
    else:
        assert made == []
