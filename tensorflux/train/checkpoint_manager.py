"""`tf.train.CheckpointManager`: numbered saves of a `tf.train.Checkpoint` in one directory,
keeping the newest `max_to_keep` (and one every `keep_checkpoint_every_n_hours`).

The state lives in the directory's `checkpoint` file (TensorFlow's CheckpointState with
the kept paths, their timestamps and the last preserved timestamp), so a manager made
later in the same directory goes on where the last one stopped. After each save the state
file is written, old checkpoints are deleted, and the state is written again without them
(a crash between the two leaves names of deleted checkpoints, never a missing newest one).
"""

from __future__ import annotations

import collections
import logging
import os
import time

import numpy as np

from tensorflux.checkpoint import delete_checkpoint
from tensorflux.runtime import session as session_lib
from tensorflux.train import checkpoint_management

__all__ = ["CheckpointManager"]

_log = logging.getLogger("tensorflux")


def _now() -> float:
    """The clock retention decisions use (tests replace it)."""
    return time.time()


def _value(session, x) -> int:
    """`x` as a Python int: an int as is, a variable or tensor read in `session`."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    if session is None:
        raise ValueError(f"Reading {x} needs a default session.")
    return int(session.run(x))


class CheckpointManager:
    """Saves and rotates the checkpoints of `checkpoint` in `directory`.

    Args:
      checkpoint: the tf.train.Checkpoint to save.
      directory: where the checkpoints and the `checkpoint` state file go.
      max_to_keep: how many recent checkpoints to keep; None keeps all.
      keep_checkpoint_every_n_hours: a checkpoint leaving the kept set is preserved for
        good if this many hours passed since the last preserved one.
      checkpoint_name: the checkpoints' base name ("<directory>/<name>-<number>").
      step_counter, checkpoint_interval: save only when `step_counter` advanced by
        `checkpoint_interval` since the last save (TF2's arguments).
      init_fn: what `restore_or_initialize` calls when there is no checkpoint.
      last_checkpoint_step: the step of the last save, for `checkpoint_interval`.

    Raises:
      ValueError: `max_to_keep` is not positive; `checkpoint_interval` without
        `step_counter`.
    """

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None, last_checkpoint_step=None):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError("Expected a positive integer or `None` for `max_to_keep`, got "
                             f"{max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not "
                             "None.")
        self._checkpoint = checkpoint
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._directory = os.fspath(directory)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter, self._checkpoint_interval = step_counter, checkpoint_interval
        self._last_checkpoint_step = last_checkpoint_step
        self._init_fn = init_fn
        self._save_counter_assign = None
        self._maybe_delete: collections.OrderedDict = collections.OrderedDict()
        self._recover_state()

    def _recover_state(self) -> None:
        state = checkpoint_management.get_checkpoint_state(self._directory)
        clock = _now()
        if state is None:
            self._latest_checkpoint = None
            self._last_preserved_timestamp = clock - 1.0
            return
        self._latest_checkpoint = state.model_checkpoint_path
        self._last_preserved_timestamp = state.last_preserved_timestamp
        if clock < self._last_preserved_timestamp:
            _log.warning("time.time() returned a value %f seconds behind the last preserved "
                         "checkpoint timestamp.", self._last_preserved_timestamp - clock)
            self._last_preserved_timestamp = clock
        paths = list(state.all_model_checkpoint_paths)
        stamps = list(state.all_model_checkpoint_timestamps) or \
            [self._last_preserved_timestamp] * len(paths)
        for path, stamp in zip(paths, stamps, strict=False):
            stamp = min(stamp, clock)
            if stamp > self._last_preserved_timestamp:
                self._maybe_delete[path] = stamp

    # ---- properties ---------------------------------------------------------------------
    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self) -> str | None:
        """The newest checkpoint's prefix (None before the first)."""
        return self._latest_checkpoint

    @property
    def checkpoints(self) -> list[str]:
        """The kept checkpoints, oldest first."""
        return list(self._maybe_delete)

    # ---- saving -------------------------------------------------------------------------
    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Saves a checkpoint numbered `checkpoint_number` (default: the Checkpoint's
        `save_counter`, which goes up by one either way) and deletes the oldest past
        `max_to_keep`.

        Returns:
          The new checkpoint's prefix, or None when `checkpoint_interval` skipped it.
        """
        session = session_lib.get_default_session()
        if self._checkpoint_interval is not None:
            step = _value(session, self._step_counter)
            last = self._last_checkpoint_step
            if last is not None and (step == last or (
                    check_interval and step < last + self._checkpoint_interval)):
                return None
            self._last_checkpoint_step = step
        counter = self._count_save(session)
        number = counter if checkpoint_number is None else checkpoint_number
        path = self._checkpoint.write(f"{self._prefix}-{_value(session, number)}",
                                      session=session, options=options)
        self._maybe_delete.pop(path, None)
        self._maybe_delete[path] = _now()
        self._latest_checkpoint = path
        self._record_state()
        self._sweep()
        self._record_state()
        return path

    def _count_save(self, session):
        """Adds one to the Checkpoint's save_counter (creating and initializing it if
        needed); returns the counter."""
        if session is None:
            raise ValueError("CheckpointManager.save needs a default session "
                             "(`with sess.as_default():`).")
        with session.graph.as_default():
            created = self._checkpoint._save_counter is None
            counter = self._checkpoint.save_counter
            if created:
                session.run(counter.initializer)
            if self._save_counter_assign is None:
                self._save_counter_assign = counter.assign_add(np.int64(1), read_value=False)
        session.run(self._save_counter_assign)
        return counter

    def _sweep(self) -> None:
        """Deletes checkpoints past `max_to_keep`, oldest first, but for those kept by
        `keep_checkpoint_every_n_hours` (dropped from the list, left on disk)."""
        if not self._max_to_keep:
            return
        while len(self._maybe_delete) > self._max_to_keep:
            path, stamp = self._maybe_delete.popitem(last=False)
            hours = self._keep_checkpoint_every_n_hours
            if hours and stamp - hours * 3600.0 >= self._last_preserved_timestamp:
                self._last_preserved_timestamp = stamp
                continue
            delete_checkpoint(path, meta_graph_suffix=None)

    def _record_state(self) -> None:
        paths = list(self._maybe_delete)
        checkpoint_management.update_checkpoint_state(
            self._directory, self._latest_checkpoint, paths,
            all_model_checkpoint_timestamps=list(self._maybe_delete.values()),
            last_preserved_timestamp=self._last_preserved_timestamp,
            save_relative_paths=True)

    # ---- restoring ----------------------------------------------------------------------
    def restore_or_initialize(self):
        """Restores the latest checkpoint if there is one (returns its path; the status
        is dropped, as TensorFlow does), else calls `init_fn` (returns None)."""
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint)
            if self._checkpoint_interval is not None:
                self._last_checkpoint_step = _value(session_lib.get_default_session(),
                                                    self._step_counter)
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def sync(self) -> None:
        """Waits for asynchronous saves (there are none: saves are synchronous)."""
