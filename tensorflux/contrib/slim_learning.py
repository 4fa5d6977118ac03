"""`slim.learning`: TF-Slim's training loop.

    train_op = slim.learning.create_train_op(total_loss, optimizer)
    slim.learning.train(train_op, logdir, number_of_steps=1000,
                        save_summaries_secs=300, save_interval_secs=600)

`train` runs `train_step_fn(sess, train_op, global_step, train_step_kwargs)` in a
`tf.train.Supervisor`'s managed session until the step function says stop (by default:
`global_step >= number_of_steps`, checked after each step) or the input is exhausted
(OutOfRangeError), then the chief saves a final checkpoint `logdir/model.ckpt-<step>`.
The chief also runs, while training, TF's standard services: a checkpoint every
`save_interval_secs` (the Supervisor's thread) and, here, the summary op and the
`global_step/sec` counter every `save_summaries_secs` into an event file of `logdir` (the
Supervisor of tensorflux starts no summary service of its own).
"""

from __future__ import annotations

import logging
import os
import sys
import time
import types

from tensorflux.client import timeline
from tensorflux.contrib.training_train import (  # noqa: F401 - slim.learning's names
    add_gradients_summaries,
    clip_gradient_norms,
    multiply_gradients,
)
from tensorflux.contrib.training_train import create_train_op as _create_train_op
from tensorflux.control_flow import builders
from tensorflux.framework import errors
from tensorflux.framework import graph as graph_lib
from tensorflux.lookup import lookup_ops
from tensorflux.ops import comparison_ops, constant_op, joining_ops, math_ops
from tensorflux.protos import config_pb2
from tensorflux.summary import summary
from tensorflux.summary.writer import FileWriter
from tensorflux.train import optimizer as optimizer_lib
from tensorflux.train.global_step import get_or_create_global_step
from tensorflux.train.global_step import global_step as read_global_step
from tensorflux.train.saver import Saver
from tensorflux.train.supervisor import Supervisor
from tensorflux.train.sync_replicas_optimizer import SyncReplicasOptimizer
from tensorflux.variables import variables

__all__ = ["add_gradients_summaries", "clip_gradient_norms", "create_train_op",
           "multiply_gradients", "train", "train_step"]

_log = logging.getLogger("tensorflux")

_USE_DEFAULT = 0
_USE_GLOBAL_STEP = 0


def create_train_op(total_loss, optimizer, global_step=_USE_GLOBAL_STEP, update_ops=None,
                    variables_to_train=None, clip_gradient_norm=0, summarize_gradients=False,
                    gate_gradients=optimizer_lib.GATE_OP, aggregation_method=None,
                    colocate_gradients_with_ops=False, gradient_multipliers=None,
                    check_numerics=True):
    """A tensor that applies one gradient step and evaluates to the loss (see
    `tf.contrib.training.create_train_op`), with slim's gradient transforms.

    Args:
      total_loss, optimizer, global_step, update_ops, variables_to_train,
        summarize_gradients, gate_gradients, aggregation_method,
        colocate_gradients_with_ops, check_numerics: as for
        `tf.contrib.training.create_train_op`.
      clip_gradient_norm: when > 0, each gradient is clipped to this norm (after the
        multipliers).
      gradient_multipliers: {variable or variable op name: multiplier}.

    Returns:
      The train op.
    """
    def transform_grads_fn(grads):
        if gradient_multipliers:
            with graph_lib.name_scope("multiply_grads"):
                grads = multiply_gradients(grads, gradient_multipliers)
        if clip_gradient_norm > 0:
            with graph_lib.name_scope("clip_grads"):
                grads = clip_gradient_norms(grads, clip_gradient_norm)
        return grads

    return _create_train_op(
        total_loss, optimizer, global_step=global_step, update_ops=update_ops,
        variables_to_train=variables_to_train, transform_grads_fn=transform_grads_fn,
        summarize_gradients=summarize_gradients, gate_gradients=gate_gradients,
        aggregation_method=aggregation_method,
        colocate_gradients_with_ops=colocate_gradients_with_ops,
        check_numerics=check_numerics)


def _wait_for_step(sess, global_step, step) -> None:
    while read_global_step(sess, global_step) < step:
        time.sleep(1.0)


