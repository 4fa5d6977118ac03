"""`tf.nn` functions built only from other ops (DESIGN §1: no privileged code paths):
the cross-entropy wrappers, dropout, l2_normalize, moments, batch_normalization, xw_plus_b,
and the sampled losses (nce_loss, sampled_softmax_loss) over the candidate samplers.
"""

from __future__ import annotations

import numbers

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import embedding_ops
from tensorflux.ops import (
    array_ops,
    candidate_sampling_ops,
    comparison_ops,
    constant_op,
    joining_ops,
    math_ops,
    matrix_ops,
    nn_ops,
    random_ops,
    reduction_ops,
    sparse_ops,
    unary_ops,
)
from tensorflux.variables.partitioned_variables import PartitionedVariable

# The TF1 public names of this module (tf.nn.*).
__all__ = ["softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
           "weighted_cross_entropy_with_logits", "dropout", "l2_normalize", "moments",
           "batch_normalization", "xw_plus_b", "nce_loss", "sampled_softmax_loss"]


# ---- softmax cross entropy ---------------------------------------------------------------

def _ensure_xent_args(name, sentinel, labels, logits):
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., "
                         "...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _flatten_outer_dims(t):
    """`t` as a matrix [product of leading dims, last dim]."""
    shape = t.shape
    if shape.ndims == 2:
        return t
    if shape.ndims is not None and shape.is_fully_defined():
        dims = shape.as_list()
        return array_ops.reshape(t, [int(np.prod(dims[:-1], dtype=np.int64)), dims[-1]])
    last = array_ops.shape(t)[-1:]
    out = array_ops.reshape(t, joining_ops.concat([[-1], last], 0))
    if shape.ndims is not None and shape.as_list()[-1] is not None:
        out.set_shape([None, shape.as_list()[-1]])
    return out


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """Softmax cross entropy between `logits` and a probability distribution `labels`
    along `axis` (`tf.nn.softmax_cross_entropy_with_logits_v2`). Gradients flow into both.

    half and bfloat16 logits are computed in float32 and the loss cast back.

    Returns:
      A tensor of the shape of `logits` without `axis`.
    """
    axis = nn_ops._axis_arg(axis, dim)
    with graph_lib.name_scope(name, "softmax_cross_entropy_with_logits",
                              [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        low = logits.dtype in (dtypes.float16, dtypes.bfloat16)
        precise = math_ops.cast(logits, dtypes.float32) if low else logits
        if labels.dtype != precise.dtype:
            labels = math_ops.cast(labels, precise.dtype)
        shape = logits.shape
        ndims = shape.ndims
        if axis != -1 and not (ndims is not None and axis % max(ndims, 1) == ndims - 1):
            if ndims is None:
                raise ValueError("softmax_cross_entropy_with_logits along an axis other than "
                                 "the last needs logits of known rank")
            perm = [i for i in range(ndims) if i != axis % ndims] + [axis % ndims]
            precise = array_ops.transpose(precise, perm)
            labels = array_ops.transpose(labels, perm)
        if ndims == 2:  # labels of another rank are flattened too, as TF does
            cost, _ = apply_op("SoftmaxCrossEntropyWithLogits", features=precise,
                               labels=_flatten_outer_dims(labels), name=scope)
        else:
            outer = _outer_shape(precise)
            cost, _ = apply_op("SoftmaxCrossEntropyWithLogits",
                               features=_flatten_outer_dims(precise),
                               labels=_flatten_outer_dims(labels), name=scope)
            cost = array_ops.reshape(cost, outer)
        if ndims is not None:
            dims = shape.as_list()
            del dims[axis]
            cost.set_shape(dims)
        return math_ops.cast(cost, logits.dtype) if low else cost


def _outer_shape(t):
    """All dims of `t` but the last, as a Python list when static else a tensor."""
    shape = t.shape
    if shape.ndims is not None and shape.is_fully_defined():
        return shape.as_list()[:-1]
    return array_ops.shape(t)[:-1]


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """TF1's `tf.nn.softmax_cross_entropy_with_logits`: like `_v2`, but no gradient flows
    into `labels`. Arguments must be named.

    Raises:
      ValueError: positional arguments, or `labels` or `logits` missing.
    """
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    dim = nn_ops._axis_arg(axis, None if dim == -1 else dim)
    with graph_lib.name_scope(name, "softmax_cross_entropy_with_logits_sg",
                              [logits, labels]) as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=dim,
                                                name=scope)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Softmax cross entropy of `logits` against integer class indices `labels`
    (`tf.nn.sparse_softmax_cross_entropy_with_logits`). Arguments must be named.

    Args:
      labels: int32 or int64 indices in [0, num_classes), of the shape of `logits` without
        its last dimension. An index out of range is an InvalidArgumentError at run time.
      logits: float logits [d_0, ..., d_{r-1}, num_classes].
      name: the name scope.

    Returns:
      The loss, of the shape and dtype of `labels` / `logits`.

    Raises:
      ValueError: positional arguments, a scalar `logits`, or shapes that do not agree.
    """
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with graph_lib.name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        precise = math_ops.cast(logits, dtypes.float32) if logits.dtype == dtypes.float16 \
            else logits
        lshape, xshape = labels.shape, logits.shape
        if xshape.ndims == 0:
            raise ValueError(f"`logits` cannot be a scalar. Received logits={logits}`")
        if xshape.ndims is not None and lshape.ndims is not None and \
                lshape.ndims != xshape.ndims - 1:
            raise ValueError(
                "`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: "
                f"labels.shape={lshape} of rank {lshape.ndims} and logits.shape={xshape} of "
                f"rank {xshape.ndims}")
        if lshape.is_fully_defined() and xshape.ndims is not None and \
                xshape[:-1].is_fully_defined() and lshape != xshape[:-1]:
            raise ValueError(
                "`labels.shape` must equal `logits.shape` except for the last dimension. "
                f"Received: labels.shape={lshape} and logits.shape={xshape}")
        if xshape.ndims == 2:
            cost, _ = apply_op("SparseSoftmaxCrossEntropyWithLogits", features=precise,
                               labels=labels)
        else:
            outer = lshape.as_list() if lshape.is_fully_defined() else array_ops.shape(labels)
            cost, _ = apply_op("SparseSoftmaxCrossEntropyWithLogits",
                               features=_flatten_outer_dims(precise),
                               labels=array_ops.reshape(labels, [-1]))
            cost = array_ops.reshape(cost, outer)
            cost.set_shape(lshape)
        return math_ops.cast(cost, dtypes.float16) if logits.dtype == dtypes.float16 else cost



# ---- dropout -----------------------------------------------------------------------------


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zeroes each element of `x` with probability `rate` and scales the rest by
    1 / (1 - rate) (`tf.nn.dropout`, TF1 signature; `keep_prob` is `1 - rate`).

    Args:
      x: a floating tensor.
      keep_prob: (deprecated) the probability of keeping each element.
      noise_shape: the shape of the keep/drop decisions, broadcast against `x`.
      seed: the op seed of the random uniform draw.
      name: the name scope (default "dropout").
      rate: the probability of dropping each element; a float in [0, 1) or a scalar tensor.

    Returns:
      A tensor of the shape and dtype of `x`; `x` itself when `rate` is 0 (keep_prob 1).

    Raises:
      ValueError: both or neither of `keep_prob` and `rate`, a rate outside [0, 1), or a
        non-floating `x`.
    """
    try:
        rate_from_keep_prob = 1.0 - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError("`keep_prob` must be a floating point number or Tensor. Received: "
                         f"keep_prob={keep_prob}") from None
    if rate is not None and rate_from_keep_prob is not None:
        raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
    rate = rate if rate is not None else rate_from_keep_prob
    if rate is None:
        raise ValueError(f"`rate` must be provided. Received: rate={rate}")
    with graph_lib.name_scope(name, "dropout", [x]):
        is_rate_number = isinstance(rate, numbers.Real)
        if is_rate_number and (rate < 0 or rate >= 1):
            raise ValueError("`rate` must be a scalar tensor or a float in the range [0, 1). "
                             f"Received: rate={rate}")
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError("`x.dtype` must be a floating point tensor as `x` will be "
                             f"scaled. Received: x_dtype={x.dtype!r}")
        if is_rate_number and rate == 0:
            return x
        if isinstance(rate, Tensor):
            value = common_shapes.constant_value(rate)
            if value is not None and value.size == 1 and float(value) == 0:
                return x  # TF1: "Do nothing if we know rate == 0"
            rate.shape.assert_is_compatible_with(tensor_shape.TensorShape([]))
            if rate.dtype != x.dtype:
                if not rate.dtype.is_floating:
                    raise ValueError("`x.dtype` must be compatible with `rate.dtype`. "
                                     f"Received: x.dtype={x.dtype!r} and "
                                     f"rate.dtype={rate.dtype!r}")
                rate = math_ops.cast(rate, x.dtype, name="rate")
            one = constant_op.constant(1, dtype=x.dtype)
            ret = math_ops.realdiv(x, math_ops.subtract(one, rate))
        elif is_rate_number:
            scale = constant_op.constant(1 / (1 - rate), dtype=x.dtype)
            ret = math_ops.multiply(x, scale)
        else:
            raise ValueError(f"`rate` must be a scalar or scalar tensor. Received: rate={rate}")
        random_tensor = _random_uniform(_noise_shape(x, noise_shape), seed, x.dtype)
        keep_mask = comparison_ops.greater_equal(random_tensor, rate)
        zero = constant_op.constant(0, dtype=x.dtype)
        ret = comparison_ops.where_v2(keep_mask, ret, zero)
        ret.set_shape(x.shape)
        return ret


def _random_uniform(shape, seed, dtype):
    return random_ops.random_uniform(shape, seed=seed, dtype=dtype)


def _noise_shape(x: Tensor, noise_shape):
    """TF's `_get_noise_shape`: `x`'s shape, or `noise_shape` with its unknown dims taken
    from `x`."""
    if noise_shape is None:
        if x.shape.is_fully_defined():  # TF's `shape(x)`, folded to a Const named Shape
            return constant_op.constant(x.shape.as_list(), dtype=dtypes.int32, name="Shape")
        return array_ops.shape(x)
    try:
        ns = tensor_shape.as_shape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    if x.shape.ndims is not None and ns.ndims == x.shape.ndims:
        dims = [n if n is not None else d for n, d in zip(ns.as_list(), x.shape.as_list(),
                                                           strict=True)]
        if all(d is not None for d in dims):
            return dims
    return noise_shape


# ---- logistic losses ---------------------------------------------------------------------


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """Elementwise logistic loss max(x, 0) - x * z + log(1 + exp(-|x|)) of logits x and
    labels z (`tf.nn.sigmoid_cross_entropy_with_logits`). Arguments must be named.

    Raises:
      ValueError: positional arguments, a missing argument, or shapes that differ.
    """
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with graph_lib.name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        try:
            labels.shape.merge_with(logits.shape)
        except ValueError:
            raise ValueError("`logits` and `labels` must have the same shape, received "
                             f"({logits.shape} vs {labels.shape}).") from None
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype)
        cond = comparison_ops.greater_equal(logits, zeros)
        relu_logits = comparison_ops.where(cond, logits, zeros)
        neg_abs_logits = comparison_ops.where(cond, unary_ops.negative(logits), logits)
        return math_ops.add(relu_logits - logits * labels,
                            unary_ops.log1p(unary_ops.exp(neg_abs_logits)), name=scope)


