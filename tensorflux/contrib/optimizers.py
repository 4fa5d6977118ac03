"""`tf.contrib.layers.optimize_loss`: the training op of a loss, with the optimizer named or
given, the learning rate as a variable (optionally decayed), gradient clipping, noise and
multipliers, UPDATE_OPS run first, and summaries."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib

OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm",
                       "global_gradient_norm"]


def _optimizer_classes() -> dict:
    from tensorflux.train import adagrad, adam, ftrl, gradient_descent, momentum, rmsprop

    return {"Adagrad": adagrad.AdagradOptimizer, "Adam": adam.AdamOptimizer,
            "Ftrl": ftrl.FtrlOptimizer, "Momentum": momentum.MomentumOptimizer,
            "RMSProp": rmsprop.RMSPropOptimizer,
            "SGD": gradient_descent.GradientDescentOptimizer}


def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None,
                  gradient_multipliers=None, clip_gradients=None, learning_rate_decay_fn=None,
                  update_ops=None, variables=None, name=None, summaries=None,
                  colocate_gradients_with_ops=False, increment_global_step=True):
    """The op that trains `loss` one step (the loss itself, after the update).

    `optimizer`: a name ("Adagrad", "Adam", "Ftrl", "Momentum", "RMSProp", "SGD"), an
    Optimizer class or instance, or a function of the learning rate giving one.

    Raises:
      ValueError: an unknown optimizer name, a missing learning rate, nothing to train.
    """
    from tensorflux.nn import clip_ops
    from tensorflux.ops import array_ops, random_ops
    from tensorflux.summary import summary
    from tensorflux.train.global_step import get_global_step
    from tensorflux.train.optimizer import Optimizer
    from tensorflux.variables import init_ops, variable_scope

    global_step = global_step if global_step is not None else get_global_step()
    summaries = OPTIMIZER_SUMMARIES if summaries is None else summaries
    with variable_scope.variable_scope(name, "OptimizeLoss", [loss, global_step]):
        ops = list(graph_lib.get_collection(graph_lib.GraphKeys.UPDATE_OPS)
                   if update_ops is None else update_ops)
        if ops:
            with graph_lib.get_default_graph().control_dependencies(ops):
                loss = array_ops.identity(loss)
        lr = None
        if learning_rate is not None:
            if hasattr(learning_rate, "dtype") and hasattr(learning_rate, "op"):
                lr = learning_rate
            else:
                lr = variable_scope.get_variable(
                    "learning_rate", [], trainable=False, dtype=dtypes.float32,
                    initializer=init_ops.constant_initializer(learning_rate))
        if learning_rate_decay_fn is not None:
            if lr is None or global_step is None:
                raise ValueError("global_step and learning_rate are required for "
                                 "learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
        if lr is not None and "learning_rate" in summaries:
            summary.scalar("learning_rate", lr)
        if isinstance(optimizer, str):
            classes = _optimizer_classes()
            if optimizer not in classes:
                raise ValueError(f"Optimizer name should be one of [{', '.join(classes)}], "
                                 f"you provided {optimizer}.")
            if lr is None:
                raise ValueError("Learning rate is None, but should be specified if "
                                 "optimizer is string.")
            opt = classes[optimizer](learning_rate=lr)
        elif isinstance(optimizer, type) and issubclass(optimizer, Optimizer):
            if lr is None:
                raise ValueError("Learning rate is None, but should be specified if "
                                 "optimizer is class.")
            opt = optimizer(learning_rate=lr)
        elif isinstance(optimizer, Optimizer):
            opt = optimizer
        elif callable(optimizer):
            opt = optimizer(lr) if lr is not None else optimizer()
            if not isinstance(opt, Optimizer):
                raise ValueError(f"Unrecognized optimizer: function should return "
                                 f"subclass of Optimizer. Got {opt}.")
        else:
            raise ValueError(f"Unrecognized optimizer: should be string, subclass of "
                             f"Optimizer, instance of subclass of Optimizer or function "
                             f"with one argument. Got {optimizer}.")
        grads = opt.compute_gradients(loss, var_list=variables,
                                      colocate_gradients_with_ops=colocate_gradients_with_ops)
        grads = [(g, v) for g, v in grads if g is not None]
        if not grads:
            raise ValueError("Empty list of (gradient, variable) pairs encountered. This "
                             "is most likely to be caused by an improper value of "
                             "gradient_multipliers.")
        if gradient_noise_scale is not None:
            grads = [(g + random_ops.random_normal(array_ops.shape(g)) *
                      gradient_noise_scale, v) for g, v in grads]
        if gradient_multipliers is not None:
            grads = [(g * gradient_multipliers.get(v, gradient_multipliers.get(v.op.name,
                                                                                1.0)), v)
                     for g, v in grads]
        if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
            summary.scalar("global_norm/gradient_norm",
                           clip_ops.global_norm([g for g, _ in grads]))
        if isinstance(clip_gradients, (int, float)):
            clipped, _ = clip_ops.clip_by_global_norm([g for g, _ in grads],
                                                      float(clip_gradients))
            grads = list(zip(clipped, [v for _, v in grads], strict=True))
        elif callable(clip_gradients):
            grads = clip_gradients(grads)
        elif clip_gradients is not None:
            raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
        if "loss" in summaries:
            summary.scalar("loss", loss)
        update = opt.apply_gradients(
            grads, global_step=global_step if increment_global_step else None, name="train")
        with graph_lib.get_default_graph().control_dependencies([update]):
            return array_ops.identity(loss)
