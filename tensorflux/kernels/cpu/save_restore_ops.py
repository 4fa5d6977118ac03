"""CPU kernels of the checkpoint ops (tensorflux/ops/save_restore_ops.py).

The kernels are thin: the file format, checksums and the commit protocol live in
tensorflux/checkpoint/. SaveV2 hands the arrays it is given to the writer (tensorflux's
format, or TensorFlow's bundle with TENSORFLUX_CHECKPOINT_FORMAT=tensorflow), which streams
them to disk without copying (variable reads are snapshots, so a concurrent update never
tears a saved tensor). RestoreV2 checks every requested name, dtype and shape before it
reads a byte, so a checkpoint of another model fails with one error that lists every
missing name.
"""

from __future__ import annotations

import re

import numpy as np

from tensorflux import checkpoint
from tensorflux.checkpoint import format as ckpt_format
from tensorflux.checkpoint import tf_bundle_writer
from tensorflux.framework import errors
from tensorflux.kernels import buffers
from tensorflux.kernels.registry import kernel, kernel_factory


def tf_type_name(dtype) -> str:
    """The name TensorFlow's C++ messages use for a dtype ("float", "double", "half")."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name,
                                                                          dtype.name)


def _text(value) -> str:
    """A scalar string tensor's value as str."""
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise errors.InvalidArgumentError(None, None, "Expected a scalar string, got shape "
                                              f"{list(value.shape)}")
        value = value.reshape(-1)[0]
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _texts(value) -> list[str]:
    return [_text(v) for v in np.asarray(value, dtype=object).reshape(-1)]


@kernel_factory("SaveV2", expensive=True)
def _save_v2(node):
    dtypes_ = node.attrs["dtypes"]

    def compute(ctx, prefix, tensor_names, shape_and_slices, *tensors):
        names, specs = _texts(tensor_names), _texts(shape_and_slices)
        if not (len(names) == len(specs) == len(tensors)):
            raise errors.InvalidArgumentError(
                None, None, f"Expected {len(names)} tensor names, shape-and-slices and "
                f"tensors, got {len(names)}, {len(specs)} and {len(tensors)}")
        if checkpoint.write_format() == "tensorflow":
            tf_bundle_writer.write_tf_bundle(_text(prefix), list(zip(
                names, dtypes_, tensors, specs, strict=True)))
            return
        entries = [checkpoint.Entry(n, d, t, s)
                   for n, d, t, s in zip(names, dtypes_, tensors, specs, strict=True)]
        checkpoint.write_checkpoint(_text(prefix), entries)

    return compute


def _missing_error(missing: list[str], total: int) -> errors.NotFoundError:
    more = ""
    if len(missing) > 1 or total > 1:
        more = (f" ({len(missing)} of the {total} requested names are missing from the "
                f"checkpoint: {', '.join(missing)})")
    return errors.NotFoundError(None, None, f"Key {missing[0]} not found in checkpoint{more}")


@kernel_factory("RestoreV2", expensive=True)
def _restore_v2(node):
    dtypes_ = node.attrs["dtypes"]
    shapes = node.attrs.get("_shapes")

    def compute(ctx, prefix, tensor_names, shape_and_slices):
        names, specs = _texts(tensor_names), _texts(shape_and_slices)
        if not (len(names) == len(specs) == len(dtypes_)):
            raise errors.InvalidArgumentError(
                None, None, f"Expected {len(dtypes_)} tensor names and shape-and-slices, got "
                f"{len(names)} and {len(specs)}")
        with checkpoint.open_checkpoint(_text(prefix)) as reader:
            entries = reader.entries()
            missing = [n for n in names if n not in entries]
            if missing:
                raise _missing_error(missing, len(names))
            for i, (name, spec, dtype) in enumerate(zip(names, specs, dtypes_, strict=True)):
                stored_dtype, stored_shape = entries[name]
                if stored_dtype != dtype:
                    raise errors.InvalidArgumentError(
                        None, None, f"tensor_name = {name}; expected dtype "
                        f"{tf_type_name(dtype)} does not equal original dtype "
                        f"{tf_type_name(stored_dtype)}")
                if shapes and not spec:
                    _check_shape(name, stored_shape, shapes[i])
            values = tuple(reader.read(n, s) for n, s in zip(names, specs, strict=True))
        for v in values:  # read from the file into new buffers: assigns may keep them
            buffers.mark_fresh(ctx, v)
        return values[0] if len(values) == 1 else values  # the kernel contract

    return compute


def _check_shape(name: str, stored: list[int], want) -> None:
    if want is None or want.ndims is None:
        return
    if len(stored) != want.ndims or any(w is not None and w != s
                                        for w, s in zip(want.as_list(), stored, strict=True)):
        expected = "[" + ",".join("?" if d is None else str(d) for d in want.as_list()) + "]"
        raise errors.InvalidArgumentError(
            None, None, f"tensor_name = {name}; shape in checkpoint "
            f"{ckpt_format.shape_text(stored)} does not match the shape of the variable it "
            f"is restored into: {expected}")


@kernel_factory("MergeV2Checkpoints", expensive=True)
def _merge_v2(node):
    delete_old_dirs = node.attrs["delete_old_dirs"]
    allow_missing = node.attrs["allow_missing_files"]

    def compute(ctx, checkpoint_prefixes, destination_prefix):
        checkpoint.merge_checkpoints(_texts(checkpoint_prefixes), _text(destination_prefix),
                                     delete_old_dirs=delete_old_dirs,
                                     allow_missing_files=allow_missing)

    return compute


@kernel("ShardedFilename")
def _sharded_filename(ctx, basename, shard, num_shards):
    return np.array(f"{_text(basename)}-{int(shard):05d}-of-{int(num_shards):05d}".encode(),
                    dtype=object)


@kernel("ShardedFilespec")
def _sharded_filespec(ctx, basename, num_shards):
    return np.array(f"{_text(basename)}-?????-of-{int(num_shards):05d}".encode(), dtype=object)


@kernel_factory("StaticRegexFullMatch")
def _static_regex_full_match(node):
    try:
        regex = re.compile(node.attrs["pattern"])
    except re.error as e:
        raise errors.InvalidArgumentError(None, None, f"Invalid pattern: "
                                          f"{node.attrs['pattern']}, error: {e}") from None

    def compute(ctx, value):
        flat = [regex.fullmatch(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
                is not None for v in np.asarray(value, dtype=object).reshape(-1)]
        return np.array(flat, dtype=bool).reshape(np.shape(value))

    return compute
