"""TF-GAN's last two steps: the train ops of a model and its losses (`gan_train_ops`) and
the loops that run them (`gan_train` with the hooks of `get_sequential_train_hooks` /
`get_joint_train_hooks`, or slim's Supervisor loop with `get_sequential_train_steps`).

`gan_train_ops` splits the UPDATE_OPS collection by the networks' scopes (an update op
outside both is an error unless `check_for_unused_update_ops=False`) and gives each
optimizer only its network's variables (`contrib.training.create_train_op`, to which the
other keywords go: `transform_grads_fn`, `summarize_gradients`, ...). The global step is
incremented by `global_step_inc_op` alone, once per GAN step: the generator and
discriminator updates leave it alone. `gan_train` runs `global_step_inc_op` in a
MonitoredTrainingSession whose hooks run the updates before each step (a
`RunTrainOpsHook` per kind of update).
"""

from __future__ import annotations

from tensorflux.contrib import slim_learning
from tensorflux.contrib.gan import namedtuples
from tensorflux.contrib.training_train import create_train_op
from tensorflux.contrib.training_train import train as training_train
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.train import session_run_hook
from tensorflux.train.global_step import get_or_create_global_step
from tensorflux.train.sync_replicas_optimizer import SyncReplicasOptimizer
from tensorflux.variables import init_ops, variable_scope

__all__ = ["RunTrainOpsHook", "gan_train", "gan_train_ops", "get_joint_train_hooks",
           "get_sequential_train_hooks", "get_sequential_train_steps"]


def _get_update_ops(kwargs: dict, gen_scope: str, dis_scope: str,
                    check_for_unused_ops: bool = True):
    """(generator update ops, discriminator update ops): those of `kwargs['update_ops']`
    (taken out of `kwargs`) or the UPDATE_OPS collection, split by scope.

    Raises:
      ValueError: `check_for_unused_ops` and an update op lies in neither scope.
    """
    if "update_ops" in kwargs:
        update_ops = set(kwargs.pop("update_ops"))
    else:
        update_ops = set(graph_lib.get_collection(GraphKeys.UPDATE_OPS))
    gen_ops = set(graph_lib.get_collection(GraphKeys.UPDATE_OPS, gen_scope))
    dis_ops = set(graph_lib.get_collection(GraphKeys.UPDATE_OPS, dis_scope))
    if check_for_unused_ops:
        unused = update_ops - gen_ops - dis_ops
        if unused:
            raise ValueError(f"There are unused update ops: {unused}")
    by_name = lambda op: op.name  # noqa: E731 - a stable order for the control edges
    return (sorted(gen_ops & update_ops, key=by_name),
            sorted(dis_ops & update_ops, key=by_name))


def _sync_step(optimizer, name: str, global_step, update_ops: list, hooks: list, is_chief):
    """For a SyncReplicasOptimizer: a dummy global step of its own, kept equal to the
    real one, and the optimizer's hook; None otherwise."""
    if not isinstance(optimizer, SyncReplicasOptimizer):
        return None
    step = variable_scope.get_variable(
        name, shape=[], dtype=global_step.dtype.base_dtype,
        initializer=init_ops.zeros_initializer(), trainable=False,
        collections=[GraphKeys.GLOBAL_VARIABLES])
    update_ops.append(step.assign(global_step))
    hooks.append(optimizer.make_session_run_hook(is_chief))
    return step


def _cyclegan_train_ops(model, loss, kwargs):
    with graph_lib.name_scope("cyclegan_x2y_train"):
        x2y = gan_train_ops(model.model_x2y, loss.loss_x2y, **kwargs)
    with graph_lib.name_scope("cyclegan_y2x_train"):
        y2x = gan_train_ops(model.model_y2x, loss.loss_y2x, **kwargs)
    return namedtuples.GANTrainOps(
        (x2y.generator_train_op, y2x.generator_train_op),
        (x2y.discriminator_train_op, y2x.discriminator_train_op),
        get_or_create_global_step().assign_add(1))


def gan_train_ops(model, loss, generator_optimizer, discriminator_optimizer,
                  check_for_unused_update_ops=True, is_chief=True, **kwargs):
    """A GANTrainOps: the generator's train op (its loss, its variables, its scope's
    update ops), the discriminator's, and the global step's increment. For a
    CycleGANModel, pairs of train ops (x2y, y2x).

    Args:
      model: a GANModel (or ACGAN/InfoGAN/CycleGAN model).
      loss: its GANLoss (CycleGANLoss).
      generator_optimizer, discriminator_optimizer: tf.train.Optimizers.
      check_for_unused_update_ops: raise if an update op is outside both scopes.
      is_chief: for SyncReplicasOptimizer's hooks.
      **kwargs: passed to `tf.contrib.training.create_train_op` for both (update_ops,
        transform_grads_fn, summarize_gradients, check_numerics, ...).

    Raises:
      ValueError: unused update ops (see above).
    """
    if isinstance(model, namedtuples.CycleGANModel):
        kwargs.update(generator_optimizer=generator_optimizer,
                      discriminator_optimizer=discriminator_optimizer,
                      check_for_unused_update_ops=check_for_unused_update_ops,
                      is_chief=is_chief)
        return _cyclegan_train_ops(model, loss, kwargs)
    global_step = get_or_create_global_step()
    global_step_inc = global_step.assign_add(1)
    gen_update_ops, dis_update_ops = _get_update_ops(
        kwargs, model.generator_scope.name, model.discriminator_scope.name,
        check_for_unused_update_ops)
    sync_hooks: list = []
    gen_step = _sync_step(generator_optimizer, "dummy_global_step_generator", global_step,
                          gen_update_ops, sync_hooks, is_chief)
    with graph_lib.name_scope("generator_train"):
        gen_train_op = create_train_op(
            total_loss=loss.generator_loss, optimizer=generator_optimizer,
            variables_to_train=model.generator_variables, global_step=gen_step,
            update_ops=gen_update_ops, **kwargs)
    dis_step = _sync_step(discriminator_optimizer, "dummy_global_step_discriminator",
                          global_step, dis_update_ops, sync_hooks, is_chief)
    with graph_lib.name_scope("discriminator_train"):
        dis_train_op = create_train_op(
            total_loss=loss.discriminator_loss, optimizer=discriminator_optimizer,
            variables_to_train=model.discriminator_variables, global_step=dis_step,
            update_ops=dis_update_ops, **kwargs)
    return namedtuples.GANTrainOps(gen_train_op, dis_train_op, global_step_inc, sync_hooks)


