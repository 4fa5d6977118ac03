"""CPU kernels of Resampler and ResamplerGrad (tensorflux/ops/resampler_ops.py).

For a point (x, y) with -1 < x < width and -1 < y < height, fx = floor(x), fy = floor(y),
cx = fx + 1, cy = fy + 1, dx = cx - x, dy = cy - y; the output is
    dx dy D(fx, fy) + (1 - dx)(1 - dy) D(cx, cy) + dx (1 - dy) D(fx, cy) + (1 - dx) dy D(cx, fy)
added in that order, D reading 0 outside the data. Other points give 0 and no warp
gradient. half and bfloat16 are computed in float32; the other types in their own.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel


def _shape_str(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _check(data, warp):
    if data.ndim != 4:
        raise errors.UnimplementedError(
            None, None, "Only bilinear interpolation is supported: data must be "
            f"[batch_size, data_height, data_width, data_channels], but its shape is "
            f"{_shape_str(data.shape)}")
    if warp.ndim < 2:
        raise errors.InvalidArgumentError(
            None, None, f"warp must be at least a matrix, but its shape is "
            f"{_shape_str(warp.shape)}")
    if warp.shape[-1] != 2:
        raise errors.UnimplementedError(
            None, None, "Only bilinear interpolation is supported: the last dimension of "
            f"warp must be 2, but warp's shape is {_shape_str(warp.shape)}")
    if data.shape[0] != warp.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, "Batch size of data and warp tensor must be the same, but the "
            f"shapes are {_shape_str(data.shape)} and {_shape_str(warp.shape)}")


def _compute_dtype(dtype):
    return np.float32 if dtype.itemsize < 4 else dtype.type


class _Corners:
    """The four corners of every point of `warp` ([batch, points, 2]): flat row indices
    into data [batch * height * width, channels] and their weights (0 outside)."""

    def __init__(self, warp, height, width, ct):
        x, y = warp[..., 0].astype(ct), warp[..., 1].astype(ct)
        self.inside = (x > -1) & (y > -1) & (x < width) & (y < height)
        x = np.where(self.inside, x, ct(0))
        y = np.where(self.inside, y, ct(0))
        fx, fy = np.floor(x), np.floor(y)
        one = ct(1)
        self.dx, self.dy = (fx + one) - x, (fy + one) - y
        fx, fy = fx.astype(np.int64), fy.astype(np.int64)
        base = (np.arange(warp.shape[0], dtype=np.int64) * height * width)[:, None]
        self.rows, self.valid = [], []
        # order: (fx, fy), (cx, cy), (fx, cy), (cx, fy)
        for ox, oy in ((0, 0), (1, 1), (0, 1), (1, 0)):
            xi, yi = fx + ox, fy + oy
            ok = self.inside & (xi >= 0) & (xi < width) & (yi >= 0) & (yi < height)
            self.rows.append(np.where(ok, base + yi * width + xi, 0))
            self.valid.append(ok)
        dx, dy = self.dx, self.dy
        self.weights = [dx * dy, (one - dx) * (one - dy), dx * (one - dy), (one - dx) * dy]

    def values(self, flat):
        """D at each corner: 4 arrays [batch, points, channels], 0 outside."""
        return [np.where(ok[..., None], flat[rows], 0)
                for rows, ok in zip(self.rows, self.valid, strict=True)]


def _flatten(data, warp, ct):
    b, h, w, c = data.shape
    flat = data.astype(ct, copy=False).reshape(b * h * w, c)
    return flat, warp.reshape(b, -1, 2), _Corners(warp.reshape(b, -1, 2), h, w, ct)


@kernel("Resampler", expensive=True)
def _resampler(ctx, data, warp):
    _check(data, warp)
    ct = _compute_dtype(data.dtype)
    out_shape = warp.shape[:-1] + (data.shape[3],)
    if data.size == 0 or warp.size == 0:
        return np.zeros(out_shape, data.dtype)
    flat, _, corners = _flatten(data, warp, ct)
    values = corners.values(flat)
    out = corners.weights[0][..., None] * values[0]
    for weight, value in zip(corners.weights[1:], values[1:], strict=True):
        out = out + weight[..., None] * value
    out = np.where(corners.inside[..., None], out, ct(0))
    return out.astype(data.dtype, copy=False).reshape(out_shape)


@kernel("ResamplerGrad", expensive=True)
def _resampler_grad(ctx, data, warp, grad_output):
    _check(data, warp)
    ct = _compute_dtype(data.dtype)
    if data.size == 0 or warp.size == 0:
        return np.zeros_like(data), np.zeros_like(warp)
    b, h, w, c = data.shape
    flat, _, corners = _flatten(data, warp, ct)
    grad = grad_output.astype(ct, copy=False).reshape(b, -1, c)
    grad = np.where(corners.inside[..., None], grad, ct(0))
    grad_data = np.zeros((b * h * w, c), ct)
    for rows, ok, weight in zip(corners.rows, corners.valid, corners.weights, strict=True):
        np.add.at(grad_data, rows[ok], (weight[..., None] * grad)[ok])
    v_ff, v_cc, v_fc, v_cf = corners.values(flat)
    one = ct(1)
    dx, dy = corners.dx[..., None], corners.dy[..., None]
    # d/dx of the output: dx falls as x grows; likewise dy.
    d_x = (one - dy) * (v_cc - v_fc) + dy * (v_cf - v_ff)
    d_y = (one - dx) * (v_cc - v_cf) + dx * (v_fc - v_ff)
    grad_warp = np.stack([np.sum(grad * d_x, axis=-1), np.sum(grad * d_y, axis=-1)], axis=-1)
    return (grad_data.astype(data.dtype).reshape(data.shape),
            grad_warp.astype(warp.dtype).reshape(warp.shape))
