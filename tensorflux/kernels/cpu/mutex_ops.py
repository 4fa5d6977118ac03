"""CPU kernels of the mutex ops (tensorflux/ops/mutex_ops.py): MutexV2, MutexLock,
ConsumeMutexLock.

A `Mutex` lives in its device's ResourceMgr and is locked by the steps of any number of
threads. MutexLock is asynchronous: a step that finds the mutex held leaves its request
behind and holds no thread; whoever releases the mutex hands it to the oldest request.
Every change of state runs under the mutex's `DeferringLock` (kernels/queues.py), so no
thread ever sleeps on a lock while holding the GIL, and callbacks run outside it.

Invariants (under the lock):
  - `_held` is True exactly while one request is HELD; `_waiters` (FIFO) are WAITING, and
    is empty while the mutex is free.
  - A request goes WAITING -> HELD -> RELEASED, or WAITING -> RELEASED when its step is
    cancelled (its `done` then gets CancelledError), or straight to HELD. Releasing a
    request that is already RELEASED does nothing, so a lock released by ConsumeMutexLock
    is not released again at its step's end.
  - The held lock (MutexLock's variant output) is the request itself. The kernel also puts
    its release on the step's `at_end` list (KernelContext): a step that fails, or whose
    fetches did not need the ConsumeMutexLock, releases the mutex when its executor ends,
    after everything it started has finished, as TensorFlow releases it when the lock
    tensor is destroyed with the step's state.
"""

from __future__ import annotations

from collections import deque

from tensorflux.framework import errors
from tensorflux.kernels.cpu.data_flow_ops import lookup, resource_op
from tensorflux.kernels.queues import DeferringLock
from tensorflux.kernels.registry import kernel, kernel_factory

WAITING, HELD, RELEASED = 0, 1, 2


class MutexLockRequest:
    """One MutexLock's request for the mutex, and once granted the held lock (the variant
    value MutexLock outputs)."""

    __slots__ = ("mutex", "done", "state", "cm", "token")

    def __init__(self, mutex: Mutex, done):
        self.mutex = mutex
        self.done = done
        self.state = WAITING
        self.cm = None
        self.token = None

    def release(self) -> None:
        """Releases the mutex if this request holds it (idempotent)."""
        self.mutex.release(self)

    def __repr__(self) -> str:
        state = ("waiting", "held", "released")[self.state]
        return f"<MutexLock of '{self.mutex.name}' {state}>"


class Mutex(DeferringLock):
    """A mutex resource (MutexV2): granted to one MutexLock request at a time, in the
    order they came (see the module docstring)."""

    dropped = False  # set when the ResourceMgr drops the mutex

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self._held = False
        self._waiters: deque[MutexLockRequest] = deque()

    def __repr__(self) -> str:
        return f"<Mutex '{self.name}' held={self._held} waiting={len(self._waiters)}>"

    def lock(self, request: MutexLockRequest, cm) -> None:
        """Grants the mutex to `request` now or once it is free: request.done(request),
        or request.done(CancelledError) when `cm` cancels it first."""
        self._call(self._lock_locked, request, cm)

    def release(self, request: MutexLockRequest) -> None:
        self._call(self._release_locked, request)

    def close_resource(self) -> None:
        """The resource is dropped (Session.close, a container reset): waiting requests
        fail with CancelledError."""
        self._call(self._drop_locked)

    # ---- under the lock (each returns the (callback, value) pairs to call after it) ----
    def _lock_locked(self, request: MutexLockRequest, cm) -> list:
        if self.dropped:
            request.state = RELEASED
            return [(request.done, _cancelled())]
        if not self._held:
            self._held = True
            request.state = HELD
            return [(request.done, request)]
        if cm is not None:
            token = cm.get_token()
            if not cm.register(token, lambda: self._call(self._cancel_locked, request)):
                request.state = RELEASED
                return [(request.done, _cancelled())]
            request.cm, request.token = cm, token
        self._waiters.append(request)
        return []

    def _cancel_locked(self, request: MutexLockRequest) -> list:
        if request.state != WAITING:
            return []  # granted meanwhile: it is released when its step ends
        self._waiters.remove(request)
        request.state = RELEASED
        return [(request.done, _cancelled())]

    def _release_locked(self, request: MutexLockRequest) -> list:
        if request.state == WAITING:  # its step ended before the mutex came
            return self._cancel_locked(request)
        if request.state == RELEASED:
            return []
        request.state = RELEASED
        if not self._waiters:
            self._held = False
            return []
        nxt = self._waiters.popleft()
        nxt.state = HELD
        out = [(nxt.done, nxt)]
        if nxt.cm is not None:
            out.insert(0, (nxt.cm.deregister, nxt.token))
        return out

    def _drop_locked(self) -> list:
        self.dropped = True
        out = []
        while self._waiters:
            request = self._waiters.popleft()
            request.state = RELEASED
            out.append((request.done, _cancelled()))
        return out


def _cancelled() -> errors.CancelledError:
    return errors.CancelledError(None, None, "Lock acquisition cancelled.")


@kernel_factory("MutexV2")
def _mutex(node):
    return resource_op(node, Mutex)


@kernel_factory("MutexLock", is_async=True)
def _mutex_lock(node):
    def compute(ctx, done, handle):
        mutex = lookup(ctx, handle, Mutex, "Mutex")
        request = MutexLockRequest(mutex, done)
        ctx.at_end.append(request.release)
        mutex.lock(request, ctx.cancellation)
    return compute


@kernel("ConsumeMutexLock")
def _consume_mutex_lock(ctx, mutex_lock):
    if not isinstance(mutex_lock, MutexLockRequest):
        raise errors.InvalidArgumentError(
            None, None, "Input to ConsumeMutexLock is not a MutexLock, got "
            f"{type(mutex_lock).__name__}")
    mutex_lock.release()
