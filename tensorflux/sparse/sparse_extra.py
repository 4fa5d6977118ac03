"""More `tf.sparse` functions, built from dense ops over a SparseTensor's three tensors
(indices, values, dense_shape): matmul with a dense matrix (gather rows, scale, segment
sum), reductions (reduce_sum/max, their _sparse forms), retain, reset_shape, transpose,
expand_dims, concat, slice, split, reshape, to_indicator, eye, add, maximum/minimum,
softmax, fill_empty_rows, and mask (of IndexedSlices). Entries are grouped by their
row-major linear position where two tensors or a reduction meet (Unique + segment ops).
Gradients flow to the values and to dense operands through the ops used."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.indexed_slices import IndexedSlices
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.comparison_ops import (
    equal,
    greater,
    greater_equal,
    less,
    logical_and,
    logical_not,
    logical_or,
    where,
    where_v2,
)
from tensorflux.ops.gather_ops import gather, gather_nd, unique
from tensorflux.ops.math_ops import (
    add,
    cast,
    floordiv,
    floormod,
    maximum,
    minimum,
    multiply,
    subtract,
    truediv,
)
from tensorflux.ops.math_ops import conj as _conj
from tensorflux.ops.segment_ops import unsorted_segment_max, unsorted_segment_min
from tensorflux.ops.sequence_ops import cumprod, unsorted_segment_sum
from tensorflux.ops.sequence_ops import range as _range
from tensorflux.ops.slicing_ops import boolean_mask
from tensorflux.ops.sparse_ops import _as_sparse, sparse_reorder, sparse_tensor_to_dense
from tensorflux.ops.unary_ops import abs, exp  # noqa: A004

__all__ = ["sparse_tensor_dense_matmul", "sparse_reduce_sum", "sparse_retain",
           "sparse_reduce_max", "sparse_reduce_max_sparse", "sparse_reduce_sum_sparse",
           "sparse_maximum", "sparse_minimum", "sparse_split", "sparse_mask",
           "sparse_reset_shape", "sparse_transpose", "sparse_concat", "sparse_slice",
           "sparse_reshape", "sparse_to_indicator", "sparse_add", "sparse_softmax",
           "sparse_fill_empty_rows"]


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """The dense product of a rank-2 SparseTensor and a dense matrix
    (`tf.sparse.sparse_dense_matmul`): rows of b gathered at the column indices, scaled by
    the values, summed into the output rows."""
    sp_a = _as_sparse(sp_a, "sparse.sparse_dense_matmul")
    with graph_lib.name_scope(name, "SparseTensorDenseMatMul", [sp_a.values, b]):
        b = convert_to_tensor(b, dtype=sp_a.dtype, name="b")
        if adjoint_b:
            b = _conj(array_ops.transpose(b))
        rows, cols = sp_a.indices[:, 0], sp_a.indices[:, 1]
        values = sp_a.values
        num_rows = sp_a.dense_shape[0]
        if adjoint_a:
            rows, cols, values = cols, rows, _conj(values)
            num_rows = sp_a.dense_shape[1]
        scaled = multiply(gather(b, cols), array_ops.expand_dims(values, 1))
        return unsorted_segment_sum(scaled, rows, num_rows)


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None,
                      keep_dims=None):
    """The sum of a SparseTensor's entries over `axis` (all by default), as a dense tensor
    (`tf.sparse.reduce_sum`)."""
    sp_input = _as_sparse(sp_input, "sparse.reduce_sum")
    axis = reduction_axes if axis is None else axis
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    return reduction_ops.reduce_sum(sparse_tensor_to_dense(sp_input, validate_indices=False),
                                    axis, keepdims=keepdims)


def sparse_retain(sp_input, to_retain):
    """The entries of sp_input where the boolean vector `to_retain` is true
    (`tf.sparse.retain`)."""
    sp_input = _as_sparse(sp_input, "sparse.retain")
    keep = convert_to_tensor(to_retain, dtype=dtypes.bool, name="to_retain")
    keep.shape.assert_has_rank(1)
    sp_input.values.shape.with_rank(1).assert_is_compatible_with(keep.shape)
    # where + gather rather than boolean_mask: the mask's rank may be unknown statically
    # (a dropout mask drawn with a fed noise shape) and must still be taken as a vector
    kept = array_ops.reshape(where(keep), [-1])
    return SparseTensor(gather(sp_input.indices, kept), gather(sp_input.values, kept),
                        array_ops.identity(sp_input.dense_shape))


def sparse_reset_shape(sp_input, new_shape=None):
    """sp_input with dense_shape `new_shape`, or the tightest shape holding its indices
    (`tf.sparse.reset_shape`)."""
    sp_input = _as_sparse(sp_input, "sparse.reset_shape")
    if new_shape is None:
        tight = add(reduction_ops.reduce_max(sp_input.indices, 0),
                    convert_to_tensor(1, dtypes.int64))
        rank = array_ops.shape(sp_input.dense_shape, out_type=dtypes.int64)
        zeros = array_ops.zeros(rank, dtypes.int64)
        shape = maximum(tight, zeros)
        return SparseTensor(sp_input.indices, sp_input.values, shape)
    shape = cast(convert_to_tensor(new_shape), dtypes.int64)
    return SparseTensor(sp_input.indices, sp_input.values, shape)


def sparse_transpose(sp_input, perm=None, name=None):
    """sp_input with its dimensions permuted (reversed by default), indices reordered
    (`tf.sparse.transpose`)."""
    sp_input = _as_sparse(sp_input, "sparse.transpose")
    with graph_lib.name_scope(name, "SparseTranspose", [sp_input.indices]):
        if perm is None:
            rank = array_ops.shape(sp_input.dense_shape)[0]
            perm = subtract(subtract(rank, 1), _range(0, rank))
        indices = array_ops.transpose(gather(array_ops.transpose(sp_input.indices), perm))
        shape = gather(sp_input.dense_shape, perm)
        return sparse_reorder(SparseTensor(indices, sp_input.values, shape))


def sparse_expand_dims(sp_input, axis=None, name=None):
    """sp_input with a dimension of size 1 inserted at `axis` (`tf.sparse.expand_dims`)."""
    sp_input = _as_sparse(sp_input, "sparse.expand_dims")
    with graph_lib.name_scope(name, "ExpandDims", [sp_input.indices]):
        axis = -1 if axis is None else axis
        rank = sp_input.dense_shape.shape.as_list()[0]
        if rank is None:
            raise ValueError("sparse.expand_dims needs a SparseTensor of known rank")
        pos = axis if axis >= 0 else rank + 1 + axis
        n = array_ops.shape(sp_input.indices, out_type=dtypes.int64)[:1]
        column = array_ops.zeros(joining_ops.concat([n, [1]], 0), dtypes.int64)
        indices = joining_ops.concat([sp_input.indices[:, :pos], column,
                                      sp_input.indices[:, pos:]], 1)
        shape = joining_ops.concat([sp_input.dense_shape[:pos],
                                    convert_to_tensor([1], dtypes.int64),
                                    sp_input.dense_shape[pos:]], 0)
        return SparseTensor(indices, sp_input.values, shape)


def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None,
                  expand_nonconcat_dims=None):
    """The SparseTensors joined along `axis` (`tf.sparse.concat`); the other dimensions
    must agree (or, with expand_nonconcat_dim, grow to the largest)."""
    axis = concat_dim if concat_dim is not None else axis
    expand = expand_nonconcat_dim or bool(expand_nonconcat_dims)
    inputs = [_as_sparse(s, "sparse.concat") for s in sp_inputs]
    with graph_lib.name_scope(name, "SparseConcat", [s.indices for s in inputs]):
        rank = inputs[0].dense_shape.shape.as_list()[0]
        if rank is None:
            raise ValueError("sparse.concat needs SparseTensors of known rank")
        axis = axis % rank
        one_hot = convert_to_tensor([1 if d == axis else 0 for d in range(rank)],
                                    dtypes.int64)
        offset = convert_to_tensor(0, dtypes.int64)
        indices, values = [], []
        for s in inputs:
            indices.append(add(s.indices, multiply(offset, one_hot)))
            values.append(s.values)
            offset = add(offset, s.dense_shape[axis])
        shape = inputs[0].dense_shape
        if expand:
            for s in inputs[1:]:
                shape = maximum(shape, s.dense_shape)
        shape = add(multiply(shape, subtract(convert_to_tensor(1, dtypes.int64), one_hot)),
                    multiply(offset, one_hot))
        out = SparseTensor(joining_ops.concat(indices, 0), joining_ops.concat(values, 0),
                           shape)
        return sparse_reorder(out)


def sparse_slice(sp_input, start, size, name=None):
    """The entries of sp_input inside the box [start, start + size), shifted to start at
    0 (`tf.sparse.slice`)."""
    sp_input = _as_sparse(sp_input, "sparse.slice")
    with graph_lib.name_scope(name, "SparseSlice", [sp_input.indices]):
        start = cast(convert_to_tensor(start), dtypes.int64)
        size = cast(convert_to_tensor(size), dtypes.int64)
        end = minimum(add(start, size), sp_input.dense_shape)
        inside = logical_and(greater_equal(sp_input.indices, start),
                             less(sp_input.indices, end))
        keep = reduction_ops.reduce_all(inside, 1)
        indices = subtract(boolean_mask(sp_input.indices, keep), start)
        shape = maximum(subtract(end, start), array_ops.zeros_like(start))
        return SparseTensor(indices, boolean_mask(sp_input.values, keep), shape)


def sparse_reshape(sp_input, shape, name=None):
    """sp_input with a new dense shape of the same size, one dimension may be -1
    (`tf.sparse.reshape`): row-major linear positions are kept."""
    sp_input = _as_sparse(sp_input, "sparse.reshape")
    with graph_lib.name_scope(name, "SparseReshape", [sp_input.indices]):
        old = sp_input.dense_shape
        new = cast(convert_to_tensor(shape), dtypes.int64)
        total = reduction_ops.reduce_prod(old)
        known = reduction_ops.reduce_prod(maximum(new, convert_to_tensor(1, dtypes.int64)))
        missing = floordiv(total, known)
        minus_one = cast(less(new, convert_to_tensor(0, dtypes.int64)), dtypes.int64)
        new = add(multiply(new, subtract(convert_to_tensor(1, dtypes.int64), minus_one)),
                  multiply(missing, minus_one))
        old_strides = _strides(old)
        linear = reduction_ops.reduce_sum(multiply(sp_input.indices, old_strides), 1,
                                          keepdims=True)
        new_strides = _strides(new)
        indices = floormod(floordiv(linear, new_strides), new)
        return SparseTensor(indices, sp_input.values, new)


def _strides(shape):
    """Row-major strides of a shape vector: exclusive reverse cumulative products."""
    return cumprod(shape, exclusive=True, reverse=True)


def sparse_to_indicator(sp_input, vocab_size, name=None):
    """A dense bool tensor [..., vocab_size], true at each (row, value) of the int
    SparseTensor (`tf.sparse.to_indicator`)."""
    sp_input = _as_sparse(sp_input, "sparse.to_indicator")
    with graph_lib.name_scope(name, "SparseToIndicator", [sp_input.indices]):
        ids = array_ops.expand_dims(cast(sp_input.values, dtypes.int64), 1)
        indices = joining_ops.concat([sp_input.indices[:, :-1], ids], 1)
        shape = joining_ops.concat([sp_input.dense_shape[:-1],
                                    cast(convert_to_tensor([vocab_size]), dtypes.int64)], 0)
        ones = array_ops.ones_like(sp_input.values, dtype=dtypes.bool)
        dense = sparse_tensor_to_dense(sparse_reorder(SparseTensor(indices, ones, shape)),
                                       default_value=False, validate_indices=False)
        return dense


def sparse_eye(num_rows, num_columns=None, dtype=dtypes.float32, name=None):
    """The identity matrix as a SparseTensor (`tf.sparse.eye`)."""
    with graph_lib.name_scope(name, "eye", [num_rows, num_columns]):
        rows = cast(convert_to_tensor(num_rows), dtypes.int64)
        cols = rows if num_columns is None else cast(convert_to_tensor(num_columns),
                                                     dtypes.int64)
        diag = _range(minimum(rows, cols), dtype=dtypes.int64)
        indices = joining_ops.stack([diag, diag], 1)
        values = array_ops.ones_like(diag, dtype=dtype)
        return SparseTensor(indices, values, joining_ops.stack([rows, cols]))


def _linear_keys(indices, dense_shape):
    """Row-major positions of `indices` in `dense_shape`, as an int64 vector."""
    return reduction_ops.reduce_sum(multiply(indices, _strides(dense_shape)), 1)


def sparse_add(a, b, threshold=0, thresh=None):
    """a + b (`tf.sparse.add`): a SparseTensor plus a dense tensor is dense; two
    SparseTensors of one shape give a SparseTensor whose entries at equal indices are
    summed (sums of two entries with |value| < threshold are dropped)."""
    threshold = thresh if thresh is not None else threshold
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        with graph_lib.name_scope(None, "SparseAdd", [a.values, b.values]):
            indices = joining_ops.concat([a.indices, b.indices], 0)
            values = joining_ops.concat([a.values, cast(b.values, a.dtype)], 0)
            keys, slot = unique(_linear_keys(indices, a.dense_shape), out_idx=dtypes.int64)
            summed = unsorted_segment_sum(values, slot, array_ops.size(keys,
                                                                       out_type=dtypes.int64))
            first = unsorted_segment_min_rows(indices, slot, keys)
            out = SparseTensor(first, summed, a.dense_shape)
            if threshold:  # only sums of two entries are dropped, as in TensorFlow
                count = unsorted_segment_sum(array_ops.ones_like(slot), slot,
                                             array_ops.size(keys, out_type=dtypes.int64))
                keep = logical_or(greater_equal(abs(summed), _const(threshold, summed)),
                                  equal(count, array_ops.ones_like(count)))
                out = sparse_retain(out, keep)
            return sparse_reorder(out)
    sp, dense = (a, b) if isinstance(a, SparseTensor) else (b, a)
    sp = _as_sparse(sp, "sparse.add")
    dense = convert_to_tensor(dense, dtype=sp.dtype)
    return add(sparse_tensor_to_dense(sp, validate_indices=False), dense)


def _sparse_dense_cwise(fn, op_name):
    """`sp <op> dense` for SparseTensor's `*` and `/` (TensorFlow's SparseDenseCwise ops):
    the dense operand broadcasts onto the sparse one's shape (its rank at most the sparse
    rank, aligned on the right) and only the present entries are computed, so the result is
    a SparseTensor with the same indices."""

    def operator(self, other):
        with graph_lib.name_scope(None, op_name, [self.values, other]):
            if isinstance(other, SparseTensor):
                raise TypeError(f"SparseTensor {op_name}: the other operand must be dense, "
                                "got a SparseTensor")
            dense = convert_to_tensor(other, dtype=self.dtype.base_dtype, name="dense")
            rank = dense.shape.ndims
            if rank is None:
                raise ValueError(f"SparseTensor {op_name}: the dense operand's rank must be "
                                 f"known statically, got {dense}")
            if rank == 0:
                picked = dense
            else:
                sp_rank = self.indices.shape.as_list()[1]
                if sp_rank is not None and rank > sp_rank:
                    raise ValueError(f"SparseTensor {op_name}: the dense operand's rank "
                                     f"{rank} exceeds the sparse operand's {sp_rank}")
                # each entry's index in the dense operand: the trailing coordinates, held
                # at 0 along the dense operand's dimensions of size 1 (broadcast)
                coords = self.indices[:, -rank:]
                wide = cast(greater(array_ops.shape(dense, out_type=dtypes.int64),
                                    _const(1, coords)), dtypes.int64)
                picked = gather_nd(dense, multiply(coords, wide))
            return SparseTensor(self.indices, fn(self.values, picked),
                                self.dense_shape)

    operator.__name__ = f"__{op_name}__"
    return operator


SparseTensor.__mul__ = _sparse_dense_cwise(multiply, "SparseDenseCwiseMul")
SparseTensor.__truediv__ = _sparse_dense_cwise(truediv, "SparseDenseCwiseDiv")
SparseTensor.__div__ = SparseTensor.__truediv__


def unsorted_segment_min_rows(indices, slot, keys):
    """The index row of each unique key (every row of one slot is the same row)."""
    n = array_ops.size(keys, out_type=dtypes.int64)
    position = _range(array_ops.size(slot, out_type=dtypes.int64), dtype=dtypes.int64)
    first = unsorted_segment_min(position, slot, n)
    return gather(indices, first)


def _const(value, like):
    return convert_to_tensor(value, dtype=like.dtype.real_dtype if like.dtype.is_complex
                             else like.dtype)


def sparse_softmax(sp_input, name=None):
    """The softmax over the present entries of each innermost row
    (`tf.sparse.softmax`); absent entries stay absent."""
    sp_input = _as_sparse(sp_input, "sparse.softmax")
    with graph_lib.name_scope(name, "SparseSoftmax", [sp_input.values]):
        rows_shape = sp_input.dense_shape[:-1]
        row = _linear_keys(sp_input.indices[:, :-1], rows_shape)
        n = reduction_ops.reduce_prod(rows_shape)
        top = unsorted_segment_max(sp_input.values, row, n)
        e = exp(subtract(sp_input.values, gather(top, row)))
        total = unsorted_segment_sum(e, row, n)
        return SparseTensor(sp_input.indices, truediv(e, gather(total, row)),
                            sp_input.dense_shape)


def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """(sp_input with an entry (row, 0, ...) = default_value added to each empty row, a
    bool vector marking those rows) (`tf.sparse.fill_empty_rows`)."""
    sp_input = _as_sparse(sp_input, "sparse.fill_empty_rows")
    with graph_lib.name_scope(name, "SparseFillEmptyRows", [sp_input.values]):
        num_rows = sp_input.dense_shape[0]
        counts = unsorted_segment_sum(array_ops.ones_like(sp_input.indices[:, 0]),
                                      sp_input.indices[:, 0], num_rows)
        empty = equal(counts, array_ops.zeros_like(counts))
        empty_rows = where(empty)  # [k, 1] int64
        rank = array_ops.shape(sp_input.indices, out_type=dtypes.int64)[1]
        zeros = array_ops.zeros(joining_ops.stack([array_ops.shape(
            empty_rows, out_type=dtypes.int64)[0], subtract(rank, 1)]), dtypes.int64)
        new_indices = joining_ops.concat([empty_rows, zeros], 1)
        default = convert_to_tensor(default_value, dtype=sp_input.dtype)
        new_values = array_ops.fill(array_ops.shape(empty_rows)[:1], default)
        out = SparseTensor(joining_ops.concat([sp_input.indices, new_indices], 0),
                           joining_ops.concat([sp_input.values, new_values], 0),
                           sp_input.dense_shape)
        return sparse_reorder(out), empty


# ---- reductions over the present entries, and elementwise max/min -------------------------


def _reduction_groups(sp_input, axis, keepdims):
    """(group key of each entry, number of groups, the dense result shape with reduced
    dimensions kept as 1, the axes to squeeze away) for reducing over `axis`."""
    rank = sp_input.dense_shape.shape.as_list()[0]
    if rank is None:
        raise ValueError("sparse reductions need a SparseTensor of known rank")
    axes = _axes_of(axis, rank)
    kept = convert_to_tensor([0 if d in axes else 1 for d in range(rank)], dtypes.int64)
    out_shape = add(multiply(sp_input.dense_shape, kept), subtract(
        convert_to_tensor(1, dtypes.int64), kept))
    keys = _linear_keys(multiply(sp_input.indices, kept), out_shape)
    return keys, reduction_ops.reduce_prod(out_shape), out_shape, \
        (None if keepdims else axes)


def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None,
                      keep_dims=None):
    """The max of the present entries over `axis` (all by default), as a dense tensor;
    groups without entries give 0 (`tf.sparse.reduce_max`)."""
    sp_input = _as_sparse(sp_input, "sparse.reduce_max")
    axis = reduction_axes if axis is None else axis
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    keys, n, out_shape, squeeze = _reduction_groups(sp_input, axis, keepdims)
    top = unsorted_segment_max(sp_input.values, keys, n)
    count = unsorted_segment_sum(array_ops.ones_like(keys), keys, n)
    top = where_v2(equal(count, array_ops.zeros_like(count)), array_ops.zeros_like(top), top)
    out = array_ops.reshape(top, out_shape)
    return out if squeeze is None else array_ops.squeeze(out, squeeze)


def _sparse_reduction_sparse(reduce, sp_input, axis, keepdims):
    """A sparse reduction whose result is a SparseTensor of the non-empty groups."""
    rank = sp_input.dense_shape.shape.as_list()[0]
    keys, _, out_shape, squeeze = _reduction_groups(sp_input, axis, keepdims)
    unique_keys, slot = unique(keys, out_idx=dtypes.int64)
    n = array_ops.size(unique_keys, out_type=dtypes.int64)
    values = reduce(sp_input.values, slot, n)
    reduced = _axes_of(axis, rank)
    mask = convert_to_tensor([0 if d in reduced else 1 for d in range(rank)], dtypes.int64)
    indices = unsorted_segment_min_rows(multiply(sp_input.indices, mask), slot, unique_keys)
    shape = out_shape
    if squeeze is not None:  # drop the reduced dimensions
        keep_cols = [d for d in range(rank) if d not in reduced]
        indices = gather(indices, keep_cols, axis=1)
        shape = gather(out_shape, keep_cols)
    return sparse_reorder(SparseTensor(indices, values, shape))


def _axes_of(axis, rank):
    return list(range(rank)) if axis is None else \
        [a % rank for a in ([axis] if isinstance(axis, int) else axis)]


def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None):
    """sparse_reduce_max as a SparseTensor of the groups that have entries
    (`tf.sparse.reduce_max_sparse`)."""
    sp_input = _as_sparse(sp_input, "sparse.reduce_max_sparse")
    axis = reduction_axes if axis is None else axis
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    return _sparse_reduction_sparse(unsorted_segment_max, sp_input, axis, keepdims)


def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None):
    """sparse_reduce_sum as a SparseTensor of the groups that have entries
    (`tf.sparse.reduce_sum_sparse`)."""
    sp_input = _as_sparse(sp_input, "sparse.reduce_sum_sparse")
    axis = reduction_axes if axis is None else axis
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    return _sparse_reduction_sparse(unsorted_segment_sum, sp_input, axis, keepdims)


def _elementwise(fn, sp_a, sp_b, name):
    """fn of two SparseTensors of one shape over the union of their indices, an absent
    entry counting as 0."""
    sp_a, sp_b = _as_sparse(sp_a, name), _as_sparse(sp_b, name)
    with graph_lib.name_scope(None, name, [sp_a.values, sp_b.values]):
        indices = joining_ops.concat([sp_a.indices, sp_b.indices], 0)
        keys, slot = unique(_linear_keys(indices, sp_a.dense_shape), out_idx=dtypes.int64)
        n = array_ops.size(keys, out_type=dtypes.int64)
        zeros_b = array_ops.zeros_like(sp_b.values)
        zeros_a = array_ops.zeros_like(sp_a.values)
        from_a = unsorted_segment_sum(joining_ops.concat([sp_a.values, zeros_b], 0), slot, n)
        from_b = unsorted_segment_sum(joining_ops.concat([zeros_a, sp_b.values], 0), slot, n)
        out = SparseTensor(unsorted_segment_min_rows(indices, slot, keys), fn(from_a, from_b),
                           sp_a.dense_shape)
        return sparse_reorder(out)


def sparse_maximum(sp_a, sp_b, name=None):
    """The elementwise maximum of two SparseTensors of one shape (`tf.sparse.maximum`)."""
    return _elementwise(maximum, sp_a, sp_b, name or "SparseSparseMaximum")


def sparse_minimum(sp_a, sp_b, name=None):
    """The elementwise minimum of two SparseTensors of one shape (`tf.sparse.minimum`)."""
    return _elementwise(minimum, sp_a, sp_b, name or "SparseSparseMinimum")


def sparse_split(keyword_required=None, sp_input=None, num_split=None, axis=None, name=None,
                 split_dim=None):
    """`num_split` SparseTensors cut from sp_input along `axis` (`tf.sparse.split`); the
    first size % num_split pieces are one longer."""
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function.")
    axis = split_dim if axis is None else axis
    if sp_input is None or num_split is None or axis is None:
        raise ValueError("sp_input, num_split and axis are required")
    sp_input = _as_sparse(sp_input, "sparse.split")
    with graph_lib.name_scope(name, "SparseSplit", [sp_input.indices]):
        rank = sp_input.dense_shape.shape.as_list()[0]
        if rank is None:
            raise ValueError("sparse.split needs a SparseTensor of known rank")
        axis = axis % rank
        size = sp_input.dense_shape[axis]
        n = convert_to_tensor(num_split, dtypes.int64)
        base, extra = floordiv(size, n), floormod(size, n)
        one_hot = convert_to_tensor([1 if d == axis else 0 for d in range(rank)], dtypes.int64)
        other = subtract(convert_to_tensor(1, dtypes.int64), one_hot)
        start = convert_to_tensor(0, dtypes.int64)
        pieces = []
        for i in range(num_split):
            length = add(base, cast(less(convert_to_tensor(i, dtypes.int64), extra),
                                    dtypes.int64))
            begin = multiply(start, one_hot)
            extent = add(multiply(sp_input.dense_shape, other), multiply(length, one_hot))
            pieces.append(sparse_slice(sp_input, begin, extent))
            start = add(start, length)
        return pieces


def sparse_mask(a, mask_indices, name=None):
    """The IndexedSlices `a` without the slices whose index is in `mask_indices`
    (`tf.sparse.mask`)."""
    with graph_lib.name_scope(name, "sparse_mask", [a.indices, mask_indices]):
        mask = convert_to_tensor(mask_indices, dtype=a.indices.dtype)
        hit = equal(array_ops.expand_dims(a.indices, 1), array_ops.expand_dims(mask, 0))
        keep = logical_not(reduction_ops.reduce_any(hit, 1))
        return IndexedSlices(boolean_mask(a.values, keep), boolean_mask(a.indices, keep),
                             a.dense_shape)
