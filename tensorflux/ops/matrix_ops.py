"""Matrix ops: MatMul, BatchMatMul, MatrixInverse, MatrixDeterminant, Cholesky. Each op's
definition, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/matrix_ops.py. The `@` operator of tensors is registered here.

`range` here is TF1's (from sequence_ops); the builtin is `builtins.range`.
"""

from __future__ import annotations

import builtins

import numpy as np

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.comparison_ops import (
    equal,
    greater,
)
from tensorflux.ops.math_ops import (
    _binary_operator,
    _conj,
    _merge_shapes,
    add,
    cast,
    conj,
    multiply,
    subtract,
)
from tensorflux.ops.sequence_ops import range
from tensorflux.ops.unary_ops import (
    _const_like,
    negative,
)

__all__ = [
    "matmul", "matrix_inverse", "matrix_determinant", "cholesky"
]


# ==========================================================================================
# Matrices.


def _matmul_shape(op):
    a, b = (t.shape for t in op.inputs)
    return _matmul_shape_of(a, b, op)


def _matmul_shape_of(a, b, op):
    for s in (a, b):
        if s.ndims is not None and s.ndims != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {s.ndims}")
    if a.ndims is None or b.ndims is None:
        return [tensor_shape.unknown_shape(rank=2)]
    da, db = a.as_list(), b.as_list()
    if op.attrs["transpose_a"]:
        da = da[::-1]
    if op.attrs["transpose_b"]:
        db = db[::-1]
    _check_inner(da[1], db[0])
    return [tensor_shape.TensorShape([da[0], db[1]])]


def _check_inner(k1, k2):
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"Dimensions must be equal, but are {k1} and {k2}")


define_op("MatMul", inputs=["a: T", "b: T"], outputs=["product: T"],
          attrs=["transpose_a: bool = false", "transpose_b: bool = false",
                 "T: {bfloat16, float16, float32, float64, int32, int64, uint8, uint16, "
                 "uint32, uint64, complex64, complex128}",
                 "grad_a: bool = false", "grad_b: bool = false"],
          shape_fn=_matmul_shape, flops="matmul")
def _fused_matmul_shape(op):
    return _matmul_shape_of(op.inputs[0].shape, op.inputs[1].shape, op)


# MatMul -> BiasAdd [-> Relu] as one node, made only by the graph optimizer's rewrite of a
# step graph (runtime/graph_optimizer.py `fuse_matmul_bias_relu`, as TF's grappler remapper
# makes its _FusedMatMul, with TF's signature); the graph it appears in is already
# differentiated, so it has no gradient.
define_op("_FusedMatMul", inputs=["a: T", "b: T", "args: num_args * T"],
          outputs=["product: T"],
          attrs=["transpose_a: bool = false", "transpose_b: bool = false",
                 "T: {half, bfloat16, float, double}", "num_args: int >= 0",
                 "fused_ops: list(string) = []", "epsilon: float = 0.0001",
                 "leakyrelu_alpha: float = 0.2"],
          shape_fn=_fused_matmul_shape,
          flops="matmul")
not_differentiable("_FusedMatMul")


def _fused_matmul_add_shape(op):
    product = _matmul_shape_of(op.inputs[0].shape, op.inputs[1].shape, op)[0]
    return [product.merge_with(op.inputs[2].shape)]


# addend + MatMul(a, b) as one node, made only by the graph optimizer (runtime/
# graph_optimizer.py `fuse_matmul_add`: a weight's gradient summed over a while loop's
# iterations, `acc + x_t^T dy_t`); its kernel adds the product into the addend's buffer
# (BLAS's beta = 1) instead of writing the product and adding it in another pass. Made
# after differentiation: no gradient.
define_op("_FusedMatMulAdd", inputs=["a: T", "b: T", "addend: T"], outputs=["sum: T"],
          attrs=["transpose_a: bool = false", "transpose_b: bool = false",
                 "T: {float, double}"],
          shape_fn=_fused_matmul_add_shape, flops="matmul")
not_differentiable("_FusedMatMulAdd")


def _batch_matmul_shape(op, broadcast: bool):
    x, y = (t.shape for t in op.inputs)
    for s in (x, y):
        if s.ndims is not None and s.ndims < 2:
            raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    if x.ndims is None or y.ndims is None:
        return [tensor_shape.unknown_shape()]
    dx, dy = x.as_list(), y.as_list()
    m, kx = (dx[-1], dx[-2]) if op.attrs["adj_x"] else (dx[-2], dx[-1])
    ky, n = (dy[-1], dy[-2]) if op.attrs["adj_y"] else (dy[-2], dy[-1])
    _check_inner(kx, ky)
    if broadcast:
        batch = common_shapes.broadcast_shapes(tensor_shape.TensorShape(dx[:-2]),
                                               tensor_shape.TensorShape(dy[:-2]))
    else:
        batch = _merge_shapes(tensor_shape.TensorShape(dx[:-2]),
                              tensor_shape.TensorShape(dy[:-2]))
    return [batch.concatenate([m, n])]


