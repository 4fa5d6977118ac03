"""`tf.signal` compositions built from ops: framing and overlap-add, window functions, the
short-time Fourier transform and its inverse, mel filterbanks, DCT and MFCCs.

Framing gathers sample positions; overlap-add and the DCT are products with constant
matrices, so gradients come from the ops they are built of. Frame counts and lengths must be
known when the graph is built where noted.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    gather_ops,
    joining_ops,
    math_ext_ops,
    matrix_ops,
    slicing_ops,
    spectral_ops,
)


def _int(value, what: str) -> int:
    v = constant_value(convert_to_tensor(value, dtypes.int32))
    if v is None:
        raise ValueError(f"{what} must be known when the graph is built")
    return int(v)


def _move_axis_last(x, axis):
    rank = x.shape.ndims
    axis %= rank
    if axis == rank - 1:
        return x, None
    perm = [i for i in range(rank) if i != axis] + [axis]
    return array_ops.transpose(x, perm), perm


def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """Slides a window of `frame_length` samples by `frame_step` along `axis`
    (`tf.signal.frame`): [..., samples, ...] -> [..., frames, frame_length, ...].

    Raises:
      ValueError: the signal's rank is unknown or 0.
    """
    with graph_lib.name_scope(name, "frame", [signal, frame_length, frame_step]):
        signal = convert_to_tensor(signal, name="signal")
        rank = signal.shape.ndims
        if rank is None or rank == 0:
            raise ValueError("frame needs a signal of known rank of at least 1")
        length = _int(frame_length, "frame_length")
        step = _int(frame_step, "frame_step")
        axis = axis % rank
        samples = signal.shape.as_list()[axis]
        if samples is None:
            raise ValueError("frame needs the number of samples known when the graph is built")
        if pad_end:
            frames = -(-samples // step)
            pad = max(0, length + step * (frames - 1) - samples)
            if pad:
                paddings = [[0, 0]] * rank
                paddings[axis] = [0, pad]
                signal = joining_ops.pad(signal, paddings, constant_values=pad_value)
        else:
            frames = max(0, 1 + (samples - length) // step) if samples >= length else 0
        index = (np.arange(frames)[:, None] * step + np.arange(length)[None, :]).astype(
            np.int32)
        return gather_ops.gather(signal, index, axis=axis)


def overlap_and_add(signal, frame_step, name=None):
    """Sums frames [..., frames, frame_length] placed `frame_step` apart
    (`tf.signal.overlap_and_add`): [..., (frames - 1) * frame_step + frame_length]."""
    with graph_lib.name_scope(name, "overlap_and_add", [signal, frame_step]):
        signal = convert_to_tensor(signal, name="signal")
        dims = signal.shape.as_list() if signal.shape.ndims is not None else None
        if dims is None or len(dims) < 2 or dims[-1] is None or dims[-2] is None:
            raise ValueError("overlap_and_add needs signal's last two dimensions known")
        step = _int(frame_step, "frame_step")
        frames, length = dims[-2], dims[-1]
        out_len = (frames - 1) * step + length if frames else 0
        place = np.zeros((frames * length, out_len), signal.dtype.as_numpy_dtype)
        for f in range(frames):
            place[f * length + np.arange(length), f * step + np.arange(length)] = 1
        return _apply_matrix(signal, place, keep=len(dims) - 2)


def _apply_matrix(x, matrix: np.ndarray, keep: int):
    """x's dims after the first `keep` flattened, times `matrix`, batch dims restored."""
    n = matrix.shape[0]
    shape = array_ops.shape(x)
    flat = array_ops.reshape(x, [-1, n])
    out = matrix_ops.matmul(flat, convert_to_tensor(matrix))
    out_shape = joining_ops.concat([shape[:keep], [matrix.shape[1]]], 0)
    result = array_ops.reshape(out, out_shape)
    if x.shape.ndims is not None:
        result.set_shape(x.shape.as_list()[:keep] + [matrix.shape[1]])
    return result


def _window(name, a, b, window_length, periodic, dtype):
    with graph_lib.name_scope(None, name, [window_length]):
        n = _int(window_length, "window_length")
        dtype = dtypes.as_dtype(dtype)
        if n == 1:
            return convert_to_tensor(np.ones(1, dtype.as_numpy_dtype))
        # As TF computes it: `periodic` lengthens only even windows by one sample.
        denom = n - 1 + (1 if periodic and n % 2 == 0 else 0)
        k = np.arange(n)
        w = a - b * np.cos(2 * np.pi * k / denom)
        return convert_to_tensor(w.astype(dtype.as_numpy_dtype))


def hann_window(window_length, periodic=True, dtype=dtypes.float32, name=None):
    """0.5 - 0.5 cos(2 pi n / N) (`tf.signal.hann_window`)."""
    return _window(name or "hann_window", 0.5, 0.5, window_length, periodic, dtype)


