"""`tf.train.Saver`: builds save and restore ops for variables and runs them.

The graph a Saver adds is TensorFlow's (names included, so `saver_def` reads the same):

    save/filename/input (Const "model") -> save/filename, save/Const (PlaceholderWithDefault)
    save/SaveV2(save/Const, tensor_names, shape_and_slices, <variable reads>)
    save/control_dependency = Identity(save/Const) after SaveV2     <- save_tensor_name
    save/RestoreV2 on the CPU -> save/Identity_i -> save/AssignVariableOp_i
    save/restore_all (NoOp grouping the assignments)                <- restore_op_name

With `sharded=True` the variables are grouped by device and each group is written by its
own SaveV2 on that device under `<prefix>_temp/part-0000i-of-0000n`; MergeV2Checkpoints
then moves the shards' data files next to `<prefix>` and commits one index. Restores are
per device too.

Order of a `save()` (tensorflux's commit protocol, see tensorflux/checkpoint/files.py): the
checkpoint's files are written and its index renamed into place by the save op; the meta
graph is written (atomically) next; only then is the `checkpoint` state file replaced and
old checkpoints deleted. A process killed anywhere in between leaves `latest_checkpoint`
naming the previous complete checkpoint. (TensorFlow writes the meta graph after the state
file; here the state file is last, so a listed checkpoint always has its meta graph.)
"""

from __future__ import annotations

import collections
import logging
import os
import time

import numpy as np
from google.protobuf import text_format

from tensorflux.checkpoint import files as ckpt_files
from tensorflux.checkpoint import open_checkpoint
from tensorflux.control_flow import builders
from tensorflux.framework import dtypes, errors, meta_graph, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.device_spec import DeviceSpec
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.ops import array_ops, constant_op, joining_ops, save_restore_ops, state_ops
from tensorflux.protos import saver_pb2, trackable_object_graph_pb2
from tensorflux.train import checkpoint_management, saver_tf_format
from tensorflux.variables import trackable

__all__ = ["Saver", "import_meta_graph", "export_meta_graph"]  # and BaseSaverBuilder

_log = logging.getLogger("tensorflux")
_SHARDED_SUFFIX = "_temp/part"


def _now() -> float:
    """The clock retention decisions use (tests replace it with a fake one)."""
    return time.time()


class SaveSpec:
    """One tensor a SaveableObject saves: the tensor, its slice spec and its name."""

    def __init__(self, tensor, slice_spec: str, name: str, dtype=None, device=None):
        self.tensor = tensor
        self.slice_spec = slice_spec
        self.name = name
        self.dtype = dtype or tensor.dtype
        self.device = device if device is not None else tensor.device


class SaveableObject:
    """Something a Saver saves through tensors and restores by an op of its own (TF's
    `BaseSaverBuilder.SaveableObject`): subclasses set `op`, `specs` (SaveSpecs) and
    `name`, and define `restore(restored_tensors, restored_shapes) -> op`."""

    def __init__(self, op, specs, name: str):
        self.op = op
        self.specs = specs
        self.name = name

    @property
    def device(self) -> str:
        return self.specs[0].device if self.specs else ""

    def restore(self, restored_tensors, restored_shapes):
        raise NotImplementedError


class BaseSaverBuilder:
    """TF1's name for where SaveSpec and SaveableObject live (custom builders are not
    supported)."""

    SaveSpec = SaveSpec
    SaveableObject = SaveableObject


class _Saveable:
    """One thing to save: a variable (or a slice of a partitioned one), a tensor, or one
    spec of a SaveableObject (`owner`), under a name."""

    __slots__ = ("name", "spec", "var", "tensor", "device", "owner")

    def __init__(self, name: str, spec: str, var, tensor: Tensor | None = None, owner=None):
        self.name = name
        self.spec = spec
        self.var = var
        self.tensor = tensor if tensor is not None else var._as_graph_element()
        self.device = var.device if var is not None else tensor.device
        self.owner = owner

    @property
    def dtype(self) -> dtypes.DType:
        return self.tensor.dtype.base_dtype


def _is_variable(v) -> bool:
    return getattr(v, "_is_resource_variable", False) and hasattr(v, "handle")


def _shards_of(v):
    """The shard variables of a PartitionedVariable-like value, or None."""
    if _is_variable(v) or isinstance(v, Tensor):
        return None
    getter = getattr(v, "_get_variable_list", None)
    if getter is not None:
        return list(getter())
    if isinstance(v, (list, tuple)) and v and all(_is_variable(x) for x in v):
        return list(v)
    return None


