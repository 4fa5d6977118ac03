"""Checkpoint files: the tensorflux format (safetensors data + a checksummed index), the
commit protocol, and readers for it, for TensorFlow's tensor bundles and for plain
safetensors files. Graph ops (SaveV2, RestoreV2, MergeV2Checkpoints) and `tf.train.Saver`
are built on this package; see format.py for the file layout."""

from tensorflux.checkpoint.reader import open_checkpoint
from tensorflux.checkpoint.writer import (
    Entry,
    delete_checkpoint,
    merge_checkpoints,
    write_checkpoint,
    write_format,
)

__all__ = ["Entry", "delete_checkpoint", "merge_checkpoints", "open_checkpoint",
           "write_checkpoint", "write_format"]
