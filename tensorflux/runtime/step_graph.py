"""The runtime's own graph: what one cached step executes.

A Session never runs the user's Graph directly. For each (feeds, fetches, targets) signature
it builds a StepGraph: the pruned set of nodes the fetches and targets need (paper §3.2), fed
edges cut and replaced by `_Arg` nodes, which the optimizer, placer and partitioner then
rewrite freely without touching the user's Graph.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tensorflux.framework import dtypes, errors, op_registry, tensor_util
from tensorflux.framework.operation import Operation, Tensor


class Node:
    """One node of a StepGraph. `inputs` are (producer Node, output index) pairs."""

    __slots__ = ("id", "name", "op", "attrs", "inputs", "control_inputs", "requested_device",
                 "device", "output_dtypes", "output_shapes", "traceback", "colocation", "frame")

    def __init__(self, name: str, op: str, attrs: dict, inputs: list[tuple[Node, int]],
                 control_inputs: list[Node], output_dtypes: list[dtypes.DType],
                 requested_device: str = "", traceback=()):
        self.id = -1
        self.name = name
        self.op = op
        self.attrs = attrs
        self.inputs = inputs
        self.control_inputs = control_inputs
        self.requested_device = requested_device
        self.device = ""  # full device name, set by the placer
        self.output_dtypes = output_dtypes
        self.output_shapes: list | None = None  # static shapes from the user graph, if known
        self.traceback = traceback
        self.colocation: list[str] = []
        self.frame = ""  # while-loop frame, set by the executor's control-flow analysis

    @property
    def input_dtypes(self) -> list[dtypes.DType]:
        return [src.output_dtypes[i] for src, i in self.inputs]

    def __repr__(self) -> str:
        args = [f"{s.name}:{i}" for s, i in self.inputs] + [f"^{c.name}"
                                                            for c in self.control_inputs]
        return f"{self.name} = {self.op}({', '.join(args)}) @{self.device or '?'}"


class StepGraph:
    """Nodes of one step, with the step's arguments (feeds) and results (fetches)."""

    def __init__(self):
        self.nodes: list[Node] = []
        self.args: list[Node] = []  # one _Arg per feed, in feed order
        self.fetches: list[tuple[Node, int]] = []  # in fetch order (fed fetches excluded)
        self.targets: list[Node] = []

    def add(self, node: Node) -> Node:
        node.id = len(self.nodes)
        self.nodes.append(node)
        return node

    def remove(self, dead: Iterable[Node]) -> None:
        dead = set(dead)
        self.nodes = [n for n in self.nodes if n not in dead]
        for i, n in enumerate(self.nodes):
            n.id = i

    def consumers(self) -> dict[Node, list[Node]]:
        out: dict[Node, list[Node]] = {n: [] for n in self.nodes}
        for n in self.nodes:
            for src, _ in n.inputs:
                out[src].append(n)
            for c in n.control_inputs:
                out[c].append(n)
        return out


_PLACEHOLDERS = frozenset({"Placeholder", "PlaceholderV2"})


