"""The small-input fast paths of the CPU kernels (a batch-of-one convnet, as served) give
exactly the values of the general paths they skip: Conv2D's single-product path against
`_conv_forward` (one thread and split), the pools' per-shape geometry cache against a
fresh resolve, and the small MatMul, Softmax and ArgMax paths against NumPy's plain calls."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import conv_ops, pooling_ops


def _conv_node(strides, padding, dilations=(1, 1), explicit=None):
    attrs = {"strides": [1, *strides, 1], "dilations": [1, *dilations, 1],
             "padding": padding, "data_format": "NHWC"}
    if explicit is not None:
        attrs["explicit_paddings"] = explicit
    return SimpleNamespace(attrs=attrs, name="conv", op="Conv2D")


# (input NHWC, filter HWIO, strides, padding, dilations, explicit paddings)
CONV_CASES = [
    ((1, 8, 8, 1), (3, 3, 1, 32), (1, 1), "SAME", (1, 1), None),     # the digits CNN
    ((1, 4, 4, 32), (3, 3, 32, 64), (1, 1), "SAME", (1, 1), None),
    ((3, 7, 5, 2), (3, 2, 2, 4), (2, 1), "SAME", (1, 1), None),
    ((2, 9, 9, 3), (3, 3, 3, 5), (1, 2), "VALID", (1, 1), None),
    ((1, 10, 11, 2), (3, 3, 2, 3), (1, 1), "SAME", (2, 2), None),
    ((2, 6, 6, 2), (2, 3, 2, 3), (1, 1), "EXPLICIT", (1, 1), [0, 0, 1, 2, 0, 1, 0, 0]),
    ((64, 8, 8, 1), (3, 3, 1, 32), (1, 1), "SAME", (1, 1), None),    # a served batch
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_small_conv_equals_the_general_path(dtype, case):
    xs, ws, strides, padding, dilations, explicit = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    x.flat[::7] = np.nan  # non-finite values stay in the windows that read them
    x.flat[3] = np.inf
    w = rng.standard_normal(ws).astype(dtype)
    g = conv_ops._ConvGeometry(_conv_node(strides, padding, dilations, explicit))
    small = conv_ops._small_conv_forward(x, w, g)
    assert small is not None
    for parts in (1, 2):
        general = conv_ops._conv_forward(x, w, g, parts)
        assert small.dtype == general.dtype and small.shape == general.shape
        np.testing.assert_array_equal(small, general, strict=True)


def test_small_conv_declines_what_it_does_not_cover():
    g = conv_ops._ConvGeometry(_conv_node((1, 1), "SAME"))
    big = np.ones((8, 32, 32, 16), np.float32), np.ones((3, 3, 16, 16), np.float32)
    pointwise = np.ones((1, 4, 4, 3), np.float32), np.ones((1, 1, 3, 2), np.float32)
    empty = np.ones((0, 4, 4, 3), np.float32), np.ones((3, 3, 3, 2), np.float32)
    for x, w in (big, pointwise, empty):
        assert conv_ops._small_conv_forward(x, w, g) is None


def test_conv2d_kernel_takes_the_small_path_with_the_same_values():
    rng = np.random.default_rng(1)
    x = rng.random((1, 8, 8, 1), np.float32)
    w = rng.standard_normal((3, 3, 1, 4)).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
    g = conv_ops._ConvGeometry(_conv_node((1, 1), "SAME"))
    np.testing.assert_array_equal(got, conv_ops._conv_forward(x, w, g, 1), strict=True)


def test_pool_geometry_cache_answers_as_a_fresh_resolve():
    node = SimpleNamespace(attrs={"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1],
                                  "padding": "SAME", "data_format": "NHWC"},
                           name="pool", op="MaxPool")
    geom = pooling_ops._PoolGeometry(node)
    shapes = [(1, 8, 8, 32), (4, 5, 7, 2), [1, 8, 8, 32], (2, 1, 1, 1)]
    for shape in shapes * 2:
        assert geom.resolve(shape) == geom._resolve(tuple(shape))
    for n in range(100):  # the cache stays bounded
        geom.resolve((n + 1, 4, 4, 1))
    assert len(geom._resolved) <= 64


@pytest.mark.parametrize("shape", [(1, 256, 128), (1, 128, 10), (3, 7, 5), (1, 1, 1)])
def test_small_matmul_softmax_argmax_equal_numpy(shape):
    m, k, n = shape
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    logits = rng.standard_normal((m, n)).astype(np.float32)
    with_nan = logits.copy()
    with_nan[0, 0] = np.nan
    with tf.Graph().as_default(), tf.Session() as sess:
        prod, soft, arg, arg_nan = sess.run([
            tf.matmul(a, b), tf.nn.softmax(logits), tf.argmax(logits, axis=1),
            tf.argmax(with_nan, axis=1)])
    np.testing.assert_array_equal(prod, np.matmul(a, b), strict=True)
    e = np.exp(logits - np.max(logits, axis=-1, keepdims=True))
    np.testing.assert_array_equal(soft, e / np.sum(e, axis=-1, keepdims=True), strict=True)
    np.testing.assert_array_equal(arg, np.argmax(logits, axis=1))
    skipped = np.where(np.isnan(with_nan), -np.inf, with_nan)
    np.testing.assert_array_equal(arg_nan, np.argmax(skipped, axis=1))


# (shape, axis, piece bounds): small pieces along an inner axis are contiguous copies
SPLIT_CASES = [((32, 128), 1, [0, 64, 128]), ((1, 4, 6), 2, [0, 3, 6]),
               ((4, 6, 9), 1, [0, 2, 4, 6]), ((4, 6, 9), 2, [0, 3, 6, 9]),
               ((3, 5, 8, 2), 2, [0, 4, 8]),
               ((5, 7, 3), 2, [0, 1, 2, 3]), ((4, 6, 9), 2, [0, 2, 9])]


@pytest.mark.parametrize("shape, axis, bounds", SPLIT_CASES)
def test_small_split_pieces_are_contiguous_copies_with_numpys_values(shape, axis, bounds):
    from tensorflux.kernels.cpu import joining_ops

    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = joining_ops._cut(x, joining_ops._pieces_plan(x, axis, bounds))
    want = np.split(x, bounds[1:-1], axis=axis)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.flags.c_contiguous
        np.testing.assert_array_equal(g, w)
        assert not np.shares_memory(g, x)


def test_split_plans_follow_the_shape_and_sizes_that_may_change():
    from tensorflux.framework import errors
    from tensorflux.kernels.cpu import joining_ops

    split_v = joining_ops._split_v(SimpleNamespace(attrs={"num_split": 2}))
    split = joining_ops._split(SimpleNamespace(attrs={"num_split": 2}))
    sizes, dim = np.array([1, 3], np.int32), np.array(1, np.int32)
    sizes.flags.writeable = dim.flags.writeable = False  # as a Const's value: kept plans
    for rows in (2, 3, 2, 1):
        x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
        for got, want in ((split_v(None, x, sizes, dim), np.split(x, [1], axis=1)),
                          (split(None, dim, x), np.split(x, 2, axis=1))):
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)
    with pytest.raises(errors.InvalidArgumentError, match="Determined shape"):
        split_v(None, np.zeros((2, 5), np.float32), sizes, dim)
    fed = np.array([2, 2], np.int32)  # writeable (a feed): worked out at every call
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert [p.shape for p in split_v(None, x, fed, dim)] == [(2, 2), (2, 2)]
    fed[:] = [3, 1]
    assert [p.shape for p in split_v(None, x, fed, dim)] == [(2, 3), (2, 1)]
