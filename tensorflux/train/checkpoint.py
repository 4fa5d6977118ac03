"""`tf.train.Checkpoint` as TF1 has it (`tf.compat.v1.train.Checkpoint`, graph mode):
object-based checkpoints.

A Checkpoint is the root of an object graph: the trackable objects given to it (variables,
layers and Keras models, optimizers, lists and dicts of them, other Checkpoints) and what
they track in turn (variables/trackable.py). `write` walks the graph, serializes it as
TensorFlow's TrackableObjectGraph and saves it with every object's attributes in one
SaveV2: the object graph under `_CHECKPOINTABLE_OBJECT_GRAPH`, a variable under
"<path>/.ATTRIBUTES/VARIABLE_VALUE" ("model/layer_with_weights-0/kernel/..."), a slot
variable under "<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>/...". The save op
is built once per layout of the graph and run with the prefix and the serialized graph fed.
With TENSORFLUX_CHECKPOINT_FORMAT=tensorflow the files are TensorFlow's tensor bundle, and
TensorFlow restores them; checkpoints TensorFlow wrote are read either way.

`save` also numbers the checkpoint with `save_counter` (a variable of the Checkpoint, saved
with it) and records it in the directory's `checkpoint` state file; `restore` returns a
status object (train/checkpoint_restore.py) whose restore ops a session runs.
"""

from __future__ import annotations

import inspect
import os

import numpy as np

from tensorflux.checkpoint import files as ckpt_files
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import array_ops, save_restore_ops
from tensorflux.train import checkpoint_management, checkpoint_restore
from tensorflux.variables import trackable
from tensorflux.variables import variables as variables_lib

__all__ = ["Checkpoint", "CheckpointOptions"]

register_session_provider = checkpoint_restore.register_session_provider
session_or_default = checkpoint_restore.session_or_default


class CheckpointOptions:
    """Options of `Checkpoint.save`/`write` (`tf.train.CheckpointOptions`).

    Args:
      experimental_io_device: the device the SaveV2/RestoreV2 ops run on (default the
        CPU of the default task).
      experimental_enable_async_checkpoint, enable_async: accepted; writes are synchronous
        (`save` returns once the files are complete).
      experimental_write_callbacks: functions called after each write, with the
        checkpoint's path when they take an argument.
      experimental_skip_slot_variables: leave optimizer slot variables out of the save.
      experimental_sharding_callback: accepted and unused (one file set per save).
    """

    __slots__ = ("experimental_io_device", "experimental_enable_async_checkpoint",
                 "experimental_write_callbacks", "enable_async",
                 "experimental_skip_slot_variables", "experimental_sharding_callback")

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False,
                 experimental_skip_slot_variables=False, experimental_sharding_callback=None):
        self.experimental_io_device = experimental_io_device
        self.experimental_enable_async_checkpoint = experimental_enable_async_checkpoint
        self.experimental_write_callbacks = list(experimental_write_callbacks or [])
        self.enable_async = enable_async
        self.experimental_skip_slot_variables = bool(experimental_skip_slot_variables)
        self.experimental_sharding_callback = experimental_sharding_callback


def _call_back(callback, path: str) -> None:
    try:
        takes_path = bool(inspect.signature(callback).parameters)
    except (TypeError, ValueError):
        takes_path = True
    if takes_path:
        callback(path)
    else:
        callback()


class _SaveOp:
    """The save op of one layout of the object graph: SaveV2 of the attributes' tensors
    and the fed object graph, at the fed prefix."""

    def __init__(self, graph, saved, io_device):
        with graph.as_default(), graph_lib.control_dependencies(None), \
                graph_lib.name_scope("checkpoint_save"):
            with graph_lib.device(io_device or "/device:CPU:0"):
                self.prefix = array_ops.placeholder(dtypes.string, [], name="file_prefix")
                self.object_graph = array_ops.placeholder(dtypes.string, [],
                                                          name="object_graph")
            names = [key for key, _ in saved] + [trackable.OBJECT_GRAPH_KEY]
            tensors = [attr.read() for _, attr in saved] + [self.object_graph]
            order = sorted(range(len(names)), key=lambda i: names[i])
            with graph_lib.device(io_device or "/device:CPU:0"):
                self.op = save_restore_ops.save_v2(
                    self.prefix, [names[i] for i in order], [""] * len(order),
                    [tensors[i] for i in order])

    def run(self, session, prefix: str, object_graph: bytes) -> None:
        session.run(self.op, {self.prefix: prefix, self.object_graph: object_graph})


class ObjectGraphWriter:
    """Writes the object graph under `root` (node 0) in one SaveV2 (see the module
    docstring): `Checkpoint.write`'s work, and Keras's `save_weights`, whose root is the
    model itself. The save op is kept for the layout it was built for."""

    def __init__(self, root):
        self._root = root
        self._save_op = None

    def write(self, file_prefix, session=None, options=None) -> str:
        """Writes the checkpoint at `file_prefix`; returns the prefix (see
        `Checkpoint.write`)."""
        options = options or CheckpointOptions()
        session = session_or_default(session)
        file_prefix = _as_str(file_prefix)
        graph = session.graph
        with graph.as_default():
            view = trackable.ObjectGraph(self._root,
                                         skip_slots=options.experimental_skip_slot_variables)
            proto, saved = view.serialize()
            save_op = self._save_op_for(graph, saved, options.experimental_io_device)
        directory = os.path.dirname(file_prefix)
        if directory:
            os.makedirs(directory, exist_ok=True)
        ckpt_files.cleanup_directory(directory)
        save_op.run(session, file_prefix, proto.SerializeToString(deterministic=True))
        for callback in options.experimental_write_callbacks:
            _call_back(callback, file_prefix)
        return file_prefix

    def _save_op_for(self, graph, saved, io_device) -> _SaveOp:
        layout = (graph, io_device, tuple((key, attr.key) for key, attr in saved))
        if self._save_op is None or self._save_op[0] != layout:
            self._save_op = (layout, _SaveOp(graph, saved, io_device))
        return self._save_op[1]


