"""`tf.linalg.LinearOperator`: the base class of the operator library.

An operator stands for a batch of matrices A of shape [B1, ..., Bb, M, N] without
necessarily storing them. A subclass says how to apply A (`_matmul`) and its static and
dynamic shapes (`_shape`, `_shape_tensor`); every other method has a dense default here
(to_dense, then the matrix ops) that subclasses with more structure replace by cheaper
forms (a diagonal solves by division, a Kronecker product multiplies factor by factor).
Everything is built from graph ops, so gradients come through tf.gradients.

The hints is_non_singular / is_self_adjoint / is_positive_definite / is_square are promises
by the caller (None: unknown) that pick faster algorithms; they are checked only for
consistency with each other, never against the values.
"""

from __future__ import annotations

import contextlib

import numpy as np

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.linalg.linalg_impl import cholesky_solve
from tensorflux.linalg.linear_operator import util
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.linalg_factor_ops import (
    log_matrix_determinant,
    matrix_solve,
    self_adjoint_eigvals,
    svd,
)
from tensorflux.ops.linalg_ops import matrix_diag, matrix_diag_part
from tensorflux.ops.math_ops import add, multiply, real, truediv
from tensorflux.ops.matrix_ops import cholesky, matrix_determinant
from tensorflux.ops.unary_ops import abs, exp, log  # noqa: A004

__all__ = ["LinearOperator"]


def _check_hints(is_non_singular, is_self_adjoint, is_positive_definite, is_square):
    """The hints checked against each other; returns the implied (is_non_singular,
    is_square) (TF's rules:
    positive definite implies non-singular, which like self-adjoint implies square)."""
    if is_positive_definite:
        if is_non_singular is False:
            raise ValueError("A positive definite matrix is always non-singular.")
        is_non_singular = True
    if is_non_singular:
        if is_square is False:
            raise ValueError("A non-singular matrix is always square.")
        is_square = True
    if is_self_adjoint:
        if is_square is False:
            raise ValueError("A self-adjoint matrix is always square.")
        is_square = True
    return is_non_singular, is_square


