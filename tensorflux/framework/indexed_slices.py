"""tf.IndexedSlices: a sparse set of rows of a dense tensor (the gradient of a Gather).

`values[i]` is row `indices[i]` of a tensor of shape `dense_shape`. Repeated indices mean
their rows are summed. Gradients of Gather and ResourceGather are IndexedSlices so an
optimizer can update only the rows that were looked up; they become dense only when a
consumer needs a Tensor.
"""

from __future__ import annotations

import collections

from tensorflux.framework import common_shapes, session_run_conversions, tensor_shape
from tensorflux.framework.operation import Tensor

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

    def _map_values(self, fn) -> IndexedSlices:
        return IndexedSlices(fn(self._values), self._indices, self._dense_shape)

    def __neg__(self) -> IndexedSlices:
        return self._map_values(lambda v: -v)

    def __repr__(self) -> str:
        shape = f", dense_shape={self._dense_shape}" if self._dense_shape is not None else ""
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"


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
