"""tf.TypeSpec: the type of a value TensorFlow APIs take or give (a Tensor, a SparseTensor,
a RaggedTensor, a Dataset, ...), without the value.

A spec is described by its state, `_serialize()`: a tuple of TensorShapes, DTypes, nested
specs, plain Python values and (nested) tuples, lists and dicts of them. Everything generic
is defined on that state, the way TensorFlow defines it:

- equality and hashing: the same class and equal states;
- `is_compatible_with(other)`: the same class, and states that agree where shapes and
  dtypes are compatible and everything else is equal;
- `is_subtype_of(other)` / `most_specific_common_supertype(others)` (TF2's trace types):
  shapes, dtypes and nested specs by their own order, everything else equal;
- `repr`: the class name and the state tuple.

Values and specs are tied together by each value class's `_type_spec` property
(SparseTensor, RaggedTensor, IndexedSlices, datasets, Optionals) or by a converter
registered here (NumPy arrays, SparseTensorValue, RaggedTensorValue, None, TensorArray):
`type_spec_from_value` tries those, then the value as a constant.

A composite value splits into its components (`_to_components` / `_from_components`, whose
types are `_component_specs`); tf.data carries a value as `_flat_tensor_specs` (variants
for composites), batches specs with `_batch` / `_unbatch`, and reads the TF1
`output_types` / `output_shapes` / `output_classes` from the `_to_legacy_output_*` methods.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape, tensor_util
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__ = ["TypeSpec", "NoneTensorSpec", "type_spec_from_value"]


class TypeSpec:
    """The type of a TensorFlow value (abstract: subclasses give `value_type` and
    `_serialize`)."""

    __slots__ = ()

    # ---- what a subclass defines ------------------------------------------------------------
    @property
    def value_type(self):
        """The Python class of the values of this type."""
        raise NotImplementedError(f"{type(self).__name__}.value_type")

    def _serialize(self) -> tuple:
        """The spec's state: the arguments that rebuild it."""
        raise NotImplementedError(f"{type(self).__name__}._serialize")

    @classmethod
    def _deserialize(cls, state: tuple) -> TypeSpec:
        return cls(*state)

    # ---- order and comparison -----------------------------------------------------------
    def is_compatible_with(self, spec_or_value) -> bool:
        """Whether `spec_or_value` (a spec, or a value whose spec is taken) is of a type
        compatible with this one: the same kind, shapes and dtypes compatible, the rest
        equal."""
        other = spec_or_value if isinstance(spec_or_value, TypeSpec) else \
            type_spec_from_value(spec_or_value)
        return type(self) is type(other) and \
            _compatible(self._serialize(), other._serialize())

    def is_subtype_of(self, other) -> bool:
        """Whether every value of this type is also of type `other`."""
        return type(self) is type(other) and _subtype(self._serialize(), other._serialize())

    def most_specific_common_supertype(self, others) -> TypeSpec | None:
        """The most specific spec that this one and each of `others` are subtypes of, or None
        when there is none (another kind, a dtype or a plain attribute differs)."""
        others = list(others)
        if any(type(self) is not type(o) for o in others):
            return None
        state = _supertype(self._serialize(), [o._serialize() for o in others])
        return None if state is _NONE else self._deserialize(state)

    def most_specific_compatible_type(self, other: TypeSpec) -> TypeSpec:
        """The most specific spec compatible with both this one and `other` (TF1's name of
        `most_specific_common_supertype`).

        Raises:
          ValueError: there is none.
        """
        result = self.most_specific_common_supertype([other])
        if result is None:
            raise ValueError(f"No TypeSpec is compatible with both {self} and {other}")
        return result

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and _key(self._serialize()) == _key(other._serialize())

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self), _key(self._serialize())))

    def __reduce__(self):
        return type(self), self._serialize()

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self._serialize()!r}"

    # ---- components (composite values) and tf.data ----------------------------------------
    @property
    def _component_specs(self):
        """The specs of the tensors a value of this type is made of (a structure)."""
        raise NotImplementedError(f"{type(self).__name__}._component_specs")

    def _to_components(self, value):
        raise NotImplementedError(f"{type(self).__name__}._to_components")

    def _from_components(self, components):
        raise NotImplementedError(f"{type(self).__name__}._from_components")

    @property
    def _flat_tensor_specs(self) -> list:
        """The tensors tf.data carries a value of this type as (TensorSpecs)."""
        raise NotImplementedError(f"{type(self).__name__}._flat_tensor_specs")

    def _batch(self, batch_size) -> TypeSpec:
        """The type of `batch_size` values of this type stacked (None: unknown)."""
        raise NotImplementedError(f"{type(self).__name__} values cannot be batched")

    def _unbatch(self) -> TypeSpec:
        """The type of the rows of a value of this type."""
        raise NotImplementedError(f"{type(self).__name__} values cannot be unbatched")

    _batchable = False

    def _to_legacy_output_types(self):
        return self

    def _to_legacy_output_shapes(self):
        return self

    def _to_legacy_output_classes(self):
        return self


