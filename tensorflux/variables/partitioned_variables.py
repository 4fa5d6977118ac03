"""Partitioned variables (paper §4.2): one logical variable stored as shards.

A partitioner is `fn(shape, dtype) -> [partitions per dimension]`, with more than one
partition along at most one axis. `tf.get_variable(..., partitioner=p)` (or a
`variable_scope(partitioner=p)`) then creates one Variable per slice, named
"<name>/part_0", "<name>/part_1", ... (the first `shape[axis] % n` slices one row longer),
each remembering its place in the whole (`SaveSliceInfo`), and returns a
`PartitionedVariable`: iterable over its shards in offset order, convertible to one tensor
(`as_tensor()`: ConcatV2 of the shards), and accepted by `tf.nn.embedding_lookup`, which
gathers from each shard separately so gradients reach the shards as IndexedSlices.

The shards, not the PartitionedVariable, are what the collections hold (GLOBAL_VARIABLES,
TRAINABLE_VARIABLES), so `minimize()` updates each shard; optimizers also accept a
PartitionedVariable in `var_list` and use its shards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import (
    convert_to_tensor,
    register_tensor_conversion_function,
)
from tensorflux.ops import array_ops, joining_ops
from tensorflux.protos import variable_pb2
from tensorflux.variables import variables

# The TF1 public names of this module.
__all__ = ["fixed_size_partitioner", "variable_axis_size_partitioner",
           "min_max_variable_partitioner", "PartitionedVariable"]


# ------------------------------------------------------------------------------------------
# Partitioners


def fixed_size_partitioner(num_shards: int, axis: int = 0):
    """A partitioner making `num_shards` shards along `axis` (fewer if the axis is shorter)
    (`tf.fixed_size_partitioner`)."""
    def _partitioner(shape, **unused_args):
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, tensor_shape.dimension_value(shape[axis]))
        return partitions

    return _partitioner


def _element_size(dtype, bytes_per_string_element: int) -> int:
    dtype = dtypes.as_dtype(dtype)
    if dtype.base_dtype == dtypes.string:
        return bytes_per_string_element
    return dtype.size


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0,
                                   bytes_per_string_element: int = 16, max_shards=None):
    """A partitioner keeping each shard under `max_shard_bytes`, splitting along `axis`
    into at most `max_shards` shards (`tf.variable_axis_size_partitioner`).

    Raises:
      ValueError: a non-positive size or `max_shards`; (when called) a shape that is not a
        fully defined TensorShape.
    """
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError(
            "Both max_shard_bytes and bytes_per_string_element must be positive. Currently, "
            f"max_shard_bytes is {max_shard_bytes} and bytes_per_string_element is "
            f"{bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, tensor_shape.TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        element_size = _element_size(dtype, bytes_per_string_element)
        dims = shape.as_list()
        bytes_per_slice = 1.0 * (shape.num_elements() / dims[axis]) * element_size
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(1.0 * dims[axis] / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions = [1] * len(dims)
        partitions[axis] = axis_shards
        return partitions

    return _partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16):
    """A partitioner giving each shard at least `min_slice_size` bytes, with at most
    `max_partitions` shards along `axis` (`tf.min_max_variable_partitioner`)."""
    def _partitioner(shape, dtype):
        if axis >= len(shape):
            raise ValueError(f"Cannot partition variable along axis {axis} when shape is "
                             f"only {shape}")
        total_bytes = shape.num_elements() * _element_size(dtype, bytes_per_string_element)
        wanted = total_bytes / min_slice_size
        partitions = [1] * len(shape)
        partitions[axis] = max(1, min(tensor_shape.dimension_value(shape[axis]),
                                      max_partitions, int(math.ceil(wanted))))
        return partitions

    return _partitioner


# ------------------------------------------------------------------------------------------
# Slicing a shape, checking a partitioner's answer


class PartitionInfo:
    """Where a shard lies in the full variable; initializers receive it as
    `partition_info` (Glorot/VarianceScaling use `full_shape` for their fans)."""

    __slots__ = ("full_shape", "var_offset")

    def __init__(self, full_shape: Sequence[int], var_offset: Sequence[int]):
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)

    def single_offset(self, shape) -> int:
        return self.var_offset[self.single_slice_dim(shape)]

    def single_slice_dim(self, shape) -> int:
        for i, (full, part) in enumerate(zip(self.full_shape, shape, strict=True)):
            if full != part:
                return i
        return 0


class SaveSliceInfo:
    """A shard's place in its full variable (`tf.Variable.SaveSliceInfo`): what a
    checkpoint stores for it (`spec` is "full_shape offset,length:offset,length")."""

    __slots__ = ("full_name", "full_shape", "var_offset", "var_shape")

    def __init__(self, full_name=None, full_shape=None, var_offset=None, var_shape=None):
        self.full_name = full_name
        self.full_shape = full_shape
        self.var_offset = var_offset
        self.var_shape = var_shape

    @property
    def spec(self) -> str:
        full = " ".join(str(d) for d in self.full_shape) + " "
        parts = ":".join(f"{o},{s}" for o, s in zip(self.var_offset, self.var_shape,
                                                     strict=True))
        return full + parts

    def to_proto(self, export_scope=None):
        name = self.full_name
        if export_scope and name.startswith(export_scope.rstrip("/") + "/"):
            name = name[len(export_scope.rstrip("/")) + 1:]
        return variable_pb2.SaveSliceInfoDef(full_name=name, full_shape=self.full_shape,
                                             var_offset=self.var_offset,
                                             var_shape=self.var_shape)


if not hasattr(variables.Variable, "SaveSliceInfo"):
    variables.Variable.SaveSliceInfo = SaveSliceInfo  # TF1 spells it tf.Variable.SaveSliceInfo


def call_partitioner(partitioner, shape: tensor_shape.TensorShape, dtype) -> list[int]:
    """The partitioner's answer for `shape`, checked as TensorFlow checks it.

    Raises:
      ValueError: the shape is not fully defined or is a scalar; the answer is not a list
        of one positive count per dimension with at most one count above 1.
    """
    if not shape.is_fully_defined():
        raise ValueError("Shape of a new partitioned variable must be fully defined, but "
                         f"instead was {shape}.")
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, Sequence):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    if len(slicing) != shape.ndims:
        raise ValueError("Partitioner returned a partition list that does not match the "
                         f"Variable's rank: {slicing} vs. {shape}")
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, "
                         f"partitioning: {slicing}")
    return list(slicing)


def slice_dim_and_count(partitions: Sequence[int]) -> tuple[int, int]:
    """The axis that is split and into how many shards ((0, 1) when none is)."""
    for dim, count in enumerate(partitions):
        if count > 1:
            return dim, count
    return 0, 1


def iter_slices(full_shape: list[int], num_slices: int, slice_dim: int):
    """(offset, shape) of each shard: the first `full % n` shards one row longer."""
    excess = full_shape[slice_dim] % num_slices
    offset = [0] * len(full_shape)
    base = full_shape[slice_dim] // num_slices
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = base + (1 if i < excess else 0)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]


# ------------------------------------------------------------------------------------------
# PartitionedVariable


class PartitionedVariable:
    """A variable stored as shards along one axis (`tf.PartitionedVariable`).

    Args:
      name: the full variable's name ("scope/w").
      shape: its full shape.
      dtype: its dtype.
      variable_list: the shard Variables, each with a SaveSliceInfo.
      partitions: the number of shards per dimension.

    Raises:
      TypeError: `variable_list` or `partitions` is not a list.
      ValueError: empty or inconsistent shards, or non-positive partitions.
    """

    def __init__(self, name, shape, dtype, variable_list, partitions):
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"partitions is not a list or tuple: {partitions}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {partitions}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        shape = tensor_shape.as_shape(shape)
        if not all(v._get_save_slice_info() is not None for v in variable_list):
            raise ValueError("All variables must have a save_slice_info available: "
                             f"{[v.name for v in variable_list]}")
        if len(shape) != len(partitions):
            raise ValueError(f"len(shape) != len(partitions): {shape} vs. {partitions}")
        for v in variable_list:
            if v._get_save_slice_info().full_shape != shape.as_list():
                raise ValueError(f"All variables' full shapes must match shape: {shape}; but "
                                 f"full shapes were: {v._get_save_slice_info().full_shape}")
        self._variable_list = sorted(variable_list,
                                     key=lambda v: v._get_save_slice_info().var_offset)
        self._name = name
        self._shape = shape
        self._dtype = dtypes.as_dtype(dtype)
        self._partitions = list(partitions)

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self) -> int:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise ValueError(f"Cannot get a length for {len(axes)} > 1 partition axes")
        return len(self._variable_list)

    def _partition_axes(self) -> list[int]:
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._variable_list[0].graph)

    def get_shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def _get_variable_list(self) -> list:
        return list(self._variable_list)

    def _get_partitions(self) -> list[int]:
        return list(self._partitions)

    def _concat(self):
        g = self._variable_list[0].graph
        if len(self._variable_list) == 1:
            with g.as_default(), graph_lib.name_scope(None):
                return array_ops.identity(self._variable_list[0], name=self._name)
        axis = self._partition_axes()[0]
        with g.as_default(), graph_lib.name_scope(self._name + "/ConcatPartitions/"):
            concatenated = joining_ops.concat(list(self._variable_list), axis)
        with g.as_default(), graph_lib.name_scope(None):
            return array_ops.identity(concatenated, name=self._name)

    def as_tensor(self):
        """The full value: the shards concatenated along the partitioned axis."""
        with self._variable_list[0].graph.control_dependencies(None):
            return self._concat()

    def _apply_assign_fn(self, assign_fn, value):
        if isinstance(value, (list, tuple)) and len(value) == len(self._variable_list):
            parts = list(value)
        elif isinstance(value, PartitionedVariable):
            parts = list(value)
        else:
            if not isinstance(value, Tensor):  # Python/NumPy values take the variable's dtype
                value = convert_to_tensor(value, dtype=self._dtype)
            axis = self._partition_axes()[0]
            sizes = [tensor_shape.dimension_value(v.shape[axis]) for v in self._variable_list]
            parts = joining_ops.split(value, sizes, axis=axis)
        return [assign_fn(v, part) for v, part in zip(self._variable_list, parts,
                                                       strict=True)]

    def assign(self, value, use_locking=False, name=None, read_value=True) -> list:
        """Assigns each shard its slice of `value`; a list with one result per shard."""
        return self._apply_assign_fn(
            lambda v, x: v.assign(x, use_locking=use_locking, name=name,
                                  read_value=read_value), value)

    def assign_add(self, value, use_locking=False, name=None, read_value=True) -> list:
        return self._apply_assign_fn(
            lambda v, x: v.assign_add(x, use_locking=use_locking, name=name,
                                      read_value=read_value), value)

    def assign_sub(self, value, use_locking=False, name=None, read_value=True) -> list:
        return self._apply_assign_fn(
            lambda v, x: v.assign_sub(x, use_locking=use_locking, name=name,
                                      read_value=read_value), value)

    def __repr__(self) -> str:
        return (f"<tf.PartitionedVariable '{self._name}' shape={self._shape} "
                f"dtype={self._dtype.name} partitions={self._partitions}>")


def _to_tensor(v: PartitionedVariable, dtype=None, name=None, as_ref=False):
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(v.dtype):
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"'{dtypes.as_dtype(dtype).name}' for variable of type "
                         f"'{v.dtype.name}'")
    if as_ref:
        raise NotImplementedError("PartitionedVariable doesn't support being used as a "
                                  "reference.")
    return v.as_tensor()


register_tensor_conversion_function(PartitionedVariable, _to_tensor)


def flatten_variables(var_list) -> list:
    """`var_list` with each PartitionedVariable replaced by its shards."""
    out = []
    for v in var_list:
        if isinstance(v, PartitionedVariable):
            out.extend(v)
        else:
            out.append(v)
    return out
