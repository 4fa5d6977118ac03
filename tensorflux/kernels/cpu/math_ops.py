"""CPU kernels of the math ops (tensorflux/ops/math_ops.py), in NumPy.

Every kernel returns exactly the op's output dtype: all inputs of an elementwise op share
one dtype, and NumPy keeps it for same-typed operands; reductions and ops that NumPy would
widen (integer sums, bfloat16 matmul) pass `dtype=` or cast back. float16 and bfloat16
reductions and the transcendental functions NumPy lacks accumulate or compute in float32.
Kernels never write into their inputs.

Floating-point exceptions (0/0, log(-1), overflow) give NaN/inf as in TensorFlow; NumPy's
RuntimeWarnings for them are silenced for this module only, which costs nothing per call
(an `np.errstate` block would cost more than many of these kernels).
"""

from __future__ import annotations

import math
import operator
import warnings

import ml_dtypes
import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.registry import kernel, kernel_factory

try:  # optional: fast, exact special functions
    from scipy import special as _special
except ImportError:  # pragma: no cover - depends on the environment
    _special = None

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=__name__)

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F16 = np.dtype(np.float16)
_LOW_PRECISION = (_BF16, _F16)
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _incompatible(x, y) -> errors.InvalidArgumentError:
    return _invalid(f"Incompatible shapes: {_shape_str(np.shape(x))} vs. "
                    f"{_shape_str(np.shape(y))}")


def _is_int(a) -> bool:
    return a.dtype.kind in "iu"


def _check_divisor(y, x=None) -> None:
    """Integer division by zero is an error, where a zero divisor is used at all (an empty
    dividend broadcasts to an empty result)."""
    if not np.all(y) and (x is None or x.size):
        raise _invalid("Integer division by zero")


# ==========================================================================================
# Elementwise binary ops.


# Two NumPy scalars of one type (what a ufunc returns for 0-d inputs: every scalar loop
# variable after its first iteration) take NumPy's scalar math, which gives the ufunc's result
# at a twentieth of the cost (~70 ns instead of ~1.5 us a call).
_SCALAR_OPERATORS = {np.add: operator.add, np.subtract: operator.sub,
                     np.multiply: operator.mul, np.less: operator.lt,
                     np.less_equal: operator.le, np.greater: operator.gt,
                     np.greater_equal: operator.ge}
_FAST_SCALARS = frozenset((np.float32, np.float64, np.int32, np.int64))


def _binary(fn):
    """A kernel applying `fn(x, y)` with broadcasting, and TF's message for shapes that do
    not broadcast."""
    scalar_op = _SCALAR_OPERATORS.get(fn)

    def compute(ctx, x, y):
        if scalar_op is not None and type(x) is type(y) and type(x) in _FAST_SCALARS:
            return scalar_op(x, y)
        try:
            return fn(x, y)
        except ValueError:
            if not _broadcastable(x, y):
                raise _incompatible(x, y) from None
            raise

    return compute


def _broadcastable(x, y) -> bool:
    try:
        np.broadcast_shapes(np.shape(x), np.shape(y))
    except ValueError:
        return False
    return True


# Integer division rounds as TensorFlow's functors do, and a zero divisor is an error.


def _int_truncate_div(x, y):
    _check_divisor(y, x)
    q = np.floor_divide(np.abs(x), np.abs(y))
    return np.where((x < 0) != (y < 0), np.negative(q), q) if x.dtype.kind == "i" else q


def _int_floor_div(x, y):
    _check_divisor(y, x)
    return np.floor_divide(x, y)


def _int_floor_mod(x, y):
    _check_divisor(y, x)
    return np.remainder(x, y)


def _int_truncate_mod(x, y):
    _check_divisor(y, x)
    return np.fmod(x, y)


def _int_pow(x, y):
    if x.dtype.kind == "i" and np.any(y < 0):
        raise _invalid("Integers to negative integer powers are not allowed")
    return np.power(x, y)


def _float_floor_div(x, y):
    return np.floor(np.true_divide(x, y))  # floor(1 / 0.1) is 10, as in TF (NumPy's is 9)


def _float_truncate_div(x, y):
    return np.trunc(np.true_divide(x, y))


def _squared_difference(x, y):
    d = np.subtract(x, y)
    if d.dtype.kind == "c":
        return np.multiply(d, np.conj(d))
    return np.multiply(d, d)


