"""Restoring object-based checkpoints: `Checkpoint.restore`'s statuses (graph mode).

A `_Restoration` binds the checkpoint's TrackableObjectGraph to the Python objects: node 0
is the root; a node's child binds to the Python object's dependency of the same local
name; a slot variable binds through its optimizer's `get_slot` once both the optimizer and
the original variable are bound. Each bound node's attributes get restore ops (one
RestoreV2 per batch, then the attribute's own assignment), built once per attribute and
kept in `restore_ops`; `run_restore_ops` runs all of them.

Binding is redone whenever the status is used (`run_restore_ops`, `initialize_or_restore`,
the assertions), so objects created after `restore` -- a Keras layer built later, an
optimizer's slots made by `minimize` -- are bound and get restore ops then. This is TF1's
deferred restoration in graph mode, where restore ops for an object created later are
added when it is created and run by the next `run_restore_ops`. (One difference: after two
`restore` calls of one root, an object created later is bound by whichever status is used
next, where TensorFlow gives it to the most recent restore.)

A streaming restoration (`streaming_restore`, Keras's `load_weights`) also runs the restore
ops it builds, in the session it was given, as soon as it builds them; besides each use of
its status, `run_streaming_restores(graph)` binds it again whenever the graph has grown
since its last binding (Keras calls it when a model is called or built and whenever it
takes its session): so the weights of a model built after `load_weights`, and the slots
and iterations of its optimizer once the train function exists, are restored before
anything reads them, as TensorFlow restores them when they are created.
"""

from __future__ import annotations

import os
import weakref

from tensorflux.checkpoint import open_checkpoint
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation
from tensorflux.ops import constant_op, save_restore_ops
from tensorflux.protos import trackable_object_graph_pb2
from tensorflux.runtime import session as session_lib
from tensorflux.train import saver as saver_lib
from tensorflux.variables import creator_scope, trackable

__all__ = []  # the statuses are reached through tf.train.Checkpoint.restore


def restore(root, save_path):
    """The status of restoring `root` from `save_path` (see `Checkpoint.restore`).

    Raises:
      NotFoundError: nothing is at `save_path`.
    """
    if save_path is None:
        return InitializationOnlyStatus(root)
    save_path = os.fspath(save_path)
    if isinstance(save_path, bytes):
        save_path = save_path.decode()
    with open_checkpoint(save_path) as reader:
        if not reader.has_tensor(trackable.OBJECT_GRAPH_KEY):
            return NameBasedSaverStatus(root, save_path)
        data = reader.get_tensor(trackable.OBJECT_GRAPH_KEY)
    proto = trackable_object_graph_pb2.TrackableObjectGraph.FromString(bytes(data))
    return CheckpointLoadStatus(_Restoration(root, save_path, proto))


_SESSION_PROVIDER: dict = {"fn": None}


def register_session_provider(fn) -> None:
    """`fn()` gives the session object-based checkpoints use when there is no default
    session (Keras registers its own, as TensorFlow's Keras does)."""
    _SESSION_PROVIDER["fn"] = fn


def get_session():
    """The default session, else the registered provider's, else None."""
    session = session_lib.get_default_session()
    if session is None and _SESSION_PROVIDER["fn"] is not None:
        session = _SESSION_PROVIDER["fn"]()
    return session


def session_or_default(session):
    """`session`, or the one `get_session` finds.

    Raises:
      ValueError: there is none.
    """
    session = session if session is not None else get_session()
    if session is None:
        raise ValueError("Object-based checkpoints run their ops in a session: pass "
                         "`session=` or make one the default (`with sess.as_default():`).")
    return session


def list_objects(root) -> list:
    """Every object reachable from `root`, slot variables included."""
    return trackable.ObjectGraph(root).objects


