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
function carries no per-node bookkeeping at all. Results must equal the dataflow executor's;
tests run both on the same graphs.

Chosen by exec_options.choose_strategies (strategy "auto") for partitions that qualify
(`eligible`). Not supported: control-flow ops, asynchronous kernels (but _Recv, as a blocking
call, when every partition of the step qualifies), expensive kernels in parallel.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterable

from tensorflux.framework import errors
from tensorflux.framework.rendezvous_key import create_key
from tensorflux.kernels import registry as kernel_registry
from tensorflux.kernels.registry import KernelContext
from tensorflux.runtime.executor import CONTROL_FLOW_OPS, ExecutorError
from tensorflux.runtime.step_graph import Node, topological_order

_counter = itertools.count()


def eligible(nodes: Iterable[Node], device_type: str, blocking_recv: bool = False) -> bool:
    """True when every node has a synchronous kernel and none is a control-flow op.

    (Without control-flow ops a partition is acyclic: only NextIteration edges close loops.)
    With `blocking_recv`, _Recv is allowed too, for steps whose partitions all qualify (so
    no dead value can cross): they then run merged on one thread, or each on a thread of
    its own waiting in `_blocking_recv`, in orders from `step_order`.
    """
    for n in nodes:
        if n.op in CONTROL_FLOW_OPS:
            return False
        if blocking_recv and n.op == "_Recv":
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
            order, acyclic = topological_order(nodes)
            if not acyclic:
                raise ValueError("StaticExecutor needs an acyclic partition")
        ctx_names = None if node_devices is None else {
            n: f"c{self.devices.index(d)}" for n, d in node_devices.items()}
        self.source, env, self._line_nodes = _generate(order, device.device_type, fetches,
                                                       inline, kernel_wrapper, ctx_names)
        filename = f"<tensorflux step {next(_counter)}>"
        self._filename = filename
        namespace: dict = {}
        exec(compile(self.source, filename, "exec"), env, namespace)  # noqa: S102
        self._fn = namespace["step"]

    def run(self, ctx, deadline: float | None = None) -> list:
        ctx.deadline = deadline
        if self._node_devices is not None:  # merged partitions: a context per device
            ctx = tuple(ctx if d is self.device else _device_context(ctx, d)
                        for d in self.devices)
        try:
            return self._fn(ctx, ctx[0].args if self._node_devices is not None else ctx.args)
        except Exception as e:  # noqa: BLE001 - re-raised with the failing node attached
            tb = e.__traceback__
            line = None
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == self._filename:
                    line = tb.tb_lineno
                tb = tb.tb_next
            node = self._line_nodes.get(line)
            if node is None:
                raise
            device = self.device if self._node_devices is None else self._node_devices[node]
            raise ExecutorError(node, device.name, e) from None


def _device_context(ctx: KernelContext, device) -> KernelContext:
    """Merged partitions: the step's context for another of its devices."""
    other = KernelContext(ctx.step_id, device, ctx.rendezvous, ctx.cancellation, ctx.args,
                          device.runner, ctx.session, ctx.options)
    other.stats, other.deadline = ctx.stats, ctx.deadline
    return other


def step_order(partitions: list[list[Node]]) -> list[Node] | None:
    """One topological order of the whole step whose partitions are given, with an edge
    from every _Send to its _Recv; None if the partitions form a cycle. Of the nodes ready,
    each _Send comes as soon as its value exists, then the work that leads to a _Send
    (another device waits for it), then the rest, and a _Recv only when nothing else is
    ready."""
    nodes = [n for p in partitions for n in p]
    sends = {_transfer_key(n): n for n in nodes if n.op == "_Send"}
    extra = {n: [sends[_transfer_key(n)]] for n in nodes
             if n.op == "_Recv" and _transfer_key(n) in sends}
    rank: dict[Node, int] = {}
    for p in partitions:
        rank.update(_transfer_ranks(p))
    order, acyclic = topological_order(nodes, rank=rank, extra_inputs=extra)
    return order if acyclic else None


def partition_orders(partitions: list[list[Node]], order: list[Node]) -> list[list[Node]]:
    """The run order of each partition when each runs on its own thread, blocking on its
    _Recvs: `order` (`step_order`) restricted to the partition. So the partitions cannot
    deadlock: of the nodes they wait at, the earliest in `order` always has its inputs."""
    position = {n: k for k, n in enumerate(order)}
    return [sorted(p, key=position.__getitem__) for p in partitions]


def _transfer_key(node: Node) -> tuple:
    a = node.attrs
    return a["send_device"], a["recv_device"], a["tensor_name"]


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
        return value

    return compute


def _transfer_call(node: Node, kdef, kernel_wrapper, env: dict, ctx_names: dict,
                   value: str) -> str:
    """Merged partitions, every node a call: a _Send or _Recv as an identity kernel of its
    own device (so a traced step records the transfer)."""
    kname = f"k{node.id}"
    env[kname] = _forward
    if kernel_wrapper is not None:
        env[kname] = kernel_wrapper(node, kdef, env[kname])
    return f"{kname}({ctx_names[node]}, {value})"


