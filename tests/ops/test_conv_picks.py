"""The convolution paths `kernels/cpu/_conv_picks.py` picks over conv_ops.py's general
rules: input gradients of 5x5 stride-1 convs with few input channels (< 64) and at least
twice as many filters go by products and scatter (`_col2im_backprop_input`), ahead of the
flipped forward conv and the FFT; forward convs of a net's first layer (strided, at most 4
input channels) through the C extension's `stem_conv`. Values against the loop reference
(odd sizes, batch 1, SAME, VALID and explicit padding, NCHW, one and two threads, filters
not a multiple of its 64-column tiles, rows not of its 6-pixel ones), which shapes take
the picks, the fused bias and ReLU, and finite-difference gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import _conv_picks, native
from tests.ops.nn_cases import _geometry, _run, ref_conv, ref_conv_input_grad

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_which_input_gradients_are_scattered():
    pick = _conv_picks.scatter_input_gradient
    assert pick(5, 5, (1, 1), (1, 1), 16, 32)
    assert pick(5, 5, (1, 1), (1, 1), 32, 96)
    assert pick(5, 5, (1, 1), (1, 1), 48, 192)
    assert not pick(5, 5, (1, 1), (1, 1), 64, 192)  # wide enough to flip (Winograd's)
    assert not pick(5, 5, (1, 1), (1, 1), 32, 32)  # as many filters as channels
    assert not pick(5, 5, (1, 1), (1, 1), 32, 64)  # twice as many from 32 channels on
    assert pick(5, 5, (1, 1), (1, 1), 24, 48) and pick(5, 5, (1, 1), (1, 1), 48, 128)
    assert not pick(3, 3, (1, 1), (1, 1), 16, 64)  # 3x3 windows keep their rules
    assert not pick(5, 5, (2, 2), (1, 1), 16, 64)  # strided: the phased path
    assert not pick(5, 5, (1, 1), (2, 2), 16, 64)  # dilated


# (name, input shape, filter shape, padding, data format, whether the pick takes it)
_CASES = [
    ("c16_f32_same_odd", (2, 9, 11, 16), (5, 5, 16, 32), "SAME", "NHWC", True),
    ("c32_f96_valid_batch1", (1, 12, 10, 32), (5, 5, 32, 96), "VALID", "NHWC", True),
    ("c24_f64_explicit", (2, 7, 9, 24), (5, 5, 24, 64), [[0, 0], [2, 1], [0, 3], [0, 0]],
     "NHWC", True),
    ("c20_f48_nchw", (2, 8, 7, 20), (5, 5, 20, 48), "SAME", "NCHW", True),
    ("c5_f11_same_batch1", (1, 6, 5, 5), (5, 5, 5, 11), "SAME", "NHWC", True),
    ("c64_f128_flipped", (1, 10, 10, 64), (5, 5, 64, 128), "SAME", "NHWC", False),
    ("c32_f32_flipped", (2, 9, 9, 32), (5, 5, 32, 32), "SAME", "NHWC", False),
]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_scattered_input_gradient_against_the_reference(monkeypatch, workers, case):
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    _, shape, wshape, padding, fmt, picked = case
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    calls = []
    real = kernels._col2im_backprop_input
    monkeypatch.setattr(kernels, "_col2im_backprop_input",
                        lambda *a: calls.append(a[1].shape) or real(*a))
    rng = np.random.default_rng(sum(wshape))
    w = (0.2 * rng.standard_normal(wshape)).astype(np.float32)
    explicit = not isinstance(padding, str)
    pads = [tuple(p) for p in padding[1:3]] if explicit else [(0, 0), (0, 0)]
    mode = "EXPLICIT" if explicit else padding
    oh, _ = _geometry(shape[1], 5, 1, 1, mode, pads[0])
    ow, _ = _geometry(shape[2], 5, 1, 1, mode, pads[1])
    dy = rng.standard_normal((shape[0], oh, ow, wshape[3])).astype(np.float32)
    want = ref_conv_input_grad(shape, w, dy, (1, 1), mode, (1, 1), pads)
    sizes = list(shape)
    if fmt == "NCHW":
        dy, want = dy.transpose(0, 3, 1, 2), want.transpose(0, 3, 1, 2)
        sizes = [shape[0], shape[3], *shape[1:3]]
    got = _run(tf.nn.conv2d_backprop_input(sizes, w, dy, [1, 1, 1, 1], padding,
                                           data_format=fmt))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * np.abs(want).max())
    assert bool(calls) == picked


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_scattered_input_gradient_by_finite_differences(padding):
    """tf.gradients of a 5x5 stride-1 conv's input (3 channels, 8 filters: the pick's path)
    against finite differences, in float64."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 8, 7, 3))
    xt = tf.constant(x)
    y = tf.nn.conv2d(xt, tf.constant(rng.standard_normal((5, 5, 3, 8))), [1, 1, 1, 1],
                     padding)
    with tf.Session():
        err = tf.test.compute_gradient_error(xt, x.shape, y, y.shape.as_list(),
                                             x_init_value=x)
    assert err < 1e-6


_HAS_STEM = native.stem_conv(np.ones((1, 3, 3, 1), np.float32), np.ones((3, 3, 1, 16),
                                                                      np.float32),
                             np.empty((1, 1, 1, 16), np.float32), (2, 2), 1) is not None
