"""Operators made from other operators: LinearOperatorAdjoint, LinearOperatorInversion,
LinearOperatorComposition, and LinearOperatorKronecker. Each
applies its parts one after another and never forms a dense matrix unless asked to."""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.linalg.linear_operator import util
from tensorflux.linalg.linear_operator.linear_operator import LinearOperator
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.math_ops import _conj, add, cast, multiply, pow, real, truediv
from tensorflux.ops.unary_ops import negative, reciprocal

__all__ = ["LinearOperatorAdjoint", "LinearOperatorInversion", "LinearOperatorComposition",
           "LinearOperatorKronecker"]


def _same_dtype(operators):
    dtype = operators[0].dtype
    for op in operators[1:]:
        if op.dtype != dtype:
            names = [(o.name, o.dtype.name) for o in operators]
            raise TypeError(f"Expected all operators to have the same dtype.  Found {names}")
    return dtype


def _combined(hint, given, what):
    """A hint the wrapped operator implies, merged with one given by the caller."""
    if hint is not None and given is not None and hint != given:
        raise ValueError(f"An operator is {what} if and only if its wrapped operator is "
                         f"{what}.")
    return hint if hint is not None else given


def _wrapped_hints(operator, is_non_singular, is_self_adjoint, is_positive_definite,
                   is_square):
    """The four hints of an operator wrapping `operator` (its adjoint, its inverse): the
    wrapped operator's, merged with the caller's."""
    return (_combined(operator.is_non_singular, is_non_singular, "non-singular"),
            _combined(operator.is_self_adjoint, is_self_adjoint, "self-adjoint"),
            _combined(operator.is_positive_definite, is_positive_definite,
                      "positive-definite"),
            _combined(operator.is_square, is_square, "square"))


def _batch_static(operators):
    batch = tensor_shape.TensorShape([])
    for op in operators:
        batch = joining_ops.broadcast_static_shape(batch, op.batch_shape) \
            if op.batch_shape.ndims is not None else tensor_shape.unknown_shape()
        if batch.ndims is None:
            return batch
    return batch


def _batch_dynamic(operators):
    batch = operators[0].batch_shape_tensor()
    for op in operators[1:]:
        batch = joining_ops.broadcast_dynamic_shape(batch, op.batch_shape_tensor())
    return batch


def _adjoint_pair(x, y) -> bool:
    """Whether y is known to be x^H: the same self-adjoint operator, or one the adjoint
    of the other (by identity, never by values)."""
    if x is y and x.is_self_adjoint is not None:
        return bool(x.is_self_adjoint)
    return x.H is y or y.H is x


def _is_aat_form(operators) -> bool:
    """Whether the product is A1 ... Ak Ak^H ... A1^H (so self-adjoint, square)."""
    k, odd = divmod(len(operators), 2)
    return not odd and all(_adjoint_pair(operators[i], operators[-1 - i]) for i in range(k))


