"""The ragged forms of the remaining functions of TensorFlow's ragged dispatch list:
unsorted segment reductions, dynamic_partition, sparse.bincount, one_hot, reshape,
batch_gather, matmul, the embedding lookups and the debugging assertions (TensorFlow's
semantics, shapes and error classes), composed from the dense functions on flat values
or row partitions.

- Segment ids and partitions given as RaggedTensors must share data's outer row
  partitions (checked; TF's "segment_ids.shape must be a prefix of data.shape"); they then
  apply to the items below those partitions. Dense ids apply to data's rows; ragged rows
  are combined position by position (ragged_math_ops._segment).
- matmul: a [B, (N), K] RaggedTensor times a dense [B, K, M] gathers b's matrix for each
  row's item (one batched product, so gradients flow); other shapes go through the
  zero-padded dense form and back.
- resize_images loops over the batch (map_fn), each image made dense, as TF does.
- Assertions on two RaggedTensors check that their row partitions are identical, then
  assert on the flat values.
"""

from __future__ import annotations

from tensorflux.control_flow import builders, functional_ops
from tensorflux.debugging import check_ops
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.image import image_ops
from tensorflux.nn import embedding_ops, nn_extra
from tensorflux.ops import (
    array_ops,
    gather_ops,
    matrix_ops,
    segment_ops,
    sequence_ops,
    sparse_ext_ops,
)
from tensorflux.ragged import ragged_math_ops
from tensorflux.ragged.dynamic_ragged_shape import DynamicRaggedShape
from tensorflux.ragged.ragged_array_ops import gather
from tensorflux.ragged.ragged_tensor import (
    RaggedTensor,
    gather_rows,
    splits_checks,
)
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue

PREFIX_MISMATCH = "segment_ids.shape must be a prefix of data.shape"


def _value(x):
    return RaggedTensor._from_value(x) if isinstance(x, RaggedTensorValue) else x


def _below(data, ids):
    """(the items of `data` below the row partitions of the RaggedTensor `ids`, ids' flat
    values, the checks that the partitions agree)."""
    if not isinstance(data, RaggedTensor) or ids.ragged_rank > data.ragged_rank:
        raise ValueError(f"{PREFIX_MISMATCH}: the ids have ragged_rank {ids.ragged_rank}")
    checks = splits_checks(data.nested_row_splits[:ids.ragged_rank], ids.nested_row_splits,
                           PREFIX_MISMATCH)
    items = data
    for _ in range(ids.ragged_rank):
        items = items.values
    return items, ids.flat_values, checks


# ---- unsorted segment reductions -------------------------------------------------------------

ragged_math_ops._SEGMENT.update({"mean": segment_ops.unsorted_segment_mean,
                                 "sqrt_n": segment_ops.unsorted_segment_sqrt_n})


def _segment_reduction(kind):
    def reduce(data, segment_ids, num_segments, name=None):
        with graph_lib.name_scope(name, f"RaggedSegment{kind.title()}",
                                  [data, segment_ids, num_segments]):
            data, ids = _value(data), _value(segment_ids)
            checks = []
            if isinstance(ids, RaggedTensor):
                data, ids, checks = _below(data, ids)
            else:
                ids = convert_to_tensor(ids, name="segment_ids")
            n = convert_to_tensor(num_segments, name="num_segments")
            with graph_lib.control_dependencies(checks):
                ids = array_ops.identity(ids)
            return ragged_math_ops._segment(kind, data, ids, n)
    reduce.__name__ = reduce.__qualname__ = f"unsorted_segment_{kind}"
    reduce.__doc__ = f"""The ragged form of `tf.math.unsorted_segment_{kind}`: ragged
    `segment_ids` name a segment per item below their row partitions (which data must
    share); dense ones per row of `data` (ragged rows combined position by position).

    Raises:
      InvalidArgumentError: ragged ids whose row partitions are not data's.
    """
    return reduce


unsorted_segment_sum = _segment_reduction("sum")
unsorted_segment_prod = _segment_reduction("prod")
unsorted_segment_max = _segment_reduction("max")
unsorted_segment_min = _segment_reduction("min")
unsorted_segment_mean = _segment_reduction("mean")
unsorted_segment_sqrt_n = _segment_reduction("sqrt_n")


# ---- dynamic_partition, bincount -------------------------------------------------------------


