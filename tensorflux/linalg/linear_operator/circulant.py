"""Circulant operators: LinearOperatorCirculant (1-D), LinearOperatorCirculant2D and
LinearOperatorCirculant3D (block circulant with circulant blocks, nested 2 or 3 deep).

Each is A = F^H diag(spectrum) F for the (1, 2 or 3-D) DFT F: the spectrum [..., n0(, n1(,
n2))] holds the eigenvalues, and A x = IFFT(spectrum * FFT(x)) on each column of x reshaped
to the block shape. Products, solves and determinants are all O(N log N) or O(N)."""

from __future__ import annotations

from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.linalg.linear_operator import util
from tensorflux.linalg.linear_operator.linear_operator import LinearOperator
from tensorflux.ops import array_ops, joining_ops, reduction_ops
from tensorflux.ops.math_ops import _conj, cast, imag, multiply, real, truediv
from tensorflux.ops.spectral_ops import fft, fft2d, fft3d, ifft, ifft2d, ifft3d
from tensorflux.ops.unary_ops import abs, log  # noqa: A004

__all__ = ["LinearOperatorCirculant", "LinearOperatorCirculant2D",
           "LinearOperatorCirculant3D"]

_FFT = {1: fft, 2: fft2d, 3: fft3d}
_IFFT = {1: ifft, 2: ifft2d, 3: ifft3d}


def _to_complex(x):
    if x.dtype.is_complex:
        return x
    return cast(x, dtypes.complex128 if x.dtype == dtypes.float64 else dtypes.complex64)


