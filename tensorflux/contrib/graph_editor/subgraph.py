"""`tf.contrib.graph_editor.subgraph`: SubGraphView, a view on some ops of a graph with
their boundary: the tensors coming in from outside (inputs) and going out (outputs), in an
order the view may remap, plus passthrough tensors that are both."""

from __future__ import annotations

import copy as copy_lib

from tensorflux.contrib.graph_editor import select, util
from tensorflux.framework import graph as graph_lib

__all__ = ["SubGraphView", "make_view", "make_view_from_scope"]


def _finalize_index(index_or_t, ts):
    return index_or_t if isinstance(index_or_t, int) else ts.index(index_or_t)


def _finalize_indices(list_of_index_or_t, ts):
    return [_finalize_index(x, ts) for x in list_of_index_or_t]


def _check_within_range(mapping, n, repetition):
    for i in mapping:
        if not 0 <= i < n:
            raise ValueError(f"Out of [0, {n}[ range: {i}")
    if not repetition and len(set(mapping)) != len(mapping):
        raise ValueError(f"Found repetition in mapping: {mapping}")


class SubGraphView:
    """A subgraph view on an existing graph: `ops` (its ops, in the given order), `inputs`
    (tensors consumed inside and produced outside), `outputs` (tensors produced inside and
    consumed outside or by nobody) and `passthroughs` (tensors given as such that are
    neither: both inputs and outputs of the view). The remap_* methods reorder, drop or
    repeat inputs and outputs; they return a new view.
    """

    def __init__(self, inside_ops=(), passthrough_ts=()):
        inside_ops = util.make_list_of_op(inside_ops)
        passthrough_ts = util.make_list_of_t(passthrough_ts)
        if inside_ops or passthrough_ts:
            self._graph = util.get_unique_graph(inside_ops + passthrough_ts)
            self._ops = inside_ops
            inputs, outputs, insides = select.compute_boundary_ts(inside_ops)
            boundary = frozenset(inputs + outputs + list(insides))
            self._passthrough_ts = [t for t in passthrough_ts if t not in boundary]
            self._input_ts = inputs + self._passthrough_ts
            self._output_ts = outputs + self._passthrough_ts
        else:
            self._graph = None
            self._passthrough_ts, self._input_ts, self._output_ts, self._ops = [], [], [], []

    def __copy__(self):
        cls = self.__class__
        result = cls.__new__(cls)
        for k, v in self.__dict__.items():
            setattr(result, k, list(v) if isinstance(v, list) else v)
        return result

    def _assign_from(self, other):
        """Takes `other`'s ops, inputs, outputs and passthroughs (in place).

        Raises:
          TypeError: `other` is not a SubGraphView.
        """
        if not isinstance(other, SubGraphView):
            raise TypeError(f"Expected SubGraphView, got: {type(other)}")
        self._graph = other._graph
        self._ops = list(other._ops)
        self._passthrough_ts = list(other._passthrough_ts)
        self._input_ts = list(other._input_ts)
        self._output_ts = list(other._output_ts)

    def copy(self):
        """A copy of this view (the graph is shared)."""
        return copy_lib.copy(self)

    def _remap_default(self, remove_input_map=True, remove_output_map=True):
        if not remove_input_map and not remove_output_map:
            return
        inputs, outputs, _ = select.compute_boundary_ts(self._ops)
        if remove_input_map:
            self._input_ts = list(inputs) + self._passthrough_ts
        if remove_output_map:
            self._output_ts = list(outputs) + self._passthrough_ts

    def remap_default(self, remove_input_map=True, remove_output_map=True):
        """A copy with the inputs and/or outputs back in their default order."""
        res = self.copy()
        res._remap_default(remove_input_map, remove_output_map)
        return res

    def _remap_inputs(self, new_input_indices):
        new_input_indices = _finalize_indices(new_input_indices, self._input_ts)
        _check_within_range(new_input_indices, len(self._input_ts), repetition=False)
        self._input_ts = [self._input_ts[i] for i in new_input_indices]

    def _remap_outputs(self, new_output_indices):
        new_output_indices = _finalize_indices(new_output_indices, self._output_ts)
        _check_within_range(new_output_indices, len(self._output_ts), repetition=True)
        self._output_ts = [self._output_ts[i] for i in new_output_indices]

    def _remap_outputs_make_unique(self):
        self._output_ts = util.concatenate_unique([], self._output_ts)

    def _remap_outputs_to_consumers(self):
        self._remap_outputs_make_unique()
        self._output_ts = [t for t in self._output_ts for _ in range(len(t.consumers()))]

    def remap_outputs_make_unique(self):
        """A copy whose outputs are unique (first occurrences kept)."""
        res = self.copy()
        res._remap_outputs_make_unique()
        return res

    def remap_outputs_to_consumers(self):
        """A copy with each output repeated once per consumer."""
        res = self.copy()
        res._remap_outputs_to_consumers()
        return res

    def remap_inputs(self, new_input_indices):
        """A copy whose inputs are the ones at `new_input_indices` (indices or tensors;
        no repetition).

        Raises:
          ValueError: an index is out of range or repeated.
        """
        res = self.copy()
        res._remap_inputs(new_input_indices)
        return res

    def remap_outputs(self, new_output_indices):
        """A copy whose outputs are the ones at `new_output_indices` (repetition allowed).

        Raises:
          ValueError: an index is out of range.
        """
        res = self.copy()
        res._remap_outputs(new_output_indices)
        return res

    def remap(self, new_input_indices=None, new_output_indices=None):
        """A copy with inputs and outputs remapped (None: unchanged)."""
        res = self.copy()
        if new_input_indices is not None:
            res._remap_inputs(new_input_indices)
        if new_output_indices is not None:
            res._remap_outputs(new_output_indices)
        return res

    def find_op_by_name(self, op_name):
        """The op of this view named `op_name`.

        Raises:
          ValueError: no such op in the view.
        """
        found = [op for op in self._ops if op.name == op_name]
        if not found:
            raise ValueError(f"{op_name} not in subgraph.")
        return found[0]

    def __str__(self):
        if not self:
            return "SubGraphView: empty"

        def names(items):
            return ", ".join(item.name for item in items)

        return (f"SubGraphView (graphid={id(self._graph)}):\n"
                f"** ops[{len(self._ops)}]: {names(self._ops)}\n"
                f"** inputs[{len(self._input_ts)}]: {names(self._input_ts)}\n"
                f"** outputs[{len(self._output_ts)}]: {names(self._output_ts)}")

    __repr__ = __str__

    @property
    def graph(self):
        """The graph of this view (None when empty)."""
        return self._graph

    @property
    def ops(self):
        return util.ListView(self._ops)

    @property
    def inputs(self):
        return util.ListView(self._input_ts)

    @property
    def connected_inputs(self):
        """The inputs that are not passthroughs."""
        return [t for t in self._input_ts if t not in self._passthrough_ts]

    @property
    def outputs(self):
        return util.ListView(self._output_ts)

    @property
    def connected_outputs(self):
        """The outputs that are not passthroughs."""
        return [t for t in self._output_ts if t not in self._passthrough_ts]

    @property
    def passthroughs(self):
        return util.ListView(self._passthrough_ts)

    def __bool__(self):
        return self._graph is not None

    def op(self, op_id):
        return self._ops[op_id]

    def is_passthrough(self, t) -> bool:
        return t in self._passthrough_ts

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return None

    def input_index(self, t) -> int:
        """The index of `t` among the inputs.

        Raises:
          ValueError: `t` is not an input.
        """
        try:
            return self._input_ts.index(t)
        except ValueError:
            raise ValueError(f"Can't find {t.name} in inputs of subgraph.") from None

    def output_index(self, t) -> int:
        """The index of `t` among the outputs.

        Raises:
          ValueError: `t` is not an output.
        """
        try:
            return self._output_ts.index(t)
        except ValueError:
            raise ValueError(f"Can't find {t.name} in outputs of subgraph.") from None

    def consumers(self) -> list:
        """The ops outside the view that read its outputs."""
        inside = frozenset(self._ops)
        res = []
        for t in self._output_ts:
            util.concatenate_unique(res, [op for op in t.consumers() if op not in inside])
        return res


