"""Cancellation of a step: callbacks registered by blocked kernels, run once on cancel."""

from __future__ import annotations

import threading
from collections.abc import Callable


class CancellationManager:
    """Runs every registered callback once when `start_cancel` is called.

    A callback registered after cancellation is refused (`register` returns False), so the
    kernel must fail at once instead of blocking.
    """

    __slots__ = ("_lock", "_callbacks", "_cancelled", "_next_token")

    def __init__(self):
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._cancelled = False
        self._next_token = 0

    @property
    def is_cancelled(self) -> bool:
        return self._cancelled

    def get_token(self) -> int:
        with self._lock:
            self._next_token += 1
            return self._next_token

    def register(self, token: int, callback: Callable[[], None]) -> bool:
        with self._lock:
            if self._cancelled:
                return False
            self._callbacks[token] = callback
            return True

    def deregister(self, token: int) -> bool:
        """True if the callback was removed before cancellation ran it."""
        with self._lock:
            return self._callbacks.pop(token, None) is not None

    def start_cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = list(self._callbacks.values()), {}
        for cb in callbacks:
            cb()
