"""Shared memory for large tensors pushed between two tensorflux tasks on one host
(push.py's connections; never toward TensorFlow peers, whose transfers stay gRPC).

Negotiation (on the push connection, push.py): the consumer's Connect answer names an
abstract Unix socket of its push listener and its kernel's boot id. A producer with the
same boot id creates a sealed anonymous segment (`memfd_create`, sealed against shrinking
and growing, so the consumer can never fault on it), writes a random nonce at its start
and connects to that socket: the hello carries its ticket, the segment's size and the
nonce, and the segment's descriptor rides along (SCM_RIGHTS). The consumer checks the
ticket, the seals and the size, maps the segment and finds the nonce there (the map
check); it answers one byte, and that Unix socket is the push connection from then on.
Anything else (another host or container, no memfd, a refusal, `TENSORFLUX_PUSH_SHM=0` on
either side) and the push connection is TCP, as before. Nothing is ever named in the file
system: a task killed with SIGKILL leaves nothing in /dev/shm, the kernel frees the segment
when its last mapping and descriptor go.

Ownership (the invariants):
- The producer owns the allocation: a tensor of at least `MIN_BYTES` is copied into a
  free extent (`Segment.put`), and a frame describing it (`encode_tensor`: step id, key,
  dtype, shape, offset, size, slot) goes on the connection in place of its bytes. The
  frame is written after the copy, by a system call: the consumer reading it sees the data.
- The consumer's array views the extent, no copy (`Mapping.array`). The extent stays the
  consumer's until every array viewing it is gone (a finalizer on the base view); only then
  is its slot handed back (`Releases`, frames of slot ids written back on the connection,
  a few at a time), and only a slot handed back is ever written again. So no tensor
  changes under a consumer, and a consumer that keeps a tensor (a queue, a fetch) just
  keeps its extent: a full segment sends tensors inline, as on TCP.
- A producer's kernel may make a tensor in an extent in the first place (`Segment.alloc`,
  offered by the static executor through kernels/buffers.py's `empty_output` to a MatMul
  whose only consumer is a pushed _Send). Its first push sends that extent as it is (no
  copy) and makes the producer's array read-only; the extent is free again only when
  both the consumer has handed it back and the producer's last view is gone.
- A variable's storage may live in an extent (`Segment.resident`, asked for by an
  optimizer's update through kernels/buffers.py's `storage_relocator`, `storage_for`
  here): each push of it lends the extent (no copy), the producer's array is read-only
  while any lending is out, and writeable again once every lending is handed back, so the
  next update writes it in place; an update that finds it still lent writes a copy in a
  fresh resident extent instead (copy-on-write). A consumer hands lent extents back
  early: its next frame to the producer's task carries them (`piggyback`, a release frame
  naming the segment by its nonce), so a parameter server's update, which waits for the
  worker's gradients, finds the variables it pushed already handed back.
- Everything a consumer reads from a frame is checked against its own mapping before an
  array is made: a malformed or out-of-range descriptor is InvalidArgumentError (the
  connection is then dropped), never an access outside the segment.
"""

from __future__ import annotations

import collections
import fcntl
import mmap
import os
import secrets
import socket
import struct
import threading
import weakref

import numpy as np

from tensorflux.distributed import wire
from tensorflux.framework import dtypes, errors
from tensorflux.kernels import buffers
from tensorflux.lib.protowire import read_varint, varint

SEGMENT_BYTES = 64 << 20  # per push connection; pages are touched only as used
MIN_BYTES = 64 << 10  # smaller tensors go inline (a frame costs less than a slot)
ALIGN = 64
NONCE_BYTES = 16
HELLO_MAGIC = b"TFXSHM01"
TENSOR_TAG = 0x22  # the first byte of a tensor-in-shared-memory frame (field 4) ...
RELEASE_TAG = 0x2A  # ... and of a frame of released slots (field 5) ...
FOREIGN_RELEASE_TAG = 0x32  # ... and of one for the segment of the reverse connection (6)
_TENSOR_TAG_BYTE = bytes((TENSOR_TAG,))
_RELEASE_BYTES = 4 << 20  # the consumer hands slots back once this much is free ...
_RELEASE_SLOTS = 64  # ... or this many slots
_SEALS = ("F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_SEAL")
LENT = 1 << 62  # set in the slot of a lending (a variable's storage): the consumer's view
#                 is read-only, so it never writes into (donates) what the producer keeps


