"""TridiagonalSolve and TridiagonalMatMul (tensorflux/ops/tridiagonal_ops.py) and
tf.linalg.eigh_tridiagonal: values against NumPy (table-driven, every diagonal format),
finite-difference gradients, singular systems, errors, and a comparison with TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle
from tests.op_test_util import OpCase
from tests.ops.math_cases import F32_64, run, table_tests

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("fresh_graph")]

C64_128 = [np.complex64, np.complex128]
# Added to the main diagonal of compact [.., 3, M] inputs: diagonally dominant systems.
DOMINANT = np.array([[0.0], [4.0], [0.0]])


def np_dense(d):
    """The [..., M, M] matrices of compact [..., 3, M] diagonals."""
    m = d.shape[-1]
    out = np.zeros(d.shape[:-2] + (m, m), d.dtype)
    k = np.arange(m)
    out[..., k, k] = d[..., 1, :]
    out[..., k[:-1], k[:-1] + 1] = d[..., 0, :-1]
    out[..., k[1:], k[1:] - 1] = d[..., 2, 1:]
    return out


def dominant(d):
    return d + DOMINANT.astype(d.dtype)


def np_solve(d, b):
    return np.linalg.solve(np_dense(dominant(d)).astype(np.complex128 if np.iscomplexobj(d)
                                                        else np.float64), b).astype(b.dtype)


def tf_dominant(d):
    return d + tf.constant(DOMINANT, dtype=d.dtype)


def seq(d):
    return [d[..., 0, :], d[..., 1, :], d[..., 2, :]]


def np_zero_main(d):
    """Diagonals with a zero main diagonal: only partial pivoting solves them."""
    return d * np.array([[1.0], [0.0], [1.0]], d.dtype) + np.array([[1.0], [0], [1.0]], d.dtype)


def tf_zero_main(d):
    return d * tf.constant([[1.0], [0.0], [1.0]], d.dtype) + \
        tf.constant([[1.0], [0.0], [1.0]], d.dtype)


CASES: list[tuple[OpCase, list]] = [
    (OpCase("solve", lambda d, b: tf.linalg.tridiagonal_solve(tf_dominant(d), b),
            np_solve, [(2, 3, 5), (2, 5, 2)]), F32_64 + C64_128),
    (OpCase("solve_no_pivoting", lambda d, b: tf.linalg.tridiagonal_solve(
        tf_dominant(d), b, partial_pivoting=False), np_solve, [(3, 4), (4, 3)]), F32_64),
    (OpCase("solve_vector", lambda d, b: tf.linalg.tridiagonal_solve(tf_dominant(d), b),
            lambda d, b: np_solve(d, b[..., None])[..., 0], [(2, 3, 4), (2, 4)],
            unknown_shapes=False), F32_64),
    (OpCase("solve_sequence", lambda d, b: tf.linalg.tridiagonal_solve(
        seq(tf_dominant(d)), b, diagonals_format="sequence"), np_solve, [(3, 5), (5, 1)],
        unknown_shapes=False), F32_64),
    (OpCase("solve_matrix", lambda d, b: tf.linalg.tridiagonal_solve(
        tf.linalg.diag(tf_dominant(d), k=(-1, 1), align="LEFT_RIGHT"), b,
        diagonals_format="matrix"), lambda d, b: np_solve(
        d * np.array([[1], [1], [1]], d.dtype), b), [(3, 4), (4, 2)]), F32_64),
    (OpCase("solve_transpose_rhs", lambda d, b: tf.linalg.tridiagonal_solve(
        tf_dominant(d), b, transpose_rhs=True, conjugate_rhs=True),
            lambda d, b: np_solve(d, np.conj(np.swapaxes(b, -1, -2))), [(2, 3, 4), (2, 3, 4)],
            unknown_shapes=False), F32_64 + [np.complex128]),
    (OpCase("solve_pivoting", lambda d, b: tf.linalg.tridiagonal_solve(tf_zero_main(d), b),
            lambda d, b: np.linalg.solve(np_dense(np_zero_main(d)).astype(np.float64), b)
            .astype(b.dtype), [(3, 4), (4, 2)], grad=False), F32_64),
    (OpCase("matmul", lambda d, b: tf.linalg.tridiagonal_matmul(d, b),
            lambda d, b: np_dense(d) @ b, [(2, 3, 5), (2, 5, 3)]), F32_64 + C64_128),
    (OpCase("matmul_sequence", lambda d, b: tf.linalg.tridiagonal_matmul(
        seq(d), b, diagonals_format="sequence"), lambda d, b: np_dense(d) @ b,
            [(3, 4), (4, 2)], unknown_shapes=False), F32_64),
    (OpCase("matmul_matrix", lambda a, b: tf.linalg.tridiagonal_matmul(
        a, b, diagonals_format="matrix"),
            lambda a, b: (np.triu(np.tril(a, 1), -1)) @ b, [(4, 4), (4, 2)]), F32_64),
    (OpCase("eigh_tridiagonal", lambda a, b: tf.linalg.eigh_tridiagonal(a, b),
            lambda a, b: np.linalg.eigvalsh(np.diag(a) + np.diag(b, 1) + np.diag(b, -1)),
            [(5,), (4,)], unknown_shapes=False), F32_64),
]

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)


def test_singular_systems_give_nan_or_a_perturbed_solution():
    d = tf.constant([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]], tf.float64)
    b = tf.constant([[1.0], [2.0], [3.0]], tf.float64)
    nan, perturbed = run([tf.linalg.tridiagonal_solve(d, b),
                          tf.linalg.tridiagonal_solve(d, b, perturb_singular=True)])
    assert np.isnan(nan).all()
    assert np.isfinite(perturbed).all() and abs(perturbed[2, 0] - 3.0) < 1e-9
    assert abs(perturbed[0, 0]) > 1e10  # the perturbed pivot is tiny


def test_no_pivoting_fails_on_a_zero_pivot_where_pivoting_succeeds():
    d = tf.constant([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.0, 1.0]], tf.float64)
    b = tf.constant([[1.0], [2.0], [3.0]], tf.float64)
    piv, nopiv = run([tf.linalg.tridiagonal_solve(d, b),
                      tf.linalg.tridiagonal_solve(d, b, partial_pivoting=False)])
    np.testing.assert_allclose(np_dense(run(d)) @ piv, run(b), atol=1e-12)
    assert not np.isfinite(nopiv).all()


def test_errors():
    d = tf.ones([3, 4])
    with pytest.raises(ValueError, match="perturb_singular"):
        tf.linalg.tridiagonal_solve(d, tf.ones([4, 1]), partial_pivoting=False,
                                    perturb_singular=True)
    with pytest.raises(ValueError, match="diagonals_format"):
        tf.linalg.tridiagonal_solve(d, tf.ones([4, 1]), diagonals_format="dense")
    with pytest.raises(ValueError, match="must be 3"):
        tf.linalg.tridiagonal_solve(tf.ones([2, 4]), tf.ones([4, 1]))
    with pytest.raises(ValueError):
        tf.linalg.tridiagonal_solve(d, tf.ones([5, 1]))
    with pytest.raises(ValueError):  # batch shapes do not broadcast, as in TensorFlow
        tf.linalg.tridiagonal_matmul(tf.ones([2, 3, 4]), tf.ones([1, 4, 1]))
    with pytest.raises(TypeError):
        tf.linalg.tridiagonal_solve(tf.ones([3, 4], tf.int32), tf.ones([4, 1], tf.int32))
    p = tf.placeholder(tf.float32, [None, 3, None])
    out = tf.linalg.tridiagonal_solve(p, tf.placeholder(tf.float32, [None, 4, 2]))
    assert out.shape.as_list() == [None, 4, 2]
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(out, {p: np.ones((2, 3, 5)), out.op.inputs[1]: np.ones((2, 4, 2))})


def test_eigh_tridiagonal_selects_and_returns_vectors():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([1.0 + 1j, 0.5, 0.25j])
    dense = np.diag(a).astype(complex) + np.diag(b, 1) + np.diag(np.conj(b), -1)
    w, v = run(tf.linalg.eigh_tridiagonal(tf.constant(a, tf.complex128), tf.constant(b),
                                          eigvals_only=False))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(dense), atol=1e-12)
    np.testing.assert_allclose(dense @ v, v * w, atol=1e-12)
    br = np.array([1.0, 0.5, 0.25])
    full = np.linalg.eigvalsh(np.diag(a) + np.diag(br, 1) + np.diag(br, -1))
    by_index, by_value = run([
        tf.linalg.eigh_tridiagonal(a, br, select="i", select_range=[1, 2]),
        tf.linalg.eigh_tridiagonal(a, br, select="v", select_range=[0.0, 2.5])])
    np.testing.assert_allclose(by_index, full[1:3], atol=1e-12)
    np.testing.assert_allclose(by_value, full[(full > 0) & (full <= 2.5)], atol=1e-12)
    with pytest.raises(ValueError):
        tf.linalg.eigh_tridiagonal(a, br, select="x")


ORACLE_PROGRAM = """
rng = np.random.RandomState(0)
d = rng.standard_normal((2, 3, 5)); d[:, 1] += 4
z = rng.standard_normal((3, 4)); z[1] = 0.0
b = rng.standard_normal((2, 5, 2))
x = tf.constant(d)
r = tf.constant(b)
sol = tf.linalg.tridiagonal_solve(x, r)
prod = tf.linalg.tridiagonal_matmul(x, r)
exprs = {
    "solve": sol,
    "solve_nopiv": tf.linalg.tridiagonal_solve(x, r, partial_pivoting=False),
    "solve_zero_main": tf.linalg.tridiagonal_solve(tf.constant(z), tf.constant(b[0, :4])),
    "solve_seq": tf.linalg.tridiagonal_solve([x[:, 0], x[:, 1], x[:, 2]], r,
                                             diagonals_format="sequence"),
    "solve_vec": tf.linalg.tridiagonal_solve(x, r[..., 0]),
    "matmul": prod,
    "grad_solve_d": tf.gradients(tf.reduce_sum(sol * r), x)[0],
    "grad_solve_b": tf.gradients(tf.reduce_sum(sol * r), r)[0],
    "grad_matmul_d": tf.gradients(tf.reduce_sum(prod ** 2), x)[0],
    "grad_matmul_b": tf.gradients(tf.reduce_sum(prod ** 2), r)[0],
    "perturbed": tf.linalg.tridiagonal_solve(
        tf.constant([[[0.25, 0, 0], [0.25, 0.25, 0.25], [0, 0.25, 0]],
                     [[4.0, 0, 0], [4.0, 4.0, 4.0], [0, 4.0, 0]]], tf.float64),
        tf.constant(b[:, :3]), perturb_singular=True),
    "eig": tf.linalg.eigh_tridiagonal(tf.constant(d[0, 1]), tf.constant(d[0, 0, :4])),
}
with tf.Session() as s:
    result = s.run(exprs)
"""


@pytest.mark.oracle
def test_against_tensorflow():
    ours, theirs = oracle.run_both(ORACLE_PROGRAM, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-7, atol=1e-9)