def _zero_where(cond, value):
    """value with zeros where cond holds (cond broadcasts against value)."""
    return np.where(cond, value.dtype.type(0), value)


def _div_no_nan(x, y):
    zero = np.equal(y, 0)
    return _zero_where(zero, np.true_divide(x, np.where(zero, y.dtype.type(1), y)))


def _xlogy(x, y):
    zero = np.equal(x, 0)
    return _zero_where(zero, np.multiply(x, np.log(np.where(zero, y.dtype.type(1), y))))


def _xdivy(x, y):
    zero = np.equal(x, 0)
    return _zero_where(zero, np.true_divide(x, np.where(zero, y.dtype.type(1), y)))


# op type -> fn, or (fn for floating and complex types, fn for integer types).
_BINARY = {
    "AddV2": np.add, "Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
    "Div": (np.true_divide, _int_truncate_div),
    "RealDiv": (np.true_divide, _int_truncate_div),
    "FloorDiv": (_float_floor_div, _int_floor_div),
    "FloorMod": (np.remainder, _int_floor_mod),
    "TruncateDiv": (_float_truncate_div, _int_truncate_div),
    "TruncateMod": (np.fmod, _int_truncate_mod),
    "Pow": (np.power, _int_pow),
    "Maximum": np.maximum, "Minimum": np.minimum, "SquaredDifference": _squared_difference,
    "DivNoNan": _div_no_nan, "Xlogy": _xlogy, "Xdivy": _xdivy, "Atan2": np.arctan2,
    "BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or,
    "BitwiseXor": np.bitwise_xor,
    "Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater,
    "GreaterEqual": np.greater_equal, "LogicalAnd": np.logical_and,
    "LogicalOr": np.logical_or,
}


def _binary_factory(fns):
    float_fn, int_fn = fns

    def factory(node):
        dtype = node.attrs["T"]
        return _binary(int_fn if dtype.is_integer else float_fn)

    return factory


# Big float32/float64 arithmetic: one operand the shape of the output, the other the same
# shape or broadcast along its leading axes (x + bias). Both become 2-D row views, a short
# broadcast vector is tiled to ~1,024 elements (NumPy's inner loop is slow on 32-element
# rows: 1.05 ms -> 0.64 ms for 2M floats + a 32-vector), and rows split over the intra-op
# threads. Same ufunc on the same element pairs: the values are those of the plain call.
_SPLIT_BINARY = {"AddV2": np.add, "Add": np.add, "Sub": np.subtract, "Mul": np.multiply}
_TILE_ELEMENTS = 1024


