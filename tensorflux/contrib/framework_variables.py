"""`tf.contrib.framework`'s variable helpers beyond the layer ones (which live in
contrib/layers_core.py): the global step functions under their contrib names, variables
filtered by name, and the warm-start helpers TF-Slim programs use to fill a model from a
checkpoint or from NumPy values (`assign_from_checkpoint_fn` is how
train_image_classifier.py fine-tunes).

The `assign_from_*` pairs return `(assign_op, feed_dict)`: one assign per variable from a
placeholder named `placeholder/<variable name>`, so the values travel as feeds and not as
constants baked into the graph. The `*_fn` forms return a callback `fn(session)` for
`Supervisor(init_fn=...)` / `slim.learning.train(init_fn=...)`.
"""

from __future__ import annotations

import logging
import re

from tensorflux.contrib.layers_core import get_variables
from tensorflux.control_flow import builders
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.ops import array_ops, state_ops
from tensorflux.train import checkpoint_utils, training_util
from tensorflux.train.global_step import (
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)
from tensorflux.train.saver import Saver
from tensorflux.variables.variables import Variable

__all__ = [
    "VariableDeviceChooser", "add_model_variable", "assert_global_step",
    "assert_or_get_global_step", "assign_from_checkpoint", "assign_from_checkpoint_fn",
    "assign_from_values", "assign_from_values_fn", "create_global_step", "filter_variables",
    "get_global_step", "get_local_variables", "get_or_create_global_step",
    "get_unique_variable", "get_variable_full_name", "get_variables_by_suffix",
    "global_variable", "local_variable", "zero_initializer",
]

_log = logging.getLogger("tensorflux")

assert_global_step = training_util.assert_global_step


def assert_or_get_global_step(graph=None, global_step_tensor=None):
    """`global_step_tensor` checked to be a global step (a scalar integer variable or
    tensor), else the graph's global step (None if it has none)."""
    if global_step_tensor is None:
        global_step_tensor = get_global_step(graph)
    else:
        assert_global_step(global_step_tensor)
    return global_step_tensor


def add_model_variable(var) -> None:
    """Adds `var` to the MODEL_VARIABLES collection (once)."""
    if var not in graph_lib.get_collection(GraphKeys.MODEL_VARIABLES):
        graph_lib.add_to_collection(GraphKeys.MODEL_VARIABLES, var)


def get_local_variables(scope=None, suffix=None):
    """The LOCAL_VARIABLES under `scope` whose names end with `suffix`."""
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


def get_variables_by_suffix(suffix, scope=None):
    """The global variables under `scope` whose names end with `suffix`."""
    return get_variables(scope=scope, suffix=suffix)


def get_unique_variable(var_op_name):
    """The one global variable whose op is named `var_op_name`.

    Raises:
      ValueError: no variable, or several, have that name.
    """
    candidates = get_variables(scope=var_op_name)
    if not candidates:
        raise ValueError(f"Couldn't find variable {var_op_name}")
    for candidate in candidates:
        if candidate.op.name == var_op_name:
            return candidate
    raise ValueError(f"Variable {var_op_name} does not uniquely identify a variable")


def get_variable_full_name(var) -> str:
    """A variable's name without the `:0` (a partitioned variable's: its full name)."""
    save_info = getattr(var, "_save_slice_info", None)
    if save_info is not None:
        return save_info.full_name
    return var.op.name


def filter_variables(var_list, include_patterns=None, exclude_patterns=None,
                     reg_search=True) -> list:
    """The variables of `var_list` whose names match one of `include_patterns` (all when
    None) and none of `exclude_patterns`; `reg_search` uses `re.search`, else `re.match`."""
    find = re.search if reg_search else re.match

    def matches(name, patterns):
        return any(find(p, name) for p in patterns)

    chosen = var_list if include_patterns is None else \
        [v for v in var_list if matches(v.op.name, include_patterns)]
    if exclude_patterns is not None:
        chosen = [v for v in chosen if not matches(v.op.name, exclude_patterns)]
    return chosen


def global_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """A `tf.Variable` in GLOBAL_VARIABLES only (not trainable)."""
    return Variable(initial_value, trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES],
                    validate_shape=validate_shape, name=name)


def local_variable(initial_value, validate_shape=True, name=None, use_resource=None):
    """A `tf.Variable` in LOCAL_VARIABLES only (not trainable, not saved)."""
    return Variable(initial_value, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                    validate_shape=validate_shape, name=name)


def zero_initializer(ref, use_locking=True, name="zero_initializer"):
    """An op setting variable `ref` to zeros of its shape."""
    return state_ops.assign(ref, array_ops.zeros_like(ref), use_locking=use_locking,
                            name=name)


class VariableDeviceChooser:
    """A device function placing variables round-robin over `num_tasks` tasks of
    `job_name` (`device_fn = VariableDeviceChooser(2); with tf.device(device_fn): ...`).

    Args:
      num_tasks: how many tasks to spread over (0: neither job nor task in the device
        string, only the device type and index).
      job_name: the job's name (with num_tasks > 0).
      device_type: "CPU" or "GPU".
      device_index: the device's index in its task.
      replica: the replica index, if any.
    """

    def __init__(self, num_tasks=0, job_name="ps", device_type="CPU", device_index=0,
                 replica=None):
        self._job_name = job_name
        self._device_type = device_type
        self._device_index = device_index
        self._replica = replica
        self._num_tasks = num_tasks
        self._next_task_id = 0

    def __call__(self, op) -> str:
        parts = []
        if self._num_tasks > 0 and self._job_name:  # TF names the job only with tasks
            parts.append(f"/job:{self._job_name}")
        if self._replica is not None:
            parts.append(f"/replica:{self._replica}")
        if self._num_tasks > 0:
            parts.append(f"/task:{self._next_task_id}")
            self._next_task_id = (self._next_task_id + 1) % self._num_tasks
        parts.append(f"/device:{self._device_type}:{self._device_index}")
        return "".join(parts)


