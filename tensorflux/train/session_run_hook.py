"""The SessionRunHook API: code that runs around every `MonitoredSession.run`.

A hook sees the session's whole life: `begin()` before the graph is finalized (it may add
ops), `after_create_session(session, coord)` once the session exists and is initialized or
restored (also after a recoverable session was re-created), `before_run(run_context)`
before each step (it may return SessionRunArgs: more fetches, feeds and options for that
step), `after_run(run_context, run_values)` with the results of those extra fetches, and
`end(session)` when the session is closed normally. A hook stops training with
`run_context.request_stop()`.
"""

from __future__ import annotations

import collections

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues"]


class SessionRunHook:
    """Hook to extend calls to MonitoredSession.run() (`tf.train.SessionRunHook`)."""

    def begin(self) -> None:
        """Called once before the session is created; the graph may still be changed."""

    def after_create_session(self, session, coord) -> None:
        """Called when a new session was created and initialized (or restored)."""

    def before_run(self, run_context):
        """Called before each run(); may return SessionRunArgs (or None)."""
        return None

    def after_run(self, run_context, run_values) -> None:
        """Called after each run() with the results of what before_run asked for."""

    def end(self, session) -> None:
        """Called at the end of the session (not when it ends with an exception)."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: fetches, feeds and RunOptions."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """The run a hook is called around: its arguments, the session, and a stop switch."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Makes `should_stop()` true after this run."""
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """The results of a hook's fetches, with the RunOptions and RunMetadata of the run."""
