"""More long NumPy kernels stop at their step's deadline or on Session.close (issue 21).

Families cut into blocks that check the step between them (kernels/interrupt.py):
Conv2DBackpropInput / Conv2DBackpropFilter of one large image (blocks of output rows),
TopKV2 (blocks of rows), Cumsum/Cumprod (blocks of axis 0), the segment reductions and
ScatterNd (an unbuffered ufunc.at in ordered blocks), Gather/GatherV2 (blocks of the
indices). Each family has a value test (blocks give the values of one call: bit for bit,
except the convolution gradients, which sum in another order) and a stop test: the
kernel called with a step that is already past its deadline, or whose Session is closed,
raises at its first block boundary. A few families also run a real step with
`timeout_in_ms` on inputs that take seconds without the blocks (timed in the report).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import interrupt, registry

# A stopped step ends within BOUND_S of wall time, or, on a loaded machine where the wall
# clock stretches, having used less than BOUND_S of the process's CPU time (a kernel that
# did not stop would burn seconds of CPU either way).
BOUND_S = 2.0
JOIN_S = 30.0  # how long a test waits for a thread before calling it hung


def _quick(start_wall: float, start_cpu: float) -> bool:
    wall = time.monotonic() - start_wall
    cpu = time.process_time() - start_cpu
    return wall < BOUND_S or cpu < BOUND_S


def _close_while_running(g, y, started):
    """Runs `y` of `g` on a thread; once `started` is set (the step's input is being made,
    so the kernel runs next), closes the session from this thread: the step must end
    cancelled, quickly."""
    s = tf.Session(graph=g)
    outcome = []

    def run():
        try:
            s.run(y)
            outcome.append("finished")
        except tf.errors.CancelledError:
            outcome.append("cancelled")
        except BaseException as e:  # noqa: BLE001 - reported below
            outcome.append(e)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    assert started.wait(10)
    time.sleep(0.1)  # the kernel is running (or about to: it stops at its first block)
    start, start_cpu = time.monotonic(), time.process_time()
    s.close()
    th.join(JOIN_S)
    assert not th.is_alive(), "the step kept running after close"
    assert _quick(start, start_cpu)
    assert outcome == ["cancelled"]
pytestmark = pytest.mark.timeout(60)


class _Late:
    """A step whose deadline has passed."""

    deadline = time.monotonic() - 1
    cancellation = session = None


class _Closed:
    """A step whose Session was closed."""

    deadline = cancellation = None
    session = type("S", (), {"_closed": True})()


def _node(op, **attrs):
    return type("N", (), {"attrs": attrs, "op": op, "name": op})()


def _compute(op, types, **attrs):
    kdef = registry.find_kernel(op, "CPU", types)
    return kdef.factory(_node(op, **attrs))


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(interrupt, "SPAN_ELEMENTS", 64)


def _run(fetch, feed=None):
    with tf.Session(graph=fetch.graph if not isinstance(fetch, list) else fetch[0].graph) as s:
        return s.run(fetch, feed)


# ---- values: blocks give the values of one call -------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_cumprod_blocks_are_bit_identical(small_blocks, axis, exclusive, reverse):
    x = np.random.default_rng(axis).uniform(0.5, 1.5, (37, 5, 4)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        ys = [tf.cumsum(x, axis, exclusive=exclusive, reverse=reverse),
              tf.cumprod(x, axis, exclusive=exclusive, reverse=reverse)]
        got = _run(ys)
    for y, ufunc, ident in zip(got, (np.add, np.multiply), (0, 1), strict=True):
        w = np.flip(x, axis) if reverse else x
        want = ufunc.accumulate(w, axis=axis, dtype=np.float32)
        if exclusive:
            want = np.roll(want, 1, axis=axis)
            idx = [slice(None)] * 3
            idx[axis] = 0
            want[tuple(idx)] = ident
        if reverse:
            want = np.flip(want, axis)
        np.testing.assert_array_equal(y, want)


def test_segment_ops_and_scatter_nd_blocks_are_bit_identical(small_blocks):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((500, 3)).astype(np.float32)
    sorted_ids = np.sort(rng.integers(0, 40, 500)).astype(np.int32)
    ids = rng.integers(-1, 40, 500).astype(np.int32)
    g = tf.Graph()
    with g.as_default():
        ys = [tf.math.segment_sum(data, sorted_ids), tf.math.segment_max(data, sorted_ids),
              tf.math.unsorted_segment_sum(data, ids, 40),
              tf.math.unsorted_segment_prod(data, ids, 40),
              tf.scatter_nd(ids[:, None] % 40, data, [40, 3]),
              tf.tensor_scatter_add(tf.zeros([40, 3]), ids[:, None] % 40, data),
              tf.tensor_scatter_nd_max(tf.zeros([40, 3]), ids[:, None] % 40, data)]
        got = _run(ys)
    with tf.Graph().as_default():
        rows = tf.constant(data[:40])
        dense = tf.gradients(tf.sparse.segment_sum(rows, np.arange(500) % 40, sorted_ids),
                             rows)[0]
        np.testing.assert_array_equal(_run(tf.convert_to_tensor(dense)),
                                      np.bincount(np.arange(500) % 40, minlength=40)[:, None]
                                      * np.ones((40, 3), np.float32))
    for y, ufunc in zip(got[5:], (np.add, np.maximum), strict=True):
        want = np.zeros((40, 3), np.float32)
        ufunc.at(want, ids % 40, data)
        np.testing.assert_array_equal(y, want)
    got = got[:5]
    keep = ids >= 0
    for y, (ufunc, ident, idx, rows) in zip(got, [
            (np.add, 0, sorted_ids, data), (np.maximum, -np.inf, sorted_ids, data),
            (np.add, 0, ids[keep], data[keep]), (np.multiply, 1, ids[keep], data[keep]),
            (np.add, 0, ids % 40, data)], strict=True):
        want = np.full((40, 3), ident, np.float32)
        ufunc.at(want, idx, rows)
        if ufunc is np.maximum:
            want[np.bincount(idx, minlength=40) == 0] = 0
        np.testing.assert_array_equal(y, want)


def test_gather_and_top_k_blocks_are_bit_identical(small_blocks):
    rng = np.random.default_rng(4)
    p = rng.standard_normal((30, 7, 5)).astype(np.float32)
    idx = rng.integers(0, 7, (4, 6)).astype(np.int32)
    x = rng.integers(0, 5, (40, 50)).astype(np.float32)  # many ties: TF's order
    g = tf.Graph()
    with g.as_default():
        ys = [tf.gather(p, idx % 30), tf.gather(p, idx, axis=1), tf.nn.top_k(x, 7)[1],
              tf.nn.top_k(x, 50)[0]]
        parts = tf.dynamic_partition(x.reshape(-1), x.reshape(-1).astype(np.int32), 5)
        got = _run(ys)
        for k, part in enumerate(_run(parts)):
            np.testing.assert_array_equal(part, x.reshape(-1)[x.reshape(-1) == k])
    np.testing.assert_array_equal(got[0], np.take(p, idx % 30, axis=0))
    np.testing.assert_array_equal(got[1], np.take(p, idx, axis=1))
    order = np.argsort(-x, axis=1, kind="stable")
    np.testing.assert_array_equal(got[2], order[:, :7])
    np.testing.assert_array_equal(got[3], np.take_along_axis(x, order, 1))


@pytest.mark.parametrize("values", [
    np.arange(3000) % 17 * 0.5,
    np.where(np.arange(2999) % 11 == 0, np.nan, np.arange(2999) % 5),
    np.array([0.0, -0.0, 2.0, -1.0] * 700),
    np.random.default_rng(7).integers(-9, 9, 3001)])
def test_sort_and_unique_of_one_long_row_in_blocks(monkeypatch, values):
    def run():
        g = tf.Graph()
        with g.as_default():
            u = tf.unique(values)
            return _run([u[0], u[1], *tf.nn.top_k(values, values.size),
                         tf.sort(values), tf.argsort(values, stable=True)])

    want = run()
    monkeypatch.setattr(interrupt, "SPAN_ELEMENTS", 100)  # sorted blocks, merged
    got = run()
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("stride,padding,channels", [(2, "SAME", 3), (3, "VALID", 20),
                                                     (1, "SAME", 3)])
def test_conv_gradients_in_row_blocks(monkeypatch, stride, padding, channels):
    from tensorflux.kernels.cpu import conv_ops

    rng = np.random.default_rng(stride)
    x = rng.standard_normal((2, 19, 17, channels))
    w = rng.standard_normal((3, 2, channels, 4))
    s = [1, stride, stride, 1]

    def grads():
        g = tf.Graph()
        with g.as_default():
            y = tf.nn.conv2d(x, w, s, padding)
            dy = np.random.default_rng(9).standard_normal(y.shape.as_list())
            return _run([tf.nn.conv2d_backprop_input(x.shape, w, dy, s, padding),
                         tf.nn.conv2d_backprop_filter(x, w.shape, dy, s, padding)])

    want = grads()
    monkeypatch.setattr(conv_ops, "_IMAGE_ROWS_BYTES", 1000)  # every image in row blocks
    monkeypatch.setattr(conv_ops, "_CHUNK_BYTES", 3000)
    got = grads()
    for a, b in zip(got, want, strict=True):  # the same sums, in another order
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ---- every blocked kernel checks its step between blocks ----------------------------------


_F32 = {"T": tf.float32}
_STOPPED = [
    ("Cumsum", {"T": tf.float32, "Tidx": tf.int32}, {"exclusive": False, "reverse": False},
     lambda: (np.ones((300, 4), np.float32), np.int32(0))),
    ("Cumprod", {"T": tf.float32, "Tidx": tf.int32}, {"exclusive": True, "reverse": True},
     lambda: (np.ones((300, 4), np.float32), np.int32(1))),
    ("SegmentSum", {"T": tf.float32, "Tindices": tf.int32}, {},
     lambda: (np.ones((300, 4), np.float32), np.arange(300, dtype=np.int32))),
    ("UnsortedSegmentSum", {"T": tf.float32, "Tindices": tf.int32,
                            "Tnumsegments": tf.int32}, {},
     lambda: (np.ones((300, 4), np.float32), np.zeros(300, np.int32), np.int32(1))),
    ("UnsortedSegmentMax", {"T": tf.float32, "Tindices": tf.int32,
                            "Tnumsegments": tf.int32}, {},
     lambda: (np.ones((300, 4), np.float32), np.zeros(300, np.int32), np.int32(1))),
    ("ScatterNd", {"T": tf.float32, "Tindices": tf.int32}, {},
     lambda: (np.zeros((300, 1), np.int32), np.ones((300, 4), np.float32),
              np.array([2, 4], np.int32))),
    ("GatherV2", {"Tparams": tf.float32, "Tindices": tf.int32, "Taxis": tf.int32},
     {"batch_dims": 0},
     lambda: (np.ones((3, 4), np.float32), np.zeros(300, np.int32), np.int32(0))),
    ("TopKV2", {"T": tf.float32}, {"sorted": True, "index_type": tf.int32},
     lambda: (np.ones((300, 4), np.float32), np.int32(2))),
    ("TopKV2", {"T": tf.float32}, {"sorted": True, "index_type": tf.int32},  # one long row
     lambda: (np.ones((1, 300), np.float32), np.int32(300))),
    ("TensorScatterAdd", {"T": tf.float32, "Tindices": tf.int32}, {},
     lambda: (np.zeros((2, 4), np.float32), np.zeros((300, 1), np.int32),
              np.ones((300, 4), np.float32))),
    ("DynamicPartition", {"T": tf.float32}, {"num_partitions": 2},
     lambda: (np.ones((300, 4), np.float32), np.arange(300, dtype=np.int32) % 2)),
    ("SparseSegmentSumGrad", {"T": tf.float32, "Tidx": tf.int32, "Tsegmentids": tf.int32},
     {}, lambda: (np.ones((1, 4), np.float32), np.zeros(300, np.int32),
                  np.zeros(300, np.int32), np.int32(2))),
    ("Unique", {"T": tf.float32, "out_idx": tf.int32}, {"out_idx": tf.int32},
     lambda: (np.arange(300, dtype=np.float32) % 7,)),
]


@pytest.mark.parametrize("op,types,attrs,inputs", _STOPPED,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(_STOPPED)])
@pytest.mark.parametrize("step,error", [(_Late, tf.errors.DeadlineExceededError),
                                        (_Closed, tf.errors.CancelledError)])
def test_blocked_kernel_checks_its_step(small_blocks, op, types, attrs, inputs, step, error):
    compute = _compute(op, types, **attrs)
    with pytest.raises(error):
        compute(step(), *inputs())
    compute(None, *inputs())  # outside a step: runs to the end


# ---- real steps on large inputs -----------------------------------------------------------


def _expect_deadline(fetch, feed, name):
    with tf.Session(graph=fetch.graph) as s:
        start, start_cpu = time.monotonic(), time.process_time()
        with pytest.raises(tf.errors.DeadlineExceededError) as info:
            s.run(fetch, feed, options=tf.RunOptions(timeout_in_ms=100))
        elapsed = time.monotonic() - start
        assert _quick(start, start_cpu), f"took {elapsed:.2f}s"
        assert name in str(info.value)
        assert s.run(tf.constant(2.0) * 3.0) == 6.0


def test_conv_backprop_input_of_one_large_image_stops():
    # Stride 2, one 1536x1536 image (products and scatter): ~4.5 s in one block.
    g = tf.Graph()
    with g.as_default():
        dy = tf.placeholder(tf.float32, [1, None, None, 64])
        dx = tf.nn.conv2d_backprop_input([1, 1536, 1536, 16], tf.ones([3, 3, 16, 64]), dy,
                                         [1, 2, 2, 1], "SAME", name="big_dx")
    _expect_deadline(dx, {dy: np.ones((1, 768, 768, 64), np.float32)}, "big_dx")


def test_conv_backprop_filter_of_one_large_image_stops():
    # Stride 2 (no frequency-domain path), one 1536x1536 image: ~4 s in one block.
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [1, None, None, 16])
        dy = tf.placeholder(tf.float32, [1, None, None, 64])
        dw = tf.nn.conv2d_backprop_filter(x, [3, 3, 16, 64], dy, [1, 2, 2, 1], "SAME",
                                          name="big_dw")
    _expect_deadline(dw, {x: np.ones((1, 1536, 1536, 16), np.float32),
                          dy: np.ones((1, 768, 768, 64), np.float32)}, "big_dw")


def test_top_k_of_many_long_rows_stops():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None])
        y = tf.nn.top_k(x, 200_000, name="big_top_k")[0]  # a sort of every row
    rows = np.random.default_rng(0).standard_normal((60, 200_000)).astype(np.float32)
    _expect_deadline(y, {x: rows}, "big_top_k")  # ~8 s in one call


def test_sort_of_one_long_row_stops():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.sort(x, direction="DESCENDING", name="long_sort")
    row = np.random.default_rng(1).standard_normal(8_000_000).astype(np.float32)
    _expect_deadline(y, {x: row}, "long_sort")  # ~4 s in one stable argsort


def test_session_close_stops_a_running_segment_sum():
    g = tf.Graph()
    started = threading.Event()
    n = 1_500_000

    def ids():
        started.set()
        return np.arange(n, dtype=np.int32) // 3

    with g.as_default():
        data = tf.ones([n, 32])
        seg = tf.py_func(ids, [], tf.int32, stateful=True)
        seg.set_shape([n])
        y = tf.math.segment_sum(data, seg)  # ~3 s in one np.add.at
    _close_while_running(g, y, started)


def test_session_close_during_a_c_loop_releases_its_stop_cell():
    # A C loop (the big max pool) registers a stop callback with the session's closing
    # manager while it runs; after close stopped it, nothing stays registered.
    g = tf.Graph()
    started = threading.Event()

    def source():
        started.set()
        return np.ones((2, 250, 250, 1), np.float32)

    with g.as_default():
        x = tf.py_func(source, [], tf.float32, stateful=True)
        x.set_shape([2, 250, 250, 1])
        y = tf.nn.max_pool(x, [1, 250, 250, 1], [1, 1, 1, 1], "SAME")
    s = tf.Session(graph=g)
    closing = s._closing
    outcome = []

    def run():
        try:
            s.run(y)
        except tf.errors.CancelledError:
            outcome.append("cancelled")

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert started.wait(10)
    until = time.monotonic() + 10
    while not closing._callbacks and time.monotonic() < until:  # the C loop has started
        time.sleep(0.005)
    assert closing._callbacks, "the pool registered no stop callback"
    s.close()
    t.join(JOIN_S)
    assert not t.is_alive() and outcome == ["cancelled"]
    assert not closing._callbacks


def test_nd_window_kernels_in_row_blocks(monkeypatch):
    # Conv3D, depthwise conv and their gradients cut one item into blocks of output rows
    # when its temporaries exceed _windows_nd._CHUNK_BYTES: the values of whole items.
    from tensorflux.kernels.cpu import _windows_nd

    rng = np.random.default_rng(5)
    x3, w3 = rng.standard_normal((2, 9, 7, 6, 3)), rng.standard_normal((3, 2, 2, 3, 4))
    x2, w2 = rng.standard_normal((2, 11, 9, 3)), rng.standard_normal((3, 2, 3, 2))

    def run():
        g = tf.Graph()
        with g.as_default():
            outs = []
            cx3, cw3, cx2, cw2 = (tf.constant(a) for a in (x3, w3, x2, w2))
            for stride, pad in ((1, "SAME"), (2, "VALID")):
                y3 = tf.nn.conv3d(cx3, cw3, [1, stride, stride, 1, 1], pad)
                d3 = rng.standard_normal(y3.shape.as_list())
                outs += [y3, *tf.gradients(y3, [cx3, cw3], d3)]
                y2 = tf.nn.depthwise_conv2d_native(cx2, cw2, [1, stride, stride, 1], pad)
                d2 = rng.standard_normal(y2.shape.as_list())
                outs += [y2, *tf.gradients(y2, [cx2, cw2], d2)]
            return _run(outs)

    rng = np.random.default_rng(6)
    want = run()
    monkeypatch.setattr(_windows_nd, "_CHUNK_BYTES", 300)  # a few output rows per block
    rng = np.random.default_rng(6)
    got = run()
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_depthwise_backprop_input_of_one_large_image_stops():
    g = tf.Graph()
    with g.as_default():
        dy = tf.placeholder(tf.float32, [1, None, None, 64])
        dx = tf.nn.depthwise_conv2d_native_backprop_input(
            [1, 1024, 1024, 32], tf.ones([5, 5, 32, 2]), dy, [1, 1, 1, 1], "SAME",
            name="big_depthwise_dx")  # ~45 s in one einsum and 25 whole-image adds
    _expect_deadline(dx, {dy: np.ones((1, 1024, 1024, 64), np.float32)}, "big_depthwise_dx")


# ---- one LAPACK call: abandoned when its step must end ------------------------------------


def test_abandonable_call_returns_its_value_or_error_and_ends_with_its_step():
    assert interrupt.abandonable(np.add, 2, 3, ctx=_Late(), work=1.0) == 5  # small: direct
    with pytest.raises(np.linalg.LinAlgError):
        interrupt.abandonable(np.linalg.inv, np.zeros((2, 2)), ctx=type(
            "Live", (), {"deadline": time.monotonic() + 60, "cancellation": None,
                         "session": None})())
    release = threading.Event()
    try:
        with pytest.raises(tf.errors.DeadlineExceededError):
            interrupt.abandonable(release.wait, 30, ctx=_Late())

        session = type("S", (), {"_closed": False})()
        step = type("Step", (), {"deadline": None, "cancellation": None,
                                 "session": session})()
        threading.Timer(0.05, lambda: setattr(session, "_closed", True)).start()
        start, start_cpu = time.monotonic(), time.process_time()
        with pytest.raises(tf.errors.CancelledError):  # the session closes while it runs
            interrupt.abandonable(release.wait, 30, ctx=step)
        assert _quick(start, start_cpu)
    finally:
        release.set()  # the abandoned calls end


def test_one_large_matrix_inverse_ends_at_the_deadline():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [None, None])
        y = tf.matrix_inverse(x, name="one_inverse")  # one LAPACK call: ~1-2 s here
        s_ = tf.svd(x, compute_uv=False, name="one_svd")
    eye = np.eye(1500) * 2
    _expect_deadline(y, {x: eye}, "one_inverse")
    _expect_deadline(s_, {x: eye}, "one_svd")
    with tf.Session(graph=g) as s:  # small ones still run, with their values
        np.testing.assert_allclose(s.run(y, {x: eye[:3, :3]}), np.eye(3) / 2)


def test_resize_in_row_blocks_and_a_long_einsum_end_at_the_deadline(monkeypatch):
    # Bilinear resize: blocks of output rows (the values of one product per row block).
    x = np.random.default_rng(8).standard_normal((2, 7, 5, 3)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        y = tf.image.resize_bilinear(x, [23, 11])
        want = _run(y)
        monkeypatch.setattr(interrupt, "CHUNK_FLOPS", 50.0)  # one output row per block
        np.testing.assert_allclose(_run(y), want, rtol=1e-6, atol=1e-6)
    monkeypatch.undo()
    g = tf.Graph()
    with g.as_default():
        big = tf.image.resize_bilinear(tf.ones([1, 512, 512, 3]), [6000, 6000], name="resize")
    _expect_deadline(big[0, 0, 0], None, "resize")  # ~45 s in one product pair
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [None, None])
        e = tf.einsum("ij,jk->ik", a, a, name="big_einsum")  # one call: ~3 s here
    _expect_deadline(e, {a: np.ones((1500, 1500), np.float32)}, "big_einsum")


def test_reductions_over_axis_0_in_blocks_of_a_kept_axis(monkeypatch):
    from tensorflux.kernels.cpu import reduction_ops

    x = np.random.default_rng(10).standard_normal((50, 9, 7)).astype(np.float32)
    x[3, 2, 1] = np.nan
    g = tf.Graph()
    with g.as_default():
        ys = [tf.reduce_max(x, [0, 2]), tf.reduce_sum(x, [0], keepdims=True),
              tf.argmax(x, 0), tf.argmin(x, 2), tf.reduce_any(x > 1, [0, 1])]
        want = _run(ys)
        monkeypatch.setattr(reduction_ops, "_CHUNK_ELEMENTS", 60)
        got = _run(ys)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
        assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(got[2], want[2])

    kdef = registry.find_kernel("ArgMax", "CPU", {"T": tf.float32, "Tidx": tf.int32,
                                                  "output_type": tf.int64})
    with pytest.raises(tf.errors.DeadlineExceededError):
        kdef.factory(_node("ArgMax", output_type=tf.int64))(_Late(), x, np.int32(0))
    kdef = registry.find_kernel("Max", "CPU", {"T": tf.float32, "Tidx": tf.int32})
    with pytest.raises(tf.errors.CancelledError):
        kdef.factory(_node("Max", keep_dims=False))(_Closed(), x, np.array([0, 2], np.int32))


def test_where_and_ffts_in_blocks(monkeypatch, small_blocks):
    rng = np.random.default_rng(11)
    cond = rng.random((40, 6, 5)) > 0.5
    z = (rng.standard_normal((6, 5, 16)) + 1j * rng.standard_normal((6, 5, 16))).astype(
        np.complex64)
    r = rng.standard_normal((6, 5, 16)).astype(np.float32)

    def run():
        g = tf.Graph()
        with g.as_default():
            return _run([tf.where(cond), tf.signal.fft(z), tf.signal.ifft2d(z),
                         tf.signal.rfft(r), tf.signal.irfft(tf.signal.rfft(r))])

    want = run()
    monkeypatch.setattr(interrupt, "CHUNK_FLOPS", 100.0)  # one transform per block
    got = run()
    np.testing.assert_array_equal(got[0], np.argwhere(cond))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    compute = _compute("Where", {"T": tf.bool})
    with pytest.raises(tf.errors.DeadlineExceededError):
        compute(_Late(), cond)


def test_one_long_fft_ends_at_the_deadline():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.complex64, [None])
        y = tf.signal.fft(x, name="long_fft")  # one transform of 2^23 points
    _expect_deadline(y, {x: np.ones(1 << 23, np.complex64)}, "long_fft")


def _one_row(n):
    return np.random.default_rng(12).standard_normal(n).astype(np.float32)


_CLOSED_DURING = {  # family: (input maker, graph from the input); each ~3 s and more here
    "conv_backprop_input": (
        lambda: np.ones((1, 768, 768, 64), np.float32),
        lambda t: tf.nn.conv2d_backprop_input([1, 1536, 1536, 16], tf.ones([3, 3, 16, 64]),
                                              t, [1, 2, 2, 1], "SAME")),
    "sort": (lambda: _one_row(8_000_000), lambda t: tf.sort(t)),
    "unique": (lambda: (np.arange(6_000_000) * 7919 % 1_000_003).astype(np.float32),
               lambda t: tf.unique(t)[1]),
    "matrix_inverse": (lambda: np.eye(1500, dtype=np.float64) * 2,
                       lambda t: tf.matrix_inverse(t)),
}


@pytest.mark.parametrize("family", sorted(_CLOSED_DURING))
def test_session_close_from_another_thread_stops_the_step(family):
    make, build = _CLOSED_DURING[family]
    value = make()
    started = threading.Event()

    def source():
        started.set()
        return value

    g = tf.Graph()
    with g.as_default():
        t = tf.py_func(source, [], tf.as_dtype(value.dtype), stateful=True)
        t.set_shape(value.shape)
        y = build(t)
    _close_while_running(g, y, started)
