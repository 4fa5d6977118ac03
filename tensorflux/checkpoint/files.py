"""File-system steps of a checkpoint save: temporary names, fsync, rename, cleanup.

Every file is written under a temporary name `<final>.tmp-<pid>-<8 hex>`, fsynced, then
renamed into place, and the directory is fsynced after the renames. A checkpoint becomes
visible only when its index is renamed into place (the commit point), and a training
directory's `checkpoint` state file is replaced last, so a process killed at any point
leaves either the previous state or the new one. What an interrupted save leaves behind
is ignored by readers and removed later:

* temporary files whose writer process is dead (`cleanup_directory`), and
* data files of a prefix that its committed index does not name (an older generation,
  or files renamed just before the kill): `remove_unreferenced_data`, run after every
  commit of that prefix and when a checkpoint is deleted.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import threading

from tensorflux.checkpoint import format
from tensorflux.framework import errors

_TMP_RE = re.compile(r"\.tmp-(\d+)-[0-9a-f]{8}$")
DATA_RE = re.compile(r"\.data-(\d{5})-of-(\d{5})(?:\.([0-9a-f]{8})\.safetensors)?$")

_in_flight: set[str] = set()  # temporary paths this process is writing now
_in_flight_lock = threading.Lock()


def temp_path(final: str) -> str:
    """A fresh temporary name next to `final`, registered as in flight."""
    path = f"{final}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    with _in_flight_lock:
        _in_flight.add(path)
    return path


def release(path: str) -> None:
    with _in_flight_lock:
        _in_flight.discard(path)


def new_token() -> str:
    return secrets.token_hex(4)


def data_file_name(prefix: str, shard: int, num_shards: int, token: str) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}.{token}.safetensors"


def fsync_dir(directory: str) -> None:
    """Makes renames in `directory` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def os_error(e: OSError, what: str) -> errors.OpError:
    """An OSError as the tf.errors class TensorFlow's file system layer would raise."""
    cls = {errno.ENOENT: errors.NotFoundError, errno.ENOTDIR: errors.NotFoundError,
           errno.EACCES: errors.PermissionDeniedError, errno.EPERM: errors.PermissionDeniedError,
           errno.EROFS: errors.PermissionDeniedError, errno.ENOSPC: errors.ResourceExhaustedError,
           errno.EDQUOT: errors.ResourceExhaustedError, errno.EEXIST: errors.AlreadyExistsError,
           }.get(e.errno, errors.UnknownError)
    return cls(None, None, f"{what}: {e.strerror or e}")


def write_all(fd: int, data) -> None:
    """Writes every byte of the bytes-like `data` to `fd` (os.write may write less)."""
    view = memoryview(data).cast("B")
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _sync_file_range():
    """glibc's sync_file_range (Linux), or None."""
    try:
        import ctypes
        import ctypes.util

        fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6",
                         use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_SYNC_FILE_RANGE = _sync_file_range()
_SYNC_FILE_RANGE_WRITE = 2


def start_writeback(fd: int, offset: int, nbytes: int) -> None:
    """Asks the kernel to start writing `nbytes` at `offset` of `fd` to disk now, without
    waiting (Linux; elsewhere nothing): a checkpoint's data then drains to the disk while
    the rest is written, and the final fsync waits only for the tail."""
    if _SYNC_FILE_RANGE is not None and nbytes > 0:
        _SYNC_FILE_RANGE(fd, offset, nbytes, _SYNC_FILE_RANGE_WRITE)  # a hint: errors ignored


def create_temp(final: str) -> tuple[str, int]:
    """Opens a new temporary file for `final`; returns (path, fd)."""
    path = temp_path(final)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:
        release(path)
        raise os_error(e, f"Failed to create a NewWriteableFile: {path}") from None
    return path, fd


def discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
    release(path)


def ensure_parent(prefix: str) -> None:
    """Creates a checkpoint prefix's directory if only its last level is missing
    (TensorFlow's BundleWriter does the same; sharded saves rely on it)."""
    directory = os.path.dirname(prefix)
    if directory and not os.path.isdir(directory):
        try:
            os.mkdir(directory)
        except FileExistsError:
            pass
        except OSError as e:
            raise os_error(e, f"Failed to create directory {directory}") from None


def atomic_write(path: str, data) -> None:
    """Writes `data` (bytes, or a list of buffers written in order) to `path` via a
    temporary file, fsync and rename (then fsyncs the dir).

    Raises:
      tf.errors.OpError: NotFoundError (no such directory), PermissionDeniedError, ...
    """
    tmp, fd = create_temp(path)
    try:
        try:
            for chunk in (data if isinstance(data, list) else [data]):
                write_all(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        discard(tmp)
        raise os_error(e, f"Failed to write {path}") from None
    except BaseException:
        discard(tmp)
        raise
    release(tmp)
    fsync_dir(os.path.dirname(path))


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def cleanup_directory(directory: str) -> list[str]:
    """Removes temporary files in `directory` left by dead processes (or by this process,
    when no save of ours is writing them). Returns the paths removed."""
    removed = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return removed
    with _in_flight_lock:
        mine = set(_in_flight)
    for name in names:
        m = _TMP_RE.search(name)
        if m is None:
            continue
        path = os.path.join(directory, name)
        pid = int(m.group(1))
        if path in mine or (pid != os.getpid() and _pid_alive(pid)):
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except OSError:
            pass
    return removed


def data_files_of(prefix: str) -> list[str]:
    """Committed-looking data files of `prefix` (ours and TensorFlow's names)."""
    directory, base = os.path.split(prefix)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    out = []
    for name in names:
        if name.startswith(base) and DATA_RE.fullmatch(name[len(base):]) is not None:
            out.append(os.path.join(directory, name))
    return sorted(out)


_prefix_locks: dict[str, threading.Lock] = {}


def commit_lock(prefix: str) -> threading.Lock:
    """The lock that orders commits (renames plus cleanup) of one prefix in this process.

    Saves of one prefix from several processes at once are not supported (as in
    TensorFlow): one's cleanup may remove the other's data files.
    """
    key = os.path.abspath(prefix)
    with _in_flight_lock:
        lock = _prefix_locks.get(key)
        if lock is None:
            lock = _prefix_locks[key] = threading.Lock()
        return lock


def hold(path: str) -> None:
    """Marks a renamed-into-place data file as part of a save not yet committed."""
    with _in_flight_lock:
        _in_flight.add(path)


def remove_unreferenced_data(prefix: str, keep: set[str]) -> None:
    """Deletes tensorflux data files of `prefix` that neither `keep` nor the index now on
    disk names, except those of saves of this process still in flight (a concurrent save
    of the same prefix renames its data files before it commits its index)."""
    keep = set(keep)
    try:
        with open(prefix + ".index", "rb") as f:
            keep |= {s["file"] for s in format.decode_index(f.read(), prefix)["shards"]}
    except Exception:  # noqa: BLE001 - no readable index: nothing more to keep
        pass
    with _in_flight_lock:
        busy = set(_in_flight)
    for path in data_files_of(prefix):
        m = DATA_RE.search(path)
        if m.group(3) is None or os.path.basename(path) in keep or path in busy:
            continue  # TensorFlow's own files are not ours to delete here
        try:
            os.unlink(path)
        except OSError:
            pass
