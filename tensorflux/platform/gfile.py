"""`tf.gfile`: TF1's file API on local files, failing with TensorFlow's error classes.

An operating-system error becomes the `tf.errors` class for its cause, with TF's message
"path; <strerror>": a missing file NotFoundError, an existing one AlreadyExistsError, no
access PermissionDeniedError, a directory where a file is expected (or the reverse)
FailedPreconditionError. As TF's, `GFile` opens its file on the first read or write, not
when it is made (a missing file fails at `read`), `MkDir` of an existing directory and
`MakeDirs` of existing ones succeed, and `Rename`/`Copy` refuse to replace a file unless
`overwrite=True` (AlreadyExistsError "file already exists").
"""

from __future__ import annotations

import errno
import glob as _glob
import os
import shutil
import stat as _stat

from tensorflux.framework import errors

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"]

_BY_ERRNO = {
    errno.ENOENT: errors.NotFoundError,
    errno.EEXIST: errors.AlreadyExistsError,
    errno.EACCES: errors.PermissionDeniedError,
    errno.EPERM: errors.PermissionDeniedError,
    errno.EROFS: errors.PermissionDeniedError,
    errno.EISDIR: errors.FailedPreconditionError,
    errno.ENOTDIR: errors.FailedPreconditionError,
    errno.ENOTEMPTY: errors.FailedPreconditionError,
}


def _error(e: OSError, path) -> errors.OpError:
    """The tf.errors instance for an OSError about `path`."""
    cls = _BY_ERRNO.get(e.errno, errors.UnknownError)
    return cls(None, None, f"{os.fspath(path)}; {e.strerror or e}")


def _path(p) -> str:
    return os.fsdecode(os.fspath(p))