def weighted_cross_entropy_with_logits(targets=None, logits=None, pos_weight=None, name=None,
                                       labels=None):
    """Logistic loss with the positive term weighted by `pos_weight`
    (`tf.nn.weighted_cross_entropy_with_logits`)."""
    targets = labels if targets is None else targets
    with graph_lib.name_scope(name, "logistic_loss", [logits, targets]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        targets = convert_to_tensor(targets, name="targets")
        try:
            targets.shape.merge_with(logits.shape)
        except ValueError:
            raise ValueError("logits and targets must have the same shape "
                             f"({logits.shape} vs {targets.shape})") from None
        log_weight = 1 + (pos_weight - 1) * targets
        softplus_neg = unary_ops.log1p(unary_ops.exp(-unary_ops.abs(logits))) + \
            nn_ops.relu(-logits)
        return math_ops.add((1 - targets) * logits, log_weight * softplus_neg, name=scope)


# ---- normalization -----------------------------------------------------------------------


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon)) (`tf.nn.l2_normalize`)."""
    axis = nn_ops._axis_arg(axis, dim) if (axis is not None or dim is not None) else None
    with graph_lib.name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = reduction_ops.reduce_sum(unary_ops.square(x), axis, keepdims=True)
        inv_norm = unary_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, inv_norm, name=scope)


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """Mean and variance of `x` over `axes` (`tf.nn.moments`); half is computed in float32.

    Returns:
      (mean, variance), with `axes` kept as size 1 when `keepdims`.
    """
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    with graph_lib.name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x, name="x")
        y = math_ops.cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        mean = reduction_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduction_ops.reduce_mean(
            math_ops.squared_difference(y, array_ops.stop_gradient(mean)), axes,
            keepdims=True, name="variance")
        if not keepdims:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            return math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset (`tf.nn.batch_normalization`);
    `offset` and `scale` may be None."""
    with graph_lib.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x, name="x")
        inv = unary_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv = inv * scale
        shift = offset - mean * inv if offset is not None else -mean * inv
        return x * math_ops.cast(inv, x.dtype) + math_ops.cast(shift, x.dtype)


