"""GPU kernels of the elementwise math, comparison, cast and matrix-product ops (ops in
math_ops.py, unary_ops.py, comparison_ops.py, matrix_ops.py), written against the array
module of kernels/gpu/backend.py. Host-only inputs run the CPU kernel (see _common.py).

Integer division and modulo on the device follow NumPy's floor semantics (as TF's
FloorDiv/FloorMod); a zero divisor gives what the device gives (TF's GPU kernels do not
check either).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.kernels.gpu import _fused, backend, cublas, graphs
from tensorflux.kernels.gpu._common import FLOATS, NUMERIC, REAL, dev, host, hybrid


def _xp():
    return backend.xp()


def _binary(op_type: str, fn, types=NUMERIC):
    def factory(node):
        def compute(ctx, x, y):
            return fn(_xp(), dev(x), dev(y))
        return compute

    hybrid(op_type, factory, {"T": types})


def _unary(op_type: str, fn, types=FLOATS):
    def factory(node):
        def compute(ctx, x):
            return fn(_xp(), dev(x))
        return compute

    hybrid(op_type, factory, {"T": types})


def _relu_grad(xp, g, x):
    if hasattr(g, "shape") and hasattr(x, "shape") and g.shape == x.shape:
        out = _fused.run("relu_grad", g, x)
        if out is not None:
            return out
    return g * (x > 0)


def _keep_dtype(xp, r, like):
    return r.astype(like.dtype, copy=False) if hasattr(like, "dtype") and \
        r.dtype != like.dtype else r


for _op, _fn in {
    "Add": lambda xp, x, y: xp.add(x, y),
    "AddV2": lambda xp, x, y: xp.add(x, y),
    "Sub": lambda xp, x, y: xp.subtract(x, y),
    "Mul": lambda xp, x, y: xp.multiply(x, y),
    "Maximum": lambda xp, x, y: xp.maximum(x, y),
    "Minimum": lambda xp, x, y: xp.minimum(x, y),
    "SquaredDifference": lambda xp, x, y: xp.square(xp.subtract(x, y)),
    "FloorDiv": lambda xp, x, y: xp.floor_divide(x, y),
    "FloorMod": lambda xp, x, y: xp.remainder(x, y),
}.items():
    _binary(_op, _fn)

for _op, _fn in {
    "RealDiv": lambda xp, x, y: xp.true_divide(x, y),
    "Div": lambda xp, x, y: xp.true_divide(x, y),
    "DivNoNan": lambda xp, x, y: xp.where(y == 0, xp.zeros((), x.dtype if hasattr(
        x, "dtype") else y.dtype), xp.true_divide(x, xp.where(y == 0, 1, y))),
    "Pow": lambda xp, x, y: xp.power(x, y),
    "ReluGrad": lambda xp, g, x: _relu_grad(xp, g, x),
    "Relu6Grad": lambda xp, g, x: g * ((x > 0) & (x < 6)),
    "EluGrad": lambda xp, g, y: xp.where(y > 0, g, g * (y + 1)),
    "SoftplusGrad": lambda xp, g, x: g / (1 + xp.exp(-x)),
    "TanhGrad": lambda xp, y, g: g * (1 - y * y),
    "SigmoidGrad": lambda xp, y, g: g * y * (1 - y),
    "SqrtGrad": lambda xp, y, g: g * 0.5 / y,
    "RsqrtGrad": lambda xp, y, g: g * -0.5 * y * y * y,
    "ReciprocalGrad": lambda xp, y, g: -g * y * y,
}.items():
    _binary(_op, lambda xp, x, y, _f=_fn: _keep_dtype(xp, _f(xp, x, y), x
                                                        if hasattr(x, "dtype") else y),
            FLOATS)

for _op, _fn in {
    "Equal": lambda xp, x, y: xp.equal(x, y),
    "NotEqual": lambda xp, x, y: xp.not_equal(x, y),
    "Less": lambda xp, x, y: xp.less(x, y),
    "LessEqual": lambda xp, x, y: xp.less_equal(x, y),
    "Greater": lambda xp, x, y: xp.greater(x, y),
    "GreaterEqual": lambda xp, x, y: xp.greater_equal(x, y),
}.items():
    _binary(_op, _fn)


def _logical(op_type, fn):
    def factory(node):
        def compute(ctx, *xs):
            return fn(_xp(), *(dev(x) for x in xs))
        return compute

    hybrid(op_type, factory)


_logical("LogicalAnd", lambda xp, x, y: xp.logical_and(x, y))
_logical("LogicalOr", lambda xp, x, y: xp.logical_or(x, y))
_logical("LogicalNot", lambda xp, x: xp.logical_not(x))


for _op, _fn in {
    "Neg": lambda xp, x: xp.negative(x),
    "Abs": lambda xp, x: xp.abs(x),
    "Square": lambda xp, x: xp.square(x),
    "Sign": lambda xp, x: xp.sign(x),
}.items():
    _unary(_op, _fn, REAL)

for _op, _fn in {
    "Exp": lambda xp, x: xp.exp(x),
    "Expm1": lambda xp, x: xp.expm1(x),
    "Log": lambda xp, x: xp.log(x),
    "Log1p": lambda xp, x: xp.log1p(x),
    "Sqrt": lambda xp, x: xp.sqrt(x),
    "Rsqrt": lambda xp, x: xp.reciprocal(xp.sqrt(x)),
    "Reciprocal": lambda xp, x: xp.reciprocal(x),
    "Inv": lambda xp, x: xp.reciprocal(x),
    "Tanh": lambda xp, x: xp.tanh(x),
    "Sigmoid": lambda xp, x: xp.reciprocal(1 + xp.exp(-x)),
    "Relu": lambda xp, x: xp.maximum(x, 0),
    "Relu6": lambda xp, x: xp.clip(x, 0, 6),
    "Elu": lambda xp, x: xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0))),
    "Softplus": lambda xp, x: xp.logaddexp(x, 0),
    "Floor": lambda xp, x: xp.floor(x),
    "Ceil": lambda xp, x: xp.ceil(x),
    "Round": lambda xp, x: xp.rint(x),
    "Rint": lambda xp, x: xp.rint(x),
    "Sin": lambda xp, x: xp.sin(x),
    "Cos": lambda xp, x: xp.cos(x),
}.items():
    _unary(_op, lambda xp, x, _f=_fn: _keep_dtype(xp, _f(xp, x), x))

for _op, _fn in {
    "IsFinite": lambda xp, x: xp.isfinite(x),
    "IsNan": lambda xp, x: xp.isnan(x),
    "IsInf": lambda xp, x: xp.isinf(x),
}.items():
    _unary(_op, _fn)


def _leaky_relu(node):
    alpha = node.attrs["alpha"]

    def compute(ctx, x):
        x = dev(x)
        return _xp().where(x > 0, x, x * x.dtype.type(alpha))

    return compute


def _leaky_relu_grad(node):
    alpha = node.attrs["alpha"]

    def compute(ctx, g, x):
        g, x = dev(g), dev(x)
        return _xp().where(x > 0, g, g * g.dtype.type(alpha))

    return compute


hybrid("LeakyRelu", _leaky_relu, {"T": FLOATS})
hybrid("LeakyReluGrad", _leaky_relu_grad, {"T": FLOATS})


def _cast(node):
    dst = node.attrs["DstT"].as_numpy_dtype

    def compute(ctx, x):
        x = dev(x)
        return backend.to_device(x).astype(dst)

    return compute


_CASTABLE = NUMERIC
hybrid("Cast", _cast, {"SrcT": _CASTABLE, "DstT": _CASTABLE})


def _cast_bfloat16(node):
    """float32 <-> bfloat16 (the casts of lossy transfers, `enable_bfloat16_sendrecv`).
    CuPy has no bfloat16 arrays: the device rounds float32 to the upper 16 bits (to
    nearest even, or truncating with `Truncate`; NaN stays a quiet NaN, as ml_dtypes) and
    the words go to the host as a bfloat16 array; the way back widens the words on the
    device."""
    to_bf16 = node.attrs["DstT"] is dtypes.bfloat16
    truncate = node.attrs.get("Truncate", False)

    def compute(ctx, x):
        xp = _xp()
        if not to_bf16:
            words = backend.to_device(np.ascontiguousarray(host(x)).view(np.uint16))
            return (words.astype(np.uint32) << np.uint32(16)).view(np.float32)
        f = xp.ascontiguousarray(backend.to_device(x))
        bits = f.view(np.uint32)
        if truncate:
            high = bits >> np.uint32(16)
        else:
            high = (bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))) \
                >> np.uint32(16)
            high = xp.where(xp.isnan(f), (bits >> np.uint32(16)) | np.uint32(0x40), high)
        return np.ascontiguousarray(backend.to_host(high.astype(np.uint16))).view(
            dtypes.bfloat16.as_numpy_dtype)

    return compute


hybrid("Cast", _cast_bfloat16, {"SrcT": (dtypes.float32,), "DstT": (dtypes.bfloat16,)})
hybrid("Cast", _cast_bfloat16, {"SrcT": (dtypes.bfloat16,), "DstT": (dtypes.float32,)})


def _select(node):
    def compute(ctx, c, t, e):
        xp = _xp()
        c, t, e = dev(c), dev(t), dev(e)
        if node.op == "Select" and getattr(c, "ndim", 0) == 1 and getattr(t, "ndim", 0) > 1:
            c = c.reshape((-1,) + (1,) * (t.ndim - 1))
        return xp.where(c, t, e)

    return compute


hybrid("Select", _select, {"T": NUMERIC})
hybrid("SelectV2", _select, {"T": NUMERIC})


def _add_n(node):
    def compute(ctx, *xs):
        xs = [dev(x) for x in xs]
        out = xs[0].copy() if hasattr(xs[0], "copy") else xs[0]
        for x in xs[1:]:
            out = out + x
        return out

    return compute


hybrid("AddN", _add_n, {"T": NUMERIC})


def _matmul(node):
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]

    def compute(ctx, a, b):
        a, b = backend.to_device(a), backend.to_device(b)
        if graphs.capturing() and cublas.available():  # CuPy refuses cuBLAS there
            return cublas.matmul(a, b, ta, tb)
        return _xp().matmul(a.T if ta else a, b.T if tb else b)

    return compute


hybrid("MatMul", _matmul, {"T": FLOATS}, expensive=True)


def _batch_matmul(node):
    ta, tb = node.attrs["adj_x"], node.attrs["adj_y"]

    def compute(ctx, a, b):
        a, b = backend.to_device(a), backend.to_device(b)
        xp = _xp()
        if ta:
            a = xp.swapaxes(a, -1, -2)
        if tb:
            b = xp.swapaxes(b, -1, -2)
        return xp.matmul(a, b)

    return compute


hybrid("BatchMatMul", _batch_matmul, {"T": FLOATS}, expensive=True)
hybrid("BatchMatMulV2", _batch_matmul, {"T": FLOATS}, expensive=True)


def _bias_add(node):
    nchw = node.attrs.get("data_format", "NHWC") == "NCHW"

    def compute(ctx, x, b):
        x, b = backend.to_device(x), backend.to_device(b)
        if nchw and x.ndim > 2:
            b = b.reshape((-1,) + (1,) * (x.ndim - 2))
        return x + b

    return compute


def _bias_add_grad(node):
    nchw = node.attrs.get("data_format", "NHWC") == "NCHW"

    def compute(ctx, g):
        g = backend.to_device(g)
        xp = _xp()
        if nchw and g.ndim > 2:
            return g.sum(axis=(0,) + tuple(range(2, g.ndim)), dtype=g.dtype)
        # The column sums of the (rows, channels) matrix in one pass: the array module's
        # reduction over the leading axes is ~50x slower on a GPU.
        g2 = xp.ascontiguousarray(g).reshape(-1, g.shape[-1])
        if not g2.shape[0]:
            return xp.zeros(g.shape[-1:], dtype=g.dtype)
        out = _fused.column_sum(g2)
        return out if out is not None else g2.sum(axis=0, dtype=g.dtype)

    def reshaped(ctx, g):
        out = compute(ctx, g)
        return out.reshape(-1)

    return reshaped


hybrid("BiasAdd", _bias_add, {"T": FLOATS})
hybrid("BiasAddV1", _bias_add, {"T": FLOATS})
hybrid("BiasAddGrad", _bias_add_grad, {"T": FLOATS})
