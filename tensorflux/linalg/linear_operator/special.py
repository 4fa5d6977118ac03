"""Structured square operators given by a few vectors: LinearOperatorPermutation,
LinearOperatorHouseholder, LinearOperatorToeplitz and LinearOperatorTridiag."""

from __future__ import annotations

import numpy as np

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.common_shapes import constant_value
from tensorflux.linalg.linear_operator import util
from tensorflux.linalg.linear_operator.basic import _check_dtype
from tensorflux.linalg.linear_operator.linear_operator import LinearOperator
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.comparison_ops import equal
from tensorflux.ops.gather_ops import gather, one_hot
from tensorflux.ops.linalg_ops import matrix_diag
from tensorflux.ops.math_ops import _conj, add, cast, multiply, real, subtract, truediv
from tensorflux.ops.matrix_ops import matrix_determinant
from tensorflux.ops.sequence_ops import range as tf_range
from tensorflux.ops.slicing_ops import strided_slice
from tensorflux.ops.spectral_ops import fft, ifft
from tensorflux.ops.tridiagonal_ops import (
    _adjoint_sequence,
    _compact,
    _row,
    tridiagonal_matmul,
    tridiagonal_solve,
)

__all__ = ["LinearOperatorPermutation", "LinearOperatorHouseholder",
           "LinearOperatorToeplitz", "LinearOperatorTridiag"]


def _last_dim(t):
    """t's last dimension: an int when static, else a scalar tensor."""
    d = t.shape[-1].value if t.shape.ndims is not None else None
    return d if d is not None else array_ops.shape(t)[-1]


def _vector_shape(v):
    """[..., N] -> the static [..., N, N] operator shape."""
    s = v.shape
    return s.concatenate(s[-1:]) if s.ndims is not None else tensor_shape.unknown_shape()


def _vector_shape_tensor(v):
    d = array_ops.shape(v)
    return joining_ops.concat([d, d[-1:]], 0)


