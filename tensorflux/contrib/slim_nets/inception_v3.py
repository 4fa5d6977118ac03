"""Inception v3 (Szegedy et al., "Rethinking the Inception Architecture for Computer
Vision", 2015), as TF-Slim builds it (its layer names, quirks included, so that TF-Slim's
checkpoints restore): 299x299 inputs, factorized 7x7 and 3x3 convolutions, an auxiliary
classifier on Mixed_6e. `depth_multiplier` scales every convolution's depth (at least
`min_depth`)."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.contrib.slim_nets import _inception_blocks as blocks
from tensorflux.contrib.slim_nets.inception_v1 import run_layers
from tensorflux.ops import array_ops, nn_ops

trunc_normal = c.trunc_normal
_STRIDE2 = {"stride": 2, "padding": "VALID"}


def _avg_branch(depth):
    return [("avg", [3, 3], "AvgPool_0a_3x3"), ("conv", depth, [1, 1], "Conv2d_0b_1x1")]


def _mixed_5(b1_names, b3):
    return [[("conv", 64, [1, 1], "Conv2d_0a_1x1")],
            [("conv", 48, [1, 1], b1_names[0]), ("conv", 64, [5, 5], b1_names[1])],
            [("conv", 64, [1, 1], "Conv2d_0a_1x1"), ("conv", 96, [3, 3], "Conv2d_0b_3x3"),
             ("conv", 96, [3, 3], "Conv2d_0c_3x3")],
            _avg_branch(b3)]


def _mixed_6(c7):
    return [[("conv", 192, [1, 1], "Conv2d_0a_1x1")],
            [("conv", c7, [1, 1], "Conv2d_0a_1x1"), ("conv", c7, [1, 7], "Conv2d_0b_1x7"),
             ("conv", 192, [7, 1], "Conv2d_0c_7x1")],
            [("conv", c7, [1, 1], "Conv2d_0a_1x1"), ("conv", c7, [7, 1], "Conv2d_0b_7x1"),
             ("conv", c7, [1, 7], "Conv2d_0c_1x7"), ("conv", c7, [7, 1], "Conv2d_0d_7x1"),
             ("conv", 192, [1, 7], "Conv2d_0e_1x7")],
            _avg_branch(192)]


def _mixed_7(b1_second):
    return [[("conv", 320, [1, 1], "Conv2d_0a_1x1")],
            [("conv", 384, [1, 1], "Conv2d_0a_1x1"),
             ("fork", ("conv", 384, [1, 3], "Conv2d_0b_1x3"),
              ("conv", 384, [3, 1], b1_second))],
            [("conv", 448, [1, 1], "Conv2d_0a_1x1"), ("conv", 384, [3, 3], "Conv2d_0b_3x3"),
             ("fork", ("conv", 384, [1, 3], "Conv2d_0c_1x3"),
              ("conv", 384, [3, 1], "Conv2d_0d_3x1"))],
            _avg_branch(192)]


# The stem runs with VALID padding by default, the modules with SAME.
_STEM = [
    ("Conv2d_1a_3x3", ("conv", 32, [3, 3], "Conv2d_1a_3x3", {"stride": 2})),
    ("Conv2d_2a_3x3", ("conv", 32, [3, 3], "Conv2d_2a_3x3")),
    ("Conv2d_2b_3x3", ("conv", 64, [3, 3], "Conv2d_2b_3x3", {"padding": "SAME"})),
    ("MaxPool_3a_3x3", ("max", [3, 3], "MaxPool_3a_3x3", {"stride": 2})),
    ("Conv2d_3b_1x1", ("conv", 80, [1, 1], "Conv2d_3b_1x1")),
    ("Conv2d_4a_3x3", ("conv", 192, [3, 3], "Conv2d_4a_3x3")),
    ("MaxPool_5a_3x3", ("max", [3, 3], "MaxPool_5a_3x3", {"stride": 2})),
]
_MODULES = [
    ("Mixed_5b", _mixed_5(("Conv2d_0a_1x1", "Conv2d_0b_5x5"), 32)),
    # TF-Slim's names for this module's second branch (its checkpoints have them).
    ("Mixed_5c", _mixed_5(("Conv2d_0b_1x1", "Conv_1_0c_5x5"), 64)),
    ("Mixed_5d", _mixed_5(("Conv2d_0a_1x1", "Conv2d_0b_5x5"), 64)),
    ("Mixed_6a", [[("conv", 384, [3, 3], "Conv2d_1a_1x1", _STRIDE2)],
                  [("conv", 64, [1, 1], "Conv2d_0a_1x1"),
                   ("conv", 96, [3, 3], "Conv2d_0b_3x3"),
                   ("conv", 96, [3, 3], "Conv2d_1a_1x1", _STRIDE2)],
                  [("max", [3, 3], "MaxPool_1a_3x3", _STRIDE2)]]),
    ("Mixed_6b", _mixed_6(128)),
    ("Mixed_6c", _mixed_6(160)),
    ("Mixed_6d", _mixed_6(160)),
    ("Mixed_6e", _mixed_6(192)),
    ("Mixed_7a", [[("conv", 192, [1, 1], "Conv2d_0a_1x1"),
                   ("conv", 320, [3, 3], "Conv2d_1a_3x3", _STRIDE2)],
                  [("conv", 192, [1, 1], "Conv2d_0a_1x1"),
                   ("conv", 192, [1, 7], "Conv2d_0b_1x7"),
                   ("conv", 192, [7, 1], "Conv2d_0c_7x1"),
                   ("conv", 192, [3, 3], "Conv2d_1a_3x3", _STRIDE2)],
                  [("max", [3, 3], "MaxPool_1a_3x3", _STRIDE2)]]),
    ("Mixed_7b", _mixed_7("Conv2d_0b_3x1")),
    ("Mixed_7c", _mixed_7("Conv2d_0c_3x1")),
]


def _depth_fn(min_depth, depth_multiplier):
    if depth_multiplier <= 0:
        raise ValueError("depth_multiplier is not greater than zero.")
    return lambda d: max(int(d * depth_multiplier), min_depth)


def inception_v3_base(inputs, final_endpoint="Mixed_7c", min_depth=16,
                      depth_multiplier=1.0, scope=None):
    """Inception v3's layers from `inputs` up to `final_endpoint` (Conv2d_1a_3x3 ...
    Mixed_7c): (net, end_points).

    Raises:
      ValueError: an unknown `final_endpoint`, or `depth_multiplier` <= 0.
    """
    depth = _depth_fn(min_depth, depth_multiplier)
    with c.vs.variable_scope(scope, "InceptionV3", [inputs]):
        with c.arg_scope([c.conv2d, c.max_pool2d, c.avg_pool2d], stride=1,
                         padding="VALID"):
            names = [e for e, _ in _STEM]
            if final_endpoint in names:
                return run_layers(inputs, _STEM, final_endpoint, depth)
            net, end_points = run_layers(inputs, _STEM, names[-1], depth)
        with c.arg_scope([c.conv2d, c.max_pool2d, c.avg_pool2d], stride=1,
                         padding="SAME"):
            net, more = run_layers(net, _MODULES, final_endpoint, depth)
        end_points.update(more)
        return net, end_points


def inception_v3(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.8,
                 min_depth=16, depth_multiplier=1.0, prediction_fn=c.softmax,
                 spatial_squeeze=True, reuse=None, create_aux_logits=True,
                 scope="InceptionV3"):
    """Inception v3 on [batch, 299, 299, 3] images: (logits, end_points), end_points with
    "AuxLogits" (with `create_aux_logits`), "PreLogits", "Logits" and "Predictions"."""
    depth = _depth_fn(min_depth, depth_multiplier)
    with c.vs.variable_scope(scope, "InceptionV3", [inputs], reuse=reuse) as sc:
        with c.arg_scope([c.batch_norm, c.dropout], is_training=is_training):
            net, end_points = inception_v3_base(inputs, scope=sc, min_depth=min_depth,
                                                depth_multiplier=depth_multiplier)
            if create_aux_logits:
                with c.arg_scope([c.conv2d, c.max_pool2d, c.avg_pool2d], stride=1,
                                 padding="SAME"):
                    with c.vs.variable_scope("AuxLogits"):
                        aux = c.avg_pool2d(end_points["Mixed_6e"], [5, 5], stride=3,
                                           padding="VALID", scope="AvgPool_1a_5x5")
                        aux = c.conv2d(aux, depth(128), [1, 1], scope="Conv2d_1b_1x1")
                        kernel = blocks.reduced_kernel_size(aux, [5, 5])
                        aux = c.conv2d(aux, depth(768), kernel,
                                       weights_initializer=trunc_normal(0.01),
                                       padding="VALID",
                                       scope="Conv2d_2a_{}x{}".format(*kernel))
                        aux = c.conv2d(aux, num_classes, [1, 1], activation_fn=None,
                                       normalizer_fn=None,
                                       weights_initializer=trunc_normal(0.001),
                                       scope="Conv2d_2b_1x1")
                        if spatial_squeeze:
                            aux = array_ops.squeeze(aux, [1, 2], name="SpatialSqueeze")
                        end_points["AuxLogits"] = aux
            with c.vs.variable_scope("Logits"):
                kernel = blocks.reduced_kernel_size(net, [8, 8])
                logits = blocks.logits_layers(
                    net, num_classes, dropout_keep_prob, spatial_squeeze,
                    ("AvgPool_1a_{}x{}".format(*kernel), "Dropout_1b", "Conv2d_1c_1x1"),
                    kernel, end_points, padding="VALID")
            end_points["Logits"] = logits
            end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


inception_v3.default_image_size = 299


def inception_v3_arg_scope(weight_decay=0.00004, batch_norm_var_collection="moving_vars",
                           batch_norm_decay=0.9997, batch_norm_epsilon=0.001,
                           updates_collections="update_ops", use_fused_batchnorm=True):
    """Defaults of Inception v3's layers: L2 weight decay, He's initialization, ReLU and
    batch normalization (no scale)."""
    params = blocks.batch_norm_params(batch_norm_decay, batch_norm_epsilon,
                                      batch_norm_var_collection,
                                      updates_collections=updates_collections,
                                      fused=use_fused_batchnorm)
    with c.arg_scope([c.conv2d, c.layers_core.fully_connected],
                     weights_regularizer=c.l2_regularizer(weight_decay)):
        with c.arg_scope([c.conv2d], weights_initializer=c.variance_scaling_initializer(),
                         activation_fn=nn_ops.relu, normalizer_fn=c.batch_norm,
                         normalizer_params=params) as sc:
            return sc
