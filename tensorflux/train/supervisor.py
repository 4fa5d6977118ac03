"""`tf.train.Supervisor`: TF1's older training helper, a Coordinator, a Saver and a
SessionManager together.

    sv = tf.train.Supervisor(logdir=ckpt_dir, is_chief=is_chief)
    with sv.managed_session(server.target) as sess:
        while not sv.should_stop():
            sess.run(train_op)

The chief (`is_chief=True`) restores the latest checkpoint of `logdir` or initializes the
model (`init_op`, `init_fn`), writes `graph.pbtxt` to `logdir` and starts its standard
services: a thread that saves a checkpoint every `save_model_secs`, and, every
`save_summaries_secs`, one that writes the summary op's value and one that writes the step
rate (`global_step/sec`) to the event file of `logdir` (a FileWriter the chief makes unless
given `summary_writer`; the graph, and START, CHECKPOINT and STOP session logs go there as
TensorFlow writes them). The other tasks wait until the chief has made the model ready.
Every task then runs `local_init_op` and starts the QUEUE_RUNNERS.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time

from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.lookup import lookup_ops
from tensorflux.protos.event_pb2 import SessionLog
from tensorflux.protos.summary_pb2 import Summary
from tensorflux.summary import summary
from tensorflux.summary.writer import FileWriter
from tensorflux.train import training_util
from tensorflux.train.coordinator import Coordinator, LooperThread
from tensorflux.train.global_step import global_step as _read_global_step
from tensorflux.train.saver import Saver
from tensorflux.train.session_manager import SessionManager
from tensorflux.variables import variables

__all__ = ["Supervisor"]

_log = logging.getLogger("tensorflux")


def _first_in_collection(key):
    found = graph_lib.get_collection(key)
    if len(found) > 1:
        _log.info("Found %d %s operations. Returning the first one.", len(found), key)
    return found[0] if found else None


class Supervisor:
    """Initializes or restores the model, checkpoints it, and coordinates the threads of
    a training program (`tf.train.Supervisor`; TensorFlow recommends
    MonitoredTrainingSession instead).

    Args:
      graph: the graph (default: the default graph); finalized by the constructor.
      ready_op: reports what is not initialized (default:
        `report_uninitialized_variables()`); None: no check.
      ready_for_local_init_op: reports what `local_init_op` waits for (default: the
        READY_FOR_LOCAL_INIT_OP collection, else None).
      is_chief: whether this task initializes, restores and checkpoints the model.
      init_op: initializes the model when nothing is restored (default:
        `global_variables_initializer()`); None: only `init_fn`.
      init_feed_dict: feeds for `init_op`.
      local_init_op: run by every task on its new session (default: the LOCAL_INIT_OP
        collection, else the local variables' initializer).
      logdir: where the chief restores and saves checkpoints (and writes graph.pbtxt).
      summary_op: the summary the chief's summary service writes (default: the
        SUMMARY_OP collection's first op, else `tf.summary.merge_all()`); None: no
        summary service.
      summary_writer: where the chief writes events (default: a FileWriter on `logdir`,
        when there is one); None: no events.
      save_summaries_secs: seconds between summaries and step-rate records (0: none).
      saver: the Saver (default: a new Saver when there are global variables); None: no
        checkpoints.
      global_step: the step checkpoints are numbered by (default: the GLOBAL_STEP
        collection, else the `global_step:0` tensor of an integer type).
      save_model_secs: seconds between checkpoints (0: none).
      recovery_wait_secs: seconds between readiness polls of a non-chief task.
      stop_grace_secs: how long `stop()` waits for the threads.
      checkpoint_basename: the checkpoints' file name prefix in `logdir`.
      session_manager: a SessionManager (default: one built from the ops above).
      init_fn: called with the session after `init_op` when nothing is restored.
      local_init_run_options: RunOptions for `local_init_op`.

    Raises:
      ValueError: a non-chief task's graph has a ref Variable without a device.
    """

    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief=True, init_op=USE_DEFAULT, init_feed_dict=None,
                 local_init_op=USE_DEFAULT, logdir=None, summary_op=USE_DEFAULT,
                 saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120,
                 checkpoint_basename="model.ckpt", session_manager=None,
                 summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        graph = graph if graph is not None else graph_lib.get_default_graph()
        with graph.as_default():
            self._init_ready_ops(ready_op, ready_for_local_init_op)
            self._init_init_ops(init_op, init_feed_dict, local_init_op)
            self._init_saver_and_step(saver, global_step, summary_op)
        self._graph = graph
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        self._logdir = self._save_path = self._summary_writer = None
        self._save_summaries_secs = self._save_model_secs = None
        if is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                self._summary_writer = FileWriter(logdir) if logdir else None
            else:
                self._summary_writer = summary_writer
        self._graph_added_to_summary = False
        if session_manager is None:
            session_manager = SessionManager(
                local_init_op=self._local_init_op, ready_op=self._ready_op,
                ready_for_local_init_op=self._ready_for_local_init_op, graph=graph,
                recovery_wait_secs=recovery_wait_secs,
                local_init_run_options=local_init_run_options)
        self._session_manager = session_manager
        self._verify_setup()
        graph.finalize()

    # ---- defaults -----------------------------------------------------------------------
    def _init_ready_ops(self, ready_op, ready_for_local_init_op) -> None:
        if ready_op is Supervisor.USE_DEFAULT:
            ready_op = _first_in_collection(GraphKeys.READY_OP)
            if ready_op is None:
                ready_op = variables.report_uninitialized_variables()
                graph_lib.add_to_collection(GraphKeys.READY_OP, ready_op)
        self._ready_op = ready_op
        if ready_for_local_init_op is Supervisor.USE_DEFAULT:
            ready_for_local_init_op = _first_in_collection(GraphKeys.READY_FOR_LOCAL_INIT_OP)
        self._ready_for_local_init_op = ready_for_local_init_op

    def _init_init_ops(self, init_op, init_feed_dict, local_init_op) -> None:
        if init_op is Supervisor.USE_DEFAULT:
            init_op = _first_in_collection(GraphKeys.INIT_OP)
            if init_op is None:
                init_op = variables.global_variables_initializer()
                graph_lib.add_to_collection(GraphKeys.INIT_OP, init_op)
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        if local_init_op is Supervisor.USE_DEFAULT:
            local_init_op = _first_in_collection(GraphKeys.LOCAL_INIT_OP)
            if local_init_op is None:
                local_init_op = builders.group(variables.local_variables_initializer(),
                                               lookup_ops.tables_initializer())
                graph_lib.add_to_collection(GraphKeys.LOCAL_INIT_OP, local_init_op)
        self._local_init_op = local_init_op

    def _init_saver_and_step(self, saver, global_step, summary_op) -> None:
        if saver is Supervisor.USE_DEFAULT:
            saver = _first_in_collection(GraphKeys.SAVERS)
            if saver is None and variables.global_variables():
                saver = Saver()
                graph_lib.add_to_collection(GraphKeys.SAVERS, saver)
        self._saver = saver
        if summary_op is Supervisor.USE_DEFAULT:
            summary_op = _first_in_collection(GraphKeys.SUMMARY_OP)
            if summary_op is None:
                summary_op = summary.merge_all()
                if summary_op is not None:
                    graph_lib.add_to_collection(GraphKeys.SUMMARY_OP, summary_op)
        self._summary_op = summary_op
        if global_step is Supervisor.USE_DEFAULT:
            global_step = _first_in_collection(GraphKeys.GLOBAL_STEP)
            if global_step is None:
                global_step = _default_global_step()
                if global_step is not None:
                    graph_lib.add_to_collection(GraphKeys.GLOBAL_STEP, global_step)
        self._global_step = global_step

    def _verify_setup(self) -> None:
        if self._is_chief:
            return
        for op in self._graph.get_operations():
            if op.type in ("Variable", "VariableV2") and not op.device:
                raise ValueError("When using replicas, all Variables must have their device "
                                 f"set: {op}")

    # ---- properties ---------------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief, doc="Whether this is the chief.")
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord, doc="The Coordinator of the threads.")
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # ---- sessions and services ----------------------------------------------------------
    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False,
                                    max_wait_secs=7200, start_standard_services=True):
        """A session whose model is ready: the chief restores or initializes it (and starts
        the checkpoint service), the other tasks wait for the chief.

        Args:
          master: the session target.
          config: the session's ConfigProto.
          wait_for_checkpoint: the chief waits for a checkpoint in `logdir`.
          max_wait_secs: how long to wait (for a checkpoint, or for the chief).
          start_standard_services: start the checkpoint service (chief) and the queue
            runners.

        Returns:
          A Session.
        """
        self._coord.clear_stop()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver,
                checkpoint_dir=self._logdir, wait_for_checkpoint=wait_for_checkpoint,
                max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                _log.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        if start_standard_services:
            _log.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    def _write_graph(self) -> None:
        if self._logdir:
            training_util.write_graph(self._graph, self._logdir, "graph.pbtxt")
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._graph_added_to_summary = True

    def _step(self, sess):
        """The global step's value, or None without a global step."""
        return None if self._global_step is None else _read_global_step(sess,
                                                                       self._global_step)

    def start_standard_services(self, sess) -> list:
        """Starts the chief's services for `sess`: a START session log in the event file,
        then the summary thread (with a summary op), the step-rate thread (with a global
        step), both every `save_summaries_secs`, and the checkpoint thread.

        Returns:
          The started threads (registered with the coordinator).

        Raises:
          RuntimeError: not the chief.
        """
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because "
                               "only chief supervisors can write events.")
        if not self._logdir:
            _log.warning("Standard services need a 'logdir' passed to the SessionManager")
            return []
        threads = []
        if self._summary_writer:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 self._step(sess))
            if self._save_summaries_secs:
                if self._summary_op is not None:
                    threads.append(_SummaryThread(self, sess))
                if self._global_step is not None:
                    threads.append(_StepCounterThread(self, sess))
        if self._saver and self._save_model_secs:
            threads.append(_CheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def start_queue_runners(self, sess, queue_runners=None) -> list:
        """Starts threads for `queue_runners` (default: the graph's QUEUE_RUNNERS),
        registered with the coordinator; returns them."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True,
                                             start=True))
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None) -> LooperThread:
        """Starts a thread calling `target(*args, **kwargs)` every `timer_interval_secs`
        (back to back with None) until a stop is requested; returns it."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    # ---- stopping -----------------------------------------------------------------------
    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Requests a stop and joins the threads (the services', the queue runners' and
        `threads`), waiting up to `stop_grace_secs`; does not close the session.

        Raises:
          The first exception reported to the coordinator (OutOfRangeError excepted).
          RuntimeError: threads still running after the grace period (unless
            `ignore_live_threads`).
        """
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            # Closed last: a service thread may have been writing. The STOP log has no
            # step: the session may be gone.
            # (A second stop, as managed_session's after slim.learning.train's, finds it
            # closed: TF would warn of a write to a closed writer.)
            if close_summary_writer and self._summary_writer and \
                    not getattr(self._summary_writer, "_closed", False):
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex=None) -> None:
        """Asks the threads to stop; `ex` is re-raised by `stop()` (see Coordinator)."""
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        """Whether a stop was requested."""
        return self._coord.should_stop()

    def stop_on_exception(self):
        """A context manager that requests a stop when its body raises."""
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        """Blocks until a stop is requested."""
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step=None) -> None:
        """Writes `summary` to the event file at `global_step` (default: the global
        step's value).

        Raises:
          RuntimeError: there is no summary writer (not the chief, or no `logdir`).
        """
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = _read_global_step(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        """A context manager yielding a ready session (`prepare_or_wait_for_session`).

        An exception from the block or from a service thread stops the threads and is
        re-raised when the block exits, after the session is closed; OutOfRangeError (the
        input is exhausted) ends the block quietly.

        Args:
          master, config: as for `prepare_or_wait_for_session`.
          start_standard_services: start the chief's services and the queue runners.
          close_summary_writer: write a STOP log and close the summary writer when the
            block exits.

        Yields:
          A Session.
        """
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - re-raised by stop() below
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()
                    except Exception:  # noqa: BLE001 - the first error is the one to see
                        pass


def _default_global_step():
    try:
        step = graph_lib.get_default_graph().get_tensor_by_name("global_step:0")
    except KeyError:
        return None
    if step.dtype.base_dtype.is_integer:
        return step
    _log.warning("Found 'global_step' is not an int type: %s", step.dtype)
    return None


class _CheckpointThread(LooperThread):
    """Saves a checkpoint of the supervisor's model every `save_model_secs`."""

    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self):
        _log.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            self._sv.summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path),
                self._sv._step(self._sess))  # noqa: SLF001 - the supervisor's own helper


