"""What crosses a socket: tensors as dtype + shape + raw bytes, errors as status codes.

Tensors travel as TensorProtos with `tensor_content` (little-endian raw bytes; strings in
`string_val`), never pickle. A RecvTensorResponse carrying a large tensor is written and
read here by hand, so that its bytes are copied once on each side (the array into the
message; the message's bytes are then viewed, not copied, by the array that is read back):
the protobuf runtime would copy a 100 MB tensor three times on the way out. Readers accept
fields in any order and skip unknown ones, as protobuf does; anything but the plain case
(numeric dtypes, content present) falls back to the protobuf classes.

Errors: a gRPC status code is TensorFlow's error code (both use the canonical codes), and
the message is the error's message, `{{node NAME}}` tags included, so a client can raise
the same error class with the same text.
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.framework import dtypes, errors, tensor_util
from tensorflux.lib.protowire import read_varint as _read_varint
from tensorflux.lib.protowire import varint as _varint
from tensorflux.protos import tensor_pb2

# ---- tensors --------------------------------------------------------------------------


def to_tensor_proto(value, proto: tensor_pb2.TensorProto | None = None
                    ) -> tensor_pb2.TensorProto:
    """`value` (a NumPy array or scalar) as a TensorProto, content as raw bytes."""
    arr = np.asarray(value)
    proto = tensor_pb2.TensorProto() if proto is None else proto
    if arr.dtype.kind in "OSU":  # strings: bytes objects, NumPy's fixed-width bytes/str
        proto.dtype = dtypes.string.as_datatype_enum
    else:
        proto.dtype = dtypes.as_dtype(arr.dtype).as_datatype_enum
    proto.tensor_shape.SetInParent()
    for d in arr.shape:
        proto.tensor_shape.dim.add(size=d)
    if arr.dtype.kind in "OSU":
        proto.string_val.extend(s if isinstance(s, bytes) else str(s).encode()
                                for s in arr.ravel().tolist())
    elif arr.size:
        proto.tensor_content = _little_endian(arr).tobytes()
    return proto


def from_tensor_proto(proto: tensor_pb2.TensorProto, what: str = "tensor") -> np.ndarray:
    """The array a TensorProto holds.

    Raises:
      InvalidArgumentError: the proto is malformed (naming `what`).
    """
    content = proto.tensor_content
    if content:  # the common case: raw little-endian bytes, viewed (no copy)
        np_dtype = _NUMPY_OF_ENUM.get(proto.dtype)
        if np_dtype is not None:
            dims = [d.size for d in proto.tensor_shape.dim]
            if all(d >= 0 for d in dims) and \
                    len(content) == int(np.prod(dims, dtype=np.int64)) * np_dtype.itemsize:
                return np.frombuffer(content, dtype=np_dtype).reshape(dims)
    try:
        return tensor_util.MakeNdarray(proto)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentError(None, None, f"Malformed {what}: {e}") from None


def _numpy_of_enum() -> dict[int, np.dtype]:
    """DataType enum -> NumPy dtype of the numeric types whose bytes NumPy reads as they
    are on this (little-endian) machine."""
    out = {}
    for enum in range(1, 30):
        try:
            dt = dtypes.as_dtype(enum)
        except (TypeError, ValueError, KeyError):
            continue
        if dt.is_numpy_compatible and dt.size and not dt.name.startswith(("qint", "quint")):
            out[enum] = np.dtype(dt.as_numpy_dtype).newbyteorder("<")
    return out if np.little_endian else {}


def _little_endian(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr).reshape(arr.shape)


_NUMPY_OF_ENUM = _numpy_of_enum()


# ---- protobuf wire format, for RecvTensorResponse ---------------------------------------

def _field(number: int, payload) -> list:
    """A length-delimited field: its header, then `payload` (not copied here)."""
    return [_varint(number << 3 | 2), _varint(len(payload)), payload]


def _message_field(number: int, parts: list) -> list:
    """A length-delimited field whose payload is the concatenation of `parts`."""
    return [_varint(number << 3 | 2), _varint(sum(len(p) for p in parts)), *parts]


def _tensor_parts(value) -> list:
    """A serialized TensorProto as chunks; the content chunk views the array's bytes."""
    arr = np.asarray(value)
    if arr.dtype.kind in "OSU" or arr.size == 0:
        return [to_tensor_proto(arr).SerializeToString()]
    arr = _little_endian(arr)
    head = _varint(1 << 3) + _varint(dtypes.as_dtype(arr.dtype).as_datatype_enum)
    shape = b"".join(b"".join(_field(2, _varint(1 << 3) + _varint(d))) for d in arr.shape)
    head += b"".join(_field(2, shape))
    content = memoryview(arr.reshape(-1).view(np.uint8))  # any dtype, no copy
    return [head, *_field(4, content)]


