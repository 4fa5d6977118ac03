"""CPU kernels of MaskedMatmul and WALSComputePartialLhsAndRhs (tensorflux/ops/
factorization_ops.py)."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu._math_common import _invalid
from tensorflux.kernels.registry import kernel


def _pairs(indices, rows: int, cols: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) columns of an [nnz, 2] index matrix, checked against the bounds."""
    if np.ndim(indices) != 2 or np.shape(indices)[1] != 2:
        raise _invalid(f"{what} must be an [nnz, 2] matrix, got shape "
                       f"{list(np.shape(indices))}")
    i, j = indices[:, 0], indices[:, 1]
    if i.size and (i.min() < 0 or i.max() >= rows or j.min() < 0 or j.max() >= cols):
        raise _invalid(f"{what} out of range: the bounds are [{rows}, {cols}]")
    return i, j


@kernel("MaskedMatmul", expensive=True)
def _masked_matmul(ctx, a, b, mask_indices, transpose_a, transpose_b):
    if np.ndim(a) != 2 or np.ndim(b) != 2:
        raise _invalid(f"a and b must be matrices, got shapes {list(np.shape(a))} and "
                       f"{list(np.shape(b))}")
    a = a.T if bool(transpose_a) else a
    b = b.T if bool(transpose_b) else b
    if a.shape[1] != b.shape[0]:
        raise _invalid(f"Matrix shapes are incompatible: {list(a.shape)} and "
                       f"{list(b.shape)}")
    i, j = _pairs(mask_indices, a.shape[0], b.shape[1], "mask_indices")
    return np.einsum("nk,nk->n", a[i], b.T[j]).astype(np.float32)


@kernel("WALSComputePartialLhsAndRhs", expensive=True)
def _wals_partial_lhs_and_rhs(ctx, factors, factor_weights, unobserved_weights,
                              input_weights, input_indices, input_values, entry_weights,
                              input_block_size, input_is_transpose):
    if np.ndim(factors) != 2:
        raise _invalid(f"factors must be a matrix, got shape {list(np.shape(factors))}")
    block = int(input_block_size)
    if block < 0:
        raise _invalid(f"input_block_size must be non-negative, got {block}")
    indices = input_indices[:, ::-1] if bool(input_is_transpose) else input_indices
    i, j = _pairs(indices, block, factors.shape[0], "input_indices")
    if input_values.shape != i.shape:
        raise _invalid(f"input_values has {input_values.size} entries for {i.size} indices")
    if entry_weights.size:
        if entry_weights.shape != i.shape:
            raise _invalid(f"entry_weights has {entry_weights.size} entries for "
                           f"{i.size} indices")
        w = entry_weights.astype(np.float64)
    else:
        if input_weights.shape != (block,) or factor_weights.shape != factors.shape[:1]:
            raise _invalid(f"input_weights ({list(input_weights.shape)}) and factor_weights "
                           f"({list(factor_weights.shape)}) must have one entry per row of "
                           f"the block ({block}) and of factors ({factors.shape[0]})")
        w = (input_weights.astype(np.float64)[i] * factor_weights.astype(np.float64)[j])
    f = factors.astype(np.float64)[j]
    k = factors.shape[1]
    coef = (float(unobserved_weights) + w) * input_values
    lhs = np.zeros((block, k, k))
    rhs = np.zeros((block, k))
    # Entries grouped by row: one small product per row (no [nnz, k, k] temporary).
    order = np.argsort(i, kind="stable")
    i, f, w, coef = i[order], f[order], w[order], coef[order]
    starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]]) if i.size else np.zeros(0, int)
    ends = np.r_[starts[1:], i.size]
    for row, lo, hi in zip(i[starts], starts, ends, strict=True):
        rows_f = f[lo:hi]
        lhs[row] = (rows_f * w[lo:hi, None]).T @ rows_f
        rhs[row] = coef[lo:hi] @ rows_f
    return lhs.astype(np.float32), rhs.astype(np.float32)