_BMM_ATTRS = ["adj_x: bool = false", "adj_y: bool = false", "grad_x: bool = false",
              "grad_y: bool = false"]
define_op("BatchMatMul", inputs=["x: T", "y: T"], outputs=["output: T"],
          attrs=["T: {bfloat16, float16, float32, float64, int32, int64, complex64, "
                 "complex128}", *_BMM_ATTRS],
          shape_fn=lambda op: _batch_matmul_shape(op, broadcast=False), flops="matmul")
define_op("BatchMatMulV2", inputs=["x: T", "y: T"], outputs=["output: T"],
          attrs=["T: {bfloat16, float16, float32, float64, int16, int32, int64, uint8, "
                 "uint16, uint32, uint64, complex64, complex128}", *_BMM_ATTRS],
          shape_fn=lambda op: _batch_matmul_shape(op, broadcast=True), broadcasts=True,
          flops="matmul")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """The matrix product of a and b (`tf.matmul`), batched over leading dimensions.

    Rank-2 operands give a MatMul; higher ranks a BatchMatMulV2, whose batch dimensions
    broadcast. `adjoint_*` transposes and conjugates; the sparsity hints are ignored.

    Raises:
      ValueError: both transpose and adjoint of one operand, or inner dimensions that
        differ.
      TypeError: a and b have different dtypes.
    """
    with graph_lib.name_scope(name, "MatMul", [a, b]) as name:
        if transpose_a and adjoint_a:
            raise ValueError("Only one of transpose_a and adjoint_a can be True.")
        if transpose_b and adjoint_b:
            raise ValueError("Only one of transpose_b and adjoint_b can be True.")
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, preferred_dtype=a.dtype.base_dtype, name="b")
        ra, rb = a.shape.ndims, b.shape.ndims
        if (ra is None or ra > 2) or (rb is None or rb > 2):
            if transpose_a:
                a, adjoint_a = conj(a), True
            if transpose_b:
                b, adjoint_b = conj(b), True
            return apply_op("BatchMatMulV2", x=a, y=b, adj_x=adjoint_a, adj_y=adjoint_b,
                            name=name)
        if adjoint_a:
            a, transpose_a = conj(a), True
        if adjoint_b:
            b, transpose_b = conj(b), True
        return apply_op("MatMul", a=a, b=b, transpose_a=transpose_a,
                        transpose_b=transpose_b, name=name)


def _product_grads(mm, x, y, grad, tx: bool, ty: bool) -> list:
    """The gradients of a product of x and y (each transposed, or adjointed, when tx, ty
    say so), made by `mm(p, q, tp, tq)`: the same product op with its own flags."""
    if not tx and not ty:
        return [mm(grad, y, False, True), mm(x, grad, True, False)]
    if not tx and ty:
        return [mm(grad, y, False, False), mm(grad, x, True, False)]
    if tx and not ty:
        return [mm(y, grad, False, True), mm(x, grad, False, False)]
    return [mm(y, grad, True, True), mm(grad, x, True, True)]


@gradient("MatMul")
def _matmul_grad(op, grad):
    def mm(x, y, ta, tb):
        return apply_op("MatMul", a=x, b=y, transpose_a=ta, transpose_b=tb)

    return _product_grads(mm, _conj(op.inputs[0]), _conj(op.inputs[1]), grad,
                          op.attrs["transpose_a"], op.attrs["transpose_b"])


def _batch_matmul_grad(op, grad):
    """Gradients shaped like the broadcast batch; for BatchMatMulV2 the driver sums them
    over the batch dimensions each operand was broadcast along."""
    def bmm(p, q, ap, aq):
        return apply_op("BatchMatMulV2", x=p, y=q, adj_x=ap, adj_y=aq)

    return _product_grads(bmm, *op.inputs, grad, op.attrs["adj_x"], op.attrs["adj_y"])


gradient("BatchMatMul")(_batch_matmul_grad)
gradient("BatchMatMulV2")(_batch_matmul_grad)


