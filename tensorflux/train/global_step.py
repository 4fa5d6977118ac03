"""The global step variable: `tf.train.get_or_create_global_step` and friends."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.variables import init_ops, variable_scope, variables


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
        # A variable named "global_step" outside the collection (TF1 scripts make it with
        # tf.Variable(0, name="global_step")): the variable itself, not its resource
        # handle, whose tensor has that name.
        named = [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
                 if getattr(v, "name", None) == "global_step:0"]
        if named:
            step = named[0]
        else:
            try:
                step = graph.get_tensor_by_name("global_step:0")
            except KeyError:
                return None
    if not step.dtype.base_dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: {step.dtype}")
    return step


def create_global_step(graph=None):
    """Creates the int64 scalar global step variable, initialized to 0.

    Args:
      graph: the graph (default: the default graph).

    Returns:
      The new variable ("global_step", in GLOBAL_VARIABLES and GLOBAL_STEP).

    Raises:
      ValueError: the graph already has a global step.
    """
    graph = graph or graph_lib.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError("\"global_step\" already exists.")
    # Made by get_variable, as TF makes it: in the current variable scope, its zeros
    # initializer under "global_step/Initializer" and colocated with it (on its ps task).
    with graph.as_default(), graph_lib.name_scope(None):
        return variable_scope.get_variable(
            GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64,
            initializer=init_ops.zeros_initializer(), trainable=False,
            aggregation=variables.VariableAggregation.ONLY_FIRST_REPLICA,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The global step variable of `graph`, created if it does not exist yet."""
    graph = graph or graph_lib.get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


_READ_KEY = "global_step_read_op_cache"  # (TF's collection name)


def _get_or_create_global_step_read(graph=None):
    """The tensor hooks fetch for the global step (TF's `training_util`'s private helper):
    its value plus 0, made once per graph and kept in a collection. Not the variable
    itself, whose fetch shows the step's own increment (step_graph: a fetched variable is
    read after the step's updates); the hooks count on the value before it. None without a
    global step."""
    graph = graph or graph_lib.get_default_graph()
    cached = graph.get_collection(_READ_KEY)
    if cached:
        return cached[0]
    step = get_global_step(graph)
    if step is None:
        return None
    with graph.as_default(), graph_lib.name_scope(None), \
            graph_lib.name_scope(step.op.name + "/"):
        value = step.read_value() if hasattr(step, "read_value") else step
        read = value + 0
    graph.add_to_collection(_READ_KEY, read)
    return read


def global_step(sess, global_step_tensor) -> int:
    """The current value of the global step, as a Python int."""
    return int(sess.run(global_step_tensor))