def _step_after(sess, global_step):
    """The global step after the step's increment. TF's fetch of a ref variable aliases
    its buffer, so the value it logs (and names traces by) is the incremented one;
    tensorflux's read in the step is a snapshot, so the step is read again."""
    return sess.run(global_step)


def train_step(sess, train_op, global_step, train_step_kwargs):
    """Runs one step: `train_op` and the global step, then the optional checks of
    `train_step_kwargs` (`should_trace` with `logdir`, `should_log`, `should_stop`).

    Returns:
      (total_loss, should_stop).

    Raises:
      ValueError: `should_trace` is given without `logdir`.
    """
    start_time = time.time()
    trace_run_options = run_metadata = None
    if "should_trace" in train_step_kwargs:
        if "logdir" not in train_step_kwargs:
            raise ValueError("logdir must be present in train_step_kwargs when should_trace "
                             "is present")
        if sess.run(train_step_kwargs["should_trace"]):
            trace_run_options = config_pb2.RunOptions(
                trace_level=config_pb2.RunOptions.FULL_TRACE)
            run_metadata = config_pb2.RunMetadata()
    total_loss, np_global_step = sess.run([train_op, global_step],
                                          options=trace_run_options,
                                          run_metadata=run_metadata)
    time_elapsed = time.time() - start_time
    if run_metadata is not None:
        np_global_step = _step_after(sess, global_step)
        trace = timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format()
        trace_filename = os.path.join(train_step_kwargs["logdir"],
                                      f"tf_trace-{int(np_global_step)}.json")
        _log.info("Writing trace to %s", trace_filename)
        with open(trace_filename, "w") as f:
            f.write(trace)
        if train_step_kwargs.get("summary_writer") is not None:
            train_step_kwargs["summary_writer"].add_run_metadata(
                run_metadata, f"run_metadata-{int(np_global_step)}")
    if "should_log" in train_step_kwargs and sess.run(train_step_kwargs["should_log"]):
        np_global_step = _step_after(sess, global_step)
        _log.info("global step %d: loss = %.4f (%.3f sec/step)", np_global_step, total_loss,
                  time_elapsed)
    should_stop = bool(sess.run(train_step_kwargs["should_stop"])) \
        if "should_stop" in train_step_kwargs else False
    return total_loss, should_stop


def _default_step_kwargs(global_step, number_of_steps, log_every_n_steps, is_chief,
                         trace_every_n_steps, logdir) -> dict:
    with graph_lib.name_scope("train_step"):
        kwargs = {}
        if number_of_steps:
            kwargs["should_stop"] = comparison_ops.greater_equal(global_step, number_of_steps)
        else:
            kwargs["should_stop"] = constant_op.constant(False)
        if log_every_n_steps > 0:
            kwargs["should_log"] = comparison_ops.equal(
                math_ops.floormod(global_step, log_every_n_steps), 0)
        if is_chief and trace_every_n_steps is not None:
            kwargs["should_trace"] = comparison_ops.equal(
                math_ops.floormod(global_step, trace_every_n_steps), 0)
            kwargs["logdir"] = logdir
    return kwargs


def _check_train_args(train_op, logdir, summary_op, saver, trace_every_n_steps,
                      sync_optimizer, startup_delay_steps, number_of_steps):
    if train_op is None:
        raise ValueError("train_op cannot be None.")
    if logdir is None:
        if summary_op != _USE_DEFAULT:
            raise ValueError("Cannot provide summary_op because logdir=None")
        if saver is not None:
            raise ValueError("Cannot provide saver because logdir=None")
        if trace_every_n_steps is not None:
            raise ValueError("Cannot provide trace_every_n_steps because logdir=None")
    if isinstance(sync_optimizer, SyncReplicasOptimizer):
        sync_optimizer = [sync_optimizer]
    if sync_optimizer is not None:
        if startup_delay_steps > 0:
            raise ValueError("startup_delay_steps must be zero when sync_optimizer is "
                             "supplied.")
        for opt in sync_optimizer:
            if not isinstance(opt, SyncReplicasOptimizer):
                raise ValueError("`sync_optimizer` must be a tf.train.SyncReplicasOptimizer.")
    if number_of_steps is not None and number_of_steps <= 0:
        raise ValueError("`number_of_steps` must be either None or a positive number.")
    return sync_optimizer


