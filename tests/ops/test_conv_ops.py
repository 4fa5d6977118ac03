"""Convolution ops (tensorflux/ops/conv_ops.py) and their CPU kernels: Conv2D and its
backprops against explicit-loop NumPy references, finite-difference gradients, the chunked
and parallel kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.op_test_util import OpCase, conv2d_gradient_error, default_make
from tests.ops.nn_cases import (
    _conv_case,
    _geometry,
    _run,
    ref_conv,
    ref_conv_filter_grad,
    ref_conv_input_grad,
    table_tests,
)

# Each test runs on a fresh default graph (tests/ops/conftest.py).
pytestmark = pytest.mark.usefixtures("fresh_graph")


def _scaled(rng, shape, dtype):
    return (0.2 * default_make(rng, shape, dtype)).astype(dtype)


CASES = [
    # Conv2D: padding, strides, dilations, formats, explicit padding, groups.
    _conv_case("conv_same", (2, 5, 5, 3), (3, 3, 3, 2)),
    _conv_case("conv_valid", (2, 5, 6, 3), (3, 2, 3, 2), padding="VALID"),
    _conv_case("conv_same_s2", (1, 5, 6, 2), (3, 3, 2, 2), strides=(2, 2)),
    _conv_case("conv_valid_s23", (1, 7, 8, 2), (2, 3, 2, 3), strides=(2, 3), padding="VALID"),
    _conv_case("conv_dilated", (1, 6, 6, 2), (2, 2, 2, 2), dilations=(2, 2)),
    _conv_case("conv_dilated_valid", (1, 6, 7, 2), (2, 3, 2, 2), dilations=(2, 1),
               padding="VALID"),
    _conv_case("conv_nchw", (2, 3, 4, 5), (3, 3, 3, 2), nchw=True),
    _conv_case("conv_explicit", (1, 4, 5, 2), (3, 3, 2, 2), explicit=((1, 2), (0, 1))),
    _conv_case("conv_1x1", (2, 3, 3, 4), (1, 1, 4, 3)),
    # 1x1 windows: single products (strided: on every stride-th pixel).
    _conv_case("conv_1x1_s2_same", (2, 5, 5, 3), (1, 1, 3, 4), strides=(2, 2)),
    _conv_case("conv_1x1_s23_valid", (1, 6, 7, 2), (1, 1, 2, 3), strides=(2, 3),
               padding="VALID"),
    _conv_case("conv_1x1_nchw_s2", (2, 3, 4, 4), (1, 1, 3, 2), strides=(2, 2), nchw=True),
    # 3x3 with >= 48 channels and >= 100 output pixels: Winograd F(2x2, 3x3), even and
    # odd output sizes (values; the backprop-input through the flipped forward conv).
    _conv_case("conv_winograd_same", (2, 21, 20, 48), (3, 3, 48, 50), grad=False),
    _conv_case("conv_winograd_valid", (1, 23, 24, 50), (3, 3, 50, 48), padding="VALID",
               grad=False),
    OpCase("conv_backprop_input_winograd",
           lambda w, dy: tf.nn.conv2d_backprop_input([2, 21, 20, 48], w, dy, [1, 1, 1, 1],
                                                     "SAME"),
           lambda w, dy: ref_conv_input_grad((2, 21, 20, 48), w, dy, (1, 1), "SAME"),
           shapes=[(3, 3, 48, 50), (2, 21, 20, 50)], grad=False),
    OpCase("conv_backprop_filter_winograd",
           lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 3, 48, 50], dy, [1, 1, 1, 1],
                                                      "SAME"),
           lambda x, dy: ref_conv_filter_grad(x, (3, 3, 48, 50), dy, (1, 1), "SAME"),
           shapes=[(2, 21, 20, 48), (2, 21, 20, 50)], grad=False),
    OpCase("conv_backprop_filter_winograd_valid",
           lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 3, 50, 48], dy, [1, 1, 1, 1],
                                                      "VALID"),
           lambda x, dy: ref_conv_filter_grad(x, (3, 3, 50, 48), dy, (1, 1), "VALID"),
           shapes=[(1, 23, 24, 50), (1, 21, 22, 48)], grad=False),
    # Many channels on a small image: Winograd "wide" (all tiles, then 16 batch products).
    _conv_case("conv_winograd_wide", (3, 11, 10, 256), (3, 3, 256, 192), grad=False),
    OpCase("conv_backprop_input_winograd_wide",
           lambda w, dy: tf.nn.conv2d_backprop_input([3, 11, 10, 256], w, dy, [1, 1, 1, 1],
                                                     "SAME"),
           lambda w, dy: ref_conv_input_grad((3, 11, 10, 256), w, dy, (1, 1), "SAME"),
           shapes=[(3, 3, 256, 192), (3, 11, 10, 192)], grad=False),
    OpCase("conv_backprop_filter_winograd_wide",
           lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 3, 256, 192], dy, [1, 1, 1, 1],
                                                      "VALID"),
           lambda x, dy: ref_conv_filter_grad(x, (3, 3, 256, 192), dy, (1, 1), "VALID"),
           shapes=[(3, 13, 12, 256), (3, 11, 10, 192)], grad=False),
    # 5x5 with >= 64 channels and >= 100 output pixels: Winograd F(2x2, 5x5) (wide), even
    # and odd output sizes; the backprop-input through the flipped forward conv. (Inputs
    # scaled by 0.2: sums of 1,600-1,750 products of normal values reach ~40, where F(2x2,
    # 5x5)'s float32 rounding, a few 1e-6 of the magnitude, passes the absolute 1e-4.)
    OpCase("conv_winograd5_same", lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
           lambda x, w: ref_conv(x, w, (1, 1), "SAME"), shapes=[(2, 10, 10, 64), (5, 5, 64, 65)],
           make=_scaled, grad=False),
    OpCase("conv_winograd5_valid", lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"),
           lambda x, w: ref_conv(x, w, (1, 1), "VALID"),
           shapes=[(1, 14, 15, 66), (5, 5, 66, 64)], make=_scaled, grad=False),
    OpCase("conv_backprop_input_winograd5",
           lambda w, dy: tf.nn.conv2d_backprop_input([2, 10, 11, 64], w, dy, [1, 1, 1, 1],
                                                     "SAME"),
           lambda w, dy: ref_conv_input_grad((2, 10, 11, 64), w, dy, (1, 1), "SAME"),
           shapes=[(5, 5, 64, 70), (2, 10, 11, 70)], make=_scaled, grad=False),
    _conv_case("conv_grouped", (1, 4, 4, 4), (2, 2, 2, 4), padding="VALID"),
    _conv_case("conv_big_batch", (40, 4, 4, 2), (3, 3, 2, 2), grad=False),
    OpCase("conv_backprop_input",
           lambda w, dy: tf.nn.conv2d_backprop_input([2, 5, 6, 3], w, dy, [1, 2, 2, 1],
                                                     "SAME"),
           lambda w, dy: ref_conv_input_grad((2, 5, 6, 3), w, dy, (2, 2), "SAME"),
           shapes=[(3, 3, 3, 2), (2, 3, 3, 2)]),
    OpCase("conv_backprop_input_dilated",
           lambda w, dy: tf.nn.conv2d_backprop_input([1, 5, 5, 2], w, dy, [1, 1, 1, 1],
                                                     "VALID", dilations=[1, 2, 2, 1]),
           lambda w, dy: ref_conv_input_grad((1, 5, 5, 2), w, dy, (1, 1), "VALID", (2, 2)),
           shapes=[(2, 2, 2, 3), (1, 3, 3, 3)]),
    OpCase("conv_transpose",
           lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 4, 4, 2], [1, 2, 2, 1]),
           lambda x, w: ref_conv_input_grad((1, 4, 4, 2), w, x, (2, 2), "SAME"),
           shapes=[(1, 2, 2, 3), (3, 3, 2, 3)]),
    OpCase("conv_backprop_filter",
           lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 2, 3, 2], dy, [1, 1, 1, 1],
                                                      "VALID"),
           lambda x, dy: ref_conv_filter_grad(x, (3, 2, 3, 2), dy, (1, 1), "VALID"),
           shapes=[(2, 4, 4, 3), (2, 2, 3, 2)]),
    OpCase("conv_backprop_filter_s2",
           lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 2], dy, [1, 2, 2, 1],
                                                      "SAME"),
           lambda x, dy: ref_conv_filter_grad(x, (3, 3, 2, 2), dy, (2, 2), "SAME"),
           shapes=[(1, 5, 5, 2), (1, 3, 3, 2)]),
]
test_value, test_value_low_precision, test_gradient = table_tests(CASES)


@pytest.mark.parametrize("blas_threads", [1, 2])
@pytest.mark.parametrize("strides, padding", [((1, 1), "SAME"), ((2, 2), "VALID")])
def test_conv_kernels_chunked_and_parallel(monkeypatch, blas_threads, strides, padding):
    """The batch chunking, the intra-op split and both backprop-input strategies (chosen by
    the BLAS thread count) agree with the loop references."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    monkeypatch.setattr(intra_op, "blas_threads", lambda: blas_threads)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 1)  # one image per chunk
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 6, 5, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    y = ref_conv(x, w, strides, padding)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    s4 = [1, *strides, 1]
    got = _run([tf.nn.conv2d(x, w, s4, padding),
                tf.nn.conv2d_backprop_input(list(x.shape), w, dy, s4, padding),
                tf.nn.conv2d_backprop_filter(x, list(w.shape), dy, s4, padding)])
    want = [y, ref_conv_input_grad(x.shape, w, dy, strides, padding),
            ref_conv_filter_grad(x, w.shape, dy, strides, padding)]
    for g, wnt in zip(got, want, strict=True):
        np.testing.assert_allclose(g, wnt, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("padding, dilations, pads, flipped", [
    ("SAME", (1, 1), None, True), ("VALID", (1, 1), None, True), ("SAME", (2, 1), None, True),
    ("EXPLICIT", (1, 1), ((1, 0), (1, 1)), True),
    ("EXPLICIT", (1, 1), ((4, 0), (0, 0)), False),  # padding past the window: scatter path
])
def test_backprop_input_as_flipped_conv(monkeypatch, workers, padding, dilations, pads,
                                        flipped):
    """Stride-1 backprop-input with many input channels is a forward conv of the padded
    out_backprop with the flipped filter; it agrees with the loop reference."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 1)  # one image per chunk
    if flipped:
        def no_scatter(*args):
            raise AssertionError("expected the flipped-conv path")

        monkeypatch.setattr(kernels, "_col2im_backprop_input", no_scatter)
    rng = np.random.default_rng(5)
    c = kernels._FLIP_MIN_CHANNELS
    shape = (3, 6, 5, c)
    w = rng.standard_normal((3, 2, c, 4)).astype(np.float32)
    pads = pads or ((0, 0), (0, 0))
    oh, _ = _geometry(shape[1], 3, 1, dilations[0], padding, pads[0])
    ow, _ = _geometry(shape[2], 2, 1, dilations[1], padding, pads[1])
    dy = rng.standard_normal((3, oh, ow, 4)).astype(np.float32)
    tf_padding = padding if padding != "EXPLICIT" else [[0, 0], list(pads[0]), list(pads[1]),
                                                        [0, 0]]
    got = _run(tf.nn.conv2d_backprop_input(list(shape), w, dy, [1, 1, 1, 1], tf_padding,
                                           dilations=[1, *dilations, 1]))
    want = ref_conv_input_grad(shape, w, dy, (1, 1), padding, dilations, pads)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("strides, padding", [((1, 1), "SAME"), ((2, 2), "SAME"),
                                              ((1, 1), "VALID")])
def test_whole_batch_patch_matrix(monkeypatch, workers, strides, padding):
    """Small images with more filters than a batch chunk has rows: the conv, its
    backprop-input (the flipped conv) and backprop-filter copy the whole batch's patch
    matrix and run one split product; they agree with the loop references."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 1)  # one image per chunk
    monkeypatch.setattr(kernels, "_PHASED_MIN_CHANNELS", 16)
    calls = []
    whole = kernels._whole_patches
    monkeypatch.setattr(kernels, "_whole_patches", lambda *a: calls.append(1) or whole(*a))
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 3, 4, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 20)).astype(np.float32)
    y = ref_conv(x, w, strides, padding)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    s4 = [1, *strides, 1]
    got = _run([tf.nn.conv2d(x, w, s4, padding),
                tf.nn.conv2d_backprop_input(list(x.shape), w, dy, s4, padding),
                tf.nn.conv2d_backprop_filter(x, list(w.shape), dy, s4, padding)])
    want = [y, ref_conv_input_grad(x.shape, w, dy, strides, padding),
            ref_conv_filter_grad(x, w.shape, dy, strides, padding)]
    for g, wnt in zip(got, want, strict=True):
        np.testing.assert_allclose(g, wnt, rtol=1e-4, atol=1e-4)
    # (a strided backprop-input runs by phases: three of its four have windows of > 1 tap)
    assert len(calls) == (3 if strides == (1, 1) else 5)


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_blocks_of_output_rows_for_big_images_with_few_filters(monkeypatch, strides):
    """An image whose patches outgrow a chunk, with few filters (the 7x7/2 stem, AlexNet's
    11x11/4), runs its conv and backprop-filter per block of output rows; the values agree
    with the loop references."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 3000)  # 2-3 output rows of 10 per block
    monkeypatch.setattr(kernels._spread_conv, "MAX_FILTERS", 0)  # (2 filters: else spread)
    calls = []
    for name in ("_im2col_matmul_rows", "_backprop_filter_rows"):
        fn = getattr(kernels, name)
        monkeypatch.setattr(kernels, name,
                            lambda *a, fn=fn, name=name: calls.append(name) or fn(*a))
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 12, 10, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    if strides == (2, 2):
        x = rng.standard_normal((2, 24, 20, 3)).astype(np.float32)
    y = ref_conv(x, w, strides, "SAME")
    dy = rng.standard_normal(y.shape).astype(np.float32)
    s4 = [1, *strides, 1]
    got = _run([tf.nn.conv2d(x, w, s4, "SAME"),
                tf.nn.conv2d_backprop_filter(x, list(w.shape), dy, s4, "SAME")])
    want = [y, ref_conv_filter_grad(x, w.shape, dy, strides, "SAME")]
    for g, wnt in zip(got, want, strict=True):
        np.testing.assert_allclose(g, wnt, rtol=1e-4, atol=1e-4)
    assert sorted(calls) == ["_backprop_filter_rows", "_im2col_matmul_rows"]


# (name, input shape NHWC, filter shape, strides, dilations, padding as TF takes it,
# data format): input gradients by products and scatter (native.col2im)
_COL2IM_CASES = [
    ("c1_5x5_s2_same", (3, 28, 27, 1), (5, 5, 1, 8), (2, 2), (1, 1), "SAME", "NHWC"),
    ("c3_5x5_s1_same", (2, 9, 8, 3), (5, 5, 3, 4), (1, 1), (1, 1), "SAME", "NHWC"),
    ("c2_3x3_s3_valid", (1, 11, 10, 2), (3, 3, 2, 5), (3, 3), (1, 1), "VALID", "NHWC"),
    ("c1_s2x3_dilated", (2, 12, 13, 1), (3, 2, 1, 3), (2, 3), (2, 2), "VALID", "NHWC"),
    ("c4_explicit_asym", (2, 7, 9, 4), (3, 3, 4, 3), (2, 1), (1, 1),
     [[0, 0], [2, 0], [0, 1], [0, 0]], "NHWC"),
    ("c3_nchw_s2", (2, 10, 9, 3), (5, 5, 3, 4), (2, 2), (1, 1), "SAME", "NCHW"),
    ("c40_by_tap_dilated_s2", (2, 9, 9, 40), (3, 3, 40, 6), (2, 2), (2, 2), "SAME", "NHWC"),
    ("c16_all_taps_dilated_s2", (1, 9, 8, 16), (3, 3, 16, 5), (2, 2), (2, 1), "SAME",
     "NHWC"),
]


@pytest.mark.parametrize("workers, rows", [(1, False), (2, False), (2, True)])
@pytest.mark.parametrize("case", _COL2IM_CASES, ids=[c[0] for c in _COL2IM_CASES])
def test_backprop_input_by_products_and_scatter(monkeypatch, workers, rows, case):
    """Conv2DBackpropInput by products (one per tap, or one with every tap's columns for
    few input channels) and the C scatter (per batch chunk, or per block of rows of a big
    image) agrees with the loop reference: strides 1-3, SAME/VALID/explicit padding,
    dilations, NCHW, batch 1, one channel."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    _, shape, wshape, strides, dilations, padding, fmt = case
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 1)  # one image per chunk
    if rows:
        monkeypatch.setattr(kernels, "_IMAGE_ROWS_BYTES", 1)  # blocks of rows
    calls = []
    real = kernels._scatter_taps
    monkeypatch.setattr(kernels, "_scatter_taps", lambda *a: calls.append(a[2]) or real(*a))
    rng = np.random.default_rng(21)
    w = rng.standard_normal(wshape).astype(np.float32)
    explicit = not isinstance(padding, str)
    pads = [tuple(p) for p in padding[1:3]] if explicit else [(0, 0), (0, 0)]
    mode = "EXPLICIT" if explicit else padding
    oh, _ = _geometry(shape[1], wshape[0], strides[0], dilations[0], mode, pads[0])
    ow, _ = _geometry(shape[2], wshape[1], strides[1], dilations[1], mode, pads[1])
    dy = rng.standard_normal((shape[0], oh, ow, wshape[3])).astype(np.float32)
    want = ref_conv_input_grad(shape, w, dy, strides, mode, dilations, pads)
    sizes, s4, d4 = list(shape), [1, *strides, 1], [1, *dilations, 1]
    if fmt == "NCHW":
        dy, want = dy.transpose(0, 3, 1, 2), want.transpose(0, 3, 1, 2)
        sizes, s4, d4 = [shape[0], shape[3], *shape[1:3]], [1, 1, *strides], [1, 1, *dilations]
    got = _run(tf.nn.conv2d_backprop_input(sizes, w, dy, s4, padding, data_format=fmt,
                                           dilations=d4))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert calls and set(calls) == {shape[3] >= kernels._TAP_MIN_CHANNELS}


