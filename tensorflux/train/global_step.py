"""The global step variable: `tf.train.get_or_create_global_step` and friends."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.variables import init_ops, variables


def get_global_step(graph=None):
    """The global step variable of `graph` (GLOBAL_STEP collection or `global_step:0`), or
    None.

    Raises:
      TypeError: the collection holds more than one, or it is not an integer variable.
    """
    graph = graph or graph_lib.get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        raise TypeError("Multiple global steps found in collection")
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    if not step.dtype.base_dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: {step.dtype}")
    return step


def create_global_step(graph=None):
    """Creates the int64 global step variable (ValueError if one exists)."""
    graph = graph or graph_lib.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError("\"global_step\" already exists.")
    with graph.as_default(), graph_lib.name_scope(None):
        return variables.Variable(
            init_ops.zeros_initializer()([], dtypes.int64), trainable=False,
            name="global_step", dtype=dtypes.int64,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The global step variable of `graph`, created if it does not exist yet."""
    graph = graph or graph_lib.get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def global_step(sess, global_step_tensor) -> int:
    """The current value of the global step, as a Python int."""
    return int(sess.run(global_step_tensor))