needs_stem = pytest.mark.skipif(not _HAS_STEM, reason="no C extension or no AVX-512F")

# (name, input shape, filter shape, strides, padding, data format, whether stem_conv takes
# it)
_STEM_CASES = [
    ("7x7s2_same_odd", (2, 23, 19, 3), (7, 7, 3, 64), (2, 2), "SAME", "NHWC", True),
    ("11x11s4_valid_batch1", (1, 35, 31, 3), (11, 11, 3, 64), (4, 4), "VALID", "NHWC", True),
    ("5x5s3_explicit_f70", (2, 17, 20, 2), (5, 5, 2, 70), (3, 3),
     [[0, 0], [1, 2], [2, 0], [0, 0]], "NHWC", True),
    ("3x3s2_c1_f16", (1, 13, 14, 1), (3, 3, 1, 16), (2, 2), "SAME", "NHWC", True),
    ("7x5s2x3_c4_f100_nchw", (2, 15, 16, 4), (7, 5, 4, 100), (2, 3), "SAME", "NCHW", True),
    ("c5_im2col", (1, 15, 15, 5), (7, 7, 5, 32), (2, 2), "SAME", "NHWC", False),
    ("stride1_im2col", (1, 12, 12, 3), (5, 5, 3, 32), (1, 1), "SAME", "NHWC", False),
]


@needs_stem
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case", _STEM_CASES, ids=[c[0] for c in _STEM_CASES])
def test_stem_forward_against_the_reference(monkeypatch, workers, case):
    from tensorflux.kernels import intra_op

    _, shape, wshape, strides, padding, fmt, picked = case
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    calls = []
    real = native.stem_conv
    monkeypatch.setattr(native, "stem_conv", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(sum(wshape))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    explicit = not isinstance(padding, str)
    pads = [tuple(p) for p in padding[1:3]] if explicit else [(0, 0), (0, 0)]
    want = ref_conv(x, w, strides, "EXPLICIT" if explicit else padding, (1, 1), pads)
    xt, s4 = x, [1, *strides, 1]
    if fmt == "NCHW":
        xt, s4 = x.transpose(0, 3, 1, 2), [1, 1, *strides]
    got = _run(tf.nn.conv2d(xt, w, s4, padding, data_format=fmt))
    if fmt == "NCHW":
        got = got.transpose(0, 2, 3, 1)
    scale = ref_conv(np.abs(x), np.abs(w), strides, "EXPLICIT" if explicit else padding,
                     (1, 1), pads)
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-6)
    assert bool(calls) == picked


@needs_stem
def test_stem_bits_do_not_depend_on_threads_and_declines():
    rng = np.random.default_rng(3)
    xp = rng.standard_normal((3, 29, 31, 3)).astype(np.float32)
    w = rng.standard_normal((7, 7, 3, 80)).astype(np.float32)
    outs = [native.stem_conv(xp, w, np.empty((3, 12, 13, 80), np.float32), (2, 2), parts)
            for parts in (1, 2, 3)]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0], strict=True)
    assert native.stem_conv(xp.astype(np.float64), w.astype(np.float64),
                            np.empty((3, 12, 13, 80)), (2, 2), 1) is None
    assert native.stem_conv(xp[:, ::2], w, np.empty((3, 5, 13, 80), np.float32), (2, 2),
                            1) is None  # not contiguous
    with pytest.raises(ValueError, match="stem_conv"):
        native.stem_conv(xp, w, np.empty((3, 11, 13, 80), np.float32), (2, 2), 1)


@needs_stem
def test_stem_with_bias_relu_and_gradients_by_finite_differences(monkeypatch):
    """A strided 7x7 first layer with bias and ReLU (fused by the graph optimizer, then
    stem_conv and the epilogue) against NumPy, and the gradients of a quadratic loss of
    the plain conv (float32: stem_conv's path) against central finite differences."""
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    rng = np.random.default_rng(9)
    xv = rng.standard_normal((2, 15, 13, 3)).astype(np.float32)
    wv = (0.2 * rng.standard_normal((7, 7, 3, 24))).astype(np.float32)
    bv = rng.standard_normal(24).astype(np.float32)
    x, w = tf.placeholder(tf.float32, xv.shape), tf.placeholder(tf.float32, wv.shape)
    y = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME")
    act = tf.nn.relu(tf.nn.bias_add(y, bv))
    loss = 0.5 * tf.reduce_sum(tf.square(y))
    gx, gw = tf.gradients(loss, [x, w])
    with tf.Session() as sess:
        av, yv, gxv, gwv = sess.run([act, y, gx, gw], {x: xv, w: wv})
        want = ref_conv(xv, wv, (2, 2), "SAME")
        np.testing.assert_allclose(yv, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(av, np.maximum(want + bv, 0), rtol=1e-4, atol=1e-4)
        eps = 0.05
        for arr, grad, at in [(xv, gxv, (1, 7, 6, 2)), (wv, gwv, (3, 3, 1, 5))]:
            up, down = arr.copy(), arr.copy()
            up[at] += eps
            down[at] -= eps
            feed = (lambda v: {x: v, w: wv}) if arr is xv else (lambda v: {x: xv, w: v})
            fd = (sess.run(loss, feed(up)) - sess.run(loss, feed(down))) / (2 * eps)
            assert abs(fd - grad[at]) <= 1e-2 * max(1.0, abs(grad[at]))
