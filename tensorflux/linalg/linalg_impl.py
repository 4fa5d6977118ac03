"""Linear-algebra functions TF1 builds from ops (`tf.linalg.*`, `tf.norm`, `tf.trace`,
`tf.eye`, ...): compositions of the ops in tensorflux/ops/linalg_ops.py,
linalg_factor_ops.py and matrix_ops.py, differentiable through them."""

from __future__ import annotations

import builtins

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.comparison_ops import greater, where_v2
from tensorflux.ops.linalg_factor_ops import (
    log_matrix_determinant,
    matrix_triangular_solve,
    permutation_matrix,
    svd,
)
from tensorflux.ops.linalg_ops import (
    adjoint_last_two,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
)
from tensorflux.ops.math_ops import cast, conj, minimum, multiply, pow, real, truediv
from tensorflux.ops.matrix_ops import cholesky, matmul
from tensorflux.ops.unary_ops import _const_like, abs, log, sqrt, square  # noqa: A004

__all__ = ["eye", "trace", "norm", "cholesky_solve", "matrix_transpose"]


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """The [*batch_shape, num_rows, num_columns] identity matrices (`tf.eye`)."""
    with graph_lib.name_scope(name, "eye", [num_rows, num_columns, batch_shape]):
        dtype = dtypes.as_dtype(dtype)
        cols = num_rows if num_columns is None else num_columns
        static = all(isinstance(d, int) for d in (num_rows, cols)) and \
            isinstance(batch_shape, (list, tuple, type(None)))
        if static:  # a constant shape: the result's static shape is fully known
            shape = list(batch_shape or []) + [builtins.min(num_rows, cols)]
        else:
            batch = convert_to_tensor([] if batch_shape is None else batch_shape,
                                      dtype=dtypes.int32)
            shape = joining_ops.concat([batch, joining_ops.stack([minimum(num_rows, cols)])],
                                       0)
        ones = array_ops.ones(shape, dtype)
        return matrix_diag(ones, num_rows=num_rows, num_cols=cols)


def trace(x, name=None):
    """The sum of the main diagonal of each innermost matrix (`tf.linalg.trace`)."""
    with graph_lib.name_scope(name, "Trace", [x]):
        x = convert_to_tensor(x, name="x")
        return reduction_ops.reduce_sum(matrix_diag_part(x), -1)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """The transpose (conjugate with `conjugate`) of the innermost two dimensions
    (`tf.linalg.matrix_transpose`)."""
    with graph_lib.name_scope(name, "matrix_transpose", [a]):
        a = convert_to_tensor(a, name="a")
        rank = a.shape.ndims
        if rank is None:
            out = adjoint_last_two(a)
            return out if conjugate or not a.dtype.is_complex else conj(out)
        if rank < 2:
            raise ValueError(f"Argument 'a' should be a (batch) matrix with rank >= 2.  "
                             f"Found: {a.shape}")
        perm = list(builtins.range(rank - 2)) + [rank - 1, rank - 2]
        return array_ops.transpose(a, perm, conjugate=conjugate)


def adjoint(matrix, name=None):
    """The conjugate transpose of the innermost two dimensions (`tf.linalg.adjoint`)."""
    with graph_lib.name_scope(name, "adjoint", [matrix]):
        return adjoint_last_two(convert_to_tensor(matrix, name="matrix"))


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """The matrix-vector products a @ b over the innermost dimensions
    (`tf.linalg.matvec`)."""
    with graph_lib.name_scope(name, "MatVec", [a, b]):
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, dtype=a.dtype, name="b")
        out = matmul(a, array_ops.expand_dims(b, -1), transpose_a=transpose_a,
                     adjoint_a=adjoint_a)
        return array_ops.squeeze(out, axis=-1)


def cholesky_solve(chol, rhs, name=None):
    """X with A X = rhs given chol = cholesky(A) (`tf.linalg.cholesky_solve`)."""
    with graph_lib.name_scope(name, "cholesky_solve", [chol, rhs]):
        y = matrix_triangular_solve(chol, rhs, adjoint=False, lower=True)
        return matrix_triangular_solve(chol, y, adjoint=True, lower=True)


def slogdet(input, name=None):  # noqa: A002
    """(sign, log|det|) of each square matrix (`tf.linalg.slogdet`)."""
    return log_matrix_determinant(input, name=name)


