"""Estimator heads (TF1.15): what turns a model's logits into predictions, a loss, metrics
and export signatures, so that one network can serve any kind of label.

`tf.estimator.BinaryClassHead`, `MultiClassHead`, `MultiLabelHead`, `RegressionHead`,
`PoissonRegressionHead`, `LogisticRegressionHead`, `MultiHead` and tf.contrib.estimator's
factories of them (`binary_classification_head`, ...). Every head has `name`,
`logits_dimension`, `loss_reduction`, `predictions(logits, keys=None)`,
`loss(labels, logits, features=None, mode=None, regularization_losses=None)`,
`create_loss(features, mode, logits, labels)` (a `LossSpec`) and
`create_estimator_spec(features, mode, logits, labels=None, optimizer=None,
train_op_fn=None, regularization_losses=None)`.

The loss is each example's unreduced loss times its weight (`weight_column`), reduced by
`loss_reduction` (default SUM_OVER_BATCH_SIZE: divided by the number of loss elements),
plus the regularization losses. Evaluation reports `average_loss` (the weighted mean of the
unreduced losses) and the head's metrics; a head with a `name` suffixes every metric key
with "/<name>". Export outputs: "serving_default", "classification" / "regression" and
"predict" signatures.
"""

from __future__ import annotations

import collections

from tensorflux.estimator import export as export_lib
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.framework import dtypes
from tensorflux.losses.losses_impl import Reduction

__all__ = ["Head", "BinaryClassHead", "MultiClassHead", "MultiLabelHead", "RegressionHead",
           "PoissonRegressionHead", "LogisticRegressionHead", "MultiHead",
           "binary_classification_head", "multi_class_head", "multi_label_head",
           "regression_head", "poisson_regression_head", "logistic_regression_head",
           "multi_head"]

CLASSIFY_KEY, REGRESS_KEY, PREDICT_KEY = "classification", "regression", "predict"

LossSpec = collections.namedtuple(
    "LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"])


def _ops():
    from tensorflux.ops import (
        array_ops,
        comparison_ops,
        constant_op,
        joining_ops,
        math_ops,
        reduction_ops,
        string_ops,
        unary_ops,
    )
    return (array_ops, comparison_ops, constant_op, joining_ops, math_ops, reduction_ops,
            string_ops, unary_ops)


# tf.keras.losses.Reduction's keys (TF1.15's tf.estimator heads take them) as tf.losses'
_KERAS_REDUCTIONS = {"auto": Reduction.SUM_OVER_BATCH_SIZE, "sum": Reduction.SUM,
                     "sum_over_batch_size": Reduction.SUM_OVER_BATCH_SIZE}


def _check_reduction(loss_reduction):
    """The tf.losses.Reduction key of `loss_reduction` (tf.losses' or tf.keras.losses').

    Raises:
      ValueError: NONE, or not a reduction.
    """
    valid = (Reduction.SUM, Reduction.SUM_OVER_BATCH_SIZE, Reduction.MEAN,
             Reduction.SUM_BY_NONZERO_WEIGHTS)
    if loss_reduction in _KERAS_REDUCTIONS:
        return _KERAS_REDUCTIONS[loss_reduction]
    if loss_reduction not in valid:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction}. See "
                         f"`tf.losses.Reduction` for valid options (NONE is not one).")
    return loss_reduction


def _check_loss_fn(loss_fn):
    from tensorflux.estimator.estimator import _args

    if loss_fn is None:
        return
    args = _args(loss_fn)
    for need in ("labels", "logits"):
        if need not in args:
            raise ValueError(f"loss_fn must contain argument: {need}. Given arguments: "
                             f"{sorted(args)}")
    extra = args - {"labels", "logits", "features", "loss_reduction"}
    if extra:
        raise ValueError(f"loss_fn has unexpected args: {sorted(extra)}")


def _check_vocabulary(label_vocabulary, n_classes=None):
    if label_vocabulary is None:
        return
    if not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError(f"label_vocabulary should be a list or a tuple. Given type: "
                         f"{type(label_vocabulary)}")
    if n_classes is not None and len(label_vocabulary) != n_classes:
        raise ValueError(f"Length of label_vocabulary ({len(label_vocabulary)}) must equal "
                         f"n_classes ({n_classes}).")


def _check_thresholds(thresholds):
    thresholds = tuple(thresholds) if thresholds else ()
    for t in thresholds:
        if t <= 0.0 or t >= 1.0:
            raise ValueError(f"thresholds not in (0, 1): {thresholds}.")
    return thresholds


class Head:
    """What every head has (tf.estimator.Head): `name`, `logits_dimension`,
    `loss_reduction`, `loss(...)`, `predictions(logits, keys=None)` and
    `create_estimator_spec(...)`. Subclass it for a head of one's own."""

    name = property(lambda self: None)

    @property
    def logits_dimension(self) -> int:
        raise NotImplementedError("a Head subclass defines logits_dimension")

    loss_reduction = property(lambda self: Reduction.SUM_OVER_BATCH_SIZE)

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        raise NotImplementedError("a Head subclass defines loss")

    def predictions(self, logits, keys=None):
        raise NotImplementedError("a Head subclass defines predictions")

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None, regularization_losses=None,
                              trainable_variables=None, update_ops=None):
        raise NotImplementedError("a Head subclass defines create_estimator_spec")


