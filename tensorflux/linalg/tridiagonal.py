"""`tf.linalg.eigh_tridiagonal`, built from existing ops: the Hermitian tridiagonal matrix
is formed densely and handed to SelfAdjointEigV2 (differentiable through it), then the
requested eigenpairs are selected. The tridiagonal solve and product ops are in
tensorflux/ops/tridiagonal_ops.py."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import joining_ops
from tensorflux.ops.comparison_ops import greater, less_equal, logical_and
from tensorflux.ops.linalg_factor_ops import self_adjoint_eig, self_adjoint_eigvals
from tensorflux.ops.linalg_ops import matrix_diag
from tensorflux.ops.math_ops import add, cast, conj
from tensorflux.ops.slicing_ops import boolean_mask, strided_slice
from tensorflux.ops.tridiagonal_ops import tridiagonal_matmul, tridiagonal_solve

__all__ = ["eigh_tridiagonal", "tridiagonal_matmul", "tridiagonal_solve"]


def _dense(alpha, beta):
    """diag(alpha) with beta on the superdiagonal and conj(beta) on the subdiagonal."""
    main = matrix_diag(alpha)
    upper = joining_ops.pad(matrix_diag(beta), [[0, 1], [1, 0]])
    lower = joining_ops.pad(matrix_diag(conj(beta)), [[1, 0], [0, 1]])
    return add(main, add(upper, lower))


def eigh_tridiagonal(alpha, beta, eigvals_only=True, select="a", select_range=None,
                     tol=None, name=None):
    """Eigenvalues (ascending), and with `eigvals_only=False` eigenvectors as columns, of
    the Hermitian tridiagonal matrix with diagonal `alpha` ([n], real) and superdiagonal
    `beta` ([n - 1]) (`tf.linalg.eigh_tridiagonal`).

    Args:
      select: 'a' all, 'i' the eigenvalues with indices select_range[0]..[1] (inclusive),
        'v' those in the half-open interval (select_range[0], select_range[1]].
      tol: accepted for compatibility; the dense solver needs no bisection tolerance.

    Raises:
      ValueError: an unknown `select`, or alpha complex with a nonzero imaginary type.
    """
    del tol
    if select not in ("a", "i", "v"):
        raise ValueError("select must be one of 'a', 'i', or 'v'.")
    with graph_lib.name_scope(name, "eigh_tridiagonal", [alpha, beta]):
        alpha = convert_to_tensor(alpha, name="alpha")
        beta = convert_to_tensor(beta, name="beta")
        if alpha.shape.ndims not in (None, 1) or beta.shape.ndims not in (None, 1):
            raise ValueError("alpha and beta must be vectors")
        dtype = beta.dtype if beta.dtype.is_complex else alpha.dtype
        matrix = _dense(cast(alpha, dtype), cast(beta, dtype))
        if eigvals_only:
            values, vectors = self_adjoint_eigvals(matrix), None
        else:
            values, vectors = self_adjoint_eig(matrix)
        if dtype.is_complex:
            values = cast(values, alpha.dtype.real_dtype if alpha.dtype.is_complex
                          else alpha.dtype)
        values, vectors = _select(values, vectors, select, select_range)
        return values if eigvals_only else (values, vectors)


def _select(values, vectors, select, select_range):
    if select == "a":
        return values, vectors
    lo, hi = select_range
    if select == "i":
        values = strided_slice(values, [lo], [hi + 1], [1])
        if vectors is not None:
            vectors = strided_slice(vectors, [0, lo], [0, hi + 1], [1, 1], begin_mask=1,
                                    end_mask=1)
        return values, vectors
    lo = cast(convert_to_tensor(lo), values.dtype)
    hi = cast(convert_to_tensor(hi), values.dtype)
    keep = logical_and(greater(values, lo), less_equal(values, hi))
    out = boolean_mask(values, keep)
    if vectors is not None:
        vectors = boolean_mask(vectors, keep, axis=1)
    return out, vectors
