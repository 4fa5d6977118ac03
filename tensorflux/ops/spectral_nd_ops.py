"""N-dimensional FFTs over chosen axes: FFTND, IFFTND, RFFTND, IRFFTND (TensorFlow 2.15+).

Each op takes `fft_length` and `axes` (int32 vectors of one length): axis `axes[i]` is
cropped or zero-padded to `fft_length[i]` and transformed, as `numpy.fft.fftn(x, s, axes)`.
The real forms keep (or take) the Hermitian half of the last listed axis: RFFTND gives
`fft_length[-1] // 2 + 1` bins there; IRFFTND crops or pads that axis of its complex input
to as many bins.

Gradients are the adjoints, as for the 1-3D FFTs (spectral_ops.py): FFTND's is
n * IFFTND of the gradient, IFFTND's FFTND / n, RFFTND's the real part of n * IFFTND of
the zero-filled half spectrum, IRFFTND's RFFTND / n with the bins that count twice doubled;
each then crops or pads back to the input's size along `axes` (the adjoint of the op's
own crop or pad). Gradients need constant `axes` (and, for the real forms, a constant
`fft_length`).

Wrappers: `tf.signal.fftnd(input_tensor, fft_length=None, axes=None, norm=None)` and
friends (default axes: all; default lengths: the input's sizes there, IRFFTND's last
2 * (bins - 1)); `tf.fftnd(input, fft_length, axes)` and friends are the raw ops.
Kernels: tensorflux/kernels/cpu/spectral_nd_ops.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, joining_ops, math_ops, reduction_ops, slicing_ops

__all__: list[str] = []  # the public names are tf.signal's and tf's (below)

TensorShape = tensor_shape.TensorShape
_REAL_OF = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}
_COMPLEX_OF = {v: k for k, v in _REAL_OF.items()}


def _static_axes(op, rank):
    """The op's axes, normalized to [0, rank), or None when not constant."""
    axes = constant_value(op.inputs[2])
    if axes is None or rank is None:
        return None
    axes = [int(a) for a in np.reshape(axes, -1)]
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"axes {axes} out of range for an input of rank {rank}")
    return [a % rank for a in axes]


def _nd_shape(half_out: bool):
    def shape_fn(op):
        shape = op.inputs[0].shape
        for i in (1, 2):
            if op.inputs[i].shape.ndims not in (None, 1):
                raise ValueError(f"Shape must be rank 1 but is rank {op.inputs[i].shape.ndims}")
        if shape.ndims is None:
            return [None]
        axes = _static_axes(op, shape.ndims)
        lengths = constant_value(op.inputs[1])
        if axes is None or lengths is None:
            return [TensorShape([None] * shape.ndims)]
        lengths = [int(n) for n in np.reshape(lengths, -1)]
        if len(lengths) != len(axes):
            raise ValueError(f"fft_length ({len(lengths)}) and axes ({len(axes)}) must have "
                             "the same length")
        dims = shape.as_list()
        for a, n in zip(axes, lengths, strict=True):
            dims[a] = n
        if axes and half_out:  # RFFTND: the half spectrum on the last listed axis
            dims[axes[-1]] = lengths[-1] // 2 + 1
        return [TensorShape(dims)]
    return shape_fn


_ND_IN = ["fft_length: int32", "axes: int32"]
for _op in ("FFTND", "IFFTND"):
    define_op(_op, inputs=["input: Tcomplex"] + _ND_IN, outputs=["output: Tcomplex"],
              attrs=["Tcomplex: {complex64, complex128} = DT_COMPLEX64"],
              shape_fn=_nd_shape(False), flops="unary:5")
_RFFT_ATTRS = ["Treal: {float, double} = DT_FLOAT",
               "Tcomplex: {complex64, complex128} = DT_COMPLEX64"]
define_op("RFFTND", inputs=["input: Treal"] + _ND_IN, outputs=["output: Tcomplex"],
          attrs=_RFFT_ATTRS, shape_fn=_nd_shape(True), flops="unary:5")
define_op("IRFFTND", inputs=["input: Tcomplex"] + _ND_IN, outputs=["output: Treal"],
          attrs=_RFFT_ATTRS, shape_fn=_nd_shape(False), flops="unary:5")


