"""How a step runs: `ExecOptions`, and the one function that chooses (DESIGN §5).

A session holds one `ExecOptions`, built from its ConfigProto (`ExecOptions.from_config`)
or passed explicitly by tests and benchmarks (`tf.Session(config=..., exec_options=...)`).
For every step `choose_strategies` maps the step's partitions and those options to a
`StepPlan`; `graph_runner.GraphRunner` (a local step, a worker's registered graph) builds
exactly what the plan says. A traced run (RunOptions.trace_level) follows the same plan,
only with every kernel wrapped by `tracing.traced_wrapper` and inlining off, so a timeline
profiles the path untraced runs take. Nothing else in the runtime picks a strategy, and no
module holds a switch.

The strategies, from plainest to fastest:

  "reference"  reference_executor.ReferenceExecutor: frames, iterations and dead values,
               one node at a time, no fast path. The specification; tests compare every
               other strategy with it. Each partition runs on a thread of its own.
  "dataflow"   executor.Executor: pending counts, the device's thread pool for expensive
               kernels, asynchronous kernels; cheap loop frames compiled to one `while`
               (`compile_loops`) and single-frame partitions with asynchronous kernels
               run in a fixed order while nothing waits (`straight_line`).
  "static"     static_executor.StaticExecutor: one generated straight-line function per
               partition. Not for control-flow ops or asynchronous kernels (but _Recv, as a
               blocking call, when every partition of the step qualifies).

`strategy="auto"` (the default) takes "static" where a partition qualifies and "dataflow"
elsewhere. A step whose partitions all qualify (with blocking _Recvs) and have an order of
the whole step (`static_executor.step_order`) runs compiled: merged into one function on
the caller's thread when all its devices are CPUs sharing the cores, else one compiled
partition per thread in orders cut from that one order (which cannot deadlock).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tensorflux.kernels import intra_op
from tensorflux.runtime import codegen, static_executor
from tensorflux.runtime.step_graph import Node

STRATEGIES = ("auto", "reference", "dataflow")


@dataclass(frozen=True, slots=True)
class ExecOptions:
    """Explicit knobs for how a session runs its steps.

    Attributes:
      strategy: "auto" (static where a partition qualifies, else dataflow), "dataflow"
        (the dataflow executor everywhere) or "reference" (the reference executor
        everywhere); see the module docstring.
      inline_kernels: the static path emits kernels with an inline template (Identity,
        NoOp) as expressions instead of calls (off: every node is a call).
      straight_line: the dataflow executor runs qualifying partitions in a fixed order.
      compile_loops: the dataflow executor runs cheap loop frames as one `while`.
      cpu_devices_share_cores: CPU partitions run merged on one thread (every kernel
        already spreads over the cores). None: from the ConfigProto
        (`intra_op_parallelism_threads == 1`, or TF_NUM_INTRAOP_THREADS=1, means each
        kernel keeps to one core, so they do not share and run side by side).
      max_tensor_bytes: the resource guard's bound on one tensor that a kernel builds from
        a few input values (a large splat Const, Fill, Tile, BroadcastTo, Range, Pad,
        OneHot, the random ops' shapes): a larger one fails the step with
        ResourceExhaustedError before anything is allocated. None: the process default
        (half the physical memory; `tensor_util.set_max_expanded_bytes`). TensorFlow's
        ConfigProto has no host-memory field for it (framework/resource_guard.py).
    """

    strategy: str = "auto"
    inline_kernels: bool = True
    straight_line: bool = True
    compile_loops: bool = True
    cpu_devices_share_cores: bool | None = None
    max_tensor_bytes: int | None = None

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise ValueError(f"ExecOptions.strategy must be one of {STRATEGIES}, got "
                             f"{self.strategy!r}")

    @classmethod
    def from_config(cls, config, base: ExecOptions | None = None) -> ExecOptions:
        """`base` (default: the defaults) with what is left open filled from `config`
        (a ConfigProto or None)."""
        options = base if base is not None else cls()
        if options.cpu_devices_share_cores is None:
            shared = intra_op.requested_intra_op_threads(config) != 1
            options = replace(options, cpu_devices_share_cores=shared)
        return options


@dataclass(frozen=True, slots=True)
class PartPlan:
    """How one partition runs: `kind` "reference", "dataflow" or "static"; `order`, for a
    static partition of a multi-partition step, the order cut from the step's order."""

    kind: str
    order: list[Node] | None = None


@dataclass(frozen=True, slots=True)
class StepPlan:
    """The strategy of a step: either `merged_order` (every partition compiled into one
    function on the caller's thread, in that order) or one PartPlan per partition."""

    merged_order: list[Node] | None
    parts: tuple[PartPlan, ...]


def choose_strategies(partitions: list[tuple[object, list[Node]]],
                      options: ExecOptions) -> StepPlan:
    """The one place that decides how a step runs.

    Args:
      partitions: (Device, nodes) of each partition of the step.
      options: the session's ExecOptions (resolved: `from_config` was applied).

    Returns:
      A StepPlan: merged, or one PartPlan per partition in the order given.
    """
    if options.strategy != "auto":
        return StepPlan(None, tuple(PartPlan(options.strategy) for _ in partitions))
    sent = {codegen.transfer_key(n) for _, nodes in partitions for n in nodes
            if n.op == "_Send"}
    if len(partitions) > 1 and all(
            static_executor.eligible(nodes, device.device_type, blocking_recv=True,
                                     sent=sent)
            for device, nodes in partitions):
        order = static_executor.step_order([nodes for _, nodes in partitions])
        if order is not None:
            if options.cpu_devices_share_cores and all(
                    device.device_type == "CPU" for device, _ in partitions):
                return StepPlan(order, ())
            orders = static_executor.partition_orders([n for _, n in partitions], order)
            return StepPlan(None, tuple(PartPlan("static", o) for o in orders))
    return StepPlan(None, tuple(
        PartPlan("static" if static_executor.eligible(nodes, device.device_type)
                 else "dataflow") for device, nodes in partitions))
