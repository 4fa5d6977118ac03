"""Block operators: LinearOperatorBlockDiag (square blocks on the diagonal) and
LinearOperatorBlockLowerTriangular (square diagonal blocks, any blocks below). Arguments
are split into the blocks' row ranges, each block applied on its own, the results joined;
batch dimensions of the blocks broadcast."""

from __future__ import annotations

from tensorflux.linalg.linear_operator import util
from tensorflux.linalg.linear_operator.linear_operator import LinearOperator
from tensorflux.linalg.linear_operator.structural import (
    _batch_dynamic,
    _batch_static,
    _same_dtype,
)
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.math_ops import add, multiply, subtract

__all__ = ["LinearOperatorBlockDiag", "LinearOperatorBlockLowerTriangular"]


def _sizes(operators):
    """The blocks' sizes: ints where all are static, else int32 tensors."""
    static = [op.domain_dimension.value for op in operators]
    if all(s is not None for s in static):
        return static
    return joining_ops.stack([op.domain_dimension_tensor() for op in operators])


def _total(operators):
    sizes = [op.domain_dimension.value for op in operators]
    return None if any(s is None for s in sizes) else sum(sizes)


def _split_rows(x, operators):
    return joining_ops.split(x, _sizes(operators), axis=-2)


def _to_batch(parts, batch):
    """Each part broadcast to the batch shape `batch` (a tensor) when given."""
    if batch is None:
        return parts
    out = []
    for p in parts:
        inner = array_ops.shape(p)[-2:]
        out.append(joining_ops.broadcast_to(p, joining_ops.concat([batch, inner], 0)))
    return out


def _zeros(batch, rows, cols, dtype):
    shape = joining_ops.concat([batch, array_ops.reshape(rows, [1]),
                                array_ops.reshape(cols, [1])], 0)
    return array_ops.zeros(shape, dtype=dtype)


class _BlockBase(LinearOperator):
    """What both block operators share: shapes from the diagonal blocks, joining of
    per-block results across (possibly different) batch shapes."""

    def _diagonal(self):
        raise NotImplementedError

    def _all(self):
        raise NotImplementedError

    def _shape(self):
        batch = _batch_static(self._all())
        if batch.ndims is None:
            return batch
        n = _total(self._diagonal())
        return batch.concatenate([n, n])

    def _shape_tensor(self):
        n = None
        for op in self._diagonal():
            d = op.domain_dimension_tensor()
            n = d if n is None else add(n, d)
        return joining_ops.concat([_batch_dynamic(self._all()),
                                   array_ops.reshape(n, [1]), array_ops.reshape(n, [1])], 0)

    def _uniform_batch(self):
        shapes = [op.batch_shape for op in self._all()]
        if all(s.is_fully_defined() for s in shapes) and \
                len({tuple(s.as_list()) for s in shapes}) == 1:
            return True
        return False

    def _join(self, parts, x):
        """Row blocks (results for one x) concatenated along rows, batch broadcast."""
        if self._uniform_batch() and all(p.shape.ndims == parts[0].shape.ndims
                                         for p in parts):
            return joining_ops.concat(parts, -2)
        batch = joining_ops.broadcast_dynamic_shape(_batch_dynamic(self._all()),
                                                    array_ops.shape(x)[:-2])
        return joining_ops.concat(_to_batch(parts, batch), -2)

    def _dense_rows(self, blocks_by_row):
        """The dense matrix from rows of dense blocks, None entries being zero blocks."""
        batch = None if self._uniform_batch() else _batch_dynamic(self._all())
        diag = self._diagonal()
        rows = []
        for i, row in enumerate(blocks_by_row):
            parts = []
            for j, block in enumerate(row):
                if block is None:
                    b = batch if batch is not None else self.batch_shape_tensor()
                    parts.append(_zeros(b, diag[i].range_dimension_tensor(),
                                        diag[j].domain_dimension_tensor(), self.dtype))
                else:
                    parts.append(_to_batch([block], batch)[0])
            rows.append(joining_ops.concat(parts, -1))
        out = joining_ops.concat(rows, -2)
        out.set_shape(self.shape)
        return out


