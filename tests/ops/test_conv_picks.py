"""The convolution paths `kernels/cpu/_conv_picks.py` picks over conv_ops.py's general
rules: input gradients of 5x5 stride-1 convs with few input channels (< 64) and at least
twice as many filters go by products and scatter (`_col2im_backprop_input`), ahead of the
flipped forward conv and the FFT. Values against the loop reference (odd sizes, batch 1,
SAME, VALID and explicit padding, NCHW, one and two threads), which shapes take the pick,
and finite-difference gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import _conv_picks
from tests.ops.nn_cases import _geometry, _run, ref_conv_input_grad

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_which_input_gradients_are_scattered():
    pick = _conv_picks.scatter_input_gradient
    assert pick(5, 5, (1, 1), (1, 1), 16, 32)
    assert pick(5, 5, (1, 1), (1, 1), 32, 96)
    assert pick(5, 5, (1, 1), (1, 1), 48, 192)
    assert not pick(5, 5, (1, 1), (1, 1), 64, 192)  # wide enough to flip (Winograd's)
    assert not pick(5, 5, (1, 1), (1, 1), 32, 32)  # as many filters as channels
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
