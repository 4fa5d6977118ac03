"""`tf.RaggedTensorSpec`: the TypeSpec of a RaggedTensor (its shape with the ragged
dimensions None, dtype, ragged rank, row splits dtype), its components for tf.data and its
encoding in StructuredValue protos (nested_structure_coder)."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, nested_structure_coder, tensor_shape, type_spec
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.protos import struct_pb2
from tensorflux.ragged.ragged_tensor import RaggedTensor
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue

__all__ = ["RaggedTensorSpec"]


class RaggedTensorSpec(type_spec.TypeSpec):
    """The type of a `tf.RaggedTensor`: its shape (ragged dimensions None), dtype, ragged
    rank (default: rank - 1) and row splits dtype; `flat_values_spec` when the flat values
    are of a spec of their own. Ragged rank 0 describes a dense Tensor."""

    __slots__ = ("_shape", "_dtype", "_ragged_rank", "_row_splits_dtype",
                 "_flat_values_spec")
    _batchable = True

    def __init__(self, shape=None, dtype=dtypes.float32, ragged_rank=None,
                 row_splits_dtype=dtypes.int64, flat_values_spec=None):
        """Raises:
          ValueError: no ragged rank and no rank; a ragged rank not below the rank;
            `dtype` other than `flat_values_spec`'s.
          TypeError: `ragged_rank` is not an int.
        """
        self._shape = tensor_shape.as_shape(shape)
        self._row_splits_dtype = dtypes.as_dtype(row_splits_dtype)
        if flat_values_spec is not None:
            if dtype is None:
                dtype = flat_values_spec.dtype
            elif dtypes.as_dtype(dtype) != flat_values_spec.dtype:
                raise ValueError("dtype must be the same as flat_values_spec.dtype")
        elif dtype is None:
            raise ValueError("At least one of dtype or flat_values_spec must be provided")
        self._dtype = dtypes.as_dtype(dtype)
        self._flat_values_spec = flat_values_spec
        rank = self._shape.ndims
        if ragged_rank is None:
            if rank is None:
                raise ValueError("Must specify ragged_rank or a shape with a known rank.")
            ragged_rank = rank - 1
        if not isinstance(ragged_rank, int):
            raise TypeError(f"Argument `ragged_rank` must be an int. Received {ragged_rank}.")
        if rank is not None and ragged_rank >= rank:
            raise ValueError(f"Argument `ragged_rank` ({ragged_rank}) must be less than rank "
                             f"({rank}).")
        self._ragged_rank = ragged_rank

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ragged_rank = property(lambda self: self._ragged_rank)
    row_splits_dtype = property(lambda self: self._row_splits_dtype)
    flat_values_spec = property(lambda self: self._flat_values_spec)

    @property
    def value_type(self):
        return RaggedTensor if self._ragged_rank > 0 else Tensor

    def _serialize(self) -> tuple:
        state = (self._shape, self._dtype, self._ragged_rank, self._row_splits_dtype)
        return state if self._flat_values_spec is None else state + (self._flat_values_spec,)

    def is_compatible_with(self, spec_or_value) -> bool:
        """Ragged rank 0 is also compatible with Tensors and TensorSpecs."""
        if self._ragged_rank == 0 and isinstance(spec_or_value, (Tensor, TensorSpec)):
            inner = self._flat_values_spec or TensorSpec(self._shape, self._dtype)
            return inner.is_compatible_with(spec_or_value)
        return super().is_compatible_with(spec_or_value)

    @classmethod
    def from_value(cls, value) -> RaggedTensorSpec:
        """The spec of a RaggedTensor or RaggedTensorValue."""
        return cls(value.shape, value.dtype, value.ragged_rank, value.row_splits_dtype)

    # ---- components and tf.data ---------------------------------------------------------
    @property
    def _component_specs(self):
        if self._ragged_rank <= 0:
            return [self._flat_values_spec or TensorSpec(self._shape, self._dtype)]
        values = self._flat_values_spec or TensorSpec(
            tensor_shape.TensorShape([None]).concatenate(self._shape[self._ragged_rank + 1:]),
            self._dtype)
        outer = self._shape[0].value if self._shape.ndims else None
        return [values, TensorSpec([None if outer is None else outer + 1],
                                   self._row_splits_dtype)] + \
            [TensorSpec([None], self._row_splits_dtype)] * (self._ragged_rank - 1)

    def _to_components(self, value):
        if isinstance(value, (RaggedTensor, RaggedTensorValue)):
            return [value.flat_values] + list(value.nested_row_splits)
        return [value]

    def _from_components(self, components):
        result = components[0]
        if all(isinstance(c, np.ndarray) for c in components):
            for splits in reversed(components[1:]):
                result = RaggedTensorValue(result, splits)
            return result
        for splits in reversed(components[1:]):
            result = RaggedTensor.from_row_splits(result, splits, validate=False)
        if self._shape.ndims is not None:
            (result._set_shape if isinstance(result, RaggedTensor) else
             result.set_shape)(self._shape)
        return result

    _flat_tensor_specs = property(lambda self: [TensorSpec(None, dtypes.variant)])

    def _batch(self, batch_size) -> RaggedTensorSpec:
        return RaggedTensorSpec(tensor_shape.TensorShape([batch_size]).concatenate(self._shape),
                                self._dtype, self._ragged_rank + 1, self._row_splits_dtype)

    def _unbatch(self) -> RaggedTensorSpec:
        return RaggedTensorSpec(self._shape[1:], self._dtype, self._ragged_rank - 1,
                                self._row_splits_dtype)

    def _to_legacy_output_types(self):
        return self._dtype

    def _to_legacy_output_shapes(self):
        return self._shape


type_spec.register_type_spec_from_value_converter(RaggedTensorValue,
                                                  RaggedTensorSpec.from_value)
nested_structure_coder.register_type_spec(RaggedTensorSpec,
                                          struct_pb2.TypeSpecProto.RAGGED_TENSOR_SPEC)
