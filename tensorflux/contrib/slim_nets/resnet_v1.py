"""ResNet v1 (He et al., 2015) with bottleneck units, as TF-Slim builds it: the stride of
each block is on its last unit's 3x3 convolution; the root is a 7x7/2 convolution and a
3x3/2 max pool. `resnet_v1_50/101/152/200` return (net, end_points); with `num_classes`
the net is the [batch, 1, 1, num_classes] logits (`global_pool`) and end_points has
"predictions" (their softmax)."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.contrib.slim_nets import resnet_utils
from tensorflux.ops import nn_ops

resnet_arg_scope = resnet_utils.resnet_arg_scope


@c.add_arg_scope
def bottleneck(inputs, depth, depth_bottleneck, stride, rate=1, outputs_collections=None,
               scope=None):
    """A bottleneck unit: 1x1 (depth_bottleneck), 3x3 (strided, dilated by `rate`), 1x1
    (depth, no activation), added to the shortcut (the input subsampled when its depth is
    `depth` already, else a strided 1x1 projection), then ReLU."""
    with c.vs.variable_scope(scope, "bottleneck_v1", [inputs]) as sc:
        depth_in = c.last_dimension(inputs.get_shape(), min_rank=4)
        if depth == depth_in:
            shortcut = resnet_utils.subsample(inputs, stride, "shortcut")
        else:
            shortcut = c.conv2d(inputs, depth, [1, 1], stride=stride, activation_fn=None,
                                scope="shortcut")
        residual = c.conv2d(inputs, depth_bottleneck, [1, 1], stride=1, scope="conv1")
        residual = resnet_utils.conv2d_same(residual, depth_bottleneck, 3, stride,
                                            rate=rate, scope="conv2")
        residual = c.conv2d(residual, depth, [1, 1], stride=1, activation_fn=None,
                            scope="conv3")
        output = nn_ops.relu(shortcut + residual)
        return c.collect_named_outputs(outputs_collections, sc.name, output)


def resnet_v1(inputs, blocks, num_classes=None, is_training=True, global_pool=True,
              output_stride=None, include_root_block=True, reuse=None, scope=None):
    """A ResNet v1 of `blocks` (resnet_utils.Block) on `inputs` [batch, height, width,
    channels]. `is_training` sets batch normalization's mode; `output_stride` (a multiple
    of 4 with the root block) runs the later units atrous; `global_pool` averages the
    last feature map; `num_classes` adds the 1x1 logits layer.

    Raises:
      ValueError: `output_stride` is not a multiple of 4, or cannot be reached.
    """
    return resnet_utils.resnet(inputs, blocks, bottleneck, "resnet_v1", False, num_classes,
                               is_training, global_pool, output_stride, include_root_block,
                               reuse, scope)


resnet_v1.default_image_size = 224


def resnet_v1_block(scope, base_depth, num_units, stride):
    """A block of `num_units` bottlenecks of depth 4 * base_depth, the last strided."""
    return resnet_utils.bottleneck_block(bottleneck, scope, base_depth, num_units, stride)


resnet_v1_50 = resnet_utils.standard_resnet(resnet_v1, resnet_v1_block, (3, 4, 6, 3),
                                            "resnet_v1_50", "v1")
resnet_v1_101 = resnet_utils.standard_resnet(resnet_v1, resnet_v1_block, (3, 4, 23, 3),
                                             "resnet_v1_101", "v1")
resnet_v1_152 = resnet_utils.standard_resnet(resnet_v1, resnet_v1_block, (3, 8, 36, 3),
                                             "resnet_v1_152", "v1")
resnet_v1_200 = resnet_utils.standard_resnet(resnet_v1, resnet_v1_block, (3, 24, 36, 3),
                                             "resnet_v1_200", "v1")
