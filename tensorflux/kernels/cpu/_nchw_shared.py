"""NHWC copies of NCHW conv operands shared within a step: Conv2D (and _FusedConv2D) and
Conv2DBackpropFilter transpose the same input, Conv2DBackpropInput and Conv2DBackpropFilter
the same out_backprop. The copy is kept in the step's store of the FFT convolution's spectra
(`_fft_conv._spectra`: keyed by the operand's buffer, shape, strides and dtype, holding the
operand so its buffer cannot change under the entry; 64 MiB per step and device together
with the spectra), and dropped once both kinds of kernel that share it took it. In a step
that runs only the forward convolution (inference), the input's copies stay until the step
ends (within that bound)."""

from __future__ import annotations

from tensorflux.kernels.cpu import _fft_conv
from tensorflux.kernels.cpu._nn_common import SWAP_MIN_ELEMENTS, _to_nhwc

# out_backprop's copy is shared by the two backprops; the input's by the forward and the
# filter backprop.
_SHARED = {"forward": ("forward", "filter"), "input": ("input", "filter")}


def nhwc(ctx, x, data_format: str, user: str, operand: str = "x"):
    """`x` in NHWC (`_to_nhwc`), made once per step for the kernels that share it: `user`
    is "forward", "input" or "filter", `operand` "x" (the input) or "dy"."""
    if data_format != "NCHW" or x.size < SWAP_MIN_ELEMENTS or \
            getattr(ctx, "step_container", None) is None:
        return _to_nhwc(x, data_format)
    kinds = _SHARED["input" if operand == "dy" else "forward"]
    return _fft_conv._spectra(ctx).get(("nhwc", operand), x, lambda: _to_nhwc(x, data_format),
                                       user, kinds)
