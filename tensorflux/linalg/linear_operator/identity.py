"""The operators of constant matrices with a batch shape of their own:
LinearOperatorIdentity, LinearOperatorScaledIdentity and LinearOperatorZeros."""

from __future__ import annotations

import numpy as np

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes, errors, tensor_shape
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.operation import Tensor
from tensorflux.linalg.linear_operator import util
from tensorflux.linalg.linear_operator.basic import _check_dtype, _real_self_adjoint
from tensorflux.linalg.linear_operator.linear_operator import LinearOperator
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.linalg_ops import matrix_diag, matrix_diag_part, matrix_set_diag
from tensorflux.ops.math_ops import _conj, add, cast, multiply, pow, real, truediv
from tensorflux.ops.unary_ops import abs, log, reciprocal, sqrt  # noqa: A004

__all__ = ["LinearOperatorIdentity", "LinearOperatorScaledIdentity", "LinearOperatorZeros"]


def _batch_list(batch_shape):
    """A static batch shape as a list of ints, or None when it is a tensor of unknown
    value."""
    if batch_shape is None:
        return []
    if isinstance(batch_shape, Tensor):
        v = constant_value(batch_shape)
        return None if v is None else [int(d) for d in np.reshape(v, [-1])]
    return [int(d) for d in batch_shape]


class _BaseIdentity(LinearOperator):
    """The shapes shared by Identity, ScaledIdentity and Zeros: [*batch, rows, cols]."""

    def _init_shape(self, num_rows, num_columns, batch_shape, assert_proper_shapes):
        for what, v in (("num_rows", num_rows), ("num_columns", num_columns)):
            static = util.static_int(v)
            if static is not None and static < 0:
                raise ValueError(f"Argument {what} must be non-negative.  Found: {static}")
        self._num_rows = num_rows
        self._num_columns = num_columns
        self._num_rows_static = util.static_int(num_rows)
        self._num_columns_static = util.static_int(num_columns)
        self._batch_static = _batch_list(batch_shape)
        self._batch_shape_arg = batch_shape
        if self._batch_static is not None and any(d < 0 for d in self._batch_static):
            raise ValueError(f"Argument batch_shape must be non-negative.  Found: "
                             f"{self._batch_static}")
        del assert_proper_shapes

    def _shape(self):
        batch = (tensor_shape.TensorShape(self._batch_static)
                 if self._batch_static is not None else tensor_shape.unknown_shape())
        return batch.concatenate([self._num_rows_static, self._num_columns_static])

    def _shape_tensor(self):
        batch = (util.constant(self._batch_static, dtype=dtypes.int32)
                 if self._batch_static is not None
                 else cast(util.to_tensor(self._batch_shape_arg), dtypes.int32))
        dims = joining_ops.stack([cast(util.to_tensor(self._num_rows), dtypes.int32),
                                  cast(util.to_tensor(self._num_columns), dtypes.int32)])
        return joining_ops.concat([batch, dims], 0)

    def _ones_batch(self, inner=()):
        """ones([*batch, *inner]) in the operator's dtype."""
        if self._batch_static is not None and all(
                isinstance(d, int) for d in inner):
            return array_ops.ones(self._batch_static + list(inner), dtype=self.dtype)
        shape = joining_ops.concat([self.batch_shape_tensor(), util.to_tensor(
            list(inner), dtype=dtypes.int32) if inner else util.constant(
            [], dtype=dtypes.int32)], 0)
        return array_ops.ones(shape, dtype=self.dtype)

    def _n(self):
        """The dimension N as a scalar tensor or int."""
        n = self._num_rows_static
        return n if n is not None else self.domain_dimension_tensor()

    def _batch_broadcast(self, x):
        """x with its batch dimensions broadcast against the operator's batch shape."""
        if self._batch_static == []:
            return x
        zeros = multiply(self._ones_batch([1, 1]), util.constant(0, dtype=self.dtype))
        return add(x, zeros)


