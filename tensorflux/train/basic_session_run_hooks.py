"""The standard SessionRunHooks: checkpoints, stopping, NaN checks, logging, step rates,
waiting for a global step.

Each follows TensorFlow's hook of the same name: what it fetches in `before_run`, when it
fires (SecondOrStepTimer: every N steps or every N seconds) and its error messages. The
hooks that write summaries or traces (SummarySaverHook, ProfilerHook) are in
summary_hooks.py; StepCounterHook and CheckpointSaverHook write to the directory's cached
`tf.summary.FileWriter` here (the step rate; the graph and a CHECKPOINT session log).
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import meta_graph
from tensorflux.framework.graph import GraphKeys
from tensorflux.protos.event_pb2 import SessionLog
from tensorflux.protos.summary_pb2 import Summary
from tensorflux.summary.writer_cache import FileWriterCache
from tensorflux.train import global_step as global_step_lib
from tensorflux.train.session_run_hook import SessionRunArgs, SessionRunHook
from tensorflux.train.training_util import write_graph

__all__ = ["SecondOrStepTimer", "LoggingTensorHook", "StopAtStepHook", "CheckpointSaverHook",
           "CheckpointSaverListener", "StepCounterHook", "NanLossDuringTrainingError",
           "NanTensorHook", "FeedFnHook", "FinalOpsHook", "GlobalStepWaiterHook"]

_log = logging.getLogger("tensorflux")


class SecondOrStepTimer:
    """Triggers at most once every `every_secs` seconds or every `every_steps` steps."""

    def __init__(self, every_secs=None, every_steps=None):
        self.reset()
        self._every_secs = every_secs
        self._every_steps = every_steps
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")

    def reset(self) -> None:
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step) -> bool:
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and \
                time.time() >= self._last_triggered_time + self._every_secs:
            return True
        return self._every_steps is not None and \
            step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step):
        """Records a trigger at `step`; returns (seconds, steps) since the previous one."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


class _NeverTriggerTimer(SecondOrStepTimer):
    def __init__(self):
        self.reset()

    def should_trigger_for_step(self, step) -> bool:
        return False

    def update_last_triggered_step(self, step):
        return (None, None)


def _global_step_read():
    return global_step_lib._get_or_create_global_step_read()


def _as_graph_element(obj):
    graph = graph_lib.get_default_graph()
    if not isinstance(obj, str):
        if hasattr(obj, "graph") and obj.graph is not graph:
            raise ValueError(f"Passed {obj} should have graph attribute that is equal to "
                             "current graph.")
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    try:
        element = graph.as_graph_element(obj + ":0")
        try:
            graph.as_graph_element(obj + ":1")
        except (KeyError, ValueError):
            return element
        raise ValueError(f"Name {obj} is ambiguous, as this `Operation` has multiple "
                         "outputs (at least 2).")
    except (KeyError, ValueError):
        return graph.as_graph_element(obj)


class LoggingTensorHook(SessionRunHook):
    """Logs tensors every N steps, every N seconds, and/or at the end.

    Args:
      tensors: a dict of tags to tensors (or names), or an iterable of tensors (or names).
      every_n_iter, every_n_secs: how often (exactly one, unless only `at_end`).
      at_end: also log at the end of the session.
      formatter: `fn(dict of tag -> value) -> str`; default "tag = value, ...".
    """

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors)
        self._tensors = tensors
        self._formatter = formatter
        self._timer = _NeverTriggerTimer() if only_log_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end = at_end

    def begin(self) -> None:
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        if self._should_trigger:
            return SessionRunArgs(self._current_tensors)
        return None

    def _log_tensors(self, values) -> None:
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        if self._formatter:
            _log.info(self._formatter(values))
        else:
            stats = [f"{tag} = {values[tag]!s}" for tag in self._tag_order]  # (str(), as TF)
            if elapsed_secs is not None:
                _log.info("%s (%.3f sec)", ", ".join(stats), elapsed_secs)
            else:
                _log.info("%s", ", ".join(stats))

    def after_run(self, run_context, run_values) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session) -> None:
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))


