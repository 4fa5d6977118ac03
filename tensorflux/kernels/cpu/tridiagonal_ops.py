"""CPU kernels of the tridiagonal ops (tensorflux/ops/tridiagonal_ops.py), in NumPy,
vectorized over the batch: one Python step per row of the M x M systems, checking the
step's deadline and close every few hundred rows (kernels/interrupt.py).
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import _invalid, _shape_str
from tensorflux.kernels.registry import kernel, kernel_factory

# Rows of the sequential elimination between two checks of the step (~20 us a row).
_ROWS_PER_CHECK = 256


def _check_batch(*arrays):
    batch = arrays[0].shape[:-2]
    for a in arrays[1:]:
        if a.shape[:-2] != batch:
            raise _invalid(f"Batch shapes must be equal: {_shape_str(arrays[0].shape)} vs. "
                           f"{_shape_str(a.shape)}")


def _eliminate(sup, main, sub, rhs, pivoting: bool, perturb):
    """Gaussian elimination of the tridiagonal systems, row swaps when `pivoting`.

    Invariant after step i: rows 0..i of the upper-triangular factor U are final, with
    (at most) three nonzeros u0 (diagonal), u1, u2 (the second superdiagonal appears only
    through row swaps); `cur` is the partially reduced row i+1, over columns i+1..i+3.
    Zero pivots are replaced by `perturb` (one value per system) when it is given.
    Returns (u0, u1, u2, y, singular) with U x = y.
    """
    m = main.shape[-1]
    u = np.zeros((3,) + main.shape, main.dtype)
    y = np.zeros_like(rhs)
    singular = np.zeros(main.shape[:-1], bool)
    cur = [main[..., 0], sup[..., 0], np.zeros_like(main[..., 0])]
    cur_r = rhs[..., 0, :]
    tick = interrupt.ticker(None, _ROWS_PER_CHECK)  # the step, every few hundred rows
    for i in range(m - 1):
        tick()
        nxt = [sub[..., i + 1], main[..., i + 1],
               sup[..., i + 1] if i + 1 < m - 1 else np.zeros_like(main[..., 0])]
        nxt_r = rhs[..., i + 1, :]
        swap = (np.abs(nxt[0]) > np.abs(cur[0])) if pivoting else np.zeros_like(singular)
        top = [np.where(swap, b, a) for a, b in zip(cur, nxt, strict=True)]
        bot = [np.where(swap, a, b) for a, b in zip(cur, nxt, strict=True)]
        top_r = np.where(swap[..., None], nxt_r, cur_r)
        bot_r = np.where(swap[..., None], cur_r, nxt_r)
        top[0] = _pivot(top[0], singular, perturb)
        for j in range(3):
            u[j][..., i] = top[j]
        y[..., i, :] = top_r
        factor = bot[0] / top[0]
        cur = [bot[1] - factor * top[1], bot[2] - factor * top[2], np.zeros_like(top[0])]
        cur_r = bot_r - factor[..., None] * top_r
    u[0][..., m - 1] = _pivot(cur[0], singular, perturb)
    y[..., m - 1, :] = cur_r
    return u[0], u[1], u[2], y, singular


def _pivot(p, singular, perturb):
    """`p`, with zero pivots marked in `singular` (in place) or replaced by `perturb`."""
    zero = p == 0
    if perturb is not None:
        return np.where(zero, perturb, p)
    singular |= zero
    return p


def _back_substitute(u0, u1, u2, y):
    m = u0.shape[-1]
    x = np.zeros_like(y)
    tick = interrupt.ticker(None, _ROWS_PER_CHECK)
    for i in range(m - 1, -1, -1):
        tick()
        acc = y[..., i, :].copy()
        if i + 1 < m:
            acc -= u1[..., i, None] * x[..., i + 1, :]
        if i + 2 < m:
            acc -= u2[..., i, None] * x[..., i + 2, :]
        x[..., i, :] = acc / u0[..., i, None]
    return x


@kernel_factory("TridiagonalSolve", expensive=True)
def _tridiagonal_solve(node):
    pivoting = node.attrs["partial_pivoting"]
    perturb_singular = node.attrs["perturb_singular"]

    def compute(ctx, diags, rhs):
        if diags.ndim < 2 or diags.shape[-2] != 3:
            raise _invalid(f"Expected diagonals to be provided as a tensor of shape "
                           f"[..., 3, M], got {_shape_str(diags.shape)}")
        if rhs.ndim != diags.ndim or rhs.shape[-2] != diags.shape[-1]:
            raise _invalid(f"Incompatible shapes of diagonals and rhs: "
                           f"{_shape_str(diags.shape)} vs. {_shape_str(rhs.shape)}")
        _check_batch(diags, rhs)
        if rhs.size == 0 or diags.shape[-1] == 0:
            return np.zeros(rhs.shape, diags.dtype)
        perturb = None
        if perturb_singular:  # eps times each system's largest entry, as TensorFlow
            eps = np.finfo(diags.dtype).eps
            perturb = (eps * np.max(np.abs(diags), axis=(-2, -1))).astype(diags.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            u0, u1, u2, y, singular = _eliminate(diags[..., 0, :], diags[..., 1, :],
                                                 diags[..., 2, :], rhs.copy(), pivoting,
                                                 perturb)
            x = _back_substitute(u0, u1, u2, y)
        if pivoting and singular.any():
            x[singular] = np.nan
        return x.astype(diags.dtype, copy=False)

    return compute


@kernel("TridiagonalMatMul", expensive=True)
def _tridiagonal_matmul(ctx, sup, main, sub, rhs):
    _check_batch(sup, main, sub, rhs)
    m = rhs.shape[-2]
    if not sup.shape[-1] == main.shape[-1] == sub.shape[-1] == m:
        raise _invalid(f"Diagonals and rhs have incompatible sizes: "
                       f"{_shape_str(main.shape)} vs. {_shape_str(rhs.shape)}")
    out = main[..., 0, :, None] * rhs
    if m > 1:
        out[..., :-1, :] += sup[..., 0, :-1, None] * rhs[..., 1:, :]
        out[..., 1:, :] += sub[..., 0, 1:, None] * rhs[..., :-1, :]
    return out.astype(rhs.dtype, copy=False)