class LinearOperatorIdentity(_BaseIdentity):
    """The [*batch_shape, N, N] identity (`tf.linalg.LinearOperatorIdentity`)."""

    _is_identity = True

    def __init__(self, num_rows, batch_shape=None, dtype=None, is_non_singular=True,
                 is_self_adjoint=True, is_positive_definite=True, is_square=True,
                 assert_proper_shapes=False, name="LinearOperatorIdentity"):
        dtype = dtypes.as_dtype(dtype or dtypes.float32)
        for hint, what in ((is_non_singular, "non-singular"),
                           (is_self_adjoint, "self-adjoint"),
                           (is_positive_definite, "positive definite"),
                           (is_square, "square")):
            if not hint:
                raise ValueError(f"An identity operator is always {what}.")
        self._init_shape(num_rows, num_rows, batch_shape, assert_proper_shapes)
        super().__init__(dtype, None, True, True, True, True, name,
                         dict(num_rows=num_rows, batch_shape=batch_shape, dtype=dtype,
                              name=name))

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        return self._batch_broadcast(x)

    def _matvec(self, x, adjoint=False):
        return array_ops.squeeze(self._matmul(array_ops.expand_dims(x, -1)), [-1])

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint_arg=adjoint_arg)

    def _determinant(self):
        return self._ones_batch()

    def _log_abs_determinant(self):
        return multiply(self._ones_batch(), util.constant(0, dtype=self.dtype))

    def _trace(self):
        return multiply(self._ones_batch(), cast(self._n(), self.dtype))

    def _diag_part(self):
        n = self._n()
        return self._ones_batch([n]) if isinstance(n, int) else array_ops.ones(
            joining_ops.concat([self.batch_shape_tensor(), array_ops.reshape(n, [1])], 0),
            dtype=self.dtype)

    def _to_dense(self):
        return matrix_diag(self._diag_part())

    def _add_to_tensor(self, x):
        return matrix_set_diag(x, add(matrix_diag_part(x), util.constant(1, dtype=x.dtype)))

    def _eigvals(self):
        return self._diag_part()

    def _cond(self):
        return self._ones_batch()

    def _assert_non_singular(self):
        return check_ops.assert_equal(self._ones_batch(), self._ones_batch())

    _assert_positive_definite = _assert_non_singular
    _assert_self_adjoint = _assert_non_singular

    def _linop_inverse(self):
        return self

    def _linop_cholesky(self):
        return self

    def _linop_matmul(self, left, right):
        if left is self and not isinstance(right, LinearOperatorZeros):
            return right
        return super()._linop_matmul(left, right)


