"""CPU kernels of the readers and file ops (tensorflux/ops/io_ops.py).

A reader resource serves its requests (read, read_up_to, reset, restore) strictly one at a
time, in arrival order, from a request deque: the thread that finds it idle becomes the
*pump* and runs requests until none is left or one must wait for a work unit (a read with
a record at hand and nobody waiting is served at once, on the calling thread). Waiting is
an asynchronous dequeue on the work queue whose callback (run by whichever thread enqueues
the next file name, or by a cancellation) resumes the pump, so a waiting read holds no
thread. Only the pump touches the current work unit and the open file.

A request whose step was cancelled while queued fails with CancelledError before it can
consume a record. File errors are typed: NotFoundError for a missing file (the reader then
moves on to the next work unit), DataLossError for a corrupt TFRecord (the reader stays at
the bad record).
"""

from __future__ import annotations

import glob
import os
import threading
import zlib
from collections import deque

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu.data_flow_ops import lookup, resource_op
from tensorflux.kernels.queues import QueueBase
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib.io.lmdb import LMDBFile
from tensorflux.lib.io.tf_record import RecordReader
from tensorflux.lib.protowire import varint as _varint


def _str(value) -> bytes:
    v = value[()] if isinstance(value, np.ndarray) else value
    if isinstance(v, str):
        return v.encode()
    if not isinstance(v, bytes):
        raise errors.InvalidArgumentError(None, None, f"Expected a string, got {v!r:.60}")
    return v


def _path(work: bytes) -> str:
    return os.fsdecode(work)


def _open_error(path: str, e: OSError) -> errors.OpError:
    if isinstance(e, FileNotFoundError):
        return errors.NotFoundError(None, None, f"{path}; No such file or directory")
    if isinstance(e, PermissionError):
        return errors.PermissionDeniedError(None, None, f"{path}; Permission denied")
    if isinstance(e, IsADirectoryError):
        return errors.FailedPreconditionError(None, None, f"{path}; Is a directory")
    return errors.UnknownError(None, None, f"{path}; {e.strerror or e}")


