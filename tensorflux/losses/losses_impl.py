"""`tf.losses.*`: TF1's loss functions, built from ops (TF1's losses_impl.py).

Each loss computes per-element losses, weights them (`weights`: a scalar or a tensor that
broadcasts to the losses: rank 0, or the losses' rank with every dimension 1 or equal),
reduces them as `reduction` says, and adds the result to `loss_collection`
(`tf.GraphKeys.LOSSES` by default). Inputs are computed in float32, as TF1's are.

Reductions (`Reduction`): NONE keeps the weighted losses; SUM adds them; MEAN divides the
sum by the sum of the broadcast weights; SUM_OVER_BATCH_SIZE by the number of losses;
SUM_BY_NONZERO_WEIGHTS (the default; SUM_OVER_NONZERO_WEIGHTS is the same key) by the
number of losses whose broadcast weight is not zero. Every division is `div_no_nan`, so
all-zero weights give a loss of 0.
"""

from __future__ import annotations

from tensorflux.control_flow import builders as control_flow
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.losses import util
from tensorflux.nn import nn_impl
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    logging_ops,
    math_ops,
    nn_ops,
    reduction_ops,
    sequence_ops,
    unary_ops,
)

__all__ = ["Reduction", "compute_weighted_loss", "absolute_difference", "cosine_distance",
           "hinge_loss", "huber_loss", "log_loss", "mean_pairwise_squared_error",
           "mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy",
           "sparse_softmax_cross_entropy"]

_LOSSES = graph_lib.GraphKeys.LOSSES


class Reduction:
    """How a loss reduces its weighted per-element losses (the string keys are TF1's)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key) -> None:
        """Raises:
          ValueError: `key` is not a reduction."""
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of "
                             f"{cls.all()}.")


# ---- weights ------------------------------------------------------------------------------


def _assert_broadcastable(weights, values):
    """Checks TF's rule that `weights` broadcasts to `values` (a scalar, or the same rank
    with each dimension 1 or equal): statically when the shapes tell, else with an Assert
    op that is returned (None when the static check sufficed).

    Raises:
      ValueError: the static shapes break the rule."""
    w_shape, v_shape = weights.shape, values.shape
    if w_shape.ndims == 0:
        return None
    if w_shape.ndims is None or v_shape.ndims is None:
        return _dynamic_broadcast_check(weights, values)
    message = (f"weights can not be broadcast to values. values.rank={v_shape.ndims}. "
               f"weights.rank={w_shape.ndims}. values.shape={v_shape}. "
               f"weights.shape={w_shape}. Received weights={weights}, values={values}")
    if w_shape.ndims != v_shape.ndims:
        raise ValueError(message)
    for i, (w, v) in enumerate(zip(w_shape.as_list(), v_shape.as_list(), strict=True)):
        if w is not None and v is not None and w != 1 and w != v:
            raise ValueError(f"{message} Mismatch at dim {i}.")
    if w_shape.is_fully_defined() and v_shape.is_fully_defined():
        return None
    return _dynamic_broadcast_check(weights, values)


def _dynamic_broadcast_check(weights, values):
    """An Assert op failing (InvalidArgumentError) when `weights` does not broadcast to
    `values` by TF's rule, for shapes known only at run time."""
    with graph_lib.name_scope(None, "assert_broadcastable", [weights, values]):
        w_shape, v_shape = array_ops.shape(weights), array_ops.shape(values)
        same_rank = comparison_ops.equal(array_ops.rank(weights), array_ops.rank(values))

        def dims_ok():
            return reduction_ops.reduce_all(comparison_ops.logical_or(
                comparison_ops.equal(w_shape, 1), comparison_ops.equal(w_shape, v_shape)))

        ok = comparison_ops.logical_or(
            comparison_ops.equal(array_ops.rank(weights), 0),
            control_flow.cond(same_rank, dims_ok, lambda: constant_op.constant(False)))
        return logging_ops.Assert(ok, ["weights can not be broadcast to values.",
                                       "weights.shape=", weights.name, w_shape,
                                       "values.shape=", values.name, v_shape])


def _broadcast_weights(weights, values):
    """`weights` broadcast to the shape of `values`."""
    if weights.shape.is_fully_defined() and values.shape.is_fully_defined() and \
            weights.shape == values.shape:
        return weights
    return math_ops.multiply(weights, array_ops.ones_like(values), name="broadcast_weights")


def _num_elements(losses):
    with graph_lib.name_scope(None, "num_elements") as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), losses.dtype)


def _num_present(losses, weights, per_batch: bool = False):
    """The number of losses with a nonzero (broadcast) weight: in all, or per batch entry
    (shape [batch, 1, ...]) with `per_batch`."""
    with graph_lib.name_scope(None, "num_present", (losses, weights)) as scope:
        weights = math_ops.cast(weights, dtypes.float32)
        present = comparison_ops.where(
            comparison_ops.equal(weights, 0.0), array_ops.zeros_like(weights),
            array_ops.ones_like(weights))
        present = _broadcast_weights(present, losses)
        if per_batch:
            axis = sequence_ops.range(1, array_ops.rank(present))
            return reduction_ops.reduce_sum(present, axis=axis, keepdims=True, name=scope)
        return reduction_ops.reduce_sum(present, name=scope)


