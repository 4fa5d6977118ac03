"""CPU kernels of the math ops (tensorflux/ops/math_ops.py), in NumPy.

Every kernel returns exactly the op's output dtype: all inputs of an elementwise op share
one dtype, and NumPy keeps it for same-typed operands; reductions and ops that NumPy would
widen (integer sums, bfloat16 matmul) pass `dtype=` or cast back. float16 and bfloat16
reductions and the transcendental functions NumPy lacks accumulate or compute in float32.
Kernels never write into their inputs.

Floating-point exceptions (0/0, log(-1), overflow) give NaN/inf as in TensorFlow; NumPy's
RuntimeWarnings for them are silenced for this module only, which costs nothing per call
(an `np.errstate` block would cost more than many of these kernels).

Reductions, matrices and sequences have their kernels in reduction_ops.py, matrix_ops.py and
sequence_ops.py, mirroring tensorflux/ops/; what they share is in _math_common.py.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu._math_common import (
    _BF16,
    _BLAS_FLOATS,
    _LOW_PRECISION,
    _incompatible,
    _invalid,
    _is_int,
    _shape_str,
)
from tensorflux.kernels.registry import kernel, kernel_factory

try:  # optional: fast, exact special functions
    from scipy import special as _special
except ImportError:  # pragma: no cover - depends on the environment
    _special = None

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=__name__)


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
