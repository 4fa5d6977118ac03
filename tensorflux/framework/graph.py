"""Graph: a set of Operations, plus the construction-time scopes of TF1.

Scopes (name, control dependencies, device, colocation, container) are stacks on the Graph
and are read when an op is created; the default-graph stack is per thread, as in TF1.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from tensorflux.framework import attr_values, device_spec, dtypes, graph_io, op_registry
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.protos import versions_pb2

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


class GraphKeys:
    """Standard names for graph collections (`tf.GraphKeys`)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


class _ControlDependencies:
    """One `control_dependencies` scope: its control ops and the ops created inside it."""

    __slots__ = ("ops", "seen")

    def __init__(self, ops: list[Operation]):
        self.ops = ops
        self.seen: set[Operation] = set()


class Graph:
    """A TensorFlow computation: Operations connected by Tensors.

    Graphs are not thread-safe for concurrent construction beyond what TF1 promises (op
    creation itself takes a lock), and are safe to run from many sessions and threads.
    """

    def __init__(self):
        self._lock = threading.RLock()
        self._ops: list[Operation] = []
        self._ops_by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._control_dependencies_stack: list[_ControlDependencies] = []
        self._device_function_stack: list[Callable | None] = []
        self._colocation_stack: list[Operation] = []
        self._container = ""
        self._collections: dict[str, list] = {}
        self._finalized = False
        self._seed: int | None = None
        self._last_op_seed = 0  # ops without an explicit seed take successive op seeds
        self._gradient_override_map: dict[str, str] = {}
        self._unfeedable: set[Tensor] = set()
        self._unfetchable: set[Operation] = set()
        self._control_flow_context = None
        self._mutation_version = 0  # bumped when an existing op changes
        self._graph_def_producer = 1205  # a TF 2.x GraphDef producer version

    # ---- default graph ------------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        """Makes this the default graph of the current thread within the `with` block."""
        _default_graph_stack.push(self)
        try:
            yield self
        finally:
            _default_graph_stack.pop(self)

    # ---- lookup -------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    @property
    def version(self) -> int:
        return len(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        t = self.as_graph_element(name, allow_tensor=True, allow_operation=False)
        if t._op._type == "VarHandleOp":
            # TensorFlow 1's "v:0" is the variable's ref tensor: it has the variable's shape,
            # ops read it as a value, a fetch gives the value. tensorflux's "v:0" is the
            # resource handle, so the lookup answers with the variable itself when a
            # tf.Variable owns that handle (e.g. after import_meta_graph).
            for key in ("variables", "local_variables"):
                for v in self._collections.get(key, ()):
                    if getattr(v, "op", None) is t._op:
                        return v
        return t

    def _get_operation_by_name_unsafe(self, name: str) -> Operation:
        return self._ops_by_name[name]

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolves a Tensor, Operation or name (`"op"` or `"op:0"`) to an element of this graph.

        Raises:
          TypeError: `obj` is of a kind not allowed.
          ValueError: `obj` names nothing in this graph, or belongs to another graph.
          KeyError: the named operation or output does not exist.
        """
        if allow_tensor and isinstance(obj, Tensor):
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if allow_operation and isinstance(obj, Operation):
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        if hasattr(obj, "_as_graph_element") and callable(obj._as_graph_element):
            return self.as_graph_element(obj._as_graph_element(), allow_tensor, allow_operation)
        if isinstance(obj, bytes):
            obj = obj.decode()
        if not isinstance(obj, str):
            kinds = " or ".join(k for k, ok in (("Tensor", allow_tensor),
                                                ("Operation", allow_operation)) if ok)
            raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")
        if ":" in obj:
            if not allow_tensor:
                raise ValueError(f"Name '{obj}' appears to refer to a Tensor, not an Operation.")
            op_name, _, index = obj.rpartition(":")
            try:
                out = int(index)
            except ValueError:
                raise ValueError(f"The name '{obj}' looks a like a Tensor name, but is not a "
                                 "valid one. Tensor names must be of the form "
                                 '"<op_name>:<output_index>".') from None
            op = self._ops_by_name.get(op_name)
            if op is None:
                raise KeyError(f"The name '{obj}' refers to a Tensor which does not exist. The "
                               f"operation, '{op_name}', does not exist in the graph.")
            if not 0 <= out < len(op._outputs):
                raise KeyError(f"The name '{obj}' refers to a Tensor which does not exist. The "
                               f"operation, '{op_name}', exists but only has "
                               f"{len(op._outputs)} outputs.")
            return op._outputs[out]
        op = self._ops_by_name.get(obj)
        if op is None:
            raise KeyError(f"The name '{obj}' refers to an Operation not in the graph.")
        if not allow_operation:
            raise ValueError(f"The name '{obj}' refers to an Operation, not a Tensor. Tensor "
                             f"names must be of the form \"<op_name>:<output_index>\".")
        return op

    # ---- names --------------------------------------------------------------------------
    def get_name_scope(self) -> str:
        return self._name_stack

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`name` prefixed by the current name scope, with `_N` appended if already taken."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()  # TF treats names case-insensitively for uniqueness
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = key
            while True:
                candidate = f"{base}_{count}"
                if candidate not in self._names_in_use:
                    break
                count += 1
            if mark_as_used:
                self._names_in_use[candidate] = 1
            name = f"{name}_{count}"
        return name

    @contextlib.contextmanager
    def name_scope(self, name: str | None):
        """Pushes a name scope; yields the scope string (ending in "/") or "" at the top.

        A name ending in "/" is used as given (re-entering an existing scope); None or ""
        resets to the top-level scope.
        """
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            if not _VALID_SCOPE_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new = name[:-1]
        else:
            if not _VALID_SCOPE_NAME.match(name) or not name:
                raise ValueError(f"'{name}' is not a valid scope name")
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            self._name_stack = old

    # ---- control dependencies -----------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Iterable | None):
        """Ops created in the block run after every op in `control_inputs`.

        `None` clears all enclosing control dependencies within the block.
        """
        if control_inputs is None:
            saved = self._control_dependencies_stack
            self._control_dependencies_stack = []
            try:
                yield None
            finally:
                self._control_dependencies_stack = saved
            return
        ops: dict[Operation, None] = {}  # an ordered set
        current = {op for c in self._control_dependencies_stack for op in c.ops}
        for c in control_inputs:
            if hasattr(c, "_as_graph_element") and not isinstance(c, (Tensor, Operation)):
                c = c._as_graph_element()
            if isinstance(c, Tensor):
                c = c.op
            elif callable(c) and not isinstance(c, Operation):
                c = c()
                c = c.op if isinstance(c, Tensor) else c
            if not isinstance(c, Operation):
                raise TypeError(f"Control input must be Operation or Tensor: {c}")
            if c.graph is not self:
                raise ValueError(f"Control input {c.name} must be from the same graph.")
            if c not in current:
                ops[c] = None
        controller = _ControlDependencies(list(ops))
        self._control_dependencies_stack.append(controller)
        try:
            yield None
        finally:
            self._control_dependencies_stack.remove(controller)

    def _control_inputs_for(self, inputs: tuple[Tensor, ...]) -> list[Operation]:
        """Control inputs a new op takes from the enclosing control_dependencies scopes.

        A scope's control ops are skipped when one of the new op's inputs was itself created
        inside that scope, and so is a control op that already feeds a data input: in both
        cases the dependency holds through a data edge.
        """
        ret: dict[Operation, None] = {}  # an ordered set
        input_ops = {t._op for t in inputs}
        for controller in self._control_dependencies_stack:
            if input_ops.isdisjoint(controller.seen):
                for op in controller.ops:
                    if op not in input_ops:
                        ret[op] = None
        return list(ret)

    # ---- devices and colocation ---------------------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Ops created in the block get this device (a spec string, DeviceSpec, function or None).

        Partial specs merge with enclosing ones, inner fields winning; None clears them.
        """
        fn = device_name_or_function
        if fn is not None and not callable(fn):
            fn = device_spec.merge_device(fn)
        self._device_function_stack.append(fn)
        try:
            yield
        finally:
            self._device_function_stack.pop()

    def _apply_device_functions(self, op: Operation) -> None:
        # Innermost first; each merges into what is already set, so inner fields win.
        for fn in reversed(self._device_function_stack):
            if fn is None:
                break
            dev = fn(op)
            op._device = dev if isinstance(dev, str) else (dev.to_string() if dev else "")

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        """Ops created in the block are placed with `op` (its device and `_class` group)."""
        if op is None and not ignore_existing:
            raise ValueError("Trying to reset colocation (op is None) but ignore_existing is "
                             "not True")
        if op is not None:
            if hasattr(op, "_as_graph_element") and not isinstance(op, (Tensor, Operation)):
                op = op._as_graph_element()
            if isinstance(op, Tensor):
                op = op.op
            if not isinstance(op, Operation):
                raise TypeError(f"colocate_with expects an Operation or Tensor, not {op!r}")
        saved_devices = self._device_function_stack
        saved_coloc = self._colocation_stack
        self._device_function_stack = []  # colocation overrides device scopes
        if ignore_existing:
            self._colocation_stack = []
        if op is not None:
            self._colocation_stack = self._colocation_stack + [op]
        try:
            yield
        finally:
            self._device_function_stack = saved_devices
            self._colocation_stack = saved_coloc

    @contextlib.contextmanager
    def container(self, container_name: str):
        """Stateful ops created in the block keep their resources in this container."""
        saved = self._container
        self._container = container_name
        try:
            yield self._container
        finally:
            self._container = saved

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict[str, str]):
        """Within the block, ops of type K use the gradient registered for op type V."""
        saved = dict(self._gradient_override_map)
        for k, v in op_type_map.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("op_type_map must be a dictionary mapping strings to strings")
            self._gradient_override_map[k] = v
        try:
            yield
        finally:
            self._gradient_override_map = saved

    def _get_control_flow_context(self):
        return self._control_flow_context

    def _set_control_flow_context(self, ctx) -> None:
        self._control_flow_context = ctx

    # ---- collections --------------------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        self._check_not_finalized()
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        names = (names,) if isinstance(names, str) else set(names)
        for name in names:
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list:
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list:
        """A copy of collection `name`, filtered to items whose name matches `scope` (re.match)."""
        with self._lock:
            items = list(self._collections.get(name, ()))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(i.name)]

    @property
    def collections(self) -> list:
        """The names of the collections this graph has held (TF's `Graph.collections`)."""
        with self._lock:
            return list(self._collections)

    def get_all_collection_keys(self) -> list[str]:
        with self._lock:
            return [k for k, v in self._collections.items() if isinstance(v, list)]

    def clear_collection(self, name: str) -> None:
        self._check_not_finalized()
        with self._lock:
            self._collections.pop(name, None)

    # ---- finalize, feeding, fetching ----------------------------------------------------
    def finalize(self) -> None:
        """Makes the graph read-only: adding an op raises RuntimeError afterwards."""
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    @property
    def finalized(self) -> bool:
        return self._finalized

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    def prevent_feeding(self, tensor: Tensor) -> None:
        self._unfeedable.add(tensor)

    def is_feedable(self, tensor: Tensor) -> bool:
        return tensor not in self._unfeedable

    def prevent_fetching(self, op: Operation) -> None:
        self._unfetchable.add(op)

    def is_fetchable(self, tensor_or_op) -> bool:
        op = tensor_or_op.op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable

    @property
    def seed(self) -> int | None:
        return self._seed

    @seed.setter
    def seed(self, seed: int | None) -> None:
        self._seed = seed

    @property
    def building_function(self) -> bool:
        return False

    # ---- serialization ------------------------------------------------------------------
    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False):
        """This graph as a `graph_pb2.GraphDef` (ops added after `from_version` only, if set)."""
        return graph_io.graph_to_graph_def(self, from_version, add_shapes)

    @property
    def graph_def_versions(self):
        return versions_pb2.VersionDef(producer=self._graph_def_producer, min_consumer=12)

    # ---- op creation --------------------------------------------------------------------
    def create_op(self, op_type: str, inputs, dtypes_=None, input_types=None, name=None,
                  attrs=None, op_def=None, compute_shapes=True, compute_device=True,
                  **kwargs) -> Operation:
        """Creates an Operation (TF1's low-level `Graph.create_op`).

        `dtypes_` (TF1 spells it `dtypes`) gives the output dtypes; omitted, they are
        computed from the op's registered signature. `attrs` values may be Python values or
        `attr_value_pb2.AttrValue` messages.
        """
        if "dtypes" in kwargs:
            dtypes_ = kwargs.pop("dtypes")
        if kwargs:
            raise TypeError(f"create_op() got unexpected arguments {sorted(kwargs)}")
        opdef = op_registry.get(op_type)
        inputs = tuple(inputs)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"Input #{inputs.index(t)} is not a tensor: {t!r}")
        py_attrs = {}
        for k, v in (attrs or {}).items():
            kind = opdef.attrs[k].kind if k in opdef.attrs else None
            py_attrs[k] = attr_values.from_proto(v, kind) if hasattr(v, "WhichOneof") else v
        # Type attributes not given are read off the inputs (single-tensor arguments).
        if len(opdef.inputs) == len(inputs):
            for arg, t in zip(opdef.inputs, inputs, strict=True):
                if arg.type_attr and arg.type_attr not in py_attrs:
                    py_attrs[arg.type_attr] = t.dtype.base_dtype
        op = self._create_op_internal(op_type, inputs, py_attrs, name or op_type,
                                      output_dtypes=dtypes_, compute_shapes=compute_shapes)
        return op

    def _create_op_internal(self, op_type: str, inputs: tuple[Tensor, ...],
                            attrs: dict[str, Any], name: str,
                            output_dtypes=None, compute_shapes: bool = True,
                            control_inputs: list[Operation] | None = None) -> Operation:
        """Adds an op whose attributes are complete Python values; the one creation path.

        `name` is made unique in the current name scope unless it ends with "/", in which case
        it is taken as an already-unique full name. `control_inputs`, when given, replace the
        ones the enclosing control_dependencies scopes imply (graph import passes the node's
        own plus the scopes'); the op still counts as created inside those scopes.
        """
        from tensorflux.framework import op_def_library  # op_def_library imports graph

        self._check_not_finalized()
        opdef = op_registry.lookup(op_type)
        for t in inputs:
            if t.graph is not self:
                raise ValueError(f"Tensor {t} must be from the same graph as the op being "
                                 f"created ({op_type}).")
        with self._lock:
            if name.endswith("/"):
                full_name = name[:-1]
                if full_name.lower() in self._names_in_use and full_name in self._ops_by_name:
                    raise ValueError(f"Duplicate node name in graph: '{full_name}'")
                self._names_in_use.setdefault(full_name.lower(), 1)
            else:
                full_name = self.unique_name(name)
            if not _VALID_OP_NAME.match(full_name):
                raise ValueError(f"'{full_name}' is not a valid node name")
            if opdef is not None:
                op_def_library.complete_attrs(opdef, attrs, full_name)
                if output_dtypes is None:
                    output_dtypes = op_def_library.output_dtypes(opdef, attrs)
            if self._gradient_override_map and op_type in self._gradient_override_map:
                attrs["_gradient_op_type"] = self._gradient_override_map[op_type]
            if self._container and opdef is not None and opdef.is_stateful \
                    and "container" in opdef.attrs and not attrs.get("container"):
                attrs["container"] = self._container
            if control_inputs is None:
                control_inputs = self._control_inputs_for(inputs)
            else:
                control_inputs = list(control_inputs)
            op = Operation(self, full_name, op_type, opdef, inputs, list(output_dtypes or ()),
                           attrs, control_inputs, len(self._ops))
            self._place(op)
            if compute_shapes and opdef is not None and opdef.shape_fn is not None:
                op_def_library.set_output_shapes(op)
            for t in inputs:
                t._consumers.append(op)
            for controller in self._control_dependencies_stack:
                controller.seen.add(op)
            self._ops.append(op)
            self._ops_by_name[full_name] = op
            ctx = self._control_flow_context
            if ctx is not None:
                op._control_flow_context = ctx
                ctx.AddOp(op)
        return op

    def _place(self, op: Operation) -> None:
        if self._colocation_stack:
            target = self._colocation_stack[-1]
            groups = []
            for c in self._colocation_stack:
                for g in c.colocation_groups():
                    name = g.decode()
                    if name not in groups:
                        groups.append(name)
            op._attrs["_class"] = groups
            op._device = target._device
        else:
            self._apply_device_functions(op)

    def _add_existing_op(self, op: Operation) -> None:
        """Registers an op built by graph import (name already unique and checked)."""
        self._ops.append(op)
        self._ops_by_name[op._name] = op
        self._names_in_use.setdefault(op._name.lower(), 1)
        for t in op._inputs:
            t._consumers.append(op)

    def _next_op_seed(self) -> int:
        self._last_op_seed += 1
        return self._last_op_seed


