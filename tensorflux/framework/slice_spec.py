"""StridedSlice's index canonicalization, shared by its shape function, its constant
evaluator and the CPU/GPU kernels of StridedSlice and StridedSliceGrad.

This follows TensorFlow's `ValidateStridedSliceOp` (core/util/strided_slice_op.cc) step by
step, because the masks interact in ways that are easy to get subtly wrong:

1. The *sparse* spec is what the user wrote: one entry per index expression, with an
   ellipsis, new axes and shrunk (integer) indices marked by bit masks. If there is no
   ellipsis, one is implied at the end.
2. The *dense* spec has one entry per input dimension: the ellipsis expands to as many
   full ranges (begin and end masked, stride 1) as the input has dimensions not otherwise
   indexed; new axes take no input dimension.
3. Each dense entry is canonicalized against its dimension (negative indices wrap, masked
   ends become the full range, out-of-range ends clamp; a shrunk index must be in range)
   giving the *processing shape*, the shape of the plain strided slice.
4. The *final shape* drops shrunk dimensions and inserts the new axes (size 1).

Unknown dimensions (None) and unknown begin/end values (None arrays) give unknown sizes, as
the shape function needs; kernels always pass concrete values.
"""

from __future__ import annotations

from dataclasses import dataclass

_NEW_AXIS = -1
_SHRINK_AXIS = -2


@dataclass(slots=True)
class SliceSpec:
    """The canonical form of one strided slice of one input shape.

    Attributes:
      processing_shape: one size per input dimension (None where unknown).
      final_shape: the output shape (None entries where unknown).
      index: a NumPy basic-indexing tuple equivalent to the slice (ints for shrunk
        dimensions, slices, None for new axes), or None if begin/end were unknown.
      is_identity: the slice is the whole input, unchanged in shape.
    """

    processing_shape: list
    final_shape: list
    index: tuple | None
    is_identity: bool


def _bits(mask: int, i: int) -> bool:
    return bool(mask & (1 << i))


def _dense_spec(n_sparse, rank, begin, end, strides, masks):
    """Steps 1-2: expands the ellipsis. Returns dense (begin, end, stride, bmask, emask,
    shrink) lists and the final-shape gather list (dense index, _NEW_AXIS or _SHRINK_AXIS).
    """
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask = masks
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ValueError("Multiple ellipses in slice spec not allowed")
    num_add_axis_after_ellipsis = 0
    ellipsis_seen = False
    for i in range(n_sparse):
        if ellipsis_seen and _bits(new_axis_mask, i):
            num_add_axis_after_ellipsis += 1
        if _bits(ellipsis_mask, i):
            ellipsis_seen = True
    if not ellipsis_seen:
        ellipsis_mask |= 1 << n_sparse
        n_sparse += 1
    d_begin, d_end, d_stride = [0] * rank, [0] * rank, [1] * rank
    d_bmask, d_emask, d_shrink = [False] * rank, [False] * rank, [False] * rank
    gather: list[int] = []
    full = 0
    for i in range(n_sparse):
        if _bits(ellipsis_mask, i):
            nxt = min(rank - (n_sparse - i) + 1 + num_add_axis_after_ellipsis, rank)
            while full < nxt:
                d_bmask[full] = d_emask[full] = True
                gather.append(full)
                full += 1
        elif _bits(new_axis_mask, i):
            gather.append(_NEW_AXIS)
        else:
            if full == rank:
                raise ValueError(f"Index out of range using input dim {full}; input has only "
                                 f"{rank} dims")
            d_begin[full] = None if begin is None else int(begin[i])
            d_end[full] = None if end is None else int(end[i])
            d_stride[full] = int(strides[i])
            d_bmask[full] = _bits(begin_mask, i)
            d_emask[full] = _bits(end_mask, i)
            if _bits(shrink_mask, i):
                gather.append(_SHRINK_AXIS)
                d_shrink[full] = True
            else:
                gather.append(full)
            full += 1
    return d_begin, d_end, d_stride, d_bmask, d_emask, d_shrink, gather