def _saveable_for_var(name: str | None, var) -> _Saveable:
    info = var._get_save_slice_info()
    if info is not None:
        return _Saveable(name or info.full_name, info.spec, var)
    return _Saveable(name or var.op.name, "", var)


def saveables_from(var_list) -> list[_Saveable]:
    """The saveables of a Saver's `var_list` (a list, or a dict of names to variables).

    Raises:
      TypeError: something that is neither a Variable nor a Tensor.
      ValueError: two entries would be saved under one name, or one variable under two.
    """
    out: list[_Saveable] = []
    seen_vars: set = set()
    if isinstance(var_list, dict):
        items = sorted(var_list.items(), key=lambda kv: kv[0])
    else:
        items = [(None, v) for v in var_list]
    names: dict[tuple, object] = {}
    for name, v in items:
        shards = _shards_of(v)
        if shards is not None:
            new = [_saveable_for_var(name if name else None, s) for s in shards]
            if name:
                for s, sv in zip(shards, new, strict=True):
                    info = s._get_save_slice_info()
                    sv.spec = info.spec if info is not None else ""
        elif _is_variable(v):
            new = [_saveable_for_var(name, v)]
        elif isinstance(v, SaveableObject):
            new = [_Saveable(spec.name, spec.slice_spec, None, spec.tensor, owner=v)
                   for spec in v.specs]
        elif isinstance(v, Tensor):
            if name is None:
                raise TypeError(f"Saving a tensor needs a name (pass a dict): {v}")
            new = [_Saveable(name, "", None, v)]
        else:
            raise TypeError(f"Variable to save is not a Variable: {v}")
        for sv in new:
            key = sv.var if sv.var is not None else sv.tensor
            if key in seen_vars:
                if name is None:
                    raise ValueError(f"At least two variables have the same name: {sv.name}")
                raise ValueError(f"The same saveable will be restored with two names: {name}")
            seen_vars.add(key)
            if (sv.name, sv.spec) in names or (sv.name, "") in names:
                raise ValueError(f"At least two variables have the same name: {sv.name}")
            names[(sv.name, sv.spec)] = sv
            out.append(sv)
    out.sort(key=lambda sv: sv.name)  # TensorFlow orders the saved tensors by name
    return out


def _default_var_list(graph: graph_lib.Graph) -> list:
    return graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + \
        graph.get_collection(GraphKeys.SAVEABLE_OBJECTS)


def _cpu0(device: str) -> str:
    """The CPU:0 of `device`'s task (where TensorFlow puts a shard's save op)."""
    spec = DeviceSpec.from_string(device or "")
    return spec.replace(device_type="CPU", device_index=0).to_string()


