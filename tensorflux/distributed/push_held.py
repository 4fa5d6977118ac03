"""A thread's pushes held back and written together (push.py's socket connections).

A step's thread that pushes several tensors in a row (a parameter server sending the
variables it read) holds them (`holding`) and writes each connection's frames in one system
call (`flush_held`), so the consumer's reader wakes once for all of them. The static
executor decides where (static_executor `_held_sends`): only across nodes that neither wait
nor take long, and it flushes before anything else and at the end of the step (a failed
step's too), so a held tensor never waits for something its consumer is to produce."""

from __future__ import annotations

import threading

from tensorflux.framework import errors


class _Held(threading.local):
    """A thread's pushes held back (`holding`): frames per connection, in order."""

    on = False
    frames: dict | None = None


held = _Held()


class holding:
    """Within it, the frames this thread pushes on socket connections are held, not
    written: `flush_held` writes each connection's in one system call (the consumer
    wakes once for all of them). A step's thread holds the pushes of consecutive
    _Sends and flushes them before it runs anything that may wait or take long, so a
    held tensor never waits for something its consumer is to produce."""

    __slots__ = ("_was",)

    def __enter__(self):
        self._was = held.on
        if held.frames is None:
            held.frames = {}
        held.on = True
        return self

    def __exit__(self, *exc) -> None:
        held.on = self._was


def flush_held() -> None:
    """Writes this thread's held frames (see `holding`).

    Raises:
      UnavailableError: a connection failed (its frames are lost; the others written).
    """
    pending = held.frames
    if not pending:
        return
    held.frames = {}
    first = None
    for stream, frame in pending.items():
        try:
            stream._write(frame)
        except errors.OpError as e:
            first = first or e
    if first is not None:
        raise first
