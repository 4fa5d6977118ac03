"""Monitored training: sessions that initialize or restore themselves, run hooks, and
survive the loss of a session.

The layers are TensorFlow's, from the outside in:

    MonitoredSession / SingularMonitoredSession
      _RecoverableSession   re-creates the session on AbortedError/UnavailableError
        _CoordinatedSession stops on the coordinator's request, joins its threads
          _HookedSession    calls before_run/after_run of every hook around each run
            Session         made by a SessionCreator: Chief (initializes, or restores the
                            latest checkpoint of checkpoint_dir) or Worker (waits until
                            the model is ready)

A session is prepared by a SessionManager (session_manager.py): restore from
`checkpoint_filename_with_path` or the latest checkpoint in `checkpoint_dir` (then the
Saver re-learns which checkpoints it keeps, so retention survives a restart), else run
`init_op` and `init_fn`; then `local_init_op`; then `ready_op` must report no
uninitialized variables. Every re-creation after a preemption error goes through the same
steps, so training resumes from the last checkpoint.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys

from tensorflux.control_flow import builders
from tensorflux.framework import errors
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.lookup import lookup_ops
from tensorflux.ops import joining_ops
from tensorflux.protos import config_pb2
from tensorflux.summary import summary
from tensorflux.train import basic_session_run_hooks as hooks_lib
from tensorflux.train import summary_hooks
from tensorflux.train.coordinator import Coordinator
from tensorflux.train.queue_runner import start_queue_runners
from tensorflux.train.saver import Saver
from tensorflux.train.session_manager import SessionManager
from tensorflux.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunValues,
)
from tensorflux.variables import resources, variables

__all__ = ["Scaffold", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
           "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession"]

_log = logging.getLogger("tensorflux")
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
USE_DEFAULT = object()


# ---- Scaffold ----------------------------------------------------------------------------


class Scaffold:
    """The ops a monitored session needs: init, readiness checks, local init, saver.

    Whatever is not given is taken from its graph collection (INIT_OP, READY_OP, ...) or
    built with TensorFlow's default when `finalize()` runs, which also finalizes the graph.
    """

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold
            init_op = init_op or c.init_op
            init_feed_dict = init_feed_dict or c._init_feed_dict
            init_fn = init_fn or c._user_init_fn
            ready_op = ready_op or c.ready_op
            ready_for_local_init_op = ready_for_local_init_op or c.ready_for_local_init_op
            local_init_op = local_init_op or c.local_init_op
            local_init_feed_dict = local_init_feed_dict or c._local_init_feed_dict
            summary_op = summary_op or c.summary_op
            saver = saver or c.saver
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> Scaffold:
        """Fills in the defaults and finalizes the graph; returns self."""
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default(
                "init_op", GraphKeys.INIT_OP, Scaffold.default_init_op)
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default(
                "ready_op", GraphKeys.READY_OP, lambda: joining_ops.concat(
                    [variables.report_uninitialized_variables(),
                     resources.report_uninitialized_resources()], 0))
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: joining_ops.concat(
                    [variables.report_uninitialized_variables(variables.global_variables()),
                     resources.report_uninitialized_resources(
                         resources.shared_resources())], 0))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", GraphKeys.SUMMARY_OP,
                                                       summary.merge_all)
        if self._saver is None:
            self._saver = _get_saver_or_default()
        self._saver.build()
        graph_lib.get_default_graph().finalize()
        _log.info("Graph was finalized.")
        return self

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The single item of `collection_key`, or `default_constructor()` (added to it)."""
        elements = graph_lib.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(f"More than one item in the collection \"{collection_key}\"."
                                   " Please indicate which one to use by passing it to the "
                                   f"tf.Scaffold constructor as:  tf.Scaffold({arg_name}=item "
                                   "to use)")
            return elements[0]
        op = default_constructor()
        if op is not None:
            graph_lib.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_init_op():
        """The initializer of the global variables and the shared resources, as in TF1."""
        return builders.group(variables.global_variables_initializer(),
                              resources.initialize_resources(resources.shared_resources()))

    @staticmethod
    def default_local_init_op():
        """The initializer of the local variables, the lookup tables and the local
        resources, as in TF1."""
        return builders.group(variables.local_variables_initializer(),
                              lookup_ops.tables_initializer(),
                              resources.initialize_resources(resources.local_resources()))

    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)


