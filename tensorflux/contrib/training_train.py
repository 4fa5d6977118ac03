"""`tf.contrib.training`'s training ops: `create_train_op` (gradients, update ops, a
global-step increment and a numerics check folded into one tensor that evaluates to the
loss), the gradient transforms TF-Slim applies between compute and apply
(`clip_gradient_norms`, `multiply_gradients`, `add_gradients_summaries`) and the
MonitoredTrainingSession loop `train`. slim.learning (contrib/slim_learning.py) builds its
Supervisor loop on the same train op.

The train op is `with_dependencies([apply_gradients], check_numerics(total_loss))`, in the
TRAIN_OP collection; running it applies one update and returns the loss computed before
the update (the gradients read the same values the loss did).
"""

from __future__ import annotations

import logging

from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.operation import Tensor
from tensorflux.nn import clip_ops
from tensorflux.ops import constant_op, control_flow_ops, logging_ops
from tensorflux.summary import summary
from tensorflux.train import optimizer as optimizer_lib
from tensorflux.train.global_step import get_or_create_global_step
from tensorflux.train.monitored_session import MonitoredTrainingSession
from tensorflux.variables import variables

__all__ = ["add_gradients_summaries", "clip_gradient_norms", "clip_gradient_norms_fn",
           "create_train_op", "multiply_gradients", "train"]

_log = logging.getLogger("tensorflux")

_USE_GLOBAL_STEP = 0


def _gradient_values(grad):
    return grad.values if isinstance(grad, IndexedSlices) else grad


def _with_values(grad, values):
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(values, grad.indices, grad.dense_shape)
    return values


def add_gradients_summaries(grads_and_vars) -> list:
    """A histogram of each gradient (`<var>/gradient`) and a scalar of its norm
    (`<var>/gradient_norm`); returns the summaries. Pairs without a gradient are
    logged and skipped."""
    summaries = []
    for grad, var in grads_and_vars:
        if grad is None:
            _log.info("Var %s has no gradient", var.op.name)
            continue
        values = _gradient_values(grad)
        summaries.append(summary.histogram(var.op.name + "/gradient", values))
        summaries.append(summary.scalar(var.op.name + "/gradient_norm",
                                        clip_ops.global_norm([values])))
    return summaries


def clip_gradient_norms(gradients_to_variables, max_norm) -> list:
    """Each gradient clipped to norm `max_norm` by itself (`tf.clip_by_norm`; an
    IndexedSlices' values clipped together)."""
    clipped = []
    for grad, var in gradients_to_variables:
        if grad is not None:
            grad = _with_values(grad, clip_ops.clip_by_norm(_gradient_values(grad), max_norm))
        clipped.append((grad, var))
    return clipped


def clip_gradient_norms_fn(max_norm):
    """A `transform_grads_fn` clipping each gradient to `max_norm`."""
    def clip_norms(gradients_to_variables):
        return clip_gradient_norms(gradients_to_variables, max_norm)
    return clip_norms


def multiply_gradients(grads_and_vars, gradient_multipliers) -> list:
    """Scales the gradients of the variables named in `gradient_multipliers`.

    Args:
      grads_and_vars: (gradient, variable) pairs.
      gradient_multipliers: {variable or variable op name: multiplier (number or Tensor)}.

    Returns:
      The pairs with those gradients multiplied.

    Raises:
      ValueError: `grads_and_vars` is not a list, or `gradient_multipliers` is empty or
        not a dict.
    """
    if not isinstance(grads_and_vars, list):
        raise ValueError("`grads_and_vars` must be a list.")
    if not gradient_multipliers:
        raise ValueError("`gradient_multipliers` is empty.")
    if not isinstance(gradient_multipliers, dict):
        raise ValueError("`gradient_multipliers` must be a dict.")
    out = []
    for grad, var in grads_and_vars:
        key = var if var in gradient_multipliers else var.op.name
        if key in gradient_multipliers:
            if grad is None:
                raise ValueError(f"Requested multiple of `None` gradient for {var.op.name}.")
            multiplier = gradient_multipliers[key]
            if not isinstance(multiplier, Tensor):
                multiplier = constant_op.constant(multiplier, dtype=grad.dtype)
            grad = _with_values(grad, _gradient_values(grad) * multiplier)
        out.append((grad, var))
    return out


