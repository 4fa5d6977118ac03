"""Which path a convolution kernel takes where conv_ops.py's general rules pick a slower one
for the layers of the paper's Table 1 nets at small batches (issue 20; measured in CPU time
on this project's 2-core Zen 4 host, batch 8, two intra-op threads).

Input gradients of 5x5 stride-1 convolutions with few input channels (GoogLeNet's 5x5
branches: 16-48 channels reduced from the block's input, 32-128 filters): conv_ops.py takes
them as the forward conv of out_backprop with the flipped filter from 16 input channels on,
whose product has one column per input channel (16-48: narrow, far below the GEMM's peak).
Products and scatter (`_col2im_backprop_input`: out_backprop times the filter transposed,
25*C columns, then each tap's columns added into the input gradient) run 1.2-2x faster there
when the filters are at least twice the input channels (CPU ms, flipped / scatter, 8x28x28:
C 16 F 96 4.2 / 2.6, C 32 F 96 7.1 / 5.0, C 48 F 192 24.6 / 13.6; 8x14x14: C 16 F 32 0.79 /
0.37, C 32 F 96 1.6 / 1.4, C 48 F 96 2.1 / 2.0) and slower from 64 input channels on (C 64
F 96 6.6 / 9.3, where Winograd's F(2x2, 5x5) takes the flipped conv) or with as many
filters as channels (C 32 F 32 2.2 / 2.4).

Forward convolutions of a net's first layer (at most 4 input channels, a window of 9 taps
or more at a stride: GoogLeNet's and ResNet-50's 7x7/2 on 3 channels, AlexNet's 11x11/4):
read straight from the padded input by the C extension's `stem_conv` (`_stem_conv.h`: a
window row of NHWC input is a row of a matrix whose rows overlap), without im2col's patch
matrix (59 MB for the 7x7/2 stem at batch 8, copied and read again by the product). CPU
ms, im2col / stem_conv, one thread, batch 8: 7x7/2 224x224x3 -> 64 12.2 / 7.7 (TensorFlow
8.0-8.8), 11x11/4 227x227x3 -> 64 6.8 / 4.7 (TensorFlow 5.3-5.5).
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu._nn_common import _pad

# Input channels from which the flipped forward conv stays (its product is wide enough).
SCATTER_MAX_CHANNELS = 64
# ... and from which exactly twice as many filters keep it too: 32 -> 64 (a deep MNIST
# model's or cnn_step.py's second conv) ran 1.4-1.7x slower scattered at every batch
# measured (CPU-quiet host, two threads, ms flipped / scatter: 32x14x14 1.7 / 2.3, 50x14x14
# 2.3 / 3.7, 64x16x16 3.5-4.2 / 6.2-6.4, 128x14x14 5.5 / 9.0), where 16 -> 32 (8x28x28
# 0.92 / 0.65), 32 -> 96 (16x28x28 6.6 / 5.5) and 48 -> 128 (8x28x28 12.5 / 5.5) gain.
SCATTER_STRICT_FROM = 32


def scatter_input_gradient(kh: int, kw: int, strides, dilations, c: int, f: int) -> bool:
    """Whether a stride-1 backprop-input with a (kh, kw) window, `c` input channels and `f`
    filters goes by products and scatter rather than as the flipped forward conv."""
    return ((kh, kw) == (5, 5) and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and c < SCATTER_MAX_CHANNELS
            and (f >= 2 * c if c < SCATTER_STRICT_FROM else f > 2 * c))


# The stems `stem_forward` takes: at most this many input channels ...
STEM_MAX_CHANNELS = 4
# ... and at least this many filters (fewer: every tile would be a masked tail).
STEM_MIN_FILTERS = 16


def stem_forward(x, w, g, pads, parts: int):
    """The NHWC forward conv of float32 `x` (N, H, W, C) with `w` (kh, kw, C, F) for the
    geometry `g` (conv_ops._ConvGeometry) and its resolved `pads`, through `stem_conv`: a
    new (N, oh, ow, F) array, or None when the conv is not a stem (see the module's
    docstring: a stride, few channels, no dilation, at least intra_op.MIN_FLOPS, so never
    one of conv_ops' small convs) or the extension declines (no AVX-512F)."""
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    if (x.dtype != np.float32 or w.dtype != np.float32 or (g.sh, g.sw) == (1, 1)
            or (g.dh, g.dw) != (1, 1) or c > STEM_MAX_CHANNELS or f < STEM_MIN_FILTERS
            or kh * kw < 9):
        return None
    oh = (h + sum(pads[0]) - kh) // g.sh + 1
    ow = (wd + sum(pads[1]) - kw) // g.sw + 1
    if min(n, oh, ow) < 1 or 2.0 * n * oh * ow * kh * kw * c * f < intra_op.MIN_FLOPS:
        return None
    return native.stem_conv(np.ascontiguousarray(_pad(x, pads)), np.ascontiguousarray(w),
                            np.empty((n, oh, ow, f), np.float32), (g.sh, g.sw), parts)
