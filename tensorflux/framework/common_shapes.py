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


# ------------------------------------------------------------------------------------------
# Dims lists: helpers for shape functions written over `TensorShape.as_list()` (None entries
# unknown; None for an unknown rank). Messages are those of TensorFlow's C++ InferenceContext.


def static_dims(t: Tensor) -> list | None:
    """The static dims of `t` as a list (None entries unknown), or None if the rank is not
    known."""
    s = t.shape
    return None if s.ndims is None else s.as_list()


def checked_dims(t: Tensor, rank: int | None = None, at_least: int | None = None) -> list | None:
    """The static dims of `t` (None entries unknown), or None for unknown rank.

    Raises:
      ValueError: the rank is known and is not `rank`, or is below `at_least`.
    """
    shape = t.shape
    if shape.ndims is None:
        return None
    if rank is not None and shape.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {shape.ndims}")
    if at_least is not None and shape.ndims < at_least:
        raise ValueError(f"Shape must be at least rank {at_least} but is rank {shape.ndims}")
    return shape.as_list()


def static_shape(t: Tensor) -> list | None:
    """`t`'s dims as a list when its shape is fully defined, else None."""
    s = t.shape
    return s.as_list() if s.is_fully_defined() else None


def with_rank(dims: list | None, rank: int) -> list:
    """`dims`, or `rank` unknown dims when the rank is unknown.

    Raises:
      ValueError: the rank is known and is not `rank`.
    """
    if dims is None:
        return [None] * rank
    if len(dims) != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {len(dims)}")
    return dims


def with_rank_at_least(dims: list | None, rank: int) -> list | None:
    """`dims` (None if unknown).

    Raises:
      ValueError: the rank is known and below `rank`.
    """
    if dims is not None and len(dims) < rank:
        raise ValueError(f"Shape must be at least rank {rank} but is rank {len(dims)}")
    return dims


def shape_str(dims) -> str:
    """A dims list as TensorFlow prints it in messages: `[2,?,3]`, or `?` for unknown rank."""
    if dims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def merge_dim(a, b):
    """Two dimensions that must be equal (either may be unknown, None).

    Raises:
      ValueError: both are known and differ.
    """
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimensions must be equal, but are {a} and {b}")
    return a if a is not None else b


def merge_dims(a: list, b: list) -> list:
    """Two dims lists of one rank merged dimension by dimension.

    Raises:
      ValueError: a dimension known in both differs, as TF words it.
    """
    out = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x is not None and y is not None and x != y:
            raise ValueError(f"Dimension {i} in both shapes must be equal, but are {x} and {y}"
                             f". Shapes are {shape_str(a)} and {shape_str(b)}.")
        out.append(x if x is not None else y)
    return out


def merge_shapes(a: list | None, b: list | None) -> list | None:
    """Two dims lists (None for unknown rank) merged: `merge_dims` when both ranks are known.

    Raises:
      ValueError: the ranks differ, or a dimension known in both differs.
    """
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ValueError(f"Shapes must be equal rank, but are {len(a)} and {len(b)}")
    return merge_dims(a, b)


def scalar_value(t: Tensor) -> int | None:
    """The int value of a constant scalar (or 1-element) tensor, else None."""
    v = constant_value(t)
    if v is None or np.size(v) != 1:
        return None
    return int(np.reshape(v, ()))


def num_elements(dims) -> int | None:
    """The number of elements of a fully known dims list, else None."""
    if dims is None or any(d is None for d in dims):
        return None
    return int(np.prod(dims, dtype=np.int64))
