"""Inception modules as tables: a module is a list of branches, a branch a list of layers
("conv", depth, kernel, scope, **kw) / ("max" | "avg", kernel, scope, **kw), or ("fork",
[layers], [layers]): two layers on the branch's output whose outputs are concatenated (the
1x3 / 3x1 pairs of Inception v3's last modules). Branch i is built in scope "Branch_i";
the branches' outputs are concatenated along the channels."""

from __future__ import annotations

from tensorflux.contrib.slim_nets import _common as c
from tensorflux.ops import joining_ops


def layer(net, spec, depth):
    kind = spec[0]
    if kind == "conv":
        _, d, kernel, scope, *kw = spec
        return c.conv2d(net, depth(d), kernel, scope=scope, **(kw[0] if kw else {}))
    if kind == "fork":
        return joining_ops.concat([layer(net, s, depth) for s in spec[1:]], axis=3)
    _, kernel, scope, *kw = spec
    pool = c.max_pool2d if kind == "max" else c.avg_pool2d
    return pool(net, kernel, scope=scope, **(kw[0] if kw else {}))


def module(net, scope, branches, depth=lambda d: d):
    """The module `branches` on `net`, in variable scope `scope`."""
    with c.vs.variable_scope(scope):
        outputs = []
        for i, specs in enumerate(branches):
            with c.vs.variable_scope(f"Branch_{i}"):
                branch = net
                for spec in specs:
                    branch = layer(branch, spec, depth)
                outputs.append(branch)
        return joining_ops.concat(outputs, axis=3)


def batch_norm_params(decay, epsilon, var_collection, **more):
    """The batch normalization arguments of the Inception networks' arg scopes: the moving
    statistics also go to `var_collection`."""
    from tensorflux.framework import graph as graph_lib

    params = {"decay": decay, "epsilon": epsilon,
              "updates_collections": graph_lib.GraphKeys.UPDATE_OPS,
              "variables_collections": {"beta": None, "gamma": None,
                                        "moving_mean": [var_collection],
                                        "moving_variance": [var_collection]}}
    params.update(more)
    return params


def reduced_kernel_size(tensor, kernel_size):
    """`kernel_size` capped by `tensor`'s spatial size where it is known (the final pools
    of networks run on inputs smaller than their default size)."""
    shape = tensor.get_shape().as_list()
    if shape[1] is None or shape[2] is None:
        return list(kernel_size)
    return [min(shape[1], kernel_size[0]), min(shape[2], kernel_size[1])]


def logits_layers(net, num_classes, dropout_keep_prob, spatial_squeeze, names, pool_kernel,
                  end_points=None, **pool_kw):
    """An Inception network's classifier: average pool, dropout, 1x1 logits (their spatial
    axes squeezed with `spatial_squeeze`); `names` the three layers' scopes. With
    `end_points`, the dropout's output is recorded as "PreLogits"."""
    from tensorflux.ops import array_ops

    pool, drop, conv = names
    net = c.avg_pool2d(net, pool_kernel, scope=pool, **pool_kw)
    net = c.dropout(net, keep_prob=dropout_keep_prob, scope=drop)
    if end_points is not None:
        end_points["PreLogits"] = net
    logits = c.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                      scope=conv)
    if spatial_squeeze:
        logits = array_ops.squeeze(logits, [1, 2], name="SpatialSqueeze")
    return logits
