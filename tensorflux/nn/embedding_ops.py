"""Sharded embeddings (paper §4.2, Figure 3): `tf.nn.embedding_lookup` and
`tf.nn.embedding_lookup_sparse`, built only from graph ops.

An embedding matrix may be one tensor or variable, or a list of shards (or a
PartitionedVariable). With several shards the lookup is the paper's Figure 3:

    flat ids ──► partition id p(id) and row r(id) within the shard
             ──► DynamicPartition ids (and their positions) into one list per shard
             ──► Gather rows r from shard p (ResourceGather for variables), on its device
             ──► ParallelDynamicStitch the rows back into id order ──► reshape to ids + dims

"mod": p = id % n, r = id // n. "div": ids are split into n contiguous ranges, the first
`total % n` of them one id longer (as `fixed_size_partitioner` cuts a variable). The
gradient of the stitch gathers each shard's rows, and the gradient of each Gather is an
IndexedSlices of that shard alone, so optimizers update only the rows looked up.

Ids out of range: with several shards and `validate_indices` (the default), an Assert runs
before the gathers and fails the step with InvalidArgumentError naming the bad ids and
the shards they map to (TensorFlow names only the shard-local row). With one shard the
Gather's own error names the id.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import clip_ops
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    gather_ops,
    joining_ops,
    logging_ops,
    math_ops,
    reduction_ops,
    sequence_ops,
    sparse_ops,
    state_ops,
    unary_ops,
)
from tensorflux.variables.partitioned_variables import PartitionedVariable

# The tf.nn names of this module.
__all__ = ["embedding_lookup", "embedding_lookup_sparse"]


def _is_variable(p) -> bool:
    return getattr(p, "_is_resource_variable", False)


def _colocate(p):
    """Ops in the block go where shard `p` lives (its handle for a variable)."""
    g = graph_lib.get_default_graph()
    return g.colocate_with(p.handle if _is_variable(p) else p)


def _as_shard_list(params) -> list:
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)) and not params:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    if isinstance(params, PartitionedVariable):
        return list(params)
    if not isinstance(params, (list, tuple)):
        return [params]
    return list(params)


def _clip(params, ids, max_norm):
    """Rows of `params` (one per id) rescaled to L2 norm at most `max_norm`."""
    if max_norm is None:
        return params
    ids_rank = convert_to_tensor(ids).shape.ndims
    params_rank = convert_to_tensor(params).shape.ndims
    if ids_rank and params_rank:
        axes = list(range(ids_rank, params_rank))
    else:
        axes = sequence_ops.range(array_ops.rank(ids), array_ops.rank(params))
    return clip_ops.clip_by_norm(params, max_norm, axes=axes)


def _dim0(p, dtype):
    """Rows of shard `p` as a scalar of `dtype` (static when known)."""
    rows = tensor_shape.dimension_value(p.get_shape()[0]) if p.get_shape().ndims else None
    if rows is not None:
        return rows
    with _colocate(p):
        shape = state_ops.variable_shape(p.handle) if _is_variable(p) else array_ops.shape(p)
        return math_ops.cast(shape[0], dtype)


def _div_assignments(params, flat_ids):
    """(partition, row) of each id under "div": n contiguous ranges, the first
    `total % n` one id longer."""
    n = len(params)
    static = [tensor_shape.dimension_value(p.get_shape()[0]) if p.get_shape().ndims else None
              for p in params]
    if all(d is not None for d in static):
        total = constant_op.constant(np.asarray(sum(static),
                                                flat_ids.dtype.as_numpy_dtype))
    else:
        sizes = [_dim0(p, flat_ids.dtype) for p in params]
        total = reduction_ops.reduce_sum(joining_ops.stack(
            [convert_to_tensor(np.asarray(s, flat_ids.dtype.as_numpy_dtype))
             if isinstance(s, int) else s for s in sizes]))
    per = total // n
    extras = total % n
    assignments = math_ops.maximum(flat_ids // (per + 1), (flat_ids - extras) // per)
    new_ids = comparison_ops.where(assignments < extras, flat_ids % (per + 1),
                             (flat_ids - extras) % per)
    return assignments, new_ids


def _ids_check(params, flat_ids, assignments, new_ids, strategy: str, scope: str):
    """An Assert that every id maps to an existing row of its shard; its message names the
    offending ids, their shards and rows there."""
    n = len(params)
    dt = flat_ids.dtype
    with graph_lib.name_scope("check_ids"):
        sizes = [_dim0(p, dt) for p in params]
        if all(isinstance(s, int) for s in sizes):
            rows = constant_op.constant(np.asarray(sizes, dt.as_numpy_dtype), name="rows")
        else:
            rows = joining_ops.stack([convert_to_tensor(np.asarray(s, dt.as_numpy_dtype))
                                    if isinstance(s, int) else s for s in sizes])
        shard = math_ops.maximum(math_ops.minimum(assignments, n - 1), 0)
        valid = comparison_ops.logical_and(flat_ids >= 0,
                                     new_ids < gather_ops.gather(rows, shard))
        if strategy == "div":
            valid = comparison_ops.logical_and(valid, assignments < n)
        bad = array_ops.reshape(comparison_ops.where(comparison_ops.logical_not(valid)), [-1])
        described = ", ".join(str(s) if isinstance(s, int) else "?" for s in sizes)
        data = [f"{scope.rstrip('/')}: ids out of range:", gather_ops.gather(flat_ids, bad),
                "map to shards", gather_ops.gather(assignments, bad), "rows",
                gather_ops.gather(new_ids, bad),
                f"but the {n} shards have [{described}] rows (partition_strategy "
                f"'{strategy}')"]
        return logging_ops.Assert(reduction_ops.reduce_all(valid), data, summarize=5)


def _static_element_shape(params) -> tensor_shape.TensorShape:
    shape = params[0].get_shape()[1:]
    for p in params[1:]:
        shape = shape.merge_with(p.get_shape()[1:])
    return shape


def embedding_lookup(params, ids, partition_strategy: str = "mod", name=None,
                     validate_indices: bool = True, max_norm=None):
    """Rows of an embedding matrix, possibly sharded, for each id (`tf.nn.embedding_lookup`).

    Args:
      params: a tensor or variable, a list of them (shards with equal trailing
        dimensions), or a PartitionedVariable.
      ids: an int32/int64 tensor of ids, any shape.
      partition_strategy: "mod" (id % n picks the shard) or "div" (contiguous ranges);
        used when there are several shards.
      name: a name for the operation.
      validate_indices: with several shards, check at run time that every id names a row
        (an Assert whose message names the ids and shards); False skips the check (the
        shard Gathers still reject bad rows).
      max_norm: if given, each embedding is rescaled to L2 norm at most `max_norm`.

    Returns:
      A tensor of shape `ids.shape + params.shape[1:]` and the params' dtype.

    Raises:
      ValueError: no params, or an unknown partition strategy.
      InvalidArgumentError (at run time): an id out of range.
    """
    params = _as_shard_list(params)
    with graph_lib.name_scope(name, "embedding_lookup", params + [ids]) as scope:
        n = len(params)
        if not any(_is_variable(p) for p in params):
            params = [convert_to_tensor(p, name="params") for p in params]
        ids = convert_to_tensor(ids, name="ids")
        if n == 1:
            with _colocate(params[0]):
                result = _clip(gather_ops.gather(params[0], ids, name=scope), ids, max_norm)
            return array_ops.identity(result)
        return _sharded_lookup(params, ids, partition_strategy, scope, validate_indices,
                               max_norm)


def _sharded_lookup(params, ids, strategy, scope, validate_indices, max_norm):
    n = len(params)
    flat_ids = array_ops.reshape(ids, [-1])
    original_indices = sequence_ops.range(array_ops.size(flat_ids))
    if strategy == "mod":
        assignments = flat_ids % n
        new_ids = flat_ids // n
    elif strategy == "div":
        assignments, new_ids = _div_assignments(params, flat_ids)
    else:
        raise ValueError(f"Unrecognized partition strategy: {strategy}.Must be one of either "
                         "`mod` or `div`.")
    assignments = math_ops.cast(assignments, dtypes.int32)
    g = graph_lib.get_default_graph()
    checks = [_ids_check(params, flat_ids, assignments, new_ids, strategy, scope)] \
        if validate_indices else []
    with g.control_dependencies(checks):
        gather_ids = gather_ops.dynamic_partition(new_ids, assignments, n)
        pindices = gather_ops.dynamic_partition(original_indices, assignments, n)
    rows = []
    for p in range(n):
        with g.device(None), _colocate(params[p]), g.control_dependencies(checks):
            rows.append(gather_ops.gather(params[p], gather_ids[p]))
    ret = gather_ops.parallel_dynamic_stitch(pindices, rows, name=scope)
    element_shape = _static_element_shape(params)
    if element_shape.is_fully_defined():
        element_dims = np.asarray(element_shape.as_list(), np.int32)
    else:
        with _colocate(params[0]):
            p0 = params[0]
            shape = state_ops.variable_shape(p0.handle) if _is_variable(p0) else \
                array_ops.shape(p0)
            element_dims = shape[1:]
    ret = array_ops.reshape(ret, joining_ops.concat([array_ops.shape(ids), element_dims], 0))
    ret.set_shape(ids.shape.concatenate(element_shape))
    return _clip(ret, ids, max_norm)


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy: str = "mod",
                            name=None, combiner=None, max_norm=None):
    """Combined embeddings of each row of a SparseTensor of ids
    (`tf.nn.embedding_lookup_sparse`).

    Row i of the result combines the embeddings of the ids in row i of `sp_ids`:
    "sum" sums them (times their weights), "mean" divides that by the sum of the weights,
    "sqrtn" by the square root of the sum of squared weights. Without `sp_weights` every
    weight is 1 and the sums are SparseSegmentSum/Mean/SqrtN ops.

    Args:
      params: as for `embedding_lookup` (one tensor, a list of shards, a
        PartitionedVariable).
      sp_ids: a SparseTensor of int64 ids, shape [batch, ...], indices in row-major order.
      sp_weights: a SparseTensor of weights with the same indices, or None.
      partition_strategy: "mod" or "div", as for `embedding_lookup`.
      name: a name for the operation.
      combiner: "mean" (default), "sqrtn" or "sum".
      max_norm: if given, embeddings are clipped to this L2 norm before combining.

    Returns:
      A dense tensor [rows, embedding dims], rows = the last non-empty row of `sp_ids` + 1;
      rows without ids are zeros.

    Raises:
      ValueError: an unknown combiner.
      TypeError: `sp_ids` (or `sp_weights`) is not a SparseTensor.
    """
    if combiner is None:
        combiner = "mean"
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    params = _as_shard_list(params)
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    if sp_weights is not None:
        if not isinstance(sp_weights, SparseTensor):
            raise TypeError(f"sp_weights must be either None or SparseTensor,got "
                            f"{type(sp_weights)}")
        sp_ids.values.shape.assert_is_compatible_with(sp_weights.values.shape)
        sp_ids.indices.shape.assert_is_compatible_with(sp_weights.indices.shape)
        sp_ids.dense_shape.shape.assert_is_compatible_with(sp_weights.dense_shape.shape)
    with graph_lib.name_scope(name, "embedding_lookup_sparse", [sp_ids.values]) as scope:
        segment_ids = math_ops.cast(sp_ids.indices[:, 0], dtypes.int32)
        ids, idx = gather_ops.unique(sp_ids.values)
        embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                      max_norm=max_norm)
        if sp_weights is None:
            reduce = {"sum": sparse_ops.sparse_segment_sum,
                      "mean": sparse_ops.sparse_segment_mean,
                      "sqrtn": sparse_ops.sparse_segment_sqrt_n}[combiner]
            return reduce(embeddings, idx, segment_ids, name=scope)
        return _weighted_combine(embeddings, idx, segment_ids, sp_weights.values, combiner,
                                 scope)


def _weighted_combine(embeddings, idx, segment_ids, weights, combiner, scope):
    """Weighted sums per segment (SparseSegmentSum over positions 0..n-1, i.e. a segment
    sum of the weighted rows), normalized by the combiner."""
    embeddings = gather_ops.gather(embeddings, idx)
    if weights.dtype != embeddings.dtype:
        weights = math_ops.cast(weights, embeddings.dtype)
    rank = embeddings.shape.ndims
    if rank is not None:
        weights = array_ops.reshape(weights, [-1] + [1] * (rank - 1))
    else:
        ones = array_ops.ones(array_ops.expand_dims(array_ops.rank(embeddings) - 1, 0),
                              dtype=dtypes.int32)
        weights = array_ops.reshape(weights, joining_ops.concat([array_ops.shape(weights), ones],
                                                              0))
    embeddings = embeddings * weights
    positions = sequence_ops.range(array_ops.size(segment_ids))
    if combiner == "sum":
        return sparse_ops.sparse_segment_sum(embeddings, positions, segment_ids, name=scope)
    summed = sparse_ops.sparse_segment_sum(embeddings, positions, segment_ids)
    if combiner == "mean":
        norm = sparse_ops.sparse_segment_sum(weights, positions, segment_ids)
    else:
        norm = unary_ops.sqrt(sparse_ops.sparse_segment_sum(math_ops.pow(weights, 2),
                                                           positions, segment_ids))
    return math_ops.div_no_nan(summed, norm, name=scope)
