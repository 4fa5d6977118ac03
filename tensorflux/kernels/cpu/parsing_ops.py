"""CPU kernels of the parsing ops (tensorflux/ops/parsing_ops.py): DecodeCSV, DecodeRaw,
ParseExampleV2.

CSV follows TensorFlow's dialect: one-character delimiter; with `use_quote_delim` a field
may be wrapped in double quotes (holding delimiters, "" for a quote), and a quote anywhere
else is an error; numbers may carry surrounding spaces; an empty field (or one equal to
`na_value`) takes the column's default, or fails if the default is empty. Every failure is
an InvalidArgumentError quoting the field and naming its column and record.
"""

from __future__ import annotations

import gzip
import zlib

import numpy as np
from google.protobuf import json_format

from tensorflux.framework import dtypes, errors, tensor_util
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib import example_wire
from tensorflux.protos import example_pb2, tensor_pb2

# ---- DecodeCSV ---------------------------------------------------------------------------


def _split_quoted(record: str, delim: str, index: int) -> list[str]:
    """The fields of one record holding quotes (TensorFlow's quoting rules)."""
    fields = []
    i, n = 0, len(record)
    while True:
        if i < n and record[i] == '"':
            i += 1
            buf = []
            while True:
                j = record.find('"', i)
                if j < 0:
                    raise errors.InvalidArgumentError(
                        None, None, "Quoted field has to end with quote followed by delim or "
                        f"end (record {index}: {record!r})")
                buf.append(record[i:j])
                if j + 1 < n and record[j + 1] == '"':  # an escaped quote
                    buf.append('"')
                    i = j + 2
                    continue
                i = j + 1
                break
            if i < n and record[i] != delim:
                raise errors.InvalidArgumentError(
                    None, None, "Quoted field has to end with quote followed by delim or end "
                    f"(record {index}: {record!r})")
            fields.append("".join(buf))
        else:
            j = record.find(delim, i)
            field = record[i:] if j < 0 else record[i:j]
            if '"' in field or "\n" in field or "\r" in field:
                raise errors.InvalidArgumentError(
                    None, None, "Unquoted fields cannot have quotes/CRLFs inside (record "
                    f"{index}, field {field!r})")
            fields.append(field)
            i = n if j < 0 else j
        if i >= n:
            return fields
        i += 1  # past the delimiter
        if i == n:
            fields.append("")
            return fields


def _split(record: bytes, delim: str, quotes: bool, index: int) -> list[str]:
    text = record.decode("utf-8", errors="surrogateescape")
    if quotes and '"' in text:
        return _split_quoted(text, delim, index)
    if not quotes and ("\n" in text or "\r" in text):
        raise errors.InvalidArgumentError(
            None, None, f"Unquoted fields cannot have quotes/CRLFs inside (record {index})")
    return text.split(delim)


_INT_RANGES = {dtypes.int32: (-(2**31), 2**31 - 1), dtypes.int64: (-(2**63), 2**63 - 1)}
_TYPE_NAMES = {dtypes.float32: "float", dtypes.float64: "double", dtypes.int32: "int32",
               dtypes.int64: "int64"}


def _convert(field: str, dtype, col: int, rec: int):
    """One non-empty field as a number of `dtype` (or its bytes for strings)."""
    if dtype is dtypes.string:
        return field.encode("utf-8", errors="surrogateescape")
    text = field.strip()
    try:
        if "_" in text or not text:
            raise ValueError
        if dtype in _INT_RANGES:
            value = int(text, 10)
            lo, hi = _INT_RANGES[dtype]
            if not lo <= value <= hi:
                raise ValueError
            return value
        return float(text)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Field {col} in record {rec} is not a valid {_TYPE_NAMES[dtype]}: "
            f"{field}") from None