# ---- the generic order on states ------------------------------------------------------------

_NONE = object()  # "no supertype" inside `_supertype` (None is a legitimate state value)


def _same_container(a, b) -> bool:
    """Whether `a` and `b` are containers of one kind (namedtuples: the same name and
    fields, as TensorFlow's nest compares them)."""
    if type(a) is type(b):
        return True
    fields = getattr(a, "_fields", None)
    return fields is not None and fields == getattr(b, "_fields", None) and \
        type(a).__name__ == type(b).__name__


def _pairs(a, b):
    """The children of containers `a` and `b` side by side, or None when their shapes
    (length, keys) differ."""
    if isinstance(a, dict):
        if sorted(a, key=str) != sorted(b, key=str):
            return None
        return [(a[k], b[k]) for k in sorted(a, key=str)]
    if len(a) != len(b):
        return None
    return list(zip(a, b, strict=True))


def _compatible(a, b) -> bool:
    if isinstance(a, TypeSpec):
        return a.is_compatible_with(b)
    if not _same_container(a, b):
        return False
    if isinstance(a, (list, tuple, dict)):
        pairs = _pairs(a, b)
        return pairs is not None and all(_compatible(x, y) for x, y in pairs)
    if isinstance(a, (tensor_shape.TensorShape, dtypes.DType)):
        return a.is_compatible_with(b)
    return a == b


def _subtype(a, b) -> bool:
    if isinstance(a, (TypeSpec, tensor_shape.TensorShape, dtypes.DType)):
        return a.is_subtype_of(b)
    if not _same_container(a, b):
        return False
    if isinstance(a, (list, tuple, dict)):
        pairs = _pairs(a, b)
        return pairs is not None and all(_subtype(x, y) for x, y in pairs)
    return a == b


def _supertype(a, others: list):
    """The common supertype of states `a` and `others`, or _NONE."""
    if isinstance(a, (TypeSpec, tensor_shape.TensorShape, dtypes.DType)):
        out = a.most_specific_common_supertype(others)
        return _NONE if out is None else out
    if isinstance(a, (list, tuple, dict)):
        columns = []
        for o in others:
            pairs = _pairs(a, o) if _same_container(a, o) else None
            if pairs is None:
                return _NONE
            columns.append([y for _, y in pairs])
        keys = sorted(a, key=str) if isinstance(a, dict) else None
        mine = [a[k] for k in keys] if keys is not None else list(a)
        merged = []
        for i, x in enumerate(mine):
            m = _supertype(x, [col[i] for col in columns])
            if m is _NONE:
                return _NONE
            merged.append(m)
        if keys is not None:
            return type(a)(zip(keys, merged, strict=True))
        return type(a)(*merged) if hasattr(a, "_fields") else type(a)(merged)
    return a if all(a == o for o in others) else _NONE