class _Restoration:
    """The binding of one checkpoint's object graph to the objects under `root` (TF's
    restore coordinator), with the restore ops built so far."""

    def __init__(self, root, save_path: str, proto):
        self.root, self.save_path, self.proto = root, save_path, proto
        self.graph = graph_lib.get_default_graph()
        self.node_names = trackable.proto_node_names(proto)
        self.bound: dict = {0: root}
        self.restore_ops: list = []
        self.unused: dict = {}  # node id -> attribute names the object does not have
        self._built: set = set()
        self._complete: set = set()  # nodes whose children and slots are all bound
        self.session = None  # streaming: where new restore ops run as they are built
        self.bound_at_version = -1  # the graph's version at the last binding

    def update(self) -> None:
        """Binds what can be bound now and builds restore ops for it (and runs them, when
        streaming)."""
        built = len(self.restore_ops)
        with self.graph.as_default(), creator_scope.init_scope():
            while self._bind_pass():
                pass
            self._build()
            self.bound_at_version = self.graph.version
        if self.session is not None and len(self.restore_ops) > built:
            self.session.run(self.restore_ops[built:])

    def done(self) -> bool:
        """Whether every node of the checkpoint is bound (nothing left to stream)."""
        return len(self.bound) == len(self.proto.nodes)

    # ---- binding ------------------------------------------------------------------------
    def _bind_pass(self) -> bool:
        changed = False
        for node_id, obj in list(self.bound.items()):
            if node_id in self._complete:
                continue
            node = self.proto.nodes[node_id]
            complete = True
            if any(ref.node_id not in self.bound for ref in node.children):
                own: dict = {}
                for name, child in trackable.children(obj):
                    own.setdefault(name, child)
                for ref in node.children:
                    if ref.node_id in self.bound:
                        continue
                    child = own.get(ref.local_name)
                    if child is None:
                        complete = False
                    else:
                        self.bound[ref.node_id] = child
                        changed = True
            if node.slot_variables and not self._bind_slots(obj, node):
                complete = False
            if complete:
                self._complete.add(node_id)
        return changed

    def _bind_slots(self, optimizer, node) -> bool:
        """Binds the slot variables of `node` that exist; True when all are bound."""
        if not trackable.is_optimizer(optimizer):
            return True
        names = trackable.slot_names(optimizer)
        complete = True
        for ref in node.slot_variables:
            if ref.slot_variable_node_id in self.bound:
                continue
            var = self.bound.get(ref.original_variable_node_id)
            slot = None
            if var is not None and trackable.is_variable(var):
                slot = optimizer.get_slot(var, names.get(ref.slot_name, ref.slot_name))
            if slot is None:
                complete = False
            else:
                self.bound[ref.slot_variable_node_id] = slot
        return complete

    # ---- restore ops --------------------------------------------------------------------
    def _build(self) -> None:
        pending = []
        for node_id, obj in self.bound.items():
            node = self.proto.nodes[node_id]
            if not node.attributes:
                continue
            own = {a.name: a for a in trackable.attributes(obj)}
            for serialized in node.attributes:
                attr = own.get(serialized.name)
                if attr is None:
                    names = self.unused.setdefault(node_id, [])
                    if serialized.name not in names:
                        names.append(serialized.name)
                    continue
                mark = (node_id, serialized.name, attr.key)
                if mark not in self._built:
                    self._built.add(mark)
                    pending.append((serialized.checkpoint_key, attr))
        if pending:
            self.restore_ops.extend(restore_ops(self.save_path, pending))

    def unresolved_nodes(self) -> list[int]:
        """Nodes with attributes that no Python object is bound to."""
        return [i for i, node in enumerate(self.proto.nodes)
                if node.attributes and i not in self.bound]


def restore_ops(save_path: str, pending) -> list:
    """The ops restoring `pending` [(checkpoint key, Attribute)] from `save_path`."""
    with graph_lib.control_dependencies(None), graph_lib.name_scope("checkpoint_restore"):
        with graph_lib.device("/device:CPU:0"):
            prefix = constant_op.constant(save_path, name="file_prefix")
            tensors = save_restore_ops.restore_v2(
                prefix, [key for key, _ in pending], [""] * len(pending),
                [attr.dtype for _, attr in pending],
                shapes=[attr.shape for _, attr in pending])
        ops = []
        for (_, attr), value in zip(pending, tensors, strict=True):
            if attr.restore is None:
                continue
            op = attr.restore(value)
            if op is not None:
                ops.append(op if isinstance(op, Operation) else op.op)
        return ops


_STREAMING: weakref.WeakSet = weakref.WeakSet()  # restorations that stream (see above)


def streaming_restore(status, session) -> None:
    """Runs the restore ops of what `status` (a CheckpointLoadStatus) has bound, in
    `session`, and keeps doing so for objects bound later (see the module docstring).
    The restoration streams as long as something (its status) holds it."""
    restoration = status._restoration
    restoration.update()
    if restoration.restore_ops:
        session.run(restoration.restore_ops)
    restoration.session = session
    if not restoration.done():
        _STREAMING.add(restoration)


def stop_streaming(status) -> None:
    """Ends the streaming of `status`'s restoration (a newer restore replaces it)."""
    restoration = getattr(status, "_restoration", None)
    if restoration is not None:
        restoration.session = None
        _STREAMING.discard(restoration)


def run_streaming_restores(graph) -> None:
    """Binds the streaming restorations of `graph` again if it has grown since their last
    binding, running the restore ops of what they bind."""
    for restoration in list(_STREAMING):
        if restoration.graph is not graph or \
                restoration.bound_at_version == graph.version:
            continue
        if getattr(restoration.session, "_closed", False):
            _STREAMING.discard(restoration)
            continue
        restoration.update()
        if restoration.done():
            _STREAMING.discard(restoration)


class _Status:
    """What every status offers."""

    def expect_partial(self):
        """Silences warnings about values left unused (tensorflux gives none)."""
        return self


