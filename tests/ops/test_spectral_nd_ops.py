"""N-dimensional FFTs (tensorflux/ops/spectral_nd_ops.py): values against numpy.fft.*n with
`s` and `axes`, finite-difference gradients through real and imaginary parts, static
shapes, norms and bad arguments. TensorFlow's CPU build has no kernels for these ops, so
numpy.fft is the reference."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.op_test_util import OpCase, check_gradient, check_value


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


def _parts(z):
    return [tf.real(z), tf.imag(z)]


def _complex_case(name, fn, ref, shape, lengths, axes):
    return OpCase(name, lambda x, y: _parts(fn(tf.complex(x, y), lengths, axes)),
                  lambda x, y: [p.astype(x.dtype) for p in (
                      ref(x + 1j * y, s=lengths, axes=axes).real,
                      ref(x + 1j * y, s=lengths, axes=axes).imag)],
                  shapes=[shape, shape])


def _rfft_case(name, shape, lengths, axes):
    def ref(x):
        z = np.fft.rfftn(x, s=lengths, axes=axes)
        return [z.real.astype(x.dtype), z.imag.astype(x.dtype)]
    return OpCase(name, lambda x: _parts(tf.signal.rfftnd(x, lengths, axes)), ref,
                  shapes=[shape])


def _np_irfftnd(z, lengths, axes):
    bins = lengths[-1] // 2 + 1
    last = axes[-1]
    have = z.shape[last]
    if have > bins:
        z = np.take(z, np.arange(bins), axis=last)
    elif have < bins:
        pad = [(0, 0)] * z.ndim
        pad[last] = (0, bins - have)
        z = np.pad(z, pad)
    return np.fft.irfftn(z, s=lengths, axes=axes)


def _irfft_case(name, shape, lengths, axes):
    return OpCase(name, lambda x, y: tf.signal.irfftnd(tf.complex(x, y), lengths, axes),
                  lambda x, y: _np_irfftnd(x + 1j * y, lengths, axes).astype(x.dtype),
                  shapes=[shape, shape])


CASES = [
    _complex_case("fftnd_all", tf.signal.fftnd, np.fft.fftn, (3, 4, 5), [3, 4, 5], [0, 1, 2]),
    _complex_case("fftnd_inner", tf.signal.fftnd, np.fft.fftn, (3, 4, 5), [3, 6], [1, 2]),
    _complex_case("fftnd_unordered", tf.signal.fftnd, np.fft.fftn, (3, 4, 5), [6, 2],
                  [2, 0]),
    _complex_case("fftnd_negative", tf.signal.fftnd, np.fft.fftn, (2, 3, 4), [5], [-2]),
    _complex_case("ifftnd", tf.signal.ifftnd, np.fft.ifftn, (3, 4, 5), [2, 7], [0, 2]),
    _complex_case("raw_fftnd", tf.fftnd, np.fft.fftn, (2, 5), [4, 6], [0, 1]),
    _rfft_case("rfftnd_all", (3, 4, 6), [3, 4, 6], [0, 1, 2]),
    _rfft_case("rfftnd_crop_pad", (3, 4, 6), [3, 8], [0, 2]),
    _rfft_case("rfftnd_reversed", (3, 4, 6), [5, 4], [2, 1]),
    _irfft_case("irfftnd", (3, 4, 5), [4, 8], [1, 2]),
    _irfft_case("irfftnd_odd", (3, 4, 5), [4, 9], [1, 2]),
    _irfft_case("irfftnd_first_axis", (4, 3), [6], [0]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_values(case):
    check_value(case, np.float32, seed=1)
    check_value(case, np.float64, seed=2)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradients(case):
    check_gradient(case, np.float64)


def test_defaults_and_static_shapes():
    rng = np.random.default_rng(0)
    z = (rng.standard_normal((3, 4, 5)) + 1j * rng.standard_normal((3, 4, 5))).astype(
        np.complex64)
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    f, r, i = tf.signal.fftnd(z), tf.signal.rfftnd(x), tf.signal.irfftnd(z)
    assert f.shape.as_list() == [3, 4, 5] and f.op.name == "fftnd"
    assert r.shape.as_list() == [3, 4, 4] and r.dtype == tf.complex64
    assert i.shape.as_list() == [3, 4, 8] and i.dtype == tf.float32
    part = tf.signal.fftnd(z, axes=[1])
    assert part.shape.as_list() == [3, 4, 5]
    p = tf.placeholder(tf.complex64, [None, 4, 5])
    assert tf.signal.fftnd(p, [3, 6], [1, 2]).shape.as_list() == [None, 3, 6]
    with tf.Session() as sess:
        got = sess.run([f, r, i, part])
    np.testing.assert_allclose(got[0], np.fft.fftn(z), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], np.fft.rfftn(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[2], np.fft.irfftn(z, s=[3, 4, 8], axes=[0, 1, 2]),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[3], np.fft.fft(z, axis=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("norm", ["backward", "forward", "ortho"])
def test_norms(norm):
    rng = np.random.default_rng(1)
    z = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    x = rng.standard_normal((4, 6))
    outs = [tf.signal.fftnd(z, norm=norm), tf.signal.ifftnd(z, norm=norm),
            tf.signal.rfftnd(x, norm=norm), tf.signal.irfftnd(z, norm=norm)]
    with tf.Session() as sess:
        got = sess.run(outs)
    want = [np.fft.fftn(z, norm=norm), np.fft.ifftn(z, norm=norm),
            np.fft.rfftn(x, norm=norm), np.fft.irfftn(z, s=[4, 10], axes=[0, 1], norm=norm)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def test_bad_arguments():
    z = np.ones((3, 4), np.complex64)
    with pytest.raises(ValueError, match="same length"):
        tf.fftnd(z, [3], [0, 1])
    with pytest.raises(ValueError, match="out of range"):
        tf.fftnd(z, [3], [2])
    with pytest.raises(ValueError, match="norm"):
        tf.signal.fftnd(z, norm="bogus")
    length = tf.placeholder(tf.int32, [None])
    out = tf.fftnd(z, length, [0, 1])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="same length"):
            sess.run(out, {length: [3]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
            sess.run(out, {length: [3, -1]})
