"""The tensorflux checkpoint format: safetensors data files plus a checksummed index.

A checkpoint is named by its *prefix* `P` (what `Saver.save` returns) and consists of

    P.index                                          the index (the commit point)
    P.data-00000-of-00002.<token>.safetensors        data shard 0
    P.data-00001-of-00002.<token>.safetensors        data shard 1

Data files are standard safetensors files: an 8-byte little-endian header length N, N
bytes of JSON (`{"key": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...}`,
padded with spaces to a multiple of 8), then the tensors' bytes, back to back with no gaps.
Storage dtypes: F16/BF16/F32/F64, I8..I64, U8..U64, BOOL, C64; complex128 is stored as F64
with a trailing dimension of 2; quantized types in their integer carrier; a string tensor
of n elements is one U8 tensor holding n little-endian uint64 lengths followed by the
concatenated bytes. `<token>` is random per save, so a data file name is never reused: a
checkpoint is rewritten under the same prefix by writing new data files and then replacing
the index, and the old index never describes new data.

The index is a binary envelope around a JSON document:

    8 bytes   magic b"\\x89TFXIDX\\n"
    4 bytes   format version, uint32 LE (1)
    8 bytes   length L of the JSON body, uint64 LE
    L bytes   JSON body (UTF-8)
    4 bytes   CRC32C of everything before it, uint32 LE

The body lists the shards (`file` name relative to the index's directory, total `size`,
`header_size` and the CRC32C of the header bytes `header_crc32c`) and the tensors:
`{"name": {"dtype": "float32", "dtype_enum": 1, "shape": [...], "parts": [{"slice": null |
"0,5:-", "shard": 0, "key": "...", "begin": b, "end": e, "crc32c": c}]}}` (a tensor saved
whole has one part with slice null; a partitioned one a part per saved slice; begin/end are
offsets in the shard's data section). Every byte of every file is covered by a checksum:
the index by its trailer, each data file's header by `header_crc32c`, and its data section
by the per-part CRC32Cs (safetensors leaves no gaps), so a flipped or missing byte anywhere
is a DataLossError, never a silently wrong value.
"""

from __future__ import annotations

import json
import os
import re
import struct

import google_crc32c
import numpy as np

from tensorflux.framework import dtypes, errors

INDEX_MAGIC = b"\x89TFXIDX\n"
FORMAT_VERSION = 1
_ENVELOPE = struct.Struct("<8sIQ")  # magic, version, body length
_TRAILER = struct.Struct("<I")
FORMAT_NAME = "tensorflux-checkpoint"

# tensorflux dtype name -> (safetensors dtype, how the values are stored)
#   "plain": the NumPy storage array as is; "pairs": complex as real pairs (trailing dim 2);
#   "bytes": the string blob.
_STORAGE: dict[str, tuple[str, str]] = {
    "float16": ("F16", "plain"), "bfloat16": ("BF16", "plain"), "float32": ("F32", "plain"),
    "float64": ("F64", "plain"), "int8": ("I8", "plain"), "int16": ("I16", "plain"),
    "int32": ("I32", "plain"), "int64": ("I64", "plain"), "uint8": ("U8", "plain"),
    "uint16": ("U16", "plain"), "uint32": ("U32", "plain"), "uint64": ("U64", "plain"),
    "bool": ("BOOL", "plain"), "complex64": ("C64", "plain"),
    "complex128": ("F64", "pairs"), "string": ("U8", "bytes"),
    "variant": ("U8", "bytes"),  # each element bytes: a SerializeIterator state
    "qint8": ("I8", "plain"), "quint8": ("U8", "plain"), "qint16": ("I16", "plain"),
    "quint16": ("U16", "plain"), "qint32": ("I32", "plain"),
}


def crc32c(data) -> int:
    """CRC32C of a bytes-like object or a C-contiguous array (no copy)."""
    if isinstance(data, np.ndarray):
        if data.flags.writeable:
            data = data.view()
            data.flags.writeable = False
        data = data.reshape(-1).view(np.uint8)
    return google_crc32c.value(data)


