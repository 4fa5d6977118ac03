"""The parts ResNet v1 and v2 share (He et al., "Deep Residual Learning for Image
Recognition", 2015; "Identity Mappings in Deep Residual Networks", 2016): blocks of
bottleneck units, the strided 3x3 convolution with explicit padding, and atrous
(dilated) execution of the later blocks to keep a finer output stride (`output_stride`:
the ratio of the input's spatial size to the output's)."""

from __future__ import annotations

import collections

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.ops import joining_ops, nn_ops, reduction_ops


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


def resnet(inputs, blocks, unit_fn, default_scope, preact, num_classes, is_training,
           global_pool, output_stride, include_root_block, reuse, scope):
    """The body ResNet v1 and v2 share: the root (a 7x7/2 convolution, without
    normalization or activation for v2's `preact` units, whose first pre-activation
    normalizes it; a 3x3/2 max pool), the blocks, v2's final "postnorm", the global average
    pool and the 1x1 logits; (net, end_points).

    Raises:
      ValueError: `output_stride` is not a multiple of 4, or cannot be reached.
    """
    with c.vs.variable_scope(scope, default_scope, [inputs], reuse=reuse) as sc:
        collection = c.end_points_collection(sc)
        with c.arg_scope([c.conv2d, unit_fn, stack_blocks_dense],
                         outputs_collections=collection):
            with c.arg_scope([c.batch_norm], is_training=is_training):
                net = inputs
                if include_root_block:
                    if output_stride is not None:
                        if output_stride % 4 != 0:
                            raise ValueError("The output_stride needs to be a multiple "
                                             "of 4.")
                        output_stride //= 4
                    root = {"activation_fn": None, "normalizer_fn": None} if preact else {}
                    with c.arg_scope([c.conv2d], **root):
                        net = conv2d_same(net, 64, 7, stride=2, scope="conv1")
                    net = c.max_pool2d(net, [3, 3], stride=2, scope="pool1")
                net = stack_blocks_dense(net, blocks, output_stride)
                if preact:
                    net = c.batch_norm(net, activation_fn=nn_ops.relu, scope="postnorm")
                if global_pool:
                    net = reduction_ops.reduce_mean(net, [1, 2], name="pool5", keepdims=True)
                if num_classes is not None:
                    net = c.conv2d(net, num_classes, [1, 1], activation_fn=None,
                                   normalizer_fn=None, scope="logits")
                end_points = c.convert_collection_to_dict(collection)
                if num_classes is not None:
                    end_points["predictions"] = c.softmax(net, scope="predictions")
                return net, end_points


def bottleneck_block(unit_fn, scope, base_depth, num_units, stride):
    """A Block of `num_units` `unit_fn` bottlenecks of depth 4 * base_depth, the last one
    strided."""
    unit = {"depth": base_depth * 4, "depth_bottleneck": base_depth}
    return Block(scope, unit_fn, [dict(unit, stride=1)] * (num_units - 1)
                 + [dict(unit, stride=stride)])


def standard_resnet(network, block_fn, units, name, version):
    """`resnet_vX_<depth>`: `network` on the four standard blocks of `units` bottlenecks
    (base depths 64, 128, 256, 512; strides 2, 2, 2, 1)."""
    def build(inputs, num_classes=None, is_training=True, global_pool=True,
              output_stride=None, reuse=None, scope=name):
        blocks = [block_fn(f"block{i + 1}", 64 << i, n, 1 if i == 3 else 2)
                  for i, n in enumerate(units)]
        return network(inputs, blocks, num_classes, is_training, global_pool,
                       output_stride, include_root_block=True, reuse=reuse, scope=scope)
    build.__name__ = build.__qualname__ = name
    build.__doc__ = (f"ResNet {version} with {sum(units) * 3 + 2} layers: blocks of "
                     f"{units} units.")
    build.default_image_size = network.default_image_size
    return build
