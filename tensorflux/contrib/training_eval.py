"""`tf.contrib.training`'s evaluation: run `eval_ops` over a restored checkpoint until a
hook asks to stop (`evaluate_once`), or over each new checkpoint of a directory as it
appears (`evaluate_repeatedly`), then return the values of `final_ops`.

An evaluation counts its steps in the local variable `eval_step` (EVAL_STEP collection):
`evaluate_once` appends `assign_add(eval_step, 1)` to `eval_ops` and hands the counter's
value after that update to each `StopAfterNEvalsHook`, which stops the session after
`num_evals` runs. `SummaryAtEndHook` runs the summary op once when the session ends and
writes it at the checkpoint's global step. slim.evaluation (contrib/slim_evaluation.py)
builds `evaluate_once` / `evaluation_loop` on these.
"""

from __future__ import annotations

import logging
import time

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.ops import array_ops, state_ops
from tensorflux.summary import summary
from tensorflux.summary.writer_cache import FileWriterCache
from tensorflux.train import checkpoint_management
from tensorflux.train.basic_session_run_hooks import FinalOpsHook
from tensorflux.train.global_step import get_or_create_global_step
from tensorflux.train.global_step import global_step as read_global_step
from tensorflux.train.monitored_session import ChiefSessionCreator, MonitoredSession
from tensorflux.train.session_run_hook import SessionRunArgs, SessionRunHook
from tensorflux.variables import init_ops, variable_scope

__all__ = ["StopAfterNEvalsHook", "SummaryAtEndHook", "checkpoints_iterator",
           "evaluate_once", "evaluate_repeatedly", "get_or_create_eval_step",
           "wait_for_new_checkpoint"]

_log = logging.getLogger("tensorflux")


def get_or_create_eval_step():
    """The graph's evaluation step counter: a local int64 scalar variable `eval_step`
    (LOCAL_VARIABLES and EVAL_STEP), created on first use.

    Raises:
      ValueError: the EVAL_STEP collection holds more than one variable.
    """
    found = graph_lib.get_collection(GraphKeys.EVAL_STEP)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    return variable_scope.get_variable(
        "eval_step", shape=[], dtype=dtypes.int64, initializer=init_ops.zeros_initializer(),
        trainable=False, collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.EVAL_STEP])


class StopAfterNEvalsHook(SessionRunHook):
    """Stops the evaluation after `num_evals` runs of the eval ops.

    Args:
      num_evals: how many runs.
      log_progress: log "Evaluation [k/num_evals]" (about ten times per evaluation).
    """

    def __init__(self, num_evals, log_progress=True):
        self._num_evals = num_evals
        self._evals_completed = None
        self._log_progress = log_progress
        self._log_frequency = 1 if (num_evals is None or num_evals < 20) else \
            num_evals // 10

    def _set_evals_completed_tensor(self, updated_eval_step) -> None:
        self._evals_completed = updated_eval_step

    def before_run(self, run_context):
        return SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context, run_values) -> None:
        evals_completed = int(run_values.results["evals_completed"])
        if self._log_progress and (evals_completed % self._log_frequency == 0 or
                                   evals_completed == self._num_evals):
            _log.info("Evaluation [%d/%d]", evals_completed, self._num_evals)
        if self._num_evals is not None and evals_completed >= self._num_evals:
            run_context.request_stop()


class SummaryAtEndHook(SessionRunHook):
    """Runs the summary op when the session ends and writes its result at the global
    step.

    Args:
      log_dir: where to write (through FileWriterCache) when `summary_writer` is None.
      summary_writer: a FileWriter.
      summary_op: the summary to run (default: `tf.summary.merge_all()` at `begin`).
      feed_dict: feeds for the summary op.

    Raises:
      ValueError: neither `log_dir` nor `summary_writer` is given.
    """

    def __init__(self, log_dir=None, summary_writer=None, summary_op=None, feed_dict=None):
        self._replace_summary_op = summary_op is None
        self._summary_op = summary_op
        self._feed_dict = feed_dict
        self._summary_writer = summary_writer
        self._log_dir = log_dir
        self._global_step = None
        if self._log_dir is None and self._summary_writer is None:
            raise ValueError("One of log_dir or summary_writer should be used.")

    def begin(self) -> None:
        if self._replace_summary_op:
            self._summary_op = summary.merge_all()
        self._global_step = get_or_create_global_step()

    def after_create_session(self, session, coord) -> None:
        if self._summary_writer is None and self._log_dir:
            self._summary_writer = FileWriterCache.get(self._log_dir)

    def end(self, session) -> None:
        if self._summary_op is None:
            return
        step = read_global_step(session, self._global_step)
        summary_str = session.run(self._summary_op, self._feed_dict)
        if self._summary_writer:
            self._summary_writer.add_summary(summary_str, step)
            self._summary_writer.flush()


