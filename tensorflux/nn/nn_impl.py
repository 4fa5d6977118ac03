"""`tf.nn` functions built only from other ops (DESIGN §1: no privileged code paths):
the cross-entropy wrappers, dropout, l2_normalize, moments, batch_normalization, xw_plus_b.
"""

from __future__ import annotations

import numbers

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    joining_ops,
    math_ops,
    matrix_ops,
    nn_ops,
    random_ops,
    reduction_ops,
    unary_ops,
)

# The TF1 public names of this module (tf.nn.*).
__all__ = ["softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
           "weighted_cross_entropy_with_logits", "dropout", "l2_normalize", "moments",
           "batch_normalization", "xw_plus_b"]


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
        if ndims == 2:
            cost, _ = apply_op("SoftmaxCrossEntropyWithLogits", features=precise,
                               labels=labels, name=scope)
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
        if x.shape.is_fully_defined():
            return x.shape.as_list()
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
