"""TFRecord files (`tf.python_io`): TensorFlow's record framing, byte for byte.

A TFRecord file is a sequence of records, each framed as

    uint64 length            little-endian
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

where `masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8` (mod 2**32) of the CRC-32C
(Castagnoli) `c` of `x`. With compression ("ZLIB" or "GZIP") the whole framed stream is one
zlib or gzip stream, and record offsets count bytes of the uncompressed stream.

Reading never returns a record whose checksums do not match: a bad length CRC, a bad data
CRC or a record cut short raise `DataLossError` naming the file and the offset (the record's
start, or its data's start for a data CRC), as TensorFlow's "corrupted record at N" does.

CRC-32C comes from `google-crc32c` (C, when its wheel is installed); without it a
table-driven pure-Python implementation (`crc32c_python`) is used. Both are tested against
each other.
"""

from __future__ import annotations

import os
import struct
import zlib

from tensorflux.framework import errors

__all__ = ["TFRecordWriter", "TFRecordOptions", "TFRecordCompressionType",
           "tf_record_iterator"]

# ---- CRC-32C -----------------------------------------------------------------------------

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected


def _make_table() -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_TABLE = _make_table()


def crc32c_python(data: bytes, crc: int = 0) -> int:
    """CRC-32C of `data`, continuing from `crc` (table-driven, one byte per step)."""
    table = _TABLE
    c = crc ^ 0xFFFFFFFF
    for b in bytes(data):
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


try:
    import google_crc32c as _google_crc32c

    _crc32c_native = _google_crc32c.value  # C; takes bytes
    crc32c = _crc32c_native if _google_crc32c.implementation == "c" else crc32c_python
    CRC32C_IMPLEMENTATION = "google-crc32c" if crc32c is _crc32c_native else "python"
except ImportError:  # pragma: no cover - depends on the platform's wheels
    crc32c = crc32c_python
    CRC32C_IMPLEMENTATION = "python"

_MASK_DELTA = 0xA282EAD8


def mask_crc(crc: int) -> int:
    """TensorFlow's masking of a stored CRC: rotate right by 15 bits and add a constant."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask_crc(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The masked CRC-32C that TFRecord framing stores for `data`."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF


# ---- options -----------------------------------------------------------------------------


class TFRecordCompressionType:
    """The type of compression for the record (`tf.python_io.TFRecordCompressionType`)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_COMPRESSION_NAMES = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
                      TFRecordCompressionType.GZIP: "GZIP"}
_WBITS = {"ZLIB": zlib.MAX_WBITS, "GZIP": zlib.MAX_WBITS | 16}


class TFRecordOptions:
    """Options used for manipulating TFRecord files (`tf.python_io.TFRecordOptions`).

    Args:
      compression_type: "", "ZLIB" or "GZIP", a `TFRecordCompressionType`, or None.
      compression_level: zlib level 0-9 (default: zlib's default).
      flush_mode, input_buffer_size, output_buffer_size, window_bits, compression_method,
        mem_level, compression_strategy: accepted for compatibility; buffer sizes are used,
        the rest of zlib's tuning knobs keep zlib's defaults.
    """

    compression_type_map = dict(_COMPRESSION_NAMES)

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None,
                 output_buffer_size=None, window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None, compression_strategy=None):
        if compression_type is not None:
            _compression_string(compression_type)  # validates
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        """"", "ZLIB" or "GZIP" for `options` (a TFRecordOptions, a string, an enum or None)."""
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return _compression_string(options.compression_type)
        return _compression_string(options)

    def __repr__(self) -> str:
        return f"TFRecordOptions(compression_type={self.compression_type!r})"


