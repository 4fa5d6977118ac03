"""CPU kernels of the matrix ops (tensorflux/ops/matrix_ops.py), in NumPy.

Floating-point exceptions give NaN/inf as in TensorFlow; NumPy's RuntimeWarnings for them are
silenced for this module only (see math_ops.py).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import buffers, interrupt, intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu._math_common import (
    _BLAS_FLOATS,
    _F16,
    _LOW_PRECISION,
    _invalid,
    _shape_str,
)
from tensorflux.kernels.registry import kernel, kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=__name__)


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


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
        m, n = a2.shape[0], b2.shape[1]
        flops = 2.0 * m * n * a2.shape[1]
        dtype = a.dtype
        if flops < intra_op.MIN_FLOPS and (dtype is _F32 or dtype is _F64):
            return _product(a2, b2)  # the many small products of an RNN step, at once
        if dtype in _LOW_PRECISION:  # float32 products rounded once, as TF; NumPy's own
            # float16 matmul rounds the same but has no BLAS (about 100x slower)
            return np.matmul(a2.astype(np.float32), b2.astype(np.float32)).astype(a.dtype)
        if flops < intra_op.MIN_FLOPS:  # one product on this thread, whatever `parts` is
            return _product(a2, b2)
        parts = intra_op.workers(ctx)
        long = flops > interrupt.CHUNK_FLOPS  # in blocks, polling the step between them
        if a.dtype in _BLAS_FLOATS and flops >= intra_op.MIN_FLOPS and \
                ((ta and not tb) or (tb and not ta)) and min(m, a2.shape[1]) <= native.SKINNY_MAX:
            # a fully connected layer's gradients at a small batch (x^T dy, dy w^T)
            out = native.skinny(a2, b2, parts)
            if out is not None:
                return out
        if not ta and not tb and m <= native.THIN_NN_ROWS and a.dtype == np.float32:
            # a fully connected layer's forward product at a small batch (x w)
            out = native.thin_nn(a2, b2, parts)
            if out is not None:
                return out
        if a.dtype in _BLAS_FLOATS and (long or parts > 1 and flops >= intra_op.MIN_FLOPS):
            out = native.gemm(a2, b2, parts)
            return out if out is not None else _split_matmul(a2, b2, parts)
        if long and min(m, n) > 0:
            return _split_matmul(a2, b2, parts)
        return _product(a2, b2)

    return compute


@kernel_factory("_FusedMatMul", expensive=True)
def _fused_matmul(node):
    """MatMul, BiasAdd and Relu of the graph optimizer's fusion (fuse_matmul_bias_relu):
    the product as MatMul computes it, then the bias and ReLU in one pass over its fresh
    output, in place (the operations of the BiasAdd/AddV2 and Relu kernels: the unfused
    nodes' values bit for bit)."""
    ops = tuple(op.decode() if isinstance(op, bytes) else op for op in node.attrs["fused_ops"])
    if ops not in (("BiasAdd",), ("BiasAdd", "Relu")) or node.attrs["num_args"] != 1:
        raise errors.UnimplementedError(
            None, None, f"_FusedMatMul on the CPU supports fused_ops [BiasAdd] and [BiasAdd, "
            f"Relu] with one argument, got {list(ops)} with {node.attrs['num_args']}")
    relu = len(ops) == 2
    product = _matmul(node)
    zero = None

    def compute(ctx, a, b, bias):
        nonlocal zero
        out = product(ctx, a, b)
        if bias.ndim != 1 or bias.shape[0] != out.shape[1]:
            raise _invalid(f"Must provide as many biases as the last dimension of the input "
                           f"tensor: {list(bias.shape)} vs. {list(out.shape)}")
        if bias.dtype != out.dtype:
            raise _invalid(f"bias has type {bias.dtype}, the product {out.dtype}")
        if not native.bias_relu(out, bias, relu):
            np.add(out, bias, out=out)
            if relu:
                zero = np.zeros((), out.dtype) if zero is None else zero
                np.maximum(out, zero, out=out)
        return out

    return compute


@kernel_factory("_FusedMatMulAdd", expensive=True, reuses_inputs=(2,))
def _fused_matmul_add(node):
    """addend + op(a) @ op(b) (graph_optimizer.fuse_matmul_add): the product added into the
    addend's buffer when the executor donates it, else into a copy of it, by one BLAS call
    with beta = 1 (native.gemm's `into`). The values are the unfused AddV2's where the
    product's k fits one BLAS block (a weight gradient's batch); over a longer k, BLAS
    adds each block's part into the sum in turn (rounding-level differences). Without the
    extension, for operands it does not take, and for the products the MatMul kernel
    computes otherwise (small ones; the skinny products of a small batch, summed in
    another order): the MatMul kernel's product, then the add, as the unfused nodes; also
    where the addend's shape is not the product's (the optimizer fuses sums whose addend
    has no static shape, a loop's accumulator: AddV2's broadcasting then)."""
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
    product = _matmul(node)

    def compute(ctx, a, b, addend, donated=()):
        if a.ndim == 2 and b.ndim == 2 and a.dtype in _BLAS_FLOATS and b.dtype == a.dtype:
            a2, b2 = (a.T if ta else a), (b.T if tb else b)
            shape = (a2.shape[0], b2.shape[1])
            k = a2.shape[1]
            if k == b2.shape[0] and addend.shape == shape and addend.dtype == a.dtype and \
                    2.0 * shape[0] * shape[1] * k >= intra_op.MIN_FLOPS and \
                    not (ta != tb and min(shape[0], k) <= native.SKINNY_MAX):
                into = buffers.donated_output((a, b, addend), donated, shape, a.dtype) \
                    if donated else None
                out = np.array(addend, order="C") if into is None else into
                if native.gemm(a2, b2, intra_op.workers(ctx), into=out) is not None:
                    return out
        return np.add(addend, product(ctx, a, b))  # AddV2's values (and broadcasting)

    return compute


def _product(a, b):
    """np.matmul(a, b), written where the executor offers (buffers.empty_output)."""
    if not buffers.output_offered():
        return np.matmul(a, b)
    return np.matmul(a, b, out=buffers.empty_output((a.shape[0], b.shape[1]),
                                                     np.result_type(a, b)))


def _split_matmul(a, b, parts):
    """a @ b with the longer of the output's two dimensions cut into one block per thread
    (at least 64 wide) that the intra-op threads claim (each block one BLAS call writing its
    part of the output in place; column blocks keep BLAS efficient when there are few rows).
    One block per thread beat two (MLP step 5.5-5.7 ms vs 5.8-6.1 ms, interleaved runs):
    every BLAS call packs its operands again. A long product is cut further, into blocks
    of about `interrupt.CHUNK_FLOPS` (at least 16 wide), so that it polls its step."""
    m, n = a.shape[0], b.shape[1]
    out = buffers.empty_output((m, n), np.result_type(a, b))
    grain = intra_op.bounded_grain(max(64, -(-max(m, n) // parts)), max(m, n),
                                   2.0 * m * n * a.shape[1], floor=16)
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
        if x.dtype in _LOW_PRECISION:
            return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(x.dtype)
        return _batched(a, b)

    return compute


def _batched(a, b):
    """np.matmul(a, b) of stacks of matrices; a long one (with no broadcast batch) in blocks
    of the batch, polling the step between them (kernels/interrupt.py)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count = math.prod(batch)
    flops = 2.0 * count * a.shape[-2] * a.shape[-1] * b.shape[-1]
    if flops <= interrupt.CHUNK_FLOPS or count <= 1 or a.shape[:-2] != b.shape[:-2]:
        return np.matmul(a, b)  # (a broadcast batch is not cut: no copy of its operand)
    a = a.reshape((count,) + a.shape[-2:])
    b = b.reshape((count,) + b.shape[-2:])
    out = np.empty((count, a.shape[-2], b.shape[-1]), np.result_type(a, b))

    def work(lo, hi):
        np.matmul(a[lo:hi], b[lo:hi], out=out[lo:hi])

    intra_op.parallel_for(work, count, intra_op.bounded_grain(count, count, flops), 1)
    return out.reshape(batch + out.shape[-2:])


def _check_square(x) -> None:
    if x.ndim < 2:
        raise _invalid(f"Input tensor 0 must have rank >= 2, got {x.ndim}")
    if x.shape[-1] != x.shape[-2]:
        raise _invalid(f"Input matrices must be squares, got {x.shape[-2]} != {x.shape[-1]}")


def _stacked(fn, a):
    """`fn(a)` for a NumPy linalg function over stacks of matrices; a long stack (over
    about interrupt.CHUNK_FLOPS) in blocks of matrices, the step checked between them
    (kernels/interrupt.py). One matrix is one LAPACK call that cannot be cut: a long one
    runs as `interrupt.abandonable` (the step ends on time, the call finishes alone)."""
    count = math.prod(a.shape[:-2])
    work = float(count) * a.shape[-1] ** 3
    if a.ndim <= 2 or count <= 1 or work <= interrupt.CHUNK_FLOPS:
        return interrupt.abandonable(fn, a, work=work)
    flat = a.reshape((count,) + a.shape[-2:])
    grain = intra_op.bounded_grain(count, count, work)
    out = None
    for lo in interrupt.polled(range(0, count, grain), every=1):
        block = interrupt.abandonable(fn, flat[lo:lo + grain], work=work * grain / count)
        if out is None:
            out = np.empty((count,) + block.shape[1:], block.dtype)
        out[lo:lo + grain] = block
    return out.reshape(a.shape[:-2] + out.shape[1:])


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
            inv = _stacked(np.linalg.inv, a)
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
    return np.asarray(_stacked(np.linalg.det, _linalg_input(x))).astype(x.dtype, copy=False)


@kernel("Cholesky", expensive=True)
def _cholesky(ctx, x):
    _check_square(x)
    if x.size == 0:
        return np.empty(x.shape, x.dtype)
    a = _linalg_input(x)
    lower = np.tril(a)
    sym = lower + np.conj(np.swapaxes(np.tril(a, -1), -1, -2))  # only the lower part counts
    try:
        out = _stacked(np.linalg.cholesky, sym)
    except np.linalg.LinAlgError:
        raise _invalid("Cholesky decomposition was not successful. The input might not be "
                       "valid.") from None
    return out.astype(x.dtype, copy=False)
