"""Helpers for tests with threads: start and join them, wait (bounded) for a condition,
and check that closing a Session cancels the steps blocked in it."""

from __future__ import annotations

import threading
import time

import tensorflux as tf


def start(fn, *args) -> threading.Thread:
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


def join(*threads, timeout=20) -> None:
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "thread did not finish"


def wait_until(cond, timeout=10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.005)


def blocked_steps(sess, n):
    """A condition: at least `n` steps of `sess` are running (blocked ones included)."""
    return lambda: len(sess._active_steps) >= n


def assert_close_cancels_blocked_runs(sess, fetch, n: int) -> None:
    """Runs `fetch` (which blocks) in `n` threads, closes `sess` once all are blocked, and
    checks that every one ends with CancelledError."""
    caught = []

    def run():
        try:
            sess.run(fetch)
        except tf.errors.CancelledError as e:
            caught.append(e)

    threads = [start(run) for _ in range(n)]
    wait_until(blocked_steps(sess, n))
    sess.close()
    join(*threads, timeout=10)
    assert len(caught) == n