def _forward(ctx, value):
    return value


def _generate(order: list[Node], device_type: str, fetches, inline: bool = True,
              kernel_wrapper=None, ctx_names: dict[Node, str] | None = None):
    """Python source for the step function, its globals, and line number -> node.

    With `inline` false every node becomes a kernel call, merged transfers too (for
    measuring per-kernel dispatch and for traced runs; the results are the same).
    `kernel_wrapper(node, kdef, compute)`, if given, wraps each called kernel once, at
    build time (as in `Executor`). With `ctx_names` (merged partitions) the step gets a
    tuple of contexts, node n's kernel is called with `ctx_names[n]`, a _Send emits nothing
    and its _Recv copies the sent value's name (with `inline` false: both are identity
    calls)."""
    env: dict = {}
    names: dict[tuple[Node, int], str] = {}
    last_use: dict[str, int] = {}
    pinned = set()
    lines = ["def step(ctx, args):"]
    if ctx_names is not None:
        contexts = sorted(set(ctx_names.values()), key=lambda c: int(c[1:]))
        lines.append(f"    {', '.join(contexts)}, = ctx")
    line_nodes: dict[int, Node] = {}
    body: list[tuple[str, Node | None, list[str]]] = []
    sent: dict[tuple, str] = {}  # merged partitions: transfer key -> the sent value's name

    for pos, n in enumerate(order):
        kdef = kernel_registry.find_kernel(n.op, device_type, n.attrs)
        if n.op == "_Recv":  # a blocking call (or, merged, its _Send's value): synchronous
            kdef = dataclasses.replace(kdef, is_async=False)
        if ctx_names is not None and n.op == "_Recv":
            value = sent[_transfer_key(n)]
            last_use[value] = pos
            names[(n, 0)] = f"v{n.id}"
            expr = value if inline else _transfer_call(n, kdef, kernel_wrapper, env, ctx_names,
                                                      value)
            body.append((f"v{n.id} = {expr}", n, [f"v{n.id}"]))
            continue
        args = [names[(src, i)] for src, i in n.inputs]
        if ctx_names is not None and n.op == "_Send":
            sent[_transfer_key(n)] = args[0]
            last_use[args[0]] = pos
            if not inline:
                body.append((_transfer_call(n, kdef, kernel_wrapper, env, ctx_names, args[0]),
                             n, []))
            continue
        for a in args:
            last_use[a] = pos
        outs = [f"v{n.id}_{k}" if len(n.output_dtypes) > 1 else f"v{n.id}"
                for k in range(len(n.output_dtypes))]
        for k, o in enumerate(outs):
            names[(n, k)] = o
        if n.op == "Const" and inline:
            env[outs[0]] = n.attrs["value"]
            pinned.add(outs[0])
            continue
        if n.op == "_Arg" and inline:
            body.append((f"{outs[0]} = args[{n.attrs['index']}]", n, outs))
            continue
        if inline and kdef.inline is not None:
            if kdef.inline == "":
                continue
            expr = kdef.inline.format(*args)
        else:
            kname = f"k{n.id}"
            env[kname] = _blocking_recv(n) if n.op == "_Recv" else kdef.factory(n)
            if kernel_wrapper is not None:
                env[kname] = kernel_wrapper(n, kdef, env[kname])
            c = "ctx" if ctx_names is None else ctx_names[n]
            expr = f"{kname}({c}{''.join(', ' + a for a in args)})"
        if not outs:
            body.append((expr, n, outs))
        elif len(outs) == 1:
            body.append((f"{outs[0]} = {expr}", n, outs))
        else:
            body.append((f"{', '.join(outs)}, = {expr}", n, outs))

    pinned |= {names[(n, i)] for n, i in fetches}
    # Drop each local right after the statement that last reads it (or, if nothing reads it,
    # right after the statement that makes it).
    stmt_of = {node: idx for idx, (_, node, _) in enumerate(body)}
    # next_stmt[pos]: the first statement emitted for order[pos] or a later node.
    next_stmt: list[int | None] = [None] * (len(order) + 1)
    for pos in range(len(order) - 1, -1, -1):
        next_stmt[pos] = stmt_of.get(order[pos], next_stmt[pos + 1])
    frees: dict[int, list[str]] = {}
    for idx, (_, _, outs) in enumerate(body):
        for o in outs:
            if o not in last_use and o not in pinned:
                frees.setdefault(idx, []).append(o)
    for var, pos in last_use.items():
        if var in pinned:
            continue
        idx = next_stmt[pos]
        if idx is not None:
            frees.setdefault(idx, []).append(var)
    defined = set()
    for idx, (stmt, node, outs) in enumerate(body):
        lines.append("    " + stmt)
        line_nodes[len(lines)] = node
        defined.update(outs)
        dead = [v for v in frees.get(idx, ()) if v in defined]
        if dead:
            lines.append("    del " + ", ".join(dead))
    lines.append("    return [" + ", ".join(names[(n, i)] for n, i in fetches) + "]")
    return "\n".join(lines) + "\n", env, line_nodes