def _canonical(x, is_end, stride, dim, masked):
    lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)
    if masked:
        if stride > 0:
            return hi if is_end else lo
        return lo if is_end else hi
    x_fwd = x + dim if x < 0 else x
    return lo if x_fwd < lo else (hi if x_fwd > hi else x_fwd)


def strided_slice_spec(shape, begin, end, strides, begin_mask=0, end_mask=0,
                       ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0) -> SliceSpec:
    """Canonicalizes a strided slice of an input of shape `shape`.

    Args:
      shape: the input's dimensions (a list; None entries for unknown dimensions).
      begin, end: sequences of ints, one per sparse index, or None when unknown.
      strides: sequence of ints (must be known).
      *_mask: the StridedSlice attributes.

    Returns:
      A SliceSpec.

    Raises:
      ValueError: with TensorFlow's message (shape functions and kernels re-raise it as
        their own error class).
    """
    masks = (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    n_sparse = len(strides)
    if (begin is not None and len(begin) != n_sparse) or \
            (end is not None and len(end) != n_sparse):
        raise ValueError("Expected begin, end, and strides to be 1D equal size tensors, but "
                         f"got shapes [{len(begin) if begin is not None else '?'}], "
                         f"[{len(end) if end is not None else '?'}], and [{n_sparse}] "
                         "instead.")
    rank = len(shape)
    d_begin, d_end, d_stride, d_bmask, d_emask, d_shrink, gather = _dense_spec(
        n_sparse, rank, begin, end, strides, masks)
    known = begin is not None and end is not None
    processing: list = []
    index: list = []
    is_identity = True
    for i in range(rank):
        dim, stride, shrink = shape[i], d_stride[i], d_shrink[i]
        if stride == 0:
            raise ValueError(f"strides[{i}] must be non-zero")
        if shrink and stride <= 0:
            raise ValueError("only stride 1 allowed on non-range indexing.")
        if dim is None:
            processing.append(1 if shrink else None)
            is_identity = False
            continue
        b, e = d_begin[i], d_end[i]
        if known:
            if shrink:
                x_fwd = b + dim if b < 0 else b
                if x_fwd < 0 or x_fwd >= dim:
                    raise ValueError(f"slice index {x_fwd} of dimension {i} out of bounds.")
                b, e = x_fwd, x_fwd + 1
            else:
                b = _canonical(b, False, stride, dim, d_bmask[i])
                e = _canonical(e, True, stride, dim, d_emask[i])
            length = e - b
        elif shrink:
            length = 1
        elif d_bmask[i] and d_emask[i]:
            length = -dim if stride < 0 else dim
        else:
            processing.append(None)
            is_identity = False
            continue
        if length == 0 or (length < 0) != (stride < 0):
            size = 0
        else:
            size = length // stride + (1 if length % stride else 0)
        processing.append(size)
        if known:
            is_identity &= stride == 1 and b == 0 and e == dim and not shrink
            if shrink:
                index.append(b)
            else:
                # A canonical end of -1 with a negative stride means "past index 0".
                index.append(slice(b, None if e < 0 else e, stride))
    final = []
    np_index: list = []
    dense_pos = 0
    for g in gather:
        if g == _NEW_AXIS:
            final.append(1)
            np_index.append(None)
            is_identity = False
            continue
        if g >= 0:
            final.append(processing[g])
        if known and all(d is not None for d in shape):
            np_index.append(index[dense_pos])
        dense_pos += 1
    # Dimensions the ellipsis expanded (or trailing ones) past the gather list's end are
    # full ranges already covered by NumPy's implicit trailing slices.
    full_index = tuple(np_index) if known and all(d is not None for d in shape) else None
    return SliceSpec(processing, final, full_index, is_identity and known)
