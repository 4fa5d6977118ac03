"""`tf.contrib.metrics` (also `slim.metrics`): the `streaming_*` metrics of TF1's contrib,
each `tf.metrics`' metric with the old argument order (predictions first, then labels),
returning `(value, update_op)` over local variables; `streaming_recall_at_k` is the mean
of `in_top_k`. `aggregate_metrics` / `aggregate_metric_map` regroup several such pairs
(`names_to_values, names_to_updates = slim.metrics.aggregate_metric_map({...})`).
`streaming_covariance` / `streaming_pearson_correlation` keep a running co-moment (the
pairwise update of Chan et al.), `streaming_concat` the values seen so far.
"""

from __future__ import annotations

from tensorflux import metrics
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.metrics import _util
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    joining_ops,
    math_ops,
    nn_ops,
    reduction_ops,
    state_ops,
    unary_ops,
)
from tensorflux.variables import variable_scope

__all__ = [
    "accuracy", "aggregate_metric_map", "aggregate_metrics", "streaming_accuracy",
    "streaming_auc", "streaming_concat", "streaming_covariance",
    "streaming_pearson_correlation", "streaming_false_negatives", "streaming_false_positives",
    "streaming_mean", "streaming_mean_absolute_error", "streaming_mean_cosine_distance",
    "streaming_mean_iou", "streaming_mean_per_class_accuracy",
    "streaming_mean_relative_error", "streaming_mean_squared_error", "streaming_mean_tensor",
    "streaming_percentage_less", "streaming_precision", "streaming_precision_at_thresholds",
    "streaming_recall", "streaming_recall_at_k", "streaming_recall_at_thresholds",
    "streaming_root_mean_squared_error", "streaming_sensitivity_at_specificity",
    "streaming_sparse_average_precision_at_k", "streaming_sparse_precision_at_k",
    "streaming_sparse_precision_at_top_k", "streaming_sparse_recall_at_k",
    "streaming_specificity_at_sensitivity", "streaming_true_negatives",
    "streaming_true_positives",
]


def _swapped(metric):
    """`metric(labels, predictions, ...)` as `fn(predictions, labels, ...)`."""
    def streaming(predictions, labels, *args, **kwargs):
        return metric(labels, predictions, *args, **kwargs)
    streaming.__doc__ = (f"`tf.metrics.{metric.__name__}` with predictions first: "
                         "returns (value, update_op).")
    return streaming


streaming_accuracy = _swapped(metrics.accuracy)
streaming_precision = _swapped(metrics.precision)
streaming_recall = _swapped(metrics.recall)
streaming_true_positives = _swapped(metrics.true_positives)
streaming_false_positives = _swapped(metrics.false_positives)
streaming_true_negatives = _swapped(metrics.true_negatives)
streaming_false_negatives = _swapped(metrics.false_negatives)
streaming_mean_absolute_error = _swapped(metrics.mean_absolute_error)
streaming_mean_squared_error = _swapped(metrics.mean_squared_error)
streaming_root_mean_squared_error = _swapped(metrics.root_mean_squared_error)
streaming_mean_relative_error = _swapped(metrics.mean_relative_error)
streaming_mean_cosine_distance = _swapped(metrics.mean_cosine_distance)
streaming_mean_iou = _swapped(metrics.mean_iou)
streaming_mean_per_class_accuracy = _swapped(metrics.mean_per_class_accuracy)
streaming_precision_at_thresholds = _swapped(metrics.precision_at_thresholds)
streaming_recall_at_thresholds = _swapped(metrics.recall_at_thresholds)
streaming_sensitivity_at_specificity = _swapped(metrics.sensitivity_at_specificity)
streaming_specificity_at_sensitivity = _swapped(metrics.specificity_at_sensitivity)
streaming_sparse_recall_at_k = _swapped(metrics.recall_at_k)
streaming_sparse_precision_at_k = _swapped(metrics.precision_at_k)
streaming_sparse_precision_at_top_k = _swapped(metrics.precision_at_top_k)
streaming_sparse_average_precision_at_k = _swapped(metrics.sparse_average_precision_at_k)
streaming_mean = metrics.mean
streaming_mean_tensor = metrics.mean_tensor


