"""Writing TensorFlow's own checkpoint format (the "tensor bundle" V2), readable by
TensorFlow's RestoreV2 and by tf_bundle.py.

A bundle `P` is one data file `P.data-00000-of-00001` (the tensors' bytes, back to back,
in the order given) and `P.index`, a LevelDB-style table whose keys are sorted bytewise:
the empty key maps to a BundleHeaderProto (one shard, little-endian, version 1), every
tensor name to a BundleEntryProto (dtype, shape, shard 0, offset, size, masked CRC32C of
the bytes as written). A tensor given in slices (a partitioned variable: TF shape-and-slice
specs) gets an entry listing its slices and one entry per slice (tf_bundle.slice_key). The
table layout (see tf_bundle.py for the reading side):

    data block*   entries [varint shared][varint non_shared][varint value_len][key][value]
                  (shared = prefix length with the previous key, reset every 16 entries at
                  a restart point), then each restart offset as fixed32, then their count;
                  each block is followed by a type byte (0, uncompressed) and the masked
                  CRC32C of block + type byte
    meta block    an empty block (no filters)
    index block   for each data block, its last key -> varint (offset, size); restart 1
    footer        the two block handles padded to 40 bytes, then the magic number

Both files are written under temporary names and renamed into place, data file first, so
a reader never sees an index that names missing bytes.
"""

from __future__ import annotations

import os
import struct

import google_crc32c
import numpy as np

from tensorflux.checkpoint import files, format
from tensorflux.checkpoint.tf_bundle import _TABLE_MAGIC, mask, parse_table, slice_key
from tensorflux.framework import dtypes, errors
from tensorflux.framework.tensor_shape import TensorShape
from tensorflux.protos import tensor_bundle_pb2, tensor_slice_pb2

__all__ = ["write_tf_bundle"]

_BLOCK_SIZE = 256 * 1024  # TensorFlow's table block size
_RESTART_INTERVAL = 16


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class _BlockBuilder:
    """Prefix-compressed entries with restart points (LevelDB's block format)."""

    def __init__(self, restart_interval: int):
        self.restart_interval = restart_interval
        self.buf = bytearray()
        self.restarts = [0]
        self.counter = 0
        self.last_key = b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.counter < self.restart_interval:
            limit = min(len(self.last_key), len(key))
            while shared < limit and self.last_key[shared] == key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buf))
            self.counter = 0
        self.buf += _varint(shared) + _varint(len(key) - shared) + _varint(len(value))
        self.buf += key[shared:] + value
        self.last_key = key
        self.counter += 1

    def empty(self) -> bool:
        return not self.buf

    def size(self) -> int:
        return len(self.buf) + 4 * (len(self.restarts) + 1)

    def finish(self) -> bytes:
        tail = b"".join(struct.pack("<I", r) for r in self.restarts)
        return bytes(self.buf) + tail + struct.pack("<I", len(self.restarts))


def encode_table(items: list[tuple[bytes, bytes]]) -> bytes:
    """A table file holding `items` (key, value), whose keys must be sorted and unique."""
    out = bytearray()
    index = _BlockBuilder(1)

    def write_block(block: _BlockBuilder) -> bytes:
        contents = block.finish()
        handle = _varint(len(out)) + _varint(len(contents))
        trailer = b"\x00"
        crc = google_crc32c.value(contents + trailer)
        out.extend(contents + trailer + struct.pack("<I", mask(crc)))
        return handle

    block = _BlockBuilder(_RESTART_INTERVAL)
    for key, value in items:
        block.add(key, value)
        if block.size() >= _BLOCK_SIZE:
            index.add(block.last_key, write_block(block))
            block = _BlockBuilder(_RESTART_INTERVAL)
    if not block.empty():
        index.add(block.last_key, write_block(block))
    meta_handle = write_block(_BlockBuilder(_RESTART_INTERVAL))
    index_handle = write_block(index)
    footer = (meta_handle + index_handle).ljust(40, b"\x00")
    out.extend(footer + struct.pack("<Q", _TABLE_MAGIC))
    return bytes(out)