class _Head(Head):
    """The shared part of every single head: weights, reduction, the estimator spec."""

    _serving_key = CLASSIFY_KEY

    def __init__(self, weight_column=None, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 loss_fn=None, name=None):
        _check_loss_fn(loss_fn)
        self._weight_column, self._loss_reduction = weight_column, loss_reduction
        self._reduction = _check_reduction(loss_reduction)
        self._loss_fn, self._name = loss_fn, name

    name = property(lambda self: self._name)
    loss_reduction = property(lambda self: self._loss_reduction)
    logits_dimension = property(lambda self: self._logits_dimension)

    def _key(self, key: str) -> str:
        return key if self._name is None else f"{key}/{self._name}"

    # -- labels, weights and losses -----------------------------------------------------

    def _check_logits(self, logits):
        from tensorflux.framework.tensor_conversion import convert_to_tensor

        logits = convert_to_tensor(logits)
        last = logits.shape.as_list()[-1] if logits.shape.ndims else None
        if logits.shape.ndims is not None and logits.shape.ndims < 2:
            raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension], "
                             f"got {logits.shape}.")
        if last is not None and last != self._logits_dimension:
            raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension], "
                             f"got {logits.shape}; logits_dimension: "
                             f"{self._logits_dimension}.")
        return logits

    def _dense_labels(self, labels, logits, dim):
        from tensorflux.framework.tensor_conversion import convert_to_tensor

        (array_ops, *_rest) = _ops()
        if labels is None:
            raise ValueError("You must provide a labels Tensor. Given: None. Suggested "
                             "troubleshooting steps: Check that your data contain your "
                             "label feature. Check that your input_fn properly parses and "
                             "returns labels.")
        if isinstance(labels, dict):
            raise ValueError(f"labels must be a Tensor, not a dict: {labels}")
        labels = convert_to_tensor(labels)
        if labels.shape.ndims == 1 and dim == 1:
            labels = array_ops.expand_dims(labels, -1)
        last = labels.shape.as_list()[-1] if labels.shape.ndims else None
        if last is not None and last != dim:
            raise ValueError(f"Mismatched label shape. Expected labels dimension={dim}.  "
                             f"Received {last}.")
        return labels

    def _weights(self, features, logits):
        (array_ops, _c, _k, _j, math_ops, *_r) = _ops()
        if self._weight_column is None:
            return 1.0
        key = getattr(self._weight_column, "key", self._weight_column)
        if not isinstance(key, str):
            raise TypeError(f"Weight column must be either a string or _NumericColumn. "
                            f"Given type: {type(self._weight_column)}.")
        if not isinstance(features, dict) or key not in features:
            raise ValueError(f"weight_column {key!r} is not among the features "
                             f"{sorted(features) if isinstance(features, dict) else features}")
        w = features[key]
        if w.dtype == dtypes.string:
            raise ValueError(f"Weight column should be castable to float. Given dtype: "
                             f"{w.dtype}")
        normalizer = getattr(self._weight_column, "normalizer_fn", None)
        w = math_ops.cast(w, dtypes.float32)
        if normalizer is not None:
            w = normalizer(w)
        if w.shape.ndims == 1:
            w = array_ops.expand_dims(w, -1)
        return w

    def _unreduced(self, labels, logits, features):
        from tensorflux.estimator.estimator import _call_with

        if self._loss_fn is None:
            return self._default_loss(labels, logits)
        loss = _call_with(self._loss_fn, {"labels": labels, "logits": logits,
                                          "features": features,
                                          "loss_reduction": self._loss_reduction})
        if loss.shape.ndims is not None and loss.shape.ndims == 1:
            (array_ops, *_rest) = _ops()
            loss = array_ops.expand_dims(loss, -1)
        return loss

    def create_loss(self, features, mode, logits, labels) -> LossSpec:
        """The training loss (weighted and reduced, without regularization), the unreduced
        losses, the weights and the processed labels.

        Raises:
          ValueError: missing labels, labels or logits of the wrong shape.
        """
        from tensorflux.framework import graph as graph_lib
        from tensorflux.losses import losses_impl

        with graph_lib.name_scope("losses"):
            logits = self._check_logits(logits)
            labels = self._processed_labels(logits, labels)
            unreduced = self._unreduced(labels, logits, features)
            weights = self._weights(features, logits)
            loss = losses_impl.compute_weighted_loss(
                unreduced, weights=weights, reduction=self._reduction,
                loss_collection=None)
        return LossSpec(loss, unreduced, weights, labels)

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        """The regularized training loss (a scalar)."""
        loss = self.create_loss(features, mode, logits, labels).training_loss
        return _regularized(loss, regularization_losses)

    # -- the estimator spec -------------------------------------------------------------

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None, regularization_losses=None,
                              trainable_variables=None, update_ops=None):
        """The EstimatorSpec of `mode`: predictions and export outputs; the loss, and the
        train op (`optimizer.minimize` or `train_op_fn(loss)`) or the eval metrics.

        Raises:
          ValueError: TRAIN without exactly one of optimizer and train_op_fn; bad labels.
        """
        predictions = self.predictions(logits)
        outputs = self._export_outputs(predictions)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions, export_outputs=outputs)
        spec = self.create_loss(features, mode, logits, labels)
        loss = _regularized(spec.training_loss, regularization_losses)
        if mode == ModeKeys.EVAL:
            metrics = self._metrics(spec, predictions, regularization_losses)
            return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                 eval_metric_ops=metrics)
        _summaries(self._key("loss"), loss, regularization_losses,
                   self._key("regularization_loss"))
        train_op = _train_op(loss, optimizer, train_op_fn, trainable_variables, update_ops)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)

    def _export_outputs(self, predictions) -> dict:
        outputs = self._signature_outputs(predictions)
        outputs[PREDICT_KEY] = export_lib.PredictOutput(predictions)
        outputs[export_lib.DEFAULT_SERVING_KEY] = outputs[self._serving_key]
        return outputs

    def _metrics(self, spec, predictions, regularization_losses) -> dict:
        from tensorflux.metrics import metrics_impl

        metrics = {self._key("average_loss"): metrics_impl.mean(
            spec.unreduced_loss, weights=_broadcast(spec.weights, spec.unreduced_loss))}
        if regularization_losses:
            metrics[self._key("regularization_loss")] = metrics_impl.mean(
                _add_n(regularization_losses))
        metrics.update(self._head_metrics(spec, predictions))
        return metrics


