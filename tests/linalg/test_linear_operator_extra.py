"""The LinearOperator library beyond the dense table: values and finite-difference gradients
of the structured paths through the op-test harness (every executor, known and unknown
shapes), hints and their errors, operator algebra (matmul/solve of operators, inverse,
cholesky, adjoint), the assert_* methods, and a comparison with TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle
from tests.op_test_util import OpCase
from tests.ops.math_cases import F32_64, run, table_tests

L = tf.linalg

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("fresh_graph")]


def well(rng, shape, dtype):
    """Well-conditioned square matrices, normal values otherwise."""
    x = rng.standard_normal(shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        x = x + 3 * np.eye(shape[-1])
    return x.astype(dtype)


def positive(rng, shape, dtype):
    return rng.uniform(0.5, 2.0, shape).astype(dtype)


def np_toeplitz(col, row):
    n = col.shape[-1]
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.where(i >= j, col[..., np.abs(i - j)], row[..., np.abs(i - j)])


def np_kron(a, b):
    return np.einsum("...ij,...kl->...ikjl", a, b).reshape(
        a.shape[:-2] + (a.shape[-2] * b.shape[-2], a.shape[-1] * b.shape[-1]))


def np_householder(v):
    return np.eye(v.shape[-1]) - 2 * np.einsum("...i,...j->...ij", v, v) / \
        np.sum(v * v, -1)[..., None, None]


def np_block_diag(a, d):
    out = np.zeros(a.shape[:-2] + (5, 5), a.dtype)
    out[..., :2, :2] = a
    out[..., 2:, 2:] = np.diag(d)
    return out


def np_circulant2d(h):
    """The doubly block circulant matrix of a real [n0, n1] kernel: column j is the kernel
    rolled by j's block indices."""
    n0, n1 = h.shape
    cols = [np.roll(np.roll(h, a, 0), b, 1).ravel() for a in range(n0) for b in range(n1)]
    return np.stack(cols, -1)


def toeplitz_dominant(col):
    return col + tf.constant([4.0] + [0.0] * 3, col.dtype)


