"""`tf.contrib.nn`: TF 1.15's extra neural-network functions: `alpha_dropout` (SELU's
dropout), `scaled_softplus`, `sampled_sparse_softmax_loss`, the argument-flipped
cross-entropy functions of TF 1.0, and `conv1d_transpose` (tf.nn's)."""

from __future__ import annotations

import numbers

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import nn_impl
from tensorflux.nn.conv_impl import conv1d_transpose  # noqa: F401
from tensorflux.ops import array_ops, comparison_ops, math_ops, nn_ops, random_ops

__all__ = ["alpha_dropout", "conv1d_transpose",
           "deprecated_flipped_sigmoid_cross_entropy_with_logits",
           "deprecated_flipped_softmax_cross_entropy_with_logits",
           "deprecated_flipped_sparse_softmax_cross_entropy_with_logits",
           "sampled_sparse_softmax_loss", "scaled_softplus"]

_SELU_ALPHA = -1.7580993408473766  # -lambda * alpha of SELU


def alpha_dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    """Dropout that keeps SELU's mean and variance (Klambauer et al. 2017): dropped units
    are set to SELU's negative saturation, then all are scaled and shifted.

    Raises:
      ValueError: `keep_prob` a number outside (0, 1], or not a scalar.
    """
    with graph_lib.name_scope(name, "alpha_dropout", [x]):
        x = convert_to_tensor(x, name="x")
        if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1.0:
            raise ValueError(f"keep_prob must be a scalar tensor or a float in the range "
                             f"(0, 1], got {keep_prob:g}")
        keep_prob = convert_to_tensor(keep_prob, dtype=x.dtype, name="keep_prob")
        keep_prob.shape.assert_is_compatible_with([])
        if constant_value(keep_prob) == 1:
            return x
        noise_shape = noise_shape if noise_shape is not None else array_ops.shape(x)
        random = random_ops.random_uniform(noise_shape, seed=seed, dtype=x.dtype)
        kept = math_ops.cast(comparison_ops.greater_equal(random, 1 - keep_prob), x.dtype)
        x = x * kept + _SELU_ALPHA * (1 - kept)
        a = (keep_prob + keep_prob * (1 - keep_prob) * _SELU_ALPHA ** 2) ** -0.5
        b = -a * _SELU_ALPHA * (1 - keep_prob)
        return a * x + b


def scaled_softplus(x, alpha, clip=None, name=None):
    """alpha * softplus(x / alpha), at most `clip` when given."""
    with graph_lib.name_scope(name, "scaled_softplus", [x, alpha]):
        x = convert_to_tensor(x, name="x")
        alpha = convert_to_tensor(alpha, dtype=x.dtype, name="alpha")
        y = alpha * nn_ops.softplus(x / alpha)
        if clip is not None:
            y = math_ops.minimum(y, convert_to_tensor(clip, dtype=x.dtype, name="clip"))
        return y


def sampled_sparse_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                                sampled_values=None, remove_accidental_hits=True,
                                partition_strategy="mod",
                                name="sampled_sparse_softmax_loss"):
    """`sampled_softmax_loss` with one true class per row given as an index ([batch, 1]):
    the softmax cross entropy of the true class against `num_sampled` sampled ones."""
    logits, _ = nn_impl._compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs,
        num_sampled=num_sampled, num_classes=num_classes, num_true=1,
        sampled_values=sampled_values, subtract_log_q=True,
        remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name)
    true = array_ops.zeros(array_ops.shape(logits)[:1], dtype=dtypes.int64)
    return nn_impl.sparse_softmax_cross_entropy_with_logits(labels=true, logits=logits)


def deprecated_flipped_softmax_cross_entropy_with_logits(logits, labels, dim=-1, name=None):
    """TF 1.0's argument order of `softmax_cross_entropy_with_logits`."""
    return nn_impl.softmax_cross_entropy_with_logits(labels=labels, logits=logits, dim=dim,
                                                     name=name)


def deprecated_flipped_sparse_softmax_cross_entropy_with_logits(logits, labels, name=None):
    """TF 1.0's argument order of `sparse_softmax_cross_entropy_with_logits`."""
    return nn_impl.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                            name=name)


def deprecated_flipped_sigmoid_cross_entropy_with_logits(logits=None, targets=None,
                                                         name=None):
    """TF 1.0's `sigmoid_cross_entropy_with_logits(logits, targets)`."""
    return nn_impl.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits,
                                                     name=name)
