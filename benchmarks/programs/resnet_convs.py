"""The 3x3 and 1x1 convolutions of a small CIFAR ResNet (nchw_resnet.py's `nhwc_resnet`:
conv3x3x16, three stages of two residual blocks at 16/32/64 channels, 32x32 -> 16x16 ->
8x8, strided 1x1 shortcuts) as single ops, batch 64, NHWC, float32, SAME: each Conv2D,
Conv2DBackpropInput and Conv2DBackpropFilter alone, its operands held in variables, one
value of its result fetched. Informational (no target): which of the step's convs lag.
  - stem: 3x3, 32x32x3 -> 16 (no backprop-input in a step: its input is the images);
  - s1a: 3x3, 32x32x16 -> 16 (4 convs a step); s2in: 3x3/2, 32x32x16 -> 16x16x32 (1);
  - s1b: 3x3, 16x16x32 -> 32 (3); s3in: 3x3/2, 16x16x32 -> 8x8x64 (1);
  - s1c: 3x3, 8x8x64 -> 64 (3); p2: 1x1/2, 32x32x16 -> 32 (1); p3: 1x1/2, 16x16x32 -> 64.
Figure: median time of one run of the op over 15 runs after 3 warm-up runs, in ms; `count`
says how many convs of the shape a training step has.

    python benchmarks/programs/resnet_convs.py --backend tensorflux|tensorflow [NAME...]
"""

import sys

import _conv_ops
from _bench import BACKEND, emit, guarded

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

BATCH = 64
# name: (input HWC, filter size, output channels, stride, convs a step)
CONVS = {"stem": ((32, 32, 3), 3, 16, 1, 1),
         "s1a": ((32, 32, 16), 3, 16, 1, 4),
         "s2in": ((32, 32, 16), 3, 32, 2, 1),
         "s1b": ((16, 16, 32), 3, 32, 1, 3),
         "s3in": ((16, 16, 32), 3, 64, 2, 1),
         "s1c": ((8, 8, 64), 3, 64, 1, 3),
         "p2": ((32, 32, 16), 1, 32, 2, 1),
         "p3": ((16, 16, 32), 1, 64, 2, 1)}
ONLY = [a for a in sys.argv[1:] if not a.startswith("-") and a in CONVS]


for conv, (hwc, k, f, s, count) in CONVS.items():
    if ONLY and conv not in ONLY:
        continue
    for kind in ("fwd", "bpi", "bpf"):
        if conv == "stem" and kind == "bpi":
            continue
        name = f"resnet_{conv}_{kind}"
        label = _conv_ops.label(kind, hwc, k, f, s, BATCH)
        with guarded(name, label=label):
            ms = _conv_ops.conv_op_ms(tf, kind, hwc, k, f, s, BATCH, scale=0.1)
            emit(name, ms, "ms", "lower", label=label, count=count)
