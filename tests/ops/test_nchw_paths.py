"""NCHW convolutions and fused batch norms on the CPU: the NCHW <-> NHWC transposes by the
tiled native copy (native.swap_last2, _nn_common._to_nhwc/_from_nhwc) and the batch norms'
channel-first C loops (native.bn_cf_sums, bn_cf_rows). NCHW convolutions equal the NHWC
ones on the same data transposed, bit for bit (the transposes are exact copies); NCHW
batch norms match NHWC within float32 rounding (their sums run in another order) and are
the same on any number of threads; gradients agree with finite differences; odd shapes and
strides."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import _fft_conv, _nchw_shared, _nn_common, native
from tests import oracle
from tests.op_test_util import conv2d_gradient_error

pytestmark = pytest.mark.usefixtures("fresh_graph")

needs_native = pytest.mark.skipif(not native.available(),
                                  reason="the C extension is not built")


def _nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


@needs_native
@pytest.mark.parametrize("shape", [(3, 5, 7), (2, 9, 17), (1, 33, 65), (4, 8, 8), (1, 1, 100),
                                   (3, 100, 1), (2, 40, 41), (0, 4, 4), (2, 0, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
def test_swap_last2_equals_numpy_swapaxes(shape, dtype):
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    if dtype == np.float32 and x.size:
        x.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
    got = native.swap_last2(x, parts=2)
    assert got.flags.c_contiguous and got.shape == shape[:-2] + (shape[-1], shape[-2])
    np.testing.assert_array_equal(got.view(np.uint8), np.ascontiguousarray(
        np.swapaxes(x, -1, -2)).view(np.uint8))


@needs_native
def test_swap_last2_refuses_what_it_does_not_take():
    x = np.zeros((4, 6), np.float32)
    assert native.swap_last2(x.T) is None  # not C-contiguous
    assert native.swap_last2(np.zeros(5, np.float32)) is None  # 1-D
    assert native.swap_last2(np.zeros((2, 2), np.int8)) is None  # 1-byte elements
    assert native.swap_last2(np.zeros((2, 2), object)) is None


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (8, 16, 32, 32), (3, 7, 9, 11), (64, 5, 7, 3)])
def test_to_and_from_nhwc_are_exact_contiguous_transposes(shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    h = _nn_common._to_nhwc(x, "NCHW")
    np.testing.assert_array_equal(h, x.transpose(0, 2, 3, 1))
    back = _nn_common._from_nhwc(np.ascontiguousarray(h), "NCHW")
    assert back.flags.c_contiguous
    np.testing.assert_array_equal(back, x)
    if x.size >= _nn_common.SWAP_MIN_ELEMENTS and native.available():
        assert h.flags.c_contiguous
    assert _nn_common._to_nhwc(x, "NHWC") is x


# (N, H, W, C, F, k, stride, padding)
CONVS = [(4, 17, 19, 16, 8, 3, 1, "SAME"), (8, 32, 32, 16, 32, 3, 2, "SAME"),
         (8, 32, 32, 16, 32, 1, 2, "SAME"), (3, 13, 11, 5, 7, 3, 2, "VALID"),
         (16, 8, 8, 64, 64, 3, 1, "SAME"), (2, 9, 9, 3, 4, 5, 3, "VALID")]


@pytest.mark.parametrize("case", CONVS, ids=lambda c: "x".join(map(str, c)))
def test_conv_nchw_equals_nhwc_bit_for_bit(case):
    n, h, w, c, f, k, s, pad = case
    rng = np.random.default_rng(h * w + c)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    wt = (rng.standard_normal((k, k, c, f)) * 0.2).astype(np.float32)
    results = {}
    for fmt, xx in (("NHWC", x), ("NCHW", _nchw(x))):
        with tf.Graph().as_default():
            xc, wc = tf.constant(xx), tf.constant(wt)
            strides = [1, s, s, 1] if fmt == "NHWC" else [1, 1, s, s]
            y = tf.nn.conv2d(xc, wc, strides, pad, data_format=fmt)
            dy = tf.constant(np.random.default_rng(7).standard_normal(
                y.shape.as_list()).astype(np.float32))
            gx, gw = tf.gradients(y, [xc, wc], grad_ys=dy)
            with tf.Session() as sess:
                results[fmt] = sess.run([y, gx, gw])
    got = results["NCHW"]
    want = results["NHWC"]
    # the NCHW run's dy is the NHWC shape's random values laid out as NCHW: compare the
    # forward exactly, and the gradients against the NHWC run fed the transposed dy below
    np.testing.assert_array_equal(_nhwc(got[0]), want[0])
    with tf.Graph().as_default():
        xc, wc = tf.constant(x), tf.constant(wt)
        y = tf.nn.conv2d(xc, wc, [1, s, s, 1], pad)
        dy = np.random.default_rng(7).standard_normal(got[0].shape).astype(np.float32)
        gx, gw = tf.gradients(y, [xc, wc], grad_ys=tf.constant(_nhwc(dy)))
        with tf.Session() as sess:
            want_gx, want_gw = sess.run([gx, gw])
    np.testing.assert_array_equal(_nhwc(got[1]), want_gx)
    np.testing.assert_array_equal(got[2], want_gw)


def test_conv_nchw_gradients_by_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 9, 7))
    w = rng.standard_normal((3, 3, 3, 4)) * 0.3
    err = conv2d_gradient_error(x, w, [1, 1, 2, 2], "SAME", "NCHW")
    assert err < 1e-6


def _bn_step(x, dy, s, o, fmt, training, tail):
    """fused_batch_norm's outputs and gradients (x, scale, offset) on `x` in `fmt`; `tail`
    'relu' or 'side' adds ReLU(y) or ReLU(y + x) (the graph optimizer may fuse them)."""
    stats = {} if training else {"mean": s * 0.5, "variance": s + 0.5}
    with tf.Graph().as_default():
        xt, st, ot = tf.constant(x), tf.constant(s), tf.constant(o)
        y, bm, bv = tf.nn.fused_batch_norm(xt, st, ot, epsilon=1e-3, data_format=fmt,
                                           is_training=training, **stats)
        if tail == "relu":
            y = tf.nn.relu(y)
        elif tail == "side":
            y = tf.nn.relu(y + xt)
        grads = tf.gradients(y, [xt, st, ot], grad_ys=tf.constant(dy))
        with tf.Session() as sess:
            return sess.run([y, bm, bv] + grads)


@pytest.mark.parametrize("shape", [(8, 32, 32, 16), (4, 7, 9, 24), (64, 8, 8, 64),
                                   (3, 5, 5, 3)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("tail", ["", "relu", "side"])
def test_batch_norm_nchw_equals_nhwc_bit_for_bit(shape, training, tail):
    rng = np.random.default_rng(shape[1] * shape[3])
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    c = shape[3]
    s = rng.uniform(0.5, 2, c).astype(np.float32)
    o = rng.standard_normal(c).astype(np.float32)
    want = _bn_step(x, dy, s, o, "NHWC", training, tail)
    got = _bn_step(_nchw(x), _nchw(dy), s, o, "NCHW", training, tail)
    got[0], got[3] = _nhwc(got[0]), _nhwc(got[3])
    for g, w in zip(got, want, strict=True):  # the sums in another order
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    if not training and not tail:  # the same per-channel vectors: the same elementwise bits
        np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_nchw_gradients_by_finite_differences(training):
    """Directional derivatives (central differences in float64 of the float32 kernel's loss
    along random directions) against the gradients, on data big enough for the transposed
    path (8 x 6 x 13 x 11)."""
    rng = np.random.default_rng(11)
    shape = (8, 6, 13, 11)
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    s = rng.uniform(0.5, 2, 6).astype(np.float32)
    o = rng.standard_normal(6).astype(np.float32)
    weights = rng.standard_normal(shape).astype(np.float32)
    stats = {} if training else {"mean": s * 0.1, "variance": s}
    xp, sp, op = (tf.placeholder(tf.float32, a.shape) for a in (x, s, o))
    y, _, _ = tf.nn.fused_batch_norm(xp, sp, op, epsilon=1e-3, data_format="NCHW",
                                     is_training=training, **stats)
    loss = tf.reduce_sum(y * weights)
    grads = tf.gradients(loss, [xp, sp, op])
    with tf.Session() as sess:
        def at(a, b, c):
            return float(sess.run(loss, {xp: a, sp: b, op: c}))

        g = sess.run(grads, {xp: x, sp: s, op: o})
        for _ in range(3):
            v = [rng.standard_normal(a.shape).astype(np.float32) for a in (x, s, o)]
            eps = 1e-2
            plus = at(*(a + eps * d for a, d in zip((x, s, o), v, strict=True)))
            minus = at(*(a - eps * d for a, d in zip((x, s, o), v, strict=True)))
            numeric = (plus - minus) / (2 * eps)
            analytic = sum(float(np.vdot(gi.astype(np.float64), d)) for gi, d in
                           zip(g, v, strict=True))
            assert abs(numeric - analytic) <= 2e-2 * max(1.0, abs(analytic))


@needs_native
@pytest.mark.parametrize("shape", [(64, 16, 32, 32), (5, 3, 7, 9), (2, 4, 300, 301),
                                   (3, 2, 5, 4, 6)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channel_first_loops_match_float64_and_do_not_depend_on_threads(shape, dtype):
    rng = np.random.default_rng(shape[2])
    x, y = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    c = shape[1]
    v, k1, k2, k3 = (rng.standard_normal(c).astype(dtype) for _ in range(4))
    axes = tuple(i for i in range(len(shape)) if i != 1)
    b = (1, -1) + (1,) * (len(shape) - 2)
    r = np.maximum(y, 0)
    d = x.astype(np.float64) - v.reshape(b)
    g = y.astype(np.float64) * (r > 0)
    want = {0: (d.sum(axes), (d * d).sum(axes)), 1: (y.astype(np.float64).sum(axes),
                                                     (d * y).sum(axes)),
            2: (g.sum(axes), (d * g).sum(axes))}
    for kind, (w0, w1) in want.items():
        extra = (r,) if kind == 2 else ()
        one = native.bn_cf_sums(kind, x, x if kind == 0 else y, v, 1, *extra)
        three = native.bn_cf_sums(kind, x, x if kind == 0 else y, v, 3, *extra)
        np.testing.assert_array_equal(one, three)
        scale = np.abs(d).sum(axes).max() * np.abs(y).max() + 1
        np.testing.assert_allclose(one[0], w0, atol=1e-5 * scale)
        np.testing.assert_allclose(one[1], w1, atol=1e-5 * scale)
    bv = [a.reshape(b) for a in (v, k1, k2, k3)]
    rows = {0: (x - bv[0]) * bv[1] + bv[2],
            1: ((y * bv[1]) - ((x - bv[0]) * bv[2])) - bv[3],
            2: y * bv[1], 3: np.maximum((x - bv[0]) * bv[1] + bv[2], 0),
            4: (((y * (r > 0)) * bv[1]) - ((x - bv[0]) * bv[2])) - bv[3],
            5: (y * (r > 0)) * bv[1],
            6: np.maximum(((x - bv[0]) * bv[1] + bv[2]) + r, 0)}
    for kind, w in rows.items():
        out = np.empty_like(x)
        assert native.bn_cf_rows(kind, x, y, out, v, k1, k2, k3, 2,
                                 r if kind >= 4 else None)
        np.testing.assert_array_equal(out, w.astype(dtype))


@needs_native
def test_channel_first_loops_refuse_what_they_do_not_take():
    x = np.zeros((2, 3, 4, 5), np.float32)
    v = np.zeros(3, np.float32)
    assert native.bn_cf_sums(0, x, x, np.zeros(4, np.float32), 1) is None  # not C
    assert native.bn_cf_sums(0, x, x.astype(np.float64), v, 1) is None
    assert native.bn_cf_sums(2, x, x, v, 1) is None  # kind 2 without the ReLU output
    assert native.bn_cf_sums(0, x[:, :, :, :2], x[:, :, :, :2], v, 1) is None
    assert native.bn_cf_sums(0, np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32),
                             v, 1) is None
    assert not native.bn_cf_rows(4, x, x, np.empty_like(x), v, v, v, v, 1)
    assert not native.bn_cf_rows(0, x, x, np.empty_like(x)[..., ::-1], v, v, v, v, 1)


def test_shared_nhwc_copies_serve_both_kernels_then_leave_the_store():
    class Ctx:
        step_container: dict = {}

    ctx = Ctx()
    ctx.step_container = {}
    x = np.random.default_rng(2).standard_normal((4, 8, 16, 16)).astype(np.float32)
    first = _nchw_shared.nhwc(ctx, x, "NCHW", "forward")
    np.testing.assert_array_equal(first, x.transpose(0, 2, 3, 1))
    store = _fft_conv._spectra(ctx)
    assert len(store.entries) == 1
    assert _nchw_shared.nhwc(ctx, x, "NCHW", "filter") is first
    assert not store.entries and store.bytes == 0  # both kinds took it
    dy = x[:2].copy()
    got = _nchw_shared.nhwc(ctx, dy, "NCHW", "input", "dy")
    assert _nchw_shared.nhwc(ctx, dy, "NCHW", "filter", "dy") is got
    assert not store.entries
    assert _nchw_shared.nhwc(ctx, x, "NHWC", "forward") is x
    assert _nchw_shared.nhwc(None, x, "NCHW", "forward") is not first  # no step: no store


@pytest.mark.oracle
def test_nchw_residual_block_matches_tensorflow():
    """conv3x3 (strides 1 and 2) - fused batch norm (training) - ReLU - residual add -
    bias add, all NCHW, and the gradients of a loss over it, against TensorFlow 2.21."""
    rng = np.random.RandomState(5)
    x = rng.randn(4, 8, 12, 12).astype(np.float32)
    w1 = (rng.randn(3, 3, 8, 8) * 0.2).astype(np.float32)
    w2 = (rng.randn(3, 3, 8, 16) * 0.2).astype(np.float32)
    s, o = rng.rand(8).astype(np.float32) + 0.5, rng.randn(8).astype(np.float32)
    b = rng.randn(16).astype(np.float32)
    body = """
h = tf.nn.conv2d(x, w1, [1, 1, 1, 1], "SAME", data_format="NCHW")
h, m, v = tf.nn.fused_batch_norm(h, s, o, epsilon=0.001, data_format="NCHW")
h = tf.nn.relu(h + x)
y = tf.nn.bias_add(tf.nn.conv2d(h, w2, [1, 1, 2, 2], "SAME", data_format="NCHW"), b,
                   data_format="NCHW")
loss = tf.reduce_sum(tf.sin(y))
out = [y, m, v] + tf.gradients(loss, [x, w1, w2, s, o, b])
"""
    arrays = {"x": x, "w1": w1, "w2": w2, "s": s, "o": o, "b": b}
    setup = "\n".join(f"{k} = tf.constant(np.array({a.tolist()}, np.float32))"
                      for k, a in arrays.items())
    theirs = oracle.run_tf(f"{setup}\n{body}\nresult = tf.Session().run(out)")
    scope = {"tf": tf, **{k: tf.constant(a) for k, a in arrays.items()}}
    exec(body, scope)  # noqa: S102 - the same program as the oracle's
    ours = tf.Session().run(scope["out"])
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