# ---- gradients ---------------------------------------------------------------------------


def _grad_axes(op):
    rank = op.inputs[0].shape.ndims
    axes = _static_axes(op, rank)
    if axes is None:
        raise NotImplementedError(f"the gradient of {op.type} needs constant axes and an "
                                  "input of known rank")
    return axes


def _fit_axes(x, axes, sizes):
    """x cropped or zero-padded along `axes` to `sizes` (ints or scalar tensors)."""
    rank = x.shape.ndims
    for axis, want in zip(axes, sizes, strict=True):
        have = x.shape.as_list()[axis]
        if isinstance(want, int) and have is not None:
            if want == have:
                continue
            if want < have:
                size = [-1] * rank
                size[axis] = want
                x = slicing_ops.slice(x, [0] * rank, size)
            else:
                pad = [[0, 0] for _ in range(rank)]
                pad[axis] = [0, want - have]
                x = joining_ops.pad(x, pad)
            continue
        have_t = array_ops.shape(x)[axis]
        pad = [[0, 0] for _ in range(rank)]
        pad[axis] = [0, math_ops.maximum(want - have_t, 0)]
        x = joining_ops.pad(x, joining_ops.stack([joining_ops.stack(p) for p in pad]))
        size = [-1] * rank
        size[axis] = want
        x = slicing_ops.slice(x, [0] * rank, joining_ops.stack(size))
    return x


def _dims_at(x, axes):
    """x's sizes along `axes`: ints where known, scalar tensors elsewhere."""
    static = x.shape.as_list()
    shape = None
    out = []
    for a in axes:
        if static[a] is not None:
            out.append(static[a])
        else:
            shape = array_ops.shape(x) if shape is None else shape
            out.append(shape[a])
    return out


def _size(fft_length, dtype):
    return math_ops.cast(reduction_ops.reduce_prod(fft_length), dtype)


@gradient("FFTND")
def _fftnd_grad(op, grad):
    axes = _grad_axes(op)
    back = apply_op("IFFTND", input=grad, fft_length=op.inputs[1], axes=op.inputs[2])
    back = back * _size(op.inputs[1], grad.dtype)
    return [_fit_axes(back, axes, _dims_at(op.inputs[0], axes)), None, None]


@gradient("IFFTND")
def _ifftnd_grad(op, grad):
    axes = _grad_axes(op)
    back = apply_op("FFTND", input=grad, fft_length=op.inputs[1], axes=op.inputs[2])
    back = back / _size(op.inputs[1], grad.dtype)
    return [_fit_axes(back, axes, _dims_at(op.inputs[0], axes)), None, None]


def _static_lengths(op):
    value = constant_value(op.inputs[1])
    if value is None:
        raise NotImplementedError(f"the gradient of {op.type} needs a constant fft_length")
    return [int(v) for v in np.reshape(value, -1)]


@gradient("RFFTND")
def _rfftnd_grad(op, grad):
    axes, lengths = _grad_axes(op), _static_lengths(op)
    full = _fit_axes(grad, axes[-1:], lengths[-1:])  # zero bins for the dropped half
    back = apply_op("IFFTND", input=full, fft_length=op.inputs[1], axes=op.inputs[2])
    real = op.inputs[0].dtype.as_numpy_dtype
    back = math_ops.real(back) * np.asarray(float(np.prod(lengths)), real)
    return [_fit_axes(back, axes, _dims_at(op.inputs[0], axes)), None, None]


@gradient("IRFFTND")
def _irfftnd_grad(op, grad):
    axes, lengths = _grad_axes(op), _static_lengths(op)
    n = lengths[-1]
    bins = n // 2 + 1
    mask = np.full(bins, 2.0)
    mask[0] = 1.0
    if n % 2 == 0:
        mask[-1] = 1.0
    mask /= float(np.prod(lengths))
    shape = [1] * grad.shape.ndims
    shape[axes[-1]] = bins
    spectrum = apply_op("RFFTND", input=grad, fft_length=op.inputs[1], axes=op.inputs[2],
                        Tcomplex=op.inputs[0].dtype)
    spectrum = spectrum * mask.reshape(shape).astype(op.inputs[0].dtype.as_numpy_dtype)
    return [_fit_axes(spectrum, axes, _dims_at(op.inputs[0], axes)), None, None]