def _get_saver_or_default():
    savers = graph_lib.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in collection {GraphKeys.SAVERS}. Please "
                               "indicate which one to use by passing it to the constructor.")
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True)
    graph_lib.add_to_collection(GraphKeys.SAVERS, saver)
    return saver


# ---- session creators --------------------------------------------------------------------


def _session_manager(scaffold: Scaffold, recovery_wait_secs=30) -> SessionManager:
    return SessionManager(local_init_op=scaffold.local_init_op,
                          ready_op=scaffold.ready_op,
                          ready_for_local_init_op=scaffold.ready_for_local_init_op,
                          graph=graph_lib.get_default_graph(),
                          recovery_wait_secs=recovery_wait_secs,
                          local_init_feed_dict=scaffold.local_init_feed_dict)


class SessionCreator:
    """Makes the session a MonitoredSession runs (`create_session()`)."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for "
                                  f"{type(self).__name__}.")


class ChiefSessionCreator(SessionCreator):
    """Creates a session that initializes, or restores from a checkpoint, the model."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._manager = None

    def create_session(self):
        self._scaffold.finalize()
        if self._manager is None:
            self._manager = _session_manager(self._scaffold)
        s = self._scaffold
        return self._manager.prepare_session(
            self._master, init_op=s.init_op, saver=s.saver,
            checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config, init_feed_dict=s.init_feed_dict, init_fn=s.init_fn)


