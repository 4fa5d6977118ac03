"""The object graph of object-based checkpoints (TF's trackable protocol), shared by
`tf.train.Checkpoint` (train/checkpoint.py), layers and Keras models, and the optimizers.

An object takes part by defining some of these methods (duck-typed, as TF's `Trackable`):

    _checkpoint_children() -> [(local_name, child)]   its dependencies, in tracking order
    _checkpoint_attributes() -> [Attribute]           tensors it saves itself
    get_slot_names() / get_slot(variable, name)       an optimizer: its slot variables are
                                                      recorded in `slot_variables`
    _checkpoint_slot_names() -> {checkpoint name: own slot name}   (optional renaming)

Variables are leaves saving one attribute, VARIABLE_VALUE. Lists, tuples and dicts are
containers: their trackable elements are children named by index or key.

The graph is walked breadth first from the root; an object's node id is its place in that
walk, its path the local names of the first way the walk reached it. Slot variables come
after every other object: per optimizer (in node order), per slot name (sorted), per
original variable (in node order). Keys are TensorFlow's: each local name escaped ("." ->
"..", "/" -> ".S") and joined by "/"; an attribute is "<path>/.ATTRIBUTES/<name>"; a slot
variable's path is "<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>". The
serialized TrackableObjectGraph is saved under `_CHECKPOINTABLE_OBJECT_GRAPH`.
"""

from __future__ import annotations

import collections

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.ops import state_ops
from tensorflux.protos import trackable_object_graph_pb2

__all__ = []  # internal: tf.train.Checkpoint is the public face

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VARIABLE_VALUE = "VARIABLE_VALUE"
_ESCAPE = "."
_ATTRIBUTES = ".ATTRIBUTES"
_SLOT = ".OPTIMIZER_SLOT"
_CONTAINERS = (list, tuple, dict)


class Attribute:
    """One tensor an object saves under `name` (TF's SerializedTensor).

    Args:
      name: the attribute's name in the object graph (VARIABLE_VALUE for a variable).
      full_name: the name a name-based Saver would give it (a variable's op name).
      dtype, shape: what RestoreV2 reads back (shape may be unknown).
      read: () -> the Tensor to save, called while the save op is built.
      restore: (restored Tensor) -> Operation, or None when nothing is restored into.
      key: identifies what `restore` writes: a restore op is built once per key.
    """

    __slots__ = ("name", "full_name", "dtype", "shape", "read", "restore", "key")

    def __init__(self, name, full_name, dtype, shape, read, restore, key):
        self.name, self.full_name = name, full_name
        self.dtype, self.shape = dtypes.as_dtype(dtype).base_dtype, shape
        self.read, self.restore, self.key = read, restore, key


# ---- what is trackable ------------------------------------------------------------------
def is_variable(value) -> bool:
    """A tf.Variable (resource or reference variable)."""
    return getattr(value, "_is_resource_variable", False) and hasattr(value, "handle")


def is_trackable(value) -> bool:
    """Whether `value` can be a node of the object graph."""
    return (is_variable(value) or isinstance(value, _CONTAINERS)
            or callable(getattr(value, "_checkpoint_children", None)))


def holds_trackable(value) -> bool:
    """A trackable object, or a container with one somewhere inside (what a layer's
    attributes contribute: lists of plain values are not tracked there)."""
    if isinstance(value, dict):
        return any(holds_trackable(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_trackable(v) for v in value)
    return is_trackable(value)


def children(obj) -> list:
    """[(local name, child)] of `obj`, in tracking order."""
    if isinstance(obj, dict):
        return [(str(k), v) for k, v in obj.items() if is_trackable(v)]
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj) if is_trackable(v)]
    own = getattr(obj, "_checkpoint_children", None)
    return list(own()) if callable(own) and not is_variable(obj) else []


def attribute_children(obj, exclude=()) -> list:
    """[(name, value)] of `obj`'s public attributes holding something trackable, in the
    order they were first set (how layers and models track user attributes)."""
    return [(k, v) for k, v in vars(obj).items()
            if not k.startswith("_") and k not in exclude and holds_trackable(v)]


def attributes(obj) -> list:
    """The Attributes `obj` saves."""
    if is_variable(obj):
        return [variable_attribute(obj)]
    own = getattr(obj, "_checkpoint_attributes", None)
    return list(own()) if callable(own) else []


def is_optimizer(obj) -> bool:
    return callable(getattr(obj, "get_slot_names", None)) and \
        callable(getattr(obj, "get_slot", None))


def slot_names(optimizer) -> dict:
    """{slot name in checkpoints: the optimizer's own slot name}."""
    own = getattr(optimizer, "_checkpoint_slot_names", None)
    if callable(own):
        return dict(own())
    return {n: n for n in optimizer.get_slot_names()}


# ---- variables --------------------------------------------------------------------------
def variable_attribute(var, name: str = VARIABLE_VALUE) -> Attribute:
    """The Attribute saving and restoring `var`."""
    shape = var.shape if getattr(var, "_validate_shape", True) else \
        tensor_shape.unknown_shape()
    return Attribute(name, var.op.name, var.dtype, shape, var._as_graph_element,
                     lambda value: assign_restored(var, value), ("var", id(var)))


def assign_restored(var, value):
    """The op storing a restored tensor in `var` (an Assign for a reference variable)."""
    return state_ops.assign_variable_op(var.handle, value, name="AssignVariableOp")


