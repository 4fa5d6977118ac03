"""Reading TensorFlow's own checkpoints (the "tensor bundle" V2 format), checked.

A TensorFlow checkpoint `P` is `P.index` plus `P.data-00000-of-0000N`. The index is a
LevelDB-style table: blocks of prefix-compressed key/value entries, each block followed by
a 1-byte compression type and the masked CRC32C of block + type; an index block maps the
last key of every data block to its (offset, size); a 48-byte footer holds the index
block's handle and the magic 0xdb4775248b80fb57. The entry with the empty key is a
BundleHeaderProto (number of shards, byte order); every other key is a tensor name whose
value is a BundleEntryProto (dtype, shape, shard, offset, size, masked CRC32C of the
bytes). Numeric tensors are their little-endian bytes; string tensors are varint64
lengths, a 4-byte masked CRC32C of the lengths, then the bytes.

A tensor saved in slices (a partitioned variable) has an entry under its name that lists
the slices (TensorSliceProtos) and holds no bytes, and one entry per slice under a binary
key (slice_key): a 0 byte, the name, the number of dimensions, then the start and length of
each dimension (-1 for a whole one) in TensorFlow's OrderedCode encoding, which sorts by
name, then by slice.

Not supported (UnimplementedError naming the file): compressed index blocks, big-endian
bundles.
"""

from __future__ import annotations

import os
import struct

import google_crc32c
import numpy as np

from tensorflux.checkpoint import files, format
from tensorflux.checkpoint.reader import _Reader, key_not_found
from tensorflux.framework import dtypes, errors
from tensorflux.framework.tensor_shape import TensorShape
from tensorflux.protos import tensor_bundle_pb2

_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER = 48
_MASK_DELTA = 0xA282EAD8


def is_table(data: bytes) -> bool:
    return len(data) >= _FOOTER and struct.unpack_from("<Q", data, len(data) - 8)[0] == \
        _TABLE_MAGIC


def unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _ordered_unsigned(n: int) -> bytes:
    """OrderedCode's increasing unsigned number: a length byte, then big-endian bytes."""
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return bytes([len(body)]) + body


def _ordered_signed(n: int) -> bytes:
    """OrderedCode's increasing signed number: 7 * len - 1 value bits in `len` bytes (two's
    complement, big-endian), the first bits of the first bytes holding `len` in unary."""
    x = ~n if n < 0 else n
    length = 1 if x < 64 else (x.bit_length() + 7) // 7
    raw = bytearray((n & ((1 << (8 * length)) - 1)).to_bytes(length, "big"))
    header = (0xFF00 >> length) & 0xFF if length <= 8 else 0xFF
    raw[0] ^= header
    if length > 8:
        raw[1] ^= (0xFF00 >> (length - 8)) & 0xFF
    return bytes(raw)


def _ordered_string(text: bytes) -> bytes:
    return text.replace(b"\xff", b"\xff\x00").replace(b"\x00", b"\x00\xff") + b"\x00\x01"


def slice_key(name: str, extents) -> bytes:
    """The index key of one slice of tensor `name`: extents are (start, length) or None
    for a whole dimension."""
    key = _ordered_unsigned(0) + _ordered_string(name.encode("utf-8"))
    key += _ordered_unsigned(len(extents))
    for extent in extents:
        start, length = extent if extent is not None else (0, -1)
        key += _ordered_signed(start) + _ordered_signed(length)
    return key


def _block(data: bytes, offset: int, size: int, path: str) -> bytes:
    end = offset + size
    if end + 5 > len(data):
        raise ValueError("block extends past the end of the file")
    contents = data[offset:end]
    kind = data[end]
    (stored,) = struct.unpack_from("<I", data, end + 1)
    if google_crc32c.value(data[offset:end + 1]) != unmask(stored):
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: block "
                                   f"checksum mismatch at offset {offset}")
    if kind != 0:
        raise errors.UnimplementedError(None, None, f"Checkpoint index {path} uses block "
                                        f"compression {kind}; only uncompressed is supported")
    return contents


def _entries(block: bytes):
    (num_restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    limit = len(block) - 4 * (num_restarts + 1)
    pos, key = 0, b""
    while pos < limit:
        shared, pos = _varint(block, pos)
        non_shared, pos = _varint(block, pos)
        value_len, pos = _varint(block, pos)
        key = key[:shared] + block[pos:pos + non_shared]
        pos += non_shared
        yield key, block[pos:pos + value_len]
        pos += value_len


def parse_table(data: bytes, path: str) -> dict[bytes, bytes]:
    """Every key/value of a TensorFlow table file, checksums verified."""
    try:
        footer = data[-_FOOTER:]
        meta_offset, pos = _varint(footer, 0)
        meta_size, pos = _varint(footer, pos)
        _block(data, meta_offset, meta_size, path)  # verified, though it lists nothing
        index_offset, pos = _varint(footer, pos)
        index_size, pos = _varint(footer, pos)
        out = {}
        for _, handle in _entries(_block(data, index_offset, index_size, path)):
            offset, p = _varint(handle, 0)
            size, _ = _varint(handle, p)
            for k, v in _entries(_block(data, offset, size, path)):
                out[k] = v
        return out
    except (ValueError, struct.error, IndexError) as e:
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: "
                                   f"{e}") from None