CASES: list[tuple[OpCase, list]] = [
    (OpCase("full_solve", lambda a, x: L.LinearOperatorFullMatrix(a).solve(x),
            lambda a, x: np.linalg.solve(a, x), [(2, 3, 3), (2, 3, 2)], make=well), F32_64),
    (OpCase("full_log_abs_det", lambda a: L.LinearOperatorFullMatrix(a).log_abs_determinant(),
            lambda a: np.linalg.slogdet(a)[1].astype(a.dtype), [(2, 3, 3)], make=well),
     F32_64),
    (OpCase("diag_solve", lambda d, x: L.LinearOperatorDiag(d).solve(x, adjoint=True),
            lambda d, x: x / d[..., None], [(2, 3), (2, 3, 2)], make=positive), F32_64),
    (OpCase("diag_log_abs_det", lambda d: L.LinearOperatorDiag(d).log_abs_determinant(),
            lambda d: np.sum(np.log(d), -1), [(2, 3)], make=positive), F32_64),
    (OpCase("tril_solve", lambda a, x: L.LinearOperatorLowerTriangular(a).solve(x),
            lambda a, x: np.linalg.solve(np.tril(a), x), [(3, 3), (2, 3, 2)], make=well),
     F32_64),
    (OpCase("householder_matmul", lambda v, x: L.LinearOperatorHouseholder(v).matmul(x),
            lambda v, x: np_householder(v) @ x, [(2, 3), (2, 3, 2)]), F32_64),
    (OpCase("toeplitz_matmul", lambda c, r, x: L.LinearOperatorToeplitz(c, r).matmul(x),
            lambda c, r, x: np_toeplitz(c, r) @ x, [(4,), (4,), (2, 4, 2)],
            unknown_shapes=False), F32_64),
    (OpCase("toeplitz_solve", lambda c, r, x: L.LinearOperatorToeplitz(
        toeplitz_dominant(c), toeplitz_dominant(r)).solve(x),
            lambda c, r, x: np.linalg.solve(np_toeplitz(c + [4, 0, 0, 0], r + [4, 0, 0, 0]),
                                            x), [(4,), (4,), (4, 2)], unknown_shapes=False),
     F32_64),
    (OpCase("kronecker_matmul", lambda a, b, x: L.LinearOperatorKronecker(
        [L.LinearOperatorFullMatrix(a), L.LinearOperatorFullMatrix(b)]).matmul(x),
            lambda a, b, x: np_kron(a, b) @ x, [(2, 2), (3, 3), (6, 2)], make=well,
            unknown_shapes=False), F32_64),
    (OpCase("kronecker_solve", lambda a, b, x: L.LinearOperatorKronecker(
        [L.LinearOperatorFullMatrix(a), L.LinearOperatorFullMatrix(b)]).solve(x, adjoint=True),
            lambda a, b, x: np.linalg.solve(np.swapaxes(np_kron(a, b), -1, -2), x),
            [(2, 2, 2), (3, 3), (2, 6, 1)], make=well, unknown_shapes=False), F32_64),
    (OpCase("block_diag_matmul", lambda a, d, x: L.LinearOperatorBlockDiag(
        [L.LinearOperatorFullMatrix(a), L.LinearOperatorDiag(d)]).matmul(x),
            lambda a, d, x: np_block_diag(a, d) @ x, [(2, 2, 2), (3,), (2, 5, 2)],
            unknown_shapes=False), F32_64),
    (OpCase("low_rank_solve", lambda d, u, x: L.LinearOperatorLowRankUpdate(
        L.LinearOperatorDiag(d), u).solve(x),
            lambda d, u, x: np.linalg.solve(np.apply_along_axis(np.diag, -1, d) +
                                            u @ np.swapaxes(u, -1, -2), x),
            [(2, 4), (2, 4, 2), (2, 4, 1)], make=lambda rng, s, dt: positive(rng, s, dt) if
            len(s) == 2 else rng.standard_normal(s).astype(dt), unknown_shapes=False),
     F32_64),
    (OpCase("low_rank_log_abs_det", lambda d, u: L.LinearOperatorLowRankUpdate(
        L.LinearOperatorDiag(d), u).log_abs_determinant(),
            lambda d, u: np.linalg.slogdet(np.apply_along_axis(np.diag, -1, d) +
                                           u @ np.swapaxes(u, -1, -2))[1].astype(d.dtype),
            [(2, 4), (2, 4, 2)], make=lambda rng, s, dt: positive(rng, s, dt) if
            len(s) == 2 else rng.standard_normal(s).astype(dt), unknown_shapes=False),
     F32_64),
    (OpCase("tridiag_solve", lambda d, x: L.LinearOperatorTridiag(
        d + tf.constant([[0.0], [4.0], [0.0]], d.dtype)).solve(x),
            lambda d, x: np.linalg.solve(
                np.diag(d[1] + 4) + np.diag(d[0, :-1], 1) + np.diag(d[2, 1:], -1), x),
            [(3, 4), (2, 4, 2)], unknown_shapes=False), F32_64),
    (OpCase("circulant_matmul", lambda h, x: L.LinearOperatorCirculant(
        tf.signal.fft(tf.cast(h, tf.complex128)), input_output_dtype=tf.complex128).matmul(
        tf.cast(x, tf.complex128)),
            lambda h, x: np.stack([np.roll(h, k) for k in range(4)], -1) @ x + 0j,
            [(4,), (4, 2)], grad=False, unknown_shapes=False), [np.float64]),
    (OpCase("circulant_real_matmul", lambda h, x: L.LinearOperatorCirculant(
        tf.signal.fft(tf.cast(h, tf.complex128)), input_output_dtype=tf.float64).matmul(x),
            lambda h, x: np.stack([np.roll(h, k) for k in range(4)], -1) @ x,
            [(4,), (2, 4, 2)], unknown_shapes=False), [np.float64]),
    (OpCase("circulant2d_real_solve", lambda h, x: L.LinearOperatorCirculant2D(
        tf.signal.fft2d(tf.cast(h + tf.constant(np.pad([[6.0]], [[0, 1], [0, 2]])),
                                tf.complex128)), input_output_dtype=tf.float64).solve(x),
            lambda h, x: np.linalg.solve(np_circulant2d(h + np.pad([[6.0]], [[0, 1], [0, 2]])),
                                         x), [(2, 3), (6, 1)], unknown_shapes=False),
     [np.float64]),
]

