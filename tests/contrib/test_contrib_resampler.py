"""tf.contrib.resampler: values against a per-point NumPy reference, finite-difference
gradients of data and warp, shapes and errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tests.op_test_util import OpCase, check_gradient, check_value


def _reference(data, warp):
    """Bilinear sampling point by point: pixels outside read 0."""
    b, h, w, c = data.shape
    points = warp.reshape(b, -1, 2).astype(np.float64)
    out = np.zeros((b, points.shape[1], c))

    def pixel(n, yi, xi):
        inside = 0 <= yi < h and 0 <= xi < w
        return data[n, yi, xi].astype(np.float64) if inside else np.zeros(c)

    for n in range(b):
        for p, (x, y) in enumerate(points[n]):
            if not (-1 < x < w and -1 < y < h):
                continue
            x0, y0 = int(np.floor(x)), int(np.floor(y))
            ax, ay = x - x0, y - y0
            out[n, p] = ((1 - ax) * (1 - ay) * pixel(n, y0, x0)
                         + ax * (1 - ay) * pixel(n, y0, x0 + 1)
                         + (1 - ax) * ay * pixel(n, y0 + 1, x0)
                         + ax * ay * pixel(n, y0 + 1, x0 + 1))
    return out.reshape(warp.shape[:-1] + (c,)).astype(data.dtype)


def _make_warp(height, width):
    """Points over the data and a margin beyond it, their fractions kept off the integers
    (where the bilinear map has kinks)."""
    def make(rng, shape, dtype):
        if shape[-1] != 2:
            return rng.standard_normal(shape).astype(dtype)
        whole_x = rng.integers(-2, width + 1, size=shape[:-1])
        whole_y = rng.integers(-2, height + 1, size=shape[:-1])
        frac = rng.uniform(0.1, 0.9, size=shape)
        return (np.stack([whole_x, whole_y], axis=-1) + frac).astype(dtype)
    return make


def _case(name, data_shape, warp_shape):
    return OpCase(name, lambda d, w: tf.contrib.resampler.resampler(d, w), _reference,
                  shapes=[data_shape, warp_shape],
                  make=_make_warp(data_shape[1], data_shape[2]))


CASES = [
    _case("points", (2, 4, 5, 3), (2, 7, 2)),
    _case("grid", (1, 3, 3, 2), (1, 2, 4, 2)),
    _case("deep_warp", (2, 2, 3, 1), (2, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_resampler_values(case, dtype):
    check_value(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_resampler_gradients(case, dtype):
    check_gradient(case, dtype)


def test_exact_pixels_corners_and_outside():
    data = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 3, 4, 2)
    warp = np.array([[[0, 0], [3, 2], [1, 1], [0.5, 0], [-0.5, 0], [3.5, 2],
                      [-1, 0], [4, 0], [0, 3], [np.nan, 1], [1.5, 1.5]]], np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        out = sess.run(tf.contrib.resampler.resampler(data, warp))
    want = _reference(data, np.nan_to_num(warp, nan=-5.0))
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_array_equal(out[0, :3], data[0, [0, 2, 1], [0, 3, 1]])
    np.testing.assert_array_equal(out[0, [6, 7, 8, 9]], 0)
    np.testing.assert_allclose(out[0, 4], 0.5 * data[0, 0, 0])  # half outside reads 0


def test_gradient_outside_is_zero():
    data = np.ones((1, 2, 2, 1), np.float64)
    warp = np.array([[[-1.5, 0.5], [0.5, 2.5], [0.25, 0.5]]])
    with tf.Graph().as_default(), tf.Session() as sess:
        d, w = tf.constant(data), tf.constant(warp)
        out = tf.contrib.resampler.resampler(d, w)
        gd, gw = sess.run(tf.gradients(tf.reduce_sum(out), [d, w]))
    np.testing.assert_array_equal(gw[0, :2], 0)
    assert gd.sum() == pytest.approx(1.0)  # only the inside point spreads its weights


def test_static_shapes_names_and_raw_grad_op():
    with tf.Graph().as_default():
        data = tf.placeholder(tf.float32, [None, 8, 8, 3])
        warp = tf.placeholder(tf.float32, [4, 5, 6, 2])
        out = tf.contrib.resampler.resampler(data, warp)
        assert out.shape.as_list() == [4, 5, 6, 3]
        assert out.op.name == "resampler/Resampler" and out.op.type == "Resampler"
        grads = tf.gradients(out, [data, warp])
        assert grads[0].op.type == "ResamplerGrad"
        assert grads[0].shape.as_list() == [4, 8, 8, 3]
        assert grads[1].shape.as_list() == [4, 5, 6, 2]
        assert tf.gradients(grads[1], warp) == [None]  # ResamplerGrad has no gradient
        unknown = tf.contrib.resampler.resampler(tf.placeholder(tf.float32),
                                                 tf.placeholder(tf.float32))
        assert unknown.shape.ndims is None
    from tensorflux.contrib.resampler.python.ops import resampler_ops
    assert resampler_ops.resampler is tf.contrib.resampler.resampler


@pytest.mark.parametrize("data_shape, warp_shape, match", [
    ((4, 4, 3), (1, 2, 2), "rank 4"),
    ((1, 4, 4, 3), (2,), "at least rank 2"),
    ((1, 4, 4, 3), (1, 5, 3), "must be 2"),
    ((2, 4, 4, 3), (3, 5, 2), "Dimensions must be equal"),
])
def test_graph_time_shape_errors(data_shape, warp_shape, match):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=match):
        tf.contrib.resampler.resampler(np.zeros(data_shape, np.float32),
                                       np.zeros(warp_shape, np.float32))


@pytest.mark.parametrize("data_shape, warp_shape, error, match", [
    ((4, 4, 3), (1, 2, 2), errors.UnimplementedError, "data must be"),
    ((1, 4, 4, 3), (1, 5, 3), errors.UnimplementedError, "last dimension of warp"),
    ((2, 4, 4, 3), (3, 5, 2), errors.InvalidArgumentError, "Batch size"),
    ((1, 4, 4, 3), (2,), errors.InvalidArgumentError, "at least a matrix"),
])
def test_run_time_shape_errors(data_shape, warp_shape, error, match):
    with tf.Graph().as_default(), tf.Session() as sess:
        d, w = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
        out = tf.contrib.resampler.resampler(d, w)
        with pytest.raises(error, match=match):
            sess.run(out, {d: np.zeros(data_shape), w: np.zeros(warp_shape)})


def test_integer_data_is_refused():
    with tf.Graph().as_default(), pytest.raises(TypeError):
        tf.contrib.resampler.resampler(np.zeros((1, 2, 2, 1), np.int32),
                                       np.zeros((1, 1, 2), np.int32))
