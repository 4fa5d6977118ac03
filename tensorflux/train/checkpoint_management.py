"""The `checkpoint` state file and checkpoint lookup (`tf.train.latest_checkpoint`, ...).

A training directory's `checkpoint` file is a text-format CheckpointState proto naming the
latest checkpoint and the ones still kept. It is replaced atomically (temporary file,
fsync, rename, directory fsync) and only after the checkpoint it names is complete, so
`latest_checkpoint` never names a checkpoint that cannot be restored. Paths follow
TensorFlow: written as given (absolute or relative to the current directory; relative to
the directory with `save_relative_paths`), read back joined to the directory when relative.
"""

from __future__ import annotations

import logging
import os

from google.protobuf import text_format

from tensorflux.checkpoint import delete_checkpoint, files
from tensorflux.protos.checkpoint_state_pb2 import CheckpointState

__all__ = ["checkpoint_exists", "generate_checkpoint_state_proto", "get_checkpoint_mtimes",
           "get_checkpoint_state", "latest_checkpoint", "remove_checkpoint",
           "update_checkpoint_state", "meta_graph_filename"]

_log = logging.getLogger("tensorflux")


def _state_path(save_dir: str, latest_filename: str | None) -> str:
    return os.path.join(save_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                    all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None) -> CheckpointState:
    """A CheckpointState for `model_checkpoint_path` (appended to the list if not last).

    With a relative `save_dir`, relative paths are made relative to it.

    Raises:
      ValueError: timestamps given whose count differs from the paths'.
    """
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if all_model_checkpoint_timestamps and \
            len(all_model_checkpoint_timestamps) != len(paths):
        raise ValueError("Checkpoint timestamps, if provided, must match checkpoint paths (got "
                         f"paths {paths} and timestamps {all_model_checkpoint_timestamps})")
    if not os.path.isabs(save_dir):
        base = save_dir or "."
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, base)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, base) for p in paths]
    return CheckpointState(model_checkpoint_path=model_checkpoint_path,
                           all_model_checkpoint_paths=paths,
                           all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
                           last_preserved_timestamp=last_preserved_timestamp)


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None, save_relative_paths=False) -> None:
    """Atomically replaces the `checkpoint` state file of `save_dir`.

    Raises:
      RuntimeError: the state file's path is the checkpoint's own path.
      tf.errors.OpError: the file cannot be written (NotFoundError, PermissionDeniedError).
    """
    save_dir = os.fspath(save_dir)
    path = _state_path(save_dir, latest_filename)
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        def rel(p):
            return os.path.relpath(p, save_dir or ".") if os.path.isabs(p) else p

        model_checkpoint_path = rel(model_checkpoint_path)
        paths = [rel(p) for p in paths]
    ckpt = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, paths,
                                           all_model_checkpoint_timestamps,
                                           last_preserved_timestamp)
    if path == ckpt.model_checkpoint_path:
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           "checkpoint state.  Please use a different save path.")
    files.atomic_write(path, text_format.MessageToString(ckpt).encode("utf-8"))


def get_checkpoint_state(checkpoint_dir, latest_filename=None) -> CheckpointState | None:
    """The CheckpointState in `checkpoint_dir`, relative paths joined to it; None if there
    is no (readable, parseable) state file.

    Raises:
      ValueError: the state names no model_checkpoint_path.
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = _state_path(checkpoint_dir, latest_filename)
    try:
        with open(path, encoding="utf-8") as f:
            content = f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        _log.warning("%s: %s; checkpoint ignored", path, e)
        return None
    ckpt = CheckpointState()
    try:
        text_format.Merge(content, ckpt)
    except text_format.ParseError as e:
        _log.warning("%s: %s; checkpoint ignored", path, e)
        return None
    if not ckpt.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(ckpt.model_checkpoint_path):
        ckpt.model_checkpoint_path = os.path.join(checkpoint_dir, ckpt.model_checkpoint_path)
    for i, p in enumerate(ckpt.all_model_checkpoint_paths):
        if not os.path.isabs(p):
            ckpt.all_model_checkpoint_paths[i] = os.path.join(checkpoint_dir, p)
    if not is_inside(ckpt.model_checkpoint_path, checkpoint_dir):
        _log.warning("%s names the checkpoint %s, outside %s: restoring from there",
                     path, ckpt.model_checkpoint_path, checkpoint_dir)
    return ckpt


def is_inside(checkpoint_prefix: str, directory: str) -> bool:
    """Whether the checkpoint's files lie in `directory` or below it (symbolic links and
    `..` resolved). Retention deletes nothing else: a state file may be stale, copied from
    elsewhere or written by someone else, and names whatever paths it likes."""
    where = os.path.realpath(os.path.dirname(os.fspath(checkpoint_prefix)) or ".")
    top = os.path.realpath(os.fspath(directory) or ".")
    return os.path.commonpath([where, top]) == top


def checkpoint_exists(checkpoint_prefix) -> bool:
    """Whether a checkpoint (its index, or a single-file checkpoint) is at the prefix."""
    prefix = os.fspath(checkpoint_prefix)
    return os.path.isfile(prefix + ".index") or os.path.isfile(prefix)


def latest_checkpoint(checkpoint_dir, latest_filename=None) -> str | None:
    """The prefix of the latest checkpoint in `checkpoint_dir`, or None."""
    ckpt = get_checkpoint_state(checkpoint_dir, latest_filename)
    if ckpt and ckpt.model_checkpoint_path:
        if checkpoint_exists(ckpt.model_checkpoint_path):
            return ckpt.model_checkpoint_path
        _log.error("Couldn't match files for checkpoint %s", ckpt.model_checkpoint_path)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes) -> list[float]:
    """The modification times of the checkpoints' index files (missing ones skipped)."""
    out = []
    for prefix in checkpoint_prefixes:
        for path in (prefix + ".index", prefix):
            try:
                out.append(os.stat(path).st_mtime)
                break
            except OSError:
                continue
    return out


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=None,
                      meta_graph_suffix="meta") -> None:
    """Deletes a checkpoint: index first, then data files and its meta graph."""
    del checkpoint_format_version

    delete_checkpoint(os.fspath(checkpoint_prefix), meta_graph_suffix)


def meta_graph_filename(checkpoint_filename: str, meta_graph_suffix: str = "meta") -> str:
    """`<checkpoint>.meta` (a sharded V1 spec `-?????-of-NNNNN` is dropped first)."""
    import re

    basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename)
    return f"{basename}.{meta_graph_suffix}"



def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each new checkpoint of `checkpoint_dir` as it appears
    (`tf.train.checkpoints_iterator`): waits up to `timeout` seconds for the next one, then
    ends (or continues if `timeout_fn()` returns False)."""
    import time  # noqa: PLC0415 - only this generator sleeps

    last = None
    while True:
        start = time.monotonic()
        while True:
            path = latest_checkpoint(checkpoint_dir)
            if path is not None and path != last:
                break
            if timeout is not None and time.monotonic() - start > timeout:
                path = None
                break
            time.sleep(min(1.0, max(0.05, min_interval_secs or 1.0)))
        if path is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        last = path
        yield path
        wait = min_interval_secs - (time.monotonic() - start)
        if wait > 0:
            time.sleep(wait)