def _broadcast(weights, values):
    (array_ops, _c, _k, _j, math_ops, *_r) = _ops()
    if isinstance(weights, float):
        return None
    return math_ops.multiply(weights, array_ops.ones_like(values))


def _add_n(tensors):
    from tensorflux.ops import math_ops

    tensors = list(tensors)
    return tensors[0] if len(tensors) == 1 else math_ops.add_n(tensors)


def _regularized(loss, regularization_losses):
    if not regularization_losses:
        return loss
    return loss + _add_n(regularization_losses)


def _summaries(loss_key, loss, regularization_losses, reg_key):
    from tensorflux.summary import summary

    if loss_key != "loss":  # the Estimator reports the loss itself
        summary.scalar(loss_key, loss)
    if regularization_losses:
        summary.scalar(reg_key, _add_n(regularization_losses))


def _train_op(loss, optimizer, train_op_fn, trainable_variables=None, update_ops=None):
    """optimizer.minimize(loss) or train_op_fn(loss), grouped with the update ops (default:
    the graph's UPDATE_OPS, as batch normalization leaves them)."""
    from tensorflux.control_flow import builders
    from tensorflux.framework import graph as graph_lib
    from tensorflux.train.global_step import get_global_step

    if optimizer is not None and train_op_fn is not None:
        raise ValueError("train_op_fn and optimizer cannot both be set.")
    if optimizer is None and train_op_fn is None:
        raise ValueError("train_op_fn and optimizer cannot both be None.")
    if train_op_fn is not None:
        train_op = train_op_fn(loss)
    else:
        train_op = optimizer.minimize(loss, global_step=get_global_step(),
                                      var_list=trainable_variables)
    if update_ops is None:
        update_ops = graph_lib.get_collection(graph_lib.GraphKeys.UPDATE_OPS)
    return builders.group(train_op, *update_ops) if update_ops else train_op


def _tile_classes(names, logits):
    (array_ops, _c, constant_op, joining_ops, *_r) = _ops()
    row = array_ops.expand_dims(constant_op.constant(list(names)), 0)
    batch = array_ops.shape(logits)[:1]
    return joining_ops.tile(row, joining_ops.concat([batch, [1]], 0))


def _tile_ids(n, logits):
    (array_ops, _c, constant_op, joining_ops, *_r) = _ops()
    row = array_ops.expand_dims(constant_op.constant(list(range(n)), dtypes.int32), 0)
    batch = array_ops.shape(logits)[:1]
    return joining_ops.tile(row, joining_ops.concat([batch, [1]], 0))


def _class_names(n, label_vocabulary):
    return list(label_vocabulary) if label_vocabulary is not None \
        else [str(i) for i in range(n)]


def _label_ids(labels, label_vocabulary, n_classes):
    """Labels as int64 class ids (strings looked up in the vocabulary)."""
    from tensorflux.lookup import lookup_ops
    from tensorflux.ops import math_ops

    if label_vocabulary is not None:
        if labels.dtype != dtypes.string:
            raise ValueError(f"Labels dtype should be string if there is a vocabulary. "
                             f"Given: {labels.dtype}")
        table = lookup_ops.index_table_from_tensor(list(label_vocabulary),
                                                   name="class_id_lookup")
        return table.lookup(labels)
    if labels.dtype == dtypes.string:
        raise ValueError("Labels dtype should be integer. Instead got string (give a "
                         "label_vocabulary for string labels).")
    return math_ops.cast(labels, dtypes.int64)


