"""`tf.saved_model.main_op`: the init ops a SavedModel loader runs after restoring."""

from __future__ import annotations

from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.lookup.lookup_ops import tables_initializer
from tensorflux.variables.variables import local_variables_initializer

__all__ = ["main_op", "main_op_with_restore"]


def main_op():
    """One op that initializes the local variables and the lookup tables."""
    return builders.group(local_variables_initializer(), tables_initializer())


def main_op_with_restore(restore_op_name):
    """`main_op()`, run after the op named `restore_op_name`."""
    graph = graph_lib.get_default_graph()
    with graph.control_dependencies([graph.as_graph_element(restore_op_name)]):
        return main_op()
