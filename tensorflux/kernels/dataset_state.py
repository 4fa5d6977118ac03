"""An iterator's state as bytes (SerializeIterator) and back (DeserializeIterator): what
`tf.data.experimental.make_saveable_from_iterator` puts into checkpoints.

The state is the dataset the iterator's pass runs over plus the pass's position:

- Every dataset kernel (kernels/cpu/dataset_ops.py) records on the Dataset it returns its
  *recipe*: the node (op type and attrs) and the input values (`record`). A Dataset is
  saved as a GraphDef of its recipes: one NodeDef per dataset op, its array inputs as Const
  nodes, the FunctionDefs of its functions in the library (as TensorFlow serializes a
  dataset's graph). Random seeds a kernel drew itself (seeds 0, 0) are saved as drawn
  (`Dataset.saved_inputs`), so the restored pass shuffles alike.
- The position is the number of elements (or per-element errors) the pass has given. A
  restore rebuilds the dataset by running the recipes' kernels on the restoring step's
  device and session, starts a pass and skips that many elements: the next element is the
  one after the saved position for every deterministic pipeline (TensorFlow saves each
  iterator's buffers instead; a replay costs the skipped elements' work again).

External state (`external_state_policy`, TF's ExternalStatePolicy WARN=0, IGNORE=1,
FAIL=2): a stateful op in a dataset function (a py_func, a random op, a variable read) or a
Python generator makes the state depend on something the checkpoint does not hold; FAIL
raises TensorFlow's FailedPreconditionError("<Op> is stateful."), WARN logs it, IGNORE
saves anyway (a replay then runs such functions again). Inputs that are not arrays (a
resource handle: a captured lookup table or variable) cannot be saved at all
(FailedPreconditionError).

The serialized value is a 1-D `variant` of two bytes elements: the GraphDef and
"<output node>:<position>".
"""

from __future__ import annotations

import hashlib
import logging

import numpy as np

from tensorflux.framework import (
    attr_values,
    dtypes,
    errors,
    func_graph,
    graph_io,
    op_registry,
    tensor_util,
)
from tensorflux.framework import graph as graph_lib
from tensorflux.kernels import datasets as ds_lib
from tensorflux.kernels import registry, variant_codec
from tensorflux.protos import function_pb2, graph_pb2

WARN, IGNORE, FAIL = 0, 1, 2

_log = logging.getLogger("tensorflux")

# Ops tensorflux marks stateful that TensorFlow lets a serialized dataset function hold.
_ALLOWED_STATEFUL = frozenset({"Assert", "Print", "PrintV2", "ReadFile", "MatchingFiles"})
# Dataset ops whose elements come from outside the graph, by the op TensorFlow names.
_EXTERNAL_SOURCES = {"PyGeneratorDataset": "EagerPyFunc"}


def record(ds, node, inputs) -> None:
    """Notes on Dataset `ds` that `node`'s kernel made it from `inputs` (its recipe)."""
    if isinstance(ds, ds_lib.Dataset) and not any(ds is x for x in inputs):
        ds.recipe = (node, tuple(inputs))


# ---- saving ------------------------------------------------------------------------------

def serialize(dataset: ds_lib.Dataset, position: int, policy: int) -> np.ndarray:
    """The state of a pass over `dataset` that has given `position` elements.

    Raises:
      FailedPreconditionError: external state under policy FAIL, or an input that cannot
        be saved.
    """
    gd = graph_pb2.GraphDef()
    names: dict[int, str] = {}
    attr_maps: list = []
    unsaved: list = []  # inputs that cannot be saved (reported after external state)
    out = _emit(dataset, gd, names, (attr_maps, unsaved, policy, True))
    graph_io.add_function_library(gd, attr_maps)
    for fdef in gd.library.function:
        for nd in fdef.node_def:
            if nd.op in _EXTERNAL_SOURCES:
                _external(_EXTERNAL_SOURCES[nd.op], policy)
            elif _stateful(nd.op):
                _external(nd.op, policy)
    if unsaved:
        raise unsaved[0]
    state = np.empty(2, dtype=object)
    state[0] = gd.SerializeToString()
    state[1] = f"{out}:{position}".encode()
    return state


