"""Segment reductions: SegmentSum/Mean/Max/Min/Prod (sorted ids) and UnsortedSegmentMax/
Min/Prod, with the TF1 wrappers (`tf.math.segment_*`, `tf.math.unsorted_segment_*`, the
compositions `unsorted_segment_mean` and `unsorted_segment_sqrt_n`) and gradients.
UnsortedSegmentSum lives in sequence_ops.py. Kernels: tensorflux/kernels/cpu/segment_ops.py.

Sorted ops take 1-D non-decreasing non-negative `segment_ids` as long as data's first
dimension; the output has `segment_ids[-1] + 1` rows and empty segments give 0 (1 for Prod).
Unsorted ops take ids shaped like a prefix of data's shape and `num_segments`; negative ids
are dropped and empty segments give the reduction's identity (the lowest value for Max, the
highest for Min, 1 for Prod).
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops
from tensorflux.ops.comparison_ops import equal, greater, greater_equal, logical_and, where_v2
from tensorflux.ops.gather_ops import gather
from tensorflux.ops.math_ops import cast, divide, maximum, multiply, subtract
from tensorflux.ops.sequence_ops import _unsorted_segment_shape, unsorted_segment_sum
from tensorflux.ops.unary_ops import sqrt

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
           "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
           "unsorted_segment_mean", "unsorted_segment_sqrt_n"]

_NUMBER = ("T: {float, double, int32, uint8, int16, int8, complex64, int64, bfloat16, uint16, "
           "complex128, half, uint32, uint64}")
_REAL = ("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, "
         "uint64}")


def _segment_shape(op):
    """[segments, data.shape[1:]]; the segment count is known when the ids are constant."""
    data = checked_dims(op.inputs[0], at_least=1)
    checked_dims(op.inputs[1], rank=1)
    ids = common_shapes.constant_value(op.inputs[1])
    n = None if ids is None else (int(ids[-1]) + 1 if len(ids) else 0)
    return [tensor_shape.unknown_shape() if data is None
            else tensor_shape.TensorShape([n] + data[1:])]


for _name, _types in [("Sum", _NUMBER), ("Mean", _NUMBER), ("Max", _REAL), ("Min", _REAL),
                      ("Prod", _NUMBER)]:
    define_op(f"Segment{_name}", inputs=["data: T", "segment_ids: Tindices"],
              outputs=["output: T"], attrs=[_types, "Tindices: {int32, int64}"],
              shape_fn=_segment_shape)
for _name, _types in [("Max", _REAL), ("Min", _REAL), ("Prod", _NUMBER)]:
    define_op(f"UnsortedSegment{_name}",
              inputs=["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"],
              outputs=["output: T"],
              attrs=[_types, "Tindices: {int32, int64}", "Tnumsegments: {int32, int64} = "
                                                         "DT_INT32"],
              shape_fn=_unsorted_segment_shape)


def _sorted(op_type):
    def wrapper(data, segment_ids, name=None):
        return apply_op(op_type, data=data, segment_ids=segment_ids, name=name or op_type)

    wrapper.__name__ = "segment_" + op_type[len("Segment"):].lower()
    wrapper.__doc__ = (f"The {op_type[len('Segment'):].lower()} of the rows of `data` in "
                       f"each segment of the sorted `segment_ids` (`tf.math.{wrapper.__name__}"
                       "`).")
    return wrapper


def _unsorted(op_type):
    def wrapper(data, segment_ids, num_segments, name=None):
        return apply_op(op_type, data=data, segment_ids=segment_ids,
                        num_segments=num_segments, name=name or op_type)

    reduction = op_type[len("UnsortedSegment"):].lower()
    wrapper.__name__ = "unsorted_segment_" + reduction
    wrapper.__doc__ = (f"The {reduction} of the slices of `data` with equal `segment_ids` "
                       f"(`tf.math.{wrapper.__name__}`); negative ids are dropped.")
    return wrapper


segment_sum = _sorted("SegmentSum")
segment_mean = _sorted("SegmentMean")
segment_max = _sorted("SegmentMax")
segment_min = _sorted("SegmentMin")
segment_prod = _sorted("SegmentProd")
unsorted_segment_max = _unsorted("UnsortedSegmentMax")
unsorted_segment_min = _unsorted("UnsortedSegmentMin")
unsorted_segment_prod = _unsorted("UnsortedSegmentProd")


def _segment_counts(data, segment_ids, num_segments):
    """How many slices fall into each segment (at least 1), shaped to broadcast against
    the [num_segments, inner...] result."""
    ones = array_ops.ones_like(segment_ids, dtype=data.dtype)
    n = unsorted_segment_sum(ones, segment_ids, num_segments)
    extra = subtract(array_ops.rank(data), array_ops.rank(segment_ids))
    shape = joining_ops.concat([array_ops.shape(n), array_ops.fill(
        array_ops.reshape(extra, [1]), 1)], 0)
    return maximum(array_ops.reshape(n, shape), array_ops.ones([], data.dtype))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """unsorted_segment_sum divided by each segment's size (`tf.math.unsorted_segment_mean`);
    empty segments give 0."""
    with graph_lib.name_scope(name, "UnsortedSegmentMean", [data, segment_ids]):
        data = convert_to_tensor(data, name="data")
        segment_ids = convert_to_tensor(segment_ids, name="segment_ids")
        n = _segment_counts(data, segment_ids, num_segments)
        return divide(unsorted_segment_sum(data, segment_ids, num_segments), n)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """unsorted_segment_sum divided by the square root of each segment's size
    (`tf.math.unsorted_segment_sqrt_n`)."""
    with graph_lib.name_scope(name, "UnsortedSegmentSqrtN", [data, segment_ids]):
        data = convert_to_tensor(data, name="data")
        segment_ids = convert_to_tensor(segment_ids, name="segment_ids")
        n = _segment_counts(data, segment_ids, num_segments)
        return divide(unsorted_segment_sum(data, segment_ids, num_segments), sqrt(n))


# ---- gradients ---------------------------------------------------------------------------


def _gather_drop_negatives(params, ids):
    """(params gathered at ids with rows of negative ids zeroed, the broadcastable mask of
    non-negative ids)."""
    clipped = maximum(ids, array_ops.zeros_like(ids))
    gathered = gather(params, clipped)
    extra = subtract(array_ops.rank(gathered), array_ops.rank(ids))
    mask_shape = joining_ops.concat([array_ops.shape(ids), array_ops.fill(
        array_ops.reshape(extra, [1]), 1)], 0)
    mask = array_ops.reshape(greater_equal(ids, array_ops.zeros_like(ids)), mask_shape)
    return where_v2(mask, gathered, array_ops.zeros_like(gathered)), mask


@gradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return [gather(grad, op.inputs[1]), None]


@gradient("SegmentMean")
def _segment_mean_grad(op, grad):
    data, ids = op.inputs
    ones = array_ops.ones_like(ids, dtype=data.dtype)
    counts = segment_sum(ones, ids)
    extra = subtract(array_ops.rank(data), 1)
    shape = joining_ops.concat([array_ops.shape(counts), array_ops.fill(
        array_ops.reshape(extra, [1]), 1)], 0)
    return [gather(divide(grad, array_ops.reshape(counts, shape)), ids), None]


def _min_or_max_grad(op, grad, num_segments=None):
    """The gradient goes to the inputs equal to their segment's result, split evenly among
    ties."""
    data, ids = op.inputs[0], op.inputs[1]
    if num_segments is None:
        gathered, mask = gather(op.outputs[0], ids), None
    else:
        gathered, mask = _gather_drop_negatives(op.outputs[0], ids)
    selected = equal(data, gathered)
    if mask is not None:
        selected = logical_and(selected, mask)
    count = cast(selected, grad.dtype)
    if num_segments is None:
        num_selected = segment_sum(count, ids)
        spread = gather(divide(grad, num_selected), ids)
    else:
        num_selected = unsorted_segment_sum(count, ids, num_segments)
        spread, _ = _gather_drop_negatives(divide(grad, num_selected), ids)
    return where_v2(selected, spread, array_ops.zeros_like(spread))


@gradient("SegmentMax")
def _segment_max_grad(op, grad):
    return [_min_or_max_grad(op, grad), None]


gradient("SegmentMin")(_segment_max_grad)


@gradient("UnsortedSegmentMax")
def _unsorted_segment_max_grad(op, grad):
    return [_min_or_max_grad(op, grad, op.inputs[2]), None, None]


gradient("UnsortedSegmentMin")(_unsorted_segment_max_grad)


def _prod_grad(op, grad, num_segments):
    """d prod / d x_i = prod of the others: the product divided by x_i where x_i != 0; where
    x_i == 0 and it is the segment's only zero, the product of the nonzero others; 0 where a
    segment has two zeros."""
    data, ids = op.inputs[0], op.inputs[1]
    zero = array_ops.zeros_like(data)
    is_zero = equal(data, zero)
    num_zeros = unsorted_segment_sum(cast(is_zero, dtypes.int32), ids, num_segments)
    grad = where_v2(greater(num_zeros, 1), array_ops.zeros_like(grad), grad)
    non_zero = where_v2(is_zero, array_ops.ones_like(data), data)
    non_zero_prod = unsorted_segment_prod(non_zero, ids, num_segments)
    gathered_prod, _ = _gather_drop_negatives(op.outputs[0], ids)
    gathered_non_zero_prod, _ = _gather_drop_negatives(non_zero_prod, ids)
    others = where_v2(is_zero, gathered_non_zero_prod, divide(gathered_prod, non_zero))
    gathered_grad, _ = _gather_drop_negatives(grad, ids)
    return multiply(gathered_grad, others)


@gradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op, grad):
    return [_prod_grad(op, grad, op.inputs[2]), None, None]


@gradient("SegmentProd")
def _segment_prod_grad(op, grad):
    return [_prod_grad(op, grad, array_ops.shape(op.outputs[0])[0]), None]