test_value, test_gradient, test_kernel_dtypes_are_exact = table_tests(CASES)


def test_hints_and_their_errors():
    d = L.LinearOperatorDiag([1.0, 2.0], is_positive_definite=True)
    assert (d.is_non_singular, d.is_self_adjoint, d.is_square) == (True, True, True)
    assert L.LinearOperatorDiag(tf.constant([1j, 2.0])).is_self_adjoint is None
    with pytest.raises(ValueError, match="always non-singular"):
        L.LinearOperatorFullMatrix(np.eye(2), is_positive_definite=True,
                                   is_non_singular=False)
    with pytest.raises(ValueError, match="always square"):
        L.LinearOperatorFullMatrix(np.ones((2, 3)), is_self_adjoint=True, is_square=False)
    with pytest.raises(ValueError, match="was square"):
        _ = L.LinearOperatorFullMatrix(np.eye(2), is_square=False).is_square
    with pytest.raises(ValueError, match="self adjoint"):
        L.LinearOperatorDiag([1.0], is_self_adjoint=False)
    with pytest.raises(ValueError, match="identity operator is always"):
        L.LinearOperatorIdentity(2, is_non_singular=False)
    with pytest.raises(ValueError, match="non-negative"):
        L.LinearOperatorIdentity(-1)
    with pytest.raises(ValueError, match="num_rows"):
        L.LinearOperatorZeros(2, 3)
    with pytest.raises(ValueError, match="Householder"):
        L.LinearOperatorHouseholder([1.0, 2.0], is_positive_definite=True)
    with pytest.raises(TypeError):
        L.LinearOperatorFullMatrix(np.eye(2, dtype=np.int32))
    with pytest.raises(TypeError):
        L.LinearOperatorComposition([L.LinearOperatorDiag([1.0]),
                                     L.LinearOperatorDiag(np.array([1.0]))])
    with pytest.raises(ValueError):
        L.LinearOperatorBlockLowerTriangular([[L.LinearOperatorDiag([1.0])], []])
    with pytest.raises(ValueError, match="Diagonals Format"):
        L.LinearOperatorTridiag(np.ones((3, 3)), diagonals_format="dense")
    with pytest.raises(TypeError, match="dtype"):
        L.LinearOperatorDiag([1.0, 2.0]).matmul(np.ones((2, 1)))  # float64 vs float32
    with pytest.raises(ValueError):
        L.LinearOperatorDiag([1.0, 2.0]).matmul(L.LinearOperatorDiag([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Inverse"):
        L.LinearOperatorZeros(2).inverse()
    with pytest.raises(ValueError, match="Cholesky"):
        L.LinearOperatorFullMatrix(np.eye(2)).cholesky()
    with pytest.raises(NotImplementedError):
        L.LinearOperatorFullMatrix(np.ones((2, 3))).solve(np.ones((2, 1)))
    with pytest.raises(NotImplementedError):
        L.LinearOperatorFullMatrix(np.eye(2)).eigvals()
    with pytest.raises(ValueError, match="permutation"):
        L.LinearOperatorPermutation([0, 0, 1])
    with pytest.raises(ValueError, match="not compatible"):
        L.LinearOperatorDiag([1.0, 2.0, 3.0]).matmul(tf.ones([2, 1]))
    with pytest.raises(ValueError, match="not compatible"):
        L.LinearOperatorFullMatrix(np.ones((2, 3))).matvec(np.ones(2), adjoint=False)


class _Shift(L.LinearOperator):
    """A user's operator: the cyclic shift of vectors of length 3, defined only by its
    shape and matmul (every other method comes from the base class)."""

    def __init__(self):
        super().__init__(dtype=tf.float64, is_non_singular=True, is_square=True,
                         name="Shift")

    def _shape(self):
        return tf.TensorShape([3, 3])

    def _shape_tensor(self):
        return tf.constant([3, 3])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = tf.linalg.adjoint(x) if adjoint_arg else x
        return tf.roll(x, shift=-1 if adjoint else 1, axis=-2)


def test_a_user_subclass_gets_every_method():
    op = _Shift()
    dense = np.roll(np.eye(3), 1, axis=0)
    x = np.arange(6.0).reshape(3, 2)
    got = run({"dense": op.to_dense(), "solve": op.solve(x), "det": op.determinant(),
               "adj": op.matmul(x, adjoint=True), "trace": op.trace(),
               "inv": op.inverse().to_dense(), "cond": op.cond()})
    np.testing.assert_allclose(got["dense"], dense)
    np.testing.assert_allclose(got["solve"], np.linalg.solve(dense, x), atol=1e-12)
    np.testing.assert_allclose(got["adj"], dense.T @ x)
    np.testing.assert_allclose([got["det"], got["trace"], got["cond"]], [1.0, 0.0, 1.0],
                               atol=1e-12)
    np.testing.assert_allclose(got["inv"], dense.T, atol=1e-12)
    assert op.name == "Shift" and "Shift/" in op.matmul(x).name


def test_operator_algebra():
    d = L.LinearOperatorDiag([1.0, 2.0])
    f = L.LinearOperatorFullMatrix(np.array([[2.0, 1.0], [1.0, 3.0]], np.float32),
                                   is_self_adjoint=True, is_positive_definite=True)
    ident = L.LinearOperatorIdentity(2)
    assert isinstance(d @ d, L.LinearOperatorDiag)
    assert ident.matmul(f) is f and f.matmul(ident) is f
    assert isinstance(f @ d, L.LinearOperatorComposition)
    assert isinstance(d.inverse(), L.LinearOperatorDiag)
    assert isinstance(f.inverse(), L.LinearOperatorInversion)
    assert isinstance(f.cholesky(), L.LinearOperatorLowerTriangular)
    assert isinstance(L.LinearOperatorDiag([1.0, 2.0], is_positive_definite=True).cholesky(),
                      L.LinearOperatorDiag)
    assert f.adjoint() is f and f.H is f
    g = L.LinearOperatorFullMatrix(np.array([[1.0, 2.0], [0.0, 1.0]], np.float32))
    assert isinstance(g.H, L.LinearOperatorAdjoint) and g.H.H is g
    assert L.LinearOperatorInversion(g).inverse() is g
    dense_f = np.array([[2.0, 1.0], [1.0, 3.0]])
    got = run({"fd": (f @ d).to_dense(), "chol": f.cholesky().to_dense(),
               "solve_op": f.solve(d).to_dense(), "inv": f.inverse().to_dense(),
               "dd": (d @ d).to_dense(), "adj_solve": g.H.solve(np.ones((2, 1), np.float32))})
    np.testing.assert_allclose(got["fd"], dense_f @ np.diag([1, 2]), rtol=1e-6)
    np.testing.assert_allclose(got["chol"], np.linalg.cholesky(dense_f), rtol=1e-6)
    np.testing.assert_allclose(got["solve_op"], np.linalg.solve(dense_f, np.diag([1, 2])),
                               rtol=1e-5)
    np.testing.assert_allclose(got["inv"], np.linalg.inv(dense_f), rtol=1e-5)
    np.testing.assert_allclose(got["dd"], np.diag([1.0, 4.0]))
    np.testing.assert_allclose(got["adj_solve"], np.linalg.solve([[1, 0], [2, 1]],
                                                                 np.ones((2, 1))), rtol=1e-6)


def test_batch_shapes_broadcast():
    d = L.LinearOperatorDiag(np.ones((3, 1, 2)))
    f = L.LinearOperatorFullMatrix(np.ones((4, 2, 2)))
    comp = L.LinearOperatorComposition([d, f])
    assert comp.batch_shape.as_list() == [3, 4]
    assert d.matmul(np.ones((5, 2, 1))).shape.as_list() == [3, 5, 2, 1]
    out, shape = run([comp.matmul(np.ones((2, 1))), comp.shape_tensor()])
    assert out.shape == (3, 4, 2, 1) and list(shape) == [3, 4, 2, 2]
    ident = L.LinearOperatorIdentity(2, batch_shape=[3], dtype=tf.float64)
    assert run(ident.matmul(np.ones((2, 2)))).shape == (3, 2, 2)


def test_unknown_shapes():
    p = tf.placeholder(tf.float64, [None, None])
    ops = {"diag": L.LinearOperatorDiag(p), "householder": L.LinearOperatorHouseholder(p),
           "kronecker": L.LinearOperatorKronecker([L.LinearOperatorDiag(p)] * 2),
           "block_diag": L.LinearOperatorBlockDiag([L.LinearOperatorDiag(p)] * 2),
           "circulant": L.LinearOperatorCirculant(tf.cast(p, tf.complex128),
                                                  input_output_dtype=tf.complex128)}
    value = np.random.default_rng(0).uniform(1, 2, (2, 3))
    for name, op in ops.items():
        assert op.shape.ndims is None or not op.shape.is_fully_defined(), name
        dense, shape = run([op.to_dense(), op.shape_tensor()], {p: value})
        assert list(dense.shape) == list(shape), name
        x = np.ones(dense.shape[:-1] + (1,), dense.dtype)
        got = run(op.matmul(x), {p: value})
        np.testing.assert_allclose(got, dense @ x, rtol=1e-10, err_msg=name)


def test_unknown_shapes_every_method():
    """Operators over placeholders of unknown shape: shape_tensor, products (plain and
    adjoint), diag_part, trace, determinant and solve against the dense matrix."""
    rng = np.random.default_rng(0)
    pd = tf.placeholder(tf.float64, [None, None])
    pu = tf.placeholder(tf.float64, [None, None, None])
    pt = tf.placeholder(tf.float64, [None, 3, None])
    pm = tf.placeholder(tf.float64, None)
    tv = rng.standard_normal((2, 3, 4))
    tv[:, 1] += 4
    feed = {pd: rng.uniform(1, 2, (2, 4)), pu: rng.standard_normal((2, 4, 2)), pt: tv,
            pm: rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)}
    cases = {
        "low_rank": L.LinearOperatorLowRankUpdate(L.LinearOperatorDiag(pd), pu),
        "tridiag": L.LinearOperatorTridiag(pt),
        "block_lower": L.LinearOperatorBlockLowerTriangular(
            [[L.LinearOperatorDiag(pd)], [L.LinearOperatorFullMatrix(pm),
                                          L.LinearOperatorDiag(pd)]]),
        "full_unknown_rank": L.LinearOperatorFullMatrix(pm),
        "composition": L.LinearOperatorComposition([L.LinearOperatorFullMatrix(pm),
                                                    L.LinearOperatorDiag(pd)]),
        "zeros": L.LinearOperatorZeros(tf.shape(pd)[-1], batch_shape=tf.shape(pd)[:1],
                                       dtype=tf.float64),
        "scaled_identity": L.LinearOperatorScaledIdentity(tf.shape(pd)[-1], pd[:, 0]),
        "toeplitz": L.LinearOperatorToeplitz(pd, pd),
        "permutation": L.LinearOperatorPermutation(tf.argsort(pd, axis=-1), dtype=tf.float64),
        "lower_triangular": L.LinearOperatorLowerTriangular(pm),
    }
    for name, op in cases.items():
        dense, shape = run([op.to_dense(), op.shape_tensor()], feed)
        assert list(shape) == list(dense.shape), name
        x = rng.standard_normal(dense.shape[:-1] + (1,))
        fetch = [op.matmul(x), op.matmul(x, adjoint=True), op.diag_part(), op.trace(),
                 op.determinant()]
        want = [dense @ x, np.swapaxes(dense, -1, -2) @ x,
                np.diagonal(dense, axis1=-2, axis2=-1), np.trace(dense, axis1=-2, axis2=-1),
                np.linalg.det(dense)]
        if name != "zeros":
            fetch.append(op.solve(x))
            want.append(np.linalg.solve(dense, x))
        for k, (g, w) in enumerate(zip(run(fetch, feed), want, strict=True)):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=f"{name}[{k}]")


def test_asserts():
    good = L.LinearOperatorFullMatrix(np.array([[2.0, 1.0], [1.0, 3.0]]))
    run([good.assert_positive_definite(), good.assert_self_adjoint(),
         good.assert_non_singular(), L.LinearOperatorDiag([1.0, 2.0]).assert_non_singular()])
    bad = [lambda: L.LinearOperatorFullMatrix(np.array([[1.0, 2.0], [0.0, 1.0]]))
           .assert_self_adjoint(),
           lambda: L.LinearOperatorFullMatrix(np.array([[1.0, 2.0], [2.0, 4.0]]))
           .assert_non_singular(),
           lambda: L.LinearOperatorFullMatrix(-np.eye(2)).assert_positive_definite(),
           lambda: L.LinearOperatorDiag([1.0, 0.0]).assert_non_singular(),
           lambda: L.LinearOperatorDiag([1.0, -1.0]).assert_positive_definite()]
    for check in bad:  # constant inputs fail while building, as in TensorFlow
        with pytest.raises(tf.errors.InvalidArgumentError):
            run(check())
    p = tf.placeholder(tf.float64, [2])
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(L.LinearOperatorDiag(p).assert_positive_definite(), {p: [1.0, -1.0]})


ORACLE_PROGRAM = """
rng = np.random.RandomState(0)
L = tf.linalg
a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
b = rng.standard_normal((2, 2)) + 3 * np.eye(2)
d = rng.uniform(1, 2, (2, 3))
u = rng.standard_normal((2, 3, 2))
x = rng.standard_normal((2, 3, 2))
x6 = rng.standard_normal((2, 6, 2))
col = rng.standard_normal(3); col[0] += 4
row = rng.standard_normal(3); row[0] = col[0]
spec = rng.uniform(1, 2, (2, 3)) + 1j * rng.standard_normal((2, 3))
tri = rng.standard_normal((2, 3, 3)); tri[:, 1] += 4
at = tf.constant(a)
ops = {
    "full": L.LinearOperatorFullMatrix(at),
    "diag": L.LinearOperatorDiag(d),
    "tril": L.LinearOperatorLowerTriangular(a),
    "scaled": L.LinearOperatorScaledIdentity(3, np.array([2.0, -1.0])),
    "householder": L.LinearOperatorHouseholder(d),
    "toeplitz": L.LinearOperatorToeplitz(col, row),
    "tridiag": L.LinearOperatorTridiag(tri),
    "lowrank": L.LinearOperatorLowRankUpdate(L.LinearOperatorDiag(d), u),
    "perm": L.LinearOperatorPermutation(np.array([2, 0, 1], np.int32), dtype=tf.float64),
}
kron = L.LinearOperatorKronecker([L.LinearOperatorFullMatrix(b),
                                  L.LinearOperatorDiag(d)])
circ = L.LinearOperatorCirculant(spec, input_output_dtype=tf.complex128)
block = L.LinearOperatorBlockLowerTriangular([[L.LinearOperatorDiag(d)],
                                              [L.LinearOperatorFullMatrix(a),
                                               L.LinearOperatorFullMatrix(a)]])
exprs = {}
for k, op in ops.items():
    exprs[k + "_dense"] = op.to_dense()
    exprs[k + "_matmul"] = op.matmul(x, adjoint=True)
    exprs[k + "_solve"] = op.solve(x)
    exprs[k + "_logdet"] = op.log_abs_determinant()
    exprs[k + "_trace"] = op.trace()
exprs["kron_matmul"] = kron.matmul(x6)
exprs["kron_solve"] = kron.solve(x6)
exprs["kron_det"] = kron.determinant()
def ri(t):  # complex values travel as (real, imaginary)
    return tf.stack([tf.real(t), tf.imag(t)])
exprs["circ_matmul"] = ri(circ.matmul(tf.cast(x, tf.complex128)))
exprs["circ_solve"] = ri(circ.solve(tf.cast(x, tf.complex128), adjoint=True))
exprs["circ_det"] = ri(circ.determinant())
exprs["block_matmul"] = block.matmul(x6)
exprs["block_solve"] = block.solve(x6, adjoint=True)
exprs["grad_full"] = tf.gradients(tf.reduce_sum(ops["full"].solve(x)), at)[0]
with tf.Session() as s:
    result = s.run(exprs)
"""


@pytest.mark.oracle
def test_against_tensorflow():
    ours, theirs = oracle.run_both(ORACLE_PROGRAM, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-7, atol=1e-9)


HINTS_PROGRAM = """
L = tf.linalg
d2 = L.LinearOperatorDiag([1., 2.])
f2 = L.LinearOperatorFullMatrix(np.eye(2, dtype=np.float32))
u1 = np.ones((2, 1), np.float32)
ops = {
 'full': L.LinearOperatorFullMatrix(np.eye(3)),
 'full_pd': L.LinearOperatorFullMatrix(np.eye(3), is_positive_definite=True),
 'full_rect': L.LinearOperatorFullMatrix(np.ones((2, 3))),
 'diag': d2,
 'diagc': L.LinearOperatorDiag(tf.constant([1., 2.], tf.complex64)),
 'id': L.LinearOperatorIdentity(3),
 'sid': L.LinearOperatorScaledIdentity(3, 2.),
 'sidc': L.LinearOperatorScaledIdentity(3, tf.constant(2., tf.complex64)),
 'zeros': L.LinearOperatorZeros(3),
 'zeros23': L.LinearOperatorZeros(2, 3, is_square=False, is_self_adjoint=False),
 'tril': L.LinearOperatorLowerTriangular(np.eye(3)),
 'perm': L.LinearOperatorPermutation([1, 0, 2]),
 'hh': L.LinearOperatorHouseholder([1., 2.]),
 'toep': L.LinearOperatorToeplitz([1., 2.], [1., 3.]),
 'tri': L.LinearOperatorTridiag(np.ones((3, 3))),
 'circ': L.LinearOperatorCirculant(tf.constant([1., 2., 3.], tf.complex64)),
 'circr': L.LinearOperatorCirculant(tf.constant([1., 2., 2.]), input_output_dtype=tf.float32),
 'circ2': L.LinearOperatorCirculant2D(tf.constant([[1., 2.], [2., 3.]], tf.complex64)),
 'kron': L.LinearOperatorKronecker([d2, d2]),
 'kron_f': L.LinearOperatorKronecker([f2, d2]),
 'comp': L.LinearOperatorComposition([d2, d2]),
 'comp_f': L.LinearOperatorComposition([f2, L.LinearOperatorDiag([1., 2.],
                                                                 is_non_singular=True)]),
 'bd': L.LinearOperatorBlockDiag([d2, d2]),
 'bd_f': L.LinearOperatorBlockDiag([f2, d2]),
 'blt': L.LinearOperatorBlockLowerTriangular([[d2], [f2, d2]]),
 'blt_ns': L.LinearOperatorBlockLowerTriangular([[L.LinearOperatorIdentity(2)],
                                                 [f2, L.LinearOperatorIdentity(2)]]),
 'lru': L.LinearOperatorLowRankUpdate(d2, u1),
 'lru_pd': L.LinearOperatorLowRankUpdate(L.LinearOperatorDiag([1., 2.],
                                                               is_positive_definite=True), u1),
 'lru_v': L.LinearOperatorLowRankUpdate(d2, u1, v=u1),
 'lru_d': L.LinearOperatorLowRankUpdate(d2, u1, diag_update=[2.], is_diag_update_positive=True),
 'inv': L.LinearOperatorInversion(d2),
 'adj': L.LinearOperatorAdjoint(L.LinearOperatorFullMatrix(np.eye(2))),
 'adj_rect': L.LinearOperatorAdjoint(L.LinearOperatorFullMatrix(np.ones((2, 3)))),
 'd_inv': d2.inverse(),
 'd_adj': d2.adjoint(),
 'f_adj': f2.adjoint(),
 'dd': d2.matmul(d2),
 'fd': f2.matmul(d2),
 'id_f': L.LinearOperatorIdentity(2).matmul(f2),
}
def code(v):
    return -1 if v is None else int(v)
result = {}
for k, o in ops.items():
    result[k] = [code(o.is_non_singular), code(o.is_self_adjoint), code(o.is_positive_definite),
                 code(o.is_square)] + list(o.shape.as_list())
    result[k + "_name"] = o.name
    result[k + "_type"] = type(o).__name__
    result[k + "_dtype"] = o.dtype.name
"""


@pytest.mark.oracle
def test_hints_shapes_names_and_types_match_tensorflow():
    """For ~40 operators (direct, derived by inverse/adjoint/matmul): the four hints, the
    static shape, the name, the Python class and the dtype, as TensorFlow gives them."""
    ours, theirs = oracle.run_both(HINTS_PROGRAM, tf)
    diffs = {k: (ours.get(k), v) for k, v in theirs.items() if ours.get(k) != v}
    assert not diffs, diffs