# ------------------------------------------------------------------------------------------
# The default graph, per thread.


class _DefaultGraphStack(threading.local):
    def __init__(self):
        self.stack: list[Graph] = []

    def push(self, g: Graph) -> None:
        self.stack.append(g)

    def pop(self, g: Graph) -> None:
        if self.stack and self.stack[-1] is g:
            self.stack.pop()
        elif g in self.stack:
            self.stack.remove(g)


_default_graph_stack = _DefaultGraphStack()
_global_default_graph: Graph | None = None
_global_lock = threading.Lock()


def get_default_graph() -> Graph:
    """The innermost graph entered with `as_default` on this thread, else the global one."""
    stack = _default_graph_stack.stack
    if stack:
        return stack[-1]
    global _global_default_graph
    if _global_default_graph is None:
        with _global_lock:
            if _global_default_graph is None:
                _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph() -> None:
    """Clears the global default graph (AssertionError inside a `with g.as_default()` block)."""
    if _default_graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If "
                             "you need a cleared graph, exit the nesting and create a new "
                             "graph.")
    global _global_default_graph
    with _global_lock:
        _global_default_graph = None


def _graph_of(values: Iterable) -> Graph | None:
    for v in values:
        if isinstance(v, (Tensor, Operation)):
            return v.graph
        if hasattr(v, "graph") and isinstance(getattr(v, "graph", None), Graph):
            return v.graph
    return None


