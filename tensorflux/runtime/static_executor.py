"""The static fast path: a partition without control flow or asynchronous kernels, compiled
into one straight-line Python function (DESIGN §5).

For a cached step, dataflow order is fixed, so the executor's per-node bookkeeping (pending
counts, ready queue) can be done once, at build time: nodes are sorted topologically and
emitted as one statement each,

    v12 = k12(ctx, v7, c3)        # a kernel call; c3 is a Const's value
    v13 = v12                     # Identity, from its kernel's inline template
    del v7                        # v7's last consumer has run

Values live in local variables and are released (`del`) right after their last use. A kernel
failure is mapped back to its node through the line number in the traceback, so the
function carries no per-node bookkeeping at all. The statements, the liveness and the
line -> node map are codegen.py's (shared with compiled loops); this module owns which
partitions qualify (`eligible`) and the orders they run in (`step_order`,
`partition_orders`). Results must equal the dataflow executor's; tests run both on the
same graphs.

Chosen by exec_options.choose_strategies (strategy "auto") for partitions that qualify
(`eligible`). Not supported: control-flow ops, asynchronous kernels (but _Recv, as a blocking
call, when every partition of the step qualifies), expensive kernels in parallel.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Iterable

import numpy as np

from tensorflux.framework import errors, op_registry
from tensorflux.framework.rendezvous_key import create_key
from tensorflux.kernels import buffers
from tensorflux.kernels import registry as kernel_registry
from tensorflux.kernels.registry import KernelContext
from tensorflux.runtime import codegen
from tensorflux.runtime.frame_analysis import is_control_flow
from tensorflux.runtime.step_graph import Node, topological_order


def eligible(nodes: Iterable[Node], device_type: str, blocking_recv: bool = False,
             sent: set | None = None) -> bool:
    """True when every node has a synchronous kernel and none is a control-flow op.

    (Without control-flow ops a partition is acyclic: only NextIteration edges close loops.)
    With `blocking_recv`, _Recv is allowed too, for steps whose partitions all qualify (so
    no dead value can cross): they then run merged on one thread, or each on a thread of
    its own waiting in `_blocking_recv`, in orders from `step_order`, but only a _Recv
    whose _Send is in the step (its transfer key in `sent`): an order that blocks on a
    value from another task could wait for a value that task needs from this one.
    """
    for n in nodes:
        if is_control_flow(n.op):
            return False
        if blocking_recv and n.op == "_Recv" and (sent is None
                                                  or codegen.transfer_key(n) in sent):
            continue
        kdef = kernel_registry.find_kernel(n.op, device_type, n.attrs)
        if kdef is None or kdef.is_async:
            return False
    return True


class StaticExecutor:
    """Runs one partition through a generated function; same interface as `Executor`."""

    def __init__(self, nodes: list[Node], device, fetches: list[tuple[Node, int]],
                 inline: bool = True, kernel_wrapper=None, ordered: bool = False,
                 node_devices: dict | None = None):
        """With `ordered`, `nodes` run in the order given (`step_order`, `partition_orders`),
        else in a topological order computed here. With `node_devices` (node -> Device)
        `nodes` are the partitions of a whole step, merged: each kernel runs with its own
        device's context, and a _Recv takes its _Send's value."""
        self.device = device
        self.devices = [] if node_devices is None else list(dict.fromkeys(
            node_devices.values()))
        self._node_devices = node_devices
        if ordered:
            order = nodes
        else:
            order, acyclic = topological_order(nodes, rank=_shape_only_first(nodes))
            if not acyclic:
                raise ValueError("StaticExecutor needs an acyclic partition")
        ctx_names = None if node_devices is None else {
            n: f"c{self.devices.index(d)}" for n, d in node_devices.items()}
        device_of = (lambda n: device) if node_devices is None else node_devices.__getitem__
        self._fn, self.source, self._filename, self._line_nodes = _generate(
            order, device.device_type, fetches, inline, kernel_wrapper, ctx_names, device_of)
        self._holds = "_flush(ctx)" in self.source

    def run(self, ctx, deadline: float | None = None) -> list:
        ctx.deadline = deadline
        if self._node_devices is not None:  # merged partitions: a context per device
            ctx = tuple(ctx if d is self.device else _device_context(ctx, d)
                        for d in self.devices)
        try:
            return self._fn(ctx, ctx[0].args if self._node_devices is not None else ctx.args)
        except Exception as e:  # noqa: BLE001 - re-raised with the failing node attached
            if self._holds:
                _flush_quietly(ctx)
            mapped = codegen.node_error(e, self._filename, self._line_nodes, self._device_of)
            if mapped is None:
                raise
            raise mapped from None

    def _device_of(self, node: Node) -> str:
        if self._node_devices is None:
            return self.device.name
        return self._node_devices[node].name


def _flush_quietly(ctx) -> None:
    """A failed step's held pushes are sent all the same (their consumer drops them with
    the step, handing back their shared memory); a failure to send them is not the
    step's first error."""
    try:
        ctx.rendezvous.flush_sends()
    except errors.OpError:
        pass