class _Builder:
    """Adds the save and restore ops; returns the SaverDef naming them."""

    def __init__(self, saveables, sharded, reshape, restore_sequentially):
        self.saveables = saveables
        self.sharded = sharded
        self.reshape = reshape
        self.restore_sequentially = restore_sequentially

    def build(self, name, filename, max_to_keep, keep_hours) -> saver_pb2.SaverDef:
        graph = graph_lib.get_default_graph()
        with graph.name_scope(None), graph_lib.name_scope(name, "save"):
            default = constant_op.constant(filename or "model", name="filename/input")
            fname = array_ops.placeholder_with_default(default, [], name="filename")
            filename_tensor = array_ops.placeholder_with_default(fname, [], name="Const")
            if self.sharded:
                per_device = self._group_by_device()
                save_tensor = self._sharded_save(filename_tensor, per_device)
                restore_op = self._sharded_restore(filename_tensor, per_device)
            else:
                save_tensor = self._save(filename_tensor, self.saveables)
                with graph_lib.device("/device:CPU:0"):
                    restored = self._restore_tensors(filename_tensor, self.saveables)
                assigns = self._assigns(self.saveables, restored)
                restore_op = builders.group(*assigns, name="restore_all")
        return saver_pb2.SaverDef(
            filename_tensor_name=filename_tensor.name, save_tensor_name=save_tensor.name,
            restore_op_name=restore_op.name, max_to_keep=max_to_keep,
            keep_checkpoint_every_n_hours=keep_hours, sharded=self.sharded,
            version=saver_pb2.SaverDef.V2)

    def _save(self, filename_tensor, saveables) -> Tensor:
        graph = graph_lib.get_default_graph()
        save = save_restore_ops.save_v2(filename_tensor, [s.name for s in saveables],
                                        [s.spec for s in saveables],
                                        [s.tensor for s in saveables])
        with graph.control_dependencies([save]):
            return array_ops.identity(filename_tensor, name="control_dependency")

    def _restore_tensors(self, filename_tensor, saveables, name="RestoreV2") -> list:
        shapes = []
        for s in saveables:
            if self.reshape or s.var is None or s.spec or not s.var._validate_shape:
                shapes.append(tensor_shape.unknown_shape())
            else:
                shapes.append(s.var.shape)
        return save_restore_ops.restore_v2(filename_tensor, [s.name for s in saveables],
                                           [s.spec for s in saveables],
                                           [s.dtype for s in saveables], shapes=shapes,
                                           name=name)

    def _assigns(self, saveables, restored) -> list:
        graph = graph_lib.get_default_graph()
        ops = []
        owned: dict = {}  # SaveableObject -> its restored tensors, in spec order
        for s, value in zip(saveables, restored, strict=True):
            if s.owner is not None:
                owned.setdefault(s.owner, {})[s.name] = value
                continue
            if s.var is None:
                continue  # a tensor: saved, nothing to restore into
            value = array_ops.identity(value, name="Identity")
            if self.reshape and s.var.shape.is_fully_defined():
                value = array_ops.reshape(value, s.var.shape.as_list())
            deps = ops[-1:] if self.restore_sequentially else []
            with graph.control_dependencies(deps):
                if s.var.handle.dtype._is_ref_dtype:  # a VariableV2 imported from TensorFlow
                    ops.append(apply_op("Assign", ref=s.var.handle, value=value,
                                        name="Assign").op)
                    continue
                ops.append(state_ops.assign_variable_op(s.var.handle, value,
                                                        name="AssignVariableOp"))
        for owner, values in owned.items():
            restored_op = owner.restore([values[spec.name] for spec in owner.specs],
                                        [None] * len(owner.specs))
            ops.append(getattr(restored_op, "op", restored_op))
        return ops

    def _group_by_device(self):
        per_device = collections.defaultdict(list)
        for s in self.saveables:
            per_device[DeviceSpec.from_string(s.device or "").to_string()].append(s)
        return sorted(per_device.items(), key=lambda kv: kv[0])

    def _sharded_save(self, checkpoint_prefix, per_device) -> Tensor:
        graph = graph_lib.get_default_graph()
        with graph_lib.device("/device:CPU:0"):
            tmp_prefix = checkpoint_prefix + constant_op.constant(os.path.normpath(
                _SHARDED_SUFFIX))
        num_shards = constant_op.constant(len(per_device), name="num_shards")
        saves, prefixes, last_device = [], [], ""
        for shard, (device, saveables) in enumerate(per_device):
            last_device = device
            with graph_lib.device(_cpu0(device)):
                sharded = save_restore_ops.sharded_filename(tmp_prefix, shard, num_shards)
                prefixes.append(sharded)
                saves.append(self._save(sharded, saveables))
        with graph.control_dependencies([t.op for t in saves]):
            with graph_lib.device(_cpu0(last_device)):
                merge = save_restore_ops.merge_v2_checkpoints(
                    joining_ops.stack(prefixes, name="MergeV2Checkpoints/checkpoint_prefixes"),
                    checkpoint_prefix, delete_old_dirs=True)
                with graph.control_dependencies([merge]):
                    return array_ops.identity(checkpoint_prefix)

    def _sharded_restore(self, filename_tensor, per_device):
        groups = []
        for device, saveables in per_device:
            with graph_lib.device(device):
                restored = self._restore_tensors(filename_tensor, saveables)
                groups.append(builders.group(*self._assigns(saveables, restored),
                                                     name="restore_shard"))
        return builders.group(*groups, name="restore_all")


