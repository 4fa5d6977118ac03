"""tf.image.extract_glimpse and the ExtractGlimpse / ExtractGlimpseV2 ops: where each puts
the window (checked against TensorFlow with the noise off), the noise outside the image,
shapes, errors, and no gradient."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework.op_def_library import apply_op
from tests.oracle import run_tf

IMAGE = np.arange(2 * 6 * 7, dtype=np.float32).reshape(2, 6, 7, 1)
MODES = [(True, True), (False, True), (False, False), (True, False)]  # (centered, normalized)


def _glimpse(op, images, size, offsets, centered, normalized, noise="zero"):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(apply_op(op, input=images, size=size, offsets=offsets,
                                 centered=centered, normalized=normalized,
                                 uniform_noise=False, noise=noise))


# TensorFlow 2.21's windows of a 3 x 4 glimpse on IMAGE (row-major values 0..83), with the
# noise off: ExtractGlimpse reads offsets as the window's centre, V2 differently
# (kernels/cpu/image_ops.py _glimpse_corner).
@pytest.mark.parametrize("op, centered, normalized, offsets, corners", [
    ("ExtractGlimpse", True, True, [[0.1, -0.3], [0.55, 0.9]], [(1, 0), (3, 4)]),
    ("ExtractGlimpse", False, True, [[0.1, -0.3], [0.55, 0.9]], [(0, -4), (1, 4)]),
    ("ExtractGlimpse", False, False, [[1.3, 2.7], [-1.5, 4.2]], [(0, 0), (-3, 2)]),
    ("ExtractGlimpse", True, False, [[1.3, 2.7], [-1.5, 4.2]], [(2, 2), (0, 3)]),
    ("ExtractGlimpseV2", True, True, [[0.1, -0.3], [0.55, 0.9]], [(1, 0), (3, 4)]),
    ("ExtractGlimpseV2", False, True, [[0.1, -0.3], [0.55, 0.9]], [(0, -2), (3, 6)]),
    ("ExtractGlimpseV2", False, False, [[1.3, 2.7], [-1.5, 4.2]], [(1, 2), (-1, 4)]),
    ("ExtractGlimpseV2", True, False, [[1.3, 2.7], [-1.5, 4.2]], [(4, 6), (1, 7)]),
])
def test_window_corners(op, centered, normalized, offsets, corners):
    got = _glimpse(op, IMAGE, [3, 4], np.array(offsets, np.float32), centered, normalized)
    padded = np.zeros((2, 6 + 16, 7 + 16, 1), np.float32)
    padded[:, 8:14, 8:15] = IMAGE
    for b, (top, left) in enumerate(corners):
        want = padded[b, 8 + top:8 + top + 3, 8 + left:8 + left + 4]
        np.testing.assert_array_equal(got[b], want)


@pytest.mark.oracle
@pytest.mark.parametrize("op", ["ExtractGlimpse", "ExtractGlimpseV2"])
def test_against_tensorflow(op):
    rng = np.random.default_rng(7)
    images = rng.uniform(-1, 1, (5, 9, 11, 2)).astype(np.float32)
    cases = []
    for centered, normalized in MODES:
        scale = 1.3 if normalized else 14.0
        offsets = rng.uniform(-scale, scale, (5, 2)).astype(np.float32)
        size = [int(rng.integers(1, 8)), int(rng.integers(1, 8))]
        cases.append((centered, normalized, offsets, size))
    theirs = run_tf(f"""
images = np.array({images.tolist()!r}, np.float32)
result = []
with tf.Session() as sess:
    for centered, normalized, offsets, size in {[(c, n, o.tolist(), s)
                                                for c, n, o, s in cases]!r}:
        result.append(sess.run(tf.raw_ops.{op}(input=images, size=size,
            offsets=np.array(offsets, np.float32), centered=centered, normalized=normalized,
            uniform_noise=False, noise="zero")))
