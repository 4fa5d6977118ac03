"""FuncGraph: a Graph holding the body of a graph function (a dataset's map function, a
one-shot iterator's dataset factory), and FunctionRef, the value of a `func` attribute.

A function body is traced once, when the Python function is called on placeholder
arguments inside a FuncGraph; the runtime later runs the body as its own small step
(runtime/functions.py), never the Python function.

Invariants:
- `inputs` are the argument placeholders, then one placeholder per captured tensor, in
  capture order; `captures` lists the (outer tensor, inner placeholder) pairs. The op
  calling the function passes the outer tensors as its extra inputs (TensorFlow's
  `other_arguments`), so their values are read when that op runs.
- A tensor of an enclosing graph used inside the body is captured where it is first
  used (`get_graph_from_inputs` gives the function graph while it is the default graph,
  and `_create_op_internal` swaps every outside input for its placeholder). A tensor from
  a graph further out is captured by each graph in between.
- `outputs` are Identity ops of the body's results, so no output is an argument itself.
"""

from __future__ import annotations

import itertools

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor

_uids = itertools.count(1)


class FunctionRef(dict):
    """The value of a `func` attr: `{"name": ...}` (what the AttrValue proto holds) with the
    traced body in `.graph`."""

    def __init__(self, graph: FuncGraph):
        super().__init__(name=graph.name)
        self.graph = graph

    @property
    def name(self) -> str:
        return self["name"]


class FuncGraph(graph_lib.Graph):
    """The body of one graph function, built inside `outer_graph`.

    Args:
      name: the function's name (made unique with a counter, as TensorFlow's names are).
      outer_graph: the graph the function is used in (captures come from it).
    """

    def __init__(self, name: str, outer_graph: graph_lib.Graph):
        super().__init__()
        self.name = f"{name}_{next(_uids)}"
        self.outer_graph = outer_graph
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []
        self.captures: list[tuple[Tensor, Tensor]] = []
        self._captured: dict[Tensor, Tensor] = {}
        self._seed = outer_graph.seed
        self._graph_def_producer = outer_graph._graph_def_producer

    @property
    def building_function(self) -> bool:
        return True

    def add_argument(self, dtype, shape, name: str = "arg") -> Tensor:
        """A new placeholder argument of the function."""
        op = self._create_op_internal("Placeholder", (), {"dtype": dtype, "shape": shape},
                                      name)
        self.inputs.append(op.outputs[0])
        return op.outputs[0]

    def capture(self, tensor: Tensor) -> Tensor:
        """The placeholder standing for `tensor` of an enclosing graph (made on first use)."""
        if tensor.graph is self:
            return tensor
        inner = self._captured.get(tensor)
        if inner is not None:
            return inner
        outer = tensor
        if isinstance(self.outer_graph, FuncGraph) and tensor.graph is not self.outer_graph:
            outer = self.outer_graph.capture(tensor)
        with self._lock:
            saved, self._control_dependencies_stack = self._control_dependencies_stack, []
            try:
                op = self._create_op_internal(
                    "Placeholder", (), {"dtype": tensor.dtype.base_dtype,
                                        "shape": tensor.shape if tensor.shape.ndims is not None
                                        else None}, "capture")
            finally:
                self._control_dependencies_stack = saved
        inner = op.outputs[0]
        inner.set_shape(tensor.shape)
        self._captured[tensor] = inner
        self.captures.append((outer, inner))
        self.inputs.append(inner)
        return inner

    def set_outputs(self, tensors: list[Tensor]) -> None:
        """Records the results (each behind an Identity)."""
        outs = []
        for t in tensors:
            t = self.capture(t)
            op = self._create_op_internal("Identity", (t,), {"T": t.dtype.base_dtype},
                                          "Identity")
            outs.append(op.outputs[0])
        self.outputs = outs

    def _create_op_internal(self, op_type, inputs, attrs, name, output_dtypes=None,
                            compute_shapes=True, control_inputs=None):
        inputs = tuple(self.capture(t) if t.graph is not self else t for t in inputs)
        if control_inputs is not None:
            control_inputs = [c for c in control_inputs if c.graph is self]
        return super()._create_op_internal(op_type, inputs, attrs, name, output_dtypes,
                                           compute_shapes, control_inputs)

    def _control_inputs_for(self, inputs):
        return [c for c in super()._control_inputs_for(inputs) if c.graph is self]


def _output_arg(op, index: int) -> tuple[str, int]:
    """(output arg name, index within it) of output `index` of `op`, as FunctionDef node
    inputs name them ("mul:z:0")."""
    opdef = op._op_def
    if opdef is None:
        return "output", index
    k = 0
    for arg in opdef.outputs:
        if arg.number_attr:
            count = int(op._attrs.get(arg.number_attr, 1))
        elif arg.type_list_attr:
            count = len(op._attrs.get(arg.type_list_attr, ()))
        else:
            count = 1
        if index < k + count:
            return arg.name, index - k
        k += count
    return "output", index


