"""tf.contrib.image: ImageProjectiveTransformV2 against TensorFlow's kernel (the oracle's
tf.raw_ops), its TF1 gradient, rotate/translate/transform's helpers against NumPy, and
dense_image_warp against a NumPy bilinear sampler."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import image as ci
from tests.oracle import run_tf

RNG = np.random.RandomState(1)
IMAGES = (RNG.rand(2, 5, 6, 3) * 200).astype(np.float32)
TRANSFORMS = np.array([[1.1, 0.13, 0.37, -0.21, 0.93, 0.61, 0.011, -0.017],
                       [0.8, -0.3, 1.7, 0.27, 1.2, -0.9, 0.0, 0.0]], np.float32)


def _run(fn):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(fn())


@pytest.mark.oracle
def test_transform_kernel_equals_tensorflows():
    cases = [(dtype, interp, rows) for dtype in ("float32", "uint8", "int32", "float64")
             for interp in ("NEAREST", "BILINEAR") for rows in (1, 2)]
    want = run_tf(f"""
images = np.array({IMAGES.tolist()}, np.float32)
transforms = np.array({TRANSFORMS.tolist()}, np.float32)
result = []
with tf.Session() as sess:
    for dtype, interp, rows in {cases!r}:
        out = tf.raw_ops.ImageProjectiveTransformV2(
            images=images.astype(dtype), transforms=transforms[:rows], output_shape=[4, 7],
            interpolation=interp)
        result.append(sess.run(out).tolist())
""")
    for (dtype, interp, rows), expected in zip(cases, want, strict=True):
        got = _run(lambda dtype=dtype, interp=interp, rows=rows: ci.transform(
            IMAGES.astype(dtype), TRANSFORMS[:rows], interp, output_shape=[4, 7]))
        assert got.dtype == np.dtype(dtype) and got.shape == (2, 4, 7, 3)
        np.testing.assert_allclose(got, np.array(expected, dtype), rtol=1e-5, atol=1e-4,
                                   err_msg=f"{dtype} {interp} {rows}")


@pytest.mark.oracle
def test_transform_gradient_is_tf1s():
    want = run_tf(f"""
images = tf.constant(np.array({IMAGES.tolist()}, np.float32))
t = np.array({TRANSFORMS.tolist()}, np.float32)
out = tf.raw_ops.ImageProjectiveTransformV2(images=images, transforms=t,
                                            output_shape=[5, 6], interpolation="BILINEAR")
w = np.arange(2 * 5 * 6 * 3).reshape(2, 5, 6, 3).astype(np.float32) / 100
with tf.Session() as sess:
    result = sess.run(tf.gradients(tf.reduce_sum(out * w), images)[0]).tolist()
