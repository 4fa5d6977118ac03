"""ResNet v2 (He et al., "Identity Mappings in Deep Residual Networks", 2016): units with
pre-activation (batch normalization and ReLU before each convolution), a plain 7x7/2
root convolution, and a final batch normalization ("postnorm") before pooling, as
TF-Slim builds it. Same interface as resnet_v1."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.contrib.slim_nets import resnet_utils
from tensorflux.ops import nn_ops

resnet_arg_scope = resnet_utils.resnet_arg_scope


@c.add_arg_scope
def bottleneck(inputs, depth, depth_bottleneck, stride, rate=1, outputs_collections=None,
               scope=None):
    """A pre-activation bottleneck unit: BN + ReLU ("preact"), then 1x1, 3x3 (strided,
    dilated by `rate`), 1x1 (no normalization or activation), added to the shortcut (the
    input subsampled, or a strided 1x1 projection of the pre-activation)."""
    with c.vs.variable_scope(scope, "bottleneck_v2", [inputs]) as sc:
        depth_in = c.last_dimension(inputs.get_shape(), min_rank=4)
        preact = c.batch_norm(inputs, activation_fn=nn_ops.relu, scope="preact")
        if depth == depth_in:
            shortcut = resnet_utils.subsample(inputs, stride, "shortcut")
        else:
            shortcut = c.conv2d(preact, depth, [1, 1], stride=stride, normalizer_fn=None,
                                activation_fn=None, scope="shortcut")
        residual = c.conv2d(preact, depth_bottleneck, [1, 1], stride=1, scope="conv1")
        residual = resnet_utils.conv2d_same(residual, depth_bottleneck, 3, stride,
                                            rate=rate, scope="conv2")
        residual = c.conv2d(residual, depth, [1, 1], stride=1, normalizer_fn=None,
                            activation_fn=None, scope="conv3")
        return c.collect_named_outputs(outputs_collections, sc.name, shortcut + residual)


def resnet_v2(inputs, blocks, num_classes=None, is_training=True, global_pool=True,
              output_stride=None, include_root_block=True, reuse=None, scope=None):
    """A ResNet v2 of `blocks` on `inputs`; arguments as resnet_v1.resnet_v1.

    Raises:
      ValueError: `output_stride` is not a multiple of 4, or cannot be reached.
    """
    return resnet_utils.resnet(inputs, blocks, bottleneck, "resnet_v2", True, num_classes,
                               is_training, global_pool, output_stride, include_root_block,
                               reuse, scope)


resnet_v2.default_image_size = 224


def resnet_v2_block(scope, base_depth, num_units, stride):
    """A block of `num_units` bottlenecks of depth 4 * base_depth, the last strided."""
    return resnet_utils.bottleneck_block(bottleneck, scope, base_depth, num_units, stride)


resnet_v2_50 = resnet_utils.standard_resnet(resnet_v2, resnet_v2_block, (3, 4, 6, 3),
                                            "resnet_v2_50", "v2")
resnet_v2_101 = resnet_utils.standard_resnet(resnet_v2, resnet_v2_block, (3, 4, 23, 3),
                                             "resnet_v2_101", "v2")
resnet_v2_152 = resnet_utils.standard_resnet(resnet_v2, resnet_v2_block, (3, 8, 36, 3),
                                             "resnet_v2_152", "v2")
resnet_v2_200 = resnet_utils.standard_resnet(resnet_v2, resnet_v2_block, (3, 24, 36, 3),
                                             "resnet_v2_200", "v2")
