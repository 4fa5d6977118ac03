"""CPU kernels of ImageProjectiveTransformV2 and BipartiteMatch
(tensorflux/ops/image_transform_ops.py).

As TensorFlow's ProjectiveGenerator: per output pixel, the input point is computed in
float32 ((a0 x + a1 y) + a2) / k; NEAREST reads the pixel at the point rounded half away
from zero; BILINEAR weighs the four neighbours in float32 (each outside the input reads 0)
and the result is cast to the image dtype (truncation for integers).
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu.array_ops import _invalid
from tensorflux.kernels.registry import kernel_factory

_F32 = np.float32


def _input_points(transform, height, width):
    """(x', y', valid) of every output pixel for one transform row."""
    t = transform.astype(_F32)
    y, x = np.meshgrid(np.arange(height, dtype=_F32), np.arange(width, dtype=_F32),
                       indexing="ij")
    k = t[6] * x + t[7] * y + _F32(1)
    valid = k != 0
    k = np.where(valid, k, _F32(1))
    in_x = (t[0] * x + t[1] * y + t[2]) / k
    in_y = (t[3] * x + t[4] * y + t[5]) / k
    return in_x, in_y, valid


def _read(image, yi, xi):
    """image[:, yi, xi, :] as float32, 0 where (yi, xi) is outside; image [h, w, c]."""
    h, w = image.shape[:2]
    inside = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
    values = image[np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)].astype(_F32)
    values[~inside] = 0
    return values


def _round_half_away(v):
    return np.where(v < 0, -np.floor(-v + _F32(0.5)), np.floor(v + _F32(0.5)))


def _transform_one(image, transform, out_h, out_w, bilinear):
    in_x, in_y, valid = _input_points(transform, out_h, out_w)
    big = np.float32(2 ** 30)  # far outside; keeps the int cast defined
    in_x, in_y = np.clip(in_x, -big, big), np.clip(in_y, -big, big)
    if not bilinear:
        out = _read(image, _round_half_away(in_y).astype(np.int64),
                    _round_half_away(in_x).astype(np.int64))
    else:
        y0, x0 = np.floor(in_y), np.floor(in_x)
        y1, x1 = y0 + _F32(1), x0 + _F32(1)
        iy0, ix0, iy1, ix1 = (a.astype(np.int64) for a in (y0, x0, y1, x1))
        wx0, wx1 = (x1 - in_x)[..., None], (in_x - x0)[..., None]
        top = wx0 * _read(image, iy0, ix0) + wx1 * _read(image, iy0, ix1)
        bottom = wx0 * _read(image, iy1, ix0) + wx1 * _read(image, iy1, ix1)
        out = (y1 - in_y)[..., None] * top + (in_y - y0)[..., None] * bottom
    out[~valid] = 0
    return out


@kernel_factory("ImageProjectiveTransformV2", expensive=True)
def _image_projective_transform(node):
    interpolation = node.attrs["interpolation"]
    fill_mode = node.attrs["fill_mode"]
    if interpolation not in ("NEAREST", "BILINEAR"):
        raise _invalid(f"Invalid interpolation {interpolation}")
    if fill_mode != "CONSTANT":
        raise _invalid(f"tensorflux's ImageProjectiveTransformV2 fills with constants "
                       f"only; got fill_mode {fill_mode}")

    def compute(ctx, images, transforms, output_shape):
        if images.ndim != 4:
            raise _invalid(f"Input images must have rank 4, got shape {list(images.shape)}")
        if transforms.ndim != 2 or transforms.shape[1] != 8 or \
                transforms.shape[0] not in (1, images.shape[0]):
            raise _invalid("Input transform should be num_images x 8 or 1 x 8")
        if output_shape.shape != (2,):
            raise _invalid("output shape must be 1-dimensional with 2 elements")
        out_h, out_w = int(output_shape[0]), int(output_shape[1])
        if out_h <= 0 or out_w <= 0:
            raise _invalid("output dimensions must be positive")
        out = np.empty((images.shape[0], out_h, out_w, images.shape[3]), images.dtype)
        for b in range(images.shape[0]):
            row = transforms[b if transforms.shape[0] > 1 else 0]
            values = _transform_one(images[b], row, out_h, out_w,
                                    interpolation == "BILINEAR")
            out[b] = values.astype(images.dtype) if images.dtype.kind == "f" else \
                np.trunc(values).astype(images.dtype)
        return out

    return compute


@kernel_factory("BipartiteMatch")
def _bipartite_match(node):
    top_k = node.attrs["top_k"]

    def compute(ctx, distance_mat, num_valid_rows):
        return _greedy_match(distance_mat, num_valid_rows, top_k)
    return compute


def _greedy_match(distance_mat, num_valid_rows, top_k):
    if distance_mat.ndim != 2:
        raise _invalid(f"distance_mat should be 2-dimensional, but got {distance_mat.shape}")
    if np.size(num_valid_rows) != 1:
        raise _invalid(f"num_valid_rows should be a scalar or a 1-element vector, but got "
                       f"shape {np.shape(num_valid_rows)}")
    rows, cols = distance_mat.shape
    valid = int(np.ravel(num_valid_rows)[0])
    valid = rows if valid < 0 else min(valid, rows)
    pairs = min(valid, cols) if top_k < 0 else min(top_k, valid, cols)
    # Candidates: NaN and distances no smaller than float32's largest never match.
    d = np.where(np.isnan(distance_mat[:valid]), np.inf,
                 distance_mat[:valid]).astype(np.float32)
    d[d >= np.finfo(np.float32).max] = np.inf
    row_to_col = np.full(rows, -1, np.int32)
    col_to_row = np.full(cols, -1, np.int32)
    for _ in range(pairs):
        flat = int(np.argmin(d)) if d.size else 0
        if not d.size or not np.isfinite(d.flat[flat]):
            break
        r, c = divmod(flat, cols)
        row_to_col[r], col_to_row[c] = c, r
        d[r, :] = np.inf
        d[:, c] = np.inf
    return row_to_col, col_to_row
