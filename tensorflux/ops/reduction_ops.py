"""Reductions (Sum, Mean, Max, Min, Prod, All, Any, logsumexp, norms, count_nonzero) and
ArgMax/ArgMin. Each op's definition, TF1 wrapper and gradient sit together; kernels are in
tensorflux/kernels/cpu/reduction_ops.py.

`range` here is TF1's (from sequence_ops); the builtin is `builtins.range`.
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
    equal,
    logical_not,
    not_equal,
    where,
    where_v2,
)
from tensorflux.ops.math_ops import (
    _ORDERED,
    _REDUCIBLE,
    _TIDX,
    _conj,
    _const_inputs,
    _zeros,
    add,
    cast,
    floordiv,
    floormod,
    maximum,
    multiply,
    realdiv,
    subtract,
)
from tensorflux.ops.sequence_ops import cumprod, range, unsorted_segment_sum
from tensorflux.ops.unary_ops import (
    _const_like,
    exp,
    is_finite,
    log,
)

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all",
    "reduce_any", "reduce_logsumexp", "reduce_euclidean_norm", "count_nonzero", "argmax",
    "argmin"
]


# ==========================================================================================
# Reductions.


def _reduction_shape(op):
    x, axes_t = op.inputs[0], op.inputs[1]
    keep_dims = op.attrs["keep_dims"]
    rank = x.shape.ndims
    if axes_t.shape.ndims is not None and axes_t.shape.ndims > 1:
        raise ValueError(f"Shape must be at most rank 1 but is rank {axes_t.shape.ndims}")
    axes = _known_axes(axes_t, rank)
    if axes is None:
        if rank is not None and keep_dims:
            return [tensor_shape.unknown_shape(rank=rank)]
        if rank is not None and axes_t.shape.num_elements() == 0:
            return [x.shape]
        return [tensor_shape.unknown_shape()]
    if rank is None:
        return [tensor_shape.unknown_shape()]
    dims = x.shape.as_list()
    if keep_dims:
        return [tensor_shape.TensorShape([1 if i in axes else d for i, d in enumerate(dims)])]
    return [tensor_shape.TensorShape([d for i, d in enumerate(dims) if i not in axes])]


def _known_axes(axes_t, rank):
    """Constant axes normalized to [0, rank) (ValueError if out of range), or None."""
    axes = common_shapes.known_axes(None, axes_t, rank)
    if axes is not None and rank is not None:
        value = np.reshape(common_shapes.constant_value(axes_t), -1)
        for a in value:
            if not -rank <= int(a) < rank:  # a scalar has no axis 0 (TF's shape function)
                raise ValueError(f"Invalid reduction dimension {int(a)} for input with "
                                 f"{rank} dimensions.")
    return axes


def _reduction(op_type: str, input_type: str = "T", types: str = _REDUCIBLE,
               flops: str | None = None) -> None:
    attrs = ["keep_dims: bool = false", _TIDX]
    if input_type == "T":
        attrs.insert(1, f"T: {types}")
    define_op(op_type, inputs=[f"input: {input_type}", "reduction_indices: Tidx"],
              outputs=[f"output: {input_type}"], attrs=attrs, shape_fn=_reduction_shape,
              flops=flops)


def _deprecated_lookup(new_name, new_value, old_name, old_value):
    if new_value is not None and old_value is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return new_value if new_value is not None else old_value


def _reduction_dims(x: Tensor, axis):
    """The axes to reduce: `axis`, or every axis of x when it is None."""
    if axis is not None:
        return axis
    rank = x.shape.ndims
    if rank is not None:
        return convert_to_tensor(np.arange(rank, dtype=np.int32), name="Const")
    return range(0, array_ops.rank(x), 1)


def _reduce(op_type: str, input_tensor, axis, keepdims, name, reduction_indices,
            keep_dims, default_name: str):
    keepdims = _deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = False if keepdims is None else builtins.bool(keepdims)
    x = convert_to_tensor(input_tensor, name="input_tensor")
    out = apply_op(op_type, input=x, reduction_indices=_reduction_dims(x, axis),
                   keep_dims=keepdims, name=name or default_name)
    if axis is None and not keepdims:
        out.set_shape([])
    return out


def _reduction_wrapper(op_type: str, public: str, doc: str):
    def wrapper(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
        return _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices,
                       keep_dims, op_type)

    wrapper.__name__ = wrapper.__qualname__ = public
    wrapper.__doc__ = doc + """

    Args:
      input_tensor: the tensor to reduce.
      axis: the dimensions to reduce: None (all), an int, a list, or an int tensor;
        negative values count from the end. `reduction_indices` is its TF1 alias.
      keepdims: keep reduced dimensions with length 1 (`keep_dims` is its TF1 alias).
      name: the op name.

    Raises:
      ValueError: an axis out of range, or both spellings of one argument.
    """
    return wrapper


_reduction("Sum", flops="reduce")
reduce_sum = _reduction_wrapper("Sum", "reduce_sum", "The sum of elements across axes "
                                "(`tf.reduce_sum`).")
_reduction("Mean", flops="mean")
reduce_mean = _reduction_wrapper("Mean", "reduce_mean", "The mean of elements across axes "
                                 "(`tf.reduce_mean`); integer means truncate toward zero.")
_reduction("Prod")
reduce_prod = _reduction_wrapper("Prod", "reduce_prod", "The product of elements across "
                                 "axes (`tf.reduce_prod`).")
_reduction("Max", types=_ORDERED)
reduce_max = _reduction_wrapper("Max", "reduce_max", "The maximum of elements across axes "
                                "(`tf.reduce_max`); -inf (or the type's lowest value) when "
                                "empty.")
_reduction("Min", types=_ORDERED)
reduce_min = _reduction_wrapper("Min", "reduce_min", "The minimum of elements across axes "
                                "(`tf.reduce_min`); inf (or the type's highest value) when "
                                "empty.")
_reduction("All", input_type="bool")
reduce_all = _reduction_wrapper("All", "reduce_all", "Logical AND across axes "
                                "(`tf.reduce_all`).")
_reduction("Any", input_type="bool")
reduce_any = _reduction_wrapper("Any", "reduce_any", "Logical OR across axes "
                                "(`tf.reduce_any`).")
_reduction("EuclideanNorm")
reduce_euclidean_norm = _reduction_wrapper("EuclideanNorm", "reduce_euclidean_norm",
                                           "sqrt(sum(|x|^2)) across axes "
                                           "(`tf.math.reduce_euclidean_norm`).")
not_differentiable("All", "Any")


def _kept_dims_shape(x: Tensor, axes: Tensor):
    """The shape of a keep_dims reduction of x over `axes`: a list of ints when it is known
    at graph-construction time, else an int32 Tensor."""
    rank = x.shape.ndims
    known = _known_axes(axes, rank) if rank is not None else None
    if known is not None and x.shape.is_fully_defined():
        return [1 if i in known else d for i, d in enumerate(x.shape.as_list())]
    input_shape = array_ops.shape(x)
    n = array_ops.size(input_shape)
    axes = floormod(add(cast(axes, dtypes.int32), n), n)
    positions = array_ops.reshape(range(0, n), [-1, 1])
    reduced = reduce_any(equal(positions, array_ops.reshape(axes, [1, -1])), axis=1)
    return where_v2(reduced, np.int32(1), input_shape)


def _broadcast_back(op, grad):
    """grad of a reduction's output, reshaped with kept dims and broadcast to the input's
    shape."""
    x = op.inputs[0]
    if not op.attrs["keep_dims"]:
        grad = array_ops.reshape(grad, _kept_dims_shape(x, op.inputs[1]))
    target = x.shape.as_list() if x.shape.is_fully_defined() else array_ops.shape(x)
    if isinstance(target, list) and grad.shape.as_list() == target:
        return grad
    return joining_ops.broadcast_to(grad, target)


@gradient("Sum")
def _sum_grad(op, grad):
    return [_broadcast_back(op, grad), None]


def _num_reduced(op):
    """The number of input elements per output element, as a scalar of the input's dtype."""
    x, y = op.inputs[0], op.outputs[0]
    if x.shape.is_fully_defined() and y.shape.is_fully_defined():
        n = int(np.prod(x.shape.as_list(), dtype=np.int64)) // builtins.max(
            int(np.prod(y.shape.as_list(), dtype=np.int64)), 1)
        return _const_like(n, x, name="factor")
    factor = floordiv(reduce_prod(array_ops.shape(x)),
                      maximum(reduce_prod(array_ops.shape(y)), np.int32(1)))
    return cast(factor, x.dtype.base_dtype)


