"""Weight regularizers for `tf.layers` and `tf.get_variable(regularizer=...)`: TF1's
`tf.contrib.layers.l1_regularizer`, `l2_regularizer`, `l1_l2_regularizer`,
`sum_regularizer` and `apply_regularization`. A regularizer is any callable taking a
weight tensor and returning a scalar loss (or None for no loss); these build the usual
ones. A scale of 0 gives a regularizer that returns None (no loss is recorded)."""

from __future__ import annotations

import numbers

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import constant_op, math_ops, nn_ops, reduction_ops, unary_ops

__all__ = ["l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer",
           "apply_regularization"]


def _checked_scale(scale, what="scale"):
    """Raises ValueError for an integer or negative scale; True when the scale is 0."""
    if isinstance(scale, numbers.Integral) and not isinstance(scale, bool):
        raise ValueError(f"{what} cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        return scale == 0.0
    return False


def _scaled(kind, scale, scope, penalty):
    if _checked_scale(scale):
        return lambda _: None

    def regularizer(weights, name=None):
        with graph_lib.name_scope(scope, kind, [weights]) as name:
            weights = convert_to_tensor(weights)
            my_scale = convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, penalty(weights), name=name)

    return regularizer


def l1_regularizer(scale, scope=None):
    """A regularizer returning scale * sum(|w|).

    Raises:
      ValueError: an integer or negative scale."""
    return _scaled("l1_regularizer", scale, scope,
                   lambda w: reduction_ops.reduce_sum(unary_ops.abs(w)))


def l2_regularizer(scale, scope=None):
    """A regularizer returning scale * sum(w^2) / 2 (`tf.nn.l2_loss`).

    Raises:
      ValueError: an integer or negative scale."""
    return _scaled("l2_regularizer", scale, scope, nn_ops.l2_loss)


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of an L1 and an L2 regularizer (either dropped when its scale is 0).

    Raises:
      ValueError: an integer or negative scale."""
    l1_off = _checked_scale(scale_l1, "scale_l1")
    l2_off = _checked_scale(scale_l2, "scale_l2")
    scope = scope or "l1_l2_regularizer"
    if l1_off:
        return l2_regularizer(scale_l2, scope)
    if l2_off:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def sum_regularizer(regularizer_list, scope=None):
    """A regularizer returning the sum of the given regularizers' losses (None when none
    gives one); None when the list has no regularizer."""
    regularizers = [r for r in regularizer_list if r is not None]
    if not regularizers:
        return None

    def regularizer(weights):
        with graph_lib.name_scope(scope, "sum_regularizer", [weights]) as name:
            losses = [t for t in (r(weights) for r in regularizers) if t is not None]
            return math_ops.add_n(losses, name=name) if losses else None

    return regularizer


def apply_regularization(regularizer, weights_list=None):
    """The sum of `regularizer` over `weights_list` (default: the `tf.GraphKeys.WEIGHTS`
    collection), also added to `tf.GraphKeys.REGULARIZATION_LOSSES`.

    Raises:
      ValueError: no weights, or a regularizer that returns a non-scalar."""
    if not weights_list:
        weights_list = graph_lib.get_collection(graph_lib.GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with graph_lib.name_scope("get_regularization_penalty", values=weights_list) as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else constant_op.constant(0.0, dtypes.float32)
                     for p in penalties]
        for p in penalties:
            if p.shape.ndims != 0:
                raise ValueError("regularizer must return a scalar Tensor instead of a Tensor "
                                 f"with rank {p.shape.ndims}.")
        total = math_ops.add_n(penalties, name=scope)
        graph_lib.add_to_collection(graph_lib.GraphKeys.REGULARIZATION_LOSSES, total)
        return total