class _SummaryThread(LooperThread):
    """Writes the supervisor's summary op's value at the global step every
    `save_summaries_secs`."""

    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self):
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            _log.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class _StepCounterThread(LooperThread):
    """Writes the global step's rate (`<global step's op name>/sec`, steps a second since
    the last record) every `save_summaries_secs`."""

    def __init__(self, sv: Supervisor, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess
        self._tag = f"{sv.global_step.op.name}/sec"
        self._last = None
        self._logged = 0

    def start_loop(self):
        self._last = (self._sv._step(self._sess), time.time())  # noqa: SLF001

    def run_loop(self):
        step, now = self._sv._step(self._sess), time.time()  # noqa: SLF001
        last_step, last_time = self._last
        self._last = (step, now)
        rate = (step - last_step) / (now - last_time) if now > last_time else float("inf")
        if self._sv.summary_writer:
            self._sv.summary_writer.add_summary(
                Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)]), step)
        if self._logged < 10:  # TF logs the first ten
            self._logged += 1
            _log.info("%s: %g", self._tag, rate)


def basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=""):
    """Runs `train_step_fn(session, *args, **kwargs)` in a managed session until the
    supervisor says stop (`tf.train.basic_train_loop`)."""
    with supervisor.managed_session(master) as sess:
        while not supervisor.should_stop():
            train_step_fn(sess, *(args or ()), **(kwargs or {}))