@gradient("Mean")
def _mean_grad(op, grad):
    return [realdiv(_broadcast_back(op, grad), _num_reduced(op)), None]


def _min_or_max_reduction_grad(op, grad):
    x = op.inputs[0]
    y = op.outputs[0]
    if not op.attrs["keep_dims"]:
        kept = _kept_dims_shape(x, op.inputs[1])
        y = array_ops.reshape(y, kept)
        grad = array_ops.reshape(grad, kept)
    indicators = cast(equal(y, x), grad.dtype)
    num_selected = reduce_sum(indicators, op.inputs[1], keepdims=True)
    return [multiply(realdiv(indicators, num_selected), grad), None]


gradient("Max")(_min_or_max_reduction_grad)
gradient("Min")(_min_or_max_reduction_grad)


@gradient("Prod")
def _prod_grad(op, grad):
    """Products of all other elements, without dividing (zeros are fine): the reduced axes
    are moved to the front and flattened, and exclusive cumulative products from both ends
    are multiplied (TensorFlow's algorithm)."""
    x, axes = op.inputs
    grad = _broadcast_back(op, grad)
    rank = x.shape.ndims
    known = _known_axes(axes, rank) if rank is not None else None
    if known is not None:
        reduced = sorted(set(known))
        other = [i for i in builtins.range(rank) if i not in reduced]
        perm = reduced + other
        inverse = [perm.index(i) for i in builtins.range(rank)]
        input_shape = array_ops.shape(x)
        reduced_num = reduce_prod(gather_ops.gather(input_shape, reduced)) if reduced else 1
        other_num = reduce_prod(gather_ops.gather(input_shape, other)) if other else 1
    else:
        input_shape = array_ops.shape(x)
        n = array_ops.size(input_shape)
        ax = floormod(add(cast(array_ops.reshape(axes, [-1]), dtypes.int32), n), n)
        mask = reduce_any(equal(array_ops.reshape(range(0, n), [-1, 1]),
                                array_ops.reshape(ax, [1, -1])), axis=1)
        reduced = cast(array_ops.reshape(where(mask), [-1]), dtypes.int32)
        other = cast(array_ops.reshape(where(logical_not(mask)), [-1]), dtypes.int32)
        perm = joining_ops.concat([reduced, other], 0)
        inverse = unsorted_segment_sum(range(0, n), perm, n)
        reduced_num = reduce_prod(gather_ops.gather(input_shape, reduced))
        other_num = reduce_prod(gather_ops.gather(input_shape, other))
    permuted = array_ops.transpose(x, perm)
    permuted_shape = array_ops.shape(permuted)
    reshaped = array_ops.reshape(permuted, joining_ops.stack([reduced_num, other_num]))
    left = cumprod(reshaped, axis=0, exclusive=True)
    right = cumprod(reshaped, axis=0, exclusive=True, reverse=True)
    y = array_ops.reshape(multiply(_conj(left), _conj(right)), permuted_shape)
    out = multiply(grad, array_ops.transpose(y, inverse))
    return [array_ops.reshape(out, input_shape), None]