class CheckpointLoadStatus(_Status):
    """The status of restoring an object-based checkpoint (see the module docstring)."""

    def __init__(self, restoration: _Restoration):
        self._restoration = restoration
        restoration.update()

    def assert_consumed(self):
        """Checks that every value of the checkpoint has an object and every object a
        value.

        Raises:
          AssertionError: naming the first unbound checkpoint object, slot variable or
            unused attribute.
        """
        self.assert_existing_objects_matched()
        r = self._restoration
        for node_id in r.unresolved_nodes():
            raise AssertionError(f"Unresolved object in checkpoint {r.node_names[node_id]}: "
                                 f"{r.proto.nodes[node_id]}")
        if r.unused:
            lines = [f"{r.node_names[i]} ({r.bound[i]}): {names}"
                     for i, names in sorted(r.unused.items())]
            raise AssertionError("Unused attributes in these objects (the attributes exist in "
                                 "the checkpoint but were not restored):\n" + "\n".join(lines))
        return self

    def assert_existing_objects_matched(self):
        """Checks that every object under the root that saves values has one in the
        checkpoint (checkpoint values without objects are allowed).

        Raises:
          AssertionError: naming up to 10 unmatched objects.
        """
        r = self._restoration
        r.update()
        bound = {id(o) for o in r.bound.values()}
        with r.graph.as_default():
            unmatched = [o for o in list_objects(r.root)
                         if trackable.attributes(o) and id(o) not in bound]
        if unmatched:
            shown = min(10, len(unmatched))
            raise AssertionError(
                f"Found {len(unmatched)} Python objects that were not bound to checkpointed "
                "values, likely due to changes in the Python program. Showing "
                f"{shown} of {len(unmatched)} unmatched objects: {unmatched[:shown]}")
        return self

    def assert_nontrivial_match(self):
        """Checks that something besides the root was matched.

        Raises:
          AssertionError: only the root matched (naming the objects with values that
            did not match, else saying there is nothing to load).
        """
        r = self._restoration
        r.update()
        if len(r.bound) > 1:
            return self
        with r.graph.as_default():
            others = [o for o in list_objects(r.root)
                      if o is not r.root and trackable.attributes(o)]
        if others:
            raise AssertionError(
                "Nothing except the root object matched a checkpointed value. Typically "
                "this means that the checkpoint does not match the Python program. The "
                f"following objects have no matching checkpointed value: {others}")
        raise AssertionError(f"Nothing to load. No dependencies have been added to "
                             f"{r.root} yet.")

    def run_restore_ops(self, session=None) -> None:
        """Runs the restore ops of every object bound so far (binding new ones first)."""
        session = session_or_default(session)
        self._restoration.update()
        if self._restoration.restore_ops:
            session.run(self._restoration.restore_ops)

    def initialize_or_restore(self, session=None) -> None:
        """Restores what the checkpoint has values for and initializes the other variables
        under the root."""
        session = session_or_default(session)
        r = self._restoration
        r.update()
        bound = {id(o) for o in r.bound.values()}
        with r.graph.as_default():
            fresh = [o.initializer for o in list_objects(r.root)
                     if trackable.is_variable(o) and id(o) not in bound]
        self.run_restore_ops(session)
        if fresh:
            session.run(fresh)


class InitializationOnlyStatus(_Status):
    """The status of `restore(None)`: nothing to restore."""

    def __init__(self, root):
        self._root = root

    def _nothing(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored.")

    assert_consumed = assert_existing_objects_matched = assert_nontrivial_match = _nothing

    def run_restore_ops(self, session=None) -> None:
        """Nothing to run (use `initialize_or_restore` to initialize)."""

    def initialize_or_restore(self, session=None) -> None:
        """Initializes every variable under the root."""
        session = session_or_default(session)
        init = [o.initializer for o in list_objects(self._root) if trackable.is_variable(o)]
        if init:
            session.run(init)


class NameBasedSaverStatus(_Status):
    """The status of restoring a checkpoint written by `tf.train.Saver` (no object graph):
    `run_restore_ops` restores every variable under the root by its graph name, as
    TensorFlow does in graph mode (a variable the checkpoint lacks, `save_counter`
    included, fails the restore with NotFoundError)."""

    def __init__(self, root, save_path: str):
        self._root, self._save_path = root, save_path
        self._restored = False

    def _variables(self) -> list:
        return [o for o in list_objects(self._root) if trackable.is_variable(o)]

    def run_restore_ops(self, session=None) -> None:
        session = session_or_default(session)
        with session.graph.as_default(), graph_lib.device("/cpu:0"):
            var_list = {v.op.name: v for v in self._variables()}
            if var_list:
                saver_lib.Saver(var_list).restore(session, self._save_path)
        self._restored = True

    initialize_or_restore = run_restore_ops

    def assert_consumed(self):
        """Raises AssertionError until `run_restore_ops` has run."""
        if not self._restored:
            for obj in self._variables():
                raise AssertionError(f"Object not restored: {obj}")
        return self

    assert_existing_objects_matched = assert_nontrivial_match = assert_consumed
