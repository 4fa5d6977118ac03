"""What the networks share: slim's layers and helpers under short names, and the end-point
collection of a network's scope."""

from __future__ import annotations

from tensorflux.contrib import layers_core, layers_slim, layers_utils
from tensorflux.contrib.layers_extra import variance_scaling_initializer  # noqa: F401
from tensorflux.layers.regularizers import l2_regularizer  # noqa: F401
from tensorflux.variables import init_ops
from tensorflux.variables import variable_scope as vs  # noqa: F401

add_arg_scope = layers_core.add_arg_scope
arg_scope = layers_core.arg_scope
avg_pool2d = layers_core.avg_pool2d
batch_norm = layers_core.batch_norm
conv2d = layers_core.conv2d
dropout = layers_core.dropout
max_pool2d = layers_core.max_pool2d
repeat = layers_core.repeat
separable_conv2d = layers_slim.separable_conv2d
softmax = layers_slim.softmax
collect_named_outputs = layers_utils.collect_named_outputs
convert_collection_to_dict = layers_utils.convert_collection_to_dict
last_dimension = layers_utils.last_dimension


def trunc_normal(stddev: float):
    """A truncated normal initializer of mean 0 and standard deviation `stddev`."""
    return init_ops.truncated_normal_initializer(0.0, stddev)


def end_points_collection(sc) -> str:
    """The collection a network's layers add their outputs to: named after the network's
    variable scope's name scope, so two copies of a network keep theirs apart."""
    return sc.original_name_scope + "_end_points"


def classifier_head(net, sc, collection, num_classes, is_training, dropout_keep_prob,
                    spatial_squeeze, global_pool, **fc8):
    """The end of VGG, AlexNet and OverFeat after fc7: the end points so far, then (with
    `global_pool`) fc7 averaged over space, and (with `num_classes`) dropout, the 1x1
    "fc8" logits (their 1x1 spatial axes squeezed with `spatial_squeeze`). Returns (net,
    end_points). `global_pool` and a `num_classes` of 0/None (features only) are
    research/slim's later arguments; TF1's contrib networks always had logits."""
    from tensorflux.ops import array_ops, reduction_ops

    end_points = convert_collection_to_dict(collection)
    if global_pool:
        net = reduction_ops.reduce_mean(net, [1, 2], keepdims=True, name="global_pool")
        end_points["global_pool"] = net
    if num_classes:
        net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout7")
        net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                     scope="fc8", **fc8)
        if spatial_squeeze:
            net = array_ops.squeeze(net, [1, 2], name="fc8/squeezed")
        end_points[sc.name + "/fc8"] = net
    return net, end_points


def fc_classifier(net, fc6_depth, fc6_kernel, sc, collection, num_classes, is_training,
                  dropout_keep_prob, spatial_squeeze, global_pool):
    """AlexNet's and OverFeat's fully connected layers as convolutions (fc6 VALID over
    `fc6_kernel`, fc7 1x1 of 4096, drawn from N(0, 0.005) with biases 0.1) and
    classifier_head's fc8 (zero biases)."""
    with arg_scope([conv2d], weights_initializer=trunc_normal(0.005),
                   biases_initializer=init_ops.constant_initializer(0.1)):
        net = conv2d(net, fc6_depth, fc6_kernel, padding="VALID", scope="fc6")
        net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout6")
        net = conv2d(net, 4096, [1, 1], scope="fc7")
        return classifier_head(net, sc, collection, num_classes, is_training,
                               dropout_keep_prob, spatial_squeeze, global_pool,
                               biases_initializer=init_ops.zeros_initializer())
