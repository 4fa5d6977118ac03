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
"""

from __future__ import annotations

# Input channels from which the flipped forward conv stays (its product is wide enough).
SCATTER_MAX_CHANNELS = 64


def scatter_input_gradient(kh: int, kw: int, strides, dilations, c: int, f: int) -> bool:
    """Whether a stride-1 backprop-input with a (kh, kw) window, `c` input channels and `f`
    filters goes by products and scatter rather than as the flipped forward conv."""
    return ((kh, kw) == (5, 5) and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and c < SCATTER_MAX_CHANNELS and f >= 2 * c)