def _stateful(op_type: str) -> bool:
    """Whether `op_type` in a dataset function is external state (dataset ops, stateful to
    keep them from being folded, are not: they are saved with the function)."""
    opdef = op_registry.lookup(op_type)
    return opdef is not None and opdef.is_stateful and op_type not in _ALLOWED_STATEFUL \
        and not (len(opdef.outputs) == 1 and "Dataset" in op_type and
                 opdef.outputs[0].dtype == dtypes.variant)


def _external(op_type: str, policy: int) -> None:
    if policy == FAIL:
        raise errors.FailedPreconditionError(None, None, f"{op_type} is stateful.")
    if policy == WARN:
        _log.warning("%s is stateful: the saved iterator state does not hold its state.",
                     op_type)


def _emit(ds, gd, names: dict, notes: tuple) -> str:
    """The name of `ds`'s node in `gd`, adding it (and its inputs) first if new; `notes`
    is (attr maps of the nodes, unsaveable inputs found, policy, whether seeds a kernel
    drew are saved as drawn)."""
    if id(ds) in names:
        return names[id(ds)]
    recipe = getattr(ds, "recipe", None)
    if recipe is None:
        raise errors.FailedPreconditionError(
            None, None, f"Cannot save the state of a {type(ds).__name__}: it was not made "
            "by a dataset op")
    node, inputs = recipe
    if node.op in _EXTERNAL_SOURCES:
        _external(_EXTERNAL_SOURCES[node.op], notes[2])
    sources = []
    for i, value in enumerate(ds.saved_inputs(list(inputs)) if notes[3] else inputs):
        sources.append((_input(value, f"{node.op}_{len(gd.node)}_{i}", node, gd, names,
                               notes), 0))
    name = f"{node.op}_{len(gd.node)}"
    graph_io.fill_node_def(gd.node.add(), name, node.op, "", node.attrs,
                           op_registry.lookup(node.op), sources, [])
    notes[0].append(node.attrs)
    names[id(ds)] = name
    return name


def _input(value, name: str, node, gd, names: dict, notes: tuple) -> str:
    inner = value.reshape(-1)[0] if isinstance(value, np.ndarray) and \
        value.dtype == object and value.size == 1 else value
    if isinstance(inner, ds_lib.Dataset):
        return _emit(inner, gd, names, notes)
    arr = np.asarray(value)
    if variant_codec.is_variant_array(arr):
        dtype = dtypes.variant  # ragged or sparse components (from_tensor_slices, ...)
    elif arr.dtype == object and all(isinstance(v, (bytes, str)) for v in arr.reshape(-1)):
        dtype = dtypes.string
    elif arr.dtype != object:
        dtype = dtypes.as_dtype(arr.dtype)
    else:
        notes[1].append(errors.FailedPreconditionError(
            None, None, f"Cannot save the state of a dataset whose {node.op} takes a "
            f"{type(inner).__name__} (only arrays and datasets can be saved)"))
        return name
    nd = gd.node.add()
    nd.name, nd.op = name, "Const"
    nd.attr["dtype"].type = dtype.as_datatype_enum
    try:
        proto = variant_codec.to_proto(arr) if dtype == dtypes.variant else \
            tensor_util.make_tensor_proto(arr, dtype=dtype)
    except errors.FailedPreconditionError as e:
        notes[1].append(errors.FailedPreconditionError(
            None, None, f"Cannot save the state of a dataset whose {node.op} takes "
            f"such a value: {e.message}"))
        return name
    nd.attr["value"].tensor.CopyFrom(proto)
    return name


