"""A step's consecutive pushes written together (static_executor `_held_sends`, push.py
`holding`), and the per-key framing that pushed tensors reuse (wire.py, shm.py)."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.distributed import push, shm, wire
from tensorflux.runtime import static_executor

from .conftest import Cluster

pytestmark = pytest.mark.timeout(120)

PS = "/job:ps/task:0"
WORKER = "/job:worker/task:0"


def _frames(parts) -> int:
    """The number of frames in one write (8-byte little-endian length, then the body)."""
    data, pos, count = b"".join(bytes(p) for p in parts), 0, 0
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + size
        count += 1
    assert pos == len(data)
    return count


@pytest.fixture
def writes(monkeypatch):
    """Frames per write on push connections, by the task written to."""
    seen: list[tuple[str, int]] = []
    original = push._send_all

    def send_all(sock, parts):
        seen.append((sock.getpeername(), _frames(parts)))
        return original(sock, parts)

    monkeypatch.setattr(push, "_send_all", send_all)
    return seen


def _variables_to_worker(n: int):
    """`n` variables on the PS (two large enough for shared memory), summed on the worker."""
    shapes = [(300, 200), (40,), (200, 100), (7,)][:n]
    starts = [np.full(s, k + 1, np.float32) for k, s in enumerate(shapes)]
    with tf.device(PS):
        vs = [tf.Variable(v, name=f"v{k}") for k, v in enumerate(starts)]
    with tf.device(WORKER):
        total = tf.add_n([tf.reduce_sum(v) for v in vs])
    return starts, vs, total


@pytest.mark.parametrize("mode", ["1", "0"], ids=["shm", "tcp"])
def test_a_ps_pushes_the_variables_it_reads_in_one_write(monkeypatch, graph, writes, mode):
    monkeypatch.setenv("TENSORFLUX_PUSH_SHM", mode)
    c = Cluster(1, 1)
    try:
        starts, vs, total = _variables_to_worker(4)
        with c.session(graph) as s:
            s.run(tf.variables_initializer(vs))
            writes.clear()
            for _ in range(5):
                assert s.run(total) == pytest.approx(sum(float(v.sum()) for v in starts))
    finally:
        c.stop()
    # Each step: the RunGraph call to the PS, its 4 pushes in one write, its reply.
    assert [n for _, n in writes].count(4) == 5, writes
    assert max(n for _, n in writes) == 4


def test_held_pushes_are_flushed_before_the_step_waits():
    """PS -> worker -> PS in one step: the PS's push is held, and written before its
    _Recv of the worker's answer (else the step would wait forever)."""
    c = Cluster(1, 1)
    try:
        g = tf.Graph()
        with g.as_default():
            with tf.device(PS):
                v = tf.Variable(np.arange(6, dtype=np.float32), name="v")
                w = tf.Variable(np.ones(6, np.float32), name="w")
                read_v, read_w = v.read_value(), w.read_value()
            with tf.device(WORKER):
                doubled = read_v * 2 + read_w
            with tf.device(PS):
                back = doubled + 1
        options = tf.RunOptions(timeout_in_ms=20_000)
        with c.session(g) as s:
            s.run([v.initializer, w.initializer])
            for _ in range(3):
                np.testing.assert_array_equal(s.run(back, options=options),
                                              np.arange(6) * 2 + 2)
    finally:
        c.stop()


def test_a_step_failing_while_pushes_are_held_fails_as_before_and_frees_them(graph):
    """A variable read after a held push fails (uninitialized): the step fails with the
    read's error, the held push still goes out (its shared memory comes back), and the
    next steps run."""
    c = Cluster(1, 1)
    try:
        with tf.device(PS):
            big = tf.Variable(np.ones((300, 200), np.float32), name="big")
            late = tf.Variable(np.ones(3, np.float32), name="late")
        with tf.device(WORKER):
            total = tf.reduce_sum(big) + tf.reduce_sum(late)
        with c.session(graph) as s:
            s.run(big.initializer)
            for _ in range(3):
                with pytest.raises(tf.errors.FailedPreconditionError, match="late"):
                    s.run(total)
            s.run(late.initializer)
            for _ in range(20):
                assert s.run(total) == 60_003.0
        segments = [st.shm for w in c.workers + c.ps
                    for st in w._worker.rendezvous_mgr.pushers._streams.values()
                    if getattr(st, "shm", None) is not None]
    finally:
        c.stop()
    assert all(seg.in_use() < 8 for seg in segments)


class _Node:
    """Just what `_held_sends` and `_with_flushes` read of a step-graph node."""

    def __init__(self, op: str, pushed: bool = False):
        self.op = op
        self.attrs = {static_executor._PUSH_ATTR: True} if pushed else {}


class _Statement:
    def __init__(self, node):
        self.node, self.text = node, node.op