class LinearOperatorScaledIdentity(_BaseIdentity):
    """multiplier * I for a [*batch] multiplier (`tf.linalg.LinearOperatorScaledIdentity`)."""

    def __init__(self, num_rows, multiplier, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, assert_proper_shapes=False,
                 name="LinearOperatorScaledIdentity"):
        if not is_square:
            raise ValueError("A ScaledIdentity operator is always square.")
        self._multiplier = util.to_tensor(multiplier, name="multiplier")
        _check_dtype(self._multiplier)
        is_self_adjoint = _real_self_adjoint(self._multiplier.dtype, is_self_adjoint)
        m = self._multiplier.shape
        batch = m.as_list() if m.is_fully_defined() else array_ops.shape(self._multiplier)
        self._init_shape(num_rows, num_rows, batch, assert_proper_shapes)
        super().__init__(self._multiplier.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name,
                         dict(num_rows=num_rows, multiplier=multiplier, name=name))

    @property
    def multiplier(self):
        return self._multiplier

    def _shape(self):
        return self._multiplier.shape.concatenate([self._num_rows_static] * 2)

    def _m(self, adjoint=False, inner=2):
        m = _conj(self._multiplier) if adjoint else self._multiplier
        for _ in range(inner):
            m = array_ops.expand_dims(m, -1)
        return m

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        return multiply(self._m(adjoint), x)

    def _matvec(self, x, adjoint=False):
        return multiply(self._m(adjoint, 1), x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        return truediv(rhs, self._m(adjoint))

    def _solvevec(self, rhs, adjoint=False):
        return truediv(rhs, self._m(adjoint, 1))

    def _determinant(self):
        return pow(self._multiplier, cast(self._n(), self.dtype))

    def _log_abs_determinant(self):
        logs = log(abs(self._multiplier))
        return multiply(cast(self._n(), logs.dtype), logs)

    def _trace(self):
        return multiply(self._multiplier, cast(self._n(), self.dtype))

    def _diag_part(self):
        n = self._n()
        ones = array_ops.ones(array_ops.reshape(n, [1]) if not isinstance(n, int) else [n],
                              dtype=self.dtype)
        return multiply(self._m(inner=1), ones)

    def _to_dense(self):
        return matrix_diag(self._diag_part())

    def _add_to_tensor(self, x):
        return matrix_set_diag(x, add(matrix_diag_part(x), self._m(inner=1)))

    def _eigvals(self):
        return self._diag_part()

    def _cond(self):
        return multiply(self._ones_batch(), util.constant(1, dtype=self.dtype))

    def _assert_non_singular(self):
        return check_ops.assert_positive(abs(self._multiplier),
                                         message="LinearOperator was singular")

    def _assert_positive_definite(self):
        m = real(self._multiplier) if self.dtype.is_complex else self._multiplier
        return check_ops.assert_positive(m, message="LinearOperator was not positive "
                                                    "definite.")

    def _linop_inverse(self):
        return LinearOperatorScaledIdentity(self._num_rows, reciprocal(self._multiplier),
                                            is_non_singular=self.is_non_singular,
                                            is_self_adjoint=self.is_self_adjoint,
                                            is_positive_definite=self.is_positive_definite)

    def _linop_cholesky(self):
        return LinearOperatorScaledIdentity(self._num_rows, sqrt(self._multiplier),
                                            is_non_singular=True, is_self_adjoint=True,
                                            is_positive_definite=True)


class LinearOperatorZeros(_BaseIdentity):
    """The [*batch_shape, M, N] zero matrices (`tf.linalg.LinearOperatorZeros`)."""

    _is_zeros = True

    def __init__(self, num_rows, num_columns=None, batch_shape=None, dtype=None,
                 is_non_singular=False, is_self_adjoint=True, is_positive_definite=False,
                 is_square=True, assert_proper_shapes=False, name="LinearOperatorZeros"):
        dtype = dtypes.as_dtype(dtype or dtypes.float32)
        if is_non_singular:
            raise ValueError("A Zeros operator is always singular.")
        if is_positive_definite:
            raise ValueError("A Zeros operator is never positive definite.")
        num_columns = num_rows if num_columns is None else num_columns
        rows, cols = util.static_int(num_rows), util.static_int(num_columns)
        if is_square and rows is not None and cols is not None and rows != cols:
            raise ValueError(f"LinearOperatorZeros initialized as is_square=True, but got "
                             f"num_rows({rows}) != num_columns({cols})")
        self._init_shape(num_rows, num_columns, batch_shape, assert_proper_shapes)
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         is_square, name, dict(num_rows=num_rows, num_columns=num_columns,
                                               batch_shape=batch_shape, dtype=dtype,
                                               name=name))

    def _zeros_like_out(self, x, adjoint, adjoint_arg):
        """zeros [*batch(broadcast), rows of the product, columns of x]."""
        x = util.adjoint(x) if adjoint_arg else x
        rows = self._num_columns if adjoint else self._num_rows
        left = util.to_tensor(rows, dtype=dtypes.int32)
        batch = joining_ops.broadcast_dynamic_shape(self.batch_shape_tensor(),
                                                    array_ops.shape(x)[:-2])
        shape = joining_ops.concat([batch, array_ops.reshape(left, [1]),
                                    array_ops.shape(x)[-1:]], 0)
        out = array_ops.zeros(shape, dtype=self.dtype)
        static = self._static_out(x, rows)
        if static is not None:
            out = array_ops.reshape(out, static)
        return out

    def _static_out(self, x, rows):
        xs = x.shape
        if self.batch_shape.is_fully_defined() and xs.is_fully_defined():
            batch = np.broadcast_shapes(tuple(self.batch_shape.as_list()),
                                        tuple(xs.as_list()[:-2]))
            r = util.static_int(rows)
            return None if r is None else list(batch) + [r, xs.as_list()[-1]]
        return None

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._zeros_like_out(x, adjoint, adjoint_arg)

    def _determinant(self):
        return multiply(self._ones_batch(), util.constant(0, dtype=self.dtype))

    def _log_abs_determinant(self):
        return log(self._determinant())

    def _trace(self):
        return self._determinant()

    def _diag_part(self):
        r, c = self._num_rows_static, self._num_columns_static
        if r is not None and c is not None:
            return multiply(self._ones_batch([min(r, c)]), util.constant(0, dtype=self.dtype))
        return matrix_diag_part(self._to_dense())

    def _to_dense(self):
        r, c = self._num_rows_static, self._num_columns_static
        if r is not None and c is not None:
            return multiply(self._ones_batch([r, c]), util.constant(0, dtype=self.dtype))
        return array_ops.zeros(self.shape_tensor(), dtype=self.dtype)

    def _add_to_tensor(self, x):
        return self._batch_broadcast(x)

    def _eigvals(self):
        return self._diag_part()

    def _assert_non_singular(self):
        raise _singular("LinearOperatorZeros is singular.")

    def _assert_positive_definite(self):
        raise _singular("LinearOperatorZeros is not positive definite.")

    def _assert_self_adjoint(self):
        return check_ops.assert_equal(self._determinant(), self._determinant())

    def _check_solvable(self):
        raise NotImplementedError("Exact solve not implemented for an operator that is "
                                  "expected to be singular.")


def _singular(message):
    return errors.InvalidArgumentError(None, None, message)