def build(feeds: list[Tensor], fetches: list[Tensor], targets: list[Operation],
          feeds_arrive: bool = False) -> StepGraph:
    """Prunes the user's graph to what `fetches` and `targets` need, given `feeds`.

    Fed tensors cut their edges: the producer of a fed tensor runs only if something else
    needs it. As in TensorFlow, a fed Placeholder's control edges come from its feed
    instead (a CriticalSection's lock waits for the placeholders fn reads). Fetched tensors
    that are also fed are not part of the step (the Session answers them with the fed
    value). With `feeds_arrive`, the feeds come while the step runs (a partial run's): a
    variable read for a consumer also waits for the consumer's feeds.
    """
    fed = {t: i for i, t in enumerate(feeds)}
    fed_ops = {t.op: i for t, i in fed.items()
               if t.op._type in _PLACEHOLDERS and t.value_index == 0}
    needed: set[Operation] = set()
    stack: list[Operation] = [t.op for t in fetches if t not in fed] + list(targets)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        for t in op._inputs:
            if t not in fed:
                stack.append(t._op)
        stack.extend(c for c in op._control_inputs if c not in fed_ops)

    sg = StepGraph()
    for i, t in enumerate(feeds):
        # A fed reference variable (TF1's `feed_dict={v: value}`) gives its consumers the
        # fed value, as a plain value: the variable itself is neither read nor changed.
        dtype = t.dtype.base_dtype
        arg = Node(f"_arg_{t.op.name}_{t.value_index}_{i}", "_Arg",
                   {"T": dtype, "index": i}, [], [], [dtype])
        sg.args.append(sg.add(arg))
    node_of: dict[Operation, Node] = {}
    ordered = sorted(needed, key=lambda op: op._id)
    for op in ordered:
        if op._type == "Const":
            _check_const(op)
        node = Node(op._name, op._type, op._attrs, [], [], [t._dtype for t in op._outputs],
                    op._device, op._traceback)
        node.output_shapes = [t._shape for t in op._outputs]
        node_of[op] = sg.add(node)
    for op in ordered:
        node = node_of[op]
        node.inputs = [(sg.args[fed[t]], 0) if t in fed else (node_of[t._op], t._value_index)
                       for t in op._inputs]
        node.control_inputs = [sg.args[fed_ops[c]] if c in fed_ops else node_of[c]
                               for c in op._control_inputs]
        node.colocation = [c[5:] for c in op._attrs.get("_class", ()) if c.startswith("loc:@")]
    sg.fetches = [(node_of[t.op], t.value_index) for t in fetches if t not in fed]
    sg.targets = [node_of[op] for op in targets]
    if any(dt._is_ref_dtype for n in sg.nodes for dt in n.output_dtypes):
        _read_refs(sg, feeds_arrive)
    if not feeds_arrive:  # (a partial run's fetch may come before a later call's update)
        _read_fetched_variables_last(sg)
    return sg


def _ref_inputs(node: Node) -> set[int]:
    """Positions of `node`'s inputs that its op declares `Ref(...)`."""
    opdef = op_registry.lookup(node.op)
    if opdef is None:
        return set()
    out, k = set(), 0
    for arg in opdef.inputs:
        if arg.number_attr:
            count = int(node.attrs.get(arg.number_attr, 1))
        elif arg.type_list_attr:
            count = len(node.attrs.get(arg.type_list_attr, ()))
        else:
            count = 1
        if arg.is_ref:
            out.update(range(k, k + count))
        k += count
    return out


# Ops with Ref(T) inputs that change no variable.
_REF_NON_WRITES = frozenset(("IsVariableInitialized", "_RefRead", "RefSwitch", "RefEnter",
                             "RefExit", "RefMerge", "RefNextIteration", "RefIdentity"))
_RESOURCE_WRITES = frozenset(("AssignVariableOp", "AssignAddVariableOp",
                              "AssignSubVariableOp", "ResourceCountUpTo"))


def _writes_a_variable(n: Node) -> bool:
    """Whether `n` updates a variable (a ref op such as Assign or ApplyAdam, or a resource
    update)."""
    if n.op in _RESOURCE_WRITES or n.op.startswith(("ResourceApply", "ResourceSparseApply",
                                                    "ResourceScatter")):
        return True
    opdef = op_registry.lookup(n.op)
    return opdef is not None and opdef.has_ref_inputs and n.op not in _REF_NON_WRITES


