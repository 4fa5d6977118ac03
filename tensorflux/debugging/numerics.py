"""Finding the first NaN or Inf: `tf.add_check_numerics_ops` and `tf.verify_tensor_all_finite`.

`add_check_numerics_ops()` puts a CheckNumerics op on every float16/32/64 output of every op
in the default graph, message "op_name:output_index". Each check has a control dependency
on the one before it (graph order), so the checks run in that order and the first to fail
names the earliest op whose output held a NaN or an Inf ("Log:0 : Tensor had NaN values"),
however the ops downstream of it were scheduled. The ops themselves run as before; only the
returned group, when run, runs the checks.
"""

from __future__ import annotations

from tensorflux.control_flow.builders import group, with_dependencies
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops.logging_ops import check_numerics

__all__ = ["add_check_numerics_ops", "verify_tensor_all_finite"]

_CHECKED = (dtypes.float16, dtypes.float32, dtypes.float64)


def verify_tensor_all_finite(t=None, msg=None, name=None, x=None, message=None) -> Tensor:
    """`t` itself, failing the step if it holds a NaN or an Inf
    (`tf.verify_tensor_all_finite`, `tf.debugging.assert_all_finite`).

    Args:
      t: a floating-point tensor (`x` is another name for it).
      msg: the start of the error message (`message` is another name for it).
      name: a name for the scope (default "VerifyFinite").
      x: as `t`.
      message: as `msg`.

    Returns:
      A tensor equal to `t`, produced after the check.

    Raises:
      TypeError: `t` is not of a floating-point type.
      ValueError: both or neither of `t` and `x` (or `msg` and `message`) are given.
    """
    t = _one_of(t, x, "t", "x")
    msg = _one_of(msg, message, "msg", "message")
    with graph_lib.name_scope(name, "VerifyFinite", [t] if isinstance(t, Tensor) else None):
        t = convert_to_tensor(t, name="t")
        with graph_lib.colocate_with(t.op):
            check = check_numerics(t, message=msg)
        return with_dependencies([check], t)


def _one_of(value, alias, name: str, alias_name: str):
    if (value is None) == (alias is None):
        raise ValueError(f"Exactly one of `{name}` and `{alias_name}` must be given.")
    return value if value is not None else alias


def add_check_numerics_ops() -> Operation:
    """Checks every floating-point output in the default graph for NaN and Inf
    (`tf.add_check_numerics_ops`).

    Returns:
      A group op; running it runs every check, in graph order, failing the step with
      InvalidArgumentError "op_name:index : Tensor had NaN values" for the first output
      (in graph order) that holds a NaN or an Inf.

    Raises:
      ValueError: the graph has ops inside `tf.cond` or `tf.while_loop`.
    """
    g = graph_lib.get_default_graph()
    previous: list[Operation] = []
    for op in g.get_operations():
        for out in op.outputs:
            if out.dtype not in _CHECKED:  # reference (variable) outputs are skipped
                continue
            if op._control_flow_context is not None:
                raise ValueError("`tf.add_check_numerics_ops() is not compatible with "
                                 "TensorFlow control flow operations such as `tf.cond()` "
                                 "or `tf.while_loop()`.")
            with g.control_dependencies(previous):
                previous = [check_numerics(out, message=f"{op.name}:{out.value_index}").op]
    return group(*previous)
