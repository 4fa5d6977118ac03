"""`tf.logging`: TF1's logging functions on Python's `logging`, logger "tensorflux".

The logger is the one the library itself writes to (Saver, MonitoredSession, ...), so
`tf.logging.set_verbosity(tf.logging.ERROR)` quiets the library's warnings as TF's quiets
TF's, and a real TensorFlow loaded in the same process (TensorBoard does) keeps its own
"tensorflow" logger. As in TF, the first use adds a stderr handler printing
"LEVEL:tensorflux:message" unless the root logger already has handlers, and the default
verbosity is WARN (the logger's effective level).

`log_every_n` and `log_first_n` count calls per call site (file and line of the caller).
"""

from __future__ import annotations

import logging
import sys
import threading

from tensorflux.ops import logging_ops

DEBUG = logging.DEBUG
INFO = logging.INFO
WARN = logging.WARN
ERROR = logging.ERROR
FATAL = logging.FATAL

LOGGER_NAME = "tensorflux"

__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "TaskLevelStatusMessage", "debug",
           "error", "fatal", "flush", "get_logger", "get_verbosity", "info", "log",
           "log_every_n", "log_first_n", "log_if", "set_verbosity", "vlog", "warn", "warning"]

_lock = threading.Lock()
_configured = False
_counts: dict[tuple[str, int], int] = {}


def get_logger() -> logging.Logger:
    """The library's logger (`tf.get_logger`), given a stderr handler on first use.

    Returns:
      `logging.getLogger("tensorflux")`.
    """
    global _configured
    logger = logging.getLogger(LOGGER_NAME)
    if not _configured:
        with _lock:
            if not _configured:
                if not logging.getLogger().handlers and not logger.handlers:
                    handler = logging.StreamHandler(sys.stderr)
                    handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
                    logger.addHandler(handler)
                _configured = True
    return logger


def log(level: int, msg, *args, **kwargs) -> None:
    """Logs `msg % args` at `level`."""
    get_logger().log(level, msg, *args, stacklevel=2, **kwargs)


def debug(msg, *args, **kwargs) -> None:
    """Logs at DEBUG."""
    get_logger().debug(msg, *args, stacklevel=2, **kwargs)


def info(msg, *args, **kwargs) -> None:
    """Logs at INFO."""
    get_logger().info(msg, *args, stacklevel=2, **kwargs)


def warning(msg, *args, **kwargs) -> None:
    """Logs at WARN."""
    get_logger().warning(msg, *args, stacklevel=2, **kwargs)


warn = warning


def error(msg, *args, **kwargs) -> None:
    """Logs at ERROR."""
    get_logger().error(msg, *args, stacklevel=2, **kwargs)


def fatal(msg, *args, **kwargs) -> None:
    """Logs at FATAL (CRITICAL); the program goes on, as with TF's."""
    get_logger().fatal(msg, *args, stacklevel=2, **kwargs)


def vlog(level: int, msg, *args, **kwargs) -> None:
    """Logs at the numeric `level` (`vlog(1, ...)` is below DEBUG and usually hidden)."""
    get_logger().log(level, msg, *args, stacklevel=2, **kwargs)


def log_if(level: int, msg, condition, *args) -> None:
    """Logs `msg % args` at `level` when `condition` holds."""
    if condition:
        get_logger().log(level, msg, *args, stacklevel=2)


def _call_count() -> int:
    """How many times the caller's caller has been here before (per file and line)."""
    frame = sys._getframe(2)
    key = (frame.f_code.co_filename, frame.f_lineno)
    with _lock:
        count = _counts.get(key, 0)
        _counts[key] = count + 1
    return count


def log_every_n(level: int, msg, n: int, *args) -> None:
    """Logs on the 1st, (n+1)th, (2n+1)th, ... call from the same call site.

    Args:
      level: the logging level.
      msg: the message (a %-format string for `args`).
      n: log once every n calls.
      *args: the format arguments.
    """
    count = _call_count()
    if count % max(n, 1) == 0:
        get_logger().log(level, msg, *args, stacklevel=2)


def log_first_n(level: int, msg, n: int, *args) -> None:
    """Logs on the first `n` calls from the same call site only.

    Args:
      level: the logging level.
      msg: the message (a %-format string for `args`).
      n: how many calls log.
      *args: the format arguments.
    """
    count = _call_count()
    if count < n:
        get_logger().log(level, msg, *args, stacklevel=2)


def TaskLevelStatusMessage(msg) -> None:  # noqa: N802 - TF1's name
    """Logs `msg` at ERROR (as TF does)."""
    error(msg)


def flush() -> None:
    """Not supported (as in TF).

    Raises:
      NotImplementedError: always.
    """
    raise NotImplementedError()


def get_verbosity() -> int:
    """The effective level of the logger (WARN unless set)."""
    return get_logger().getEffectiveLevel()


def set_verbosity(v: int) -> None:
    """Logs only messages at `v` or above from now on (DEBUG, INFO, WARN, ERROR, FATAL)."""
    get_logger().setLevel(v)


for _fn, _stream in ((info, "log(info)"), (warning, "log(warning)"),
                     (error, "log(error)")):
    logging_ops.register_output_stream(_fn, _stream)
del _fn, _stream
