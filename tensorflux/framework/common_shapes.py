"""Shape functions shared by many ops, and constant evaluation for shape inference.

A shape function takes the Operation being created and returns one TensorShape (or a list
of dims, or None for unknown) per output. Unknown dimensions stay None; a definite conflict
raises ValueError, which op creation turns into TensorFlow's message with the node and the
input shapes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tensorflux.framework import tensor_shape
from tensorflux.framework.operation import Operation, Tensor

TensorShape = tensor_shape.TensorShape


def unknown(op: Operation) -> list:
    """Every output of unknown shape."""
    return [None] * len(op.outputs)


def scalar(op: Operation) -> list:
    return [TensorShape([])] * len(op.outputs)


def unchanged(op: Operation) -> list:
    """Output 0 has the shape of input 0 (elementwise unary ops)."""
    return [op.inputs[0].shape]


def unchanged_all(op: Operation) -> list:
    """Output i has the shape of input i (IdentityN)."""
    return [t.shape for t in op.inputs]


def merge_all_inputs(op: Operation) -> list:
    """All inputs must have compatible shapes; the output has their merged shape (AddN)."""
    shape = tensor_shape.unknown_shape()
    for t in op.inputs:
        shape = shape.merge_with(t.shape)
    return [shape]


def broadcast_shapes(a: TensorShape, b: TensorShape) -> TensorShape:
    """NumPy broadcasting of two static shapes, with unknown dimensions.

    Raises:
      ValueError: two known dimensions differ and neither is 1.
    """
    if a.ndims is None or b.ndims is None:
        return tensor_shape.unknown_shape()
    da, db = a.as_list(), b.as_list()
    n = max(len(da), len(db))
    da = [1] * (n - len(da)) + da
    db = [1] * (n - len(db)) + db
    out = []
    for x, y in zip(da, db, strict=True):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            # One unknown, the other known (not 1): the result is the known one, or a
            # conflict at run time.
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            raise ValueError(f"Dimensions must be equal, but are {x} and {y}")
    return TensorShape(out)


def broadcast_binary(op: Operation) -> list:
    """Output 0: the broadcast of inputs 0 and 1 (elementwise binary ops)."""
    return [broadcast_shapes(op.inputs[0].shape, op.inputs[1].shape)]


# ------------------------------------------------------------------------------------------
# Constant evaluation: enough of a tensor's value, known at graph-construction time, for
# shape functions (Reshape's shape, Fill's dims, a reduction's axes, ...).

_evaluators: dict[str, Callable[[Operation], object]] = {}


def constant_evaluator(*op_types: str):
    """Registers `fn(op) -> the NumPy value of op.outputs[0], or None if unknown`."""

    def register(fn):
        for t in op_types:
            _evaluators[t] = fn
        return fn

    return register


def constant_value(tensor: Tensor):
    """The value of `tensor` if it can be computed at graph-construction time, else None."""
    if not isinstance(tensor, Tensor):
        return None
    op = tensor.op
    fn = _evaluators.get(op.type)
    if fn is None:
        return None
    try:
        value = fn(op, tensor.value_index) if _takes_index(fn) else (
            fn(op) if tensor.value_index == 0 else None)
    except (ValueError, TypeError, IndexError):
        return None
    return value


def _takes_index(fn) -> bool:
    return getattr(fn, "_takes_index", False)


_shape_evaluators: dict[str, Callable[[Tensor], TensorShape | None]] = {}


def shape_evaluator(*op_types: str):
    """Registers `fn(tensor) -> TensorShape or None`: the partially known value of a
    shape-valued (1-D integer) output of an op of these types, for `constant_value_as_shape`.

    Shape gives its input's static shape, Pack its scalar dims, ConcatV2 and StridedSlice
    concatenate and slice partial shapes, and so on (see tensorflux/ops/array_ops.py).
    """

    def register(fn):
        for t in op_types:
            _shape_evaluators[t] = fn
        return fn

    return register


def constant_value_as_shape(tensor: Tensor) -> TensorShape:
    """A shape-valued tensor (e.g. Reshape's `shape`) as a partially known TensorShape.

    A fully known value gives its dims (-1 entries become unknown dimensions); otherwise the
    producing op's registered `shape_evaluator` is asked; failing that, a shape of the right
    rank when the tensor's own static shape tells the rank, else an unknown shape.
    """
    value = constant_value(tensor)
    if value is not None:
        return TensorShape([None if int(d) < 0 else int(d) for d in np.reshape(value, -1)])
    fn = _shape_evaluators.get(tensor.op.type)
    if fn is not None:
        try:
            shape = fn(tensor)
        except (ValueError, TypeError, IndexError):
            shape = None
        if shape is not None:
            return shape
    shape = tensor.shape
    if shape.ndims == 1 and shape.as_list()[0] is not None:
        return tensor_shape.unknown_shape(rank=shape.as_list()[0])
    return tensor_shape.unknown_shape()


def known_axes(op: Operation, tensor: Tensor, rank: int | None) -> list[int] | None:
    """Constant axis values of `tensor`, normalized to [0, rank); None if not constant."""
    value = constant_value(tensor)
    if value is None:
        return None
    axes = [int(a) for a in np.reshape(value, -1)]
    if rank is None:
        return axes if all(a >= 0 for a in axes) else None
    out = []
    for a in axes:
        if not -rank <= a < max(rank, 1):
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} "
                             "dimensions")
        out.append(a % rank if rank else 0)
    return out
