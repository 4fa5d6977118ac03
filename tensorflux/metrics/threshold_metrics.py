"""Metrics over a list of decision thresholds: the confusion counts at each threshold, and
what is built from them (precision/recall at thresholds, AUC, sensitivity at specificity).

A prediction in [0, 1] counts as positive at threshold t when it is > t. The four count
variables are float32 vectors with one entry per threshold, made in the order
true_positives, false_negatives, true_negatives, false_positives (TF1's names and order).
"""

from __future__ import annotations

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    joining_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
    unary_ops,
)
from tensorflux.platform import tf_logging as logging
from tensorflux.variables.variable_scope import variable_scope

from . import _util

__all__ = ["true_positives_at_thresholds", "false_positives_at_thresholds",
           "true_negatives_at_thresholds", "false_negatives_at_thresholds",
           "precision_at_thresholds", "recall_at_thresholds", "auc",
           "sensitivity_at_specificity", "specificity_at_sensitivity"]

_ORDER = ("tp", "fn", "tn", "fp")
_VAR_NAMES = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives",
              "fp": "false_positives"}
# (label is positive, prediction is positive) for each count.
_CONDITION = {"tp": (True, True), "fn": (True, False), "tn": (False, False),
              "fp": (False, True)}


def _confusion_at_thresholds(labels, predictions, thresholds, weights, includes=_ORDER):
    """Variables and update ops of the counts in `includes`, keyed "tp", "fn", "tn", "fp".

    Predictions outside [0, 1] fail at run time (InvalidArgumentError), as in TF1.
    """
    predictions, labels, weights = _util.prepare(
        math_ops.cast(convert_to_tensor(predictions), dtypes.float32),
        math_ops.cast(convert_to_tensor(labels), dtypes.bool), weights)
    checks = [
        check_ops.assert_greater_equal(predictions, math_ops.cast(0.0, predictions.dtype),
                                       message="predictions must be in [0, 1]"),
        check_ops.assert_less_equal(predictions, math_ops.cast(1.0, predictions.dtype),
                                    message="predictions must be in [0, 1]")]
    with graph_lib.control_dependencies(checks):
        predictions = array_ops.identity(predictions, name="checked_predictions")
    n = len(thresholds)
    # [T, 1] thresholds against [1, N] predictions: [T, N] comparisons.
    preds_row = array_ops.reshape(predictions, [1, -1])
    labels_row = array_ops.reshape(labels, [1, -1])
    thresh_col = constant_op.constant([[float(t)] for t in thresholds], dtypes.float32)
    pred_pos = comparison_ops.greater(preds_row, thresh_col)
    label_pos = joining_ops.tile(labels_row, [n, 1])
    weights_row = None
    if weights is not None:
        weights_row = array_ops.reshape(
            _util.broadcast_weights(math_ops.cast(weights, dtypes.float32), predictions),
            [1, -1])
    values, updates = {}, {}
    for key in _ORDER:
        if key not in includes:
            continue
        want_label, want_pred = _CONDITION[key]
        var = _util.metric_variable([n], dtypes.float32, name=_VAR_NAMES[key])
        is_label = label_pos if want_label else comparison_ops.logical_not(label_pos)
        is_pred = pred_pos if want_pred else comparison_ops.logical_not(pred_pos)
        hits = math_ops.cast(comparison_ops.logical_and(is_label, is_pred), dtypes.float32)
        if weights_row is not None:
            hits = math_ops.multiply(hits, weights_row)
        updates[key] = _util.assign_add(var, reduction_ops.reduce_sum(hits, 1))
        values[key] = var.value()
    return values, updates


def _finish(value, update_op, metrics_collections, updates_collections):
    _util.add_to(metrics_collections, value)
    _util.add_to(updates_collections, update_op)
    return value, update_op