def _check_range(ids, n_classes):
    """`ids` with an assertion that they are in [0, n_classes - 1]."""
    from tensorflux.debugging import check_ops
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import array_ops

    check = check_ops.assert_less_equal(ids, _const(n_classes - 1, ids.dtype),
                                        message="Labels must be <= n_classes - 1")
    check2 = check_ops.assert_non_negative(ids, message="Labels must be >= 0")
    with graph_lib.get_default_graph().control_dependencies([check, check2]):
        return array_ops.identity(ids)


def _gather(names, ids):
    from tensorflux.ops import constant_op, gather_ops

    return gather_ops.gather(constant_op.constant(list(names)), ids)


def _const(value, dtype):
    from tensorflux.ops import constant_op

    return constant_op.constant(value, dtype)


def _mean_metric(values, weights):
    from tensorflux.metrics import metrics_impl

    return metrics_impl.mean(values, weights=_broadcast(weights, values))


def _threshold_metrics(head, labels, scores, weights, thresholds):
    """accuracy/precision/recall at each threshold (TF1's `.../positive_threshold_%g`)."""
    from tensorflux.metrics import metrics_impl, threshold_metrics

    (array_ops, comparison_ops, _k, _j, math_ops, *_r) = _ops()
    w = _broadcast(weights, scores)
    metrics = {}
    for t in thresholds:
        above = math_ops.cast(comparison_ops.greater_equal(scores, t), dtypes.float32)
        metrics[head._key(f"accuracy/positive_threshold_{t:g}")] = metrics_impl.accuracy(
            labels, above, weights=w)
        for name, fn in (("precision", threshold_metrics.precision_at_thresholds),
                         ("recall", threshold_metrics.recall_at_thresholds)):
            value, update = fn(labels, scores, [t], weights=w)
            metrics[head._key(f"{name}/positive_threshold_{t:g}")] = (
                array_ops.squeeze(value), array_ops.squeeze(update))
    return metrics


