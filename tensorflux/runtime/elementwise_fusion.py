"""Elementwise fusion, a graph optimizer pass of CPU steps (graph_optimizer.py, L1 with
`fuse`): a tree of float32 elementwise nodes of one static shape becomes one
_FusedElementwise node (ops/fused_elementwise_ops.py), computed in one pass.

Why: in the many-small-kernels regime (an RNN cell of a few thousand elements unrolled
over time, its gradient) each node costs its kernel call, NumPy's dispatch and a new
output array (~1.5 us on 2,048 floats) for ~0.1 us of arithmetic. A GRU cell's
`u * h + (1 - u) * c` is four such nodes, its gradient's `AddN(g * h, -(g * c))` three,
`TanhGrad(c, (1 - u) * g)` two (the small seq2seq step, benchmarks/programs).

Which nodes (`_fusable`): Add, AddV2, Sub, Mul, Neg, AddN (of two or more), TanhGrad and
SigmoidGrad of float32, whose output has a fully known static shape of 2 to
`MAX_ELEMENTS` elements (a larger one is memory-bound and may be split over the intra-op
threads by its own kernel), each input of that shape or a scalar (no other broadcasting;
a fed tensor's _Arg has no static shape, so a node reading a feed does not fuse).
A fusable node is absorbed into its reader when that reader is fusable with the same shape
and requested device and colocation, it is the only node that reads it (read by two
nodes: it stays a node of its own), it is not fetched or a target, and no control edge
waits on it; its control inputs move to the tree's root. A tree takes at most
MAX_REGISTERS inputs and instructions (`_plan`: a larger one is cut into trees of their
own). The root is rewritten in place (its name, shape, frame and readers stay); absorbed
nodes become NoOps nobody reads, which dead-code elimination drops. Trees of one node stay
as they are.

Values: each instruction rounds as its node's kernel did (the kernel's comment), so the
fused step's results are the unfused step's bit for bit; tests run the same graphs under
every strategy with and without the pass (tests/runtime/test_elementwise_fusion.py).
"""

from __future__ import annotations

import math

from tensorflux.framework import dtypes
from tensorflux.ops.fused_elementwise_ops import INSTRUCTION_OPS
from tensorflux.runtime.step_graph import Node, StepGraph

MAX_ELEMENTS = 1 << 16  # outputs up to this size fuse
MAX_REGISTERS = 48  # a tree's inputs + instructions, at most (_native.c EW_MAX_REGS)

# op type -> its instruction's op type (AddN: a chain of Adds)
_INSTRUCTION = {"Add": "Add", "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "Neg": "Neg",
                "AddN": "Add", "TanhGrad": "TanhGrad", "SigmoidGrad": "SigmoidGrad"}
assert set(_INSTRUCTION.values()) <= set(INSTRUCTION_OPS)


def _static_shape(node: Node, index: int) -> tuple | None:
    """The output's shape when fully known, as a tuple of ints."""
    shapes = node.output_shapes
    if not shapes or index >= len(shapes) or shapes[index] is None:
        return None
    dims = getattr(shapes[index], "dims", None)
    if dims is None:
        return None
    dims = tuple(getattr(d, "value", d) for d in dims)
    return dims if all(isinstance(d, int) for d in dims) else None


def _fusable(n: Node) -> tuple | None:
    """The output shape of a node the pass may fuse (see the module docstring), else None."""
    if n.op not in _INSTRUCTION or n.attrs.get("T") != dtypes.float32 or \
            len(n.output_dtypes) != 1 or not n.inputs:
        return None
    if n.op == "AddN" and len(n.inputs) < 2:
        return None
    shape = _static_shape(n, 0)
    if shape is None or not 2 <= math.prod(shape) <= MAX_ELEMENTS:
        return None
    for src, k in n.inputs:
        if src.output_dtypes[k] != dtypes.float32 or _static_shape(src, k) not in (shape, ()):
            return None
    return shape


def _absorbed_into(sg: StepGraph, shapes: dict[Node, tuple]) -> dict[Node, Node]:
    """fusable node -> the fusable reader that absorbs it (never a fetched node, a feed or
    a target: those keep their identity; a fetched root keeps its own)."""
    held = {n for n, _ in sg.fetches} | set(sg.targets) | set(sg.args)
    readers: dict[Node, list[Node]] = {}
    for n in sg.nodes:
        for src, _ in n.inputs:
            readers.setdefault(src, []).append(n)
    awaited = {c for n in sg.nodes for c in n.control_inputs}
    parent = {}
    for n, shape in shapes.items():
        rs = readers.get(n, [])
        if not rs or n in awaited or n in held or any(r is not rs[0] for r in rs):
            continue
        r = rs[0]
        if shapes.get(r) == shape and r.requested_device == n.requested_device and \
                r.colocation == n.colocation:
            parent[n] = r
    return parent