# ---- filling variables from values and checkpoints ------------------------------------

def _assign_from_feed(var, value, assign_ops: list, feed_dict: dict) -> None:
    placeholder = array_ops.placeholder(var.dtype.base_dtype, shape=var.get_shape(),
                                        name="placeholder/" + var.op.name)
    assign_ops.append(var.assign(placeholder))
    feed_dict[placeholder] = value.reshape(var.get_shape().as_list()) \
        if var.get_shape().is_fully_defined() else value


def assign_from_values(var_names_to_values):
    """An op assigning NumPy values to the variables named by the dict's keys.

    Args:
      var_names_to_values: {variable op name: value}.

    Returns:
      (assign_op, feed_dict): run `assign_op` with `feed_dict`.

    Raises:
      ValueError: a name matches no global variable.
    """
    import numpy as np  # noqa: PLC0415

    feed_dict: dict = {}
    assign_ops: list = []
    for var_name, value in var_names_to_values.items():
        found = [v for v in graph_lib.get_collection(GraphKeys.GLOBAL_VARIABLES, var_name)
                 if v.op.name == var_name]
        if not found:
            raise ValueError(f"Variable {var_name} wasn't found")
        if len(found) > 1:
            raise ValueError(f"Variable {var_name} doesn't uniquely identify a variable")
        var = found[0]
        _assign_from_feed(var, np.asarray(value, dtype=var.dtype.base_dtype.as_numpy_dtype),
                          assign_ops, feed_dict)
    return builders.group(*assign_ops), feed_dict


def assign_from_values_fn(var_names_to_values):
    """`fn(session)` assigning the values (see `assign_from_values`)."""
    assign_op, feed_dict = assign_from_values(var_names_to_values)

    def callback(session):
        return session.run(assign_op, feed_dict)

    return callback


def _names_to_variables(var_list) -> dict:
    """{checkpoint name: variable or [partitions]} for a dict or a list of variables."""
    if isinstance(var_list, dict):
        return dict(var_list)
    out: dict = {}
    for var in var_list:
        name = get_variable_full_name(var)
        if getattr(var, "_save_slice_info", None) is not None:
            out.setdefault(name, []).append(var)
        else:
            out[name] = var
    return out


def assign_from_checkpoint(model_path, var_list, ignore_missing_vars=False):
    """An op assigning the values of checkpoint `model_path` to variables.

    Args:
      model_path: a checkpoint prefix (not a directory; see `tf.train.latest_checkpoint`).
      var_list: a list of variables (stored under their op names) or a dict
        {checkpoint name: variable}.
      ignore_missing_vars: skip variables the checkpoint lacks (with a warning) instead of
        raising.

    Returns:
      (assign_op, feed_dict).

    Raises:
      ValueError: a variable is missing from the checkpoint (unless `ignore_missing_vars`).
    """
    reader = checkpoint_utils.NewCheckpointReader(model_path)
    feed_dict: dict = {}
    assign_ops: list = []
    for ckpt_name, target in _names_to_variables(var_list).items():
        if not reader.has_tensor(ckpt_name):
            if ignore_missing_vars:
                _log.warning("Variable %s missing in checkpoint %s", ckpt_name, model_path)
                continue
            raise ValueError(f"Checkpoint is missing variable [{ckpt_name}]")
        value = reader.get_tensor(ckpt_name)
        for var in (target if isinstance(target, list) else [target]):
            info = getattr(var, "_save_slice_info", None)
            if info is not None:
                index = tuple(slice(o, o + s) for o, s in zip(info.var_offset,
                                                             info.var_shape, strict=True))
                part = value[index]
            else:
                part = value
            _assign_from_feed(var, part, assign_ops, feed_dict)
    return builders.group(*assign_ops), feed_dict


def assign_from_checkpoint_fn(model_path, var_list, ignore_missing_vars=False,
                              reshape_variables=False):
    """`fn(session)` restoring `var_list` from checkpoint `model_path` with a Saver.

    Args:
      model_path: a checkpoint prefix.
      var_list: a list of variables or a dict {checkpoint name: variable}.
      ignore_missing_vars: leave out (with a warning) the variables the checkpoint lacks;
        otherwise restoring them fails (NotFoundError) when `fn` runs.
      reshape_variables: restore into variables of another shape with as many elements.

    Returns:
      The callback, or None when nothing is left to restore.

    Raises:
      ValueError: `var_list` is empty.
    """
    if not var_list:
        raise ValueError("var_list cannot be empty")
    if ignore_missing_vars:
        reader = checkpoint_utils.NewCheckpointReader(model_path)
        if isinstance(var_list, dict):
            names_to_vars = var_list
        else:
            names_to_vars = {get_variable_full_name(v): v for v in var_list}
        available = {}
        for name, var in names_to_vars.items():
            if reader.has_tensor(name):
                available[name] = var
            else:
                _log.warning("Variable %s missing in checkpoint %s", name, model_path)
        var_list = available
    if not var_list:
        _log.warning("No Variables to restore")
        return None
    saver = Saver(var_list, reshape=reshape_variables)

    def callback(session):
        saver.restore(session, model_path)

    return callback

