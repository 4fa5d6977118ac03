"""TF1's behaviour switches (`tf.disable_v2_behavior`, `tf.enable_eager_execution`, ...).

tensorflux runs TensorFlow 1.x graph-mode programs only, so every switch that asks for TF1
behaviour is accepted and changes nothing, and every switch that asks for a TF2 behaviour
tensorflux does not have (eager execution, integer shape dimensions, tensors compared by
value) raises a ValueError that says so, rather than being silently ignored.

Variables: `tf.Variable` and `tf.get_variable` make resource variables by default
(variables/variables.py); `disable_resource_variables()` makes them TF1 reference variables
(VariableV2, variables/ref_variable.py) unless `use_resource` or the variable scope says
otherwise, as TensorFlow's switch does. `disable_v2_behavior()` does not call it (unlike
TensorFlow's): the default stays resource variables, which compute the same values.

Control flow: tensorflux builds TF1 control flow (Switch/Merge/Enter/Exit frames); a
program that asks for control flow v2 computes the same values, so the request is logged
and `control_flow_v2_enabled()` stays False.
"""

from __future__ import annotations

from tensorflux.platform import tf_logging
from tensorflux.variables import variables

__all__ = ["disable_v2_behavior", "enable_v2_behavior", "disable_eager_execution",
           "enable_eager_execution", "executing_eagerly",
           "executing_eagerly_outside_functions", "disable_resource_variables",
           "enable_resource_variables", "resource_variables_enabled",
           "disable_control_flow_v2", "enable_control_flow_v2", "control_flow_v2_enabled",
           "disable_tensor_equality", "enable_tensor_equality", "disable_v2_tensorshape",
           "enable_v2_tensorshape"]


def _unsupported(what: str) -> ValueError:
    return ValueError(f"{what} is not supported: tensorflux runs TensorFlow 1.x graph-mode "
                      "programs only (tf.compat.v1 semantics, no eager execution).")


def disable_v2_behavior() -> None:
    """Asks for TF1 behaviour: what tensorflux always has, so nothing changes."""


def enable_v2_behavior() -> None:
    """Raises:
      ValueError: always; TF2 behaviour (eager execution) is not supported."""
    raise _unsupported("tf.enable_v2_behavior")


def disable_eager_execution() -> None:
    """Graph mode: what tensorflux always runs in, so nothing changes."""


def enable_eager_execution(config=None, device_policy=None, execution_mode=None) -> None:
    """Raises:
      ValueError: always; eager execution is not supported."""
    del config, device_policy, execution_mode
    raise _unsupported("Eager execution (tf.enable_eager_execution)")


def executing_eagerly() -> bool:
    """False: ops build graph nodes; values come from `Session.run`."""
    return False


def executing_eagerly_outside_functions() -> bool:
    """False, as `executing_eagerly`."""
    return False


def disable_resource_variables() -> None:
    """`tf.Variable` and `tf.get_variable` make TF1 reference variables (VariableV2) from
    now on, where neither `use_resource` nor the variable scope asks otherwise."""
    variables.set_default_use_resource(False)


def enable_resource_variables() -> None:
    """`tf.Variable` and `tf.get_variable` make resource variables (the default)."""
    variables.set_default_use_resource(True)


def resource_variables_enabled() -> bool:
    """Whether `tf.Variable` and `tf.get_variable` make resource variables by default."""
    return variables.default_use_resource()


def disable_control_flow_v2() -> None:
    """TF1 control flow: what tensorflux always builds, so nothing changes."""


def enable_control_flow_v2() -> None:
    """Logs that tensorflux keeps building TF1 control flow (the same values)."""
    tf_logging.warning("tf.enable_control_flow_v2: tensorflux builds TF1 control flow "
                       "(Switch/Merge frames); values are the same.")


def control_flow_v2_enabled() -> bool:
    """False: tf.cond and tf.while_loop build TF1 control flow."""
    return False


def disable_tensor_equality() -> None:
    """Tensors compare by identity (TF1): always so, nothing changes."""


def enable_tensor_equality() -> None:
    """Raises:
      ValueError: always; tensors compare by identity in tensorflux."""
    raise _unsupported("tf.enable_tensor_equality")


def disable_v2_tensorshape() -> None:
    """`shape[i]` is a `Dimension` (TF1): always so, nothing changes."""


def enable_v2_tensorshape() -> None:
    """Raises:
      ValueError: always; `TensorShape` dimensions are `Dimension` objects in tensorflux."""
    raise _unsupported("tf.enable_v2_tensorshape")
