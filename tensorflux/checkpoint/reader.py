"""Reading checkpoints: `CheckpointReader` (what `tf.train.NewCheckpointReader` returns).

One reader serves three kinds of files, chosen by what is on disk:

* a tensorflux checkpoint (`P.index` starts with our magic): every byte is checked
  against the CRC32Cs of the index (format.py) before a value is returned;
* a TensorFlow tensor bundle (`P.index` is a TensorFlow table): tf_bundle.py, checked
  against TensorFlow's own CRC32Cs;
* a plain `.safetensors` file given by its path (no checksums exist to check).

Corruption and truncation raise DataLossError naming the file and the tensor being read;
a missing checkpoint raises NotFoundError as TensorFlow's reader does.
"""

from __future__ import annotations

import math
import os
import stat
import threading

import numpy as np

from tensorflux.checkpoint import files, format
from tensorflux.framework import dtypes, errors


def _not_found(prefix: str) -> errors.NotFoundError:
    return errors.NotFoundError(
        None, None, "Unsuccessful TensorSliceReader constructor: Failed to find any matching "
        f"files for {prefix}")


def open_checkpoint(prefix: str):
    """The reader for the checkpoint at `prefix` (see the module docstring).

    Raises:
      NotFoundError: nothing is there.
      DataLossError: the index is corrupt or truncated.
    """
    prefix = os.fspath(prefix)
    index_path = prefix + ".index"
    try:
        with open(index_path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = None
    except IsADirectoryError:
        data = None
    except OSError as e:
        raise files.os_error(e, f"Failed to read {index_path}") from None
    if data is None:
        if os.path.isfile(prefix) and _looks_like_safetensors(prefix):
            return SafetensorsFileReader(prefix)
        raise _not_found(prefix)
    if format.is_index(data):
        return BundleReader(prefix, format.decode_index(data, prefix))
    from tensorflux.checkpoint import tf_bundle  # tf_bundle imports this module

    if tf_bundle.is_table(data):
        return tf_bundle.TFBundleReader(prefix, data)
    raise errors.DataLossError(
        None, None, f"Checkpoint index {index_path} is corrupted: it is neither a tensorflux "
        "nor a TensorFlow checkpoint index")


def _looks_like_safetensors(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError:
        return False
    return len(head) == 9 and head[8:9] == b"{"


class _Reader:
    """What every reader offers: the TF1 `CheckpointReader` methods."""

    prefix: str

    def entries(self) -> dict:
        """name -> (DType, shape list)."""
        raise NotImplementedError

    def read(self, name: str, spec: str = "") -> np.ndarray:
        raise NotImplementedError

    def has_tensor(self, name: str) -> bool:
        return name in self.entries()

    def get_tensor(self, name: str) -> np.ndarray:
        """The value of tensor `name` (NotFoundError "Key x not found in checkpoint")."""
        value = self.read(name)
        return value[()] if value.ndim == 0 and value.dtype == object else value

    def get_variable_to_shape_map(self) -> dict:
        return {k: list(shape) for k, (_, shape) in self.entries().items()}

    def get_variable_to_dtype_map(self) -> dict:
        return {k: dtype for k, (dtype, _) in self.entries().items()}

    def debug_string(self) -> bytes:
        lines = [f"{k} ({d.name}) {s}" for k, (d, s) in sorted(self.entries().items())]
        return ("\n".join(lines) + "\n").encode()

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Superseded(errors.DataLossError):
    """A data file vanished because the prefix was saved again (internal; retried)."""


def key_not_found(name: str) -> errors.NotFoundError:
    return errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")


class BundleReader(_Reader):
    """A tensorflux checkpoint (see format.py), verified as it is read."""

    def __init__(self, prefix: str, body: dict):
        self.prefix = prefix
        self._dir = os.path.dirname(prefix)
        self._body = body
        self._tensors = body["tensors"]
        self._shards = body["shards"]
        self._open: dict[int, tuple] = {}  # shard -> (fd, data section start)
        self._lock = threading.Lock()
        self._entries = None

    def entries(self) -> dict:
        if self._entries is None:
            self._entries = {k: (dtypes.as_dtype(v["dtype_enum"]), list(v["shape"]))
                             for k, v in self._tensors.items()}
        return self._entries

    def dtype_of(self, name: str) -> dtypes.DType:
        entry = self._tensors.get(name)
        if entry is None:
            raise key_not_found(name)
        return dtypes.as_dtype(entry["dtype_enum"])

    def shape_of(self, name: str) -> list[int]:
        entry = self._tensors.get(name)
        if entry is None:
            raise key_not_found(name)
        return list(entry["shape"])

    # ---- shards -----------------------------------------------------------------------
    def _shard(self, index: int, name: str) -> tuple[int, int, str]:
        with self._lock:
            got = self._open.get(index)
            if got is not None:
                return got
            shard = self._shards[index]
            path = os.path.join(self._dir, shard["file"])
            try:
                # Non-blocking: a FIFO or device under the name must not block the open.
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except FileNotFoundError:
                if self._reload_if_superseded():
                    raise _Superseded(None, None, "checkpoint rewritten while reading") from None
                raise errors.DataLossError(
                    None, None, f"Checkpoint data file {path} is missing (needed for tensor "
                    f"'{name}' of checkpoint {self.prefix})") from None
            except OSError as e:
                raise files.os_error(e, f"Failed to open {path}") from None
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise errors.DataLossError(
                        None, None, f"Checkpoint data file {path} is not a regular file "
                        f"(reading tensor '{name}')")
                size = st.st_size
                if size != shard["size"]:
                    raise errors.DataLossError(
                        None, None, f"Checkpoint data file {path} is truncated or corrupted: "
                        f"{size} bytes where the index says {shard['size']} (reading tensor "
                        f"'{name}')")
                header = os.pread(fd, shard["header_size"], 0)
                if format.crc32c(header) != shard["header_crc32c"]:
                    raise errors.DataLossError(
                        None, None, f"Checkpoint data file {path} is corrupted: its header "
                        f"checksum does not match (reading tensor '{name}')")
            except BaseException:
                os.close(fd)
                raise
            try:  # the whole shard is usually read: let the kernel read ahead
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except (AttributeError, OSError):
                pass
            got = self._open[index] = (fd, shard["header_size"], path)
            return got

    def _read_part(self, name: str, entry: dict, part: dict) -> np.ndarray:
        fd, start, path = self._shard(part["shard"], name)
        n = part["end"] - part["begin"]
        raw = np.empty(n, dtype=np.uint8)
        view = memoryview(raw)
        offset = start + part["begin"]
        got = 0
        while got < n:
            k = os.preadv(fd, [view[got:]], offset + got)
            if k <= 0:
                raise errors.DataLossError(
                    None, None, f"Checkpoint data file {path} is truncated (reading tensor "
                    f"'{name}')")
            got += k
        actual = format.crc32c(raw)
        if actual != part["crc32c"]:
            raise errors.DataLossError(
                None, None, f"Checkpoint data file {path} is corrupted: checksum of tensor "
                f"'{name}' does not match (stored {part['crc32c']}, computed {actual})")
        dtype = dtypes.as_dtype(entry["dtype_enum"])
        ext = format.parse_slice_string(part["slice"], len(entry["shape"]))
        shape = [d if e is None else e[1] for d, e in zip(entry["shape"], ext, strict=True)]
        try:
            return format.decode_value(raw, dtype, shape)
        except ValueError as e:  # only reachable if a checksum collides
            raise errors.DataLossError(None, None, f"Checkpoint data file {path}: tensor "
                                       f"'{name}' cannot be decoded: {e}") from None

    def _reload_if_superseded(self) -> bool:
        """Whether the index on disk now names other data files (the prefix was saved
        again since this reader opened it); if so, this reader switches to it."""
        try:
            with open(self.prefix + ".index", "rb") as f:
                body = format.decode_index(f.read(), self.prefix)
        except (OSError, errors.OpError):
            return False
        if body["shards"] == self._shards:
            return False
        opened, self._open = self._open, {}  # the caller holds self._lock
        for fd, _, _ in opened.values():
            os.close(fd)
        self._body, self._tensors, self._shards = body, body["tensors"], body["shards"]
        self._entries = None
        return True

    # ---- values -----------------------------------------------------------------------
    def read(self, name: str, spec: str = "") -> np.ndarray:
        """Tensor `name`, or the slice TF's `spec` ("10 4 0,5:-") asks for; verified.

        A prefix saved again while it is being read is read again from its new index.

        Raises:
          NotFoundError: no such tensor.
          InvalidArgumentError: `spec`'s shape differs from the stored one, or the stored
            slices do not cover the requested region.
          DataLossError: a checksum, size or header does not match.
        """
        for _ in range(100):  # each retry means a newer save committed meanwhile
            try:
                return self._read(name, spec)
            except _Superseded:
                continue
        return self._read(name, spec)

    def _read(self, name: str, spec: str = "") -> np.ndarray:
        entry = self._tensors.get(name)
        if entry is None:
            raise key_not_found(name)
        shape = list(entry["shape"])
        parsed = format.parse_shape_and_slice(spec)
        if parsed is not None and parsed[0] != shape:
            raise errors.InvalidArgumentError(
                None, None, f"tensor_name = {name}; shape in shape_and_slice spec "
                f"{format.shape_text(parsed[0])} does not match the shape stored in "
                f"checkpoint: {format.shape_text(shape)}")
        want = [None] * len(shape) if parsed is None else parsed[1]
        parts = entry["parts"]
        whole = [p for p in parts if p["slice"] is None]
        if whole:
            value = self._read_part(name, entry, whole[0])
            if parsed is None:
                return value
            return value[tuple(slice(a, b) for a, b in format.slice_bounds(shape, want))]
        return self._assemble(name, entry, want)

    def _assemble(self, name: str, entry: dict, want) -> np.ndarray:
        shape = entry["shape"]
        bounds = format.slice_bounds(shape, want)
        dtype = dtypes.as_dtype(entry["dtype_enum"])
        _check_coverage(name, shape, bounds, entry["parts"])
        out = np.empty([b - a for a, b in bounds], dtype=dtype.numpy_dtype)
        covered = np.zeros(out.shape, dtype=bool)
        for part in entry["parts"]:
            pb = format.slice_bounds(shape, format.parse_slice_string(part["slice"],
                                                                      len(shape)))
            inter = [(max(a, c), min(b, d)) for (a, b), (c, d) in zip(bounds, pb, strict=True)]
            if any(lo >= hi for lo, hi in inter) and out.size:
                continue
            value = self._read_part(name, entry, part)
            dst = tuple(slice(lo - a, hi - a) for (lo, hi), (a, _) in zip(inter, bounds,
                                                                           strict=True))
            src = tuple(slice(lo - c, hi - c) for (lo, hi), (c, _) in zip(inter, pb,
                                                                           strict=True))
            out[dst] = value[src]
            covered[dst] = True
        if not covered.all():
            raise errors.InvalidArgumentError(
                None, None, f"tensor_name = {name}; the saved slices do not cover the "
                "requested slice")
        return out

    def close(self) -> None:
        with self._lock:
            opened, self._open = self._open, {}
        for fd, _, _ in opened.values():
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _check_coverage(name: str, shape, bounds, parts) -> None:
    """InvalidArgumentError, before anything is allocated, if the stored slices (which never
    overlap in a save) hold fewer elements of the requested region than it has: a region
    of a huge tensor of which little was saved is not allocated only to find that out."""
    held = 0
    for part in parts:
        pb = format.slice_bounds(shape, format.parse_slice_string(part["slice"], len(shape)))
        held += math.prod(max(0, min(b, d) - max(a, c))
                          for (a, b), (c, d) in zip(bounds, pb, strict=True))
    if held < math.prod(b - a for a, b in bounds):
        raise errors.InvalidArgumentError(
            None, None, f"tensor_name = {name}; the saved slices do not cover the requested "
            "slice")


_SAFETENSORS_DTYPES = {"F16": "float16", "BF16": "bfloat16", "F32": "float32",
                       "F64": "float64", "I8": "int8", "I16": "int16", "I32": "int32",
                       "I64": "int64", "U8": "uint8", "U16": "uint16", "U32": "uint32",
                       "U64": "uint64", "BOOL": "bool", "C64": "complex64"}


class SafetensorsFileReader(_Reader):
    """A plain `.safetensors` file (e.g. weights from elsewhere), read with the safetensors
    library; such files carry no checksums, so nothing is verified beyond their header."""

    def __init__(self, path: str):
        from safetensors import safe_open

        self.prefix = path
        try:
            self._file = safe_open(path, framework="numpy")
            self._keys = list(self._file.keys())
            self._entries = {}
            for k in self._keys:
                sl = self._file.get_slice(k)
                self._entries[k] = (dtypes.as_dtype(_SAFETENSORS_DTYPES[sl.get_dtype()]),
                                    list(sl.get_shape()))
        except (OSError, KeyError, ValueError, Exception) as e:  # noqa: BLE001
            raise errors.DataLossError(None, None, f"{path} is not a readable safetensors "
                                       f"file: {e}") from None

    def entries(self) -> dict:
        return self._entries

    def read(self, name: str, spec: str = "") -> np.ndarray:
        if name not in self._entries:
            raise key_not_found(name)
        dtype, shape = self._entries[name]
        if dtype is dtypes.bfloat16:  # NumPy has no bfloat16: take the raw bits
            raw = self._file.get_slice(name)[:]
            value = np.asarray(raw).view(dtype.numpy_dtype).reshape(shape)
        else:
            value = self._file.get_tensor(name)
        parsed = format.parse_shape_and_slice(spec)
        if parsed is None:
            return value
        return value[tuple(slice(a, b) for a, b in format.slice_bounds(shape, parsed[1]))]
