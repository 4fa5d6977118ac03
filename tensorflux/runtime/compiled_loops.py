"""Compiled while loops: a cheap loop frame run as one Python `while` statement.

The dataflow executor (executor.py) runs a loop iteration by iteration with per-iteration
pending counts, dead values and frame bookkeeping: a few microseconds of interpreter work
per node. For a loop whose frame holds only cheap synchronous kernels and no nested control
flow, one valid schedule is simply sequential: iteration after iteration, each node once,
in a topological order. `compile_loops` finds such frames in a partition and replaces each
(its Enters, the nodes of the frame and its Exits) by one `_CompiledLoop` node of the parent
frame: inputs the Enters' inputs, outputs the Exits' values, control inputs the Enters'
(the op is defined in ops/runtime_ops.py; its kernel, kernels/cpu/runtime_ops.py, calls the
node's `body`). The body is generated Python, like the static executor's:

    def loop(ctx, e0, e1, c0):           # loop variables, then loop invariants
        m0 = e0; m1 = e1
        while True:
            v7 = k7(ctx, m0, c0)          # "head": what runs in every iteration (the
            if not v7:                    #   condition); then the LoopCond's value
                return m0, m1             # the Exits' values
            v9 = k9(ctx, m0, c1)          # "body": everything fed by a Switch's true side
            v10 = k10(ctx, v9)
            del v9                        # dropped after its last reader (`_frees`)
            m0, m1 = v10, m1              # the NextIterations' values

A body statement that is the last reader of a loop variable or of a value dying there may
be donated them (`_donations`, checked by reference count as the static schedule does).

Eligible frame: Merges of exactly (non-constant Enter, NextIteration), one LoopCond, Switches
of (Merge, LoopCond) whose false side feeds only Exits (directly or through the Identities
of tf.gradients' `tuple`), and otherwise nodes whose kernels are synchronous, not Send/Recv,
and, where some are expensive, a loop paced by an expensive recurrence (`_on_recurrence`:
an RNN's step product waits for its previous iteration anyway; a loop whose expensive
kernels are all off the recurrence, map_fn's, may be worth running several iterations at
once on the thread pool, which only the dataflow executor does). Gradient loops qualify:
their stack pops are synchronous kernels run in iteration order, as their pushes in the
forward loop, and the NoOps of tf.gradients' `tuple` that wait for a loop Switch run with
the body. Why a frame is refused is logged at DEBUG on the "tensorflux" logger. Inner
frames are compiled first, so an eligible inner loop becomes one node of its outer loop.
A loop whose inputs are dead (on an untaken cond branch) is dead as a whole, as its Exits
would be. Results equal the dataflow executor's; tests run both (`enabled`, from
`ExecOptions.compile_loops`). The statements and the line -> node map of the generated code
are codegen.py's, shared with the static executor; this module owns which frames qualify
and the loop's structure.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import buffers
from tensorflux.kernels import registry as kernel_registry
from tensorflux.runtime import codegen, frame_analysis
from tensorflux.runtime.frame_analysis import flow_kind, is_control_flow
from tensorflux.runtime.step_graph import Node, topological_order

_log = logging.getLogger("tensorflux")
_COMPILED_OP = "_CompiledLoop"
_CHECK_EVERY = 256  # iterations between cancellation / deadline checks
_SMALL_ELEMENTS = 4096  # values of a static shape below this are not dropped per iteration
# Transfers never run inside a compiled loop: their rendezvous keys name the frame and
# iteration, which a compiled loop does not keep.
_TRANSFERS = ("_Send", "_Recv")


class _Ineligible(Exception):
    """Why a frame is not compiled (logged at DEBUG on the "tensorflux" logger)."""


def compile_loops(nodes: list[Node], fetches: list[tuple[Node, int]], device_type: str,
                  kernel_wrapper=None, enabled: bool = True):
    """`nodes` and `fetches` with every eligible loop frame replaced by a `_CompiledLoop`
    node (new Node objects where inputs change; the given ones are not modified). With
    `enabled` false, or a malformed graph (the executor reports it), they are returned as
    they are."""
    if not enabled or not any(flow_kind(n.op) == "enter" for n in nodes):
        return nodes, fetches
    try:
        analysis = frame_analysis.analyze(nodes)
    except errors.InvalidArgumentError:
        return nodes, fetches
    frame_of = analysis.frame_of
    parent = {f: p for f, p in analysis.parent.items() if p is not None}
    # Work on copies: the partition's nodes are shared with other executors of the step.
    copy = {n: _clone(n) for n in nodes}
    for n in copy.values():
        n.inputs = [(copy[s], i) for s, i in n.inputs]
        n.control_inputs = [copy[c] for c in n.control_inputs]
    frame_of = {copy[n]: f for n, f in frame_of.items()}
    fetches = [(copy[n], i) for n, i in fetches]
    live = list(copy.values())
    depth = {f: _depth(f, parent) for f in parent}
    compiled_any = False
    for frame in sorted(parent, key=lambda f: -depth[f]):
        try:
            loop = _LoopSpec(frame, live, frame_of, device_type)
        except _Ineligible as exc:
            _log.debug("loop frame %s stays on the dataflow executor: %s", frame, exc)
            continue
        node = loop.build(kernel_wrapper)
        frame_of[node] = parent[frame]
        removed = loop.removed
        exit_map = {(x, 0): (node, k) for k, x in enumerate(loop.exits)}
        live = [n for n in live if n not in removed]
        for n in live:
            n.inputs = [exit_map.get(e, e) for e in n.inputs]
            if any(c in removed for c in n.control_inputs):
                n.control_inputs = list(dict.fromkeys(
                    node if c in removed else c for c in n.control_inputs))
        fetches = [exit_map.get(e, e) for e in fetches]
        live.append(node)
        compiled_any = True
    if not compiled_any:
        return nodes, [(n, i) for n, i in _original(fetches, copy)]
    return live, fetches


def _original(fetches, copy):
    back = {v: k for k, v in copy.items()}
    return [(back[n], i) for n, i in fetches]


def _clone(n: Node) -> Node:
    c = Node(n.name, n.op, n.attrs, list(n.inputs), list(n.control_inputs),
             n.output_dtypes, n.requested_device, n.traceback)
    c.id = n.id
    c.device = n.device
    c.output_shapes = n.output_shapes
    c.colocation = n.colocation
    return c


def _depth(frame: str, parent: dict) -> int:
    d = 0
    while frame:
        frame = parent.get(frame, "")
        d += 1
    return d


class _LoopSpec:
    """The parts of one eligible loop frame (raises _Ineligible otherwise)."""

    def __init__(self, frame: str, nodes: list[Node], frame_of: dict, device_type: str):
        self.frame = frame
        self.device_type = device_type
        members = [n for n in nodes if frame_of.get(n) == frame]
        enters = [n for n in nodes
                  if flow_kind(n.op) == "enter" and n.attrs.get("frame_name") == frame]
        every = frame_analysis.consumers_of(nodes)
        consumers = {n: every[n] for n in members + enters}
        self.var_enters = [e for e in enters if not e.attrs.get("is_constant")]
        self.const_enters = [e for e in enters if e.attrs.get("is_constant")]
        self.exits = [n for n in members if flow_kind(n.op) == "exit"]
        conds = [n for n in members if n.op == "LoopCond"]
        if len(conds) != 1:
            raise _Ineligible(f"{len(conds)} LoopConds")
        (self.loop_cond,) = conds
        self._check_merges(members, consumers)
        self._check_switches(members, consumers)
        structure = set(self.merges) | set(self.switch_merge) | set(self.exits) | set(
            self.next_of_merge.values()) | {self.loop_cond} | set(self.exit_identities)
        plain = [n for n in members if n not in structure]
        self._check_plain(plain, device_type, consumers)
        self._check_edges(members, enters, consumers)
        self._classify(plain, consumers)
        self.removed = set(members) | set(enters)

    def _check_merges(self, members, consumers) -> None:
        """Each Merge joins one loop variable's Enter and its NextIteration, nothing else."""
        merges = [n for n in members if flow_kind(n.op) == "merge"]
        nexts = [n for n in members if flow_kind(n.op) == "next_iteration"]
        if not merges or len(merges) != len(self.var_enters):
            raise _Ineligible(f"{len(merges)} Merges for {len(self.var_enters)} loop variables")
        self.merge_of_enter: dict[Node, Node] = {}
        self.next_of_merge: dict[Node, Node] = {}
        for m in merges:
            if len(m.inputs) != 2 or m.control_inputs:
                raise _Ineligible(f"Merge {m.name} has {len(m.inputs)} inputs or control inputs")
            (e, ei), (nx, ni) = m.inputs
            if e not in self.var_enters or nx not in nexts or ei or ni:
                raise _Ineligible(f"Merge {m.name} does not join an Enter and a NextIteration")
            if len(consumers[e]) != 1 or consumers[e][0][0] is not m:
                raise _Ineligible(f"Enter {e.name} feeds more than its Merge")
            if any(i == 1 for _, i in consumers[m]):  # value_index is read
                raise _Ineligible(f"Merge {m.name}'s value_index is read")
            self.merge_of_enter[e] = m
            self.next_of_merge[m] = nx
        for nx in nexts:
            if [c for c, _ in consumers[nx]] != [m for m in merges if m.inputs[1][0] is nx]:
                raise _Ineligible(f"NextIteration {nx.name} feeds more than its Merge")
        self.merges = [self.merge_of_enter[e] for e in self.var_enters]

    def _check_switches(self, members, consumers) -> None:
        """Each Switch splits a Merge on the LoopCond; its false side feeds only Exits,
        directly or through Identities (`_exit_identity`)."""
        self.switch_merge: dict[Node, Node] = {}
        for s in (n for n in members if flow_kind(n.op) == "switch"):
            (d, di), (p, pi) = s.inputs
            if d not in self.merges or di or p is not self.loop_cond or pi:
                raise _Ineligible(f"Switch {s.name} does not split a Merge on the LoopCond")
            self.switch_merge[s] = d
        self.exit_identities: dict[Node, Node] = {}  # Identity -> the Merge it passes on
        for s, m in self.switch_merge.items():
            work = [c for c, i in consumers[s] if i == 0]
            while work:
                c = work.pop()
                if flow_kind(c.op) == "exit" or c in self.exit_identities:
                    continue
                if not self._exit_identity(c, consumers):
                    raise _Ineligible(f"{c.op} {c.name} reads the false side of {s.name}")
                self.exit_identities[c] = m
                work.extend(cc for cc, _ in consumers[c])
        for x in self.exits:
            ((s, si),) = x.inputs
            if si != 0 or x.control_inputs or (s not in self.switch_merge and
                                               s not in self.exit_identities):
                raise _Ineligible(f"Exit {x.name} does not take a loop variable")

    def _exit_identity(self, n: Node, consumers) -> bool:
        """Whether `n`, fed by a Switch's false side, is an Identity passing the loop
        variable on to Exits only, ordered at most after NoOps that wait for nothing but the
        loop's Switches: tf.gradients' `tuple` (gate_gradients) of a loop Merge's gradient,
        on the side that leaves the gradient loop. Its value is the Merge's of the last
        test, which is what the compiled loop returns."""
        if n.op != "Identity" or any(i != 0 for _, i in consumers[n]):
            return False
        return all(c.op == "NoOp" and not c.inputs and c.control_inputs and
                   all(s in self.switch_merge for s in c.control_inputs)
                   for c in n.control_inputs)

    def _check_plain(self, plain, device_type: str, consumers) -> None:
        """Everything else: nodes with synchronous kernels; expensive ones only in a loop
        paced by an expensive recurrence (`_on_recurrence`)."""
        self.kdefs = {}
        expensive = []
        for n in plain:
            # Control flow outside the loop's structure (a cond, an inner loop left
            # uncompiled) is the dataflow executor's; a ControlTrigger may stay (with no conds
            # inside there are no dead values to ignore).
            if (is_control_flow(n.op) and flow_kind(n.op) != "dead_aware") or n.op in _TRANSFERS:
                raise _Ineligible(f"{n.op} {n.name}: control flow or a transfer")
            kdef = kernel_registry.find_kernel(n.op, device_type, n.attrs)
            if kdef is None or kdef.is_async:
                raise _Ineligible(f"{n.op} {n.name}: no synchronous {device_type} kernel")
            if kdef.expensive:
                expensive.append(n)
            self.kdefs[n] = kdef
        if expensive and not self._on_recurrence(expensive, consumers):
            raise _Ineligible("expensive kernels off every loop variable's cycle: "
                              + ", ".join(n.name for n in expensive))

    def _on_recurrence(self, nodes, consumers) -> bool:
        """Whether the loop's iterations are paced by an expensive recurrence: some of
        `nodes` (the expensive ones) is on a loop variable's cycle (reached from its Merge
        and reaching its NextIteration: an RNN's step product h @ U, or in its gradient
        loop dz @ U'), so each iteration waits for its predecessor's product anyway. The
        other expensive nodes of such a loop (the input product x_t @ W of a cell that
        does not hoist it, a gradient loop's weight product h_t' @ dz_t) could at most
        overlap that chain on the dataflow executor's parallel iterations, which pays
        microseconds of bookkeeping per node and iteration for it; the compiled loop runs
        them in order. A loop whose expensive nodes are all off every cycle (map_fn's
        per-element product, fed only by the counter) keeps to the dataflow executor, which
        may run many of its iterations at once."""
        nexts = set(self.next_of_merge.values())
        expensive = set(nodes)
        for merge, nxt in self.next_of_merge.items():
            ahead = self._ahead(merge, nexts, consumers)
            behind, stack = set(), [nxt]
            while stack:
                for src, _ in stack.pop().inputs:
                    if src not in behind and src in ahead:
                        behind.add(src)
                        stack.append(src)
            if behind & expensive:
                return True
        return False

    @staticmethod
    def _ahead(merge, nexts, consumers) -> set:
        """The nodes of the frame a loop variable's Merge reaches within one iteration."""
        ahead, stack = set(), [merge]
        while stack:
            for c, _ in consumers.get(stack.pop(), ()):
                if c not in ahead and c not in nexts and flow_kind(c.op) != "exit":
                    ahead.add(c)
                    stack.append(c)
        return ahead

    def _check_edges(self, members, enters, consumers) -> None:
        """The frame talks to the outside through its Enters and Exits only."""
        inside = set(members)
        outside_ok = set(enters)
        exits = set(self.exits)
        for e in self.const_enters:
            if any(c not in inside for c, _ in consumers[e]):
                raise _Ineligible(f"invariant {e.name} is read outside the frame")
        for n in members:
            if n not in exits and any(c not in inside for c, _ in consumers[n]):
                raise _Ineligible(f"{n.op} {n.name} is read outside the frame")
            for src in [s for s, _ in n.inputs] + n.control_inputs:
                if src not in inside and src not in outside_ok:
                    raise _Ineligible(f"{n.op} {n.name} reads {src.name} outside the frame")

    def _classify(self, plain: list[Node], consumers) -> None:
        """Head (every iteration, before the predicate) and body (after it), each in a
        topological order."""
        body: set[Node] = set()
        # A NoOp ordered after a Switch (tf.gradients' `tuple` of a loop Merge's gradient,
        # whose true side it guards) runs in TensorFlow on the last test too; skipping it
        # there changes nothing, as long as nothing of the head waits for it (checked below).
        work = [c for s in self.switch_merge for c, i in consumers[s]
                if i == 1 or (i == -1 and c.op == "NoOp")]
        while work:
            n = work.pop()
            if n in body or flow_kind(n.op) == "next_iteration" or n in self.exit_identities:
                continue
            if n not in self.kdefs:
                raise _Ineligible(f"{n.op} {n.name} follows the predicate but is loop structure")
            body.add(n)
            work.extend(c for c, _ in consumers[n])
        head = [n for n in plain if n not in body]
        cond_src = self.loop_cond.inputs[0][0]
        if cond_src in body:
            raise _Ineligible("the predicate follows itself")
        for n in head:
            for src in [s for s, _ in n.inputs] + n.control_inputs:
                if src in body or src in self.switch_merge:
                    raise _Ineligible(f"{n.op} {n.name} precedes the predicate but waits for "
                                      f"{src.name}")
        self.head = _topological(head)
        self.body = _topological([n for n in plain if n in body])

    # ---- code generation ------------------------------------------------------------------
    def build(self, kernel_wrapper) -> Node:
        """The `_CompiledLoop` node running this loop: its kernel is the generated `loop`."""
        em = codegen.Emitter(self.device_type, kernel_wrapper, scalar_consts=True)
        em.env.update(_CHECK=_CHECK_EVERY - 1, _scalar=_scalar, _deadline=_deadline,
                      _check=_check)
        params = []
        for k, e in enumerate(self.var_enters):
            em.names[(self.merge_of_enter[e], 0)] = f"m{k}"
            params.append(f"e{k}")
        for k, e in enumerate(self.const_enters):
            em.names[(e, 0)] = f"c{k}"
            params.append(f"c{k}")
        for s, m in self.switch_merge.items():
            em.names[(s, 0)] = em.names[(s, 1)] = em.names[(m, 0)]
        for x, m in self.exit_identities.items():
            em.names[(x, 0)] = em.names[(m, 0)]
        em.add(f"def loop(ctx{''.join(', ' + p for p in params)}):", 0)
        for p in params:
            em.add(f"{p} = _scalar({p})")
        for k in range(len(self.var_enters)):
            em.add(f"m{k} = e{k}")
        for line in ("cm = ctx.cancellation", "limit = _deadline(ctx)", "n = 0",
                     "while True:"):
            em.add(line)
        head = self._statements(em, self.head)
        exits = [em.names[(x.inputs[0][0], 0)] for x in self.exits]
        cond = em.names[self.loop_cond.inputs[0]]
        body = self._statements(em, self.body)
        nexts = [em.names[self.next_of_merge[m].inputs[0]] for m in self.merges]
        loop_vars = {f"m{k}" for k in range(len(self.var_enters))}
        frees = self._frees(head + body, set(params) | {cond, *exits, *nexts} | loop_vars)
        donations = self._donations(head, body, frees, loop_vars,
                                    set(params) | {cond, *nexts})
        self._emit(em, head, frees, 0, {})
        ret = exits[0] if len(exits) == 1 else "(" + "".join(e + ", " for e in exits) + ")"
        em.add(f"if not {cond}:", 2)
        em.add(f"return {ret if exits else 'None'}", 3)
        self._emit(em, body, frees, len(head), donations)
        em.add("".join(f"m{k}, " for k in range(len(nexts))) + "= " +
               "".join(v + ", " for v in nexts), 2)
        # a loop variable that a kernel may take over must be held by its name alone
        donated_vars = {v for dying in donations.values() for _, v in dying} & loop_vars
        produced = {o for st in head + body for o in st.outs}
        drop = [v for k, v in enumerate(nexts)
                if f"m{k}" in donated_vars and v in produced and nexts.count(v) == 1]
        if drop:
            em.add("del " + ", ".join(drop), 2)
        for line, indent in (("n += 1", 2), ("if not n & _CHECK:", 2),
                             ("_check(cm, limit)", 3)):
            em.add(line, indent)
        fn, source, filename = em.compile("loop", f"loop {self.frame}")
        fn = codegen.with_node_errors(fn, filename, em.line_nodes, lambda n: n.device)
        return self._node(fn, source)

    @staticmethod
    def _statements(em: codegen.Emitter, nodes: list[Node]) -> list[codegen.Statement]:
        return [st for st in map(em.statement, nodes) if st is not None]

    @staticmethod
    def _frees(statements: list[codegen.Statement], keep: set[str]) -> dict[int, list[str]]:
        """Statement index -> the locals to drop after it: each value an iteration makes
        (head then body), after its last reader in the iteration, unless it lives on (loop
        variables, what the predicate, the Exits or the next iteration read) or is small by
        its static shape (a `del` per iteration costs more than keeping it). Without this,
        an iteration's values stay alive until the next iteration rebinds them."""
        last: dict[str, int] = {}
        small: set[str] = set()
        for idx, st in enumerate(statements):
            for k, o in enumerate(st.outs):
                last[o] = idx
                shapes = st.node.output_shapes
                shape = shapes[k] if shapes and k < len(shapes) else None
                dims = getattr(shape, "dims", None)
                if dims is not None and all(getattr(d, "value", d) is not None
                                            for d in dims):
                    size = 1
                    for d in dims:
                        size *= getattr(d, "value", d)
                    if size < _SMALL_ELEMENTS:
                        small.add(o)
            for r in st.reads:
                last[r] = idx
        produced = {o for st in statements for o in st.outs}
        frees: dict[int, list[str]] = {}
        for var, idx in last.items():
            if var in produced and var not in keep and var not in small:
                frees.setdefault(idx, []).append(var)
        return frees

    @staticmethod
    def _donations(head, body, frees: dict[int, list[str]], loop_vars: set[str],
                   protected: set[str]) -> dict[int, list[tuple[int, str]]]:
        """Statement index -> the (input position, local) pairs the body's statement there
        may be donated (kernels/buffers.py, "donated inputs"; checked by reference count
        when it runs, as the static schedule does): inputs whose last reader in the
        iteration it is, either values of the iteration dropped right after it, or loop
        variables (the Merges' values: the NextIterations rebind them, and the Exits read
        them in the head, before the body) unless the next iteration, the predicate or the
        Enters' parameters name them. A loop variable is held by its name alone from the
        second iteration on (the first one's is also the Enter's parameter): a gradient
        loop's sum of a weight's per-iteration gradients is added into in place."""
        statements = head + body
        last: dict[str, int] = {}
        for idx, st in enumerate(statements):
            for name in (*st.outs, *st.reads):
                last[name] = idx
        donations: dict[int, list[tuple[int, str]]] = {}
        for idx, st in enumerate(body, len(head)):
            dying = [(k, v) for k, v in st.donate
                     if last.get(v) == idx and v not in protected
                     and (v in loop_vars or v in frees.get(idx, ()))]
            if dying:
                donations[idx] = dying
        return donations

    @staticmethod
    def _emit(em: codegen.Emitter, statements: list[codegen.Statement],
              frees: dict[int, list[str]], first: int,
              donations: dict[int, list[tuple[int, str]]]) -> None:
        """The statements inside the `while`, each followed by the `del` of what dies at
        it (`_frees`); a statement with `donations` checks which of them nothing else holds
        and passes them as `donated`."""
        for idx, st in enumerate(statements, first):
            dying = donations.get(idx)
            if dying:
                em.env["_donatable"] = buffers.donatable
                em.add("_d = " + " + ".join(f"(({k},) if _donatable({v}) else ())"
                                             for k, v in dying), 2, st.node)
                em.add(f"{st.open_call}, donated=_d)", 2, st.node)
            else:
                em.add(st.text, 2, st.node)
            if idx in frees:
                em.add("del " + ", ".join(frees[idx]), 2)

    def _node(self, fn, source: str) -> Node:
        enters = self.var_enters + self.const_enters
        inputs = [e.inputs[0] for e in enters]
        controls = list(dict.fromkeys(c for e in enters for c in e.control_inputs))
        first = self.var_enters[0]
        out_dtypes = [x.output_dtypes[0] for x in self.exits]
        attrs = {"Tin": [e.output_dtypes[0] for e in enters], "Tout": out_dtypes,
                 "body": fn, "_source": source}
        node = Node(f"{self.frame}/_compiled_loop", _COMPILED_OP, attrs, inputs, controls,
                    out_dtypes, first.requested_device, first.traceback)
        node.device = first.device
        node.output_shapes = [x.output_shapes[0] if x.output_shapes else None
                              for x in self.exits]
        return node


def _topological(nodes: list[Node]) -> list[Node]:
    order, acyclic = topological_order(nodes)
    if not acyclic:
        raise _Ineligible("a cycle within one iteration")
    return order


def _scalar(x):
    """A 0-d numeric array as a NumPy scalar (see `_emit`); anything else unchanged."""
    if type(x) is np.ndarray and x.ndim == 0 and x.dtype.kind in "biufc":
        return x[()]
    return x


def _deadline(ctx):
    options = ctx.options
    if options is not None and options.timeout_in_ms > 0:
        return time.monotonic() + options.timeout_in_ms / 1000.0
    return None


def _check(cm, limit) -> None:
    if cm is not None and cm.is_cancelled:
        raise errors.CancelledError(None, None, "Step was cancelled")
    if limit is not None and time.monotonic() > limit:
        raise errors.DeadlineExceededError(None, None, "Timed out waiting for the step to "
                                           "complete")