def fuse_elementwise(sg: StepGraph) -> int:
    """Rewrites each tree of fusable elementwise nodes of `sg` into one _FusedElementwise
    node (module docstring); returns how many nodes were absorbed."""
    shapes = {n: s for n in sg.nodes if (s := _fusable(n)) is not None}
    parent = _absorbed_into(sg, shapes)
    children: dict[Node, list[Node]] = {}
    for child, reader in parent.items():
        children.setdefault(reader, []).append(child)
    cost = _costs(shapes, parent, children)
    work = [n for n in sg.nodes if n in children and n not in parent]
    absorbed = 0
    while work:
        root = work.pop()
        taken = _plan(root, children, cost)
        work.extend(c for m in [root, *taken] for c in children.get(m, ()) if c not in taken)
        if taken:
            absorbed += _rewrite(root, taken, shapes[root])
    return absorbed


def _costs(shapes: dict, parent: dict[Node, Node], children: dict[Node, list[Node]]
           ) -> dict[Node, int]:
    """fusable node -> the registers of the whole tree under it (its instructions and
    those of every node it absorbs, each input counted as a register of its own)."""
    cost: dict[Node, int] = {}
    for n in shapes:
        stack = [n]
        while stack:  # children first, without recursion (a chain may be long)
            m = stack[-1]
            pending = [c for c in children.get(m, ()) if c not in cost]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            cost[m] = _own(m) + sum(cost[src] if parent.get(src) is m else 1
                                    for src, _ in m.inputs)
    return cost


def _own(n: Node) -> int:
    """The instructions of node `n` (an AddN of k inputs: k - 1 Adds)."""
    return max(1, len(n.inputs) - 1)


def _plan(root: Node, children: dict[Node, list[Node]], cost: dict[Node, int]) -> set[Node]:
    """The nodes the tree under `root` absorbs, within MAX_REGISTERS: each child of an
    absorbed node (or of `root`) whole while the budget lasts (its subtree's `cost`, an
    upper bound on the registers it adds: every input counted as an input of its own),
    else alone (its inputs counted as inputs, its children then considered in turn), else
    not at all (the root of a tree of its own). Empty when `root`'s own inputs and
    instructions are over the budget."""
    used = _own(root) + len(root.inputs)
    if used > MAX_REGISTERS:
        return set()
    taken: set[Node] = set()
    frontier = [root]
    while frontier:
        n = frontier.pop()
        for child in children.get(n, ()):
            if child in taken:
                continue
            whole = cost[child] - 1  # the child's registers in place of the one input
            alone = _own(child) + len(child.inputs) - 1
            if used + whole <= MAX_REGISTERS:
                used += whole
                stack = [child]
                while stack:
                    m = stack.pop()
                    taken.add(m)
                    stack.extend(children.get(m, ()))
            elif used + alone <= MAX_REGISTERS:
                used += alone
                taken.add(child)
                frontier.append(child)
    return taken


def _tree(root: Node, taken: set[Node]) -> tuple[list, list, list[Node]]:
    """(instructions as (op, operand refs), external input edges, absorbed nodes) of the
    tree under `root` absorbing the nodes `taken`, in evaluation order; a ref is ("in", k)
    or ("tmp", i)."""
    instructions: list = []
    edges: list = []
    members: list[Node] = []
    result: dict[Node, tuple] = {}

    def visit(n: Node) -> tuple:
        refs = []
        for src, k in n.inputs:
            if src not in result and src in taken:
                members.append(src)
                result[src] = visit(src)
            if src in result:
                refs.append(result[src])
            else:
                if (src, k) not in edges:
                    edges.append((src, k))
                refs.append(("in", edges.index((src, k))))
        op = _INSTRUCTION[n.op]
        if op == "Neg":
            refs = [refs[0], refs[0]]
        acc = refs[0]
        for other in refs[1:]:  # AddN: ((x0 + x1) + x2) + ..., as its kernel adds
            instructions.append((op, (acc, other)))
            acc = ("tmp", len(instructions) - 1)
        return acc

    visit(root)
    return instructions, edges, members


def _rewrite(root: Node, taken: set[Node], shape: tuple) -> int:
    instructions, edges, members = _tree(root, taken)
    assert len(edges) + len(instructions) <= MAX_REGISTERS
    n_in = len(edges)
    operands = [r[1] if r[0] == "in" else n_in + r[1]
                for _, refs in instructions for r in refs]
    root.control_inputs = list(dict.fromkeys(
        root.control_inputs + [c for m in members for c in m.control_inputs]))
    root.op, root.inputs = "_FusedElementwise", edges
    root.attrs = {"ops": [op for op, _ in instructions], "operands": operands,
                  "shape": list(shape), "N": n_in, "T": dtypes.float32}
    for m in members:  # unread now: NoOps that nothing waits on (dead code)
        m.op, m.attrs, m.inputs, m.control_inputs = "NoOp", {}, [], []
        m.output_dtypes, m.output_shapes = [], None
    return len(members)
