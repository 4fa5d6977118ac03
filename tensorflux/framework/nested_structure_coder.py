"""Nested structures of specs as `StructuredValue` protos (TensorFlow's
nested_structure_coder): what a SavedModel's TensorInfo records for a composite tensor
(`composite_tensor.type_spec`, a TypeSpecProto).

Encoded: None, bools, ints, floats, strings, lists, tuples, namedtuples, dicts (string
keys), TensorShapes, DTypes, TensorSpecs and the TypeSpecs registered here with their
TypeSpecProto class (their state, `_serialize()`, encoded recursively). Decoding gives the
same values back (namedtuples as namedtuple classes of the recorded name and fields).
"""

from __future__ import annotations

import collections

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.tensor_spec import TensorSpec
from tensorflux.framework.type_spec import TypeSpec
from tensorflux.protos import struct_pb2

__all__ = ["encode_structure", "decode_proto", "can_encode", "register_type_spec",
           "flat_components"]

_CLASSES: dict[type, int] = {}  # TypeSpec class -> TypeSpecProto.TypeSpecClass
_BY_ENUM: dict[int, type] = {}


def register_type_spec(cls: type, type_spec_class: int) -> None:
    """`cls` (a TypeSpec subclass) is encoded as TypeSpecProto class `type_spec_class`."""
    _CLASSES[cls] = type_spec_class
    _BY_ENUM[type_spec_class] = cls


def flat_components(spec) -> list:
    """The TensorSpecs a value of `spec` is made of, composites expanded (the count is
    TypeSpecProto's `num_flat_components`)."""
    if isinstance(spec, TensorSpec):
        return [spec]
    if isinstance(spec, TypeSpec):
        return flat_components(spec._component_specs)
    if isinstance(spec, dict):
        return [c for k in sorted(spec) for c in flat_components(spec[k])]
    if isinstance(spec, (list, tuple)):
        return [c for s in spec for c in flat_components(s)]
    return [spec]


def can_encode(value) -> bool:
    try:
        encode_structure(value)
    except NotImplementedError:
        return False
    return True


def encode_structure(value) -> struct_pb2.StructuredValue:
    """`value` as a StructuredValue.

    Raises:
      NotImplementedError: a value (or a part of it) of a type without an encoding.
    """
    out = struct_pb2.StructuredValue()
    if value is None:
        out.none_value.SetInParent()
    elif isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int64_value = value
    elif isinstance(value, float):
        out.float64_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, tensor_shape.TensorShape):
        out.tensor_shape_value.CopyFrom(value.as_proto())
    elif isinstance(value, dtypes.DType):
        out.tensor_dtype_value = value.as_datatype_enum
    elif isinstance(value, TensorSpec):
        out.tensor_spec_value.CopyFrom(struct_pb2.TensorSpecProto(
            name=value.name or "", shape=value.shape.as_proto(),
            dtype=value.dtype.as_datatype_enum))
    elif isinstance(value, TypeSpec):
        out.type_spec_value.CopyFrom(_encode_type_spec(value))
    elif isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise NotImplementedError(f"dict keys must be strings, got {k!r}")
            out.dict_value.fields[k].CopyFrom(encode_structure(value[k]))
    elif isinstance(value, tuple) and hasattr(value, "_fields"):
        out.named_tuple_value.name = type(value).__name__
        for k, v in zip(value._fields, value, strict=True):
            out.named_tuple_value.values.add(key=k, value=encode_structure(v))
    elif isinstance(value, (list, tuple)):
        target = out.list_value if isinstance(value, list) else out.tuple_value
        target.SetInParent()
        for v in value:
            target.values.add().CopyFrom(encode_structure(v))
    else:
        raise NotImplementedError(f"No encoder for object {value!r} of type "
                                  f"{type(value)}.")
    return out


def _encode_type_spec(spec: TypeSpec) -> struct_pb2.TypeSpecProto:
    cls = _CLASSES.get(type(spec))
    if cls is None:
        raise NotImplementedError(f"No encoder for TypeSpec {spec!r}: {type(spec).__name__} "
                                  f"is not registered.")
    return struct_pb2.TypeSpecProto(
        type_spec_class=cls, type_state=encode_structure(spec._serialize()),
        type_spec_class_name=type(spec).__name__,
        num_flat_components=len(flat_components(spec)))


def decode_proto(proto: struct_pb2.StructuredValue):
    """The value a StructuredValue encodes.

    Raises:
      ValueError: an encoding this module does not know.
    """
    kind = proto.WhichOneof("kind")
    if kind == "none_value":
        return None
    if kind in ("bool_value", "int64_value", "float64_value", "string_value"):
        return getattr(proto, kind)
    if kind == "tensor_shape_value":
        return tensor_shape.TensorShape(proto.tensor_shape_value)
    if kind == "tensor_dtype_value":
        return dtypes.as_dtype(proto.tensor_dtype_value)
    if kind == "tensor_spec_value":
        p = proto.tensor_spec_value
        return TensorSpec(tensor_shape.TensorShape(p.shape), dtypes.as_dtype(p.dtype),
                          p.name or None)
    if kind == "type_spec_value":
        p = proto.type_spec_value
        cls = _BY_ENUM.get(p.type_spec_class)
        if cls is None:
            raise ValueError(f"The TypeSpec class {p.type_spec_class_name!r} "
                             f"({p.type_spec_class}) is not supported.")
        return cls._deserialize(decode_proto(p.type_state))
    if kind == "dict_value":
        return {k: decode_proto(v) for k, v in proto.dict_value.fields.items()}
    if kind == "named_tuple_value":
        p = proto.named_tuple_value
        cls = collections.namedtuple(p.name, [pair.key for pair in p.values])
        return cls(*[decode_proto(pair.value) for pair in p.values])
    if kind in ("list_value", "tuple_value"):
        items = [decode_proto(v) for v in getattr(proto, kind).values]
        return items if kind == "list_value" else tuple(items)
    raise ValueError(f"Cannot decode a StructuredValue of kind {kind!r}.")