def _count_at_thresholds(default_name, key):
    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, default_name, [predictions, labels, weights]):
            values, updates = _confusion_at_thresholds(labels, predictions, thresholds,
                                                       weights, includes=(key,))
            value = array_ops.identity(values[key])
            return _finish(value, updates[key], metrics_collections, updates_collections)

    metric.__name__ = f"{default_name}_at_thresholds"
    metric.__doc__ = (f"The (weighted) {default_name.replace('_', ' ')} at each threshold "
                      f"(`tf.metrics.{default_name}_at_thresholds`).")
    return metric


true_positives_at_thresholds = _count_at_thresholds("true_positives", "tp")
false_positives_at_thresholds = _count_at_thresholds("false_positives", "fp")
true_negatives_at_thresholds = _count_at_thresholds("true_negatives", "tn")
false_negatives_at_thresholds = _count_at_thresholds("false_negatives", "fn")


def _ratio_at_thresholds(default_name, other, prefix):
    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, default_name, [predictions, labels, weights]):
            values, updates = _confusion_at_thresholds(labels, predictions, thresholds,
                                                       weights, includes=("tp", other))
            eps = 1e-7

            def ratio(counts, name):
                tp = counts["tp"]
                return math_ops.truediv(tp, eps + tp + counts[other], name=name)

            return _finish(ratio(values, f"{prefix}_value"),
                           ratio(updates, f"{prefix}_update_op"),
                           metrics_collections, updates_collections)

    metric.__name__ = default_name
    metric.__doc__ = (f"tp / (tp + {other}) at each threshold "
                      f"(`tf.metrics.{default_name}`).")
    return metric


precision_at_thresholds = _ratio_at_thresholds("precision_at_thresholds", "fp", "precision")
recall_at_thresholds = _ratio_at_thresholds("recall_at_thresholds", "fn", "recall")


# ---- AUC --------------------------------------------------------------------------------


def _pr_auc_interpolated(tp, fp, fn, n):
    """The PR-AUC by interpolating precision between thresholds (Davis & Goadrich 2006)."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    slope = math_ops.div_no_nan(dtp, math_ops.maximum(p[:n - 1] - p[1:], 0),
                                name="prec_slope")
    intercept = tp[1:] - math_ops.multiply(slope, p[1:])
    ratio = comparison_ops.where(
        comparison_ops.logical_and(comparison_ops.greater(p[:n - 1], 0),
                                   comparison_ops.greater(p[1:], 0)),
        math_ops.div_no_nan(p[:n - 1], math_ops.maximum(p[1:], 0),
                            name="recall_relative_ratio"),
        array_ops.ones_like(p[1:]))
    increments = math_ops.div_no_nan(
        slope * (dtp + intercept * unary_ops.log(ratio)),
        math_ops.maximum(tp[1:] + fn[1:], 0), name="pr_auc_increment")
    return reduction_ops.reduce_sum(increments, name="interpolate_pr_auc")


def _riemann_auc(x, y, n, summation_method, name):
    width = x[:n - 1] - x[1:]
    if summation_method in ("trapezoidal", "careful_interpolation"):
        height = (y[:n - 1] + y[1:]) / 2.0
    elif summation_method == "minoring":
        height = math_ops.minimum(y[:n - 1], y[1:])
    elif summation_method == "majoring":
        height = math_ops.maximum(y[:n - 1], y[1:])
    else:
        raise ValueError(f"Invalid summation_method: {summation_method}")
    return reduction_ops.reduce_sum(math_ops.multiply(width, height), name=name)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The area under the ROC or PR curve, from counts at `num_thresholds` thresholds
    (`tf.metrics.auc`).

    Args:
      curve: "ROC" or "PR".
      summation_method: "trapezoidal", "careful_interpolation" (interpolated PR; the
        trapezoid for ROC), "minoring" or "majoring" (lower/upper Riemann sums).
      thresholds: explicit thresholds (then `num_thresholds` is their count + 2).

    Raises:
      ValueError: an unknown `curve` or `summation_method`.
    """
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring",
                                "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    with variable_scope(name, "auc", [predictions, labels, weights]):
        eps = 1e-7
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
            num_thresholds = len(inner) + 2
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        all_thresholds = [0.0 - eps] + inner + [1.0 + eps]
        values, updates = _confusion_at_thresholds(labels, predictions, all_thresholds,
                                                   weights)
        n = num_thresholds
        if curve == "PR" and summation_method == "trapezoidal":
            logging.warning("Trapezoidal rule is known to produce incorrect PR-AUCs; please "
                            "switch to \"careful_interpolation\" instead.")

        def area(c, name):
            if curve == "PR" and summation_method == "careful_interpolation":
                return _pr_auc_interpolated(c["tp"], c["fp"], c["fn"], n)
            small = 1.0e-6
            rec = math_ops.truediv(c["tp"] + small, c["tp"] + c["fn"] + small)
            if curve == "ROC":
                x, y = math_ops.truediv(c["fp"], c["fp"] + c["tn"] + small), rec
            else:
                x, y = rec, math_ops.truediv(c["tp"] + small, c["tp"] + c["fp"] + small)
            return _riemann_auc(x, y, n, summation_method, name)

        return _finish(area(values, "value"), area(updates, "update_op"),
                       metrics_collections, updates_collections)


