"""Writing checkpoints: one shard (what a SaveV2 kernel does), merging shards, deleting.

`write_checkpoint` streams each tensor's bytes from its array straight into the data file
(no intermediate copy of the whole file, as `safetensors.numpy.save_file` would build),
computing the CRC32C of each tensor as it goes; see format.py for the layout and files.py
for the commit protocol.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from tensorflux.checkpoint import files, format
from tensorflux.framework import dtypes, errors


@dataclass(slots=True)
class Entry:
    """One tensor (or slice of one) to save."""

    name: str
    dtype: dtypes.DType
    value: object
    spec: str = ""  # TF shape-and-slice spec; "" saves the whole tensor


def _parts(entries: list[Entry]) -> tuple[dict, list, list]:
    """The index's tensor table (offsets filled in) and the arrays to write, in order."""
    tensors: dict[str, dict] = {}
    arrays = []
    header_entries = []
    offset = 0
    keys: set[str] = set()
    for e in entries:
        st_dtype = format.storage_dtype(e.dtype)
        arr, st_shape = format.encode_value(e.value, e.dtype)
        value_shape = list(np.shape(e.value))
        parsed = format.parse_shape_and_slice(e.spec)
        if parsed is None:
            full_shape, slice_text = value_shape, None
        else:
            full_shape, extents = parsed
            want = [d if x is None else x[1] for d, x in zip(full_shape, extents, strict=True)]
            if want != value_shape:
                raise errors.InvalidArgumentError(
                    None, None, f"Slice spec '{e.spec}' of tensor '{e.name}' asks for shape "
                    f"{want}, but the tensor has shape {value_shape}")
            slice_text = format.slice_string(extents)
        entry = tensors.setdefault(e.name, {"dtype": e.dtype.base_dtype.name,
                                            "dtype_enum": e.dtype.base_dtype.as_datatype_enum,
                                            "shape": full_shape, "parts": []})
        if entry["dtype"] != e.dtype.base_dtype.name or entry["shape"] != full_shape:
            raise errors.InvalidArgumentError(
                None, None, f"Tensor '{e.name}' is saved twice with different dtypes or shapes")
        if any(p["slice"] == slice_text for p in entry["parts"]) or (
                entry["parts"] and (slice_text is None or entry["parts"][0]["slice"] is None)):
            raise errors.InvalidArgumentError(
                None, None, f"Tensor '{e.name}' is saved twice"
                + (f" (slice {slice_text})" if slice_text else ""))
        key = e.name if slice_text is None else f"{e.name}/.slice:{slice_text}"
        while key in keys:
            key += "_"
        keys.add(key)
        nbytes = arr.nbytes
        if st_shape is None:  # a string blob
            st_shape = [nbytes]
        entry["parts"].append({"slice": slice_text, "shard": 0, "key": key, "begin": offset,
                               "end": offset + nbytes, "crc32c": None})
        header_entries.append((key, st_dtype, st_shape, offset, offset + nbytes))
        arrays.append((entry["parts"][-1], arr))
        offset += nbytes
    return tensors, arrays, header_entries


