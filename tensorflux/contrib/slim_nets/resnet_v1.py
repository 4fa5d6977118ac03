"""ResNet v1 (`tf.contrib.slim.nets.resnet_v1`): He et al., "Deep Residual Learning for
Image Recognition" (2015), bottleneck units (1x1, 3x3, 1x1 convolutions, each with
batch_norm, added to the shortcut, then ReLU), with TF-Slim's names and its placement of
each block's stride on the block's last unit. Fully convolutional: `global_pool=False`
and `output_stride` (atrous) give dense feature maps."""

from __future__ import annotations

from tensorflux.contrib import layers_core, layers_utils
from tensorflux.contrib.layers_core import add_arg_scope
from tensorflux.contrib.slim_nets import _resnet, resnet_utils

__all__ = ["bottleneck", "resnet_v1", "resnet_v1_block", "resnet_v1_50", "resnet_v1_101",
           "resnet_v1_152", "resnet_v1_200", "resnet_arg_scope"]

resnet_arg_scope = resnet_utils.resnet_arg_scope


@add_arg_scope
def bottleneck(inputs, depth, depth_bottleneck, stride, rate=1, outputs_collections=None,
               scope=None):
    """relu(shortcut + conv3(conv2(conv1(inputs)))); the shortcut is the input subsampled
    by `stride` when its depth is `depth`, else a strided 1x1 projection."""
    from tensorflux.ops import nn_ops
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope(scope, "bottleneck_v1", [inputs]) as sc:
        depth_in = layers_utils.last_dimension(inputs.shape, min_rank=4)
        if depth == depth_in:
            shortcut = resnet_utils.subsample(inputs, stride, "shortcut")
        else:
            shortcut = layers_core.conv2d(inputs, depth, [1, 1], stride=stride,
                                          activation_fn=None, scope="shortcut")
        residual = layers_core.conv2d(inputs, depth_bottleneck, [1, 1], stride=1,
                                      scope="conv1")
        residual = resnet_utils.conv2d_same(residual, depth_bottleneck, 3, stride,
                                            rate=rate, scope="conv2")
        residual = layers_core.conv2d(residual, depth, [1, 1], stride=1, activation_fn=None,
                                      scope="conv3")
        output = nn_ops.relu(shortcut + residual)
        return layers_utils.collect_named_outputs(outputs_collections, sc.name, output)


def resnet_v1(inputs, blocks, num_classes=None, is_training=True, global_pool=True,
              output_stride=None, include_root_block=True, reuse=None, scope=None,
              spatial_squeeze=False):
    """ResNet v1 over NHWC `inputs` made of `blocks` (resnet_utils.Block).

    Returns:
      (net, end_points): logits [batch, 1, 1, num_classes] (squeezed with
      `spatial_squeeze`), or the features without num_classes; end_points has every unit,
      block and convolution output and, with num_classes, "predictions".

    Raises:
      ValueError: an unreachable output_stride.
    """
    return _resnet.network(inputs, blocks, bottleneck, "resnet_v1", False, num_classes,
                           is_training, global_pool, output_stride, include_root_block,
                           reuse, scope, spatial_squeeze)


resnet_v1.default_image_size = 224


def resnet_v1_block(scope, base_depth, num_units, stride):
    """A v1 block of `num_units` bottlenecks of depth 4 * base_depth, the last strided."""
    return _resnet.block(bottleneck, scope, base_depth, num_units, stride)


def _sized(depth):
    def network(inputs, num_classes=None, is_training=True, global_pool=True,
                output_stride=None, reuse=None, scope=f"resnet_v1_{depth}",
                spatial_squeeze=False):
        return resnet_v1(inputs, _resnet.blocks_for(depth, resnet_v1_block), num_classes,
                         is_training, global_pool, output_stride, True, reuse, scope,
                         spatial_squeeze)
    network.__name__ = network.__qualname__ = f"resnet_v1_{depth}"
    network.__doc__ = f"ResNet-{depth} v1 (blocks of {_resnet.UNITS[depth]} units)."
    network.default_image_size = 224
    return network


resnet_v1_50 = _sized(50)
resnet_v1_101 = _sized(101)
resnet_v1_152 = _sized(152)
resnet_v1_200 = _sized(200)
