"""CPU kernels of the math ops (tensorflux/ops/math_ops.py), in NumPy.

Every kernel returns exactly the op's output dtype: all inputs of an elementwise op share
one dtype, and NumPy keeps it for same-typed operands; reductions and ops that NumPy would
widen (integer sums, bfloat16 matmul) pass `dtype=` or cast back. float16 and bfloat16
reductions and the transcendental functions NumPy lacks accumulate or compute in float32.
Kernels never write into their inputs, but for an input the executor donates (its value
dies at the kernel and nothing else holds it: kernels/buffers.py).

Floating-point exceptions (0/0, log(-1), overflow) give NaN/inf as in TensorFlow; NumPy's
RuntimeWarnings for them are silenced for this module only, which costs nothing per call
(an `np.errstate` block would cost more than many of these kernels).

The other math families have their kernels in modules named as their ops' modules are
(unary_ops.py, comparison_ops.py, reduction_ops.py, matrix_ops.py, sequence_ops.py); what
they share is in _math_common.py.
"""

from __future__ import annotations

import warnings

import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.kernels import buffers, intra_op
from tensorflux.kernels.cpu._math_common import (
    _BF16,
    _BLAS_FLOATS,
    _binary,
    _check_divisor,
    _complex_to_real,
    _incompatible,
    _invalid,
    _shape_str,
    _unary,
)
from tensorflux.kernels.registry import kernel, kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=__name__)


# ==========================================================================================
# Elementwise binary ops.


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


def _internal_on_zero_divisor(fn):
    """TruncateDiv and TruncateMod: TF 2.21's kernels report an integer division by zero as
    an InternalError with this message (Div, FloorDiv and FloorMod as InvalidArgumentError)."""

    def compute(x, y):
        try:
            return fn(x, y)
        except errors.InvalidArgumentError:
            raise errors.InternalError(None, None, "Unexpected error in binary operator (only "
                                       "integer div and mod should have errors)") from None

    return compute


def _int_pow(x, y):
    if x.dtype.kind == "i" and np.any(y < 0) and np.broadcast_shapes(x.shape, y.shape) \
            .count(0) == 0:  # an empty result raises nothing, as in TF
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
    "TruncateDiv": (_float_truncate_div, _internal_on_zero_divisor(_int_truncate_div)),
    "TruncateMod": (np.fmod, _internal_on_zero_divisor(_int_truncate_mod)),
    "Pow": (np.power, _int_pow),
    "Maximum": np.maximum, "Minimum": np.minimum, "SquaredDifference": _squared_difference,
    "DivNoNan": _div_no_nan, "Xlogy": _xlogy, "Xdivy": _xdivy, "Atan2": np.arctan2,
    "BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or,
    "BitwiseXor": np.bitwise_xor,
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

    def compute(ctx, x, y, donated=()):
        if x.dtype in _BLAS_FLOATS and y.dtype == x.dtype and \
                max(x.size, y.size) >= intra_op.MIN_ELEMENTS:
            x_big = x.size >= y.size
            views = _row_views(x, y) if x_big else _row_views(y, x)
            if views is not None:
                big, small = views
                shape = x.shape if x_big else y.shape
                into = buffers.donated_output((x, y), donated, shape, x.dtype) \
                    if donated else None
                out = np.empty(big.shape, x.dtype) if into is None else into.reshape(big.shape)
                if small.ndim == 1:  # a row vector: shared by every range
                    def fn(o, r):
                        ufunc(r, small, out=o) if x_big else ufunc(small, r, out=o)

                    arrays = (big,)
                else:
                    def fn(o, p, q):
                        ufunc(p, q, out=o)

                    arrays = (big, small) if x_big else (small, big)
                intra_op.split_elementwise(fn, out, *arrays, parts=intra_op.workers(ctx))
                return out.reshape(shape) if into is None else into
        return generic(ctx, x, y, donated)

    return compute


_ADD_KERNEL = _split_binary(np.add)  # also BiasAdd's (nn_ops.py), for NHWC data

# Ops whose kernels write into an input the executor donates (kernels/buffers.py).
_REUSING = ("AddV2", "Add", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum")

for _op_type, _fn in _BINARY.items():
    _reuses = (0, 1) if _op_type in _REUSING else ()
    if _op_type in _SPLIT_BINARY:
        kernel(_op_type, reuses_inputs=_reuses)(_split_binary(_fn))
    elif isinstance(_fn, tuple):
        kernel_factory(_op_type, reuses_inputs=_reuses)(_binary_factory(_fn))
    else:
        kernel(_op_type, reuses_inputs=_reuses)(_binary(_fn))


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


for _op_type, _fn in (("Invert", np.invert), ("Conj", np.conj)):
    kernel(_op_type)(_unary(_fn))

# TF registers no kernel for a Tout other than the input's real dtype.
_NO_KERNEL = ("No OpKernel was registered to support Op '{op}' with these attrs: "
              "[T={T}, Tout={Tout}]")
for _op_type, _fn in (("Real", np.real), ("Imag", np.imag), ("Angle", np.angle)):
    kernel_factory(_op_type)(_complex_to_real(_fn, _NO_KERNEL))


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