def write_checkpoint(prefix: str, entries: list[Entry], sync: bool = True) -> str:
    """Writes a one-shard checkpoint at `prefix` and commits it (the index rename).

    Args:
      prefix: the checkpoint prefix; its directory must exist, except that a missing last
        level is created (TensorFlow's BundleWriter does the same; sharded saves rely on it).
      entries: the tensors to save.
      sync: fsync files and the directory (off only in tests and benchmarks of the rest).

    Returns:
      The data file's name.

    Raises:
      InvalidArgumentError: a dtype that cannot be saved, a bad slice, a name twice.
      NotFoundError, PermissionDeniedError, ResourceExhaustedError, ...: file-system errors.
    """
    directory = os.path.dirname(prefix)
    files.ensure_parent(prefix)
    tensors, arrays, header_entries = _parts(entries)
    token = files.new_token()
    data_path = files.data_file_name(prefix, 0, 1, token)
    header = format.safetensors_header(header_entries)
    data_tmp, fd = files.create_temp(data_path)
    index_tmp = None
    try:
        try:
            files.write_all(fd, header)
            written = len(header)
            for part, arr in arrays:
                part["crc32c"] = format.crc32c(arr)
                if arr.nbytes:
                    files.write_all(fd, arr.reshape(-1).view(np.uint8))
                    if sync:
                        files.start_writeback(fd, written, arr.nbytes)
                    written += arr.nbytes
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        body = {"format": format.FORMAT_NAME, "version": format.FORMAT_VERSION,
                "shards": [{"file": os.path.basename(data_path),
                            "size": len(header) + sum(a.nbytes for _, a in arrays),
                            "header_size": len(header),
                            "header_crc32c": format.crc32c(header)}],
                "tensors": tensors}
        index_path = prefix + ".index"
        index_tmp, ifd = files.create_temp(index_path)
        try:
            files.write_all(ifd, format.encode_index(body))
            if sync:
                os.fsync(ifd)
        finally:
            os.close(ifd)
        with files.commit_lock(prefix):
            files.hold(data_path)
            os.replace(data_tmp, data_path)
            os.replace(index_tmp, index_path)  # the commit point
            files.release(data_path)
            if sync:
                files.fsync_dir(directory)
            files.remove_unreferenced_data(prefix, {os.path.basename(data_path)})
    except OSError as e:
        _discard(data_tmp, index_tmp)
        files.release(data_path)
        raise files.os_error(e, f"Failed to write checkpoint {prefix}") from None
    except BaseException:
        _discard(data_tmp, index_tmp)
        files.release(data_path)
        raise
    _discard_registrations(data_tmp, index_tmp)
    return data_path


def _discard(*paths) -> None:
    for p in paths:
        if p is not None:
            files.discard(p)


def _discard_registrations(*paths) -> None:
    for p in paths:
        if p is not None:
            files.release(p)


def read_index(prefix: str) -> dict:
    """The JSON body of `prefix.index` (our format only), checked."""
    path = prefix + ".index"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"Checkpoint index {path} not found") from None
    except OSError as e:
        raise files.os_error(e, f"Failed to read {path}") from None
    return format.decode_index(data, prefix)


def merge_checkpoints(part_prefixes: list[str], destination: str, delete_old_dirs: bool = True,
                      allow_missing_files: bool = False, sync: bool = True) -> None:
    """Merges one-shard checkpoints into one checkpoint at `destination`
    (MergeV2Checkpoints): their data files are renamed to the destination's shard names and
    a merged index is committed.

    Raises:
      NotFoundError: a part is missing (unless `allow_missing_files`).
      InvalidArgumentError: two parts hold the same tensor (slice).
      DataLossError: a part's index is corrupt.
    """
    present = [p for p in part_prefixes
               if not (allow_missing_files and not os.path.exists(p + ".index"))]
    if not present:
        raise errors.InvalidArgumentError(None, None, "MergeV2Checkpoints: no parts to merge")
    if _is_tf_bundle(present[0]):
        from tensorflux.checkpoint import tf_bundle_writer  # it imports this package

        with files.commit_lock(destination):
            merged = tf_bundle_writer.merge_tf_bundles(present, destination)
        _remove_parts(merged, delete_old_dirs)
        return
    bodies = [(p, read_index(p)) for p in present]
    num_shards = sum(len(b["shards"]) for _, b in bodies)
    token = files.new_token()
    tensors: dict[str, dict] = {}
    shards = []
    renames = []
    for part_prefix, body in bodies:
        base = len(shards)
        part_dir = os.path.dirname(part_prefix)
        for shard in body["shards"]:
            final = files.data_file_name(destination, len(shards), num_shards, token)
            renames.append((os.path.join(part_dir, shard["file"]), final))
            shards.append(dict(shard, file=os.path.basename(final)))
        for name, entry in body["tensors"].items():
            merged = tensors.setdefault(name, dict(entry, parts=[]))
            if merged["dtype"] != entry["dtype"] or merged["shape"] != entry["shape"]:
                raise errors.InvalidArgumentError(
                    None, None, f"MergeV2Checkpoints: tensor '{name}' has different dtypes or "
                    "shapes in different parts")
            for part in entry["parts"]:
                if any(q["slice"] == part["slice"] for q in merged["parts"]):
                    raise errors.InvalidArgumentError(
                        None, None, f"MergeV2Checkpoints: tensor '{name}' is in more than "
                        "one part")
                merged["parts"].append(dict(part, shard=base + part["shard"]))
    body = {"format": format.FORMAT_NAME, "version": format.FORMAT_VERSION,
            "shards": shards, "tensors": tensors}
    with files.commit_lock(destination):
        try:
            for src, dst in renames:
                files.hold(dst)
                os.replace(src, dst)
            if sync:
                files.atomic_write(destination + ".index", format.encode_index(body))
            else:
                _write_plain(destination + ".index", format.encode_index(body))
        except OSError as e:
            raise files.os_error(e, f"MergeV2Checkpoints failed for {destination}") from None
        finally:
            for _, dst in renames:
                files.release(dst)
        files.remove_unreferenced_data(destination, {s["file"] for s in shards})
    _remove_parts([p for p, _ in bodies], delete_old_dirs)


