"""Set ops over the last dimension: DenseToDenseSetOperation and SetSize, with the TF1
wrappers of `tf.sets` (`set_intersection`, `set_union`, `set_difference`, `set_size`).
Each row (all but the last dimension index a row) is a set; results are SparseTensors whose
rows hold the sorted result elements. Kernels: tensorflux/kernels/cpu/set_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import tensor_shape
from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__: list[str] = []

_SET_TYPES = "T: {int8, int16, int32, int64, uint8, uint16, string}"


def _set_operation_shape(op):
    a = checked_dims(op.inputs[0], at_least=2)
    b = checked_dims(op.inputs[1], at_least=2)
    rank = len(a) if a is not None else (len(b) if b is not None else None)
    if a is not None and b is not None and len(a) != len(b):
        raise ValueError(f"Shapes must be equal rank, but are {len(a)} and {len(b)}")
    return [tensor_shape.TensorShape([None, rank]), tensor_shape.TensorShape([None]),
            tensor_shape.TensorShape([rank])]


define_op("DenseToDenseSetOperation", inputs=["set1: T", "set2: T"],
          outputs=["result_indices: int64", "result_values: T", "result_shape: int64"],
          attrs=["set_operation: string", "validate_indices: bool = true", _SET_TYPES],
          shape_fn=_set_operation_shape)


def _set_size_shape(op):
    checked_dims(op.inputs[0], rank=2)
    checked_dims(op.inputs[1], rank=1)
    checked_dims(op.inputs[2], rank=1)
    return [tensor_shape.unknown_shape()]


define_op("SetSize", inputs=["set_indices: int64", "set_values: T", "set_shape: int64"],
          outputs=["size: int32"], attrs=["validate_indices: bool = true", _SET_TYPES],
          shape_fn=_set_size_shape)
not_differentiable("DenseToDenseSetOperation", "SetSize")


def _set_operation(a, b, operation, validate_indices, name):
    if isinstance(a, SparseTensor) or isinstance(b, SparseTensor):
        raise NotImplementedError("tf.sets on SparseTensor inputs is not supported yet; "
                                  "pass dense tensors")
    with graph_lib.name_scope(name, "set_op", [a, b]):
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, dtype=a.dtype, name="b")
        indices, values, shape = apply_op(
            "DenseToDenseSetOperation", set1=a, set2=b, set_operation=operation,
            validate_indices=validate_indices)
        return SparseTensor(indices, values, shape)


def set_intersection(a, b, validate_indices=True):
    """The elements of each row of a that are in the same row of b (`tf.sets.intersection`)
    as a SparseTensor."""
    return _set_operation(a, b, "intersection", validate_indices, "set_intersection")


def set_union(a, b, validate_indices=True):
    """The elements in each row of a or of b (`tf.sets.union`)."""
    return _set_operation(a, b, "union", validate_indices, "set_union")


def set_difference(a, b, aminusb=True, validate_indices=True):
    """The elements of each row of a not in b (or of b not in a when `aminusb` is False)
    (`tf.sets.difference`)."""
    return _set_operation(a, b, "a-b" if aminusb else "b-a", validate_indices,
                          "set_difference")


def set_size(a, validate_indices=True):
    """The number of distinct elements in each row of the SparseTensor a
    (`tf.sets.size`)."""
    if not isinstance(a, SparseTensor):
        raise TypeError("Expected `SparseTensor`, got dense tensor.")
    with graph_lib.name_scope(None, "set_size", [a]):
        return apply_op("SetSize", set_indices=a.indices, set_values=a.values,
                        set_shape=a.dense_shape, validate_indices=validate_indices)