class Saver:
    """Saves and restores variables (`tf.train.Saver`).

    Args:
      var_list: variables to save: a list (saved under their op names; the shards of a
        partitioned variable under its full name with their slices), or a dict of names
        to variables. Default: every global variable and SAVEABLE_OBJECTS entry.
      reshape: restore into variables of another shape with the same number of elements.
      sharded: one save op per device, merged into one checkpoint.
      max_to_keep: how many recent checkpoints to keep (0 or None: all).
      keep_checkpoint_every_n_hours: also keep one checkpoint per this many hours.
      name: the name scope of the ops (default "save"); with `saver_def`, the scope
        the saver's names are imported under.
      restore_sequentially: restore the variables of a device one after the other.
      saver_def: re-create a Saver from this SaverDef (its ops already in the graph).
      builder: unused (TensorFlow's custom builders are not supported).
      defer_build: add the ops at `build()` instead of now.
      allow_empty: with no variables, build nothing and make save/restore no-ops.
      write_version: only V2 (the default) is written.
      pad_step_number: zero-pad the global step in file names to 8 digits.
      save_relative_paths: write paths relative to the directory into the state file.
      filename: the default filename the ops use when none is fed.

    Raises:
      TypeError: `var_list` holds something that cannot be saved.
      ValueError: no variables (without `allow_empty`), duplicate names, or a
        `var_list` with `defer_build`.
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None,
                 restore_sequentially=False, saver_def=None, builder=None,
                 defer_build=False, allow_empty=False,
                 write_version=saver_pb2.SaverDef.V2, pad_step_number=False,
                 save_relative_paths=False, filename=None):
        del builder
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either "
                             "set defer_build=False or var_list=None.")
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially
        self.saver_def = saver_def
        self._is_built = False
        self._allow_empty = allow_empty
        self._is_empty = None
        self._write_version = write_version
        self._pad_step_number = pad_step_number
        self._filename = filename
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._save_relative_paths = save_relative_paths
        self._next_checkpoint_time = None
        self._object_restore_saver = None  # restores object-based checkpoints (restore)
        if not defer_build:
            self.build()
        if self.saver_def:
            self._check_saver_def()
            self._write_version = self.saver_def.version

    # ---- building -----------------------------------------------------------------------
    def build(self) -> None:
        """Adds the save and restore ops (once)."""
        if self._is_built:
            return
        self._is_built = True
        if not self.saver_def:
            var_list = self._var_list
            if var_list is None:
                var_list = _default_var_list(graph_lib.get_default_graph())
            if not var_list:
                if self._allow_empty:
                    self._is_empty = True
                    return
                raise ValueError("No variables to save")
            self._is_empty = False
            builder = _Builder(saveables_from(var_list), self._sharded, self._reshape,
                               self._restore_sequentially)
            self.saver_def = builder.build(
                self._name, self._filename,
                self._max_to_keep if self._max_to_keep is not None else 0,
                self._keep_checkpoint_every_n_hours)
        elif self._name:
            for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
                setattr(self.saver_def, field,
                        _prepend_name_scope(getattr(self.saver_def, field), self._name))
        self._check_saver_def()
        self._next_checkpoint_time = (
            _now() + self.saver_def.keep_checkpoint_every_n_hours * 3600)

    def _check_saver_def(self) -> None:
        if not isinstance(self.saver_def, saver_pb2.SaverDef):
            raise ValueError(f"saver_def must be a saver_pb2.SaverDef: {self.saver_def}")
        if not self.saver_def.save_tensor_name:
            raise ValueError(f"saver_def must specify the save_tensor_name: {self.saver_def}")
        if not self.saver_def.restore_op_name:
            raise ValueError(f"saver_def must specify the restore_op_name: {self.saver_def}")

    def as_saver_def(self) -> saver_pb2.SaverDef:
        """The SaverDef naming this saver's ops."""
        return self.saver_def

    def to_proto(self, export_scope=None):
        """The SaverDef with `export_scope` stripped (None if outside the scope)."""
        if export_scope is None:
            return self.saver_def
        d = self.saver_def
        if not (d.filename_tensor_name.startswith(export_scope)
                and d.save_tensor_name.startswith(export_scope)
                and d.restore_op_name.startswith(export_scope)):
            return None
        out = saver_pb2.SaverDef()
        out.CopyFrom(d)
        for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
            setattr(out, field, _strip_name_scope(getattr(out, field), export_scope))
        return out

    @staticmethod
    def from_proto(saver_def, import_scope=None) -> Saver:
        """A Saver for `saver_def` whose ops are in the default graph (under import_scope)."""
        return Saver(saver_def=saver_def, name=import_scope)

    # ---- retention ----------------------------------------------------------------------
    @property
    def last_checkpoints(self) -> list[str]:
        """The not-yet-deleted checkpoints this saver knows, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints) -> None:
        """DEPRECATED: the list of checkpoints, never deleted (timestamp +inf)."""
        assert isinstance(last_checkpoints, list)
        self._last_checkpoints = [(s, float("inf")) for s in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        """Sets the (path, timestamp) list of checkpoints, oldest first."""
        assert isinstance(last_checkpoints_with_time, list)
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        """Re-learns the kept checkpoints after a restart: those of `checkpoint_paths`
        that still exist, with their index file's mtime as timestamp."""
        found = []
        for path in checkpoint_paths:
            mtimes = checkpoint_management.get_checkpoint_mtimes([path])
            if mtimes:
                found.append((path, mtimes[0]))
        self.set_last_checkpoints_with_time(found)

    def _record_last_checkpoint(self, latest: str) -> None:
        if not self.saver_def.max_to_keep:
            return
        self._last_checkpoints = [p for p in self._last_checkpoints if p[0] != latest]
        self._last_checkpoints.append((latest, _now()))
        if len(self._last_checkpoints) > self.saver_def.max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix="meta", state_dir="") -> None:
        """Deletes the oldest checkpoint past `max_to_keep`, if it lies in `state_dir` (the
        directory of the state file that listed it; TensorFlow deletes wherever it points)."""
        if not self._checkpoints_to_be_deleted:
            return
        path, stamp = self._checkpoints_to_be_deleted.pop(0)
        if stamp > self._next_checkpoint_time:
            self._next_checkpoint_time += self.saver_def.keep_checkpoint_every_n_hours * 3600
            return
        if not checkpoint_management.is_inside(path, state_dir):
            _log.warning("Not deleting the old checkpoint %s: it is outside %s, the directory "
                         "of the checkpoint state file", path, state_dir or ".")
            return
        try:
            checkpoint_management.remove_checkpoint(path, self.saver_def.version,
                                                    meta_graph_suffix)
        except Exception as e:  # noqa: BLE001 - TensorFlow logs and goes on too
            _log.warning("Ignoring: %s", e)

    # ---- save ---------------------------------------------------------------------------
    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Saves the variables; returns the checkpoint prefix (None for an empty saver).

        Args:
          sess: the Session holding the variables.
          save_path: the prefix of the checkpoint files.
          global_step: appended to `save_path` as "-<step>" (an int, a Tensor, its name,
            or a Variable).
          latest_filename: the state file's name (default "checkpoint").
          meta_graph_suffix: the meta graph file's extension (default "meta").
          write_meta_graph: also write `<prefix>.<meta_graph_suffix>`.
          write_state: update the state file and apply retention.

        Raises:
          TypeError: `sess` is not a Session.
          ValueError: `latest_filename` has path components or collides with
            `save_path`; the parent directory of `save_path` does not exist.
          RuntimeError: the ops were never built (`defer_build` without `build()`).
          tf.errors.OpError: the write failed (PermissionDeniedError, ...); the previous
            latest checkpoint stays the latest.
        """
        del save_debug_info
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        if latest_filename is None:
            latest_filename = "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        if isinstance(save_path, bytes):
            save_path = save_path.decode()
        if global_step is not None:
            if isinstance(global_step, (int, np.integer)) and not isinstance(global_step, bool):
                global_step = int(global_step)
            else:  # a Tensor, Variable or tensor name
                global_step = int(sess.run(global_step))
            step = f"{global_step:08d}" if self._pad_step_number else str(global_step)
            checkpoint_file = f"{save_path}-{step}"
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(f"'latest_filename' collides with 'save_path': "
                                 f"'{latest_filename}' and '{save_path}'")
        if not hasattr(sess, "run") or not hasattr(sess, "graph"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        parent = os.path.dirname(save_path)
        if self._is_empty:
            model_checkpoint_path = None
        else:
            model_checkpoint_path = self._run_save(sess, save_path, checkpoint_file, parent)
        if write_meta_graph:
            with sess.graph.as_default():
                self.export_meta_graph(
                    checkpoint_management.meta_graph_filename(checkpoint_file,
                                                              meta_graph_suffix),
                    strip_default_attrs=strip_default_attrs)
        if model_checkpoint_path is not None and write_state:
            self._record_last_checkpoint(model_checkpoint_path)
            checkpoint_management.update_checkpoint_state(
                parent, model_checkpoint_path, self.last_checkpoints, latest_filename,
                save_relative_paths=self._save_relative_paths)
            self._maybe_delete_old_checkpoints(meta_graph_suffix, parent)
        return model_checkpoint_path

    def _run_save(self, sess, save_path, checkpoint_file, parent) -> str:
        ckpt_files.cleanup_directory(parent)
        leftover = checkpoint_file + "_temp"
        if self._sharded and os.path.isdir(leftover):  # an interrupted sharded save
            for name in os.listdir(leftover):
                try:
                    os.unlink(os.path.join(leftover, name))
                except OSError:
                    pass
        try:
            path = sess.run(self.saver_def.save_tensor_name,
                            {self.saver_def.filename_tensor_name: checkpoint_file})
        except (errors.FailedPreconditionError, errors.NotFoundError):
            if parent and not os.path.isdir(parent):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't "
                                 "save.") from None
            raise
        return path.decode() if isinstance(path, bytes) else str(path)

    def save_tf_bundle(self, sess, save_path) -> str | None:
        """Saves the variables in TensorFlow's own checkpoint format (the tensor bundle that
        SavedModels hold) at `save_path`; returns it (None for an empty saver). No state
        file, no meta graph, no retention (see saver_tf_format.py)."""
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        if self._is_empty:
            return None
        return saver_tf_format.save_tf_bundle(sess, self.saver_def, os.fspath(save_path))

    # ---- restore ------------------------------------------------------------------------
    def restore(self, sess, save_path) -> None:
        """Restores the variables from the checkpoint at `save_path`.

        Raises:
          ValueError: `save_path` is None or names no checkpoint.
          NotFoundError: names are missing from the checkpoint (all of them listed).
          InvalidArgumentError: a dtype or shape differs from the variable's (named).
          DataLossError: the checkpoint is corrupt or truncated (file and tensor named).
        """
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_management.checkpoint_exists(save_path):
            raise ValueError("The passed save_path is not a valid checkpoint: " + save_path)
        _log.info("Restoring parameters from %s", save_path)
        try:
            sess.run(self.saver_def.restore_op_name,
                     {self.saver_def.filename_tensor_name: save_path})
        except errors.NotFoundError as err:
            names_to_keys = _object_graph_key_mapping(save_path)
            if names_to_keys is None:
                raise _wrap_restore_error(err, "a Variable name or other graph key that is "
                                          "missing") from None
            _log.warning("Restoring an object-based checkpoint using a name-based saver. This "
                         "may be somewhat fragile, and will re-build the Saver. Instead, "
                         "consider loading object-based checkpoints using "
                         "tf.train.Checkpoint().")
            with sess.graph.as_default():
                self._object_restore_saver = self._saver_for_object_checkpoint(names_to_keys)
            self._object_restore_saver.restore(sess, save_path)
        except errors.InvalidArgumentError as err:
            raise _wrap_restore_error(err, "a mismatch between the current graph and the "
                                      "graph") from None

    def _saver_for_object_checkpoint(self, names_to_keys: dict) -> Saver:
        """A Saver restoring this one's variables from an object-based checkpoint: each
        saved under the checkpoint key whose attribute has the variable's name as its
        `full_name` (TF1's rule; the Saver is built once and reused).

        Raises:
          NotFoundError: a variable's name is not among the checkpoint's full names (the
            message lists both sides, as TensorFlow's does).
        """
        var_list = self._var_list
        if var_list is None:
            var_list = _default_var_list(graph_lib.get_default_graph())
        saveables = saveables_from(var_list)
        current = {s.name for s in saveables}
        missing = current - set(names_to_keys)
        if missing:
            extra = set(names_to_keys) - current
            raise errors.NotFoundError(
                None, None,
                f"\n\nExisting variables not in the checkpoint: {', '.join(sorted(missing))}"
                "\n\nVariables names when this checkpoint was written which don't exist now: "
                f"{', '.join(sorted(extra))}\n\n({len(current & set(names_to_keys))} variable "
                "name(s) did match)\n\nCould not find some variables in the checkpoint (see "
                "names above). Saver was attempting to load an object-based checkpoint (saved "
                "using tf.train.Checkpoint or tf.keras.Model.save_weights) using variable "
                "names. There may be new variables which did not exist when the checkpoint "
                "was written: construct a Saver(var_list=...) with only the variables which "
                "previously existed, and if variable names have changed, make it a dict with "
                "the old names as keys.")
        if self._object_restore_saver is not None:
            return self._object_restore_saver
        renamed = {names_to_keys[s.name]: s.var if s.var is not None else s.tensor
                   for s in saveables}
        return Saver(renamed)

    # ---- meta graph ---------------------------------------------------------------------
    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False,
                          clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False):
        """The MetaGraphDef of the default graph with this saver's SaverDef (written to
        `filename` if given)."""
        del save_debug_info, clear_extraneous_savers
        mgd = meta_graph.export_meta_graph(
            graph_def=None, saver_def=self.saver_def, collection_list=collection_list,
            export_scope=export_scope, clear_devices=clear_devices,
            strip_default_attrs=strip_default_attrs)
        _write_meta_graph(filename, mgd, as_text)
        return mgd


def _object_graph_key_mapping(save_path: str) -> dict | None:
    """{full name: checkpoint key} of an object-based checkpoint's attributes; None for a
    checkpoint without an object graph."""
    with open_checkpoint(save_path) as reader:
        if not reader.has_tensor(trackable.OBJECT_GRAPH_KEY):
            return None
        data = reader.get_tensor(trackable.OBJECT_GRAPH_KEY)
    proto = trackable_object_graph_pb2.TrackableObjectGraph.FromString(bytes(data))
    return {attr.full_name: attr.checkpoint_key for node in proto.nodes
            for attr in node.attributes}


def _wrap_restore_error(err: errors.OpError, what: str) -> errors.OpError:
    message = (f"Restoring from checkpoint failed. This is most likely due to {what} from the "
               "checkpoint. Please ensure that you have not altered the graph expected based "
               f"on the checkpoint. Original error:\n\n{err.message}")
    new = type(err)(err.node_def, err.op, message)
    new.__cause__ = err
    return new


def _prepend_name_scope(name: str, scope: str) -> str:
    scope = scope.rstrip("/")
    if not scope:
        return name
    if name.startswith("^"):
        return f"^{scope}/{name[1:]}"
    return f"{scope}/{name}"


def _strip_name_scope(name: str, scope: str) -> str:
    scope = scope.rstrip("/")
    if scope and name.startswith(scope + "/"):
        return name[len(scope) + 1:]
    return name


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False, **kwargs):
    """`tf.train.export_meta_graph`: the MetaGraphDef (tensorflux/framework/meta_graph.py),
    written to `filename` (atomically; text format if `as_text`) if given."""
    del clear_extraneous_savers, save_debug_info
    mgd = meta_graph.export_meta_graph(
        meta_info_def=meta_info_def, graph_def=graph_def, saver_def=saver_def,
        collection_list=collection_list, graph=graph, export_scope=export_scope,
        clear_devices=clear_devices, strip_default_attrs=strip_default_attrs, **kwargs)
    _write_meta_graph(filename, mgd, as_text)
    return mgd


def _write_meta_graph(filename, mgd, as_text: bool) -> None:
    if not filename:
        return
    directory = os.path.dirname(filename)
    if directory:
        os.makedirs(directory, exist_ok=True)
    data = text_format.MessageToString(mgd).encode("utf-8") if as_text else \
        mgd.SerializeToString(deterministic=True)
    ckpt_files.atomic_write(filename, data)


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """`tf.train.import_meta_graph`: imports the graph and collections of a MetaGraphDef
    (or `.meta` file) into the default graph; returns a Saver for its variables (from its
    SaverDef when it has one, else a new one; None when there are no variables)."""
    meta_graph_def = meta_graph.read_meta_graph_file(meta_graph_or_file) \
        if not hasattr(meta_graph_or_file, "graph_def") else meta_graph_or_file
    imported_vars = meta_graph.import_scoped_meta_graph(
        meta_graph_def, clear_devices=clear_devices, import_scope=import_scope, **kwargs)
    if meta_graph_def.HasField("saver_def"):
        scope = import_scope
        if imported_vars:
            key, var = next(iter(imported_vars.items()))
            scope = var.name[:-len(key)]
        return Saver(saver_def=meta_graph_def.saver_def, name=scope)
    graph = graph_lib.get_default_graph()
    if graph.get_collection(GraphKeys.GLOBAL_VARIABLES, import_scope):
        return Saver()
    _log.info("Saver not created because there are no variables in the graph to restore")
    return None


meta_graph.register_proto_function(GraphKeys.SAVERS, saver_pb2.SaverDef, Saver.to_proto,
                                   Saver.from_proto)
