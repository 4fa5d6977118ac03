"""CPU kernels of the factoring linear-algebra ops (tensorflux/ops/linalg_factor_ops.py), in
NumPy (LAPACK), with SciPy's matrix functions where it is installed.

float16/bfloat16 matrices are factored in float32 (LAPACK has no half precision); results
are cast back to the op's dtype.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._math_common import _LOW_PRECISION, _invalid, _shape_str
from tensorflux.kernels.registry import kernel, kernel_factory

try:  # optional: SciPy's expm/logm (Pade approximants, Schur-based logarithm)
    from scipy import linalg as _scipy_linalg
except ImportError:  # pragma: no cover - depends on the environment
    _scipy_linalg = None

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


def _work(x):
    return x.astype(np.float32) if x.dtype in _LOW_PRECISION else x


def _adjoint(x):
    t = np.swapaxes(x, -1, -2)
    return np.conj(t) if x.dtype.kind == "c" else t


def _check_matrix(x, square=True, name="input"):
    if x.ndim < 2:
        raise _invalid(f"Input tensor {name} must have rank >= 2, got {x.ndim}")
    if square and x.shape[-1] != x.shape[-2]:
        raise _invalid(f"Input matrix must be square, got {x.shape[-2]} != {x.shape[-1]}")


def _lapack(fn, a, *args, **kwargs):
    """`fn(a, ...)`, a NumPy linalg call over a stack of matrices: one LAPACK call per
    matrix that cannot be cut, so a long one runs as `interrupt.abandonable` (its step
    ends on time; the call finishes on its own)."""
    m, n = a.shape[-2:] if a.ndim >= 2 else (1, 1)
    work = float(math.prod(a.shape[:-2])) * m * n * min(m, n)
    return interrupt.abandonable(fn, a, *args, work=work, **kwargs)


def _solve(a, b, singular=None):
    """a^-1 b; a singular `a` is an InvalidArgumentError, or `singular(a, b)` when given."""
    if a.size == 0 or b.size == 0:
        return np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                        np.result_type(a, b))
    try:
        out = _lapack(np.linalg.solve, a, b)
    except np.linalg.LinAlgError:
        out = None
    if out is None or (not np.all(np.isfinite(out)) and np.all(np.isfinite(a)) and
                       np.all(np.isfinite(b))):
        if singular is None:
            raise _invalid("Input matrix is not invertible.")
        return singular(a, b)
    return out


def _substitute(tri, rhs, lower: bool):
    """tri^-1 rhs by forward (lower) or back substitution, batched; a zero on the
    diagonal gives inf/NaN as TensorFlow's triangular solve does."""
    n = tri.shape[-1]
    out = np.zeros(np.broadcast_shapes(tri.shape[:-2], rhs.shape[:-2]) + rhs.shape[-2:],
                   np.result_type(tri, rhs))
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in order:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = rhs[..., i, :] - np.einsum("...k,...kj->...j", tri[..., i, done],
                                              out[..., done, :])
            out[..., i, :] = acc / tri[..., i, i][..., None]
    return out


