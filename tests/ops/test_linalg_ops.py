"""Linear-algebra ops (tensorflux/ops/linalg_ops.py, linalg_factor_ops.py) and the
functions built from them (tensorflux/linalg/): values against NumPy/SciPy (table-driven),
finite-difference gradients, errors, and one comparison table with TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import tensorflux as tf
from tests import oracle
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

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning:tensorflux.kernels.cpu"),
              pytest.mark.filterwarnings("ignore:logm result may be inaccurate"),
              pytest.mark.usefixtures("fresh_graph")]

C64_128 = [np.complex64, np.complex128]


def np_band(x, lo, up):
    m, n = x.shape[-2:]
    off = np.arange(n)[None, :] - np.arange(m)[:, None]
    return np.where(((lo < 0) | (-off <= lo)) & ((up < 0) | (off <= up)), x, 0).astype(x.dtype)


def np_matrix_diag(d):
    out = np.zeros(d.shape + d.shape[-1:], d.dtype)
    i = np.arange(d.shape[-1])
    out[..., i, i] = d
    return out


def np_set_diag(x, d):
    out = x.copy()
    i = np.arange(d.shape[-1])
    out[..., i, i] = d
    return out


def gram(x):
    """x x^T + 3 I: symmetric positive definite, so Cholesky's input is symmetric."""
    return tf.matmul(x, x, transpose_b=True) + 3 * tf.eye(tf.shape(x)[-1], dtype=x.dtype)


def np_gram(x):
    return x @ np.swapaxes(x, -1, -2) + 3 * np.eye(x.shape[-1])


def square_only(make):
    """`make` for square matrices, normal values for the other inputs (right-hand sides)."""
    def maker(rng, shape, dtype):
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            return make(rng, shape, dtype)
        return rng.standard_normal(shape).astype(dtype)

    return maker


def lower_tri(rng, shape, dtype):
    a = np.tril(rng.standard_normal(shape)) + 3 * np.eye(shape[-1])
    return a.astype(dtype)


def tall(rng, shape, dtype):
    return (rng.standard_normal(shape) + np.eye(*shape[-2:])).astype(dtype)