def _read_refs(sg: StepGraph, feeds_arrive: bool = False) -> None:
    """TF1 reference variables: a consumer that takes a ref (a variable's handle) where
    its op wants a value reads it through a `_RefRead` node (ops/ref_variable_ops.py), which
    waits for everything the consumer waits for, so the value is the variable's when the
    consumer could run. Fetched refs are read the same way.

    An Identity of a ref (TF1's "v/read" snapshot, what `tf.identity(v)` and `v * 2` take)
    aliases the variable in TensorFlow: its output shares the buffer later in-place updates
    change. Here it becomes the read itself (one node per variable, as a ReadVariableOp,
    and one transfer when the variable lives on a parameter server), waiting for the control
    inputs of its Identity chain; a consumer of it that runs after a state update (through
    its inputs or control inputs, e.g. built under `tf.control_dependencies([assign])`:
    `tf.identity(v)`, `v * 2`, a Keras constraint after the optimizer's update) reads the
    variable itself after all of its inputs, so it sees the update as in TensorFlow."""
    count = 0

    def read(src: Node, idx: int, after: list[Node]) -> Node:
        nonlocal count
        count += 1
        node = Node(f"{src.name}/_ref_read_{count}", "_RefRead",
                    {"T": src.output_dtypes[idx].base_dtype}, [(src, idx)], after,
                    [src.output_dtypes[idx].base_dtype])
        return sg.add(node)

    def is_ref(src: Node, i: int) -> bool:
        return src.output_dtypes[i]._is_ref_dtype

    # Identity nodes reading a ref, possibly through other such Identities: node ->
    # (the ref's producer, output index, control inputs along the chain).
    aliases: dict[Node, tuple[Node, int, list[Node]]] = {}
    for n in sg.nodes:  # producers come before their consumers in sg.nodes
        if n.op == "Identity" and len(n.inputs) == 1:
            src, i = n.inputs[0]
            if is_ref(src, i):
                aliases[n] = (src, i, list(n.control_inputs))
            elif src in aliases:
                root, ri, ctl = aliases[src]
                aliases[n] = (root, ri, ctl + list(n.control_inputs))
    # Nodes that update state (or group such updates), and nodes that run after one of
    # them (or after a feed that arrives while the step runs, which may come after an
    # update): a consumer of an alias that is ordered so reads for itself.
    writes: set[Node] = set()
    ordered: set[Node] = set()
    for n in sg.nodes:  # graph order: producers first (loop back edges aside)
        deps = [src for src, _ in n.inputs] + n.control_inputs
        if _writes_a_variable(n) or \
                (n.op in ("NoOp", "Identity") and any(d in writes for d in deps)):
            writes.add(n)
        if (feeds_arrive and n.op == "_Arg") or \
                any(d in writes or d in ordered for d in deps if d not in aliases):
            ordered.add(n)
    for n in list(sg.nodes):
        if n.op == "_RefRead" or n in aliases:
            continue
        wanted = _ref_inputs(n)
        values = [k for k, (src, i) in enumerate(n.inputs)
                  if k not in wanted and (is_ref(src, i) or (n in ordered and src in aliases))]
        if not values:
            continue
        after = list(n.control_inputs)
        opdef = op_registry.lookup(n.op)
        if opdef is None or opdef.flow_kind != "merge":  # a Merge's other inputs are dead
            # (Feeds exist when a step starts: waiting for them orders nothing.)
            after += [src for k, (src, _) in enumerate(n.inputs)
                      if k not in values and k not in wanted and
                      (feeds_arrive or src.op != "_Arg")]
        for k in values:
            src, i = n.inputs[k]
            extra = []
            if src in aliases:
                src, i, extra = aliases[src]
            n.inputs[k] = (read(src, i, list(dict.fromkeys(after + extra))), 0)
    sg.fetches = [(read(src, i, []), 0) if is_ref(src, i) else (src, i)
                  for src, i in sg.fetches]
    # The aliases still used become the reads; the others (their consumers read for
    # themselves) are dropped.
    used = {c for m in sg.nodes for c in m.control_inputs} | set(sg.targets)
    used |= {src for m in sg.nodes if m not in aliases for src, _ in m.inputs}
    used |= {src for src, _ in sg.fetches}
    dead = []
    for n, (root, ri, ctl) in aliases.items():
        if n in used:
            n.op = "_RefRead"
            n.attrs = {"T": n.output_dtypes[0], "_class": n.attrs.get("_class", [])}
            n.inputs = [(root, ri)]
            n.control_inputs = list(dict.fromkeys(ctl))
        else:
            dead.append(n)
    if dead:
        sg.remove(dead)


