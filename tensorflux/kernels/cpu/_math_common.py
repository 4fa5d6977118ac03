"""What the math-family CPU kernels share (math_ops.py, unary_ops.py, comparison_ops.py,
reduction_ops.py, matrix_ops.py, sequence_ops.py): dtype groups, TF's error messages and
the elementwise wrappers with their broadcasting errors.

The wrappers call NumPy here, so NumPy's RuntimeWarnings for floating-point exceptions
(log(0), 1/0, overflow: NaN/inf as in TensorFlow, which warns about none) are attributed to
this module and silenced for it, as each kernel module silences its own.
"""

from __future__ import annotations

import math
import operator
import warnings

import ml_dtypes
import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import buffers, interrupt

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)

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
    not broadcast. A ufunc writes into an input donated by the executor (`donated`,
    kernels/buffers.py) when it has the output's shape and dtype: register such kernels
    with `reuses_inputs=(0, 1)`."""
    scalar_op = _SCALAR_OPERATORS.get(fn)
    ufunc = isinstance(fn, np.ufunc)

    def compute(ctx, x, y, donated=()):
        if scalar_op is not None and type(x) is type(y) and type(x) in _FAST_SCALARS:
            return scalar_op(x, y)
        try:
            if donated and ufunc and x.dtype == y.dtype:
                out = buffers.donated_output((x, y), donated, _result_shape(x, y), x.dtype)
                if out is not None:
                    return fn(x, y, out=out)
            return fn(x, y)
        except ValueError:
            if not _broadcastable(x, y):
                raise _incompatible(x, y) from None
            raise

    return compute


def _result_shape(x, y) -> tuple:
    return x.shape if x.shape == y.shape else np.broadcast_shapes(x.shape, y.shape)


def _broadcastable(x, y) -> bool:
    try:
        np.broadcast_shapes(np.shape(x), np.shape(y))
    except ValueError:
        return False
    return True


def _unary(fn, reuses: bool = False):
    """A kernel applying `fn(x)`; with `reuses` (a ufunc whose result has x's dtype for
    every dtype the op takes, registered with `reuses_inputs=(0,)`) it writes into x when
    the executor donates it (kernels/buffers.py)."""
    if not reuses:
        def compute(ctx, x):
            return fn(x)

        return compute

    def compute_into(ctx, x, donated=()):
        if donated and x.dtype in _BLAS_FLOATS and x.flags.c_contiguous:
            return fn(x, out=x)
        return fn(x)

    return compute_into


# Time per output byte of a special function (lgamma, zeta, igamma: 30-250 ns a value)
# relative to a fill (interrupt.blocked).
HEAVY_COST = 32


def _heavy(fn, arity: int, cost: float = HEAVY_COST):
    """A kernel `compute(ctx, *xs)` of an elementwise `fn` of `arity` inputs that spends
    tens of nanoseconds or more a value (SciPy's special functions): a large broadcast
    output is computed in blocks that check the step between them (the values of one
    call); small ones, and inputs that do not broadcast, take `_unary`/`_binary`'s path
    (one call; TF's message for shapes that do not broadcast)."""
    whole = _unary(fn) if arity == 1 else _binary(fn) if arity == 2 else \
        (lambda ctx, *xs: fn(*xs))

    def compute(ctx, *xs):
        first = np.shape(xs[0])
        if all(np.shape(x) == first for x in xs[1:]):
            bound = math.prod(first)
        else:  # the product of the input sizes bounds the broadcast output's
            bound = math.prod(getattr(x, "size", 1) for x in xs)
        if not interrupt.blocked(bound * 8, cost):
            return whole(ctx, *xs)
        try:
            shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
        except ValueError:
            return whole(ctx, *xs)
        if not interrupt.blocked(math.prod(shape) * 8, cost):
            return whole(ctx, *xs)
        views = np.broadcast_arrays(*(np.asarray(x) for x in xs))
        out = None
        for idx in interrupt.regions(shape, 8, ctx, cost):
            part = np.asarray(fn(*(v[idx] for v in views)))
            if out is None:
                out = np.empty(shape, part.dtype)
            out[idx] = part
        return out

    return compute


def _complex_to_real(fn, mismatch: str):
    """A kernel factory for Real, Imag, Angle and ComplexAbs: `fn(x)` of a complex x, whose
    real dtype must be Tout (TF has kernels for complex64 -> float32 and complex128 ->
    float64 only). `mismatch` words the error; it is formatted with op, t and tout (C names:
    complex64, float, double), expected (the
    C name of x's real dtype) and T and Tout (enum names: DT_COMPLEX64, DT_FLOAT)."""

    def factory(node):
        tout = np.dtype(node.attrs["Tout"].as_numpy_dtype)

        def compute(ctx, x):
            if x.real.dtype != tout:
                c_name = {"float32": "float", "float64": "double"}
                raise _invalid(mismatch.format(
                    op=node.op, t=x.dtype.name, tout=c_name[tout.name],
                    expected=c_name[x.real.dtype.name],
                    T=f"DT_{x.dtype.name.upper()}", Tout=f"DT_{c_name[tout.name].upper()}"))
            return np.asarray(fn(x)).astype(tout, copy=False)

        return compute

    return factory
