"""Hooks that write what a run produced: summaries (SummarySaverHook) and traces of
steps (ProfilerHook). Both follow TensorFlow's hooks of the same names: when they fire
(SecondOrStepTimer), what they fetch and what they write.
"""

from __future__ import annotations

import logging
import os

from tensorflux.client import timeline
from tensorflux.protos import config_pb2
from tensorflux.protos.event_pb2 import SessionLog
from tensorflux.summary.writer_cache import FileWriterCache
from tensorflux.train.basic_session_run_hooks import SecondOrStepTimer, _global_step_read
from tensorflux.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["SummarySaverHook", "ProfilerHook"]

_log = logging.getLogger("tensorflux")


class SummarySaverHook(SessionRunHook):
    """Runs the summary op every N steps or seconds and writes its output
    (`tf.train.SummarySaverHook`).

    The first run also writes a START session log. The step written is the global step
    after the run.

    Args:
      save_steps, save_secs: how often (exactly one).
      output_dir: where to write (its cached `tf.summary.FileWriter`) when no
        `summary_writer` is given.
      summary_writer: a FileWriter.
      scaffold: a Scaffold whose `summary_op` is run.
      summary_op: a summary tensor, or a list of them.

    Raises:
      ValueError: neither or both of `scaffold` and `summary_op`; neither or both of
        `save_steps` and `save_secs`.
      RuntimeError (in begin): the graph has no global step.
    """

    def __init__(self, save_steps=None, save_secs=None, output_dir=None,
                 summary_writer=None, scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use SummarySaverHook.")

    def _summary_ops(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]

    def before_run(self, run_context):
        self._request_summary = self._next_step is None or \
            self._timer.should_trigger_for_step(self._next_step)
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary:
            ops = self._summary_ops()
            if ops is not None:
                requests["summary"] = ops
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values) -> None:
        if not self._summary_writer:
            return
        step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session=None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()


class ProfilerHook(SessionRunHook):
    """Traces one step every N steps or seconds and writes it as a Chrome trace,
    `output_dir/timeline-<global step>.json`, plus its RunMetadata to the directory's
    event file (tag `step_<global step>`) (`tf.train.ProfilerHook`).

    The first step is never traced (the timer starts there).

    Args:
      save_steps, save_secs: how often (exactly one).
      output_dir: the directory of the traces and the event file.
      show_dataflow: draw arrows from tensors' producers to their consumers.
      show_memory: add the allocators' memory counters.

    Raises:
      ValueError: neither or both of `save_steps` and `save_secs`.
      RuntimeError (in begin): the graph has no global step.
    """

    def __init__(self, save_steps=None, save_secs=None, output_dir="", show_dataflow=True,
                 show_memory=False):
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._file_writer = FileWriterCache.get(output_dir)
        self._show_dataflow = show_dataflow
        self._show_memory = show_memory
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        self._next_step = None
        self._global_step_tensor = _global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use ProfilerHook.")

    def before_run(self, run_context):
        self._request_summary = self._next_step is not None and \
            self._timer.should_trigger_for_step(self._next_step)
        options = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE) \
            if self._request_summary else None
        return SessionRunArgs({"global_step": self._global_step_tensor}, options=options)

    def after_run(self, run_context, run_values) -> None:
        stale = int(run_values.results["global_step"])
        if self._next_step is None:
            self._timer.update_last_triggered_step(stale)
        step = stale + 1
        if self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
            self._timer.update_last_triggered_step(step)
            self._save(step, self._output_file.format(step), run_values.run_metadata.step_stats)
            self._file_writer.add_run_metadata(run_values.run_metadata, f"step_{step}")
        self._next_step = step + 1

    def _save(self, step, path, step_stats) -> None:
        _log.info("Saving timeline for %d into '%s'.", step, path)
        trace = timeline.Timeline(step_stats).generate_chrome_trace_format(
            show_dataflow=self._show_dataflow, show_memory=self._show_memory)
        with open(path, "w") as f:
            f.write(trace)
