"""`slim.evaluation`: evaluate a checkpoint once (`evaluate_once`) or each new checkpoint
of a directory (`evaluation_loop`), running `eval_op` `num_evals` times (typically the
metrics' update ops), then the summary op once (written to `logdir` at the checkpoint's
global step) and returning the value of `final_op`.

Both are `tf.contrib.training`'s `evaluate_once` / `evaluate_repeatedly`
(contrib/training_eval.py) with a StopAfterNEvalsHook and a SummaryAtEndHook; a
`variables_to_restore` list restores only those variables (the others must be
initialized by `initial_op`).
"""

from __future__ import annotations

import logging

from tensorflux.contrib.training_eval import (  # noqa: F401 - slim.evaluation's names
    StopAfterNEvalsHook,
    SummaryAtEndHook,
    checkpoints_iterator,
    evaluate_repeatedly,
    get_or_create_eval_step,
    wait_for_new_checkpoint,
)
from tensorflux.contrib.training_eval import evaluate_once as _evaluate_once
from tensorflux.summary import summary
from tensorflux.train.global_step import global_step as read_global_step
from tensorflux.train.monitored_session import Scaffold
from tensorflux.train.saver import Saver

__all__ = ["checkpoints_iterator", "evaluate_once", "evaluation", "evaluation_loop",
           "get_or_create_eval_step", "wait_for_new_checkpoint"]

_USE_DEFAULT = 0

_log = logging.getLogger("tensorflux")


def evaluation(sess, num_evals=1, initial_op=None, initial_op_feed_dict=None, eval_op=None,
               eval_op_feed_dict=None, final_op=None, final_op_feed_dict=None,
               summary_op=None, summary_op_feed_dict=None, summary_writer=None,
               global_step=None):
    """Evaluates in an existing session (TF-Slim's early API, still in its walkthrough):
    `initial_op` once, `eval_op` `num_evals` times, then `final_op`, whose value is
    returned; the summary op's value is written with `summary_writer` at the global step.
    """
    if initial_op is not None:
        sess.run(initial_op, initial_op_feed_dict)
    if eval_op is not None:
        for i in range(int(num_evals)):
            _log.info("Executing eval_op %d/%d", i + 1, num_evals)
            sess.run(eval_op, eval_op_feed_dict)
    final_op_value = None
    if final_op is not None:
        _log.info("Executing final op")
        final_op_value = sess.run(final_op, final_op_feed_dict)
    if summary_op is not None and summary_writer is not None:
        step = read_global_step(sess, global_step) if global_step is not None else None
        summary_writer.add_summary(sess.run(summary_op, summary_op_feed_dict), step)
        summary_writer.flush()
    return final_op_value


def _hooks(num_evals, summary_op, summary_op_feed_dict, logdir, hooks) -> list:
    all_hooks = [StopAfterNEvalsHook(num_evals)]
    if summary_op is not None:
        all_hooks.append(SummaryAtEndHook(log_dir=logdir, summary_op=summary_op,
                                          feed_dict=summary_op_feed_dict))
    return all_hooks + list(hooks or [])


def evaluate_once(master, checkpoint_path, logdir, num_evals=1, initial_op=None,
                  initial_op_feed_dict=None, eval_op=None, eval_op_feed_dict=None,
                  final_op=None, final_op_feed_dict=None, summary_op=_USE_DEFAULT,
                  summary_op_feed_dict=None, variables_to_restore=None, session_config=None,
                  hooks=None):
    """Evaluates the model at `checkpoint_path` once.

    Args:
      master: the session target.
      checkpoint_path: the checkpoint prefix to restore.
      logdir: where the summaries are written.
      num_evals: how many times `eval_op` runs.
      initial_op, initial_op_feed_dict: run when the model is initialized (the init op of
        the Scaffold).
      eval_op, eval_op_feed_dict: run `num_evals` times.
      final_op, final_op_feed_dict: run once at the end; its value is returned.
      summary_op: default `tf.summary.merge_all()`; None: no summaries.
      summary_op_feed_dict: feeds for the summary op.
      variables_to_restore: restore only these (default: all saveable variables).
      session_config: the session's ConfigProto.
      hooks: more SessionRunHooks.

    Returns:
      The value of `final_op` (None without one).
    """
    if summary_op == _USE_DEFAULT:
        summary_op = summary.merge_all()
    saver = Saver(variables_to_restore) if variables_to_restore is not None else None
    return _evaluate_once(
        checkpoint_path, master=master,
        scaffold=Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict,
                          saver=saver),
        eval_ops=eval_op, feed_dict=eval_op_feed_dict, final_ops=final_op,
        final_ops_feed_dict=final_op_feed_dict,
        hooks=_hooks(num_evals, summary_op, summary_op_feed_dict, logdir, hooks),
        config=session_config)


def evaluation_loop(master, checkpoint_dir, logdir, num_evals=1, initial_op=None,
                    initial_op_feed_dict=None, init_fn=None, eval_op=None,
                    eval_op_feed_dict=None, final_op=None, final_op_feed_dict=None,
                    summary_op=_USE_DEFAULT, summary_op_feed_dict=None,
                    variables_to_restore=None, eval_interval_secs=60,
                    max_number_of_evaluations=None, session_config=None, timeout=None,
                    timeout_fn=None, hooks=None):
    """Evaluates each new checkpoint of `checkpoint_dir` (see `evaluate_once`), at most
    one per `eval_interval_secs`, until `max_number_of_evaluations` (None: no limit) or
    `timeout` seconds pass without a new checkpoint (unless `timeout_fn()` returns
    False).

    Args:
      init_fn: `fn(scaffold, session)` run instead of restoring (it must restore the
        model itself).
      The others: as for `evaluate_once`.

    Returns:
      The value of `final_op` of the last evaluation.
    """
    if summary_op == _USE_DEFAULT:
        summary_op = summary.merge_all()
    saver = Saver(variables_to_restore) if variables_to_restore is not None else None
    return evaluate_repeatedly(
        checkpoint_dir, master=master,
        scaffold=Scaffold(init_op=initial_op, init_feed_dict=initial_op_feed_dict,
                          init_fn=init_fn, saver=saver),
        eval_ops=eval_op, feed_dict=eval_op_feed_dict, final_ops=final_op,
        final_ops_feed_dict=final_op_feed_dict, eval_interval_secs=eval_interval_secs,
        hooks=_hooks(num_evals, summary_op, summary_op_feed_dict, logdir, hooks),
        config=session_config, max_number_of_evaluations=max_number_of_evaluations,
        timeout=timeout, timeout_fn=timeout_fn)