def _device_context(ctx: KernelContext, device) -> KernelContext:
    """Merged partitions: the step's context for another of its devices."""
    other = KernelContext(ctx.step_id, device, ctx.rendezvous, ctx.cancellation, ctx.args,
                          device.runner, ctx.session, ctx.options)
    other.stats, other.deadline = ctx.stats, ctx.deadline
    return other


def step_order(partitions: list[list[Node]], recvs_as_sent: bool = False
               ) -> list[Node] | None:
    """One topological order of the whole step whose partitions are given, with an edge
    from every _Send to its _Recv; None if the partitions form a cycle. Of the nodes ready,
    each _Send comes as soon as its value exists, then the work that leads to a _Send
    (another device waits for it), then the rest, and a _Recv only when nothing else is
    ready. With `recvs_as_sent`, _Recvs ready together come in the order of their _Sends
    (for partitions that run on threads or tasks of their own, blocking in their _Recvs: a
    partition takes its tensors as they come, e.g. a parameter server applies each gradient
    as it arrives instead of waiting first for the one computed last)."""
    nodes = [n for p in partitions for n in p]
    sends = {codegen.transfer_key(n): n for n in nodes if n.op == "_Send"}
    extra = {n: [sends[codegen.transfer_key(n)]] for n in nodes
             if n.op == "_Recv" and codegen.transfer_key(n) in sends}
    rank: dict[Node, float] = {}
    for p in partitions:
        rank.update(_transfer_ranks(p))
    rank.update(_shape_only_first(nodes))
    order, acyclic = topological_order(nodes, rank=rank, extra_inputs=extra)
    if acyclic and recvs_as_sent:
        position = {n: k for k, n in enumerate(order)}
        for recv, (send,) in extra.items():
            rank[recv] = 3 + position[send] / len(order)
        order, acyclic = topological_order(nodes, rank=rank, extra_inputs=extra)
    return order if acyclic else None


def partition_orders(partitions: list[list[Node]], order: list[Node]) -> list[list[Node]]:
    """The run order of each partition when each runs on its own thread, blocking on its
    _Recvs: `order` (`step_order`) restricted to the partition. So the partitions cannot
    deadlock: of the nodes they wait at, the earliest in `order` always has its inputs."""
    position = {n: k for k, n in enumerate(order)}
    return [sorted(p, key=position.__getitem__) for p in partitions]


def _shape_only_first(nodes: list[Node]) -> dict[Node, int]:
    """Ranks that run each op reading only its inputs' shapes (`define_op(...,
    shape_only=True)`: Shape, Size, Rank) as soon as it is ready. Topological order by id
    alone puts a gradient's Shape of a forward activation in the backward pass, keeping the
    activation alive (and resident) until then; run at once, it lets the activation go
    after its last real reader.

    So do the step's sinks: nodes with data inputs whose outputs no node reads (an
    optimizer's apply ops, assigns). Ordered by id they wait for the whole backward pass
    (they are created last), keeping every gradient alive to the step's end (the LSTM LM's
    20 MiB softmax weight gradient across the recurrent backprop, Adam's temporaries);
    run when ready, they free it at once, as TensorFlow's executor does."""
    read = {src for n in nodes for src, _ in n.inputs}
    rank = {}
    for n in nodes:
        opdef = op_registry.lookup(n.op)
        if opdef is not None and opdef.shape_only:
            rank[n] = -1
        elif n.inputs and n not in read and n.op not in ("_Send", "_HostSend"):
            rank[n] = -1
    return rank


def _transfer_ranks(nodes: list[Node]) -> dict[Node, int]:
    """Ranks for the schedule of one partition (see `step_order`)."""
    sends = [n for n in nodes if n.op == "_Send"]
    inside = set(nodes)
    rank = {n: 2 for n in nodes}
    stack = list(sends)
    while stack:
        n = stack.pop()
        for src in [s for s, _ in n.inputs] + n.control_inputs:
            if src in inside and rank[src] == 2:
                rank[src] = 1
                stack.append(src)
    for n in nodes:
        if n.op == "_Send":
            rank[n] = 0
        elif n.op == "_Recv":
            rank[n] = 3
    return rank