class StopAtStepHook(SessionRunHook):
    """Requests a stop when the global step reaches `last_step` (or `num_steps` more).

    Raises:
      ValueError: neither or both of `num_steps` and `last_step`.
      RuntimeError (in begin): the graph has no global step.
    """

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step_tensor = _global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StopAtStepHook.")

    def after_create_session(self, session, coord) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        if int(run_values.results) + 1 >= self._last_step:
            # The fetched value was read before this step's update: read it again.
            if int(run_context.session.run(self._global_step_tensor)) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called around each save of a CheckpointSaverHook (`after_save` returning True
    requests a stop)."""

    def begin(self) -> None:
        pass

    def before_save(self, session, global_step_value) -> None:
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every N steps or seconds, right after the session is created,
    and at the end.

    Raises:
      ValueError: both `saver` and `scaffold`; neither or both of `save_secs` and
        `save_steps`.
      RuntimeError (in begin): no global step; (when saving) no saver and not exactly one
        in the SAVERS collection.
    """

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None,
                 save_graph_def=True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._save_graph_def = save_graph_def

    def begin(self) -> None:
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use CheckpointSaverHook.")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord) -> None:
        step = int(session.run(self._global_step_tensor))
        if self._save_graph_def:
            graph_def = session.graph.as_graph_def(add_shapes=True)
            write_graph(graph_def, self._checkpoint_dir, "graph.pbtxt")
            saver = self._get_saver()
            self._summary_writer.add_graph(session.graph)
            self._summary_writer.add_meta_graph(meta_graph.export_meta_graph(
                graph_def=graph_def, saver_def=saver.saver_def if saver else None,
                graph=session.graph))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session) -> None:
        step = int(session.run(self._global_step_tensor))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session, step) -> bool:
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step,
                               write_meta_graph=self._save_graph_def)
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)
        stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                stop = True
        return stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = graph_lib.get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError("No items in collection savers. Please add a saver to the "
                               "collection.")
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection savers. Please indicate "
                               "which one to use by passing it to the constructor.")
        self._saver = savers[0]
        return savers[0]


class StepCounterHook(SessionRunHook):
    """Records the global step rate every N steps or seconds: logged, and written as the
    summary `global_step/sec` (the global step's op name + "/sec") to `summary_writer` or
    to `output_dir`'s cached FileWriter. The rates are also kept in `rates`."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be "
                             "provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._output_dir = output_dir
        self._summary_writer = summary_writer
        self._last_global_step = None
        self._stalls_logged = 0  # the warning about a global step that does not move: 5 times
        self._steps_per_run = 1
        self.rates: list[float] = []  # the rates measured, for programs that want them

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StepCounterHook.")
        self._summary_tag = global_step_lib.get_global_step().op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step) -> None:
        rate = elapsed_steps / elapsed_time
        self.rates.append(rate)
        if self._summary_writer is not None:
            summary = Summary(value=[Summary.Value(tag=self._summary_tag, simple_value=rate)])
            self._summary_writer.add_summary(summary, global_step)
        _log.info("%s: %g", self._summary_tag, rate)

    def after_run(self, run_context, run_values) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + self._steps_per_run):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
                if elapsed_time is not None and elapsed_time > 0:
                    self._log_and_record(elapsed_steps, elapsed_time, step)
        if stale == self._last_global_step and self._stalls_logged < 5:
            self._stalls_logged += 1
            _log.warning("It seems that global step (tf.train.get_global_step) has not been "
                         "increased. Current value (could be stable): %s vs previous value: "
                         "%s. You could increase the global step by passing "
                         "tf.train.get_global_step() to Optimizer.apply_gradients or "
                         "Optimizer.minimize.", stale, self._last_global_step)
        self._last_global_step = stale


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Raises NanLossDuringTrainingError (or requests a stop) when `loss_tensor` is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values) -> None:
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _log.error(message)
                raise NanLossDuringTrainingError
            _log.warning(message)
            run_context.request_stop()


class FeedFnHook(SessionRunHook):
    """Adds `feed_fn()`'s feeds to every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` when the session ends; their values are `final_ops_values`."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session) -> None:
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)


class GlobalStepWaiterHook(SessionRunHook):
    """Holds the first run back until the global step reaches `wait_until_step` (a worker
    that starts once others have trained a while)."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        self._worker_is_started = False
        self._global_step_tensor = _global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use _GlobalStepWaiterHook.")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        _log.info("Waiting for global step %d before starting training.",
                  self._wait_until_step)
        last_logged = 0
        while True:
            current = int(run_context.session.run(self._global_step_tensor))
            if current >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current - last_logged > 1000:
                _log.info("Waiting for global step %d before starting training. Current "
                          "step is %d.", self._wait_until_step, current)
                last_logged = current
            time.sleep(0.5)
