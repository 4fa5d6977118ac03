"""CPU kernels of DecodeProtoV2 and EncodeProto (tensorflux/ops/proto_ops.py), by reflection
with the protobuf runtime: each message parsed (or built) by the class its descriptor
makes, field by field."""

from __future__ import annotations

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.descriptor import FieldDescriptor as FD

from tensorflux.framework import dtypes, errors
from tensorflux.kernels.registry import kernel_factory
from tensorflux.protos import types_pb2

# field type -> the output dtypes a field of it may be read as (TensorFlow's choices)
_ALLOWED = {
    FD.TYPE_DOUBLE: ("float64",), FD.TYPE_FLOAT: ("float32", "float64"),
    FD.TYPE_INT64: ("int64",), FD.TYPE_SINT64: ("int64",), FD.TYPE_SFIXED64: ("int64",),
    FD.TYPE_UINT64: ("uint64", "int64"), FD.TYPE_FIXED64: ("uint64", "int64"),
    FD.TYPE_INT32: ("int32", "int64"), FD.TYPE_SINT32: ("int32", "int64"),
    FD.TYPE_SFIXED32: ("int32", "int64"), FD.TYPE_ENUM: ("int32", "int64"),
    FD.TYPE_UINT32: ("uint32", "int64"), FD.TYPE_FIXED32: ("uint32", "int64"),
    FD.TYPE_BOOL: ("bool",), FD.TYPE_STRING: ("string",), FD.TYPE_BYTES: ("string",),
    FD.TYPE_MESSAGE: ("string",), FD.TYPE_GROUP: ("string",),
}
_TYPE_NAMES = {v: k[5:].lower() for k, v in vars(FD).items()
               if k.startswith("TYPE_") and isinstance(v, int)}


def _invalid(text: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, text)


def _pool(source: str):
    if source == "local://":
        return descriptor_pool.Default()
    if source.startswith("bytes://"):
        data = source[len("bytes://"):].encode("latin-1")
    else:
        try:
            with open(source, "rb") as f:
                data = f.read()
        except OSError as e:
            raise errors.NotFoundError(None, None, f"descriptor_source {source}: {e}") \
                from None
    files = descriptor_pb2.FileDescriptorSet()
    try:
        files.ParseFromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError
        raise _invalid(f"Unable to parse descriptor_source {source} as a "
                       "FileDescriptorSet") from None
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return pool


def _message_class(attrs):
    name = attrs["message_type"]
    name = name.decode() if isinstance(name, bytes) else name
    source = attrs["descriptor_source"]
    pool = _pool(source.decode() if isinstance(source, bytes) else source)
    for candidate in (name, "tensorflux." + name[len("tensorflow."):]
                      if name.startswith("tensorflow.") else None):
        if candidate is None:
            continue
        try:
            return name, message_factory.GetMessageClass(pool.FindMessageTypeByName(candidate))
        except KeyError:
            continue
    raise _invalid(f"No descriptor found for message type {name}")


def _fields(name, cls, field_names, dtypes_):
    out = []
    for field_name, dtype in zip(field_names, dtypes_, strict=True):
        field_name = field_name.decode() if isinstance(field_name, bytes) else field_name
        field = cls.DESCRIPTOR.fields_by_name.get(field_name)
        if field is None:
            raise _invalid(f"Unknown field: {field_name} in message type {name}")
        if dtype.name not in _ALLOWED.get(field.type, ()):
            raise _invalid(f"Unexpected output type for {name}.{field_name}: "
                           f"{_TYPE_NAMES.get(field.type, field.type)} to "
                           f"{types_pb2.DataType.Name(dtypes.as_dtype(dtype).as_datatype_enum)}")
        out.append((field, dtype))
    return out


def _repeated(field) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf >= 6; `label` before
    return repeated if repeated is not None else field.label == FD.LABEL_REPEATED