class _BaseCirculant(LinearOperator):
    _block_depth = 1

    def __init__(self, spectrum, input_output_dtype=dtypes.complex64, is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=True, name=None):
        self._spectrum = util.to_tensor(spectrum, name="spectrum")
        if self._spectrum.dtype.base_dtype not in (dtypes.float16, dtypes.float32,
                                                   dtypes.float64, dtypes.complex64,
                                                   dtypes.complex128):
            raise TypeError(f"Argument spectrum must have dtype float or complex. Found: "
                            f"{self._spectrum.dtype}")
        depth = self._block_depth
        if self._spectrum.shape.ndims is not None and self._spectrum.shape.ndims < depth:
            raise ValueError(f"Argument `spectrum` must have at least {depth} dimensions. "
                             f"Received: {self._spectrum}.")
        if not self._spectrum.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError("A real spectrum always corresponds to a self-adjoint "
                                 "operator.")
            is_self_adjoint = True
        if is_square is False:
            raise ValueError("A [[nested] block] circulant operator is always square.")
        super().__init__(dtypes.as_dtype(input_output_dtype), None, is_non_singular,
                         is_self_adjoint, is_positive_definite, True, name,
                         dict(spectrum=spectrum, input_output_dtype=input_output_dtype,
                              name=name))

    @property
    def spectrum(self):
        return self._spectrum

    @property
    def block_depth(self):
        return self._block_depth

    @property
    def block_shape(self):
        s = self._spectrum.shape
        if s.ndims is None:
            return tensor_shape.unknown_shape(rank=self._block_depth)
        return s[s.ndims - self._block_depth:]

    def block_shape_tensor(self):
        return util.shape_tensor(self._spectrum)[-self._block_depth:]

    def _shape(self):
        s = self._spectrum.shape
        if s.ndims is None:
            return s
        n = 1
        for d in self.block_shape.as_list():
            n = None if n is None or d is None else n * d
        return s[:s.ndims - self._block_depth].concatenate([n, n])

    def _shape_tensor(self):
        s = array_ops.shape(self._spectrum)
        n = reduction_ops.reduce_prod(s[-self._block_depth:])
        return joining_ops.concat([s[:-self._block_depth], joining_ops.stack([n, n])], 0)

    def _axes(self):
        return list(range(-self._block_depth, 0))

    def _flat_spectrum(self):
        """The spectrum as [..., N]: the eigenvalues."""
        s = array_ops.shape(self._spectrum)
        return array_ops.reshape(self._spectrum, joining_ops.concat(
            [s[:-self._block_depth], [-1]], 0))

    def _apply(self, x, spectrum):
        """IFFT(spectrum * FFT(x)) on each column of x [..., N, R]."""
        depth = self._block_depth
        rank = x.shape.ndims
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        xt = array_ops.transpose(cast(x, spectrum.dtype), perm)  # [..., R, N]
        s = array_ops.shape(xt)
        blocks = joining_ops.concat([s[:-1], self.block_shape_tensor()], 0)
        xb = array_ops.reshape(xt, blocks)
        spec = array_ops.expand_dims(spectrum, -depth - 1)  # [..., 1, *block_shape]
        yb = _IFFT[depth](multiply(spec, _FFT[depth](xb)))
        ys = array_ops.shape(yb)
        y = array_ops.reshape(yb, joining_ops.concat([ys[:-depth], [-1]], 0))
        y = array_ops.transpose(y, perm)
        return real(y) if not self.dtype.is_complex else cast(y, self.dtype)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = util.adjoint(x) if adjoint_arg else x
        spectrum = _to_complex(self._spectrum)
        spectrum = _conj(spectrum) if adjoint else spectrum
        out = self._apply(x, spectrum)
        return self._set_static(out, x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        rhs = util.adjoint(rhs) if adjoint_arg else rhs
        spectrum = _to_complex(self._spectrum)
        spectrum = _conj(spectrum) if adjoint else spectrum
        inverse = truediv(util.constant(1, dtype=spectrum.dtype), spectrum)
        return self._set_static(self._apply(rhs, inverse), rhs)

    def _set_static(self, out, x):
        if x.shape.ndims is not None and self.batch_shape.ndims is not None:
            try:
                batch = joining_ops.broadcast_static_shape(self.batch_shape, x.shape[:-2])
                out.set_shape(batch.concatenate([self.range_dimension, x.shape[-1]]))
            except ValueError:
                pass
        return out

    def _to_dtype(self, x):
        if self.dtype.is_complex:
            return cast(_to_complex(x), self.dtype)
        return cast(real(x) if x.dtype.is_complex else x, self.dtype)

    def _determinant(self):
        return self._to_dtype(reduction_ops.reduce_prod(self._spectrum, self._axes()))

    def _log_abs_determinant(self):
        lad = reduction_ops.reduce_sum(log(abs(self._spectrum)), self._axes())
        return self._to_dtype(lad)

    def _trace(self):
        return self._to_dtype(reduction_ops.reduce_sum(self._spectrum, self._axes()))

    def _diag_part(self):
        n = cast(self.domain_dimension_tensor(), self.dtype)
        value = array_ops.expand_dims(truediv(self._trace(), n), -1)
        ones = array_ops.ones(self.shape_tensor()[:-1], dtype=self.dtype)
        return multiply(value, ones)

    def _eigvals(self):
        return self._flat_spectrum()

    def _cond(self):
        a = abs(self._flat_spectrum())
        return truediv(reduction_ops.reduce_max(a, -1), reduction_ops.reduce_min(a, -1))

    def convolution_kernel(self, name="convolution_kernel"):
        """IFFT(spectrum): the kernel h with A x = h * x (circular convolution)."""
        with self._name_scope(name):
            h = _IFFT[self._block_depth](_to_complex(self._spectrum))
            return h if self.dtype.is_complex else cast(real(h), self.dtype)

    def assert_hermitian_spectrum(self, name="assert_hermitian_spectrum"):
        """An op that fails unless the spectrum is Hermitian (A is real)."""
        with self._name_scope(name):
            h = _IFFT[self._block_depth](_to_complex(self._spectrum))
            return check_ops.assert_near(imag(h), util.constant(0, dtype=h.dtype.real_dtype),
                                         message="Not Hermitian")

    def _assert_non_singular(self):
        return check_ops.assert_positive(abs(self._spectrum),
                                         message="Singular operator: spectrum contained "
                                                 "zero values.")

    def _assert_positive_definite(self):
        s = real(self._spectrum) if self._spectrum.dtype.is_complex else self._spectrum
        return check_ops.assert_positive(s, message="Not positive definite:  Real part of "
                                                    "spectrum was not all positive.")

    def _assert_self_adjoint(self):
        if not self._spectrum.dtype.is_complex:
            return check_ops.assert_equal(self._spectrum, self._spectrum)
        return check_ops.assert_equal(imag(self._spectrum), util.constant(
            0, dtype=self._spectrum.dtype.real_dtype), message="Not self-adjoint:  The "
                                                               "spectrum contained non-zero "
                                                               "imaginary part.")

    def _derived(self, spectrum, **hints):
        return type(self)(spectrum, input_output_dtype=self.dtype, **hints)

    def adjoint(self, name="adjoint"):
        if self.is_self_adjoint:
            return self
        s = _conj(self._spectrum) if self._spectrum.dtype.is_complex else self._spectrum
        return self._derived(s, is_non_singular=self.is_non_singular,
                             is_positive_definite=self.is_positive_definite)

    H = property(adjoint, None)

    def _linop_inverse(self):
        inv = truediv(util.constant(1, dtype=self._spectrum.dtype), self._spectrum)
        return self._derived(inv, is_non_singular=self.is_non_singular,
                             is_self_adjoint=self.is_self_adjoint,
                             is_positive_definite=self.is_positive_definite)


class LinearOperatorCirculant(_BaseCirculant):
    """Circulant matrices from their spectrum [..., N] (`tf.linalg.LinearOperatorCirculant`)."""

    _block_depth = 1

    def __init__(self, spectrum, input_output_dtype=dtypes.complex64, is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=True,
                 name="LinearOperatorCirculant"):
        super().__init__(spectrum, input_output_dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name)


class LinearOperatorCirculant2D(_BaseCirculant):
    """Block circulant matrices with circulant blocks, from a [..., n0, n1] spectrum
    (`tf.linalg.LinearOperatorCirculant2D`)."""

    _block_depth = 2

    def __init__(self, spectrum, input_output_dtype=dtypes.complex64, is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=True,
                 name="LinearOperatorCirculant2D"):
        super().__init__(spectrum, input_output_dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name)


class LinearOperatorCirculant3D(_BaseCirculant):
    """Doubly nested block circulant matrices, from a [..., n0, n1, n2] spectrum
    (`tf.linalg.LinearOperatorCirculant3D`)."""

    _block_depth = 3

    def __init__(self, spectrum, input_output_dtype=dtypes.complex64, is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=True,
                 name="LinearOperatorCirculant3D"):
        super().__init__(spectrum, input_output_dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name)