def _row_views(big, small):
    """(big as 2-D rows, small as a row vector or same-shape rows) or None."""
    if small.shape == big.shape:
        if not (big.flags.c_contiguous and small.flags.c_contiguous):
            return None
        return big.reshape(-1, big.shape[-1] if big.ndim else 1), \
            small.reshape(-1, big.shape[-1] if big.ndim else 1)
    trail = small.shape
    while trail and trail[0] == 1:
        trail = trail[1:]
    if not trail or len(trail) > big.ndim or big.shape[big.ndim - len(trail):] != trail or \
            not big.flags.c_contiguous:
        return None
    width = small.size
    rows = big.size // width
    k = 1
    while k * width < _TILE_ELEMENTS and rows % (2 * k) == 0:
        k *= 2
    vec = small.reshape(-1)
    return big.reshape(rows // k, k * width), (np.tile(vec, k) if k > 1 else vec)


def _split_binary(ufunc):
    generic = _binary(ufunc)

    def compute(ctx, x, y):
        if x.dtype in _BLAS_FLOATS and y.dtype == x.dtype and \
                max(x.size, y.size) >= intra_op.MIN_ELEMENTS:
            x_big = x.size >= y.size
            views = _row_views(x, y) if x_big else _row_views(y, x)
            if views is not None:
                big, small = views
                out = np.empty(big.shape, x.dtype)
                if small.ndim == 1:  # a row vector: shared by every range
                    def fn(o, r):
                        ufunc(r, small, out=o) if x_big else ufunc(small, r, out=o)

                    arrays = (big,)
                else:
                    def fn(o, p, q):
                        ufunc(p, q, out=o)

                    arrays = (big, small) if x_big else (small, big)
                intra_op.split_elementwise(fn, out, *arrays, parts=intra_op.workers(ctx))
                return out.reshape(x.shape if x_big else y.shape)
        return generic(ctx, x, y)

    return compute


_ADD_KERNEL = _split_binary(np.add)  # also BiasAdd's (nn_ops.py), for NHWC data

for _op_type, _fn in _BINARY.items():
    if _op_type in _SPLIT_BINARY:
        kernel(_op_type)(_split_binary(_fn))
    elif isinstance(_fn, tuple):
        kernel_factory(_op_type)(_binary_factory(_fn))
    else:
        kernel(_op_type)(_binary(_fn))


@kernel_factory("Complex")
def _complex(node):
    out = node.attrs["Tout"].as_numpy_dtype

    def compute(ctx, re, im):
        try:
            z = np.empty(np.broadcast_shapes(re.shape, im.shape), out)
        except ValueError:
            raise _incompatible(re, im) from None
        z.real = re
        z.imag = im
        return z

    return compute


@kernel_factory("Equal", "NotEqual")
def _equality(node):
    fn = np.equal if node.op == "Equal" else np.not_equal
    strict = node.attrs.get("incompatible_shape_error", True)

    def compute(ctx, x, y):
        if not _broadcastable(x, y):
            if strict:
                raise _incompatible(x, y)
            return np.asarray(node.op != "Equal")
        if x.dtype == object:
            return np.asarray(fn(x, y), dtype=bool)
        return fn(x, y)

    return compute


# ==========================================================================================
# Elementwise unary ops.


def _in_float32(fn):
    """fn computed in float32 for float16/bfloat16 inputs, cast back to their dtype."""

    def compute(x):
        if x.dtype in _LOW_PRECISION:
            return fn(x.astype(np.float32)).astype(x.dtype)
        return fn(x)

    return compute


def _vectorized(scalar_fn):
    """A float function of arrays from a scalar `math` function (slow: the fallback when
    SciPy is absent)."""
    ufunc = np.frompyfunc(scalar_fn, 1, 1)

    def compute(x):
        return ufunc(x).astype(x.dtype)

    return compute


def _sigmoid(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    out = np.exp(np.negative(x))
    out += 1
    return np.reciprocal(out, out=out)


def _rsqrt(x):
    out = np.sqrt(x)
    return np.reciprocal(out, out=out)


def _reciprocal(x):
    if _is_int(x):
        _check_divisor(x)
        return np.floor_divide(np.ones((), x.dtype), x) * (np.abs(x) == 1)
    return np.reciprocal(x)


def _digamma_series(x):
    """psi(x) for float64 x: reflection below 0.5, recurrence up to 6, then the asymptotic
    series (error below 1e-13)."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    neg = x < 0.5
    if np.any(neg):
        out[neg] = -np.pi / np.tan(np.pi * x[neg])
        x = np.where(neg, 1 - x, x)
    while np.any(x < 6):
        small = x < 6
        out[small] -= 1 / x[small]
        x = np.where(small, x + 1, x)
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 / 132))))
    return out + np.log(x) - 0.5 / x - series


if _special is not None:
    _erf, _erfc, _lgamma, _digamma = (_special.erf, _special.erfc, _special.gammaln,
                                      _special.psi)

    def _sigmoid(x):  # noqa: F811 - SciPy's is exact and never overflows
        if x.dtype.kind == "c":
            return 1 / (1 + np.exp(-x))
        if x.dtype in _LOW_PRECISION:
            return _special.expit(x.astype(np.float32)).astype(x.dtype)
        return _special.expit(x)
else:  # pragma: no cover - depends on the environment
    _erf, _erfc, _lgamma = (_vectorized(math.erf), _vectorized(math.erfc),
                            _vectorized(math.lgamma))

    def _digamma(x):
        return _digamma_series(x).astype(x.dtype)


_UNARY = {
    "Neg": np.negative, "Abs": np.abs, "ComplexAbs": np.abs, "Sign": np.sign,
    "Square": np.square, "Sqrt": np.sqrt, "Rsqrt": _rsqrt, "Exp": np.exp,
    "Expm1": np.expm1, "Log": np.log, "Log1p": np.log1p, "Sin": np.sin, "Cos": np.cos,
    "Tan": np.tan, "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan,
    "Sinh": np.sinh, "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh,
    "Atanh": np.arctanh, "Tanh": np.tanh, "Sigmoid": _sigmoid, "Reciprocal": _reciprocal,
    "Inv": _reciprocal, "Floor": np.floor, "Ceil": np.ceil, "Round": np.round,
    "Rint": np.rint, "Erf": _in_float32(_erf), "Erfc": _in_float32(_erfc),
    "Lgamma": _in_float32(_lgamma), "Digamma": _in_float32(_digamma),
    "IsNan": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite,
    "LogicalNot": np.logical_not, "Invert": np.invert, "Conj": np.conj,
    "Angle": np.angle,
}


def _unary(fn):
    def compute(ctx, x):
        return fn(x)

    return compute


for _op_type, _fn in _UNARY.items():
    kernel(_op_type)(_unary(_fn))


@kernel("Real")
def _real(ctx, x):
    return x.real.copy()


@kernel("Imag")
def _imag(ctx, x):
    return x.imag.copy()


# ---- backward ops: f(y, dy) with y the forward op's output -------------------------------


def _grad_kernel(fn):
    def compute(ctx, y, dy):
        if y.shape != dy.shape:
            raise _invalid(f"Inputs y and dy must have the same shape: {_shape_str(y.shape)}"
                           f" vs. {_shape_str(dy.shape)}")
        return fn(y, dy).astype(y.dtype, copy=False)

    return compute


kernel("SqrtGrad")(_grad_kernel(lambda y, dy: dy * y.dtype.type(0.5) / np.conj(y)))
kernel("RsqrtGrad")(_grad_kernel(lambda y, dy: dy * y.dtype.type(-0.5) * np.conj(y) ** 3))
kernel("TanhGrad")(_grad_kernel(lambda y, dy: dy * (1 - np.conj(y) * np.conj(y))))
kernel("SigmoidGrad")(_grad_kernel(lambda y, dy: dy * np.conj(y) * (1 - np.conj(y))))
kernel("ReciprocalGrad", "InvGrad")(_grad_kernel(lambda y, dy: -dy * np.conj(y * y)))


# ==========================================================================================
# AddN and Cast.


@kernel("AddN")
def _add_n(ctx, *xs):
    first = xs[0]
    for i, x in enumerate(xs[1:], 1):
        if x.shape != first.shape:
            raise _invalid("Inputs to operation AddN of type AddN must have the same size and "
                           f"shape.  Input 0: {_shape_str(first.shape)} != input {i}: "
                           f"{_shape_str(x.shape)}")
    if len(xs) == 1:
        return first.copy()
    out = np.add(xs[0], xs[1])
    if type(out) is not np.ndarray:  # 0-d inputs give a NumPy scalar: no buffer to reuse
        for x in xs[2:]:
            out = out + x
        return np.asarray(out, dtype=first.dtype)
    for x in xs[2:]:
        np.add(out, x, out=out)
    return out


def _truncate_to_bfloat16(x):
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(_BF16)


@kernel_factory("Cast")
def _cast(node):
    src, dst = node.attrs["SrcT"], node.attrs["DstT"]
    truncate = node.attrs.get("Truncate", False)
    if src is dtypes.string or dst is dtypes.string:
        message = f"Cast {src.name} to {dst.name} is not supported"

        def unsupported(ctx, x):
            raise errors.UnimplementedError(None, None, message)

        return unsupported
    out = dst.as_numpy_dtype
    if truncate and dst is dtypes.bfloat16 and src is dtypes.float32:
        return lambda ctx, x: _truncate_to_bfloat16(x)
    if src.is_complex and not dst.is_complex:
        return lambda ctx, x: x.real.astype(out)
    return lambda ctx, x: x.astype(out)


# ==========================================================================================
# Select, SelectV2, Where.


@kernel("Select")
def _select(ctx, c, t, e):
    if t.shape != e.shape:
        raise _invalid("'then' and 'else' must have the same size.  but received: "
                       f"{_shape_str(t.shape)} vs. {_shape_str(e.shape)}")
    if c.ndim == 0:
        return np.where(c, t, e)
    if c.ndim == 1 and t.ndim > 1:
        if c.shape[0] != t.shape[0]:
            raise _invalid("Number of batches of 'then' must match size of 'cond', but saw: "
                           f"{t.shape[0]} vs. {c.shape[0]}")
        return np.where(c.reshape(c.shape + (1,) * (t.ndim - 1)), t, e)
    if c.shape != t.shape:
        raise _invalid("Inputs to operation Select of type Select must have the same size and "
                       f"shape.  Input 0: {_shape_str(c.shape)} != input 1: "
                       f"{_shape_str(t.shape)}")
    return np.where(c, t, e)


@kernel("SelectV2")
def _select_v2(ctx, c, t, e):
    try:
        return np.where(c, t, e)
    except ValueError:
        raise _invalid(f"condition {_shape_str(c.shape)}, then {_shape_str(t.shape)}, and "
                       f"else {_shape_str(e.shape)} must be broadcastable") from None


@kernel("Where")
def _where(ctx, x):
    return np.argwhere(x).astype(np.int64, copy=False)


# ==========================================================================================
# Reductions.


def _axes(x, axes) -> tuple[int, ...]:
    """The reduction axes as a tuple of non-negative ints; TF's errors for bad ones."""
    rank = x.ndim
    out = []
    for a in (axes.tolist() if axes.ndim == 1 else np.reshape(axes, -1).tolist()):
        if not -rank <= a < rank:
            raise _invalid(f"Invalid reduction dimension ({a} for input with {rank} "
                           "dimension(s)")
        a %= rank
        if a in out:
            raise _invalid(f"Invalid reduction arguments: Axes contains duplicate "
                           f"dimension: {a}")
        out.append(a)
    return tuple(out)


def _reduction(reduce, forward_empty: bool = True):
    """A kernel factory for `reduce(x, axes, keepdims) -> array of x's dtype`. With
    `forward_empty`, reducing no axis returns the input itself (as TensorFlow forwards its
    buffer): gradients of broadcasting ops with an unknown batch size sum over an empty
    axis list, and a copy of a big activation costs ~1 ms."""

    def factory(node):
        keepdims = node.attrs["keep_dims"]

        def compute(ctx, x, axes):
            reduced = _axes(x, axes)
            if forward_empty and not reduced and x.ndim:
                return x
            return reduce(x, reduced, keepdims)

        return compute

    return factory


def _sum(x, axes, keepdims):
    lead = len(axes)
    if x.dtype in _BLAS_FLOATS and 0 < lead < x.ndim and x.size >= 4096 and \
            sorted(axes) == list(range(lead)) and x.flags.c_contiguous:
        # Sum over the leading axes (a bias gradient) as ones @ rows: one BLAS gemv, ~7x
        # faster than NumPy's row-by-row reduction over axis 0 (and no less accurate).
        tail = x.shape[lead:]
        rows = x.reshape(-1, math.prod(tail))
        total = np.ones(rows.shape[0], x.dtype) @ rows
        return total.reshape(((1,) * lead if keepdims else ()) + tail)
    if x.dtype in _LOW_PRECISION:
        return np.add.reduce(x, axes, np.float32, keepdims=keepdims).astype(x.dtype)
    return np.add.reduce(x, axes, x.dtype, keepdims=keepdims)


def _prod(x, axes, keepdims):
    if x.dtype in _LOW_PRECISION:
        return np.multiply.reduce(x, axes, np.float32, keepdims=keepdims).astype(x.dtype)
    return np.multiply.reduce(x, axes, x.dtype, keepdims=keepdims)


def _mean(x, axes, keepdims):
    count = 1
    for a in axes:
        count *= x.shape[a]
    if _is_int(x):
        total = np.add.reduce(x, axes, x.dtype, keepdims=keepdims)
        if count == 0:
            return np.zeros_like(total)
        q = np.floor_divide(np.abs(total), x.dtype.type(count))
        return np.asarray(np.where(total < 0, -q, q).astype(x.dtype))
    if x.dtype in _LOW_PRECISION:
        return (np.add.reduce(x, axes, np.float32, keepdims=keepdims) /
                np.float32(count)).astype(x.dtype)
    total = np.add.reduce(x, axes, x.dtype, keepdims=keepdims)
    return total / x.dtype.type(count) if count else total * x.dtype.type(np.nan)


def _extreme(fn, lowest: bool):
    """Max or Min: empty reductions give -inf/inf (floats) or the type's lowest/highest
    value (integers), as TensorFlow's do."""

    def reduce(x, axes, keepdims):
        if x.dtype.kind == "f" or x.dtype in _LOW_PRECISION:
            initial = -np.inf if lowest else np.inf
        elif x.dtype.kind == "b":
            initial = not lowest
        else:
            info = np.iinfo(x.dtype)
            initial = info.min if lowest else info.max
        return fn.reduce(x, axes, keepdims=keepdims, initial=initial)

    return reduce


def _all(x, axes, keepdims):
    return np.logical_and.reduce(x, axes, keepdims=keepdims)


def _any(x, axes, keepdims):
    return np.logical_or.reduce(x, axes, keepdims=keepdims)


def _euclidean_norm(x, axes, keepdims):
    work = x.astype(np.float32) if x.dtype in _LOW_PRECISION else x
    if work.dtype.kind == "c":
        sq = np.sum(np.real(work * np.conj(work)), axis=axes, keepdims=keepdims)
        return np.asarray(np.sqrt(sq).astype(x.dtype))
    sq = np.sum(np.multiply(work, work), axis=axes, keepdims=keepdims, dtype=work.dtype)
    return np.asarray(np.sqrt(sq).astype(x.dtype))


for _op_type, _reduce in (("Sum", _sum), ("Prod", _prod), ("Mean", _mean),
                          ("Max", _extreme(np.maximum, lowest=True)),
                          ("Min", _extreme(np.minimum, lowest=False)), ("All", _all),
                          ("Any", _any)):
    kernel_factory(_op_type, forwards_input=True)(_reduction(_reduce))
kernel_factory("EuclideanNorm")(_reduction(_euclidean_norm, forward_empty=False))  # |x|


@kernel_factory("ArgMax", "ArgMin")
def _arg_reduce(node):
    fn = np.argmax if node.op == "ArgMax" else np.argmin
    out = node.attrs["output_type"].as_numpy_dtype

    def compute(ctx, x, dim):
        d = int(np.reshape(dim, -1)[0]) if np.size(dim) else 0
        rank = x.ndim
        if np.ndim(dim) != 0:
            raise _invalid(f"dim must be a scalar, but received tensor of shape: "
                           f"{_shape_str(np.shape(dim))}")
        if not -rank <= d < rank:
            raise _invalid(f"Expected dimension in the range [{-rank}, {rank}), but got {d}")
        if x.shape[d] == 0:
            raise _invalid(f"Reduction axis {d % rank} is empty in shape "
                           f"{_shape_str(x.shape)}")
        return np.asarray(fn(x, axis=d)).astype(out)

    return compute


# ==========================================================================================
# Matrices.


def _mat_str(shape) -> str:
    return _shape_str(shape)


@kernel_factory("MatMul", expensive=True)
def _matmul(node):
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]

    def compute(ctx, a, b):
        if a.ndim != 2 or b.ndim != 2:
            raise _invalid(f"In[0] and In[1] must be matrices: {_shape_str(a.shape)} "
                           f"{_shape_str(b.shape)}")
        a2 = a.T if ta else a
        b2 = b.T if tb else b
        if a2.shape[1] != b2.shape[0]:
            raise _invalid(f"Matrix size-incompatible: In[0]: {_mat_str(a.shape)}, In[1]: "
                           f"{_mat_str(b.shape)}")
        if a.dtype == _BF16:
            return np.matmul(a2.astype(np.float32), b2.astype(np.float32)).astype(_BF16)
        m, n = a2.shape[0], b2.shape[1]
        parts = intra_op.workers(ctx)
        if parts > 1 and a.dtype in _BLAS_FLOATS and \
                2.0 * m * n * a2.shape[1] >= intra_op.MIN_FLOPS:
            out = native.gemm(a2, b2, parts)
            return out if out is not None else _split_matmul(a2, b2, parts)
        return np.matmul(a2, b2)

    return compute


def _split_matmul(a, b, parts):
    """a @ b with the longer of the output's two dimensions cut into one block per thread
    (at least 64 wide) that the intra-op threads claim (each block one BLAS call writing its
    part of the output in place; column blocks keep BLAS efficient when there are few rows).
    One block per thread beat two (MLP step 5.5-5.7 ms vs 5.8-6.1 ms, interleaved runs):
    every BLAS call packs its operands again."""
    m, n = a.shape[0], b.shape[1]
    out = np.empty((m, n), a.dtype)
    grain = max(64, -(-max(m, n) // parts))
    if m >= n:
        def work(lo, hi):
            np.matmul(a[lo:hi], b, out=out[lo:hi])

        intra_op.parallel_for(work, m, grain, parts)
    else:
        def work(lo, hi):
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])

        intra_op.parallel_for(work, n, grain, parts)
    return out


def _adjoint(x, adj: bool):
    if not adj:
        return x
    t = np.swapaxes(x, -1, -2)
    return np.conj(t) if x.dtype.kind == "c" else t


@kernel_factory("BatchMatMul", "BatchMatMulV2", expensive=True)
def _batch_matmul(node):
    adj_x, adj_y = node.attrs["adj_x"], node.attrs["adj_y"]
    broadcast = node.op == "BatchMatMulV2"

    def compute(ctx, x, y):
        if x.ndim < 2 or y.ndim < 2:
            raise _invalid(f"In[0] and In[1] ndims must be >= 2: {x.ndim} vs. {y.ndim}")
        if broadcast:
            try:
                np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
            except ValueError:
                raise _invalid("In[0] and In[1] must have compatible batch dimensions: "
                               f"{_shape_str(x.shape)} vs. {_shape_str(y.shape)}") from None
        elif x.shape[:-2] != y.shape[:-2]:
            raise _invalid(f"In[0].dim(0) and In[1].dim(0) must be the same: "
                           f"{_shape_str(x.shape)} vs {_shape_str(y.shape)}")
        a, b = _adjoint(x, adj_x), _adjoint(y, adj_y)
        if a.shape[-1] != b.shape[-2]:
            raise _invalid(f"Matrix size-incompatible: In[0]: {_shape_str(x.shape)}, In[1]: "
                           f"{_shape_str(y.shape)}")
        if x.dtype == _BF16:
            return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(_BF16)
        return np.matmul(a, b)

    return compute


def _check_square(x) -> None:
    if x.ndim < 2:
        raise _invalid(f"Input tensor 0 must have rank >= 2, got {x.ndim}")
    if x.shape[-1] != x.shape[-2]:
        raise _invalid(f"Input matrices must be squares, got {x.shape[-2]} != {x.shape[-1]}")


def _linalg_input(x):
    """float16 matrices are factored in float32 (LAPACK has no half precision)."""
    return x.astype(np.float32) if x.dtype == _F16 else x


@kernel_factory("MatrixInverse", expensive=True)
def _matrix_inverse(node):
    adjoint = node.attrs["adjoint"]

    def compute(ctx, x):
        _check_square(x)
        a = _adjoint(_linalg_input(x), adjoint)
        if a.size == 0:
            return np.empty(x.shape, x.dtype)
        try:
            inv = np.linalg.inv(a)
        except np.linalg.LinAlgError:
            raise _invalid("Input is not invertible.") from None
        if not np.all(np.isfinite(inv)) and np.all(np.isfinite(a)):
            raise _invalid("Input is not invertible.")
        return inv.astype(x.dtype, copy=False)

    return compute


@kernel("MatrixDeterminant", expensive=True)
def _matrix_determinant(ctx, x):
    _check_square(x)
    if x.shape[-1] == 0:
        return np.ones(x.shape[:-2], x.dtype)
    return np.asarray(np.linalg.det(_linalg_input(x))).astype(x.dtype, copy=False)


@kernel("Cholesky", expensive=True)
def _cholesky(ctx, x):
    _check_square(x)
    if x.size == 0:
        return np.empty(x.shape, x.dtype)
    a = _linalg_input(x)
    lower = np.tril(a)
    sym = lower + np.conj(np.swapaxes(np.tril(a, -1), -1, -2))  # only the lower part counts
    try:
        out = np.linalg.cholesky(sym)
    except np.linalg.LinAlgError:
        raise _invalid("Cholesky decomposition was not successful. The input might not be "
                       "valid.") from None
    return out.astype(x.dtype, copy=False)


# ==========================================================================================
# Range, Cumsum, Cumprod, UnsortedSegmentSum, BroadcastGradientArgs.


@kernel_factory("Range")
def _range(node):
    dt = node.attrs["Tidx"].as_numpy_dtype

    def compute(ctx, start, limit, delta):
        for name, v in (("start", start), ("limit", limit), ("delta", delta)):
            if np.ndim(v) != 0:
                raise _invalid(f"{name} must be a scalar, not shape {_shape_str(np.shape(v))}")
        s, l, d = start.item(), limit.item(), delta.item()
        if d == 0:
            raise _invalid(f"Requires delta != 0: {d}")
        if d > 0 and s > l:
            raise _invalid(f"Requires start <= limit when delta > 0: {s}/{l}")
        if d < 0 and s < l:
            raise _invalid(f"Requires start >= limit when delta < 0: {s}/{l}")
        if isinstance(s, int):
            return np.arange(s, l, d, dtype=dt)
        size = int(math.ceil(abs((l - s) / d)))
        work = np.float32 if np.dtype(dt) in _LOW_PRECISION else dt
        return (np.asarray(s, work) + np.arange(size, dtype=work) * np.asarray(d, work)) \
            .astype(dt, copy=False)

    return compute


def _cumulative(ufunc, identity):
    def factory(node):
        exclusive, reverse = node.attrs["exclusive"], node.attrs["reverse"]

        def compute(ctx, x, axis):
            if np.ndim(axis) != 0:
                raise _invalid(f"axis must be a scalar, but received tensor of shape: "
                               f"{_shape_str(np.shape(axis))}")
            a = int(axis)
            if not -x.ndim <= a < x.ndim:
                raise _invalid(f"axis must be in range [{-x.ndim}, {x.ndim}), but got {a}")
            a %= x.ndim
            work = x.astype(np.float32) if x.dtype in _LOW_PRECISION else x
            if reverse:
                work = np.flip(work, a)
            out = ufunc.accumulate(work, axis=a, dtype=work.dtype)
            if exclusive:
                out = np.roll(out, 1, axis=a)
                index = [slice(None)] * x.ndim
                index[a] = 0
                out[tuple(index)] = identity
            if reverse:
                out = np.flip(out, a)
            return np.ascontiguousarray(out).astype(x.dtype, copy=False)

        return compute

    return factory


kernel_factory("Cumsum")(_cumulative(np.add, 0))
kernel_factory("Cumprod")(_cumulative(np.multiply, 1))


@kernel("UnsortedSegmentSum")
def _unsorted_segment_sum(ctx, data, ids, num_segments):
    n = int(num_segments)
    if ids.shape != data.shape[:ids.ndim]:
        raise _invalid(f"data.shape = {_shape_str(data.shape)} does not start with "
                       f"segment_ids.shape = {_shape_str(ids.shape)}")
    flat_ids = ids.reshape(-1)
    bad = flat_ids >= n
    if np.any(bad):
        i = int(np.argmax(bad))
        index = np.unravel_index(i, ids.shape) if ids.ndim > 1 else (i,)
        where = ",".join(str(int(k)) for k in index)
        raise _invalid(f"segment_ids[{where}] = {int(flat_ids[i])} is out of range "
                       f"[0, {n})")
    inner = data.shape[ids.ndim:]
    work = np.float32 if data.dtype in _LOW_PRECISION else data.dtype
    out = np.zeros((n,) + inner, work)
    rows = data.reshape((flat_ids.size,) + inner)
    keep = flat_ids >= 0
    if not np.all(keep):
        rows, flat_ids = rows[keep], flat_ids[keep]
    np.add.at(out, flat_ids, rows)
    return out.astype(data.dtype, copy=False)


@kernel("BroadcastGradientArgs")
def _broadcast_gradient_args(ctx, s0, s1):
    x, y = s0.tolist(), s1.tolist()
    dt = s0.dtype
    if x == y:
        empty = np.zeros([0], dt)
        return empty, empty.copy()
    n = max(len(x), len(y))
    px = [1] * (n - len(x)) + x
    py = [1] * (n - len(y)) + y
    for a, b in zip(px, py, strict=True):
        if a != b and a != 1 and b != 1:
            raise _invalid(f"Incompatible shapes: {_shape_str(x)} vs. {_shape_str(y)}")
    r0 = [i for i, d in enumerate(px) if d == 1]
    r1 = [i for i, d in enumerate(py) if d == 1]
    return np.asarray(r0, dt), np.asarray(r1, dt)
