"""Fast Fourier transforms: FFT/IFFT, FFT2D/IFFT2D, FFT3D/IFFT3D over the innermost 1-3
dimensions of complex tensors, and RFFT/IRFFT, RFFT2D/IRFFT2D, RFFT3D/IRFFT3D between real
signals and their Hermitian half-spectra (`fft_length` crops or zero-pads the input).

Gradients. A complex transform's gradient is its adjoint: FFT's is n * IFFT, IFFT's is
FFT / n. RFFT's is the real part of the adjoint of "FFT then keep n//2 + 1 bins": zero-pad the
incoming gradient to n bins, n * IFFT, take the real part. IRFFT's is RFFT of the gradient
/ n with the bins that appear twice in the Hermitian spectrum doubled. Both then crop or
zero-pad back to the input's length along each transformed axis. Real-transform gradients
need `fft_length` known when the graph is built.

Kernels: tensorflux/kernels/cpu/spectral_ops.py (numpy.fft); the tf.signal library (frames,
STFT, windows, mel filters, MFCCs) is tensorflux/signal/.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.framework.common_shapes import checked_dims, constant_value
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops, reduction_ops, slicing_ops

__all__: list[str] = []  # the public names are tf.signal's / tf.spectral's

_COMPLEX = {1: ("FFT", "IFFT"), 2: ("FFT2D", "IFFT2D"), 3: ("FFT3D", "IFFT3D")}
_REAL = {1: ("RFFT", "IRFFT"), 2: ("RFFT2D", "IRFFT2D"), 3: ("RFFT3D", "IRFFT3D")}


def _complex_shape(rank):
    def shape_fn(op):
        checked_dims(op.inputs[0], at_least=rank)
        return [op.inputs[0].shape]
    return shape_fn


def _real_shape(rank, inverse):
    def shape_fn(op):
        dims = checked_dims(op.inputs[0], at_least=rank)
        checked_dims(op.inputs[1], rank=1)
        length = constant_value(op.inputs[1])
        if dims is None:
            return [None]
        inner = [None] * rank if length is None else [int(v) for v in length]
        if not inverse and inner[-1] is not None:
            inner[-1] = inner[-1] // 2 + 1
        return [dims[:-rank] + inner]
    return shape_fn


for _rank, (_fwd, _inv) in _COMPLEX.items():
    for _op in (_fwd, _inv):
        define_op(_op, inputs=["input: Tcomplex"], outputs=["output: Tcomplex"],
                  attrs=["Tcomplex: {complex64, complex128} = DT_COMPLEX64"],
                  shape_fn=_complex_shape(_rank), flops="unary:5")
for _rank, (_fwd, _inv) in _REAL.items():
    _attrs = ["Treal: {float, double} = DT_FLOAT",
              "Tcomplex: {complex64, complex128} = DT_COMPLEX64"]
    define_op(_fwd, inputs=["input: Treal", "fft_length: int32"],
              outputs=["output: Tcomplex"], attrs=_attrs, shape_fn=_real_shape(_rank, False))
    define_op(_inv, inputs=["input: Tcomplex", "fft_length: int32"],
              outputs=["output: Treal"], attrs=_attrs, shape_fn=_real_shape(_rank, True))


def _inner_size(x, rank):
    """The product of x's innermost `rank` dims, as a scalar tensor of x's dtype."""
    dims = x.shape.as_list()[-rank:] if x.shape.ndims is not None else [None]
    if all(d is not None for d in dims):
        return convert_to_tensor(np.prod(dims, dtype=np.float64).astype(
            x.dtype.as_numpy_dtype))
    shape = array_ops.shape(x)
    return math_ops.cast(reduction_ops.reduce_prod(shape[-rank:]), x.dtype)


def _complex_grad(rank, inverse):
    fwd, inv = _COMPLEX[rank]

    def grad_fn(op, grad):
        size = _inner_size(grad, rank)
        if inverse:
            return [apply_op(fwd, input=grad) / size]
        return [apply_op(inv, input=grad) * size]
    return grad_fn


for _rank in _COMPLEX:
    gradient(_COMPLEX[_rank][0])(_complex_grad(_rank, False))
    gradient(_COMPLEX[_rank][1])(_complex_grad(_rank, True))


def _static_lengths(op) -> list[int]:
    value = constant_value(op.inputs[1])
    if value is None:
        raise NotImplementedError(f"the gradient of {op.type} needs a constant fft_length")
    return [int(v) for v in value]


def _fit(x, lengths, target_dims):
    """Crops or zero-pads x's innermost dims from `lengths` to `target_dims` (ints or
    scalar tensors)."""
    rank = len(lengths)
    for k in range(rank):
        axis = x.shape.ndims - rank + k if x.shape.ndims is not None else None
        want = target_dims[k]
        if isinstance(want, int) and want == lengths[k]:
            continue
        if axis is None:
            raise NotImplementedError("FFT gradients need inputs of known rank")
        if isinstance(want, int) and want < lengths[k]:
            begin = [0] * x.shape.ndims
            size = [-1] * x.shape.ndims
            size[axis] = want
            x = slicing_ops.slice(x, begin, size)
        else:
            pad = [[0, 0] for _ in range(x.shape.ndims)]
            pad[axis] = [0, math_ops.maximum(want - lengths[k], 0)] if not isinstance(
                want, int) else [0, want - lengths[k]]
            x = joining_ops.pad(x, joining_ops.stack([joining_ops.stack(p) for p in pad]))
            if not isinstance(want, int):
                begin = [0] * x.shape.ndims
                size = [-1] * x.shape.ndims
                size[axis] = want
                x = slicing_ops.slice(x, begin, joining_ops.stack(size))
    return x


def _input_dims(x, rank):
    dims = x.shape.as_list()[-rank:] if x.shape.ndims is not None else [None] * rank
    shape = None
    out = []
    for k, d in enumerate(dims):
        if d is None:
            shape = array_ops.shape(x) if shape is None else shape
            out.append(shape[x.shape.ndims - rank + k])
        else:
            out.append(d)
    return out


def _rfft_grad(rank):
    def grad_fn(op, grad):
        lengths = _static_lengths(op)
        half = lengths[:-1] + [lengths[-1] // 2 + 1]
        full = _fit(grad, half, lengths)  # zero bins for the dropped half
        n = float(np.prod(lengths))
        back = math_ops.real(apply_op(_COMPLEX[rank][1], input=full)) * \
            np.asarray(n, op.inputs[0].dtype.as_numpy_dtype)
        return [_fit(back, lengths, _input_dims(op.inputs[0], rank)), None]
    return grad_fn


def _irfft_grad(rank):
    def grad_fn(op, grad):
        lengths = _static_lengths(op)
        n = lengths[-1]
        bins = n // 2 + 1
        mask = np.full(bins, 2.0)
        mask[0] = 1.0
        if n % 2 == 0:
            mask[-1] = 1.0
        mask /= float(np.prod(lengths))
        spectrum = apply_op(_REAL[rank][0], input=grad,
                            fft_length=convert_to_tensor(np.array(lengths, np.int32)),
                            Tcomplex=op.inputs[0].dtype)
        spectrum = spectrum * mask.astype(op.inputs[0].dtype.as_numpy_dtype)
        half = lengths[:-1] + [bins]
        return [_fit(spectrum, half, _input_dims(op.inputs[0], rank)), None]
    return grad_fn


for _rank in _REAL:
    gradient(_REAL[_rank][0])(_rfft_grad(_rank))
    gradient(_REAL[_rank][1])(_irfft_grad(_rank))


# ---- TF1 wrappers (tf.signal.* / tf.spectral.*) ---------------------------------------------


def _complex_fn(op_type):
    def fn(input, name=None):  # noqa: A002
        x = convert_to_tensor(input, name="input")
        if not x.dtype.is_complex:
            x = math_ops.cast(x, dtypes.complex64)
        return apply_op(op_type, input=x, name=name or op_type)
    fn.__name__ = op_type.lower()
    fn.__doc__ = f"The {op_type} op over the innermost dimensions (`tf.signal.{fn.__name__}`)."
    return fn


fft, ifft = _complex_fn("FFT"), _complex_fn("IFFT")
fft2d, ifft2d = _complex_fn("FFT2D"), _complex_fn("IFFT2D")
fft3d, ifft3d = _complex_fn("FFT3D"), _complex_fn("IFFT3D")

_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}
_REAL_OF = {v: k for k, v in _COMPLEX_OF.items()}


def _fft_length(x, rank, fft_length, inverse):
    if fft_length is not None:
        return convert_to_tensor(fft_length, dtype=dtypes.int32, name="fft_length")
    dims = _input_dims(x, rank)
    if inverse:
        last = dims[-1]
        dims[-1] = 2 * (last - 1)
    if all(isinstance(d, int) for d in dims):
        return convert_to_tensor(np.array(dims, np.int32), name="fft_length")
    return joining_ops.stack(dims, name="fft_length")


def _real_fn(op_type, rank, inverse):
    def fn(input_tensor, fft_length=None, name=None):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        if inverse:
            if not x.dtype.is_complex:
                x = math_ops.cast(x, dtypes.complex64)
            length = _fft_length(x, rank, fft_length, True)
            return apply_op(op_type, input=x, fft_length=length, Treal=_REAL_OF[x.dtype],
                            name=name or op_type)
        if x.dtype not in _COMPLEX_OF:
            x = math_ops.cast(x, dtypes.float32)
        length = _fft_length(x, rank, fft_length, False)
        return apply_op(op_type, input=x, fft_length=length, Tcomplex=_COMPLEX_OF[x.dtype],
                        name=name or op_type)
    fn.__name__ = op_type.lower()
    fn.__doc__ = (f"The {op_type} op over the innermost {rank} dimension(s) "
                  f"(`tf.signal.{fn.__name__}`).")
    return fn


rfft, irfft = _real_fn("RFFT", 1, False), _real_fn("IRFFT", 1, True)
rfft2d, irfft2d = _real_fn("RFFT2D", 2, False), _real_fn("IRFFT2D", 2, True)
rfft3d, irfft3d = _real_fn("RFFT3D", 3, False), _real_fn("IRFFT3D", 3, True)