def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases (`tf.nn.xw_plus_b`)."""
    with graph_lib.name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        return nn_ops.bias_add(matrix_ops.matmul(x, weights), biases, name=scope)


# ---- sampled losses ----------------------------------------------------------------------


def _shard_list(params) -> list:
    if isinstance(params, PartitionedVariable):
        return list(params)
    return list(params) if isinstance(params, (list, tuple)) else [params]


def _split_rows(all_rows: Tensor, n_true) -> tuple[Tensor, Tensor]:
    """The first `n_true` rows (entries) of `all_rows` and the rest, as one SplitV (TF
    slices twice: its gradient is two Pads and their sum where this one's is a concat).
    `n_true` is an int when the labels' shape is known, else a scalar tensor."""
    sizes = [n_true, -1] if isinstance(n_true, int) else joining_ops.stack([n_true, -1])
    first, rest = joining_ops.split(all_rows, sizes, axis=0, num=2)
    return first, rest


def _lookup_rows(params, all_ids, partition_strategy: str, dtype) -> Tensor:
    rows = embedding_ops.embedding_lookup(params, all_ids, partition_strategy=partition_strategy)
    return rows if rows.dtype == dtype else math_ops.cast(rows, dtype)


def _true_logits(inputs: Tensor, true_w: Tensor, true_b: Tensor, num_true: int) -> Tensor:
    """[batch, num_true]: each example's input dotted with the rows of its true classes.
    (One true class: the rows as they are, without the [batch, 1, dim] views; the same
    products summed the same way.)"""
    if num_true == 1:
        dots = reduction_ops.reduce_sum(math_ops.multiply(inputs, true_w), axis=1,
                                        keepdims=True)
        return dots + array_ops.reshape(true_b, [-1, 1])
    dim = array_ops.shape(true_w)[1:2]
    per_example = array_ops.reshape(true_w, joining_ops.concat([[-1, num_true], dim], 0))
    dots = reduction_ops.reduce_sum(
        math_ops.multiply(array_ops.expand_dims(inputs, 1), per_example), axis=2)
    return dots + array_ops.reshape(true_b, [-1, num_true])


def _accidental_hits_mask(labels: Tensor, sampled: Tensor, sampled_logits: Tensor,
                          num_true: int) -> Tensor:
    """[batch, num_sampled]: the lowest float where a sampled class is one of the example's
    true classes, 0 elsewhere."""
    indices, ids, weights = candidate_sampling_ops.compute_accidental_hits(
        labels, sampled, num_true=num_true)
    positions = joining_ops.concat([array_ops.reshape(indices, [-1, 1]),
                                    array_ops.reshape(math_ops.cast(ids, dtypes.int32),
                                                      [-1, 1])], 1, name="sparse_indices")
    return sparse_ops.sparse_to_dense(positions, array_ops.shape(sampled_logits),
                                      math_ops.cast(weights, sampled_logits.dtype),
                                      default_value=0.0, validate_indices=False)


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                            num_true=1, sampled_values=None, subtract_log_q=True,
                            remove_accidental_hits=False, partition_strategy="mod", name=None,
                            seed=None):
    """The logits of the true and the sampled classes and their target probabilities: the
    part `sampled_softmax_loss` and `nce_loss` share.

    Args: as `sampled_softmax_loss`; `subtract_log_q` subtracts the log of each class's
      expected count from its logit.

    Returns:
      (logits, labels), both [batch_size, num_true + num_sampled]: true classes first, each
      with target 1 / num_true, then the sampled ones with target 0.
    """
    weights = _shard_list(weights)
    with graph_lib.name_scope(name, "compute_sampled_logits",
                              weights + [biases, inputs, labels]):
        inputs = convert_to_tensor(inputs, name="inputs")
        labels = convert_to_tensor(labels, name="labels")
        if labels.dtype != dtypes.int64:
            labels = math_ops.cast(labels, dtypes.int64)
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = candidate_sampling_ops.log_uniform_candidate_sampler(
                true_classes=labels, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=seed)
        sampled, true_count, sampled_count = (array_ops.stop_gradient(s)
                                              for s in sampled_values)
        sampled = math_ops.cast(sampled, dtypes.int64)
        all_ids = joining_ops.concat([labels_flat, sampled], 0)
        n_true = labels_flat.shape[0].value
        if n_true is None:
            n_true = array_ops.shape(labels_flat)[0]
        true_w, sampled_w = _split_rows(
            _lookup_rows(weights, all_ids, partition_strategy, inputs.dtype), n_true)
        true_b, sampled_b = _split_rows(
            _lookup_rows(biases, all_ids, partition_strategy, inputs.dtype), n_true)
        true_logits = _true_logits(inputs, true_w, true_b, num_true)
        sampled_logits = matrix_ops.matmul(inputs, sampled_w, transpose_b=True) + sampled_b
        if remove_accidental_hits:
            sampled_logits += _accidental_hits_mask(labels, sampled, sampled_logits, num_true)
        if subtract_log_q:
            true_logits -= unary_ops.log(math_ops.cast(true_count, true_logits.dtype))
            sampled_logits -= unary_ops.log(math_ops.cast(sampled_count, inputs.dtype))
        logits = joining_ops.concat([true_logits, sampled_logits], 1)
        targets = joining_ops.concat([array_ops.ones_like(true_logits) / num_true,
                                      array_ops.zeros_like(sampled_logits)], 1)
        return logits, targets


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation loss per example (`tf.nn.nce_loss`): a logistic loss
    telling each true class (target 1 / num_true) from `num_sampled` sampled ones (target
    0), logits corrected by the log of the classes' expected counts.

    Args:
      weights: [num_classes, dim] class embeddings, a list of shards of it or a
        PartitionedVariable.
      biases: [num_classes] class biases (or shards, split like `weights`).
      labels: int [batch_size, num_true] target classes.
      inputs: [batch_size, dim] activations.
      num_sampled: the number of classes sampled per batch.
      num_classes: the number of classes.
      num_true: target classes per example.
      sampled_values: a candidate sampler's (sampled_candidates, true_expected_count,
        sampled_expected_count); default: `log_uniform_candidate_sampler` with unique=True.
      remove_accidental_hits: give sampled classes that equal a target a logit of about
        -3.4e38, so they count for nothing.
      partition_strategy: "mod" or "div", how sharded `weights` and `biases` are split.
      name: a name scope.

    Returns:
      [batch_size] losses.
    """
    logits, targets = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs, num_sampled=num_sampled,
        num_classes=num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name)
    losses = sigmoid_cross_entropy_with_logits(labels=targets, logits=logits,
                                               name="sampled_losses")
    return reduction_ops.reduce_sum(losses, axis=1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                         num_true=1, sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """Softmax cross-entropy over the true classes and `num_sampled` sampled ones, per
    example (`tf.nn.sampled_softmax_loss`): a cheap estimate of the full softmax loss for
    training with many classes; logits are corrected by the log of the expected counts.

    Args: as `nce_loss` (`remove_accidental_hits` defaults to True here); `seed` is the
      sampler's op-level seed when `sampled_values` is None.

    Returns:
      [batch_size] losses.
    """
    logits, targets = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs, num_sampled=num_sampled,
        num_classes=num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name, seed=seed)
    targets = array_ops.stop_gradient(targets, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=targets, logits=logits)
