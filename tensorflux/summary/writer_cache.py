"""`tf.summary.FileWriterCache`: one FileWriter per directory, shared by hooks and users."""

from __future__ import annotations

import threading

from tensorflux.framework import graph as graph_lib
from tensorflux.summary.writer import FileWriter

__all__ = ["FileWriterCache"]


class FileWriterCache:
    """A process-wide cache of FileWriters, one per log directory."""

    _cache: dict = {}
    _lock = threading.RLock()

    @staticmethod
    def clear() -> None:
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}

    @staticmethod
    def get(logdir) -> FileWriter:
        """The cached FileWriter of `logdir`, made (with the default graph) if missing.

        Args:
          logdir: a log directory.

        Returns:
          The directory's FileWriter.
        """
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(
                    logdir, graph=graph_lib.get_default_graph())
            return FileWriterCache._cache[logdir]
