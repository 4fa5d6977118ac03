"""The parts ResNet v1 and v2 share (He et al., "Deep Residual Learning for Image
Recognition", 2015; "Identity Mappings in Deep Residual Networks", 2016): blocks of
bottleneck units, the strided 3x3 convolution with explicit padding, and atrous
(dilated) execution of the later blocks to keep a finer output stride (`output_stride`:
the ratio of the input's spatial size to the output's)."""

from __future__ import annotations

import collections

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.ops import joining_ops, nn_ops


class Block(collections.namedtuple("Block", ["scope", "unit_fn", "args"])):
    """A ResNet block: its variable scope, the unit function (a bottleneck), and one dict
    of keyword arguments per unit (`depth`, `depth_bottleneck`, `stride`)."""


def subsample(inputs, factor, scope=None):
    """`inputs` taken every `factor`-th row and column (a 1x1 max pool); `inputs` itself
    when `factor` is 1."""
    if factor == 1:
        return inputs
    return c.max_pool2d(inputs, [1, 1], stride=factor, scope=scope)


def conv2d_same(inputs, num_outputs, kernel_size, stride, rate=1, scope=None):
    """A convolution whose output has ceil(size / stride) rows and columns whatever the
    input's parity: SAME padding when `stride` is 1; otherwise the input padded explicitly
    by the (dilated) kernel's extent, split as SAME would for an odd size, and a VALID
    convolution, so that strided and atrous versions of a network line up."""
    if stride == 1:
        return c.conv2d(inputs, num_outputs, kernel_size, stride=1, rate=rate,
                        padding="SAME", scope=scope)
    extent = kernel_size + (kernel_size - 1) * (rate - 1)
    before = (extent - 1) // 2
    after = extent - 1 - before
    inputs = joining_ops.pad(inputs, [[0, 0], [before, after], [before, after], [0, 0]])
    return c.conv2d(inputs, num_outputs, kernel_size, stride=stride, rate=rate,
                    padding="VALID", scope=scope)


@c.add_arg_scope
def stack_blocks_dense(net, blocks, output_stride=None, outputs_collections=None):
    """Runs `blocks` on `net`. With `output_stride`, once the units' strides reach it the
    rest run with stride 1 and their 3x3 convolutions dilated by the stride they skip.

    Raises:
      ValueError: `output_stride` cannot be reached with these blocks' strides.
    """
    stride_so_far = 1
    rate = 1
    for block in blocks:
        with c.vs.variable_scope(block.scope, "block", [net]) as sc:
            for i, unit in enumerate(block.args):
                if output_stride is not None and stride_so_far > output_stride:
                    raise ValueError("The target output_stride cannot be reached.")
                with c.vs.variable_scope(f"unit_{i + 1}", values=[net]):
                    unit_stride = unit.get("stride", 1)
                    if output_stride is not None and stride_so_far == output_stride:
                        net = block.unit_fn(net, rate=rate, **dict(unit, stride=1))
                        rate *= unit_stride
                    else:
                        net = block.unit_fn(net, rate=1, **unit)
                        stride_so_far *= unit_stride
            net = c.collect_named_outputs(outputs_collections, sc.name, net)
    if output_stride is not None and stride_so_far != output_stride:
        raise ValueError("The target output_stride cannot be reached.")
    return net


def resnet_arg_scope(weight_decay=0.0001, batch_norm_decay=0.997, batch_norm_epsilon=1e-5,
                     batch_norm_scale=True):
    """Defaults of the ResNets' layers: convolutions with L2 weight decay, He's
    initialization, ReLU and batch normalization (its moving averages updated through
    UPDATE_OPS); max pools with SAME padding."""
    from tensorflux.framework import graph as graph_lib

    bn = {"decay": batch_norm_decay, "epsilon": batch_norm_epsilon,
          "scale": batch_norm_scale, "updates_collections": graph_lib.GraphKeys.UPDATE_OPS}
    with c.arg_scope([c.conv2d], weights_regularizer=c.l2_regularizer(weight_decay),
                     weights_initializer=c.variance_scaling_initializer(),
                     activation_fn=nn_ops.relu, normalizer_fn=c.batch_norm,
                     normalizer_params=bn):
        with c.arg_scope([c.batch_norm], **bn):
            with c.arg_scope([c.max_pool2d], padding="SAME") as sc:
                return sc
