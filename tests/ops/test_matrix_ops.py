"""Matrix ops (tensorflux/ops/matrix_ops.py): MatMul, BatchMatMul, inverse, determinant,
Cholesky against NumPy (table-driven), gradients, the split matmul kernel, errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.ops import math_ops
from tests.op_test_util import OpCase
from tests.ops.math_cases import (
    BF16,
    F32_64,
    in_f64,
    run,
    spd,
    table_tests,
    well_conditioned,
)

# The kernels give NaN/inf for 0/0, log(0), NaN casts as TensorFlow does; NumPy's warnings
# about them are silenced in the kernel module (pytest's own warning filters replace that).
# Each test runs on a fresh default graph (tests/ops/conftest.py).
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu"),
              pytest.mark.usefixtures("fresh_graph")]

# (case, dtypes to check values for; gradients are checked for float32/float64 when
# case.grad is set).
CASES: list[tuple[OpCase, list]] = [
    (OpCase("batch_matmul_v1", lambda x, y: math_ops.apply_op(
        "BatchMatMul", x=x, y=y, adj_y=True), lambda x, y: x @ np.swapaxes(y, -1, -2),
        [(2, 2, 3), (2, 4, 3)]), F32_64),
    (OpCase("matmul", tf.matmul, in_f64(np.matmul), [(2, 3), (3, 4)]),
     [np.float16, BF16, np.float32, np.float64, np.int32, np.complex64]),
    (OpCase("matmul_transpose_a", lambda a, b: tf.matmul(a, b, transpose_a=True),
            lambda a, b: a.T @ b, [(3, 2), (3, 4)]), F32_64),
    (OpCase("matmul_transpose_b", lambda a, b: tf.matmul(a, b, transpose_b=True),
            lambda a, b: a @ b.T, [(2, 3), (4, 3)]), F32_64),
    (OpCase("matmul_transpose_both", lambda a, b: tf.matmul(a, b, True, True),
            lambda a, b: a.T @ b.T, [(3, 2), (4, 3)]), F32_64),
    (OpCase("matmul_adjoint", lambda a, b: tf.matmul(a, b, adjoint_a=True),
            lambda a, b: np.conj(a.T) @ b, [(3, 2), (3, 4)], grad=False), [np.complex64]),
    (OpCase("matmul_op", lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3), (3, 4)]),
     [np.float32]),
    (OpCase("batch_matmul", tf.matmul, np.matmul, [(2, 2, 3), (2, 3, 4)]), F32_64),
    (OpCase("batch_matmul_broadcast", tf.matmul, np.matmul, [(2, 1, 2, 3), (3, 3, 4)]),
     F32_64),
    (OpCase("batch_matmul_rank2_rhs", lambda a, b: tf.matmul(a, b, transpose_b=True),
            lambda a, b: a @ b.T, [(2, 2, 3), (4, 3)]), F32_64),
    (OpCase("batch_matmul_adjoint", lambda a, b: tf.matmul(a, b, adjoint_a=True,
                                                           adjoint_b=True),
            lambda a, b: np.conj(np.swapaxes(a, -1, -2)) @ np.conj(np.swapaxes(b, -1, -2)),
            [(2, 3, 2), (2, 4, 3)], grad=False), [np.complex128]),
    (OpCase("matrix_inverse", tf.matrix_inverse, in_f64(np.linalg.inv), [(2, 3, 3)],
            make=well_conditioned), [np.float32, np.float64, np.complex64]),
    (OpCase("matrix_inverse_adjoint", lambda x: tf.matrix_inverse(x, adjoint=True),
            lambda x: np.linalg.inv(np.swapaxes(x, -1, -2)), [(3, 3)],
            make=well_conditioned), F32_64),
    (OpCase("matrix_determinant", tf.matrix_determinant, in_f64(np.linalg.det),
            [(2, 3, 3)], make=well_conditioned), [np.float32, np.float64]),
    (OpCase("cholesky", tf.cholesky, in_f64(np.linalg.cholesky), [(2, 3, 3)], make=spd,
            grad=False), [np.float32, np.float64]),
    (OpCase("cholesky_of_gram", lambda x: tf.cholesky(
        tf.matmul(x, x, transpose_b=True) + 3 * np.eye(3, dtype=x.dtype.as_numpy_dtype)),
        lambda x: np.linalg.cholesky(x @ x.T + 3 * np.eye(3)).astype(x.dtype), [(3, 3)]),
     F32_64),
]

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)



def test_singular_and_non_positive_definite_matrices():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
        run(tf.matrix_inverse(tf.constant(np.zeros((2, 2), np.float32))))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky decomposition was "
                                                             "not successful"):
        run(tf.cholesky(tf.constant([[1.0, 2.0], [2.0, 1.0]])))
    assert run(tf.matrix_determinant(tf.constant(np.zeros((0, 0), np.float32)))) == 1.0


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m, k, n", [(70, 30, 200), (300, 20, 50), (1, 5, 1)])
@pytest.mark.usefixtures("split_everything")
def test_split_matmul(ta, tb, m, k, n):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    with tf.Session() as s:
        got = s.run(tf.matmul(a, b, transpose_a=ta, transpose_b=tb))
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
