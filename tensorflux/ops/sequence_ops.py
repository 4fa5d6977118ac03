"""Range, cumulative sums and products, segment sums and BroadcastGradientArgs. Each op's
definition, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/sequence_ops.py.

This module defines TF1's `range`, so inside it the builtin is `builtins.range`.
"""

from __future__ import annotations

import builtins

import numpy as np

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, gather_ops, joining_ops
from tensorflux.ops.comparison_ops import (
    greater_equal,
    where_v2,
)
from tensorflux.ops.math_ops import (
    _REDUCIBLE,
    _TIDX,
    _const_inputs,
    _merge_shapes,
    _zeros,
    cast,
    div_no_nan,
    maximum,
    multiply,
    subtract,
)

__all__ = [
    "range", "cumsum", "cumprod", "unsorted_segment_sum"
]


# ==========================================================================================
# Range, cumulative sums and products, segment sums, broadcast gradient arguments.

_RANGE_TYPES = ("{bfloat16, float16, float32, float64, int8, int16, int32, int64, uint16, "
                "uint32, uint64}")


def _range_size(start, limit, delta, dtype=None) -> int:
    """The number of elements of Range(start, limit, delta); ValueError as TF words it.

    For floats the size is computed in `dtype` as TF does (in float32, (0.3 - 0) / 0.1 is
    exactly 3: three elements, where float64 arithmetic would give four)."""
    if delta == 0:
        raise ValueError(f"Requires delta != 0: {delta}")
    if delta > 0 and start > limit:
        raise ValueError(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise ValueError(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if isinstance(start, (int, np.integer)) and isinstance(delta, (int, np.integer)) and \
            isinstance(limit, (int, np.integer)):
        return int((builtins.abs(int(limit) - int(start)) + builtins.abs(int(delta)) - 1)
                   // builtins.abs(int(delta)))
    dt = np.dtype(dtype) if dtype is not None else np.dtype(np.float64)
    if dt.itemsize < 4:  # half and bfloat16 compute in float32 (the kernel's precision)
        dt = np.dtype(np.float32)
    start, limit, delta = (np.asarray(v).astype(dt) for v in (start, limit, delta))
    size = builtins.abs(float((limit - start) / delta))
    if not size <= 2**63 - 1:  # infinite, NaN or too large
        raise ValueError(f"Requires ((limit - start) / delta) <= {2**63 - 1}")
    return int(np.ceil(size))


def _range_shape(op):
    values = [common_shapes.constant_value(t) for t in op.inputs]
    for t in op.inputs:
        if t.shape.ndims is not None and t.shape.ndims != 0:
            raise ValueError(f"Shape must be rank 0 but is rank {t.shape.ndims}")
    if any(v is None for v in values):
        return [tensor_shape.TensorShape([None])]
    dt = op.attrs["Tidx"].as_numpy_dtype
    size = _range_size(*(np.asarray(v).item() for v in values), dtype=dt)
    return [tensor_shape.TensorShape([size])]


define_op("Range", inputs=["start: Tidx", "limit: Tidx", "delta: Tidx"],
          outputs=["output: Tidx"], attrs=[f"Tidx: {_RANGE_TYPES} = DT_INT32"],
          shape_fn=_range_shape)
not_differentiable("Range")

_RANGE_HIERARCHY = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF1's name
    """The sequence start, start + delta, ... up to but excluding limit (`tf.range`).

    `tf.range(n)` counts from 0. Without `dtype`, the widest type of the arguments wins in
    the order int32 < int64 < float32 < float64 (Python ints are int32, floats float32).

    Raises:
      ValueError: delta is 0, or it points away from limit (when the values are constant).
    """
    if limit is None:
        start, limit = 0, start
    with graph_lib.name_scope(name, "Range", [start, limit, delta]) as name:
        args = []
        for value, arg_name in ((start, "start"), (limit, "limit"), (delta, "delta")):
            if not isinstance(value, Tensor):
                value = convert_to_tensor(value, dtype=dtype, name=arg_name)
            args.append(value)
        if dtype is None:
            for t in args:
                if t.dtype.base_dtype not in _RANGE_HIERARCHY:
                    raise TypeError(f"Unsupported dtype {t.dtype.name} for tf.range")
            dtype = builtins.max((t.dtype.base_dtype for t in args),
                                 key=_RANGE_HIERARCHY.index)
        args = [cast(t, dtype) for t in args]
        return apply_op("Range", start=args[0], limit=args[1], delta=args[2], name=name)


def _cumulative(op_type: str) -> None:
    define_op(op_type, inputs=["x: T", "axis: Tidx"], outputs=["out: T"],
              attrs=["exclusive: bool = false", "reverse: bool = false", f"T: {_REDUCIBLE}",
                     _TIDX], shape_fn=common_shapes.unchanged)


_cumulative("Cumsum")
_cumulative("Cumprod")


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis` (`tf.cumsum`).

    With `exclusive`, element i sums the elements before i (the first is 0); with
    `reverse`, the sums run from the end.
    """
    with graph_lib.name_scope(name, "Cumsum", [x]) as name:
        x = convert_to_tensor(x, name="x")
        return apply_op("Cumsum", x=x, axis=axis, exclusive=exclusive, reverse=reverse,
                        name=name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis` (`tf.cumprod`); see `cumsum` for the flags."""
    with graph_lib.name_scope(name, "Cumprod", [x]) as name:
        x = convert_to_tensor(x, name="x")
        return apply_op("Cumprod", x=x, axis=axis, exclusive=exclusive, reverse=reverse,
                        name=name)


@gradient("Cumsum")
def _cumsum_grad(op, grad):
    return [cumsum(grad, op.inputs[1], exclusive=op.attrs["exclusive"],
                   reverse=not op.attrs["reverse"]), None]


@gradient("Cumprod")
def _cumprod_grad(op, grad):
    x, axis = op.inputs
    exclusive, reverse = op.attrs["exclusive"], op.attrs["reverse"]
    prod = cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = cumsum(multiply(prod, grad), axis, exclusive=exclusive, reverse=not reverse)
    return [div_no_nan(out, x), None]


def _unsorted_segment_shape(op):
    data, ids, num = (t.shape for t in op.inputs)
    if num.ndims is not None and num.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {num.ndims}")
    value = common_shapes.constant_value(op.inputs[2])
    n = None if value is None else int(np.asarray(value).item())
    if data.ndims is None or ids.ndims is None:
        return [tensor_shape.unknown_shape()]
    if ids.ndims > data.ndims:
        raise ValueError(f"Shape must be at least rank {ids.ndims} but is rank {data.ndims}")
    _merge_shapes(tensor_shape.TensorShape(data.as_list()[:ids.ndims]), ids)
    return [tensor_shape.TensorShape([n] + data.as_list()[ids.ndims:])]


define_op("UnsortedSegmentSum",
          inputs=["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"],
          outputs=["output: T"],
          attrs=[f"T: {_REDUCIBLE}", "Tindices: {int16, int32, int64}",
                 "Tnumsegments: {int32, int64} = DT_INT32"],
          shape_fn=_unsorted_segment_shape)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums of the slices of `data` with equal `segment_ids` (`tf.unsorted_segment_sum`).

    output[i] = sum of data[j...] over j with segment_ids[j...] == i; segment_ids' shape is
    a prefix of data's; negative ids are dropped; ids >= num_segments are an error.
    """
    return apply_op("UnsortedSegmentSum", data=data, segment_ids=segment_ids,
                    num_segments=num_segments, name=name or "UnsortedSegmentSum")


@gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    """grad gathered at the segment ids; rows of negative ids get zeros."""
    ids = op.inputs[1]
    clipped = maximum(ids, _zeros(ids))
    gathered = gather_ops.gather(grad, clipped)
    is_positive = greater_equal(ids, _zeros(ids))
    extra = None
    if gathered.shape.ndims is not None and ids.shape.ndims is not None:
        extra = gathered.shape.ndims - ids.shape.ndims
    if extra is None:
        extra = subtract(array_ops.rank(gathered), array_ops.rank(ids))
        ones = array_ops.fill(array_ops.reshape(extra, [1]), 1)
    else:
        ones = np.ones([extra], np.int32)
    mask = array_ops.reshape(is_positive, joining_ops.concat([array_ops.shape(ids), ones], 0))
    return [where_v2(mask, gathered, _zeros(gathered)), None, None]


def _broadcast_gradient_args_shape(op):
    for t in op.inputs:
        if t.shape.ndims is not None and t.shape.ndims != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims}")
    return [tensor_shape.TensorShape([None]), tensor_shape.TensorShape([None])]


define_op("BroadcastGradientArgs", inputs=["s0: T", "s1: T"], outputs=["r0: T", "r1: T"],
          attrs=["T: {int32, int64} = DT_INT32"], shape_fn=_broadcast_gradient_args_shape)
not_differentiable("BroadcastGradientArgs")


def broadcast_gradient_args(s0, s1, name=None):
    """The axes to sum the gradient of a broadcasting op over, for inputs of shapes s0 and
    s1: (r0, r1), int vectors. An input's axes are those (of the broadcast output) where it
    has, or is padded with, size 1; none at all when s0 == s1."""
    return apply_op("BroadcastGradientArgs", s0=s0, s1=s1,
                    name=name or "BroadcastGradientArgs")


# Constant evaluation for shape inference.


@common_shapes.constant_evaluator("Range")
def _range_value(op):
    values = _const_inputs(op)
    if values is None:
        return None
    start, limit, delta = (np.asarray(v).item() for v in values)
    dt = op.attrs["Tidx"].as_numpy_dtype
    size = _range_size(start, limit, delta, dt)
    return (np.asarray(start, dt) + np.arange(size) * np.asarray(delta, dt)).astype(dt)