def _string_bytes(value: np.ndarray) -> tuple[bytes, int]:
    """A string tensor as TensorFlow lays it out, and the CRC32C of that layout."""
    items = [v if isinstance(v, bytes) else str(v).encode("utf-8")
             for v in np.asarray(value, dtype=object).reshape(-1)]
    lengths, crc = bytearray(), 0
    for item in items:
        lengths += _varint(len(item))
        width = "<I" if len(item) <= 0xFFFFFFFF else "<Q"
        crc = google_crc32c.extend(crc, struct.pack(width, len(item)))
    length_crc = struct.pack("<I", mask(crc))
    crc = google_crc32c.extend(crc, length_crc)
    body = b"".join(items)
    crc = google_crc32c.extend(crc, body)
    return bytes(lengths) + length_crc + body, crc


def _tensor_bytes(value, dtype: dtypes.DType) -> tuple[bytes, int, list[int]]:
    if not dtype.is_numpy_compatible and dtype.base_dtype != dtypes.string:
        raise errors.UnimplementedError(
            None, None, f"Tensors of dtype {dtype.base_dtype.name} (an iterator's state) "
            "cannot be written in TensorFlow's checkpoint format; write tensorflux's "
            "(TENSORFLUX_CHECKPOINT_FORMAT unset)")
    if dtype.base_dtype == dtypes.string:
        arr = np.asarray(value, dtype=object)
        raw, crc = _string_bytes(arr)
        return raw, crc, list(arr.shape)
    arr = np.asarray(value, dtype=dtype.base_dtype.numpy_dtype)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    shape = list(arr.shape)
    raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)  # its own bytes, 1-D: len = size
    return raw, google_crc32c.value(raw), shape


def _slice_proto(extents) -> tensor_slice_pb2.TensorSliceProto:
    proto = tensor_slice_pb2.TensorSliceProto()
    for extent in extents:
        e = proto.extent.add()
        if extent is not None:
            e.start, e.length = extent
    return proto


def write_tf_bundle(prefix: str, tensors) -> None:
    """Writes `tensors` as TensorFlow's checkpoint at `prefix`.

    Args:
      prefix: the checkpoint prefix; its directory must exist.
      tensors: (name, dtype, value) or (name, dtype, value, shape_and_slice) per tensor or
        slice of one; a name is given once, or once per slice with TF's spec
        ("10 4 0,5:-").

    Raises:
      ValueError: a name is empty, repeated, or given both whole and in slices.
      tf.errors.InvalidArgumentError: a malformed spec, or a value not of its slice's shape.
      tf.errors.OpError: the files cannot be written (PermissionDeniedError, ...).
    """
    prefix = os.fspath(prefix)
    files.ensure_parent(prefix)
    entries: dict[bytes, tensor_bundle_pb2.BundleEntryProto] = {}
    chunks, offset = [], 0
    for name, dtype, value, *rest in tensors:
        spec = rest[0] if rest else ""
        dtype = dtypes.as_dtype(dtype).base_dtype
        parsed = format.parse_shape_and_slice(spec)
        key = name.encode("utf-8") if parsed is None else slice_key(name, parsed[1])
        whole = entries.get(name.encode("utf-8"))
        repeated = whole is not None and (parsed is None or not whole.slices)
        if not name or repeated or key in entries:
            raise ValueError("Tensor names of a bundle must be unique and non-empty, each "
                             f"given whole or in distinct slices: {name!r}")
        raw, crc, shape = _tensor_bytes(value, dtype)
        if parsed is not None:
            full_shape, extents = parsed
            want = [d if e is None else e[1] for d, e in zip(full_shape, extents, strict=True)]
            if want != shape:
                raise errors.InvalidArgumentError(
                    None, None, f"Slice '{spec}' of tensor '{name}' has shape {want}, but its "
                    f"value has shape {shape}")
            if whole is None:
                whole = entries[name.encode("utf-8")] = tensor_bundle_pb2.BundleEntryProto(
                    dtype=dtype.as_datatype_enum, shape=TensorShape(full_shape).as_proto())
            whole.slices.append(_slice_proto(extents))
        entries[key] = tensor_bundle_pb2.BundleEntryProto(
            dtype=dtype.as_datatype_enum, shape=TensorShape(shape).as_proto(), shard_id=0,
            offset=offset, size=len(raw), crc32c=mask(crc))
        chunks.append(raw)
        offset += len(raw)
    data_path = f"{prefix}.data-00000-of-00001"
    files.atomic_write(data_path, chunks)  # streamed, no copy of the whole file
    _write_index(prefix, entries, 1)
    files.remove_unreferenced_data(prefix, set())  # a tensorflux checkpoint's old data files