def _init_ops(init_op, ready_op, local_init_op, sync_optimizer, is_chief):
    """The init, ready, local-init and ready-for-local-init ops, under `init_ops/`."""
    with graph_lib.name_scope("init_ops"):
        if init_op == _USE_DEFAULT:
            init_op = variables.global_variables_initializer()
        if ready_op == _USE_DEFAULT:
            ready_op = variables.report_uninitialized_variables()
        if local_init_op == _USE_DEFAULT:
            local_init_op = builders.group(variables.local_variables_initializer(),
                                           lookup_ops.tables_initializer())
        ready_for_local_init_op = None
        if sync_optimizer is not None:
            with graph_lib.control_dependencies(
                    [local_init_op] if local_init_op is not None else []):
                local_init_op = builders.group(*[
                    opt.chief_init_op if is_chief else opt.local_step_init_op
                    for opt in sync_optimizer])
            ready_for_local_init_op = joining_ops.concat(
                [opt.ready_for_local_init_op for opt in sync_optimizer], axis=0)
    return init_op, ready_op, local_init_op, ready_for_local_init_op


def _finish_services(sv: Supervisor, services) -> None:
    """Stops the service threads and waits for a checkpoint or summary in progress, so
    that the final checkpoint is the last one written (the step loop has already asked
    the coordinator to stop when it ends at `number_of_steps`)."""
    sv.request_stop()
    for thread in services:
        thread.join(sv._stop_grace_secs)  # noqa: SLF001 - the supervisor's grace period


def train(train_op, logdir, train_step_fn=train_step, train_step_kwargs=_USE_DEFAULT,
          log_every_n_steps=1, graph=None, master="", is_chief=True, global_step=None,
          number_of_steps=None, init_op=_USE_DEFAULT, init_feed_dict=None,
          local_init_op=_USE_DEFAULT, init_fn=None, ready_op=_USE_DEFAULT,
          summary_op=_USE_DEFAULT, save_summaries_secs=600, summary_writer=_USE_DEFAULT,
          startup_delay_steps=0, saver=None, save_interval_secs=600, sync_optimizer=None,
          session_config=None, session_wrapper=None, trace_every_n_steps=None,
          ignore_live_threads=False):
    """Runs a training loop with a `tf.train.Supervisor`.

    Args:
      train_op: the train op (see `create_train_op`), run by each step.
      logdir: where checkpoints and event files go (None: neither is written).
      train_step_fn: `fn(sess, train_op, global_step, train_step_kwargs)` returning
        `(total_loss, should_stop)`; default `train_step`.
      train_step_kwargs: its keyword dict (default: `should_stop` from
        `number_of_steps`, `should_log` every `log_every_n_steps`, `should_trace`).
      log_every_n_steps: log the loss every this many global steps (0: never).
      graph: the graph (default: the default graph).
      master: the session target.
      is_chief: whether this task initializes, checkpoints and writes summaries.
      global_step: the step counter (default: get_or_create_global_step()).
      number_of_steps: stop once the global step reaches this (None: until the input
        ends); must be positive.
      init_op, init_feed_dict, local_init_op, init_fn, ready_op: as for the Supervisor
        (defaults: the global initializer, the local and table initializers, the
        uninitialized-variables report, all under `init_ops/`).
      summary_op: default `tf.summary.merge_all()`; None: no summaries.
      save_summaries_secs: seconds between summaries.
      summary_writer: default a FileWriter on `logdir` (chief only); None: none.
      startup_delay_steps: a non-chief task waits until the global step reaches this.
      saver: default a new `tf.train.Saver()`.
      save_interval_secs: seconds between checkpoints.
      sync_optimizer: a SyncReplicasOptimizer or a list of them.
      session_config: the session's ConfigProto.
      session_wrapper: `fn(sess)` returning the session object the steps use.
      trace_every_n_steps: write a Chrome trace `tf_trace-<step>.json` to `logdir` every
        this many steps.
      ignore_live_threads: do not raise when threads outlive the stop grace period.

    Returns:
      The loss of the last step.

    Raises:
      ValueError: `train_op` is None; `logdir` is None but `summary_op`, `saver` or
        `trace_every_n_steps` is given; `number_of_steps` is not positive;
        `startup_delay_steps` is given with a `sync_optimizer`.
    """
    sync_optimizer = _check_train_args(train_op, logdir, summary_op, saver,
                                       trace_every_n_steps, sync_optimizer,
                                       startup_delay_steps, number_of_steps)
    graph = graph or graph_lib.get_default_graph()
    with graph.as_default():
        if global_step is None:
            global_step = get_or_create_global_step()
        saver = saver or Saver()
        init_op, ready_op, local_init_op, ready_for_local_init_op = _init_ops(
            init_op, ready_op, local_init_op, sync_optimizer, is_chief)
        if summary_op == _USE_DEFAULT:
            summary_op = summary.merge_all()
        if summary_writer == _USE_DEFAULT:
            summary_writer = FileWriter(logdir) if (logdir and is_chief) else None
        init_tokens_op = chief_queue_runner = None
        if is_chief and sync_optimizer is not None:
            init_tokens_op = [opt.get_init_tokens_op() for opt in sync_optimizer]
            chief_queue_runner = [opt.get_chief_queue_runner() for opt in sync_optimizer]
        if train_step_kwargs == _USE_DEFAULT:
            train_step_kwargs = _default_step_kwargs(
                global_step, number_of_steps, log_every_n_steps, is_chief,
                trace_every_n_steps, logdir)
    sv = Supervisor(
        graph=graph, is_chief=is_chief, logdir=logdir, init_op=init_op,
        init_feed_dict=init_feed_dict, local_init_op=local_init_op,
        ready_for_local_init_op=ready_for_local_init_op, ready_op=ready_op,
        summary_op=summary_op, summary_writer=summary_writer, global_step=global_step,
        saver=saver, save_summaries_secs=save_summaries_secs,
        save_model_secs=save_interval_secs, init_fn=init_fn)
    if summary_writer is not None:
        train_step_kwargs["summary_writer"] = sv.summary_writer

    plan = types.SimpleNamespace(
        train_op=train_op, logdir=logdir, train_step_fn=train_step_fn,
        train_step_kwargs=train_step_kwargs, is_chief=is_chief, global_step=global_step,
        number_of_steps=number_of_steps, summary_op=summary_op,
        save_summaries_secs=save_summaries_secs, startup_delay_steps=startup_delay_steps,
        sync_optimizer=sync_optimizer, session_wrapper=session_wrapper,
        ignore_live_threads=ignore_live_threads, init_tokens_op=init_tokens_op,
        chief_queue_runner=chief_queue_runner)
    total_loss = None
    while True:
        try:
            with sv.managed_session(master, start_standard_services=False,
                                    config=session_config) as sess:
                total_loss = _train_in_session(sv, sess, plan)
            return total_loss
        except errors.AbortedError:
            _log.info("Retrying training!")