def hamming_window(window_length, periodic=True, dtype=dtypes.float32, name=None):
    """0.54 - 0.46 cos(2 pi n / N) (`tf.signal.hamming_window`)."""
    return _window(name or "hamming_window", 0.54, 0.46, window_length, periodic, dtype)


def kaiser_window(window_length, beta=12.0, dtype=dtypes.float32, name=None):
    """The Kaiser window I0(beta sqrt(1 - x^2)) / I0(beta) (`tf.signal.kaiser_window`)."""
    with graph_lib.name_scope(name, "kaiser_window"):
        n = _int(window_length, "window_length")
        w = np.kaiser(n, float(beta)) if n > 1 else np.ones(n)
        return convert_to_tensor(w.astype(dtypes.as_dtype(dtype).as_numpy_dtype))


def kaiser_bessel_derived_window(window_length, beta=12.0, dtype=dtypes.float32, name=None):
    """The Kaiser-Bessel-derived window (`tf.signal.kaiser_bessel_derived_window`)."""
    with graph_lib.name_scope(name, "kaiser_bessel_derived_window"):
        n = _int(window_length, "window_length")
        half = n // 2
        kaiser = np.kaiser(half + 1, float(beta)) if half > 0 else np.ones(1)
        csum = np.cumsum(kaiser)
        half_w = np.sqrt(csum[:-1] / csum[-1])
        w = np.concatenate([half_w, half_w[::-1]])
        return convert_to_tensor(w.astype(dtypes.as_dtype(dtype).as_numpy_dtype))


def vorbis_window(window_length, dtype=dtypes.float32, name=None):
    """sin(pi/2 sin^2(pi (n + 1/2) / N)) (`tf.signal.vorbis_window`)."""
    with graph_lib.name_scope(name, "vorbis_window"):
        n = _int(window_length, "window_length")
        k = np.arange(n)
        w = np.sin(np.pi / 2 * np.sin(np.pi * (k + 0.5) / n) ** 2)
        return convert_to_tensor(w.astype(dtypes.as_dtype(dtype).as_numpy_dtype))


