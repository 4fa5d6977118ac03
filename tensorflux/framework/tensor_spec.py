"""tf.TensorSpec: the type of a dense Tensor (static shape, dtype and an optional name).

The name takes part in equality but not in compatibility nor in the hash; a common
supertype exists only for specs of one name (TensorFlow's rules).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape, type_spec
from tensorflux.framework.operation import Tensor

__all__ = ["TensorSpec"]


class TensorSpec(type_spec.TypeSpec):
    """The type of a `tf.Tensor`: `TensorSpec(shape, dtype=tf.float32, name=None)`."""

    __slots__ = ("_shape", "_dtype", "_name")
    _batchable = True

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        """Args:
          shape: anything `tf.TensorShape` takes.
          dtype: anything `tf.as_dtype` takes.
          name: an optional name for the tensor.

        Raises:
          TypeError: `shape` or `dtype` cannot be converted.
        """
        self._shape = tensor_shape.TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape, doc="The TensorShape of the tensor.")
    dtype = property(lambda self: self._dtype, doc="The DType of the tensor's elements.")
    name = property(lambda self: self._name, doc="The tensor's name, if given.")

    @property
    def value_type(self):
        return Tensor

    @classmethod
    def from_spec(cls, spec, name=None) -> TensorSpec:
        """A TensorSpec of `spec`'s shape and dtype, named `name` (default `spec.name`)."""
        return cls(spec.shape, spec.dtype, name or getattr(spec, "name", None))

    @classmethod
    def from_tensor(cls, tensor, name=None) -> TensorSpec:
        """The spec of `tensor`, named `name` (default: the name of its op).

        Raises:
          ValueError: `tensor` is not a Tensor.
        """
        if not isinstance(tensor, Tensor):
            raise ValueError(f"`tensor` should be a tf.Tensor, but got type "
                             f"{type(tensor)}.")
        return cls(tensor.shape, tensor.dtype, name or tensor.op.name)

    def is_compatible_with(self, spec_or_tensor) -> bool:
        """True for a TensorSpec or Tensor of a compatible dtype and shape (names aside)."""
        return isinstance(spec_or_tensor, (TensorSpec, Tensor)) and \
            self._dtype.is_compatible_with(spec_or_tensor.dtype) and \
            self._shape.is_compatible_with(spec_or_tensor.shape)

    def is_subtype_of(self, other) -> bool:
        return isinstance(other, TensorSpec) and \
            (not self._name or self._name == other._name) and \
            self._shape.is_subtype_of(other._shape) and self._dtype.is_subtype_of(other._dtype)

    def _serialize(self) -> tuple:
        return (self._shape, self._dtype, self._name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self._shape}, dtype={self._dtype!r}, " \
            f"name={self._name!r})"

    def __hash__(self) -> int:
        return hash((self._shape, self._dtype))

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self._shape == other._shape and \
            self._dtype == other._dtype and self._name == other._name

    __ne__ = type_spec.TypeSpec.__ne__

    # ---- components and tf.data ---------------------------------------------------------
    _component_specs = property(lambda self: self)

    def _to_components(self, value):
        return value

    def _from_components(self, components):
        return components

    _flat_tensor_specs = property(lambda self: [self])

    def _batch(self, batch_size) -> TensorSpec:
        return TensorSpec(tensor_shape.TensorShape([batch_size]).concatenate(self._shape),
                          self._dtype)

    def _unbatch(self) -> TensorSpec:
        if self._shape.ndims == 0:
            raise ValueError("Unbatching a tensor is only supported for rank >= 1")
        return TensorSpec(self._shape[1:], self._dtype)

    def _to_legacy_output_types(self):
        return self._dtype

    def _to_legacy_output_shapes(self):
        return self._shape

    def _to_legacy_output_classes(self):
        return Tensor


type_spec.register_type_spec_from_value_converter(
    np.ndarray, lambda array: TensorSpec(array.shape, array.dtype))