def fingerprint(dataset: ds_lib.Dataset) -> int:
    """A 64-bit hash of what `dataset` is (its recipes' graph, as `serialize` writes it):
    equal for the same pipeline built again, in any graph or process (function names,
    which count up, are replaced by hashes of the functions' bodies; seeds a kernel drew
    itself count as the (0, 0) it was given). Inputs that cannot be saved (resources)
    count by their position only.

    Raises:
      FailedPreconditionError: a dataset that was not made by a dataset op.
    """
    gd = graph_pb2.GraphDef()
    attr_maps: list = []
    _emit(dataset, gd, {}, (attr_maps, [], IGNORE, False))
    graph_io.add_function_library(gd, attr_maps)
    library = {f.signature.name: f for f in gd.library.function}
    canonical: dict[str, str] = {}

    def name_of(fname: str) -> str:
        if fname not in canonical:
            canonical[fname] = "recursive"
            fdef = function_pb2.FunctionDef()
            fdef.CopyFrom(library[fname])
            fdef.signature.name = ""
            for nd in fdef.node_def:
                _rename_functions(nd, library, name_of)
            canonical[fname] = _digest(fdef)
        return canonical[fname]

    for nd in gd.node:
        _rename_functions(nd, library, name_of)
    del gd.library.function[:]
    return int(_digest(gd)[:16], 16)


def _digest(message) -> str:
    return hashlib.sha256(message.SerializeToString(deterministic=True)).hexdigest()


def _rename_functions(nd, library: dict, name_of) -> None:
    """Replaces the names of `library` functions `nd` calls or holds in attrs."""
    if nd.op in library:
        nd.op = name_of(nd.op)
    for av in nd.attr.values():
        if av.HasField("func") and av.func.name in library:
            av.func.name = name_of(av.func.name)
        for f in av.list.func:
            if f.name in library:
                f.name = name_of(f.name)


# ---- restoring ---------------------------------------------------------------------------

class _RecipeNode:
    """What a dataset kernel factory reads of its node, for a restored recipe."""

    __slots__ = ("name", "op", "attrs", "inputs", "device")

    def __init__(self, name: str, op: str, attrs: dict):
        self.name, self.op, self.attrs = name, op, attrs
        self.inputs: list = []
        self.device = ""


def deserialize(state, ctx) -> tuple[ds_lib.Dataset, int]:
    """(the dataset, the position) of a `serialize` state, the dataset rebuilt by its
    recipes' kernels on `ctx`'s device and session.

    Raises:
      InvalidArgumentError: `state` is not an iterator state.
    """
    flat = np.asarray(state, dtype=object).reshape(-1)
    try:
        gd = graph_pb2.GraphDef.FromString(bytes(flat[0]))
        out, _, position = bytes(flat[1]).decode().rpartition(":")
        position = int(position)
    except Exception as e:  # noqa: BLE001 - any malformed state
        raise errors.InvalidArgumentError(
            None, None, f"Could not parse the serialized iterator state: {e}") from None
    library = {f.signature.name: f for f in gd.library.function}
    outer, built = graph_lib.Graph(), {}
    values: dict[str, object] = {}
    for nd in gd.node:
        if nd.op == "Const":
            values[nd.name] = variant_codec.from_proto(nd.attr["value"].tensor)
            continue
        attrs = _attrs(nd, library, outer, built)
        kdef = registry.find_kernel(nd.op, "CPU", attrs)
        if kdef is None:
            raise errors.InvalidArgumentError(
                None, None, f"No kernel for {nd.op} in a saved iterator state")
        compute = kdef.factory(_RecipeNode(nd.name, nd.op, attrs))
        values[nd.name] = compute(ctx, *[values[i.partition(":")[0]] for i in nd.input])
    return ds_lib.as_dataset(values[out]), position


def _attrs(nd, library: dict, outer, built: dict) -> dict:
    opdef = op_registry.lookup(nd.op)
    attrs = {}
    for key, av in nd.attr.items():
        adef = opdef.attrs.get(key) if opdef is not None else None
        kind = adef.kind if adef is not None else None
        value = attr_values.from_proto(av, kind)
        if kind == "func":
            value = func_graph.FunctionRef(func_graph.function_from_def(
                library[value], library, outer, built))
        elif kind == "shape" and value is not None and value.ndims is None:
            value = None
        attrs[key] = value
    return attrs
