"""Resampler and ResamplerGrad: `tf.contrib.resampler`'s bilinear sampling of 2-D data at
arbitrary points (tensorflux/contrib/resampler.py has the TF1 wrapper).

Resampler(data [batch, height, width, channels], warp [batch, d0, ..., dn, 2]) ->
[batch, d0, ..., dn, channels]: each warp entry is a point (x, y), x along the width and y
along the height, in pixel units (pixel (i, j) sits at x = j, y = i). The value there
interpolates the four pixels around it bilinearly; pixels outside the data read 0, and a
point with x <= -1, y <= -1, x >= width or y >= height (or NaN) gives 0.

ResamplerGrad(data, warp, grad_output) -> (grad_data, grad_warp): the gradient of both
inputs; grad_warp is 0 for points outside that range. Resampler's gradient is that op;
ResamplerGrad has none (as in TF). Kernels: kernels/cpu/resampler_ops.py.
"""

from __future__ import annotations

from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable

__all__: list[str] = []  # the public name is tf.contrib.resampler's

_T = "T: {half, bfloat16, float, double}"


def _checked(op):
    """(data dims, warp dims), checked: data rank 4, warp rank >= 2 ending in 2, equal
    batch sizes. Unknown ranks come back as unknown dims."""
    data = checked_dims(op.inputs[0], rank=4) or [None] * 4
    warp = checked_dims(op.inputs[1], at_least=2)
    if warp is not None:
        if warp[-1] is not None and warp[-1] != 2:
            raise ValueError(f"The last dimension of warp must be 2 (an (x, y) point), "
                             f"but is {warp[-1]}")
        batch = merge_dim(data[0], warp[0])
        data = [batch] + data[1:]
        warp = [batch] + warp[1:]
    return data, warp


def _resampler_shape(op):
    data, warp = _checked(op)
    return [None if warp is None else warp[:-1] + [data[3]]]


define_op("Resampler", inputs=["data: T", "warp: T"], outputs=["output: T"], attrs=[_T],
          shape_fn=_resampler_shape)


def resampler(data, warp, name=None):
    """The raw op (`gen_resampler_ops.resampler`)."""
    return apply_op("Resampler", data=data, warp=warp, name=name or "Resampler")


@gradient("Resampler")
def _resampler_grad(op, grad):
    data, warp = op.inputs
    grad_data, grad_warp = resampler_grad(data, warp, grad)
    return [grad_data, grad_warp]


def _resampler_grad_shape(op):
    data, warp = _checked(op)
    return [data, warp]


define_op("ResamplerGrad", inputs=["data: T", "warp: T", "grad_output: T"],
          outputs=["grad_data: T", "grad_warp: T"], attrs=[_T],
          shape_fn=_resampler_grad_shape)
not_differentiable("ResamplerGrad")


def resampler_grad(data, warp, grad_output, name=None):
    """The raw op: (grad_data, grad_warp)."""
    return apply_op("ResamplerGrad", data=data, warp=warp, grad_output=grad_output,
                    name=name or "ResamplerGrad")