def _remove_parts(part_prefixes: list[str], delete_old_dirs: bool) -> None:
    for part_prefix in part_prefixes:
        try:
            os.unlink(part_prefix + ".index")
        except OSError:
            pass
        if delete_old_dirs:
            try:
                os.rmdir(os.path.dirname(part_prefix))
            except OSError:
                pass


def _is_tf_bundle(prefix: str) -> bool:
    """Whether `prefix.index` is TensorFlow's table (else it should be ours)."""
    try:
        with open(prefix + ".index", "rb") as f:
            head = f.read(len(format.INDEX_MAGIC))
    except OSError:
        return False
    return head != format.INDEX_MAGIC


WRITE_FORMATS = ("tensorflux", "tensorflow")


def write_format() -> str:
    """The format SaveV2 writes: TENSORFLUX_CHECKPOINT_FORMAT, "tensorflux" (the default:
    format.py's checksummed safetensors files) or "tensorflow" (TF's tensor bundle, which
    TensorFlow itself can restore; tf_bundle_writer.py).

    Raises:
      InvalidArgumentError: the variable names another format.
    """
    value = os.environ.get("TENSORFLUX_CHECKPOINT_FORMAT", "").strip().lower() or "tensorflux"
    if value not in WRITE_FORMATS:
        raise errors.InvalidArgumentError(
            None, None, f"TENSORFLUX_CHECKPOINT_FORMAT must be one of {', '.join(WRITE_FORMATS)}"
            f"; got {value!r}")
    return value


def _write_plain(path: str, data: bytes) -> None:
    tmp, fd = files.create_temp(path)
    try:
        files.write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    files.release(tmp)


def delete_checkpoint(prefix: str, meta_graph_suffix: str | None = "meta") -> None:
    """Removes checkpoint `prefix`: its index first (so it stops existing at once), then
    its data files, its meta graph and any `<prefix>_temp` directory of a sharded save."""
    for path in [prefix + ".index"] + files.data_files_of(prefix) + (
            [f"{prefix}.{meta_graph_suffix}"] if meta_graph_suffix else []):
        try:
            os.unlink(path)
        except OSError:
            pass
    temp_dir = prefix + "_temp"
    if os.path.isdir(temp_dir):
        for name in os.listdir(temp_dir):
            try:
                os.unlink(os.path.join(temp_dir, name))
            except OSError:
                pass
        try:
            os.rmdir(temp_dir)
        except OSError:
            pass