class GFile:
    """A file, opened on its first read or write (`tf.gfile.GFile`, `tf.gfile.Open`).

    Args:
      name: the file's path.
      mode: "r", "w", "a", "r+", "w+" or "a+", with "b" for bytes (text modes read str,
        decoded as UTF-8; writes take str or bytes).

    Raises:
      InvalidArgumentError: an unknown mode.
    """

    def __init__(self, name, mode: str = "r"):
        if mode.replace("b", "") not in ("r", "w", "a", "r+", "w+", "a+"):
            raise errors.InvalidArgumentError(
                None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self._name, self._mode = _path(name), mode
        self._binary = "b" in mode
        self._file = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def mode(self) -> str:
        return self._mode

    def _open(self):
        if self._file is None:
            raw = self._mode.replace("b", "")
            try:
                self._file = open(self._name, raw[0] + ("+" if "+" in raw else "") + "b")
            except OSError as e:
                raise _error(e, self._name) from None
        return self._file

    def _for_reading(self):
        if not ("r" in self._mode or "+" in self._mode):
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        return self._open()

    def _for_writing(self):
        if not ("w" in self._mode or "a" in self._mode or "+" in self._mode):
            raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
        return self._open()

    def _out(self, data: bytes):
        return data if self._binary else data.decode("utf-8")

    def size(self) -> int:
        """The file's length in bytes."""
        return Stat(self._name).length

    def write(self, file_content) -> None:
        """Appends `file_content` (str or bytes) at the current position."""
        data = file_content.encode("utf-8") if isinstance(file_content, str) else \
            bytes(file_content)
        try:
            self._for_writing().write(data)
        except OSError as e:
            raise _error(e, self._name) from None

    def read(self, n: int = -1):
        """Up to `n` bytes (all when negative), as bytes or str by mode."""
        try:
            return self._out(self._for_reading().read(-1 if n is None else n))
        except OSError as e:
            raise _error(e, self._name) from None

    def readline(self):
        """The next line, with its newline ("" at the end)."""
        try:
            return self._out(self._for_reading().readline())
        except OSError as e:
            raise _error(e, self._name) from None

    def readlines(self) -> list:
        """The remaining lines."""
        return list(self)

    def seek(self, offset=None, whence: int = 0, position=None) -> None:
        """Moves to `offset` from the start (whence 0), the current position (1) or the end
        (2); `position` is TF1's old name for `offset`."""
        if position is not None:
            offset = position
        try:
            self._for_reading().seek(offset or 0, whence)
        except OSError as e:
            raise _error(e, self._name) from None

    def tell(self) -> int:
        """The current position."""
        return self._open().tell()

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


Open = GFile


class FastGFile(GFile):
    """The same as GFile (TF1 kept it for compatibility; deprecated there too)."""


class FileStatistics:
    """What `Stat` returns: `length` (bytes), `mtime_nsec`, `is_directory`."""

    __slots__ = ("length", "mtime_nsec", "is_directory")

    def __init__(self, length: int, mtime_nsec: int, is_directory: bool):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory

    def __repr__(self) -> str:
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")


def Exists(filename) -> bool:  # noqa: N802 - TF1's names
    """Whether `filename` (a file or a directory) exists."""
    return os.path.exists(_path(filename))


def IsDirectory(dirname) -> bool:  # noqa: N802
    """Whether `dirname` is a directory."""
    return os.path.isdir(_path(dirname))


def Stat(filename) -> FileStatistics:  # noqa: N802
    """The length, modification time (ns) and kind of `filename`.

    Raises:
      NotFoundError: it does not exist.
    """
    try:
        st = os.stat(_path(filename))
    except OSError as e:
        raise _error(e, filename) from None
    return FileStatistics(st.st_size, st.st_mtime_ns, _stat.S_ISDIR(st.st_mode))


def MkDir(dirname) -> None:  # noqa: N802
    """Creates the directory `dirname` (nothing happens when the path exists).

    Raises:
      NotFoundError: its parent does not exist.
      PermissionDeniedError: it may not be created.
    """
    try:
        os.mkdir(_path(dirname))
    except FileExistsError:
        pass
    except OSError as e:
        raise _error(e, dirname) from None


def MakeDirs(dirname) -> None:  # noqa: N802
    """Creates `dirname` and its missing parents.

    Raises:
      FailedPreconditionError: a component exists and is not a directory.
      PermissionDeniedError: a directory may not be created.
    """
    path = _path(dirname)
    try:
        os.makedirs(path, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        head = path
        while head and not os.path.exists(head):
            head = os.path.dirname(head)
        raise errors.FailedPreconditionError(
            None, None, f"{head or path} is not a directory") from None
    except OSError as e:
        raise _error(e, dirname) from None


def Glob(filename) -> list[str]:  # noqa: N802
    """The paths matching the pattern `filename` (`*`, `?`, `[...]`), sorted."""
    return sorted(_glob.glob(_path(filename)))


def ListDirectory(dirname) -> list[str]:  # noqa: N802
    """The names in directory `dirname` (without "." and "..").

    Raises:
      NotFoundError: it is not a directory.
    """
    path = _path(dirname)
    if not os.path.isdir(path):
        raise errors.NotFoundError(None, None, f"Could not find directory {path}")
    try:
        return os.listdir(path)
    except OSError as e:
        raise _error(e, dirname) from None


def Remove(filename) -> None:  # noqa: N802
    """Deletes the file `filename`.

    Raises:
      NotFoundError: it does not exist.
      FailedPreconditionError: it is a directory.
    """
    path = _path(filename)
    try:
        os.remove(path)
    except OSError as e:
        if os.path.isdir(path):
            raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") \
                from None
        raise _error(e, filename) from None


def _check_target(newpath: str, overwrite: bool) -> None:
    if not overwrite and os.path.exists(newpath):
        raise errors.AlreadyExistsError(None, None, "file already exists")


def Rename(oldname, newname, overwrite: bool = False) -> None:  # noqa: N802
    """Moves `oldname` to `newname`.

    Raises:
      AlreadyExistsError: `newname` exists and `overwrite` is False.
      NotFoundError: `oldname` does not exist.
    """
    old, new = _path(oldname), _path(newname)
    _check_target(new, overwrite)
    try:
        os.replace(old, new)
    except OSError as e:
        raise _error(e, old if not os.path.exists(old) else new) from None


def Copy(oldpath, newpath, overwrite: bool = False) -> None:  # noqa: N802
    """Copies the file `oldpath` to `newpath`.

    Raises:
      AlreadyExistsError: `newpath` exists and `overwrite` is False.
      NotFoundError: `oldpath` does not exist.
    """
    old, new = _path(oldpath), _path(newpath)
    _check_target(new, overwrite)
    try:
        shutil.copyfile(old, new)
    except OSError as e:
        raise _error(e, old if not os.path.exists(old) else new) from None


def DeleteRecursively(dirname) -> None:  # noqa: N802
    """Deletes `dirname` with everything under it (a file is simply deleted).

    Raises:
      NotFoundError: it does not exist.
    """
    path = _path(dirname)
    if not os.path.lexists(path):
        raise errors.NotFoundError(None, None, f"{path} not found")
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    except OSError as e:
        raise _error(e, getattr(e, "filename", None) or path) from None


def Walk(top, in_order: bool = True):  # noqa: N802
    """Yields (directory, subdirectory names, file names) for `top` and every directory
    under it, parents before children (`in_order`) or after; nothing if `top` is missing.
    """
    top = _path(top)
    try:
        names = ListDirectory(top)
    except errors.NotFoundError:
        return
    subdirs = [n for n in names if os.path.isdir(os.path.join(top, n))]
    files = [n for n in names if n not in subdirs]
    if in_order:
        yield top, subdirs, files
    for sub in subdirs:
        yield from Walk(os.path.join(top, sub), in_order)
    if not in_order:
        yield top, subdirs, files
