"""`tf.custom_gradient` in graph mode, and `tf.no_gradient`.

The decorated function runs once, building its forward ops, and returns `(y, grad_fn)`.
Its results and arguments (and reads of the variables it read) then pass through one
IdentityN whose gradient is overridden (`gradient_override_map`) by a function registered
under a fresh name: that gradient calls `grad_fn` on the gradients of the results and
returns them for the arguments (and variables), None for the results themselves, so
`tf.gradients` never looks inside the forward computation.
"""

from __future__ import annotations

import functools
import inspect
import itertools

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import op_registry
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops

__all__ = ["custom_gradient", "no_gradient"]

_ids = itertools.count()
_READ_OPS = ("ReadVariableOp", "ResourceGather")


def no_gradient(op_type: str) -> None:
    """Declares that ops of `op_type` have no gradient (`tf.no_gradient`)."""
    op_registry.not_differentiable(op_type)


def custom_gradient(f=None):
    """Decorator giving `f` its own gradient (`tf.custom_gradient`, graph mode).

    `f(*args)` returns `(y, grad_fn)`: `y` a Tensor or a (nested) list/tuple of them, and
    `grad_fn(*dys)` the gradients with respect to `args` (one per argument). If `f` reads
    variables, `grad_fn(*dys, variables=...)` returns `(arg_grads, variable_grads)`.

    Raises:
      ValueError: keyword arguments (TF1 graph mode has none), or `grad_fn` returns the
        wrong number of gradients (when the gradient is built).
      TypeError: `f` reads variables but `grad_fn` takes no `variables` argument.
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        return _graph_mode(f, args, kwargs)

    return decorated


def _flatten(x) -> list:
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _flatten(item)]
    return [x]


def _pack(structure, flat: list):
    it = iter(flat)

    def rebuild(s):
        if isinstance(s, (list, tuple)):
            items = [rebuild(item) for item in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(it)

    return rebuild(structure)


def _accepts_variables(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in params)


def _variables_read(g, first_op: int, args) -> list:
    """The variables whose values the ops made since `first_op` read."""
    handles = {}
    for op in g._ops[first_op:]:
        if op.type in _READ_OPS:
            handles.setdefault(op.inputs[0].name, op.inputs[0])
    found = []
    for key in (graph_lib.GraphKeys.GLOBAL_VARIABLES, graph_lib.GraphKeys.LOCAL_VARIABLES):
        for v in g.get_collection(key):
            handle = getattr(v, "handle", None)
            if handle is not None and handle.name in handles and \
                    v not in found:
                found.append(v)
    return found


def _graph_mode(f, args, kwargs):
    if kwargs:
        raise ValueError("The custom_gradient decorator currently supports keywords "
                         "arguments only when eager execution is enabled.")
    g = graph_lib.get_default_graph()
    args = [convert_to_tensor(a) for a in args]
    first_op = len(g._ops)
    result, grad_fn = f(*args)
    variables = _variables_read(g, first_op, args)
    if variables and not _accepts_variables(grad_fn):
        raise TypeError("@tf.custom_gradient grad_fn must accept keyword argument "
                        "'variables', since function uses variables: "
                        f"{[v.name for v in variables]}")
    flat_result = [convert_to_tensor(t) for t in _flatten(result)]
    n_results, n_args = len(flat_result), len(args)
    name = f"CustomGradient-{next(_ids)}"

    @op_registry.gradient(name)
    def _grad(op, *result_grads):
        dys = result_grads[:n_results]
        if variables:
            arg_grads, var_grads = grad_fn(*dys, variables=variables)
            var_grads = list(var_grads)
            if len(var_grads) != len(variables):
                raise ValueError("Must return gradient for each variable from "
                                 "@custom_gradient grad_fn.")
        else:
            arg_grads, var_grads = grad_fn(*dys), []
        arg_grads = list(arg_grads) if isinstance(arg_grads, (list, tuple)) else [arg_grads]
        if len(arg_grads) != n_args:
            raise ValueError(f"custom_gradient function expected to return {n_args} "
                             f"gradients, but returned {len(arg_grads)} instead.")
        return [None] * n_results + arg_grads + var_grads

    # Variables enter as fresh reads: their gradient passes on to the handle.
    inputs = flat_result + list(args) + [v.value() for v in variables]
    with g.gradient_override_map({"IdentityN": name}):
        outputs = array_ops.identity_n(inputs)
    return _pack(result, list(outputs[:n_results]))