class RunTrainOpsHook(session_run_hook.SessionRunHook):
    """Runs `train_ops` (one op or a list run together) `train_steps` times before each
    step of the session it is attached to."""

    def __init__(self, train_ops, train_steps):
        if not isinstance(train_ops, (list, tuple)):
            train_ops = [train_ops]
        self._train_ops = train_ops
        self._train_steps = train_steps

    def before_run(self, run_context):
        for _ in range(self._train_steps):
            run_context.session.run(self._train_ops)


def get_sequential_train_hooks(train_steps=namedtuples.GANTrainSteps(1, 1)):
    """A function of a GANTrainOps returning hooks that run, before each step,
    `generator_train_steps` generator updates, then `discriminator_train_steps`
    discriminator updates (then the train ops' own hooks)."""
    def get_hooks(train_ops):
        return [RunTrainOpsHook(train_ops.generator_train_op,
                                train_steps.generator_train_steps),
                RunTrainOpsHook(train_ops.discriminator_train_op,
                                train_steps.discriminator_train_steps)
                ] + list(train_ops.train_hooks)
    return get_hooks


def _num_joint_steps(train_steps):
    g_steps = train_steps.generator_train_steps
    d_steps = train_steps.discriminator_train_steps
    joint = min(g_steps, d_steps)
    return joint, g_steps - joint, d_steps - joint


def get_joint_train_hooks(train_steps=namedtuples.GANTrainSteps(1, 1)):
    """Like `get_sequential_train_hooks`, but min(G, D) of the updates run generator and
    discriminator together in one session call, then the remaining generator-only, then
    discriminator-only ones: GANTrainSteps(3, 5) is 3 joint calls and 2 discriminator
    calls."""
    joint, g_only, d_only = _num_joint_steps(train_steps)

    def get_hooks(train_ops):
        g_op = train_ops.generator_train_op
        d_op = train_ops.discriminator_train_op
        return [RunTrainOpsHook([g_op, d_op], joint), RunTrainOpsHook(g_op, g_only),
                RunTrainOpsHook(d_op, d_only)] + list(train_ops.train_hooks)
    return get_hooks


def gan_train(train_ops, logdir, get_hooks_fn=get_sequential_train_hooks(), master="",
              is_chief=True, scaffold=None, hooks=None, chief_only_hooks=None,
              save_checkpoint_secs=600, save_summaries_steps=100, config=None):
    """`tf.contrib.training.train` of `train_ops.global_step_inc_op` with the hooks of
    `get_hooks_fn(train_ops)` after `hooks` (a StopAtStepHook there ends it); returns its
    result (the global step's value before the last increment)."""
    new_hooks = get_hooks_fn(train_ops)
    hooks = list(hooks) + list(new_hooks) if hooks is not None else new_hooks
    return training_train(
        train_ops.global_step_inc_op, logdir, master=master, is_chief=is_chief,
        scaffold=scaffold, hooks=hooks, chief_only_hooks=chief_only_hooks,
        save_checkpoint_secs=save_checkpoint_secs,
        save_summaries_steps=save_summaries_steps, config=config)


def get_sequential_train_steps(train_steps=namedtuples.GANTrainSteps(1, 1)):
    """A `train_step_fn` for `slim.learning.train` with a GANTrainOps as its train op:
    generator then discriminator updates (`slim.learning.train_step` each), the global
    step's increment, then `should_stop` read after it; returns (summed losses,
    should_stop)."""
    def sequential_train_steps(sess, train_ops, global_step, train_step_kwargs):
        should_stop_op, kwargs = None, train_step_kwargs
        if "should_stop" in train_step_kwargs:
            should_stop_op = train_step_kwargs["should_stop"]
            kwargs = {k: v for k, v in train_step_kwargs.items() if k != "should_stop"}
        gen_loss = 0
        for _ in range(train_steps.generator_train_steps):
            loss, _ = slim_learning.train_step(sess, train_ops.generator_train_op,
                                               global_step, kwargs)
            gen_loss += loss
        dis_loss = 0
        for _ in range(train_steps.discriminator_train_steps):
            loss, _ = slim_learning.train_step(sess, train_ops.discriminator_train_op,
                                               global_step, kwargs)
            dis_loss += loss
        sess.run(train_ops.global_step_inc_op)
        should_stop = sess.run(should_stop_op) if should_stop_op is not None else False
        return gen_loss + dis_loss, should_stop
    return sequential_train_steps
