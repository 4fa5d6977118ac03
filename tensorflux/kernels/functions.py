"""Calling graph functions from kernels (dataset map/filter functions, dataset factories).

A kernel holds a `func` attr (framework/func_graph.FunctionRef) and asks `instantiate` for
a callable `call(args) -> list of output values` that runs the function's body on the
kernel's device, as a small step of its own. Running a step is the runtime's business, a
layer above the kernels: runtime/functions.py registers the instantiator when imported
(the hook lets kernels call it without importing upward).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tensorflux.framework import errors

_instantiator: Callable | None = None


def register_instantiator(fn: Callable) -> None:
    """Sets `fn(func_graph, device, session) -> call`, the runtime's function builder."""
    global _instantiator
    _instantiator = fn


def instantiate(func, ctx) -> Callable[[list], list]:
    """A callable running `func`'s body on `ctx`'s device.

    Raises:
      NotFoundError: `func` names a function whose body this process does not hold.
      UnimplementedError: no runtime registered an instantiator.
    """
    graph = getattr(func, "graph", None)
    if graph is None:
        name = func.get("name", "") if isinstance(func, dict) else func
        raise errors.NotFoundError(None, None, f"Function {name} is not defined.")
    if _instantiator is None:
        raise errors.UnimplementedError(None, None, "No runtime to run graph functions")
    return _instantiator(graph, ctx.device, ctx.session)


# Stateless ops that may compute constants in a row-wise body (a parse's defaults).
_CONSTANT_OPS = {"Const", "Identity", "Reshape", "Cast", "Pack", "ExpandDims", "Fill"}


def row_wise(func) -> bool:
    """Whether `func`'s body, given its one scalar argument stacked along a new first
    dimension, gives its outputs stacked the same way (so `n` calls may run as one).

    Recognised today: one ParseExampleV2 (parse_single_example) of the argument with only
    fixed-shape dense features, no example names and keys and defaults computed from
    constants, its outputs (or the argument) returned directly or through Identity.
    Anything else is not row-wise.
    """
    graph = getattr(func, "graph", None)
    if graph is None or len(graph.inputs) != 1 or graph.inputs[0].shape.ndims != 0:
        return False
    if getattr(graph, "captures", None):
        return False
    arg = graph.inputs[0]
    constant: set = set()  # ops computing constants
    rows: set = {arg.op}  # ops whose outputs are stacked by rows
    parses = 0
    for op in graph.get_operations():  # in creation order: inputs come first
        if op is arg.op:
            continue
        srcs = {t.op for t in op.inputs} | set(op.control_inputs)
        if op.type in _CONSTANT_OPS and srcs <= constant:
            constant.add(op)
        elif op.type == "Identity" and srcs <= rows:
            rows.add(op)
        elif op.type == "ParseExampleV2" and _row_wise_parse(op, arg, constant):
            parses += 1
            rows.add(op)
        else:
            return False
    return parses == 1 and all(t.op in rows for t in graph.outputs)


def _row_wise_parse(op, arg, constant: set) -> bool:
    attrs = op._attrs
    if attrs.get("num_sparse") or attrs.get("ragged_value_types") or op.control_inputs:
        return False
    if any(s.ndims is None or not s.is_fully_defined() for s in attrs["dense_shapes"]):
        return False
    serialized, names, *rest = op.inputs
    if serialized is not arg or any(t.op not in constant for t in [names, *rest]):
        return False
    return names.op.type == "Const" and np.asarray(names.op._attrs["value"]).size == 0
