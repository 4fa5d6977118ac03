"""The static frame of every node of a partition (paper §3.4), and the per-op facts it needs.

A while loop's nodes run in the frame named by the `frame_name` of the Enter nodes leading
into its body; everything else runs in the root frame "". Frames are assigned breadth first
from the sources (nodes without inputs), following each edge into the frame its producer's
outputs live in: an Enter's outputs live in its `frame_name`, an Exit's in the parent of its
own frame, anything else's in its own frame. The first Enter reaching a frame names its
parent. A node reached from two frames (a Merge may be: its NextIteration input comes from
the frame itself, its Enter input from outside) takes the first. `analyze` is the one
analysis; the dataflow executor (slots and pending counts per frame), the loop compiler
(which frames to compile) and the partitioner (which frames span devices and need a control
loop on each) all read it.

How the executor treats an op is an attribute of its definition (`define_op(..., flow_kind=,
control_flow=)`, framework/op_registry.py), read here once per node at build time.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorflux.framework import errors, op_registry
from tensorflux.runtime.step_graph import Node


def flow_kind(op_type: str) -> str | None:
    """The op's `flow_kind` ("merge", "enter", "exit", "next_iteration", "switch",
    "dead_aware"), or None for an ordinary op (or one without a definition)."""
    opdef = op_registry.lookup(op_type)
    return None if opdef is None else opdef.flow_kind


def is_control_flow(op_type: str) -> bool:
    """True for Switch, Merge, Enter, Exit, NextIteration, LoopCond and ControlTrigger."""
    opdef = op_registry.lookup(op_type)
    return opdef is not None and opdef.control_flow


@dataclass(slots=True)
class Frames:
    """The result of `analyze`.

    frame_of: node -> the name of its static frame.
    out_frame: node -> the frame its outputs live in (see the module docstring).
    parent: frame name -> its parent's name (None for the root frame "").
    consumers: node -> its consumers as (node, output index, or -1 for a control edge), in
      the order of `nodes` and of each consumer's inputs.
    """

    frame_of: dict[Node, str]
    out_frame: dict[Node, str]
    parent: dict[str, str | None]
    consumers: dict[Node, list[tuple[Node, int]]]


def consumers_of(nodes: list[Node]) -> dict[Node, list[tuple[Node, int]]]:
    """node -> [(consumer, output index or -1 for a control edge)], within `nodes`."""
    consumers: dict[Node, list[tuple[Node, int]]] = {n: [] for n in nodes}
    for n in nodes:
        for src, i in n.inputs:
            if src in consumers:
                consumers[src].append((n, i))
        for c in n.control_inputs:
            if c in consumers:
                consumers[c].append((n, -1))
    return consumers


def analyze(nodes: list[Node]) -> Frames:
    """The static frames of `nodes` (one partition).

    Raises:
      InvalidArgumentError: an Exit outside any frame, a node (other than a Merge) with
        inputs from two frames, or a node unreachable from every source (a cycle without
        an Enter).
    """
    consumers = consumers_of(nodes)
    kinds = {n: flow_kind(n.op) for n in nodes}
    frame_of: dict[Node, str] = {}
    out_frame: dict[Node, str] = {}
    parent: dict[str, str | None] = {"": None}
    work = [n for n in nodes if not n.inputs and not n.control_inputs]
    for n in work:
        frame_of[n] = ""
    k = 0
    while k < len(work):
        n = work[k]
        k += 1
        f = frame_of[n]
        kind = kinds[n]
        if kind == "enter":
            out = n.attrs.get("frame_name", "")
            parent.setdefault(out, f)
        elif kind == "exit":
            if parent[f] is None:
                raise errors.InvalidArgumentError(
                    None, None, f"Exit node {n.name} is not inside a while loop frame")
            out = parent[f]
        else:
            out = f
        out_frame[n] = out
        for c, _ in consumers[n]:
            seen = frame_of.get(c)
            if seen is None:
                frame_of[c] = out
                work.append(c)
            elif seen != out and kinds[c] != "merge":
                raise errors.InvalidArgumentError(
                    None, None, f"Node {c.name} has inputs from different frames: "
                    f"'{seen}' and '{out}'")
    if len(frame_of) != len(nodes):
        n = next(n for n in nodes if n not in frame_of)
        raise errors.InvalidArgumentError(
            None, None, f"Node {n.name} is not reachable from any source (a cycle without a "
            "while-loop frame?)")
    return Frames(frame_of, out_frame, parent, consumers)