def distinct_spectrum(rng, shape, dtype):
    """Symmetric matrices with well-separated eigenvalues (stable eigenvectors)."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    e = np.arange(1, n + 1) * 1.5
    return (q @ (e[:, None] * np.swapaxes(q, -1, -2))).astype(dtype)


def separated_singular_values(rng, shape, dtype):
    """Tall matrices with singular values 3, 2, 1 (stable singular vectors)."""
    u = np.linalg.qr(rng.standard_normal(shape))[0]
    v = np.linalg.qr(rng.standard_normal(shape[-1:] * 2))[0]
    return (u @ np.diag(np.arange(shape[-1], 0, -1.0)) @ v).astype(dtype)


def np_lu(a):
    outs, perms = [], []
    for m in a.reshape((-1,) + a.shape[-2:]):
        p, l, u = scipy.linalg.lu(m.astype(np.float64))
        outs.append(np.tril(l, -1) + u)
        perms.append(np.argmax(p, axis=0))
    return [np.stack(outs).reshape(a.shape).astype(a.dtype),
            np.stack(perms).reshape(a.shape[:-1]).astype(np.int32)]


def svd_ref(x):
    u, s, vh = np.linalg.svd(x.astype(np.float64), full_matrices=False)
    return [s.astype(x.dtype), np.abs(u).astype(x.dtype), np.abs(vh).astype(x.dtype)]


def svd_abs(x):
    s, u, v = tf.svd(x)
    return [s, tf.abs(u), tf.abs(tf.linalg.adjoint(v))]


CASES: list[tuple[OpCase, list]] = [
    (OpCase("band_part", lambda x: tf.linalg.band_part(x, 1, 0),
            lambda x: np_band(x, 1, 0), [(2, 3, 4)]),
     F32_64 + [np.float16, BF16, np.int32, np.complex64]),
    (OpCase("band_part_upper", lambda x: tf.matrix_band_part(x, -1, 1),
            lambda x: np_band(x, -1, 1), [(4, 3)]), F32_64),
    (OpCase("diag", tf.diag, lambda d: np.diag(d.ravel()).reshape(d.shape * 2), [(2, 3)]),
     F32_64 + [np.int32]),
    (OpCase("diag_part", tf.diag_part, lambda x: np.diag(x.reshape(6, 6)).reshape(2, 3),
            [(2, 3, 2, 3)]), F32_64),
    (OpCase("matrix_diag", tf.linalg.diag, np_matrix_diag, [(2, 3)]), F32_64 + [np.int64]),
    (OpCase("matrix_diag_band", lambda d: tf.linalg.diag(d, k=(-1, 1), num_rows=3),
            lambda d: (np.diag(d[0, 1:], 1) + np.diag(d[1]) + np.diag(d[2, :2], -1))
            .astype(d.dtype), [(3, 3)]), F32_64),
    (OpCase("matrix_diag_rect", lambda d: tf.linalg.diag(d, num_rows=3, num_cols=4,
                                                         padding_value=7),
            lambda d: np.where(np.eye(3, 4) > 0, np.pad(np.diag(d), [(0, 0), (0, 1)]),
                               7).astype(d.dtype), [(3,)], grad=False), F32_64),
    (OpCase("matrix_diag_part", tf.linalg.diag_part,
            lambda x: np.diagonal(x, axis1=-2, axis2=-1).copy(), [(2, 3, 4)]), F32_64),
    (OpCase("matrix_diag_part_band", lambda x: tf.linalg.diag_part(x, k=(-1, 1)),
            lambda x: np.stack([np.pad(np.diagonal(x, 1), [(1, 0)]), np.diagonal(x, 0),
                                np.pad(np.diagonal(x, -1), [(0, 1)])]), [(3, 3)]), F32_64),
    (OpCase("matrix_diag_part_left_right", lambda x: tf.linalg.diag_part(
        x, k=(-1, 1), padding_value=9, align="LEFT_RIGHT"),
            lambda x: np.stack([np.pad(np.diagonal(x, 1), [(0, 1)], constant_values=9),
                                np.diagonal(x, 0),
                                np.pad(np.diagonal(x, -1), [(1, 0)], constant_values=9)]),
            [(3, 3)], grad=False), F32_64),
    (OpCase("matrix_set_diag", tf.linalg.set_diag, np_set_diag, [(2, 3, 3), (2, 3)]),
     F32_64),
    (OpCase("cross", tf.cross, np.cross, [(4, 3), (4, 3)]), F32_64 + [np.int32]),
    (OpCase("solve", tf.linalg.solve, in_f64(np.linalg.solve), [(2, 3, 3), (2, 3, 2)],
            make=square_only(well_conditioned)), F32_64 + [np.float16, np.complex128]),
    (OpCase("solve_adjoint", lambda a, b: tf.matrix_solve(a, b, adjoint=True),
            lambda a, b: np.linalg.solve(np.swapaxes(a, -1, -2), b), [(3, 3), (3, 2)],
            make=square_only(well_conditioned)), F32_64),
    (OpCase("triangular_solve", tf.linalg.triangular_solve,
            in_f64(lambda a, b: np.linalg.solve(np.tril(a), b)), [(2, 3, 3), (2, 3, 2)],
            make=square_only(lower_tri)), F32_64 + [np.float16, BF16]),
    (OpCase("triangular_solve_upper_adjoint", lambda a, b: tf.matrix_triangular_solve(
        a, b, lower=False, adjoint=True),
            lambda a, b: np.linalg.solve(np.triu(a).T, b), [(3, 3), (3, 2)],
            make=square_only(lambda rng, s, dt: lower_tri(rng, s, dt).T.copy())), F32_64),
    (OpCase("triangular_solve_broadcast", tf.linalg.triangular_solve,
            lambda a, b: np.linalg.solve(np.tril(a), b), [(3, 3), (2, 3, 2)],
            make=square_only(lower_tri)), F32_64),
    (OpCase("lstsq_tall", tf.linalg.lstsq,
            lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0].astype(a.dtype),
            [(5, 3), (5, 2)], make=tall, tol=1e-3), F32_64),
    (OpCase("lstsq_wide_l2", lambda a, b: tf.linalg.lstsq(a, b, l2_regularizer=0.5),
            lambda a, b: (a.T @ np.linalg.solve(a @ a.T + 0.5 * np.eye(2), b))
            .astype(a.dtype), [(2, 4), (2, 3)], make=tall, tol=1e-3), F32_64),
    (OpCase("qr", lambda x: list(tf.qr(x)), lambda x: list(np.linalg.qr(x)), [(2, 4, 3)],
            make=tall), F32_64),
    (OpCase("qr_wide", lambda x: list(tf.qr(x)), lambda x: list(np.linalg.qr(x)),
            [(2, 3, 5)], make=lambda rng, s, dt: (rng.standard_normal(s) + np.eye(
                *s[-2:])).astype(dt)), F32_64),
    (OpCase("qr_full", lambda x: list(tf.linalg.qr(x, full_matrices=True)),
            lambda x: list(np.linalg.qr(x, mode="complete")), [(3, 3)], make=tall), F32_64),
    (OpCase("svd", svd_abs, svd_ref, [(2, 4, 3)], make=tall, grad=False), F32_64),
    (OpCase("svd_grad", lambda x: list(tf.svd(x)), lambda x: [
        np.linalg.svd(x)[1], np.linalg.svd(x, full_matrices=False)[0],
        np.swapaxes(np.linalg.svd(x, full_matrices=False)[2], -1, -2)],
            [(4, 3)], make=separated_singular_values), F32_64),
    (OpCase("singular_values", lambda x: tf.svd(x, compute_uv=False),
            lambda x: np.linalg.svd(x, compute_uv=False), [(3, 4)], make=tall), F32_64),
    (OpCase("eigvalsh", tf.linalg.eigvalsh, lambda x: np.linalg.eigvalsh(x), [(2, 3, 3)],
            make=distinct_spectrum), F32_64),
    (OpCase("eigh", lambda x: list(tf.self_adjoint_eig(x)),
            lambda x: list(np.linalg.eigh(x)), [(3, 3)], make=distinct_spectrum), F32_64),
    (OpCase("lu", lambda x: list(tf.linalg.lu(x)), np_lu, [(2, 3, 3)],
            make=square_only(well_conditioned)), F32_64),
    (OpCase("lu_reconstruct", lambda x: tf.linalg.lu_reconstruct(*tf.linalg.lu(x)),
            lambda x: x, [(2, 3, 3)], make=square_only(well_conditioned)), F32_64),
    (OpCase("lu_solve", lambda x, b: tf.linalg.lu_solve(*tf.linalg.lu(x), b),
            in_f64(np.linalg.solve), [(3, 3), (3, 2)], make=square_only(well_conditioned)), F32_64),
    (OpCase("slogdet", lambda x: list(tf.linalg.slogdet(x)),
            lambda x: [a.astype(x.dtype) for a in np.linalg.slogdet(x)], [(2, 3, 3)],
            make=square_only(well_conditioned)), F32_64),
    (OpCase("logdet", lambda x: tf.linalg.logdet(gram(x)),
            lambda x: np.linalg.slogdet(np_gram(x))[1].astype(x.dtype), [(2, 3, 3)]), F32_64),
    (OpCase("expm", tf.linalg.expm, lambda x: np.stack([scipy.linalg.expm(m) for m in x]),
            [(2, 3, 3)], make=lambda rng, s, dt: (0.5 * rng.standard_normal(s)).astype(dt)),
     F32_64 + [np.complex128]),
    (OpCase("logm", tf.linalg.logm, lambda x: scipy.linalg.logm(x).astype(x.dtype),
            [(3, 3)], make=lambda rng, s, dt: (spd(rng, s, np.float64) + 0j).astype(dt)),
     C64_128),
    (OpCase("sqrtm", tf.linalg.sqrtm, lambda x: np.stack([scipy.linalg.sqrtm(m) for m in x])
            .real.astype(x.dtype), [(2, 3, 3)], make=square_only(spd)), F32_64),
    (OpCase("sqrtm_complex", tf.linalg.sqrtm, lambda x: scipy.linalg.sqrtm(x).astype(
        x.dtype), [(3, 3)], make=well_conditioned, grad=False), [np.complex128]),
    (OpCase("trace", tf.linalg.trace, lambda x: np.trace(x, axis1=-2, axis2=-1),
            [(2, 3, 3)]), F32_64),
    (OpCase("cholesky_solve", lambda x, b: tf.linalg.cholesky_solve(tf.cholesky(gram(x)), b),
            lambda x, b: np.linalg.solve(np_gram(x), b).astype(x.dtype), [(3, 3), (3, 2)]),
     F32_64),
    (OpCase("inv", tf.linalg.inv, np.linalg.inv, [(3, 3)],
            make=square_only(well_conditioned)), F32_64),
    (OpCase("pinv", tf.linalg.pinv, lambda x: np.linalg.pinv(x).astype(x.dtype), [(4, 3)],
            make=tall, tol=1e-3), F32_64),
    (OpCase("matvec", tf.linalg.matvec, lambda a, b: np.einsum("bij,bj->bi", a, b),
            [(2, 3, 4), (2, 4)]), F32_64),
    (OpCase("eye", lambda x: tf.eye(3, 4, batch_shape=[2], dtype=x.dtype) * x,
            lambda x: np.eye(3, 4, dtype=x.dtype) * x, [(2, 3, 4)], grad=False), F32_64),
    (OpCase("norm_euclidean", tf.norm, lambda x: np.linalg.norm(x.ravel()).astype(x.dtype),
            [(2, 3)]), F32_64),
    (OpCase("norm_axis_keepdims", lambda x: tf.norm(x, ord=1, axis=1, keepdims=True),
            lambda x: np.linalg.norm(x, 1, axis=1, keepdims=True), [(2, 3)],
            make=lambda rng, s, dt: np.where(np.abs(v := rng.standard_normal(s)) < .1, .5,
                                             v).astype(dt)), F32_64),
    (OpCase("norm_p3", lambda x: tf.norm(x, ord=3, axis=-1),
            lambda x: np.linalg.norm(x, 3, axis=-1).astype(x.dtype), [(2, 3)],
            make=lambda rng, s, dt: rng.uniform(0.5, 2, s).astype(dt)), F32_64),
    (OpCase("norm_inf", lambda x: tf.norm(x, ord=np.inf),
            lambda x: np.max(np.abs(x)), [(2, 3)], grad=False), F32_64),
    (OpCase("norm_fro", lambda x: tf.linalg.norm(x, ord="fro", axis=[-2, -1]),
            lambda x: np.linalg.norm(x, "fro", axis=(-2, -1)), [(2, 3, 4)]), F32_64),
    (OpCase("norm_matrix_1", lambda x: tf.norm(x, ord=1, axis=[0, 1]),
            lambda x: np.linalg.norm(x, 1), [(3, 4)], grad=False), F32_64),
    (OpCase("norm_matrix_inf", lambda x: tf.norm(x, ord=np.inf, axis=[0, 1]),
            lambda x: np.linalg.norm(x, np.inf), [(3, 4)], grad=False), F32_64),
    (OpCase("norm_matrix_2", lambda x: tf.norm(x, ord=2, axis=[1, 2]),
            lambda x: np.linalg.norm(x, 2, axis=(1, 2)).astype(x.dtype), [(2, 3, 4)],
            grad=False, unknown_shapes=False), F32_64),
    (OpCase("norm_matrix_2_last", lambda x: tf.norm(x, ord=2, axis=[-2, -1]),
            lambda x: np.linalg.norm(x, 2, axis=(-2, -1)).astype(x.dtype), [(2, 4, 3)],
            grad=False), F32_64),
    (OpCase("norm_complex", tf.norm, lambda x: np.linalg.norm(x.ravel()).astype(
        np.float32 if x.dtype == np.complex64 else np.float64), [(2, 3)]), C64_128),
]

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)


def test_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        run(tf.linalg.solve(np.zeros((2, 2), np.float32), np.ones((2, 1), np.float32)))
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.linalg.solve(np.eye(3, dtype=np.float32), np.ones((2, 1), np.float32))
    with pytest.raises(ValueError, match="must be 3"):
        tf.cross(np.ones((2, 4), np.float32), np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm"):
        tf.norm(np.ones(3, np.float32), ord="fro")
    with pytest.raises(ValueError, match="'ord' must be a supported matrix norm"):
        tf.norm(np.ones((3, 3), np.float32), ord=3, axis=[0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_lower"):
        run(tf.linalg.band_part(np.ones((2, 2)), 5, 0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="square"):
        run(tf.linalg.expm(tf.placeholder_with_default(np.ones((2, 3)), None)))


def test_singular_inputs_as_tensorflow():
    """Triangular solves give inf (no error), least squares NaN, Lu an error."""
    got = run(tf.linalg.triangular_solve(np.array([[0.0, 0.0], [1.0, 1.0]]), np.ones((2, 1))))
    assert np.isinf(got[0, 0]) and np.isinf(got[1, 0])
    got = run(tf.linalg.triangular_solve(np.array([[1.0, 2.0], [0.0, 0.0]]), np.ones((2, 1)),
                                         lower=False))
    assert np.isinf(got).any()
    assert np.isnan(run(tf.linalg.lstsq(np.ones((3, 2)), np.ones((3, 1))))).all()
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        run(tf.linalg.lu(np.zeros((2, 2))))
    assert np.isnan(run(tf.linalg.sqrtm(np.array([[-1.0, 0.0], [0.0, 1.0]])))).all()


def test_static_shapes():
    x = tf.placeholder(tf.float32, [None, 5, 3])
    q, r = tf.qr(x)
    assert q.shape.as_list() == [None, 5, 3] and r.shape.as_list() == [None, 3, 3]
    s, u, v = tf.svd(x, full_matrices=True)
    assert [s.shape.as_list(), u.shape.as_list(), v.shape.as_list()] == \
        [[None, 3], [None, 5, 5], [None, 3, 3]]
    assert tf.linalg.diag_part(x, k=(-1, 1)).shape.as_list() == [None, 3, 3]
    assert tf.linalg.diag(tf.zeros([4, 2])).shape.as_list() == [4, 2, 2]
    assert tf.diag(tf.zeros([2, 3])).shape.as_list() == [2, 3, 2, 3]
    assert tf.norm(x, axis=[1, 2]).shape.as_list() == [None]
    assert tf.linalg.lstsq(x, tf.zeros([7, 5, 2])).shape.as_list() == [7, 3, 2]


ORACLE_PROGRAM = """
rng = np.random.RandomState(0)
a = rng.randn(2, 4, 4) + 4 * np.eye(4)
b = rng.randn(2, 4, 2)
t = rng.randn(5, 3)
sym = a + np.swapaxes(a, -1, -2)
d = rng.randn(3, 4)
exprs = {
    "band": tf.linalg.band_part(a, 2, 1),
    "diag_k": tf.linalg.diag(d, k=(-1, 1), num_rows=4, num_cols=5, padding_value=-1.0),
    "diag_part_k": tf.linalg.diag_part(a, k=(-2, 1), padding_value=9.0),
    "diag_part_lr": tf.linalg.diag_part(a, k=(-1, 2), align="LEFT_RIGHT"),
    "set_diag_k": tf.linalg.set_diag(a, np.ones((2, 2, 4)), k=(0, 1)),
    "tensor_diag": tf.linalg.tensor_diag(d[:2, :2]),
    "solve": tf.linalg.solve(a, b),
    "tri": tf.linalg.triangular_solve(a, b, lower=False, adjoint=True),
    "lstsq": tf.linalg.lstsq(t, t[:, :2], l2_regularizer=0.1),
    "qr_r_abs": tf.abs(tf.linalg.qr(t)[1]),
    "svd_s": tf.linalg.svd(t, compute_uv=False),
    "eig": tf.linalg.eigvalsh(sym),
    "lu": tf.linalg.lu(a)[0],
    "lu_p": tf.linalg.lu(a)[1],
    "slogdet": tf.linalg.slogdet(a)[1],
    "expm": tf.linalg.expm(0.3 * a),
    "logdet": tf.linalg.logdet(tf.matmul(a, a, transpose_b=True)),
    "trace": tf.linalg.trace(a),
    "norm": tf.norm(t),
    "norm_1": tf.norm(t, ord=1, axis=0),
    "norm_2m": tf.norm(a, ord=2, axis=[-2, -1]),
    "norm_infm": tf.norm(a, ord=np.inf, axis=[-2, -1], keepdims=True),
    "cross": tf.linalg.cross(t[:, :3], t[::-1, :3]),
    "eye": tf.eye(2, 3, batch_shape=[2]),
    "pinv": tf.linalg.pinv(t),
    "chol_solve": tf.linalg.cholesky_solve(tf.cholesky(tf.matmul(a, a, transpose_b=True)),
                                           b),
}
x = tf.constant(a)
exprs["grad_solve"] = tf.gradients(tf.reduce_sum(tf.linalg.solve(x, b) ** 2), x)[0]
exprs["sqrtm"] = tf.linalg.sqrtm(tf.matmul(x, x, transpose_b=True))
gram_x = tf.matmul(x, x, transpose_b=True)
exprs["grad_sqrtm"] = tf.gradients(tf.reduce_sum(tf.linalg.sqrtm(gram_x) * b[..., :1]), x)[0]
exprs["grad_slogdet"] = tf.gradients(tf.linalg.slogdet(x)[1], x)[0]
exprs["grad_expm"] = tf.gradients(tf.reduce_sum(tf.linalg.expm(0.3 * x) * b[..., :1]), x)[0]
exprs["grad_eig"] = tf.gradients(tf.reduce_sum(tf.linalg.eigvalsh(x) ** 2), x)[0]
exprs["grad_svd"] = tf.gradients(tf.reduce_sum(tf.linalg.svd(x, compute_uv=False)), x)[0]
y = tf.constant(t)
exprs["grad_qr"] = tf.gradients(tf.reduce_sum(tf.abs(tf.linalg.qr(y)[1])), y)[0]
yw = tf.constant(t.T)
exprs["grad_qr_wide"] = tf.gradients(tf.reduce_sum(tf.linalg.qr(yw)[0] * t[:3, :3]) +
                                     tf.reduce_sum(tf.abs(tf.linalg.qr(yw)[1])), yw)[0]
