"""VGG (Simonyan & Zisserman, "Very Deep Convolutional Networks for Large-Scale Image
Recognition", 2014), configurations A (11 layers), D (16) and E (19), as TF-Slim builds
them: the fully connected layers are convolutions (fc6 a 7x7 VALID one), so a larger input
gives a map of class scores; `spatial_squeeze` removes the 1x1 spatial axes of the
logits."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.ops import nn_ops
from tensorflux.variables import init_ops


def vgg_arg_scope(weight_decay=0.0005):
    """Defaults of VGG's layers: ReLU, L2 weight decay, zero biases, SAME convolutions."""
    with c.arg_scope([c.conv2d, c.layers_core.fully_connected], activation_fn=nn_ops.relu,
                     weights_regularizer=c.l2_regularizer(weight_decay),
                     biases_initializer=init_ops.zeros_initializer()):
        with c.arg_scope([c.conv2d], padding="SAME") as sc:
            return sc


def _vgg(repeats, inputs, num_classes, is_training, dropout_keep_prob, spatial_squeeze,
         scope, default, fc_conv_padding, global_pool):
    with c.vs.variable_scope(scope, default, [inputs]) as sc:
        collection = c.end_points_collection(sc)
        with c.arg_scope([c.conv2d, c.max_pool2d], outputs_collections=collection):
            net = inputs
            for i, (n, depth) in enumerate(zip(repeats, (64, 128, 256, 512, 512),
                                               strict=True)):
                net = c.repeat(net, n, c.conv2d, depth, [3, 3], scope=f"conv{i + 1}")
                net = c.max_pool2d(net, [2, 2], scope=f"pool{i + 1}")
            net = c.conv2d(net, 4096, [7, 7], padding=fc_conv_padding, scope="fc6")
            net = c.dropout(net, dropout_keep_prob, is_training=is_training,
                            scope="dropout6")
            net = c.conv2d(net, 4096, [1, 1], scope="fc7")
            return c.classifier_head(net, sc, collection, num_classes, is_training,
                                     dropout_keep_prob, spatial_squeeze, global_pool)


def _network(repeats, name, layers):
    def build(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5,
              spatial_squeeze=True, scope=name, fc_conv_padding="VALID", global_pool=False):
        return _vgg(repeats, inputs, num_classes, is_training, dropout_keep_prob,
                    spatial_squeeze, scope, name, fc_conv_padding, global_pool)
    build.__name__ = build.__qualname__ = name
    build.__doc__ = (f"VGG's {layers}-layer network on [batch, 224, 224, 3] images: "
                     f"(logits, end_points). `fc_conv_padding` 'SAME' keeps fc6's output "
                     f"spatial; `global_pool` and `num_classes` as classifier_head's.")
    build.default_image_size = 224
    return build


vgg_a = _network((1, 1, 2, 2, 2), "vgg_a", 11)
vgg_16 = _network((2, 2, 3, 3, 3), "vgg_16", 16)
vgg_19 = _network((2, 2, 4, 4, 4), "vgg_19", 19)
vgg_d = vgg_16
vgg_e = vgg_19