def _blocking_recv(node: Node):
    """A _Recv as a synchronous call: waits on the step's rendezvous until the value comes,
    the step's deadline passes (DeadlineExceededError) or the rendezvous is aborted (the
    abort's error: another partition failed or the step was cancelled)."""
    a = node.attrs
    key = create_key(a["send_device"], a["send_device_incarnation"], a["recv_device"],
                     a["tensor_name"])

    def compute(ctx):
        timeout = None
        if ctx.deadline is not None:
            timeout = max(0.0, ctx.deadline - time.monotonic())
        value, is_dead = ctx.rendezvous.recv(key, timeout)
        if is_dead:
            raise errors.InternalError(None, None, f"{node.name} received a dead tensor in "
                                       "a partition without control flow")
        return ctx.device.accept(value)

    return compute


def _generate(order: list[Node], device_type: str, fetches, inline: bool = True,
              kernel_wrapper=None, ctx_names: dict[Node, str] | None = None,
              device_of=None):
    """The step function, its source, filename and line number -> node (codegen.Emitter).

    With `inline` false every node is a kernel call, merged transfers too (for measuring
    per-kernel dispatch and for traced runs; the results are the same). With `ctx_names`
    (merged partitions) the step gets a tuple of contexts and node n's kernel is called with
    `ctx_names[n]`. With `device_of` (node -> Device), device-constant kernels (a
    VarHandleOp) are computed once, here."""
    hints = _pushed_outputs(order, fetches)
    if hints:
        kernel_wrapper = _hinting(hints, kernel_wrapper)
    mode = os.environ.get(_HOLD_ENV, "stateless").strip().lower()
    runs = _runs_while_held(mode)
    held = _held_sends(order, runs) if ctx_names is None and mode not in (
        "0", "false", "no", "off") else set()
    if held:
        kernel_wrapper = _holding(held, kernel_wrapper)
    em = codegen.Emitter(device_type, kernel_wrapper, inline, merged=ctx_names is not None,
                         factories={"_Recv": _blocking_recv}, device_of=device_of)
    if inline:
        em.memo = _memo_nodes(order, fetches)
    em.add("def step(ctx, args):", 0)
    em.received = {codegen.transfer_key(n) for n in order if n.op == "_Recv"}
    if ctx_names is not None:
        contexts = sorted(set(ctx_names.values()), key=lambda c: int(c[1:]))
        em.add(f"{', '.join(contexts)}, = ctx")
    statements = []
    for n in order:
        st = em.statement(n, "ctx" if ctx_names is None else ctx_names[n])
        if st is not None:
            statements.append(st)
    if held:
        em.env["_flush"] = _flush
        statements = _with_flushes(statements, held, runs)
    results = [em.names[f] for f in fetches]
    em.add_straight(statements, keep=set(results))
    em.add("return [" + ", ".join(results) + "]")
    fn, source, filename = em.compile("step", "step")
    return fn, source, filename, em.line_nodes


def _memo_nodes(order: list[Node], fetches) -> set[Node]:
    """The nodes whose kernels the step may memoize (codegen.Emitter.memo): Shape, Size
    and Rank, and the stateless nodes reading only those nodes' outputs and Consts (a
    dynamic batch's shape arithmetic, and constant expressions that folding left because
    they wait on control inputs; a Const counts when its value is an array, which the step
    holds as one object); not fetched ones (a fetch gets a fresh array)."""
    fetched = {n for n, _ in fetches}
    memo: set[Node] = set()
    for n in order:
        opdef = op_registry.lookup(n.op)
        if n in fetched or not n.output_dtypes or opdef is None or opdef.is_stateful or \
                opdef.control_flow or opdef.keep_identity:
            continue
        if n.op in codegen.SHAPE_OPS:
            if len(n.inputs) == 1:
                memo.add(n)
            continue
        if n.inputs and all(src in memo or (src.op == "Const" and isinstance(
                src.attrs.get("value"), np.ndarray)) for src, _ in n.inputs):
            memo.add(n)
    return memo


# Kernels whose output may be allocated where the executor offers (buffers.empty_output).
_OUTPUT_HINT_OPS = frozenset(("MatMul", "_FusedMatMul"))
_PUSH_ATTR = "_tfx_push"  # distributed/push.py's PUSH_ATTR: the _Send's tensor is pushed


