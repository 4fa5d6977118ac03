"""CPU time of each heavy node of a Table 1 net's training step, run alone: every distinct
(op type, attrs, input shapes) of the step's convolutions, products, pools and their
gradients is copied into a graph of its own whose inputs are variables holding random
values, and run a few times; the figure is the median process CPU time per run (all
threads), which the load of other processes on the cores stretches far less than the wall
time (the median wall time is printed at the end of each line: what the kernel takes on
the step's critical path with the intra-op threads it splits over). Run it with either
backend and compare the lines:

    PYTHONPATH=$PWD python benchmarks/profile_isolated.py tensorflux|tensorflow NET [RUNS]

Unlike benchmarks/profile_ops.py (one traced step, elapsed times that overlap), each line
here is one kernel's own cost; "x N" is how many nodes of the step share the line.
"""

import collections
import os
import sys
import time

import numpy as np

sys.argv = [sys.argv[0], "--backend", *sys.argv[1:]]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs"))
from _bench import BACKEND  # noqa: E402

if BACKEND == "tensorflow":
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import tensorflux as tf

import _convnets as convnets  # noqa: E402

_HEAVY = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MatMul", "MaxPool",
          "MaxPoolGrad", "AvgPool", "AvgPoolGrad", "LRN", "LRNGrad", "BiasAdd", "BiasAddGrad",
          "Relu", "ReluGrad", "ConcatV2", "FusedBatchNormV3", "FusedBatchNormGradV3",
          "AddV2", "Add", "AddN"}
_SIZES = {"Conv2DBackpropInput": 0, "Conv2DBackpropFilter": 1}  # input holding a shape


def _key(op):
    shapes = tuple(tuple(t.shape.as_list()) for t in op.inputs)
    attrs = tuple(sorted((k, str(op.get_attr(k))) for k in op.node_def.attr
                         if k not in ("T", "_class", "use_cudnn_on_gpu")))
    return op.type, shapes, attrs


def _isolated(op):
    """(graph, fetch) running a copy of `op` on variables of its inputs' shapes."""
    g = tf.Graph()
    rng = np.random.default_rng(0)
    with g.as_default():
        inputs = []
        for i, t in enumerate(op.inputs):
            shape = t.shape.as_list()
            if _SIZES.get(op.type) == i:
                size = op.outputs[0].shape.as_list()
                inputs.append(tf.constant(size, dtype=t.dtype))
            elif t.dtype.is_floating:
                inputs.append(tf.Variable(rng.standard_normal(shape).astype(np.float32))
                              .value())
            else:
                value = tf.get_static_value(t)
                if value is None:
                    value = rng.integers(0, 2, shape).astype(t.dtype.as_numpy_dtype)
                inputs.append(tf.constant(value, dtype=t.dtype))
        gd = tf.GraphDef()
        node = gd.node.add()
        node.CopyFrom(op.node_def)
        node.name = "isolated"
        node.device = ""
        if "_class" in node.attr:  # colocation with nodes of the net's graph
            del node.attr["_class"]
        del node.input[:]
        names = []
        for i, t in enumerate(inputs):
            p = gd.node.add()
            p.name = f"in{i}"
            p.op = "Placeholder"
            p.attr["dtype"].type = t.dtype.as_datatype_enum
            node.input.append(p.name)
            names.append(f"in{i}:0")
        outs = tf.import_graph_def(gd, input_map=dict(zip(names, inputs, strict=True)),
                                   return_elements=["isolated:0"], name="")
        return g, outs[0]


def main():
    net = sys.argv[3]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    batch = int(os.environ.get("TFX_TABLE1_BATCH", "8"))
    g, *_ = convnets.build(tf, net, batch)
    seen, count = {}, collections.Counter()
    for op in g.get_operations():
        if op.type in _HEAVY and all(t.shape.rank is not None for t in op.inputs):
            k = _key(op)
            count[k] += 1
            seen.setdefault(k, op)
    total = 0.0
    for k, op in seen.items():
        built = _isolated(op)
        if built is None:
            continue
        sub, fetch = built
        with tf.Session(graph=sub) as sess:
            with sub.as_default():
                sess.run(tf.global_variables_initializer())
            sess.run(fetch)
            cpu, wall = [], []
            for _ in range(runs):
                c, t = time.process_time(), time.perf_counter()
                sess.run(fetch.op)
                cpu.append(time.process_time() - c)
                wall.append(time.perf_counter() - t)
        ms = 1e3 * float(np.median(cpu))
        total += ms * count[k]
        shapes = " ".join("x".join(map(str, s)) for s in k[1])
        attrs = ",".join(f"{a}={v}" for a, v in k[2] if a in ("strides", "padding",
                                                                "transpose_a", "transpose_b",
                                                                "ksize"))
        print(f"{BACKEND:10s} {k[0]:22s} x{count[k]:<2d} {ms:8.2f} ms  {shapes}  {attrs}  "
              f"wall {1e3 * float(np.median(wall)):.2f} ms", flush=True)
    print(f"{BACKEND:10s} TOTAL (count-weighted) {total:8.1f} ms", flush=True)


main()
