"""CPU kernels of tensorflux/ops/misc_ops.py: Timestamp, CheckPinned, NextAfter,
ExtractVolumePatches."""

from __future__ import annotations

import math
import time

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel, kernel_factory


@kernel("Timestamp")
def _timestamp(ctx):
    return np.float64(time.time())


@kernel("CheckPinned")
def _check_pinned(ctx, tensor):
    raise errors.InvalidArgumentError(None, None, "not pinned")  # NumPy memory never is


@kernel("NextAfter")
def _next_after(ctx, x1, x2):
    return np.nextafter(x1, x2)


def _geometry(size, k, s, padding):
    if padding == "VALID":
        return max(0, (size - k + s) // s), 0
    out = -(-size // s)
    return out, max(0, (out - 1) * s + k - size) // 2


@kernel_factory("ExtractVolumePatches", expensive=True)
def _extract_volume_patches(node):
    k, s, padding = node.attrs["ksizes"], node.attrs["strides"], node.attrs["padding"]

    def compute(ctx, x):
        if x.ndim != 5:
            raise errors.InvalidArgumentError(
                None, None, f"input must be 5-dimensional, got shape {list(x.shape)}")
        n, planes, rows, cols, depth = x.shape
        taps = []
        for i, size in enumerate((planes, rows, cols), start=1):
            out, before = _geometry(size, k[i], s[i], padding)
            src = np.arange(out)[:, None] * s[i] - before + np.arange(k[i])[None, :]
            taps.append(np.where((src >= 0) & (src < size), src + 1, 0))  # 0: the border
        padded = np.zeros((n, planes + 1, rows + 1, cols + 1, depth), x.dtype)
        padded[:, 1:, 1:, 1:] = x
        p, r, c = taps
        rc = (r[None, :, None, None, :, None], c[None, None, :, None, None, :])
        shape = (n, len(p), len(r), len(c), p.shape[1] * r.shape[1] * c.shape[1] * depth)
        out = np.empty(shape, x.dtype)
        # by blocks of output planes, the step checked between them (the sweep's 64^3x8
        # volume with 4^3 patches writes 512 MB: 1.6 s in one gather)
        for lo, hi in interrupt.spans(shape[1], n * math.prod(shape[2:]), ctx):
            block = padded[:, p[lo:hi, None, None, :, None, None], rc[0], rc[1]]
            out[:, lo:hi] = block.reshape((n, hi - lo) + shape[2:])  # [.., kp, kr, kc, depth]
        return out

    return compute