class BinaryClassHead(_Head):
    """Binary classification of one logit: sigmoid cross entropy loss; labels 0/1 (or in
    [0, 1]; strings of a two-entry `label_vocabulary`)."""

    _logits_dimension = 1

    def __init__(self, weight_column=None, thresholds=None, label_vocabulary=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None, name=None):
        _check_vocabulary(label_vocabulary)
        self._thresholds = _check_thresholds(thresholds)
        self._label_vocabulary = label_vocabulary
        super().__init__(weight_column, loss_reduction, loss_fn, name)

    def _processed_labels(self, logits, labels):
        from tensorflux.ops import math_ops

        labels = self._dense_labels(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = _label_ids(labels, self._label_vocabulary, 2)
        elif labels.dtype == dtypes.string:
            _label_ids(labels, None, 2)
        return _check_range(math_ops.cast(labels, dtypes.float32), 2)

    def _default_loss(self, labels, logits):
        from tensorflux.nn import nn_impl

        return nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def predictions(self, logits, keys=None):
        """logits, logistic, probabilities, class_ids, classes, all_class_ids,
        all_classes (or those of `keys`)."""
        from tensorflux.framework import graph as graph_lib
        from tensorflux.ops import nn_ops

        (array_ops, _c, constant_op, joining_ops, math_ops, reduction_ops, string_ops,
         unary_ops) = _ops()
        logits = self._check_logits(logits)
        names = _class_names(2, self._label_vocabulary)
        with graph_lib.name_scope("predictions"):
            two = joining_ops.concat([array_ops.zeros_like(logits), logits], -1)
            class_ids = array_ops.expand_dims(reduction_ops.argmax(two, axis=-1), -1)
            classes = _gather(names, class_ids) \
                if self._label_vocabulary is not None else string_ops.as_string(class_ids)
            out = {"logits": logits, "logistic": unary_ops.sigmoid(logits),
                   "probabilities": nn_ops.softmax(two), "class_ids": class_ids,
                   "classes": classes, "all_class_ids": _tile_ids(2, logits),
                   "all_classes": _tile_classes(names, logits)}
        return _select(out, keys)

    def _signature_outputs(self, predictions):
        return {CLASSIFY_KEY: export_lib.ClassificationOutput(
                    scores=predictions["probabilities"],
                    classes=_tile_classes(_class_names(2, self._label_vocabulary),
                                          predictions["logits"])),
                REGRESS_KEY: export_lib.RegressionOutput(predictions["logistic"])}

    def _head_metrics(self, spec, predictions):
        from tensorflux.metrics import metrics_impl, threshold_metrics
        from tensorflux.ops import math_ops

        labels, w = spec.processed_labels, spec.weights
        bw = _broadcast(w, labels)
        class_ids = math_ops.cast(predictions["class_ids"], dtypes.float32)
        logistic = predictions["logistic"]
        label_mean = _mean_metric(labels, w)
        m = {self._key("accuracy"): metrics_impl.accuracy(labels, class_ids, weights=bw),
             self._key("precision"): metrics_impl.precision(labels, class_ids, weights=bw),
             self._key("recall"): metrics_impl.recall(labels, class_ids, weights=bw),
             self._key("prediction/mean"): _mean_metric(logistic, w),
             self._key("label/mean"): label_mean,
             self._key("accuracy_baseline"): tuple(
                 math_ops.maximum(v, 1.0 - v) for v in label_mean),
             self._key("auc"): threshold_metrics.auc(labels, logistic, weights=bw),
             self._key("auc_precision_recall"): threshold_metrics.auc(
                 labels, logistic, weights=bw, curve="PR")}
        m.update(_threshold_metrics(self, labels, logistic, w, self._thresholds))
        return m


def _select(predictions, keys):
    if not keys:
        return predictions
    keys = [keys] if isinstance(keys, str) else list(keys)
    unknown = [k for k in keys if k not in predictions]
    if unknown:
        raise ValueError(f"Prediction key must be in PredictionKeys, given: {unknown}. "
                         f"Valid prediction keys include {sorted(predictions)}.")
    return {k: predictions[k] for k in keys}


class MultiClassHead(_Head):
    """Single-label classification among `n_classes` (> 2) logits: sparse softmax cross
    entropy loss; labels are class ids (or strings of `label_vocabulary`)."""

    def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None, name=None):
        if n_classes is None or n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}.")
        _check_vocabulary(label_vocabulary, n_classes)
        self._n_classes, self._label_vocabulary = n_classes, label_vocabulary
        self._logits_dimension = n_classes
        super().__init__(weight_column, loss_reduction, loss_fn, name)

    def _processed_labels(self, logits, labels):
        labels = self._dense_labels(labels, logits, 1)
        return _check_range(_label_ids(labels, self._label_vocabulary, self._n_classes),
                            self._n_classes)

    def _default_loss(self, labels, logits):
        from tensorflux.nn import nn_impl

        (array_ops, *_r) = _ops()
        per = nn_impl.sparse_softmax_cross_entropy_with_logits(
            labels=array_ops.squeeze(labels, [-1]), logits=logits)
        return array_ops.expand_dims(per, -1)

    def predictions(self, logits, keys=None):
        """logits, probabilities, class_ids, classes, all_class_ids, all_classes."""
        from tensorflux.framework import graph as graph_lib
        from tensorflux.ops import nn_ops

        (array_ops, _c, constant_op, _j, _m, reduction_ops, string_ops, _u) = _ops()
        logits = self._check_logits(logits)
        names = _class_names(self._n_classes, self._label_vocabulary)
        with graph_lib.name_scope("predictions"):
            class_ids = array_ops.expand_dims(reduction_ops.argmax(logits, axis=-1), -1)
            classes = _gather(names, class_ids) \
                if self._label_vocabulary is not None else string_ops.as_string(class_ids)
            out = {"logits": logits, "probabilities": nn_ops.softmax(logits),
                   "class_ids": class_ids, "classes": classes,
                   "all_class_ids": _tile_ids(self._n_classes, logits),
                   "all_classes": _tile_classes(names, logits)}
        return _select(out, keys)

    def _signature_outputs(self, predictions):
        return {CLASSIFY_KEY: export_lib.ClassificationOutput(
            scores=predictions["probabilities"],
            classes=_tile_classes(_class_names(self._n_classes, self._label_vocabulary),
                                  predictions["logits"]))}

    def _head_metrics(self, spec, predictions):
        from tensorflux.metrics import metrics_impl

        return {self._key("accuracy"): metrics_impl.accuracy(
            spec.processed_labels, predictions["class_ids"],
            weights=_broadcast(spec.weights, spec.unreduced_loss))}