def _compression_string(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        if value not in ("", "ZLIB", "GZIP"):
            raise ValueError(f'compression_type must be "", "ZLIB" or "GZIP", got {value!r}')
        return value
    if value in _COMPRESSION_NAMES:
        return _COMPRESSION_NAMES[value]
    raise ValueError(f"Unknown compression type: {value!r}")


def _level(options) -> int:
    level = getattr(options, "compression_level", None)
    return zlib.Z_DEFAULT_COMPRESSION if level is None else int(level)


# ---- writing -----------------------------------------------------------------------------

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_HEADER = struct.Struct("<QI")


def frame_record(data: bytes) -> bytes:
    """One record's bytes as TFRecord frames it."""
    length = _LENGTH.pack(len(data))
    return (length + _CRC.pack(masked_crc32c(length)) + data
            + _CRC.pack(masked_crc32c(data)))


def _path_str(path) -> str:
    if isinstance(path, bytes):
        return path.decode()
    return os.fspath(path)


def _not_found(path: str) -> errors.NotFoundError:
    return errors.NotFoundError(None, None, f"{path}; No such file or directory")


class TFRecordWriter:
    """Writes records to a TFRecord file (`tf.python_io.TFRecordWriter`).

    Args:
      path: the file to write (created or truncated).
      options: a TFRecordOptions, or a compression type string ("", "ZLIB", "GZIP").

    Raises:
      NotFoundError: the file's directory does not exist.
      PermissionDeniedError: the file cannot be written.
    """

    def __init__(self, path, options=None):
        self._path = _path_str(path)
        compression = TFRecordOptions.get_compression_type_string(options)
        try:
            self._file = open(self._path, "wb")  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise _not_found(self._path) from None
        except PermissionError:
            raise errors.PermissionDeniedError(None, None,
                                               f"{self._path}; Permission denied") from None
        self._compressor = None
        if compression:
            self._compressor = zlib.compressobj(_level(options), zlib.DEFLATED,
                                                _WBITS[compression])

    def write(self, record) -> None:
        """Appends one record (bytes, or a str encoded as UTF-8)."""
        if self._file is None:
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        if isinstance(record, str):
            record = record.encode()
        elif not isinstance(record, bytes):
            record = bytes(record)
        framed = frame_record(record)
        if self._compressor is not None:
            framed = self._compressor.compress(framed)
        self._file.write(framed)

    def flush(self) -> None:
        """Pushes written records to the file (a sync flush of the compressed stream)."""
        if self._file is None:
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        if self._compressor is not None:
            self._file.write(self._compressor.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        """Finishes the file; further writes fail."""
        if self._file is None:
            return
        if self._compressor is not None:
            self._file.write(self._compressor.flush())
        self._file.close()
        self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# ---- reading -----------------------------------------------------------------------------


class _InflatingReader:
    """A `read(n)` interface over a zlib or gzip stream in a file."""

    def __init__(self, raw, wbits: int, chunk: int, path: str):
        self._raw = raw
        self._path = path
        self._inflater = zlib.decompressobj(wbits)
        self._chunk = chunk
        self._buf = b""
        self._pos = 0
        self._eof = False

    def read(self, n: int) -> bytes:
        while len(self._buf) - self._pos < n and not self._eof:
            data = self._raw.read(self._chunk)
            try:
                if not data:
                    self._eof = True
                    tail = self._inflater.flush()
                else:
                    tail = self._inflater.decompress(data)
            except zlib.error as e:  # as TensorFlow's ZlibInputStream says of a bad stream
                raise errors.DataLossError(None, None, f"inflate() failed: {e} in file "
                                           f"{self._path}") from None
            self._buf = self._buf[self._pos:] + tail
            self._pos = 0
        out = self._buf[self._pos:self._pos + n]
        self._pos += len(out)
        return out

    def close(self) -> None:
        self._raw.close()


def _open_for_reading(path: str, compression: str, buffer_size: int | None):
    try:
        raw = open(path, "rb", buffering=0 if not compression else 1 << 16)  # noqa: SIM115
    except FileNotFoundError:
        raise _not_found(path) from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from None
    except PermissionError:
        raise errors.PermissionDeniedError(None, None, f"{path}; Permission denied") from None
    if compression:
        return _InflatingReader(raw, _WBITS[compression], buffer_size or 1 << 18, path)
    return raw


_MAX_READ = 1 << 26


class RecordReader:
    """Reads the records of one TFRecord file in order, verifying each frame.

    `read()` returns `(offset, data)` for the next record, or None at the end of the file;
    `offset` is where the record starts (in the uncompressed stream). A corrupt or truncated
    record raises DataLossError naming the file and offset; the reader then stays at that
    record, so reading again raises again rather than skipping ahead.

    The stream is read in large blocks into `_buf`; a record is parsed in place (headers
    with `unpack_from`) and its data is the one copy `read` returns.
    """

    __slots__ = ("path", "offset", "_stream", "_buf", "_pos", "_block")

    def __init__(self, path, compression_type: str = "", buffer_size: int | None = None):
        self.path = _path_str(path)
        self.offset = 0
        self._block = buffer_size or 1 << 20
        self._stream = _open_for_reading(self.path, compression_type, self._block)
        self._buf = b""
        self._pos = 0

    def _fill(self, need: int) -> int:
        """Makes at least `need` bytes available from `_pos` if the file has them; returns
        how many are available. The end of the file is not remembered: a file still being
        appended to yields its new records on the next read."""
        avail = len(self._buf) - self._pos
        if avail >= need:
            return avail
        parts = [self._buf[self._pos:]]
        while avail < need:
            # At most _MAX_READ at a time: a corrupt length (its CRC matching by chance or
            # by design) must not allocate its size before the file is known to have it.
            chunk = self._stream.read(max(self._block, min(need - avail, _MAX_READ)))
            if not chunk:
                break
            parts.append(chunk)
            avail += len(chunk)
        self._buf = b"".join(parts)
        self._pos = 0
        return avail

    def read(self):
        offsets, datas = [], []
        self.read_many(1, offsets, datas)
        return (offsets[0], datas[0]) if offsets else None

    def read_many(self, n: int, offsets: list, datas: list) -> bool:
        """Appends up to `n` records to `offsets` and `datas`; returns False if the file
        ended first. One loop with the buffer in locals (per-record cost ~1 us). A corrupt
        or truncated record raises after the records before it were appended."""
        unpack, unpack_crc, crc, mask = _HEADER.unpack_from, _CRC.unpack_from, crc32c, \
            _MASK_DELTA
        pos, buf, offset = self._pos, self._buf, self.offset
        try:
            for _ in range(n):
                if len(buf) - pos < 12:
                    self._pos = pos
                    avail = self._fill(12)
                    pos, buf = self._pos, self._buf
                    if avail < 12:
                        # The file ends here, or inside a header (as TensorFlow's reader
                        # does: a writer may still be appending): no more records.
                        return False
                length, length_crc = unpack(buf, pos)
                c = crc(buf[pos:pos + 8])
                if (((c >> 15) | (c << 17)) + mask) & 0xFFFFFFFF != length_crc:
                    hint = " (Is this even a TFRecord file?)" if offset == 0 else ""
                    raise self._loss(f"corrupted record at {offset}", hint)
                end = pos + 16 + length
                if len(buf) < end:
                    self._pos = pos
                    avail = self._fill(16 + length)
                    pos, buf = self._pos, self._buf
                    if avail < 16 + length:
                        raise self._loss(f"truncated record at {offset}", _SHORT)
                    end = pos + 16 + length
                data = buf[pos + 12:end - 4]
                c = crc(data)
                if (((c >> 15) | (c << 17)) + mask) & 0xFFFFFFFF != unpack_crc(buf, end - 4)[0]:
                    raise self._loss(f"corrupted record at {offset + 12}")
                offsets.append(offset)
                datas.append(data)
                offset += 16 + length
                pos = end
            return True
        finally:
            self._pos, self.offset = pos, offset

    def _loss(self, what: str, hint: str = "") -> errors.DataLossError:
        return errors.DataLossError(None, None, f"{what} in file {self.path}{hint}")

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
            self._buf = b""


_SHORT = " (read less bytes than requested)"


class _RecordIterator:
    """What `tf_record_iterator` returns: an iterator over a file's records."""

    def __init__(self, path, compression: str):
        self._reader = RecordReader(path, compression)

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        if self._reader is None:
            raise StopIteration
        rec = self._reader.read()
        if rec is None:
            self.close()
            raise StopIteration
        return rec[1]

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def tf_record_iterator(path, options=None):
    """An iterator over the records of the TFRecord file `path` (`tf.python_io`).

    Args:
      path: the file to read.
      options: a TFRecordOptions or a compression type string.

    Returns:
      An iterator yielding each record's bytes.

    Raises:
      NotFoundError: `path` does not exist (raised here, not on the first `next`).
      DataLossError: (while iterating) a record is corrupt or truncated.
    """
    return _RecordIterator(path, TFRecordOptions.get_compression_type_string(options))
