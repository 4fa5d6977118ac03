"""Training utilities that are not ops (`tf.train.write_graph`)."""

from __future__ import annotations

import os
import uuid

from google.protobuf import text_format

from tensorflux.framework.graph import Graph

__all__ = ["write_graph"]


def write_graph(graph_or_graph_def, logdir: str, name: str, as_text: bool = True) -> str:
    """Writes a graph proto to a file (`tf.train.write_graph`).

    The file is written atomically: to a temporary file in `logdir`, then renamed over
    `logdir/name`, so a reader never sees half a graph.

    Args:
      graph_or_graph_def: a Graph or a GraphDef.
      logdir: the directory to write to; created (with its parents) if missing.
      name: the file name inside `logdir`.
      as_text: write the text format (True) or the binary wire format (False).

    Returns:
      The path of the written file.

    Raises:
      TypeError: `graph_or_graph_def` is neither a Graph nor a GraphDef.
    """
    if isinstance(graph_or_graph_def, Graph):
        graph_def = graph_or_graph_def.as_graph_def()
    elif hasattr(graph_or_graph_def, "SerializeToString") and \
            getattr(graph_or_graph_def, "DESCRIPTOR", None) is not None:
        graph_def = graph_or_graph_def
    else:
        raise TypeError("write_graph expects a Graph or a GraphDef, got "
                        f"{type(graph_or_graph_def).__name__}.")
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        data = text_format.MessageToString(graph_def).encode("utf-8")
    else:
        data = graph_def.SerializeToString(deterministic=True)
    _atomic_write(path, data)
    return path


def _atomic_write(path: str, data: bytes) -> None:
    # Not tempfile.mkstemp: its 0600 mode would survive the rename; this one honours umask.
    tmp = f"{path}.tmp{uuid.uuid4().hex}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def assert_global_step(global_step_tensor) -> None:
    """Raises TypeError unless `global_step_tensor` is an integer scalar variable or tensor
    (`tf.train.assert_global_step`)."""
    dtype = getattr(global_step_tensor, "dtype", None)
    if dtype is None or not dtype.base_dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: {dtype}")
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f"Existing \"global_step\" is not scalar: {shape}")
