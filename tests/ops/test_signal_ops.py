"""FFT ops (tensorflux/ops/spectral_ops.py) and tf.signal: values against numpy.fft,
finite-difference gradients of every transform (through real and imaginary parts), and a
table of tf.signal expressions and FFT gradients compared with TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.kernels import registry as kernel_registry
from tests import oracle
from tests.op_test_util import OpCase, check_gradient, check_value


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _parts(z):
    return [tf.real(z), tf.imag(z)]


def _np_parts(z):
    return [z.real, z.imag]


COMPLEX_CASES = [
    ("fft", tf.signal.fft, lambda z: np.fft.fft(z), (3, 8)),
    ("ifft", tf.signal.ifft, lambda z: np.fft.ifft(z), (2, 7)),
    ("fft2d", tf.signal.fft2d, lambda z: np.fft.fft2(z), (2, 4, 6)),
    ("ifft2d", tf.signal.ifft2d, lambda z: np.fft.ifft2(z), (3, 5)),
    ("fft3d", tf.spectral.fft3d, lambda z: np.fft.fftn(z, axes=(-3, -2, -1)), (2, 3, 4, 5)),
    ("ifft3d", tf.ifft3d, lambda z: np.fft.ifftn(z, axes=(-3, -2, -1)), (3, 4, 2)),
]


def _complex_case(name, fn, ref, shape):
    return OpCase(name, lambda x, y: _parts(fn(tf.complex(x, y))),
                  lambda x, y: [p.astype(x.dtype) for p in _np_parts(ref(x + 1j * y))],
                  shapes=[shape, shape])


def _rfft_case(name, fn, ref, shape, lengths):
    return OpCase(name, lambda x: _parts(fn(x, lengths)),
                  lambda x: [p.astype(x.dtype) for p in _np_parts(ref(x, lengths))],
                  shapes=[shape])


def _irfft_case(name, fn, ref, shape, lengths):
    return OpCase(name, lambda x, y: fn(tf.complex(x, y), lengths),
                  lambda x, y: ref(x + 1j * y, lengths).astype(x.dtype), shapes=[shape, shape])


def _np_rfftn(x, lengths):
    return np.fft.rfftn(x, s=lengths, axes=tuple(range(-len(lengths), 0)))


def _np_irfftn(z, lengths):
    axes = tuple(range(-len(lengths), 0))
    bins = lengths[-1] // 2 + 1
    z = z[..., :bins] if z.shape[-1] >= bins else np.pad(
        z, [(0, 0)] * (z.ndim - 1) + [(0, bins - z.shape[-1])])
    return np.fft.irfftn(z, s=lengths, axes=axes)


REAL_CASES = [
    _rfft_case("rfft", tf.signal.rfft, _np_rfftn, (3, 8), [8]),
    _rfft_case("rfft_odd_crop", tf.signal.rfft, _np_rfftn, (2, 9), [7]),
    _rfft_case("rfft_pad", tf.spectral.rfft, _np_rfftn, (2, 5), [8]),
    _rfft_case("rfft2d", tf.signal.rfft2d, _np_rfftn, (2, 4, 6), [4, 6]),
    _rfft_case("rfft2d_crop_pad", tf.signal.rfft2d, _np_rfftn, (2, 5, 4), [3, 7]),
    _rfft_case("rfft3d", tf.signal.rfft3d, _np_rfftn, (2, 3, 4, 5), [3, 4, 5]),
    _irfft_case("irfft", tf.signal.irfft, _np_irfftn, (3, 5), [8]),
    _irfft_case("irfft_odd", tf.signal.irfft, _np_irfftn, (2, 5), [9]),
    _irfft_case("irfft_crop", tf.signal.irfft, _np_irfftn, (2, 6), [6]),
    _irfft_case("irfft2d", tf.signal.irfft2d, _np_irfftn, (2, 4, 4), [4, 6]),
    _irfft_case("irfft3d", tf.signal.irfft3d, _np_irfftn, (3, 2, 3), [3, 2, 4]),
]
ALL_CASES = [_complex_case(*c) for c in COMPLEX_CASES] + REAL_CASES


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_values(case):
    check_value(case, np.float32, seed=1)
    check_value(case, np.float64, seed=2)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_gradients(case):
    check_gradient(case, np.float64)


def test_default_fft_lengths_and_shapes():
    x = tf.placeholder(tf.float32, [None, 10])
    r = tf.signal.rfft(x)
    assert r.shape.as_list() == [None, 6] and r.dtype == tf.complex64
    back = tf.signal.irfft(r)
    assert back.shape.as_list() == [None, 10] and back.dtype == tf.float32
    d = tf.signal.rfft(tf.placeholder(tf.float64, [2, 3, 4]), [5])
    assert d.dtype == tf.complex128 and d.shape.as_list() == [2, 3, 3]
    v = np.random.default_rng(0).standard_normal((2, 10)).astype(np.float32)
    np.testing.assert_allclose(_run(back, {x: v}), v, atol=1e-5)
    with pytest.raises(ValueError):
        tf.signal.fft(tf.zeros([], tf.complex64))


def test_frame_overlap_add_windows():
    sig = np.arange(10, dtype=np.float32)
    framed, padded, ola = _run([tf.signal.frame(sig, 4, 3),
                                tf.signal.frame(sig, 4, 3, pad_end=True, pad_value=-1),
                                tf.signal.overlap_and_add(np.ones((3, 4), np.float32), 2)])
    np.testing.assert_array_equal(framed, [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]])
    np.testing.assert_array_equal(padded[-1], [9, -1, -1, -1])
    np.testing.assert_array_equal(ola, [1, 1, 2, 2, 2, 2, 1, 1])
    hann = _run(tf.signal.hann_window(8, periodic=False))
    np.testing.assert_allclose(hann, np.hanning(8), atol=1e-6)
    case = OpCase("overlap_and_add", lambda x: tf.signal.overlap_and_add(x, 3),
                  lambda x: x, shapes=[(2, 4, 5)])
    check_gradient(case, np.float64)
    case = OpCase("frame", lambda x: tf.signal.frame(x, 5, 2, pad_end=True),
                  lambda x: x, shapes=[(2, 11)])
    check_gradient(case, np.float64)


def test_stft_round_trip():
    sig = np.random.default_rng(3).standard_normal((2, 256)).astype(np.float32)
    spec = tf.signal.stft(sig, 64, 16)
    inv = tf.signal.inverse_stft(spec, 64, 16,
                                 window_fn=tf.signal.inverse_stft_window_fn(16))
    got = _run(inv)
    np.testing.assert_allclose(got[:, 64:-64], sig[:, 64:got.shape[1] - 64], atol=1e-4)


SIGNAL_PROGRAM = '''
rng = np.random.RandomState(5)
sig = rng.standard_normal((2, 300)).astype(np.float32)
x = rng.standard_normal((3, 10)).astype(np.float32)
z = (rng.standard_normal((2, 6)) + 1j * rng.standard_normal((2, 6))).astype(np.complex64)
frames = rng.standard_normal((2, 5, 8)).astype(np.float32)
spec = tf.signal.stft(sig, 64, 32, fft_length=64)
mel = tf.signal.linear_to_mel_weight_matrix(16, 33, 16000, 20.0, 4000.0)
xt = tf.constant(x)
zt = tf.constant(z)
w1 = rng.standard_normal((3, 6)).astype(np.float32)
w2 = rng.standard_normal((3, 6)).astype(np.float32)
r = tf.signal.rfft(xt)
loss_rfft = tf.reduce_sum(tf.real(r) * w1 + tf.imag(r) * w2)
ir = tf.signal.irfft(zt, [11])  # TF's gradient needs 6 == 11 // 2 + 1 bins
loss_irfft = tf.reduce_sum(ir * rng.standard_normal((2, 11)).astype(np.float32))
f2 = tf.signal.fft2d(zt)
loss_fft2d = tf.reduce_sum(tf.real(f2) * 0.5 - tf.imag(f2))
ex = {
    "stft": spec, "mel": mel,
    "mfcc": tf.signal.mfccs_from_log_mel_spectrograms(tf.constant(frames)),
    "frame": tf.signal.frame(sig, 50, 17), "frame_pad": tf.signal.frame(sig, 64, 40, True),
    "frame_axis": tf.signal.frame(frames, 3, 2, axis=1),
    "ola": tf.signal.overlap_and_add(frames, 3),
    "hann": tf.signal.hann_window(9), "hamming": tf.signal.hamming_window(10, False),
    "istft": tf.signal.inverse_stft(spec, 64, 32, fft_length=64),
    "dct2": tf.signal.dct(xt), "dct2_ortho": tf.signal.dct(xt, norm="ortho"),
    "dct3": tf.signal.dct(xt, type=3), "idct_ortho": tf.signal.idct(xt, norm="ortho"),
    "kaiser": tf.signal.kaiser_window(9, 5.0), "kbd": tf.signal.kaiser_bessel_derived_window(8),
    "vorbis": tf.signal.vorbis_window(7),
    "mdct": tf.signal.mdct(sig, 16), "mdct_ortho": tf.signal.mdct(sig, 8, norm="ortho",
                                                                  pad_end=True),
    "imdct": tf.signal.inverse_mdct(tf.signal.mdct(sig, 16)),
    "imdct_ortho": tf.signal.inverse_mdct(tf.signal.mdct(sig, 8, window_fn=None, norm="ortho"),
                                          window_fn=None, norm="ortho"),
    "dct4": tf.signal.dct(xt, type=4), "idct4_ortho": tf.signal.idct(xt, type=4, norm="ortho"),
    "fftshift": tf.signal.fftshift(xt), "ifftshift": tf.signal.ifftshift(xt, axes=1),
    "g_rfft": tf.gradients(loss_rfft, xt)[0],
    "g_irfft_re": tf.real(tf.gradients(loss_irfft, zt)[0]),
    "g_irfft_im": tf.imag(tf.gradients(loss_irfft, zt)[0]),
    "g_fft2d_re": tf.real(tf.gradients(loss_fft2d, zt)[0]),
    "g_fft2d_im": tf.imag(tf.gradients(loss_fft2d, zt)[0]),
}
with tf.Session() as s:
    out = s.run(ex)
result = {}
for k, v in out.items():
    if np.iscomplexobj(v):
        result[k + ".re"], result[k + ".im"] = v.real, v.imag
    else:
        result[k] = v
'''


@pytest.mark.oracle
def test_signal_matches_tensorflow():
    ours, theirs = oracle.run_both(SIGNAL_PROGRAM, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-4, atol=1e-4)


MY_OPS = ["FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D", "RFFT", "IRFFT", "RFFT2D",
          "IRFFT2D", "RFFT3D", "IRFFT3D"]


@pytest.mark.parametrize("op_type", MY_OPS)
def test_every_op_has_shape_fn_kernel_and_gradient(op_type):
    assert op_registry.get(op_type).shape_fn is not None
    assert kernel_registry.has_kernel(op_type, "CPU")
    assert op_registry.get_gradient(op_type) is not None