class WorkerSessionCreator(SessionCreator):
    """Creates a session that waits until the model is ready (initialized by the chief)."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs
        self._manager = None

    def create_session(self):
        self._scaffold.finalize()
        if self._manager is None:
            # Polls every second (TensorFlow: every 30): in-process clusters are quick.
            self._manager = _session_manager(self._scaffold, recovery_wait_secs=1)
        return self._manager.wait_for_session(self._master, config=self._config,
                                              max_wait_secs=self._max_wait_secs)


# ---- the wrapped sessions ----------------------------------------------------------------


def _new_coordinator():
    return Coordinator(clean_stop_exception_types=[])


def _start_queue_runners(sess, coord) -> None:
    if not graph_lib.get_collection(GraphKeys.QUEUE_RUNNERS):
        return
    start_queue_runners(sess=sess, coord=coord)


class _WrappedSession:
    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, _WrappedSession)

    @property
    def graph(self):
        return self._sess.graph

    @property
    def sess_str(self):
        return self._sess.sess_str

    def should_stop(self) -> bool:
        if self._check_stop():
            return True
        return self._sess.should_stop() if self._sess and self._wrapped_is_stoppable else \
            False

    def _check_stop(self) -> bool:
        return False

    def close(self) -> None:
        if self._sess:
            try:
                self._sess.close()
            except _PREEMPTION_ERRORS as e:
                _log.error("An error occurred when attempting to close the session. This "
                           "may be due to a preemption in a connected worker or parameter "
                           "server. Error: %s", e)
            finally:
                self._sess = None

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)


class _HookedSession(_WrappedSession):
    """Calls the hooks around every run and merges their fetches, feeds and options."""

    def __init__(self, sess, hooks):
        super().__init__(sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self) -> bool:
        return self._should_stop

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        actual_fetches = {"caller": fetches}
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._sess)
        options = options or config_pb2.RunOptions()
        feed_dict = self._call_before_run(context, actual_fetches, feed_dict, options)
        run_metadata = run_metadata if run_metadata is not None else config_pb2.RunMetadata()
        outputs = self._sess.run(actual_fetches, feed_dict=feed_dict, options=options,
                                 run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(context, SessionRunValues(results=outputs.get(hook),
                                                     options=options,
                                                     run_metadata=run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return outputs["caller"]

    def _call_before_run(self, context, fetch_dict, user_feed_dict, options):
        hook_feeds = {}
        for hook in self._hooks:
            request = hook.before_run(context)
            if request is None:
                continue
            if request.fetches is not None:
                fetch_dict[hook] = request.fetches
            if request.feed_dict:
                clash = set(hook_feeds) & set(request.feed_dict)
                if clash:
                    raise RuntimeError(f"Same tensor is fed by two hooks: {clash}")
                hook_feeds.update(request.feed_dict)
            if request.options:
                options.MergeFrom(request.options)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        clash = set(hook_feeds) & set(user_feed_dict)
        if clash:
            raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user. "
                               f"Conflict(s): {sorted(map(str, clash))}")
        return {**user_feed_dict, **hook_feeds}


class _CoordinatedSession(_WrappedSession):
    """Stops when the coordinator says so; on close, stops and joins its threads."""

    def __init__(self, sess, coord, stop_grace_period_secs=120):
        super().__init__(sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self) -> bool:
        self._coord.raise_requested_exception()
        return self._coord.should_stop()

    def close(self) -> None:
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                             ignore_live_threads=True)
        finally:
            try:
                super().close()
            except Exception:  # noqa: BLE001 - the first error is the one that matters
                pass

    def run(self, *args, **kwargs):
        try:
            return self._sess.run(*args, **kwargs)
        except _PREEMPTION_ERRORS:
            raise
        except Exception:
            original = sys.exc_info()
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001 - the caller's error is the root cause
                pass
            raise original[1].with_traceback(original[2]) from None


class _RecoverableSession(_WrappedSession):
    """Re-creates the session (which restores the latest checkpoint) whenever a run or a
    creation fails with AbortedError or UnavailableError."""

    def __init__(self, sess_creator):
        self._sess_creator = sess_creator
        super().__init__(self._create_session())
        self._wrapped_is_stoppable = True
        self.recoveries = 0  # how many times the session was re-created

    def _create_session(self):
        while True:
            try:
                return self._sess_creator.create_session()
            except _PREEMPTION_ERRORS as e:
                _log.info("An error was raised while a session was being created. This may "
                          "be due to a preemption of a connected worker or parameter server. "
                          "A new session will be created. Error: %s", e)

    def _check_stop(self) -> bool:
        try:
            return self._sess.should_stop() if self._sess else False
        except _PREEMPTION_ERRORS as e:
            _log.info("An error was raised while considering whether the session is "
                      "complete. A new session will be created. Error: %s", e)
            self._recover()
            return False

    def should_stop(self) -> bool:
        return self._check_stop()

    def _recover(self) -> None:
        self.close()
        self.recoveries += 1

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
            except _PREEMPTION_ERRORS as e:
                _log.info("An error was raised. This may be due to a preemption in a "
                          "connected worker or parameter server. The current session will "
                          "be closed and a new session will be created. Error: %s", e)
                self._recover()


class _CoordinatedSessionCreator(SessionCreator):
    def __init__(self, session_creator, hooks, stop_grace_period_secs):
        self._session_creator = session_creator
        self._hooks = hooks
        self._stop_grace_period_secs = stop_grace_period_secs
        self.coord = None
        self.tf_sess = None

    def create_session(self):
        self.tf_sess = self._session_creator.create_session()
        self.coord = _new_coordinator()
        _start_queue_runners(self.tf_sess, self.coord)
        for hook in self._hooks:
            hook.after_create_session(self.tf_sess, self.coord)
        return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks), self.coord,
                                   self._stop_grace_period_secs)


class _StepContext:
    """What `run_step_fn`'s `step_fn(step_context)` gets."""

    def __init__(self, session, run_with_hooks_fn):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self):
        return self._session

    def run_with_hooks(self, *args, **kwargs):
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self):
        raise _StopRequested()


class _StopRequested(Exception):
    pass


