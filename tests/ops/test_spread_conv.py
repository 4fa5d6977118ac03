"""Convolutions with few filters by spreading over the filter taps
(tensorflux/kernels/cpu/_spread_conv.py): every stride-1 conv case of the nn table (values
in float32 and float64, finite-difference gradients) goes through it with the small-conv
shortcut off; geometries (padding, dilation, NCHW, batch 1, one channel, a fused bias and
ReLU) agree with the loop references whatever the chunks and threads, bit for bit across
thread counts; an infinity in input pixels no window reads keeps the filter gradient
finite, as the direct convolution does."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import _spread_conv
from tests.op_test_util import check_gradient, check_value, conv2d_gradient_error
from tests.ops.nn_cases import _geometry, _run, ref_conv, ref_conv_filter_grad
from tests.ops.test_conv_ops import CASES

pytestmark = pytest.mark.usefixtures("fresh_graph")

CONV_CASES = [c for c in CASES if c.name.startswith("conv")]


@pytest.fixture
def spread(monkeypatch):
    """Small convs take the general paths (no one-product shortcut: every conv is worth
    the intra-op split), and the spread paths' calls are counted."""
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    calls = {"conv": 0, "backprop_filter": 0}
    for name in calls:
        real = getattr(_spread_conv, name)

        def counted(*args, _real=real, _name=name):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(_spread_conv, name, counted)
    return calls


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_table_values_with_spread_paths(spread, case, dtype):
    check_value(case, dtype)


@pytest.mark.parametrize("case", [c for c in CONV_CASES if c.grad], ids=lambda c: c.name)
def test_table_gradients_with_spread_paths(spread, case):
    check_gradient(case, np.float64)


# (name, input shape NHWC, filter shape, dilations, padding as TF takes it, format)
_CASES = [
    ("f1_5x5_same", (3, 11, 10, 6), (5, 5, 6, 1), (1, 1), "SAME", "NHWC"),
    ("f3_3x3_valid", (2, 9, 12, 4), (3, 3, 4, 3), (1, 1), "VALID", "NHWC"),
    ("c1_f2_dilated", (1, 12, 11, 1), (3, 2, 1, 2), (2, 3), "SAME", "NHWC"),
    ("f8_explicit_asym", (2, 8, 7, 5), (3, 4, 5, 8), (1, 1),
     [[0, 0], [2, 0], [0, 3], [0, 0]], "NHWC"),
    ("f1_nchw", (2, 7, 9, 3), (5, 5, 3, 1), (1, 1), "SAME", "NCHW"),
]


def _operands(case, rng):
    _, shape, wshape, dilations, padding, fmt = case
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    explicit = not isinstance(padding, str)
    pads = [tuple(p) for p in padding[1:3]] if explicit else [(0, 0), (0, 0)]
    mode = "EXPLICIT" if explicit else padding
    oh, _ = _geometry(shape[1], wshape[0], 1, dilations[0], mode, pads[0])
    ow, _ = _geometry(shape[2], wshape[1], 1, dilations[1], mode, pads[1])
    dy = rng.standard_normal((shape[0], oh, ow, wshape[3])).astype(np.float32)
    return x, w, dy, mode, pads


