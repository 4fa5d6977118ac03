"""`tf.train.SyncReplicasOptimizer`: synchronous training over between-graph replicas.

Every replica builds the same model in its own graph and process; the variables live on
parameter servers. Per variable there is one gradient accumulator on the variable's device,
shared by all replicas through `shared_name` (`<variable name>/grad_accum`), and one token
queue (`sync_token_q`) on the global step's device.

A replica's train op (returned by `apply_gradients`):
  1. applies its gradients to every accumulator, stamped with its `sync_rep_local_step`
     (a local variable, one per replica); an accumulator drops (and counts) a gradient whose
     stamp is older than the accumulator's own global step: it was computed from variables
     an update has replaced since;
  2. then dequeues a token, the value of the global step an update produced, and makes it
     its new local step, so the next gradients are stamped with the step they start from.

The chief additionally runs `sync_op` in a queue-runner thread (`get_chief_queue_runner`),
in a loop: take the mean of `replicas_to_aggregate` gradients from each accumulator (which
blocks until that many fresh ones are in, then advances the accumulator's step), apply them
with the wrapped optimizer (which increments the global step), and enqueue
`max(total_num_replicas, replicas_to_aggregate)` tokens holding the new global step.

With `total_num_replicas > replicas_to_aggregate` the extra replicas are backup workers: an
update goes ahead with the first gradients to arrive, and a straggler's gradient for that
step arrives stale and is dropped. A replica that dies costs nothing while at least
`replicas_to_aggregate` remain.

Start-up: `local_step_init_op` copies the global step into the local step (every replica,
after the global variables are ready: `ready_for_local_init_op`); the chief also runs
`chief_init_op` (which sets every accumulator's step to the global step) and
`get_init_tokens_op()` (tokens for the first step). `make_session_run_hook` does all of this
for a MonitoredSession.
"""

from __future__ import annotations

import logging
import threading
import time

from tensorflux.control_flow import builders
from tensorflux.framework import errors
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.operation import Tensor
from tensorflux.ops import array_ops, control_flow_ops, data_flow_ops, math_ops
from tensorflux.train import session_manager
from tensorflux.train.optimizer import WrappingOptimizer
from tensorflux.train.queue_runner import QueueRunner
from tensorflux.train.session_run_hook import SessionRunHook
from tensorflux.variables import variables

__all__ = ["SyncReplicasOptimizer"]

_log = logging.getLogger("tensorflux")