class Checkpoint:
    """Groups trackable objects for saving and restoring (`tf.train.Checkpoint`).

    Args:
      **kwargs: the objects, each a dependency under its keyword (sorted by keyword, as
        TensorFlow orders them): variables, layers and models, optimizers, lists/dicts
        of them, other Checkpoints. Later attribute assignments of trackable values are
        dependencies too.

    Raises:
      ValueError: a keyword's value is not trackable (TensorFlow's message).
    """

    def __init__(self, **kwargs):
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "_save_counter", None)
        object.__setattr__(self, "_save_assign", None)
        object.__setattr__(self, "_writer", None)
        for name, value in sorted(kwargs.items(), key=lambda item: item[0]):
            if not trackable.is_trackable(value):
                raise ValueError(
                    f"`Checkpoint` was expecting a trackable object (an object derived from "
                    f"`Trackable`), got {value}. If you believe this object should be "
                    "trackable (i.e. it is part of the TensorFlow Python API and manages "
                    "state), please open an issue.")
            setattr(self, name, value)

    _INTERNAL = frozenset({"_children", "_save_counter", "_save_assign", "_writer"})

    def __setattr__(self, name, value):
        if name not in self._INTERNAL:
            if trackable.is_trackable(value):
                self._children[name] = value
            else:
                self._children.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._children.pop(name, None)
        object.__delattr__(self, name)

    def _checkpoint_children(self) -> list:
        return list(self._children.items())

    # ---- the save counter ---------------------------------------------------------------
    @property
    def save_counter(self):
        """The number of `save` calls so far (an int64 variable, created on first use and
        saved with the checkpoint)."""
        self._maybe_create_save_counter()
        return self._save_counter

    def _maybe_create_save_counter(self) -> None:
        if self._save_counter is not None:
            return
        with graph_lib.control_dependencies(None), graph_lib.device("/cpu:0"):
            counter = variables_lib.Variable(np.int64(0), trainable=False, name="save_counter",
                                             dtype=dtypes.int64, use_resource=True)
        object.__setattr__(self, "_save_counter", counter)
        self._children["save_counter"] = counter

    # ---- saving -------------------------------------------------------------------------
    def write(self, file_prefix, session=None, options=None) -> str:
        """Writes a checkpoint at `file_prefix` (no numbering, no state file).

        Returns:
          The prefix written.

        Raises:
          ValueError: no session to run in.
          tf.errors.OpError: a variable is not initialized (FailedPreconditionError), the
            files cannot be written.
        """
        if self._writer is None:
            object.__setattr__(self, "_writer", ObjectGraphWriter(self))
        return self._writer.write(file_prefix, session, options)

    def save(self, file_prefix, session=None, options=None) -> str:
        """Adds one to `save_counter` and writes "<file_prefix>-<save_counter>"; records
        it in the directory's `checkpoint` state file.

        Returns:
          The checkpoint's prefix.

        Raises:
          ValueError: no session to run in.
          tf.errors.OpError: see `write`.
        """
        session = session_or_default(session)
        file_prefix = _as_str(file_prefix)
        with session.graph.as_default():
            if self._save_counter is None:
                self._maybe_create_save_counter()
                session.run(self._save_counter.initializer)
            if self._save_assign is None or self._save_assign.graph is not session.graph:
                with session.graph.colocate_with(self._save_counter.handle):
                    assign = self._save_counter.assign_add(np.int64(1), read_value=True)
                object.__setattr__(self, "_save_assign", assign)
        number = int(session.run(self._save_assign))
        path = self.write(f"{file_prefix}-{number}", session=session, options=options)
        checkpoint_management.update_checkpoint_state(
            os.path.dirname(file_prefix), path, [path], save_relative_paths=True)
        return path

    # ---- restoring ----------------------------------------------------------------------
    def restore(self, save_path):
        """Matches the checkpoint's object graph to this one and prepares restore ops.

        Objects are matched by their local names from the root down, slot variables through
        their optimizer and variable. Objects created later (a layer built, an optimizer's
        slots made) are matched when the status is next used: `run_restore_ops` then
        restores them too (TF1's deferred restoration in graph mode).

        Args:
          save_path: a checkpoint prefix (from `save` or `tf.train.latest_checkpoint`), or
            None: nothing to restore (`initialize_or_restore` then initializes).

        Returns:
          A status: CheckpointLoadStatus, NameBasedSaverStatus for a checkpoint written by
          tf.train.Saver, InitializationOnlyStatus for None.

        Raises:
          NotFoundError: no checkpoint at `save_path`.
        """
        status = checkpoint_restore.restore(self, save_path)
        self._maybe_create_save_counter()
        return status


def _as_str(path) -> str:
    path = os.fspath(path)
    return path.decode() if isinstance(path, bytes) else path
