"""Runs graph functions (framework/func_graph.FuncGraph) for kernels that call them.

A function body is prepared as a step of its own, once per calling kernel:
pruned to its outputs with its argument placeholders as feeds (step_graph.build), every
node on the calling kernel's device, then the executors `exec_options.choose_strategies`
picks for it, like any step (graph_runner.GraphRunner). Each call runs that step with the
arguments as its feeds; calls may run concurrently from many threads (a parallel map).
Importing this module registers the instantiator with kernels/functions.py.
"""

from __future__ import annotations

import itertools

from tensorflux.framework import errors
from tensorflux.kernels import functions as kernel_functions
from tensorflux.runtime import graph_optimizer
from tensorflux.runtime import step_graph as step_graph_lib
from tensorflux.runtime.exec_options import ExecOptions
from tensorflux.runtime.graph_runner import GraphRunner

# Step ids of function calls: far from a session's own (which count up from 1).
_step_ids = itertools.count(1 << 48)


class FunctionCall:
    """A function body ready to run on one device: `call(args) -> list of outputs`."""

    def __init__(self, graph, device, session):
        sg = step_graph_lib.build(list(graph.inputs), list(graph.outputs), [])
        graph_optimizer.optimize(sg, None)
        for n in sg.nodes:
            n.device = device.name
        options = getattr(session, "_exec_options", None) or ExecOptions()
        n_out = len(sg.fetches)
        self._runner = GraphRunner([(device, sg.nodes, list(sg.fetches), list(range(n_out)))],
                                   options, n_out, graph)
        self._session = session
        self.name = graph.name

    def __call__(self, args) -> list:
        if getattr(self._session, "_closed", False):
            # A background thread (prefetch, parallel map) finishing after Session.close:
            # its device's thread pool is gone, and nothing may start it again.
            raise errors.CancelledError(None, None, "Session was closed")
        return self._runner.run(self._session, next(_step_ids), list(args), None)


def instantiate(graph, device, session) -> FunctionCall:
    """A FunctionCall of `graph` on `device` for `session` (callers keep it for reuse)."""
    return FunctionCall(graph, device, session)


kernel_functions.register_instantiator(instantiate)
