"""`tf.contrib.losses` (also `slim.losses`): TF1's deprecated loss functions, the
predecessors of `tf.losses`. Each adds its loss to the LOSSES collection like `tf.losses`
and reduces it the same way (the weighted sum over the elements of non-zero weight), but
takes its arguments in the old order: predictions or logits first, then labels
(`slim.losses.softmax_cross_entropy(logits, onehot_labels)`); `hinge_loss` returns the
unreduced per-element losses and adds nothing to a collection.
"""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.losses import losses_impl
from tensorflux.ops import array_ops, math_ops, nn_ops

__all__ = ["absolute_difference", "add_loss", "compute_weighted_loss", "cosine_distance",
           "get_losses", "get_regularization_losses", "get_total_loss", "hinge_loss",
           "log_loss", "mean_pairwise_squared_error", "mean_squared_error",
           "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy"]


def add_loss(loss, loss_collection=GraphKeys.LOSSES) -> None:
    """Adds `loss` to `loss_collection` (nothing when it is None)."""
    if loss_collection:
        graph_lib.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES) -> list:
    """The losses in `loss_collection` under `scope`."""
    return graph_lib.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None) -> list:
    """The REGULARIZATION_LOSSES under `scope`."""
    return graph_lib.get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_total_loss(add_regularization_losses=True, name="total_loss"):
    """The sum of the LOSSES (and the REGULARIZATION_LOSSES)."""
    losses = get_losses()
    if add_regularization_losses:
        losses += get_regularization_losses()
    return math_ops.add_n(losses, name=name)


def compute_weighted_loss(losses, weights=1.0, scope=None):
    """The weighted mean of `losses` over the elements of non-zero weight, added to
    LOSSES."""
    return losses_impl.compute_weighted_loss(losses, weights, scope=scope)


def absolute_difference(predictions, labels=None, weights=1.0, scope=None):
    return losses_impl.absolute_difference(labels, predictions, weights, scope=scope)


def cosine_distance(predictions, labels=None, axis=None, weights=1.0, scope=None, dim=None):
    return losses_impl.cosine_distance(labels, predictions, axis=axis, weights=weights,
                                       scope=scope, dim=dim)


def log_loss(predictions, labels=None, weights=1.0, epsilon=1e-7, scope=None):
    return losses_impl.log_loss(labels, predictions, weights, epsilon=epsilon, scope=scope)


def mean_pairwise_squared_error(predictions, labels=None, weights=1.0, scope=None):
    return losses_impl.mean_pairwise_squared_error(labels, predictions, weights, scope=scope)


def mean_squared_error(predictions, labels=None, weights=1.0, scope=None):
    return losses_impl.mean_squared_error(labels, predictions, weights, scope=scope)


def sigmoid_cross_entropy(logits, multi_class_labels, weights=1.0, label_smoothing=0,
                          scope=None):
    return losses_impl.sigmoid_cross_entropy(multi_class_labels, logits, weights,
                                             label_smoothing=label_smoothing, scope=scope)


def softmax_cross_entropy(logits, onehot_labels, weights=1.0, label_smoothing=0, scope=None):
    return losses_impl.softmax_cross_entropy(onehot_labels, logits, weights,
                                             label_smoothing=label_smoothing, scope=scope)


def sparse_softmax_cross_entropy(logits, labels, weights=1.0, scope=None):
    return losses_impl.sparse_softmax_cross_entropy(labels, logits, weights, scope=scope)


def hinge_loss(logits, labels=None, scope=None):
    """The per-element hinge loss `max(0, 1 - (2 * labels - 1) * logits)` for 0/1
    `labels` (not reduced, not added to LOSSES)."""
    with graph_lib.name_scope(scope, "hinge_loss", [logits, labels]):
        logits.get_shape().assert_is_compatible_with(labels.get_shape())
        labels = math_ops.cast(labels, dtypes.float32)
        all_ones = array_ops.ones_like(labels)
        labels = math_ops.subtract(2 * labels, all_ones)
        return nn_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(labels, logits)))

