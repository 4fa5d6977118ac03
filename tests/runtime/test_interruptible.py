"""Long kernels stop when their step's deadline passes or its Session closes (issue 21).

Each step below would compute for many seconds; with `timeout_in_ms=100` it must end with
DeadlineExceededError well within a second, naming the node, and the session must go on
working. The kernels poll their step between chunks (kernels/interrupt.py): the NumPy
paths through intra_op.parallel_for and the pools' tap loops, the C extension's loops
through a stop cell and the deadline.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import interrupt, registry
from tensorflux.kernels.cpu import native

BOUND_S = 2.0  # the step must be over by then (the kernels alone take 4 s and more)


def _expect_deadline(sess, fetch, feed=None, name=None):
    opts = tf.RunOptions(timeout_in_ms=100)
    start = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError) as info:
        sess.run(fetch, feed, options=opts)
    elapsed = time.monotonic() - start
    assert elapsed < BOUND_S, f"took {elapsed:.2f}s"
    if name is not None:
        assert name in str(info.value)
    return info.value


def _healthy(sess):
    assert sess.run(tf.constant(2.0) * 3.0) == 6.0


@pytest.mark.parametrize("exec_mode", ["static", "dataflow"])
def test_big_matmul_stops_at_deadline(exec_mode):
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [None, None])
        if exec_mode == "dataflow":  # a control-flow op makes it a dataflow step
            a = tf.cond(tf.constant(True), lambda: a, lambda: a)
        y = tf.matmul(a, a, name="big_product")
        s = tf.Session(graph=g)
        x = np.ones((3000, 3000), np.float32)  # 54 GFLOP
        _expect_deadline(s, y, {a if exec_mode == "static" else
                                g.get_tensor_by_name("Placeholder:0"): x}, "big_product")
        _healthy(s)
        s.close()


def test_big_matmul_numpy_path_stops(monkeypatch):
    monkeypatch.setattr(native, "gemm", lambda a, b, parts: None)
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float64, [None, None])
        y = tf.matmul(a, a, name="numpy_product")
        with tf.Session(graph=g) as s:
            _expect_deadline(s, y, {a: np.ones((2500, 2500))}, "numpy_product")
            _healthy(s)


def test_big_batch_matmul_stops():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [None, None, None])
        y = tf.matmul(a, a, name="batched")
        with tf.Session(graph=g) as s:
            _expect_deadline(s, y, {a: np.ones((60, 600, 600), np.float32)}, "batched")


def test_big_conv_stops():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, None, None, 32])
        w = tf.ones([5, 5, 32, 64])
        y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="big_conv")  # 62 GFLOP
        with tf.Session(graph=g) as s:
            _expect_deadline(s, y, {x: np.ones((48, 112, 112, 32), np.float32)}, "big_conv")
            _healthy(s)


@pytest.mark.parametrize("pool", ["max", "avg", "max_numpy"])
def test_big_window_pool_stops(pool, monkeypatch):
    # Windows as large as the input: 250^2 outputs of 250^2 taps each (the C loop for max,
    # NumPy tap loops for avg and for max without the C extension).
    if pool == "max_numpy":
        monkeypatch.setattr(native, "max_pool", lambda *args: None)
    g = tf.Graph()
    with g.as_default():
        x = tf.ones([2, 250, 250, 1])
        fn = tf.nn.avg_pool if pool == "avg" else tf.nn.max_pool
        y = fn(x, [1, 2**31 - 1, 2**31 - 1, 1], [1, 1, 1, 1], "SAME", name="big_pool")
        with tf.Session(graph=g) as s:
            _expect_deadline(s, y, name="big_pool")
            _healthy(s)


@pytest.mark.parametrize("path", ["c", "numpy"])
def test_max_pool_grad_stops(path, monkeypatch):
    if path == "numpy":
        monkeypatch.setattr(native, "max_pool", lambda *args: None)
        monkeypatch.setattr(native, "max_pool_grad", lambda *args: None)
    g = tf.Graph()
    with g.as_default():
        x = tf.ones([2, 250, 250, 1])
        y = tf.nn.max_pool(x, [1, 250, 250, 1], [1, 1, 1, 1], "SAME")
        dx = tf.gradients(y, x)[0]
        with tf.Session(graph=g) as s:
            _expect_deadline(s, dx)


def test_session_close_stops_a_running_kernel():
    g = tf.Graph()
    started = threading.Event()

    def source():
        started.set()
        return np.ones((3000, 3000), np.float32)

    with g.as_default():
        a = tf.py_func(source, [], tf.float32, stateful=True)
        a.set_shape([3000, 3000])
        y = tf.matmul(a, a)
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

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert started.wait(10)
    time.sleep(0.05)  # the product is running (or about to: it stops at its first chunk)
    start = time.monotonic()
    s.close()
    t.join(BOUND_S)
    assert not t.is_alive(), "the step kept running after close"
    assert time.monotonic() - start < BOUND_S
    assert outcome == ["cancelled"]


def test_small_kernels_unaffected_by_a_generous_deadline():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [None, None])
        y = tf.nn.max_pool(tf.reshape(tf.matmul(a, a), [1, 300, 300, 1]), [1, 3, 3, 1],
                           [1, 2, 2, 1], "VALID")
        with tf.Session(graph=g) as s:
            x = np.random.default_rng(0).standard_normal((300, 300)).astype(np.float32)
            got = s.run(y, {a: x}, options=tf.RunOptions(timeout_in_ms=60_000))
            p = (x @ x).reshape(300, 300)
            want = np.max([p[i:i + 297:2, j:j + 297:2] for i in range(3) for j in range(3)],
                          axis=0)
            np.testing.assert_allclose(got[0, :, :, 0], want, rtol=1e-4, atol=1e-3)


def test_check_outside_a_step_is_a_no_op():
    interrupt.check()
    assert interrupt.current() is None
    assert list(interrupt.polled(range(20))) == list(range(20))


def test_big_conv3d_stops():
    # The n-d window kernels (Conv3D, depthwise, 3-D pools) check between batch chunks.
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 24, 24, 24, 8])
        y = tf.nn.conv3d(x, tf.ones([5, 5, 5, 8, 16]), [1] * 5, "SAME", name="big_conv3d")
        with tf.Session(graph=g) as s:  # ~5 s unbounded
            _expect_deadline(s, y, {x: np.ones((96, 24, 24, 24, 8), np.float32)},
                             "big_conv3d")


def test_big_reductions_keeping_axis_0_run_in_row_blocks_that_check_the_step(monkeypatch):
    from tensorflux.kernels.cpu import reduction_ops

    monkeypatch.setattr(reduction_ops, "_CHUNK_ELEMENTS", 1000)
    x = np.random.default_rng(1).standard_normal((64, 50, 7)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None, None, None])
        ys = [tf.reduce_sum(p, [1]), tf.reduce_mean(p, [2], keepdims=True),
              tf.reduce_max(p, [1, 2])]
        with tf.Session(graph=g) as s:
            got = s.run(ys, {p: x})
    # Row blocks give each row exactly what one call gives.
    np.testing.assert_array_equal(got[0], np.add.reduce(x, (1,), np.float32))
    np.testing.assert_array_equal(got[1], np.add.reduce(x, (2,), np.float32,
                                                        keepdims=True) / np.float32(7))
    np.testing.assert_array_equal(got[2], x.max(axis=(1, 2)))

    class Step:  # a step whose deadline has passed
        deadline = time.monotonic() - 1
        cancellation = session = None

    node = type("N", (), {"attrs": {"keep_dims": False}, "op": "Sum"})()
    kdef = registry.find_kernel("Sum", "CPU", {"T": tf.float32, "Tidx": tf.int32})
    with pytest.raises(tf.errors.DeadlineExceededError):
        kdef.factory(node)(Step(), x, np.array([1], np.int32))


def test_big_single_image_conv_stops():
    # One image whose patches would take 600 MB: cut into blocks of output rows (19 GFLOP).
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [1, None, None, 16])
        y = tf.nn.conv2d(x, tf.ones([3, 3, 16, 64]), [1, 1, 1, 1], "SAME", name="one_image")
        with tf.Session(graph=g) as s:
            _expect_deadline(s, y, {x: np.ones((1, 1024, 1024, 16), np.float32)}, "one_image")


def test_row_blocks_of_one_image_compute_the_convolution(monkeypatch):
    from tensorflux.kernels.cpu import conv_ops

    monkeypatch.setattr(conv_ops, "_IMAGE_ROWS_BYTES", 1000)
    monkeypatch.setattr(conv_ops, "_CHUNK_BYTES", 3000)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 19, 17, 3))
    w = rng.standard_normal((3, 2, 3, 4))
    g = tf.Graph()
    with g.as_default():
        y = tf.nn.conv2d(x, w, [1, 2, 1, 1], "SAME", dilations=[1, 1, 2, 1])
        with tf.Session(graph=g) as s:
            got = s.run(y)
    xp = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    want = np.zeros((2, 10, 17, 4))
    for i in range(3):
        for j in range(2):
            want += np.einsum("nhwc,cf->nhwf", xp[:, i:i + 19:2, 2 * j:2 * j + 17], w[i, j])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_a_long_stack_of_matrix_inverses_stops():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [None, 200, 200])
        y = tf.matrix_inverse(x, name="inverses")  # 5,000 inverses: ~30 s unbounded
        with tf.Session(graph=g) as s:
            eye = np.broadcast_to(np.eye(200) * 2, (5000, 200, 200))  # (a view)
            _expect_deadline(s, y, {x: eye}, "inverses")
            small = s.run(y, {x: eye[:3]})
            np.testing.assert_allclose(small, np.broadcast_to(np.eye(200) / 2, (3, 200, 200)))


def test_blocked_linalg_stacks_give_numpys_values(monkeypatch):
    monkeypatch.setattr(interrupt, "CHUNK_FLOPS", 100.0)  # blocks of one 4x4 matrix
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 5, 4, 4))
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float64, [None, None, 4, 4])
        ys = [tf.matrix_inverse(p), tf.matrix_determinant(p), tf.cholesky(p)]
        with tf.Session(graph=g) as s:
            inv, det, chol = s.run(ys, {p: spd})
    np.testing.assert_allclose(inv, np.linalg.inv(spd), rtol=1e-12)
    np.testing.assert_allclose(det, np.linalg.det(spd), rtol=1e-12)
    np.testing.assert_allclose(chol, np.linalg.cholesky(spd), rtol=1e-12)
    assert det.shape == (3, 5)


@pytest.mark.parametrize("strategy", ["auto", "dataflow", "reference"])
def test_an_endless_loop_stops_at_the_deadline_and_on_close(strategy):
    from tensorflux.runtime.exec_options import ExecOptions

    g = tf.Graph()
    with g.as_default():
        r = tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [0], name="endless")
    s = tf.Session(graph=g, exec_options=ExecOptions(strategy=strategy))
    _expect_deadline(s, r)
    outcome = []

    def run():
        try:
            s.run(r)
        except tf.errors.CancelledError:
            outcome.append("cancelled")
        except RuntimeError:  # closed before the step started
            outcome.append("closed")

    t = threading.Thread(target=run, daemon=True)
    t.start()
    time.sleep(0.05)
    s.close()
    t.join(BOUND_S)
    assert not t.is_alive() and outcome in (["cancelled"], ["closed"])


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_big_window_3d_pool_stops(pool):
    g = tf.Graph()
    with g.as_default():
        x = tf.ones([1, 48, 48, 48, 1])  # 110,592 outputs of up to 110,592 taps each
        fn = tf.nn.max_pool3d if pool == "max" else tf.nn.avg_pool3d
        y = fn(x, [1, 2**31 - 1, 2**31 - 1, 2**31 - 1, 1], [1] * 5, "SAME", name="pool3d")
        with tf.Session(graph=g) as s:
            _expect_deadline(s, y, name="pool3d")


@pytest.mark.parametrize("devices", [1, 2])
def test_a_step_that_ends_past_its_deadline_fails_like_tensorflows(devices):
    """No kernel here polls (an elementwise pass, bounded), yet the step outlives its
    deadline: TensorFlow's caller stops waiting at the deadline, so the values never come
    back. The session goes on working."""
    config = tf.ConfigProto(device_count={"CPU": devices})
    with tf.Graph().as_default(), tf.Session(config=config) as sess:
        x = tf.placeholder(tf.float32, [None])
        with tf.device(f"/cpu:{devices - 1}"):
            y = tf.exp(x) + tf.sin(x)
        big = np.ones(2 ** 24, np.float32)
        opts = tf.RunOptions(timeout_in_ms=1)
        with pytest.raises(tf.errors.DeadlineExceededError, match="timeout_in_ms"):
            sess.run(y, {x: big}, options=opts)
        small = sess.run(y, {x: np.zeros(3, np.float32)},
                         options=tf.RunOptions(timeout_in_ms=10_000))
        np.testing.assert_allclose(small, np.ones(3))
        _healthy(sess)
