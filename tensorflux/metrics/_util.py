"""Pieces shared by the streaming metrics: metric variables, shape clean-up, weights.

A streaming metric keeps its running state in LOCAL variables (collections LOCAL_VARIABLES
and METRIC_VARIABLES, not trainable) named inside the metric's variable scope
("accuracy/total", "accuracy/count"), and returns `(value, update_op)`: `value` reads the
state, `update_op` adds one batch to it (AssignAddVariableOp, which holds the variable's
lock across its read-modify-write, so concurrent steps never lose an update) and returns the
metric computed from the updated state.
"""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, comparison_ops, math_ops, reduction_ops, state_ops
from tensorflux.variables import variables

LOCAL_METRIC_COLLECTIONS = (GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES)


def metric_variable(shape, dtype, validate_shape: bool = True, name: str | None = None):
    """A zero-initialized, non-trainable local variable for a metric's running state."""
    dtype = dtypes.as_dtype(dtype)
    return variables.Variable(
        lambda: array_ops.zeros(shape, dtype), trainable=False,
        collections=list(LOCAL_METRIC_COLLECTIONS), validate_shape=validate_shape,
        name=name)


def assign_add(var, delta):
    """Adds `delta` to `var` atomically; returns the value after this update (a read named
    "AssignAdd", where TF1's reference variables have their AssignAdd op)."""
    op = state_ops.assign_add_variable_op(var.handle, convert_to_tensor(delta, var.dtype))
    with graph_lib.control_dependencies([op]):
        return state_ops.read_variable_op(var.handle, var.dtype, name="AssignAdd")


def current_scope() -> str:
    """The current name scope with its trailing "/": an op given this name is named
    exactly like the scope (TF1 names some metric values so)."""
    return graph_lib.get_default_graph().get_name_scope() + "/"


def read(var, collections=None):
    """The metric value of a variable that is itself the metric (a fresh read)."""
    value = array_ops.identity(var.value())
    add_to(collections, value)
    return value


def add_to(collections, value) -> None:
    if collections:
        graph_lib.add_to_collections(collections, value)


def check_same_shape(labels, predictions) -> None:
    """ValueError naming both static shapes when they cannot be the same."""
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible: "
                         f"predictions have shape {predictions.shape}, labels have shape "
                         f"{labels.shape}")


def remove_squeezable(labels, predictions):
    """Squeezes a trailing size-1 dimension off whichever of the two has one rank more."""
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is None or pr is None:
        return labels, predictions
    if pr - lr == 1 and predictions.shape.as_list()[-1] == 1:
        predictions = array_ops.squeeze(predictions, [-1])
    elif lr - pr == 1 and labels.shape.as_list()[-1] == 1:
        labels = array_ops.squeeze(labels, [-1])
    return labels, predictions


def prepare(predictions, labels=None, weights=None):
    """Converts, squeezes matching ranks, checks shapes; weights squeezed or expanded to
    the rank of `predictions` when they differ by one (TF1's `_remove_squeezable_dimensions`).

    Returns (predictions, labels, weights).
    """
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels = convert_to_tensor(labels)
        labels, predictions = remove_squeezable(labels, predictions)
        check_same_shape(labels, predictions)
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    wr, pr = weights.shape.ndims, predictions.shape.ndims
    if wr == 0 or wr is None or pr is None:
        return predictions, labels, weights
    if wr - pr == 1:
        weights = array_ops.squeeze(weights, [-1])
    elif pr - wr == 1:
        weights = array_ops.expand_dims(weights, -1)
    return predictions, labels, weights


def _np_shape(shape) -> str:
    return "[" + " ".join("-1" if d is None else str(d) for d in shape.as_list()) + "]"


def check_broadcastable(weights, values) -> None:
    """ValueError unless `weights` is a scalar or has the rank of `values` with each
    dimension 1 or equal to the values' (checked where the static shapes tell)."""
    w, v = weights.shape, values.shape
    if w.ndims is None or v.ndims is None or w.ndims == 0:
        return
    if w.ndims != v.ndims:
        raise ValueError(f"weights can not be broadcast to values. values.rank={v.ndims}. "
                         f"weights.rank={w.ndims}. values.shape={_np_shape(v)}. "
                         f"weights.shape={_np_shape(w)}.")
    for i, (wd, vd) in enumerate(zip(w.as_list(), v.as_list(), strict=True)):
        if wd is not None and vd is not None and wd not in (1, vd):
            raise ValueError(f"weights can not be broadcast to values. Mismatch at dim {i}. "
                             f"values.shape={_np_shape(v)}, weights.shape={_np_shape(w)}.")


def broadcast_weights(weights, values):
    """`weights` broadcast to the shape of `values` (as float of the values' dtype).

    Raises:
      ValueError: static shapes that cannot broadcast (see `check_broadcastable`).
    """
    weights = math_ops.cast(weights, values.dtype)
    check_broadcastable(weights, values)
    if weights.shape.is_fully_defined() and values.shape.is_fully_defined() and \
            weights.shape == values.shape:
        return weights
    return math_ops.multiply(weights, array_ops.ones_like(values))


def safe_div(numerator, denominator, name: str | None = None):
    """numerator / denominator where the denominator is > 0, else 0."""
    return comparison_ops.where(comparison_ops.greater(denominator, 0),
                                math_ops.truediv(numerator, denominator),
                                array_ops.zeros_like(numerator), name=name)


def div_no_nan_pos(total, count, name: str | None = None):
    """total / max(count, 0), 0 where the count is 0 (TF's streaming mean division)."""
    return math_ops.div_no_nan(total, math_ops.maximum(count, 0), name=name)


def sum_all(x, name: str | None = None):
    return reduction_ops.reduce_sum(x, name=name)