def _write_index(prefix: str, entries: dict, num_shards: int) -> None:
    header = tensor_bundle_pb2.BundleHeaderProto(num_shards=num_shards)
    header.version.producer = 1
    items = [(b"", header.SerializeToString())]
    for key in sorted(entries):
        items.append((key, entries[key].SerializeToString(deterministic=True)))
    files.atomic_write(prefix + ".index", encode_table(items))


def _read_index(prefix: str) -> tuple[int, dict]:
    """(num_shards, {key: BundleEntryProto}) of the bundle at `prefix`."""
    path = prefix + ".index"
    try:
        with open(path, "rb") as f:
            table = parse_table(f.read(), path)
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"Checkpoint index {path} not found") from None
    except OSError as e:
        raise files.os_error(e, f"Failed to read {path}") from None
    try:
        header = tensor_bundle_pb2.BundleHeaderProto.FromString(table.pop(b"", b""))
        entries = {k: tensor_bundle_pb2.BundleEntryProto.FromString(v)
                   for k, v in table.items()}
    except Exception as e:  # noqa: BLE001 - a protobuf DecodeError
        raise errors.DataLossError(None, None, f"Checkpoint index {path} is corrupted: "
                                   f"{e}") from None
    return max(header.num_shards, 1), entries


def merge_tf_bundles(part_prefixes: list[str], destination: str) -> list[str]:
    """MergeV2Checkpoints of TensorFlow bundles: the parts' data files are renamed to the
    destination's shard names (shard ids renumbered in order) and one index listing every
    entry is written; a tensor saved in slices by several parts keeps all its slices.
    Returns the parts merged (their indexes are left for the caller to delete).

    Raises:
      InvalidArgumentError: two parts hold the same tensor or slice.
    """
    parts = [(p, *_read_index(p)) for p in part_prefixes]
    total = sum(n for _, n, _ in parts)
    merged: dict[bytes, tensor_bundle_pb2.BundleEntryProto] = {}
    renames, base = [], 0
    for prefix, num_shards, entries in parts:
        for i in range(num_shards):
            renames.append((f"{prefix}.data-{i:05d}-of-{num_shards:05d}",
                            f"{destination}.data-{base + i:05d}-of-{total:05d}"))
        for key, entry in entries.items():
            have = merged.get(key)
            if entry.slices and have is not None and have.slices:
                have.slices.extend(entry.slices)  # one tensor saved in slices by several parts
                continue
            if have is not None:
                raise errors.InvalidArgumentError(
                    None, None, f"MergeV2Checkpoints: tensor '{key.decode('utf-8', 'replace')}'"
                    " is in more than one part")
            if not entry.slices:
                entry.shard_id += base
            merged[key] = entry
        base += num_shards
    try:
        for src, dst in renames:
            os.replace(src, dst)
    except OSError as e:
        raise files.os_error(e, f"MergeV2Checkpoints failed for {destination}") from None
    _write_index(destination, merged, total)
    files.remove_unreferenced_data(destination, set())
    return [p for p, _, _ in parts]
