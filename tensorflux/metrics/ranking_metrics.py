"""Top-k metrics: precision, recall and average precision of the k highest predictions.

Labels are class ids, shape [batch] or [batch, num_labels] (ids outside [0, num_classes)
are ignored, so -1 pads ragged label lists). Both the labels and the top-k ids become
per-row indicator sets over the classes (one_hot, then max over the ids), so
set intersections and differences are products of indicators. Counts and the running
state are float64, with TF1's variable names ("precision_at_5/true_positive_at_5").
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
    math_ops,
    reduction_ops,
    sequence_ops,
)
from tensorflux.variables.variable_scope import variable_scope

from . import _util

__all__ = ["precision_at_k", "recall_at_k", "precision_at_top_k", "recall_at_top_k",
           "average_precision_at_k", "sparse_precision_at_k",
           "sparse_average_precision_at_k"]


def _at_k_name(name, k=None, class_id=None):
    if k is not None:
        name = f"{name}_at_{k}"
    else:
        name = f"{name}_at_k"
    if class_id is not None:
        name = f"{name}_class{class_id}"
    return name


def _indicator(ids, depth):
    """[batch, depth] float64: 1 where the row's ids contain the class."""
    return reduction_ops.reduce_max(
        gather_ops.one_hot(ids, depth, dtype=dtypes.float64), axis=-2)


def _sets(labels, predictions_idx, num_classes):
    """(label set, top-k set) indicators over `num_classes` classes."""
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
    predictions_idx = math_ops.cast(convert_to_tensor(predictions_idx), dtypes.int64)
    if labels.shape.ndims is not None and predictions_idx.shape.ndims is not None and \
            labels.shape.ndims == predictions_idx.shape.ndims - 1:
        labels = array_ops.expand_dims(labels, -1)
    if num_classes is None:
        num_classes = math_ops.add(math_ops.maximum(reduction_ops.reduce_max(labels),
                                                    reduction_ops.reduce_max(predictions_idx)),
                                   1)
    depth = math_ops.cast(num_classes, dtypes.int32)
    return _indicator(labels, depth), _indicator(predictions_idx, depth), depth


def _num_distinct_labels(labels):
    """Per row, the number of distinct label values, out-of-range ones included (TF1 counts
    them as relevant items that were never retrieved)."""
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
    if labels.shape.ndims == 1:
        return array_ops.ones_like(labels, dtype=dtypes.float64)
    same = math_ops.cast(comparison_ops.equal(array_ops.expand_dims(labels, -1),
                                              array_ops.expand_dims(labels, -2)),
                         dtypes.float64)                               # [batch, n, n]
    n = labels.shape.as_list()[-1]
    earlier = constant_op.constant(np.tril(np.ones((n, n)), -1), dtypes.float64)
    repeated = reduction_ops.reduce_max(same * earlier, -1)           # [batch, n]
    return reduction_ops.reduce_sum(1.0 - repeated, -1)


def _num_in_range(labels, depth):
    """Per row, how many label entries are in [0, depth), repeats counted (TF1 counts the
    entries of the cleaned sparse labels this way for average precision)."""
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
    if labels.shape.ndims == 1:
        labels = array_ops.expand_dims(labels, -1)
    inside = comparison_ops.logical_and(
        comparison_ops.greater_equal(labels, 0),
        comparison_ops.less(labels, math_ops.cast(depth, dtypes.int64)))
    return reduction_ops.reduce_sum(math_ops.cast(inside, dtypes.float64), -1)


def _class_mask(class_id, depth):
    if class_id is None:
        return None
    return gather_ops.one_hot(class_id, depth, dtype=dtypes.float64)


def _row_count(indicator, mask, weights):
    """Per-row sums of `indicator` (restricted to `mask`), times weights; then summed."""
    if mask is not None:
        indicator = math_ops.multiply(indicator, mask)
    per_row = reduction_ops.reduce_sum(indicator, -1)
    if weights is not None:
        per_row = math_ops.multiply(per_row, _util.broadcast_weights(
            math_ops.cast(weights, dtypes.float64), per_row))
    return reduction_ops.reduce_sum(per_row)


def _streaming_count(name, k, class_id, batch_count):
    var = _util.metric_variable([], dtypes.float64, name=_at_k_name(name, k, class_id))
    return var.value(), _util.assign_add(var, batch_count)


def _top_k_ratio(labels, predictions_idx, k, class_id, weights, num_classes, other,
                 metrics_collections, updates_collections, scope_name):
    """tp / (tp + fp) (other="fp") or tp / (tp + fn), inside the metric's open scope."""
    label_set, top_set, depth = _sets(labels, predictions_idx, num_classes)
    mask = _class_mask(class_id, depth)
    tp, tp_update = _streaming_count("true_positive", k, class_id,
                                     _row_count(label_set * top_set, mask, weights))
    if other == "fp":
        name_other = "false_positive"
        misses = _row_count((1.0 - label_set) * top_set, mask, weights)
    elif class_id is not None:
        name_other = "false_negative"
        misses = _row_count(label_set * (1.0 - top_set), mask, weights)
    else:  # every distinct label not retrieved, out-of-range ones included
        name_other = "false_negative"
        per_row = _num_distinct_labels(labels) - reduction_ops.reduce_sum(
            label_set * top_set, -1)
        misses = _row_count(array_ops.expand_dims(per_row, -1), None, weights)
    o, o_update = _streaming_count(name_other, k, class_id, misses)
    value = math_ops.truediv(tp, tp + o, name=scope_name)
    update = math_ops.truediv(tp_update, tp_update + o_update, name="update")
    _util.add_to(metrics_collections, value)
    _util.add_to(updates_collections, update)
    return value, update


