"""Math functions TF1 builds from ops (`tf.math.*`): compositions of existing ops,
differentiable through them."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, reduction_ops
from tensorflux.ops.comparison_ops import equal, where_v2
from tensorflux.ops.gather_ops import scatter_nd
from tensorflux.ops.joining_ops import stack
from tensorflux.ops.math_ops import (
    add,
    add_n,
    cast,
    div_no_nan,
    maximum,
    minimum,
    multiply,
    subtract,
    truediv,
)
from tensorflux.ops.nn_ops import approx_top_k, softplus
from tensorflux.ops.unary_ops import _const_like, abs, log1p, negative, sqrt, square  # noqa: A004

__all__ = ["accumulate_n", "confusion_matrix", "log_sigmoid", "saturate_cast"]


def xlogy(x, y, name=None):
    """x * log(y), 0 where x == 0 (`tf.math.xlogy`)."""
    return apply_op("Xlogy", x=x, y=y, name=name or "Xlogy")


def xdivy(x, y, name=None):
    """x / y, 0 where x == 0 (`tf.math.xdivy`)."""
    return apply_op("Xdivy", x=x, y=y, name=name or "Xdivy")


def xlog1py(x, y, name=None):
    """x * log1p(y), 0 where x == 0 (`tf.math.xlog1py`)."""
    with graph_lib.name_scope(name, "xlog1py", [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype, name="y")
        zero = array_ops.zeros_like(x)
        is_zero = equal(x, zero)
        safe_y = where_v2(is_zero, array_ops.zeros_like(y), y)
        return where_v2(is_zero, zero, multiply(x, log1p(safe_y)))


def multiply_no_nan(x, y, name=None):
    """x * y, 0 where y == 0 even if x is inf or NaN (`tf.math.multiply_no_nan`)."""
    with graph_lib.name_scope(name, "multiply_no_nan", [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype, name="y")
        zero = array_ops.zeros_like(y)
        is_zero = equal(y, zero)
        return where_v2(is_zero, zero, multiply(where_v2(is_zero, zero, x), y))


def reciprocal_no_nan(x, name=None):
    """1 / x, 0 where x == 0 (`tf.math.reciprocal_no_nan`)."""
    with graph_lib.name_scope(name, "reciprocal_no_nan", [x]):
        x = convert_to_tensor(x, name="x")
        return div_no_nan(array_ops.ones_like(x), x)


def log_sigmoid(x, name=None):
    """log(1 / (1 + exp(-x))), computed as -softplus(-x) (`tf.math.log_sigmoid`)."""
    with graph_lib.name_scope(name, "LogSigmoid", [x]):
        x = convert_to_tensor(x, name="x")
        return negative(softplus(negative(x)))


def softsign(features, name=None):
    """features / (|features| + 1) (`tf.math.softsign`, `tf.nn.softsign`)."""
    with graph_lib.name_scope(name, "Softsign", [features]):
        x = convert_to_tensor(features, name="features")
        return truediv(x, add(abs(x), _const_like(1, x)))


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance of elements across axes (`tf.math.reduce_variance`)."""
    with graph_lib.name_scope(name, "reduce_variance", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        mean = reduction_ops.reduce_mean(x, axis, keepdims=True)
        diff = subtract(x, mean)
        sq = square(abs(diff)) if x.dtype.is_complex else square(diff)
        return reduction_ops.reduce_mean(sq, axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation of elements across axes (`tf.math.reduce_std`)."""
    with graph_lib.name_scope(name, "reduce_std", [input_tensor]):
        return sqrt(reduce_variance(input_tensor, axis, keepdims))


def polyval(coeffs, x, name=None):
    """sum_i coeffs[i] x^(n-1-i), by Horner's rule (`tf.math.polyval`); `coeffs` is a
    list of tensors."""
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}.")
    with graph_lib.name_scope(name, "polyval", [x]):
        x = convert_to_tensor(x, name="x")
        if not coeffs:
            return array_ops.zeros_like(x)
        out = convert_to_tensor(coeffs[0], dtype=x.dtype)
        for c in coeffs[1:]:
            out = add(multiply(out, x), convert_to_tensor(c, dtype=x.dtype))
        return out


def zero_fraction(value, name=None):
    """The fraction of zeros in `value`, as float32 (`tf.math.zero_fraction`)."""
    with graph_lib.name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        zeros = cast(equal(value, array_ops.zeros_like(value)), dtypes.float32)
        return reduction_ops.reduce_mean(zeros)


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The elementwise sum of `inputs` (`tf.math.accumulate_n`), as add_n."""
    return add_n(inputs, name=name)


def confusion_matrix(labels, predictions, num_classes=None, weights=None,
                     dtype=dtypes.int32, name=None):
    """The [num_classes, num_classes] counts (or summed weights) of (label, prediction)
    pairs (`tf.math.confusion_matrix`); num_classes defaults to the largest value + 1."""
    with graph_lib.name_scope(name, "confusion_matrix", [labels, predictions, weights]):
        labels = cast(convert_to_tensor(labels, name="labels"), dtypes.int64)
        predictions = cast(convert_to_tensor(predictions, name="predictions"), dtypes.int64)
        if num_classes is None:
            num_classes = add(maximum(reduction_ops.reduce_max(predictions),
                                      reduction_ops.reduce_max(labels)),
                              _const_like(1, labels))
        n = cast(num_classes, dtypes.int64)
        indices = stack([labels, predictions], axis=1)
        values = array_ops.ones_like(predictions, dtype) if weights is None else \
            cast(convert_to_tensor(weights, name="weights"), dtype)
        return scatter_nd(indices, values, stack([n, n]))


def saturate_cast(value, dtype, name=None):
    """`value` cast to dtype with values clipped to its range first
    (`tf.dtypes.saturate_cast`)."""
    with graph_lib.name_scope(name, "saturate_cast", [value]):
        value = convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype)
        src = value.dtype
        if src.min < dtype.min:
            value = maximum(value, _const_like(dtype.min, value))
        if src.max > dtype.max:
            value = minimum(value, _const_like(dtype.max, value))
        return cast(value, dtype)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True, name=None):
    """The k largest values of `operand` along `reduction_dimension` and their indices
    (`tf.math.approx_max_k`): an ApproxTopK op, exact on CPU."""
    return approx_top_k(operand, k, reduction_dimension=reduction_dimension,
                        recall_target=recall_target, is_max_k=True,
                        reduction_input_size_override=reduction_input_size_override,
                        aggregate_to_topk=aggregate_to_topk, name=name)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True, name=None):
    """The k smallest values of `operand` along `reduction_dimension` and their indices
    (`tf.math.approx_min_k`): an ApproxTopK op with is_max_k=False, exact (TensorFlow's CPU
    has no kernel for it)."""
    return approx_top_k(operand, k, reduction_dimension=reduction_dimension,
                        recall_target=recall_target, is_max_k=False,
                        reduction_input_size_override=reduction_input_size_override,
                        aggregate_to_topk=aggregate_to_topk, name=name)
