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


def _agree_in_blocks(monkeypatch, run, **block_settings):
    """`run()` (a list of values) with `interrupt`'s block settings patched gives the
    values of `run()` without, bit for bit (strings element for element)."""
    want = run()
    for name, value in block_settings.items():
        monkeypatch.setattr(interrupt, name, value)
    got = run()
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tolist() == b.tolist() if a.dtype == object else a.tobytes() == b.tobytes()


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


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("row", [(), (3,), (2, 5)])
def test_sparse_segment_reductions_in_whole_segments_are_bit_identical(monkeypatch, dtype,
                                                                       row):
    """Over many rows the sparse segment reductions run in ranges of whole segments (the
    step checked between them): each segment's value is that of one call, for segments
    shorter and longer than a range, with empty segments between them."""
    rng = np.random.default_rng(7)
    data = (rng.standard_normal((50,) + row) * 100).astype(dtype)
    lengths = [1, 3, 70, 2, 1, 200, 5, 9, 1, 40, 33, 1]
    ids = np.repeat(np.arange(len(lengths)) * 2, lengths).astype(np.int32)  # gaps: empty
    indices = rng.integers(0, 50, ids.size).astype(np.int32)
    ops = [lambda d: tf.sparse.segment_sum(d, indices, ids),
           lambda d: tf.sparse.segment_mean(d, indices, ids),
           lambda d: tf.sparse.segment_sqrt_n(d, indices, ids),
           lambda d: tf.sparse.segment_sum(d, indices, ids, num_segments=30)]

    def run():
        g = tf.Graph()
        with g.as_default():
            d = tf.constant(data)
            return _run([op(d) for op in ops])

    want = run()
    cuts = []
    monkeypatch.setattr(interrupt, "SPAN_ELEMENTS", 16 * max(1, int(np.prod(row))))
    monkeypatch.setattr(interrupt, "check", lambda ctx=None: cuts.append(1))
    got = run()
    assert len(cuts) >= 4 * 6  # each reduction ran in ranges
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_band_part_script_and_fake_quant_in_blocks_are_those_of_one_call(monkeypatch):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((3, 37, 29)) * 4).astype(np.float32)
    points = rng.integers(-5, 0x11_0000 + 5, (50, 41)).astype(np.int32)

    def run():
        g = tf.Graph()
        with g.as_default():
            return _run([tf.linalg.band_part(x, 3, 5), tf.linalg.band_part(x, -1, 0),
                         tf.linalg.band_part(x, 0, -1), tf.strings.unicode_script(points),
                         tf.quantization.fake_quant_with_min_max_args(x, -3.0, 5.0, 6),
                         tf.quantization.fake_quant_with_min_max_vars(x, -2.5, 7.0, 4, True)])

    _agree_in_blocks(monkeypatch, run, SPAN_ELEMENTS=64, BLOCKED_BYTES=16,
                     BLOCK_BYTES=24 * 64)  # (cost 32-64: a few elements a block)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("compression", [-1, 0, 1, 9])
def test_a_png_compressed_in_blocks_is_the_file_of_one_call(monkeypatch, dtype, compression):
    """A large image's zlib stream is fed in blocks of rows with the step checked between
    them; the file's bytes are those of one call at every level (level 0, whose stored
    blocks would move, in one call), and a stopped step stops the encode."""
    from tensorflux.lib import png

    rng = np.random.default_rng(10)
    image = rng.integers(0, 40, (61, 47, 3)).astype(dtype) * 3  # compressible, not trivially
    want = png.encode_png(image, compression) if dtype == np.uint8 else \
        png.encode_png16(image, compression)
    monkeypatch.setattr(png, "_DEFLATE_BYTES", 100)
    calls = []
    encode = png.encode_png if dtype == np.uint8 else png.encode_png16
    assert encode(image, compression, between=lambda: calls.append(1)) == want
    assert (len(calls) > 20) == (compression != 0)
    compute = _compute("EncodePng", {"T": tf.as_dtype(dtype)}, compression=compression)
    assert compute(None, image).item() == want
    if compression != 0:
        with pytest.raises(tf.errors.DeadlineExceededError):
            compute(_Late(), image)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lrn_and_its_gradient_in_blocks_of_positions_are_those_of_one_call(monkeypatch,
                                                                            dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 5, 7, 9)).astype(dtype)
    g = rng.standard_normal((2, 5, 7, 9)).astype(dtype)

    def run():
        with tf.Graph().as_default():
            t = tf.constant(x)
            y = tf.nn.lrn(t, 2, 1.5, 0.3, 0.6)
            dx = tf.gradients(y, t, grad_ys=tf.constant(g))[0]
            wide = tf.nn.lrn(t, 6, 0.5, 1e-2, 0.75)
            return _run([y, dx, wide])

    _agree_in_blocks(monkeypatch, run, SPAN_ELEMENTS=20)  # two positions a block