def _square_matrix_shape(op):
    s = op.inputs[0].shape
    if s.ndims is None:
        return [s]
    if s.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {s.ndims}")
    dims = s.as_list()
    _check_inner(dims[-2], dims[-1])
    n = dims[-1] if dims[-1] is not None else dims[-2]
    return [tensor_shape.TensorShape(dims[:-2] + [n, n])]


define_op("MatrixInverse", inputs=["input: T"], outputs=["output: T"],
          attrs=["adjoint: bool = false",
                 "T: {float64, float32, float16, complex64, complex128}"],
          shape_fn=_square_matrix_shape)


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002
    """The inverse of each square matrix in the last two dimensions (`tf.matrix_inverse`);
    with `adjoint`, the inverse of its adjoint.

    A singular matrix is an InvalidArgumentError at run time ("Input is not invertible.").
    """
    return apply_op("MatrixInverse", input=input, adjoint=adjoint,
                    name=name or "MatrixInverse")


@gradient("MatrixInverse")
def _matrix_inverse_grad(op, grad):
    ainv = op.outputs[0]
    adj = op.attrs["adjoint"]
    inner = matmul(grad, ainv, adjoint_a=adj, adjoint_b=not adj)
    return [negative(matmul(ainv, inner, adjoint_a=not adj))]


def _determinant_shape(op):
    s = _square_matrix_shape(op)[0]
    return [s if s.ndims is None else tensor_shape.TensorShape(s.as_list()[:-2])]


define_op("MatrixDeterminant", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: {float16, float32, float64, complex64, complex128}"],
          shape_fn=_determinant_shape)


def matrix_determinant(input, name=None):  # noqa: A002
    """The determinant of each square matrix in the last two dimensions
    (`tf.matrix_determinant`)."""
    return apply_op("MatrixDeterminant", input=input, name=name or "MatrixDeterminant")


@gradient("MatrixDeterminant")
def _matrix_determinant_grad(op, grad):
    a, c = op.inputs[0], op.outputs[0]
    a_adj_inv = matrix_inverse(a, adjoint=True)
    multipliers = array_ops.reshape(multiply(grad, c),
                                    joining_ops.concat([array_ops.shape(c), [1, 1]], 0))
    return [multiply(multipliers, a_adj_inv)]


define_op("Cholesky", inputs=["input: T"], outputs=["output: T"],
          attrs=["T: {float64, float32, float16, complex64, complex128}"],
          shape_fn=_square_matrix_shape)


def cholesky(input, name=None):  # noqa: A002
    """The lower-triangular L with L L^H = input, for each matrix (`tf.cholesky`).

    Only the lower triangle of the input is read. A matrix that is not positive definite
    is an InvalidArgumentError at run time.
    """
    return apply_op("Cholesky", input=input, name=name or "Cholesky")


@gradient("Cholesky")
def _cholesky_grad(op, grad):
    """Murray's formula (TensorFlow's): with L the output,
    grad_A = 0.5 * (S + S^H), S = L^-H Phi(L^H grad) L^-1, where Phi keeps the lower
    triangle and halves the diagonal."""
    l = op.outputs[0]
    l_inverse = matrix_inverse(l)
    middle = matmul(l, grad, adjoint_a=True)
    n = array_ops.shape(l)[-1] if l.shape.ndims is None or l.shape.as_list()[-1] is None \
        else l.shape.as_list()[-1]
    if isinstance(n, int):
        mask = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
        mask = _const_like(mask, l, name="phi")
    else:
        idx = range(0, n)
        rows = array_ops.reshape(idx, [-1, 1])
        cols = array_ops.reshape(idx, [1, -1])
        mask = add(cast(greater(rows, cols), l.dtype),
                   multiply(_const_like(0.5, l), cast(equal(rows, cols), l.dtype)))
    middle = multiply(middle, mask)
    grad_a = matmul(matmul(l_inverse, middle, adjoint_a=True), l_inverse)
    grad_a = add(grad_a, _adjoint(grad_a))
    return [multiply(grad_a, _const_like(0.5, l))]


def _adjoint(x):
    """The conjugate transpose of the last two dimensions."""
    rank = x.shape.ndims
    if rank is not None:
        perm = list(builtins.range(rank - 2)) + [rank - 1, rank - 2]
    else:
        r = array_ops.rank(x)
        perm = joining_ops.concat([range(0, subtract(r, 2)), joining_ops.stack(
            [subtract(r, 1), subtract(r, 2)])], 0)
    return _conj(array_ops.transpose(x, perm))


Tensor._override_operator("__matmul__", _binary_operator(matmul, "matmul"))
Tensor._override_operator("__rmatmul__", _binary_operator(matmul, "matmul", reverse=True))
