"""CPU kernels of the sparse ops (tensorflux/ops/sparse_ops.py).

Segment reductions select rows with `indices`, then reduce runs of equal (sorted) segment
ids with `np.add.reduceat`; half-precision data accumulates in float32. Checks and their
messages follow TensorFlow's kernels: indices in range, segment ids non-decreasing and
non-negative (and below num_segments), SparseToDense indices in bounds, sorted and unique.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors, resource_guard
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel, kernel_factory


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _shape_str(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype sums are computed in: float32 for 16-bit floats, else the data's."""
    if (dtype.kind == "f" and dtype.itemsize < 4) or dtype.name == "bfloat16":
        return np.dtype(np.float32)
    return dtype


def _check_vectors(indices: np.ndarray, segment_ids: np.ndarray) -> None:
    if indices.ndim != 1:
        raise _invalid(f"indices should be a vector, got shape {_shape_str(indices.shape)}")
    if segment_ids.ndim != 1:
        raise _invalid(f"segment_ids should be a vector, got shape "
                       f"{_shape_str(segment_ids.shape)}")
    if indices.size != segment_ids.size:
        raise _invalid("segment_ids and indices should have same size.")


# ---- SparseSegmentSum / Mean / SqrtN (with or without num_segments) -------------------------


def _segment_rows(segment_ids: np.ndarray, num_segments) -> int:
    """The output's row count, after TensorFlow's checks on the segment ids."""
    n = segment_ids.size
    last = int(segment_ids[-1]) if n else -1
    rows = last + 1
    if num_segments is not None:
        rows = int(num_segments)
        if rows < last + 1:
            raise _invalid("segment ids must be < num_segments")
    if rows < 0 or (n and rows <= 0):
        raise _invalid("segment ids must be >= 0")
    if n:
        if np.any(segment_ids[1:] < segment_ids[:-1]):
            raise _invalid("segment ids are not increasing")
        if segment_ids[0] < 0:
            raise _invalid(f"Segment id {int(segment_ids[0])} out of range [0, {rows}), "
                           "possibly because 'segment_ids' input is not sorted.")
    return rows


def _check_indices(indices: np.ndarray, limit: int) -> None:
    bad = (indices < 0) | (indices >= limit)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _invalid(f"Bad: indices[{i}] == {int(indices[i])} out of range [0, {limit})")


