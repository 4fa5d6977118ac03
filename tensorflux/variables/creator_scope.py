"""`tf.variable_creator_scope` and `tf.init_scope` (graph mode)."""

from __future__ import annotations

import contextlib

from tensorflux.framework import graph as graph_lib
from tensorflux.variables import variables

__all__ = ["variable_creator_scope", "init_scope"]


@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """Routes every `tf.Variable` made in the default graph inside the scope (those of
    `tf.get_variable` too) through `variable_creator(next_creator, **kwargs)`
    (`tf.variable_creator_scope`).

    The creator sees the constructor's arguments as keywords (`initial_value`, `name`,
    `trainable`, ...), may change them, and returns `next_creator(**kwargs)` (or any
    variable). Nested scopes run innermost first.
    """
    g = graph_lib.get_default_graph()
    stack = getattr(g, "_variable_creator_stack", None)
    if stack is None:
        stack = g._variable_creator_stack = []
    stack.append(variable_creator)
    try:
        yield
    finally:
        stack.pop()


@contextlib.contextmanager
def init_scope():
    """Lifts the ops made inside out of control-flow contexts and control dependencies,
    keeping the name and device scopes (`tf.init_scope`, graph mode): where variables
    and their initializers are built."""
    with variables._init_scope(graph_lib.get_default_graph()):
        yield
