"""Reading checkpoints from Python: `tf.train.list_variables`, `load_variable`,
`NewCheckpointReader` (tensorflux checkpoints, TensorFlow's own, and plain safetensors
files; see tensorflux/checkpoint/reader.py)."""

from __future__ import annotations

import os

from tensorflux.checkpoint.reader import open_checkpoint
from tensorflux.train import checkpoint_management

__all__ = ["NewCheckpointReader", "list_variables", "load_checkpoint", "load_variable"]


def NewCheckpointReader(filepattern):  # noqa: N802 - TensorFlow's name
    """A reader of the checkpoint at prefix `filepattern`: `get_tensor`, `has_tensor`,
    `get_variable_to_shape_map`, `get_variable_to_dtype_map`, `debug_string`.

    Raises:
      NotFoundError: no checkpoint there.
      DataLossError: its index is corrupt or truncated.
    """
    if isinstance(filepattern, bytes):
        filepattern = filepattern.decode()
    return open_checkpoint(os.fspath(filepattern))


def _prefix(ckpt_dir_or_file) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = checkpoint_management.latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return latest
    return path


def load_checkpoint(ckpt_dir_or_file):
    """The reader of a checkpoint, or of the latest one in a directory.

    Raises:
      ValueError: a directory with no checkpoint.
      NotFoundError: no checkpoint at the prefix.
    """
    return NewCheckpointReader(_prefix(ckpt_dir_or_file))


def load_variable(ckpt_dir_or_file, name: str):
    """The value of variable `name` ("v" or "v:0") in a checkpoint or directory."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file) -> list:
    """(name, shape) of every variable in a checkpoint or directory, sorted by name."""
    reader = load_checkpoint(ckpt_dir_or_file)
    shapes = reader.get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]