# (path, seed, input shape, filter shape): stride-2 SAME convs in float64
_BACKPROP_INPUT_FD_CASES = [
    ("scatter", 22, (2, 9, 8, 1), (5, 5, 1, 3)),  # products with every tap's columns + C scatter
    ("phases", 8, (1, 7, 6, 16), (3, 3, 16, 3)),  # the phased strided path (from 16 here)
]


@pytest.mark.parametrize("case", _BACKPROP_INPUT_FD_CASES,
                         ids=[c[0] for c in _BACKPROP_INPUT_FD_CASES])
def test_backprop_input_paths_finite_differences(monkeypatch, case):
    """tf.gradients of a stride-2 conv's input through each input-gradient path (float64)
    agrees with finite differences."""
    path, seed, xshape, wshape = case
    if path == "phases":
        monkeypatch.setattr("tensorflux.kernels.cpu.conv_ops._PHASED_MIN_CHANNELS", 16)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xshape)
    w = rng.standard_normal(wshape)
    xt = tf.constant(x)
    y = tf.nn.conv2d(xt, tf.constant(w), [1, 2, 2, 1], "SAME")
    with tf.Session():
        err = tf.test.compute_gradient_error(xt, x.shape, y, y.shape.as_list(),
                                             x_init_value=x)
    assert err < 1e-6


