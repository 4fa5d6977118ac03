"""File-reading datasets at run time: TFRecord, text lines and fixed-length records.

Each reads its files in order, one file open at a time, through the project's own record
framing (lib/io/tf_record.py: frames verified, GZIP and ZLIB streams inflated). Elements
are 0-d object arrays holding the record's bytes, as string tensors are at run time.
"""

from __future__ import annotations

import gzip
import os
import uuid
import zlib

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import variant_codec
from tensorflux.kernels.datasets import Dataset, _drain, _Failed, _GenIterator
from tensorflux.lib.io.tf_record import RecordReader, TFRecordWriter
from tensorflux.protos import tensor_pb2

_COMPRESSIONS = ("", "GZIP", "ZLIB")


def _check_compression(compression: str) -> str:
    if compression not in _COMPRESSIONS:
        raise errors.InvalidArgumentError(None, None,
                                          f"Unsupported compression_type: {compression}.")
    return compression


_READ_AHEAD = 64


def _scalar(data: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = data
    return out


def _read_file(path: str, compression: str) -> bytes:
    """The whole (uncompressed) contents of `path`."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from None
    try:
        if compression == "GZIP":
            return gzip.decompress(data)
        if compression == "ZLIB":
            return zlib.decompress(data)
    except (OSError, zlib.error, EOFError) as e:
        raise errors.DataLossError(None, None, f"{path}: {e}") from None
    return data


class TFRecordDataset(Dataset):
    def __init__(self, filenames: list[str], compression: str, buffer_size: int):
        self.filenames = filenames
        self.compression = _check_compression(compression)
        self.buffer_size = buffer_size if buffer_size > 0 else None

    def iterate(self, env):
        def gen():
            for path in self.filenames:
                reader = RecordReader(path, self.compression, self.buffer_size)
                try:
                    more = True
                    while more:
                        # _READ_AHEAD records a call; those before a corrupt one are
                        # handed out before its error is raised, in their place.
                        datas: list = []
                        try:
                            more = reader.read_many(_READ_AHEAD, [], datas)
                        except Exception:
                            yield from ([_scalar(d)] for d in datas)
                            raise
                        yield from ([_scalar(d)] for d in datas)
                finally:
                    reader.close()
        return _GenIterator(gen())


class TextLineDataset(Dataset):
    """Lines without their "\\n" (or "\\r\\n"); a last line without one still counts."""

    def __init__(self, filenames: list[str], compression: str):
        self.filenames = filenames
        self.compression = _check_compression(compression)

    def iterate(self, env):
        def gen():
            for path in self.filenames:
                lines = _read_file(path, self.compression).split(b"\n")
                if lines and lines[-1] == b"":
                    lines.pop()
                for line in lines:
                    yield [_scalar(line[:-1] if line.endswith(b"\r") else line)]
        return _GenIterator(gen())


class FixedLengthRecordDataset(Dataset):
    def __init__(self, filenames: list[str], header: int, record: int, footer: int,
                 compression: str):
        if record <= 0:
            raise errors.InvalidArgumentError(None, None, "record_bytes must be greater than 0.")
        if header < 0 or footer < 0:
            raise errors.InvalidArgumentError(None, None, "header_bytes and footer_bytes must "
                                              "be >= 0.")
        self.filenames = filenames
        self.sizes = (header, record, footer)
        self.compression = _check_compression(compression)

    def iterate(self, env):
        header, record, footer = self.sizes

        def gen():
            for path in self.filenames:
                data = _read_file(path, self.compression)
                body = data[header:max(header, len(data) - footer)]
                if len(body) % record:
                    raise errors.InvalidArgumentError(
                        None, None, f"Excluding the header ({header} bytes) and footer "
                        f"({footer} bytes), input file \"{path}\" has body length "
                        f"{len(body)} bytes, which is not an exact multiple of the record "
                        f"length ({record} bytes).")
                for i in range(0, len(body), record):
                    yield [_scalar(body[i:i + record])]
        return _GenIterator(gen())


class FileCacheDataset(Dataset):
    """`Dataset.cache(filename)`: the first complete pass writes the elements to a file
    (TFRecord framing, one TensorProto record per component, kernels/variant_codec.py:
    ragged and sparse components too), renamed into place only when
    the pass reaches the end; any pass that finds the file, in this process or a later one,
    reads the elements from it instead of from the input."""

    SUFFIX = ".tfxcache"

    def __init__(self, input_ds: Dataset, filename: str, n_components: int):
        self.input, self.path = input_ds, filename + self.SUFFIX
        self.n = n_components

    def iterate(self, env):
        if os.path.exists(self.path):
            return _GenIterator(self._read())
        inner = self.input.iterate(env)
        return _GenIterator(self._write(inner), [inner])

    def _read(self):
        reader = RecordReader(self.path)
        try:
            while True:
                element = []
                for _ in range(self.n):
                    rec = reader.read()
                    if rec is None:
                        if element:
                            raise errors.DataLossError(None, None, f"{self.path}: truncated "
                                                       "cache file")
                        return
                    proto = tensor_pb2.TensorProto()
                    proto.ParseFromString(rec[1])
                    element.append(variant_codec.from_proto(proto))
                yield element
        finally:
            reader.close()

    def _write(self, inner):
        tmp = f"{self.path}.tmp-{uuid.uuid4().hex}"
        writer = TFRecordWriter(tmp)
        done = False
        try:
            for x in _drain(inner):
                if not isinstance(x, _Failed):  # a failed element is not cached (as TF)
                    for c in x:
                        writer.write(variant_codec.to_proto(c).SerializeToString())
                yield x
            writer.close()
            os.replace(tmp, self.path)
            done = True
        finally:
            if not done:
                writer.close()
                if os.path.exists(tmp):
                    os.remove(tmp)