class MultiLabelHead(_Head):
    """Multi-label classification: each of `n_classes` logits is a yes/no (sigmoid cross
    entropy, averaged over the classes). Labels: a multi-hot [batch, n_classes] tensor, or a
    SparseTensor of class ids (or of strings of `label_vocabulary`)."""

    _loss_per_example = True

    def __init__(self, n_classes, weight_column=None, thresholds=None,
                 label_vocabulary=None, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 loss_fn=None, classes_for_class_based_metrics=None, name=None):
        if n_classes is None or n_classes < 2:
            raise ValueError(f"n_classes must be > 1 for multi-label classification. "
                             f"Given: {n_classes}")
        _check_vocabulary(label_vocabulary, n_classes)
        self._thresholds = _check_thresholds(thresholds)
        self._n_classes, self._label_vocabulary = n_classes, label_vocabulary
        self._logits_dimension = n_classes
        ids = []
        for c in classes_for_class_based_metrics or ():
            if isinstance(c, str):
                if label_vocabulary is None or c not in label_vocabulary:
                    raise ValueError(f"{c} is not in label_vocabulary {label_vocabulary}.")
                c = list(label_vocabulary).index(c)
            if not 0 <= c < n_classes:
                raise ValueError(f"Invalid class_id {c} in "
                                 f"classes_for_class_based_metrics.")
            ids.append(c)
        self._class_metric_ids = ids
        super().__init__(weight_column, loss_reduction, loss_fn, name)

    def _processed_labels(self, logits, labels):
        from tensorflux.framework import sparse_tensor
        from tensorflux.lookup import lookup_ops
        from tensorflux.ops import math_ops
        from tensorflux.sparse import sparse_extra

        if hasattr(labels, "indices") and hasattr(labels, "dense_shape"):
            if self._label_vocabulary is not None:
                table = lookup_ops.index_table_from_tensor(list(self._label_vocabulary),
                                                           name="class_id_lookup")
                labels = sparse_tensor.SparseTensor(
                    labels.indices, table.lookup(labels.values), labels.dense_shape)
            labels = math_ops.cast(sparse_extra.sparse_to_indicator(
                labels, self._n_classes), dtypes.int64)
        else:
            labels = _check_range(self._dense_labels(labels, logits, self._n_classes), 2)
        return math_ops.cast(labels, dtypes.float32)

    def _default_loss(self, labels, logits):
        from tensorflux.nn import nn_impl

        (_a, _c, _k, _j, _m, reduction_ops, *_r) = _ops()
        per = nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        return reduction_ops.reduce_mean(per, axis=-1, keepdims=True)

    # tf.contrib.estimator.multi_label_head's predict only the first two
    _prediction_keys = ("logits", "probabilities", "classes")

    def predictions(self, logits, keys=None):
        """logits, probabilities (sigmoids) and classes (every class name, per example)."""
        from tensorflux.framework import graph as graph_lib

        (*_r, unary_ops) = _ops()
        logits = self._check_logits(logits)
        names = _class_names(self._n_classes, self._label_vocabulary)
        with graph_lib.name_scope("predictions"):
            out = {"logits": logits, "probabilities": unary_ops.sigmoid(logits),
                   "classes": _tile_classes(names, logits)}
        return _select({k: out[k] for k in self._prediction_keys}, keys)

    def _signature_outputs(self, predictions):
        return {CLASSIFY_KEY: export_lib.ClassificationOutput(
            scores=predictions["probabilities"],
            classes=_tile_classes(_class_names(self._n_classes, self._label_vocabulary),
                                  predictions["logits"]))}

    def _head_metrics(self, spec, predictions):
        from tensorflux.metrics import threshold_metrics

        (array_ops, *_r) = _ops()
        labels, probs = spec.processed_labels, predictions["probabilities"]
        w = _broadcast(spec.weights, labels)
        m = {self._key("auc"): threshold_metrics.auc(labels, probs, weights=w),
             self._key("auc_precision_recall"): threshold_metrics.auc(
                 labels, probs, weights=w, curve="PR")}
        m.update(_threshold_metrics(self, labels, probs, spec.weights, self._thresholds))
        for c in self._class_metric_ids:
            lc, pc = labels[:, c:c + 1], probs[:, c:c + 1]
            wc = None if w is None else w[:, c:c + 1]
            at = f"class{c}" if self._label_vocabulary is None \
                else self._label_vocabulary[c]
            m[self._key(f"probability_mean/{at}")] = _mean_metric(pc, spec.weights)
            m[self._key(f"auc/{at}")] = threshold_metrics.auc(lc, pc, weights=wc)
            m[self._key(f"auc_precision_recall/{at}")] = threshold_metrics.auc(
                lc, pc, weights=wc, curve="PR")
        return m


class RegressionHead(_Head):
    """Regression of `label_dimension` values: squared-error loss (or `loss_fn`);
    predictions are `inverse_link_fn(logits)` (the logits without one)."""

    _serving_key = REGRESS_KEY

    def __init__(self, label_dimension=1, weight_column=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                 inverse_link_fn=None, name=None):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        self._logits_dimension = label_dimension
        self._inverse_link_fn = inverse_link_fn
        super().__init__(weight_column, loss_reduction, loss_fn, name)

    def _processed_labels(self, logits, labels):
        from tensorflux.ops import math_ops

        labels = self._dense_labels(labels, logits, self._logits_dimension)
        return math_ops.cast(labels, dtypes.float32)

    def _default_loss(self, labels, logits):
        (*_r, unary_ops) = _ops()
        return unary_ops.square(logits - labels)

    def predictions(self, logits, keys=None):
        """predictions (and logits when there is an inverse link function)."""
        logits = self._check_logits(logits)
        if self._inverse_link_fn is None:
            return _select({"predictions": logits}, keys)
        return _select({"predictions": self._inverse_link_fn(logits), "logits": logits},
                       keys)

    def _signature_outputs(self, predictions):
        value = predictions["predictions"]
        return {REGRESS_KEY: export_lib.RegressionOutput(value)
                if self._logits_dimension == 1 else export_lib.PredictOutput(value)}

    def _head_metrics(self, spec, predictions):
        return {self._key("prediction/mean"): _mean_metric(predictions["predictions"],
                                                           spec.weights),
                self._key("label/mean"): _mean_metric(spec.processed_labels, spec.weights)}


