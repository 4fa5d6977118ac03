"""`tf.train.SessionManager`: sessions whose model is initialized, restored, or made ready by
another task.

Three ways to a usable session, each on a fresh `Session(master, graph, config)`:

- `prepare_session` (the chief): restore `checkpoint_filename_with_path`, or the latest
  checkpoint of `checkpoint_dir` (optionally waiting for one to appear); when nothing was
  restored run `init_op` and `init_fn`. Then the local init (below) and `ready_op` must both
  pass, else RuntimeError.
- `recover_session`: the same restore, but nothing is initialized; returns whether the
  restored model is ready.
- `wait_for_session` (the other tasks of a cluster): poll every `recovery_wait_secs` until the
  local init has run and `ready_op` reports nothing, each try on a new session; the chief
  initializes the shared variables meanwhile.

The local init runs `local_init_op` (per-task state: local variables) once
`ready_for_local_init_op` reports nothing (typically: the global variables it reads are
initialized). A readiness op is ready when it returns an empty (or int32, or no) value;
otherwise its values are the names of what is missing. `ready_op=None` skips the check, as
in TensorFlow; Scaffold and Supervisor supply `report_uninitialized_variables()` as the
default.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from tensorflux.framework import errors
from tensorflux.framework import graph as graph_lib
from tensorflux.runtime.session import Session
from tensorflux.train import checkpoint_management

__all__ = ["SessionManager"]

_log = logging.getLogger("tensorflux")


def _op_name(op) -> str | None:
    return getattr(op, "name", None) if op is not None else None


def check_ready(op, sess, what: str) -> tuple[bool, str | None]:
    """(True, None) when `op` reports nothing missing, else (False, why).

    Raises:
      FailedPreconditionError: `op` failed for another reason than an uninitialized value.
    """
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            _log.warning("%s : error [%s]", what, e)
            raise
        return False, str(e)
    if value is None or np.asarray(value).dtype == np.int32 or np.size(value) == 0:
        return True, None
    names = ", ".join(n.decode("utf-8") if isinstance(n, bytes) else str(n)
                      for n in np.asarray(value).reshape(-1))
    return False, "Variables not initialized: " + names


def _close_quietly(sess) -> None:
    try:
        sess.close()
    except Exception:  # noqa: BLE001 - the session is being given up anyway
        pass


class SessionManager:
    """Creates sessions that are initialized, restored from a checkpoint, or made ready by
    another task (`tf.train.SessionManager`).

    Args:
      local_init_op: run on every new session (after initialization or restore) once
        `ready_for_local_init_op` passes; per-task state such as local variables.
      ready_op: reports what is not ready (a 1-D string tensor, empty when ready), or None
        for no check.
      ready_for_local_init_op: reports what `local_init_op` still waits for, or None.
      graph: the graph the sessions run (default: the default graph).
      recovery_wait_secs: seconds between readiness polls (and checkpoint polls).
      local_init_run_options: RunOptions for running `local_init_op`.
      local_init_feed_dict: feeds for running `local_init_op`.

    Raises:
      ValueError: `ready_for_local_init_op` without a `local_init_op`.
    """

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph=None, recovery_wait_secs=30, local_init_run_options=None,
                 local_init_feed_dict=None):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a "
                             f"local_init_op , ready_for_local_init_op "
                             f"[{ready_for_local_init_op}]")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else graph_lib.get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict
        self._target = None

    # ---- restoring ----------------------------------------------------------------------
    def _latest_checkpoint(self, checkpoint_dir, wait_for_checkpoint, max_wait_secs):
        """The CheckpointState of the newest existing checkpoint, waited for if asked."""
        waited = 0.0
        while True:
            ckpt = checkpoint_management.get_checkpoint_state(checkpoint_dir)
            if ckpt is not None and ckpt.model_checkpoint_path and \
                    checkpoint_management.checkpoint_exists(ckpt.model_checkpoint_path):
                return ckpt
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return None
            _log.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs

    def _restore_checkpoint(self, master, saver=None, checkpoint_dir=None,
                            checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                            max_wait_secs=7200, config=None):
        """A new session and whether a checkpoint was restored into it.

        Raises:
          ValueError: both `checkpoint_dir` and `checkpoint_filename_with_path`.
        """
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        self._target = master
        sess = Session(master, graph=self._graph, config=config)
        try:
            if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
                return sess, False
            if checkpoint_filename_with_path:
                saver.restore(sess, checkpoint_filename_with_path)
                return sess, True
            ckpt = self._latest_checkpoint(checkpoint_dir, wait_for_checkpoint, max_wait_secs)
            if ckpt is None:
                return sess, False
            saver.restore(sess, ckpt.model_checkpoint_path)
            saver.recover_last_checkpoints(list(ckpt.all_model_checkpoint_paths))
            return sess, True
        except BaseException:
            _close_quietly(sess)
            raise

    # ---- the three ways to a session ----------------------------------------------------
    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, init_feed_dict=None, init_fn=None):
        """A session whose model is restored or initialized, local init run, and ready.

        Args:
          master: the session target ("" for in-process, or a server's `target`).
          init_op: run when nothing was restored.
          saver: restores `checkpoint_dir`'s latest checkpoint or
            `checkpoint_filename_with_path`.
          checkpoint_dir, checkpoint_filename_with_path: where to restore from (not both).
          wait_for_checkpoint: poll `checkpoint_dir` for a checkpoint (every
            `recovery_wait_secs`, up to `max_wait_secs`).
          max_wait_secs: how long to wait for a checkpoint.
          config: the session's ConfigProto.
          init_feed_dict: feeds for `init_op`.
          init_fn: called with the session after `init_op` when nothing was restored.

        Returns:
          A Session.

        Raises:
          RuntimeError: the model could not be initialized or is not ready afterwards.
          ValueError: both `checkpoint_dir` and `checkpoint_filename_with_path`.
        """
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
            config=config)
        try:
            if not restored:
                if init_op is None and not init_fn and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn "
                                       "or local_init_op was given")
                if init_op is not None:
                    sess.run(init_op, feed_dict=init_feed_dict)
                if init_fn:
                    init_fn(sess)
            ok, msg = self._try_run_local_init_op(sess)
            if not ok:
                raise RuntimeError("Init operations did not make model ready for local_init."
                                   f"  Init op: {_op_name(init_op)}, init fn: {init_fn}, "
                                   f"error: {msg}")
            ok, msg = self._model_ready(sess)
            if not ok:
                raise RuntimeError(f"Init operations did not make model ready.  Init op: "
                                   f"{_op_name(init_op)}, init fn: {init_fn}, local_init_op: "
                                   f"{_op_name(self._local_init_op)}, error: {msg}")
        except BaseException:
            _close_quietly(sess)
            raise
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None):
        """A new session, restored from a checkpoint when there is one; nothing is
        initialized.

        Args: as for `prepare_session`.

        Returns:
          (sess, is_restored): is_restored is True when a checkpoint was restored and the
          model is ready afterwards (local init included).

        Raises:
          ValueError: both `checkpoint_dir` and `checkpoint_filename_with_path`.
        """
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
            config=config)
        ok, msg = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        source = checkpoint_dir or checkpoint_filename_with_path
        if not ok:
            _log.info("Restoring model from %s did not make model ready for local init: %s",
                      source, msg)
            return sess, False
        ok, msg = self._model_ready(sess)
        if not ok:
            _log.info("Restoring model from %s did not make model ready: %s", source, msg)
            return sess, False
        _log.info("Restored model from %s", source)
        return sess, True

    def wait_for_session(self, master, config=None, max_wait_secs=float("inf")):
        """A new session once the model is ready; another task initializes or restores it.

        Each try creates a session, runs the local init if `ready_for_local_init_op` passes,
        and checks `ready_op`; a try that fails closes its session and sleeps
        `recovery_wait_secs`.

        Args:
          master: the session target.
          config: the session's ConfigProto.
          max_wait_secs: how long to wait in all (None: forever).

        Returns:
          A Session.

        Raises:
          DeadlineExceededError: the model was not ready within `max_wait_secs`.
        """
        self._target = master
        if max_wait_secs is None:
            max_wait_secs = float("inf")
        deadline = time.monotonic() + max_wait_secs
        while True:
            sess = Session(master, graph=self._graph, config=config)
            local_msg = ready_msg = None
            try:
                ok, local_msg = self._try_run_local_init_op(sess)
                if ok:
                    ok, ready_msg = self._model_ready(sess)
                    if ok:
                        return sess
            except BaseException:
                _close_quietly(sess)
                raise
            _close_quietly(sess)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {max_wait_secs} secs.")
            _log.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, "
                      "ready: %s", local_msg, ready_msg)
            time.sleep(min(self._recovery_wait_secs, remaining))

    # ---- readiness ----------------------------------------------------------------------
    def _model_ready(self, sess) -> tuple[bool, str | None]:
        return check_ready(self._ready_op, sess, "Model not ready")

    def _model_ready_for_local_init(self, sess) -> tuple[bool, str | None]:
        return check_ready(self._ready_for_local_init_op, sess, "Model not ready for local init")

    def _try_run_local_init_op(self, sess) -> tuple[bool, str | None]:
        """Runs `local_init_op` when ready for it; (ran or nothing to run, why not)."""
        if self._local_init_op is None:
            return True, None
        ok, msg = self._model_ready_for_local_init(sess)
        if not ok:
            return False, msg
        _log.info("Running local_init_op.")
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                 options=self._local_init_run_options)
        _log.info("Done running local_init_op.")
        return True, None
