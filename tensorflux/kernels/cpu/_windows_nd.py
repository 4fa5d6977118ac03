"""Windows over any number of spatial axes, for the kernels that TensorFlow has no fast
path for here (Conv3D, DepthwiseConv2dNative, the 3-D pools and their gradients).

Data is channels-last, (N, S1, ..., Sk, C). `resolve` gives each spatial axis's output
size and padding (TF's rule, `_window`); `patches` is a read-only strided view
(N, O1..Ok, K1..Kk, C) of the padded input, the windows as rows (im2col without a copy);
`scatter_taps` is its adjoint: it adds a (N, O1..Ok, K1..Kk, C) array of per-tap values
back into the padded input positions they were read from (col2im), one strided slice per
tap.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._nn_common import _invalid, _pad, _window


class WindowGeometry:
    """Window sizes, strides, dilations and padding over k spatial axes, resolved."""

    __slots__ = ("ksize", "strides", "dilations", "out", "pads")

    def __init__(self, spatial, ksize, strides, dilations, padding, explicit=None):
        self.ksize, self.strides, self.dilations = list(ksize), list(strides), list(dilations)
        self.out, self.pads = [], []
        explicit = explicit or [(0, 0)] * len(self.ksize)
        for n, k, s, d, e in zip(spatial, ksize, strides, dilations, explicit, strict=True):
            o, before, after = _window(n, k, s, d, padding, e)
            self.out.append(o)
            self.pads.append((before, after))


def spatial_attr(values, data_format: str, what: str) -> list[int]:
    """The spatial entries of a strides/ksize/dilations attribute (length k + 2) in
    channels-last order.

    Raises:
      InvalidArgumentError: a wrong length or a non-1 batch or channel entry."""
    values = list(values)
    rank = len(data_format)
    if len(values) != rank:
        raise _invalid(f"Sliding window {what} field must specify {rank} dimensions")
    c = data_format.index("C")
    if values[0] != 1 or values[c] != 1:
        raise _invalid(f"{what} in the batch and depth dimensions must be 1: {values}")
    return [v for i, v in enumerate(values) if i not in (0, c)]


def to_channels_last(x: np.ndarray, data_format: str) -> np.ndarray:
    if data_format[1] != "C":
        return x
    return np.moveaxis(x, 1, -1)


def from_channels_last(x: np.ndarray, data_format: str) -> np.ndarray:
    if data_format[1] != "C":
        return x
    return np.ascontiguousarray(np.moveaxis(x, -1, 1))


def patches(x: np.ndarray, g: WindowGeometry, fill=0) -> np.ndarray:
    """Read-only view (N, O1..Ok, K1..Kk, C) of the windows of channels-last `x`, padded
    with `fill`."""
    xp = _pad(x, g.pads, value=fill)
    k = len(g.ksize)
    st = xp.strides
    shape = (xp.shape[0],) + tuple(g.out) + tuple(g.ksize) + (xp.shape[-1],)
    strides = ((st[0],) + tuple(st[1 + i] * g.strides[i] for i in range(k))
               + tuple(st[1 + i] * g.dilations[i] for i in range(k)) + (st[-1],))
    return as_strided(xp, shape, strides, writeable=False)


def scatter_taps(cols: np.ndarray, shape, g: WindowGeometry) -> np.ndarray:
    """The input-shaped (N, S1..Sk, C) sum of `cols` (N, O1..Ok, K1..Kk, C) added back
    into the positions each tap read (the adjoint of `patches`)."""
    acc = padded_zeros(shape, g, cols.dtype)
    scatter_taps_into(acc, cols, g, (slice(None), slice(None)))
    return cropped(acc, shape, g)


def padded_zeros(shape, g: WindowGeometry, dtype) -> np.ndarray:
    """Zeros of the padded input's shape: what `scatter_taps_into` adds into."""
    padded = [n + b + a for n, (b, a) in zip(shape[1:-1], g.pads, strict=True)]
    return np.zeros((shape[0], *padded, shape[-1]), dtype)


def scatter_taps_into(acc: np.ndarray, cols: np.ndarray, g: WindowGeometry, ix) -> None:
    """Adds `cols`, the per-tap values of the outputs `ix` (a block of `blocks`: batch
    items, rows of O1), into padded `acc` at the positions each tap read."""
    k = len(g.ksize)
    b, rows = ix
    r0 = rows.start or 0
    counts = cols.shape[1:1 + k]
    spans = [(o - 1) * s + 1 for o, s in zip(counts, g.strides, strict=True)]
    starts = [r0 * g.strides[0]] + [0] * (k - 1)
    for tap in interrupt.polled(itertools.product(*(range(n) for n in g.ksize))):
        index = (b,) + tuple(
            slice(o + t * d, o + t * d + span, s)
            for o, t, d, span, s in zip(starts, tap, g.dilations, spans, g.strides,
                                        strict=True))
        acc[index] += cols[(slice(None),) * (k + 1) + tap]


def cropped(acc: np.ndarray, shape, g: WindowGeometry) -> np.ndarray:
    """The input-shaped part of padded `acc`."""
    crop = (slice(None),) + tuple(slice(b, b + n) for n, (b, _) in
                                  zip(shape[1:-1], g.pads, strict=True))
    return np.ascontiguousarray(acc[crop])


def valid_counts(shape, g: WindowGeometry) -> np.ndarray:
    """Per output position (O1..Ok), how many of its window's taps read the input rather
    than padding (the divisor of an average pool)."""
    counts = np.ones((), np.float64)
    for n, o, k, s, d, (before, _) in zip(shape[1:-1], g.out, g.ksize, g.strides, g.dilations,
                                         g.pads, strict=True):
        # taps t*d (t < k) of the window starting at padded row r*s read input rows
        # r*s - before + t*d in [0, n): counted per axis, multiplied (separable)
        start = np.arange(o)[:, None] * s - before + np.arange(k)[None, :] * d
        per_axis = ((start >= 0) & (start < n)).sum(axis=1).astype(np.float64)
        counts = np.multiply.outer(counts, per_axis)
    return counts


_CHUNK_BYTES = 32 << 20  # bound on the temporaries (patch matrices, masks) of one chunk


def batch_chunks(n: int, bytes_per_item: int):
    """Slices of the batch axis whose temporaries stay under _CHUNK_BYTES each (at least
    one item per slice); the running step is checked before each (kernels/interrupt.py)."""
    step = max(1, _CHUNK_BYTES // max(1, bytes_per_item))
    return interrupt.polled([slice(i, min(n, i + step)) for i in range(0, n, step)], every=1)


def blocks(n: int, rows: int, bytes_per_item: int):
    """Index tuples (batch slice, slice of O1) of blocks whose temporaries stay under
    _CHUNK_BYTES each: whole batch items while one fits, else blocks of an item's `rows`
    output rows (O1), so one large item is cut too. The running step is checked before
    each (kernels/interrupt.py)."""
    bytes_per_item = max(1, bytes_per_item)
    if bytes_per_item <= _CHUNK_BYTES or rows <= 1:
        return ((b, slice(None)) for b in batch_chunks(n, bytes_per_item))
    per = max(1, _CHUNK_BYTES * rows // bytes_per_item)
    return interrupt.polled([(slice(i, i + 1), slice(r, min(rows, r + per)))
                             for i in range(n) for r in range(0, rows, per)], every=1)
