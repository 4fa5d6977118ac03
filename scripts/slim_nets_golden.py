"""Writes tests/contrib/data/slim_nets_golden.json: what TF1's `tf.contrib.slim.nets` build
(variables and end points, names and shapes) and compute (outputs of small configurations
from deterministic weights), read by tests/contrib/test_slim_nets_zoo.py.

Runs under TensorFlow with the `tf_slim` package (TF-Slim's nets as TF1's contrib had them):

    pip install --target /tmp/tfslim tf-slim==1.1.0   # into the oracle venv's pip
    PYTHONPATH=/tmp/tfslim:$PWD ~/.cache/tensorflux-oracle-venv/bin/python \
        scripts/slim_nets_golden.py

The same file also runs under tensorflux (`--backend tensorflux`: prints the differences
from the golden file instead of writing it)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "contrib", "data", "slim_nets_golden.json")

# (case name, module, builder, kwargs, input shape, arg scope, values?)
CASES = [
    ("resnet_v1_50", "resnet_v1", "resnet_v1_50", {"num_classes": 10, "is_training": False},
     [2, 224, 224, 3], "resnet_arg_scope", False),
    ("resnet_v1_50_os16", "resnet_v1", "resnet_v1_50",
     {"num_classes": None, "is_training": False, "global_pool": False, "output_stride": 16},
     [1, 65, 65, 3], "resnet_arg_scope", False),
    ("resnet_v2_101", "resnet_v2", "resnet_v2_101", {"num_classes": 7, "is_training": True},
     [1, 97, 97, 3], "resnet_arg_scope", False),
    ("vgg_a", "vgg", "vgg_a", {"num_classes": 10}, [1, 224, 224, 3], "vgg_arg_scope", False),
    ("vgg_16", "vgg", "vgg_16", {"num_classes": 10, "spatial_squeeze": False},
     [1, 256, 256, 3], "vgg_arg_scope", False),
    ("vgg_19", "vgg", "vgg_19", {"num_classes": 10}, [1, 224, 224, 3], "vgg_arg_scope",
     False),
    ("alexnet_v2", "alexnet", "alexnet_v2", {"num_classes": 10}, [1, 224, 224, 3],
     "alexnet_v2_arg_scope", False),
    ("overfeat", "overfeat", "overfeat", {"num_classes": 10}, [1, 231, 231, 3],
     "overfeat_arg_scope", False),
    ("inception_v1", "inception", "inception_v1", {"num_classes": 10, "is_training": False},
     [2, 224, 224, 3], "inception_v1_arg_scope", True),
    ("inception_v1_base_4e", "inception", "inception_v1_base",
     {"final_endpoint": "Mixed_4e"}, [1, 224, 224, 3], "inception_v1_arg_scope", False),
    ("inception_v2", "inception", "inception_v2", {"num_classes": 10, "is_training": False},
     [2, 224, 224, 3], "inception_v2_arg_scope", True),
    ("inception_v2_base_4c", "inception", "inception_v2_base",
     {"final_endpoint": "Mixed_4c", "depth_multiplier": 0.5}, [1, 224, 224, 3],
     "inception_v2_arg_scope", False),
    ("inception_v3", "inception", "inception_v3", {"num_classes": 10, "is_training": True},
     [1, 299, 299, 3], "inception_v3_arg_scope", False),
    ("inception_v3_small", "inception", "inception_v3",
     {"num_classes": 5, "depth_multiplier": 0.5, "spatial_squeeze": False,
      "is_training": False}, [2, 160, 160, 3], "inception_v3_arg_scope", True),
    ("inception_v3_base_6a", "inception", "inception_v3_base",
     {"final_endpoint": "Mixed_6a", "min_depth": 32, "depth_multiplier": 0.25},
     [1, 299, 299, 3], "inception_v3_arg_scope", False),
]
# Small ResNets from the same blocks (values compared): (name, module, blocks, kwargs, input)
SMALL = [
    ("small_resnet_v1", "resnet_v1", [(4, 2, 2), (8, 2, 2), (8, 1, 1)],
     {"num_classes": 5, "is_training": False}, [2, 33, 33, 3]),
    ("small_resnet_v1_os8", "resnet_v1", [(4, 2, 2), (8, 2, 2), (8, 1, 1)],
     {"num_classes": 5, "is_training": False, "global_pool": False, "output_stride": 8},
     [1, 33, 33, 3]),
    ("small_resnet_v2", "resnet_v2", [(4, 2, 2), (8, 1, 2), (8, 2, 1)],
     {"num_classes": 5, "is_training": False}, [2, 29, 29, 3]),
]


def weights(name: str, shape) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if name.endswith("moving_variance"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    # Convolution kernels scaled by their fan-in keep deep networks' activations O(1).
    scale = float(np.prod(shape[:-1])) ** -0.5 if len(shape) == 4 else 0.1
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def build(tf, slim, nets, modname, fn, kwargs, shape, scope_fn):
    mod = getattr(nets, modname)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape, name="images")
        with slim.arg_scope(getattr(mod, scope_fn)()):
            net, end_points = fn(mod)(x, **kwargs)
    return g, x, net, end_points


def describe(tf, g, net, end_points):
    with g.as_default():
        variables = [[v.op.name, v.shape.as_list()] for v in tf.global_variables()]
        update_ops = len(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
        reg = len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES))
    return {"variables": variables,
            "end_points": [[k, v.shape.as_list()] for k, v in end_points.items()],
            "net": net.shape.as_list(), "update_ops": update_ops,
            "regularization_losses": reg}


def init_stds(tf, g):
    """The standard deviation of each variable of 512 elements or more after its
    initializer ran (what the arg scopes' initializers draw)."""
    with g.as_default():
        variables = [v for v in tf.global_variables() if v.shape.num_elements() >= 512]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run(variables)
    return [[v.op.name, float(np.std(a))] for v, a in zip(variables, values, strict=True)]


def run_values(tf, g, x, net, end_points, shape):
    with g.as_default():
        assigns = [v.assign(weights(v.op.name, v.shape.as_list())) for v in
                   tf.global_variables()]
        images = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
        with tf.Session() as sess:
            sess.run(assigns)
            out = sess.run(net, {x: images})
            preds = sess.run(end_points.get("predictions", end_points.get("Predictions", net)),
                             {x: images})
    return {"init_std": init_stds(tf, g),
            "net_value": np.asarray(out, np.float64).ravel().tolist(),
            "predictions_value": np.asarray(preds, np.float64).ravel().tolist()}


def small_resnet(name, modname, blocks):
    """A builder of the ResNet `modname` of `blocks` ((base depth, units, stride) each)."""
    def fn(mod):
        block = getattr(mod, f"{modname}_block")
        specs = [block(f"block{i + 1}", d, n, s) for i, (d, n, s) in enumerate(blocks)]
        return lambda images, **kw: getattr(mod, modname)(images, specs, scope=name, **kw)
    return fn


def collect(tf, slim, nets) -> dict:
    out = {}
    for name, modname, builder, kwargs, shape, scope_fn, values in CASES:
        g, x, net, eps = build(tf, slim, nets, modname, lambda m, b=builder: getattr(m, b),
                               kwargs, shape, scope_fn)
        out[name] = describe(tf, g, net, eps)
        if values:
            out[name].update(run_values(tf, g, x, net, eps, shape))
    for name, modname, blocks, kwargs, shape in SMALL:
        g, x, net, eps = build(tf, slim, nets, modname, small_resnet(name, modname, blocks),
                               kwargs, shape, "resnet_arg_scope")
        out[name] = dict(describe(tf, g, net, eps), **run_values(tf, g, x, net, eps, shape))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("tensorflow", "tensorflux"), default="tensorflow")
    args = ap.parse_args()
    if args.backend == "tensorflow":
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
        # tf_slim's layers reach tf_keras's legacy layers under their old module path.
        legacy = importlib.import_module("tf_keras.src.legacy_tf_layers")
        sys.modules.setdefault("tf_keras.legacy_tf_layers", legacy)
        import tf_slim as slim
        from tf_slim import nets
        out = collect(tf, slim, nets)
        with open(GOLDEN, "w") as f:
            json.dump(out, f, indent=None, separators=(",", ":"))
            f.write("\n")
        print(f"wrote {GOLDEN}: {len(out)} cases")
        return
    sys.path.insert(0, os.path.join(HERE, ".."))
    import tensorflux as tf
    from tensorflux.contrib import slim
    from tensorflux.contrib.slim import nets
    got = collect(tf, slim, nets)
    with open(GOLDEN) as f:
        want = json.load(f)
    for name in want:
        for key in want[name]:
            if got[name].get(key) != want[name][key]:
                print(name, key, "differs")


if __name__ == "__main__":
    main()
