"""Dense linear algebra that factors matrices: MatrixSolve, MatrixSolveLs,
MatrixTriangularSolve, Qr, Svd, SelfAdjointEigV2, Lu, LogMatrixDeterminant,
MatrixExponential, MatrixLogarithm, MatrixSquareRoot, with their TF1 wrappers and
gradients. Every op works on the innermost two dimensions and batches over the rest. Kernels are in
tensorflux/kernels/cpu/linalg_factor_ops.py.
"""

from __future__ import annotations

import builtins

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.gather_ops import one_hot
from tensorflux.ops.linalg_ops import adjoint_last_two as _adj
from tensorflux.ops.linalg_ops import (
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
)
from tensorflux.ops.math_ext_ops import einsum
from tensorflux.ops.math_ops import _conj, add, cast, multiply, subtract
from tensorflux.ops.matrix_ops import matmul, matrix_inverse
from tensorflux.ops.slicing_ops import slice as _slice
from tensorflux.ops.unary_ops import _const_like, negative, reciprocal, square

__all__ = ["matrix_solve", "matrix_solve_ls", "matrix_triangular_solve", "qr", "svd",
           "matrix_square_root", "self_adjoint_eig", "self_adjoint_eigvals"]

_LINALG = "T: {double, float, half, complex64, complex128}"


def _square(dims):
    """The [..., N, N] dims of a batch of square matrices (dims from checked_dims)."""
    if dims is None:
        return None
    n = merge_dim(dims[-2], dims[-1])
    return dims[:-2] + [n, n]


def _shape(dims):
    return tensor_shape.unknown_shape() if dims is None else tensor_shape.TensorShape(dims)


# ---- MatrixSolve, MatrixTriangularSolve --------------------------------------------------


def _solve_shape(op):
    a = _square(checked_dims(op.inputs[0], at_least=2))
    b = checked_dims(op.inputs[1], at_least=2)
    if a is None or b is None:
        return [_shape(b)]
    merge_dim(a[-1], b[-2])
    if op.type == "MatrixTriangularSolve":
        batch = common_shapes.broadcast_shapes(tensor_shape.TensorShape(a[:-2]),
                                               tensor_shape.TensorShape(b[:-2]))
        return [batch.concatenate(b[-2:])]
    return [_shape(common_shapes.merge_shapes(a[:-2], b[:-2]) + b[-2:])]


define_op("MatrixSolve", inputs=["matrix: T", "rhs: T"], outputs=["output: T"],
          attrs=["adjoint: bool = false", _LINALG], shape_fn=_solve_shape)
define_op("MatrixTriangularSolve", inputs=["matrix: T", "rhs: T"], outputs=["output: T"],
          attrs=["lower: bool = true", "adjoint: bool = false",
                 "T: {bfloat16, double, float, half, complex64, complex128}"],
          shape_fn=_solve_shape, broadcasts=True)


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """X with matrix @ X = rhs (or adjoint(matrix) @ X = rhs) for each square matrix
    (`tf.linalg.solve`). A singular matrix is an InvalidArgumentError at run time."""
    return apply_op("MatrixSolve", matrix=matrix, rhs=rhs, adjoint=adjoint,
                    name=name or "MatrixSolve")


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """X with matrix @ X = rhs for triangular matrices (`tf.linalg.triangular_solve`):
    only the lower (or upper) triangle of `matrix` is read; batch dimensions broadcast."""
    return apply_op("MatrixTriangularSolve", matrix=matrix, rhs=rhs, lower=lower,
                    adjoint=adjoint, name=name or "MatrixTriangularSolve")


def _solve_grads(a, c, grad, adjoint, solve):
    """(grad_a, grad_rhs) of c = solve(a, rhs)."""
    grad_b = solve(a, grad, not adjoint)
    if adjoint:
        return negative(matmul(c, grad_b, adjoint_b=True)), grad_b
    return negative(matmul(grad_b, c, adjoint_b=True)), grad_b