def _train_in_session(sv: Supervisor, sess, plan):
    """The body of `train`'s managed session: services, queue runners, the step loop and
    the chief's final checkpoint. Returns the last loss."""
    _log.info("Starting Session.")
    if plan.session_wrapper is not None:
        sess = plan.session_wrapper(sess)
    services = []
    if plan.is_chief:
        if plan.logdir:
            services = sv.start_standard_services(sess)
    elif plan.startup_delay_steps > 0:
        _wait_for_step(sess, plan.global_step,
                       min(plan.startup_delay_steps, plan.number_of_steps or sys.maxsize))
    threads = sv.start_queue_runners(sess)
    _log.info("Starting Queues.")
    if plan.is_chief and plan.sync_optimizer is not None:
        sv.start_queue_runners(sess, plan.chief_queue_runner)
        sess.run(plan.init_tokens_op)
    total_loss = None
    try:
        while not sv.should_stop():
            total_loss, should_stop = plan.train_step_fn(
                sess, plan.train_op, plan.global_step, plan.train_step_kwargs)
            if should_stop:
                _log.info("Stopping Training.")
                sv.request_stop()
                break
    except errors.OutOfRangeError as e:
        _log.info("Caught OutOfRangeError. Stopping Training. %s", e)
    if plan.logdir and sv.is_chief:
        _finish_services(sv, services)
        _log.info("Finished training! Saving model to disk.")
        sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
        sv.stop(threads, close_summary_writer=True,
                ignore_live_threads=plan.ignore_live_threads)
    return total_loss