# ---- names ------------------------------------------------------------------------------
def escape(name: str) -> str:
    return name.replace(_ESCAPE, _ESCAPE * 2).replace("/", _ESCAPE + "S")


def attribute_key(path: str, name: str) -> str:
    return f"{path}/{_ATTRIBUTES}/{escape(name)}"


def slot_path(variable_path: str, optimizer_path: str, slot_name: str) -> str:
    return f"{variable_path}/{_SLOT}/{optimizer_path}/{escape(slot_name)}"


def proto_node_names(proto) -> dict:
    """{node id: TF's readable name} of a TrackableObjectGraph: "(root).model.kernel",
    "(root).opt's state 'm' for (root).v"."""
    names = {0: "(root)"}
    queue = collections.deque([0])
    while queue:
        node_id = queue.popleft()
        for ref in proto.nodes[node_id].children:
            if ref.node_id not in names:
                names[ref.node_id] = f"{names[node_id]}.{ref.local_name}"
                queue.append(ref.node_id)
    for node_id, node in enumerate(proto.nodes):
        for slot in node.slot_variables:
            names[slot.slot_variable_node_id] = (
                f"{names.get(node_id, '?')}'s state '{slot.slot_name}' for "
                f"{names.get(slot.original_variable_node_id, '?')}")
    return names


# ---- the walk ---------------------------------------------------------------------------
class ObjectGraph:
    """One breadth-first walk of the objects reachable from `root` (see the module
    docstring): `objects` by node id, `paths` (escaped, "" for the root), `refs` (per node,
    its [(local name, node id)]) and `slots` (per node, [(variable id, slot name, slot
    variable id)]).

    Raises:
      NotImplementedError: a slot variable that is also reachable as an ordinary object
        (TensorFlow refuses it too).
    """

    def __init__(self, root, skip_slots: bool = False):
        self.objects: list = []
        self.paths: list[str] = []
        self.refs: list[list] = []
        self.slots: list[list] = []
        self._ids: dict[int, int] = {}
        self._walk(root)
        if not skip_slots:
            self._add_slots()

    def node_id(self, obj) -> int | None:
        return self._ids.get(id(obj))

    def _add(self, obj, path: str) -> int:
        self._ids[id(obj)] = len(self.objects)
        self.objects.append(obj)
        self.paths.append(path)
        self.refs.append([])
        self.slots.append([])
        return len(self.objects) - 1

    def _walk(self, root) -> None:
        self._add(root, "")
        queue = collections.deque([0])
        while queue:
            node_id = queue.popleft()
            prefix = self.paths[node_id]
            for name, child in children(self.objects[node_id]):
                child_id = self._ids.get(id(child))
                if child_id is None:
                    child_path = f"{prefix}/{escape(name)}" if prefix else escape(name)
                    child_id = self._add(child, child_path)
                    queue.append(child_id)
                self.refs[node_id].append((name, child_id))

    def _add_slots(self) -> None:
        ordinary = len(self.objects)
        variables = [(i, o) for i, o in enumerate(self.objects) if is_variable(o)]
        for opt_id in range(ordinary):
            optimizer = self.objects[opt_id]
            if not is_optimizer(optimizer) or is_variable(optimizer):
                continue
            for ckpt_name, own_name in sorted(slot_names(optimizer).items()):
                for var_id, var in variables:
                    slot = optimizer.get_slot(var, own_name)
                    if slot is None:
                        continue
                    if id(slot) in self._ids:
                        raise NotImplementedError(
                            f"A slot variable was re-used as a dependency of a trackable "
                            f"object: {slot}. This is not currently allowed.")
                    path = slot_path(self.paths[var_id], self.paths[opt_id], ckpt_name)
                    slot_id = self._add(slot, path)
                    self.slots[opt_id].append((var_id, ckpt_name, slot_id))

    def serialize(self):
        """(TrackableObjectGraph, [(checkpoint key, Attribute)]) of the walk."""
        proto = trackable_object_graph_pb2.TrackableObjectGraph()
        saved = []
        for node_id, obj in enumerate(self.objects):
            node = proto.nodes.add()
            for name, child_id in self.refs[node_id]:
                node.children.add(node_id=child_id, local_name=name)
            for attr in attributes(obj):
                key = attribute_key(self.paths[node_id], attr.name)
                node.attributes.add(name=attr.name, full_name=attr.full_name,
                                    checkpoint_key=key)
                saved.append((key, attr))
            for var_id, slot_name, slot_id in self.slots[node_id]:
                node.slot_variables.add(original_variable_node_id=var_id,
                                        slot_name=slot_name, slot_variable_node_id=slot_id)
        for node_id, value in enumerate(_has_values(proto)):
            proto.nodes[node_id].has_checkpoint_values.value = value
        return proto, saved


def _has_values(proto) -> list[bool]:
    """Per node: whether it or anything below it (children, slot variables) saves a
    value."""
    has = [bool(node.attributes) for node in proto.nodes]
    changed = True
    while changed:
        changed = False
        for node_id, node in enumerate(proto.nodes):
            if has[node_id]:
                continue
            below = [r.node_id for r in node.children] + \
                [s.slot_variable_node_id for s in node.slot_variables]
            if any(has[b] for b in below):
                has[node_id] = changed = True
    return has
