"""Calling graph functions from kernels (dataset map/filter functions, dataset factories).

A kernel holds a `func` attr (framework/func_graph.FunctionRef) and asks `instantiate` for
a callable `call(args) -> list of output values` that runs the function's body on the
kernel's device, as a small step of its own. Running a step is the runtime's business, a
layer above the kernels: runtime/functions.py registers the instantiator when imported
(the hook lets kernels call it without importing upward).
"""

from __future__ import annotations

from collections.abc import Callable

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