@kernel_factory("DecodeCSV")
def _decode_csv(node):
    a = node.attrs
    types = list(a["OUT_TYPE"])
    delim, quotes, na = a["field_delim"], bool(a["use_quote_delim"]), a["na_value"]
    select = list(a["select_cols"] or [])
    if isinstance(delim, bytes):
        delim = delim.decode()
    if isinstance(na, bytes):
        na = na.decode()
    if len(delim) != 1:
        raise errors.InvalidArgumentError(None, None, "field_delim should be only 1 char")

    def compute(ctx, records, *defaults):
        records = np.asarray(records, dtype=object)
        flat = records.reshape(-1)
        ncols = len(types)
        fills = []
        for i, d in enumerate(defaults):
            d = np.asarray(d)
            if d.size > 1:
                raise errors.InvalidArgumentError(
                    None, None, f"There should only be 1 default per field but field {i} has "
                    f"{d.size}")
            fills.append(None if d.size == 0 else d.reshape(-1)[0])
        columns = [[None] * len(flat) for _ in range(ncols)]
        for r, rec in enumerate(interrupt.each(ctx, flat)):
            fields = _split(rec if isinstance(rec, bytes) else str(rec).encode(), delim,
                            quotes, r)
            if select:
                if len(fields) <= select[-1]:
                    raise errors.InvalidArgumentError(
                        None, None, f"Expect {select[-1] + 1} fields but have {len(fields)} in "
                        f"record {r}")
                fields = [fields[c] for c in select]
            elif len(fields) != ncols:
                raise errors.InvalidArgumentError(
                    None, None, f"Expect {ncols} fields but have {len(fields)} in record {r}")
            for c, (field, t) in enumerate(zip(fields, types, strict=True)):
                if field == "" or field == na:
                    if fills[c] is None:
                        raise errors.InvalidArgumentError(
                            None, None, f"Field {c} is required but missing in record {r}!")
                    columns[c][r] = fills[c]
                else:
                    columns[c][r] = _convert(field, t, c, r)
        out = []
        for col, t in zip(columns, types, strict=True):
            if t is dtypes.string:
                arr = np.empty(len(col), dtype=object)
                arr[:] = col
            else:
                arr = np.array(col, dtype=t.as_numpy_dtype)
            out.append(arr.reshape(records.shape))
        return tuple(out) if len(out) > 1 else out[0]

    return compute


# ---- DecodeRaw ---------------------------------------------------------------------------


@kernel_factory("DecodeRaw")
def _decode_raw(node):
    out_type = node.attrs["out_type"]
    np_dtype = np.dtype(out_type.as_numpy_dtype)
    if np_dtype.itemsize > 1:
        np_dtype = np_dtype.newbyteorder("<" if node.attrs["little_endian"] else ">")
    size = np_dtype.itemsize

    def compute(ctx, data):
        data = np.asarray(data, dtype=object)
        flat = data.reshape(-1)
        if flat.size == 0:
            return np.empty(data.shape + (0,), dtype=out_type.as_numpy_dtype)
        length = len(flat[0])
        for i, s in enumerate(flat):
            if len(s) != length:
                raise errors.InvalidArgumentError(
                    None, None, "DecodeRaw requires input strings to all be the same size, "
                    f"but element {i} has size {len(s)} != {length}")
        if length % size:
            raise errors.InvalidArgumentError(
                None, None, f"Input to DecodeRaw has length {length} that is not a multiple "
                f"of {size}, the size of {_tf_name(out_type)}")
        buf = bytearray(b"".join(flat))
        out = np.frombuffer(buf, dtype=np_dtype).reshape(data.shape + (length // size,))
        return out.astype(out_type.as_numpy_dtype, copy=False)

    return compute


def _tf_name(dtype) -> str:
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name,
                                                                          dtype.name)


# ---- ParseExampleV2 ----------------------------------------------------------------------

_KIND = {dtypes.float32: "float_list", dtypes.int64: "int64_list", dtypes.string: "bytes_list"}
_KIND_NAME = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}


