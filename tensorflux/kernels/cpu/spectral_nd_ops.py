"""CPU kernels of the n-dimensional FFTs (tensorflux/ops/spectral_nd_ops.py), by numpy.fft.

numpy.fft computes in double precision; results are cast to the op's dtype. Axis `axes[i]`
is cropped or zero-padded to `fft_length[i]` (IRFFTND's last listed axis to
`fft_length[-1] // 2 + 1` bins) before the transform, as numpy's `s` argument does.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu.array_ops import _invalid
from tensorflux.kernels.cpu.spectral_ops import _fit
from tensorflux.kernels.registry import kernel_factory


def _axes_lengths(x, fft_length, axes):
    lengths = [int(v) for v in np.reshape(fft_length, -1)]
    axes = [int(a) for a in np.reshape(axes, -1)]
    if len(lengths) != len(axes):
        raise _invalid(f"fft_length ({len(lengths)}) and axes ({len(axes)}) must have the "
                       "same length")
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise _invalid(f"axes {axes} out of range for an input of rank {x.ndim}")
    axes = [a % x.ndim for a in axes]
    if len(set(axes)) != len(axes):
        raise _invalid(f"axes must be distinct, got {axes}")
    if any(n < 0 for n in lengths):
        raise _invalid("fft_length must be non-negative")
    return axes, lengths


@kernel_factory("FFTND", "IFFTND", expensive=True)
def _fftnd(node):
    fn = np.fft.ifftn if node.op == "IFFTND" else np.fft.fftn

    def compute(ctx, x, fft_length, axes):
        axes, lengths = _axes_lengths(x, fft_length, axes)
        x = _fit(x, axes, lengths)
        if not axes or x.size == 0:
            return x.astype(x.dtype, copy=True)
        return fn(x, axes=axes).astype(x.dtype)

    return compute


@kernel_factory("RFFTND", expensive=True)
def _rfftnd(node):
    out_dtype = node.attrs["Tcomplex"].as_numpy_dtype

    def compute(ctx, x, fft_length, axes):
        axes, lengths = _axes_lengths(x, fft_length, axes)
        x = _fit(x, axes, lengths)
        if not axes:
            return x.astype(out_dtype)
        if x.size == 0:
            shape = list(x.shape)
            shape[axes[-1]] = lengths[-1] // 2 + 1 if lengths[-1] else 0
            return np.zeros(shape, out_dtype)
        return np.fft.rfftn(x, axes=axes).astype(out_dtype)

    return compute


@kernel_factory("IRFFTND", expensive=True)
def _irfftnd(node):
    out_dtype = node.attrs["Treal"].as_numpy_dtype

    def compute(ctx, x, fft_length, axes):
        axes, lengths = _axes_lengths(x, fft_length, axes)
        if not axes:
            return x.real.astype(out_dtype)
        x = _fit(x, axes, lengths[:-1] + [lengths[-1] // 2 + 1])
        if 0 in lengths or x.size == 0:
            shape = list(x.shape)
            for a, n in zip(axes, lengths, strict=True):
                shape[a] = n
            return np.zeros(shape, out_dtype)
        return np.fft.irfftn(x, s=lengths, axes=axes).astype(out_dtype)

    return compute
