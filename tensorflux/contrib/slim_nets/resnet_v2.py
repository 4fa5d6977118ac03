"""ResNet v2 (`tf.contrib.slim.nets.resnet_v2`): He et al., "Identity Mappings in Deep
Residual Networks" (2016): pre-activation bottleneck units (batch_norm and ReLU before the
convolutions, "preact"; nothing after the addition), a root convolution without
normalizer, and a final batch_norm + ReLU ("postnorm"), with TF-Slim's names."""

from __future__ import annotations

from tensorflux.contrib import layers_core, layers_utils
from tensorflux.contrib.layers_core import add_arg_scope
from tensorflux.contrib.slim_nets import _resnet, resnet_utils

__all__ = ["bottleneck", "resnet_v2", "resnet_v2_block", "resnet_v2_50", "resnet_v2_101",
           "resnet_v2_152", "resnet_v2_200", "resnet_arg_scope"]

resnet_arg_scope = resnet_utils.resnet_arg_scope


@add_arg_scope
def bottleneck(inputs, depth, depth_bottleneck, stride, rate=1, outputs_collections=None,
               scope=None):
    """shortcut + conv3(conv2(conv1(preact))), preact = relu(batch_norm(inputs)); the
    shortcut is the input subsampled by `stride` when its depth is `depth`, else a strided
    1x1 projection of preact."""
    from tensorflux.ops import nn_ops
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope(scope, "bottleneck_v2", [inputs]) as sc:
        depth_in = layers_utils.last_dimension(inputs.shape, min_rank=4)
        preact = layers_core.batch_norm(inputs, activation_fn=nn_ops.relu, scope="preact")
        if depth == depth_in:
            shortcut = resnet_utils.subsample(inputs, stride, "shortcut")
        else:
            shortcut = layers_core.conv2d(preact, depth, [1, 1], stride=stride,
                                          normalizer_fn=None, activation_fn=None,
                                          scope="shortcut")
        residual = layers_core.conv2d(preact, depth_bottleneck, [1, 1], stride=1,
                                      scope="conv1")
        residual = resnet_utils.conv2d_same(residual, depth_bottleneck, 3, stride,
                                            rate=rate, scope="conv2")
        residual = layers_core.conv2d(residual, depth, [1, 1], stride=1, normalizer_fn=None,
                                      activation_fn=None, scope="conv3")
        output = shortcut + residual
        return layers_utils.collect_named_outputs(outputs_collections, sc.name, output)


def resnet_v2(inputs, blocks, num_classes=None, is_training=True, global_pool=True,
              output_stride=None, include_root_block=True, reuse=None, scope=None,
              spatial_squeeze=False):
    """ResNet v2 over NHWC `inputs` made of `blocks` (resnet_utils.Block).

    Returns:
      (net, end_points) as resnet_v1.resnet_v1's.

    Raises:
      ValueError: an unreachable output_stride.
    """
    return _resnet.network(inputs, blocks, bottleneck, "resnet_v2", True, num_classes,
                           is_training, global_pool, output_stride, include_root_block,
                           reuse, scope, spatial_squeeze)


resnet_v2.default_image_size = 224


def resnet_v2_block(scope, base_depth, num_units, stride):
    """A v2 block of `num_units` bottlenecks of depth 4 * base_depth, the last strided."""
    return _resnet.block(bottleneck, scope, base_depth, num_units, stride)


def _sized(depth):
    def network(inputs, num_classes=None, is_training=True, global_pool=True,
                output_stride=None, reuse=None, scope=f"resnet_v2_{depth}",
                spatial_squeeze=False):
        return resnet_v2(inputs, _resnet.blocks_for(depth, resnet_v2_block), num_classes,
                         is_training, global_pool, output_stride, True, reuse, scope,
                         spatial_squeeze)
    network.__name__ = network.__qualname__ = f"resnet_v2_{depth}"
    network.__doc__ = f"ResNet-{depth} v2 (blocks of {_resnet.UNITS[depth]} units)."
    network.default_image_size = 224
    return network


resnet_v2_50 = _sized(50)
resnet_v2_101 = _sized(101)
resnet_v2_152 = _sized(152)
resnet_v2_200 = _sized(200)
