"""The operators that hold their matrix (or its diagonal) directly:
LinearOperatorFullMatrix, LinearOperatorDiag and LinearOperatorLowerTriangular."""

from __future__ import annotations

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.linalg.linear_operator import util
from tensorflux.linalg.linear_operator.linear_operator import LinearOperator
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.linalg_factor_ops import matrix_triangular_solve
from tensorflux.ops.linalg_ops import (
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
)
from tensorflux.ops.math_ops import (
    _conj,
    add,
    imag,
    multiply,
    real,
    truediv,
)
from tensorflux.ops.unary_ops import abs, log, reciprocal, sqrt  # noqa: A004

__all__ = ["LinearOperatorFullMatrix", "LinearOperatorDiag", "LinearOperatorLowerTriangular"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64,
           dtypes.complex128)


def _check_dtype(t, allowed=_FLOATS):
    if t.dtype.base_dtype not in allowed:
        raise TypeError(f"Argument {t.name} must have dtype in {[d.name for d in allowed]}. "
                        f"Found: {t.dtype.name}")


def _real_self_adjoint(dtype, is_self_adjoint):
    """Real diagonal matrices are self-adjoint: the hint, True for real dtypes."""
    if not dtype.is_complex:
        if is_self_adjoint is False:
            raise ValueError("A real diagonal operator is always self adjoint.")
        return True
    return is_self_adjoint


class LinearOperatorFullMatrix(LinearOperator):
    """The operator of a dense [..., M, N] matrix (`tf.linalg.LinearOperatorFullMatrix`)."""

    def __init__(self, matrix, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None,
                 name="LinearOperatorFullMatrix"):
        self._matrix = util.to_tensor(matrix, name="matrix")
        _check_dtype(self._matrix)
        if self._matrix.shape.ndims is not None and self._matrix.shape.ndims < 2:
            raise ValueError(f"Argument matrix must have at least 2 dimensions.  Found: "
                             f"{self._matrix.shape}")
        super().__init__(self._matrix.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name,
                         dict(matrix=matrix, name=name))

    @property
    def matrix(self):
        return self._matrix

    def _shape(self):
        return self._matrix.shape

    def _shape_tensor(self):
        return array_ops.shape(self._matrix)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return util.matmul_adj(self._matrix, x, adjoint, adjoint_arg)

    def _to_dense(self):
        return self._matrix


