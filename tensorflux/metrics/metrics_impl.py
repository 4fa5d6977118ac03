"""Streaming means, counts, precision/recall, regression errors and confusion matrices
(`tf.metrics.*`, TF1). See `_util.py` for the variables and the `(value, update_op)` contract.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    state_ops,
    unary_ops,
)
from tensorflux.variables.variable_scope import variable_scope

from . import _util

__all__ = ["mean", "mean_tensor", "accuracy", "true_positives", "false_positives",
           "true_negatives", "false_negatives", "precision", "recall", "mean_absolute_error",
           "mean_squared_error", "root_mean_squared_error", "mean_relative_error",
           "mean_cosine_distance", "percentage_below", "mean_iou", "mean_per_class_accuracy"]


def _finish(value, update_op, metrics_collections, updates_collections):
    _util.add_to(metrics_collections, value)
    _util.add_to(updates_collections, update_op)
    return value, update_op


def mean(values, weights=None, metrics_collections=None, updates_collections=None,
         name=None):
    """The (weighted) mean of every value seen so far (`tf.metrics.mean`).

    Args:
      values: a Tensor of any shape.
      weights: None, or a Tensor broadcastable to `values` (rank 0 or rank of `values`).
      metrics_collections, updates_collections: collections to add the value / update to.
      name: the variable scope (default "mean").

    Returns:
      (mean, update_op): float32 scalars; the update adds this batch and returns the mean.
    """
    with variable_scope(name, "mean", [values, weights]):
        values = math_ops.cast(convert_to_tensor(values), dtypes.float32)
        total = _util.metric_variable([], dtypes.float32, name="total")
        count = _util.metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            values, _, weights = _util.prepare(values, None, weights)
            weights = _util.broadcast_weights(weights, values)
            values = math_ops.multiply(values, weights)
            num_values = reduction_ops.reduce_sum(weights)
        update_total = _util.assign_add(total, reduction_ops.reduce_sum(values))
        update_count = _util.assign_add(count, num_values)
        value = _util.div_no_nan_pos(total.value(), count.value(), name="value")
        update_op = _util.div_no_nan_pos(update_total, update_count, name="update_op")
        return _finish(value, update_op, metrics_collections, updates_collections)


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None,
                name=None):
    """The elementwise (weighted) mean over batches (`tf.metrics.mean_tensor`); `values`
    must have a fully defined shape."""
    with variable_scope(name, "mean", [values, weights]):
        values = math_ops.cast(convert_to_tensor(values), dtypes.float32)
        if not values.shape.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {values.shape} "
                             "to a Tensor: mean_tensor needs a fully defined shape.")
        shape = values.shape.as_list()
        total = _util.metric_variable(shape, dtypes.float32, name="total_tensor")
        count = _util.metric_variable(shape, dtypes.float32, name="count_tensor")
        num_values = array_ops.ones_like(values)
        if weights is not None:
            values, _, weights = _util.prepare(values, None, weights)
            weights = _util.broadcast_weights(weights, values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.multiply(num_values, weights)
        update_total = _util.assign_add(total, values)
        update_count = _util.assign_add(count, num_values)
        value = _util.div_no_nan_pos(total.value(), count.value(), name="value")
        update_op = _util.div_no_nan_pos(update_total, update_count, name="update_op")
        return _finish(value, update_op, metrics_collections, updates_collections)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """How often `predictions` equals `labels` (`tf.metrics.accuracy`).

    Raises:
      ValueError: `labels` and `predictions` have incompatible shapes (both are named).
    """
    predictions, labels, weights = _util.prepare(predictions, labels, weights)
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(comparison_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")


# ---- counts of the confusion matrix -------------------------------------------------------


def _count_condition(values, weights, metrics_collections, updates_collections):
    count = _util.metric_variable([], dtypes.float32, name="count")
    values = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        values = math_ops.multiply(values, math_ops.cast(weights, dtypes.float32))
    value = _util.read(count, metrics_collections)
    update_op = _util.assign_add(count, reduction_ops.reduce_sum(values))
    _util.add_to(updates_collections, update_op)
    return value, update_op


def _bool_pair(labels, predictions, weights):
    predictions, labels, weights = _util.prepare(
        math_ops.cast(predictions, dtypes.bool), math_ops.cast(labels, dtypes.bool), weights)
    return labels, predictions, weights


def _count_metric(default_name, label_value, prediction_value):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, default_name, [predictions, labels, weights]):
            labels, predictions, weights = _bool_pair(labels, predictions, weights)
            is_label = labels if label_value else comparison_ops.logical_not(labels)
            is_pred = predictions if prediction_value else \
                comparison_ops.logical_not(predictions)
            return _count_condition(comparison_ops.logical_and(is_label, is_pred), weights,
                                    metrics_collections, updates_collections)

    metric.__name__ = default_name
    metric.__doc__ = (f"The (weighted) number of {default_name.replace('_', ' ')} "
                      f"(`tf.metrics.{default_name}`): labels == {label_value} and "
                      f"predictions == {prediction_value}, both cast to bool.")
    return metric


true_positives = _count_metric("true_positives", True, True)
false_positives = _count_metric("false_positives", False, True)
true_negatives = _count_metric("true_negatives", False, False)
false_negatives = _count_metric("false_negatives", True, False)


def _ratio_metric(default_name, other_count):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, default_name, [predictions, labels, weights]):
            labels, predictions, weights = _bool_pair(labels, predictions, weights)
            tp, tp_update = true_positives(labels, predictions, weights)
            other, other_update = other_count(labels, predictions, weights)
            value = _util.safe_div(tp, tp + other, name="value")
            update_op = _util.safe_div(tp_update, tp_update + other_update, name="update_op")
            return _finish(value, update_op, metrics_collections, updates_collections)

    metric.__name__ = default_name
    metric.__doc__ = (f"tp / (tp + {other_count.__name__}) over every batch so far, 0 while "
                      f"the denominator is 0 (`tf.metrics.{default_name}`).")
    return metric


precision = _ratio_metric("precision", false_positives)
recall = _ratio_metric("recall", false_negatives)


# ---- regression errors --------------------------------------------------------------------


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The mean of |predictions - labels| (`tf.metrics.mean_absolute_error`)."""
    predictions, labels, weights = _util.prepare(predictions, labels, weights)
    errors = unary_ops.abs(math_ops.subtract(predictions, labels))
    return mean(errors, weights, metrics_collections, updates_collections,
                name or "mean_absolute_error")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """The mean of (predictions - labels)^2 (`tf.metrics.mean_squared_error`)."""
    predictions, labels, weights = _util.prepare(predictions, labels, weights)
    errors = math_ops.squared_difference(labels, predictions)
    return mean(errors, weights, metrics_collections, updates_collections,
                name or "mean_squared_error")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """sqrt of the streaming mean squared error (`tf.metrics.root_mean_squared_error`)."""
    predictions, labels, weights = _util.prepare(predictions, labels, weights)
    mse, update_mse = mean(math_ops.squared_difference(labels, predictions), weights, None,
                           None, name or "root_mean_squared_error")
    value, update_op = unary_ops.sqrt(mse), unary_ops.sqrt(update_mse)
    return _finish(value, update_op, metrics_collections, updates_collections)