# ---- one rate at a given value of the other ---------------------------------------------


def _default_thresholds(num_thresholds):
    eps = 1e-7
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - eps] + inner + [1.0 + eps]


def sensitivity_at_specificity(labels, predictions, specificity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The sensitivity (recall) at the threshold whose specificity is nearest
    `specificity` (`tf.metrics.sensitivity_at_specificity`).

    Raises:
      ValueError: `specificity` outside [0, 1].
    """
    if specificity < 0 or specificity > 1:
        raise ValueError("`specificity` must be in the range [0, 1]. Currently, "
                         f"`specificity` got {specificity}.")
    with variable_scope(name, "sensitivity_at_specificity", [predictions, labels, weights]):
        values, updates = _confusion_at_thresholds(
            labels, predictions, _default_thresholds(num_thresholds), weights)
        eps = 1e-7

        def compute(c, name):
            spec = math_ops.truediv(c["tn"], c["tn"] + c["fp"] + eps)
            i = math_ops.cast(reduction_ops.argmin(unary_ops.abs(spec - specificity), 0),
                              dtypes.int32)
            tp, fn = c["tp"][i], c["fn"][i]
            return math_ops.truediv(tp, tp + fn + eps, name=name)

        return _finish(compute(values, "value"), compute(updates, "update_op"),
                       metrics_collections, updates_collections)


def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The specificity at the threshold whose sensitivity is nearest `sensitivity` (the
    last such threshold on ties) (`tf.metrics.specificity_at_sensitivity`).

    Raises:
      ValueError: `sensitivity` outside [0, 1].
    """
    if sensitivity < 0 or sensitivity > 1:
        raise ValueError("`sensitivity` must be in the range [0, 1]. Currently, "
                         f"`sensitivity` got {sensitivity}.")
    with variable_scope(name, "specificity_at_sensitivity", [predictions, labels, weights]):
        values, updates = _confusion_at_thresholds(
            labels, predictions, _default_thresholds(num_thresholds), weights)
        eps = 1e-7

        def compute(c, name):
            sens = math_ops.truediv(c["tp"], c["tp"] + c["fn"] + eps)
            gap = unary_ops.abs(sens - sensitivity)
            at_min = math_ops.cast(comparison_ops.equal(gap, reduction_ops.reduce_min(gap)),
                                   dtypes.int64)
            # The last index where the gap is minimal: the first maximum of the cumsum.
            i = math_ops.cast(reduction_ops.argmax(sequence_ops.cumsum(at_min), 0),
                              dtypes.int32)
            tn, fp = c["tn"][i], c["fp"][i]
            return math_ops.truediv(tn, tn + fp + eps, name=name)

        return _finish(compute(values, "value"), compute(updates, "update_op"),
                       metrics_collections, updates_collections)
