"""Python functions that PyFunc nodes call, by token (TF's `FuncRegistry`).

`tf.py_func` registers its function here under a process-unique token ("pyfunc_0", ...)
stored in the node's `token` attr; the PyFunc kernel looks the token up when it runs. The
registry holds functions weakly; the graph that uses one keeps it alive (a list on the
graph), so a function lives exactly as long as some graph can still run it. It sits in
framework/ because both the op wrapper (ops/) and the kernel (kernels/) need it.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable

_funcs: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_strong: dict[str, Callable] = {}  # callables that cannot be weakly referenced
_counter = itertools.count()
_lock = threading.Lock()


def register(func: Callable, graph) -> str:
    """Registers `func` for `graph`; returns its new token."""
    with _lock:
        token = f"pyfunc_{next(_counter)}"
        try:
            _funcs[token] = func
        except TypeError:
            _strong[token] = func
    used = getattr(graph, "_py_funcs_used_in_graph", None)
    if used is None:
        used = graph._py_funcs_used_in_graph = []
    used.append(func)
    return token


def lookup(token: str) -> Callable | None:
    """The function registered under `token`, or None once its graph is gone."""
    func = _funcs.get(token)
    return func if func is not None else _strong.get(token)


def size() -> int:
    return len(_funcs) + len(_strong)
