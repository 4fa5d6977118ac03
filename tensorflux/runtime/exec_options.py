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
elsewhere, but for partitions with independent heavy kernels (`side_by_side`, below). A step
whose partitions all qualify (with blocking _Recvs) and have an order of the whole step
(`static_executor.step_order`) runs compiled: merged into one function on the caller's
thread when all its devices are CPUs sharing the cores, else one compiled partition per
thread in orders cut from that one order (which cannot deadlock).

Independent heavy kernels. A compiled partition runs one kernel after another; TensorFlow's
executor runs independent kernels side by side on its inter-op threads. A partition with
two heavy kernels neither of which waits for the other runs on the dataflow executor,
whose expensive kernels go to the device's inter-op pool when other work is ready (its
bookkeeping, microseconds a node, is noise next to milliseconds a kernel), and kernels
running side by side each split over the intra-op threads as planned alone (kernels/
intra_op.py `workers`; the C pool serves several splits at once: beside a competing
process more runnable threads get more of the cores, and a plan that does not depend on
the moment keeps the bits):
  - with one intra-op thread (`intra_op_parallelism_threads=1`: every kernel keeps to one
    core), for kernels of `HEAVY_MICROS` or more by the cost model (about 5e7 FLOP): the
    other cores would idle otherwise (1024^3 MatMul chains: 2x);
  - otherwise, for products (`define_op(..., flops="matmul")`) of `HEAVY_PRODUCT_MICROS`
    or more (about 2e8 FLOP): two products side by side beat one product split over both
    cores after the other, whose pieces repack their operands (a 1024^3 sgemm split in two
    took +17-25% CPU for a 1.4x speed-up; BENCHMARKS.md, "MatMul chains and the BLAS
    kernel"), but only where such products are at least `PRODUCT_SHARE` of the cost of
    the kernels that split (the `expensive` ones): on the dataflow executor every expensive
    kernel that finds other work ready goes to the inter-op pool, so the heavier splits
    (convolutions) would run side by side too, 4 threads on 2 cores, for a gain on the
    products alone (a DCGAN discriminator on fake and real images, two independent 0.8
    GFLOP products beside 5 GFLOP convolutions: 6-12% more CPU for its step, twice the
    context switches, no faster).
    Other kernels split without that cost and keep the compiled path.
Partitions without such a pair (small-op graphs, the MLP's products) keep the compiled
path. `concurrent_kernels=False` turns this off.

A big compiled step of a local session runs its first run on the dataflow executor and is
compiled at its second (`compile_later`, from COMPILE_LATER_NODES nodes): compiling costs
~20 us a node, several times what the dataflow executor needs to set up and run once, so a
big step run once (an initializer, an evaluation, a first run) is done sooner.

A partition of a distributed step may come with an order of the whole step cut to it
(`orders`, from the master, which sees every task's partitions): it then runs compiled in
that order, blocking in its _Recvs from other tasks, which cannot deadlock for the reason
`static_executor.partition_orders` gives.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tensorflux.framework import op_registry
from tensorflux.kernels import intra_op
from tensorflux.kernels import registry as kernel_registry
from tensorflux.runtime import codegen, static_executor
from tensorflux.runtime.step_graph import Node, topological_order

STRATEGIES = ("auto", "reference", "dataflow")
# A compiled step of this many nodes or more runs its first run on the dataflow executor
# (`compile_later`).
COMPILE_LATER_NODES = 1500
HEAVY_MICROS = 1000.0  # the cost model's estimate of a kernel worth running beside another
HEAVY_PRODUCT_MICROS = 4000.0  # ... of a product, when kernels split over the cores
# ... and then only where such products are at least this share of the estimated cost of
# the group's expensive kernels (see the module docstring)
PRODUCT_SHARE = 0.5


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
      concurrent_kernels: a partition with independent heavy kernels runs on the dataflow
        executor, which runs them side by side (`side_by_side`).
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
    concurrent_kernels: bool = True
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
                      options: ExecOptions, costs=None, orders: list | None = None
                      ) -> StepPlan:
    """The one place that decides how a step runs.

    Args:
      partitions: (Device, nodes) of each partition of the step.
      options: the session's ExecOptions (resolved: `from_config` was applied).
      costs: the step's `cost_model.StepCosts` (None: no independent heavy kernels are
        looked for).
      orders: per partition, its nodes in an order of the whole distributed step, or None
        (a worker's registered graph, see the module docstring).

    Returns:
      A StepPlan: merged, or one PartPlan per partition in the order given.
    """
    if options.strategy != "auto":
        return StepPlan(None, tuple(PartPlan(options.strategy) for _ in partitions))
    if orders is not None:
        return StepPlan(None, tuple(
            PartPlan("static", order) if order is not None and static_executor.eligible(
                nodes, device.device_type, blocking_recv=True)
            else PartPlan("static" if static_executor.eligible(nodes, device.device_type)
                          else "dataflow")
            for (device, nodes), order in zip(partitions, orders, strict=True)))
    if options.concurrent_kernels and costs is not None:
        side = side_by_side(partitions, costs, bool(options.cpu_devices_share_cores))
        if side:  # the rest as when not every partition qualifies (below)
            return StepPlan(None, tuple(
                PartPlan("static" if k not in side and static_executor.eligible(
                    nodes, device.device_type) else "dataflow")
                for k, (device, nodes) in enumerate(partitions)))
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
    # A partition whose _Recvs all come from partitions that receive nothing (the feeds,
    # a queue's dequeue on the host) may wait in them: nothing it sends can be what they
    # wait for.
    producers = {codegen.transfer_key(n) for _, nodes in partitions
                 if not any(m.op == "_Recv" for m in nodes)
                 for n in nodes if n.op == "_Send"}
    return StepPlan(None, tuple(
        PartPlan("static" if static_executor.eligible(nodes, device.device_type) or (
            len(partitions) > 1 and static_executor.eligible(
                nodes, device.device_type, blocking_recv=True, sent=producers))
            else "dataflow") for device, nodes in partitions))



def side_by_side(partitions: list[tuple[object, list[Node]]], costs,
                 kernels_split: bool) -> set[int]:
    """The indices of the partitions that have two heavy kernels (by `costs`; products
    only, and heavier, when `kernels_split` over the cores, and then only in a group whose
    heavy products are at least PRODUCT_SHARE of its expensive kernels' cost: see the
    module docstring) that can run at once, neither depending on the other through data,
    control or _Send -> _Recv edges of the step, on a CPU device with an inter-op pool."""
    # Kernels of one group run one after another when compiled: a partition's; with
    # `kernels_split`, every CPU partition's (they run merged on one thread).
    heavy: dict[Node, tuple[int, int]] = {}  # node -> (group, bit)
    groups: dict[int, set[int]] = {}
    shares: dict[int, list[float]] = {}  # group -> [heavy products', all split kernels' cost]
    for k, (device, nodes) in enumerate(partitions):
        if device.device_type != "CPU" or not getattr(device, "num_threads", 0):
            continue
        group = 0 if kernels_split else k
        groups.setdefault(group, set()).add(k)
        share = shares.setdefault(group, [0.0, 0.0])
        for n in nodes:
            if _heavy(n, device.device_type, costs, kernels_split):
                heavy[n] = (group, len(heavy))
                share[0] += costs.compute_micros(n, device.device_type)
            if kernels_split:
                share[1] += _split_cost(n, device.device_type, costs)
    if kernels_split:  # products that are a small part of the work: the splits win
        heavy = {n: gb for n, gb in heavy.items()
                 if shares[gb[0]][0] >= PRODUCT_SHARE * shares[gb[0]][1]}
    if len(heavy) < 2:
        return set()
    nodes = [n for _, p in partitions for n in p]
    sends = {codegen.transfer_key(n): n for n in nodes if n.op == "_Send"}
    extra = {n: [sends[codegen.transfer_key(n)]] for n in nodes
             if n.op == "_Recv" and codegen.transfer_key(n) in sends}
    order, acyclic = topological_order(nodes, extra_inputs=extra)
    if not acyclic:
        return set()
    # Each node's heavy ancestors (itself included) as a bit set, in topological order: a
    # heavy node that misses one of the heavy nodes of its group ordered before it does
    # not depend on that one (nor can that one depend on it, coming first).
    seen: dict[Node, int] = {}
    earlier: dict[int, int] = {}  # group -> bits of its heavy nodes ordered so far
    found: set[int] = set()
    for n in order:
        bits = 0
        for src in [s for s, _ in n.inputs] + n.control_inputs + extra.get(n, []):
            bits |= seen.get(src, 0)
        if n in heavy:
            k, bit = heavy[n]
            before = earlier.get(k, 0)
            if bits & before != before:
                found |= groups[k]
            earlier[k] = before | 1 << bit
            bits |= 1 << bit
        seen[n] = bits
    return found


def _split_cost(node: Node, device_type: str, costs) -> float:
    """The cost model's estimate of `node` when its kernel is an expensive one (a kernel
    that splits over the intra-op threads), else 0."""
    kdef = kernel_registry.find_kernel(node.op, device_type, node.attrs)
    if kdef is None or not kdef.expensive:
        return 0.0
    return costs.compute_micros(node, device_type)


def _heavy(node: Node, device_type: str, costs, kernels_split: bool) -> bool:
    kdef = kernel_registry.find_kernel(node.op, device_type, node.attrs)
    if kdef is None or not kdef.expensive:
        return False
    if not kernels_split:
        return costs.compute_micros(node, device_type) >= HEAVY_MICROS
    opdef = op_registry.lookup(node.op)
    return opdef is not None and (opdef.flops or "").partition(":")[0] == "matmul" and \
        costs.compute_micros(node, device_type) >= HEAVY_PRODUCT_MICROS


def compile_later(plan: StepPlan, partitions: list[tuple[object, list[Node]]]) -> bool:
    """Whether a step planned as `plan` runs its first run on the dataflow executor and is
    compiled at its second: a step of CPU partitions, at least one of them compiled, of
    COMPILE_LATER_NODES nodes or more. Compiling costs ~20 us a node (the generated source,
    then Python's compiler: 7,000 statements take ~70 ms), several times what the dataflow
    executor needs to set itself up and run once, so a big step run once (a big model's
    initializer, an evaluation at the end, a benchmark's first run) is done sooner, while a
    step run again gets the compiled path from its second run on. Both paths run the same
    kernels and give the same values."""
    if plan.merged_order is None and not any(p.kind == "static" for p in plan.parts):
        return False
    if any(device.device_type != "CPU" for device, _ in partitions):
        return False
    return sum(len(nodes) for _, nodes in partitions) >= COMPILE_LATER_NODES