def _values(feature, dtype, key: str, name: str, index: int) -> list:
    """The values of one Feature, checked against `dtype`."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return []
    if kind != _KIND[dtype]:
        raise errors.InvalidArgumentError(
            None, None, f"Name: {name}, Key: {key}, Index: {index}.  Data types don't match. "
            f"Data type: {_KIND_NAME[kind]} but expected type: {_KIND_NAME[_KIND[dtype]]}")
    return getattr(feature, kind).value


def _to_array(values, dtype) -> np.ndarray:
    if dtype is dtypes.string:
        arr = np.empty(len(values), dtype=object)
        arr[:] = list(values)
        return arr
    return np.array(values, dtype=dtype.as_numpy_dtype)


def _parse_one(data: bytes, name: str) -> dict:
    try:
        example = example_pb2.Example.FromString(data)
    except Exception:  # noqa: BLE001 - the protobuf runtime's DecodeError
        raise errors.InvalidArgumentError(
            None, None, f"Name: {name}, Could not parse example input, value: "
            f"'{data[:80]!r}'") from None
    return example.features.feature


@kernel_factory("ParseExampleV2")
def _parse_example(node):
    a = node.attrs
    sparse_types = list(a["sparse_types"])
    dense_types = list(a["Tdense"])
    dense_shapes = [tuple(s.as_list()) for s in a["dense_shapes"]]
    dense_specs = [_DenseSpec(t, shape) for t, shape in zip(dense_types, dense_shapes,
                                                             strict=True)]

    fixed_dense_only = not sparse_types and not any(d.variable for d in dense_specs)
    decoded: dict = {}  # key tensors (constants, the same arrays every run) -> str lists

    def keys_of(arr) -> list:
        got = decoded.get(id(arr))
        if got is None or got[0] is not arr:
            got = decoded[id(arr)] = (arr, [k.decode() for k in
                                            np.asarray(arr, dtype=object).reshape(-1)])
        return got[1]

    def compute(ctx, serialized, names, sparse_keys, dense_keys, ragged_keys, *defaults):
        serialized = np.asarray(serialized, dtype=object)
        scalar = serialized.ndim == 0
        flat = serialized.reshape(-1)
        labels = _Labels(names)
        skeys, dkeys = keys_of(sparse_keys), keys_of(dense_keys)
        if len(skeys) != len(sparse_types) or len(dkeys) != len(dense_types):
            raise errors.InvalidArgumentError(
                None, None, "The number of keys does not match the number of types")
        if fixed_dense_only:
            # The common case, read straight from the wire (records it declines, with
            # protobuf): see _fixed_dense.
            parsed = [example_wire.features(s) if type(s) is bytes else None
                      for s in interrupt.each(ctx, flat)]
            for i, p in enumerate(parsed):
                if p is None:  # declined: protobuf's map (or its error), in record order
                    parsed[i] = _parse_one(flat[i], labels[i])
            dense = [_fixed_dense(parsed, flat, labels, key, spec, default, serialized.shape)
                     for key, spec, default in zip(dkeys, dense_specs, defaults, strict=True)]
            return dense[0] if len(dense) == 1 else tuple(dense)
        parsed = [_parse_one(s, labels[i]) for i, s in enumerate(interrupt.each(ctx, flat))]
        out_indices, out_values, out_shapes = [], [], []
        for key, dtype in zip(skeys, sparse_types, strict=True):
            idx, vals, longest = _sparse(parsed, labels, key, dtype, scalar)
            out_indices.append(idx)
            out_values.append(vals)
            out_shapes.append(np.array([longest] if scalar else [len(flat), longest],
                                       np.int64))
        dense = [_dense(parsed, labels, key, spec, default, serialized.shape)
                 for key, spec, default in zip(dkeys, dense_specs, defaults, strict=True)]
        outputs = out_indices + out_values + out_shapes + dense
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return compute


def _sparse(parsed, labels, key, dtype, scalar: bool):
    indices, values = [], []
    longest = 0
    for b, feats in enumerate(parsed):
        f = feats.get(key)
        vals = _values(f, dtype, key, labels[b], b) if f is not None else []
        n = len(vals)
        longest = max(longest, n)
        if n:
            values.extend(vals)
            if scalar:
                indices.extend([j] for j in range(n))
            else:
                indices.extend([b, j] for j in range(n))
    idx = np.array(indices, np.int64).reshape(-1, 1 if scalar else 2)
    return idx, _to_array(values, dtype), longest


class _Labels:
    """The example names of error messages ("<unknown>" past the given ones), decoded only
    when a message needs one."""

    __slots__ = ("_names",)

    def __init__(self, names):
        self._names = np.asarray(names, dtype=object).reshape(-1)

    def __getitem__(self, i: int) -> str:
        if i >= len(self._names):
            return "<unknown>"
        n = self._names[i]
        return n.decode(errors="replace") if isinstance(n, bytes) else str(n)


class _DenseSpec:
    """What a dense key's parsing needs that does not change between calls."""

    __slots__ = ("dtype", "np_dtype", "shape", "variable", "elem", "per", "kind")

    def __init__(self, dtype, shape):
        self.dtype = dtype
        self.np_dtype = dtype.as_numpy_dtype
        self.shape = shape
        self.variable = len(shape) > 0 and shape[0] is None  # a FixedLenSequenceFeature
        self.elem = shape[1:] if self.variable else shape
        self.per = int(np.prod(self.elem)) if self.elem else 1
        self.kind = _KIND[dtype]