def _safe_mean(total, count):
    return math_ops.div_no_nan(total, count, name="value")


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=_LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """`losses` times `weights`, reduced as `reduction` says, added to `loss_collection`.

    Args:
      losses: a tensor of per-element losses.
      weights: a scalar or a tensor broadcastable to `losses`.
      scope: the name scope.
      loss_collection: the collection the loss joins (None: none).
      reduction: a `Reduction` key.

    Returns:
      The loss: the weighted losses for Reduction.NONE, else a scalar; float32 unless the
      losses were another dtype (the result is cast back to it).

    Raises:
      ValueError: an unknown reduction, or weights that do not broadcast to the losses.
    """
    Reduction.validate(reduction)
    with graph_lib.name_scope(scope, "weighted_loss", (losses, weights)):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        weights = convert_to_tensor(weights, name="weights")
        check = _assert_broadcastable(weights, losses)
        with graph_lib.control_dependencies([check] if check is not None else []):
            return _reduce_weighted(losses, weights, reduction, input_dtype, loss_collection)


def _reduce_weighted(losses, weights, reduction, input_dtype, loss_collection):
    """The body of `compute_weighted_loss`, after the broadcast check."""
    losses = math_ops.cast(losses, dtypes.float32)
    weights = math_ops.cast(weights, dtypes.float32)
    weighted = math_ops.multiply(losses, weights)
    if reduction == Reduction.NONE:
        loss = weighted
    else:
        loss = reduction_ops.reduce_sum(weighted)
        if reduction == Reduction.MEAN:
            loss = _safe_mean(loss, reduction_ops.reduce_sum(
                math_ops.multiply(array_ops.ones_like(losses), weights)))
        elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
            loss = _safe_mean(loss, _num_present(losses, weights))
        elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
            loss = _safe_mean(loss, _num_elements(losses))
    loss = math_ops.cast(loss, input_dtype)
    util.add_loss(loss, loss_collection)
    return loss


# ---- the losses ---------------------------------------------------------------------------


def _not_none(**args) -> None:
    for name, value in args.items():
        if value is None:
            raise ValueError(f"Argument `{name}` must not be None.")