class TFBundleReader(_Reader):
    """A TensorFlow V2 checkpoint, read and verified without TensorFlow."""

    def __init__(self, prefix: str, data: bytes):
        self.prefix = prefix
        path = prefix + ".index"
        table = parse_table(data, path)
        try:
            header = tensor_bundle_pb2.BundleHeaderProto.FromString(table.pop(b"", b""))
            self._slices = {k: tensor_bundle_pb2.BundleEntryProto.FromString(v)
                            for k, v in table.items() if k.startswith(b"\x00")}
            self._proto = {k.decode("utf-8"): tensor_bundle_pb2.BundleEntryProto.FromString(v)
                           for k, v in table.items() if not k.startswith(b"\x00")}
        except Exception as e:  # noqa: BLE001 - a protobuf DecodeError
            raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: "
                                       f"{e}") from None
        if header.endianness != 0:
            raise errors.UnimplementedError(None, None, f"{path}: big-endian bundles are not "
                                            "supported")
        self._num_shards = max(header.num_shards, 1)
        self._entries = {k: (dtypes.as_dtype(v.dtype), TensorShape(v.shape).as_list())
                         for k, v in self._proto.items()}

    def entries(self) -> dict:
        return self._entries

    def _data_path(self, shard: int) -> str:
        return f"{self.prefix}.data-{shard:05d}-of-{self._num_shards:05d}"

    def read(self, name: str, spec: str = "") -> np.ndarray:
        entry = self._proto.get(name)
        if entry is None:
            raise key_not_found(name)
        dtype, shape = self._entries[name]
        if entry.slices:
            value = self._assemble(name, entry, dtype, shape)
        else:
            value = self._read_entry(name, entry, dtype, shape)
        if spec:
            parsed = format.parse_shape_and_slice(spec)
            value = value[tuple(slice(a, b) for a, b in format.slice_bounds(shape,
                                                                            parsed[1]))]
        return value

    def _assemble(self, name, entry, dtype, shape) -> np.ndarray:
        """A tensor saved in slices, put together from its slice entries."""
        value = np.empty(shape, dtype=object if dtype is dtypes.string else dtype.numpy_dtype)
        for proto in entry.slices:
            extents = [(e.start, e.length) if e.HasField("length") else None
                       for e in proto.extent]
            part = self._slices.get(slice_key(name, extents))
            if part is None:
                raise errors.DataLossError(None, None, f"Checkpoint index {self.prefix}.index "
                                           f"lists a slice of '{name}' it does not hold")
            bounds = format.slice_bounds(shape, extents)
            value[tuple(slice(a, b) for a, b in bounds)] = self._read_entry(
                name, part, dtype, [b - a for a, b in bounds])
        return value

    def _read_entry(self, name, entry, dtype, shape) -> np.ndarray:
        path = self._data_path(entry.shard_id)
        try:
            with open(path, "rb") as f:
                f.seek(entry.offset)
                raw = f.read(entry.size)
        except FileNotFoundError:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path} is missing "
                                       f"(needed for tensor '{name}')") from None
        except OSError as e:
            raise files.os_error(e, f"Failed to read {path}") from None
        if len(raw) != entry.size:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path} is truncated "
                                       f"(reading tensor '{name}')")
        if dtype is dtypes.string:
            return self._strings(raw, shape, entry, path, name)
        if google_crc32c.value(raw) != unmask(entry.crc32c):
            raise errors.DataLossError(
                None, None, f"Checkpoint data file {path} is corrupted: checksum of "
                f"tensor '{name}' does not match")
        return np.frombuffer(raw, dtype=dtype.numpy_dtype).reshape(shape).copy()

    @staticmethod
    def _strings(raw: bytes, shape, entry, path: str, name: str) -> np.ndarray:
        n = int(np.prod(shape, dtype=np.int64))
        pos, lengths = 0, []
        crc = 0
        try:
            for _ in range(n):
                length, pos = _varint(raw, pos)
                lengths.append(length)
                width = "<I" if length <= 0xFFFFFFFF else "<Q"
                crc = google_crc32c.extend(crc, struct.pack(width, length))
            length_crc = raw[pos:pos + 4]
            crc = google_crc32c.extend(crc, length_crc)
            pos += 4
            out = np.empty(n, dtype=object)
            for i, length in enumerate(lengths):
                out[i] = raw[pos:pos + length]
                pos += length
            crc = google_crc32c.extend(crc, raw[pos - sum(lengths):pos])
        except ValueError:
            pos = -1
        if pos != len(raw) or crc != unmask(entry.crc32c):
            raise errors.DataLossError(None, None, f"Checkpoint data file {path} is corrupted: "
                                       f"checksum of tensor '{name}' does not match")
        return out.reshape(shape)


def tf_data_files(prefix: str) -> list[str]:
    """TensorFlow's data file names for `prefix`, if its index says how many shards."""
    return sorted(p for p in files.data_files_of(prefix) if os.path.exists(p))
