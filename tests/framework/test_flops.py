"""FLOP formulas of framework/flops.py that the cost model reads (runtime/cost_model.py)."""

import pytest

from tensorflux.framework import flops

# 5x5 convolution, 14x14x64 -> 128 channels, batch 64, stride 1, SAME: the forward's
# 2 * output elements * window elements, which its gradients count too.
IMAGE, FILTER, OUT = [64, 14, 14, 64], [5, 5, 64, 128], [64, 14, 14, 128]
FORWARD = 2 * 64 * 14 * 14 * 128 * 5 * 5 * 64


def _attr(name):
    return {"strides": [1, 1, 1, 1], "data_format": b"NHWC"}.get(name)


@pytest.mark.parametrize("op_type, ins, outs", [
    ("Conv2D", [IMAGE, FILTER], [OUT]),
    # the graph optimizer's Conv2D + BiasAdd (+ activation): counted as its convolution
    # (it was counted as a filter gradient, image x output elements: ~1,000x too many)
    ("_FusedConv2D", [IMAGE, FILTER, [128]], [OUT]),
    ("Conv2DBackpropInput", [[4], FILTER, OUT], [IMAGE]),
    ("Conv2DBackpropFilter", [IMAGE, [4], OUT], [FILTER]),
])
def test_conv2d_counts_the_forward_product(op_type, ins, outs):
    assert flops.count("conv2d", op_type, _attr, ins, outs) == FORWARD
