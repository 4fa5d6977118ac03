"""CPU kernels of the structural matrix ops (tensorflux/ops/linalg_ops.py), in NumPy:
MatrixBandPart, Diag/DiagPart, MatrixDiag*/MatrixSetDiag* (V1 and V3), Cross."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import _invalid, _shape_str
from tensorflux.kernels.registry import kernel, kernel_factory


@kernel("MatrixBandPart")
def _matrix_band_part(ctx, x, num_lower, num_upper):
    if x.ndim < 2:
        raise _invalid(f"input must be at least 2-dim, received shape: {_shape_str(x.shape)}")
    m, n = x.shape[-2:]
    lo, up = int(num_lower), int(num_upper)
    if lo > m:
        raise _invalid(f"num_lower must be negative or less or equal to number of rows ({m}) "
                       f"got: {lo}")
    if up > n:
        raise _invalid(f"num_upper must be negative or less or equal to number of columns "
                       f"({n}) got: {up}")
    zero = np.zeros((), x.dtype)
    out = np.empty(x.shape, x.dtype)
    # in blocks of rows, the step checked between them (the band's mask and np.where over
    # 128 MiB at once took 1.6-1.9 s)
    for a, b in interrupt.spans(m, max(1, x.size // max(1, m)), ctx):
        offset = np.arange(n)[None, :] - np.arange(a, b)[:, None]  # column - row
        keep = ((lo < 0) | (-offset <= lo)) & ((up < 0) | (offset <= up))
        out[..., a:b, :] = np.where(keep, x[..., a:b, :], zero)
    return out


@kernel("Diag")
def _diag(ctx, d):
    if d.ndim < 1:
        raise _invalid("Input must be at least rank 1, got 0")
    resource_guard.check_shape(d.shape + d.shape, d.dtype, ctx)
    out = np.zeros((d.size, d.size), d.dtype)  # pages mapped on first touch
    out[np.arange(d.size), np.arange(d.size)] = d.reshape(-1)
    return out.reshape(d.shape + d.shape)


@kernel("DiagPart")
def _diag_part(ctx, x):
    half = x.ndim // 2
    if x.ndim % 2 or not x.ndim or x.shape[:half] != x.shape[half:]:
        raise _invalid(f"Invalid shape {_shape_str(x.shape)}: dimensions must be equal in "
                       f"pairs")
    size = int(np.prod(x.shape[:half], dtype=np.int64))
    return np.ascontiguousarray(x.reshape(size, size).diagonal()).reshape(x.shape[:half])


# ---- packed diagonals (see ops/linalg_ops.py) --------------------------------------------


def _band_of(k) -> tuple[int, int]:
    k = np.reshape(k, [-1]).tolist()
    if not 1 <= len(k) <= 2:
        raise _invalid("diag_index must be a scalar or a vector with at most 2 elements")
    k0, k1 = (k[0], k[0]) if len(k) == 1 else k
    if k0 > k1:
        raise _invalid(f"lower_diag_index must not be larger than upper_diag_index: "
                       f"{k0} > {k1}")
    return int(k0), int(k1)


def _diag_positions(m: int, n: int, k0: int, k1: int, align: str):
    """Per diagonal d of the band: (packed row, packed columns, matrix rows, matrix cols)."""
    max_len = min(m + min(k1, 0), n - max(k0, 0))
    sup_right, sub_right = align.split("_")[0] == "RIGHT", align.split("_")[1] == "RIGHT"
    out = []
    for d in range(k1, k0 - 1, -1):
        length = min(m + min(0, d), n - max(0, d))
        if length <= 0:
            continue
        right = sup_right if d > 0 else sub_right
        offset = max_len - length if right else 0
        j = np.arange(length)
        out.append((k1 - d, offset + j, j + max(0, -d), j + max(0, d)))
    return out, max(max_len, 0)


def _check_diagonals(diag, k0, k1, max_len):
    rows = k1 - k0 + 1
    want = (rows, max_len) if k0 != k1 else (max_len,)
    if diag.shape[diag.ndim - len(want):] != want:
        raise _invalid(f"diagonal must have shape [..., {', '.join(map(str, want))}], got "
                       f"{_shape_str(diag.shape)}")


def _set_diagonals(out, diag, k0, k1, align):
    m, n = out.shape[-2:]
    positions, max_len = _diag_positions(m, n, k0, k1, align)
    _check_diagonals(diag, k0, k1, max_len)
    packed = diag if k0 != k1 else diag[..., None, :]
    for row, cols, mi, mj in positions:
        out[..., mi, mj] = packed[..., row, cols]
    return out


@kernel_factory("MatrixDiagV3", "MatrixDiag")
def _matrix_diag(node):
    align = node.attrs.get("align", "RIGHT_LEFT")

    def compute(ctx, diag, k=0, num_rows=-1, num_cols=-1, padding=None):
        k0, k1 = _band_of(k)
        if diag.ndim < (2 if k0 != k1 else 1):
            raise _invalid(f"diagonal must be at least 1-dim, got {_shape_str(diag.shape)}")
        length = diag.shape[-1]
        min_rows, min_cols = length - min(k1, 0), length + max(k0, 0)
        rows, cols = int(num_rows), int(num_cols)
        if rows < 0 and cols < 0:
            rows = cols = max(min_rows, min_cols)
        rows = min_rows if rows < 0 else rows
        cols = min_cols if cols < 0 else cols
        if rows < min_rows or cols < min_cols or (rows != min_rows and cols != min_cols):
            raise _invalid(f"The number of rows or columns is not consistent with the "
                           f"specified d_lower, d_upper, and diagonal: {rows} x {cols}")
        batch = diag.shape[:-2] if k0 != k1 else diag.shape[:-1]
        fill = np.zeros((), diag.dtype) if padding is None else padding
        resource_guard.check_shape(batch + (rows, cols), diag.dtype, ctx)
        out = interrupt.full(ctx, batch + (rows, cols), fill, diag.dtype)  # blocks if large
        return _set_diagonals(out, diag, k0, k1, align)

    return compute


@kernel_factory("MatrixDiagPartV3", "MatrixDiagPart")
def _matrix_diag_part(node):
    align = node.attrs.get("align", "RIGHT_LEFT")

    def compute(ctx, x, k=0, padding=None):
        if x.ndim < 2:
            raise _invalid(f"input must be at least 2-dim, received shape: "
                           f"{_shape_str(x.shape)}")
        k0, k1 = _band_of(k)
        m, n = x.shape[-2:]
        if (m and n) and not (-m < k0 <= k1 < n) and (k0, k1) != (0, 0):
            raise _invalid(f"Diagonal index ({k0}, {k1}) is out of bounds for a {m} x {n} "
                           f"matrix")
        positions, max_len = _diag_positions(m, n, k0, k1, align)
        fill = np.zeros((), x.dtype) if padding is None else padding
        out = np.full(x.shape[:-2] + (k1 - k0 + 1, max_len), fill, x.dtype)
        for row, cols, mi, mj in positions:
            out[..., row, cols] = x[..., mi, mj]
        return out[..., 0, :] if k0 == k1 else out

    return compute


@kernel_factory("MatrixSetDiagV3", "MatrixSetDiag")
def _matrix_set_diag(node):
    align = node.attrs.get("align", "RIGHT_LEFT")

    def compute(ctx, x, diag, k=0):
        if x.ndim < 2:
            raise _invalid(f"input must be at least 2-dim, received shape: "
                           f"{_shape_str(x.shape)}")
        k0, k1 = _band_of(k)
        batch = x.shape[:-2]
        dbatch = diag.shape[:-2] if k0 != k1 else diag.shape[:-1]
        if dbatch != batch:
            raise _invalid(f"diagonal's batch dimensions {_shape_str(dbatch)} must be the "
                           f"input's {_shape_str(batch)}")
        out = interrupt.copyto(ctx, np.empty(x.shape, x.dtype), x)  # in blocks if large
        return _set_diagonals(out, diag, k0, k1, align)

    return compute


@kernel("Cross")
def _cross(ctx, a, b):
    if a.shape != b.shape:
        raise _invalid(f"Both inputs must be of same shape: {_shape_str(a.shape)} vs. "
                       f"{_shape_str(b.shape)}")
    if a.ndim < 1 or a.shape[-1] != 3:
        raise _invalid(f"Trailing dimension must be 3, got shape {_shape_str(a.shape)}")
    return np.cross(a, b).astype(a.dtype, copy=False)