""")

    def grad():
        x = tf.constant(IMAGES)
        out = ci.transform(x, TRANSFORMS, "BILINEAR")
        w = np.arange(2 * 5 * 6 * 3).reshape(2, 5, 6, 3).astype(np.float32) / 100
        return tf.gradients(tf.reduce_sum(out * w), x)[0]

    np.testing.assert_allclose(_run(grad), want, rtol=1e-4, atol=1e-4)


def test_rotate_and_translate():
    square = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = _run(lambda: ci.rotate(square[:3, :3], np.pi / 2))
    np.testing.assert_array_equal(got, np.rot90(square[:3, :3]))
    got = _run(lambda: ci.rotate(IMAGES, [np.pi, 0.0]))
    np.testing.assert_array_equal(got[1], IMAGES[1])
    np.testing.assert_array_equal(got[0], IMAGES[0][::-1, ::-1])
    shifted = _run(lambda: ci.translate(square[..., None], [1.0, 2.0]))[..., 0]
    want = np.zeros_like(square)
    want[2:, 1:] = square[:1, :3]
    np.testing.assert_array_equal(shifted, want)
    assert _run(lambda: ci.rotate(IMAGES[0].astype(np.uint8), 0.3)).dtype == np.uint8


def test_transform_helpers():
    t = _run(lambda: ci.angles_to_projective_transforms([0.5], 5.0, 7.0))
    c, s = np.cos(0.5), np.sin(0.5)
    np.testing.assert_allclose(t, [[c, -s, (6 - (c * 6 - s * 4)) / 2, s, c,
                                    (4 - (s * 6 + c * 4)) / 2, 0, 0]], rtol=1e-6)
    np.testing.assert_array_equal(_run(lambda: ci.translations_to_projective_transforms(
        [[1.0, 2.0]])), [[1, 0, -1, 0, 1, -2, 0, 0]])
    a, b = TRANSFORMS[:1], TRANSFORMS[1:]
    composed = _run(lambda: ci.compose_transforms(a, b))
    ma, mb = (np.append(x, 1).reshape(3, 3) for x in (a[0], b[0]))
    m = ma @ mb
    np.testing.assert_allclose(composed[0], (m / m[2, 2]).ravel()[:8], rtol=1e-5)
    back = _run(lambda: ci.matrices_to_flat_transforms(ci.flat_transforms_to_matrices(
        TRANSFORMS)))
    np.testing.assert_allclose(back, TRANSFORMS, rtol=1e-6)


def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="Invalid dtype"):
            ci.rotate(tf.zeros([3, 3], tf.int8), 0.1)
        with pytest.raises(TypeError, match="Images should have rank between 2 and 4"):
            ci.transform(tf.zeros([1, 2, 3, 4, 5]), TRANSFORMS[0])
        with pytest.raises(TypeError, match="Transforms should have rank 1 or 2"):
            ci.transform(tf.zeros([3, 3]), tf.zeros([1, 1, 8]))
        with pytest.raises(TypeError, match="Angles should have rank 0 or 1"):
            ci.angles_to_projective_transforms([[0.1]], 3.0, 3.0)
        with pytest.raises(ValueError, match="output_shape must be a 1-D Tensor of 2"):
            ci.transform(tf.zeros([3, 3]), TRANSFORMS[0], output_shape=[1, 2, 3])
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="num_images x 8 or 1 x 8"):
            sess.run(ci.transform(tf.zeros([2, 3, 3, 1]), tf.zeros([3, 8])))


def _warp_reference(image, flow):
    b, h, w, c = image.shape
    out = np.empty_like(image)
    for n in range(b):
        for y in range(h):
            for x in range(w):
                qy, qx = y - flow[n, y, x, 0], x - flow[n, y, x, 1]
                fy = min(max(0.0, np.floor(qy)), h - 2)
                fx = min(max(0.0, np.floor(qx)), w - 2)
                ay, ax = np.clip(qy - fy, 0, 1), np.clip(qx - fx, 0, 1)
                fy, fx = int(fy), int(fx)
                top = image[n, fy, fx] + ax * (image[n, fy, fx + 1] - image[n, fy, fx])
                bot = image[n, fy + 1, fx] + ax * (image[n, fy + 1, fx + 1] -
                                                   image[n, fy + 1, fx])
                out[n, y, x] = top + ay * (bot - top)
    return out


def test_dense_image_warp_values_and_gradients():
    flow = (RNG.rand(2, 5, 6, 2) * 3 - 1.5).astype(np.float32)
    got = _run(lambda: ci.dense_image_warp(IMAGES, flow))
    np.testing.assert_allclose(got, _warp_reference(IMAGES, flow), rtol=1e-5, atol=1e-3)
    with tf.Graph().as_default(), tf.Session():
        image = tf.constant(IMAGES[:1, :3, :4, :1].astype(np.float64) / 100)
        f = tf.constant(flow[:1, :3, :4].astype(np.float64) * 0.3)
        out = ci.dense_image_warp(image, f)
        err = tf.test.compute_gradient_error([image, f], [[1, 3, 4, 1], [1, 3, 4, 2]],
                                             out, [1, 3, 4, 1])
        assert err < 1e-6
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Grid height must be"):
        ci.dense_image_warp(tf.zeros([1, 1, 4, 1]), tf.zeros([1, 1, 4, 2]))
