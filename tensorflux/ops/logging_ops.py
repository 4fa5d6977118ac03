"""Assert: a run-time check that fails the step with a message built from tensors.

`tf.Assert(condition, data, summarize=3)` adds an Assert op: when `condition` (a bool
scalar) is false at run time, the step fails with InvalidArgumentError
"assertion failed: [d0] [d1] ..." where each `data` tensor is summarized to at most
`summarize` entries, formatted as TensorFlow formats them. Other ops wait on the check
through a control dependency (`with tf.control_dependencies([assert_op])`).

TensorFlow wraps the op in a `cond` when some data tensor is neither int32 nor string, so
the data is computed only on failure; until `tf.cond` is available the Assert runs
unguarded (same result, the data computed every step). The kernel is in
tensorflux/kernels/cpu/logging_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Operation
from tensorflux.framework.tensor_conversion import convert_to_tensor

# The TF1 public names of this module.
__all__ = ["Assert"]


def _assert_shape(op):
    cond = op.inputs[0].shape
    if cond.ndims is not None and cond.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {cond.ndims}")
    return []


define_op("Assert", inputs=["condition: bool", "data: T"],
          attrs=["T: list(type)", "summarize: int = 3"], shape_fn=_assert_shape,
          stateful=True)
not_differentiable("Assert")


def Assert(condition, data, summarize=None, name=None) -> Operation:  # noqa: N802 - TF1 name
    """Fails the step when `condition` is false, printing `data` (`tf.Assert`).

    Args:
      condition: a bool scalar.
      data: tensors (or Python values) printed when the condition is false.
      summarize: how many entries of each data tensor to print (default 3).
      name: a name for the op.

    Returns:
      The Assert operation; use it in `tf.control_dependencies`.

    Raises:
      ValueError: `condition` has a static shape other than a scalar.
    """
    with graph_lib.name_scope(name, "Assert", [condition] + list(data)):
        xs = [convert_to_tensor(d) for d in data]
        return apply_op("Assert", condition=condition, data=xs,
                        summarize=3 if summarize is None else summarize, name="Assert")