def _key(state):
    """A hashable key of a state (lists and dicts as tuples, arrays by value)."""
    if isinstance(state, dict):
        return (dict, tuple((k, _key(state[k])) for k in sorted(state, key=str)))
    if isinstance(state, tuple):
        return tuple(_key(v) for v in state)
    if isinstance(state, list):
        return (list, tuple(_key(v) for v in state))
    if isinstance(state, np.ndarray):
        return (np.ndarray, state.shape, state.tobytes())
    return state


# ---- None as a value ------------------------------------------------------------------------


class NoneTensor:
    """The value a NoneTensorSpec describes: None inside a composite value."""

    __slots__ = ()


class NoneTensorSpec(TypeSpec):
    """The type of None (`tf.NoneTensorSpec`): no components."""

    __slots__ = ()
    _batchable = True

    @property
    def value_type(self):
        return NoneTensor

    def _serialize(self) -> tuple:
        return ()

    @staticmethod
    def from_value(value) -> NoneTensorSpec:
        return NoneTensorSpec()

    _component_specs = property(lambda self: [])

    def _to_components(self, value):
        return []

    def _from_components(self, components):
        return None

    _flat_tensor_specs = property(lambda self: [])

    def _batch(self, batch_size) -> NoneTensorSpec:
        return self

    def _unbatch(self) -> NoneTensorSpec:
        return self


# ---- from a value ---------------------------------------------------------------------------

_CONVERTERS: list = []  # (type, fn(value) -> TypeSpec, allow_subclass), newest last


def register_type_spec_from_value_converter(type_object, converter_fn,
                                            allow_subclass: bool = False) -> None:
    """`type_spec_from_value` gives `converter_fn(value)` for values of `type_object`
    (exactly that type unless `allow_subclass`); the newest registration wins."""
    _CONVERTERS.append((type_object, converter_fn, allow_subclass))


register_type_spec_from_value_converter(type(None), NoneTensorSpec.from_value)


def _registered_spec(value):
    from tensorflux.framework.tensor_spec import TensorSpec  # tensor_spec imports this module

    if isinstance(value, Tensor):
        return TensorSpec(value.shape, value.dtype)
    spec = getattr(type(value), "_type_spec", None)
    if spec is not None and not isinstance(value, type):
        return value._type_spec
    if isinstance(value, list) and value:
        parts = [_registered_spec(v) for v in value]
        if parts[0] is not None and parts[0]._batchable and \
                all(p is not None for p in parts):
            merged = parts[0].most_specific_common_supertype(parts[1:])
            if merged is not None:
                return merged._batch(len(parts))
    for type_object, fn, allow_subclass in reversed(_CONVERTERS):
        if type(value) is type_object or (allow_subclass and isinstance(value, type_object)):
            return fn(value)
    return None


def constant_spec(value) -> TypeSpec:
    """The TensorSpec of the constant `tf.constant(value)` would make (no op is made).

    Raises:
      TypeError, ValueError: `value` is no constant.
    """
    from tensorflux.framework.tensor_spec import TensorSpec  # tensor_spec imports this module

    proto = tensor_util.make_tensor_proto(value)
    return TensorSpec(tensor_shape.TensorShape(proto.tensor_shape),
                      dtypes.as_dtype(proto.dtype))


def type_spec_from_value(value) -> TypeSpec:
    """The TypeSpec of `value`: a Tensor, a composite value (SparseTensor, RaggedTensor,
    IndexedSlices, TensorArray, Dataset, Optional), a NumPy array, None, or anything
    `tf.convert_to_tensor` takes (lists of equally typed values give the batched type).

    Raises:
      TypeError: no TypeSpec can be built for `value`.
    """
    spec = _registered_spec(value)
    if spec is not None:
        return spec
    if isinstance(value, (list, tuple, int, float, complex, bool, str, bytes, np.generic)):
        try:
            return constant_spec(value)  # a constant's type, without a Const in the graph
        except (TypeError, ValueError, NotImplementedError):  # e.g. a list of tensors
            pass
    try:
        spec = _registered_spec(convert_to_tensor(value))
        if spec is not None:
            return spec
    except (TypeError, ValueError):
        pass
    raise TypeError(f"Could not build a TypeSpec for {value} of unsupported type "
                    f"{type(value)}.")
