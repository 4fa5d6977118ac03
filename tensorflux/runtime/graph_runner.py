"""GraphRunner: the executors of one partitioned graph, and one run of them.

What a local step (session._Step) and a graph registered on a worker task
(distributed/worker.py) have in common once their graph is partitioned per device: the
plan `exec_options.choose_strategies` makes, the executors it names, and a run that gives
every partition the step's id, arguments, cancellation and Rendezvous, runs them
concurrently (the one holding most fetches on the caller's thread), and returns the
fetched values in order.

Invariants of a run:
- Partitions of one run share one Rendezvous: a fresh LocalRendezvous, or the one the
  caller passes (a worker's per-step rendezvous, which reaches other tasks).
- When any partition fails, the Rendezvous is aborted and the step cancelled, so no
  partition waits for a value that will never come; the first error that is not such an
  abort is the one raised, annotated with the failing node.
- _Send/_Recv pairs whose two ends are both in the graph may be compiled away (merged
  partitions); a transfer with one end elsewhere (another task) always goes through the
  Rendezvous.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tensorflux.framework import errors
from tensorflux.kernels.registry import KernelContext
from tensorflux.runtime import exec_options as exec_options_lib
from tensorflux.runtime import gpu_graphs, static_executor, tracing
from tensorflux.runtime.cancellation import CancellationManager
from tensorflux.runtime.exec_options import ExecOptions
from tensorflux.runtime.executor import Executor, ExecutorError
from tensorflux.runtime.reference_executor import ReferenceExecutor
from tensorflux.runtime.rendezvous import LocalRendezvous, Rendezvous

_driver_pool = ThreadPoolExecutor(max_workers=256, thread_name_prefix="tfx-partition")


class GraphRunner:
    """Executors for partitions `(device, nodes, fetch pairs, fetch positions)`.

    Args:
      part_nodes: per partition, its Device, its nodes, the (node, output) pairs it fetches
        and the positions of those fetches in the step's fetch list.
      options: how the step runs (resolved ExecOptions).
      num_fetches: the length of the fetch list.
      graph: the user's Graph, to annotate errors with the ops' creation sites (or None).
      costs: the step's cost_model.StepCosts, for the plan (or None).
      orders: per partition, an order of the whole distributed step cut to it, or None
        (`exec_options.choose_strategies`).
      compile_later: a big compiled step may run its first run on the dataflow executor
        (`exec_options.compile_later`; local sessions ask for it, a worker's registered
        graphs do not).
    """

    def __init__(self, part_nodes: list[tuple], options: ExecOptions, num_fetches: int,
                 graph=None, costs=None, orders: list | None = None,
                 compile_later: bool = False):
        self._part_nodes = part_nodes
        self.num_fetches = num_fetches
        self.graph = graph
        self._options = options
        # How the step runs is decided in one place (exec_options.choose_strategies); a
        # traced run builds the same plan with traced kernels (`traced_parts`).
        self.plan = exec_options_lib.choose_strategies(
            [(device, nodes) for device, nodes, _, _ in part_nodes], options, costs,
            orders)
        # A big compiled step of a local session (`compile_later`) runs its first run on
        # the dataflow executor and is compiled at its second (exec_options.compile_later).
        self._compiled_plan = None
        self._warm = False
        self._tier_lock = threading.Lock()
        if compile_later and orders is None and exec_options_lib.compile_later(
                self.plan, [(device, nodes) for device, nodes, _, _ in part_nodes]):
            self._compiled_plan = self.plan
            self.plan = exec_options_lib.StepPlan(None, tuple(
                exec_options_lib.PartPlan("dataflow") for _ in part_nodes))
        self.parts = self._build(options, tracing.memory_wrapper)
        self._traced_parts = None
        self.needs_cancellation = any(not isinstance(ex, static_executor.StaticExecutor)
                                      for _, ex, _ in self.parts)
        # Steps on one GPU may run as CUDA graphs (runtime/gpu_graphs.py).
        self._gpu_graphs = gpu_graphs.for_runner(self)

    def _build(self, options: ExecOptions, wrapper_for, inline: bool = True) -> list:
        """(device, executor, fetch positions) per executor of `self.plan`, the partition
        holding most fetches first (it runs on the caller's thread). `wrapper_for(device)`
        gives the kernel wrapper of a device's kernels. A kernel factory refusing its node
        raises the annotated OpError, as a failing kernel does."""
        try:
            return self._build_parts(options, wrapper_for, inline)
        except ExecutorError as e:
            raise self._annotate(e) from None

    def _build_parts(self, options: ExecOptions, wrapper_for, inline: bool) -> list:
        inline = inline and options.inline_kernels
        if self.plan.merged_order is not None:
            # Every kernel already spreads over the cores the CPU devices share, so threads
            # of their own would only compete for them (and hand values over through the
            # GIL): the partitions run interleaved on one thread, in one order of the step,
            # each _Recv reading its _Send's value directly.
            parts = [self._merged(self.plan.merged_order, inline, wrapper_for)]
        else:
            parts = []
            for pp, (device, nodes, pairs, positions) in zip(self.plan.parts,
                                                              self._part_nodes, strict=True):
                wrapper = wrapper_for(device)
                if pp.kind == "static":
                    ex = static_executor.StaticExecutor(
                        nodes if pp.order is None else pp.order, device, pairs,
                        inline=inline, kernel_wrapper=wrapper, ordered=pp.order is not None)
                elif pp.kind == "reference":
                    ex = ReferenceExecutor(nodes, device, pairs, kernel_wrapper=wrapper)
                else:
                    ex = Executor(nodes, device, pairs, kernel_wrapper=wrapper,
                                  straight_line=options.straight_line,
                                  compile_loops=options.compile_loops)
                parts.append((device, ex, positions))
        parts.sort(key=lambda t: -len(t[2]))
        return parts

    def _merged(self, order, inline: bool, wrapper_for) -> tuple:
        """(device, executor, fetch positions) of the compiled partitions as one executor
        running `order` on the caller's thread (partition graphs, step statistics and errors
        still name each node's device)."""
        fetches = sorted((pos, pair) for _, _, pairs, positions in self._part_nodes
                         for pos, pair in zip(positions, pairs, strict=True))
        node_devices = {n: device for device, nodes, _, _ in self._part_nodes for n in nodes}
        wrappers = {d: wrapper_for(d) for d in set(node_devices.values())}
        first = self._part_nodes[0][0]
        ex = static_executor.StaticExecutor(
            order, first, [pair for _, pair in fetches], inline=inline,
            kernel_wrapper=lambda n, kdef, compute: wrappers[node_devices[n]](n, kdef, compute),
            ordered=True, node_devices=node_devices)
        return first, ex, [pos for pos, _ in fetches]

    def _tier_up(self) -> None:
        """A step whose compiled plan waits (`compile_later`): the first run goes on the
        dataflow executors built for it, the second builds the compiled ones and every run
        from then on takes them (a traced run too: its executors are built again)."""
        with self._tier_lock:
            if self._compiled_plan is None:
                return
            if not self._warm:
                self._warm = True
                return
            self.plan = self._compiled_plan
            parts = self._build(self._options, tracing.memory_wrapper)
            self.needs_cancellation = any(
                not isinstance(ex, static_executor.StaticExecutor) for _, ex, _ in parts)
            self._traced_parts = None
            self.parts = parts
            self._compiled_plan = None

    def traced_parts(self) -> list:
        """The executors of a traced run (built on the first one): the same plan as
        untraced runs, every kernel call wrapped to report to the step's
        StepStatsCollector (inlining off, so that every node is a call and recorded)."""
        if self._traced_parts is None:
            self._traced_parts = self._build(self._options, tracing.traced_wrapper,
                                             inline=False)
        return self._traced_parts

    def run(self, session, step_id: int, args: list, options, stats=None,
            rendezvous: Rendezvous | None = None,
            cancellation: CancellationManager | None = None) -> list:
        """Runs every partition once; returns the fetched values in fetch order.

        Args:
          session: what kernels see as `ctx.session` (registers blocking steps for close).
          step_id: the step's id (shared by every task of a distributed step).
          args: the feed values, by _Arg index.
          options: the RunOptions (or None); `timeout_in_ms` sets the deadline.
          stats: a StepStatsCollector for a traced run, or None.
          rendezvous: the step's Rendezvous (default: a fresh LocalRendezvous when there
            are several partitions).
          cancellation: cancels the step when started (default: one of its own when the
            step can block).

        Raises:
          OpError: the failing node's error, annotated with its node, op and device.
        """
        deadline = None
        if options is not None and options.timeout_in_ms > 0:
            deadline = time.monotonic() + options.timeout_in_ms / 1000.0
        if self._compiled_plan is not None:
            self._tier_up()
        parts = self.parts if stats is None else self.traced_parts()
        own = cancellation is None and (self.needs_cancellation or stats is not None
                                        or rendezvous is not None)
        if own:
            cancellation = CancellationManager()
        register = getattr(session, "_register_step", None)
        if cancellation is not None and register is not None:
            register(cancellation)
        try:
            if self._gpu_graphs is not None and stats is None and rendezvous is None:
                values = self._gpu_graphs.run(self, session, step_id, args, options, deadline,
                                              cancellation)
                _check_deadline(deadline)
                return values
            if len(parts) == 1 and rendezvous is None:
                device, ex, _ = parts[0]
                ctx = KernelContext(step_id, device, None, cancellation, args,
                                    device.runner, session, options)
                ctx.stats = stats
                with device.compute_scope():
                    values = ex.run(ctx, deadline)
                _check_deadline(deadline)
                return values if device.device_type == "CPU" else \
                    [device.to_host(v) for v in values]
            values = self._run_partitions(session, step_id, args, options, cancellation,
                                          deadline, parts, stats, rendezvous)
            _check_deadline(deadline)
            return values
        except ExecutorError as e:
            raise self._annotate(e) from None
        finally:
            if cancellation is not None and register is not None:
                session._deregister_step(cancellation)

    def _run_partitions(self, session, step_id, args, options, cancellation, deadline,
                        parts, stats, rendezvous):
        rendezvous = rendezvous if rendezvous is not None else LocalRendezvous()
        results = [None] * self.num_fetches
        failures: list[BaseException] = []
        lock = threading.Lock()
        aborted = errors.CancelledError(None, None, "Step aborted: another partition failed "
                                        "or the step was cancelled")
        aborted._abort_marker = True
        token = None
        if cancellation is not None:
            # A failing executor cancels the step while it still waits for its own
            # outstanding _Recvs; aborting the rendezvous completes them (and every other
            # partition's) at once, so no partition waits for a Send that never comes.
            # (Only while the step runs: a worker's rendezvous outlives the run, until
            # other tasks have received what it sent.)
            token = cancellation.get_token()
            if not cancellation.register(token, lambda: rendezvous.start_abort(aborted)):
                rendezvous.start_abort(aborted)

        def run_part(device, ex, positions):
            ctx = KernelContext(step_id, device, rendezvous, cancellation, args,
                                device.runner, session, options)
            ctx.stats = stats
            try:
                with device.compute_scope():
                    values = ex.run(ctx, deadline)
            except BaseException as e:  # noqa: BLE001 - surfaced below
                with lock:
                    failures.append(e)
                rendezvous.start_abort(aborted)
                if cancellation is not None:
                    cancellation.start_cancel()
                return
            if device.device_type != "CPU":
                values = [device.to_host(v) for v in values]
            for pos, v in zip(positions, values, strict=True):
                results[pos] = v

        futures = [_driver_pool.submit(run_part, *p) for p in parts[1:]]
        run_part(*parts[0])
        for f in futures:
            f.result()
        if token is not None:
            cancellation.deregister(token)
        if failures:
            original = [e for e in failures if not is_abort(e)]
            raise (original or failures)[0]
        return results

    def _annotate(self, e: ExecutorError) -> errors.OpError:
        node = e.node
        op = None
        if self.graph is not None:
            try:
                op = self.graph._get_operation_by_name_unsafe(node.name)
            except KeyError:
                op = None
        return errors.annotate(e.cause, node.name, node.op, e.device, node.traceback, op=op,
                               inputs=[f"{s.name}" if i == 0 else f"{s.name}:{i}"
                                       for s, i in node.inputs])


def _check_deadline(deadline: float | None) -> None:
    """A step that ran past its deadline fails even when its last kernel finished: as
    TensorFlow's, whose caller stops waiting at the deadline, the values are not returned
    (the step's effects stay, as they do there)."""
    if deadline is not None and time.monotonic() > deadline:
        raise errors.DeadlineExceededError(
            None, None, "Timed out waiting for notification: the step ran past its "
            "RunOptions.timeout_in_ms")


def is_abort(e: BaseException) -> bool:
    """True for the error a partition reports because another one failed first."""
    cause = e.cause if isinstance(e, ExecutorError) else e
    return getattr(cause, "_abort_marker", False)