exprs["grad_lstsq"] = tf.gradients(tf.reduce_sum(tf.linalg.lstsq(y, t[:, :2], 0.1)), y)[0]
exprs["grad_tri"] = tf.gradients(tf.reduce_sum(tf.linalg.triangular_solve(x, b)), x)[0]
with tf.Session() as s:
    result = s.run(exprs)
"""


@pytest.mark.oracle
def test_against_tensorflow():
    """One table of linear-algebra results (values and gradients) compared with
    TensorFlow's."""
    ours, theirs = oracle.run_both(ORACLE_PROGRAM, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-6, atol=1e-8)


def test_matrix_functions_without_scipy(monkeypatch):
    """expm, logm and sqrtm have NumPy fallbacks when SciPy is missing; the special
    functions then fail with a clear UnimplementedError."""
    from tensorflux.kernels.cpu import linalg_factor_ops, special_math_ops

    monkeypatch.setattr(linalg_factor_ops, "_scipy_linalg", None)
    monkeypatch.setattr(special_math_ops, "_special", None)
    rng = np.random.default_rng(0)
    a = 0.7 * rng.standard_normal((2, 4, 4))
    p = spd(rng, (4, 4), np.float64)
    got = run([tf.linalg.expm(a), tf.linalg.expm(8 * a), tf.linalg.logm(p.astype(np.complex128)),
               tf.linalg.sqrtm(p)])
    np.testing.assert_allclose(got[0], [scipy.linalg.expm(m) for m in a], rtol=1e-10)
    np.testing.assert_allclose(got[1], [scipy.linalg.expm(8 * m) for m in a], rtol=1e-8)
    np.testing.assert_allclose(got[2], scipy.linalg.logm(p), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[3], scipy.linalg.sqrtm(p), rtol=1e-10)
    with pytest.raises(tf.errors.UnimplementedError, match="SciPy"):
        run(tf.math.igamma(1.0, 2.0))