class LinearOperatorBlockDiag(_BlockBase):
    """The block-diagonal operator diag(A1, A2, ...) of square operators
    (`tf.linalg.LinearOperatorBlockDiag`)."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, name=None):
        operators = list(operators)
        if not operators:
            raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
        self._operators = operators
        dtype = _same_dtype(operators)
        for flag, what in (("is_non_singular", "non-singular"),
                           ("is_self_adjoint", "self-adjoint"),
                           ("is_positive_definite", "positive-definite")):
            if all(getattr(op, flag) for op in operators):
                given = {"is_non_singular": is_non_singular, "is_self_adjoint": is_self_adjoint,
                         "is_positive_definite": is_positive_definite}[flag]
                if given is False:
                    raise ValueError(f"The direct sum of {what} operators is always {what}.")
                if flag == "is_non_singular":
                    is_non_singular = True
                elif flag == "is_self_adjoint":
                    is_self_adjoint = True
                else:
                    is_positive_definite = True
        if not is_square:
            raise ValueError("The direct sum of square operators is always square.")
        for op in operators:
            if op.is_square is False:
                raise ValueError(f"Argument operators must be square. Found {op.name}")
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name or "_ds_".join(op.name for op in operators),
                         dict(operators=operators, name=name))

    @property
    def operators(self):
        return list(self._operators)

    def _diagonal(self):
        return self._operators

    def _all(self):
        return self._operators

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        parts = _split_rows(x, self._operators)
        outs = [op.matmul(p, adjoint=adjoint) for op, p in zip(self._operators, parts,
                                                                strict=True)]
        return self._join(outs, x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        parts = _split_rows(rhs, self._operators)
        outs = [op.solve(p, adjoint=adjoint) for op, p in zip(self._operators, parts,
                                                               strict=True)]
        return self._join(outs, rhs)

    def _reduce(self, method, combine):
        out = None
        for op in self._operators:
            v = getattr(op, method)()
            out = v if out is None else combine(out, v)
        return out

    def _determinant(self):
        return self._reduce("determinant", multiply)

    def _log_abs_determinant(self):
        return self._reduce("log_abs_determinant", add)

    def _trace(self):
        return self._reduce("trace", add)

    def _diag_part(self):
        parts = [array_ops.expand_dims(op.diag_part(), -1) for op in self._operators]
        return array_ops.squeeze(self._join(parts, parts[0]), [-1])

    def _eigvals(self):
        parts = [array_ops.expand_dims(op.eigvals(), -1) for op in self._operators]
        return array_ops.squeeze(self._join(parts, parts[0]), [-1])

    def _to_dense(self):
        ops = self._operators
        rows = [[op.to_dense() if i == j else None for j in range(len(ops))]
                for i, op in enumerate(ops)]
        return self._dense_rows(rows)

    def _linop_inverse(self):
        return LinearOperatorBlockDiag([op.inverse() for op in self._operators],
                                       is_non_singular=self.is_non_singular,
                                       is_self_adjoint=self.is_self_adjoint,
                                       is_positive_definite=self.is_positive_definite)

    def _linop_cholesky(self):
        return LinearOperatorBlockDiag([op.cholesky() for op in self._operators],
                                       is_non_singular=True)

    def adjoint(self, name="adjoint"):
        if self.is_self_adjoint:
            return self
        return LinearOperatorBlockDiag([op.adjoint() for op in self._operators],
                                       is_non_singular=self.is_non_singular,
                                       is_positive_definite=self.is_positive_definite)

    H = property(adjoint, None)


class LinearOperatorBlockLowerTriangular(_BlockBase):
    """The block lower-triangular operator with rows of blocks `operators`: row i holds
    A_i0, ..., A_ii, the A_ii square (`tf.linalg.LinearOperatorBlockLowerTriangular`).
    Solves go by block forward (or, for the adjoint, backward) substitution."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None,
                 name="LinearOperatorBlockLowerTriangular"):
        rows = [list(row) for row in operators]
        if not rows:
            raise ValueError(f"Argument `operators` must be a list of >=1 operators. "
                             f"Received: {operators}.")
        for i, row in enumerate(rows):
            if len(row) != i + 1:
                raise ValueError(f"Argument `operators[{i}]` must contain `{i + 1}` blocks. "
                                 f"Received: {len(row)} blocks.")
        self._rows = rows
        flat = [op for row in rows for op in row]
        dtype = _same_dtype(flat)
        diag = [row[-1] for row in rows]
        for op in diag:
            if op.is_square is False:
                raise ValueError("The diagonal blocks must be square.")
        if all(op.is_non_singular for op in diag):
            if is_non_singular is False:
                raise ValueError("A blockwise lower-triangular operator with non-singular "
                                 "operators on the main diagonal is always non-singular.")
            is_non_singular = True
        if is_square is False:
            raise ValueError("A blockwise lower-triangular operator is always square.")
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name, dict(operators=operators, name=name))

    @property
    def operators(self):
        return [list(row) for row in self._rows]

    def _diagonal(self):
        return [row[-1] for row in self._rows]

    def _all(self):
        return [op for row in self._rows for op in row]

    def _block(self, i, j):
        return self._rows[i][j] if j <= i else None

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        parts = _split_rows(x, self._diagonal())
        k = len(self._rows)
        outs = []
        for i in range(k):
            # y_i = sum_j A_ij x_j, or for A^H: y_i = sum_{j >= i} A_ji^H x_j.
            terms = range(i + 1) if not adjoint else range(i, k)
            acc = None
            for j in terms:
                op = self._block(i, j) if not adjoint else self._block(j, i)
                t = op.matmul(parts[j], adjoint=adjoint)
                acc = t if acc is None else add(acc, t)
            outs.append(acc)
        return self._join(outs, x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        parts = _split_rows(rhs, self._diagonal())
        k = len(self._rows)
        sol = [None] * k
        order = range(k) if not adjoint else range(k - 1, -1, -1)
        for i in order:
            acc = parts[i]
            known = range(i) if not adjoint else range(i + 1, k)
            for j in known:
                op = self._block(i, j) if not adjoint else self._block(j, i)
                acc = subtract(acc, op.matmul(sol[j], adjoint=adjoint))
            sol[i] = self._rows[i][i].solve(acc, adjoint=adjoint)
        return self._join(sol, rhs)

    def _determinant(self):
        out = None
        for op in self._diagonal():
            d = op.determinant()
            out = d if out is None else multiply(out, d)
        return out

    def _log_abs_determinant(self):
        out = None
        for op in self._diagonal():
            d = op.log_abs_determinant()
            out = d if out is None else add(out, d)
        return out

    def _trace(self):
        out = None
        for op in self._diagonal():
            d = op.trace()
            out = d if out is None else add(out, d)
        return out

    def _diag_part(self):
        parts = [array_ops.expand_dims(op.diag_part(), -1) for op in self._diagonal()]
        return array_ops.squeeze(self._join(parts, parts[0]), [-1])

    def _to_dense(self):
        k = len(self._rows)
        rows = [[self._rows[i][j].to_dense() if j <= i else None for j in range(k)]
                for i in range(k)]
        return self._dense_rows(rows)