def encode_recv_tensor_response(value, is_dead: bool, send_start_micros: int = 0) -> bytes:
    """A serialized RecvTensorResponse (tensor = 1, is_dead = 2, send_start_micros = 3);
    the tensor's bytes are copied once, into the result."""
    parts = _message_field(1, [] if is_dead or value is None else _tensor_parts(value))
    if is_dead:
        parts.append(_varint(2 << 3) + b"\x01")
    if send_start_micros:
        parts.append(_varint(3 << 3) + _varint(send_start_micros))
    return b"".join(parts)


_SMALL_BYTES = 64 << 10  # below this, messages go through the protobuf classes


def encode_with_named_tensors(message, number: int, pairs) -> bytes:
    """`message` serialized with `pairs` ((name, array)) as its repeated NamedTensorProto
    field `number` (RunStepResponse.tensor, RunGraphResponse.recv, RunStepRequest.feed,
    RunGraphRequest.send). Each tensor's bytes are copied once; the field must be empty in
    `message` (a message's fields may come in any order, so the concatenation is the
    message with both)."""
    pairs = list(pairs)
    if sum(getattr(v, "nbytes", 64) for _, v in pairs) < _SMALL_BYTES:
        field = getattr(message, message.DESCRIPTOR.fields_by_number[number].name)
        for name, value in pairs:  # protobuf's C code is quicker for small tensors
            to_tensor_proto(value, field.add(name=name).tensor)
        return message.SerializeToString()
    parts = []
    for name, value in pairs:
        encoded = name.encode()
        parts += _message_field(number, [*_field(1, encoded),
                                         *_message_field(2, _tensor_parts(value))])
    parts.append(message.SerializeToString())
    return b"".join(parts)


def decode_with_named_tensors(data: bytes, number: int, cls):
    """(message of `cls`, [(name, array)]) from bytes with a repeated NamedTensorProto
    field `number`: the tensors are read by hand (arrays view `data`), the rest by `cls`.

    Raises:
      InvalidArgumentError: the message is malformed.
    """
    if len(data) < _SMALL_BYTES:  # protobuf's C parser is quicker for small messages
        try:
            message = cls.FromString(data)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError
            raise errors.InvalidArgumentError(
                None, None, f"Malformed {cls.__name__}: {e}") from None
        field = getattr(message, cls.DESCRIPTOR.fields_by_number[number].name)
        pairs = [(t.name, from_tensor_proto(t.tensor, f"tensor {t.name}")) for t in field]
        del field[:]
        return message, pairs
    buf = memoryview(data)
    pairs, rest, pos = [], [], 0
    try:
        while pos < len(buf):
            start = pos
            key, pos = _read_varint(buf, pos)
            if key == (number << 3 | 2):
                n, pos = _read_varint(buf, pos)
                if pos + n > len(buf):
                    raise ValueError("truncated NamedTensorProto")
                pairs.append(_named_tensor(buf[pos:pos + n]))
                pos += n
            else:
                pos = _skip(buf, pos, key & 7)
                rest.append(buf[start:pos])
        if pos != len(buf):
            raise ValueError("truncated message")
        return cls.FromString(b"".join(rest)), pairs
    except errors.OpError:
        raise
    except Exception as e:  # noqa: BLE001 - ValueError, IndexError, protobuf's DecodeError
        raise errors.InvalidArgumentError(
            None, None, f"Malformed {cls.__name__}: {e}") from None