def _nan_like(a, b):
    """TensorFlow's result where its Cholesky-based solvers fail: NaN."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-1], b.shape[-1])
    return np.full(shape, np.nan, np.result_type(a, b))


@kernel_factory("MatrixSolve", expensive=True)
def _matrix_solve(node):
    adjoint = node.attrs["adjoint"]

    def compute(ctx, a, b):
        _check_matrix(a)
        _check_matrix(b, square=False, name="rhs")
        if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
            raise _invalid(f"Input matrix and right-hand side must have the same number of "
                           f"rows: {_shape_str(a.shape)} vs. {_shape_str(b.shape)}")
        m = _adjoint(_work(a)) if adjoint else _work(a)
        return _solve(m, _work(b)).astype(a.dtype, copy=False)

    return compute


@kernel_factory("MatrixTriangularSolve", expensive=True)
def _matrix_triangular_solve(node):
    lower, adjoint = node.attrs["lower"], node.attrs["adjoint"]

    def compute(ctx, a, b):
        _check_matrix(a)
        _check_matrix(b, square=False, name="rhs")
        if a.shape[-1] != b.shape[-2]:
            raise _invalid(f"Input matrix and right-hand side must have the same number of "
                           f"rows: {_shape_str(a.shape)} vs. {_shape_str(b.shape)}")
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise _invalid(f"Incompatible batch shapes: {_shape_str(a.shape)} vs. "
                           f"{_shape_str(b.shape)}") from None
        tri = np.tril(_work(a)) if lower else np.triu(_work(a))
        m = _adjoint(tri) if adjoint else tri
        m = np.broadcast_to(m, batch + m.shape[-2:])
        rhs = np.broadcast_to(_work(b), batch + b.shape[-2:])
        lower_now = lower != adjoint  # the adjoint of a lower triangle is upper
        out = _solve(m, rhs, singular=lambda t, r: _substitute(t, r, lower_now))
        return out.astype(a.dtype, copy=False)

    return compute


@kernel("MatrixSolveLs", expensive=True)
def _matrix_solve_ls(ctx, a, b, l2):
    _check_matrix(a, square=False)
    _check_matrix(b, square=False, name="rhs")
    if a.shape[:-2] != b.shape[:-2] or a.shape[-2] != b.shape[-2]:
        raise _invalid(f"Input matrix and right-hand side must have the same number of rows: "
                       f"{_shape_str(a.shape)} vs. {_shape_str(b.shape)}")
    x, y = _work(a), _work(b)
    m, n = a.shape[-2:]
    reg = float(l2)
    if m >= n:
        gram = _adjoint(x) @ x + reg * np.eye(n, dtype=x.dtype)
        out = _solve(gram, _adjoint(x) @ y, singular=_nan_like)
    else:
        gram = x @ _adjoint(x) + reg * np.eye(m, dtype=x.dtype)
        out = _adjoint(x) @ _solve(gram, y, singular=_nan_like)
    return out.astype(a.dtype, copy=False)


@kernel_factory("Qr", expensive=True)
def _qr(node):
    mode = "complete" if node.attrs["full_matrices"] else "reduced"

    def compute(ctx, x):
        _check_matrix(x, square=False)
        q, r = _lapack(np.linalg.qr, _work(x), mode=mode)
        return q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)

    return compute


@kernel_factory("Svd", expensive=True)
def _svd(node):
    compute_uv, full = node.attrs["compute_uv"], node.attrs["full_matrices"]

    def compute(ctx, x):
        _check_matrix(x, square=False)
        w = _work(x)
        real = np.float32 if x.dtype == np.complex64 else np.float64
        if not compute_uv:
            s = _lapack(np.linalg.svd, w, compute_uv=False) if w.size else \
                np.zeros(x.shape[:-2] + (min(x.shape[-2:]),), real)
            empty = np.zeros([0], x.dtype)
            return s.astype(x.dtype), empty, empty.copy()
        u, s, vh = _lapack(np.linalg.svd, w, full_matrices=full)
        return (s.astype(x.dtype), u.astype(x.dtype, copy=False),
                _adjoint(vh).astype(x.dtype, copy=False))

    return compute


@kernel_factory("SelfAdjointEigV2", expensive=True)
def _self_adjoint_eig(node):
    compute_v = node.attrs["compute_v"]

    def compute(ctx, x):
        _check_matrix(x)
        w = _work(x)
        if not compute_v:
            return (_lapack(np.linalg.eigvalsh, w, UPLO="L").astype(x.dtype),
                    np.zeros([0], x.dtype))
        e, v = _lapack(np.linalg.eigh, w, UPLO="L")
        return e.astype(x.dtype), v.astype(x.dtype, copy=False)

    return compute


def _lu_one(a):
    """Doolittle LU with partial pivoting of one square matrix: (lu, perm)."""
    lu = a.copy()
    n = lu.shape[0]
    perm = np.arange(n)
    for k in interrupt.polled(range(n), every=16):
        p = k + int(np.argmax(np.abs(lu[k:, k])))
        if p != k:
            lu[[k, p]] = lu[[p, k]]
            perm[[k, p]] = perm[[p, k]]
        if lu[k, k] == 0:
            raise _invalid("Input is not invertible.")
        lu[k + 1:, k] /= lu[k, k]
        lu[k + 1:, k + 1:] -= np.outer(lu[k + 1:, k], lu[k, k + 1:])
    return lu, perm


@kernel_factory("Lu", expensive=True)
def _lu(node):
    idx = node.attrs["output_idx_type"].as_numpy_dtype

    def compute(ctx, x):
        _check_matrix(x)
        w = _work(x)
        flat = w.reshape((-1,) + w.shape[-2:])
        lus, perms = np.empty_like(flat), np.empty(flat.shape[:-1], idx)
        for i, a in enumerate(flat):
            lus[i], perms[i] = _lu_one(a)
        return (lus.reshape(x.shape).astype(x.dtype, copy=False),
                perms.reshape(x.shape[:-1]))

    return compute


@kernel("LogMatrixDeterminant", expensive=True)
def _log_matrix_determinant(ctx, x):
    _check_matrix(x)
    if x.shape[-1] == 0:
        return np.ones(x.shape[:-2], x.dtype), np.zeros(x.shape[:-2], x.dtype)
    sign, logdet = _lapack(np.linalg.slogdet, _work(x))
    return np.asarray(sign).astype(x.dtype), np.asarray(logdet).astype(x.dtype)


def _expm_taylor(a):
    """exp(a) by scaling and squaring with a degree-18 Taylor polynomial (the fallback
    without SciPy)."""
    norm = np.max(np.sum(np.abs(a), axis=-2)) if a.size else 0.0
    squarings = max(0, int(math.ceil(math.log2(norm))) + 1) if norm > 0.5 else 0
    x = a / (2.0 ** squarings)
    out = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()
    term = out.copy()
    for k in range(1, 19):
        term = term @ x / k
        out = out + term
    for _ in range(squarings):
        out = out @ out
    return out


@kernel("MatrixExponential", expensive=True)
def _matrix_exponential(ctx, x):
    _check_matrix(x)
    w = _work(x)
    if w.size == 0:
        return np.empty(x.shape, x.dtype)
    if _scipy_linalg is not None:
        flat = w.reshape((-1,) + w.shape[-2:])
        out = np.stack([_scipy_linalg.expm(m) for m in flat]).reshape(w.shape)
    else:
        out = _expm_taylor(w)
    return out.astype(x.dtype, copy=False)


@kernel("MatrixLogarithm", expensive=True)
def _matrix_logarithm(ctx, x):
    _check_matrix(x)
    if x.size == 0:
        return np.empty(x.shape, x.dtype)
    flat = x.reshape((-1,) + x.shape[-2:])
    outs = []
    for m in flat:
        if _scipy_linalg is not None:
            outs.append(_scipy_linalg.logm(m.astype(np.complex128)))
        else:  # diagonalizable matrices only
            e, v = np.linalg.eig(m.astype(np.complex128))
            outs.append(v @ np.diag(np.log(e)) @ np.linalg.inv(v))
    return np.stack(outs).reshape(x.shape).astype(x.dtype)


def _sqrtm_eig(m):
    """The principal square root by eigendecomposition (the fallback without SciPy;
    diagonalizable matrices only)."""
    e, v = np.linalg.eig(m.astype(np.complex128))
    return v @ np.diag(np.sqrt(e)) @ np.linalg.inv(v)


@kernel("MatrixSquareRoot", expensive=True)
def _matrix_square_root(ctx, x):
    _check_matrix(x)
    if x.size == 0:
        return np.empty(x.shape, x.dtype)
    flat = _work(x).reshape((-1,) + x.shape[-2:])
    outs = []
    for m in flat:
        root = _scipy_linalg.sqrtm(m) if _scipy_linalg is not None else _sqrtm_eig(m)
        if x.dtype.kind != "c" and np.iscomplexobj(root):
            # No real principal root (negative eigenvalues): NaN, as TensorFlow gives.
            imag = np.abs(root.imag).max() > 1e-6 * max(np.abs(root.real).max(), 1.0)
            root = np.full(m.shape, np.nan) if imag else root.real
        outs.append(root)
    return np.stack(outs).reshape(x.shape).astype(x.dtype)