class PoissonRegressionHead(RegressionHead):
    """Regression of counts: log-Poisson loss of the logits (log rates); predictions are
    exp(logits)."""

    def __init__(self, label_dimension=1, weight_column=None,
                 loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, compute_full_loss=True,
                 name=None):
        from tensorflux.nn import nn_extra

        (*_r, unary_ops) = _ops()

        def loss_fn(labels, logits):
            return nn_extra.log_poisson_loss(labels, logits,
                                             compute_full_loss=compute_full_loss)

        super().__init__(label_dimension, weight_column, loss_reduction, loss_fn,
                         unary_ops.exp, name)


class LogisticRegressionHead(RegressionHead):
    """Regression of values in [0, 1]: sigmoid cross entropy of the logits; predictions are
    sigmoid(logits)."""

    def __init__(self, weight_column=None, loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                 name=None):
        from tensorflux.nn import nn_impl

        (*_r, unary_ops) = _ops()

        def loss_fn(labels, logits):
            return nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

        super().__init__(1, weight_column, loss_reduction, loss_fn, unary_ops.sigmoid,
                         name)


class MultiHead(Head):
    """Several heads over one network: the logits are a dict {head name: logits} or their
    concatenation (in the order of `heads`); the labels a dict {head name: labels}. The
    loss is the sum of the heads' losses (times `head_weights`); predictions are keyed by
    (head name, prediction key); metrics are each head's (suffixed with its name) plus
    `loss/<name>`; export outputs are each head's as "<name>/<key>" ("<name>" for its
    default), the first head's default as the default, and a "predict" of everything."""

    def __init__(self, heads, head_weights=None):
        heads = list(heads)
        if not heads:
            raise ValueError(f"Must specify heads. Given: {heads}")
        if head_weights is not None and len(head_weights) != len(heads):
            raise ValueError(f"heads and head_weights must have the same size. Given "
                             f"len(heads): {len(heads)}. Given len(head_weights): "
                             f"{len(head_weights)}.")
        for head in heads:
            if not head.name:
                raise ValueError(f"All given heads must have name specified. Given: "
                                 f"{head}")
            if isinstance(head, MultiHead):
                raise ValueError("MultiHead cannot contain another MultiHead.")
        self._heads = tuple(heads)
        self._head_weights = tuple(head_weights) if head_weights is not None else None

    name = property(lambda self: "_".join(h.name for h in self._heads))
    heads = property(lambda self: self._heads)
    logits_dimension = property(lambda self: sum(h.logits_dimension for h in self._heads))
    loss_reduction = property(lambda self: self._heads[0].loss_reduction)

    def _split(self, logits) -> dict:
        (array_ops, *_r) = _ops()
        if isinstance(logits, dict):
            missing = [h.name for h in self._heads if h.name not in logits]
            if missing:
                raise ValueError(f"logits has no entry of the heads {missing}; keys: "
                                 f"{sorted(logits)}")
            return {h.name: logits[h.name] for h in self._heads}
        from tensorflux.framework.tensor_conversion import convert_to_tensor

        logits = convert_to_tensor(logits)
        last = logits.shape.as_list()[-1] if logits.shape.ndims else None
        if last is not None and last != self.logits_dimension:
            raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension], "
                             f"got {logits.shape}; logits_dimension: "
                             f"{self.logits_dimension}.")
        out, start = {}, 0
        for h in self._heads:
            out[h.name] = logits[..., start:start + h.logits_dimension]
            start += h.logits_dimension
        return out

    def _weighted(self, losses):
        if self._head_weights is not None:
            losses = [loss * w for loss, w in zip(losses, self._head_weights, strict=True)]
        return _add_n(losses)

    def _labels_of(self, labels, head):
        if not isinstance(labels, dict):
            raise ValueError(f"labels must be a dict. Given: {labels}")
        if head.name not in labels:
            raise ValueError(f"labels has no entry of head {head.name!r}; keys: "
                             f"{sorted(labels)}")
        return labels[head.name]

    def create_loss(self, features, mode, logits, labels) -> LossSpec:
        """The heads' training losses merged (times `head_weights`), and dicts by head
        name of their unreduced losses, weights and processed labels."""
        parts = self._split(logits)
        specs = [h.create_loss(features, mode, parts[h.name], self._labels_of(labels, h))
                 for h in self._heads]
        w = self._head_weights or (1.0,) * len(self._heads)
        return LossSpec(
            self._weighted([s.training_loss for s in specs]),
            {h.name: s.unreduced_loss * wi
             for h, s, wi in zip(self._heads, specs, w, strict=True)},
            {h.name: s.weights if isinstance(s.weights, float) else s.weights * wi
             for h, s, wi in zip(self._heads, specs, w, strict=True)},
            {h.name: s.processed_labels for h, s in zip(self._heads, specs, strict=True)})

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        """The sum of the heads' (weighted) losses, regularized."""
        parts = self._split(logits)
        losses = [h.loss(self._labels_of(labels, h), parts[h.name], features, mode)
                  for h in self._heads]
        return _regularized(self._weighted(losses), regularization_losses)

    def predictions(self, logits, keys=None):
        """{(head name, key): prediction} of every head."""
        parts = self._split(logits)
        out = {}
        for h in self._heads:
            for k, v in h.predictions(parts[h.name], keys).items():
                out[(h.name, k)] = v
        return out

    def create_estimator_spec(self, features, mode, logits, labels=None, optimizer=None,
                              train_op_fn=None, regularization_losses=None,
                              trainable_variables=None, update_ops=None):
        """The EstimatorSpec of all heads together (see the class).

        Raises:
          ValueError: labels not a dict of every head's labels; bad logits.
        """
        from tensorflux.metrics import metrics_impl

        parts = self._split(logits)
        specs = [h.create_estimator_spec(features, ModeKeys.PREDICT, parts[h.name])
                 for h in self._heads]
        predictions = {(h.name, k): v for h, s in zip(self._heads, specs, strict=True)
                       for k, v in s.predictions.items()}
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions,
                                 export_outputs=self._export_outputs(specs))
        losses, metrics = [], {}
        for h in self._heads:
            spec = h.create_loss(features, mode, parts[h.name], self._labels_of(labels, h))
            losses.append(spec.training_loss)
            if mode == ModeKeys.EVAL:
                metrics[f"loss/{h.name}"] = metrics_impl.mean(spec.training_loss)
                metrics.update(h._metrics(spec, h.predictions(parts[h.name]), None))
        loss = _regularized(self._weighted(losses), regularization_losses)
        if mode == ModeKeys.EVAL:
            if regularization_losses:
                metrics["regularization_loss"] = metrics_impl.mean(
                    _add_n(regularization_losses))
            return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                 eval_metric_ops=metrics)
        for h, head_loss in zip(self._heads, losses, strict=True):
            _summaries(f"loss/{h.name}", head_loss, None, None)
        _summaries("loss", loss, regularization_losses, "regularization_loss")
        train_op = _train_op(loss, optimizer, train_op_fn, trainable_variables, update_ops)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)

    def _export_outputs(self, specs) -> dict:
        outputs, merged = {}, {}
        for h, s in zip(self._heads, specs, strict=True):
            for k, out in s.export_outputs.items():
                outputs[h.name if k == export_lib.DEFAULT_SERVING_KEY
                        else f"{h.name}/{k}"] = out
            merged.update({f"{h.name}/{k}": v for k, v in s.predictions.items()})
        outputs[export_lib.DEFAULT_SERVING_KEY] = \
            specs[0].export_outputs[export_lib.DEFAULT_SERVING_KEY]
        outputs[PREDICT_KEY] = export_lib.PredictOutput(merged)
        return outputs