def _trainable(variables_to_train) -> list:
    if variables_to_train is None:
        variables_to_train = variables.trainable_variables()
    if not variables_to_train:
        raise ValueError("No variables to train: the graph has no trainable variables "
                         "and `variables_to_train` is empty.")
    return list(variables_to_train)


def create_train_op(total_loss, optimizer, global_step=_USE_GLOBAL_STEP, update_ops=None,
                    variables_to_train=None, transform_grads_fn=None,
                    summarize_gradients=False, gate_gradients=optimizer_lib.GATE_OP,
                    aggregation_method=None, colocate_gradients_with_ops=False,
                    check_numerics=True):
    """A tensor that, when run, applies one gradient step and evaluates to the loss.

    Args:
      total_loss: the scalar loss.
      optimizer: a tf.train.Optimizer.
      global_step: incremented by each step (default: get_or_create_global_step();
        None: no increment).
      update_ops: ops run before the gradients (default: the UPDATE_OPS collection, e.g.
        batch norm's moving averages; a warning if a list leaves some of them out).
      variables_to_train: default all trainable variables.
      transform_grads_fn: maps the (gradient, variable) list before it is applied.
      summarize_gradients: add gradient histograms and norms to the summaries.
      gate_gradients, aggregation_method, colocate_gradients_with_ops: as for
        `Optimizer.compute_gradients`.
      check_numerics: fail the step (InvalidArgumentError) on a NaN or Inf loss.

    Returns:
      The train op (a Tensor with the loss's value), also added to TRAIN_OP.
    """
    if global_step is _USE_GLOBAL_STEP:
        global_step = get_or_create_global_step()
    global_update_ops = set(graph_lib.get_collection(GraphKeys.UPDATE_OPS))
    update_ops = global_update_ops if update_ops is None else set(update_ops)
    if not global_update_ops.issubset(update_ops):
        _log.warning("update_ops in create_train_op does not contain all the update_ops "
                     "in GraphKeys.UPDATE_OPS")
    if update_ops:
        with graph_lib.control_dependencies(sorted(update_ops, key=lambda o: o.name)):
            barrier = control_flow_ops.no_op(name="update_barrier")
        total_loss = builders.with_dependencies([barrier], total_loss)
    grads = optimizer.compute_gradients(
        total_loss, _trainable(variables_to_train), gate_gradients=gate_gradients,
        aggregation_method=aggregation_method,
        colocate_gradients_with_ops=colocate_gradients_with_ops)
    if transform_grads_fn:
        grads = transform_grads_fn(grads)
    if summarize_gradients:
        with graph_lib.name_scope("summarize_grads"):
            add_gradients_summaries(grads)
    grad_updates = optimizer.apply_gradients(grads, global_step=global_step)
    with graph_lib.name_scope("train_op"):
        if check_numerics:
            total_loss = logging_ops.check_numerics(total_loss, "LossTensor is inf or nan")
        train_op = builders.with_dependencies([grad_updates], total_loss)
    train_ops = graph_lib.get_collection_ref(GraphKeys.TRAIN_OP)
    if train_op not in train_ops:
        train_ops.append(train_op)
    return train_op


def train(train_op, logdir, master="", is_chief=True, scaffold=None, hooks=None,
          chief_only_hooks=None, save_checkpoint_secs=600, save_summaries_steps=100,
          config=None, max_wait_secs=7200, run_metadata=None):
    """Runs `train_op` in a MonitoredTrainingSession until a hook asks to stop
    (e.g. `tf.train.StopAtStepHook(last_step=N)`).

    Returns:
      The loss of the last step (None if no step ran).

    Raises:
      ValueError: the chief has no `logdir` but checkpoints or summaries are asked for.
    """
    if logdir is None and is_chief:
        if save_summaries_steps:
            raise ValueError("logdir cannot be None when save_summaries_steps is not None")
        if save_checkpoint_secs:
            raise ValueError("logdir cannot be None when save_checkpoint_secs is not None")
    with MonitoredTrainingSession(
            master=master, is_chief=is_chief, checkpoint_dir=logdir, scaffold=scaffold,
            hooks=hooks, chief_only_hooks=chief_only_hooks,
            save_checkpoint_secs=save_checkpoint_secs,
            save_summaries_steps=save_summaries_steps, config=config,
            max_wait_secs=max_wait_secs) as session:
        loss = None
        while not session.should_stop():
            loss = session.run(train_op, run_metadata=run_metadata)
    return loss