def logdet(matrix, name=None):
    """log(det(matrix)) of Hermitian positive-definite matrices, by Cholesky
    (`tf.linalg.logdet`)."""
    with graph_lib.name_scope(name, "logdet", [matrix]):
        chol = cholesky(matrix)
        two = _const_like(2, real(chol))
        return multiply(two, reduction_ops.reduce_sum(log(real(matrix_diag_part(chol))), -1))


def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverse by SVD (`tf.linalg.pinv`): singular values at most
    rcond * s_max are treated as zero (rcond defaults to 10 eps max(M, N))."""
    with graph_lib.name_scope(name, "pinv", [a]):
        a = convert_to_tensor(a, name="a")
        s, u, v = svd(a, full_matrices=False, compute_uv=True)
        if rcond is None:
            size = cast(reduction_ops.reduce_max(array_ops.shape(a)[-2:]), s.dtype)
            rcond = multiply(_const_like(10 * np.finfo(s.dtype.as_numpy_dtype).eps, s), size)
        cutoff = multiply(cast(rcond, s.dtype), reduction_ops.reduce_max(s, -1, keepdims=True))
        inv_s = where_v2(greater(s, cutoff), truediv(array_ops.ones_like(s), s),
                         array_ops.zeros_like(s))
        return matmul(multiply(v, array_ops.expand_dims(inv_s, -2)), u, adjoint_b=True)


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """The number of singular values above tol (default eps max(M, N) s_max)
    (`tf.linalg.matrix_rank`)."""
    with graph_lib.name_scope(name, "matrix_rank", [a]):
        a = convert_to_tensor(a, name="a")
        s = svd(a, compute_uv=False)
        if tol is None:
            dims = a.shape.as_list()[-2:]
            tol = builtins.max(dims) * np.finfo(a.dtype.as_numpy_dtype).eps
            tol = multiply(_const_like(tol, s), reduction_ops.reduce_max(s, -1, keepdims=True))
        return reduction_ops.reduce_sum(cast(greater(s, tol), dtypes.int32), -1)


def lu_reconstruct(lower_upper, perm, validate_args=False, name=None):
    """The matrix whose `lu` is (lower_upper, perm) (`tf.linalg.lu_reconstruct`)."""
    with graph_lib.name_scope(name, "lu_reconstruct", [lower_upper, perm]):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        lower = matrix_set_diag(matrix_band_part(lower_upper, -1, 0),
                                array_ops.ones_like(matrix_diag_part(lower_upper)))
        upper = matrix_band_part(lower_upper, 0, -1)
        product = matmul(lower, upper)
        return matmul(permutation_matrix(perm, product.dtype), product, adjoint_a=True)


def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None):
    """X with A X = rhs given (lower_upper, perm) = lu(A) (`tf.linalg.lu_solve`)."""
    with graph_lib.name_scope(name, "lu_solve", [lower_upper, perm, rhs]):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        rhs = convert_to_tensor(rhs, dtype=lower_upper.dtype, name="rhs")
        permuted = matmul(permutation_matrix(perm, rhs.dtype), rhs)
        lower = matrix_set_diag(matrix_band_part(lower_upper, -1, 0),
                                array_ops.ones_like(matrix_diag_part(lower_upper)))
        y = matrix_triangular_solve(lower, permuted, lower=True)
        return matrix_triangular_solve(lower_upper, y, lower=False)


def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None):
    """The inverse of the matrix whose `lu` is (lower_upper, perm)
    (`tf.linalg.lu_matrix_inverse`)."""
    with graph_lib.name_scope(name, "lu_matrix_inverse", [lower_upper, perm]):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        shape = array_ops.shape(lower_upper)
        identity = eye(shape[-1], batch_shape=shape[:-2], dtype=lower_upper.dtype)
        return lu_solve(lower_upper, perm, identity)



# ---- norm --------------------------------------------------------------------------------

_VECTOR_ORDS = ("euclidean", 1, 2, np.inf)
_MATRIX_ORDS = ("euclidean", "fro", 1, 2, np.inf)


def _check_ord(ord, is_matrix: bool):  # noqa: A002
    supported = _MATRIX_ORDS if is_matrix else _VECTOR_ORDS
    ok = ord in supported or (not is_matrix and isinstance(ord, (int, float)) and
                              not isinstance(ord, bool) and ord > 0)
    if not ok:
        kind = "matrix" if is_matrix else "vector"
        raise ValueError(f"'ord' must be a supported {kind} norm, got {ord}")


def _abs_real(x):
    return abs(x) if x.dtype.is_complex or not x.dtype.is_unsigned else x


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """The vector or matrix norm of `tensor` (`tf.norm`, `tf.linalg.norm`).

    With `axis` None or an int, a vector norm over that axis (None: all of the tensor):
    ord 'euclidean' (= 2), 1, inf or any p > 0. With a pair of axes, a matrix norm:
    'fro'/'euclidean', 1 (max column sum), inf (max row sum) or 2 (largest singular
    value).

    Raises:
      ValueError: an unsupported ord or axis.
    """
    if keep_dims is not None:
        if keepdims is not None:
            raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'")
        keepdims = keep_dims
    keepdims = bool(keepdims)
    is_matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if isinstance(axis, (tuple, list)) and not is_matrix:
        if len(axis) != 1:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique "
                             f"integers, got {axis}")
        axis = axis[0]
    if is_matrix and axis[0] == axis[1]:
        raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, "
                         f"got {axis}")
    _check_ord(ord, is_matrix)
    with graph_lib.name_scope(name, "norm", [tensor]):
        x = convert_to_tensor(tensor, name="tensor")
        rank = x.shape.ndims
        if is_matrix:
            result = _matrix_norm(x, ord, list(axis), rank)
        else:
            if axis is None and rank is None:
                x, axes = array_ops.reshape(x, [-1]), [0]
            else:
                axes = list(builtins.range(rank)) if axis is None else [axis]
            result = _vector_norm(x, ord, axes)
        if not keepdims:
            squeeze_axes = list(axis) if is_matrix else (
                None if axis is None else [axis])
            result = array_ops.squeeze(result, squeeze_axes) if squeeze_axes is not None \
                else array_ops.reshape(result, [])
        return result


def _vector_norm(x, ord, axes):  # noqa: A002
    a = abs(x) if x.dtype.is_complex else x
    if ord in ("euclidean", 2):
        return sqrt(reduction_ops.reduce_sum(square(a), axes, keepdims=True))
    a = abs(a)
    if ord == 1:
        return reduction_ops.reduce_sum(a, axes, keepdims=True)
    if ord == np.inf:
        return reduction_ops.reduce_max(a, axes, keepdims=True)
    p = _const_like(ord, a)
    return pow(reduction_ops.reduce_sum(pow(a, p), axes, keepdims=True),
               _const_like(1.0 / ord, a))


def _matrix_norm(x, ord, axes, rank):  # noqa: A002
    a = abs(x) if x.dtype.is_complex else x
    if ord in ("euclidean", "fro"):
        return sqrt(reduction_ops.reduce_sum(square(a), axes, keepdims=True))
    a = abs(a)
    if ord == 1:
        col = reduction_ops.reduce_sum(a, axes[0], keepdims=True)
        return reduction_ops.reduce_max(col, axes[1], keepdims=True)
    if ord == np.inf:
        row = reduction_ops.reduce_sum(a, axes[1], keepdims=True)
        return reduction_ops.reduce_max(row, axes[0], keepdims=True)
    if rank is None:
        if axes != [-2, -1]:
            raise ValueError("The 2-norm of a matrix over axes other than [-2, -1] needs a "
                             "tensor of known rank")
        s = svd(x, compute_uv=False)
        return array_ops.expand_dims(reduction_ops.reduce_max(s, -1, keepdims=True), -1)
    axes = [ax % rank for ax in axes]  # svd works on the last two: move the axes there
    perm = [d for d in builtins.range(rank) if d not in axes] + axes
    s = svd(array_ops.transpose(x, perm), compute_uv=False)
    top = reduction_ops.reduce_max(s, -1, keepdims=True)
    top = array_ops.expand_dims(top, -1)
    inverse = list(np.argsort(perm))
    return array_ops.transpose(top, inverse)


def normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002
    """(tensor / norm(tensor), norm(tensor)) (`tf.linalg.normalize`)."""
    with graph_lib.name_scope(name, "normalize", [tensor]):
        x = convert_to_tensor(tensor, name="tensor")
        n = norm(x, ord=ord, axis=axis, keepdims=True)
        return truediv(x, cast(n, x.dtype)), n