# ---- tf.contrib.estimator's factories (TF1's argument orders) ---------------------------


def binary_classification_head(weight_column=None, thresholds=None, label_vocabulary=None,
                               loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                               name=None):
    """A BinaryClassHead (see it)."""
    return BinaryClassHead(weight_column, thresholds, label_vocabulary, loss_reduction,
                           loss_fn, name)


def multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                     loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None, name=None):
    """A MultiClassHead (see it)."""
    return MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction,
                          loss_fn, name)


def multi_label_head(n_classes, weight_column=None, thresholds=None, label_vocabulary=None,
                     loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                     classes_for_class_based_metrics=None, name=None):
    """A MultiLabelHead (see it) predicting logits and probabilities (TF1 contrib's)."""
    head = MultiLabelHead(n_classes, weight_column, thresholds, label_vocabulary,
                          loss_reduction, loss_fn, classes_for_class_based_metrics, name)
    head._prediction_keys = ("logits", "probabilities")
    return head


def regression_head(weight_column=None, label_dimension=1,
                    loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, loss_fn=None,
                    inverse_link_fn=None, name=None):
    """A RegressionHead (see it; TF1 contrib takes weight_column first)."""
    return RegressionHead(label_dimension, weight_column, loss_reduction, loss_fn,
                          inverse_link_fn, name)


def poisson_regression_head(weight_column=None, label_dimension=1,
                            loss_reduction=Reduction.SUM_OVER_BATCH_SIZE,
                            compute_full_loss=True, name=None):
    """A PoissonRegressionHead (see it)."""
    return PoissonRegressionHead(label_dimension, weight_column, loss_reduction,
                                 compute_full_loss, name)


def logistic_regression_head(weight_column=None,
                             loss_reduction=Reduction.SUM_OVER_BATCH_SIZE, name=None):
    """A LogisticRegressionHead (see it)."""
    return LogisticRegressionHead(weight_column, loss_reduction, name)


def multi_head(heads, head_weights=None):
    """A MultiHead (see it)."""
    return MultiHead(heads, head_weights)