def _given_top_k(default, labels, predictions_idx, k, class_id, weights, other,
                 metrics_collections, updates_collections, name):
    predictions_idx = convert_to_tensor(predictions_idx)
    with variable_scope(name, _at_k_name(default, k, class_id),
                        [predictions_idx, labels, weights]):
        return _top_k_ratio(labels, predictions_idx, k, class_id, weights, None, other,
                            metrics_collections, updates_collections,
                            _util.current_scope())


def precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                       metrics_collections=None, updates_collections=None, name=None):
    """Precision of the given top-k ids (`tf.metrics.precision_at_top_k`): of the ids
    predicted (for `class_id`, the rows predicting it), how many are labels."""
    return _given_top_k("precision", labels, predictions_idx, k, class_id, weights, "fp",
                        metrics_collections, updates_collections, name)


def recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                    metrics_collections=None, updates_collections=None, name=None):
    """Recall of the given top-k ids (`tf.metrics.recall_at_top_k`)."""
    return _given_top_k("recall", labels, predictions_idx, k, class_id, weights, "fn",
                        metrics_collections, updates_collections, name)


def _top_k_ids(predictions, k):
    predictions = convert_to_tensor(predictions)
    _, idx = gather_ops.top_k(predictions, k)
    num_classes = predictions.shape.as_list()[-1] if predictions.shape.ndims else None
    if num_classes is None:
        num_classes = array_ops.shape(predictions)[-1]
    return idx, num_classes


def precision_at_k(labels, predictions, k, class_id=None, weights=None,
                   metrics_collections=None, updates_collections=None, name=None):
    """Precision of the k highest `predictions` per row against `labels`
    (`tf.metrics.precision_at_k`).

    Args:
      labels: int ids, [batch] or [batch, num_labels]; ids outside [0, num_classes) are
        ignored.
      predictions: [batch, num_classes] scores.
      k: how many top predictions count.
      class_id: only this class counts, when given.
      weights: per-row weights ([batch] or [batch, 1]) or a scalar.

    Returns:
      (precision, update_op): float64 scalars (NaN while nothing was predicted).
    """
    with variable_scope(name, _at_k_name("precision", k, class_id),
                        [predictions, labels, weights]):
        idx, num_classes = _top_k_ids(predictions, k)
        return _top_k_ratio(labels, idx, k, class_id, weights, num_classes, "fp",
                            metrics_collections, updates_collections,
                            _util.current_scope())


def recall_at_k(labels, predictions, k, class_id=None, weights=None,
                metrics_collections=None, updates_collections=None, name=None):
    """Recall of the k highest `predictions` per row (`tf.metrics.recall_at_k`); see
    `precision_at_k` for the arguments."""
    with variable_scope(name, _at_k_name("recall", k, class_id),
                        [predictions, labels, weights]):
        idx, num_classes = _top_k_ids(predictions, k)
        return _top_k_ratio(labels, idx, k, class_id, weights, num_classes, "fn",
                            metrics_collections, updates_collections,
                            _util.current_scope())


def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                           updates_collections=None, name=None):
    """Mean average precision at k (`tf.metrics.average_precision_at_k`).

    Per row: the sum over ranks j <= k whose id is a label of precision@j, divided by
    min(number of labels, k). The running state is the sum of those (weighted) values
    ("total") and of the weights ("max"); the value is total / max.
    """
    if k < 1:
        raise ValueError(f"Invalid k={k}.")
    with variable_scope(name, _at_k_name("average_precision", k),
                        [predictions, labels, weights]):
        # TF1's graph names this variable "max_1" (a "max" name is taken before it).
        max_var = _util.metric_variable([], dtypes.float64, name="max_1")
        idx, num_classes = _top_k_ids(predictions, k)
        label_set, _, depth = _sets(labels, idx, num_classes)
        ranks = gather_ops.one_hot(math_ops.cast(idx, dtypes.int64), depth,
                                   dtype=dtypes.float64)          # [batch, k, classes]
        relevant = reduction_ops.reduce_sum(
            ranks * array_ops.expand_dims(label_set, -2), -1)     # [batch, k]
        retrieved = sequence_ops.cumsum(array_ops.ones_like(relevant), axis=-1)
        precision_per_rank = sequence_ops.cumsum(relevant, axis=-1) / retrieved
        precision_sum = reduction_ops.reduce_sum(precision_per_rank * relevant, -1)
        num_relevant = math_ops.minimum(_num_in_range(labels, depth),
                                        math_ops.cast(k, dtypes.float64))
        ap = math_ops.truediv(precision_sum, num_relevant)
        if weights is None:
            batch_max = math_ops.cast(array_ops.size(ap), dtypes.float64)
        else:
            w = _util.broadcast_weights(math_ops.cast(weights, dtypes.float64), ap)
            ap = ap * w
            batch_max = reduction_ops.reduce_sum(w)
        total_var = _util.metric_variable([], dtypes.float64, name="total")
        batch_total = reduction_ops.reduce_sum(ap)
        value = _util.safe_div(total_var.value(), max_var.value(), name="mean")
        update = _util.safe_div(_util.assign_add(total_var, batch_total),
                                _util.assign_add(max_var, batch_max),
                                name=_util.current_scope())
        _util.add_to(metrics_collections, value)
        _util.add_to(updates_collections, update)
        return value, update


sparse_precision_at_k = precision_at_k
sparse_average_precision_at_k = average_precision_at_k