def _check_graph(sgv, graph):
    if not isinstance(sgv, SubGraphView):
        raise TypeError(f"Expected a SubGraphView, got: {type(sgv)}")
    if graph is None or not sgv.graph:
        return sgv
    if not isinstance(graph, graph_lib.Graph):
        raise TypeError(f"Expected a tf.Graph, got: {type(graph)}")
    if sgv.graph is not graph:
        raise ValueError("Graph mismatch.")
    return sgv


def make_view(*args, **kwargs):
    """A SubGraphView of the ops and tensors `args` selects (`select.select_ops_and_ts`:
    ops, lists of ops, regular expressions with `graph=`, "(?#ts)" ones for passthrough
    tensors), or the view itself if given one.

    Raises:
      TypeError: `graph=` is not a tf.Graph.
      ValueError: the view's graph is not `graph=`.
    """
    graph = kwargs.get("graph")
    if len(args) == 1 and isinstance(args[0], SubGraphView):
        return _check_graph(args[0], graph)
    ops, ts = select.select_ops_and_ts(*args, **kwargs)
    return _check_graph(SubGraphView(ops, ts), graph)


def make_view_from_scope(scope, graph):
    """A SubGraphView of the ops of `graph` in name scope `scope`."""
    return SubGraphView(select.get_name_scope_ops(graph, scope))