# ---- wrappers ----------------------------------------------------------------------------


def _axes_and_lengths(x, fft_length, axes, inverse_real: bool):
    """The axes and fft_length tensors of a tf.signal.*fftnd call."""
    if x.shape.ndims is None and (axes is None or fft_length is None):
        raise ValueError("fftnd needs an input of known rank unless axes and fft_length "
                         "are given")
    if axes is None:
        axes = list(range(x.shape.ndims))
    axes_t = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
    if fft_length is not None:
        return convert_to_tensor(fft_length, dtype=dtypes.int32, name="fft_length"), axes_t
    static_axes = constant_value(axes_t)
    if static_axes is None:
        raise ValueError("fftnd needs fft_length when axes are not constant")
    dims = _dims_at(x, [int(a) % x.shape.ndims for a in np.reshape(static_axes, -1)])
    if inverse_real and dims:
        dims[-1] = 2 * (dims[-1] - 1)
    if all(isinstance(d, int) for d in dims):
        return convert_to_tensor(np.array(dims, np.int32), name="fft_length"), axes_t
    return joining_ops.stack([math_ops.cast(d, dtypes.int32) for d in dims],
                             name="fft_length"), axes_t


def _norm_scale(norm, fft_length, dtype, forward_op: bool):
    """The factor the input is multiplied by for `norm` (None: backward, no scaling)."""
    if norm in (None, "backward"):
        return None
    if norm not in ("forward", "ortho"):
        raise ValueError(f"Unsupported norm: {norm!r}; expected 'backward', 'forward' or "
                         "'ortho'")
    n = _size(fft_length, dtypes.float64)
    if norm == "ortho":
        n = n ** 0.5
    return math_ops.cast(1.0 / n if forward_op else n, dtype)


def _nd_wrapper(op_type: str, real_in: bool, real_out: bool, forward_op: bool):
    def fn(input_tensor, fft_length=None, axes=None, norm=None, name=None):
        with graph_lib.name_scope(name, op_type.lower(), [input_tensor]) as scope:
            x = convert_to_tensor(input_tensor, name="input_tensor")
            if real_in:
                if x.dtype not in _COMPLEX_OF:
                    x = math_ops.cast(x, dtypes.float32)
            elif not x.dtype.is_complex:
                x = math_ops.cast(x, dtypes.complex64)
            length, axes_t = _axes_and_lengths(x, fft_length, axes, real_out)
            scale = _norm_scale(norm, length, x.dtype, forward_op)
            if scale is not None:
                x = x * scale
            extra = {}
            if real_in:
                extra["Tcomplex"] = _COMPLEX_OF[x.dtype]
            if real_out:
                extra["Treal"] = _REAL_OF[x.dtype]
            return apply_op(op_type, input=x, fft_length=length, axes=axes_t, name=scope,
                            **extra)
    fn.__name__ = op_type.lower()
    fn.__doc__ = (f"The {op_type} op over `axes` (default: all), each cropped or padded "
                  f"to `fft_length`; `norm` is 'backward' (default), 'forward' or 'ortho' "
                  f"(`tf.signal.{fn.__name__}`).")
    return fn


fftnd = _nd_wrapper("FFTND", False, False, True)
ifftnd = _nd_wrapper("IFFTND", False, False, False)
rfftnd = _nd_wrapper("RFFTND", True, False, True)
irfftnd = _nd_wrapper("IRFFTND", False, True, False)


def _raw(op_type: str, extra_attr: str | None):
    def fn(input, fft_length, axes, name=None, **attrs):  # noqa: A002
        if set(attrs) - {extra_attr}:
            raise TypeError(f"{op_type.lower()}() got unexpected arguments {sorted(attrs)}")
        return apply_op(op_type, input=input, fft_length=fft_length, axes=axes,
                        name=name or op_type, **attrs)
    fn.__name__ = op_type.lower()
    fn.__doc__ = f"The raw {op_type} op (`tf.{fn.__name__}`)."
    return fn


raw_fftnd, raw_ifftnd = _raw("FFTND", None), _raw("IFFTND", None)
raw_rfftnd, raw_irfftnd = _raw("RFFTND", "Tcomplex"), _raw("IRFFTND", "Treal")