def get_graph_from_inputs(op_input_list, graph: Graph | None = None) -> Graph:
    """The graph that the inputs live in (ValueError if they are from different graphs).
    While a function body is being built (framework/func_graph.py), its graph: it
    captures the tensors of enclosing graphs that its ops use."""
    op_input_list = list(op_input_list)
    if graph is None:
        default = get_default_graph()
        if default.building_function:
            return default
    found = graph
    for v in op_input_list:
        g = _graph_of([v])
        if g is None:
            continue
        if found is None:
            found = g
        elif g is not found:
            raise ValueError(f"{v!r} must be from the same graph as {op_input_list[0]!r}.")
    return found or get_default_graph()


@contextlib.contextmanager
def name_scope(name: str | None, default_name: str | None = None, values=None):
    """TF1 `tf.name_scope(name, default_name, values)`: a scope in the inputs' graph."""
    g = get_graph_from_inputs(list(values)) if values else get_default_graph()
    scope_name = name if name is not None else default_name
    with g.as_default(), g.name_scope(scope_name) as scope:
        yield scope


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing: bool = False):
    return get_default_graph().colocate_with(op, ignore_existing)


def container(container_name: str):
    return get_default_graph().container(container_name)


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list:
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:
    return get_default_graph().get_collection_ref(key)


def get_name_scope() -> str:
    return get_default_graph().get_name_scope()


def is_dtype(value) -> bool:
    return isinstance(value, dtypes.DType)