def _read_fetched_variables_last(sg: StepGraph) -> None:
    """A fetched variable (`sess.run([train_op, v])`: its ReadVariableOp, or a ref
    variable's read) is read after the step's updates of it, as TF1 shows it: a fetched
    ref aliases the variable's buffer, which the step's in-place updates change before the
    fetched values are copied out (a program printing `global_step` beside `train_op`
    sees the incremented step; so does a fetched Identity of the read, `tf.identity(v)` or
    `v.read_value()`). The fetch gets a read of its own, ordered after every node
    that consumes the variable itself and writes it, except where that update waits for
    the fetched read (through data or control edges: `w.assign(w * 2)` beside a fetch of the
    read it multiplies, or a read the program ordered first): that read's value is what the
    update used, and the fetch stays that snapshot (TF's resource variables; TF1's aliasing
    shows the update there too). Updates inside a cond or a while loop (which may not run)
    order nothing."""
    variables = {}  # fetch position -> the variable (producer, output) behind it
    for k, (node, _) in enumerate(sg.fetches):
        while node.op == "Identity" and len(node.inputs) == 1:  # (an alias in TF1 too)
            node = node.inputs[0][0]
        if node.op in ("ReadVariableOp", "_RefRead") and len(node.inputs) == 1:
            variables[k] = (node.inputs[0], node)
    if not variables:
        return
    wanted = {var for var, _ in variables.values()}
    writers: dict[tuple[Node, int], list[Node]] = {}
    for n in sg.nodes:
        if _writes_a_variable(n):
            for src in dict.fromkeys(n.inputs):
                if src in wanted:
                    writers.setdefault(src, []).append(n)
    if not writers:
        return
    _, consumers = dependencies(sg.nodes)
    conditional = _under_control_flow(sg, consumers)
    replaced = []
    for k, (var, node) in variables.items():
        after = [w for w in writers.get(var, ()) if w not in conditional]
        if after:  # a read that an update waits for is the snapshot it took
            before = _descendants(node, consumers)
            after = [w for w in after if w not in before]
        if not after:
            continue
        late = sg.add(Node(f"{node.name}/_after_updates", node.op, dict(node.attrs),
                           [var], list(node.control_inputs) + after, list(node.output_dtypes),
                           node.requested_device, node.traceback))
        late.output_shapes, late.colocation = node.output_shapes, list(node.colocation)
        replaced.append(sg.fetches[k][0])
        sg.fetches[k] = (late, 0)
    # The reads (and Identities of them) no longer fetched nor used go.
    dead: set[Node] = set()
    while replaced:
        node = replaced.pop()
        used = {src for n in sg.nodes if n not in dead for src, _ in n.inputs} | \
            {c for n in sg.nodes if n not in dead for c in n.control_inputs} | \
            set(sg.targets) | {f for f, _ in sg.fetches}
        if node not in used and node not in dead:
            dead.add(node)
            if node.op == "Identity":
                replaced.append(node.inputs[0][0])
    if dead:
        sg.remove(dead)


def _descendants(node: Node, consumers: dict[Node, list[Node]]) -> set[Node]:
    """The nodes that wait for `node`, through data or control edges."""
    seen: set[Node] = set()
    stack = list(consumers[node])
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(consumers[n])
    return seen