def storage_dtype(dtype: dtypes.DType) -> str:
    """The safetensors dtype code a tensor of `dtype` is stored as.

    Raises:
      InvalidArgumentError: `dtype` cannot be saved (resource, variant).
    """
    entry = _STORAGE.get(dtype.base_dtype.name)
    if entry is None:
        raise errors.InvalidArgumentError(
            None, None, f"Saving tensors of dtype {dtype.base_dtype.name} is not supported")
    return entry[0]


# ---- values <-> stored arrays ------------------------------------------------------------


def encode_value(value, dtype: dtypes.DType) -> tuple[np.ndarray, list[int]]:
    """What a tensor's value is written as: (C-contiguous array, safetensors shape).

    The array shares memory with `value` whenever it can (a contiguous numeric array is
    written without a copy).
    """
    kind = _STORAGE[dtype.base_dtype.name][1]
    if kind == "bytes":
        return _encode_strings(value), None
    arr = np.asarray(value)
    if arr.dtype != dtype.numpy_dtype:
        arr = arr.astype(dtype.numpy_dtype)
    arr = np.ascontiguousarray(arr)
    if kind == "pairs":
        return arr, list(arr.shape) + [2]
    return arr, list(arr.shape)


def _encode_strings(value) -> np.ndarray:
    flat = np.asarray(value, dtype=object).reshape(-1)
    items = [v if isinstance(v, bytes) else str(v).encode("utf-8") if isinstance(v, str)
             else bytes(v) for v in flat]
    lengths = np.array([len(b) for b in items], dtype="<u8")
    return np.frombuffer(lengths.tobytes() + b"".join(items), dtype=np.uint8)


def decode_value(raw: np.ndarray, dtype: dtypes.DType, shape: list[int]) -> np.ndarray:
    """The tensor value from the bytes `raw` (a uint8 array) of one stored part."""
    kind = _STORAGE[dtype.base_dtype.name][1]
    if kind == "bytes":
        return _decode_strings(raw, shape)
    arr = raw.view(dtype.numpy_dtype)
    return arr.reshape(shape)


def _decode_strings(raw: np.ndarray, shape: list[int]) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    if raw.size < 8 * n:
        raise ValueError("string blob shorter than its length table")
    lengths = raw[:8 * n].view("<u8").astype(np.int64)
    ends = np.cumsum(lengths) + 8 * n
    if n and ends[-1] != raw.size:
        raise ValueError("string blob length does not match its length table")
    blob = raw.tobytes()
    out = np.empty(n, dtype=object)
    start = 8 * n
    for i, end in enumerate(ends.tolist()):
        out[i] = blob[start:end]
        start = end
    return out.reshape(shape)


# ---- slice specs (TensorFlow's "shape_and_slice" strings) --------------------------------


def parse_shape_and_slice(spec: str) -> tuple[list[int], list[tuple[int, int] | None]] | None:
    """Parses TF's `"dim0 dim1 ... slice"` spec; None for "" (the whole tensor).

    The slice is `"start,length:start,length"` with `-` for a whole dimension.

    Raises:
      InvalidArgumentError: a malformed spec.
    """
    if not spec:
        return None
    parts = spec.split(" ")
    try:
        shape = [int(d) for d in parts[:-1]]
        extents: list[tuple[int, int] | None] = []
        for dim in parts[-1].split(":"):
            if dim == "-":
                extents.append(None)
            else:
                start, length = dim.split(",")
                extents.append((int(start), int(length)))
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Expected a shape and slice spec like '10 4 0,5:-', got '{spec}'"
        ) from None
    if len(extents) != len(shape) or any(d < 0 for d in shape):
        raise errors.InvalidArgumentError(
            None, None, f"Shape and slice spec '{spec}' has {len(shape)} dimensions but a "
            f"slice of {len(extents)}")
    for d, e in zip(shape, extents, strict=True):
        if e is not None and (e[0] < 0 or e[1] < 0 or e[0] + e[1] > d):
            raise errors.InvalidArgumentError(
                None, None, f"Slice in spec '{spec}' is outside the shape {shape}")
    return shape, extents


