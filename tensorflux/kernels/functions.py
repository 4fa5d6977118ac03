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


# Ops a row-wise function body may hold besides its argument and constants: each maps a
# leading batch dimension of its input to the same leading dimension of its outputs.
_ROW_WISE = {"Identity"}


def row_wise(func) -> bool:
    """Whether `func`'s body, given its one scalar argument stacked along a new first
    dimension, gives its outputs stacked the same way (so `n` calls may run as one).

    Recognised today: one ParseExampleV2 (parse_single_example) of the argument with only
    fixed-shape dense features, constant keys and defaults and no example names, its
    outputs returned directly or through Identity. Anything else is not row-wise.
    """
    graph = getattr(func, "graph", None)
    if graph is None or len(graph.inputs) != 1 or graph.inputs[0].shape.ndims != 0:
        return False
    if getattr(graph, "captures", None):
        return False
    arg = graph.inputs[0]
    parses = 0
    for op in graph.get_operations():
        if op is arg.op or op.type == "Const":
            continue
        if op.type == "ParseExampleV2":
            parses += 1
            if not _row_wise_parse(op, arg):
                return False
        elif op.type not in _ROW_WISE or any(t.op.type == "Const" for t in op.inputs):
            return False
    return parses == 1 and all(_stacked(t, arg) for t in graph.outputs)


def _stacked(t, arg) -> bool:
    """Whether output `t` comes from the argument or the parse (not a constant)."""
    while t.op.type == "Identity":
        t = t.op.inputs[0]
    return t is arg or t.op.type == "ParseExampleV2"


def _row_wise_parse(op, arg) -> bool:
    attrs = op._attrs
    if attrs.get("num_sparse") or attrs.get("ragged_value_types"):
        return False
    if any(s.ndims is None or not s.is_fully_defined() for s in attrs["dense_shapes"]):
        return False
    serialized, names, *rest = op.inputs
    if serialized is not arg:
        return False
    if any(t.op.type != "Const" for t in [names, *rest]):
        return False
    return np.asarray(names.op._attrs["value"]).size == 0
