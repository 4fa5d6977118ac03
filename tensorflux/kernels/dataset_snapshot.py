"""`Dataset.snapshot(path)` at run time (SnapshotDatasetV2): the first pass writes the
elements to files while handing them on; once that pass has reached the end, every pass,
in this process or a later one, reads the files instead of running the input.

The layout is TensorFlow 2.21's:

    <path>/<fingerprint>/snapshot.metadata
    <path>/<fingerprint>/<run id>/<shard, %08d>.shard/00000000.snapshot

- The fingerprint (a decimal uint64) names what is snapshotted: the input dataset's
  recipes (kernels/dataset_state.fingerprint) and the compression. A changed pipeline has
  another one, so it writes a snapshot of its own beside the old one, as in TensorFlow
  (whose numbers come from its own graph hash: the two never share a directory).
- snapshot.metadata is a SnapshotMetadataRecord (graph_hash 1, run_id 2,
  creation_timestamp 3 in microseconds, version 4 (= 2), dtype 5 (packed), finalized
  1000), written when a pass starts writing (finalized false) and again at its end
  (finalized true). A pass that finds it finalized reads the run it names; any other pass
  writes a new run (a writer killed midway, or one still at work, leaves it unfinalized:
  TensorFlow writes again then too, the last to finish naming its run). A writing pass
  that is closed before the end removes its run (TensorFlow leaves it behind, unread),
  and the metadata if that still names it.
- `shard_func(element)` (an int64 >= 0) picks an element's shard; each shard is one
  TFRecord file of TensorProtos, an element's components in order (kernels/variant_codec:
  ragged and sparse components too), framed as TFRecord and compressed as "" / "GZIP" /
  "SNAPPY" (lib/io/snappy.py), as TensorFlow's version 2 files.
- Reading: `reader_func` gets a dataset whose elements are the shards' datasets, in shard
  order, and returns the dataset whose elements the pass gives.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import struct
import threading
import time
import uuid

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import dataset_state, variant_codec
from tensorflux.kernels.datasets import (
    Dataset,
    TensorSliceDataset,
    _drain,
    _Failed,
    _GenIterator,
    as_dataset,
)
from tensorflux.lib.io import snappy
from tensorflux.lib.io.tf_record import (
    RecordReader,
    TFRecordWriter,
    frame_record,
    masked_crc32c,
)
from tensorflux.lib.protowire import read_varint, varint
from tensorflux.protos import tensor_pb2

VERSION = 2
METADATA = "snapshot.metadata"
COMPRESSIONS = ("", "GZIP", "SNAPPY")
_FINALIZED = 1000


def check_compression(compression: str) -> str:
    """The file compression of a snapshot's `compression` attr ("AUTO" is SNAPPY)."""
    compression = "SNAPPY" if compression == "AUTO" else compression
    if compression not in COMPRESSIONS:
        raise errors.InvalidArgumentError(
            None, None, f"Unsupported compression: {compression!r} (expected AUTO, GZIP, "
            "SNAPPY or none)")
    return compression


# ---- snapshot.metadata ---------------------------------------------------------------------

def encode_metadata(graph_hash: str, run_id: str, dtypes: list[int], finalized: bool,
                    timestamp_us: int) -> bytes:
    packed = b"".join(varint(d) for d in dtypes)
    out = [b"\x0a" + varint(len(graph_hash)) + graph_hash.encode(),
           b"\x12" + varint(len(run_id)) + run_id.encode(),
           b"\x18" + varint(timestamp_us), b"\x20" + varint(VERSION),
           b"\x2a" + varint(len(packed)) + packed]
    if finalized:
        out.append(varint(_FINALIZED << 3) + b"\x01")
    return b"".join(out)


def decode_metadata(data: bytes, path: str) -> dict:
    """The fields of a SnapshotMetadataRecord: graph_hash, run_id, version, dtypes,
    finalized (what else it holds is skipped).

    Raises:
      DataLossError: not a metadata record.
    """
    out = {"graph_hash": "", "run_id": "", "version": 0, "dtypes": [], "finalized": False}
    pos = 0
    try:
        while pos < len(data):
            key, pos = read_varint(data, pos)
            field, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = read_varint(data, pos)
                if field == 4:
                    out["version"] = value
                elif field == 5:
                    out["dtypes"].append(value)
                elif field == _FINALIZED:
                    out["finalized"] = bool(value)
            elif wire == 2:
                n, pos = read_varint(data, pos)
                chunk, pos = data[pos:pos + n], pos + n
                if len(chunk) != n:
                    raise IndexError
                if field in (1, 2):
                    out["graph_hash" if field == 1 else "run_id"] = chunk.decode()
                elif field == 5:
                    at = 0
                    while at < n:
                        d, at = read_varint(chunk, at)
                        out["dtypes"].append(d)
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
            else:
                raise IndexError
    except (IndexError, ValueError, UnicodeDecodeError):
        raise errors.DataLossError(None, None, f"{path}: not a snapshot metadata "
                                   "record") from None
    return out