class _MonitoredSession:
    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        self._graph_was_finalized = graph_lib.get_default_graph().finalized
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._coordinated_creator = _CoordinatedSessionCreator(
            session_creator or ChiefSessionCreator(), self._hooks, stop_grace_period_secs)
        if should_recover:
            self._sess = _RecoverableSession(self._coordinated_creator)
        else:
            self._sess = self._coordinated_creator.create_session()
        self._stop_requested_in_step_fn = False

    @property
    def graph(self):
        return self._tf_sess().graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs `fetches` with the hooks; see `tf.Session.run`."""
        return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                              run_metadata=run_metadata)

    def run_step_fn(self, step_fn):
        """Runs `step_fn(step_context)`; `step_context.request_stop()` ends training.

        Raises:
          ValueError: `step_fn` does not take exactly `step_context`.
        """
        params = [p for p in inspect.signature(step_fn).parameters]
        if params not in (["step_context"], ["self", "step_context"]):
            raise ValueError("`step_fn` may either have one `step_context` argument, or "
                             "`self` and `step_context` arguments if it's an instance method."
                             f" Got {tuple(params)} instead.")
        try:
            return step_fn(_StepContext(self._tf_sess(), self.run))
        except _StopRequested:
            self._stop_requested_in_step_fn = True
            return None

    def should_stop(self) -> bool:
        return self._sess is None or self._stop_requested_in_step_fn or \
            self._sess.should_stop()

    def close(self) -> None:
        self._close_internal()

    def _tf_sess(self):
        return self._coordinated_creator.tf_sess

    def _close_internal(self, exception_type=None) -> None:
        try:
            if not exception_type and self._sess is not None:
                for hook in self._hooks:
                    hook.end(self._tf_sess())
        finally:
            try:
                if self._sess is not None:
                    self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    graph_lib.get_default_graph()._unsafe_unfinalize()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSession):
    """A session that initializes or restores itself, runs hooks, and recovers from
    AbortedError/UnavailableError by re-creating itself (`tf.train.MonitoredSession`).

    Args:
      session_creator: a SessionCreator (default: ChiefSessionCreator()).
      hooks: SessionRunHooks.
      stop_grace_period_secs: how long `close()` waits for the coordinator's threads.
    """

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, should_recover=True,
                         stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession without recovery, for single-process training
    (`tf.train.SingularMonitoredSession`)."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None,
                 checkpoint_dir=None, stop_grace_period_secs=120,
                 checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, should_recover=False,
                         stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        """The underlying tf.Session."""
        return self._tf_sess()


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None,  # noqa: N802
                             scaffold=None, hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None, save_graph_def=True):
    """A MonitoredSession for training (`tf.train.MonitoredTrainingSession`).

    The chief restores the latest checkpoint of `checkpoint_dir` (or initializes). With a
    `summary_dir` (default: `checkpoint_dir`) it logs and writes the step rate every
    `log_step_count_steps` and writes the scaffold's summary op (default: every summary
    merged) every `save_summaries_steps` (default 100) or `save_summaries_secs`; with a
    `checkpoint_dir` it saves checkpoints every `save_checkpoint_secs` (default 600) or
    `save_checkpoint_steps`. Other tasks wait until the model is ready and add none of
    these hooks.
    """
    save_summaries_steps, save_summaries_secs = _steps_or_secs(
        save_summaries_steps, save_summaries_secs, 100)
    save_checkpoint_steps, save_checkpoint_secs = _steps_or_secs(
        save_checkpoint_steps, save_checkpoint_secs, None, 600)
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=creator, hooks=list(hooks or []),
                                stop_grace_period_secs=stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                  master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(hooks_lib.StepCounterHook(every_n_steps=log_step_count_steps,
                                                       output_dir=summary_dir))
        if (save_summaries_steps and save_summaries_steps > 0) or \
                (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(summary_hooks.SummarySaverHook(
                scaffold=scaffold, save_steps=save_summaries_steps,
                save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir:
        if (save_checkpoint_secs and save_checkpoint_secs > 0) or \
                (save_checkpoint_steps and save_checkpoint_steps > 0):
            all_hooks.append(hooks_lib.CheckpointSaverHook(
                checkpoint_dir, save_steps=save_checkpoint_steps,
                save_secs=save_checkpoint_secs, scaffold=scaffold,
                save_graph_def=save_graph_def))
        os.makedirs(checkpoint_dir, exist_ok=True)
    all_hooks.extend(hooks or [])
    return MonitoredSession(session_creator=creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)


def _steps_or_secs(steps, secs, default_steps, default_secs=None):
    """TensorFlow's defaults of a (steps, secs) pair: both unset -> the defaults; one set
    -> the other off."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)