@pytest.mark.parametrize("mode,ops,want", [
    # a PS reading and pushing its variables, then waiting for the gradients
    ("reads", "VarHandleOp ReadVariableOp _Send* ReadVariableOp _Send* _Recv ResourceApplyAdam",
     "VarHandleOp ReadVariableOp _Send* ReadVariableOp _Send* | _Recv ResourceApplyAdam"),
    ("stateless",
     "VarHandleOp ReadVariableOp _Send* ReadVariableOp _Send* _Recv ResourceApplyAdam",
     "VarHandleOp ReadVariableOp _Send* ReadVariableOp _Send* | _Recv ResourceApplyAdam"),
    # a worker's gradients pushed through its backward pass: held across stateless work
    ("reads", "MatMul _Send* MatMul _Send* Identity _Send*",
     "MatMul _Send* MatMul _Send* Identity _Send* |"),
    ("stateless", "MatMul _Send* MatMul _Send* Identity _Send*",
     "MatMul _Send* MatMul _Send* Identity _Send* |"),
    ("stateless", "MatMul _Send* ReluGrad MatMul _Send* AssignVariableOp MatMul _Send*",
     "MatMul _Send* ReluGrad MatMul _Send* | AssignVariableOp MatMul _Send*"),
    ("stateless", "_Send* Mul _HostRecv", "_Send* Mul | _HostRecv"),
    # a _Send that is not pushed holds nothing
    ("stateless", "_Send ReadVariableOp _Recv", "_Send ReadVariableOp _Recv"),
])
def test_where_held_pushes_are_flushed(mode, ops, want):
    nodes = [_Node(op.rstrip("*"), op.endswith("*")) for op in ops.split()]
    runs = static_executor._runs_while_held(mode)
    held = static_executor._held_sends(nodes, runs)
    out = static_executor._with_flushes([_Statement(n) for n in nodes], held, runs)
    got = " ".join("|" if st.text == "_flush(ctx)" else
                   st.node.op + ("*" if st.node.attrs else "") for st in out)
    assert got == want


@pytest.mark.parametrize("mode", ["stateless", "reads", "0"])
def test_training_with_held_pushes_matches_in_process(monkeypatch, mode):
    """Adam on a PS (variables read and pushed together; gradients held through the
    worker's backward pass by default): the losses and final values are an in-process
    session's, bit for bit, whichever holding."""
    monkeypatch.setenv("TENSORFLUX_PUSH_HOLD", mode)
    rng = np.random.default_rng(5)
    feeds = [rng.standard_normal((32, 50)).astype(np.float32) for _ in range(4)]
    results = []
    c = Cluster(1, 1)
    try:
        for target in (None, c.target):
            g = tf.Graph()
            with g.as_default():
                with tf.device(target and PS):
                    w1 = tf.Variable(np.random.default_rng(1).standard_normal(
                        (50, 300)).astype(np.float32) * 0.1, name="w1")
                    w2 = tf.Variable(np.full((300, 4), 0.01, np.float32), name="w2")
                with tf.device(target and WORKER):
                    x = tf.placeholder(tf.float32, [32, 50])
                    loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1)),
                                                              w2) - 1.0))
                    train = tf.train.AdamOptimizer(0.01).minimize(loss)
                init = tf.global_variables_initializer()
            with tf.Session(target or "", graph=g) as s:
                s.run(init)
                got = [s.run([loss, train], {x: feeds[k % 4]})[0] for k in range(8)]
                results.append(got + s.run([w1, w2]))
    finally:
        c.stop()
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


KEY = "/job:ps/replica:0/task:0/device:CPU:0;1;/job:worker/replica:0/task:0/device:CPU:0;x;0:0"


@pytest.mark.parametrize("values", [
    [np.arange(12, dtype=np.float32).reshape(3, 4), np.arange(12, dtype=np.float32) + 1,
     np.arange(12, dtype=np.float64).reshape(4, 3), np.array(2.5, np.float32),
     np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],
     np.arange(4, dtype=np.float32).astype(">f4"), np.zeros((0, 4), np.float32),
     np.arange(12, dtype=np.float32).reshape(3, 4) * 3,
     np.array([b"ab", b"", b"\x00\xff"], dtype=object), np.array([True, False]),
     np.array(b"model.ckpt", dtype=object), np.array(b"model.ckpt-1", dtype=object),
     np.array([b"ab", b"", b"\x00\xff"], dtype=object)],
], ids=["one-key"])
def test_pushed_tensors_under_one_key_of_changing_layout_round_trip(values):
    """The framing kept per key is used only for the same dtype and shape; the decoder's
    only for the same bytes up to the content."""
    for step, value in enumerate(values * 2):
        for sid in (step + 1, (1 << 56) + step):
            data = b"".join(bytes(p) for p in wire.pushed_tensor_parts(sid, KEY, value, False))
            assert data == wire.encode_pushed_tensor(sid, KEY, value, False)
            ((got_sid, key, got, dead, pull),) = wire.decode_pushed_tensors(data)
            assert (got_sid, key, dead, pull) == (sid, KEY, False, False)
            assert got.shape == value.shape and got.dtype == value.dtype.newbyteorder("=")
            assert list(got.reshape(-1)) == list(value.reshape(-1))


def test_shared_memory_frames_under_one_key_of_changing_layout_round_trip():
    rng = random.Random(6)
    arrays = [np.zeros((16, 1024), np.float32), np.zeros((1024, 16), np.float32),
              np.zeros((16, 1024), np.float64), np.zeros(16384, np.int32)]
    for _ in range(50):
        arr = rng.choice(arrays)
        sid, slot, offset = rng.getrandbits(56), rng.randrange(1, 1 << 20), \
            rng.randrange(0, 1 << 26, 64)
        frame = shm.encode_tensor(sid, KEY, arr, slot, offset)
        assert shm.decode_tensor(frame) == (sid, KEY, tf.as_dtype(arr.dtype).as_datatype_enum,
                                            list(arr.shape), offset, arr.nbytes, slot)


def test_a_known_keys_frame_that_is_changed_is_parsed_or_refused():
    """With the key's layout kept, a frame changed anywhere decodes as the full parse
    does (the same fields) or is InvalidArgumentError."""
    arr = np.zeros((16, 1024), np.float32)
    good = shm.encode_tensor(7, KEY, arr, 3, 4096)
    rng = random.Random(15)
    for _ in range(400):
        shm.decode_tensor(good)  # the layout is known
        data = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            fast = shm.decode_tensor(bytes(data))
        except tf.errors.InvalidArgumentError:
            continue
        shm._layouts.clear()
        assert shm.decode_tensor(bytes(data)) == fast