def streaming_auc(predictions, labels, weights=None, num_thresholds=200,
                  metrics_collections=None, updates_collections=None, curve="ROC",
                  name=None):
    """The area under the ROC (or PR, `curve="PR"`) curve: `tf.metrics.auc`."""
    return metrics.auc(labels, predictions, weights=weights, num_thresholds=num_thresholds,
                       metrics_collections=metrics_collections,
                       updates_collections=updates_collections, curve=curve, name=name)


def streaming_percentage_less(values, threshold, weights=None, metrics_collections=None,
                              updates_collections=None, name=None):
    """The fraction of `values` below `threshold`: `tf.metrics.percentage_below`."""
    return metrics.percentage_below(values, threshold, weights=weights,
                                    metrics_collections=metrics_collections,
                                    updates_collections=updates_collections, name=name)


def streaming_recall_at_k(predictions, labels, k, weights=None, metrics_collections=None,
                          updates_collections=None, name=None):
    """How often the label is among the `k` highest predictions: the streaming mean of
    `tf.nn.in_top_k(predictions, labels, k)` (name `recall_at_<k>`)."""
    in_top_k = math_ops.cast(nn_ops.in_top_k(predictions, labels, k), dtypes.float32)
    return streaming_mean(in_top_k, weights, metrics_collections, updates_collections,
                          name or f"recall_at_{k}")


