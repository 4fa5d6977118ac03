"""The _FusedMatMul kernel (kernels/cpu/matrix_ops.py; made by the graph optimizer's
`fuse_matmul_bias_relu`): the MatMul kernel's product with the bias and ReLU applied in
place, equal bit for bit to the MatMul, AddV2/BiasAdd and Relu kernels run one after the
other, on every path the product takes (one BLAS call, the split C gemm, the skinny
products, the NumPy split), for odd shapes, transposed and non-contiguous operands. And
_FusedMatMulAdd (`fuse_matmul_add`): the product added into the addend's buffer by BLAS
(native.gemm's `into`), against the MatMul and AddV2 kernels. No timing is asserted."""

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


def _add_node(ta: bool, tb: bool):
    return SimpleNamespace(name="fused_add", op="_FusedMatMulAdd",
                           attrs={"transpose_a": ta, "transpose_b": tb, "T": None})


# (m, k, n): odd sizes; a weight gradient's (k = the batch: one BLAS block of k, so the
# unfused bits); a long k (BLAS adds each block of k into the sum in turn); k slices
# with 2 threads; a product above interrupt.CHUNK_FLOPS (polled, in pieces of k)
_ADD_SHAPES = [(7, 13, 5), (130, 70, 33), (512, 128, 1024), (96, 3000, 64),
               (128, 8192, 128), (600, 700, 500)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", _ADD_SHAPES)
@pytest.mark.parametrize("layout", _LAYOUTS)
@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("donate", [False, True])
def test_fused_matmul_add_equals_the_product_then_the_sum(dtype, m, k, n, layout, parts,
                                                         donate):
    ta, tb, a_strided, b_strided = layout
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = _operand(rng, (k, m) if ta else (m, k), dtype, a_strided)
    b = _operand(rng, (n, k) if tb else (k, n), dtype, b_strided)
    addend = rng.standard_normal((m, n)).astype(dtype)
    kept = addend.copy()
    ctx = _ctx(parts)
    got = matrix_ops._fused_matmul_add(_add_node(ta, tb))(
        ctx, a, b, addend, donated=(2,) if donate else ())
    want = np.add(kept, matrix_ops._matmul(_add_node(ta, tb))(ctx, a, b))
    assert got.shape == (m, n) and got.dtype == dtype
    if not donate:
        assert got is not addend
        np.testing.assert_array_equal(addend, kept)  # an input not donated is not written
    elif native.available() and (m, k, n) == (512, 128, 1024) and layout == _LAYOUTS[1]:
        assert got is addend  # a weight gradient's sum: added into the donated buffer
    if k <= 256 or not native.available():
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                      want.view(f"u{want.itemsize}"))
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))
    # the same bits from run to run (a fixed plan per product and thread count)
    again = matrix_ops._fused_matmul_add(_add_node(ta, tb))(ctx, a, b, kept)
    np.testing.assert_array_equal(again, got)


def test_fused_matmul_add_without_the_extension_and_when_shapes_differ(monkeypatch):
    """Without the extension: the MatMul kernel's product plus the addend, as AddV2; an
    addend of another shape (the optimizer fuses sums whose addend has no static shape)
    broadcasts as AddV2 does, or fails as it does."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((9, 11)).astype(np.float32)
    b = rng.standard_normal((11, 6)).astype(np.float32)
    addend = rng.standard_normal((9, 6)).astype(np.float32)
    compute = matrix_ops._fused_matmul_add(_add_node(False, False))
    with_c = compute(_ctx(1), a, b, addend)
    row = compute(_ctx(1), a, b, addend[:1])
    np.testing.assert_array_equal(row, addend[:1] + matrix_ops._matmul(
        _add_node(False, False))(_ctx(1), a, b))
    with pytest.raises(ValueError):
        compute(_ctx(1), a, b, np.ones((9, 5), np.float32))
    monkeypatch.setattr(native, "_mod", None)
    np.testing.assert_array_equal(compute(_ctx(1), a, b, addend), with_c)


@pytest.mark.skipif(not native.available(), reason="the C extension is not built")
def test_gemm_into_refuses_what_it_cannot_write():
    """native.gemm's `into` must be the product's C-contiguous, writeable array of its
    dtype; else None and `into` untouched."""
    a, b = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    for into in (np.zeros((4, 6), np.float32), np.zeros((4, 5), np.float64),
                 np.zeros((5, 4), np.float32).T, np.zeros((4, 10), np.float32)[:, ::2]):
        assert native.gemm(a, b, 1, into=into) is None and not into.any()
    frozen = np.zeros((4, 5), np.float32)
    frozen.flags.writeable = False
    assert native.gemm(a, b, 1, into=frozen) is None
    into = np.full((4, 5), 2.0, np.float32)
    assert native.gemm(a, b, 2, into=into) is into
    np.testing.assert_array_equal(into, np.full((4, 5), 5.0, np.float32))