class LinearOperator:
    """A batch of linear maps, [B1, ..., Bb, M, N] (`tf.linalg.LinearOperator`).

    Args:
      dtype: the operator's dtype (that of the arguments and results of matmul).
      graph_parents: accepted for compatibility (TF1); unused.
      is_non_singular, is_self_adjoint, is_positive_definite, is_square: hints (None
        unknown).
      name: the name scope of the operator's ops.
      parameters: the constructor's arguments (for `parameters`).

    Raises:
      ValueError: inconsistent hints.
    """

    def __init__(self, dtype, graph_parents=None, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None, parameters=None):
        del graph_parents
        is_non_singular, self._is_square_hint = _check_hints(
            is_non_singular, is_self_adjoint, is_positive_definite, is_square)
        self._is_non_singular, self._is_self_adjoint = is_non_singular, is_self_adjoint
        self._is_positive_definite = is_positive_definite
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype)
        self._name = name or type(self).__name__
        self._parameters = dict(parameters or {})

    # ---- properties ------------------------------------------------------------------

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    @property
    def parameters(self):
        return dict(self._parameters)

    @property
    def graph_parents(self):
        return []

    @property
    def is_non_singular(self):
        return self._is_non_singular

    @property
    def is_self_adjoint(self):
        return self._is_self_adjoint

    @property
    def is_positive_definite(self):
        return self._is_positive_definite

    @property
    def is_square(self):
        """True/False from the static shape where it is known, else the hint."""
        m, n = self.range_dimension.value, self.domain_dimension.value
        auto = None if m is None or n is None else m == n
        if self._is_square_hint is False and auto:
            raise ValueError("User set is_square hint to False, but the operator was square.")
        return auto if self._is_square_hint is None else self._is_square_hint

    @contextlib.contextmanager
    def _name_scope(self, name=None):
        with graph_lib.name_scope(self.name + "/"):  # one scope per name, as TF's graphs
            if name is None:
                yield
            else:
                with graph_lib.name_scope(name) as scope:
                    yield scope

    # ---- shapes ----------------------------------------------------------------------

    def _shape(self) -> tensor_shape.TensorShape:
        raise NotImplementedError("_shape is not implemented")

    def _shape_tensor(self) -> Tensor:
        raise NotImplementedError("_shape_tensor is not implemented")

    @property
    def shape(self) -> tensor_shape.TensorShape:
        """The static [B1, ..., Bb, M, N] shape."""
        return tensor_shape.TensorShape(self._shape())

    def shape_tensor(self, name="shape_tensor"):
        with self._name_scope(name):
            return util.static_or_dynamic(self.shape, self._shape_tensor)

    @property
    def batch_shape(self):
        s = self.shape
        return tensor_shape.unknown_shape() if s.ndims is None else s[:-2]

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        with self._name_scope(name):
            if self.batch_shape.is_fully_defined():
                return util.constant(self.batch_shape.as_list(), dtype=dtypes.int32)
            return self._shape_tensor()[:-2]

    @property
    def tensor_rank(self):
        return self.shape.ndims

    def tensor_rank_tensor(self, name="tensor_rank_tensor"):
        with self._name_scope(name):
            if self.tensor_rank is not None:
                return util.constant(self.tensor_rank, dtype=dtypes.int32)
            return array_ops.size(self.shape_tensor())

    @property
    def domain_dimension(self):
        s = self.shape
        return tensor_shape.Dimension(None) if s.ndims is None else s[-1]

    def domain_dimension_tensor(self, name="domain_dimension_tensor"):
        with self._name_scope(name):
            if self.domain_dimension.value is not None:
                return util.constant(self.domain_dimension.value, dtype=dtypes.int32)
            return self._shape_tensor()[-1]

    @property
    def range_dimension(self):
        s = self.shape
        return tensor_shape.Dimension(None) if s.ndims is None else s[-2]

    def range_dimension_tensor(self, name="range_dimension_tensor"):
        with self._name_scope(name):
            if self.range_dimension.value is not None:
                return util.constant(self.range_dimension.value, dtype=dtypes.int32)
            return self._shape_tensor()[-2]

    # ---- checks ----------------------------------------------------------------------

    def _check_input_dtype(self, arg):
        if arg.dtype.base_dtype != self.dtype:
            raise TypeError(f"Expected argument to have dtype {self.dtype}. Found: "
                            f"{arg.dtype} in tensor {arg}")

    def _check_inner(self, x, self_axis, arg_axis):
        """The operator's dimension `self_axis` against x's `arg_axis`, where both are
        static.

        Raises:
          ValueError: they differ.
        """
        mine = self.shape[self_axis].value if self.shape.ndims is not None else None
        theirs = x.shape[arg_axis].value if x.shape.ndims not in (None, 0) else None
        if mine is not None and theirs is not None and mine != theirs:
            raise ValueError(f"Dimensions {mine} and {theirs} are not compatible")

    def _dense_for_checks(self):
        return self.to_dense()

    def assert_non_singular(self, name="assert_non_singular"):
        """An op that fails at run time when some matrix is singular (condition number
        beyond 1/eps)."""
        with self._name_scope(name):
            return self._assert_non_singular()

    def _assert_non_singular(self):
        if self.is_self_adjoint and self.is_positive_definite:
            return self._assert_positive_definite()
        cond = self._cond()
        eps = np.finfo(self.dtype.real_dtype.as_numpy_dtype).eps
        limit = util.constant(1.0 / eps, dtype=cond.dtype)
        return check_ops.assert_less(cond, limit,
                                     message="Singular matrix up to precision epsilon.")

    def assert_positive_definite(self, name="assert_positive_definite"):
        """An op that fails at run time unless every matrix has x^H A x > 0 for x != 0."""
        with self._name_scope(name):
            return self._assert_positive_definite()

    def _assert_positive_definite(self):
        dense = self._dense_for_checks()
        hermitian = multiply(add(dense, util.adjoint(dense)),
                             util.constant(0.5, dtype=dense.dtype))
        values = self_adjoint_eigvals(hermitian)
        return check_ops.assert_positive(values, message="Matrix was not positive definite.")

    def assert_self_adjoint(self, name="assert_self_adjoint"):
        """An op that fails at run time unless every matrix equals its adjoint."""
        with self._name_scope(name):
            return self._assert_self_adjoint()

    def _assert_self_adjoint(self):
        dense = self._dense_for_checks()
        return check_ops.assert_equal(dense, util.adjoint(dense),
                                      message="Matrix was not equal to its adjoint.")

    # ---- products and solves ---------------------------------------------------------

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        raise NotImplementedError("_matmul is not implemented")

    def matmul(self, x, adjoint=False, adjoint_arg=False, name="matmul"):
        """A @ x (A^H @ x with `adjoint`; x^H in place of x with `adjoint_arg`), batch
        dimensions broadcast. A LinearOperator `x` gives their composition."""
        if isinstance(x, LinearOperator):
            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            m, n = right.range_dimension.value, left.domain_dimension.value
            if m is not None and n is not None and m != n:
                raise ValueError(f"Operators are incompatible. Expected `x` to have "
                                 f"dimension {n} but got {m}.")
            return left._linop_matmul(left, right)
        with self._name_scope(name):
            x = util.to_tensor(x, name="x")
            self._check_input_dtype(x)
            self._check_inner(x, -2 if adjoint else -1, -1 if adjoint_arg else -2)
            return self._matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _linop_matmul(self, left, right):
        """left @ right for operators: the left one when right is an identity, else
        their composition (subclasses return structured products)."""
        from tensorflux.linalg.linear_operator.structural import LinearOperatorComposition
        if getattr(right, "_is_identity", False):
            return left
        if getattr(right, "_is_zeros", False):
            if not right.is_square or not left.is_square:
                raise ValueError("Matmul with non-square `LinearOperator`s or non-square "
                                 "`LinearOperatorZeros` not supported at this time.")
            return right
        is_square = None
        if left.is_square is not None and right.is_square is not None:
            is_square = bool(left.is_square and right.is_square)
        non_singular = None
        if is_square and left.is_non_singular and right.is_non_singular:
            non_singular = True
        return LinearOperatorComposition([left, right], is_non_singular=non_singular,
                                         is_square=is_square)

    def __matmul__(self, other):
        return self.matmul(other)

    def _matvec(self, x, adjoint=False):
        x_mat = array_ops.expand_dims(x, -1)
        return array_ops.squeeze(self._matmul(x_mat, adjoint=adjoint), [-1])

    def matvec(self, x, adjoint=False, name="matvec"):
        """A @ x for vectors x [..., N] (A^H @ x with `adjoint`)."""
        with self._name_scope(name):
            x = util.to_tensor(x, name="x")
            self._check_input_dtype(x)
            self._check_inner(x, -2 if adjoint else -1, -1)
            return self._matvec(x, adjoint=adjoint)

    def _can_use_cholesky(self):
        return bool(self.is_self_adjoint and self.is_positive_definite)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        dense = self.to_dense()
        if self._can_use_cholesky():
            chol, rhs = util.broadcast_batch(cholesky(dense), rhs)
            return cholesky_solve(chol, rhs)
        dense, rhs = util.broadcast_batch(dense, rhs)
        return matrix_solve(dense, rhs, adjoint=adjoint)

    def _check_solvable(self):
        if self.is_non_singular is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is "
                                      "expected to be singular.")
        if self.is_square is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is "
                                      "expected to not be square.")

    def solve(self, rhs, adjoint=False, adjoint_arg=False, name="solve"):
        """X with A X = rhs (A^H X = rhs with `adjoint`); a LinearOperator `rhs` gives
        the composition inverse(A) @ rhs.

        Raises:
          NotImplementedError: the hints say A is singular or not square.
        """
        self._check_solvable()
        if isinstance(rhs, LinearOperator):
            left = (self.adjoint() if adjoint else self).inverse()
            right = rhs.adjoint() if adjoint_arg else rhs
            return left._linop_matmul(left, right)
        with self._name_scope(name):
            rhs = util.to_tensor(rhs, name="rhs")
            self._check_input_dtype(rhs)
            self._check_inner(rhs, -1 if adjoint else -2, -1 if adjoint_arg else -2)
            return self._solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solvevec(self, rhs, adjoint=False):
        rhs_mat = array_ops.expand_dims(rhs, -1)
        return array_ops.squeeze(self._solve(rhs_mat, adjoint=adjoint), [-1])

    def solvevec(self, rhs, adjoint=False, name="solve"):
        """x with A x = rhs for vectors rhs [..., M]."""
        self._check_solvable()
        with self._name_scope(name):
            rhs = util.to_tensor(rhs, name="rhs")
            self._check_input_dtype(rhs)
            self._check_inner(rhs, -1 if adjoint else -2, -1)
            return self._solvevec(rhs, adjoint=adjoint)

    # ---- scalars of each matrix ------------------------------------------------------

    def _check_square(self, what):
        if self.is_square is False:
            raise NotImplementedError(f"{what} not implemented for an operator that is "
                                      "expected to not be square.")

    def _determinant(self):
        if self._can_use_cholesky():
            return exp(self._log_abs_determinant())
        return matrix_determinant(self.to_dense())

    def determinant(self, name="det"):
        """det(A) for each matrix of the batch."""
        self._check_square("Determinant")
        with self._name_scope(name):
            return self._determinant()

    def _log_abs_determinant(self):
        if self._can_use_cholesky():
            diag = matrix_diag_part(cholesky(self.to_dense()))
            return multiply(util.constant(2.0, dtype=self.dtype.real_dtype),
                            reduction_ops.reduce_sum(log(real(diag)), -1))
        _, logdet = log_matrix_determinant(self.to_dense())
        return real(logdet) if logdet.dtype.is_complex else logdet

    def log_abs_determinant(self, name="log_abs_det"):
        """log |det(A)| for each matrix of the batch."""
        self._check_square("Log abs determinant")
        with self._name_scope(name):
            return self._log_abs_determinant()

    def _diag_part(self):
        return matrix_diag_part(self.to_dense())

    def diag_part(self, name="diag_part"):
        """The main diagonal of each matrix, [..., min(M, N)]."""
        with self._name_scope(name):
            return self._diag_part()

    def _trace(self):
        return reduction_ops.reduce_sum(self._diag_part(), -1)

    def trace(self, name="trace"):
        """The trace of each matrix of the batch."""
        with self._name_scope(name):
            return self._trace()

    def _eigvals(self):
        if not self.is_self_adjoint:
            raise NotImplementedError("Only self-adjoint matrices are supported.")
        return self_adjoint_eigvals(self.to_dense())

    def eigvals(self, name="eigvals"):
        """The eigenvalues (ascending) of each self-adjoint matrix.

        Raises:
          NotImplementedError: the operator is not hinted self-adjoint.
        """
        self._check_square("Eigenvalues")
        with self._name_scope(name):
            return self._eigvals()

    def _cond(self):
        if self.is_self_adjoint:
            values = abs(self._eigvals())
        else:
            values = svd(self.to_dense(), compute_uv=False)
        values = real(values) if values.dtype.is_complex else values
        return truediv(reduction_ops.reduce_max(values, -1),
                       reduction_ops.reduce_min(values, -1))

    def cond(self, name="cond"):
        """The 2-norm condition number of each matrix: max/min singular value."""
        with self._name_scope(name):
            return self._cond()

    # ---- dense forms and derived operators -------------------------------------------

    def _to_dense(self):
        if self.batch_shape.is_fully_defined():
            batch = self.batch_shape.as_list()
        else:
            batch = self.batch_shape_tensor()
        n = self.domain_dimension.value
        n = self.domain_dimension_tensor() if n is None else n
        if isinstance(batch, list) and isinstance(n, int):
            ones = array_ops.ones(batch + [n], dtype=self.dtype)
        else:
            shape = joining_ops.concat([util.to_tensor(batch, dtype=dtypes.int32),
                                        array_ops.reshape(n, [1])], 0)
            ones = array_ops.ones(shape, dtype=self.dtype)
        return self._matmul(matrix_diag(ones))

    def to_dense(self, name="to_dense"):
        """The [..., M, N] dense matrices."""
        with self._name_scope(name):
            return self._to_dense()

    def _add_to_tensor(self, x):
        return add(self.to_dense(), x)

    def add_to_tensor(self, x, name="add_to_tensor"):
        """A + x for a [..., M, N] tensor x."""
        with self._name_scope(name):
            x = util.to_tensor(x, name="x")
            self._check_input_dtype(x)
            return self._add_to_tensor(x)

    def adjoint(self, name="adjoint"):
        """The adjoint operator A^H (self when hinted self-adjoint)."""
        if self.is_self_adjoint is True:
            return self
        from tensorflux.linalg.linear_operator.structural import LinearOperatorAdjoint
        return LinearOperatorAdjoint(self)

    H = property(adjoint, None)

    def inverse(self, name="inverse"):
        """The inverse operator A^-1.

        Raises:
          ValueError: the hints say A is singular or not square.
        """
        if self.is_square is False:
            raise ValueError("Cannot take the Inverse: This operator represents a non "
                             "square matrix.")
        if self.is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a "
                             "singular matrix.")
        return self._linop_inverse()

    def _linop_inverse(self):
        from tensorflux.linalg.linear_operator.structural import LinearOperatorInversion
        return LinearOperatorInversion(self)

    def cholesky(self, name="cholesky"):
        """The lower-triangular Cholesky factor L (A = L L^H) as an operator.

        Raises:
          ValueError: the operator is not hinted self-adjoint and positive definite.
        """
        if not self._can_use_cholesky():
            raise ValueError("Cannot take the Cholesky decomposition: Not a positive "
                             "definite self adjoint matrix.")
        return self._linop_cholesky()

    def _linop_cholesky(self):
        from tensorflux.linalg.linear_operator.basic import LinearOperatorLowerTriangular
        return LinearOperatorLowerTriangular(cholesky(self.to_dense()), is_non_singular=True,
                                             is_self_adjoint=False, is_square=True)

    def __repr__(self):
        return (f"<tf.linalg.{type(self).__name__} '{self.name}' shape={self.shape} "
                f"dtype={self.dtype.name if self.dtype else None}>")