def to_function_def(graph: FuncGraph):
    """`graph` as a FunctionDef: arguments as the signature's input args, the body's ops as
    its nodes (inputs spelled "node:output_arg:index"), the outputs as its return values."""
    from tensorflux.framework import graph_io
    from tensorflux.protos import function_pb2

    fd = function_pb2.FunctionDef()
    fd.signature.name = graph.name
    args = {}
    for t in graph.inputs:
        a = fd.signature.input_arg.add()
        a.name = t.op.name
        a.type = t.dtype.base_dtype.as_datatype_enum
        args[t] = t.op.name
    arg_ops = {t.op for t in graph.inputs}
    for op in graph.get_operations():
        if op in arg_ops:
            continue
        nd = fd.node_def.add()
        graph_io.fill_node_def(nd, op.name, op.type, op.device, op._attrs, op._op_def, [], [])
        for t in op.inputs:
            name = args.get(t)
            if name is None:
                out_name, i = _output_arg(t.op, t.value_index)
                name = f"{t.op.name}:{out_name}:{i}"
            nd.input.append(name)
        nd.input.extend("^" + c.name for c in sorted(op.control_inputs, key=lambda c: c.name))
    for i, t in enumerate(graph.outputs):
        key = "identity" if i == 0 else f"identity_{i}"
        a = fd.signature.output_arg.add()
        a.name = key
        a.type = t.dtype.base_dtype.as_datatype_enum
        fd.ret[key] = f"{t.op.name}:output:0"
    return fd


# ---- FunctionDef -> FuncGraph (GraphDef import) ----------------------------------------------

def _output_counts(nd, opdef) -> list[tuple[str, int]]:
    """(output arg name, how many tensors) of a NodeDef, from its OpDef and attrs."""
    out = []
    for arg in opdef.outputs:
        if arg.number_attr:
            av = nd.attr.get(arg.number_attr)
            count = av.i if av is not None else int(opdef.attrs[arg.number_attr].default or 1)
        elif arg.type_list_attr:
            av = nd.attr.get(arg.type_list_attr)
            count = len(av.list.type) if av is not None else 0
        else:
            count = 1
        out.append((arg.name, count))
    return out


def _flat_input(name: str, body: dict, args: set) -> str:
    """A FunctionDef input ("args_0", "mul:z:0", "^c") as a GraphDef input ("mul:0")."""
    from tensorflux.framework import op_registry

    if name.startswith("^") or name in args:
        return name
    parts = name.split(":")
    if len(parts) != 3:
        return name
    src, arg_name, idx = parts[0], parts[1], int(parts[2])
    nd = body.get(src)
    opdef = op_registry.lookup(nd.op) if nd is not None else None
    if opdef is None:
        return f"{src}:{idx}"
    k = 0
    for out_name, count in _output_counts(nd, opdef):
        if out_name == arg_name:
            return f"{src}:{k + idx}"
        k += count
    raise ValueError(f"Function input '{name}': node '{src}' has no output '{arg_name}'")


def function_from_def(fdef, library: dict, outer_graph: graph_lib.Graph,
                      built: dict) -> FuncGraph:
    """The FuncGraph of FunctionDef `fdef` (functions its body uses are built too, once
    each, into `built`)."""
    from tensorflux.framework import dtypes, importer
    from tensorflux.protos import graph_pb2

    name = fdef.signature.name
    if name in built:
        return built[name]
    g = FuncGraph(name, outer_graph)
    g.name = name
    built[name] = g
    body = {nd.name: nd for nd in fdef.node_def}
    args = {a.name for a in fdef.signature.input_arg}
    gd = graph_pb2.GraphDef()
    gd.versions.CopyFrom(outer_graph.graph_def_versions)
    for nd in fdef.node_def:
        new = gd.node.add()
        new.CopyFrom(nd)
        del new.input[:]
        new.input.extend(_flat_input(s, body, args) for s in nd.input)
    with g.as_default():
        input_map = {a.name: g.add_argument(dtypes.as_dtype(a.type), None, a.name)
                     for a in fdef.signature.input_arg}
        # only the arguments the body reads (a function may ignore one: `lambda key, w: ...`)
        read = {i.lstrip("^").partition(":")[0] for nd in gd.node for i in nd.input}
        importer.extend_graph(gd, input_map={f"{k}:0": v for k, v in input_map.items()
                                             if k in read})
        link_functions(g.get_operations(), library, g, built)
        outs = []
        for a in fdef.signature.output_arg:
            ret = fdef.ret[a.name]
            if ret in args:
                outs.append(input_map[ret])
            else:
                src, idx = _flat_input(ret, body, args).split(":")
                outs.append(g.get_operation_by_name(src).outputs[int(idx)])
        g.set_outputs(outs)
    return g


def link_functions(ops, library: dict, outer_graph: graph_lib.Graph, built: dict) -> None:
    """Replaces the function names that `ops`' `func` attrs hold with FunctionRefs of the
    FunctionDefs of `library` (name -> FunctionDef) they name."""
    for op in ops:
        opdef = op._op_def
        if opdef is None:
            continue
        for key, value in list(op._attrs.items()):
            adef = opdef.attrs.get(key)
            if adef is not None and adef.kind == "func" and isinstance(value, str) and \
                    value in library:
                op._attrs[key] = FunctionRef(function_from_def(library[value], library,
                                                               outer_graph, built))
