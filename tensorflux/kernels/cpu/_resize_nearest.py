"""ResizeNearestNeighborGrad's computation (its kernel is in image_ops.py): each input
pixel the sum of the gradient pixels its output pixels were read from (image_ops.py's
_nearest_index). An integer upsampling of float32 (idx[i] == i // k on both axes: TF's
tf.image.resize_nearest_neighbor by 2 of a DCGAN generator, any align_corners or
half_pixel_centers flags that give that map) is one pass of _native.c's
`resize_nearest_grad`, split over the intra-op threads, adding in _sum_into's order (the
same float32 values); other maps and types, or without the extension, are _sum_into's
strided adds or run sums.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu import native


def grad(grads, iy, ix, h: int, w: int, parts: int):
    """ResizeNearestNeighborGrad of `grads` read by the source indices `iy`, `ix` of an
    [h, w] image (module docstring)."""
    ky, kx = _factor(iy, h), _factor(ix, w)
    if ky and kx:
        out = native.resize_nearest_grad(grads, ky, kx, parts)
        if out is not None:
            return out
    return _sum_into(_sum_into(grads, iy, h, 1), ix, w, 2)


def _factor(idx, size) -> int:
    """k when `idx` is an integer upsampling by k of `size` (idx[i] == i // k), else 0."""
    k = len(idx) // size if size else 0
    if k < 1 or k * size != len(idx) or (idx != np.arange(len(idx)) // k).any():
        return 0
    return k


def _sum_into(a, idx, size, axis):
    """`a`'s slices along `axis` summed into `size` slices by (nondecreasing) `idx`: runs of
    k for an integer upsampling by k strided adds (np.add.at: 25 ms for [64, 28, 28, 64],
    these 1 ms), other runs one sum each."""
    lead, starts = (slice(None),) * axis, np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
    k = len(idx) // max(1, len(starts))
    if len(starts) == size and k * size == len(idx) and (np.diff(starts) == k).all():
        return sum((a[lead + (slice(j, None, k),)] for j in range(1, k)),
                   a[lead + (slice(0, None, k),)].copy())
    out = np.zeros(a.shape[:axis] + (size,) + a.shape[axis + 1:], a.dtype)
    for s0, s1 in zip(starts, np.r_[starts[1:], len(idx)], strict=True):
        out[lead + (idx[s0],)] = a[lead + (slice(s0, s1),)].sum(axis)
    return out