def _write_atomically(path: str, data: bytes) -> None:
    """Replaces `path` by `data` through a temporary file (readers see one or the other)."""
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# ---- shard files ---------------------------------------------------------------------------

class _ShardWriter:
    """One shard's file: TFRecord frames of TensorProtos, compressed as asked."""

    def __init__(self, path: str, compression: str):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.compression = compression
        if compression == "SNAPPY":
            self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
            self._pending: list = []
            self._size = 0
        else:
            self._writer = TFRecordWriter(path, compression)

    def write(self, element: list) -> None:
        for c in element:
            record = variant_codec.to_proto(c).SerializeToString()
            if self.compression != "SNAPPY":
                self._writer.write(record)
                continue
            framed = frame_record(record)
            self._pending.append(framed)
            self._size += len(framed)
            if self._size >= snappy.BLOCK:
                self._flush()

    def _flush(self) -> None:
        self._file.write(snappy.encode_stream(b"".join(self._pending)))
        self._pending, self._size = [], 0

    def close(self) -> None:
        if self.compression != "SNAPPY":
            self._writer.close()
        elif not self._file.closed:
            if self._pending:
                self._flush()
            self._file.close()


def _records(path: str, compression: str):
    """The records of one shard file."""
    if compression != "SNAPPY":
        reader = RecordReader(path, compression)
        try:
            while (rec := reader.read()) is not None:
                yield rec[1]
        finally:
            reader.close()
        return
    with open(path, "rb") as f:
        data = snappy.decode_stream(f.read())
    reader = _BytesRecords(data, path)
    yield from reader


class _BytesRecords:
    """The TFRecord frames of an uncompressed stream in memory, checked as RecordReader
    checks them (it reads files; a Snappy stream is inflated whole first)."""

    def __init__(self, data: bytes, path: str):
        self._data, self._path = data, path

    def __iter__(self):
        data, pos = self._data, 0
        while pos < len(data):
            if pos + 12 > len(data):
                raise errors.DataLossError(None, None, f"{self._path}: truncated record "
                                           f"at {pos}")
            (length,) = struct.unpack_from("<Q", data, pos)
            (crc,) = struct.unpack_from("<I", data, pos + 8)
            end = pos + 12 + length + 4
            if crc != masked_crc32c(data[pos:pos + 8]) or end > len(data) or \
                    struct.unpack_from("<I", data, end - 4)[0] != \
                    masked_crc32c(data[pos + 12:end - 4]):
                raise errors.DataLossError(None, None, f"{self._path}: corrupted record "
                                           f"at {pos}")
            yield data[pos + 12:end - 4]
            pos = end


class ShardDataset(Dataset):
    """The elements of one shard's files, in order."""

    def __init__(self, paths: list[str], n_components: int, compression: str):
        self.paths, self.n, self.compression = paths, n_components, compression

    def iterate(self, env):
        def gen():
            for path in self.paths:
                element = []
                for rec in _records(path, self.compression):
                    element.append(variant_codec.from_proto(
                        tensor_pb2.TensorProto.FromString(rec)))
                    if len(element) == self.n:
                        yield element
                        element = []
                if element:
                    raise errors.DataLossError(None, None, f"{path}: an element cut short")
        return _GenIterator(gen())


def _scalar(item) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = item
    return out


# ---- the dataset ---------------------------------------------------------------------------

