"""CPU kernels of the FFT ops (tensorflux/ops/spectral_ops.py), by numpy.fft.

numpy.fft computes in double precision; results are cast to the op's dtype. `fft_length`
crops or zero-pads each transformed axis as TensorFlow does (for the inverse real transforms
the complex input's innermost axis is cropped or padded to fft_length // 2 + 1).
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu.array_ops import _invalid
from tensorflux.kernels.registry import kernel_factory

_RANK = {"FFT": 1, "IFFT": 1, "FFT2D": 2, "IFFT2D": 2, "FFT3D": 3, "IFFT3D": 3,
         "RFFT": 1, "IRFFT": 1, "RFFT2D": 2, "IRFFT2D": 2, "RFFT3D": 3, "IRFFT3D": 3}


def _axes(x, rank):
    if x.ndim < rank:
        raise _invalid(f"Input must have rank of at least {rank} but got: {x.ndim}")
    return tuple(range(x.ndim - rank, x.ndim))


@kernel_factory("FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D", expensive=True)
def _fft(node):
    rank = _RANK[node.op]
    fn = np.fft.ifftn if node.op.startswith("I") else np.fft.fftn

    def compute(ctx, x):
        axes = _axes(x, rank)
        if x.size == 0:
            return x.copy()
        return _transform(ctx, fn, x, len(axes)).astype(x.dtype)

    return compute


def _transform(ctx, fn, x, rank: int, **kwargs):
    """`fn(x, axes=<the last rank axes>, **kwargs)` for a large `x` in blocks of its batch
    (the transforms are independent: the values of one call), the step checked between
    them (kernels/interrupt.py); one long transform runs as `interrupt.abandonable`."""
    axes = tuple(range(x.ndim - rank, x.ndim))
    inner = math.prod(x.shape[x.ndim - rank:])
    work = 5.0 * x.size * max(1.0, math.log2(max(2, inner)))
    if work <= interrupt.CHUNK_FLOPS:
        return fn(x, axes=axes, **kwargs)
    batch = x.shape[:x.ndim - rank]
    flat = x.reshape((-1,) + x.shape[x.ndim - rank:])
    one = work / flat.shape[0]
    per = max(1, int(interrupt.CHUNK_FLOPS // one))
    parts = [interrupt.abandonable(fn, flat[lo:hi], ctx=ctx, work=one * (hi - lo),
                                   axes=tuple(a - x.ndim + rank + 1 for a in axes), **kwargs)
             for lo, hi in interrupt.spans(flat.shape[0], 1, ctx, per)]
    out = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return out.reshape(batch + out.shape[1:])


def _lengths(fft_length, rank):
    lengths = [int(v) for v in np.reshape(fft_length, -1)]
    if len(lengths) != rank:
        raise _invalid(f"fft_length must be length {rank} vector")
    if any(n < 0 for n in lengths):
        raise _invalid("fft_length must be non-negative")
    return lengths


def _fit(x, axes, sizes):
    """x cropped or zero-padded to `sizes` along `axes`."""
    for axis, size in zip(axes, sizes, strict=True):
        have = x.shape[axis]
        if have > size:
            x = np.take(x, np.arange(size), axis=axis)
        elif have < size:
            pad = [(0, 0)] * x.ndim
            pad[axis] = (0, size - have)
            x = np.pad(x, pad)
    return x


@kernel_factory("RFFT", "RFFT2D", "RFFT3D", expensive=True)
def _rfft(node):
    rank = _RANK[node.op]
    out_dtype = node.attrs["Tcomplex"].as_numpy_dtype

    def compute(ctx, x, fft_length):
        axes = _axes(x, rank)
        lengths = _lengths(fft_length, rank)
        x = _fit(x, axes, lengths)
        if 0 in lengths or x.size == 0:
            shape = list(x.shape)
            shape[-1] = lengths[-1] // 2 + 1 if lengths[-1] else 0
            return np.zeros(shape, out_dtype)
        return _transform(ctx, np.fft.rfftn, x, len(axes)).astype(out_dtype)

    return compute


@kernel_factory("IRFFT", "IRFFT2D", "IRFFT3D", expensive=True)
def _irfft(node):
    rank = _RANK[node.op]
    out_dtype = node.attrs["Treal"].as_numpy_dtype

    def compute(ctx, x, fft_length):
        axes = _axes(x, rank)
        lengths = _lengths(fft_length, rank)
        x = _fit(x, axes, lengths[:-1] + [lengths[-1] // 2 + 1])
        if 0 in lengths or x.size == 0:
            return np.zeros(x.shape[:-rank] + tuple(lengths), out_dtype)
        return _transform(ctx, np.fft.irfftn, x, len(axes), s=lengths).astype(out_dtype)

    return compute