def enabled() -> bool:
    """Whether this process offers and uses shared memory (`TENSORFLUX_PUSH_SHM`, on by
    default) and the platform has what it takes (Linux: memfd, seals, SCM_RIGHTS)."""
    if os.environ.get("TENSORFLUX_PUSH_SHM", "1").strip().lower() in ("0", "false", "no",
                                                                       "off"):
        return False
    return (hasattr(os, "memfd_create") and hasattr(socket, "AF_UNIX")
            and hasattr(socket, "send_fds") and all(hasattr(fcntl, s) for s in _SEALS)
            and hasattr(fcntl, "F_GET_SEALS") and os.uname().sysname == "Linux")


def boot_id() -> bytes:
    """This kernel's boot id (two tasks with equal ones may share memory)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            return f.read().strip()
    except OSError:
        return b""


def abstract_name() -> bytes:
    """A fresh name in Linux's abstract socket namespace (nothing in the file system)."""
    return b"\0tensorflux-push-" + secrets.token_hex(12).encode()


def shareable(value) -> np.ndarray | None:
    """`value` as a C-contiguous little-endian array when it may cross in shared memory
    (a numeric tensor of at least MIN_BYTES), else None."""
    if not isinstance(value, np.ndarray) or value.nbytes < MIN_BYTES or \
            value.dtype.kind in "OSUV":
        return None
    try:
        enum = dtypes.as_dtype(value.dtype).as_datatype_enum
    except (TypeError, ValueError, KeyError):
        return None
    return wire._little_endian(value) if enum in wire._NUMPY_OF_ENUM else None


_SHAREABLE_DTYPES = frozenset(wire._NUMPY_OF_ENUM.values())


# ---- the producer's segment ------------------------------------------------------------

