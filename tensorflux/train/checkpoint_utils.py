"""Reading checkpoints from Python: `tf.train.list_variables`, `load_variable`,
`NewCheckpointReader` (tensorflux checkpoints, TensorFlow's own, and plain safetensors
files; see tensorflux/checkpoint/reader.py)."""

from __future__ import annotations

import os

from tensorflux.checkpoint.reader import open_checkpoint
from tensorflux.train import checkpoint_management

__all__ = ["NewCheckpointReader", "init_from_checkpoint", "list_variables", "load_checkpoint",
           "load_variable"]


def NewCheckpointReader(filepattern):  # noqa: N802 - TensorFlow's name
    """A reader of the checkpoint at prefix `filepattern`: `get_tensor`, `has_tensor`,
    `get_variable_to_shape_map`, `get_variable_to_dtype_map`, `debug_string`.

    Raises:
      NotFoundError: no checkpoint there.
      DataLossError: its index is corrupt or truncated.
    """
    if isinstance(filepattern, bytes):
        filepattern = filepattern.decode()
    return open_checkpoint(os.fspath(filepattern))


def _prefix(ckpt_dir_or_file) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = checkpoint_management.latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return latest
    return path


def load_checkpoint(ckpt_dir_or_file):
    """The reader of a checkpoint, or of the latest one in a directory.

    Raises:
      ValueError: a directory with no checkpoint.
      NotFoundError: no checkpoint at the prefix.
    """
    return NewCheckpointReader(_prefix(ckpt_dir_or_file))


def load_variable(ckpt_dir_or_file, name: str):
    """The value of variable `name` ("v" or "v:0") in a checkpoint or directory."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file) -> list:
    """(name, shape) of every variable in a checkpoint or directory, sorted by name."""
    reader = load_checkpoint(ckpt_dir_or_file)
    shapes = reader.get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]



# ---- init_from_checkpoint ---------------------------------------------------------------------


def init_from_checkpoint(ckpt_dir_or_file, assignment_map) -> None:
    """Makes the initializers of the mapped variables read them from a checkpoint (the
    values load when the initializer runs, e.g. `global_variables_initializer`).

    `assignment_map` (a dict, or a list of pairs to map one tensor to several variables)
    maps checkpoint names to the graph's variables:

    - `"ckpt_scope/": "scope/"`: every variable created by `get_variable` under `scope/`
      from the tensor of the same name under `ckpt_scope/` (`"/"` on the left is the
      checkpoint's root; on the right, every variable);
    - `"ckpt_scope/tensor": "scope/var"`: one variable (or partitioned variable) by name;
    - `"tensor": variable` (or the list of a partitioned variable's parts).

    A partitioned variable's parts each read their slice of the stored tensor.

    Raises:
      ValueError: a tensor is not in the checkpoint, shapes differ, or a scope maps to a
        single name.
    """
    from tensorflux.variables import variable_scope

    prefix = _prefix(ckpt_dir_or_file)
    stored = load_checkpoint(prefix).get_variable_to_shape_map()
    store = variable_scope._get_default_variable_store()
    named = dict(store._vars)
    pairs = assignment_map.items() if isinstance(assignment_map, dict) else assignment_map
    for ckpt_name, target in pairs:
        if _is_variable_or_parts(target):
            _init_one(target, prefix, ckpt_name, stored)
            continue
        found = _named(target, named)
        if found is not None:
            _init_one(found, prefix, ckpt_name, stored)
            continue
        scope = target[:target.rindex("/")] if "/" in target else ""
        if not ckpt_name.endswith("/"):
            raise ValueError(f"Assignment map with scope only name {scope} should map to "
                             f"scope only {ckpt_name}. Should be 'scope/': 'other_scope/'.")
        in_scope = sorted({_whole_name(n) for n in named
                           if not scope or n.startswith(scope + "/")})
        for name in in_scope:
            rest = name[len(scope):]
            if target != "/":
                rest = rest[1:]
            full = rest if ckpt_name == "/" else ckpt_name + rest
            full = full[:-1] if full.endswith("/") else full
            if full not in stored:
                raise ValueError(f"Tensor {full} ({rest} in {target}) is "
                                 f"not found in {prefix} checkpoint")
            _init_one(_named(name, named), prefix, full, stored)


def _is_variable_or_parts(target) -> bool:
    from tensorflux.variables import partitioned_variables, variables

    if isinstance(target, (variables.Variable, partitioned_variables.PartitionedVariable)):
        return True
    return isinstance(target, (list, tuple)) and bool(target) and \
        all(isinstance(v, variables.Variable) for v in target)


def _whole_name(name: str) -> str:
    """"a/w/part_3" -> "a/w" (a partitioned variable's part names its whole)."""
    return name[:name.index("/part_")] if "/part_" in name else name


def _named(name: str, named: dict):
    """The variable called `name`, else the parts of partitioned variable `name`, or None."""
    found = named.get(name)
    return found if found is not None else _parts_named(name, named)


def _parts_named(name: str, named: dict):
    """The parts of partitioned variable `name` in order, or None."""
    parts = []
    while f"{name}/part_{len(parts)}" in named:
        parts.append(named[f"{name}/part_{len(parts)}"])
    return parts or None


def _init_one(target, prefix: str, tensor_name: str, stored: dict) -> None:
    """Points `target`'s initializer (each part's, for a partitioned variable) at tensor
    `tensor_name` of the checkpoint at `prefix`."""
    from tensorflux.variables import partitioned_variables

    if tensor_name not in stored:
        raise ValueError(f"Tensor {tensor_name} is not found in {prefix} checkpoint "
                         f"{stored}")
    if isinstance(target, partitioned_variables.PartitionedVariable):
        target = list(target)
    if isinstance(target, (list, tuple)):
        infos = [v._get_save_slice_info() for v in target]
        if len(target) > 1 and any(i is None for i in infos):
            raise ValueError(f"Variables in a list must be the parts of one partitioned "
                             f"variable: {[v.name for v in target]}")
        if infos[0] is not None:
            full = infos[0].full_shape
            if list(full) != list(stored[tensor_name]):
                raise ValueError(f"Shape of variable {infos[0].full_name} ({tuple(full)}) "
                                 f"doesn't match with shape of tensor {tensor_name} "
                                 f"({stored[tensor_name]}) from checkpoint reader.")
            for v, info in zip(target, infos, strict=True):
                _point_initializer(v, prefix, tensor_name, info.spec)
            return
        target = target[0]
    if not target.shape.is_compatible_with(stored[tensor_name]):
        raise ValueError(f"Shape of variable {target.name} ({tuple(target.shape.as_list())}) "
                         f"doesn't match with shape of tensor {tensor_name} "
                         f"({stored[tensor_name]}) from checkpoint reader.")
    _point_initializer(target, prefix, tensor_name, "")


def _point_initializer(variable, prefix: str, tensor_name: str, slice_spec: str) -> None:
    """`variable`'s initializer and initial value become a RestoreV2 of the tensor (on the
    variable's device, as TensorFlow's checkpoint initializer)."""
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import save_restore_ops, state_ops

    g = variable.graph
    handle = variable.handle
    with g.as_default(), graph_lib.name_scope(variable.op.name + "/"), \
            g.colocate_with(None, ignore_existing=True), g.device(handle.device):
        value = save_restore_ops.restore_v2(prefix, [tensor_name], [slice_spec],
                                            [variable.dtype.base_dtype],
                                            name="checkpoint_initializer")[0]
        value.set_shape(variable.shape)
        variable._initializer_op = state_ops.assign_variable_op(handle, value,
                                                                name="checkpoint_init")
    variable._initial_value = value
