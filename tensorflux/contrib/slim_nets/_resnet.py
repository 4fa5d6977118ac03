"""What ResNet v1 and v2 share: the network around the blocks (root block, blocks,
global pool, logits, predictions) and the depth tables of the 50- to 200-layer models."""

from __future__ import annotations

from tensorflux.contrib import layers_core, layers_slim, layers_utils
from tensorflux.contrib.layers_core import arg_scope
from tensorflux.contrib.slim_nets import resnet_utils

# Units per block of each depth; each block's base depth is 64, 128, 256, 512.
UNITS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3), 200: (3, 24, 36, 3)}


def block(unit_fn, scope, base_depth, num_units, stride):
    """`num_units` bottleneck units of depth 4 * base_depth; the last one strided."""
    unit = {"depth": base_depth * 4, "depth_bottleneck": base_depth, "stride": 1}
    return resnet_utils.Block(scope, unit_fn,
                              [unit] * (num_units - 1) + [dict(unit, stride=stride)])


def blocks_for(depth, block_fn):
    strides = (2, 2, 2, 1)
    return [block_fn(f"block{i + 1}", base_depth=64 * 2 ** i, num_units=n, stride=s)
            for i, (n, s) in enumerate(zip(UNITS[depth], strides, strict=True))]


def network(inputs, blocks, unit_fn, default_scope, preactivation, num_classes,
            is_training, global_pool, output_stride, include_root_block, reuse, scope,
            spatial_squeeze=False):
    """The ResNet around `blocks`. With `preactivation` (v2), the root convolution has
    neither normalizer nor activation and a final batch_norm+ReLU ("postnorm") follows
    the blocks.

    Raises:
      ValueError: output_stride not a multiple of 4 when there is a root block.
    """
    from tensorflux.ops import array_ops, nn_ops, reduction_ops
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope(scope, default_scope, [inputs], reuse=reuse) as sc:
        collection = sc.original_name_scope + "_end_points"
        with arg_scope([layers_core.conv2d, unit_fn, resnet_utils.stack_blocks_dense],
                       outputs_collections=collection), \
                arg_scope([layers_core.batch_norm], is_training=is_training):
            net = inputs
            if include_root_block:
                if output_stride is not None:
                    if output_stride % 4 != 0:
                        raise ValueError("The output_stride needs to be a multiple of 4.")
                    output_stride //= 4
                root = {"activation_fn": None, "normalizer_fn": None} if preactivation \
                    else {}
                with arg_scope([layers_core.conv2d], **root):
                    net = resnet_utils.conv2d_same(net, 64, 7, stride=2, scope="conv1")
                net = layers_core.max_pool2d(net, [3, 3], stride=2, scope="pool1")
            net = resnet_utils.stack_blocks_dense(net, blocks, output_stride)
            if preactivation:
                net = layers_core.batch_norm(net, activation_fn=nn_ops.relu,
                                             scope="postnorm")
            if global_pool:
                net = reduction_ops.reduce_mean(net, [1, 2], name="pool5", keepdims=True)
            if num_classes:
                net = layers_core.conv2d(net, num_classes, [1, 1], activation_fn=None,
                                         normalizer_fn=None, scope="logits")
                if spatial_squeeze:
                    net = array_ops.squeeze(net, [1, 2], name="SpatialSqueeze")
            end_points = layers_utils.convert_collection_to_dict(collection)
            if num_classes:
                end_points["predictions"] = layers_slim.softmax(net, scope="predictions")
            return net, end_points