def _values(msg, field) -> list:
    """The field's values in `msg` (message-typed ones serialized)."""
    if _repeated(field):
        items = list(getattr(msg, field.name))
    elif field.message_type is not None or field.has_presence:
        items = [getattr(msg, field.name)] if msg.HasField(field.name) else []
    else:  # proto3 scalar: set when not the default
        value = getattr(msg, field.name)
        items = [value] if value != field.default_value else []
    if field.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        items = [m.SerializeToString() for m in items]
    elif field.type == FD.TYPE_STRING:
        items = [v.encode() for v in items]
    return items


def _default(field):
    if field.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP, FD.TYPE_STRING, FD.TYPE_BYTES):
        return b""
    return field.default_value


@kernel_factory("DecodeProtoV2")
def _decode_proto(node):
    a = node.attrs
    name, cls = _message_class(a)
    fields = _fields(name, cls, a["field_names"], a["output_types"])
    text = (a["message_format"].decode() if isinstance(a["message_format"], bytes)
            else a["message_format"]) == "text"

    def compute(ctx, data):
        flat = np.asarray(data, dtype=object).reshape(-1)
        messages = []
        for raw in flat:
            msg = cls()
            try:
                if text:
                    text_format.Parse(raw.decode() if isinstance(raw, bytes) else raw, msg)
                else:
                    msg.ParseFromString(bytes(raw))
            except Exception:  # noqa: BLE001 - protobuf's DecodeError / ParseError
                raise errors.DataLossError(
                    None, None, f"Unable to parse {'text' if text else 'binary'} proto "
                    f"of type {name}") from None
            messages.append(msg)
        per_field = [[_values(m, f) for m in messages] for f, _ in fields]
        sizes = np.array([[len(v) for v in field_values] for field_values in per_field],
                         np.int32).T.reshape(np.shape(data) + (len(fields),))
        outs = [sizes]
        for (field, dtype), field_values in zip(fields, per_field, strict=True):
            width = max([len(v) for v in field_values], default=0) or 1
            np_dtype = object if dtype == dtypes.string else dtype.as_numpy_dtype
            arr = np.full((len(messages), width), _default(field), dtype=np_dtype)
            for i, values in enumerate(field_values):
                arr[i, :len(values)] = values
            outs.append(arr.reshape(np.shape(data) + (width,)))
        return tuple(outs)

    return compute


@kernel_factory("EncodeProto")
def _encode_proto(node):
    a = node.attrs
    name, cls = _message_class(a)
    fields = _fields(name, cls, a["field_names"], a["Tinput_types"])

    def compute(ctx, sizes, *values):
        batch = np.shape(sizes)[:-1]
        if np.shape(sizes)[-1:] != (len(fields),):
            raise _invalid(f"sizes should be batch_size + [len(field_names)], got "
                           f"{list(np.shape(sizes))} for {len(fields)} fields")
        flat_sizes = np.asarray(sizes).reshape(-1, len(fields))
        flat_values = [np.asarray(v).reshape(flat_sizes.shape[0], -1) for v in values]
        out = np.empty(flat_sizes.shape[0], dtype=object)
        for i in range(flat_sizes.shape[0]):
            msg = cls()
            for j, (field, _) in enumerate(fields):
                n = int(flat_sizes[i, j])
                if n > flat_values[j].shape[1]:
                    raise _invalid(f"Field {field.name} has {n} values, more than the "
                                   f"{flat_values[j].shape[1]} its tensor holds")
                items = list(flat_values[j][i, :n])
                if not _repeated(field) and n > 1:
                    raise _invalid(f"Field {field.name} is not repeated but has size {n}")
                _set(msg, field, items)
            out[i] = msg.SerializeToString()
        return out.reshape(batch)

    return compute


def _set(msg, field, items) -> None:
    if field.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        for raw in items:
            target = getattr(msg, field.name).add() if _repeated(field) else \
                getattr(msg, field.name)
            target.ParseFromString(bytes(raw))
        return
    if field.type == FD.TYPE_STRING:
        items = [v.decode() if isinstance(v, bytes) else v for v in items]
    elif field.type != FD.TYPE_BYTES:
        items = [v.item() if hasattr(v, "item") else v for v in items]
    if _repeated(field):
        getattr(msg, field.name).extend(items)
    elif items:
        setattr(msg, field.name, items[0])