def test_volume_patches_in_blocks_of_planes_are_those_of_one_call(monkeypatch):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 7, 6, 5, 3)).astype(np.float32)
    cases = [([1, 3, 2, 2, 1], [1, 1, 1, 1, 1], "SAME"), ([1, 2, 3, 2, 1], [1, 2, 1, 3, 1],
             "VALID"), ([1, 4, 2, 3, 1], [1, 3, 2, 1, 1], "SAME")]

    def run():
        g = tf.Graph()
        with g.as_default():
            return _run([tf.extract_volume_patches(x, k, st, pad) for k, st, pad in cases])

    _agree_in_blocks(monkeypatch, run, SPAN_ELEMENTS=64)


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
    ("MatrixBandPart", {"T": tf.float32, "Tindex": tf.int64}, {},
     lambda: (np.ones((300, 4), np.float32), np.int64(1), np.int64(2))),
    ("LRN", {"T": tf.float32}, {"depth_radius": 2, "bias": 1.0, "alpha": 0.5, "beta": 0.75},
     lambda: (np.ones((1, 10, 30, 4), np.float32),)),
    ("LRNGrad", {"T": tf.float32},
     {"depth_radius": 2, "bias": 1.0, "alpha": 0.5, "beta": 0.75},
     lambda: (np.ones((1, 10, 30, 4), np.float32),) * 3),
    ("ExtractVolumePatches", {"T": tf.float32},
     {"ksizes": [1, 2, 2, 2, 1], "strides": [1, 1, 1, 1, 1], "padding": "SAME"},
     lambda: (np.ones((1, 6, 5, 4, 3), np.float32),)),
    ("SparseSegmentSum", {"T": tf.float32, "Tidx": tf.int32, "Tsegmentids": tf.int32},
     {}, lambda: (np.ones((3, 4), np.float32), np.zeros(300, np.int32),
                  np.arange(300, dtype=np.int32) // 2)),
    ("Unique", {"T": tf.float32, "out_idx": tf.int32}, {"out_idx": tf.int32},
     lambda: (np.arange(300, dtype=np.float32) % 7,)),
    ("UniqueWithCounts", {"T": tf.float32, "out_idx": tf.int32}, {"out_idx": tf.int32},
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
    # Stride 2, one 1536x1536 image, a 17x17 window (products and scatter): ~4 s unpolled
    # (with 3x3 the kernel now takes ~0.1 s, racing the deadline).
    g = tf.Graph()
    with g.as_default():
        dy = tf.placeholder(tf.float32, [1, None, None, 64])
        dx = tf.nn.conv2d_backprop_input([1, 1536, 1536, 16], tf.ones([17, 17, 16, 64]), dy,
                                         [1, 2, 2, 1], "SAME", name="big_dx")
    _expect_deadline(dx, {dy: np.ones((1, 768, 768, 64), np.float32)}, "big_dx")


def test_conv_backprop_filter_of_one_large_image_stops():
    # Stride 2 (no frequency-domain path), one 1536x1536 image, a 17x17 window: ~2 s wall,
    # ~4 s CPU unpolled (with 3x3 the kernel now takes ~0.1 s, racing the deadline).
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [1, None, None, 16])
        dy = tf.placeholder(tf.float32, [1, None, None, 64])
        dw = tf.nn.conv2d_backprop_filter(x, [17, 17, 16, 64], dy, [1, 2, 2, 1], "SAME",
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


_EXIT_AFTER_ABANDON = """
import sys, threading, time
import numpy as np
import tensorflux as tf
g = tf.Graph()
with g.as_default():
    x = tf.placeholder(tf.float64, [None, None])
    s = tf.svd(x, compute_uv=False)
with tf.Session(graph=g) as sess:
    try:
        sess.run(s, {x: np.random.default_rng(0).standard_normal((1100, 1100))},
                 options=tf.RunOptions(timeout_in_ms=30))
        print("finished")
    except tf.errors.DeadlineExceededError:
        names = [t.name for t in threading.enumerate()]
        print("abandoned" if "tfx-abandonable" in names else "stopped")
sys.stdout.flush()
"""


def test_a_process_ending_while_a_call_is_abandoned_waits_for_it():
    """The interpreter ends right after a step abandoned its LAPACK call: the call's thread
    is waited for, so OpenBLAS does not free its buffers under it (as a daemon thread, the
    exit segfaulted in about one run of four)."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outcomes = []
    for _ in range(4):
        proc = subprocess.run([sys.executable, "-c", _EXIT_AFTER_ABANDON], capture_output=True,
                              text=True, timeout=120, env=dict(os.environ, PYTHONPATH=root))
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        outcomes.append(proc.stdout.strip())
    assert "abandoned" in outcomes  # the case did leave a call running at exit


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
    "conv_backprop_input": (  # (1,536 channels: the strided path of output phases; with
        # few input channels the products and scatter finish in ~0.05 s)
        lambda: np.ones((1, 96, 96, 1536), np.float32),
        lambda t: tf.nn.conv2d_backprop_input([1, 192, 192, 1536],
                                              tf.ones([3, 3, 1536, 1536]), t, [1, 2, 2, 1],
                                              "SAME")),
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


# ---- kernels that build a large output from a small input (written in blocks) -------------


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Every output above 16 bytes is written in blocks of about 24 bytes."""
    monkeypatch.setattr(interrupt, "BLOCKED_BYTES", 16)
    monkeypatch.setattr(interrupt, "BLOCK_BYTES", 24)


def _built_outputs():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((5, 7, 3)).astype(np.float32)
    ind = rng.integers(-1, 9, (6, 5)).astype(np.int32)
    d = rng.standard_normal((3, 4, 7)).astype(np.float32)
    words = np.array([[b"ab", b"c"]] * 20, object)
    g = tf.Graph()
    with g.as_default():
        return _run([
            tf.fill([9, 13, 5], 2.5), tf.ones_like(x), tf.zeros_like(tf.constant(words)),
            tf.tile(x, [3, 1, 4]), tf.tile(x, [1, 5, 1]), tf.tile(words, [2, 3]),
            tf.pad(x, [[1, 2], [0, 3], [2, 2]]),
            tf.pad(x, [[1, 2], [0, 3], [2, 2]], constant_values=7),
            tf.pad(x, [[1, 3], [2, 6], [2, 2]], mode="REFLECT"),
            tf.pad(x, [[4, 5], [0, 7], [3, 1]], mode="SYMMETRIC"),
            tf.concat([x, x * 2, x[:2]], 0), tf.concat([x, x[:, :2]], 1),
            tf.concat([x, x], -1), tf.stack([x, x + 1], 1), tf.stack([x, x + 1], 3),
            tf.broadcast_to(x[:, :1], [4, 5, 9, 3]),
            tf.one_hot(ind, 9), tf.one_hot(ind, 9, axis=0, on_value=3.0, off_value=-1.0),
            tf.one_hot(ind[0, 0], 200), tf.range(3, 1000, 7), tf.range(1000, 3, -7),
            tf.range(0.5, 300.0, 0.37), tf.range(-5.0, 5.0, 0.001, dtype=tf.float64),
            tf.linalg.diag(d), tf.linalg.set_diag(tf.ones([3, 4, 7, 7]), d),
            tf.linalg.diag(d[..., 0, :], k=1),
            tf.lin_space(-3.3, 7.1, 1001), tf.lin_space(tf.constant(0.0, tf.float64), 1e-300,
                                                        500),
            tf.sparse_to_dense([[1, 2], [3, 4]], [50, 7], [5.0, 6.0], default_value=-1.0),
            tf.sparse_to_dense([3], [300], b"x", default_value=b"d\x00"),
            tf.image.extract_patches(x[None, ..., :3], [1, 3, 2, 1], [1, 2, 1, 1],
                                     [1, 1, 2, 1], "SAME")])


def test_large_outputs_in_blocks_are_those_of_one_call(monkeypatch):
    want = _built_outputs()
    monkeypatch.setattr(interrupt, "BLOCKED_BYTES", 16)
    monkeypatch.setattr(interrupt, "BLOCK_BYTES", 24)
    calls = []
    copyto = interrupt.copyto
    monkeypatch.setattr(interrupt, "copyto", lambda *a, **k: calls.append(1) or copyto(*a, **k))
    got = _built_outputs()
    assert len(calls) > 20  # the blocked paths ran
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, i
        np.testing.assert_array_equal(a, b, err_msg=str(i))


def _random_outputs():
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(5)
        seed = [3, 17]
        ys = [tf.random_uniform([7, 9, 5]), tf.random_uniform([7, 9, 5], dtype=tf.float64),
              tf.random_uniform([7, 9, 5], dtype=tf.float16),
              tf.random_uniform([33, 5], dtype=tf.bfloat16), tf.random_normal([11, 13]),
              tf.random_normal([11, 13], dtype=tf.float64),
              tf.random_normal([11, 13], dtype=tf.float16), tf.truncated_normal([50, 31]),
              tf.truncated_normal([50, 31], dtype=tf.float64),
              tf.random_uniform([40, 7], 0, 1000, dtype=tf.int32),
              tf.random_uniform([40, 7], -5, 2**40, dtype=tf.int64),
              tf.multinomial(tf.log([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4]]), 300),
              tf.random_gamma([20, 9], [[0.5, 1.0, 3.0], [7.0, 0.1, 2.0]]),
              tf.random_gamma([300], 0.7), tf.random_poisson([0.5, 3.0, 30.0], [20, 9]),
              tf.random_poisson(12.0, [500], dtype=tf.int64)]
        for dt in (tf.float16, tf.bfloat16, tf.float32, tf.float64):
            ys += [tf.random.stateless_uniform([7, 9, 5], seed, dtype=dt),
                   tf.random.stateless_normal([11, 13], seed, dtype=dt),
                   tf.random.stateless_truncated_normal([50, 31], seed, dtype=dt)]
        ys += [tf.random.stateless_uniform([40, 7], seed, 0, 1000, dtype=tf.int32),
               tf.random.stateless_uniform([40, 7], seed, -5, 2**40, dtype=tf.int64),
               tf.random.stateless_uniform([40, 7], seed, None, None, dtype=tf.int64),
               tf.random.stateless_categorical(tf.log([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4]]),
                                               301, seed),
               tf.random.stateless_poisson([30, 3], seed, [0.5, 4.0, 25.0]),
               tf.random.stateless_gamma([30, 3], seed, [0.5, 1.0, 7.0]),
               tf.random.stateless_binomial([30, 3], seed, [5.0, 40.0, 100.0],
                                            [0.3, 0.7, 0.5]),
               tf.random.stateless_parameterized_truncated_normal(
                   [40, 3], seed, [0.0, 1.0, -1.0], 1.0, [-1.0, 2.5, -5.0], [1.0, 3.0, -4.0])]
        with tf.Session() as s:
            return s.run(ys) + s.run(ys[:16])  # stateful ops: their streams go on


def test_random_ops_in_blocks_give_the_same_values_for_the_same_seeds(monkeypatch):
    from tensorflux.lib import philox_samplers

    want = _random_outputs()
    monkeypatch.setattr(interrupt, "BLOCKED_BYTES", 16)
    monkeypatch.setattr(interrupt, "BLOCK_BYTES", 24 * 128)  # 3 values of the slowest
    monkeypatch.setattr(philox_samplers, "MAX_ROUNDS", 4)
    got = _random_outputs()
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, i
        np.testing.assert_array_equal(a, b, err_msg=str(i))


_BUILT = [
    ("Fill", {"T": tf.float32, "index_type": tf.int32}, {},
     lambda: (np.array([300], np.int32), np.float32(1))),
    ("Tile", {"T": tf.float32, "Tmultiples": tf.int32}, {},
     lambda: (np.ones((2, 3), np.float32), np.array([100, 1], np.int32))),
    ("PadV2", {"T": tf.float32, "Tpaddings": tf.int32}, {},
     lambda: (np.ones((2, 3), np.float32), np.array([[100, 0], [0, 2]], np.int32),
              np.float32(0))),
    ("MirrorPad", {"T": tf.float32, "Tpaddings": tf.int32}, {"mode": "SYMMETRIC"},
     lambda: (np.ones((20, 3), np.float32), np.array([[20, 20], [0, 2]], np.int32))),
    ("ConcatV2", {"T": tf.float32, "N": 2, "Tidx": tf.int32}, {},
     lambda: (np.ones((100, 3), np.float32), np.ones((100, 3), np.float32), np.int32(0))),
    ("BroadcastTo", {"T": tf.float32, "Tidx": tf.int32}, {},
     lambda: (np.ones((1, 3), np.float32), np.array([300, 3], np.int32))),
    ("OneHot", {"T": tf.float32, "TI": tf.int32}, {"axis": -1},
     lambda: (np.zeros(100, np.int32), np.int32(10), np.float32(1), np.float32(0))),
    ("Range", {"Tidx": tf.int32}, {"Tidx": tf.int32},
     lambda: (np.int32(0), np.int32(3000), np.int32(1))),
    ("Range", {"Tidx": tf.float32}, {"Tidx": tf.float32},
     lambda: (np.float32(0), np.float32(3000), np.float32(1))),
    ("MatrixDiag", {"T": tf.float32}, {}, lambda: (np.ones((3, 40), np.float32),)),
    ("StatelessRandomNormal", {"dtype": tf.float32, "T": tf.int32, "Tseed": tf.int32},
     {"dtype": tf.float32}, lambda: (np.array([300], np.int32), np.array([1, 2], np.int32))),
    ("StatelessRandomGammaV3", {"dtype": tf.float32, "shape_dtype": tf.int32},
     {}, lambda: (np.array([64], np.int32), np.array([7], np.uint64),
                  np.array([0, 0], np.uint64), np.int32(1), np.float32(2.0))),
    ("UnicodeScript", {}, {}, lambda: (np.arange(300, dtype=np.int32) * 97,)),
    ("FakeQuantWithMinMaxArgs", {}, {"min": -6.0, "max": 6.0, "num_bits": 8,
                                     "narrow_range": False},
     lambda: (np.linspace(-8, 8, 300, dtype=np.float32),)),
    ("FakeQuantWithMinMaxVars", {}, {"num_bits": 8, "narrow_range": False},
     lambda: (np.linspace(-8, 8, 300, dtype=np.float32), np.float32(-6), np.float32(6))),
]


@pytest.mark.parametrize("op,types,attrs,inputs", _BUILT,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(_BUILT)])
@pytest.mark.parametrize("step,error", [(_Late, tf.errors.DeadlineExceededError),
                                        (_Closed, tf.errors.CancelledError)])