@gradient("MatrixSolve")
def _matrix_solve_grad(op, grad):
    grad_a, grad_b = _solve_grads(op.inputs[0], op.outputs[0], grad, op.attrs["adjoint"],
                                  lambda a, g, adj: matrix_solve(a, g, adjoint=adj))
    return [grad_a, grad_b]


@gradient("MatrixTriangularSolve")
def _matrix_triangular_solve_grad(op, grad):
    lower = op.attrs["lower"]
    grad_a, grad_b = _solve_grads(
        op.inputs[0], op.outputs[0], grad, op.attrs["adjoint"],
        lambda a, g, adj: matrix_triangular_solve(a, g, lower=lower, adjoint=adj))
    grad_a = matrix_band_part(grad_a, -1, 0) if lower else matrix_band_part(grad_a, 0, -1)
    return [grad_a, grad_b]


# ---- MatrixSolveLs -----------------------------------------------------------------------


def _solve_ls_shape(op):
    a = checked_dims(op.inputs[0], at_least=2)
    b = checked_dims(op.inputs[1], at_least=2)
    checked_dims(op.inputs[2], rank=0)
    if a is None or b is None:
        return [tensor_shape.unknown_shape()]
    merge_dim(a[-2], b[-2])
    return [_shape(common_shapes.merge_shapes(a[:-2], b[:-2]) + [a[-1], b[-1]])]


define_op("MatrixSolveLs", inputs=["matrix: T", "rhs: T", "l2_regularizer: double"],
          outputs=["output: T"], attrs=[_LINALG, "fast: bool = true"],
          shape_fn=_solve_ls_shape)