def accuracy(predictions, labels, weights=None, name=None):
    """The (weighted) fraction of `predictions` equal to `labels` in this batch (not
    streaming).

    Raises:
      ValueError: `predictions` and `labels` are not integers or bools.
    """
    if not (labels.dtype.is_integer or labels.dtype == dtypes.bool) or \
            not (predictions.dtype.is_integer or predictions.dtype == dtypes.bool):
        raise ValueError("Labels and predictions should have integer or bool dtypes: "
                         f"{labels.dtype}, {predictions.dtype}")
    with graph_lib.name_scope(name, "accuracy", values=[predictions, labels]):
        correct = math_ops.cast(comparison_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = math_ops.cast(weights, dtypes.float32)
            return math_ops.div(reduction_ops.reduce_sum(correct * weights),
                                reduction_ops.reduce_sum(weights * array_ops.ones_like(correct)))
        return reduction_ops.reduce_mean(correct)


def aggregate_metrics(*value_update_tuples):
    """`(value, update_op)` pairs regrouped: `(values list, updates list)`.

    Raises:
      ValueError: no pairs.
    """
    if not value_update_tuples:
        raise ValueError("Expected at least one value_tensor/update_op pair")
    value_ops, update_ops = zip(*value_update_tuples, strict=True)
    return list(value_ops), list(update_ops)


def aggregate_metric_map(names_to_tuples):
    """`{name: (value, update_op)}` regrouped: `({name: value}, {name: update_op})`."""
    metric_names = list(names_to_tuples.keys())
    value_ops, update_ops = zip(*names_to_tuples.values(), strict=True)
    return (dict(zip(metric_names, value_ops, strict=True)),
            dict(zip(metric_names, update_ops, strict=True)))


def _sample_covariance(comoment, count, name):
    """comoment / (count - 1); NaN until two values (or a weight above 1) were seen."""
    return comparison_ops.where(comparison_ops.less_equal(count, 1.0), float("nan"),
                           math_ops.truediv(comoment, count - 1.0), name=name)


def streaming_covariance(predictions, labels, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """The unbiased sample covariance of `predictions` and `labels` over every batch so
    far (weights count as frequencies: the co-moment over `sum(weights) - 1`).

    Returns:
      (covariance, update_op): float32 scalars, NaN while at most one value was seen.

    Raises:
      ValueError: `predictions`, `labels` (and `weights`) have incompatible shapes.
    """
    with variable_scope.variable_scope(name, "covariance", [predictions, labels, weights]):
        predictions, labels, weights = _util.prepare(predictions, labels, weights)
        x = math_ops.cast(predictions, dtypes.float32)
        y = math_ops.cast(labels, dtypes.float32)
        count = _util.metric_variable([], dtypes.float32, name="count")
        mean_x = _util.metric_variable([], dtypes.float32, name="mean_prediction")
        mean_y = _util.metric_variable([], dtypes.float32, name="mean_label")
        comoment = _util.metric_variable([], dtypes.float32, name="comoment")
        if weights is None:
            w = array_ops.ones_like(x)
        else:
            w = _util.broadcast_weights(math_ops.cast(weights, dtypes.float32), x)
        nb = reduction_ops.reduce_sum(w)
        mb_x = math_ops.div_no_nan(reduction_ops.reduce_sum(w * x), nb)
        mb_y = math_ops.div_no_nan(reduction_ops.reduce_sum(w * y), nb)
        batch_comoment = reduction_ops.reduce_sum(w * (x - mb_x) * (y - mb_y))
        # The batch merged into the running state (all deltas from one read of it).
        n, mx, my = count.value(), mean_x.value(), mean_y.value()
        total = n + nb
        dx, dy = mb_x - mx, mb_y - my
        deltas = [(count, nb), (mean_x, math_ops.div_no_nan(dx * nb, total)),
                  (mean_y, math_ops.div_no_nan(dy * nb, total)),
                  (comoment, batch_comoment + math_ops.div_no_nan(dx * dy * n * nb, total))]
        with graph_lib.control_dependencies([d for _, d in deltas]):
            updated = [_util.assign_add(var, d) for var, d in deltas]
        value = _sample_covariance(comoment.value(), count.value(), "covariance")
        with graph_lib.control_dependencies(updated):  # the means' updates too
            update_op = _sample_covariance(updated[3], updated[0], "update_op")
        _util.add_to(metrics_collections, value)
        _util.add_to(updates_collections, update_op)
        return value, update_op


def streaming_pearson_correlation(predictions, labels, weights=None,
                                  metrics_collections=None, updates_collections=None,
                                  name=None):
    """Pearson's r of `predictions` and `labels` over every batch so far: their
    covariance over the product of their standard deviations (three streaming
    covariances: of the pair, and of each with itself).

    Returns:
      (pearson_r, update_op): float32 scalars, NaN while at most one value was seen.
    """
    with variable_scope.variable_scope(name, "pearson_r", [predictions, labels, weights]):
        predictions, labels, weights = _util.prepare(predictions, labels, weights)
        cov, update_cov = streaming_covariance(predictions, labels, weights)
        var_p, update_var_p = streaming_covariance(predictions, predictions, weights,
                                                   name="variance_predictions")
        var_l, update_var_l = streaming_covariance(labels, labels, weights,
                                                   name="variance_labels")
        value = math_ops.truediv(cov, unary_ops.sqrt(var_p) * unary_ops.sqrt(var_l),
                                 name="pearson_r")
        update_op = math_ops.truediv(
            update_cov, unary_ops.sqrt(update_var_p) * unary_ops.sqrt(update_var_l),
            name="update_op")
        _util.add_to(metrics_collections, value)
        _util.add_to(updates_collections, update_op)
        return value, update_op


def streaming_concat(values, axis=0, max_size=None, metrics_collections=None,
                     updates_collections=None, name=None):
    """Every batch of `values` seen so far, concatenated along `axis` (at most `max_size`
    along it: later values are dropped).

    Returns:
      (concatenated, update_op): the values so far, and after this batch.

    Raises:
      ValueError: `values` has an unknown rank, or a dimension other than `axis` that is
        not known statically.
    """
    with variable_scope.variable_scope(name, "streaming_concat", [values]):
        values = convert_to_tensor(values)
        shape = values.shape
        if shape.ndims is None:
            raise ValueError("streaming_concat needs values of a known rank")
        axis = axis + shape.ndims if axis < 0 else axis
        dims = shape.as_list()
        if any(d is None for i, d in enumerate(dims) if i != axis):
            raise ValueError(f"streaming_concat needs every dimension but axis {axis} "
                             f"known statically; got {shape}")
        start = [0 if i == axis else d for i, d in enumerate(dims)]
        seen = _util.metric_variable(start, values.dtype.base_dtype, validate_shape=False,
                                     name="array")
        joined = joining_ops.concat([seen.value(), values], axis)
        if max_size is not None:  # a strided slice stops at the end: at most max_size
            joined = joined[tuple(slice(0, max_size) if i == axis else slice(None)
                                  for i in range(shape.ndims))]
        assign = state_ops.assign(seen, joined, validate_shape=False)
        with graph_lib.control_dependencies([assign]):
            update_op = array_ops.identity(seen.value(), name="update_op")
        dims[axis] = None
        update_op.set_shape(dims)
        value = array_ops.identity(seen.value(), name="concat")
        value.set_shape(dims)
        _util.add_to(metrics_collections, value)
        _util.add_to(updates_collections, update_op)
        return value, update_op
