"""Set ops over the last dimension: DenseToDenseSetOperation, DenseToSparseSetOperation,
SparseToSparseSetOperation and SetSize, with the TF1 wrappers of `tf.sets`
(`set_intersection`, `set_union`, `set_difference`, `set_size`). Each row (all but the last
dimension index a row) is a set; a SparseTensor's row is the values at its indices of that
row. Results are SparseTensors whose rows hold the sorted result elements. A sparse first
operand with a dense second is swapped as TF does (a difference turned round). Kernels:
tensorflux/kernels/cpu/set_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import tensor_shape
from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.sparse_tensor import SparseTensor, SparseTensorValue
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


def _sparse_rank(shape_input):
    dims = checked_dims(shape_input, rank=1)
    return None if dims is None else dims[0]


def _dense_to_sparse_shape(op):
    a = checked_dims(op.inputs[0], at_least=2)
    rank = len(a) if a is not None else _sparse_rank(op.inputs[3])
    return [tensor_shape.TensorShape([None, rank]), tensor_shape.TensorShape([None]),
            tensor_shape.TensorShape([rank])]


def _sparse_to_sparse_shape(op):
    rank = _sparse_rank(op.inputs[2])
    rank = rank if rank is not None else _sparse_rank(op.inputs[5])
    return [tensor_shape.TensorShape([None, rank]), tensor_shape.TensorShape([None]),
            tensor_shape.TensorShape([rank])]


define_op("DenseToSparseSetOperation",
          inputs=["set1: T", "set2_indices: int64", "set2_values: T", "set2_shape: int64"],
          outputs=["result_indices: int64", "result_values: T", "result_shape: int64"],
          attrs=["set_operation: string", "validate_indices: bool = true", _SET_TYPES],
          shape_fn=_dense_to_sparse_shape)
define_op("SparseToSparseSetOperation",
          inputs=["set1_indices: int64", "set1_values: T", "set1_shape: int64",
                  "set2_indices: int64", "set2_values: T", "set2_shape: int64"],
          outputs=["result_indices: int64", "result_values: T", "result_shape: int64"],
          attrs=["set_operation: string", "validate_indices: bool = true", _SET_TYPES],
          shape_fn=_sparse_to_sparse_shape)


def _set_size_shape(op):
    checked_dims(op.inputs[0], rank=2)
    checked_dims(op.inputs[1], rank=1)
    checked_dims(op.inputs[2], rank=1)
    return [tensor_shape.unknown_shape()]


define_op("SetSize", inputs=["set_indices: int64", "set_values: T", "set_shape: int64"],
          outputs=["size: int32"], attrs=["validate_indices: bool = true", _SET_TYPES],
          shape_fn=_set_size_shape)
not_differentiable("DenseToDenseSetOperation", "DenseToSparseSetOperation",
                   "SparseToSparseSetOperation", "SetSize")


_TURNED = {"a-b": "b-a", "b-a": "a-b"}


def _sparse_or_not(x):
    """A SparseTensor for a SparseTensor or its value, else `x` as it came."""
    return SparseTensor.from_value(x) if isinstance(x, SparseTensorValue) else x


def _set_operation(a, b, operation, validate_indices, name):
    a, b = _sparse_or_not(a), _sparse_or_not(b)
    a_sparse, b_sparse = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if a_sparse and not b_sparse:  # dense first, as TF's kernels take them
        a, b, a_sparse, b_sparse = b, a, False, True
        operation = _TURNED.get(operation, operation)
    with graph_lib.name_scope(name, "set_op", [a, b]):
        if a_sparse:
            if a.values.dtype != b.values.dtype:
                raise TypeError(f"Types don't match, {a.values.dtype} vs {b.values.dtype}.")
            out = apply_op("SparseToSparseSetOperation", set1_indices=a.indices,
                           set1_values=a.values, set1_shape=a.dense_shape,
                           set2_indices=b.indices, set2_values=b.values,
                           set2_shape=b.dense_shape, set_operation=operation,
                           validate_indices=validate_indices)
        elif b_sparse:
            a = convert_to_tensor(a, dtype=b.values.dtype, name="a")
            out = apply_op("DenseToSparseSetOperation", set1=a, set2_indices=b.indices,
                           set2_values=b.values, set2_shape=b.dense_shape,
                           set_operation=operation, validate_indices=validate_indices)
        else:
            a = convert_to_tensor(a, name="a")
            b = convert_to_tensor(b, dtype=a.dtype, name="b")
            out = apply_op("DenseToDenseSetOperation", set1=a, set2=b,
                           set_operation=operation, validate_indices=validate_indices)
        return SparseTensor(*out)


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
    a = _sparse_or_not(a)
    if not isinstance(a, SparseTensor):
        raise TypeError("Expected `SparseTensor`, got dense tensor.")
    with graph_lib.name_scope(None, "set_size", [a]):
        return apply_op("SetSize", set_indices=a.indices, set_values=a.values,
                        set_shape=a.dense_shape, validate_indices=validate_indices)