def _under_control_flow(sg: StepGraph, consumers: dict[Node, list[Node]]) -> set[Node]:
    """The nodes that may not run or may run many times: those a Switch reaches before a
    Merge or an Exit, and those an Enter reaches before an Exit (over data and control
    edges)."""
    kinds = {}
    for n in sg.nodes:
        opdef = op_registry.lookup(n.op)
        if opdef is not None and opdef.flow_kind:
            kinds[n] = opdef.flow_kind
    if not any(k in ("switch", "enter") for k in kinds.values()):
        return set()
    inside: set[Node] = set()
    for start, stop in (("switch", ("merge", "exit")), ("enter", ("exit",))):
        stack = [n for n, k in kinds.items() if k == start]
        seen: set[Node] = set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if kinds.get(n) not in stop:
                stack.extend(consumers[n])
        inside |= seen
    return inside


def _closes_loop(node: Node) -> bool:
    """True for a NextIteration (its definition's flow_kind): its out edges are back edges."""
    opdef = op_registry.lookup(node.op)
    return opdef is not None and opdef.flow_kind == "next_iteration"


def dependencies(nodes: list[Node], skip_back_edges: bool = False,
                 extra_inputs: dict[Node, list[Node]] | None = None
                 ) -> tuple[dict[Node, int], dict[Node, list[Node]]]:
    """(number of producers, consumers) per node, over the data and control edges among
    `nodes` (edges from outside the list are ignored) and the `extra_inputs` edges (e.g.
    _Send -> _Recv across partitions). With `skip_back_edges`, the NextIteration -> Merge
    edges that close while loops are left out."""
    indegree = {n: 0 for n in nodes}
    consumers: dict[Node, list[Node]] = {n: [] for n in nodes}
    extra_inputs = extra_inputs or {}
    for n in nodes:
        for src in [s for s, _ in n.inputs] + n.control_inputs + extra_inputs.get(n, []):
            if src not in indegree or (skip_back_edges and _closes_loop(src)):
                continue
            indegree[n] += 1
            consumers[src].append(n)
    return indegree, consumers


def topological_order(nodes: list[Node], skip_back_edges: bool = False,
                      rank: dict[Node, int] | None = None,
                      extra_inputs: dict[Node, list[Node]] | None = None
                      ) -> tuple[list[Node], bool]:
    """Kahn's order of `nodes` (edges as in `dependencies`): of the nodes ready, the one of
    lowest `rank` (default 0) comes first, ties broken by node id so the order is
    deterministic. Returns (order, complete): nodes left on a cycle follow the ordered ones,
    in id order, and `complete` is False."""
    import heapq

    rank = rank or {}
    indegree, consumers = dependencies(nodes, skip_back_edges, extra_inputs)
    ready = [(rank.get(n, 0), n.id, n) for n in nodes if indegree[n] == 0]
    heapq.heapify(ready)
    order: list[Node] = []
    while ready:
        n = heapq.heappop(ready)[2]
        order.append(n)
        for c in consumers[n]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, (rank.get(c, 0), c.id, c))
    complete = len(order) == len(nodes)
    if not complete:
        seen = set(order)
        order.extend(sorted((n for n in nodes if n not in seen), key=lambda n: n.id))
    return order, complete


def _check_const(op: Operation) -> None:
    """A Const's value must have its `dtype` (an imported GraphDef can say otherwise: the
    value's TensorProto carries a dtype of its own). Checked when a step first needs it,
    where TensorFlow's kernel checks it.

    Raises:
      InvalidArgumentError: naming the node.
    """
    value, dtype = op._attrs.get("value"), op._attrs.get("dtype")
    if not isinstance(value, (np.ndarray, tensor_util.DeferredTensor)) or \
            not isinstance(dtype, dtypes.DType) or value.dtype == dtype.numpy_dtype:
        return
    try:
        got = dtypes.as_dtype(value.dtype).name
    except TypeError:
        got = str(value.dtype)
    raise errors.annotate(
        errors.InvalidArgumentError(None, None, f"Type mismatch between value ({got}) and "
                                    f"dtype ({dtype.name})"),
        op._name, op._type, op._device, op._traceback, op=op)