# ---- static shapes and errors ------------------------------------------------------------


def test_conv_static_shapes():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    w = tf.ones([3, 3, 3, 5])
    got = [str(tf.nn.conv2d(x, w, s, p).shape) for s in ([1, 1, 1, 1], [1, 2, 2, 1], 3)
           for p in ("SAME", "VALID")]
    # From TensorFlow 2.21 (tf.compat.v1) on the same graphs.
    assert got == ["(?, 8, 8, 5)", "(?, 6, 6, 5)", "(?, 4, 4, 5)", "(?, 3, 3, 5)",
                   "(?, 3, 3, 5)", "(?, 2, 2, 5)"]
    got = [str(tf.nn.conv2d(x, w, 1, p, dilations=2).shape) for p in ("SAME", "VALID")]
    assert got == ["(?, 8, 8, 5)", "(?, 4, 4, 5)"]
    got = tf.nn.conv2d(x, w, [1, 1, 1, 1], [[0, 0], [1, 2], [0, 1], [0, 0]])
    assert str(got.shape) == "(?, 9, 7, 5)"
    assert got.op.get_attr("explicit_paddings") == [0, 0, 1, 2, 0, 1, 0, 0]
    nchw = tf.nn.conv2d(tf.ones([2, 3, 4, 4]), w, 1, "SAME", data_format="NCHW")
    assert nchw.shape.as_list() == [2, 5, 4, 4]
    unknown = tf.nn.conv2d(tf.placeholder(tf.float32), w, 1, "SAME")
    assert unknown.shape.as_list() == [None, None, None, 5]


