"""Attribute values in their three forms: internal Python, TF-public Python, AttrValue proto.

Internally a node's attributes are plain Python: DType, TensorShape (or None for an unknown
shape), str, int, float, bool, NumPy arrays for tensors, and lists of these. `get_attr`
returns TensorFlow's public forms (bytes for strings, TensorShapeProto and TensorProto for
shapes and tensors), and GraphDef uses the AttrValue proto.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape, tensor_util
from tensorflux.protos import attr_value_pb2


def normalize(value, kind: str | None, name: str = "", op_type: str = ""):
    """Coerces a user-supplied attribute value to the internal form for `kind`.

    Raises:
      TypeError: the value is not of the kind the attribute needs.
    """
    if kind is None:
        return value
    if kind.startswith("list("):
        inner = kind[5:-1]
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"Expected list for attr {name}, obtained {type(value).__name__} "
                            "instead.")
        return [normalize(v, inner, name, op_type) for v in value]
    try:
        if kind == "type":
            return dtypes.as_dtype(value)
        if kind == "int":
            if isinstance(value, tensor_shape.Dimension) and value.value is not None:
                return int(value)  # TF1 takes `x.shape[1]` as an int (baselines' kfac)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                if isinstance(value, float) and value.is_integer():
                    return int(value)
                raise TypeError
            return int(value)
        if kind == "float":
            if not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
                raise TypeError
            return float(value)
        if kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError
            return bool(value)
        if kind == "string":
            if isinstance(value, bytes):
                return value.decode("utf-8", "surrogateescape")
            if not isinstance(value, str):
                raise TypeError
            return value
        if kind == "shape":
            if value is None:
                return None
            if hasattr(value, "unknown_rank") and hasattr(value, "dim"):
                return tensor_shape.TensorShape(value)
            return tensor_shape.as_shape(value)
        if kind == "tensor":
            if hasattr(value, "tensor_content"):
                return tensor_util.tensor_attr_value(value)
            if isinstance(value, tensor_util.DeferredTensor):
                return value
            return np.asarray(value)
    except TypeError:
        raise TypeError(f"Expected {kind} for argument '{name}' not {value!r}.") from None
    return value


def to_public(value, kind: str | None):
    """The value `Operation.get_attr` returns, as TensorFlow returns it."""
    if kind is not None and kind.startswith("list("):
        return [to_public(v, kind[5:-1]) for v in value]
    if isinstance(value, list):
        return [to_public(v, None) for v in value]
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if kind == "shape" or isinstance(value, tensor_shape.TensorShape):
        return tensor_shape.TensorShape(value).as_proto() if value is not None else \
            tensor_shape.unknown_shape().as_proto()
    if kind == "tensor" or isinstance(value, (np.ndarray, tensor_util.DeferredTensor)):
        return tensor_util.make_tensor_proto(value)
    return value


def to_proto(value, kind: str | None = None):
    """The AttrValue message for an internal-form `value` of attribute kind `kind`."""
    av = attr_value_pb2.AttrValue()
    if kind is None:
        kind = _infer_kind(value)
    if kind.startswith("list("):
        inner = kind[5:-1]
        lst = av.list
        lst.SetInParent()
        for v in value:
            _append_list(lst, inner, v)
        return av
    if kind == "type":
        av.type = dtypes.as_dtype(value).as_datatype_enum
    elif kind == "int":
        av.i = int(value)
    elif kind == "float":
        av.f = float(value)
    elif kind == "bool":
        av.b = bool(value)
    elif kind == "string":
        av.s = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    elif kind == "shape":
        shape = tensor_shape.unknown_shape() if value is None else \
            tensor_shape.as_shape(value)
        av.shape.CopyFrom(shape.as_proto())
    elif kind == "tensor":
        av.tensor.CopyFrom(tensor_util.make_tensor_proto(value))
    elif kind == "func":
        av.func.name = value if isinstance(value, str) else value.get("name", "")
    else:
        raise TypeError(f"Unsupported attr kind {kind!r}")
    return av


def _append_list(lst, inner: str, v) -> None:
    if inner == "type":
        lst.type.append(dtypes.as_dtype(v).as_datatype_enum)
    elif inner == "int":
        lst.i.append(int(v))
    elif inner == "float":
        lst.f.append(float(v))
    elif inner == "bool":
        lst.b.append(bool(v))
    elif inner == "string":
        lst.s.append(v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v)
    elif inner == "shape":
        lst.shape.add().CopyFrom(tensor_shape.as_shape(v).as_proto())
    elif inner == "tensor":
        lst.tensor.add().CopyFrom(tensor_util.make_tensor_proto(v))
    else:
        raise TypeError(f"Unsupported list attr kind {inner!r}")


def _infer_kind(value) -> str:
    if isinstance(value, list):
        return f"list({_infer_kind(value[0])})" if value else "list(int)"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, (str, bytes)):
        return "string"
    if isinstance(value, dtypes.DType):
        return "type"
    if isinstance(value, tensor_shape.TensorShape):
        return "shape"
    if isinstance(value, (np.ndarray, tensor_util.DeferredTensor)):
        return "tensor"
    raise TypeError(f"Cannot infer the attr kind of {value!r}")


def from_proto(av, kind: str | None = None):
    """The internal-form value of an AttrValue message (kind inferred from the set field)."""
    which = av.WhichOneof("value")
    if which == "list":
        lst = av.list
        for field, conv in (("s", _dec), ("i", int), ("f", float), ("b", bool),
                            ("type", dtypes.as_dtype), ("shape", _shape_from_proto),
                            ("tensor", _tensor_from_proto)):
            items = getattr(lst, field)
            if len(items):
                return [conv(x) for x in items]
        return []
    if which is None:
        return [] if kind and kind.startswith("list(") else None
    if which == "s":
        return _dec(av.s)
    if which == "type":
        return dtypes.as_dtype(av.type)
    if which == "shape":
        return _shape_from_proto(av.shape)
    if which == "tensor":
        return _tensor_from_proto(av.tensor)
    if which == "func":
        return av.func.name
    if which == "placeholder":
        raise ValueError(f"Attr placeholder '{av.placeholder}' is only valid in functions")
    return getattr(av, which)


def _dec(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _shape_from_proto(p):
    return tensor_shape.TensorShape(p)


def _tensor_from_proto(p):
    return tensor_util.tensor_attr_value(p)  # a large splat stays a proto until needed
