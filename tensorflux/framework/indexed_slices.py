"""tf.IndexedSlices: a sparse set of rows of a dense tensor (the gradient of a Gather).

`values[i]` is row `indices[i]` of a tensor of shape `dense_shape`. Repeated indices mean
their rows are summed. Gradients of Gather and ResourceGather are IndexedSlices so an
optimizer can update only the rows that were looked up; they become dense only when a
consumer needs a Tensor.
"""

from __future__ import annotations

import collections

import numpy as np

from tensorflux.framework import (
    common_shapes,
    dtypes,
    nested_structure_coder,
    session_run_conversions,
    tensor_shape,
    type_spec,
)
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.protos import struct_pb2

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])


class IndexedSlices:
    """Rows `indices` of a tensor of shape `dense_shape`, with values `values`."""

    _is_indexed_slices = True

    def __init__(self, values: Tensor, indices: Tensor, dense_shape: Tensor | None = None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    name = property(lambda self: self._values.name)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._values.graph)
    op = property(lambda self: self._values.op)
    device = property(lambda self: self._values.device)

    @property
    def shape(self):
        if self._dense_shape is None:
            return tensor_shape.unknown_shape()
        return common_shapes.constant_value_as_shape(self._dense_shape)

    def get_shape(self):
        return self.shape

    @property
    def _type_spec(self) -> IndexedSlicesSpec:
        """The dense shape: [rows] + the values' row shape, merged with `dense_shape`'s
        static value; the number of slices from `indices` and `values`."""
        indices_shape = self._indices.shape.merge_with(self._values.shape[:1])
        shape = tensor_shape.TensorShape([None]).concatenate(self._values.shape[1:])
        dense_dtype = None
        if self._dense_shape is not None:
            dense_dtype = self._dense_shape.dtype
            shape = shape.merge_with(common_shapes.constant_value_as_shape(self._dense_shape))
        return IndexedSlicesSpec(shape, self.dtype, self._indices.dtype, dense_dtype,
                                 indices_shape)

    def _map_values(self, fn) -> IndexedSlices:
        return IndexedSlices(fn(self._values), self._indices, self._dense_shape)

    def __neg__(self) -> IndexedSlices:
        return self._map_values(lambda v: -v)

    def __repr__(self) -> str:
        shape = f", dense_shape={self._dense_shape}" if self._dense_shape is not None else ""
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"


class IndexedSlicesSpec(type_spec.TypeSpec):
    """The type of a `tf.IndexedSlices`: the dense shape, the dtypes of values, indices and
    dense_shape (None: it has no dense_shape tensor) and the shape of `indices` ([slices])."""

    __slots__ = ("_shape", "_values_dtype", "_indices_dtype", "_dense_shape_dtype",
                 "_indices_shape")

    def __init__(self, shape=None, dtype=dtypes.float32, indices_dtype=dtypes.int64,
                 dense_shape_dtype=None, indices_shape=None):
        self._shape = tensor_shape.as_shape(shape)
        self._values_dtype = dtypes.as_dtype(dtype)
        self._indices_dtype = dtypes.as_dtype(indices_dtype)
        self._dense_shape_dtype = None if dense_shape_dtype is None else \
            dtypes.as_dtype(dense_shape_dtype)
        self._indices_shape = tensor_shape.as_shape(indices_shape).with_rank(1)

    value_type = property(lambda self: IndexedSlices)

    def _serialize(self) -> tuple:
        return (self._shape, self._values_dtype, self._indices_dtype, self._dense_shape_dtype,
                self._indices_shape)

    @property
    def _component_specs(self):
        specs = [TensorSpec(self._indices_shape.concatenate(self._shape[1:]),
                            self._values_dtype),
                 TensorSpec(self._indices_shape, self._indices_dtype)]
        if self._dense_shape_dtype is not None:
            specs.append(TensorSpec([self._shape.ndims], self._dense_shape_dtype))
        return tuple(specs)

    def _to_components(self, value):
        if value.dense_shape is None:
            return (value.values, value.indices)
        return (value.values, value.indices, value.dense_shape)

    def _from_components(self, components):
        if all(isinstance(c, np.ndarray) for c in components):
            return IndexedSlicesValue(*components, *([None] * (3 - len(components))))
        return IndexedSlices(*components)


nested_structure_coder.register_type_spec(IndexedSlicesSpec,
                                          struct_pb2.TypeSpecProto.INDEXED_SLICES_SPEC)


def _fetch(value: IndexedSlices):
    parts = [value.values, value.indices]
    if value.dense_shape is not None:
        parts.append(value.dense_shape)
    return parts, lambda vals: IndexedSlicesValue(vals[0], vals[1],
                                                  vals[2] if len(vals) > 2 else None)


def _feed(key: IndexedSlices, value):
    pairs = [(key.values, value[0]), (key.indices, value[1])]
    if key.dense_shape is not None and len(value) > 2 and value[2] is not None:
        pairs.append((key.dense_shape, value[2]))
    return pairs


session_run_conversions.register_session_run_conversion_functions(IndexedSlices, _fetch, _feed)