def test_runtime_errors_are_typed():
    x = tf.placeholder(tf.float32, [1, 4, 4, 3])
    y = tf.nn.conv2d(x, tf.ones([2, 2, 3, 1]), [2, 1, 1, 1], "SAME")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnimplementedError, match="strides in the batch and "
                                                               "depth dimensions"):
            sess.run(y, {x: np.ones((1, 4, 4, 3))})
        bad = tf.nn.conv2d(tf.placeholder(tf.float32), tf.ones([2, 2, 3, 1]), 1, "SAME")
        with pytest.raises(tf.errors.InvalidArgumentError, match="input depth must be evenly "
                                                                 "divisible by filter depth"):
            sess.run(bad, {bad.op.inputs[0]: np.ones((1, 4, 4, 4))})


@pytest.mark.parametrize("stride", [1, 2])
def test_pointwise_conv_backprops_split_over_threads(stride):
    """1x1 backprops large enough to be split over the intra-op threads (row blocks, one
    running filter sum per thread) agree with the explicit-loop references."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 32, 32, 32)).astype(np.float32)
    w = rng.standard_normal((1, 1, 32, 64)).astype(np.float32)
    o = 32 // stride
    dy = rng.standard_normal((8, o, o, 64)).astype(np.float32)
    s = [1, stride, stride, 1]
    got_x, got_w, got_y = _run([tf.nn.conv2d_backprop_input([8, 32, 32, 32], w, dy, s, "SAME"),
                                tf.nn.conv2d_backprop_filter(x, [1, 1, 32, 64], dy, s, "SAME"),
                                tf.nn.conv2d(x, w, s, "SAME")])
    np.testing.assert_allclose(got_x, ref_conv_input_grad(x.shape, w, dy, (stride,) * 2,
                                                          "SAME"), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got_w, ref_conv_filter_grad(x, w.shape, dy, (stride,) * 2,
                                                           "SAME"), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got_y, ref_conv(x, w, (stride,) * 2, "SAME"), rtol=1e-4,
                               atol=1e-3)


def test_winograd_keeps_non_finite_values_to_their_windows():
    """An infinity in the input of a conv that Winograd would take gives the direct
    convolution's infinities and NaNs (only in the windows that read it)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 20, 20, 48)).astype(np.float32)
    x[0, 0, 0, 0], x[0, 9, 12, 3] = np.inf, np.nan
    w = rng.standard_normal((3, 3, 48, 48)).astype(np.float32)
    dy = rng.standard_normal((1, 20, 20, 48)).astype(np.float32)
    got_y, got_w = _run([tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
                         tf.nn.conv2d_backprop_filter(x, [3, 3, 48, 48], dy, [1, 1, 1, 1],
                                                      "SAME")])
    want_y = ref_conv(x, w, (1, 1), "SAME")
    np.testing.assert_array_equal(np.isfinite(got_y), np.isfinite(want_y))
    np.testing.assert_allclose(got_y, want_y, rtol=1e-4, atol=1e-3)
    want_w = ref_conv_filter_grad(x, w.shape, dy, (1, 1), "SAME")
    np.testing.assert_array_equal(np.isnan(got_w), np.isnan(want_w))