class SnapshotDataset(Dataset):
    def __init__(self, input_ds: Dataset, path: str, compression: str, dtypes: list,
                 reader: tuple, shard: tuple):
        self.input, self.path = input_ds, path
        self.compression = check_compression(compression)
        self.dtypes = [int(d.as_datatype_enum) for d in dtypes]
        self.reader, self.shard = reader, shard  # (call, captured) of each function
        self._hash_dir: str | None = None
        self._lock = threading.Lock()

    def hash_dir(self) -> str:
        with self._lock:
            if self._hash_dir is None:
                key = f"{dataset_state.fingerprint(self.input)}:{self.compression}"
                h = int(hashlib.sha256(key.encode()).hexdigest()[:16], 16)
                self._hash_dir = os.path.join(self.path, str(h))
            return self._hash_dir

    def iterate(self, env):
        current: list = []
        it = _GenIterator(self._pass(env, current))
        it.children = lambda: list(current)
        return it

    def _pass(self, env, current: list):
        """The elements of one pass: read or written, as the metadata
        says when the first element is asked for (a new pass starts before the one it
        replaces is closed, and that one may still remove what it had begun)."""
        hash_dir = self.hash_dir()
        meta_path = os.path.join(hash_dir, METADATA)
        meta = None
        if os.path.exists(meta_path):
            with open(meta_path, "rb") as f:
                meta = decode_metadata(f.read(), meta_path)
        if meta is not None and meta["finalized"]:
            self._check(meta, meta_path)
            current[:] = [self._read(os.path.join(hash_dir, meta["run_id"]), env)]
            yield from _drain(current[0])
            return
        current[:] = [self.input.iterate(env)]
        yield from self._write(current[0], hash_dir)

    def _check(self, meta: dict, path: str) -> None:
        if meta["version"] != VERSION:
            raise errors.InvalidArgumentError(
                None, None, f"{path}: snapshot version {meta['version']}, expected {VERSION}")
        if meta["dtypes"] != self.dtypes:
            raise errors.InvalidArgumentError(
                None, None, f"{path}: the snapshot holds elements of types "
                f"{meta['dtypes']}, the dataset gives {self.dtypes}")

    def _read(self, run_dir: str, env):
        shard_dirs = sorted(glob.glob(os.path.join(glob.escape(run_dir), "*.shard")))
        shards = np.empty(len(shard_dirs), dtype=object)
        shards[:] = [ShardDataset(sorted(glob.glob(os.path.join(glob.escape(d),
                                                                "*.snapshot"))),
                                  len(self.dtypes), self.compression) for d in shard_dirs]
        call, captured = self.reader
        out = call([_scalar(TensorSliceDataset([shards]))] + list(captured))
        return as_dataset(out[0]).iterate(env)

    def _shard_of(self, element: list) -> int:
        call, captured = self.shard
        (index,) = call(list(element) + list(captured))
        if np.ndim(index) != 0 or int(index) < 0:
            raise errors.InvalidArgumentError(
                None, None, f"shard_func must return a non-negative int64 scalar, got "
                f"{np.asarray(index).tolist()}")
        return int(index)

    def _write(self, inner, hash_dir: str):
        """The input's elements, written as they pass into a new run, which the metadata
        names from the first element asked for on."""
        run_id = str(uuid.uuid4().int >> 65)
        run_dir = os.path.join(hash_dir, run_id)
        os.makedirs(hash_dir, exist_ok=True)
        _write_atomically(os.path.join(hash_dir, METADATA), encode_metadata(
            os.path.basename(hash_dir), run_id, self.dtypes, False, int(time.time() * 1e6)))
        writers: dict[int, _ShardWriter] = {}
        done = False
        try:
            for x in _drain(inner):
                if not isinstance(x, _Failed):  # a failed element is not written
                    shard = self._shard_of(x)
                    if shard not in writers:
                        writers[shard] = _ShardWriter(os.path.join(
                            run_dir, f"{shard:08d}.shard", "00000000.snapshot"),
                            self.compression)
                    writers[shard].write(x)
                yield x
            for w in writers.values():
                w.close()
            _write_atomically(os.path.join(hash_dir, METADATA), encode_metadata(
                os.path.basename(hash_dir), run_id, self.dtypes, True,
                int(time.time() * 1e6)))
            done = True
        finally:
            if not done:
                _abandon(writers, hash_dir, run_id)


def _abandon(writers: dict, hash_dir: str, run_id: str) -> None:
    """Removes the files of a writing pass that did not reach the end: its run, and the
    metadata if it still names that run."""
    for w in writers.values():
        w.close()
    shutil.rmtree(os.path.join(hash_dir, run_id), ignore_errors=True)
    meta_path = os.path.join(hash_dir, METADATA)
    try:
        with open(meta_path, "rb") as f:
            meta = decode_metadata(f.read(), meta_path)
        if meta["run_id"] == run_id and not meta["finalized"]:
            os.remove(meta_path)
    except (OSError, errors.DataLossError):
        pass