def _shift(x, axes, sign, name):
    with graph_lib.name_scope(name, name, [x]):
        x = convert_to_tensor(x, name="x")
        rank = x.shape.ndims
        if axes is None:
            if rank is None:
                raise ValueError(f"{name} needs an input of known rank")
            axes = list(range(rank))
        elif isinstance(axes, int):
            axes = [axes]
        shape = array_ops.shape(x)
        shifts = []
        for a in axes:
            size = x.shape.as_list()[a] if rank is not None else None
            if size is not None:
                shifts.append(sign * (size // 2))
            else:
                shifts.append(sign * (shape[a] // 2))
        shift = joining_ops.stack(shifts) if any(not isinstance(v, int) for v in shifts) \
            else shifts
        return math_ext_ops.roll(x, shift, list(axes))


def fftshift(x, axes=None, name=None):
    """Moves the zero-frequency bin to the centre (`tf.signal.fftshift`)."""
    return _shift(x, axes, 1, name or "fftshift")


def ifftshift(x, axes=None, name=None):
    """The inverse of fftshift (`tf.signal.ifftshift`)."""
    return _shift(x, axes, -1, name or "ifftshift")


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window,
         pad_end=False, name=None):
    """The short-time Fourier transform of real signals [..., samples]
    (`tf.signal.stft`): [..., frames, fft_length // 2 + 1] complex."""
    with graph_lib.name_scope(name, "stft", [signals]):
        signals = convert_to_tensor(signals, name="signals")
        length = _int(frame_length, "frame_length")
        fft_len = _next_pow2(length) if fft_length is None else _int(fft_length, "fft_length")
        framed = frame(signals, length, frame_step, pad_end=pad_end)
        if window_fn is not None:
            framed = framed * window_fn(length, dtype=signals.dtype)
        return spectral_ops.rfft(framed, [fft_len])


def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window,
                 name=None):
    """Reconstructs signals from their STFT by inverse FFT, windowing and overlap-add
    (`tf.signal.inverse_stft`)."""
    with graph_lib.name_scope(name, "inverse_stft", [stfts]):
        stfts = convert_to_tensor(stfts, name="stfts")
        length = _int(frame_length, "frame_length")
        fft_len = _next_pow2(length) if fft_length is None else _int(fft_length, "fft_length")
        frames = spectral_ops.irfft(stfts, [fft_len])
        rank = frames.shape.ndims
        if fft_len >= length:
            frames = slicing_ops.slice(frames, [0] * rank, [-1] * (rank - 1) + [length])
        else:
            frames = joining_ops.pad(frames, [[0, 0]] * (rank - 1) + [[0, length - fft_len]])
        if window_fn is not None:
            frames = frames * window_fn(length, dtype=frames.dtype)
        return overlap_and_add(frames, frame_step)


def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name=None):
    """The window that makes inverse_stft invert stft with `forward_window_fn`
    (`tf.signal.inverse_stft_window_fn`)."""
    def window_fn(frame_length, dtype=dtypes.float32):
        with graph_lib.name_scope(name, "inverse_stft_window_fn", []):
            step = _int(frame_step, "frame_step")
            forward = forward_window_fn(frame_length, dtype=dtype)
            w = constant_value(forward)
            denom = np.square(w.astype(np.float64))
            n = len(w)
            total = np.zeros(n)
            for shift in range(-n + step, n, step):
                lo, hi = max(0, shift), min(n, n + shift)
                total[lo:hi] += denom[lo - shift:hi - shift]
            return forward / convert_to_tensor(total.astype(w.dtype))
    return window_fn


_MEL_BREAK_HZ = 700.0
_MEL_HIGH_Q = 1127.0


def _hertz_to_mel(f):
    return _MEL_HIGH_Q * np.log1p(np.asarray(f, np.float64) / _MEL_BREAK_HZ)


def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129,
                                sample_rate=8000, lower_edge_hertz=125.0,
                                upper_edge_hertz=3800.0, dtype=dtypes.float32, name=None):
    """A [num_spectrogram_bins, num_mel_bins] matrix of triangular mel filters
    (`tf.signal.linear_to_mel_weight_matrix`).

    Raises:
      ValueError: non-positive counts, or edges out of order or above Nyquist.
    """
    if num_mel_bins <= 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {num_mel_bins}")
    if lower_edge_hertz < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lower_edge_hertz}")
    if lower_edge_hertz >= upper_edge_hertz:
        raise ValueError(f"lower_edge_hertz {lower_edge_hertz} >= upper_edge_hertz "
                         f"{upper_edge_hertz}")
    if sample_rate <= 0.0:
        raise ValueError(f"sample_rate must be positive. Got: {sample_rate}")
    if upper_edge_hertz > sample_rate / 2:
        raise ValueError(f"upper_edge_hertz must not be larger than the Nyquist frequency "
                         f"(sample_rate / 2). Got {upper_edge_hertz} for sample_rate: "
                         f"{sample_rate}")
    with graph_lib.name_scope(name, "linear_to_mel_weight_matrix"):
        dtype = dtypes.as_dtype(dtype)
        np_dtype = dtype.as_numpy_dtype
        linear = np.linspace(0.0, sample_rate / 2, num_spectrogram_bins).astype(np_dtype)[1:]
        bins_mel = _hertz_to_mel(linear).astype(np_dtype)[:, None]
        edges = np.linspace(_hertz_to_mel(lower_edge_hertz), _hertz_to_mel(upper_edge_hertz),
                            num_mel_bins + 2).astype(np_dtype)
        lower, center, upper = edges[:-2][None], edges[1:-1][None], edges[2:][None]
        lower_slopes = (bins_mel - lower) / (center - lower)
        upper_slopes = (upper - bins_mel) / (upper - center)
        weights = np.maximum(0, np.minimum(lower_slopes, upper_slopes)).astype(np_dtype)
        weights = np.pad(weights, [[1, 0], [0, 0]])
        return convert_to_tensor(weights, name=name)


def _dct_matrix(n: int, dct_type: int, norm, dtype) -> np.ndarray:
    k = np.arange(n)
    if dct_type == 2:
        m = 2 * np.cos(np.pi * np.outer(2 * k + 1, k) / (2 * n))  # [sample, coefficient]
        if norm == "ortho":
            scale = np.full(n, np.sqrt(1 / (2 * n)))
            scale[0] = np.sqrt(1 / (4 * n))
            m = m * scale[None, :]
    elif dct_type == 4:
        m = 2 * np.cos(np.pi * np.outer(2 * k + 1, 2 * k + 1) / (4 * n))
        if norm == "ortho":
            m = m * np.sqrt(1 / (2 * n))
    else:  # type 3: the inverse of type 2 up to 2n
        m = 2 * np.cos(np.pi * np.outer(k, 2 * k + 1) / (2 * n))
        m[0] = 1.0
        if norm == "ortho":
            m = m / np.sqrt(2 * n)
            m[0] = 1.0 / np.sqrt(n)
    return m.astype(dtype)