@pytest.mark.parametrize("odd", [False, True])
def test_winograd_wide_agrees_with_chunked(monkeypatch, odd):
    """The wide Winograd scheme (whole-batch products per position) gives the chunked
    scheme's values within float rounding (bit for bit with OpenBLAS's SkylakeX kernels;
    its Haswell kernels, chosen on AMD Zen 4, round products of other heights apart)."""
    from tensorflux.kernels.cpu import _winograd

    rng = np.random.default_rng(5)
    size = 11 if odd else 12
    xp = rng.standard_normal((4, size + 2, size + 2, 96)).astype(np.float32)
    w = rng.standard_normal((3, 3, 96, 80)).astype(np.float32)
    dy = rng.standard_normal((4, size, size, 80)).astype(np.float32)
    results = []
    for wide_tiles in (0, 1 << 30):  # never wide, always wide
        monkeypatch.setattr(_winograd, "_WIDE_TILES", wide_tiles)
        monkeypatch.setattr(_winograd, "_CHUNK_BYTES", 1 << 16)  # chunks smaller than a batch
        out = np.empty((4, size, size, 80), np.float32)
        results.append((_winograd.conv3x3(xp, w, out, 2),
                        _winograd.conv3x3_backprop_filter(xp, dy, 2)))
    (y0, dw0), (y1, dw1) = results
    np.testing.assert_allclose(y0, y1, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(dw0, dw1, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(y1, ref_conv(xp, w, (1, 1), "VALID"), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_winograd5_gradients_by_finite_differences(monkeypatch, padding):
    """With F(2x2, 5x5)'s thresholds lowered to a small conv, Conv2D and its input
    gradient (the flipped forward conv) go through Winograd, and tf.gradients of a conv
    agrees with finite differences (float64)."""
    from tensorflux.kernels.cpu import _winograd5

    monkeypatch.setattr(_winograd5, "MIN_CHANNELS", 1)
    monkeypatch.setattr(_winograd5, "MIN_PIXELS", 1)
    calls = []
    real = _winograd5.conv5x5
    monkeypatch.setattr(_winograd5, "conv5x5", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr("tensorflux.kernels.cpu.conv_ops._FLIP_MIN_CHANNELS", 1)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 7, 6, 3))
    w = rng.standard_normal((5, 5, 3, 2))
    err = conv2d_gradient_error(x, w, [1, 1, 1, 1], padding)
    assert err < 1e-6
    assert len(calls) >= 2  # the forward conv and the input gradient


def test_winograd5_transforms_and_non_finite_values():
    """F(2x2, 5x5) against the loop reference on a conv it takes; an infinity in its input
    gives the direct convolution's infinities and NaNs (the non-finite fallback)."""
    rng = np.random.default_rng(8)
    x = 0.2 * rng.standard_normal((2, 12, 11, 64)).astype(np.float32)
    w = 0.2 * rng.standard_normal((5, 5, 64, 66)).astype(np.float32)
    got = _run(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
    np.testing.assert_allclose(got, ref_conv(x, w, (1, 1), "SAME"), rtol=1e-4, atol=1e-3)
    x[0, 0, 0, 0], x[1, 6, 5, 3] = np.inf, np.nan
    got = _run(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
    want = ref_conv(x, w, (1, 1), "SAME")
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


# (name, input shape, filter shape, padding, dtype, work units: "bands" of tile rows of
# one image, several whole "images" a unit, or "bytes" (a unit capped by its buffers' size))
_WINOGRAD5_CASES = [
    ("bands_same_odd", (2, 13, 11, 7), (5, 5, 7, 9), "SAME", np.float32, "bands"),
    ("images_same", (5, 8, 10, 6), (5, 5, 6, 4), "SAME", np.float32, "images"),
    ("images_valid_odd", (6, 11, 12, 5), (5, 5, 5, 3), "VALID", np.float32, "images"),
    ("bytes_capped", (2, 14, 9, 8), (5, 5, 8, 6), "SAME", np.float32, "bytes"),
    ("float64_bands", (1, 12, 12, 4), (5, 5, 4, 5), "SAME", np.float64, "bands"),
]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name, xs, ws, padding, dtype, units", _WINOGRAD5_CASES,
                         ids=[c[0] for c in _WINOGRAD5_CASES])
def test_winograd5_work_units_match_the_loop_references(
        monkeypatch, workers, name, xs, ws, padding, dtype, units):
    """F(2x2, 5x5) (thresholds lowered to these small convs) in work units of bands of
    tile rows, of several images, or capped by bytes gives Conv2D and Conv2DBackpropInput
    (the flipped forward conv) within float tolerances of the loop references, and the
    same bits whatever the units and threads."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import _winograd5

    monkeypatch.setattr(_winograd5, "MIN_CHANNELS", 1)
    monkeypatch.setattr(_winograd5, "MIN_PIXELS", 1)
    monkeypatch.setattr("tensorflux.kernels.cpu.conv_ops._FLIP_MIN_CHANNELS", 1)
    monkeypatch.setattr("tensorflux.kernels.cpu._spread_conv.MAX_FILTERS", 0)  # (few filters)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    tiles, nbytes = {"bands": (3, 1 << 30), "images": (1 << 10, 1 << 30),
                     "bytes": (1 << 10, 36 * 14 * 4 * 5)}[units]
    monkeypatch.setattr(_winograd5, "_UNIT_TILES", tiles)
    monkeypatch.setattr(_winograd5, "_UNIT_BYTES", nbytes)
    seen = []
    real = _winograd5.chunked36
    monkeypatch.setattr(_winograd5, "chunked36",
                        lambda *a: seen.append(a[7]) or real(*a))  # its (rows, images)
    rng = np.random.default_rng(13)
    x, w = _scaled(rng, xs, dtype), _scaled(rng, ws, dtype)
    y_ref = ref_conv(x, w, (1, 1), padding)
    dy = _scaled(rng, y_ref.shape, dtype)
    ops = [tf.nn.conv2d(x, w, [1, 1, 1, 1], padding),
           tf.nn.conv2d_backprop_input(list(xs), w, dy, [1, 1, 1, 1], padding)]
    got_y, got_x = _run(ops)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got_y, y_ref, **tol)
    np.testing.assert_allclose(got_x, ref_conv_input_grad(xs, w, dy, (1, 1), padding), **tol)
    assert len(seen) == 2
    rows, images = seen[0]
    th = -(-y_ref.shape[1] // 2)
    assert (images > 1) == (units == "images") and (rows < th) == (units != "images")
    monkeypatch.setattr(_winograd5, "_UNIT_TILES", 1 << 20)  # one unit per image or more
    monkeypatch.setattr(_winograd5, "_UNIT_BYTES", 1 << 40)
    again_y, again_x = _run(ops)
    np.testing.assert_array_equal(again_y, got_y)
    np.testing.assert_array_equal(again_x, got_x)


def test_winograd_unit_buffers_are_kept_per_thread():
    """A thread's Winograd unit buffers are carved from one scratch array kept from call to
    call (grown when a call needs more), one per thread and dtype."""
    import threading

    from tensorflux.kernels.cpu import _winograd5

    shapes = ((36, 2, 3, 4, 5), (36, 24, 7), (2, 6, 8, 7))
    a = _winograd5._unit_buffers(shapes, np.float32)
    assert [x.shape for x in a] == [s for s in shapes] and a[0].dtype == np.float32
    b = _winograd5._unit_buffers(shapes, np.float32)
    assert all(np.shares_memory(x, y) for x, y in zip(a, b, strict=True))
    assert not np.shares_memory(a[0], a[1]) and not np.shares_memory(a[1], a[2])
    assert _winograd5._unit_buffers(shapes, np.float64)[0].dtype == np.float64
    bigger = _winograd5._unit_buffers(((36, 50, 50, 5),), np.float32)[0]
    assert bigger.shape == (36, 50, 50, 5)
    other = []
    t = threading.Thread(target=lambda: other.extend(_winograd5._unit_buffers(shapes,
                                                                             np.float32)))
    t.start()
    t.join()
    assert not any(np.shares_memory(x, bigger) for x in other)


def _count_winograd4(monkeypatch, **thresholds):
    """Lowers _winograd4's thresholds (and the flipped input gradient's) and records its
    conv3x3 and conv3x3_backprop_filter calls."""
    from tensorflux.kernels.cpu import _winograd4

    for name, value in thresholds.items():
        monkeypatch.setattr(_winograd4, name, value)
    monkeypatch.setattr("tensorflux.kernels.cpu._spread_conv.MAX_FILTERS", 0)  # (few filters)
    monkeypatch.setattr("tensorflux.kernels.cpu.conv_ops._FLIP_MIN_CHANNELS", 1)
    calls = []
    for name in ("conv3x3", "conv3x3_backprop_filter"):
        real = getattr(_winograd4, name)
        monkeypatch.setattr(_winograd4, name,
                            lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    return calls


# (name, input shape, filter shape, padding, dtype, scheme: "chunked" work units of a few
# tile rows, whole "images" a unit, or "wide")
_WINOGRAD4_CASES = [
    ("same_multiple_of_4", (2, 16, 12, 8), (3, 3, 8, 6), "SAME", np.float32, "chunked"),
    ("same_odd", (2, 13, 11, 7), (3, 3, 7, 9), "SAME", np.float32, "chunked"),
    ("valid_odd", (1, 15, 10, 5), (3, 3, 5, 4), "VALID", np.float32, "images"),
    ("one_tile", (3, 4, 4, 3), (3, 3, 3, 2), "SAME", np.float32, "wide"),
    ("wide_odd", (2, 9, 14, 130), (3, 3, 130, 6), "SAME", np.float32, "wide"),
    ("float64", (2, 10, 9, 6), (3, 3, 6, 5), "SAME", np.float64, "chunked"),
]


@pytest.mark.parametrize("name, xs, ws, padding, dtype, scheme", _WINOGRAD4_CASES,
                         ids=[c[0] for c in _WINOGRAD4_CASES])
def test_winograd4_conv_and_input_gradient_match_the_loop_references(
        monkeypatch, name, xs, ws, padding, dtype, scheme):
    """F(4x4, 3x3) (thresholds lowered to these small convs) in each of its schemes gives
    Conv2D, Conv2DBackpropInput (the flipped forward conv) and Conv2DBackpropFilter within
    the float tolerances of the other Winograd paths."""
    from tensorflux.kernels.cpu import _winograd4

    units = {"chunked": (1 << 10, 1), "images": (1 << 30, 1), "wide": (1 << 10, 1 << 30)}
    chunk, unit_tiles = units[scheme]
    calls = _count_winograd4(monkeypatch, MIN_CHANNELS=1, MIN_PIXELS=1,
                             _CHUNK_BYTES=chunk, _UNIT_TILES=unit_tiles)
    rng = np.random.default_rng(11)
    x, w = _scaled(rng, xs, dtype), _scaled(rng, ws, dtype)
    y_ref = ref_conv(x, w, (1, 1), padding)
    dy = _scaled(rng, y_ref.shape, dtype)
    got_y, got_x, got_w = _run([
        tf.nn.conv2d(x, w, [1, 1, 1, 1], padding),
        tf.nn.conv2d_backprop_input(list(xs), w, dy, [1, 1, 1, 1], padding),
        tf.nn.conv2d_backprop_filter(x, list(ws), dy, [1, 1, 1, 1], padding)])
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got_y, y_ref, **tol)
    np.testing.assert_allclose(got_x, ref_conv_input_grad(xs, w, dy, (1, 1), padding), **tol)
    np.testing.assert_allclose(got_w, ref_conv_filter_grad(x, ws, dy, (1, 1), padding), **tol)
    assert got_y.dtype == got_w.dtype == dtype
    assert sorted(calls) == ["conv3x3", "conv3x3", "conv3x3_backprop_filter"]
    assert _winograd4.applies(3, 3, (1, 1), (1, 1), ws[2], ws[3], y_ref.shape[1:3], xs[0],
                              dtype)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_winograd4_gradients_by_finite_differences(monkeypatch, padding):
    """With F(4x4, 3x3)'s thresholds lowered to a small conv, tf.gradients of a conv (its
    input gradient by the flipped forward conv and its filter gradient through Winograd)
    agrees with finite differences (float64)."""
    calls = _count_winograd4(monkeypatch, MIN_CHANNELS=1, MIN_PIXELS=1)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 9, 6, 3))
    w = rng.standard_normal((3, 3, 3, 2))
    err = conv2d_gradient_error(x, w, [1, 1, 1, 1], padding)
    assert err < 1e-6
    assert {"conv3x3", "conv3x3_backprop_filter"} <= set(calls) and len(calls) >= 3


def test_winograd4_at_its_thresholds_and_non_finite_values(monkeypatch):
    """A 28x28 conv with 48 channels takes F(4x4, 3x3) at its real thresholds (a 14x14 one
    with more than 64 channels or 47 and 65 channels does not) and matches the loop
    reference; an infinity and a NaN in its input give the direct convolution's infinities
    and NaNs, and the filter gradient's NaNs (the non-finite fallbacks)."""
    from tensorflux.kernels.cpu import _winograd4

    assert not _winograd4.applies(3, 3, (1, 1), (1, 1), 72, 72, (14, 14), 8, np.float32)
    assert not _winograd4.applies(3, 3, (1, 1), (1, 1), 47, 65, (28, 28), 8, np.float32)
    assert not _winograd4.applies(3, 3, (2, 2), (1, 1), 48, 48, (28, 28), 8, np.float32)
    calls = _count_winograd4(monkeypatch)
    rng = np.random.default_rng(13)
    x = _scaled(rng, (1, 28, 28, 48), np.float32)
    w = _scaled(rng, (3, 3, 48, 50), np.float32)
    got = _run(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
    np.testing.assert_allclose(got, ref_conv(x, w, (1, 1), "SAME"), rtol=1e-4, atol=1e-4)
    assert calls == ["conv3x3"]
    x[0, 0, 0, 0], x[0, 13, 21, 3] = np.inf, np.nan
    dy = _scaled(rng, (1, 28, 28, 50), np.float32)
    got, got_w = _run([tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
                       tf.nn.conv2d_backprop_filter(x, [3, 3, 48, 50], dy, [1, 1, 1, 1],
                                                    "SAME")])
    want = ref_conv(x, w, (1, 1), "SAME")
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    want_w = ref_conv_filter_grad(x, w.shape, dy, (1, 1), "SAME")
    np.testing.assert_array_equal(np.isnan(got_w), np.isnan(want_w))
    assert calls.count("conv3x3_backprop_filter") == 1


# (name, input shape, filter shape, strides, padding as TF takes it)
_PHASED_CASES = [
    ("3x3_s2_same", (2, 9, 9, 16), (3, 3, 16, 5), (2, 2), "SAME"),
    ("3x3_s2_valid_odd", (2, 10, 11, 16), (3, 3, 16, 5), (2, 2), "VALID"),
    ("5x5_s2x3_same", (1, 13, 12, 17), (5, 5, 17, 4), (2, 3), "SAME"),
    ("1x3_s3x2", (2, 8, 8, 16), (1, 3, 16, 3), (3, 2), "SAME"),
    ("2x2_s3_empty_phases", (1, 11, 11, 16), (2, 2, 16, 5), (3, 3), "VALID"),
    ("7x7_s2_winograd_phase", (1, 20, 20, 32), (7, 7, 32, 32), (2, 2), "SAME"),
    ("explicit", (2, 9, 8, 16), (3, 3, 16, 4), (2, 2), [[0, 0], [2, 0], [1, 1], [0, 0]]),
]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case", _PHASED_CASES, ids=[c[0] for c in _PHASED_CASES])
def test_strided_backprop_input_by_phases(monkeypatch, workers, case):
    """A strided backprop-input with many input channels runs by output phases (one
    stride-1 conv of out_backprop per phase, no scatter); it agrees with the loop
    reference and with the col2im scatter it replaced."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    _, shape, wshape, strides, padding = case
    monkeypatch.setattr(kernels, "_PHASED_MIN_CHANNELS", 16)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    scatter = kernels._col2im_backprop_input

    def no_scatter(*args):
        raise AssertionError("expected the phased path")

    monkeypatch.setattr(kernels, "_col2im_backprop_input", no_scatter)
    rng = np.random.default_rng(3)
    w = rng.standard_normal(wshape).astype(np.float32)
    explicit = not isinstance(padding, str)
    pads = [tuple(p) for p in padding[1:3]] if explicit else [(0, 0), (0, 0)]
    mode = "EXPLICIT" if explicit else padding
    oh, _ = _geometry(shape[1], wshape[0], strides[0], 1, mode, pads[0])
    ow, _ = _geometry(shape[2], wshape[1], strides[1], 1, mode, pads[1])
    dy = rng.standard_normal((shape[0], oh, ow, wshape[3])).astype(np.float32)
    got = _run(tf.nn.conv2d_backprop_input(list(shape), w, dy, [1, *strides, 1], padding))
    want = ref_conv_input_grad(shape, w, dy, strides, mode, (1, 1), pads)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(kernels, "_col2im_backprop_input", scatter)
    monkeypatch.setattr(kernels, "_phased_backprop_input",
                        lambda shape, w, dy, g, pads, parts: scatter(shape, w, dy, g, pads,
                                                                     dy.shape[1:3], parts))
    old = _run(tf.nn.conv2d_backprop_input(list(shape), w, dy, [1, *strides, 1], padding))
    # a phase may run as Winograd (rounding a few ulps of the sums' magnitude, ~40 here:
    # 1.1e-5 apart on a Zen 3's OpenBLAS kernels)
    np.testing.assert_allclose(got, old, rtol=1e-5, atol=5e-5)


@pytest.mark.parametrize("case", [
    # (input shape, filter shape, strides, data format, dtype): one window over the whole
    # unpadded input (a "fully connected" conv), the backprop-input one product.
    ((6, 5, 5, 128), (5, 5, 128, 64), 1, "NHWC", np.float32),
    ((3, 4, 3, 8), (4, 3, 8, 5), 2, "NHWC", np.float64),
    ((3, 8, 4, 3), (4, 3, 8, 5), 1, "NCHW", np.float32),
    ((2, 3, 3, 6), (3, 3, 3, 4), 1, "NHWC", np.float32),  # two groups of 3 channels
])
def test_whole_window_backprop_input(case):
    """A window as large as the unpadded input: the input gradient agrees with the
    explicit-loop reference, and by finite differences in float64."""
    shape, wshape, stride, fmt, dtype = case
    rng = np.random.default_rng(9)
    w = rng.standard_normal(wshape).astype(dtype)
    nhwc = shape if fmt == "NHWC" else (shape[0], shape[2], shape[3], shape[1])
    dy = rng.standard_normal((shape[0], 1, 1, wshape[3])).astype(dtype)
    strides = [1, stride, stride, 1] if fmt == "NHWC" else [1, 1, stride, stride]
    dy_fed = dy if fmt == "NHWC" else dy.transpose(0, 3, 1, 2)
    got = _run(tf.nn.conv2d_backprop_input(list(shape), w, dy_fed, strides, "VALID",
                                           data_format=fmt))
    if fmt == "NCHW":
        got = got.transpose(0, 2, 3, 1)
    groups = nhwc[3] // wshape[2]
    per = wshape[3] // groups
    want = np.concatenate([
        ref_conv_input_grad(nhwc[:3] + (wshape[2],), w[..., k * per:(k + 1) * per],
                            dy[..., k * per:(k + 1) * per], (stride,) * 2, "VALID")
        for k in range(groups)], axis=-1)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    if dtype == np.float64:
        x = rng.standard_normal(shape)
        xt = tf.constant(x)
        y = tf.nn.conv2d(xt, tf.constant(w), strides, "VALID", data_format=fmt)
        with tf.Session():
            err = tf.test.compute_gradient_error(xt, x.shape, y, y.shape.as_list(),
                                                 x_init_value=x)
        assert err < 1e-6