def _read_whole(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise _open_error(path, e) from None


# ---- the reader resources ----------------------------------------------------------------


class _Request:
    __slots__ = ("cm", "queue", "n", "done", "control")

    def __init__(self, cm, queue, n, done, control=None):
        self.cm = cm
        self.queue = queue
        self.n = n  # None: one record; an int: up to n records
        self.done = done
        self.control = control  # a function run exclusively instead of a read


class ReaderBase:
    """Work units in, records out (TF's ReaderBase). Subclasses implement `_start(work)`,
    `_read_one() -> (key, value) or None at the end of the unit` and `_stop()`.

    Serving requests. `_pump_lock` is held by whoever serves requests (the *pump*) and,
    while the head request waits for a work unit, by nobody in particular: the dequeue's
    callback, on whatever thread runs it, resumes the pump and releases the lock in the
    end (a plain Lock may be released by another thread). Requests that find the reader
    busy go to `_requests`, which only the pump pops (deque appends and pops are atomic).
    Whoever releases the lock looks at `_requests` again afterwards and takes the lock back
    if a request is there, so no request is left behind: a submitter either sees the lock
    free or appended before the holder's final look.

    The common case, a read with a record at hand in the current unit and nobody queued,
    is served on the calling thread with one lock round trip and no request object.
    """

    kind = "ReaderBase"
    supports_serialize = False
    dropped = False  # set when the ResourceMgr drops the reader

    def __init__(self, name: str):
        self.name = name
        self._pump_lock = threading.Lock()
        self._requests: deque[_Request] = deque()
        self.work: bytes | None = None
        self.records_produced = 0
        self.work_started = 0
        self.work_finished = 0

    # ---- requests ------------------------------------------------------------------------
    def read(self, cm, queue, n: int | None, done) -> None:
        """Reads one record (`n` None) or up to `n`; done((keys, values) or an error)."""
        if not self._requests and self._pump_lock.acquire(False):
            if self.work is not None and not (cm is not None and cm.is_cancelled):
                try:
                    result = self._produce(n)
                except errors.OpError as e:
                    result = e
                if result is not None:
                    self._pump_lock.release()
                    if self._requests:  # arrived meanwhile: see _release
                        self._release_to_waiting()
                    done(result)
                    return
                self._finish_work()
            self._requests.appendleft(_Request(cm, queue, n, done))  # the pump's own
            self._pump()
            return
        self.submit(_Request(cm, queue, n, done))

    def submit(self, request: _Request) -> None:
        """Queues `request`; serves it (and any others) now if no one else is serving."""
        self._requests.append(request)
        if self._pump_lock.acquire(False):
            self._pump()

    def _release(self) -> None:
        """Gives up the pump, taking it back while requests are waiting (see the class
        docstring)."""
        self._pump_lock.release()
        self._release_to_waiting()

    def _release_to_waiting(self) -> None:
        if self._requests and self._pump_lock.acquire(False):
            self._pump()

    def _pump(self) -> None:
        """Serves requests in order; called holding `_pump_lock`."""
        requests = self._requests
        while True:
            while requests:
                req = requests[0]
                if req.cm is not None and req.cm.is_cancelled:
                    self._reply(req, errors.CancelledError(None, None,
                                                           "Read operation was cancelled"))
                elif req.control is not None:
                    try:
                        result = req.control()
                    except errors.OpError as e:
                        result = e
                    self._reply(req, result)
                elif self.work is None:
                    if not self._next_work(req):
                        return  # waiting for a work unit; its callback resumes the pump
                else:
                    try:
                        result = self._produce(req.n)
                    except errors.OpError as e:
                        result = e
                    if result is None:  # the unit is exhausted: finish it, fetch the next
                        self._finish_work()
                    else:
                        self._reply(req, result)
            self._pump_lock.release()
            if not requests or not self._pump_lock.acquire(False):
                return

    def _reply(self, req: _Request, value) -> None:
        self._requests.popleft()
        req.done(value)

    def _next_work(self, req: _Request) -> bool:
        """Dequeues a work unit for `req`; False if it must wait (the pump then stops)."""
        box_lock = threading.Lock()
        box: dict = {"sync": True}

        def on_dequeue(result):
            with box_lock:
                if box["sync"]:
                    box["result"] = result
                    return
            self._take_work(req, result)
            self._pump()

        req.queue.dequeue(req.cm, on_dequeue)
        with box_lock:
            box["sync"] = False
            if "result" not in box:
                return False
        self._take_work(req, box["result"])
        return True

    def _take_work(self, req: _Request, result) -> None:
        if isinstance(result, BaseException):
            self._reply(req, result)  # the queue is closed and empty, or cancelled
            return
        try:
            work = _str(result[0])
        except errors.OpError as e:
            self._reply(req, e)
            return
        self.work = work
        try:
            self._start(work)
        except errors.OpError as e:
            self.work = None  # skip a unit that cannot be opened (not counted as started)
            self._reply(req, e)
            return
        self.work_started += 1

    def _finish_work(self) -> None:
        self._stop()
        self.work = None
        self.work_finished = self.work_started

    def _produce(self, n: int | None):
        if n is None:
            rec = self._read_one()
            if rec is None:
                return None
            self.records_produced += 1
            return np.array(rec[0], dtype=object), np.array(rec[1], dtype=object)
        keys, values = [], []
        if not self._read_many(n, keys, values):
            if not keys:
                return None
            self._finish_work()  # as TensorFlow: a unit's last batch ends the unit
        self.records_produced += len(keys)
        k = np.empty(len(keys), dtype=object)
        k[:] = keys
        v = np.empty(len(values), dtype=object)
        v[:] = values
        return k, v

    # ---- control requests (run by the pump) -----------------------------------------------
    def reset(self) -> None:
        if self.work is not None:
            self._stop()
        self.work = None
        self.records_produced = self.work_started = self.work_finished = 0

    def serialize_state(self) -> np.ndarray:
        if not self.supports_serialize:
            raise errors.UnimplementedError(None, None, "Reader SerializeState")
        return np.array(_encode_state(self.work_started, self.work_finished,
                                      self.records_produced, self.work or b""), dtype=object)

    def restore_state(self, state: bytes) -> None:
        if not self.supports_serialize:
            raise errors.UnimplementedError(None, None, "Reader RestoreState")
        started, finished, produced, work = _decode_state(state, self.name)
        self.reset()
        self.work_started, self.work_finished, self.records_produced = \
            started, finished, produced
        if work:
            self.work = work
            self._start(work)
            self._resume_after_restore()

    def _resume_after_restore(self) -> None:
        pass

    def close_resource(self) -> None:
        self.dropped = True
        if self._pump_lock.acquire(False):  # else the pump is busy: it owns the file
            if self.work is not None:
                self._stop()
                self.work = None
            self._release()

    # ---- subclasses ----------------------------------------------------------------------
    def _start(self, work: bytes) -> None:
        pass

    def _stop(self) -> None:
        pass

    def _read_one(self):
        raise NotImplementedError

    def _read_many(self, n: int, keys: list, values: list) -> bool:
        """Appends up to `n` records of the unit; False if the unit ended first."""
        while len(keys) < n:
            rec = self._read_one()
            if rec is None:
                return False
            keys.append(rec[0])
            values.append(rec[1])
        return True


class TFRecordReader(ReaderBase):
    kind = "TFRecordReader"

    def __init__(self, name, compression_type: str):
        super().__init__(name)
        self.compression_type = compression_type
        self._reader: RecordReader | None = None

    def _start(self, work):
        self._reader = RecordReader(work, self.compression_type)

    def _stop(self):
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _read_one(self):
        rec = self._reader.read()
        if rec is None:
            return None
        return b"%s:%d" % (self.work, rec[0]), rec[1]

    def _read_many(self, n, keys, values):
        offsets = []
        more = self._reader.read_many(n - len(keys), offsets, values)
        work = self.work
        keys.extend([b"%s:%d" % (work, o) for o in offsets])
        return more


class TextLineReader(ReaderBase):
    kind = "TextLineReader"

    def __init__(self, name, skip_header_lines: int):
        super().__init__(name)
        self.skip = skip_header_lines
        self._file = None
        self._line = 0

    def _start(self, work):
        path = _path(work)
        try:
            self._file = open(path, "rb", buffering=1 << 16)  # noqa: SIM115 - _stop closes
        except OSError as e:
            raise _open_error(path, e) from None
        self._line = 0
        for _ in range(self.skip):
            if not self._file.readline():
                break
            self._line += 1

    def _stop(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def _read_one(self):
        line = self._file.readline()
        if not line:
            return None
        self._line += 1
        if line.endswith(b"\n"):
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        return b"%s:%d" % (self.work, self._line), line


class FixedLengthRecordReader(ReaderBase):
    kind = "FixedLengthRecordReader"

    def __init__(self, name, header, record, footer, hop, encoding):
        super().__init__(name)
        self.header, self.record, self.footer = header, record, footer
        self.hop = hop or record
        self.encoding = encoding
        self._data = b""
        self._pos = 0
        self._index = 0

    def _start(self, work):
        data = _read_whole(_path(work))
        if self.encoding:
            wbits = zlib.MAX_WBITS | (16 if self.encoding == "GZIP" else 0)
            try:
                data = zlib.decompress(data, wbits)
            except zlib.error as e:
                raise errors.DataLossError(None, None, f"{_path(work)}: cannot decompress "
                                           f"({self.encoding}): {e}") from None
        self._data = data
        self._pos = self.header
        self._index = 0

    def _stop(self):
        self._data = b""

    def _read_one(self):
        end = self._pos + self.record
        if end > len(self._data) - self.footer:
            return None
        value = self._data[self._pos:end]
        key = b"%s:%d" % (self.work, self._index)
        self._pos += self.hop
        self._index += 1
        return key, value


class WholeFileReader(ReaderBase):
    kind = "WholeFileReader"
    supports_serialize = True

    def __init__(self, name):
        super().__init__(name)
        self._pending = False

    def _start(self, work):
        self._pending = True

    def _stop(self):
        self._pending = False

    def _read_one(self):
        if not self._pending:
            return None
        self._pending = False
        return self.work, _read_whole(_path(self.work))

    def _resume_after_restore(self):
        self._pending = False  # a restored unit was already produced


class IdentityReader(WholeFileReader):
    kind = "IdentityReader"

    def _read_one(self):
        if not self._pending:
            return None
        self._pending = False
        return self.work, self.work


class LMDBReader(ReaderBase):
    """The records of each LMDB data file in key order (lib/io/lmdb.py), keyed by their
    own keys; a file that is not one fails its read with DataLossError."""

    kind = "LMDBReader"

    def __init__(self, name):
        super().__init__(name)
        self._file: LMDBFile | None = None
        self._records = None

    def _start(self, work):
        self._file = LMDBFile(_path(work))
        self._records = iter(self._file)

    def _stop(self):
        self._records = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def _read_one(self):
        return next(self._records, None)


# ---- ReaderBaseState, as its protobuf bytes ----------------------------------------------


def _encode_state(started: int, finished: int, produced: int, work: bytes) -> bytes:
    out = b""
    for field, v in ((1, started), (2, finished), (3, produced)):
        if v:
            out += bytes([field << 3]) + _varint(v)
    if work:
        out += bytes([(4 << 3) | 2]) + _varint(len(work)) + work
    return out


def _decode_state(state: bytes, name: str):
    vals = {1: 0, 2: 0, 3: 0, 4: b""}
    pos = 0
    try:
        while pos < len(state):
            key = state[pos]
            pos += 1
            field, wire = key >> 3, key & 7
            n, shift = 0, 0
            while True:
                b = state[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            if wire == 0 and field in (1, 2, 3):
                vals[field] = n
            elif wire == 2 and field == 4:
                vals[4] = bytes(state[pos:pos + n])
                pos += n
            else:
                raise IndexError
    except IndexError:
        raise errors.InvalidArgumentError(
            None, None, f"Could not parse state for {name}: {state!r:.60}") from None
    started, finished, produced, work = vals[1], vals[2], vals[3], vals[4]
    if finished > started or (started - finished) > 1 or (work and started == finished):
        raise errors.InvalidArgumentError(None, None, f"Unexpected state for {name}: "
                                          f"started {started}, finished {finished}")
    return started, finished, produced, work


# ---- kernels -----------------------------------------------------------------------------


def _reader_kernel(op_type: str, make):
    @kernel_factory(op_type)
    def factory(node):
        def check(res):
            if not isinstance(res, ReaderBase):
                raise errors.InvalidArgumentError(
                    None, None, f"Expected a reader, found {type(res).__name__}")

        return resource_op(node, lambda name: make(name, node.attrs), check)

    return factory


_reader_kernel("TFRecordReaderV2", lambda n, a: TFRecordReader(n, a["compression_type"]))
_reader_kernel("TextLineReaderV2", lambda n, a: TextLineReader(n, a["skip_header_lines"]))
_reader_kernel("FixedLengthRecordReaderV2", lambda n, a: FixedLengthRecordReader(
    n, a["header_bytes"], a["record_bytes"], a["footer_bytes"], a["hop_bytes"],
    a["encoding"]))
_reader_kernel("WholeFileReaderV2", lambda n, a: WholeFileReader(n))
_reader_kernel("IdentityReaderV2", lambda n, a: IdentityReader(n))
_reader_kernel("LMDBReader", lambda n, a: LMDBReader(n))


@kernel("FakeQueue")
def _fake_queue(ctx, resource):
    return resource  # the ref-typed reader ops look the queue up by the same handle


def _reader(ctx, handle) -> ReaderBase:
    return lookup(ctx, handle, ReaderBase, "ReaderInterface")


@kernel_factory("ReaderReadV2", "ReaderRead", is_async=True)
def _read(node):
    def compute(ctx, done, reader_handle, queue_handle):
        reader = _reader(ctx, reader_handle)
        queue = lookup(ctx, queue_handle, QueueBase, "QueueInterface")
        reader.read(ctx.cancellation, queue, None, done)

    return compute


@kernel_factory("ReaderReadUpToV2", "ReaderReadUpTo", is_async=True)
def _read_up_to(node):
    def compute(ctx, done, reader_handle, queue_handle, num_records):
        n = int(num_records)
        if n <= 0:
            raise errors.InvalidArgumentError(
                None, None, f"num_records must be positive, got {n}")
        reader = _reader(ctx, reader_handle)
        queue = lookup(ctx, queue_handle, QueueBase, "QueueInterface")
        reader.read(ctx.cancellation, queue, n, done)

    return compute


def _control_kernel(op_type: str, method: str, with_arg: bool = False):
    @kernel_factory(op_type, op_type[:-2], is_async=True)  # V2 and the ref-typed V1 op
    def factory(node):
        def compute(ctx, done, reader_handle, *args):
            reader = _reader(ctx, reader_handle)
            fn = getattr(reader, method)
            control = (lambda: fn(_str(args[0]))) if with_arg else fn
            reader.submit(_Request(ctx.cancellation, None, None, done, control))

        return compute

    return factory


_control_kernel("ReaderResetV2", "reset")
_control_kernel("ReaderSerializeStateV2", "serialize_state")
_control_kernel("ReaderRestoreStateV2", "restore_state", with_arg=True)


@kernel("ReaderNumRecordsProducedV2", "ReaderNumRecordsProduced")
def _num_records_produced(ctx, reader_handle):
    return np.int64(_reader(ctx, reader_handle).records_produced)


@kernel("ReaderNumWorkUnitsCompletedV2", "ReaderNumWorkUnitsCompleted")
def _num_work_units_completed(ctx, reader_handle):
    return np.int64(_reader(ctx, reader_handle).work_finished)


# ---- files -------------------------------------------------------------------------------


@kernel("ReadFile")
def _read_file(ctx, filename):
    return np.array(_read_whole(_path(_str(filename))), dtype=object)


@kernel("WriteFile")
def _write_file(ctx, filename, contents):
    path = _path(_str(filename))
    try:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "wb") as f:
            f.write(_str(contents))
    except OSError as e:
        raise _open_error(path, e) from None


@kernel("MatchingFiles")
def _matching_files(ctx, pattern):
    patterns = np.asarray(pattern, dtype=object).reshape(-1)
    found = set()
    for p in patterns:
        found.update(glob.glob(os.fsdecode(_str(p))))
    names = sorted(os.fsencode(f) for f in found)
    out = np.empty(len(names), dtype=object)
    out[:] = names
    return out