class Segment:
    """A sealed memfd segment and its free extents (the producer's side; thread-safe).

    Raises (constructor):
      OSError: no memfd, or the segment cannot be made.
    """

    def __init__(self, size: int = SEGMENT_BYTES):
        self.size = size
        self.nonce = secrets.token_bytes(NONCE_BYTES)
        self.fd = os.memfd_create("tensorflux-push", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, size)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK
                        | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            self._mm = mmap.mmap(self.fd, size)
        except OSError:
            os.close(self.fd)
            raise
        self._mm[:NONCE_BYTES] = self.nonce
        self._lock = threading.Lock()
        self._free = [(ALIGN, size - ALIGN)]  # (offset, size), sorted by offset, coalesced
        self._used: dict[int, tuple[int, int]] = {}  # slot -> (offset, size)
        self._slots = iter(range(1, 1 << 62))
        self.closed = False
        # Extents the producer allocated for its own arrays (`alloc`): address -> (slot,
        # bytes) until pushed; the slots whose arrays are alive here; of those, the ones
        # the consumer has already handed back; and the slots whose last view here died
        # (appended by finalizers, on any thread, lock-free; taken under the lock).
        self._owned: dict[int, tuple[int, int]] = {}
        self._held: set[int] = set()
        self._returned: set[int] = set()
        self._dropped: collections.deque = collections.deque()
        # Variables' storage kept here (`resident`; `_residents` has them by address):
        # the records by their extent's slot, and the lendings out (lending slot ->
        # record).
        self._resident_slots: dict[int, _Resident] = {}
        self._lent: dict[int, _Resident] = {}
        _segments.add(self)
        buffers.storage_relocator = storage_for

    def close_fd(self) -> None:
        """The descriptor, once handed over (the mapping stays)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def put(self, arr: np.ndarray) -> tuple[int, int] | None:
        """Copies `arr` (C-contiguous, little-endian) into a free extent: (slot, offset),
        or None when no extent is large enough (the caller sends it inline). An array
        that is an extent of its own from `alloc`, not yet put, is not copied: its slot
        goes to the consumer as it is (the first time only)."""
        n = arr.nbytes
        with self._lock:
            if self.closed:
                return None
            if self._owned or self._resident_slots:
                addr = arr.__array_interface__["data"][0]
                owned = self._owned.get(addr)
                if owned is not None and owned[1] == n:
                    slot = owned[0]
                    del self._owned[addr]
                    arr.flags.writeable = False  # the consumer reads it from now on
                    return slot, self._used[slot][0]
                rec = _residents.get(addr)
                if rec is not None and rec.segment is self and rec.ref() is arr:  # lent
                    slot = next(self._slots) | LENT
                    self._lent[slot] = rec
                    rec.lent += 1
                    arr.flags.writeable = False  # until every lending is handed back
                    return slot, rec.offset
            placed = self._take(n)
        if placed is None:
            return None
        slot, off = placed
        try:
            np.frombuffer(self._mm, np.uint8, n, off)[...] = arr.reshape(-1).view(np.uint8)
        except ValueError:  # closed meanwhile: the connection failed
            return None
        _note_copied(arr, self)
        return slot, off

    def resident(self, arr: np.ndarray) -> np.ndarray | None:
        """A copy of `arr` (a variable's storage, `shareable`) in an extent of its own,
        for the variable to keep instead: each `put` of it lends the extent without a
        copy (see the module docstring). None when there is no room."""
        with self._lock:
            extent = self._extent(arr.nbytes)
            if extent is None:
                return None
            slot, off, base = extent
            out = base.view(arr.dtype).reshape(arr.shape)
            addr = base.__array_interface__["data"][0]
            rec = _Resident(self, slot, off, addr, weakref.ref(out))
            _residents[addr] = rec
            self._resident_slots[slot] = rec
        weakref.finalize(base, self._dropped.append, slot).atexit = False
        np.copyto(out, arr)
        return out

    def alloc(self, shape: tuple, dtype: np.dtype) -> np.ndarray | None:
        """An uninitialized C-contiguous array of `shape` and `dtype` in a free extent (for
        a kernel's output that is then pushed: `put` sends it without a copy), or None
        (too small to share, a dtype that cannot be, or no room). The extent is free again
        once both the consumer has handed it back (if it was pushed) and the last array
        viewing it here is gone: the producer never writes into a pushed tensor (its only
        consumer here was the push), and a consumer's view never changes."""
        count = 1
        for d in shape:
            count *= d
        n = count * dtype.itemsize
        if n < MIN_BYTES or dtype.byteorder == ">" or \
                dtype.kind not in "biufc" or dtype not in _SHAREABLE_DTYPES:
            return None
        with self._lock:
            extent = self._extent(n)
            if extent is None:
                return None
            slot, _, base = extent
            self._owned[base.__array_interface__["data"][0]] = (slot, n)
            self._held.add(slot)
        weakref.finalize(base, self._dropped.append, slot).atexit = False
        return base.view(dtype).reshape(shape)

    def _extent(self, n: int) -> tuple[int, int, np.ndarray] | None:
        """(slot, offset, its bytes as a uint8 array) of a free extent of n bytes taken
        for an array of this process, or None (closed, or no room). Under the lock."""
        if self.closed:
            return None
        placed = self._take(n)
        if placed is None:
            return None
        slot, off = placed
        try:
            return slot, off, np.frombuffer(self._mm, np.uint8, n, off)
        except ValueError:  # closed
            self._insert(*self._used.pop(slot))
            return None

    def _take(self, n: int) -> tuple[int, int] | None:
        """A free extent of at least n bytes (first fit: low pages stay hot), its slot
        recorded as used: (slot, offset); None when none is large enough. Under the lock."""
        if self._dropped:
            self._drain()
        need = -(-n // ALIGN) * ALIGN
        for i, (off, size) in enumerate(self._free):
            if size >= need:
                if size == need:
                    del self._free[i]
                else:
                    self._free[i] = (off + need, size - need)
                slot = next(self._slots)
                self._used[slot] = (off, need)
                return slot, off
        return None

    def _drain(self) -> None:
        """The producer's arrays that died: their extents are free unless the consumer
        still holds them (pushed, not handed back). Under the lock."""
        while self._dropped:
            slot = self._dropped.popleft()
            rec = self._resident_slots.pop(slot, None)
            if rec is not None:  # a variable's storage, dropped here
                if _residents.get(rec.addr) is rec:
                    del _residents[rec.addr]
                rec.dead = True
                if not rec.lent:
                    self._insert(*self._used.pop(slot))
                continue
            self._held.discard(slot)
            extent = self._used.get(slot)
            if extent is None:
                continue
            for addr, (s, _) in list(self._owned.items()):
                if s == slot:  # never pushed
                    del self._owned[addr]
                    self._insert(*self._used.pop(slot))
                    break
            else:
                if slot in self._returned:
                    self._returned.discard(slot)
                    self._insert(*self._used.pop(slot))

    def release(self, slots) -> None:
        """Slots the consumer handed back (unknown ones, from a confused peer, ignored)."""
        with self._lock:
            if self._dropped:
                self._drain()
            for slot in slots:
                rec = self._lent.pop(slot, None) if self._lent else None
                if rec is not None:  # a lending of a variable's storage
                    rec.lent -= 1
                    if not rec.lent:
                        if rec.dead:
                            self._insert(*self._used.pop(rec.slot))
                        else:
                            arr = rec.ref()
                            if arr is not None:  # its next update may write in place
                                arr.flags.writeable = True
                    continue
                if slot in self._held:  # an array of ours still views it
                    if slot in self._used:
                        self._returned.add(slot)
                    continue
                extent = self._used.pop(slot, None)
                if extent is not None:
                    self._insert(*extent)

    def _insert(self, off: int, size: int) -> None:
        free = self._free
        lo, hi = 0, len(free)
        while lo < hi:
            mid = (lo + hi) // 2
            if free[mid][0] < off:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(free) and off + size == free[lo][0]:  # joins the next one
            size += free[lo][1]
            del free[lo]
        if lo and free[lo - 1][0] + free[lo - 1][1] == off:  # and the previous one
            off, size = free[lo - 1][0], free[lo - 1][1] + size
            lo -= 1
            del free[lo]
        free.insert(lo, (off, size))

    def in_use(self) -> int:
        with self._lock:
            if self._dropped:
                self._drain()
            return len(self._used)

    def close(self) -> None:
        with self._lock:
            self.closed = True
        self.close_fd()
        try:
            self._mm.close()
        except BufferError:
            pass  # a copy still running on another thread; it goes with its last view


class _Resident:
    """A variable's storage in an extent (`Segment.resident`): how many lendings of it
    are out, and whether the producer's last view of it is gone."""

    __slots__ = ("segment", "slot", "offset", "addr", "ref", "lent", "dead")

    def __init__(self, segment: Segment, slot: int, offset: int, addr: int, ref):
        self.segment, self.slot, self.offset, self.addr, self.ref = \
            segment, slot, offset, addr, ref
        self.lent = 0
        self.dead = False


_segments: weakref.WeakSet = weakref.WeakSet()  # this process's producer segments
_residents: dict[int, _Resident] = {}  # variables' storage in them, by data address
# Arrays `put` copied into a segment, by id: (a weak reference, the segment). An update of
# a variable whose storage is one of them moves it into that segment (`storage_for`).
_copied: dict[int, tuple] = {}


def _note_copied(arr: np.ndarray, segment: Segment) -> None:
    key = id(arr)
    if key not in _copied:
        try:
            _copied[key] = (weakref.ref(arr, lambda _, k=key: _copied.pop(k, None)), segment)
        except TypeError:
            pass


def storage_for(arr) -> np.ndarray | None:
    """For an update about to write a variable's storage `arr` (kernels/buffers.py
    `storage_relocator`): a copy of it resident in the segment it is pushed through, for
    the variable to keep instead, or None (keep `arr`). A resident array still lent gets a
    fresh resident copy (the lending's tensor never changes); one pushed by a copy moves
    into that copy's segment, once."""
    if type(arr) is not np.ndarray:
        return None
    entry = _copied.pop(id(arr), None)
    rec = _residents.get(arr.__array_interface__["data"][0]) if _residents else None
    if rec is not None and rec.ref() is arr:  # (pushed elsewhere too: stays here)
        return None if arr.flags.writeable else rec.segment.resident(arr)
    if entry is not None:
        segment = entry[1]
        if entry[0]() is arr and not segment.closed and shareable(arr) is arr:
            return segment.resident(arr)
    return None


# ---- the consumer's mapping --------------------------------------------------------------

class Mapping:
    """The consumer's view of a producer's segment (`fd` is taken over: closed here).

    Raises (constructor):
      InvalidArgumentError: the descriptor is not a sealed memfd of `size` bytes holding
        `nonce` at its start.
    """

    def __init__(self, fd: int, size: int, nonce: bytes, releases: Releases):
        try:
            try:
                seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            except OSError:
                raise _bad("the descriptor is not a sealable memory file") from None
            if not seals & fcntl.F_SEAL_SHRINK:
                raise _bad("the segment is not sealed against shrinking")
            if not 2 * ALIGN <= size <= 1 << 40 or os.fstat(fd).st_size != size:
                raise _bad(f"the segment is not {size} bytes long")
            try:
                self._mm = mmap.mmap(fd, size)
            except (OSError, ValueError) as e:
                raise _bad(f"the segment cannot be mapped: {e}") from None
        finally:
            os.close(fd)
        if self._mm[:NONCE_BYTES] != nonce or len(nonce) != NONCE_BYTES:
            raise _bad("the segment does not hold the producer's nonce (map check)")
        self.nonce = nonce
        self.size = size
        self._releases = releases

    def array(self, dtype_enum: int, dims: list, offset: int, nbytes: int, slot: int
              ) -> np.ndarray:
        """The array a descriptor names, viewing the segment; its slot is released when
        the last view of it goes.

        Raises:
          InvalidArgumentError: the descriptor does not fit the segment or its dtype/shape.
        """
        np_dtype = wire._NUMPY_OF_ENUM.get(dtype_enum)
        if np_dtype is None:
            raise _bad(f"dtype {dtype_enum} cannot be shared")
        if min(dims, default=0) < 0 or len(dims) > 254:
            raise _bad(f"shape {dims}")
        count = 1
        for d in dims:
            count *= d
        if count * np_dtype.itemsize != nbytes or nbytes < 1:
            raise _bad(f"{nbytes} bytes for shape {dims} of {np_dtype}")
        if offset % ALIGN or offset < ALIGN or offset + nbytes > self.size or slot < 1:
            raise _bad(f"extent [{offset}, {offset + nbytes}) of slot {slot} is outside "
                       f"the {self.size}-byte segment")
        base = np.frombuffer(self._mm, np.uint8, nbytes, offset)
        weakref.finalize(base, self._releases.add, slot, nbytes).atexit = False
        arr = base.view(np_dtype).reshape(dims)
        if slot & LENT:
            arr.flags.writeable = False
        return arr


class Releases:
    """Slots a consumer is done with, written back to the producer a few at a time, or
    taken by the next frame this task writes to the producer's task (`take`, `piggyback`).

    `write(frame) -> bool` writes a frame on the connection, or returns False at once when
    another thread is writing there (that one calls `flush` when done): `add` runs in
    finalizers, on whichever thread dropped the last view, which may be that writer."""

    def __init__(self, write):
        self._write = write
        self._pending: collections.deque = collections.deque()
        self._bytes = 0
        self._lock = threading.Lock()

    def add(self, slot: int, nbytes: int) -> None:
        self._pending.append(slot)
        self._bytes += nbytes  # racy, and only a hint of when to flush
        if self._bytes >= _RELEASE_BYTES or len(self._pending) >= _RELEASE_SLOTS:
            self.flush()

    def take(self) -> list[int]:
        """The pending slots, now (none when another thread is writing them)."""
        if not self._pending or not self._lock.acquire(blocking=False):
            return []
        try:
            slots = []
            while self._pending:
                slots.append(self._pending.popleft())
            self._bytes = 0
            return slots
        finally:
            self._lock.release()

    def restore(self, slots: list[int]) -> None:
        """Slots `take` gave out that could not be written: pending again."""
        self._pending.extendleft(reversed(slots))
        self._bytes = _RELEASE_BYTES

    def flush(self, force: bool = False) -> None:
        if not self._pending or not self._lock.acquire(blocking=False):
            return  # the holder flushes
        try:
            if not force and self._bytes < _RELEASE_BYTES and \
                    len(self._pending) < _RELEASE_SLOTS:
                return
            slots = []
            while self._pending:
                slots.append(self._pending.popleft())
            self._bytes = 0
            if not self._write(encode_release(slots)):
                self._pending.extendleft(reversed(slots))
                self._bytes = _RELEASE_BYTES
        finally:
            self._lock.release()


# ---- releases carried by the connection the other way ------------------------------------
#
# Two tasks that push to each other have a connection each way. A consumer's releases for
# the segment of the connection coming in from a task ride on the next frame it writes on
# its own connection to that task (`piggyback`): a worker's gradients carry the slots of
# the variables the parameter server lent it, which are then handed back before the
# server's update runs, at no system call of their own.

_incoming: dict[str, tuple] = {}  # producer task -> (its connection's Releases, nonce)


def incoming(peer: str, releases: Releases, nonce: bytes) -> None:
    """Records the shared connection coming in from task `peer` (see above)."""
    if peer:
        _incoming[peer] = (releases, nonce)


def forget_incoming(peer: str, releases: Releases) -> None:
    entry = _incoming.get(peer)
    if entry is not None and entry[0] is releases:
        del _incoming[peer]


def piggyback(task: str) -> tuple[bytes, Releases, list] | None:
    """(frame, releases, slots): a frame of the slots this task is done with in the
    segment of `task`'s connection to it (FOREIGN_RELEASE_TAG: the segment's nonce, then
    the slots), taken from `releases` (`releases.restore(slots)` if it cannot be
    written); or None."""
    entry = _incoming.get(task)
    if entry is None:
        return None
    releases = entry[0]
    slots = releases.take()
    if not slots:
        return None
    body = entry[1] + b"".join(map(varint, slots))
    return bytes((FOREIGN_RELEASE_TAG,)) + varint(len(body)) + body, releases, slots


def release_foreign(data) -> None:
    """Hands back the slots of a `piggyback` frame to the segment its nonce names (a
    nonce of no segment here: ignored, as unknown slots are).

    Raises:
      ValueError: the frame is malformed.
    """
    buf = memoryview(data)
    n, pos = read_varint(buf, 1)
    if buf[:1] != bytes((FOREIGN_RELEASE_TAG,)) or pos + n != len(buf) or n < NONCE_BYTES:
        raise ValueError("malformed release frame")
    nonce = bytes(buf[pos:pos + NONCE_BYTES])
    pos += NONCE_BYTES
    slots = []
    while pos < len(buf):
        slot, pos = read_varint(buf, pos)
        slots.append(slot)
    for segment in list(_segments):
        if segment.nonce == nonce:
            segment.release(slots)
            return


# ---- frames ------------------------------------------------------------------------------

# A step's keys, dtypes and shapes recur every step: the constant middle of a tensor
# frame (key, dtype, dims, nbytes) is kept per (key, dtype, shape) by the producer, and the
# consumer keeps per key what it parsed (at most this many of each).
_LAYOUTS_KEPT = 4096
_middles: dict = {}
_layouts: dict = {}


def encode_tensor(step_id: int, key: str, arr: np.ndarray, slot: int, offset: int) -> bytes:
    """A tensor-in-shared-memory frame: field 4 = {uint64 step_id = 1; string key = 2;
    DataType dtype = 3; repeated int64 dims = 4 (packed); uint64 nbytes = 6; uint64
    offset = 5; uint64 slot = 7} (nbytes written before offset)."""
    middle = _middles.get((key, arr.dtype, arr.shape))
    if middle is None:
        name = key.encode()
        dims = b"".join(varint(d) for d in arr.shape)
        middle = b"".join((b"\x12", varint(len(name)), name,
                           b"\x18", varint(dtypes.as_dtype(arr.dtype).as_datatype_enum),
                           b"\x22", varint(len(dims)), dims, b"\x30", varint(arr.nbytes)))
        if len(_middles) >= _LAYOUTS_KEPT:
            _middles.clear()
        _middles[(key, arr.dtype, arr.shape)] = middle
    body = b"".join((b"\x08", varint(step_id), middle, b"\x28", varint(offset),
                     b"\x38", varint(slot)))
    return b"".join((_TENSOR_TAG_BYTE, varint(len(body)), body))


def _decode_known(buf: memoryview):
    """`decode_tensor` of a frame laid out as `encode_tensor` writes it, for a key seen
    before with the same dtype, dims and size (its middle bytes compared, not parsed);
    None for any other frame (the full parse decides)."""
    try:
        n, pos = read_varint(buf, 1)
        if pos + n != len(buf) or buf[pos] != 0x08:
            return None
        step_id, pos = read_varint(buf, pos + 1)
        if buf[pos] != 0x12:
            return None
        m, pos = read_varint(buf, pos + 1)
        end = pos + m
        layout = _layouts.get(bytes(buf[pos:end]))
        if layout is None:
            return None
        rest, key, enum, dims, nbytes = layout
        pos = end + len(rest)
        if buf[end:pos] != rest or buf[pos] != 0x28:
            return None
        offset, pos = read_varint(buf, pos + 1)
        if buf[pos] != 0x38:
            return None
        slot, pos = read_varint(buf, pos + 1)
    except (ValueError, IndexError):
        return None
    if pos != len(buf):
        return None
    return step_id, key, enum, list(dims), offset, nbytes, slot


def decode_tensor(data) -> tuple[int, str, int, list, int, int, int]:
    """(step_id, key, dtype enum, dims, offset, nbytes, slot) of a tensor frame.

    Raises:
      InvalidArgumentError: the frame is malformed.
    """
    buf = memoryview(data)
    if buf[:1] == _TENSOR_TAG_BYTE:
        known = _decode_known(buf)
        if known is not None:
            return known
    try:
        if buf[:1] != _TENSOR_TAG_BYTE:
            raise ValueError("not a shared-memory tensor frame")
        n, pos = read_varint(buf, 1)
        if pos + n != len(buf):
            raise ValueError("truncated frame")
        fields = {1: 0, 3: 0, 5: -1, 6: -1, 7: 0}
        key, dims = None, []
        while pos < len(buf):
            tag, pos = read_varint(buf, pos)
            number, kind = tag >> 3, tag & 7
            if kind == 0 and number in fields:
                fields[number], pos = read_varint(buf, pos)
            elif kind == 2 and number in (2, 4):
                m, pos = read_varint(buf, pos)
                if pos + m > len(buf):
                    raise ValueError("truncated field")
                if number == 2:
                    key = bytes(buf[pos:pos + m]).decode()
                else:
                    end, p = pos + m, pos
                    while p < end:
                        d, p = read_varint(buf, p)
                        dims.append(d)
                    if p != end:
                        raise ValueError("truncated shape")
                pos += m
            else:
                pos = wire._skip(buf, pos, kind)
        if pos != len(buf) or key is None or fields[5] < 0 or fields[6] < 0:
            raise ValueError("a field is missing")
    except (ValueError, IndexError, UnicodeDecodeError) as e:
        raise _bad(str(e)) from None
    packed = b"".join(varint(d) for d in dims)
    if len(_layouts) >= _LAYOUTS_KEPT:
        _layouts.clear()
    _layouts[key.encode()] = (b"".join((b"\x18", varint(fields[3]), b"\x22",
                                        varint(len(packed)), packed, b"\x30",
                                        varint(fields[6]))),
                              key, fields[3], tuple(dims), fields[6])
    return fields[1], key, fields[3], dims, fields[5], fields[6], fields[7]


def encode_release(slots) -> bytes:
    body = b"".join(map(varint, slots))
    return bytes((RELEASE_TAG,)) + varint(len(body)) + body


def decode_release(data) -> list[int]:
    """The slots of a release frame (ValueError when malformed)."""
    buf = memoryview(data)
    n, pos = read_varint(buf, 1)
    if buf[:1] != bytes((RELEASE_TAG,)) or pos + n != len(buf):
        raise ValueError("malformed release frame")
    slots = []
    while pos < len(buf):
        s, pos = read_varint(buf, pos)
        slots.append(s)
    return slots


_HELLO = struct.Struct("<8s32sQ16sI")  # magic, ticket, segment size, nonce, name length


def encode_hello(ticket: bytes, segment: Segment, sender: bytes) -> bytes:
    return _HELLO.pack(HELLO_MAGIC, ticket, segment.size, segment.nonce,
                       len(sender)) + sender


def read_hello(conn: socket.socket) -> tuple[bytes, int, bytes, int, int]:
    """(ticket, segment size, nonce, name length, fd) of the hello on a Unix connection.

    Raises:
      OSError: no hello, or no (or more than one) descriptor with it; any descriptor
        received is closed.
    """
    data, fds, flags, _ = socket.recv_fds(conn, _HELLO.size, 1, socket.MSG_WAITALL)
    if len(data) != _HELLO.size or len(fds) != 1 or flags & socket.MSG_CTRUNC:
        for fd in fds:
            os.close(fd)
        raise OSError("malformed shared-memory hello")
    magic, ticket, size, nonce, n = _HELLO.unpack(data)
    if magic != HELLO_MAGIC:
        os.close(fds[0])
        raise OSError("malformed shared-memory hello")
    return ticket, size, nonce, n, fds[0]


def _bad(what: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, None, f"Malformed shared-memory tensor descriptor: {what}")
