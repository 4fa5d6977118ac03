"""CPU kernels of the persistent-tensor ops (tensorflux/ops/session_ops.py): one store per
session (a step's kernels reach their session as `ctx.session`), holding what
GetSessionHandle left under its handle "<node>;<n>;<device>" (n counting that session's
handles) until DeleteSessionTensor drops it or the session closes (`clear`)."""

from __future__ import annotations

import itertools
import threading
import weakref

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel, kernel_factory


class _Store:
    __slots__ = ("lock", "tensors", "ids")

    def __init__(self):
        self.lock = threading.Lock()
        self.tensors: dict[str, object] = {}
        self.ids = itertools.count()


_stores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def _store(ctx) -> _Store:
    session = ctx.session
    if session is None:
        raise errors.FailedPreconditionError(
            None, None, "Persistent tensors need a session (this step runs outside one)")
    store = _stores.get(session)
    if store is None:
        with _stores_lock:
            store = _stores.setdefault(session, _Store())
    return store


def clear(session) -> None:
    """Drops every tensor `session` holds (its close)."""
    with _stores_lock:
        _stores.pop(session, None)


def drop(session, handle: str) -> None:
    """Drops `handle`'s tensor from `session`'s store if it is there (a TensorHandle that
    was garbage collected)."""
    store = _stores.get(session)
    if store is not None:
        with store.lock:
            store.tensors.pop(handle, None)


def _missing(handle: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, None, f"The tensor with handle '{handle}' is not in the session store.")


def _text(handle) -> str:
    value = handle.item() if hasattr(handle, "item") else handle
    return value.decode() if isinstance(value, bytes) else str(value)


@kernel_factory("GetSessionHandle")
def _get_session_handle(node):
    device = node.device

    def compute(ctx, value):
        store = _store(ctx)
        with store.lock:
            handle = f"{node.name};{next(store.ids)};{ctx.device.name if ctx.device else device}"
            store.tensors[handle] = value
        return handle.encode()

    return compute


@kernel("GetSessionTensor")
def _get_session_tensor(ctx, handle):
    name = _text(handle)
    store = _store(ctx)
    with store.lock:
        value = store.tensors.get(name)
    if value is None:
        raise _missing(name)
    return value


@kernel("DeleteSessionTensor")
def _delete_session_tensor(ctx, handle):
    name = _text(handle)
    store = _store(ctx)
    with store.lock:
        if store.tensors.pop(name, None) is None:
            raise _missing(name)