def _named_tensor(buf: memoryview) -> tuple[str, np.ndarray]:
    pos, name, tensor = 0, "", buf[0:0]
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        if key in (1 << 3 | 2, 2 << 3 | 2):
            n, pos = _read_varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError("truncated NamedTensorProto field")
            if key >> 3 == 1:
                name = bytes(buf[pos:pos + n]).decode()
            else:
                tensor = buf[pos:pos + n]
            pos += n
        else:
            pos = _skip(buf, pos, key & 7)
    return name, _decode_tensor(tensor)


def decode_recv_tensor_response(data: bytes) -> tuple[np.ndarray | None, bool]:
    """(value, is_dead) of a serialized RecvTensorResponse; the array views `data`.

    Raises:
      InvalidArgumentError: the message is malformed.
    """
    try:
        tensor, is_dead = _split_response(memoryview(data))
        if is_dead:
            return None, True
        return _decode_tensor(tensor), False
    except (ValueError, IndexError, TypeError) as e:
        raise errors.InvalidArgumentError(None, None,
                                          f"Malformed RecvTensorResponse: {e}") from None


# A step's keys, dtypes and shapes recur every step: the bytes of a pushed tensor's field
# after its step id, up to its content, are kept per (key, dtype, shape) (at most this many).
_FRAMINGS_KEPT = 4096
_push_tails: dict = {}
# ... and a decoder's per key: (the bytes from after the key to the content, dtype, dims)
_pushed_layouts: dict = {}


def pushed_tensor_parts(step_id: int, key: str, value, is_dead: bool,
                        pull: bool = False) -> list:
    """One pushed tensor (tensorflux's push transport, push.py) as field 1 of a
    PushTensorsRequest: {uint64 step_id = 1; string rendezvous_key = 2; TensorProto tensor
    = 3; bool is_dead = 4; bool pull = 5 (no tensor: fetch it with RecvTensor)}, as
    [header bytes] or [header bytes, a view of the array's bytes] (written out before the
    array changes). Several such fields concatenated are one request."""
    if not (pull or is_dead) and type(value) is np.ndarray and value.size and \
            value.flags.c_contiguous:
        tail = _push_tails.get((key, value.dtype, value.shape))
        if tail is not None:  # as below, without building the same bytes again
            content = memoryview(value.reshape(-1).view(np.uint8))
            sv = _varint(step_id)
            return [b"".join((b"\x0a", _varint(1 + len(sv) + len(tail) + len(content)),
                              b"\x08", sv, tail)), content]
    name = key.encode()
    body = b"".join((b"\x08", _varint(step_id), b"\x12", _varint(len(name)), name))
    content = b""
    if pull:
        body += b"\x28\x01"
    elif is_dead:
        body += b"\x20\x01"
    else:
        chunks = _tensor_parts(value)
        if len(chunks) > 1:
            content = chunks.pop()
        head = b"".join(chunks)
        tail = b"".join((b"\x1a", _varint(len(head) + len(content)), head))
        body = b"".join((body, tail))
        if len(content) and type(value) is np.ndarray and value.flags.c_contiguous and \
                value.dtype.byteorder != ">":
            if len(_push_tails) >= _FRAMINGS_KEPT:
                _push_tails.clear()
            _push_tails[(key, value.dtype, value.shape)] = \
                b"".join((b"\x12", _varint(len(name)), name, tail))
    header = b"".join((b"\x0a", _varint(len(body) + len(content)), body))
    return [header, content] if len(content) else [header]


def encode_pushed_tensor(step_id: int, key: str, value, is_dead: bool,
                         pull: bool = False) -> bytes:
    """`pushed_tensor_parts` as one bytes object (the tensor's bytes copied once)."""
    return b"".join(pushed_tensor_parts(step_id, key, value, is_dead, pull))


