"""Event files: TFRecord files of serialized `Event`s, appended by a background thread.

A file is named `events.out.tfevents.<seconds, 10 digits>.<host><suffix>` and starts with
an Event whose `file_version` is "brain.Event:2" (its wall time the whole second of the
name). `EventFileWriter.add_event` puts the event in a queue of at most `max_queue` events
(blocking while it is full); the thread takes everything queued at once, serializes and
frames it, and hands each batch of whole records to the operating system in one `write`,
so a process killed at any time leaves a file of whole records (but for a write cut short
by the kernel, which readers take as a truncated last record). The file is also synced to
disk every `flush_secs` (when events arrive), on `flush()` and on `close()`.

A writer that was closed starts a new file when it is reopened. A file deleted while being
written is noticed at the next sync and started again. An error in the thread (a full disk)
is raised by the next `add_event`, `flush` or `close`. Writers not closed when the
interpreter exits, including ones the program dropped without closing, are flushed then
(waiting at most 10 s each), so events added just before the end of a program that never
closed its writer (a cached one) are not lost.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import socket
import threading
import time

from tensorflux.framework import errors
from tensorflux.lib.io.tf_record import frame_record
from tensorflux.protos import event_pb2

__all__ = ["EventFileWriter", "FILE_VERSION"]

FILE_VERSION = "brain.Event:2"
WRITER_NAME = "tensorflux.summary.event_file_writer"
_log = logging.getLogger("tensorflux")


def make_dirs(path: str) -> None:
    """Creates `path` and its parents, raising TensorFlow's error types.

    Raises:
      FailedPreconditionError: a component of the path is a file.
      PermissionDeniedError, NotFoundError, UnknownError: the directory cannot be made.
    """
    try:
        os.makedirs(path, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        parent = path
        while parent and not os.path.exists(parent):
            parent = os.path.dirname(parent)
        raise errors.FailedPreconditionError(
            None, None, f"{parent or path} is not a directory") from None
    except PermissionError:
        raise errors.PermissionDeniedError(None, None, f"{path}; Permission denied") from None
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    except OSError as e:
        raise errors.UnknownError(None, None, f"{path}; {e.strerror}") from None


class _EventsFile:
    """One events file, opened on demand; records go to the OS whole, in one write."""

    def __init__(self, logdir: str, suffix: str):
        self._prefix = os.path.join(logdir, "events")
        self._suffix = suffix
        self._fd: int | None = None
        self.path: str | None = None

    def open(self) -> None:
        """Starts a new file (named after the current second) with its version event."""
        now = int(time.time())
        self.path = f"{self._prefix}.out.tfevents.{now:010d}.{socket.gethostname()}" \
                    f"{self._suffix}"
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        except PermissionError:
            raise errors.PermissionDeniedError(
                None, None, f"{self.path}; Permission denied") from None
        except OSError as e:
            raise errors.NotFoundError(None, None, f"{self.path}; {e.strerror}") from None
        first = event_pb2.Event(wall_time=float(now), file_version=FILE_VERSION)
        first.source_metadata.writer = WRITER_NAME
        self.write([frame_record(first.SerializeToString())])
        self.sync()

    def write(self, records: list[bytes]) -> None:
        if self._fd is None:
            self.open()
        data = memoryview(b"".join(records))
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def sync(self) -> None:
        if self._fd is None:
            return
        os.fsync(self._fd)
        if not os.path.exists(self.path):
            _log.warning("The events file %s has disappeared.", self.path)
            self.close()
            self.open()

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


class _QueueClosed(Exception):
    pass


class _Queue:
    """A bounded queue whose consumer takes everything at once and which can be closed
    (then `put` raises _QueueClosed instead of blocking forever)."""

    def __init__(self, maxsize: int):
        self._items: collections.deque = collections.deque()
        self._maxsize = max(int(maxsize), 1)
        self._cond = threading.Condition(threading.Lock())
        self._closed = False

    def put(self, item) -> None:
        with self._cond:
            while len(self._items) >= self._maxsize and not self._closed:
                self._cond.wait()
            if self._closed:
                raise _QueueClosed
            self._items.append(item)
            if len(self._items) == 1:
                self._cond.notify_all()

    def take_all(self) -> list:
        with self._cond:
            while not self._items:
                self._cond.wait()
            items = list(self._items)
            self._items.clear()
            self._cond.notify_all()
            return items

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class _Flush:
    """A request to sync; `done` is set once every event queued before it is on disk."""

    def __init__(self):
        self.done = threading.Event()


_CLOSE = object()


class _WriterThread(threading.Thread):
    def __init__(self, queue: _Queue, events_file: _EventsFile, flush_secs: float):
        super().__init__(name="EventFileWriter", daemon=True)
        self._queue = queue
        self._file = events_file
        self._flush_secs = flush_secs
        self._next_sync = time.time() + flush_secs
        self.failure: BaseException | None = None

    def start(self) -> None:
        with _LIVE_LOCK:
            _LIVE_THREADS.add(self)
        super().start()

    def flush_at_exit(self, timeout: float) -> None:
        """Queues a flush and waits for it (at most `timeout` s); no-op once closed."""
        request = _Flush()
        try:
            self._queue.put(request)
        except _QueueClosed:
            return
        request.done.wait(timeout)

    def run(self) -> None:
        pending: list[_Flush] = []
        try:
            while self._step(pending):
                pass
        except BaseException as e:  # noqa: BLE001 - reported to the writer's caller
            _log.error("EventFileWriter writer thread error: %s", e)
            self.failure = e
        finally:
            self._queue.close()
            for request in pending:
                request.done.set()
            with _LIVE_LOCK:
                _LIVE_THREADS.discard(self)

    def _step(self, pending: list) -> bool:
        """Writes one batch of queued items; False once the writer is closed."""
        records, sync, closing = [], False, False
        for item in self._queue.take_all():
            if item is _CLOSE:
                sync = closing = True
            elif isinstance(item, _Flush):
                pending.append(item)
                sync = True
            else:
                records.append(frame_record(item.SerializeToString()))
        if records:
            self._file.write(records)
        now = time.time()
        if sync or (records and now >= self._next_sync):
            self._file.sync()
            self._next_sync = now + self._flush_secs
        for request in pending:
            request.done.set()
        pending.clear()
        if closing:
            self._file.close()
        return not closing


class EventFileWriter:
    """Writes Events to a new events file in `logdir`, asynchronously.

    Args:
      logdir: the directory (created with its parents if missing).
      max_queue: how many events may wait for the writing thread before `add_event` blocks.
      flush_secs: how often, in seconds, written events are synced to disk.
      filename_suffix: appended to the file's name.

    Raises:
      FailedPreconditionError, NotFoundError, PermissionDeniedError: the directory or the
        file cannot be created.
    """

    def __init__(self, logdir, max_queue=10, flush_secs=120, filename_suffix=None):
        self._logdir = str(logdir)
        make_dirs(self._logdir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._file = _EventsFile(self._logdir, filename_suffix or "")
        self._file.open()
        self._start()
        self._closed = False

    def _start(self) -> None:
        self._queue = _Queue(self._max_queue)
        self._thread = _WriterThread(self._queue, self._file, self._flush_secs)
        self._thread.start()

    def get_logdir(self) -> str:
        """The directory the events file is in."""
        return self._logdir

    @property
    def path(self) -> str | None:
        """The events file currently written to."""
        return self._file.path

    def reopen(self) -> None:
        """After `close()`: starts a new events file for the events that follow."""
        if self._closed:
            self._start()
            self._closed = False

    def add_event(self, event) -> None:
        """Queues an `Event` for writing (no-op when closed)."""
        if not self._closed:
            self._put(event)

    def _put(self, item) -> None:
        try:
            self._queue.put(item)
        except _QueueClosed:
            self._shutdown()
            self._raise_failure()

    def flush(self) -> None:
        """Returns once every event added so far is written and synced to disk."""
        if self._closed:
            return
        request = _Flush()
        self._put(request)
        request.done.wait()
        if self._thread.failure is not None:
            self._shutdown()
            self._raise_failure()

    def close(self) -> None:
        """Writes and syncs every queued event, then closes the file."""
        if self._closed:
            return
        self.flush()
        self._put(_CLOSE)
        self._shutdown()

    def _shutdown(self) -> None:
        self._closed = True
        self._thread.join()
        self._file.close()

    def _raise_failure(self) -> None:
        failure = self._thread.failure
        if failure is not None:
            raise failure


# The writing threads still running, held strongly: a writer the program dropped without
# closing it (one made inside a function, or a program run by runpy, whose globals are
# cleared before the interpreter exits) is collected, but its thread and queue live on and
# still hold events; they are flushed at exit all the same.
_LIVE_THREADS: set = set()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _flush_open_writers(timeout: float = 10.0) -> None:
    """Waits (at most `timeout` seconds each) until every running writing thread has
    written what was queued to it."""
    with _LIVE_LOCK:
        threads = list(_LIVE_THREADS)
    for thread in threads:
        thread.flush_at_exit(timeout)