""")
    for (centered, normalized, offsets, size), want in zip(cases, theirs, strict=True):
        got = _glimpse(op, images, size, offsets, centered, normalized)
        np.testing.assert_array_equal(got, want)


def test_noise_outside_the_image():
    rng = np.random.default_rng(0)
    images = rng.uniform(5, 6, (2, 4, 4, 2)).astype(np.float32)
    images[..., 1] += 100  # the uniform noise spans both channels; gaussian is per channel
    offsets = np.zeros((2, 2), np.float32)
    inside = slice(8, 12)
    uniform = _glimpse("ExtractGlimpse", images, [20, 20], offsets, True, True, "uniform")
    np.testing.assert_array_equal(uniform[:, inside, inside], images)
    for b in range(2):
        lo, hi = images[b].min(), images[b].max()
        assert uniform[b].min() >= lo and uniform[b].max() <= hi
        assert uniform[b, :4, :, 0].max() > 50  # channel 0 draws from both channels' range
    gauss = _glimpse("ExtractGlimpse", images, [20, 20], offsets, True, True, "gaussian")
    np.testing.assert_array_equal(gauss[:, inside, inside], images)
    noise = np.concatenate([gauss[:, :8].reshape(-1, 2), gauss[:, 12:].reshape(-1, 2)])
    np.testing.assert_allclose(noise.mean(0), images.reshape(-1, 2).mean(0), atol=0.05)
    np.testing.assert_allclose(noise.std(0), images.reshape(-1, 2).std(0), rtol=0.2)
    zero = _glimpse("ExtractGlimpse", images, [20, 20], offsets, True, True, "zero")
    assert zero[:, :8].max() == 0 and zero[:, 12:].max() == 0


def test_wrapper_defaults_shape_and_no_gradient():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 6, 7, 1])
        o = tf.placeholder(tf.float32, [2, 2])
        y = tf.image.extract_glimpse(x, [3, 4], o)
        assert y.op.type == "ExtractGlimpse" and y.shape.as_list() == [2, 3, 4, 1]
        assert (y.op.get_attr("uniform_noise"), y.op.get_attr("noise")) == (True, b"uniform") \
            or (y.op.get_attr("uniform_noise"), y.op.get_attr("noise")) == (True, "uniform")
        assert tf.gradients(y, [x, o]) == [None, None]
        unknown = tf.image.extract_glimpse(x, tf.placeholder(tf.int32, [2]), o)
        assert unknown.shape.as_list() == [2, None, None, 1]
        with tf.Session() as sess:
            got = sess.run(y, {x: IMAGE, o: [[0.9, 0.9], [0.0, 0.0]]})
        np.testing.assert_array_equal(got[1, ..., 0], [[50, 51, 52, 53], [57, 58, 59, 60],
                                                        [64, 65, 66, 67]])
        np.testing.assert_array_equal(got[0, :2, :3, 0], [[32, 33, 34], [39, 40, 41]])
        assert 0 <= got[0, 2:, :, 0].min() and got[0, 2:, :, 0].max() <= 41


@pytest.mark.parametrize("size, offsets, attrs, message", [
    ([3], np.zeros((2, 2), np.float32), {}, r"input must be a vector of size 2 \(height, "
                                            r"width\)\[1\]"),
    ([3, 3], np.zeros((1, 2), np.float32), {}, r"first dimension should be batch\[1,2\]"),
    ([3, 3], np.zeros((2, 3), np.float32), {}, r"second dimension should be of size 2 "
                                               r"\(y,x\)\[2,3\]"),
    ([3, 3], np.zeros((2, 2), np.float32), {"noise": "bogus"},
     "The noise could only be uniform, gaussian, or zero, gotbogus"),
    ([3, 3], np.zeros((2, 2), np.float32), {"noise": "zero", "uniform_noise": True},
     "The uniform_noise and noise could not be specified at the same time"),
])
def test_errors(size, offsets, attrs, message):
    kw = {"uniform_noise": False, "noise": "zero", **attrs}
    with tf.Graph().as_default():
        images = tf.placeholder(tf.float32)
        sizes = tf.placeholder(tf.int32)
        offs = tf.placeholder(tf.float32)
        y = apply_op("ExtractGlimpse", input=images, size=sizes, offsets=offs,
                     name="glimpse", **kw)
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match=message) as e:
            sess.run(y, {images: IMAGE, sizes: size, offs: offsets})
        assert "glimpse" in str(e.value)
