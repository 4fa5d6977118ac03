"""The pieces shared by `tf.contrib.slim.nets`' ResNets: a `Block` (a scope, a unit
function and one dict of arguments per unit), SAME-like strided convolutions padded
independently of the input size (`conv2d_same`), and `stack_blocks_dense`, which stacks
blocks and, given `output_stride`, trades the remaining strides for atrous rates (Chen et
al., "DeepLab", 2016) so that the output keeps 1/output_stride of the input's resolution."""

from __future__ import annotations

import collections

from tensorflux.contrib import layers_core, layers_utils
from tensorflux.contrib.layers_core import add_arg_scope, arg_scope

__all__ = ["Block", "subsample", "conv2d_same", "stack_blocks_dense", "resnet_arg_scope"]


class Block(collections.namedtuple("Block", ["scope", "unit_fn", "args"])):
    """A ResNet block: `unit_fn(net, **args[i])` for each unit, under variable scope
    `scope/unit_<i+1>`."""


def subsample(inputs, factor, scope=None):
    """Every `factor`-th row and column (a 1x1 max pool of stride `factor`)."""
    if factor == 1:
        return inputs
    return layers_core.max_pool2d(inputs, [1, 1], stride=factor, scope=scope)


def conv2d_same(inputs, num_outputs, kernel_size, stride, rate=1, scope=None):
    """A convolution of `stride` whose padding depends only on the (dilated) kernel: stride
    1 is a SAME convolution; otherwise the input is zero-padded by (k_eff - 1) // 2 before
    and the rest after each spatial dimension, then convolved VALID."""
    from tensorflux.ops import joining_ops

    if stride == 1:
        return layers_core.conv2d(inputs, num_outputs, kernel_size, stride=1, rate=rate,
                                  padding="SAME", scope=scope)
    effective = kernel_size + (kernel_size - 1) * (rate - 1)
    before = (effective - 1) // 2
    after = effective - 1 - before
    inputs = joining_ops.pad(inputs, [[0, 0], [before, after], [before, after], [0, 0]])
    return layers_core.conv2d(inputs, num_outputs, kernel_size, stride=stride, rate=rate,
                              padding="VALID", scope=scope)


@add_arg_scope
def stack_blocks_dense(net, blocks, output_stride=None, outputs_collections=None):
    """Applies `blocks` in turn. Without `output_stride` each unit keeps its stride; with
    it, once the accumulated stride reaches `output_stride` the units run at stride 1 and
    their convolutions at the accumulated rate instead. Each block's output is collected
    under the block's scope name.

    Raises:
      ValueError: `output_stride` cannot be reached exactly.
    """
    from tensorflux.variables import variable_scope

    current_stride, rate = 1, 1
    for block in blocks:
        with variable_scope.variable_scope(block.scope, "block", [net]) as sc:
            for i, unit in enumerate(block.args):
                if output_stride is not None and current_stride > output_stride:
                    raise ValueError("The target output_stride cannot be reached.")
                with variable_scope.variable_scope(f"unit_{i + 1}", values=[net]):
                    stride = unit.get("stride", 1)
                    if output_stride is not None and current_stride == output_stride:
                        net = block.unit_fn(net, rate=rate, **dict(unit, stride=1))
                        rate *= stride
                    else:
                        net = block.unit_fn(net, rate=1, **unit)
                        current_stride *= stride
            net = layers_utils.collect_named_outputs(outputs_collections, sc.name, net)
    if output_stride is not None and current_stride != output_stride:
        raise ValueError("The target output_stride cannot be reached.")
    return net


def resnet_arg_scope(weight_decay=0.0001, batch_norm_decay=0.997, batch_norm_epsilon=1e-5,
                     batch_norm_scale=True):
    """He-initialized, L2-regularized convolutions followed by batch_norm and ReLU; SAME
    max pools."""
    from tensorflux.contrib.layers_extra import variance_scaling_initializer
    from tensorflux.framework.graph import GraphKeys
    from tensorflux.layers.regularizers import l2_regularizer
    from tensorflux.ops import nn_ops

    params = {"decay": batch_norm_decay, "epsilon": batch_norm_epsilon,
              "scale": batch_norm_scale, "updates_collections": GraphKeys.UPDATE_OPS}
    with arg_scope([layers_core.conv2d], weights_regularizer=l2_regularizer(weight_decay),
                   weights_initializer=variance_scaling_initializer(),
                   activation_fn=nn_ops.relu, normalizer_fn=layers_core.batch_norm,
                   normalizer_params=params):
        with arg_scope([layers_core.batch_norm], **params):
            with arg_scope([layers_core.max_pool2d], padding="SAME") as sc:
                return sc
