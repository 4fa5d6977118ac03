"""The _FusedMatMul kernel (kernels/cpu/matrix_ops.py; made by the graph optimizer's
`fuse_matmul_bias_relu`): the MatMul kernel's product with the bias and ReLU applied in
place, equal bit for bit to the MatMul, AddV2/BiasAdd and Relu kernels run one after the
other, on every path the product takes (one BLAS call, the split C gemm, the skinny
products, the NumPy split), for odd shapes, transposed and non-contiguous operands. No
timing is asserted."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tensorflux.framework import errors
from tensorflux.kernels.cpu import matrix_ops, native


def _node(ta: bool, tb: bool, relu: bool, num_args: int = 1, ops=None):
    fused = ops if ops is not None else (["BiasAdd", "Relu"] if relu else ["BiasAdd"])
    return SimpleNamespace(name="fused", op="_FusedMatMul", attrs={
        "transpose_a": ta, "transpose_b": tb, "num_args": num_args, "fused_ops": fused,
        "T": None, "epsilon": 1e-4, "leakyrelu_alpha": 0.2})


def _ctx(parts: int):
    return SimpleNamespace(session=SimpleNamespace(
        _intra_op_threads=parts, _config=SimpleNamespace(intra_op_parallelism_threads=parts)))


def _operand(rng, shape, dtype, strided: bool):
    """A (rows, cols) operand: C-contiguous, or a view with a row stride wider than its
    rows (non-contiguous)."""
    rows, cols = shape
    if strided:
        base = rng.standard_normal((rows, cols + 3)).astype(dtype)
        return base[:, 1:cols + 1]
    return rng.standard_normal((rows, cols)).astype(dtype)


# (m, k, n): one element; odd sizes; the skinny products' (k <= 16 and m <= 16); the MLP's
# first layer (split by the C gemm at 2 threads); a product above interrupt.CHUNK_FLOPS
_SHAPES = [(1, 1, 1), (7, 13, 5), (130, 70, 33), (3, 16, 40), (128, 784, 512),
           (600, 700, 500)]
# (transpose_a, transpose_b, a as a strided view, b as a strided view)
_LAYOUTS = [(False, False, False, False), (True, False, False, False),
            (False, True, False, False), (True, True, False, False),
            (False, False, True, False), (False, False, False, True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", _SHAPES)
@pytest.mark.parametrize("layout", _LAYOUTS)
@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("parts", [1, 2])
def test_fused_matmul_equals_the_unfused_kernels_bit_for_bit(dtype, m, k, n, layout, relu,
                                                            parts):
    ta, tb, a_strided, b_strided = layout
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    # the kernel receives a as stored, (k, m) when transpose_a, and b as (n, k) when
    # transpose_b (it multiplies their transposed views)
    a = _operand(rng, (k, m) if ta else (m, k), dtype, a_strided)
    b = _operand(rng, (n, k) if tb else (k, n), dtype, b_strided)
    bias = rng.standard_normal(n).astype(dtype)
    bias[: min(n, 2)] = np.array([np.nan, -0.0], dtype)[: min(n, 2)]
    ctx = _ctx(parts)
    got = matrix_ops._fused_matmul(_node(ta, tb, relu))(ctx, a, b, bias)
    product = matrix_ops._matmul(_node(ta, tb, relu))(ctx, a, b)
    want = np.add(product, bias)  # the AddV2 / BiasAdd kernels' sum
    if relu:
        want = native.relu(want, 1) if native.available() else np.maximum(want, 0)
    assert got.shape == (m, n) and got.dtype == dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                  want.view(f"u{want.itemsize}"))
    # and against NumPy in float64, for the product itself
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64) + bias
    if relu:
        ref = np.where(ref < 0, 0.0, ref)
    np.testing.assert_allclose(got, ref, rtol=1e-4 if dtype == np.float32 else 1e-10,
                               atol=1e-3 if dtype == np.float32 else 1e-10)


def test_fused_matmul_without_the_extension_gives_the_same_bits(monkeypatch):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 11)).astype(np.float32)
    b = rng.standard_normal((11, 6)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    with_c = matrix_ops._fused_matmul(_node(False, False, True))(_ctx(1), a, b, bias)
    monkeypatch.setattr(native, "_mod", None)
    without = matrix_ops._fused_matmul(_node(False, False, True))(_ctx(1), a, b, bias)
    np.testing.assert_array_equal(with_c, without)


@pytest.mark.parametrize("bias_shape, message", [
    ((5,), "as many biases as the last dimension"),
    ((6, 1), "as many biases as the last dimension"),
])
def test_a_bias_of_the_wrong_shape_is_an_invalid_argument(bias_shape, message):
    compute = matrix_ops._fused_matmul(_node(False, False, True))
    with pytest.raises(errors.InvalidArgumentError, match=message):
        compute(_ctx(1), np.ones((4, 3), np.float32), np.ones((3, 6), np.float32),
                np.ones(bias_shape, np.float32))


@pytest.mark.parametrize("ops, num_args", [(["BiasAdd", "Elu"], 1), (["Relu"], 1),
                                           (["BiasAdd"], 2)])
def test_other_fusions_are_unimplemented(ops, num_args):
    with pytest.raises(errors.UnimplementedError, match="_FusedMatMul"):
        matrix_ops._fused_matmul(_node(False, False, False, num_args, ops))