def dct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002
    """The discrete cosine transform (types 2, 3 and 4) of the innermost dimension
    (`tf.signal.dct`)."""
    if type not in (2, 3, 4):
        raise ValueError(f"Only Types II, III and IV (I)DCT are supported, got type {type}")
    if axis != -1:
        raise NotImplementedError(f"axis must be -1. Got: {axis}")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")
    if n is not None:
        raise NotImplementedError("dct with n is not supported")
    with graph_lib.name_scope(name, "dct", [input]):
        x = convert_to_tensor(input, name="input")
        size = x.shape.as_list()[-1] if x.shape.ndims else None
        if size is None:
            raise ValueError("dct needs the innermost dimension known")
        return _apply_matrix(x, _dct_matrix(size, type, norm, x.dtype.as_numpy_dtype),
                             keep=x.shape.ndims - 1)


def idct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002
    """The inverse DCT: a type 3 DCT for type 2 and back (`tf.signal.idct`)."""
    inverse_type = {2: 3, 3: 2, 4: 4}.get(type, type)
    return dct(input, type=inverse_type, n=n, axis=axis, norm=norm, name=name)


def _last_quarter_split(x, parts):
    n = x.shape.as_list()[-1]
    size = n // parts
    rank = x.shape.ndims
    return [slicing_ops.slice(x, [0] * rank, [-1] * (rank - 1) + [size]) if k == 0 else
            slicing_ops.slice(x, [0] * (rank - 1) + [k * size], [-1] * (rank - 1) + [size])
            for k in range(parts)]


def _flip(x):
    return joining_ops.reverse(x, [-1])


def mdct(signals, frame_length, window_fn=vorbis_window, pad_end=False, norm=None,
         name=None):
    """The modified discrete cosine transform of frames of `frame_length` samples, half
    overlapping (`tf.signal.mdct`): [..., frames, frame_length // 2].

    Raises:
      ValueError: frame_length not a multiple of 4, or a bad norm.
    """
    with graph_lib.name_scope(name, "mdct", [signals]):
        signals = convert_to_tensor(signals, name="signals")
        length = _int(frame_length, "frame_length")
        if length % 4:
            raise ValueError("The frame length must be a multiple of 4.")
        framed = frame(signals, length, length // 2, pad_end=pad_end)
        if window_fn is not None:
            framed = framed * window_fn(length, dtype=framed.dtype)
        else:
            framed = framed * np.asarray(1.0 / np.sqrt(2), framed.dtype.as_numpy_dtype)
        a, b, c, d = _last_quarter_split(framed, 4)
        rearranged = joining_ops.concat([-_flip(c) - d, a - _flip(b)], -1)
        return dct(rearranged, type=4, norm=norm)


def inverse_mdct(mdcts, window_fn=vorbis_window, norm=None, name=None):
    """Signals from their MDCT by type-4 inverse DCT, windowing and overlap-add
    (`tf.signal.inverse_mdct`)."""
    with graph_lib.name_scope(name, "inverse_mdct", [mdcts]):
        mdcts = convert_to_tensor(mdcts, name="mdcts")
        half = mdcts.shape.as_list()[-1] if mdcts.shape.ndims else None
        if half is None:
            raise ValueError("inverse_mdct needs the innermost dimension known")
        frames = dct(mdcts, type=4, norm=norm)
        if norm is None:  # the unnormalized type-4 DCT is its own inverse up to 2N
            frames = frames * np.asarray(0.5 / half, mdcts.dtype.as_numpy_dtype)
        first, second = _last_quarter_split(frames, 2)
        frames = joining_ops.concat([second, -_flip(second), -_flip(first), -first], -1)
        if window_fn is not None:
            frames = frames * window_fn(2 * half, dtype=mdcts.dtype)
        else:
            frames = frames * np.asarray(1.0 / np.sqrt(2), mdcts.dtype.as_numpy_dtype)
        return overlap_and_add(frames, half)


def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None):
    """MFCCs: the orthonormal DCT-II of log-mel spectrograms
    (`tf.signal.mfccs_from_log_mel_spectrograms`)."""
    with graph_lib.name_scope(name, "mfccs_from_log_mel_spectrograms",
                              [log_mel_spectrograms]):
        x = convert_to_tensor(log_mel_spectrograms, name="log_mel_spectrograms")
        bins = x.shape.as_list()[-1] if x.shape.ndims else None
        if bins is None:
            raise ValueError("mfccs_from_log_mel_spectrograms needs the number of mel bins")
        out = dct(x, type=2)
        return out * np.asarray(1.0 / np.sqrt(bins * 2.0), x.dtype.as_numpy_dtype)


__all__ = ["frame", "overlap_and_add", "hann_window", "hamming_window", "stft",
           "inverse_stft", "inverse_stft_window_fn", "linear_to_mel_weight_matrix", "dct",
           "idct", "mfccs_from_log_mel_spectrograms", "kaiser_window",
           "kaiser_bessel_derived_window", "vorbis_window", "fftshift", "ifftshift", "mdct",
           "inverse_mdct"]
