"""More `tf.nn` names that TF1 builds from existing ops: pooling aliases (`avg_pool2d`,
`max_pool2d`, and `*_pool_v2` choosing the 1-D, 2-D or 3-D pool by rank), activations
(`crelu`, `swish`/`silu`, `softsign`, `relu_layer`), statistics (`sufficient_statistics`,
`normalize_moments`, `weighted_moments`), losses (`log_poisson_loss`,
`compute_average_loss`, `scale_regularization_loss`), `batch_norm_with_global_normalization`,
`approx_max_k` / `approx_min_k`, `safe_embedding_lookup_sparse`, and the block
rearrangements of tensorflux/ops/array_ext_ops.py."""

from __future__ import annotations

import math

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.math.math_impl import (  # noqa: F401 - tf.nn names
    approx_max_k,
    approx_min_k,
    softsign,
    zero_fraction,
)
from tensorflux.nn.conv_impl import avg_pool1d, max_pool1d
from tensorflux.nn.embedding_ops import embedding_lookup_sparse
from tensorflux.nn.nn_impl import batch_normalization, xw_plus_b
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.array_ext_ops import (  # noqa: F401 - tf.nn names
    batch_to_space_nd,
    depth_to_space,
    space_to_batch,
    space_to_batch_nd,
    space_to_depth,
)
from tensorflux.ops.comparison_ops import greater, greater_equal, logical_and, where_v2
from tensorflux.ops.conv3d_ops import avg_pool3d, max_pool3d
from tensorflux.ops.math_ops import add, cast, multiply, subtract, truediv
from tensorflux.ops.nn_ops import relu
from tensorflux.ops.pooling_ops import avg_pool, max_pool
from tensorflux.ops.unary_ops import _const_like, exp, log, negative, sigmoid, square
from tensorflux.sparse import sparse_extra

__all__ = ["avg_pool2d", "max_pool2d", "avg_pool_v2",
           "max_pool_v2", "crelu", "swish", "silu", "softsign", "relu_layer",
           "sufficient_statistics", "normalize_moments", "weighted_moments",
           "log_poisson_loss", "compute_average_loss", "scale_regularization_loss",
           "batch_norm_with_global_normalization", "approx_max_k", "approx_min_k",
           "zero_fraction", "space_to_batch", "space_to_depth", "depth_to_space",
           "safe_embedding_lookup_sparse"]

avg_pool2d = avg_pool
max_pool2d = max_pool


def _expand(v, n):
    return [1] + [v] * n + [1] if isinstance(v, int) else list(v)


def _pool_v2(pools, input, ksize, strides, padding, data_format, name):  # noqa: A002
    """The 1-D, 2-D or 3-D pool of `pools` that the input's rank (3, 4 or 5) asks for."""
    rank = convert_to_tensor(input).shape.ndims
    if rank == 3:
        return pools[0](input, ksize, strides, padding, data_format or "NWC", name=name)
    if rank in (4, 5):
        n = rank - 2
        return pools[n - 1](input, _expand(ksize, n), _expand(strides, n), padding,
                            data_format=data_format or ("NHWC" if n == 2 else "NDHWC"),
                            name=name)
    raise ValueError(f"Input tensor must be of rank 3, 4 or 5, got {rank}")


def avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Average pooling of rank-3, 4 or 5 input (`tf.nn.avg_pool_v2`)."""
    return _pool_v2((avg_pool1d, avg_pool, avg_pool3d), input, ksize, strides, padding,
                    data_format, name)


def max_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Max pooling of rank-3, 4 or 5 input (`tf.nn.max_pool_v2`)."""
    return _pool_v2((max_pool1d, max_pool, max_pool3d), input, ksize, strides, padding,
                    data_format, name)


def crelu(features, name=None, axis=-1):
    """concat([relu(x), relu(-x)], axis) (`tf.nn.crelu`)."""
    with graph_lib.name_scope(name, "CRelu", [features]):
        x = convert_to_tensor(features, name="features")
        return joining_ops.concat([relu(x), relu(negative(x))], axis)


def swish(features, beta=1.0, name=None):
    """features * sigmoid(beta * features) (`tf.nn.swish`, `tf.nn.silu`)."""
    with graph_lib.name_scope(name, "swish", [features]):
        x = convert_to_tensor(features, name="features")
        scaled = x if beta == 1.0 else multiply(x, _const_like(beta, x))
        return multiply(x, sigmoid(scaled))


silu = swish


