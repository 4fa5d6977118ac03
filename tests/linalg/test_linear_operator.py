"""The LinearOperator library (tensorflux/linalg/linear_operator/): one table of operators,
each with the dense matrix NumPy builds from the same inputs; every method is checked
against the dense matrix (to_dense, matmul with adjoints, matvec, solve, solvevec,
determinant, log|det|, trace, diag_part, add_to_tensor, adjoint, inverse, shapes)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import tensorflux as tf

L = tf.linalg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _well(rng, shape):
    return rng.standard_normal(shape) + 3 * np.eye(shape[-1])


def _tril_np(x):
    return np.tril(x)


def _kron(a, b):
    out = np.einsum("...ij,...kl->...ikjl", a, b)
    return out.reshape(out.shape[:-4] + (a.shape[-2] * b.shape[-2], a.shape[-1] * b.shape[-1]))


def _block_diag(*blocks):
    n = sum(b.shape[-1] for b in blocks)
    batch = np.broadcast_shapes(*[b.shape[:-2] for b in blocks])
    out = np.zeros(batch + (n, n), blocks[0].dtype)
    i = 0
    for b in blocks:
        k = b.shape[-1]
        out[..., i:i + k, i:i + k] = b
        i += k
    return out


def _toeplitz(col, row):
    n = col.shape[-1]
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.where(i >= j, col[..., np.abs(i - j)], row[..., np.abs(i - j)])


def _tridiag(d):
    m = d.shape[-1]
    out = np.zeros(d.shape[:-2] + (m, m), d.dtype)
    k = np.arange(m)
    out[..., k, k] = d[..., 1, :]
    out[..., k[:-1], k[:-1] + 1] = d[..., 0, :-1]
    out[..., k[1:], k[1:] - 1] = d[..., 2, 1:]
    return out


def _circulant(spectrum, axes):
    n = int(np.prod([spectrum.shape[a] for a in axes]))
    eye = np.eye(n).reshape((n,) + tuple(spectrum.shape[a] for a in axes))
    fft_axes = tuple(range(1, 1 + len(axes)))
    cols = []
    batch = spectrum.shape[:spectrum.ndim - len(axes)]
    out = np.zeros(batch + (n, n), complex)
    for idx in np.ndindex(*batch) if batch else [()]:
        s = spectrum[idx]
        y = np.fft.ifftn(s[None] * np.fft.fftn(eye, axes=fft_axes), axes=fft_axes)
        out[idx] = y.reshape(n, n).T
    del cols
    return out


@dataclass
class Case:
    name: str
    build: object  # rng -> (operator, dense ndarray)
    square: bool = True
    solvable: bool = True
    self_adjoint: bool = False
    det: bool = True  # square with square factors: determinant defined


def _full(rng):
    a = _well(rng, (2, 3, 3))
    return L.LinearOperatorFullMatrix(a), a


def _full_rect(rng):
    a = rng.standard_normal((2, 3, 4))
    return L.LinearOperatorFullMatrix(a), a


def _diag(rng):
    d = rng.uniform(0.5, 2, (2, 3))
    return L.LinearOperatorDiag(d, is_positive_definite=True), np.apply_along_axis(
        np.diag, -1, d)


def _diag_complex(rng):
    d = rng.uniform(0.5, 2, (3,)) + 1j * rng.standard_normal(3)
    return L.LinearOperatorDiag(d), np.diag(d)


def _tril(rng):
    a = _well(rng, (2, 3, 3))
    return L.LinearOperatorLowerTriangular(a), np.tril(a)


def _identity(rng):
    return L.LinearOperatorIdentity(3, batch_shape=[2], dtype=tf.float64), \
        np.broadcast_to(np.eye(3), (2, 3, 3))


def _scaled(rng):
    m = np.array([2.0, -3.0])
    return L.LinearOperatorScaledIdentity(3, m), m[:, None, None] * np.eye(3)


def _zeros(rng):
    return L.LinearOperatorZeros(3, batch_shape=[2], dtype=tf.float64), np.zeros((2, 3, 3))


def _zeros_rect(rng):
    return L.LinearOperatorZeros(2, 4, dtype=tf.float64, is_square=False,
                                 is_self_adjoint=False), np.zeros((2, 4))


def _perm(rng):
    p = np.array([[1, 2, 0], [0, 2, 1]])
    return L.LinearOperatorPermutation(p, dtype=tf.float64), np.eye(3)[p]


def _householder(rng):
    v = rng.standard_normal((2, 3))
    eye = np.eye(3)
    h = eye - 2 * v[..., :, None] * v[..., None, :] / np.sum(v * v, -1)[..., None, None]
    return L.LinearOperatorHouseholder(v), h


def _toeplitz_case(rng):
    col = rng.standard_normal((2, 4))
    row = rng.standard_normal((2, 4))
    col[..., 0] += 5
    row[..., 0] = col[..., 0]
    return L.LinearOperatorToeplitz(col, row), _toeplitz(col, row)


def _tridiag_case(rng):
    d = rng.standard_normal((2, 3, 4))
    d[..., 1, :] += 4
    return L.LinearOperatorTridiag(d), _tridiag(d)


def _circ(rng):
    s = rng.uniform(1, 2, (2, 4)) + 1j * rng.standard_normal((2, 4))
    return L.LinearOperatorCirculant(s, input_output_dtype=tf.complex128), \
        _circulant(s, [-1])


def _circ_real(rng):
    h = rng.standard_normal(4)
    h[1:] = (h[1:] + h[1:][::-1]) / 2  # a symmetric kernel: real, Hermitian spectrum
    h[0] += 5
    s = np.fft.fft(h)
    return L.LinearOperatorCirculant(s, input_output_dtype=tf.float64), \
        _circulant(s, [-1]).real


def _circ2d(rng):
    s = rng.uniform(1, 2, (2, 3)) + 1j * rng.standard_normal((2, 3))
    return L.LinearOperatorCirculant2D(s, input_output_dtype=tf.complex128), \
        _circulant(s, [0, 1])


def _circ3d(rng):
    s = rng.uniform(1, 2, (2, 2, 2)) + 0j
    return L.LinearOperatorCirculant3D(s, input_output_dtype=tf.complex128), \
        _circulant(s, [0, 1, 2])


def _composition(rng):
    a = _well(rng, (2, 3, 3))
    d = rng.uniform(0.5, 2, (3,))
    return L.LinearOperatorComposition([L.LinearOperatorFullMatrix(a),
                                        L.LinearOperatorDiag(d)]), a @ np.diag(d)


def _blockdiag(rng):
    a = _well(rng, (2, 2, 2))
    d = rng.uniform(0.5, 2, (3,))
    return L.LinearOperatorBlockDiag([L.LinearOperatorFullMatrix(a),
                                      L.LinearOperatorDiag(d)]), _block_diag(a, np.diag(d))


def _blocklower(rng):
    a = _well(rng, (2, 2))
    b = rng.standard_normal((3, 2))
    d = rng.uniform(0.5, 2, (3,))
    op = L.LinearOperatorBlockLowerTriangular(
        [[L.LinearOperatorFullMatrix(a)],
         [L.LinearOperatorFullMatrix(b), L.LinearOperatorDiag(d)]])
    dense = np.zeros((5, 5))
    dense[:2, :2], dense[2:, :2], dense[2:, 2:] = a, b, np.diag(d)
    return op, dense


def _kronecker(rng):
    a = _well(rng, (2, 2, 2))
    b = _well(rng, (3, 3))
    c = _well(rng, (2, 2))
    op = L.LinearOperatorKronecker([L.LinearOperatorFullMatrix(a),
                                    L.LinearOperatorFullMatrix(b),
                                    L.LinearOperatorFullMatrix(c)])
    return op, _kron(_kron(a, b[None]), c[None])


def _lowrank(rng):
    d = rng.uniform(1, 2, (2, 4))
    u = rng.standard_normal((2, 4, 2))
    op = L.LinearOperatorLowRankUpdate(L.LinearOperatorDiag(d, is_positive_definite=True), u)
    return op, np.apply_along_axis(np.diag, -1, d) + u @ np.swapaxes(u, -1, -2)


def _lowrank_dv(rng):
    a = _well(rng, (4, 4))
    u = rng.standard_normal((4, 2))
    v = rng.standard_normal((4, 2))
    du = rng.uniform(0.5, 1, (2,))
    op = L.LinearOperatorLowRankUpdate(L.LinearOperatorFullMatrix(a), u, diag_update=du, v=v)
    return op, a + u @ np.diag(du) @ v.T


def _kronecker_rect(rng):
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal((2, 3, 2))
    op = L.LinearOperatorKronecker([L.LinearOperatorFullMatrix(a),
                                    L.LinearOperatorFullMatrix(b)])
    return op, _kron(a[None], b)


def _composition_rect(rng):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((2, 4, 2))
    op = L.LinearOperatorComposition([L.LinearOperatorFullMatrix(a),
                                      L.LinearOperatorFullMatrix(b)])
    return op, a @ b


def _adjoint_rect(rng):
    a = rng.standard_normal((2, 4, 3))
    return L.LinearOperatorAdjoint(L.LinearOperatorFullMatrix(a)), _adj(a)


def _scaled_complex(rng):
    m = np.array([2.0 + 1j, -3.0 - 0.5j])
    return L.LinearOperatorScaledIdentity(2, m), m[:, None, None] * np.eye(2)


def _tril_complex(rng):
    a = _well(rng, (3, 3)) + 1j * rng.standard_normal((3, 3))
    return L.LinearOperatorLowerTriangular(a), np.tril(a)


def _blocklower_batch(rng):
    a = _well(rng, (2, 2, 2))
    b = rng.standard_normal((1, 3, 2))
    c = _well(rng, (3, 3))
    op = L.LinearOperatorBlockLowerTriangular(
        [[L.LinearOperatorFullMatrix(a)],
         [L.LinearOperatorFullMatrix(b), L.LinearOperatorFullMatrix(c)]])
    dense = np.zeros((2, 5, 5))
    dense[:, :2, :2], dense[:, 2:, :2], dense[:, 2:, 2:] = a, b, c
    return op, dense


def _adjoint(rng):
    a = _well(rng, (2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    return L.LinearOperatorAdjoint(L.LinearOperatorFullMatrix(a)), \
        np.conj(np.swapaxes(a, -1, -2))


def _inversion(rng):
    a = _well(rng, (2, 3, 3))
    return L.LinearOperatorInversion(L.LinearOperatorFullMatrix(a)), np.linalg.inv(a)


CASES = [
    Case("full", _full), Case("full_rect", _full_rect, square=False, solvable=False),
    Case("diag", _diag, self_adjoint=True), Case("diag_complex", _diag_complex),
    Case("tril", _tril), Case("identity", _identity, self_adjoint=True),
    Case("scaled_identity", _scaled, self_adjoint=True),
    Case("zeros", _zeros, solvable=False),
    Case("zeros_rect", _zeros_rect, square=False, solvable=False),
    Case("permutation", _perm), Case("householder", _householder, self_adjoint=True),
    Case("toeplitz", _toeplitz_case), Case("tridiag", _tridiag_case),
    Case("circulant", _circ), Case("circulant_real", _circ_real, self_adjoint=True),
    Case("circulant2d", _circ2d), Case("circulant3d", _circ3d),
    Case("composition", _composition), Case("block_diag", _blockdiag),
    Case("block_lower_triangular", _blocklower), Case("kronecker", _kronecker),
    Case("low_rank_update", _lowrank, self_adjoint=True),
    Case("low_rank_update_dv", _lowrank_dv), Case("adjoint", _adjoint),
    Case("inversion", _inversion),
    Case("kronecker_rect", _kronecker_rect, solvable=False, det=False),
    Case("composition_rect", _composition_rect, square=False, solvable=False),
    Case("adjoint_rect", _adjoint_rect, square=False, solvable=False),
    Case("scaled_identity_complex", _scaled_complex), Case("tril_complex", _tril_complex),
    Case("block_lower_triangular_batch", _blocklower_batch),
]


def _adj(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _exprs(op, dense, case, rng):
    """{key: (tensor, expected ndarray)} for every method that applies to the case."""
    m, n = dense.shape[-2:]
    batch = dense.shape[:-2]
    dtype = op.dtype.as_numpy_dtype
    x = rng.standard_normal(batch + (n, 2)).astype(dtype)
    xa = rng.standard_normal(batch + (2, n)).astype(dtype)
    xm = rng.standard_normal(batch + (m, 2)).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(x.shape)
        xm = xm + 1j * rng.standard_normal(xm.shape)
    out = {
        "to_dense": (op.to_dense(), dense),
        "matmul": (op.matmul(x), dense @ x),
        "matmul_adj": (op.matmul(xm, adjoint=True), _adj(dense) @ xm),
        "matmul_adj_arg": (op.matmul(xa, adjoint_arg=True), dense @ _adj(xa)),
        "matmul_op": (op @ x, dense @ x),
        "matvec": (op.matvec(x[..., 0]), (dense @ x)[..., 0]),
        "matvec_adj": (op.matvec(xm[..., 0], adjoint=True), (_adj(dense) @ xm)[..., 0]),
        "diag_part": (op.diag_part(), np.diagonal(dense, axis1=-2, axis2=-1)),
        "trace": (op.trace(), np.trace(dense, axis1=-2, axis2=-1)),
        "add_to_tensor": (op.add_to_tensor(np.ones(dense.shape, dtype)), dense + 1),
        "adjoint": (op.adjoint().to_dense(), _adj(dense)),
        "H": (op.H.to_dense(), _adj(dense)),
        "shape_tensor": (op.shape_tensor(), np.array(dense.shape)),
    }
    if case.square and case.det:
        out["determinant"] = (op.determinant(), np.linalg.det(dense))
    if case.solvable:
        out["log_abs_det"] = (op.log_abs_determinant(), np.linalg.slogdet(dense)[1])
        out["solve"] = (op.solve(xm), np.linalg.solve(dense, xm))
        out["solve_adj"] = (op.solve(xm, adjoint=True), np.linalg.solve(_adj(dense), xm))
        xs = _adj(xm)
        out["solve_adj_arg"] = (op.solve(xs, adjoint_arg=True), np.linalg.solve(dense, xm))
        out["solvevec"] = (op.solvevec(xm[..., 0]), np.linalg.solve(dense, xm)[..., 0])
        out["inverse"] = (op.inverse().to_dense(), np.linalg.inv(dense))
        out["cond"] = (op.cond(), np.linalg.cond(dense))
    if case.self_adjoint and case.solvable:
        out["eigvals"] = (op.eigvals(), np.linalg.eigvalsh(dense))
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_methods_match_the_dense_matrix(case):
    rng = np.random.default_rng(0)
    with tf.Graph().as_default():
        op, dense = case.build(rng)
        assert op.shape.as_list() == list(dense.shape)
        assert op.batch_shape.as_list() == list(dense.shape[:-2])
        assert op.range_dimension.value == dense.shape[-2]
        assert op.domain_dimension.value == dense.shape[-1]
        assert op.tensor_rank == dense.ndim
        assert op.is_square == case.square
        exprs = _exprs(op, dense, case, rng)
        with tf.Session() as sess:
            got = sess.run({k: t for k, (t, _) in exprs.items()})
    tol = 1e-8 if op.dtype in (tf.float64, tf.complex128) else 1e-4
    for key, (_, want) in exprs.items():
        g = got[key]
        if key == "eigvals":
            g = np.sort(np.real(g), -1)
        if key in ("cond",):
            np.testing.assert_allclose(g, want, rtol=1e-6, err_msg=f"{case.name}.{key}")
            continue
        assert np.shape(g) == np.shape(want), f"{case.name}.{key}: {np.shape(g)}"
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol, err_msg=f"{case.name}.{key}")
