"""CPU kernels of the elementwise unary math ops (tensorflux/ops/unary_ops.py), in NumPy,
and of the backward ops their gradients use (SqrtGrad, TanhGrad, ...).

Every kernel returns the op's dtype; float16 and bfloat16 inputs of the transcendental
functions NumPy lacks (erf, lgamma, digamma) are computed in float32. Floating-point
exceptions give NaN/inf as in TensorFlow; NumPy's RuntimeWarnings for them are silenced for
this module only (see math_ops.py).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tensorflux.kernels import intra_op
from tensorflux.kernels.buffers import donated_output
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu._math_common import (
    _BLAS_FLOATS,
    _LOW_PRECISION,
    _check_divisor,
    _complex_to_real,
    _heavy,
    _invalid,
    _is_int,
    _shape_str,
    _unary,
)
from tensorflux.kernels.cpu.fused_elementwise_ops import one_instruction
from tensorflux.kernels.registry import kernel, kernel_factory

try:  # optional: fast, exact special functions
    from scipy import special as _special
except ImportError:  # pragma: no cover - depends on the environment
    _special = None

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=__name__)


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

    def compute(x):  # asarray: on a 0-d array the ufunc returns a bare Python float
        return np.asarray(ufunc(x)).astype(x.dtype)

    return compute


def _sigmoid_by_exp(x):
    """1 / (1 + exp(-x)) in three passes over one buffer (NumPy's SIMD exp): within 4 ulps
    of SciPy's expit in float32 (2-4 in float64) and 4.4x faster ([128, 512] float32:
    36 against 161 us; an LSTM-512 step runs 225 of them); 0 where exp(-x) overflows
    (x < -88.7 in float32), whose sigmoid is below the smallest normal float."""
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    out = np.asarray(np.negative(x))  # a 0-d array, not a NumPy scalar, for out=
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def _rsqrt(x):
    out = np.asarray(np.sqrt(x))  # a 0-d array, not a NumPy scalar, for out=
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

    def _sigmoid(x):
        if x.dtype in _LOW_PRECISION:  # SciPy's is exact and never overflows
            return _special.expit(x.astype(np.float32)).astype(x.dtype)
        return _sigmoid_by_exp(x)
else:  # pragma: no cover - depends on the environment
    _erf, _erfc, _lgamma = (_vectorized(math.erf), _vectorized(math.erfc),
                            _vectorized(math.lgamma))
    _sigmoid = _sigmoid_by_exp

    def _digamma(x):
        return _digamma_series(x).astype(x.dtype)


def _lgamma_of_minus_inf_is_inf(x):
    """lgamma with TF's value at -inf: inf (SciPy's gammaln gives -inf)."""
    out = np.asarray(_lgamma(x))
    return np.where(x == -np.inf, np.asarray(np.inf, out.dtype), out)


def _digamma_poles_nan(x):
    """digamma with TensorFlow's value at its poles: NaN at 0, -0 and the negative integers
    (SciPy gives -inf at 0 and inf at -0)."""
    out = _digamma(x)
    return np.where((x <= 0) & (x == np.floor(x)), np.asarray(np.nan, out.dtype), out)


_UNARY = {
    "Neg": np.negative, "Abs": np.abs, "Sign": np.sign,
    "Square": np.square, "Sqrt": np.sqrt, "Rsqrt": _rsqrt, "Exp": np.exp,
    "Expm1": np.expm1, "Log": np.log, "Log1p": np.log1p, "Sin": np.sin, "Cos": np.cos,
    "Tan": np.tan, "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan,
    "Sinh": np.sinh, "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh,
    "Atanh": np.arctanh, "Tanh": np.tanh, "Sigmoid": _sigmoid, "Reciprocal": _reciprocal,
    "Inv": _reciprocal, "Floor": np.floor, "Ceil": np.ceil, "Round": np.round,
    "Rint": np.rint, "Erf": _in_float32(_erf), "Erfc": _in_float32(_erfc),
    "Lgamma": _in_float32(_lgamma_of_minus_inf_is_inf), "Digamma": _in_float32(_digamma_poles_nan),
    "IsNan": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite,
}


# SciPy's special functions spend 30-250 ns a value: a large input in blocks that check
# the step (_math_common._heavy).
_HEAVY = {"Erf", "Erfc", "Lgamma", "Digamma"}
# NumPy ufuncs whose float result has the input's dtype: their kernels write into x when the
# executor donates it (kernels/buffers.py, "donated inputs").
_REUSING = ("Neg", "Abs", "Square", "Sqrt", "Exp", "Expm1", "Log", "Log1p", "Sin", "Cos",
            "Tanh", "Floor", "Ceil", "Rint")

for _op_type, _fn in _UNARY.items():
    if _op_type in _HEAVY:
        kernel(_op_type)(_heavy(_fn, 1))
    elif _op_type in _REUSING:
        kernel(_op_type, reuses_inputs=(0,))(_unary(_fn, reuses=True))
    else:
        kernel(_op_type)(_unary(_fn))
kernel_factory("ComplexAbs")(_complex_to_real(
    np.abs, "Signature mismatch, have: {t}->{tout} expected: {t}->{expected}"))


# ---- backward ops: f(y, dy) with y the forward op's output -------------------------------


def _grad_kernel(fn):
    def compute(ctx, y, dy):
        if y.shape != dy.shape:
            raise _invalid(f"Inputs y and dy must have the same shape: {_shape_str(y.shape)}"
                           f" vs. {_shape_str(dy.shape)}")
        return fn(y, dy).astype(y.dtype, copy=False)

    return compute


def _zero_where_dy_zero(fn):
    """TensorFlow's SqrtGrad, RsqrtGrad and ReciprocalGrad give exactly 0 where dy == 0, even
    where the formula alone is NaN (y = 0 or inf)."""

    def compute(y, dy):
        return np.where(dy == 0, np.zeros((), y.dtype), fn(y, dy))

    return compute


kernel("SqrtGrad")(_grad_kernel(_zero_where_dy_zero(
    lambda y, dy: dy * y.dtype.type(0.5) / np.conj(y))))
kernel("RsqrtGrad")(_grad_kernel(_zero_where_dy_zero(
    lambda y, dy: dy * y.dtype.type(-0.5) * np.conj(y) ** 3)))
# TanhGrad and SigmoidGrad do not conjugate y (TF's kernels); the gradients of Tanh and
# Sigmoid pass conj(y).
_FUSED_BLOCK = 1 << 14  # elements per block of a fused gradient: its temporaries stay in cache


def _fused_grad(op, block, small, fallback):
    """TanhGrad/SigmoidGrad over float32/float64 C-contiguous inputs of one shape: float32
    into a donated input or over more than _FUSED_BLOCK elements, one pass of _native.c's
    `elementwise` (the op's one instruction, rounding as `block` does), split over the
    intra-op threads from intra_op.MIN_ELEMENTS on; otherwise, or without the extension,
    in blocks of _FUSED_BLOCK elements, `block(y, dy, out, t1, t2)` computing into `out` with
    two block-sized temporaries (the formula as one expression makes three full-size
    arrays), `out` an input the executor donated when there is one (kernels/buffers.py,
    "donated inputs"; an element of `out` is written after the same element of y and dy
    was read). The same operations in the same order as `fallback`, which every other
    case runs: the values are identical. Up to one block into a new array, `small(y, dy,
    out)` runs the same operations with `out` as its temporary (no blocks, fewer
    allocations: most of such a kernel's time on the small arrays of an RNN cell)."""
    slow = _grad_kernel(fallback)
    program = one_instruction(op)

    def compute(ctx, y, dy, donated=()):
        if (y.dtype not in _BLAS_FLOATS or dy.dtype != y.dtype or y.shape != dy.shape
                or not (y.flags.c_contiguous and dy.flags.c_contiguous)):
            return slow(ctx, y, dy)
        out = donated_output((y, dy), donated, y.shape, y.dtype) if donated else None
        if out is None:
            out = np.empty(y.shape, y.dtype)
            if y.size <= _FUSED_BLOCK:
                small(y, dy, out)
                return out
        if y.dtype == np.float32:
            parts = intra_op.workers(ctx) if y.size >= intra_op.MIN_ELEMENTS else 1
            if native.elementwise(out, (y, dy), program, parts):
                return out
        flat_y, flat_dy, flat_out = y.reshape(-1), dy.reshape(-1), out.reshape(-1)
        n = flat_y.size
        t1 = np.empty(min(n, _FUSED_BLOCK), y.dtype)
        t2 = np.empty_like(t1)
        for lo in range(0, n, _FUSED_BLOCK):
            hi = min(n, lo + _FUSED_BLOCK)
            block(flat_y[lo:hi], flat_dy[lo:hi], flat_out[lo:hi], t1[:hi - lo], t2[:hi - lo])
        return out

    return compute


def _tanh_grad_block(y, dy, out, t1, t2):  # dy * (1 - y * y)
    np.multiply(y, y, out=t1)
    np.subtract(1, t1, out=t1)
    np.multiply(dy, t1, out=out)


def _sigmoid_grad_block(y, dy, out, t1, t2):  # dy * y * (1 - y)
    np.multiply(dy, y, out=t1)
    np.subtract(1, y, out=t2)
    np.multiply(t1, t2, out=out)


def _tanh_grad_small(y, dy, out):  # _tanh_grad_block with out as t1
    np.multiply(y, y, out=out)
    np.subtract(1, out, out=out)
    np.multiply(dy, out, out=out)


def _sigmoid_grad_small(y, dy, out):  # _sigmoid_grad_block with out as t2
    t1 = np.multiply(dy, y)
    np.subtract(1, y, out=out)
    np.multiply(t1, out, out=out)


kernel("TanhGrad", reuses_inputs=(0, 1))(_fused_grad(
    "TanhGrad", _tanh_grad_block, _tanh_grad_small, lambda y, dy: dy * (1 - y * y)))
kernel("SigmoidGrad", reuses_inputs=(0, 1))(_fused_grad(
    "SigmoidGrad", _sigmoid_grad_block, _sigmoid_grad_small, lambda y, dy: dy * y * (1 - y)))
kernel("ReciprocalGrad", "InvGrad")(_grad_kernel(_zero_where_dy_zero(
    lambda y, dy: -dy * np.conj(y * y))))
