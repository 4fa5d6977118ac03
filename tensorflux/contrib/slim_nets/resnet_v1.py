"""ResNet v1 (He et al., 2015) with bottleneck units, as TF-Slim builds it: the stride of
each block is on its last unit's 3x3 convolution; the root is a 7x7/2 convolution and a
3x3/2 max pool. `resnet_v1_50/101/152/200` return (net, end_points); with `num_classes`
the net is the [batch, 1, 1, num_classes] logits (`global_pool`) and end_points has
"predictions" (their softmax)."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.contrib.slim_nets import resnet_utils
from tensorflux.ops import nn_ops, reduction_ops

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
    with c.vs.variable_scope(scope, "resnet_v1", [inputs], reuse=reuse) as sc:
        collection = c.end_points_collection(sc)
        with c.arg_scope([c.conv2d, bottleneck, resnet_utils.stack_blocks_dense],
                         outputs_collections=collection):
            with c.arg_scope([c.batch_norm], is_training=is_training):
                net = inputs
                if include_root_block:
                    if output_stride is not None:
                        if output_stride % 4 != 0:
                            raise ValueError("The output_stride needs to be a multiple "
                                             "of 4.")
                        output_stride //= 4
                    net = resnet_utils.conv2d_same(net, 64, 7, stride=2, scope="conv1")
                    net = c.max_pool2d(net, [3, 3], stride=2, scope="pool1")
                net = resnet_utils.stack_blocks_dense(net, blocks, output_stride)
                if global_pool:
                    net = reduction_ops.reduce_mean(net, [1, 2], name="pool5", keepdims=True)
                if num_classes is not None:
                    net = c.conv2d(net, num_classes, [1, 1], activation_fn=None,
                                   normalizer_fn=None, scope="logits")
                end_points = c.convert_collection_to_dict(collection)
                if num_classes is not None:
                    end_points["predictions"] = c.softmax(net, scope="predictions")
                return net, end_points


resnet_v1.default_image_size = 224


def resnet_v1_block(scope, base_depth, num_units, stride):
    """A block of `num_units` bottlenecks of depth 4 * base_depth, the last strided."""
    unit = {"depth": base_depth * 4, "depth_bottleneck": base_depth}
    return resnet_utils.Block(scope, bottleneck, [dict(unit, stride=1)] * (num_units - 1)
                              + [dict(unit, stride=stride)])


def _resnet(units, name):
    def build(inputs, num_classes=None, is_training=True, global_pool=True,
              output_stride=None, reuse=None, scope=name):
        blocks = [resnet_v1_block(f"block{i + 1}", 64 << i, n, 1 if i == 3 else 2)
                  for i, n in enumerate(units)]
        return resnet_v1(inputs, blocks, num_classes, is_training, global_pool,
                         output_stride, include_root_block=True, reuse=reuse, scope=scope)
    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"ResNet v1 with {sum(units) * 3 + 2} layers: blocks of {units} units."
    build.default_image_size = resnet_v1.default_image_size
    return build


resnet_v1_50 = _resnet((3, 4, 6, 3), "resnet_v1_50")
resnet_v1_101 = _resnet((3, 4, 23, 3), "resnet_v1_101")
resnet_v1_152 = _resnet((3, 8, 36, 3), "resnet_v1_152")
resnet_v1_200 = _resnet((3, 24, 36, 3), "resnet_v1_200")