def wait_for_new_checkpoint(checkpoint_dir, last_checkpoint=None, seconds_to_sleep=1,
                            timeout=None):
    """Waits until `checkpoint_dir`'s latest checkpoint is not `last_checkpoint`.

    Returns:
      The new checkpoint's path, or None after `timeout` seconds.
    """
    _log.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = time.time() + timeout if timeout is not None else None
    while True:
        path = checkpoint_management.latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            _log.info("Found new checkpoint at %s", path)
            return path
        if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each new checkpoint path of `checkpoint_dir`, at most one per
    `min_interval_secs`; after `timeout` seconds without one it ends, unless `timeout_fn`
    returns False (then it waits again)."""
    checkpoint_path = None
    while True:
        new_path = wait_for_new_checkpoint(checkpoint_dir, checkpoint_path, timeout=timeout)
        if new_path is None:
            if not timeout_fn:
                _log.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        start = time.time()
        checkpoint_path = new_path
        yield checkpoint_path
        time_to_next = start + min_interval_secs - time.time()
        if time_to_next > 0:
            time.sleep(time_to_next)


def _counted_eval_ops(eval_ops, hooks):
    """`eval_ops` with the eval-step increment appended; the StopAfterNEvalsHooks read the
    counter after it."""
    eval_step = get_or_create_eval_step()
    update = state_ops.assign_add(eval_step, 1, use_locking=True)
    if isinstance(eval_ops, dict):
        eval_ops = dict(eval_ops, update_eval_step=update)
    elif isinstance(eval_ops, (tuple, list)):
        eval_ops = list(eval_ops) + [update]
    else:
        eval_ops = [eval_ops, update]
    ops_list = list(eval_ops.values()) if isinstance(eval_ops, dict) else eval_ops
    with graph_lib.control_dependencies(ops_list):
        counted = array_ops.identity(eval_step.read_value())
    for hook in hooks:
        if isinstance(hook, StopAfterNEvalsHook):
            hook._set_evals_completed_tensor(counted)  # noqa: SLF001 - TF's protocol
    return eval_ops


def evaluate_once(checkpoint_path, master="", scaffold=None, eval_ops=None, feed_dict=None,
                  final_ops=None, final_ops_feed_dict=None, hooks=None, config=None):
    """Restores `checkpoint_path`, runs `eval_ops` until a hook stops the session, then
    returns the values of `final_ops`.

    Args:
      checkpoint_path: a checkpoint prefix.
      master: the session target.
      scaffold: a Scaffold (its saver restores the checkpoint; its init_op initializes
        what is not restored).
      eval_ops: a Tensor, list or dict run each step (None: no step runs).
      feed_dict: feeds for `eval_ops`.
      final_ops: a Tensor, list or dict run once at the end.
      final_ops_feed_dict: feeds for `final_ops`.
      hooks: SessionRunHooks (a StopAfterNEvalsHook to bound the steps).
      config: the session's ConfigProto.

    Returns:
      The fetched `final_ops` (None when `final_ops` is None).
    """
    hooks = list(hooks or [])
    if eval_ops is not None:
        eval_ops = _counted_eval_ops(eval_ops, hooks)
    _log.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    start = time.time()
    session_creator = ChiefSessionCreator(
        scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, master=master,
        config=config)
    final_ops_hook = FinalOpsHook(final_ops, final_ops_feed_dict)
    hooks.append(final_ops_hook)
    with MonitoredSession(session_creator=session_creator, hooks=hooks) as session:
        if eval_ops is not None:
            while not session.should_stop():
                session.run(eval_ops, feed_dict)
    _log.info("Inference Time : %.5fs", time.time() - start)
    _log.info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S", time.gmtime()))
    return final_ops_hook.final_ops_values


def evaluate_repeatedly(checkpoint_dir, master="", scaffold=None, eval_ops=None,
                        feed_dict=None, final_ops=None, final_ops_feed_dict=None,
                        eval_interval_secs=60, hooks=None, config=None,
                        max_number_of_evaluations=None, timeout=None, timeout_fn=None):
    """`evaluate_once` on each new checkpoint of `checkpoint_dir`, at most one per
    `eval_interval_secs`, until `max_number_of_evaluations` (None: no limit) or a
    `timeout` without a new checkpoint.

    Returns:
      The fetched `final_ops` of the last evaluation.
    """
    hooks = list(hooks or [])
    if eval_ops is not None:
        eval_ops = _counted_eval_ops(eval_ops, hooks)
    final_ops_hook = FinalOpsHook(final_ops, final_ops_feed_dict)
    hooks.append(final_ops_hook)
    num_evaluations = 0
    for checkpoint_path in checkpoints_iterator(checkpoint_dir, eval_interval_secs,
                                                timeout, timeout_fn):
        session_creator = ChiefSessionCreator(
            scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path,
            master=master, config=config)
        with MonitoredSession(session_creator=session_creator, hooks=hooks) as session:
            _log.info("Starting evaluation at %s",
                      time.strftime("%Y-%m-%d-%H:%M:%S", time.gmtime()))
            if eval_ops is not None:
                while not session.should_stop():
                    session.run(eval_ops, feed_dict)
            _log.info("Finished evaluation at %s",
                      time.strftime("%Y-%m-%d-%H:%M:%S", time.gmtime()))
        num_evaluations += 1
        if max_number_of_evaluations is not None and \
                num_evaluations >= max_number_of_evaluations:
            return final_ops_hook.final_ops_values
    return final_ops_hook.final_ops_values

