"""What the LinearOperator classes share: the ops they are built from, gathered in one
place, and helpers for batch broadcasting, static shapes and matrix adjoints."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.constant_op import constant
from tensorflux.ops.linalg_ops import adjoint_last_two
from tensorflux.ops.matrix_ops import matmul

__all__ = ["adjoint", "matmul_adj", "broadcast_batch", "static_or_dynamic", "shape_tensor",
           "to_tensor", "static_int", "constant"]


def adjoint(x: Tensor) -> Tensor:
    """The conjugate transpose of the innermost two dimensions."""
    return adjoint_last_two(x)


def matmul_adj(a, b, adjoint_a=False, adjoint_b=False):
    """a @ b with optional adjoints, batch dimensions broadcast (BatchMatMulV2)."""
    return matmul(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)


def to_tensor(x, dtype=None, name=None) -> Tensor:
    return convert_to_tensor(x, dtype=dtype, name=name)


def static_int(x):
    """The Python int value of a scalar `x` (an int, a NumPy scalar or a constant tensor),
    or None when it is not known while building the graph."""
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, Tensor):
        v = constant_value(x)
        return None if v is None else int(v)
    return int(x)


def shape_tensor(x: Tensor) -> Tensor:
    """x's shape as an int32 tensor: a constant where the static shape is fully known."""
    if x.shape.is_fully_defined():
        return constant(x.shape.as_list(), dtype=dtypes.int32)
    return array_ops.shape(x)


def static_or_dynamic(static: tensor_shape.TensorShape, dynamic) -> Tensor:
    """`static` as a constant where it is fully known, else the tensor `dynamic()`."""
    if static.is_fully_defined():
        return constant(static.as_list(), dtype=dtypes.int32)
    return dynamic()


def batch_of(x: Tensor, inner: int) -> Tensor:
    """The leading (batch) dimensions of x, all but its `inner` innermost ones, as a
    tensor."""
    return shape_tensor(x)[:-inner] if inner else shape_tensor(x)


def broadcast_batch(a: Tensor, b: Tensor, inner_a: int = 2, inner_b: int = 2):
    """a and b with their batch dimensions (all but `inner_*` innermost) broadcast to one
    shape, so ops that do not broadcast (MatrixSolve, LogMatrixDeterminant) can take them."""
    sa, sb = a.shape, b.shape
    if sa.ndims is not None and sb.ndims is not None:
        ba = sa[:sa.ndims - inner_a]
        bb = sb[:sb.ndims - inner_b]
        if ba.is_fully_defined() and bb.is_fully_defined() and ba.as_list() == bb.as_list():
            return a, b
    batch = joining_ops.broadcast_dynamic_shape(batch_of(a, inner_a), batch_of(b, inner_b))

    def grow(x, inner):
        inner_shape = shape_tensor(x)[x.shape.ndims - inner:] if x.shape.ndims is not None \
            else array_ops.shape(x)[-inner:]
        return joining_ops.broadcast_to(x, joining_ops.concat([batch, inner_shape], 0))

    return grow(a, inner_a), grow(b, inner_b)
