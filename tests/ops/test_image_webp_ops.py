"""tf.io.decode_webp / tf.image.decode_webp (tensorflux/ops/image_webp_ops.py): lossless
still and animated files made with Pillow, channel rules and bad data, and TensorFlow as
the oracle on the same bytes."""

import io

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

PIL = pytest.importorskip("PIL.Image")
RNG = np.random.default_rng(0)
RGB = RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8)
RGBA = RNG.integers(0, 256, (5, 7, 4), dtype=np.uint8)
FRAMES = RNG.integers(0, 256, (3, 4, 6, 3), dtype=np.uint8)


def _webp(array, mode) -> bytes:
    buf = io.BytesIO()
    PIL.fromarray(array, mode).save(buf, format="WEBP", lossless=True)
    return buf.getvalue()


def _animated() -> bytes:
    frames = [PIL.fromarray(f, "RGB") for f in FRAMES]
    buf = io.BytesIO()
    frames[0].save(buf, format="WEBP", save_all=True, append_images=frames[1:],
                   lossless=True, duration=100)
    return buf.getvalue()


RGB_WEBP, RGBA_WEBP = _webp(RGB, "RGB"), _webp(RGBA, "RGBA")


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


def _decode(data, channels=0):
    contents = tf.placeholder(tf.string, [])
    image = tf.io.decode_webp(contents, channels=channels)
    with tf.Session() as sess:
        return sess.run(image, {contents: data})


@pytest.mark.parametrize("data,channels,want", [
    (RGB_WEBP, 0, RGB), (RGB_WEBP, 3, RGB), (RGBA_WEBP, 0, RGBA), (RGBA_WEBP, 4, RGBA)])
def test_still_images(data, channels, want):
    got = _decode(data, channels)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want[None])


def test_static_shape_and_alias():
    assert tf.image.decode_webp is tf.io.decode_webp
    assert tf.io.decode_webp(RGB_WEBP, channels=3).shape.as_list() == [None, None, None, 3]
    assert tf.io.decode_webp(RGB_WEBP).shape.as_list() == [None, None, None, None]


def test_animated_frames():
    got = _decode(_animated())
    np.testing.assert_array_equal(got, FRAMES)


@pytest.mark.parametrize("data,channels,message", [
    (RGB_WEBP, 4, "Number of channels requested does not match input"),
    (RGBA_WEBP, 3, "Number of channels requested does not match input"),
    (RGB_WEBP, 1, "WebP only supports 3 or 4 channels"),
    (b"nothing", 0, "Invalid WebP"),
    (RGB_WEBP[:30], 0, "Invalid WebP"),
])
def test_bad_input(data, channels, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _decode(data, channels)


@pytest.mark.oracle
def test_matches_tensorflow():
    cases = [(RGB_WEBP, 0), (RGB_WEBP, 3), (RGBA_WEBP, 0), (RGBA_WEBP, 4), (RGB_WEBP, 4),
             (RGBA_WEBP, 3), (RGB_WEBP, 1)]
    code = f"""
p = tf.placeholder(tf.string, [])
result = []
with tf.Session() as s:
    for data, ch in {cases!r}:
        try:
            result.append(s.run(tf.io.decode_webp(p, channels=ch), {{p: data}}).tolist())
        except tf.errors.OpError as e:
            result.append(type(e).__name__)
"""
    want = run_tf(code)
    for (data, ch), w in zip(cases, want, strict=True):
        try:
            got = _decode(data, ch).tolist()
        except tf.errors.OpError as e:
            got = type(e).__name__
        assert got == w, ch