def _pushed_outputs(order: list[Node], fetches) -> dict[Node, str]:
    """node -> the receiving device, for the nodes (of `_OUTPUT_HINT_OPS`) whose one output
    has one consumer, through Identities that each have one too, and that consumer is a
    pushed _Send (to another task): such an output may be allocated in the push
    connection's shared segment, so the push does not copy it. Nothing else here holds
    it after the _Send, so nothing here can write into it once pushed (no donation)."""
    uses: collections.Counter = collections.Counter()
    for n in order:
        uses.update(n.inputs)
    uses.update(fetches)
    uses.update(fetches)  # a fetched value is held beyond the step
    hints = {}
    for n in order:
        if n.op != "_Send" or not n.attrs.get(_PUSH_ATTR) or not n.inputs:
            continue
        src = n.inputs[0]
        while uses[src] == 1 and src[0].op == "Identity" and len(src[0].inputs) == 1:
            src = src[0].inputs[0]
        if uses[src] == 1 and src[0].op in _OUTPUT_HINT_OPS and \
                len(src[0].output_dtypes) == 1:
            hints[src[0]] = n.attrs["recv_device"]
    return hints


def _hinting(hints: dict[Node, str], inner):
    """A kernel wrapper offering the hinted nodes' kernels their push segment for their
    output, then applying `inner` (or none)."""
    def wrap(n, kdef, compute):
        dst = hints.get(n)
        if dst is not None:
            compute = _output_for_push(compute, dst)
        return compute if inner is None else inner(n, kdef, compute)
    return wrap


# Pushed _Sends in a row are held and written together (`_held_sends`) across nodes that
# cannot wait for another task: by default any node of a stateless op but a _Recv (its
# kernel computes from its inputs alone); with TENSORFLUX_PUSH_HOLD=reads only these (a
# parameter server's reads of the variables it pushes); with 0 nothing is held.
_HOLD_ENV = "TENSORFLUX_PUSH_HOLD"
_RUN_WHILE_HELD = frozenset(("_Send", "ReadVariableOp", "VarHandleOp", "Identity", "NoOp",
                             "Const", "_Arg"))


def _runs_while_held(mode: str):
    """`runs(node) -> bool`: whether `node` may run while pushes are held (see above)."""
    if mode == "reads":
        return lambda n: n.op in _RUN_WHILE_HELD

    def runs(n: Node) -> bool:
        if n.op in _RUN_WHILE_HELD:
            return True
        if n.op.endswith("Recv"):
            return False
        opdef = op_registry.lookup(n.op)
        return opdef is not None and not opdef.is_stateful

    return runs


def _held_sends(order: list[Node], runs) -> set[Node]:
    """The pushed _Sends (to another task) that a node allowed to run while pushes are
    held follows (`runs`, `_runs_while_held`): their pushes are held
    (`Rendezvous.hold_sends`) and written together before the next node that is not (a
    `_flush` statement), or at the step's end. So a run of pushes (a parameter server
    sending the variables it read, a worker's gradients through its backward pass) costs
    its consumer one wake-up, not one per tensor. A held tensor's consumer can never be
    waiting on this thread meanwhile: nothing between the push and its flush waits for
    another task. (The consumer starts on the tensors later, once they all came: on a
    machine with few cores the wake-ups saved weigh more.)"""
    held = set()
    for n, after in zip(order, order[1:], strict=False):
        if n.op == "_Send" and n.attrs.get(_PUSH_ATTR) and runs(after):
            held.add(n)
    return held


def _holding(held: set[Node], inner):
    """A kernel wrapper holding the pushes of the `held` _Sends' kernels."""
    def wrap(n, kdef, compute):
        if n in held:
            compute = _held_send(compute)
        return compute if inner is None else inner(n, kdef, compute)
    return wrap


def _held_send(compute):
    def run(ctx, value):
        with ctx.rendezvous.hold_sends():
            compute(ctx, value)
    return run


def _flush(ctx) -> None:
    ctx.rendezvous.flush_sends()


def _with_flushes(statements: list, held: set[Node], runs) -> list:
    """`statements` with a `_flush(ctx)` after each run of held pushes: before the first
    statement of a node that may not run while they are held (`runs`), or at the end (its
    failure is the last held _Send's)."""
    out, last = [], None
    for st in statements:
        if last is not None and not runs(st.node):
            out.append(codegen.Statement("_flush(ctx)", last, [], []))
            last = None
        out.append(st)
        if st.node in held:
            last = st.node
    if last is not None:
        out.append(codegen.Statement("_flush(ctx)", last, [], []))
    return out


def _output_for_push(compute, dst: str):
    def run(ctx, *args):
        allocator = getattr(ctx.rendezvous, "push_allocator", None)
        alloc = None if allocator is None else allocator(dst)
        if alloc is None:
            return compute(ctx, *args)
        return buffers.with_output_allocator(alloc, compute, ctx, *args)
    return run
