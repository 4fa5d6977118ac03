"""tf.SparseTensor: a sparse tensor as three dense tensors (indices, values, dense_shape).

`indices` is int64 [N, rank], `values` [N], `dense_shape` int64 [rank]. Session.run fetches
a SparseTensor as a `SparseTensorValue` and accepts one (or a (indices, values, shape)
tuple) as the feed for a SparseTensor (e.g. a `tf.sparse_placeholder`).
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
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import run_in_session
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.protos import struct_pb2

SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])


class SparseTensor:
    """A sparse tensor: `values[i]` is the element at `indices[i]` of a `dense_shape` tensor."""

    _is_sparse_tensor = True

    def __init__(self, indices, values, dense_shape):
        """Builds a SparseTensor from its three parts (tensors or Python/NumPy values).

        Raises:
          ValueError: the parts' static shapes are inconsistent.
        """
        with graph_lib.name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            self._indices = convert_to_tensor(indices, dtype=dtypes.int64, name="indices")
            self._values = convert_to_tensor(values, name="values")
            self._dense_shape = convert_to_tensor(dense_shape, dtype=dtypes.int64,
                                                  name="dense_shape")
        ishape = self._indices.shape.with_rank(2)
        self._values.shape.with_rank(1).assert_is_compatible_with(ishape[:1])
        self._dense_shape.shape.with_rank(1).assert_is_compatible_with(ishape[1:])
        self._shape_hint: tensor_shape.TensorShape | None = None

    @classmethod
    def from_value(cls, value) -> SparseTensor:
        if isinstance(value, SparseTensor):
            return value
        return cls(value.indices, value.values, value.dense_shape)

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._indices.graph)

    @property
    def shape(self) -> tensor_shape.TensorShape:
        shape = common_shapes.constant_value_as_shape(self._dense_shape)
        return shape if self._shape_hint is None else shape.merge_with(self._shape_hint)

    def set_shape(self, shape) -> None:
        """Updates the static dense shape (TensorFlow's SparseTensor.set_shape).

        Raises:
          ValueError: `shape` is not compatible with the current static shape.
        """
        self._shape_hint = self.shape.merge_with(tensor_shape.as_shape(shape))

    def get_shape(self) -> tensor_shape.TensorShape:
        return self.shape

    @property
    def _type_spec(self) -> SparseTensorSpec:
        return SparseTensorSpec(self.shape, self.dtype)

    def eval(self, feed_dict=None, session=None):
        return run_in_session(self, feed_dict, session)

    def _map_values(self, fn) -> SparseTensor:
        return SparseTensor(self._indices, fn(self._values), self._dense_shape)

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices}, values={self._values}, "
                f"dense_shape={self._dense_shape})")


class SparseTensorSpec(type_spec.TypeSpec):
    """The type of a `tf.SparseTensor`: its dense shape (None: any) and values' dtype."""

    __slots__ = ("_shape", "_dtype")
    _batchable = True

    def __init__(self, shape=None, dtype=dtypes.float32):
        self._shape = tensor_shape.as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)

    shape = property(lambda self: self._shape, doc="The dense shape.")
    dtype = property(lambda self: self._dtype, doc="The dtype of the values.")
    value_type = property(lambda self: SparseTensor)

    def _serialize(self) -> tuple:
        return (self._shape, self._dtype)

    @classmethod
    def from_value(cls, value) -> SparseTensorSpec:
        """The spec of a SparseTensor or SparseTensorValue.

        Raises:
          TypeError: `value` is neither.
        """
        if isinstance(value, SparseTensor):
            return cls(value.shape, value.dtype)
        if isinstance(value, SparseTensorValue):
            dtype = value.values.dtype if isinstance(value.values, np.ndarray) else \
                type_spec.constant_spec(value.values).dtype
            return cls(np.asarray(value.dense_shape).tolist(), dtype)
        raise TypeError(f"Expected SparseTensor or SparseTensorValue. Received: {value} of "
                        f"type {type(value).__name__}.")

    @property
    def _component_specs(self):
        rank = self._shape.ndims
        return [TensorSpec([None, rank], dtypes.int64), TensorSpec([None], self._dtype),
                TensorSpec([rank], dtypes.int64)]

    def _to_components(self, value):
        value = SparseTensor.from_value(value)
        return [value.indices, value.values, value.dense_shape]

    def _from_components(self, components):
        if all(isinstance(c, np.ndarray) for c in components):
            return SparseTensorValue(*components)
        out = SparseTensor(*components)
        out.set_shape(self._shape)
        return out

    _flat_tensor_specs = property(lambda self: [TensorSpec(None, dtypes.variant)])

    def _batch(self, batch_size) -> SparseTensorSpec:
        return SparseTensorSpec(
            tensor_shape.TensorShape([batch_size]).concatenate(self._shape), self._dtype)

    def _unbatch(self) -> SparseTensorSpec:
        if self._shape.ndims == 0:
            raise ValueError("Unbatching a tensor is only supported for rank >= 1")
        return SparseTensorSpec(self._shape[1:], self._dtype)

    def _to_legacy_output_types(self):
        return self._dtype

    def _to_legacy_output_shapes(self):
        return self._shape

    def _to_legacy_output_classes(self):
        return SparseTensor


type_spec.register_type_spec_from_value_converter(SparseTensorValue,
                                                  SparseTensorSpec.from_value)
nested_structure_coder.register_type_spec(SparseTensorSpec,
                                          struct_pb2.TypeSpecProto.SPARSE_TENSOR_SPEC)


def is_sparse(x) -> bool:
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError(f"Sparse dtype: requested = {dtypes.as_dtype(dtype).name}, "
                             f"actual = {value.dtype.name}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def _fetch(st: SparseTensor):
    return [st.indices, st.values, st.dense_shape], lambda v: SparseTensorValue(*v)


def _feed(st: SparseTensor, value):
    if isinstance(value, SparseTensorValue) or (isinstance(value, tuple) and len(value) == 3):
        indices, values, shape = value
    else:
        raise TypeError(f"The value fed to a SparseTensor must be a SparseTensorValue or an "
                        f"(indices, values, dense_shape) tuple, got {type(value).__name__}")
    return [(st.indices, np.asarray(indices, np.int64)), (st.values, values),
            (st.dense_shape, np.asarray(shape, np.int64))]


session_run_conversions.register_session_run_conversion_functions(SparseTensor, _fetch, _feed)