def slice_string(extents) -> str:
    """TF's slice string for `extents` ("-" per whole dimension)."""
    return ":".join("-" if e is None else f"{e[0]},{e[1]}" for e in extents)


def parse_slice_string(text: str | None, ndims: int) -> list[tuple[int, int] | None]:
    """The extents of a stored part's slice string (None or "" is the whole tensor)."""
    if not text:
        return [None] * ndims
    return [None if d == "-" else tuple(int(x) for x in d.split(",")) for d in text.split(":")]


def slice_bounds(shape, extents) -> tuple[tuple[int, int], ...]:
    """(start, stop) per dimension of `extents` within `shape`."""
    return tuple((0, d) if e is None else (e[0], e[0] + e[1])
                 for d, e in zip(shape, extents, strict=True))


# ---- the index ---------------------------------------------------------------------------


def encode_index(body: dict) -> bytes:
    """The index file's bytes for the JSON `body`."""
    payload = json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")
    head = _ENVELOPE.pack(INDEX_MAGIC, FORMAT_VERSION, len(payload)) + payload
    return head + _TRAILER.pack(google_crc32c.value(head))


def is_index(data: bytes) -> bool:
    return data[:len(INDEX_MAGIC)] == INDEX_MAGIC


def decode_index(data: bytes, prefix: str) -> dict:
    """The JSON body of the index `prefix.index` whose bytes are `data`.

    Raises:
      DataLossError: truncated, extended or corrupted (checksum, version, JSON), or naming a
        data file that is not one of `prefix`'s own (see `_check_shard_names`), naming the
        index's path.
    """
    path = prefix + ".index"
    fixed = _ENVELOPE.size + _TRAILER.size
    if len(data) < fixed:
        raise errors.DataLossError(
            None, None, f"Checkpoint index {path} is truncated: {len(data)} bytes, fewer than "
            f"the {fixed} of its envelope")
    magic, version, length = _ENVELOPE.unpack_from(data)
    if magic != INDEX_MAGIC:
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: bad "
                                   "magic bytes")
    if len(data) != fixed + length:
        raise errors.DataLossError(
            None, None, f"Checkpoint index {path} is truncated or corrupted: {len(data)} bytes "
            f"where its envelope says {fixed + length}")
    (stored,) = _TRAILER.unpack_from(data, len(data) - _TRAILER.size)
    actual = google_crc32c.value(data[:-_TRAILER.size])
    if stored != actual:
        raise errors.DataLossError(
            None, None, f"Checkpoint index {path} is corrupted: checksum does not match "
            f"(stored {stored}, computed {actual})")
    if version != FORMAT_VERSION:
        raise errors.DataLossError(None, None, f"Checkpoint index {path} has format version "
                                   f"{version}; this reader knows version {FORMAT_VERSION}")
    try:
        body = json.loads(data[_ENVELOPE.size:-_TRAILER.size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: "
                                   f"{e}") from None
    if body.get("format") != FORMAT_NAME:
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is not a "
                                   f"{FORMAT_NAME} index")
    _check_shard_names(body, prefix, path)
    try:
        _check_body(body)
    except (TypeError, ValueError, KeyError, IndexError) as e:
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: "
                                   f"{e}") from None
    return body


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_body(body: dict) -> None:
    """ValueError (or TypeError, KeyError) unless every field a reader uses has its type and
    a value in range: shard sizes, part offsets inside their shard's data section, slices
    inside their tensor, and no part with more elements than it stores bytes for (so a
    reader never allocates more than the files hold)."""
    sizes = []
    for shard in body["shards"]:
        size, header = shard["size"], shard["header_size"]
        if not (_is_int(size) and _is_int(header) and _is_int(shard["header_crc32c"])
                and 0 <= header <= size):
            raise ValueError("bad shard sizes")
        sizes.append(size - header)
    if not isinstance(body["tensors"], dict):
        raise ValueError("no tensor table")
    for name, entry in body["tensors"].items():
        dtype = dtypes.as_dtype(entry["dtype_enum"])
        if dtype.base_dtype.name not in _STORAGE:
            raise ValueError(f"tensor '{name}' has dtype {dtype.name}")
        shape, parts = entry["shape"], entry["parts"]
        if not (isinstance(shape, list) and all(_is_int(d) and d >= 0 for d in shape)
                and isinstance(parts, list) and parts):
            raise ValueError(f"tensor '{name}' has a bad shape or part list")
        per_element = 8 if dtype.base_dtype.name == "string" else dtype.size
        for part in parts:
            begin, end, shard = part["begin"], part["end"], part["shard"]
            if not (_is_int(begin) and _is_int(end) and _is_int(shard) and
                    _is_int(part["crc32c"]) and 0 <= shard < len(sizes)
                    and 0 <= begin <= end <= sizes[shard]):
                raise ValueError(f"tensor '{name}' has a part outside its data file")
            dims = shape
            if part["slice"] is not None:
                if not isinstance(part["slice"], str):
                    raise ValueError(f"tensor '{name}' has a bad slice")
                extents = parse_slice_string(part["slice"], len(shape))
                if len(extents) != len(shape) or any(
                        e is not None and (len(e) != 2 or e[0] < 0 or e[1] < 0 or e[0] + e[1] > d)
                        for d, e in zip(shape, extents, strict=True)):
                    raise ValueError(f"tensor '{name}' has a slice outside its shape")
                dims = [d if e is None else e[1] for d, e in zip(shape, extents, strict=True)]
            if per_element * int(np.prod(dims, dtype=object)) > end - begin:
                raise ValueError(f"tensor '{name}' has more elements than its part stores")


