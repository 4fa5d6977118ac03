"""Checkpoint ops: SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename, ShardedFilespec.

Saving and restoring are graph ops (paper §4.3): `tf.train.Saver` only builds them. The
signatures are TensorFlow's, so a saver graph exported by one system imports into the
other. SaveV2 writes its tensors as one checkpoint shard at `prefix`; RestoreV2 reads
tensors by name (and TF shape-and-slice spec) and checks their dtypes; MergeV2Checkpoints
joins per-device shards written under temporary prefixes into one checkpoint. The file
format and the commit protocol are in tensorflux/checkpoint/.

Beyond TensorFlow: RestoreV2 accepts an optional private attr `_shapes` (one shape per
tensor, unknown dimensions allowed) that the Saver sets to its variables' static shapes;
the kernel then rejects a stored tensor of another shape with an InvalidArgumentError
naming it, before anything is assigned.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__: list[str] = []


def _vector_of_names(op):
    for t in op.inputs[1:3]:
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims}")
    return []


def _restore_shape(op):
    _vector_of_names(op)
    shapes = op.attrs.get("_shapes")
    if shapes and len(shapes) == len(op.attrs["dtypes"]):
        return [tensor_shape.as_shape(s) for s in shapes]
    return [tensor_shape.unknown_shape() for _ in op.attrs["dtypes"]]


define_op("SaveV2", inputs=["prefix: string", "tensor_names: string",
                            "shape_and_slices: string", "tensors: dtypes"],
          attrs=["dtypes: list(type)"], shape_fn=_vector_of_names, stateful=True)
define_op("RestoreV2", inputs=["prefix: string", "tensor_names: string",
                               "shape_and_slices: string"],
          outputs=["tensors: dtypes"], attrs=["dtypes: list(type)"],
          shape_fn=_restore_shape, stateful=True)
define_op("MergeV2Checkpoints", inputs=["checkpoint_prefixes: string",
                                        "destination_prefix: string"],
          attrs=["delete_old_dirs: bool = true", "allow_missing_files: bool = false"],
          shape_fn=lambda op: [], stateful=True)
define_op("ShardedFilename", inputs=["basename: string", "shard: int32", "num_shards: int32"],
          outputs=["filename: string"], shape_fn=common_shapes.scalar)
define_op("ShardedFilespec", inputs=["basename: string", "num_shards: int32"],
          outputs=["filename: string"], shape_fn=common_shapes.scalar)
not_differentiable("SaveV2", "RestoreV2", "MergeV2Checkpoints", "ShardedFilename",
                   "ShardedFilespec")


def save_v2(prefix, tensor_names, shape_and_slices, tensors, name: str | None = None):
    """Saves `tensors` under `tensor_names` as a checkpoint at `prefix`; returns the op."""
    return apply_op("SaveV2", prefix=prefix, tensor_names=tensor_names,
                    shape_and_slices=shape_and_slices, tensors=list(tensors),
                    name=name or "SaveV2")


def restore_v2(prefix, tensor_names, shape_and_slices, dtypes_, shapes=None,
               name: str | None = None) -> list:
    """Reads tensors `tensor_names` (of dtypes `dtypes_`) from the checkpoint at `prefix`.

    Args:
      shapes: optional static shapes the restored tensors must have (the `_shapes` attr).
    """
    dtypes_ = [dtypes.as_dtype(d) for d in dtypes_]
    op = apply_op("RestoreV2", prefix=prefix, tensor_names=tensor_names,
                  shape_and_slices=shape_and_slices, dtypes=dtypes_,
                  name=name or "RestoreV2")
    op = op[0].op if isinstance(op, list) else op.op
    if shapes is not None:
        shapes = [tensor_shape.as_shape(s) for s in shapes]
        op._set_attr("_shapes", shapes)
        for t, s in zip(op.outputs, shapes, strict=True):
            t.set_shape(s)
    return list(op.outputs)


def merge_v2_checkpoints(checkpoint_prefixes, destination_prefix, delete_old_dirs=True,
                         allow_missing_files=False, name: str | None = None):
    """Merges the checkpoints at `checkpoint_prefixes` into one at `destination_prefix`."""
    return apply_op("MergeV2Checkpoints", checkpoint_prefixes=checkpoint_prefixes,
                    destination_prefix=destination_prefix, delete_old_dirs=delete_old_dirs,
                    allow_missing_files=allow_missing_files,
                    name=name or "MergeV2Checkpoints")


def sharded_filename(basename, shard, num_shards, name: str | None = None):
    """`basename-<shard>-of-<num_shards>` (five digits each)."""
    return apply_op("ShardedFilename", basename=basename, shard=shard, num_shards=num_shards,
                    name=name or "ShardedFilename")


def sharded_filespec(basename, num_shards, name: str | None = None):
    """`basename-?????-of-<num_shards>`."""
    return apply_op("ShardedFilespec", basename=basename, num_shards=num_shards,
                    name=name or "ShardedFilespec")


# TensorFlow's sharded Saver asks StaticRegexFullMatch whether the prefix is an "s3://" path
# (to pick its temporary directory's name); a SavedModel written by TensorFlow holds it.
define_op("StaticRegexFullMatch", inputs=["input: string"], outputs=["output: bool"],
          attrs=["pattern: string"], shape_fn=lambda op: [op.inputs[0].shape])
not_differentiable("StaticRegexFullMatch")


def static_regex_full_match(input, pattern, name: str | None = None):  # noqa: A002 - TF's name
    """Elementwise: whether each string matches the regex `pattern` entirely."""
    return apply_op("StaticRegexFullMatch", input=input, pattern=pattern,
                    name=name or "StaticRegexFullMatch")
