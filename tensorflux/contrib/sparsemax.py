"""`tf.contrib.sparsemax`: the sparsemax activation and its loss (Martins & Astudillo,
"From Softmax to Sparsemax", 2016), built from ops, so their gradients come from autodiff.

sparsemax(z) is the Euclidean projection of z onto the probability simplex: with z sorted
down, the support is the largest k with 1 + k z_(k) > z_(1) + ... + z_(k); the threshold
tau = (z_(1) + ... + z_(k) - 1) / k; the output max(z - tau, 0) (rows sum to 1, most
entries exactly 0). The logits are first centred on their row mean (the result is the
same; the sums stay small). The loss is the paper's eq. 18: for labels q (a distribution)
and p = sparsemax(z), -q.z + 1/2 sum_{j in S(z)} (z_j^2 - tau^2) + 1/2 |q|^2, written with
p: sum_j [p_j > 0] p_j (z_j - p_j / 2) + q_j (q_j / 2 - z_j) on the centred z."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
)

__all__ = ["sparsemax", "sparsemax_loss"]


def _centred(logits):
    return logits - reduction_ops.reduce_mean(logits, axis=1, keepdims=True)


def sparsemax(logits, name=None):
    """The sparsemax of each row of `logits` ([batch, classes], float): a probability
    vector with most entries 0.

    Raises:
      ValueError: `logits` is not a matrix.
    """
    with graph_lib.name_scope(name, "sparsemax", [logits]):
        logits = convert_to_tensor(logits, name="logits")
        logits.shape.with_rank(2)
        z = _centred(logits)
        classes = array_ops.shape(z)[1]
        z_sorted = gather_ops.top_k(z, k=classes).values
        z_cumsum = sequence_ops.cumsum(z_sorted, axis=1)
        k = math_ops.cast(sequence_ops.range(1, classes + 1), z.dtype)
        in_support = comparison_ops.greater(1.0 + k * z_sorted, z_cumsum)
        k_z = reduction_ops.reduce_sum(math_ops.cast(in_support, "int32"), axis=1)
        rows = sequence_ops.range(array_ops.shape(z)[0])
        tau_sum = gather_ops.gather_nd(z_cumsum, joining_ops.stack([rows, k_z - 1], axis=1))
        tau = (tau_sum - 1.0) / math_ops.cast(k_z, z.dtype)
        return math_ops.maximum(math_ops.cast(0, z.dtype), z - array_ops.expand_dims(tau, 1))


def sparsemax_loss(logits, sparsemax, labels, name=None):  # noqa: A002 - TF's argument name
    """The sparsemax loss of each row: `logits` and `sparsemax` (its sparsemax) against
    `labels` (a distribution per row); 0 where the sparsemax equals the labels.

    Raises:
      ValueError: the three are not matrices of one shape.
    """
    with graph_lib.name_scope(name, "sparsemax_loss", [logits, sparsemax, labels]):
        logits = convert_to_tensor(logits, name="logits")
        p = convert_to_tensor(sparsemax, name="sparsemax")
        q = convert_to_tensor(labels, name="labels")
        logits.shape.with_rank(2).assert_is_compatible_with(p.shape)
        p.shape.assert_is_compatible_with(q.shape)
        z = _centred(logits)
        support = math_ops.cast(comparison_ops.greater(p, 0), p.dtype)
        per_class = support * p * (z - 0.5 * p) + q * (0.5 * q - z)
        return reduction_ops.reduce_sum(per_class, axis=1)
