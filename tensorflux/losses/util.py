"""The loss collections: `tf.losses.add_loss`, `get_losses`, `get_regularization_loss(es)`
and `get_total_loss` (TF1's losses/util.py).

Every `tf.losses.*` function adds its result to `tf.GraphKeys.LOSSES` (or the
`loss_collection` it is given); layers and `tf.get_variable(regularizer=...)` add their
penalties to `tf.GraphKeys.REGULARIZATION_LOSSES`.
"""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import constant_op, math_ops

__all__ = ["add_loss", "get_losses", "get_regularization_loss", "get_regularization_losses",
           "get_total_loss"]


def add_loss(loss, loss_collection=graph_lib.GraphKeys.LOSSES) -> None:
    """Adds `loss` to the collection `loss_collection` (nothing when it is None)."""
    if loss_collection:
        graph_lib.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=graph_lib.GraphKeys.LOSSES) -> list:
    """The losses in `loss_collection` whose names match `scope`."""
    return graph_lib.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None) -> list:
    """The tensors in `tf.GraphKeys.REGULARIZATION_LOSSES` whose names match `scope`."""
    return graph_lib.get_collection(graph_lib.GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name: str = "total_regularization_loss"):
    """The sum of the regularization losses (a constant 0.0 when there are none)."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant_op.constant(0.0, dtype=dtypes.float32)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope=None):
    """The sum of the losses in `tf.GraphKeys.LOSSES` and, when asked, the regularization
    losses.

    Raises:
      ValueError: no losses at all (as `tf.add_n` of an empty list).
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)