def dynamic_partition(data, partitions, num_partitions, name=None):
    """The ragged form of `tf.dynamic_partition`: a list of `num_partitions` pieces.
    Ragged `partitions` name a piece per item below their row partitions (which data must
    share); dense 1-D ones a piece per row of `data`.

    Raises:
      InvalidArgumentError: ragged partitions whose row partitions are not data's.
    """
    with graph_lib.name_scope(name, "RaggedDynamicPartition", [data, partitions]):
        data, parts = _value(data), _value(partitions)
        checks = []
        if isinstance(parts, RaggedTensor):
            data, parts, checks = _below(data, parts)
        else:
            parts = convert_to_tensor(parts, name="partitions")
        with graph_lib.control_dependencies(checks):
            parts = array_ops.identity(parts)
        if not isinstance(data, RaggedTensor):
            return gather_ops.dynamic_partition(data, parts, num_partitions)
        rows = sequence_ops.range(0, data.nrows(), dtype=data.row_splits.dtype)
        return [gather_rows(data, index) for index in
                gather_ops.dynamic_partition(rows, parts, num_partitions)]


def _sparse(x):
    x = _value(x)
    return x.to_sparse() if isinstance(x, RaggedTensor) else x


def bincount(values, weights=None, axis=0, minlength=None, maxlength=None,
             binary_output=False, name=None):
    """The ragged form of `tf.sparse.bincount` (through the SparseTensor of the same
    values: axis -1 counts each row)."""
    return sparse_ext_ops.sparse_bincount(
        _sparse(values), None if weights is None else _sparse(weights), axis=axis,
        minlength=minlength, maxlength=maxlength, binary_output=binary_output, name=name)


# ---- one_hot, reshape, batch_gather ----------------------------------------------------------


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None,
            name=None):
    """The ragged form of `tf.one_hot`: the new dim after the flat values' dims (or at
    `axis`, which must be past the ragged dims).

    Raises:
      ValueError: an axis that is not past indices' ragged dims.
    """
    rt = _value(indices)
    k = rt.ragged_rank
    if axis is None or axis == -1:
        flat_axis = -1
    elif axis > k:
        flat_axis = axis - k
    else:
        raise ValueError(f"axis ({axis}) must be greater than indices.ragged_rank ({k}).")
    with graph_lib.name_scope(name, "RaggedOneHot", [rt, depth]):
        return rt.with_flat_values(gather_ops.one_hot(
            rt.flat_values, depth, on_value=on_value, off_value=off_value, axis=flat_axis,
            dtype=dtype))


def reshape(tensor, shape, name=None):
    """The ragged form of `tf.reshape`: a RaggedTensor with a dense shape reshapes its
    elements in row-major order (a dense Tensor); a DynamicRaggedShape target gives a
    RaggedTensor with its row partitions."""
    tensor = _value(tensor)
    with graph_lib.name_scope(name, "RaggedReshape", [tensor]):
        flat = tensor.flat_values if isinstance(tensor, RaggedTensor) else \
            convert_to_tensor(tensor, name="tensor")
        if not isinstance(shape, DynamicRaggedShape):
            return array_ops.reshape(flat, shape)
        values = array_ops.reshape(flat, shape.inner_shape)
        for part in reversed(shape._partitions):
            values = RaggedTensor._make(values, part.row_splits, [], part.uniform_row_length)
        return values


def batch_gather(params, indices, name=None):
    """The ragged form of `tf.batch_gather`: gather with batch_dims = rank(indices) - 1."""
    indices = _value(indices)
    if not isinstance(indices, RaggedTensor):
        indices = convert_to_tensor(indices, name="indices")
    rank = indices.shape.ndims
    if rank is None:
        raise ValueError("batch_gather does not allow indices with unknown shape.")
    with graph_lib.name_scope(name, "RaggedBatchGather", [params, indices]):
        return gather(params, indices, axis=rank - 1, batch_dims=rank - 1)


# ---- matmul ---------------------------------------------------------------------------------


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """The ragged form of `tf.matmul`: rank 2 as dense; a [B, (N), K] RaggedTensor times a
    dense [B, K, M] (or [B, M, K] transposed) row item by row item; other rank-3 operands
    through their zero-padded dense forms, the result cut to a's row lengths."""
    del a_is_sparse, b_is_sparse
    a, b = _value(a), _value(b)
    flags = dict(transpose_a=transpose_a, transpose_b=transpose_b, adjoint_a=adjoint_a,
                 adjoint_b=adjoint_b)
    with graph_lib.name_scope(name, "RaggedMatMul", [a, b]):
        if (a.shape.ndims or b.shape.ndims) == 2:
            return matrix_ops.matmul(_dense(a), _dense(b), **flags)
        if isinstance(a, RaggedTensor) and not isinstance(b, RaggedTensor) and \
                a.ragged_rank == 1 and a.shape.ndims == 3 and not (transpose_a or adjoint_a):
            b = convert_to_tensor(b, name="b")
            per_item = gather_ops.gather(b, a.value_rowids())
            product = matrix_ops.matmul(array_ops.expand_dims(a.values, 1), per_item,
                                        transpose_b=transpose_b, adjoint_b=adjoint_b)
            return a.with_values(array_ops.squeeze(product, [1]))
        dense = matrix_ops.matmul(_dense(a), _dense(b), **flags)
        if isinstance(a, RaggedTensor) and a.ragged_rank == 1 and \
                not (transpose_a or adjoint_a):
            return RaggedTensor.from_tensor(dense, lengths=a.row_lengths())
        return RaggedTensor.from_tensor(dense)