def decode_pushed_tensors(data: bytes) -> list[tuple]:
    """[(step_id, key, value, is_dead, pull)] of a PushTensorsRequest; arrays view
    `data` (value None when dead or to be pulled).

    Raises:
      InvalidArgumentError: the message is malformed.
    """
    buf = memoryview(data)
    out, pos = [], 0
    try:
        while pos < len(buf):
            key, pos = _read_varint(buf, pos)
            if key != (1 << 3 | 2):
                pos = _skip(buf, pos, key & 7)
                continue
            n, pos = _read_varint(buf, pos)
            end = pos + n
            if end > len(buf):
                raise ValueError("truncated pushed tensor")
            step_id, name, tensor, is_dead, pull = 0, None, None, False, False
            while pos < end:
                k, pos = _read_varint(buf, pos)
                if k == 1 << 3:
                    step_id, pos = _read_varint(buf, pos)
                elif k in (2 << 3 | 2, 3 << 3 | 2):
                    m, pos = _read_varint(buf, pos)
                    if pos + m > end:
                        raise ValueError("truncated field")
                    if k >> 3 == 2:
                        name = bytes(buf[pos:pos + m]).decode()
                    else:
                        tensor = buf[pos:pos + m]
                    pos += m
                elif k in (4 << 3, 5 << 3):
                    v, pos = _read_varint(buf, pos)
                    if k >> 3 == 4:
                        is_dead = bool(v)
                    else:
                        pull = bool(v)
                else:
                    pos = _skip(buf, pos, k & 7)
            if pos != end or name is None or (tensor is None and not (is_dead or pull)):
                raise ValueError("a pushed tensor lacks its key or value")
            value = None if is_dead or pull else _decode_pushed(name, tensor)
            out.append((step_id, name, value, is_dead, pull))
        if pos != len(buf):
            raise ValueError("truncated message")
    except errors.OpError:
        raise
    except Exception as e:  # noqa: BLE001 - ValueError, IndexError, protobuf's DecodeError
        raise errors.InvalidArgumentError(
            None, None, f"Malformed PushTensorsRequest: {e}") from None
    return out


def scan_fields(buf):
    """(tag, value) of each field of a message, in order: the tag is `number << 3 | wire
    type`, the value an int for a varint, a memoryview for a length-delimited field; other
    wire types are skipped.

    Raises:
      ValueError: a field runs past the end, or an unsupported wire type.
    """
    buf = memoryview(buf)
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _read_varint(buf, pos)
        wire = key & 7
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            n, pos = _read_varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        else:
            pos = _skip(buf, pos, wire)
            value = None
        if pos > end:
            raise ValueError("a field runs past the end of the message")
        if value is not None:
            yield key, value


def pick_fields(buf, names: dict, repeated: dict | None = None) -> dict:
    """{name: value} of the fields of `buf` whose tags `names` maps to a name (the last one
    wins), and {name: [values]} for the tags of `repeated`; fields of other tags are
    ignored (see `scan_fields`, whose ValueError it raises)."""
    out = {name: [] for name in (repeated or {}).values()}
    for key, value in scan_fields(buf):
        name = names.get(key)
        if name is not None:
            out[name] = value
        elif repeated and key in repeated:
            out[repeated[key]].append(value)
    return out


