"""`tf.linalg.LinearOperatorLowRankUpdate`: A = L + U D V^H for a base operator L, [..., M, K]
U and V, and a diagonal D ([..., K], identity by default). Products cost O(M K); solves and
determinants go through the K x K capacitance matrix C = D^-1 + V^H L^-1 U (the Woodbury
identity and the matrix determinant lemma)."""

from __future__ import annotations

from tensorflux.linalg.linear_operator import util
from tensorflux.linalg.linear_operator.basic import LinearOperatorDiag, _check_dtype
from tensorflux.linalg.linear_operator.linear_operator import LinearOperator
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.linalg_factor_ops import log_matrix_determinant, matrix_solve
from tensorflux.ops.linalg_ops import matrix_diag
from tensorflux.ops.math_ops import _conj, add, multiply, real, subtract
from tensorflux.ops.matrix_ops import matrix_determinant
from tensorflux.ops.unary_ops import reciprocal

__all__ = ["LinearOperatorLowRankUpdate"]


class LinearOperatorLowRankUpdate(LinearOperator):
    """L + U D V^H (`tf.linalg.LinearOperatorLowRankUpdate`).

    Args:
      base_operator: L, a square operator.
      u: [..., M, K]. v: [..., M, K], u when None. diag_update: [..., K], ones when None.
      is_diag_update_positive: a hint that diag_update > 0.

    Raises:
      ValueError: inconsistent hints.
    """

    def __init__(self, base_operator, u, diag_update=None, v=None,
                 is_diag_update_positive=None, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None,
                 name="LinearOperatorLowRankUpdate"):
        dtype = base_operator.dtype
        self._base = base_operator
        self._u = util.to_tensor(u, dtype=dtype, name="u")
        _check_dtype(self._u)
        self._v = self._u if v is None else util.to_tensor(v, dtype=dtype, name="v")
        self._use_v = v is not None
        self._diag_update = None if diag_update is None else util.to_tensor(
            diag_update, dtype=dtype, name="diag_update")
        self._is_diag_update_positive = is_diag_update_positive
        symmetric = v is None and base_operator.is_self_adjoint
        if symmetric and (diag_update is None or not dtype.is_complex):
            if is_self_adjoint is False:
                raise ValueError("A = L + UDU^H, with L self-adjoint and D real diagonal. "
                                 "Since UDU^H is self-adjoint, this must be a self-adjoint "
                                 "operator.")
            is_self_adjoint = True
        positive_update = diag_update is None or is_diag_update_positive
        if symmetric and base_operator.is_positive_definite and positive_update:
            if is_positive_definite is False:
                raise ValueError("A = L + UDU^H, with L positive definite and D positive, "
                                 "must be positive definite.")
            is_positive_definite = True
        if base_operator.is_square is False:
            raise ValueError("The base operator must be square.")
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         True if is_square is None else is_square, name,
                         dict(base_operator=base_operator, u=u, diag_update=diag_update, v=v,
                              is_diag_update_positive=is_diag_update_positive, name=name))

    @property
    def base_operator(self):
        return self._base

    @property
    def u(self):
        return self._u

    @property
    def v(self):
        return self._v

    @property
    def diag_update(self):
        return self._diag_update

    @property
    def is_diag_update_positive(self):
        return self._is_diag_update_positive

    @property
    def diag_operator(self):
        """D as a LinearOperatorDiag (ones when no diag_update was given)."""
        if self._diag_update is not None:
            return LinearOperatorDiag(self._diag_update,
                                      is_positive_definite=self._is_diag_update_positive)
        k = array_ops.shape(self._u)[-1:]
        return LinearOperatorDiag(array_ops.ones(k, dtype=self.dtype))

    def _shape(self):
        batch = joining_ops.broadcast_static_shape(self._base.batch_shape,
                                                   self._u.shape[:-2])
        return batch.concatenate(self._base.shape[-2:])

    def _shape_tensor(self):
        batch = joining_ops.broadcast_dynamic_shape(self._base.batch_shape_tensor(),
                                                    array_ops.shape(self._u)[:-2])
        return joining_ops.concat([batch, self._base.shape_tensor()[-2:]], 0)

    def _d(self, x):
        """D x for [..., K, R] x."""
        if self._diag_update is None:
            return x
        return multiply(array_ops.expand_dims(self._diag_update, -1), x)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        left, right = (self._v, self._u) if adjoint else (self._u, self._v)
        base = self._base.matmul(x, adjoint=adjoint)
        inner = util.matmul_adj(right, x, adjoint_a=True)
        if self._diag_update is not None:
            d = _conj(self._diag_update) if adjoint else self._diag_update
            inner = multiply(array_ops.expand_dims(d, -1), inner)
        return add(base, util.matmul_adj(left, inner))

    def _capacitance(self, adjoint=False):
        """C = D^-1 + V^H L^-1 U (U and V swapped, L and D adjoint, with `adjoint`)."""
        left, right = (self._v, self._u) if adjoint else (self._u, self._v)
        l_inv_u = self._base.solve(left, adjoint=adjoint)
        c = util.matmul_adj(right, l_inv_u, adjoint_a=True)
        if self._diag_update is None:
            d_inv = array_ops.ones_like(c[..., 0, :])
        else:
            d = self._diag_update
            d_inv = reciprocal(_conj(d) if adjoint else d)
        return add(c, matrix_diag(d_inv)), l_inv_u, right

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        l_inv_rhs = self._base.solve(rhs, adjoint=adjoint)
        c, l_inv_u, right = self._capacitance(adjoint)
        vh = util.matmul_adj(right, l_inv_rhs, adjoint_a=True)
        c, vh = util.broadcast_batch(c, vh)
        return subtract(l_inv_rhs, util.matmul_adj(l_inv_u, matrix_solve(c, vh)))

    def _det_d(self, log):
        if self._diag_update is None:
            return None
        return LinearOperatorDiag(self._diag_update).log_abs_determinant() if log else \
            LinearOperatorDiag(self._diag_update).determinant()

    def _determinant(self):
        c, _, _ = self._capacitance()
        out = multiply(self._base.determinant(), matrix_determinant(c))
        d = self._det_d(False)
        return out if d is None else multiply(out, d)

    def _log_abs_determinant(self):
        c, _, _ = self._capacitance()
        _, logdet_c = log_matrix_determinant(c)
        logdet_c = real(logdet_c) if logdet_c.dtype.is_complex else logdet_c
        out = add(self._base.log_abs_determinant(), logdet_c)
        d = self._det_d(True)
        return out if d is None else add(out, d)

    def _to_dense(self):
        return add(self._base.to_dense(),
                   util.matmul_adj(self._u, self._d(util.adjoint(self._v))))