def relu_layer(x, weights, biases, name=None):
    """relu(x @ weights + biases) (`tf.nn.relu_layer`)."""
    with graph_lib.name_scope(name, "relu_layer", [x, weights, biases]):
        return relu(xw_plus_b(x, weights, biases))


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """(count, sum of x - shift, sum of squares of x - shift, shift) over `axes`
    (`tf.nn.sufficient_statistics`)."""
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    with graph_lib.name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        dims = x.shape.as_list() if x.shape.ndims is not None else None
        if dims is not None and all(dims[a] is not None for a in axes):
            count = _const_like(math.prod(dims[a] for a in axes), x)
        else:
            sizes = array_ops.shape(x, out_type=dtypes.int32)
            count = cast(reduction_ops.reduce_prod(joining_ops.stack([sizes[a] for a in axes])),
                         x.dtype)
        centered = x if shift is None else subtract(x, shift)
        m_ss = reduction_ops.reduce_sum(centered, axes, keepdims=keepdims)
        v_ss = reduction_ops.reduce_sum(square(centered), axes, keepdims=keepdims)
        return count, m_ss, v_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """(mean, variance) from sufficient statistics (`tf.nn.normalize_moments`)."""
    with graph_lib.name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        shifted_mean = truediv(mean_ss, counts)
        mean = shifted_mean if shift is None else add(shifted_mean, shift)
        variance = subtract(truediv(variance_ss, counts), square(shifted_mean))
        return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """The frequency-weighted mean and variance of x over `axes`
    (`tf.nn.weighted_moments`)."""
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    with graph_lib.name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = convert_to_tensor(x, name="x")
        w = cast(convert_to_tensor(frequency_weights, name="frequency_weights"), x.dtype)
        total = reduction_ops.reduce_sum(add(w, array_ops.zeros_like(x)), axes,
                                         keepdims=True)
        mean = truediv(reduction_ops.reduce_sum(multiply(w, x), axes, keepdims=True), total)
        var = truediv(reduction_ops.reduce_sum(multiply(w, square(subtract(x, mean))), axes,
                                               keepdims=True), total)
        if not keepdims:
            mean = array_ops.squeeze(mean, list(axes))
            var = array_ops.squeeze(var, list(axes))
        return mean, var


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - log_input * targets, plus Stirling's term for targets > 1 with
    `compute_full_loss` (`tf.nn.log_poisson_loss`)."""
    with graph_lib.name_scope(name, "log_poisson_loss", [targets, log_input]):
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, dtype=log_input.dtype, name="targets")
        loss = subtract(exp(log_input), multiply(log_input, targets))
        if not compute_full_loss:
            return loss
        safe = where_v2(greater(targets, _const_like(1, targets)), targets,
                        array_ops.ones_like(targets))
        stirling = add(subtract(multiply(safe, log(safe)), safe),
                       multiply(_const_like(0.5, safe),
                                log(multiply(_const_like(2 * math.pi, safe), safe))))
        stirling = where_v2(greater(targets, _const_like(1, targets)), stirling,
                            array_ops.zeros_like(targets))
        return add(loss, stirling)


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """The per-example losses (times sample_weight) summed and divided by the global batch
    size (the batch size of one replica here) (`tf.nn.compute_average_loss`)."""
    with graph_lib.name_scope(None, "compute_average_loss", [per_example_loss]):
        loss = convert_to_tensor(per_example_loss, name="per_example_loss")
        if sample_weight is not None:
            loss = multiply(loss, cast(sample_weight, loss.dtype))
        if global_batch_size is None:
            global_batch_size = array_ops.shape(loss)[0]
        return truediv(reduction_ops.reduce_sum(loss), cast(global_batch_size, loss.dtype))


def scale_regularization_loss(regularization_loss):
    """The summed regularization loss divided by the number of replicas (one here)
    (`tf.nn.scale_regularization_loss`)."""
    return reduction_ops.reduce_sum(convert_to_tensor(regularization_loss))


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                         variance_epsilon=None,
                                         scale_after_normalization=None, name=None,
                                         input=None, mean=None, variance=None):  # noqa: A002
    """batch_normalization with `gamma` used only when `scale_after_normalization`
    (`tf.nn.batch_norm_with_global_normalization`)."""
    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name=name or
                               "batchnorm_with_global_normalization")


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, name=None,
                                 partition_strategy="div", max_norm=None):
    """embedding_lookup_sparse made safe (`tf.nn.safe_embedding_lookup_sparse`): ids < 0
    (and, unless combiner is "sum", weights <= 0) are dropped, empty rows get
    `default_id`'s embedding (zeros when it is None), and ids of rank > 2 are looked up
    per innermost row, the result shaped [*sparse_ids.dense_shape[:-1], dim]."""
    with graph_lib.name_scope(name, "embedding_lookup", [sparse_ids, sparse_weights]):
        original_shape = sparse_ids.dense_shape
        leading = original_shape[:-1]
        ids = sparse_extra.sparse_reshape(sparse_ids, joining_ops.stack(
            [reduction_ops.reduce_prod(leading), original_shape[-1]]))
        weights = None if sparse_weights is None else type(sparse_ids)(
            ids.indices, sparse_weights.values, ids.dense_shape)
        keep = greater_equal(ids.values, array_ops.zeros_like(ids.values))
        if weights is not None and combiner != "sum":
            keep = logical_and(keep, greater(weights.values,
                                             array_ops.zeros_like(weights.values)))
        ids = sparse_extra.sparse_retain(ids, keep)
        if weights is not None:
            weights = sparse_extra.sparse_retain(weights, keep)
        ids, empty = sparse_extra.sparse_fill_empty_rows(ids, default_id or 0)
        if weights is not None:
            weights, _ = sparse_extra.sparse_fill_empty_rows(weights, 1.0)
        result = embedding_lookup_sparse(embedding_weights, ids, weights,
                                         partition_strategy=partition_strategy,
                                         combiner=combiner, max_norm=max_norm)
        if default_id is None:
            result = where_v2(array_ops.expand_dims(empty, 1), array_ops.zeros_like(result),
                              result)
        return array_ops.reshape(result, joining_ops.concat(
            [cast(leading, dtypes.int32), array_ops.shape(result)[1:]], 0))