def _skip(buf, pos: int, wire: int) -> int:
    if wire == 0:
        return _read_varint(buf, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 5:
        return pos + 4
    if wire == 2:
        n, pos = _read_varint(buf, pos)
        return pos + n
    raise ValueError(f"unsupported wire type {wire}")


def _split_response(buf: memoryview) -> tuple[memoryview, bool]:
    pos, tensor, is_dead = 0, buf[0:0], False
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 1 and wire == 2:
            n, pos = _read_varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError("truncated tensor")
            tensor = buf[pos:pos + n]
            pos += n
        elif number == 2 and wire == 0:
            v, pos = _read_varint(buf, pos)
            is_dead = bool(v)
        else:
            pos = _skip(buf, pos, wire)
    if pos != len(buf):
        raise ValueError("truncated message")
    return tensor, is_dead


def _decode_pushed(key: str, buf: memoryview) -> np.ndarray:
    """`_decode_tensor` of a pushed tensor under `key`: when its bytes up to the content
    are those of the last one under that key (dtype, shape, the content's length), the
    array views the rest without parsing them again."""
    layout = _pushed_layouts.get(key)
    if layout is not None:
        head, dtype, dims, _ = layout
        if len(buf) - len(head) == layout[3] and buf[:len(head)] == head:
            return np.frombuffer(buf[len(head):], dtype).reshape(dims)
    arr = _decode_tensor(buf)
    n = arr.nbytes
    if n and len(buf) > n and arr.dtype.kind in "biufc" and arr.dtype.byteorder in "=|<" \
            and arr.flags.c_contiguous and arr.__array_interface__["data"][0] == \
            np.frombuffer(buf, np.uint8).__array_interface__["data"][0] + len(buf) - n:
        # the array views the last n bytes: the plain form, whose layout is kept
        if len(_pushed_layouts) >= _FRAMINGS_KEPT:
            _pushed_layouts.clear()
        _pushed_layouts[key] = (bytes(buf[:len(buf) - n]), arr.dtype, arr.shape, n)
    return arr


def _decode_tensor(buf: memoryview) -> np.ndarray:
    """A TensorProto: the fast path reads dtype, shape and content; anything else (values
    in *_val fields, unknown fields) goes through the protobuf class."""
    pos, enum, dims, content, plain = 0, 0, [], None, True
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 1 and wire == 0:
            enum, pos = _read_varint(buf, pos)
        elif number == 2 and wire == 2:
            n, pos = _read_varint(buf, pos)
            dims, pos = _read_shape(buf, pos, pos + n), pos + n
        elif number == 4 and wire == 2:
            n, pos = _read_varint(buf, pos)
            content, pos = buf[pos:pos + n], pos + n
        else:
            plain = False
            pos = _skip(buf, pos, wire)
    if pos != len(buf):
        raise ValueError("truncated tensor")
    if not plain or content is None or dims is None:
        return from_tensor_proto(tensor_pb2.TensorProto.FromString(bytes(buf)))
    dtype = dtypes.as_dtype(enum)
    np_dtype = dtype.as_numpy_dtype
    np_dtype = np.dtype(np_dtype)
    if dtype.size == 0 or any(d < 0 for d in dims) or \
            len(content) != math.prod(dims) * np_dtype.itemsize:
        return from_tensor_proto(tensor_pb2.TensorProto.FromString(bytes(buf)))
    arr = np.frombuffer(content, dtype=np_dtype.newbyteorder("<")).reshape(dims)
    return arr if np_dtype.byteorder in "=|<" or np_dtype.itemsize == 1 else \
        arr.astype(np_dtype)


def _read_shape(buf, pos: int, end: int) -> list[int] | None:
    """The dims of a TensorShapeProto (None when its rank is unknown)."""
    dims: list[int] | None = []
    while pos < end:
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 2 and wire == 2:
            n, pos = _read_varint(buf, pos)
            dim_end, size = pos + n, 0
            while pos < dim_end:
                k, pos = _read_varint(buf, pos)
                if k == 1 << 3:
                    size, pos = _read_varint(buf, pos)
                    if size >= 1 << 63:
                        size -= 1 << 64
                else:
                    pos = _skip(buf, pos, k & 7)
            dims.append(size)
        elif number == 3 and wire == 0:
            unknown, pos = _read_varint(buf, pos)
            if unknown:
                dims = None
        else:
            pos = _skip(buf, pos, wire)
    return dims


# ---- errors ---------------------------------------------------------------------------

def error_from_status(code: int, message: str, default=errors.UnknownError
                      ) -> errors.OpError:
    """The OpError of a status code (an unknown code: `default`)."""
    try:
        cls = errors.exception_type_from_error_code(int(code))
    except (KeyError, ValueError):
        cls = default
    return cls(None, None, message)


def status_of(error: BaseException) -> tuple[int, str]:
    """(code, message) of an exception: an OpError's own, else the code TensorFlow gives
    that Python exception (`errors.error_code_for_exception`)."""
    if isinstance(error, errors.OpError):
        return error.error_code, error.message
    return errors.error_code_for_exception(error), f"{type(error).__name__}: {error}"