def matrix_solve_ls(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """The least-squares solutions X of matrix @ X = rhs with an L2 penalty
    (`tf.linalg.lstsq`): (A^H A + l2 I)^-1 A^H rhs for tall A, A^H (A A^H + l2 I)^-1 rhs for
    wide A."""
    with graph_lib.name_scope(name, "matrix_solve_ls", [matrix, rhs]) as name:
        l2 = convert_to_tensor(l2_regularizer, dtype=dtypes.float64, name="l2_regularizer")
        return apply_op("MatrixSolveLs", matrix=matrix, rhs=rhs, l2_regularizer=l2,
                        fast=fast, name=name)


def _regularized_gram(a, l2, tall: bool):
    """A^H A + l2 I (tall) or A A^H + l2 I (wide)."""
    gram = matmul(a, a, adjoint_a=True) if tall else matmul(a, a, adjoint_b=True)
    diag = matrix_diag_part(gram)
    return matrix_set_diag(gram, add(diag, cast(l2, gram.dtype)))


@gradient("MatrixSolveLs")
def _matrix_solve_ls_grad(op, grad):
    """Differentiates the normal equations. Tall A (C = A^H A + l2 I, x = C^-1 A^H b):
    with z = C^-1 g and r = b - A x, grad_b = A z and grad_A = r z^H - A z x^H. Wide A
    (D = A A^H + l2 I, y = D^-1 b, x = A^H y): with w = D^-1 A g, grad_b = w and
    grad_A = y g^H - w x^H - y (A^H w)^H."""
    a, b, l2 = op.inputs
    x = op.outputs[0]
    dims = a.shape.as_list() if a.shape.ndims is not None else None
    if dims is None or dims[-2] is None or dims[-1] is None:
        raise NotImplementedError("MatrixSolveLs gradient needs a static matrix shape")
    tall = dims[-2] >= dims[-1]
    gram = _regularized_gram(a, l2, tall)
    if tall:
        z = matrix_solve(gram, grad)
        az = matmul(a, z)
        r = subtract(b, matmul(a, x))
        grad_a = subtract(matmul(r, z, adjoint_b=True), matmul(az, x, adjoint_b=True))
        return [grad_a, az, None]
    y = matrix_solve(gram, b)
    w = matrix_solve(gram, matmul(a, grad))
    grad_a = subtract(matmul(y, grad, adjoint_b=True), matmul(w, x, adjoint_b=True))
    grad_a = subtract(grad_a, matmul(y, matmul(a, w, adjoint_a=True), adjoint_b=True))
    return [grad_a, w, None]


# ---- Qr ----------------------------------------------------------------------------------


def _qr_shape(op):
    dims = checked_dims(op.inputs[0], at_least=2)
    if dims is None:
        return [tensor_shape.unknown_shape()] * 2
    m, n = dims[-2:]
    full = op.attrs["full_matrices"]
    k = m if full else (None if m is None or n is None else builtins.min(m, n))
    return [_shape(dims[:-2] + [m, k]), _shape(dims[:-2] + [k, n])]


define_op("Qr", inputs=["input: T"], outputs=["q: T", "r: T"],
          attrs=["full_matrices: bool = false", _LINALG], shape_fn=_qr_shape)


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """The QR factorizations of the innermost matrices (`tf.linalg.qr`): (q, r) with
    orthonormal columns in q and upper-triangular r, q @ r = input."""
    return apply_op("Qr", input=input, full_matrices=full_matrices, name=name or "Qr")


def _right_triangular_solve(x, r):
    """x @ r^-1 for upper-triangular r."""
    return _adj(matrix_triangular_solve(r, _adj(x), lower=False, adjoint=True))


def _qr_grad_deep(q, r, dq, dr):
    """Square or tall input, reduced q: with M = r dr^H - dq^H q and copyltu(M) its lower
    triangle mirrored up, grad = (dq + q copyltu(M)) r^-H."""
    m = subtract(matmul(r, dr, adjoint_b=True), matmul(dq, q, adjoint_a=True))
    lower = matrix_band_part(m, -1, 0)
    copyltu = subtract(add(lower, _adj(lower)), matrix_diag(matrix_diag_part(m)))
    return _adj(matrix_triangular_solve(r, _adj(add(dq, matmul(q, copyltu))), lower=False,
                                        adjoint=False))


@gradient("Qr")
def _qr_grad(op, dq, dr):
    """Tall or square inputs directly; wide ones [X Y] (X square) as X = q u, Y = q v:
    grad_X from the square case with dq + Y dv^H, grad_Y = q dv."""
    q, r = op.outputs
    a = op.inputs[0]
    dims = a.shape.as_list() if a.shape.ndims is not None else None
    if dims is None or dims[-2] is None or dims[-1] is None or \
            (op.attrs["full_matrices"] and dims[-2] > dims[-1]):
        raise NotImplementedError("QrGrad not implemented when full_matrices is true and "
                                  "nrows > ncols, or for unknown matrix shapes")
    rows, cols = dims[-2:]
    if rows >= cols:
        return [_qr_grad_deep(q, r, dq, dr)]
    y, u = a[..., :, rows:], r[..., :, :rows]
    dv, du = dr[..., :, rows:], dr[..., :, :rows]
    dx = _qr_grad_deep(q, u, add(dq, matmul(y, dv, adjoint_b=True)), du)
    return [joining_ops.concat([dx, matmul(q, dv)], -1)]


# ---- Svd ---------------------------------------------------------------------------------


def _svd_shape(op):
    dims = checked_dims(op.inputs[0], at_least=2)
    if dims is None:
        return [tensor_shape.unknown_shape()] * 3
    m, n = dims[-2:]
    k = None if m is None or n is None else builtins.min(m, n)
    batch = dims[:-2]
    if not op.attrs["compute_uv"]:
        return [_shape(batch + [k]), _shape([0]), _shape([0])]
    full = op.attrs["full_matrices"]
    return [_shape(batch + [k]), _shape(batch + [m, m if full else k]),
            _shape(batch + [n, n if full else k])]


define_op("Svd", inputs=["input: T"], outputs=["s: T", "u: T", "v: T"],
          attrs=["compute_uv: bool = true", "full_matrices: bool = false", _LINALG],
          shape_fn=_svd_shape)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """The singular value decompositions of the innermost matrices (`tf.linalg.svd`):
    (s, u, v) with tensor = u @ diag(s) @ adjoint(v), s descending; only s when
    `compute_uv` is False."""
    s, u, v = apply_op("Svd", input=tensor, compute_uv=compute_uv,
                       full_matrices=full_matrices, name=name or "Svd")
    return (s, u, v) if compute_uv else s


@gradient("Svd")
def _svd_grad(op, grad_s, grad_u, grad_v):
    """Real matrices, reduced factors (or square full ones): with F_ij = 1 / (s_j^2 - s_i^2)
    off the diagonal, J = F * (U^T gU), K = F * (V^T gV):
    grad = U [(J + J^T) S + diag(gS) + S (K + K^T)] V^T
           + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)."""
    a = op.inputs[0]
    if a.dtype.is_complex:
        raise NotImplementedError("SVD gradient is not implemented for complex inputs")
    if not op.attrs["compute_uv"]:
        s, u, v = svd(a, compute_uv=True)
        return [matmul(multiply(u, array_ops.expand_dims(grad_s, -2)), v, adjoint_b=True)]
    dims = a.shape.as_list() if a.shape.ndims is not None else None
    if op.attrs["full_matrices"] and (dims is None or dims[-1] != dims[-2]):
        raise NotImplementedError("SVD gradient with full_matrices=True is implemented for "
                                  "square matrices only")
    s, u, v = op.outputs
    s2 = square(s)
    diff = subtract(array_ops.expand_dims(s2, -2), array_ops.expand_dims(s2, -1))
    f = matrix_set_diag(reciprocal(diff), array_ops.zeros_like(s))
    j = multiply(f, matmul(u, grad_u, adjoint_a=True))
    k = multiply(f, matmul(v, grad_v, adjoint_a=True))
    s_row = array_ops.expand_dims(s, -2)
    inner = add(add(multiply(add(j, _adj(j)), s_row),
                    multiply(array_ops.expand_dims(s, -1), add(k, _adj(k)))),
                matrix_diag(grad_s))
    grad = matmul(matmul(u, inner), v, adjoint_b=True)
    inv_s = reciprocal(s_row)
    gu_s = multiply(grad_u, inv_s)  # gU S^-1
    proj_u = subtract(gu_s, matmul(u, matmul(u, gu_s, adjoint_a=True)))
    grad = add(grad, matmul(proj_u, v, adjoint_b=True))
    gv_s = multiply(grad_v, inv_s)  # gV S^-1
    proj_v = subtract(gv_s, matmul(v, matmul(v, gv_s, adjoint_a=True)))
    return [add(grad, matmul(u, proj_v, adjoint_b=True))]


# ---- SelfAdjointEigV2 --------------------------------------------------------------------


def _eig_shape(op):
    dims = _square(checked_dims(op.inputs[0], at_least=2))
    if dims is None:
        return [tensor_shape.unknown_shape()] * 2
    return [_shape(dims[:-1]), _shape(dims if op.attrs["compute_v"] else [0])]


define_op("SelfAdjointEigV2", inputs=["input: T"], outputs=["e: T", "v: T"],
          attrs=["compute_v: bool = true", _LINALG], shape_fn=_eig_shape)


def self_adjoint_eig(tensor, name=None):
    """(eigenvalues ascending, eigenvectors as columns) of each self-adjoint matrix
    (`tf.linalg.eigh`); only the lower triangle is read."""
    e, v = apply_op("SelfAdjointEigV2", input=tensor, compute_v=True,
                    name=name or "SelfAdjointEigV2")
    return e, v


def self_adjoint_eigvals(tensor, name=None):
    """The eigenvalues of each self-adjoint matrix, ascending (`tf.linalg.eigvalsh`)."""
    e, _ = apply_op("SelfAdjointEigV2", input=tensor, compute_v=False,
                    name=name or "SelfAdjointEigV2")
    return e


@gradient("SelfAdjointEigV2")
def _self_adjoint_eig_grad(op, grad_e, grad_v):
    """grad = V (diag(gE) + F * (V^H gV)) V^H with F_ij = 1 / (e_j - e_i) off the diagonal,
    then made self-adjoint the way the kernel reads its input (lower triangle)."""
    e, v = op.outputs
    if not op.attrs["compute_v"]:
        e, v = self_adjoint_eig(op.inputs[0])
        inner = matrix_diag(grad_e)
    else:
        diff = subtract(array_ops.expand_dims(e, -2), array_ops.expand_dims(e, -1))
        f = matrix_set_diag(reciprocal(diff), array_ops.zeros_like(e))
        inner = add(matrix_diag(grad_e),
                    multiply(cast(f, v.dtype), matmul(v, grad_v, adjoint_a=True)))
    grad = matmul(v, matmul(inner, v, adjoint_b=True))
    grad = matrix_band_part(add(grad, _adj(grad)), -1, 0)
    return [matrix_set_diag(grad, multiply(_const_like(0.5, grad), matrix_diag_part(grad)))]


# ---- Lu ----------------------------------------------------------------------------------


def _lu_shape(op):
    dims = _square(checked_dims(op.inputs[0], at_least=2))
    if dims is None:
        return [tensor_shape.unknown_shape()] * 2
    return [_shape(dims), _shape(dims[:-1])]


define_op("Lu", inputs=["input: T"], outputs=["lu: T", "p: output_idx_type"],
          attrs=[_LINALG, "output_idx_type: {int32, int64} = DT_INT32"], shape_fn=_lu_shape)


def lu(input, output_idx_type=dtypes.int32, name=None):  # noqa: A002
    """The LU factorizations with partial pivoting (`tf.linalg.lu`): (lu, p) where the
    strictly lower part of lu is L (unit diagonal), the upper part U, and
    L @ U = input[..., p, :]."""
    return apply_op("Lu", input=input, output_idx_type=output_idx_type, name=name or "Lu")


@gradient("Lu")
def _lu_grad(op, grad_lu, grad_p):
    """Square matrices: with P A = L U, grad_PA = L^-H (tril_-1(L^H gL) + triu(gU U^H))
    U^-H, and grad_A = P^T grad_PA."""
    lu_out, perm = op.outputs
    lower = matrix_band_part(lu_out, -1, 0)
    ones = array_ops.ones_like(matrix_diag_part(lu_out))
    l_mat = matrix_set_diag(lower, ones)
    u_mat = matrix_band_part(lu_out, 0, -1)
    grad_l = matrix_set_diag(matrix_band_part(grad_lu, -1, 0),
                             array_ops.zeros_like(ones))
    grad_u = matrix_band_part(grad_lu, 0, -1)
    mid_l = matrix_band_part(matmul(l_mat, grad_l, adjoint_a=True), -1, 0)
    mid_l = matrix_set_diag(mid_l, array_ops.zeros_like(ones))
    mid = add(mid_l, matrix_band_part(matmul(grad_u, u_mat, adjoint_b=True), 0, -1))
    left = matrix_triangular_solve(l_mat, mid, lower=True, adjoint=True)
    grad_pa = _adj(matrix_triangular_solve(u_mat, _adj(left), lower=False, adjoint=False))
    return [matmul(permutation_matrix(perm, grad_pa.dtype), grad_pa, adjoint_a=True)]


def permutation_matrix(perm, dtype):
    """The matrices P with P @ X = X[..., perm, :] (one-hot rows)."""
    return one_hot(perm, array_ops.shape(perm)[-1], dtype=dtype)


# ---- LogMatrixDeterminant, MatrixExponential, MatrixLogarithm ----------------------------


def _slogdet_shape(op):
    dims = _square(checked_dims(op.inputs[0], at_least=2))
    return [_shape(None if dims is None else dims[:-2])] * 2


define_op("LogMatrixDeterminant", inputs=["input: T"],
          outputs=["sign: T", "log_abs_determinant: T"],
          attrs=["T: {half, float, double, complex64, complex128}"], shape_fn=_slogdet_shape)


def log_matrix_determinant(input, name=None):  # noqa: A002
    """(sign, log |det|) of each square matrix (`tf.linalg.slogdet`)."""
    return apply_op("LogMatrixDeterminant", input=input, name=name or "LogMatrixDeterminant")


@gradient("LogMatrixDeterminant")
def _log_matrix_determinant_grad(op, _, grad):
    inv_adj = matrix_inverse(op.inputs[0], adjoint=True)
    scale = array_ops.expand_dims(array_ops.expand_dims(grad, -1), -1)
    return [multiply(scale, inv_adj)]


def _square_shape(op):
    return [_shape(_square(checked_dims(op.inputs[0], at_least=2)))]


define_op("MatrixExponential", inputs=["input: T"], outputs=["output: T"], attrs=[_LINALG],
          shape_fn=_square_shape)
define_op("MatrixLogarithm", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: {complex64, complex128}"], shape_fn=_square_shape)
not_differentiable("MatrixLogarithm")
define_op("MatrixSquareRoot", inputs=["input: T"], outputs=["output: T"], attrs=[_LINALG],
          shape_fn=_square_shape)


def matrix_exponential(input, name=None):  # noqa: A002
    """exp(A) = sum_k A^k / k! of each square matrix (`tf.linalg.expm`)."""
    return apply_op("MatrixExponential", input=input, name=name or "MatrixExponential")


def matrix_logarithm(input, name=None):  # noqa: A002
    """The principal logarithm of each complex square matrix (`tf.linalg.logm`)."""
    return apply_op("MatrixLogarithm", input=input, name=name or "MatrixLogarithm")


@gradient("MatrixExponential")
def _matrix_exponential_grad(op, grad):
    """The upper-right block of exp([[A^H, G], [0, A^H]]) (Najfeld and Havel)."""
    a_h = _adj(op.inputs[0])
    zeros = array_ops.zeros_like(a_h)
    top = joining_ops.concat([a_h, grad], -1)
    bottom = joining_ops.concat([zeros, a_h], -1)
    big = matrix_exponential(joining_ops.concat([top, bottom], -2))
    n = array_ops.shape(a_h)[-1]
    rank = array_ops.rank(a_h)
    begin = joining_ops.concat([array_ops.zeros(array_ops.reshape(rank - 2, [1]),
                                                dtypes.int32), joining_ops.stack([0, n])], 0)
    size = joining_ops.concat([array_ops.fill(array_ops.reshape(rank - 2, [1]), -1),
                               joining_ops.stack([n, n])], 0)
    return [_slice(big, begin, size)]


def matrix_square_root(input, name=None):  # noqa: A002
    """The principal square root S (S @ S = input) of each square matrix
    (`tf.linalg.sqrtm`)."""
    return apply_op("MatrixSquareRoot", input=input, name=name or "MatrixSquareRoot")


@gradient("MatrixSquareRoot")
def _matrix_square_root_grad(op, grad):
    """dA = dS S + S dS, so grad_A = X with S^H X + X S^H = grad: a Sylvester equation,
    solved as one linear system of size N^2 (row-major vec: (S^H kron I + I kron conj(S)))."""
    s = op.outputs[0]
    dims = s.shape.as_list() if s.shape.ndims is not None else None
    if dims is None or dims[-1] is None:
        raise NotImplementedError("MatrixSquareRoot gradient needs a static matrix size")
    n = dims[-1]
    s_h = _adj(s)
    eye = matrix_diag(array_ops.ones_like(matrix_diag_part(s)))
    k = add(einsum("...ij,...kl->...ikjl", s_h, eye),
            einsum("...ij,...kl->...ikjl", eye, _conj(s)))
    batch = array_ops.shape(s)[:-2]
    k = array_ops.reshape(k, joining_ops.concat([batch, [n * n, n * n]], 0))
    vec = array_ops.reshape(grad, joining_ops.concat([batch, [n * n, 1]], 0))
    return [array_ops.reshape(matrix_solve(k, vec), array_ops.shape(grad))]