def mean_relative_error(labels, predictions, normalizer, weights=None,
                        metrics_collections=None, updates_collections=None, name=None):
    """The mean of |labels - predictions| / normalizer, 0 where the normalizer is 0
    (`tf.metrics.mean_relative_error`)."""
    predictions, labels, weights = _util.prepare(predictions, labels, weights)
    normalizer = convert_to_tensor(normalizer, dtype=predictions.dtype)
    normalizer, predictions = _util.remove_squeezable(normalizer, predictions)
    _util.check_same_shape(normalizer, predictions)
    relative = comparison_ops.where(
        comparison_ops.equal(normalizer, 0), array_ops.zeros_like(labels),
        math_ops.truediv(unary_ops.abs(math_ops.subtract(labels, predictions)), normalizer))
    return mean(relative, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """1 - the mean of sum(labels * predictions, dim) for unit-normalized inputs
    (`tf.metrics.mean_cosine_distance`)."""
    predictions, labels, weights = _util.prepare(predictions, labels, weights)
    radial = reduction_ops.reduce_sum(math_ops.multiply(predictions, labels), axis=[dim],
                                      keepdims=True)
    value, update_op = mean(radial, weights, None, None, name or "mean_cosine_distance")
    value, update_op = math_ops.subtract(1.0, value), math_ops.subtract(1.0, update_op)
    return _finish(value, update_op, metrics_collections, updates_collections)


def percentage_below(values, threshold, weights=None, metrics_collections=None,
                     updates_collections=None, name=None):
    """The fraction of values < threshold (`tf.metrics.percentage_below`)."""
    values = convert_to_tensor(values)
    below = math_ops.cast(comparison_ops.less(values, threshold), dtypes.float32)
    return mean(below, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


# ---- confusion matrices -------------------------------------------------------------------


def _flat(x, dtype):
    x = math_ops.cast(convert_to_tensor(x), dtype)
    if x.shape.ndims is None or x.shape.ndims != 1:
        x = array_ops.reshape(x, [-1])
    return x


def _batch_confusion_matrix(labels, predictions, num_classes, weights, dtype):
    """A [num_classes, num_classes] matrix: entry (label, prediction) sums the weights."""
    labels, predictions = _flat(labels, dtypes.int64), _flat(predictions, dtypes.int64)
    if weights is None:
        weights = array_ops.ones_like(predictions, dtype=dtype)
    else:
        weights = _util.broadcast_weights(_flat(weights, dtype),
                                          math_ops.cast(predictions, dtype))
    indices = joining_ops.stack([labels, predictions], axis=1)
    return gather_ops.scatter_nd(indices, weights,
                                 constant_op.constant([num_classes, num_classes], dtypes.int64))


def _streaming_confusion_matrix(labels, predictions, num_classes, weights):
    total_cm = _util.metric_variable([num_classes, num_classes], dtypes.float64,
                                     name="total_confusion_matrix")
    current = _batch_confusion_matrix(labels, predictions, num_classes, weights,
                                      dtypes.float64)
    return total_cm, _util.assign_add(total_cm, current)


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The mean over classes of intersection-over-union (`tf.metrics.mean_iou`).

    Returns:
      (mean_iou, update_op): a float32 scalar, and the updated float64 confusion matrix
      (rows are labels, columns predictions), as TF1 returns.
    """
    with variable_scope(name, "mean_iou", [predictions, labels, weights]):
        predictions, labels = convert_to_tensor(predictions), convert_to_tensor(labels)
        _util.check_same_shape(labels, predictions)
        total_cm, update_op = _streaming_confusion_matrix(labels, predictions, num_classes,
                                                          weights)
        cm = math_ops.cast(total_cm.value(), dtypes.float32)
        rows = reduction_ops.reduce_sum(cm, 0)
        cols = reduction_ops.reduce_sum(cm, 1)
        eye = constant_op.constant(np.eye(num_classes, dtype=np.float32))
        diag = reduction_ops.reduce_sum(math_ops.multiply(cm, eye), 1)
        denominator = rows + cols - diag
        num_valid = reduction_ops.reduce_sum(
            math_ops.cast(comparison_ops.not_equal(denominator, 0), dtypes.float32))
        denominator = comparison_ops.where(comparison_ops.greater(denominator, 0), denominator,
                                           array_ops.ones_like(denominator))
        iou = math_ops.truediv(diag, denominator)
        value = comparison_ops.where(
            comparison_ops.greater(num_valid, 0),
            math_ops.truediv(reduction_ops.reduce_sum(iou, name="mean_iou"), num_valid),
            constant_op.constant(0.0))
        return _finish(value, update_op, metrics_collections, updates_collections)


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """The mean over classes of each class's accuracy (`tf.metrics.mean_per_class_accuracy`).

    Returns:
      (mean_accuracy, update_op): a scalar, and the updated per-class accuracies.
    """
    with variable_scope(name, "mean_accuracy", [predictions, labels, weights]):
        labels = _flat(labels, dtypes.int64)
        predictions = convert_to_tensor(predictions)
        if predictions.shape.ndims is None or predictions.shape.ndims > 1:
            predictions = array_ops.reshape(predictions, [-1])
        _util.check_same_shape(labels, predictions)
        total = _util.metric_variable([num_classes], dtypes.float32, name="total")
        count = _util.metric_variable([num_classes], dtypes.float32, name="count")
        ones = array_ops.ones_like(labels, dtype=dtypes.float32)
        predictions = math_ops.cast(predictions, labels.dtype)
        is_correct = math_ops.cast(comparison_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = _flat(weights, dtypes.float32)
            is_correct, ones = is_correct * weights, ones * weights
        seen = state_ops.resource_scatter("ResourceScatterAdd", total.handle, labels, ones)
        right = state_ops.resource_scatter("ResourceScatterAdd", count.handle, labels,
                                           is_correct)
        value = reduction_ops.reduce_mean(
            _util.div_no_nan_pos(count.value(), total.value()), name="mean_accuracy")
        update_op = _util.div_no_nan_pos(count._lazy_read(right), total._lazy_read(seen),
                                          name="update_op")
        return _finish(value, update_op, metrics_collections, updates_collections)