def _ops(case, x, w, dy):
    _, _, wshape, dilations, padding, fmt = case
    d4 = [1, *dilations, 1]
    if fmt == "NCHW":
        x, dy, d4 = x.transpose(0, 3, 1, 2), dy.transpose(0, 3, 1, 2), [1, 1, *dilations]
    y = tf.nn.conv2d(x, w, 1, padding, data_format=fmt, dilations=d4)
    dw = tf.nn.conv2d_backprop_filter(x, list(wshape), dy, [1, 1, 1, 1], padding,
                                      data_format=fmt, dilations=d4)
    bias = np.linspace(-0.5, 0.5, wshape[3]).astype(np.float32)
    fused = tf.nn.relu(tf.nn.bias_add(y, bias, data_format=fmt))  # (fused by the optimizer)
    if fmt == "NCHW":
        return [tf.transpose(y, [0, 2, 3, 1]), dw, tf.transpose(fused, [0, 2, 3, 1])]
    return [y, dw, fused]


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_spread_paths_match_the_loop_references(monkeypatch, spread, case):
    """Forward conv (with a bias and ReLU after it) and filter gradient by spreading agree
    with the loop references, per image or in chunks of images, and give the same bits on
    one thread and on two."""
    _, shape, wshape, dilations, _, _ = case
    rng = np.random.default_rng(31)
    x, w, dy, mode, pads = _operands(case, rng)
    want_y = ref_conv(x, w, (1, 1), mode, dilations, pads)
    want_w = ref_conv_filter_grad(x, wshape, dy, (1, 1), mode, dilations, pads)
    results = []
    for workers, chunk in ((1, 1 << 30), (2, 1), (1, 1)):  # chunks: the batch, one image
        monkeypatch.setattr(intra_op, "workers", lambda ctx=None, n=workers: n)
        monkeypatch.setattr(_spread_conv, "_CHUNK_BYTES", chunk)
        got_y, got_w, got_fused = _run(_ops(case, x, w, dy))
        np.testing.assert_allclose(got_y, want_y, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got_w, want_w, rtol=1e-4, atol=1e-4)
        bias = np.linspace(-0.5, 0.5, wshape[3])
        np.testing.assert_allclose(got_fused, np.maximum(want_y + bias, 0), rtol=1e-4,
                                   atol=1e-4)
        results.append((got_y, got_w))
    for got_y, got_w in results[1:]:
        np.testing.assert_array_equal(got_y, results[-1][0])  # chunks: the same bits
        np.testing.assert_array_equal(got_w, results[-1][1])  # threads: the same bits
    assert spread["conv"] >= 2 and spread["backprop_filter"] == 3


def test_spread_gradients_by_finite_differences(spread):
    """tf.gradients of a 5x5 conv to one channel (float64: forward and filter gradient
    spread) agrees with finite differences."""
    rng = np.random.default_rng(32)
    x = rng.standard_normal((2, 7, 6, 3))
    w = rng.standard_normal((5, 5, 3, 1))
    err = conv2d_gradient_error(x, w, [1, 1, 1, 1], "SAME")
    assert err < 1e-6
    assert spread["conv"] >= 1 and spread["backprop_filter"] >= 1


def test_non_finite_values_stay_in_the_windows_that_read_them(spread):
    """An infinity in the input reaches only the filter-gradient taps that read its pixel
    (with one the filter gradient goes the direct way: the spread product would multiply it
    by the zeros of the other taps), and only the forward conv's windows that read it."""
    rng = np.random.default_rng(33)
    x = rng.standard_normal((2, 8, 9, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 1)).astype(np.float32)
    dy = rng.standard_normal((2, 6, 7, 1)).astype(np.float32)
    x[1, 0, 0, 2] = np.inf  # read by the VALID conv's tap (0, 0) only
    got = _run(tf.nn.conv2d_backprop_filter(x, [3, 3, 3, 1], dy, [1, 1, 1, 1], "VALID"))
    want = ref_conv_filter_grad(x, (3, 3, 3, 1), dy, (1, 1), "VALID")
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    assert np.isfinite(got).sum() == got.size - 1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert spread["backprop_filter"] == 0
    x[0, 3, 3, 1] = np.inf
    y = _run(tf.nn.conv2d(x, w, 1, "SAME"))
    want = ref_conv(x, w, (1, 1), "SAME")
    np.testing.assert_array_equal(np.isfinite(y), np.isfinite(want))
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    assert spread["conv"] == 1


def test_images_too_big_for_one_chunk_take_im2col(monkeypatch, spread):
    """An image whose spread matrix would pass `_IMAGE_BYTES` goes the im2col way (memory
    bounded, the step checked between blocks of rows) with the same values."""
    rng = np.random.default_rng(34)
    x = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    dy = rng.standard_normal((2, 9, 8, 2)).astype(np.float32)
    ops = [tf.nn.conv2d(x, w, 1, "SAME"),
           tf.nn.conv2d_backprop_filter(x, [3, 3, 3, 2], dy, [1, 1, 1, 1], "SAME")]
    spread_y, spread_w = _run(ops)
    assert spread == {"conv": 1, "backprop_filter": 1}
    monkeypatch.setattr(_spread_conv, "_IMAGE_BYTES", 11 * 10 * 9 * 2 * 4 - 1)  # (padded)
    y, dw = _run(ops)
    assert spread == {"conv": 1, "backprop_filter": 1}
    np.testing.assert_allclose(y, spread_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, spread_w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, ref_conv(x, w, (1, 1), "SAME"), rtol=1e-4, atol=1e-4)
