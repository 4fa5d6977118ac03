"""Inception v2 (Ioffe & Szegedy, "Batch Normalization", 2015: the BN-Inception network),
as TF-Slim builds it (its layer names, so that TF-Slim's checkpoints restore): a
depthwise-separable 7x7 stem, 5x5 convolutions replaced by two 3x3 ones, average pools in
the modules. `depth_multiplier` scales every convolution's depth (at least
`min_depth`)."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.contrib.slim_nets import _inception_blocks as blocks
from tensorflux.contrib.slim_nets.inception_v1 import run_layers
from tensorflux.contrib.slim_nets.inception_v3 import _depth_fn
from tensorflux.ops import nn_ops

trunc_normal = c.trunc_normal
_REDUCE = {"weights_initializer": trunc_normal(0.09)}  # the 1x1 reductions' initializer
_POOL_PROJ = {"weights_initializer": trunc_normal(0.1)}
_STRIDE2 = {"stride": 2}


def _mixed(b0, b1, b2, b3, pool="avg"):
    """A module: b0 a 1x1's depth, b1 (1x1, 3x3), b2 (1x1, 3x3, 3x3), b3 the pool's
    projection."""
    first = [] if b0 is None else [[("conv", b0, [1, 1], "Conv2d_0a_1x1")]]
    pool_name = "AvgPool_0a_3x3" if pool == "avg" else "MaxPool_0a_3x3"
    return first + [
        [("conv", b1[0], [1, 1], "Conv2d_0a_1x1", _REDUCE),
         ("conv", b1[1], [3, 3], "Conv2d_0b_3x3")],
        [("conv", b2[0], [1, 1], "Conv2d_0a_1x1", _REDUCE),
         ("conv", b2[1], [3, 3], "Conv2d_0b_3x3"), ("conv", b2[2], [3, 3], "Conv2d_0c_3x3")],
        [(pool, [3, 3], pool_name), ("conv", b3, [1, 1], "Conv2d_0b_1x1", _POOL_PROJ)]]


def _reduction(b0, b1):
    """A grid-size reduction: (1x1, 3x3/2), (1x1, 3x3, 3x3/2) and a 3x3/2 max pool."""
    return [[("conv", b0[0], [1, 1], "Conv2d_0a_1x1", _REDUCE),
             ("conv", b0[1], [3, 3], "Conv2d_1a_3x3", _STRIDE2)],
            [("conv", b1[0], [1, 1], "Conv2d_0a_1x1", _REDUCE),
             ("conv", b1[1], [3, 3], "Conv2d_0b_3x3"),
             ("conv", b1[2], [3, 3], "Conv2d_1a_3x3", _STRIDE2)],
            [("max", [3, 3], "MaxPool_1a_3x3", _STRIDE2)]]


_LAYERS = [
    ("MaxPool_2a_3x3", ("max", [3, 3], "MaxPool_2a_3x3", _STRIDE2)),
    ("Conv2d_2b_1x1", ("conv", 64, [1, 1], "Conv2d_2b_1x1", _POOL_PROJ)),
    ("Conv2d_2c_3x3", ("conv", 192, [3, 3], "Conv2d_2c_3x3")),
    ("MaxPool_3a_3x3", ("max", [3, 3], "MaxPool_3a_3x3", _STRIDE2)),
    ("Mixed_3b", _mixed(64, (64, 64), (64, 96, 96), 32)),
    ("Mixed_3c", _mixed(64, (64, 96), (64, 96, 96), 64)),
    ("Mixed_4a", _reduction((128, 160), (64, 96, 96))),
    ("Mixed_4b", _mixed(224, (64, 96), (96, 128, 128), 128)),
    ("Mixed_4c", _mixed(192, (96, 128), (96, 128, 128), 128)),
    ("Mixed_4d", _mixed(160, (128, 160), (128, 160, 160), 96)),
    ("Mixed_4e", _mixed(96, (128, 192), (160, 192, 192), 96)),
    ("Mixed_5a", _reduction((128, 192), (192, 256, 256))),
    ("Mixed_5b", _mixed(352, (192, 320), (160, 224, 224), 128)),
    ("Mixed_5c", _mixed(352, (192, 320), (192, 224, 224), 128, pool="max")),
]


def inception_v2_base(inputs, final_endpoint="Mixed_5c", min_depth=16,
                      depth_multiplier=1.0, scope=None):
    """Inception v2's layers from `inputs` up to `final_endpoint` (Conv2d_1a_7x7 ...
    Mixed_5c): (net, end_points).

    Raises:
      ValueError: an unknown `final_endpoint`, or `depth_multiplier` <= 0.
    """
    depth = _depth_fn(min_depth, depth_multiplier)
    with c.vs.variable_scope(scope, "InceptionV2", [inputs]):
        with c.arg_scope([c.conv2d, c.max_pool2d, c.avg_pool2d, c.separable_conv2d],
                         stride=1, padding="SAME"):
            # The stem's depthwise multiplier keeps the separable convolution from having
            # more intermediate channels than outputs.
            net = c.separable_conv2d(inputs, depth(64), [7, 7],
                                     depth_multiplier=min(int(depth(64) / 3), 8), stride=2,
                                     weights_initializer=trunc_normal(1.0),
                                     scope="Conv2d_1a_7x7")
            end_points = {"Conv2d_1a_7x7": net}
            if final_endpoint == "Conv2d_1a_7x7":
                return net, end_points
            net, more = run_layers(net, _LAYERS, final_endpoint, depth)
            end_points.update(more)
            return net, end_points


def inception_v2(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.8,
                 min_depth=16, depth_multiplier=1.0, prediction_fn=c.softmax,
                 spatial_squeeze=True, reuse=None, scope="InceptionV2"):
    """Inception v2 on [batch, 224, 224, 3] images: (logits, end_points), end_points with
    "Logits" and "Predictions"."""
    _depth_fn(min_depth, depth_multiplier)
    with c.vs.variable_scope(scope, "InceptionV2", [inputs], reuse=reuse) as sc:
        with c.arg_scope([c.batch_norm, c.dropout], is_training=is_training):
            net, end_points = inception_v2_base(inputs, scope=sc, min_depth=min_depth,
                                                depth_multiplier=depth_multiplier)
            with c.vs.variable_scope("Logits"):
                kernel = blocks.reduced_kernel_size(net, [7, 7])
                logits = blocks.logits_layers(
                    net, num_classes, dropout_keep_prob, spatial_squeeze,
                    ("AvgPool_1a_{}x{}".format(*kernel), "Dropout_1b", "Conv2d_1c_1x1"),
                    kernel, padding="VALID")
            end_points["Logits"] = logits
            end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


inception_v2.default_image_size = 224


def inception_v2_arg_scope(weight_decay=0.00004, batch_norm_var_collection="moving_vars"):
    """Defaults of Inception v2's layers: L2 weight decay, He's initialization, ReLU and
    batch normalization (no scale)."""
    params = blocks.batch_norm_params(0.9997, 0.001, batch_norm_var_collection)
    with c.arg_scope([c.conv2d, c.layers_core.fully_connected],
                     weights_regularizer=c.l2_regularizer(weight_decay)):
        with c.arg_scope([c.conv2d], weights_initializer=c.variance_scaling_initializer(),
                         activation_fn=nn_ops.relu, normalizer_fn=c.batch_norm,
                         normalizer_params=params) as sc:
            return sc
