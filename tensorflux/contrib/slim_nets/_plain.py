"""The plain convolutional classifiers of `tf.contrib.slim.nets` (AlexNet v2, OverFeat, VGG)
built from one description: a list of feature layers, then the classifier written as
convolutions ("fc6" a VALID convolution over the last feature map, "fc7" and "fc8" 1x1), so
the network also runs on larger images and gives a map of logits.

The variables and end points carry TF-Slim's names (`vgg_16/conv1/conv1_1/weights`,
`alexnet_v2/fc8/biases`, end point `vgg_16/pool5`, ...), so TF-Slim's released checkpoints
restore into these graphs.
"""

from __future__ import annotations

from tensorflux.contrib import layers_core, layers_utils
from tensorflux.contrib.layers_core import arg_scope


def conv(depth, kernel, stride=1, padding=None, name=None):
    """A feature convolution (padding None: the arg_scope's)."""
    return ("conv", depth, kernel, stride, padding, name)


def convs(repeats, depth, name):
    """`repeats` 3x3 convolutions, scopes `name/name_1`, `name/name_2`, ... (VGG)."""
    return ("repeat", repeats, depth, name)


def pool(kernel, stride=2, name=None):
    return ("pool", kernel, stride, name)


def _features(net, layers):
    for layer in layers:
        kind = layer[0]
        if kind == "conv":
            _, depth, kernel, stride, padding, name = layer
            extra = {} if padding is None else {"padding": padding}
            net = layers_core.conv2d(net, depth, kernel, stride, scope=name, **extra)
        elif kind == "repeat":
            _, repeats, depth, name = layer
            net = layers_core.repeat(net, repeats, layers_core.conv2d, depth, [3, 3],
                                     scope=name)
        else:
            _, kernel, stride, name = layer
            net = layers_core.max_pool2d(net, kernel, stride, scope=name)
    return net


def build(inputs, spec, num_classes, is_training, dropout_keep_prob, spatial_squeeze,
          scope, fc_conv_padding="VALID", global_pool=False):
    """Builds the network `spec` describes (see alexnet.py, overfeat.py, vgg.py).

    `spec` keys: "default" (the variable scope's default name), "features" (layers made by
    conv/convs/pool), "fc6" and "fc7" ((depth, kernel) each), "collected" (the layer
    functions whose outputs are end points), "collection_by_scope_name" (the end-point
    collection named after the scope's name rather than its name scope), "head_scope"
    (extra arg_scope defaults for fc6-fc8, or None) and "fc8_biases" (fc8's biases
    initializer, or None to keep the arg_scope's).

    Returns:
      (logits, end_points): logits [batch, num_classes] with `spatial_squeeze`, else
      [batch, h, w, num_classes]; end_points an ordered dict of every collected output.
    """
    from tensorflux.ops import array_ops, reduction_ops
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope(scope, spec["default"], [inputs]) as sc:
        collection = (sc.name if spec.get("collection_by_scope_name")
                      else sc.original_name_scope) + "_end_points"
        with arg_scope(spec["collected"], outputs_collections=[collection]):
            net = _features(inputs, spec["features"])
            with arg_scope([layers_core.conv2d], **(spec.get("head_scope") or {})):
                depth, kernel = spec["fc6"]
                net = layers_core.conv2d(net, depth, kernel, padding=fc_conv_padding,
                                         scope="fc6")
                net = layers_core.dropout(net, dropout_keep_prob, is_training=is_training,
                                          scope="dropout6")
                depth, kernel = spec["fc7"]
                net = layers_core.conv2d(net, depth, kernel, scope="fc7")
                end_points = layers_utils.convert_collection_to_dict(collection)
                if global_pool:
                    net = reduction_ops.reduce_mean(net, [1, 2], keepdims=True,
                                                    name="global_pool")
                    end_points["global_pool"] = net
                if not num_classes:
                    return net, end_points
                net = layers_core.dropout(net, dropout_keep_prob, is_training=is_training,
                                          scope="dropout7")
                fc8 = {} if spec.get("fc8_biases") is None else \
                    {"biases_initializer": spec["fc8_biases"]}
                net = layers_core.conv2d(net, num_classes, [1, 1], activation_fn=None,
                                         normalizer_fn=None, scope="fc8", **fc8)
        end_points = layers_utils.convert_collection_to_dict(collection)
        if spatial_squeeze:
            net = array_ops.squeeze(net, [1, 2], name="fc8/squeezed")
            end_points[sc.name + "/fc8"] = net
        return net, end_points


def classifier_arg_scope(weight_decay, biases_initializer, pool_padding=None):
    """The arg_scope of these networks: ReLU, L2-regularized weights, SAME convolutions
    (and `pool_padding` for max_pool2d when given)."""
    import contextlib

    from tensorflux.layers.regularizers import l2_regularizer
    from tensorflux.ops import nn_ops

    with contextlib.ExitStack() as stack:
        stack.enter_context(arg_scope(
            [layers_core.conv2d, layers_core.fully_connected], activation_fn=nn_ops.relu,
            weights_regularizer=l2_regularizer(weight_decay),
            biases_initializer=biases_initializer))
        sc = stack.enter_context(arg_scope([layers_core.conv2d], padding="SAME"))
        if pool_padding is not None:
            sc = stack.enter_context(arg_scope([layers_core.max_pool2d],
                                               padding=pool_padding))
        return sc
