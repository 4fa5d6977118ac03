"""Tridiagonal linear algebra: TridiagonalSolve and TridiagonalMatMul, with their gradients
and the TF1 wrappers `tf.linalg.tridiagonal_solve` / `tf.linalg.tridiagonal_matmul` (the
'compact', 'sequence' and 'matrix' diagonal formats). Kernels are in
tensorflux/kernels/cpu/tridiagonal_ops.py.

Formats: 'compact' is one [..., 3, M] tensor holding the superdiagonal (its last entry
unused), the main diagonal and the subdiagonal (its first entry unused); 'sequence' is those
three as [..., M] tensors; 'matrix' is the dense [..., M, M] matrix, of which only the three
diagonals are read.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.linalg_ops import matrix_diag_part
from tensorflux.ops.math_ops import _conj, multiply
from tensorflux.ops.slicing_ops import strided_slice
from tensorflux.ops.unary_ops import negative

__all__ = ["tridiagonal_solve", "tridiagonal_matmul"]

_TYPES = "T: {double, float, complex64, complex128}"


def _batch_and(dims_list, tail):
    """The merged batch dims of several dims lists (None: unknown rank) plus `tail`."""
    batch = None
    for dims in dims_list:
        if dims is not None:
            batch = common_shapes.merge_shapes(batch, dims)
    if batch is None:
        return tensor_shape.unknown_shape()
    return tensor_shape.TensorShape(batch + tail)


# ---- TridiagonalSolve --------------------------------------------------------------------


def _solve_shape(op):
    diags = checked_dims(op.inputs[0], at_least=2)
    rhs = checked_dims(op.inputs[1], at_least=2)
    m = k = None
    if diags is not None:
        if diags[-2] is not None and diags[-2] != 3:
            raise ValueError(f"Dimension must be 3 but is {diags[-2]}")
        m = diags[-1]
    if rhs is not None:
        m = merge_dim(m, rhs[-2])
        k = rhs[-1]
    if diags is not None and rhs is not None and len(diags) != len(rhs):
        raise ValueError(f"Shapes must be equal rank, but are {len(diags)} and {len(rhs)}")
    return [_batch_and([None if d is None else d[:-2] for d in (diags, rhs)], [m, k])]


define_op("TridiagonalSolve", inputs=["diagonals: T", "rhs: T"], outputs=["output: T"],
          attrs=["partial_pivoting: bool = true", "perturb_singular: bool = false", _TYPES],
          shape_fn=_solve_shape)


def _row(x, i):
    """x[..., i, :] of a [..., 3, M] compact tensor, as a [..., M] tensor."""
    return strided_slice(x, [0, i, 0], [0, i + 1, 0], [1, 1, 1], begin_mask=5, end_mask=5,
                         ellipsis_mask=1, shrink_axis_mask=2)


def _shift(x, offset):
    """x[..., i + offset] along the last axis, zero where that falls outside (offset ±1)."""
    if offset > 0:
        body = strided_slice(x, [0, 1], [0, 0], [1, 1], begin_mask=1, end_mask=3,
                             ellipsis_mask=1)
        pad = [[0, 1]]
    else:
        body = strided_slice(x, [0, 0], [0, -1], [1, 1], begin_mask=3, end_mask=1,
                             ellipsis_mask=1)
        pad = [[1, 0]]
    rank = x.shape.ndims
    if rank is not None:
        return joining_ops.pad(body, [[0, 0]] * (rank - 1) + pad)
    zeros = array_ops.zeros_like(strided_slice(x, [0, 0], [0, 1], [1, 1], begin_mask=1,
                                               ellipsis_mask=1))
    return joining_ops.concat([body, zeros] if offset > 0 else [zeros, body], -1)


def _adjoint_sequence(superdiag, maindiag, subdiag):
    """The (super, main, sub) [..., M] diagonals of the adjoint of a tridiagonal matrix."""
    return (_conj(_shift(subdiag, 1)), _conj(maindiag), _conj(_shift(superdiag, -1)))


def _diag_products(grad, x):
    """sum_k grad[..., i, k] * conj(x[..., j, k]) for j = i + 1, i, i - 1: three [..., M]."""
    xc = _conj(x)

    def rowsum(a):
        return reduction_ops.reduce_sum(a, -1)

    main = rowsum(multiply(grad, xc))
    sup = rowsum(multiply(grad, _shift_rows(xc, 1)))
    sub = rowsum(multiply(grad, _shift_rows(xc, -1)))
    return sup, main, sub


def _shift_rows(x, offset):
    """x[..., i + offset, :] along the second-to-last axis, zero outside (offset ±1); any
    rank, known or not."""
    zeros = array_ops.zeros_like(strided_slice(x, [0, 0, 0], [0, 1, 0], [1, 1, 1],
                                               begin_mask=5, end_mask=5, ellipsis_mask=1))
    if offset > 0:
        body = strided_slice(x, [0, 1, 0], [0, 0, 0], [1, 1, 1], begin_mask=5, end_mask=7,
                             ellipsis_mask=1)
        return joining_ops.concat([body, zeros], -2)
    body = strided_slice(x, [0, 0, 0], [0, -1, 0], [1, 1, 1], begin_mask=7, end_mask=5,
                         ellipsis_mask=1)
    return joining_ops.concat([zeros, body], -2)


@gradient("TridiagonalSolve")
def _tridiagonal_solve_grad(op, grad):
    diags, x = op.inputs[0], op.outputs[0]
    pivoting = op.attrs["partial_pivoting"]
    sup, main, sub = (_row(diags, i) for i in range(3))
    adj = joining_ops.stack(list(_adjoint_sequence(sup, main, sub)), axis=-2)
    grad_rhs = apply_op("TridiagonalSolve", diagonals=adj, rhs=grad,
                        partial_pivoting=pivoting, name="TridiagonalSolveGrad")
    g_sup, g_main, g_sub = _diag_products(grad_rhs, x)
    grad_diags = negative(joining_ops.stack([g_sup, g_main, g_sub], axis=-2))
    return [grad_diags, grad_rhs]


# ---- TridiagonalMatMul -------------------------------------------------------------------


def _matmul_shape(op):
    dims = [checked_dims(t, at_least=2) for t in op.inputs]
    m = None
    for d in dims[:3]:
        if d is not None:
            if d[-2] is not None and d[-2] != 1:
                raise ValueError(f"Dimension must be 1 but is {d[-2]}")
            m = merge_dim(m, d[-1])
    rhs = dims[3]
    n = None
    if rhs is not None:
        m = merge_dim(m, rhs[-2])
        n = rhs[-1]
    return [_batch_and([None if d is None else d[:-2] for d in dims], [m, n])]


define_op("TridiagonalMatMul",
          inputs=["superdiag: T", "maindiag: T", "subdiag: T", "rhs: T"],
          outputs=["output: T"], attrs=[_TYPES], shape_fn=_matmul_shape)


@gradient("TridiagonalMatMul")
def _tridiagonal_matmul_grad(op, grad):
    sup, main, sub, rhs = op.inputs
    seq = [array_ops.squeeze(t, [-2]) for t in (sup, main, sub)]
    adj = [array_ops.expand_dims(t, -2) for t in _adjoint_sequence(*seq)]
    grad_rhs = apply_op("TridiagonalMatMul", superdiag=adj[0], maindiag=adj[1],
                        subdiag=adj[2], rhs=grad, name="TridiagonalMatMulGrad")
    g_sup, g_main, g_sub = _diag_products(grad, rhs)
    return [array_ops.expand_dims(g, -2) for g in (g_sup, g_main, g_sub)] + [grad_rhs]


# ---- the TF1 wrappers --------------------------------------------------------------------


def _compact(diagonals, diagonals_format):
    """The [..., 3, M] compact form of `diagonals` given in `diagonals_format`."""
    if diagonals_format == "compact":
        return convert_to_tensor(diagonals, name="diagonals")
    if diagonals_format == "sequence":
        if not isinstance(diagonals, (list, tuple)) or len(diagonals) != 3:
            raise ValueError("Expected diagonals to be a sequence of length 3.")
        sup, main, sub = (convert_to_tensor(d) for d in diagonals)
        return joining_ops.stack([sup, main, sub], axis=-2)
    if diagonals_format == "matrix":
        m = convert_to_tensor(diagonals, name="diagonals")
        return matrix_diag_part(m, k=(-1, 1), padding_value=0, align="LEFT_RIGHT")
    raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")


def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False,
                      conjugate_rhs=False, name=None, partial_pivoting=True,
                      perturb_singular=False):
    """Solves A x = rhs for tridiagonal matrices A (`tf.linalg.tridiagonal_solve`).

    Args:
      diagonals: A's diagonals in `diagonals_format` ('compact', 'sequence' or 'matrix').
      rhs: [..., M, K] right-hand sides, or [..., M] vectors; with `transpose_rhs` the
        [..., K, M] transpose (conjugated too with `conjugate_rhs`).
      partial_pivoting: Gaussian elimination with row swaps (stable); without it a zero
        pivot gives inf/NaN.
      perturb_singular: replace zero pivots by a tiny value instead of giving NaN (needs
        partial_pivoting).

    Returns:
      x with the shape of (the untransposed) rhs. A singular A gives NaN at run time.

    Raises:
      ValueError: an unknown format, or perturb_singular without partial_pivoting.
    """
    if perturb_singular and not partial_pivoting:
        raise ValueError("partial_pivoting must be True if perturb_singular is.")
    with graph_lib.name_scope(name, "tridiagonal_solve", [rhs]):
        diags = _compact(diagonals, diagonals_format)
        rhs = convert_to_tensor(rhs, dtype=diags.dtype, name="rhs")
        vector = (diags.shape.ndims is not None and rhs.shape.ndims is not None and
                  rhs.shape.ndims == diags.shape.ndims - 1)
        if vector:
            rhs = array_ops.expand_dims(rhs, -1)
            if conjugate_rhs:
                rhs = _conj(rhs)
        else:
            if transpose_rhs:
                rank = rhs.shape.ndims
                perm = list(range(rank - 2)) + [rank - 1, rank - 2]
                rhs = array_ops.transpose(rhs, perm, conjugate=conjugate_rhs)
            elif conjugate_rhs:
                rhs = _conj(rhs)
        out = apply_op("TridiagonalSolve", diagonals=diags, rhs=rhs,
                       partial_pivoting=partial_pivoting, perturb_singular=perturb_singular,
                       name="TridiagonalSolve")
        return array_ops.squeeze(out, [-1]) if vector else out


def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None):
    """A @ rhs for tridiagonal matrices A given by their diagonals
    (`tf.linalg.tridiagonal_matmul`); rhs is [..., M, N]."""
    with graph_lib.name_scope(name, "tridiagonal_matmul", [rhs]):
        diags = _compact(diagonals, diagonals_format)
        rhs = convert_to_tensor(rhs, dtype=diags.dtype, name="rhs")
        sup, main, sub = (array_ops.expand_dims(_row(diags, i), -2) for i in range(3))
        return apply_op("TridiagonalMatMul", superdiag=sup, maindiag=main, subdiag=sub,
                        rhs=rhs, name="TridiagonalMatMul")