class SyncReplicasOptimizer(WrappingOptimizer):
    """Aggregates the gradients of several replicas and applies their mean once per step
    (`tf.train.SyncReplicasOptimizer`); see the module docstring for the protocol.

    Args:
      opt: the Optimizer that applies the aggregated gradients.
      replicas_to_aggregate: how many gradients each update averages.
      total_num_replicas: how many replicas run (default: `replicas_to_aggregate`); more
        than `replicas_to_aggregate` makes the rest backup workers.
      variable_averages: an optional ExponentialMovingAverage-like object whose
        `apply(variables_to_average)` runs after each update.
      variables_to_average: the variables `variable_averages` averages.
      use_locking, name: as for every Optimizer.

    Raises:
      ValueError: `replicas_to_aggregate` is not positive, or exceeds
        `total_num_replicas`.
    """

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None, use_locking=False,
                 name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        if replicas_to_aggregate < 1:
            raise ValueError("replicas_to_aggregate must be at least 1, got "
                             f"{replicas_to_aggregate}")
        # TensorFlow accepts more gradients per update than replicas (each replica then
        # contributes several, helped by extra initial tokens); tensorflux refuses it, as
        # issue 15 asks, since it is almost always a configuration mistake.
        if replicas_to_aggregate > total_num_replicas:
            raise ValueError(f"replicas_to_aggregate ({replicas_to_aggregate}) must not "
                             f"exceed total_num_replicas ({total_num_replicas})")
        super().__init__(use_locking, name)
        _log.info("SyncReplicas enabled: replicas_to_aggregate=%s; total_num_replicas=%s",
                  replicas_to_aggregate, total_num_replicas)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._gradients_applied = False
        self._global_step = None
        self._local_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list: list = []  # (accumulator, device)
        self.local_step_init_op = None
        self.chief_init_op = None
        self.ready_for_local_init_op = None

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's `compute_gradients`."""
        return self._opt.compute_gradients(*args, **kwargs)

    # ---- building the protocol ----------------------------------------------------------
    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Builds the accumulators, the token queue, the chief's `sync_op` and the init ops.

        Args:
          grads_and_vars: [(gradient, variable)] from `compute_gradients`.
          global_step: the global step variable (required: staleness is measured by it).
          name: unused (TensorFlow ignores it too).

        Returns:
          The replica's train op: the new local step, once the gradients are applied and a
          token has been dequeued.

        Raises:
          ValueError: no gradients, or no global step.
        """
        del name
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        g = graph_lib.get_default_graph()
        self._local_step = self._create_local_step(g, global_step)
        with g.colocate_with(self._local_step.handle):
            self.local_step_init_op = self._local_step.assign(global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = variables.report_uninitialized_variables(
            variables.global_variables())
        with graph_lib.name_scope(None, self._name):
            applies, aggregated = self._accumulate(g, grads_and_vars)
            with g.device(global_step.device), g.name_scope(None):
                train_op, sync_op = self._token_ops(g, aggregated, global_step, applies)
                self._chief_queue_runner = QueueRunner(self._sync_token_queue, [sync_op])
                # In no collection: no init or ready op of the caller's (a script's own
                # Scaffold local_init_op) needs to know of it; the chief's hook
                # initializes it on each new session.
                self._heartbeat = variables.Variable(
                    0, trainable=False, collections=[],
                    dtype=global_step.dtype.base_dtype, name="sync_chief_heartbeat")
                self._heartbeat_op = self._heartbeat.assign_add(1)
                self._heartbeat_value = self._heartbeat.read_value()
                self._close_tokens_op = self._sync_token_queue.close(
                    cancel_pending_enqueues=True)
            for accumulator, device in self._accumulator_list:
                with g.device(device):
                    chief_init_ops.append(accumulator.set_global_step(global_step,
                                                                      name="SetGlobalStep"))
            self.chief_init_op = builders.group(*chief_init_ops)
        self._gradients_applied = True
        return train_op

    def _create_local_step(self, g, global_step):
        # Colocated with an op of the replica's own device scope, so that a device function
        # sending variables to parameter servers leaves this one on the replica.
        anchor = control_flow_ops.no_op()
        with g.colocate_with(anchor):
            return variables.Variable(0, trainable=False,
                                      collections=[GraphKeys.LOCAL_VARIABLES],
                                      dtype=global_step.dtype.base_dtype,
                                      name="sync_rep_local_step")

    def _accumulate(self, g, grads_and_vars):
        """One accumulator per variable with a gradient: the replicas' apply ops and the
        (aggregate, variable) pairs the chief applies."""
        applies, aggregated = [], []
        for grad, var in grads_and_vars:
            if grad is None:
                aggregated.append((None, var))
                continue
            with g.device(var.device):
                shared = var.name + "/grad_accum"
                if isinstance(grad, Tensor):
                    acc = data_flow_ops.ConditionalAccumulator(
                        grad.dtype, shape=var.get_shape(), shared_name=shared)
                    applies.append(acc.apply_grad(grad, local_step=self._local_step))
                    aggregated.append((acc.take_grad(self._replicas_to_aggregate), var))
                elif isinstance(grad, IndexedSlices):
                    acc = data_flow_ops.SparseConditionalAccumulator(
                        grad.dtype, shape=var.get_shape(), shared_name=shared)
                    applies.append(acc.apply_indexed_slices_grad(
                        grad, local_step=self._local_step))
                    aggregated.append((acc.take_indexed_slices_grad(
                        self._replicas_to_aggregate), var))
                else:
                    raise ValueError(f"Unknown grad type! {type(grad).__name__}")
                self._accumulator_list.append((acc, var.device))
        return applies, aggregated

    def _token_ops(self, g, aggregated, global_step, applies):
        """(the replicas' train op, the chief's sync op), built on the global step's device."""
        update_op = self._opt.apply_gradients(aggregated, global_step)
        queue = data_flow_ops.FIFOQueue(-1, global_step.dtype.base_dtype, shapes=[()],
                                        name="sync_token_q", shared_name="sync_token_q")
        self._sync_token_queue = queue
        with g.control_dependencies(applies):
            token = queue.dequeue()
        with g.colocate_with(self._local_step.handle):
            train_op = self._local_step.assign(token)
        with g.control_dependencies([update_op]):
            tokens = array_ops.fill([self._tokens_per_step], global_step)
            sync_op = queue.enqueue_many((tokens,))
        if self._variable_averages is not None:
            with g.control_dependencies([sync_op]):
                sync_op = self._variable_averages.apply(self._variables_to_average)
        return train_op, sync_op

    # ---- what the chief and the replicas run --------------------------------------------
    def get_chief_queue_runner(self) -> QueueRunner:
        """The QueueRunner running `sync_op` (the chief starts its threads).

        Raises:
          ValueError: before `apply_gradients`.
        """
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens=-1):
        """The op that puts the first step's tokens in the token queue (the chief runs it).

        Args:
          num_tokens: how many (-1: `replicas_to_aggregate`); at least
            `replicas_to_aggregate - total_num_replicas`. 0 gives a NoOp.

        Returns:
          An Operation.

        Raises:
          ValueError: before `apply_gradients`, or too few tokens.
        """
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) "
                             f"vs {needed} (needed)")
        g = self._global_step.graph
        with g.as_default(), g.device(self._global_step.device), g.name_scope(None):
            if num_tokens <= 0:
                return control_flow_ops.no_op(name="no_init_tokens")
            tokens = array_ops.fill([num_tokens], self._global_step)
            return self._sync_token_queue.enqueue_many((tokens,))

    def num_dropped_gradients(self, name=None) -> Tensor:
        """An int64 scalar: the stale gradients the accumulators dropped, summed over them
        (a replica's stale step counts once per variable). A tensorflux extension:
        TensorFlow only logs the drops.

        Raises:
          ValueError: before `apply_gradients`.
        """
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        counts = [acc.num_dropped() for acc, _ in self._accumulator_list]
        return math_ops.add_n(counts, name=name or "num_dropped_gradients")

    def make_session_run_hook(self, is_chief, num_tokens=-1,
                              chief_timeout_secs: float = 60.0) -> SessionRunHook:
        """A hook that runs the local init (and, on the chief, `chief_init_op`, the init
        tokens and the chief queue runner) when a MonitoredSession creates its session."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens, chief_timeout_secs)



class _SyncReplicasOptimizerHook(SessionRunHook):
    """Runs SyncReplicasOptimizer's start-up ops on each new session, and watches the chief.

    The chief's death would otherwise leave every replica waiting for tokens forever (as in
    TensorFlow): the chief's session increments a heartbeat variable on the global step's
    device every second; each other replica reads it every second, and when it has not
    moved for `chief_timeout_secs` while the parameter server answers, the replica reports
    it: it logs an error, closes the token queue (so every replica blocked on a token is
    released) and stops its MonitoredSession with FailedPreconditionError naming the
    cause, raised when the session closes.
    """

    def __init__(self, sync_optimizer, is_chief, num_tokens, chief_timeout_secs=60.0):
        self._opt = sync_optimizer
        self._sync_optimizer = sync_optimizer  # TF's name for it (TF-GAN's tests read it)
        self._is_chief = is_chief
        self._num_tokens = num_tokens
        self._chief_timeout_secs = chief_timeout_secs

    def begin(self):
        opt = self._opt
        if not opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before "
                             "using the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None

    def after_create_session(self, session, coord):
        ok, msg = session_manager.check_ready(
            self._ready_for_local_init_op, session,
            "Model is not ready for SyncReplicasOptimizer local init.")
        if not ok:
            raise RuntimeError("Init operations did not make model ready for "
                               "SyncReplicasOptimizer local_init. Init op: "
                               f"{self._local_init_op.name}, error: {msg}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
        if self._is_chief:
            session.run(self._opt._heartbeat.initializer)
        watch = self._heartbeat if self._is_chief else self._watch_chief
        thread = threading.Thread(target=watch, args=(session, coord), daemon=True,
                                  name="sync-chief-heartbeat" if self._is_chief
                                  else "sync-chief-watchdog")
        coord.register_thread(thread)
        thread.start()

    _PERIOD_SECS = 1.0

    def _heartbeat(self, session, coord) -> None:
        while not coord.should_stop():
            try:
                session.run(self._opt._heartbeat_op)
            except Exception:  # noqa: BLE001 - a PS restart: the beats resume after it
                pass
            coord.wait_for_stop(self._PERIOD_SECS)

    def _watch_chief(self, session, coord) -> None:
        last, since = None, time.monotonic()
        while not coord.should_stop():
            try:
                beat = session.run(self._opt._heartbeat_value)
            except errors.FailedPreconditionError:
                beat = None  # not initialized: the chief has not started its session yet
            except Exception:  # noqa: BLE001 - the PS is away: not the chief's silence
                since = time.monotonic()
                coord.wait_for_stop(self._PERIOD_SECS)
                continue
            now = time.monotonic()
            if beat != last:
                last, since = beat, now
            elif now - since > self._chief_timeout_secs:
                msg = (f"SyncReplicasOptimizer: the chief has not been heard from for "
                       f"{now - since:.0f} s (its heartbeat on "
                       f"{self._opt._heartbeat.device or 'the global step device'} stopped "
                       "at " f"{beat}); synchronous training cannot go on without the chief "
                       "making the updates and handing out tokens. Closing the token queue.")
                _log.error(msg)
                coord.request_stop(errors.FailedPreconditionError(None, None, msg))
                try:
                    session.run(self._opt._close_tokens_op)
                except Exception:  # noqa: BLE001 - closed by another replica already
                    pass
                return
            coord.wait_for_stop(self._PERIOD_SECS)