class LinearOperatorPermutation(LinearOperator):
    """The permutation matrices P with (P x)[i] = x[perm[i]], for perm [..., N] of int
    (`tf.linalg.LinearOperatorPermutation`); the inverse is the adjoint."""

    def __init__(self, perm, dtype=dtypes.float32, is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=None,
                 name="LinearOperatorPermutation"):
        self._perm = util.to_tensor(perm, name="perm")
        if not self._perm.dtype.is_integer:
            raise TypeError(f"Argument perm must have integer dtype. Found: "
                            f"{self._perm.dtype}")
        if self._perm.shape.ndims is not None and self._perm.shape.ndims < 1:
            raise ValueError("Argument perm must have at least 1 dimension.")
        static = constant_value(self._perm)
        if static is not None:
            n = static.shape[-1]
            if not (np.sort(static, -1) == np.arange(n)).all():
                raise ValueError(f"Argument perm must be a permutation of 0..{n - 1} along "
                                 f"its last dimension. Found: {static.tolist()}")
        if is_non_singular is False:
            raise ValueError("A Permutation operator is always non-singular.")
        if is_square is False:
            raise ValueError("A Permutation operator is always square.")
        super().__init__(dtypes.as_dtype(dtype), None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name,
                         dict(perm=perm, dtype=dtype, name=name))

    @property
    def perm(self):
        return self._perm

    def _shape(self):
        return _vector_shape(self._perm)

    def _shape_tensor(self):
        return _vector_shape_tensor(self._perm)

    def _to_dense(self):
        return one_hot(self._perm, _last_dim(self._perm), dtype=self.dtype)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return util.matmul_adj(self._to_dense(), x, adjoint, adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return util.matmul_adj(self._to_dense(), rhs, not adjoint, adjoint_arg)

    def _fixed(self):
        n = _last_dim(self._perm)
        return cast(equal(self._perm, tf_range(n, dtype=self._perm.dtype)), self.dtype)

    def _diag_part(self):
        return self._fixed()

    def _determinant(self):
        return matrix_determinant(self._to_dense())

    def _log_abs_determinant(self):
        return multiply(reduction_ops.reduce_sum(self._fixed(), -1),
                        util.constant(0, dtype=self.dtype))

    def _cond(self):
        return add(self._log_abs_determinant(), util.constant(1, dtype=self.dtype))

    def _linop_inverse(self):
        return self.adjoint()


class LinearOperatorHouseholder(LinearOperator):
    """The reflections H = I - 2 v v^H / (v^H v) about the hyperplane orthogonal to v
    [..., N] (`tf.linalg.LinearOperatorHouseholder`): self-adjoint, its own inverse."""

    def __init__(self, reflection_axis, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None,
                 name="LinearOperatorHouseholder"):
        self._axis = util.to_tensor(reflection_axis, name="reflection_axis")
        _check_dtype(self._axis)
        if self._axis.shape.ndims is not None and self._axis.shape.ndims < 1:
            raise ValueError("Argument reflection_axis must have at least 1 dimension.")
        if is_self_adjoint is False:
            raise ValueError("A Householder operator is always self adjoint.")
        if is_non_singular is False:
            raise ValueError("A Householder operator is always non-singular.")
        if is_positive_definite is True:
            raise ValueError("A Householder operator is always non-positive definite.")
        if is_square is False:
            raise ValueError("A Householder operator is always square.")
        super().__init__(self._axis.dtype, None, is_non_singular, True, False, True, name,
                         dict(reflection_axis=reflection_axis, name=name))

    @property
    def reflection_axis(self):
        return self._axis

    def _shape(self):
        return _vector_shape(self._axis)

    def _shape_tensor(self):
        return _vector_shape_tensor(self._axis)

    def _unit(self):
        v = self._axis
        norm2 = reduction_ops.reduce_sum(real(multiply(_conj(v), v)), -1, keepdims=True)
        return v, cast(norm2, v.dtype)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        v, norm2 = self._unit()
        vm = array_ops.expand_dims(v, -1)
        proj = util.matmul_adj(vm, x, adjoint_a=True)  # v^H x
        scale = array_ops.expand_dims(truediv(util.constant(2, dtype=v.dtype), norm2), -1)
        return subtract(x, multiply(scale, multiply(vm, proj)))

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint, adjoint_arg)

    def _diag_part(self):
        v, norm2 = self._unit()
        sq = cast(real(multiply(_conj(v), v)), v.dtype)
        return subtract(util.constant(1, dtype=v.dtype),
                        multiply(util.constant(2, dtype=v.dtype), truediv(sq, norm2)))

    def _trace(self):
        n = cast(_last_dim(self._axis), self.dtype)
        return add(self._zeros_batch(), subtract(n, util.constant(2, dtype=self.dtype)))

    def _determinant(self):
        return subtract(self._zeros_batch(), util.constant(1, dtype=self.dtype))

    def _zeros_batch(self):
        """Zeros of the batch shape."""
        return reduction_ops.reduce_sum(multiply(self._axis, util.constant(0, self.dtype)),
                                        -1)

    def _log_abs_determinant(self):
        return self._zeros_batch()

    def _eigvals(self):
        n = _last_dim(self._axis)
        ones = array_ops.ones_like(self._axis)
        first = one_hot(array_ops.zeros_like(self._axis[..., 0], dtype=dtypes.int32), n,
                        dtype=self.dtype)
        return subtract(ones, multiply(util.constant(2, dtype=self.dtype), first))

    def _cond(self):
        return add(self._zeros_batch(), util.constant(1, dtype=self.dtype))

    def _assert_non_singular(self):
        return check_ops.assert_equal(self._zeros_batch(), self._zeros_batch())

    def _linop_inverse(self):
        return self