class LinearOperatorAdjoint(LinearOperator):
    """A^H of another operator A, without forming it (`tf.linalg.LinearOperatorAdjoint`)."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        self._operator = operator
        super().__init__(
            operator.dtype, None,
            *_wrapped_hints(operator, is_non_singular, is_self_adjoint,
                            is_positive_definite, is_square),
            name or operator.name + "_adjoint", dict(operator=operator, name=name))

    @property
    def operator(self):
        return self._operator

    def _shape(self):
        s = self._operator.shape
        return s if s.ndims is None else s[:-2].concatenate([s[-1], s[-2]])

    def _shape_tensor(self):
        s = self._operator.shape_tensor()
        return joining_ops.concat([s[:-2], s[-1:], s[-2:-1]], 0)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _matvec(self, x, adjoint=False):
        return self._operator.matvec(x, adjoint=not adjoint)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._operator.solve(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solvevec(self, rhs, adjoint=False):
        return self._operator.solvevec(rhs, adjoint=not adjoint)

    def _determinant(self):
        return _conj(self._operator.determinant())

    def _log_abs_determinant(self):
        return self._operator.log_abs_determinant()

    def _trace(self):
        return _conj(self._operator.trace())

    def _diag_part(self):
        return _conj(self._operator.diag_part())

    def _eigvals(self):
        return _conj(self._operator.eigvals())

    def _cond(self):
        return self._operator.cond()

    def _to_dense(self):
        return util.adjoint(self._operator.to_dense())

    def adjoint(self, name="adjoint"):
        return self._operator

    H = property(adjoint, None)


class LinearOperatorInversion(LinearOperator):
    """A^-1 of another (square, non-singular) operator: its products are the operator's
    solves and back (`tf.linalg.LinearOperatorInversion`)."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        self._operator = operator
        if operator.is_non_singular is False or is_non_singular is False:
            raise ValueError("operator and supplied hints must be non-singular")
        if operator.is_square is False or is_square is False:
            raise ValueError("operator and supplied hints must be square")
        super().__init__(
            operator.dtype, None,
            *_wrapped_hints(operator, is_non_singular, is_self_adjoint,
                            is_positive_definite, is_square),
            name or operator.name + "_inv", dict(operator=operator, name=name))

    @property
    def operator(self):
        return self._operator

    def _shape(self):
        return self._operator.shape

    def _shape_tensor(self):
        return self._operator.shape_tensor()

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _matvec(self, x, adjoint=False):
        return self._operator.solvevec(x, adjoint=adjoint)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._operator.matmul(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solvevec(self, rhs, adjoint=False):
        return self._operator.matvec(rhs, adjoint=adjoint)

    def _determinant(self):
        return reciprocal(self._operator.determinant())

    def _log_abs_determinant(self):
        return negative(self._operator.log_abs_determinant())

    def _cond(self):
        return self._operator.cond()

    def _eigvals(self):
        return reciprocal(self._operator.eigvals())

    def _linop_inverse(self):
        return self._operator


class LinearOperatorComposition(LinearOperator):
    """The product A1 @ A2 @ ... @ An of operators, applied right to left
    (`tf.linalg.LinearOperatorComposition`)."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        operators = list(operators)
        if not operators:
            raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
        self._operators = operators
        dtype = _same_dtype(operators)
        if all(op.is_non_singular for op in operators):
            if is_non_singular is False:
                raise ValueError("The composition of non-singular operators is always "
                                 "non-singular.")
            is_non_singular = True
        aat = _is_aat_form(operators)
        if aat or (len(operators) == 1 and operators[0].is_self_adjoint):
            if is_self_adjoint is False:
                raise ValueError("The composition was determined to be self-adjoint but "
                                 "user provided incorrect `False` hint.")
            is_self_adjoint = True
        if aat:
            if is_square is False:
                raise ValueError("The composition was determined have the form A @ A.H, "
                                 "hence it must be square.")
            is_square = True
            if is_non_singular:
                if is_positive_definite is False:
                    raise ValueError("The composition was determined to be non-singular "
                                     "and have the form A @ A.H, hence it must be "
                                     "positive-definite.")
                is_positive_definite = True
        for left, right in zip(operators[:-1], operators[1:], strict=True):
            n, m = left.domain_dimension.value, right.range_dimension.value
            if n is not None and m is not None and n != m:
                raise ValueError(f"Operators are incompatible: {left.name} has domain "
                                 f"dimension {n}, {right.name} range dimension {m}.")
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         is_square, name or "_o_".join(op.name for op in operators),
                         dict(operators=operators, name=name))

    @property
    def operators(self):
        return list(self._operators)

    def _shape(self):
        batch = _batch_static(self._operators)
        if batch.ndims is None:
            return batch
        return batch.concatenate([self._operators[0].range_dimension,
                                  self._operators[-1].domain_dimension])

    def _shape_tensor(self):
        return joining_ops.concat([
            _batch_dynamic(self._operators),
            array_ops.reshape(self._operators[0].range_dimension_tensor(), [1]),
            array_ops.reshape(self._operators[-1].domain_dimension_tensor(), [1])], 0)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        order = self._operators if adjoint else self._operators[::-1]
        out = order[0].matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in order[1:]:
            out = op.matmul(out, adjoint=adjoint)
        return out

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        order = self._operators[::-1] if adjoint else self._operators
        out = order[0].solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in order[1:]:
            out = op.solve(out, adjoint=adjoint)
        return out

    def _determinant(self):
        out = self._operators[0].determinant()
        for op in self._operators[1:]:
            out = multiply(out, op.determinant())
        return out

    def _log_abs_determinant(self):
        out = self._operators[0].log_abs_determinant()
        for op in self._operators[1:]:
            out = add(out, op.log_abs_determinant())
        return out


def _outer_flat(a, b):
    """[..., n] x [..., m] -> [..., n * m] with entry i * m + j = a_i * b_j."""
    prod = multiply(array_ops.expand_dims(a, -1), array_ops.expand_dims(b, -2))
    shape = joining_ops.concat([array_ops.shape(prod)[:-2], [-1]], 0)
    return array_ops.reshape(prod, shape)


def _kron_dense(a, b):
    """The Kronecker product of [..., m, n] and [..., p, q] matrices: [..., m p, n q]."""
    prod = multiply(array_ops.expand_dims(array_ops.expand_dims(a, -1), -3),
                    array_ops.expand_dims(array_ops.expand_dims(b, -2), -4))
    # prod[..., i, k, j, l] = a[..., i, j] b[..., k, l]
    s = array_ops.shape(prod)
    return array_ops.reshape(prod, joining_ops.concat(
        [s[:-4], array_ops.reshape(multiply(s[-4], s[-3]), [1]),
         array_ops.reshape(multiply(s[-2], s[-1]), [1])], 0))


def _dims(op, adjoint):
    """(rows, cols) of op (of op^H with `adjoint`) as int32 scalars."""
    m, n = op.range_dimension_tensor(), op.domain_dimension_tensor()
    return (n, m) if adjoint else (m, n)


def _transpose_mid(x):
    """[..., a, b, r] -> [..., b, a, r]."""
    rank = x.shape.ndims
    perm = list(range(rank - 3)) + [rank - 2, rank - 3, rank - 1]
    return array_ops.transpose(x, perm)


class LinearOperatorKronecker(LinearOperator):
    """The Kronecker product A1 ⊗ A2 ⊗ ... of operators (`tf.linalg.LinearOperatorKronecker`).
    Products and solves apply the factors one at a time to reshaped arguments, never the
    [M, N] matrix."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        operators = list(operators)
        if not operators:
            raise ValueError(f"Expected a list of >=1 operators. Found: {operators}")
        self._operators = operators
        dtype = _same_dtype(operators)
        if all(op.is_non_singular for op in operators):
            if is_non_singular is False:
                raise ValueError("The Kronecker product of non-singular operators is "
                                 "always non-singular.")
            is_non_singular = True
        if all(op.is_self_adjoint for op in operators):
            if is_self_adjoint is False:
                raise ValueError("The Kronecker product of self-adjoint operators is "
                                 "always self-adjoint.")
            is_self_adjoint = True
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         is_square, name or "_x_".join(op.name for op in operators),
                         dict(operators=operators, name=name))

    @property
    def operators(self):
        return list(self._operators)

    def _shape(self):
        batch = _batch_static(self._operators)
        if batch.ndims is None:
            return batch
        m = n = 1
        for op in self._operators:
            rm, dn = op.range_dimension.value, op.domain_dimension.value
            m = None if m is None or rm is None else m * rm
            n = None if n is None or dn is None else n * dn
        return batch.concatenate([m, n])

    def _shape_tensor(self):
        m, n = self._operators[0].range_dimension_tensor(), \
            self._operators[0].domain_dimension_tensor()
        for op in self._operators[1:]:
            m = multiply(m, op.range_dimension_tensor())
            n = multiply(n, op.domain_dimension_tensor())
        return joining_ops.concat([_batch_dynamic(self._operators),
                                   joining_ops.stack([m, n])], 0)

    def _apply(self, operators, x, adjoint, solve):
        """(A ⊗ rest) x by applying rest to the inner index, then A to the outer one."""
        first = operators[0]

        def act(op, t):
            return op.solve(t, adjoint=adjoint) if solve else op.matmul(t, adjoint=adjoint)

        if len(operators) == 1:
            return act(first, x)
        # The size of the index `first` acts on: its columns for products, rows for solves.
        a_out, a_in = _dims(first, adjoint)
        if solve:
            a_in = a_out
        s = array_ops.shape(x)
        batch, r = s[:-2], s[-1:]
        # x[..., j1 * n_rest + j2, r] -> [..., n_rest, a_in * r] with j2 leading.
        t = array_ops.reshape(x, joining_ops.concat([batch, array_ops.reshape(a_in, [1]),
                                                     [-1], r], 0))
        t = _transpose_mid(t)
        t = array_ops.reshape(t, joining_ops.concat([batch, [-1],
                                                     array_ops.reshape(a_in * r, [1])], 0))
        t = self._apply(operators[1:], t, adjoint, solve)
        s = array_ops.shape(t)
        batch = s[:-2]
        t = array_ops.reshape(t, joining_ops.concat([batch, s[-2:-1],
                                                     array_ops.reshape(a_in, [1]), r], 0))
        t = _transpose_mid(t)
        t = array_ops.reshape(t, joining_ops.concat([batch, array_ops.reshape(a_in, [1]),
                                                     [-1]], 0))
        t = act(first, t)
        s = array_ops.shape(t)
        out = array_ops.reshape(t, joining_ops.concat([s[:-2], [-1], r], 0))
        return out

    def _static(self, out, x, adjoint):
        m, n = self.range_dimension.value, self.domain_dimension.value
        rows = n if adjoint else m
        cols = x.shape[-1].value if x.shape.ndims is not None else None
        if x.shape.ndims is not None and self.batch_shape.ndims is not None:
            try:
                batch = joining_ops.broadcast_static_shape(self.batch_shape, x.shape[:-2])
                out.set_shape(batch.concatenate([rows, cols]))
            except ValueError:
                pass
        return out

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        return self._static(self._apply(self._operators, x, adjoint, False), x, adjoint)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        return self._static(self._apply(self._operators, rhs, adjoint, True), rhs, adjoint)

    def _to_dense(self):
        out = self._operators[0].to_dense()
        for op in self._operators[1:]:
            out = _kron_dense(out, op.to_dense())
        out.set_shape(self.shape)
        return out

    def _square_factors(self):
        return all(op.is_square for op in self._operators)

    def _diag_part(self):
        if not self._square_factors():  # the diagonal mixes off-diagonal factor entries
            return super()._diag_part()
        out = self._operators[0].diag_part()
        for op in self._operators[1:]:
            out = _outer_flat(out, op.diag_part())
        return out

    def _trace(self):
        if not self._square_factors():
            return super()._trace()
        out = self._operators[0].trace()
        for op in self._operators[1:]:
            out = multiply(out, op.trace())
        return out

    def _eigvals(self):
        out = self._operators[0].eigvals()
        for op in self._operators[1:]:
            out = _outer_flat(out, op.eigvals())
        return out

    def _sizes(self):
        return [cast(op.domain_dimension_tensor(), self.dtype) for op in self._operators]

    def _exponents(self):
        """For each factor, the product of the other factors' sizes: det(A ⊗ B) =
        det(A)^dim(B) det(B)^dim(A)."""
        sizes = self._sizes()
        total = sizes[0]
        for n in sizes[1:]:
            total = multiply(total, n)
        return [truediv(total, n) for n in sizes]

    def _log_abs_determinant(self):
        out = None
        for op, e in zip(self._operators, self._exponents(), strict=True):
            e = real(e) if e.dtype.is_complex else e
            term = multiply(op.log_abs_determinant(), e)
            out = term if out is None else add(out, term)
        return out

    def _determinant(self):
        out = None
        for op, e in zip(self._operators, self._exponents(), strict=True):
            term = pow(op.determinant(), e)
            out = term if out is None else multiply(out, term)
        return out