class LinearOperatorDiag(LinearOperator):
    """The square operator of the diagonal matrices diag(d) for d [..., N]
    (`tf.linalg.LinearOperatorDiag`): products and solves are elementwise."""

    def __init__(self, diag, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorDiag"):
        self._diag = util.to_tensor(diag, name="diag")
        _check_dtype(self._diag)
        if self._diag.shape.ndims is not None and self._diag.shape.ndims < 1:
            raise ValueError(f"Argument diag must have at least 1 dimension.  Found: "
                             f"{self._diag}")
        is_self_adjoint = _real_self_adjoint(self._diag.dtype, is_self_adjoint)
        if is_square is False:
            raise ValueError("Only square diagonal operators currently supported.")
        super().__init__(self._diag.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, dict(diag=diag, name=name))

    @property
    def diag(self):
        return self._diag

    def _shape(self):
        s = self._diag.shape
        return s.concatenate(s[-1:]) if s.ndims is not None else tensor_shape.unknown_shape()

    def _shape_tensor(self):
        d = array_ops.shape(self._diag)
        return joining_ops.concat([d, d[-1:]], 0)

    def _d(self, adjoint):
        return _conj(self._diag) if adjoint else self._diag

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        return multiply(array_ops.expand_dims(self._d(adjoint), -1), x)

    def _matvec(self, x, adjoint=False):
        return multiply(self._d(adjoint), x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        return truediv(rhs, array_ops.expand_dims(self._d(adjoint), -1))

    def _solvevec(self, rhs, adjoint=False):
        return truediv(rhs, self._d(adjoint))

    def _determinant(self):
        return reduction_ops.reduce_prod(self._diag, -1)

    def _log_abs_determinant(self):
        logs = log(abs(self._diag))
        return reduction_ops.reduce_sum(logs, -1)

    def _diag_part(self):
        return self._diag

    def _to_dense(self):
        return matrix_diag(self._diag)

    def _add_to_tensor(self, x):
        return matrix_set_diag(x, add(self._diag, matrix_diag_part(x)))

    def _eigvals(self):
        return self._diag

    def _cond(self):
        a = abs(self._diag)
        return truediv(reduction_ops.reduce_max(a, -1), reduction_ops.reduce_min(a, -1))

    def _assert_non_singular(self):
        return check_ops.assert_positive(abs(self._diag),
                                         message="Singular operator: Diagonal contained "
                                                 "zero values.")

    def _assert_positive_definite(self):
        d = real(self._diag) if self._diag.dtype.is_complex else self._diag
        return check_ops.assert_positive(d, message="Operator was not positive definite.")

    def _assert_self_adjoint(self):
        if not self._diag.dtype.is_complex:
            return check_ops.assert_equal(self._diag, self._diag)
        return check_ops.assert_equal(imag(self._diag), util.constant(
            0, dtype=self._diag.dtype.real_dtype), message="This diagonal operator "
                                                           "contained non-zero imaginary values.")

    def adjoint(self, name="adjoint"):
        if self.is_self_adjoint:
            return self
        return LinearOperatorDiag(_conj(self._diag), is_non_singular=self.is_non_singular,
                                  is_positive_definite=self.is_positive_definite)

    H = property(adjoint, None)

    def _linop_inverse(self):
        return LinearOperatorDiag(reciprocal(self._diag), is_non_singular=self.is_non_singular,
                                  is_self_adjoint=self.is_self_adjoint,
                                  is_positive_definite=self.is_positive_definite)

    def _linop_cholesky(self):
        return LinearOperatorDiag(sqrt(self._diag), is_non_singular=True,
                                  is_self_adjoint=True, is_positive_definite=True)

    def _linop_matmul(self, left, right):
        if isinstance(right, LinearOperatorDiag) and isinstance(left, LinearOperatorDiag):
            both = [left.is_non_singular, right.is_non_singular]
            return LinearOperatorDiag(multiply(left.diag, right.diag),
                                      is_non_singular=True if all(both) else None,
                                      is_self_adjoint=None if left.dtype.is_complex else True)
        return super()._linop_matmul(left, right)


class LinearOperatorLowerTriangular(LinearOperator):
    """The operator of the lower triangle of [..., N, N] matrices (the rest is ignored)
    (`tf.linalg.LinearOperatorLowerTriangular`): solves by substitution."""

    def __init__(self, tril, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None,
                 name="LinearOperatorLowerTriangular"):
        if is_square is False:
            raise ValueError("Only square lower triangular operators supported at this "
                             "time.")
        self._tril = util.to_tensor(tril, name="tril")
        _check_dtype(self._tril)
        if self._tril.shape.ndims is not None and self._tril.shape.ndims < 2:
            raise ValueError(f"Argument tril must have at least 2 dimensions.  Found: "
                             f"{self._tril}")
        super().__init__(self._tril.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, dict(tril=tril, name=name))

    @property
    def tril(self):
        return self._tril

    def _lower(self):
        return matrix_band_part(self._tril, -1, 0)

    def _shape(self):
        return self._tril.shape

    def _shape_tensor(self):
        return array_ops.shape(self._tril)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return util.matmul_adj(self._lower(), x, adjoint, adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        return matrix_triangular_solve(self._lower(), rhs, lower=True, adjoint=adjoint)

    def _diag_part(self):
        return matrix_diag_part(self._tril)

    def _determinant(self):
        return reduction_ops.reduce_prod(self._diag_part(), -1)

    def _log_abs_determinant(self):
        return reduction_ops.reduce_sum(log(abs(self._diag_part())), -1)

    def _eigvals(self):
        return self._diag_part()

    def _to_dense(self):
        return self._lower()

    def _assert_non_singular(self):
        return check_ops.assert_positive(abs(self._diag_part()),
                                         message="Singular operator: Diagonal contained "
                                                 "zero values.")
