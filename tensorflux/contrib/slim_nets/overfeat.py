"""OverFeat's fast model (Sermanet et al., "OverFeat: Integrated Recognition, Localization
and Detection using Convolutional Networks", 2013), as TF-Slim builds it: the fully
connected layers are convolutions (fc6 a 6x6 VALID one on the 6x6 map of a 231x231
input)."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.ops import nn_ops
from tensorflux.variables import init_ops

trunc_normal = c.trunc_normal


def overfeat_arg_scope(weight_decay=0.0005):
    """Defaults of OverFeat's layers: ReLU, L2 weight decay, zero biases, SAME
    convolutions and VALID max pools."""
    with c.arg_scope([c.conv2d, c.layers_core.fully_connected], activation_fn=nn_ops.relu,
                     weights_regularizer=c.l2_regularizer(weight_decay),
                     biases_initializer=init_ops.zeros_initializer()):
        with c.arg_scope([c.conv2d], padding="SAME"):
            with c.arg_scope([c.max_pool2d], padding="VALID") as sc:
                return sc


def overfeat(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5,
             spatial_squeeze=True, scope="overfeat", global_pool=False):
    """OverFeat on [batch, 231, 231, 3] images: (logits, end_points);
    `global_pool` and `num_classes` as _common.classifier_head's."""
    with c.vs.variable_scope(scope, "overfeat", [inputs]) as sc:
        collection = c.end_points_collection(sc)
        with c.arg_scope([c.conv2d, c.layers_core.fully_connected, c.max_pool2d],
                         outputs_collections=collection):
            net = c.conv2d(inputs, 64, [11, 11], 4, padding="VALID", scope="conv1")
            net = c.max_pool2d(net, [2, 2], scope="pool1")
            net = c.conv2d(net, 256, [5, 5], padding="VALID", scope="conv2")
            net = c.max_pool2d(net, [2, 2], scope="pool2")
            net = c.conv2d(net, 512, [3, 3], scope="conv3")
            net = c.conv2d(net, 1024, [3, 3], scope="conv4")
            net = c.conv2d(net, 1024, [3, 3], scope="conv5")
            net = c.max_pool2d(net, [2, 2], scope="pool5")
            return c.fc_classifier(net, 3072, [6, 6], sc, collection, num_classes,
                                   is_training, dropout_keep_prob, spatial_squeeze,
                                   global_pool)


overfeat.default_image_size = 231