def test_blocked_output_checks_its_step(tiny_blocks, op, types, attrs, inputs, step, error):
    compute = _compute(op, types, **attrs)
    with pytest.raises(error):
        compute(step(), *inputs())
    compute(None, *inputs())  # outside a step: runs to the end


def _shape_fed(n):
    return tf.placeholder_with_default(np.array(n, np.int32), [len(n)])


_HUGE = 1 << 29  # elements: 2 GiB of float32, seconds to write here; only what a stopped
# kernel wrote before its deadline is ever touched
_BUILT_STEPS = {  # family: graph of a huge output from a small input (~5-20 s unblocked)
    "fill": lambda: tf.fill(_shape_fed([_HUGE]), 1.0, name="big"),
    "tile": lambda: tf.tile(tf.ones([1024, 1024]), _shape_fed([512, 1]), name="big"),
    "pad": lambda: tf.pad(tf.ones([1, 1024]), tf.stack([tf.stack([0, _shape_fed([
        _HUGE // 1024])[0]]), [0, 0]]), name="big"),
    "broadcast_to": lambda: tf.broadcast_to(tf.ones([1, 1024]), _shape_fed(
        [_HUGE // 1024, 1024]), name="big"),
    "one_hot": lambda: tf.one_hot(tf.zeros([1 << 15], tf.int32), tf.placeholder_with_default(
        1 << 14, []), name="big"),
    "range": lambda: tf.range(tf.placeholder_with_default(_HUGE, []), name="big"),
    "random_normal": lambda: tf.random_normal(_shape_fed([_HUGE]), name="big"),
    "lin_space": lambda: tf.lin_space(0.0, 1.0, tf.placeholder_with_default(_HUGE, []),
                                      name="big"),
    "extract_patches": lambda: tf.image.extract_patches(
        tf.ones([1, 1024, 1024, 3]), [1, 12, 12, 1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME",
        name="big"),
    "sparse_to_dense": lambda: tf.sparse_to_dense([[0]], _shape_fed([_HUGE]), 1.0,
                                                  name="big"),
    "stateless_normal": lambda: tf.random.stateless_normal(_shape_fed([_HUGE // 4]), [1, 2],
                                                           name="big"),
}


@pytest.mark.parametrize("family", sorted(_BUILT_STEPS))
def test_a_huge_output_from_a_small_input_ends_at_the_deadline(family):
    g = tf.Graph()
    with g.as_default():
        y = _BUILT_STEPS[family]()
    _expect_deadline(tf.reshape(y, [-1])[:1], None, "big")


def test_a_huge_splat_const_is_expanded_in_blocks_that_check_the_step():
    from google.protobuf import text_format

    graph_def = text_format.Parse(
        'node { name: "big" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: '
        f'{_HUGE} }} }} float_val: 1.5 }} }} }} }}', tf.GraphDef())
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(graph_def, name="")
        y = g.get_tensor_by_name("big:0")[:1]
    _expect_deadline(y, None, "big")


def test_a_string_kernel_over_many_elements_ends_at_the_deadline():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.string, [None])
        y = tf.strings.regex_replace(tf.strings.lower(x, name="big_lower"), "a+", "b")
    words = np.array([b"AbCaaD"] * 3_000_000, object)  # ~3 s per kernel here
    _expect_deadline(y, {x: words}, "big_lower")


def test_string_maps_in_blocks_give_the_values_of_one_block(monkeypatch):
    """The per-element string kernels (`string_ops._map`) make their elements Python
    objects a block at a time: numbers, complex numbers, booleans and broadcast joins
    give the same strings as in one block."""
    def run():
        rng = np.random.default_rng(12)
        g = tf.Graph()
        with g.as_default():
            return _run([
                tf.as_string(rng.standard_normal(23).astype(np.float32) * 1e3, precision=3),
                tf.as_string(np.arange(-11, 12, dtype=np.int64) * 7919, width=6, fill="0"),
                tf.as_string((rng.standard_normal(17) + 1j).astype(np.complex64)),
                tf.as_string(np.arange(9) % 2 == 0),
                tf.as_string(np.linspace(-2, 2, 13).astype(np.float16), scientific=True),
                tf.strings.join([np.array([b"a", b"bb", b"c", b"dd"] * 2, object), b"!",
                                 np.array([b"x", b"yy", b"z", b"w"] * 2, object)], "-"),
                tf.strings.length(np.array([b"abc", b"", b"\xc3\xa9"] * 5, object),
                                  "UTF8_CHAR")])

    _agree_in_blocks(monkeypatch, run, EACH_EVERY=3)


@pytest.mark.parametrize("op", ["lower", "length", "to_number", "split", "decode",
                                "reduce_join", "as_string", "hash"])
def test_string_kernels_check_their_step_every_few_thousand_elements(monkeypatch, op):
    monkeypatch.setattr(interrupt, "EACH_EVERY", 4)
    kernels = {
        "lower": ("StringLower", {}, {"encoding": ""}, (np.array([b"A"] * 9, object),)),
        "length": ("StringLength", {}, {"unit": "BYTE"}, (np.array([b"A"] * 9, object),)),
        "to_number": ("StringToNumber", {"out_type": tf.float32}, {"out_type": tf.float32},
                      (np.array([b"1"] * 9, object),)),
        "split": ("StringSplitV2", {}, {"maxsplit": -1},
                  (np.array([b"a b"] * 9, object), np.array(b" ", object))),
        "decode": ("UnicodeDecodeWithOffsets", {"Tsplits": tf.int64},
                   {"errors": "replace", "replacement_char": 65533,
                    "replace_control_characters": False, "Tsplits": tf.int64,
                    "input_encoding": "UTF-8"}, (np.array([b"abcdefghij"], object),)),
        "reduce_join": ("ReduceJoin", {}, {"keep_dims": False, "separator": ""},
                        (np.array([[b"a"]] * 9, object), np.array([1], np.int32))),
        "as_string": ("AsString", {"T": tf.float32}, {
            "T": tf.float32, "fill": "", "width": -1, "precision": -1, "scientific": False,
            "shortest": False}, (np.ones(9, np.float32),)),
        "hash": ("StringToHashBucketFast", {}, {"num_buckets": 7},
                 (np.array([b"A"] * 9, object),)),
    }
    name, types, attrs, inputs = kernels[op]
    compute = _compute(name, types, **attrs)
    with pytest.raises(tf.errors.DeadlineExceededError):
        compute(_Late(), *inputs)
    with pytest.raises(tf.errors.CancelledError):
        compute(_Closed(), *inputs)
    compute(None, *inputs)


# ---- py_func: user code runs to its end, then the step ends with TensorFlow's error ---------


def test_a_py_func_past_the_deadline_finishes_then_the_step_times_out():
    # TensorFlow 2.21 (checked with the oracle): a py_func sleeping 5 s under
    # timeout_in_ms=200 ends after the 5 s with DeadlineExceededError; the session runs on.
    ran = []

    def slow(x):
        time.sleep(0.5)
        ran.append(True)
        return x

    g = tf.Graph()
    with g.as_default():
        y = tf.py_func(slow, [tf.constant(1.0)], tf.float32, name="slow_py_func") + 1
    with tf.Session(graph=g) as s:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError, match="slow_py_func"):
            s.run(y, options=tf.RunOptions(timeout_in_ms=50))
        assert ran == [True] and time.monotonic() - start >= 0.5  # not abandoned
        assert s.run(y, options=tf.RunOptions(timeout_in_ms=5000)) == 2.0


def test_session_close_during_a_py_func_cancels_its_step_once_it_returns():
    started, release = threading.Event(), threading.Event()

    def wait(x):
        started.set()
        release.wait(JOIN_S)
        return x

    g = tf.Graph()
    with g.as_default():
        y = tf.py_func(wait, [tf.constant(1.0)], tf.float32)
    s = tf.Session(graph=g)
    outcome = []

    def run():
        try:
            outcome.append(s.run(y))
        except tf.errors.CancelledError:
            outcome.append("cancelled")

    th = threading.Thread(target=run, daemon=True)
    th.start()
    assert started.wait(10)
    s.close()
    release.set()
    th.join(JOIN_S)
    assert outcome == ["cancelled"]


@pytest.mark.oracle
@pytest.mark.slow  # TensorFlow's start: ~4-13 s here
def test_py_func_past_the_deadline_matches_tensorflow():
    from tests.oracle import run_tf

    program = """
import time
def slow(x):
    time.sleep(0.3)
    return x
g = tf.Graph()
with g.as_default():
    y = tf.py_func(slow, [tf.constant(1.0)], tf.float32) + 1
with tf.Session(graph=g) as s:
    try:
        s.run(y, options=tf.RunOptions(timeout_in_ms=20))
        result = "value"
    except tf.errors.OpError as e:
        result = type(e).__name__
"""
    theirs = run_tf(program)
    ns = {"tf": tf, "np": np}
    exec(program, ns)  # noqa: S102 - the same program under tensorflux
    assert ns["result"] == theirs == "DeadlineExceededError"


@pytest.mark.parametrize("block", [None, 64])
def test_unique_with_counts_gives_tensorflows_first_appearances(monkeypatch, block):
    if block:
        monkeypatch.setattr(interrupt, "SPAN_ELEMENTS", block)  # sorted blocks, merged
    x = np.array([0.0, -0.0, 2.0, np.nan, -1.0, np.nan, 2.0, -0.0] * 50, np.float32)
    g = tf.Graph()
    with g.as_default():
        values, idx, counts = _run(list(tf.unique_with_counts(x)))
    # A hash map in order of first appearance: 0.0 and -0.0 one value (the first seen),
    # every NaN its own.
    want = np.array([0.0, 2.0, np.nan, -1.0, np.nan], np.float32)
    np.testing.assert_array_equal(values[:5], want)
    assert not np.signbit(values[0]) and values.size == 3 + 100
    np.testing.assert_array_equal(counts[:4], [150, 100, 1, 50])
    np.testing.assert_array_equal(values[idx], np.where(x == 0, 0.0, x))


def test_non_max_suppression_of_many_disjoint_boxes_ends_at_the_deadline():
    # Quadratic in the boxes when few suppress each other: 20,000 tiny boxes take minutes.
    rng = np.random.default_rng(2)
    corners = rng.uniform(0, 1, (20_000, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + 1e-4], 1)
    g = tf.Graph()
    with g.as_default():
        b = tf.placeholder(tf.float32, [None, 4])
        sc = tf.placeholder(tf.float32, [None])
        y = tf.image.non_max_suppression(b, sc, 20_000, 0.5, name="many_boxes")
    _expect_deadline(y, {b: boxes, sc: rng.standard_normal(20_000).astype(np.float32)},
                     "many_boxes")


def test_formatting_a_huge_tensor_ends_at_the_deadline():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None, None])
        y = tf.strings.format("{}", x, summarize=-1, name="huge_format")  # ~1 min here
    _expect_deadline(y, {x: np.ones((600, 600, 4), np.float32)}, "huge_format")


# ---- the sweep: a huge case of every kernel family (scripts/interrupt_sweep.py) -------------


def _sweep():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "interrupt_sweep.py"
    spec = importlib.util.spec_from_file_location("interrupt_sweep", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("family", sorted(_sweep()[1]._cases()))
def test_every_family_stops_or_is_bounded_under_a_100ms_deadline(family):
    import os
    import subprocess
    import sys

    path, _ = _sweep()
    proc = subprocess.run([sys.executable, str(path), "--family", family, "--limit", "600"],
                          capture_output=True, text=True, timeout=800,
                          env=dict(os.environ, PYTHONPATH=str(path.parents[1])))
    rows = proc.stdout.strip().splitlines()
    assert rows, proc.stderr[-2000:]
    for row in rows:
        assert " stops " in row or " bounded " in row, row


def _special_outputs():
    rng = np.random.default_rng(14)
    a = rng.uniform(0.1, 5, (6, 7)).astype(np.float32)
    x = rng.uniform(-3, 5, (6, 7))
    g = tf.Graph()
    with g.as_default():
        return _run([tf.math.igamma(a, a[0]), tf.math.igammac(a, 2.0), tf.math.zeta(a + 1, a),
                     tf.math.polygamma(tf.ones_like(a), a), tf.math.betainc(a, a.T[:6, :1], 0.3),
                     tf.math.erfinv(a / 6), tf.math.bessel_i0e(a), tf.math.lgamma(x),
                     tf.math.digamma(x), tf.math.erf(x), tf.math.erfc(x.astype(np.float16))])


def test_special_functions_in_blocks_give_the_values_of_one_call(monkeypatch):
    want = _special_outputs()
    monkeypatch.setattr(interrupt, "BLOCKED_BYTES", 16)
    monkeypatch.setattr(interrupt, "BLOCK_BYTES", 24 * 256)  # 3 values per block
    got = _special_outputs()
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, i
        np.testing.assert_array_equal(a, b, err_msg=str(i))


def test_a_special_function_of_a_large_input_ends_at_the_deadline():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        y = tf.math.zeta(x + 2.0, x + 1.0, name="big_zeta")  # ~4 s here in one call
    _expect_deadline(y, {x: np.ones(1 << 24, np.float32)}, "big_zeta")


def test_colour_space_kernels_in_blocks_give_the_values_of_one_call(monkeypatch):
    x = np.random.default_rng(15).uniform(0, 1, (2, 5, 7, 3)).astype(np.float32)

    def run():
        g = tf.Graph()
        with g.as_default():
            return _run([tf.image.rgb_to_hsv(x), tf.image.hsv_to_rgb(x),
                         tf.image.adjust_hue(x, 0.3), tf.image.adjust_saturation(x, 1.7),
                         tf.image.rgb_to_hsv(x.astype(np.float64))])

    want = run()
    monkeypatch.setattr(interrupt, "BLOCKED_BYTES", 16)
    monkeypatch.setattr(interrupt, "BLOCK_BYTES", 24 * 16 * 4)  # 8 pixels per block
    for a, b in zip(run(), want, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_a_long_tridiagonal_solve_ends_at_the_deadline():
    g = tf.Graph()
    with g.as_default():
        d = tf.placeholder(tf.float32, [3, None])
        r = tf.placeholder(tf.float32, [None, 1])
        x = tf.linalg.tridiagonal_solve(d, r, name="long_solve")  # a Python step per row
    n = 1 << 20  # ~40 s here
    _expect_deadline(x, {d: (np.ones((3, n)) * [[1], [4], [1]]).astype(np.float32),
                         r: np.ones((n, 1), np.float32)}, "long_solve")