def _whole_segments(bounds: np.ndarray, row_elements: int, ctx):
    """Yields (first, end) ranges of segments (segment i: selected rows bounds[i] to
    bounds[i + 1]) of at most `interrupt.SPAN_ELEMENTS` elements each, or one segment
    that is longer, never cutting a segment, checking step `ctx` before every range but
    the first. A segment's sum in its own range is the sum of one call over all rows:
    np.add.reduceat reduces each segment by itself (how it orders a segment's additions
    depends on that segment alone), so only a cut segment would change."""
    per = max(1, interrupt.SPAN_ELEMENTS // max(1, row_elements))
    first, count = 0, len(bounds) - 1
    while first < count:
        # the segments that end within `per` rows of this range's start
        end = int(np.searchsorted(bounds, bounds[first] + per, side="right")) - 1
        end = min(count, max(first + 1, end))
        if first and ctx is not None:
            interrupt.check(ctx)
        yield first, end
        first = end


def segment_reduce(reduction: str, data, indices, segment_ids, num_segments=None, ctx=None):
    """`reduction` ("Sum", "Mean", "SqrtN") of rows `data[indices]` by sorted segment ids;
    over many rows, in ranges of whole segments with step `ctx` checked between them."""
    data = np.asarray(data)
    if data.ndim < 1:
        raise _invalid("Shape must be at least rank 1 but is rank 0")
    _check_vectors(indices, segment_ids)
    rows = _segment_rows(segment_ids, num_segments)
    _check_indices(indices, data.shape[0])
    acc = _accumulator(data.dtype)
    out = np.zeros((rows,) + data.shape[1:], dtype=acc)
    if indices.size:
        starts = np.flatnonzero(np.r_[True, segment_ids[1:] != segment_ids[:-1]])
        row_elements = int(np.prod(data.shape[1:], dtype=np.int64))
        if indices.size * max(1, row_elements) <= interrupt.SPAN_ELEMENTS:
            selected = data[indices].astype(acc, copy=False)
            sums = np.add.reduceat(selected, starts, axis=0)
        else:  # the gather alone of 32M rows took seconds
            sums = np.empty((starts.size,) + data.shape[1:], dtype=acc)
            bounds = np.r_[starts, indices.size]
            for first, end in _whole_segments(bounds, row_elements, ctx):
                lo, hi = bounds[first], bounds[end]
                selected = data[indices[lo:hi]].astype(acc, copy=False)
                sums[first:end] = np.add.reduceat(selected, starts[first:end] - lo, axis=0)
        if reduction != "Sum":
            counts = np.diff(np.r_[starts, indices.size]).astype(acc)
            scale = counts if reduction == "Mean" else np.sqrt(counts)
            sums = sums / scale.reshape((-1,) + (1,) * (data.ndim - 1))
        out[segment_ids[starts]] = sums
    return out.astype(data.dtype, copy=False)


def _segment_kernel(reduction: str, with_num: bool):
    if with_num:
        def compute(ctx, data, indices, segment_ids, num_segments):
            if np.ndim(num_segments) != 0:
                raise _invalid("num_segments should be a scalar, got shape "
                               f"{_shape_str(np.shape(num_segments))}")
            return segment_reduce(reduction, data, indices, segment_ids, num_segments, ctx)
    else:
        def compute(ctx, data, indices, segment_ids):
            return segment_reduce(reduction, data, indices, segment_ids, ctx=ctx)
    return compute


def _segment_grad(reduction: str, grad, indices, segment_ids, output_dim0, ctx=None):
    """`out[indices[i]] += grad[segment_ids[i]] * scale[segment_ids[i]]`, `out` of
    `output_dim0` rows; scale 1, 1/count or 1/sqrt(count) of each segment."""
    grad = np.asarray(grad)
    _check_vectors(indices, segment_ids)
    dim0 = int(output_dim0)
    m0 = grad.shape[0] if grad.ndim else 0
    bad = (segment_ids < 0) | (segment_ids >= m0)
    if bad.any():
        sid = int(segment_ids[np.flatnonzero(bad)[0]])
        raise _invalid(f"Segment id {sid} out of range [0, {m0}).")
    bad = (indices < 0) | (indices >= dim0)
    if bad.any():
        idx = int(indices[np.flatnonzero(bad)[0]])
        raise _invalid(f"Index {idx} out of range [0, {dim0}).")
    acc = _accumulator(grad.dtype)
    rows = grad.astype(acc, copy=False)
    if reduction != "Sum":
        counts = np.bincount(segment_ids, minlength=m0).astype(acc)
        scale = np.where(counts > 0, counts, 1) if reduction == "Mean" else \
            np.sqrt(np.where(counts > 0, counts, 1))
        rows = rows / scale.reshape((-1,) + (1,) * (grad.ndim - 1))
    out = np.zeros((dim0,) + grad.shape[1:], dtype=acc)
    # In blocks, in order (the step is checked between them): the values of one np.add.at.
    for lo, hi in interrupt.spans(indices.size, max(1, rows[0].size) if rows.size else 1,
                                  ctx):
        np.add.at(out, indices[lo:hi], rows[segment_ids[lo:hi]])
    return out.astype(grad.dtype, copy=False)


for _red in ("Sum", "Mean", "SqrtN"):
    kernel_factory(f"SparseSegment{_red}")(lambda node, r=_red: _segment_kernel(r, False))
    kernel_factory(f"SparseSegment{_red}WithNumSegments")(
        lambda node, r=_red: _segment_kernel(r, True))
    kernel_factory(f"SparseSegment{_red}Grad")(
        lambda node, r=_red: lambda ctx, g, i, s, d: _segment_grad(r, g, i, s, d, ctx))


# ---- SparseToDense ---------------------------------------------------------------------------


def _index_str(row: np.ndarray) -> str:
    return "[" + ",".join(str(int(v)) for v in row) + "]"


def _first_invalid(indices: np.ndarray, shape: np.ndarray) -> str | None:
    """TensorFlow's SparseTensor::IndicesValid: the first entry out of bounds, out of
    row-major order, or repeated (in that priority for each entry), as a message."""
    n = indices.shape[0]
    if n == 0:
        return None
    oob = np.any((indices < 0) | (indices >= shape), axis=1)
    first_oob = int(np.flatnonzero(oob)[0]) if oob.any() else n
    checked = indices[:first_oob]
    first_bad, kind = first_oob, "bounds"
    if checked.shape[0] > 1:
        flat = np.ravel_multi_index(tuple(checked.T.astype(np.int64)),
                                    tuple(int(d) for d in shape))
        order = np.flatnonzero(flat[1:] <= flat[:-1])
        if order.size:
            first_bad = int(order[0]) + 1
            kind = "repeated" if flat[first_bad] == flat[first_bad - 1] else "order"
    if first_bad >= n:
        return None
    where = f"indices[{first_bad}] = {_index_str(indices[first_bad])}"
    if kind == "bounds":
        return f"{where} is out of bounds: need 0 <= index < {_index_str(shape)}"
    if kind == "repeated":
        return f"{where} is repeated"
    return (f"{where} is out of order. Many sparse ops require sorted indices.\n    Use "
            "`tf.sparse.reorder` to create a correctly ordered copy.\n\n")


def _flat_positions(idx2: np.ndarray, dims: tuple):
    """The row-major positions of the index rows `idx2` in an array of shape `dims`, all in
    bounds, in one NumPy call (a sampled softmax's [hits, 2] indices: the bounds check and
    the tuple index cost three times as much); None when some index is out of bounds,
    there are none, or NumPy does not take them (the caller checks and scatters itself)."""
    if not idx2.size or idx2.dtype.kind not in "iu" or idx2.dtype.itemsize > 8 or \
            idx2.dtype == np.uint64:
        return None
    try:
        return np.ravel_multi_index(tuple(idx2.T), dims)
    except (ValueError, TypeError):
        return None


@kernel_factory("SparseToDense")
def _sparse_to_dense(node):
    validate = node.attrs["validate_indices"]

    def compute(ctx, sparse_indices, output_shape, sparse_values, default_value):
        idx = np.asarray(sparse_indices)
        if idx.ndim > 2:
            raise _invalid(f"sparse_indices should be a scalar, vector, or matrix, got shape "
                           f"{_shape_str(idx.shape)}")
        shape = np.asarray(output_shape)
        if shape.ndim != 1:
            raise _invalid(f"output_shape must be rank 1, got shape {_shape_str(shape.shape)}")
        num_elems = idx.shape[0] if idx.ndim > 0 else 1
        num_dims = idx.shape[1] if idx.ndim > 1 else 1
        if shape.size != num_dims:
            raise _invalid(f"output_shape has incorrect number of elements: {shape.size} "
                           f"should be: {num_dims}")
        values = np.asarray(sparse_values)
        if not (values.ndim == 0 or values.shape == (num_elems,)):
            raise _invalid(f"sparse_values has incorrect shape {_shape_str(values.shape)}, "
                           f"should be [] or [{num_elems}]")
        if np.ndim(default_value) != 0:
            raise _invalid("default_value should be a scalar.")
        idx2 = idx.reshape(num_elems, num_dims)
        dims = tuple(int(d) for d in shape.tolist())
        if min(dims, default=0) < 0:
            raise _invalid(f"output_shape has negative entries: {_index_str(shape)}")
        flat = None
        if validate:
            message = _first_invalid(idx2, shape)
            if message is not None:
                raise _invalid(message)
        else:
            flat = _flat_positions(idx2, dims)
            if flat is None and np.any((idx2 < 0) | (idx2 >= shape)):
                raise _invalid(f"Indices are not valid (out of bounds).  Shape: "
                               f"{_index_str(shape)}")
        default = np.asarray(default_value)
        resource_guard.check_shape(dims, default.dtype, ctx)
        out = interrupt.full(ctx, dims, default, default.dtype)  # in blocks when large
        if flat is not None:
            out.reshape(-1)[flat] = values
        elif num_elems:
            out[tuple(idx2.T)] = values
        return out

    return compute


# ---- SparseReorder -------------------------------------------------------------------------


@kernel("SparseReorder")
def _sparse_reorder(ctx, indices, values, shape):
    if indices.ndim != 2:
        raise _invalid(f"Input indices should be a matrix but received shape "
                       f"{_shape_str(indices.shape)}")
    if values.ndim != 1 or values.shape[0] != indices.shape[0]:
        raise _invalid(f"Input values should be a vector of {indices.shape[0]} entries but "
                       f"received shape {_shape_str(values.shape)}")
    if shape.ndim != 1 or shape.size != indices.shape[1]:
        raise _invalid(f"Input shape should be a vector of {indices.shape[1]} entries but "
                       f"received shape {_shape_str(shape.shape)}")
    if indices.shape[0] == 0:
        return indices.copy(), values.copy()
    order = np.lexsort(indices.T[::-1])  # stable: repeated indices keep their order
    return indices[order], values[order]
