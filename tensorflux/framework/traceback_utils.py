"""Traceback filtering (`tf.debugging.enable_traceback_filtering` and friends).

While filtering is enabled on a thread (the default, as in TensorFlow), an exception that
leaves a function decorated with `filter_traceback` (op creation, `apply_op`; running a step,
`Session.run`) loses the frames of tensorflux's own modules from its traceback: the user's
frames stay (including the user's functions tensorflux called, such as cond branches, loop
bodies and dataset functions), and so does the innermost frame, where the error was raised.
Library functions between the user's call and the decorated one (`tf.layers.dense` calling
`apply_op`, say) keep their frames, as TensorFlow's public wrappers keep theirs.
Disabled, exceptions keep their full traceback. The setting is per thread.
"""

from __future__ import annotations

import functools
import os
import threading
import types

__all__ = ["enable_traceback_filtering", "disable_traceback_filtering",
           "is_traceback_filtering_enabled", "filter_traceback"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_state = threading.local()


def is_traceback_filtering_enabled() -> bool:
    """Whether tracebacks are filtered on this thread (True unless disabled here)."""
    return getattr(_state, "enabled", True)


def enable_traceback_filtering() -> None:
    """Filters tensorflux's frames out of the tracebacks of errors raised on this thread."""
    _state.enabled = True


def disable_traceback_filtering() -> None:
    """Keeps full tracebacks for errors raised on this thread."""
    _state.enabled = False


def _internal(tb: types.TracebackType) -> bool:
    """A frame of tensorflux's modules, or of code it generated ("<tensorflux step 3>")."""
    filename = tb.tb_frame.f_code.co_filename
    return filename.startswith("<tensorflux") or os.path.abspath(filename).startswith(
        _PACKAGE_DIR)


def filtered(tb: types.TracebackType | None) -> types.TracebackType | None:
    """`tb` without the entries of tensorflux's frames, except the innermost entry."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    if not entries:
        return None
    kept = [e for e in entries[:-1] if not _internal(e)] + [entries[-1]]
    out = None
    for e in reversed(kept):
        out = types.TracebackType(out, e.tb_frame, e.tb_lasti, e.tb_lineno)
    return out


def filter_traceback(fn):
    """Decorates `fn` so that exceptions leaving it have their traceback filtered (when
    filtering is enabled on the thread); their class, message, cause and context stay."""

    @functools.wraps(fn)
    def error_handler(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if not is_traceback_filtering_enabled():
                raise
            raise e.with_traceback(filtered(e.__traceback__))  # noqa: B904 - same exception

    return error_handler
