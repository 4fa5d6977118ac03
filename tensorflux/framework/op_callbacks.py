"""Op callbacks: functions that see every op a TF1 wrapper creates, on this thread, and may
replace the output tensors the wrapper hands back.

`apply_op` (op_def_library.py) is where wrappers create ops; after creating one it calls each
callback registered on the current thread, in registration order, as `callback(op, outputs)`
with `outputs` the op's output tensors. A callback returns None to keep them, or a list of
the same length to hand back instead (say, each float output passed through a check), which
the next callback then sees. Ops a callback creates itself do not reach the callbacks again.

Libraries above the framework register here (`tf.debugging.enable_check_numerics` does), so
the framework never imports them. Like TensorFlow's, the registrations are per thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["add_op_callback", "remove_op_callback", "any_op_callbacks", "op_callbacks",
           "invoke_op_callbacks"]

_state = threading.local()


def _callbacks() -> list[Callable]:
    if not hasattr(_state, "callbacks"):
        _state.callbacks = []
        _state.active = False
    return _state.callbacks


def add_op_callback(callback: Callable) -> None:
    """Registers `callback(op, outputs) -> list | None` on the current thread (once)."""
    callbacks = _callbacks()
    if callback not in callbacks:
        callbacks.append(callback)


def remove_op_callback(callback: Callable) -> None:
    """Unregisters `callback` from the current thread.

    Raises:
      KeyError: `callback` is not registered on this thread.
    """
    callbacks = _callbacks()
    if callback not in callbacks:
        raise KeyError(f"The op callback {callback!r} is not registered on this thread.")
    callbacks.remove(callback)


def any_op_callbacks() -> bool:
    """Whether any callback is registered on the current thread (cheap: every op asks)."""
    return bool(getattr(_state, "callbacks", None))


def op_callbacks() -> tuple[Callable, ...]:
    """The callbacks registered on the current thread, in order."""
    return tuple(_callbacks())


def invoke_op_callbacks(op, outputs: list) -> list:
    """`outputs` after every callback of this thread has seen `op` (see the module doc)."""
    callbacks = _callbacks()
    if not callbacks or _state.active:
        return outputs
    _state.active = True
    try:
        for callback in tuple(callbacks):
            replaced = callback(op, list(outputs))
            if replaced is not None:
                if len(replaced) != len(outputs):
                    raise ValueError(f"An op callback returned {len(replaced)} outputs for op "
                                     f"'{op.name}', which has {len(outputs)}.")
                outputs = list(replaced)
    finally:
        _state.active = False
    return outputs