class LinearOperatorToeplitz(LinearOperator):
    """The Toeplitz matrices T[i, j] = col[i - j] (i >= j), row[j - i] (i < j), from the
    first column `col` and first row `row` (row[0] is ignored)
    (`tf.linalg.LinearOperatorToeplitz`). Products embed T in a circulant matrix of size 2N
    and go through FFTs."""

    def __init__(self, col, row, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorToeplitz"):
        self._col = util.to_tensor(col, name="col")
        self._row = util.to_tensor(row, dtype=self._col.dtype, name="row")
        _check_dtype(self._col)
        if is_square is False:
            raise ValueError("Only square Toeplitz operators currently supported.")
        super().__init__(self._col.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, dict(col=col, row=row, name=name))

    @property
    def col(self):
        return self._col

    @property
    def row(self):
        return self._row

    def _shape(self):
        s = joining_ops.broadcast_static_shape(self._col.shape, self._row.shape)
        return _vector_shape_from(s)

    def _shape_tensor(self):
        s = joining_ops.broadcast_dynamic_shape(array_ops.shape(self._col),
                                                array_ops.shape(self._row))
        return joining_ops.concat([s, s[-1:]], 0)

    def _both(self):
        """col and row broadcast to one shape."""
        zero = multiply(add(self._col, self._row), util.constant(0, dtype=self.dtype))
        return add(self._col, zero), add(self._row, zero)

    def _to_dense(self):
        col, row = self._both()
        n = _last_dim(col)
        tail = strided_slice(row, [0, 1], [0, 0], [1, 1], begin_mask=1, end_mask=3,
                             ellipsis_mask=1)
        v = joining_ops.concat([joining_ops.reverse(tail, [-1]), col], -1)
        i = tf_range(n)
        idx = add(subtract(array_ops.expand_dims(i, 1), array_ops.expand_dims(i, 0)),
                  n - 1 if isinstance(n, int) else subtract(n, 1))
        return gather(v, idx, axis=-1, batch_dims=0)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        col, row = self._both()
        if adjoint:
            col, row = _conj(row), _conj(col)
        complex_dtype = dtypes.complex128 if self.dtype in (dtypes.float64, dtypes.complex128) \
            else dtypes.complex64
        n = _last_dim(col)
        # The circulant embedding: first column [col, 0, reverse(row[1:])] of length 2N.
        tail = strided_slice(row, [0, 1], [0, 0], [1, 1], begin_mask=1, end_mask=3,
                             ellipsis_mask=1)
        zero = multiply(col[..., :1], util.constant(0, dtype=self.dtype))
        c = joining_ops.concat([col, zero, joining_ops.reverse(tail, [-1])], -1)
        spectrum = array_ops.expand_dims(fft(cast(c, complex_dtype)), -2)
        xt = cast(_transpose(x), complex_dtype)
        padded = joining_ops.concat([xt, multiply(xt, util.constant(0, complex_dtype))], -1)
        y = ifft(multiply(spectrum, fft(padded)))
        y = y[..., :n] if isinstance(n, int) else strided_slice(
            y, [0, 0], joining_ops.stack([0, n]), [1, 1], begin_mask=1, end_mask=1,
            ellipsis_mask=1)
        y = _transpose(y)
        return real(y) if not self.dtype.is_complex else cast(y, self.dtype)

    def _diag_part(self):
        col, _ = self._both()
        first = array_ops.expand_dims(col[..., 0], -1)
        return multiply(first, array_ops.ones_like(col))


def _transpose(x):
    """The transpose (no conjugation) of the innermost two dimensions."""
    rank = x.shape.ndims
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return array_ops.transpose(x, perm)


def _vector_shape_from(s):
    return s.concatenate(s[-1:]) if s.ndims is not None else tensor_shape.unknown_shape()


class LinearOperatorTridiag(LinearOperator):
    """Tridiagonal matrices given by their diagonals in the formats of
    tf.linalg.tridiagonal_solve ('compact', 'sequence', 'matrix')
    (`tf.linalg.LinearOperatorTridiag`): products and solves by the tridiagonal ops."""

    def __init__(self, diagonals, diagonals_format="compact", is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=None,
                 name="LinearOperatorTridiag"):
        if diagonals_format not in ("compact", "matrix", "sequence"):
            raise ValueError(f"Diagonals Format must be one of compact, matrix, sequence"
                             f", got : {diagonals_format}")
        if is_square is False:
            raise ValueError("Only square tridiagonal operators currently supported.")
        self._diagonals = diagonals
        self._format = diagonals_format
        self._compact_diags = _compact(diagonals, diagonals_format)
        _check_dtype(self._compact_diags)
        super().__init__(self._compact_diags.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name,
                         dict(diagonals=diagonals, diagonals_format=diagonals_format,
                              name=name))

    @property
    def diagonals(self):
        return self._diagonals

    @property
    def diagonals_format(self):
        return self._format

    def _shape(self):
        s = self._compact_diags.shape
        if s.ndims is None:
            return s
        return s[:-2].concatenate([s[-1], s[-1]])

    def _shape_tensor(self):
        d = array_ops.shape(self._compact_diags)
        return joining_ops.concat([d[:-2], d[-1:], d[-1:]], 0)

    def _diags_with(self, x, adjoint):
        """The compact diagonals (of the adjoint with `adjoint`) and x, batch dimensions
        broadcast (the tridiagonal ops do not broadcast)."""
        diags = self._compact_diags
        if adjoint:
            seq = tuple(_row(diags, i) for i in range(3))
            diags = joining_ops.stack(list(_adjoint_sequence(*seq)), axis=-2)
        return util.broadcast_batch(diags, x)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        diags, x = self._diags_with(x, adjoint)
        return tridiagonal_matmul(diags, x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        diags, rhs = self._diags_with(rhs, adjoint)
        return tridiagonal_solve(diags, rhs)

    def _diag_part(self):
        return _row(self._compact_diags, 1)

    def _to_dense(self):
        return matrix_diag(self._compact_diags, k=(-1, 1), align="LEFT_RIGHT")