def _dense(x):
    return x.to_tensor() if isinstance(x, RaggedTensor) else convert_to_tensor(x)


# ---- images ---------------------------------------------------------------------------------


def resize_images(images, size, method=image_ops.ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """The ragged form of `tf.image.resize_images`: a [batch, (height), (width), channels]
    RaggedTensor resized image by image (a loop over the batch) to a dense batch.

    Raises:
      ValueError: images whose rank is not 4.
    """
    images = _value(images)
    if images.shape.ndims != 4:
        raise ValueError("tf.image.resize: images.shape.rank must be 4 if images is ragged.")
    options = dict(method=method, align_corners=align_corners,
                   preserve_aspect_ratio=preserve_aspect_ratio)
    with graph_lib.Graph().as_default():  # the result's dtype, from a throwaway graph
        probe = array_ops.placeholder(images.dtype, [None, None, None])
        dtype = image_ops.resize_images(probe, size, **options).dtype
    with graph_lib.name_scope(name, "RaggedResizeImages", [images]):
        rows = sequence_ops.range(0, images.nrows())
        return functional_ops.map_fn(
            lambda i: image_ops.resize_images(images[i].to_tensor(), size, **options),
            rows, dtype=dtype)


# ---- embeddings -------------------------------------------------------------------------------


def embedding_lookup(params, ids, partition_strategy="mod", name=None,
                     validate_indices=True, max_norm=None):
    """The ragged form of `tf.nn.embedding_lookup`: each id of the RaggedTensor `ids`
    replaced by its embedding (a RaggedTensor with one more dense dim)."""
    ids = _value(ids)
    with graph_lib.name_scope(name, "embedding_lookup_ragged", [params, ids]):
        return ids.with_flat_values(embedding_ops.embedding_lookup(
            params, ids.flat_values, partition_strategy=partition_strategy,
            validate_indices=validate_indices, max_norm=max_norm))


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod",
                            name=None, combiner=None, max_norm=None):
    """The ragged form of `tf.nn.embedding_lookup_sparse` (ids and weights as the
    SparseTensors of the same values)."""
    return embedding_ops.embedding_lookup_sparse(
        params, _sparse(sp_ids), _sparse(sp_weights), partition_strategy=partition_strategy,
        name=name, combiner=combiner, max_norm=max_norm)


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, name=None,
                                 partition_strategy="div", max_norm=None):
    """The ragged form of `tf.nn.safe_embedding_lookup_sparse` (ids and weights as the
    SparseTensors of the same values)."""
    return nn_extra.safe_embedding_lookup_sparse(
        embedding_weights, _sparse(sparse_ids), _sparse(sparse_weights), combiner=combiner,
        default_id=default_id, name=name, partition_strategy=partition_strategy,
        max_norm=max_norm)


# ---- assertions ------------------------------------------------------------------------------


def _flat(x):
    return x.flat_values if isinstance(x, RaggedTensor) else x


def binary_assert(dense_assert):
    """The ragged form of the assertion `dense_assert(x, y, ...)`: identical row
    partitions when both are ragged, then `dense_assert` on the flat values."""
    def ragged_assert(x, y, *args, **kwargs):
        x, y = _value(x), _value(y)
        checks = []
        if isinstance(x, RaggedTensor) and isinstance(y, RaggedTensor):
            if x.ragged_rank != y.ragged_rank:
                raise ValueError("Inputs must have identical ragged splits")
            checks = splits_checks(x.nested_row_splits, y.nested_row_splits)
        with graph_lib.control_dependencies(checks):
            result = dense_assert(_flat(x), _flat(y), *args, **kwargs)
        if result is None and checks:
            return builders.group(*checks)
        return result
    return ragged_assert


def assert_type(tensor, tf_type, message=None, name=None):
    """The ragged form of `tf.debugging.assert_type`: the flat values' dtype."""
    return check_ops.assert_type(_flat(_value(tensor)), tf_type, message=message, name=name)