def _dense(parsed, labels, key, spec: _DenseSpec, default, batch_shape) -> np.ndarray:
    dtype, per, variable = spec.dtype, spec.per, spec.variable
    default = np.asarray(default)
    if not variable:
        # The common case: every example has `per` values (or the default), written
        # straight into the output's rows.
        out = np.empty((len(parsed), per), dtype=spec.np_dtype)
        for b, feats in enumerate(parsed):
            f = feats.get(key)
            vals = _values(f, dtype, key, labels[b], b) if f is not None else None
            if vals is None:
                if default.size == 0:
                    raise errors.InvalidArgumentError(
                        None, None, f"Name: {labels[b]}, Feature: {key} (data type: "
                        f"{_KIND_NAME[spec.kind]}) is required but could not be found.")
                out[b] = default.reshape(-1)
                continue
            if len(vals) != per:
                raise _count_error(labels[b], key, b, spec, len(vals))
            out[b] = list(vals)  # a list converts ~2x faster than the protobuf container
        return out.reshape(tuple(batch_shape) + tuple(spec.shape))
    rows = []
    for b, feats in enumerate(parsed):
        f = feats.get(key)
        vals = _values(f, dtype, key, labels[b], b) if f is not None else None
        if vals is None:
            rows.append(_to_array([], dtype))
            continue
        if len(vals) % per:
            raise _count_error(labels[b], key, b, spec, len(vals))
        rows.append(_to_array(vals, dtype))
    longest = max((len(r) // per for r in rows), default=0)
    pad = default.reshape(-1)[0] if default.size else (b"" if dtype is dtypes.string else 0)
    out = np.full((len(rows), longest * per), pad, dtype=spec.np_dtype)
    for b, r in enumerate(rows):
        out[b, :len(r)] = r
    return out.reshape(tuple(batch_shape) + (longest,) + tuple(spec.elem))


_WIRE_KIND = {dtypes.float32: example_wire.FLOAT, dtypes.int64: example_wire.INT64,
              dtypes.string: example_wire.BYTES}
_WIRE_KIND_NAME = {example_wire.BYTES: "bytes_list", example_wire.FLOAT: "float_list",
                   example_wire.INT64: "int64_list"}
_WIRE_DECODE = {example_wire.FLOAT: example_wire.floats, example_wire.INT64: example_wire.int64s,
                example_wire.BYTES: example_wire.bytes_values}


def _fixed_dense(parsed: list, flat, labels, key, spec: _DenseSpec, default,
                 batch_shape) -> np.ndarray:
    """A fixed-shape dense feature of all records. `parsed[b]` is record b's
    example_wire.features dict, or its protobuf feature map where that reader declined it;
    a record whose values the reader cannot decode is parsed with protobuf here. Values
    are gathered per row (float32 as little-endian bytes) and converted once; the errors
    are those of `_dense`."""
    kind = _WIRE_KIND[spec.dtype]
    decode = _WIRE_DECODE[kind]
    is_float = kind == example_wire.FLOAT
    per = spec.per
    default = np.asarray(default)
    fill = None
    if default.size:
        fill = default.astype(spec.np_dtype).reshape(-1)
        fill = fill.astype("<f4").tobytes() if is_float else fill.tolist()
    rows: list = []
    wire_key = key.encode()
    for b, p in enumerate(parsed):
        vals = None
        if type(p) is dict:
            got = p.get(wire_key)
            if got is not None:
                if got[0] == 0:
                    vals = b"" if is_float else []
                elif got[0] != kind:
                    raise errors.InvalidArgumentError(
                        None, None, f"Name: {labels[b]}, Key: {key}, Index: {b}.  Data types "
                        f"don't match. Data type: {_KIND_NAME[_WIRE_KIND_NAME[got[0]]]} but "
                        f"expected type: {_KIND_NAME[spec.kind]}")
                else:
                    try:
                        vals = decode(got[1])
                    except (ValueError, IndexError):
                        p = _parse_one(flat[b], labels[b])  # protobuf decides
        if type(p) is not dict:
            f = p.get(key)
            vals = _values(f, spec.dtype, key, labels[b], b) if f is not None else None
            if vals is not None:
                vals = np.asarray(list(vals), "<f4").tobytes() if is_float else list(vals)
        if vals is None:
            if fill is None:
                raise errors.InvalidArgumentError(
                    None, None, f"Name: {labels[b]}, Feature: {key} (data type: "
                    f"{_KIND_NAME[spec.kind]}) is required but could not be found.")
            vals = fill
        n = len(vals) // 4 if is_float else len(vals)
        if n != per:
            raise _count_error(labels[b], key, b, spec, n)
        rows.append(vals)
    shape = tuple(batch_shape) + tuple(spec.shape)
    if is_float:
        return np.frombuffer(b"".join(rows), "<f4").astype(np.float32).reshape(shape)
    values = [v for r in rows for v in r]
    if kind == example_wire.BYTES:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(shape)
    return np.array(values, dtype=np.int64).reshape(shape)


def _count_error(label, key, b, spec: _DenseSpec, n) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, None, f"Name: {label}, Key: {key}, Index: {b}.  Number of "
        f"{_KIND_NAME[spec.kind]} values != expected.  Values size: {n} but output shape: "
        f"[{','.join('?' if d is None else str(d) for d in spec.shape)}]")


# ---- SerializeTensor, ParseTensor --------------------------------------------------------


@kernel_factory("SerializeTensor")
def _serialize_tensor(node):
    def compute(ctx, tensor):
        proto = tensor_util.make_tensor_proto(tensor, dtype=node.attrs["T"])
        return np.array(proto.SerializeToString(), dtype=object)

    return compute


@kernel_factory("ParseTensor")
def _parse_tensor(node):
    out_type = node.attrs["out_type"]

    def compute(ctx, serialized):
        proto = tensor_pb2.TensorProto()
        try:
            proto.ParseFromString(bytes(np.asarray(serialized, dtype=object).item()))
        except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
            raise errors.InvalidArgumentError(
                None, None, "Could not parse `serialized` as TensorProto") from None
        if proto.dtype != out_type.as_datatype_enum:
            got = dtypes.as_dtype(proto.dtype).name if proto.dtype else "invalid"
            raise errors.InvalidArgumentError(
                None, None, f"Type mismatch between parsed tensor ({got}) and dtype "
                f"({out_type.name})")
        return tensor_util.MakeNdarray(proto)

    return compute


# ---- DecodeCompressed --------------------------------------------------------------------


@kernel_factory("DecodeCompressed")
def _decode_compressed(node):
    kind = node.attrs["compression_type"]
    if kind not in ("", "ZLIB", "GZIP"):
        raise errors.InvalidArgumentError(
            None, None, f"Only ZLIB, GZIP or no compression types are supported, got {kind}")

    def decompress(data: bytes) -> bytes:
        try:
            if kind == "ZLIB":
                return zlib.decompress(data)
            if kind == "GZIP":
                return gzip.decompress(data)
            return data
        except (OSError, EOFError, zlib.error) as e:
            raise errors.DataLossError(None, None, f"{kind} decompression failed: {e}") from None

    def compute(ctx, x):
        out = np.empty(x.shape, dtype=object)
        flat = out.reshape(-1)
        for i, v in enumerate(np.asarray(x, dtype=object).reshape(-1)):
            flat[i] = decompress(bytes(v))
        return out

    return compute


# ---- SerializeSparse, SerializeManySparse, DeserializeManySparse -------------------------


def _proto_bytes(array, dtype) -> bytes:
    return tensor_util.make_tensor_proto(array, dtype=dtype).SerializeToString()


def _serialized_triple(indices, values, shape, dtype) -> np.ndarray:
    out = np.empty(3, dtype=object)
    out[:] = [_proto_bytes(indices, dtypes.int64), _proto_bytes(values, dtype),
              _proto_bytes(shape, dtypes.int64)]
    return out


def _variant_triple(indices, values, shape, dtype=None) -> np.ndarray:
    out = np.empty(3, dtype=object)
    out[0], out[1], out[2] = indices, values, shape
    return out


@kernel_factory("SerializeSparse")
def _serialize_sparse(node):
    dtype = node.attrs["T"]
    triple = _variant_triple if node.attrs["out_type"] == dtypes.variant else \
        _serialized_triple
    return lambda ctx, indices, values, shape: triple(np.asarray(indices, np.int64),
                                                      values, np.asarray(shape, np.int64),
                                                      dtype)


@kernel_factory("SerializeManySparse")
def _serialize_many_sparse(node):
    dtype = node.attrs["T"]
    triple = _variant_triple if node.attrs["out_type"] == dtypes.variant else \
        _serialized_triple

    def compute(ctx, indices, values, shape):
        if shape.size < 2:
            raise errors.InvalidArgumentError(
                None, None, f"Rank of input SparseTensor should be > 1, but saw rank: "
                f"{shape.size}")
        n = int(shape[0])
        out = np.empty((n, 3), dtype=object)
        for b in range(n):
            rows = indices[:, 0] == b
            out[b] = triple(indices[rows][:, 1:], values[rows], shape[1:], dtype)
        return out

    return compute


def _parse_proto(data: bytes) -> np.ndarray:
    proto = tensor_pb2.TensorProto()
    try:
        proto.ParseFromString(bytes(data))
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise errors.InvalidArgumentError(
            None, None, "Could not parse serialized_sparse as a TensorProto") from None
    return tensor_util.MakeNdarray(proto)


@kernel_factory("DeserializeSparse")
def _deserialize_sparse(node):
    dtype = node.attrs["dtype"]
    variant = node.attrs["Tserialized"] == dtypes.variant

    def part(x) -> np.ndarray:
        return np.asarray(x) if variant else _parse_proto(x)

    def compute(ctx, serialized):
        if serialized.ndim < 1 or serialized.shape[-1] != 3:
            raise errors.InvalidArgumentError(
                None, None, f"Serialized sparse should have 3 as the last dimension, got "
                f"shape {list(serialized.shape)}")
        lead = serialized.shape[:-1]
        rows = serialized.reshape(-1, 3)
        parts = [(part(i), part(v), part(s)) for i, v, s in rows]
        for k, (_, val, _) in enumerate(parts):
            if val.dtype != dtype.as_numpy_dtype:
                raise errors.InvalidArgumentError(
                    None, None, f"Requested SparseTensor of type {dtype.name} but "
                    f"SparseTensor[{k}].values.dtype() == {val.dtype}")
        if not lead:
            idx, val, shp = parts[0]
            return (idx.reshape(-1, shp.size).astype(np.int64), val, shp.astype(np.int64))
        ranks = {p[2].size for p in parts}
        if len(ranks) > 1:
            raise errors.InvalidArgumentError(
                None, None, "Inconsistent rank across SparseTensors: rank prior to "
                f"SparseTensor[k] was: {min(ranks)} but rank of SparseTensor[k] is: "
                f"{max(ranks)}")
        rank = ranks.pop() if ranks else 0
        positions = np.array(np.unravel_index(np.arange(len(parts)), lead)).T \
            if parts else np.zeros((0, len(lead)), np.int64)
        indices = [np.concatenate([np.broadcast_to(pos, (len(idx.reshape(-1, rank)),
                                                          len(lead))),
                                   idx.reshape(-1, rank)], axis=1)
                   for pos, (idx, _, _) in zip(positions, parts, strict=True)]
        inner = np.max(np.stack([p[2] for p in parts]), axis=0) if parts else \
            np.zeros(rank, np.int64)
        return (np.concatenate(indices).astype(np.int64) if indices else
                np.zeros((0, len(lead) + rank), np.int64),
                np.concatenate([p[1] for p in parts]) if parts else
                np.zeros(0, dtype.as_numpy_dtype),
                np.concatenate([np.array(lead, np.int64), inner]).astype(np.int64))

    return compute


@kernel_factory("DeserializeManySparse")
def _deserialize_many_sparse(node):
    dtype = node.attrs["dtype"]

    def compute(ctx, serialized):
        if serialized.ndim != 2 or serialized.shape[1] != 3:
            raise errors.InvalidArgumentError(
                None, None, f"Serialized sparse should be a matrix with 3 columns, got "
                f"shape {list(serialized.shape)}")
        parts, shapes = [], []
        for b, (i, v, s) in enumerate(serialized):
            idx, val, shp = _parse_proto(i), _parse_proto(v), _parse_proto(s)
            if val.dtype != dtype.as_numpy_dtype:
                raise errors.InvalidArgumentError(
                    None, None, f"Requested SparseTensor of type {dtype.name} but "
                    f"SparseTensor[{b}].values.dtype() == {val.dtype}")
            idx = idx.reshape(-1, shp.size)
            parts.append((np.concatenate([np.full((len(idx), 1), b, np.int64), idx], 1),
                          val))
            shapes.append(shp)
        if not parts:
            return (np.zeros((0, 1), np.int64), np.zeros(0, dtype.as_numpy_dtype),
                    np.array([0], np.int64))
        ranks = {s.size for s in shapes}
        if len(ranks) != 1:
            raise errors.InvalidArgumentError(
                None, None, "Inconsistent rank across SparseTensors")
        shape = np.concatenate([[len(parts)], np.max(np.stack(shapes), axis=0)])
        return (np.concatenate([p[0] for p in parts]).astype(np.int64),
                np.concatenate([p[1] for p in parts]), shape.astype(np.int64))

    return compute



# ---- DecodeJSONExample -------------------------------------------------------------------


@kernel("DecodeJSONExample")
def _decode_json_example(ctx, json_examples):
    out = np.empty(json_examples.shape, dtype=object)
    flat = out.reshape(-1)
    for i, text in enumerate(np.asarray(json_examples, dtype=object).reshape(-1)):
        example = example_pb2.Example()
        try:
            json_format.Parse(bytes(text).decode("utf-8"), example)
        except (json_format.ParseError, UnicodeDecodeError) as e:
            raise errors.InvalidArgumentError(
                None, None, f"Error while parsing JSON: {e}") from None
        flat[i] = example.SerializeToString()
    return out