@gradient("EuclideanNorm")
def _euclidean_norm_grad(op, grad):
    x, output = op.inputs[0], op.outputs[0]
    if not op.attrs["keep_dims"]:
        kept = _kept_dims_shape(x, op.inputs[1])
        output = array_ops.reshape(output, kept)
        grad = array_ops.reshape(grad, kept)
    return [realdiv(x, realdiv(output, grad)), None]


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None,
                     reduction_indices=None, keep_dims=None):
    """log(sum(exp(x))) across axes, computed stably (`tf.reduce_logsumexp`).

    Args:
      input_tensor: the tensor to reduce.
      axis: the dimensions to reduce (None: all); `reduction_indices` is its alias.
      keepdims: keep reduced dimensions with length 1 (`keep_dims` is its alias).
      name: the name scope (default "ReduceLogSumExp").
    """
    keepdims = _deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = builtins.bool(keepdims)
    with graph_lib.name_scope(name, "ReduceLogSumExp", [input_tensor]) as name:
        x = convert_to_tensor(input_tensor, name="input_tensor")
        raw_max = reduce_max(x, axis, keepdims=True)
        my_max = array_ops.stop_gradient(where_v2(is_finite(raw_max), raw_max, _zeros(x)))
        result = log(reduce_sum(exp(subtract(x, my_max)), axis, keepdims=keepdims))
        if not keepdims:
            my_max = array_ops.reshape(my_max, array_ops.shape(result))
        result = add(result, my_max, name=name)
        if axis is None and not keepdims:
            result.set_shape([])
        return result


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64,
                  name=None, reduction_indices=None, keep_dims=None, input=None):  # noqa: A002
    """The number of non-zero elements across axes (`tf.count_nonzero`), as `dtype`."""
    input_tensor = _deprecated_lookup("input", input, "input_tensor", input_tensor)
    keepdims = _deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = _deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    with graph_lib.name_scope(name, "count_nonzero", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input")
        nonzero = cast(not_equal(x, _zeros(x)), dtypes.int64)
        return cast(reduce_sum(nonzero, axis, keepdims=builtins.bool(keepdims)), dtype)


# ---- ArgMax, ArgMin ----------------------------------------------------------------------


def _arg_reduce_shape(op):
    x, dim_t = op.inputs
    rank = x.shape.ndims
    value = common_shapes.constant_value(dim_t)
    if rank is not None and rank <= 1:  # as TF: a scalar (the kernel checks the dimension)
        return [tensor_shape.TensorShape([])]
    if value is None or rank is None:
        return [tensor_shape.unknown_shape(rank=rank - 1) if rank else
                tensor_shape.unknown_shape()]
    d = int(np.reshape(value, -1)[0])
    if not -rank <= d < rank:
        raise ValueError(f"Expected dimension in the range [{-rank}, {rank}), but got {d}")
    d %= rank
    dims = x.shape.as_list()
    return [tensor_shape.TensorShape(dims[:d] + dims[d + 1:])]


_ARG_TYPES = ("{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, "
              "float16, uint32, uint64, qint8, quint8, qint32, qint16, quint16, bool}")
define_op("ArgMax", inputs=["input: T", "dimension: Tidx"], outputs=["output: output_type"],
          attrs=[f"T: {_ARG_TYPES}", "Tidx: {int16, int32, int64} = DT_INT32",
                 "output_type: {int16, uint16, int32, int64} = DT_INT64"], flops="reduce",
          shape_fn=_arg_reduce_shape)
define_op("ArgMin", inputs=["input: T", "dimension: Tidx"], outputs=["output: output_type"],
          attrs=[f"T: {_ARG_TYPES}", _TIDX, "output_type: {int32, int64} = DT_INT64"],
          shape_fn=_arg_reduce_shape, flops="reduce")
not_differentiable("ArgMax", "ArgMin")


def _arg_reduce(op_type, input, axis, name, dimension, output_type):  # noqa: A002
    axis = _deprecated_lookup("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0
    return apply_op(op_type, input=input, dimension=axis,
                    output_type=dtypes.as_dtype(output_type), name=name or op_type)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """The index of the largest value along `axis` (default 0) (`tf.argmax`).

    Raises:
      ValueError: both `axis` and its TF1 alias `dimension` are given.
    """
    return _arg_reduce("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """The index of the smallest value along `axis` (default 0) (`tf.argmin`).

    Raises:
      ValueError: both `axis` and its TF1 alias `dimension` are given.
    """
    return _arg_reduce("ArgMin", input, axis, name, dimension, output_type)


# Constant evaluation for shape inference.

_CONSTANT_REDUCTIONS = {"Sum": np.sum, "Prod": np.prod, "Max": np.max, "Min": np.min}


@common_shapes.constant_evaluator(*_CONSTANT_REDUCTIONS)
def _reduction_value(op):
    values = _const_inputs(op)
    if values is None:
        return None
    x = np.asarray(values[0])
    axes = tuple(int(a) % builtins.max(x.ndim, 1) for a in np.reshape(values[1], -1))
    if len(set(axes)) != len(axes) or (op.type in ("Max", "Min") and x.size == 0):
        return None
    fn = _CONSTANT_REDUCTIONS[op.type]
    return np.asarray(fn(x, axis=axes, keepdims=op.attrs["keep_dims"]), dtype=x.dtype)