# A shard's data file, relative to the index's directory: the prefix's base name, the shard's
# number and count, the save's random token. Nothing else is read, renamed or deleted.
_SHARD_NAME = re.compile(r"\.data-(\d{5})-of-(\d{5})\.[0-9a-f]{8}\.safetensors")


def _check_shard_names(body: dict, prefix: str, path: str) -> None:
    """Every shard entry must name `prefix`'s own data file for its position: the index's
    checksum proves it unchanged, not trustworthy, and a name like `/etc/passwd`, `../x` or a
    FIFO's would make restore read, block on or rename a file the user never named."""
    base = os.path.basename(prefix)
    shards = body.get("shards")
    if not isinstance(shards, list):
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: no "
                                   "shard list")
    for k, shard in enumerate(shards):
        name = shard.get("file") if isinstance(shard, dict) else None
        m = None
        if isinstance(name, str) and name.startswith(base):
            m = _SHARD_NAME.fullmatch(name, len(base))
        if m is None or (int(m.group(1)), int(m.group(2))) != (k, len(shards)):
            raise errors.DataLossError(
                None, None, f"Checkpoint index {path} is corrupted: shard {k} names the data "
                f"file {name!r}, not {base}.data-{k:05d}-of-{len(shards):05d}.<token>"
                ".safetensors beside the index")


# ---- safetensors headers -----------------------------------------------------------------


def safetensors_header(entries: list[tuple[str, str, list[int], int, int]]) -> bytes:
    """The 8-byte length plus the padded JSON header for (key, dtype, shape, begin, end)."""
    header = {"__metadata__": {"format": "tensorflux"}}
    for key, st_dtype, shape, begin, end in entries:
        header[key] = {"dtype": st_dtype, "shape": shape, "data_offsets": [begin, end]}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def shape_text(shape) -> str:
    """A shape as TensorFlow's messages print it: [2,3]."""
    return "[" + ",".join(str(d) for d in shape) + "]"
