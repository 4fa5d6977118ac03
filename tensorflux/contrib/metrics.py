"""`tf.contrib.metrics` (also `slim.metrics`): the `streaming_*` metrics of TF1's contrib,
each `tf.metrics`' metric with the old argument order (predictions first, then labels),
returning `(value, update_op)` over local variables; `streaming_recall_at_k` is the mean
of `in_top_k`. `aggregate_metrics` / `aggregate_metric_map` regroup several such pairs
(`names_to_values, names_to_updates = slim.metrics.aggregate_metric_map({...})`).
"""

from __future__ import annotations

from tensorflux import metrics
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import array_ops, comparison_ops, math_ops, nn_ops, reduction_ops

__all__ = [
    "accuracy", "aggregate_metric_map", "aggregate_metrics", "streaming_accuracy",
    "streaming_auc", "streaming_false_negatives", "streaming_false_positives",
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