def _float_pair(predictions, labels):
    """(predictions, labels) as float32 tensors of compatible shapes.

    Raises:
      ValueError: the shapes are incompatible (names both)."""
    predictions = math_ops.cast(predictions, dtypes.float32)
    labels = math_ops.cast(labels, dtypes.float32)
    predictions.shape.assert_is_compatible_with(labels.shape)
    return predictions, labels


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted |predictions - labels| (`tf.losses.absolute_difference`).

    Raises:
      ValueError: labels or predictions None, shapes incompatible, bad weights."""
    _not_none(labels=labels, predictions=predictions)
    with graph_lib.name_scope(scope, "absolute_difference",
                              (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        losses = unary_ops.abs(math_ops.subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The weighted (predictions - labels)^2 (`tf.losses.mean_squared_error`).

    Raises:
      ValueError: labels or predictions None, shapes incompatible, bad weights."""
    _not_none(labels=labels, predictions=predictions)
    with graph_lib.name_scope(scope, "mean_squared_error",
                              (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        losses = math_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The Huber loss of predictions - labels: quadratic up to |error| = `delta`, linear
    beyond (`tf.losses.huber_loss`).

    Raises:
      ValueError: labels or predictions None, shapes incompatible, bad weights."""
    _not_none(labels=labels, predictions=predictions)
    with graph_lib.name_scope(scope, "huber_loss", (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        abs_error = unary_ops.abs(math_ops.subtract(predictions, labels))
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)
        losses = math_ops.add(math_ops.multiply(0.5, math_ops.multiply(quadratic, quadratic)),
                              math_ops.multiply(delta, linear))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """The cross entropy of probabilities `predictions` against `labels` in [0, 1], with
    `epsilon` inside the logs (`tf.losses.log_loss`).

    Raises:
      ValueError: labels or predictions None, shapes incompatible, bad weights."""
    _not_none(labels=labels, predictions=predictions)
    with graph_lib.name_scope(scope, "log_loss", (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        losses = math_ops.subtract(
            -math_ops.multiply(labels, unary_ops.log(predictions + epsilon)),
            math_ops.multiply(1 - labels, unary_ops.log(1 - predictions + epsilon)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=_LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """max(0, 1 - y * logits) with y = 2 * labels - 1 for labels in {0, 1}
    (`tf.losses.hinge_loss`).

    Raises:
      ValueError: labels or logits None, shapes incompatible, bad weights."""
    _not_none(labels=labels, logits=logits)
    with graph_lib.name_scope(scope, "hinge_loss", (logits, labels, weights)) as scope:
        logits, labels = _float_pair(logits, labels)
        ones = array_ops.ones_like(labels)
        signs = math_ops.subtract(2 * labels, ones)
        losses = nn_ops.relu(math_ops.subtract(ones, math_ops.multiply(signs, logits)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    """1 - sum(labels * predictions) along `axis` (`dim` is its old name), for unit-
    normalized inputs (`tf.losses.cosine_distance`).

    Raises:
      ValueError: no axis, both axis and dim, labels or predictions None, shapes
        incompatible, bad weights."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    _not_none(labels=labels, predictions=predictions)
    with graph_lib.name_scope(scope, "cosine_distance_loss",
                              (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        products = math_ops.multiply(predictions, labels)
        losses = 1 - reduction_ops.reduce_sum(products, axis=(axis,), keepdims=True)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=_LOSSES):
    """Per batch entry, the mean over pairs of elements (i, j) of
    ((pred_i - pred_j) - (label_i - label_j))^2, weighted by `weights` (one per batch
    entry, shape [batch, 1, ...]) and summed (`tf.losses.mean_pairwise_squared_error`).

    Raises:
      ValueError: labels or predictions None, shapes incompatible, bad weights."""
    _not_none(labels=labels, predictions=predictions)
    with graph_lib.name_scope(scope, "mean_pairwise_squared_error",
                              (predictions, labels, weights)):
        weights = math_ops.cast(weights, dtypes.float32)
        predictions, labels = _float_pair(predictions, labels)
        diffs = math_ops.subtract(predictions, labels)
        check = _assert_broadcastable(weights, diffs)
        if check is not None:
            with graph_lib.control_dependencies([check]):
                diffs = array_ops.identity(diffs)
        axis = sequence_ops.range(1, array_ops.rank(diffs))
        sum_squares = reduction_ops.reduce_sum(unary_ops.square(diffs), axis=axis,
                                               keepdims=True)
        present = _num_present(diffs, weights, per_batch=True)
        term1 = 2.0 * math_ops.div_no_nan(sum_squares, math_ops.maximum(present - 1, 0),
                                          name="value")
        sum_diff = reduction_ops.reduce_sum(diffs, axis=axis, keepdims=True)
        term2 = 2.0 * math_ops.div_no_nan(
            unary_ops.square(sum_diff),
            math_ops.maximum(math_ops.multiply(present, present - 1), 0), name="value")
        loss = reduction_ops.reduce_sum(math_ops.multiply(term1 - term2, weights))
        mean_loss = comparison_ops.where(
            comparison_ops.greater(reduction_ops.reduce_sum(present), 0), loss,
            array_ops.zeros_like(loss), name="value")
        util.add_loss(mean_loss, loss_collection)
        return mean_loss


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=_LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sigmoid cross entropy of `logits` against labels in [0, 1], the labels smoothed
    toward 1/2 by `label_smoothing` (`tf.losses.sigmoid_cross_entropy`).

    Raises:
      ValueError: labels or logits None, shapes incompatible, bad weights."""
    _not_none(multi_class_labels=multi_class_labels, logits=logits)
    with graph_lib.name_scope(scope, "sigmoid_cross_entropy_loss",
                              (logits, multi_class_labels, weights)) as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(multi_class_labels, logits.dtype)
        logits.shape.assert_is_compatible_with(labels.shape)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                           name="logistic_loss")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=_LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross entropy of `logits` [batch, classes] against one-hot labels, smoothed
    as labels * (1 - s) + s / classes (`tf.losses.softmax_cross_entropy`). No gradient
    flows into the labels.

    Raises:
      ValueError: labels or logits None, shapes incompatible, bad weights."""
    _not_none(onehot_labels=onehot_labels, logits=logits)
    with graph_lib.name_scope(scope, "softmax_cross_entropy_loss",
                              (logits, onehot_labels, weights)) as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(onehot_labels, logits.dtype)
        logits.shape.assert_is_compatible_with(labels.shape)
        if label_smoothing > 0:
            classes = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / classes
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = nn_impl.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                              name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _remove_squeezable_dimensions(labels, logits, weights):
    """Drops a trailing size-1 dimension of `labels` (rank of logits) and of `weights`
    (one more than the labels' rank), as TF1 does for sparse labels."""
    labels, logits = convert_to_tensor(labels), convert_to_tensor(logits)
    l_rank, p_rank = labels.shape.ndims, logits.shape.ndims
    if l_rank is not None and p_rank is not None and p_rank == l_rank and \
            labels.shape.dims[-1].is_compatible_with(1):
        labels = array_ops.squeeze(labels, [-1])
        l_rank -= 1
    weights = convert_to_tensor(weights)
    w_rank = weights.shape.ndims
    if l_rank is not None and w_rank is not None and w_rank - l_rank == 1:
        weights = array_ops.squeeze(weights, [-1])
    return labels, logits, weights


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=_LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross entropy of `logits` [batch, ..., classes] against integer class ids
    `labels` [batch, ...] (`tf.losses.sparse_softmax_cross_entropy`).

    Raises:
      ValueError: labels or logits None, shapes incompatible, bad weights."""
    _not_none(labels=labels, logits=logits)
    with graph_lib.name_scope(scope, "sparse_softmax_cross_entropy_loss",
                              (logits, labels, weights)) as scope:
        labels, logits, weights = _remove_squeezable_dimensions(labels, logits, weights)
        losses = nn_impl.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                  logits=logits,
                                                                  name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)
