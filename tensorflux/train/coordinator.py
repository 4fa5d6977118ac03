"""`tf.train.Coordinator` and `tf.train.LooperThread`: stopping a set of threads together.

Threads poll `should_stop()`; any thread may `request_stop(ex)`, and the first exception
reported this way (other than the "clean stop" types, OutOfRangeError by default) is
re-raised by `join()` in the thread that waits, after the threads have stopped or a grace
period has expired.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time

from tensorflux.framework import errors

__all__ = ["Coordinator", "LooperThread"]

_log = logging.getLogger("tensorflux.train")


class Coordinator:
    """A coordinator for threads (`tf.train.Coordinator`).

    Args:
      clean_stop_exception_types: exception types that stop the threads without being
        re-raised by `join` (default: `(tf.errors.OutOfRangeError,)`, the end of an input).
    """

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _filter_exception(self, ex):
        value = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(value, self._clean_stop_exception_types):
            return None
        return ex

    def request_stop(self, ex=None) -> None:
        """Asks every thread to stop; records `ex` (an exception or an exc_info tuple), the
        first one only, for `join` to re-raise.

        Raises:
          The exception `ex` itself if the coordinator was already joined (it could not be
          reported any other way).
        """
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                if ex is not None:
                    raise ex
            if not self._stop_event.is_set():
                if ex is not None and self._exc_info_to_raise is None:
                    if isinstance(ex, tuple):
                        info = ex
                    elif sys.exc_info()[1] is ex:
                        info = sys.exc_info()
                    else:
                        info = (type(ex), ex, ex.__traceback__)
                    if len(info) != 3 or not info[0] or not info[1]:
                        try:
                            raise ValueError("ex must be a tuple or sys.exc_info must return "
                                             f"the current exception: {info}")
                        except ValueError:
                            info = sys.exc_info()
                    _log.info("Error reported to Coordinator: %s", info[1])
                    self._exc_info_to_raise = info
                self._stop_event.set()

    def clear_stop(self) -> None:
        """Clears the stop request (and any recorded exception) so the threads may restart."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """True once a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A context manager that requests a stop when its body raises."""
        try:
            yield
        except:  # noqa: E722 - every exception stops the coordinator, as in TF
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None) -> bool:
        """Waits until a stop is requested (or `timeout` seconds pass); True if stopped."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Makes `join()` (without arguments) wait for `thread`."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for the threads to stop, then re-raises a reported exception.

        Waits until every thread has finished or a stop was requested; then gives the
        threads `stop_grace_period_secs` to finish.

        Raises:
          The first exception passed to `request_stop`, if any.
          RuntimeError: threads were still running after the grace period (unless
            `ignore_live_threads`).
        """
        with self._lock:
            if threads is None:
                threads = self._registered_threads
            else:
                threads = self._registered_threads.union(set(threads))
            threads = list(threads)
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        wait = 0.001
        remaining = stop_grace_period_secs
        while any(t.is_alive() for t in threads) and remaining >= 0.0:
            time.sleep(wait)
            remaining -= wait
            wait = max(min(2 * wait, remaining), 0.001)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                info = self._exc_info_to_raise
                raise info[1].with_traceback(info[2])
            if stragglers:
                if ignore_live_threads:
                    _log.info("Coordinator stopped with threads still running: %s",
                              " ".join(stragglers))
                else:
                    raise RuntimeError("Coordinator stopped with threads still running: "
                                       + " ".join(stragglers))

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Re-raises the exception passed to `request_stop`, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                info = self._exc_info_to_raise
                raise info[1].with_traceback(info[2])


class LooperThread(threading.Thread):
    """A thread that runs code repeatedly, optionally on a timer, until the coordinator
    stops (`tf.train.LooperThread`).

    Args:
      coord: a Coordinator.
      timer_interval_secs: seconds between calls of `run_loop`; None runs it back to back.
      target, args, kwargs: the callable to run instead of overriding `run_loop`.
    """

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if self._target:
            self._args = args or ()
            self._kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        """Starts a LooperThread that calls `target(*args, **kwargs)` repeatedly."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_timer_time = time.time()
                while not self._coord.wait_for_stop(next_timer_time - time.time()):
                    next_timer_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        """Called once before the loop."""

    def stop_loop(self):
        """Called once after the loop."""

    def run_loop(self):
        """Called repeatedly; runs `target` unless overridden."""
        if self._target:
            self._target(*self._args, **self._kwargs)
