"""GPU kernels against the CPU kernels, op by op and for whole training steps.

On a machine without a GPU the kernels run on simulated GPUs (kernels/gpu/backend.py:
NumPy arrays that refuse to mix with host arrays, as CuPy's do); on a machine where CuPy
finds a GPU the same tests run the real kernels (`python -m pytest
tests/kernels/test_gpu_kernels.py` there is the on-device comparison).
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.gpu import backend

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def gpus():
    n = backend.simulate_gpus(1)
    yield n
    backend.simulate_gpus(0)


def _run(device, build, feeds, config=None, steps=1):
    """(values of build()'s fetches, {op type: device} of the step) with the graph under
    tf.device(device)."""
    g = tf.Graph()
    with g.as_default(), tf.device(device):
        phs = {name: tf.placeholder(tf.as_dtype(v.dtype), v.shape, name=name)
               for name, v in feeds.items()}
        fetches = build(**phs)
        init = tf.global_variables_initializer()
    opts = tf.RunOptions(output_partition_graphs=True)
    meta = tf.RunMetadata()
    with tf.Session(graph=g, config=config) as s:
        s.run(init)
        for _ in range(steps):
            out = s.run(fetches, {phs[k]: v for k, v in feeds.items()}, options=opts,
                        run_metadata=meta)
    where = {}
    for pg in meta.partition_graphs:
        for n in pg.node:
            where.setdefault(n.op, set()).add(n.device.rsplit("/", 1)[-1])
    return out, where


def _tf32() -> bool:
    """Real GPU with TensorFloat-32 products (TensorFlow's default): ~1e-3 relative."""
    import os

    return backend.backend().cupy is not None and os.environ.get("CUPY_TF32") == "1"


def _compare(build, feeds, gpu_ops, rtol=1e-4, atol=1e-5, steps=1):
    if _tf32():
        rtol, atol = max(rtol, 3e-3), max(atol, 1e-2)
    cpu, _ = _run("/cpu:0", build, feeds, steps=steps)
    gpu, where = _run("/gpu:0", build, feeds, steps=steps)
    for op in gpu_ops:
        assert where.get(op) == {"device:GPU:0"}, f"{op} ran on {where.get(op)}"
    for c, d in zip(tf.nest.flatten(cpu) if hasattr(tf, "nest") else _flat(cpu), _flat(gpu),
                    strict=True):
        assert type(d) in (np.ndarray, np.float32, np.float64, np.int32, np.int64,
                           np.bool_), type(d)
        c = np.asarray(c, np.float64)
        tol = atol if not _tf32() else max(atol, 3e-3 * float(np.max(np.abs(c), initial=0)))
        np.testing.assert_allclose(np.asarray(d, np.float64), c, rtol=rtol, atol=tol)


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _flat(v)]
    return [x]


rng = np.random.default_rng(0)
F = np.float32


def _r(*shape):
    return rng.standard_normal(shape).astype(F)


BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "squared_difference",
          "truediv", "pow", "floordiv", "floormod"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_match_cpu(name):
    x, y = np.abs(_r(4, 5)) + 0.5, np.abs(_r(5)) + 0.5
    _compare(lambda a, b: getattr(tf.math if hasattr(tf, "math") and hasattr(
        tf.math, name) else tf, name)(a, b), {"a": x, "b": y}, [])


UNARY = ["negative", "abs", "exp", "log", "sqrt", "rsqrt", "square", "reciprocal", "tanh",
         "sigmoid", "floor", "ceil", "sin", "cos", "sign", "log1p", "expm1"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_match_cpu(name):
    x = np.abs(_r(3, 7)) + 0.1
    fn = getattr(tf, name, None) or getattr(tf.nn, name)
    _compare(lambda a: fn(a), {"a": x}, [])


@pytest.mark.parametrize("name", ["relu", "relu6", "elu", "softplus", "softmax",
                                  "log_softmax", "leaky_relu"])
def test_activations_and_their_gradients_match_cpu(name):
    x = _r(6, 10) * 4

    def build(a):
        y = getattr(tf.nn, name)(a)
        return y, tf.gradients(tf.reduce_sum(y * y), a)[0]

    _compare(build, {"a": x}, [])


@pytest.mark.parametrize("reduce,keep,axis", [("reduce_sum", False, None),
                                              ("reduce_mean", True, 1),
                                              ("reduce_max", False, 0),
                                              ("reduce_min", True, [0, 2]),
                                              ("reduce_prod", False, 2)])
def test_reductions_match_cpu(reduce, keep, axis):
    x = _r(3, 4, 5)
    _compare(lambda a: getattr(tf, reduce)(a, axis=axis, keepdims=keep), {"a": x},
             ["Sum" if reduce == "reduce_sum" else reduce.split("_")[1].capitalize()])


def test_matmul_bias_and_their_gradients_run_on_the_gpu():
    def build(a, b, c):
        y = tf.nn.bias_add(tf.matmul(a, b, transpose_b=True), c)
        z = tf.matmul(tf.reshape(y, [2, 2, 6]), tf.ones([2, 6, 3]))
        return [z] + tf.gradients(tf.reduce_sum(z * z), [a, b, c])

    _compare(build, {"a": _r(4, 5), "b": _r(6, 5), "c": _r(6)},
             ["MatMul", "BiasAdd", "BiasAddGrad", "BatchMatMulV2"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("strides,dilations,fmt", [(1, 1, "NHWC"), (2, 1, "NHWC"),
                                                   (1, 2, "NHWC"), (2, 1, "NCHW")])
def test_conv2d_and_gradients_match_cpu(padding, strides, dilations, fmt):
    x = _r(2, 9, 8, 3) if fmt == "NHWC" else _r(2, 3, 9, 8)
    w = _r(3, 3, 3, 4)

    def build(a, b):
        s = [1, strides, strides, 1] if fmt == "NHWC" else [1, 1, strides, strides]
        d = [1, dilations, dilations, 1] if fmt == "NHWC" else [1, 1, dilations, dilations]
        y = tf.nn.conv2d(a, b, s, padding, data_format=fmt, dilations=d)
        return [y] + tf.gradients(tf.reduce_sum(y * y), [a, b])

    if fmt == "NCHW":  # the CPU runs NCHW too in tensorflux
        pass
    _compare(build, {"a": x, "b": w},
             ["Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("pool", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("k,s,padding", [(2, 2, "VALID"), (3, 2, "SAME"), (3, 1, "SAME"),
                                         (3, 2, "VALID")])
def test_pooling_and_gradients_match_cpu(pool, k, s, padding):
    x = _r(2, 7, 9, 3)

    def build(a):
        y = getattr(tf.nn, pool)(a, [1, k, k, 1], [1, s, s, 1], padding)
        return [y, tf.gradients(tf.reduce_sum(y * y), a)[0]]

    name = "MaxPool" if pool == "max_pool" else "AvgPool"
    _compare(build, {"a": x}, [name, name + "Grad"])


def test_lrn_and_its_gradient_match_cpu():
    def build(a):
        y = tf.nn.local_response_normalization(a, 2, 1.0, 1e-3, 0.75)
        return [y, tf.gradients(tf.reduce_sum(y * y), a)[0]]

    _compare(build, {"a": _r(2, 4, 4, 7)}, ["LRN", "LRNGrad"])


def test_cross_entropies_match_cpu():
    labels = rng.integers(0, 10, 8).astype(np.int64)
    onehot = np.eye(10, dtype=F)[labels]

    def build(a, y, p):
        l1 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=a)
        l2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=p, logits=a)
        return [l1, l2] + tf.gradients(tf.reduce_sum(l1) + tf.reduce_sum(l2), a) + \
            [tf.nn.l2_loss(a), tf.argmax(a, 1)]

    _compare(build, {"a": _r(8, 10), "y": labels, "p": onehot},
             ["SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits"])


def test_array_ops_match_cpu():
    def build(a, i):
        parts = tf.split(a, 2, axis=1)
        return [tf.concat([parts[1], parts[0]], 0), tf.transpose(a), tf.tile(a, [2, 1]),
                a[1:, ::2], tf.pad(a, [[1, 0], [0, 2]]), tf.gather(a, i),
                tf.stack([a, a], 1), tf.unstack(a)[2], tf.slice(a, [1, 1], [2, 2]),
                tf.broadcast_to(a[:1], [3, 4]), tf.zeros_like(a), tf.ones_like(a),
                tf.fill([2, 2], 3.0), tf.where(a > 0, a, -a), tf.cast(a > 0, tf.float32),
                tf.add_n([a, a, a]), tf.unsorted_segment_sum(a, [0, 1, 0], 2),
                tf.gradients(tf.reduce_sum(a[1:, ::2] * 3.0), a)[0]]

    _compare(build, {"a": _r(3, 4), "i": np.array([2, 0, 2], np.int32)},
             ["ConcatV2", "Transpose", "Tile", "StridedSlice", "Pad", "GatherV2", "Pack",
              "UnsortedSegmentSum", "StridedSliceGrad"])


@pytest.mark.parametrize("truncate", [False, True])
def test_bfloat16_casts_on_the_gpu_round_as_the_cpu(truncate):
    # Ties to even (0x3F808000 -> 0x3F80, 0x3F818000 -> 0x3F82), NaNs stay quiet NaNs
    # (a signalling one included), infinities, signed zero, the largest finite float32.
    words = np.array([0x3F808000, 0x3F818000, 0x7FC00000, 0x7F800001, 0xFF800000,
                      0x80000000, 0x7F7FFFFF, 0x3F800001, 0xC0490FDB], np.uint32)
    x = np.concatenate([words.view(np.float32), _r(64)])

    def build(x):
        b = tf.cast(x * 1.0, tf.bfloat16) if not truncate else \
            tf.raw_ops.Cast(x=x * 1.0, DstT=tf.bfloat16, Truncate=True)
        return tf.cast(b, tf.float32)

    gpu, where = _run("/gpu:0", build, {"x": x})
    cpu, _ = _run("/cpu:0", build, {"x": x})
    # NaN payloads differ (a GPU's x * 1.0 gives the canonical NaN 0x7FFFFFFF, an x86 CPU
    # keeps the payload): NaN must stay NaN; every other value bit for bit.
    nan = np.isnan(cpu)
    np.testing.assert_array_equal(np.isnan(gpu), nan)
    np.testing.assert_array_equal(gpu[~nan].view(np.uint32), cpu[~nan].view(np.uint32))
    assert "device:GPU:0" in where["Cast"]


def test_lossy_bfloat16_transfers_between_gpu_and_cpu_partitions():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4])
        with tf.device("/gpu:0"):
            y = x * 1.001
        with tf.device("/cpu:0"):
            z = y + 0.0
    cfg = tf.ConfigProto(graph_options=tf.GraphOptions(enable_bfloat16_sendrecv=True))
    feed = np.array([1.0, 3.14159, 100.7, -2.5e-3], np.float32)
    with tf.Session(graph=g, config=cfg) as s:
        out = s.run(z, {x: feed})
    bf16 = tf.bfloat16.as_numpy_dtype
    expect = (feed.astype(bf16).astype(np.float32) * np.float32(1.001)).astype(bf16)
    np.testing.assert_array_equal(out, expect.astype(np.float32))


def test_large_joins_stay_in_device_memory_and_bad_ones_give_the_cpu_errors():
    # Past interrupt.BLOCKED_BYTES the CPU kernels write in host blocks; the GPU's build
    # their outputs with the array module.
    from tensorflux.kernels import interrupt
    rows = interrupt.BLOCKED_BYTES // (4 * 64) + 8
    a = _r(rows, 32)

    def build(a):
        return [tf.concat([a, a * 2.0], 1), tf.stack([a, a + 1.0], 0), tf.tile(a, [1, 2])]

    out, where = _run("/gpu:0", build, {"a": a})
    np.testing.assert_array_equal(out[0], np.concatenate([a, a * 2], 1))
    np.testing.assert_array_equal(out[1], np.stack([a, a + 1], 0))
    np.testing.assert_array_equal(out[2], np.tile(a, [1, 2]))
    assert {"ConcatV2", "Pack", "Tile"} <= {op for op, d in where.items() if "device:GPU:0" in d}
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None, None])
        y = tf.placeholder(tf.float32, [None, None])
        bad = tf.concat([x * 1.0, y * 1.0], 0)
    with tf.Session(graph=g) as s, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="Dimension 1 in both shapes"):
        s.run(bad, {x: np.ones((2, 3), np.float32), y: np.ones((2, 4), np.float32)})


@pytest.mark.parametrize("opt", [lambda: tf.train.GradientDescentOptimizer(0.1),
                                 lambda: tf.train.MomentumOptimizer(0.1, 0.9),
                                 lambda: tf.train.MomentumOptimizer(0.1, 0.9,
                                                                    use_nesterov=True),
                                 lambda: tf.train.AdamOptimizer(0.01),
                                 lambda: tf.train.RMSPropOptimizer(0.01),
                                 lambda: tf.train.AdagradOptimizer(0.1)])
def test_optimizers_train_a_gpu_mlp_as_the_cpu_does(opt):
    x = _r(32, 20)
    y = rng.integers(0, 5, 32).astype(np.int64)

    def build(a, b):
        tf.set_random_seed(3)
        h = tf.layers.dense(a, 16, tf.nn.relu) if hasattr(tf, "layers") else None
        if h is None:
            w1 = tf.get_variable("w1", [20, 16], initializer=tf.random_normal_initializer(
                stddev=0.3, seed=1))
            b1 = tf.get_variable("b1", [16], initializer=tf.zeros_initializer())
            h = tf.nn.relu(tf.matmul(a, w1) + b1)
        w2 = tf.get_variable("w2", [16, 5], initializer=tf.random_normal_initializer(
            stddev=0.3, seed=2))
        logits = tf.matmul(h, w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=b, logits=logits))
        with tf.control_dependencies([opt().minimize(loss)]):
            return tf.identity(loss)

    _compare(build, {"a": x, "b": y}, ["ReadVariableOp"], steps=5, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("nesterov", [False, True], ids=["plain", "nesterov"])
def test_keras_sgd_momentum_updates_on_the_gpu_as_on_the_cpu(nesterov):
    x, w0 = _r(16, 6), _r(6, 3)

    def build(a):
        w = tf.get_variable("w", initializer=w0, use_resource=True)
        loss = tf.reduce_sum(tf.square(tf.matmul(a, w)))
        opt = tf.keras.optimizers.SGD(0.05, momentum=0.9, nesterov=nesterov)
        with tf.control_dependencies(opt.get_updates(loss, [w])):
            return tf.identity(loss)

    _compare(build, {"a": x}, ["ResourceApplyKerasMomentum"], steps=4)


def test_a_gpu_step_fetches_host_arrays_and_random_ops_match_cpu():
    def build(a):
        v = tf.Variable(tf.random_normal([3, 3], seed=7, stddev=2.0), name="v")
        u = tf.random_uniform([4], seed=5)
        t = tf.truncated_normal([5], seed=6)
        return [v.read_value(), u, t, a * 2.0]

    _compare(build, {"a": _r(2)}, ["RandomUniform",
                                   "TruncatedNormal"], rtol=0, atol=0)


def test_gpu_devices_are_listed_and_named():
    with tf.Session() as s:
        names = [d.name for d in s.list_devices()]
    assert "/job:localhost/replica:0/task:0/device:GPU:0" in names


def test_unplaced_work_goes_to_the_gpu_and_ops_without_gpu_kernels_to_the_cpu():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [3])
        y = tf.nn.relu(a) * 2.0
        s = tf.cumsum(y)  # no GPU kernel: the CPU runs it
    opts, meta = tf.RunOptions(output_partition_graphs=True), tf.RunMetadata()
    with tf.Session(graph=g) as sess:
        out = sess.run(s, {a: [1.0, -1.0, 2.0]}, options=opts, run_metadata=meta)
    assert list(out) == [2.0, 2.0, 6.0]
    where = {n.op: n.device for pg in meta.partition_graphs for n in pg.node}
    assert where["Relu"].endswith("GPU:0") and where["Cumsum"].endswith("CPU:0")


def test_a_gpu_that_does_not_exist_is_an_error_listing_the_devices_or_soft_placed():
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:3"):
        y = tf.constant([1.0]) * 2.0
    with tf.Session(graph=g) as s, pytest.raises(tf.errors.InvalidArgumentError,
                                                 match="GPU:0"):
        s.run(y)
    cfg = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(graph=g, config=cfg) as s:
        assert s.run(y).tolist() == [2.0]


def test_an_op_asked_on_the_gpu_without_a_gpu_kernel_is_an_error_unless_soft():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant([1.0, 2.0])
        with tf.device("/gpu:0"):
            s = tf.cumsum(a)
    with tf.Session(graph=g) as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                    match="Cumsum"):
        sess.run(s)
    with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert list(sess.run(s)) == [1.0, 3.0]


def test_gpu_options_visible_device_list_is_checked():
    cfg = tf.ConfigProto()
    cfg.gpu_options.visible_device_list = "5"
    with pytest.raises(tf.errors.InvalidArgumentError, match="visible_device_list"):
        tf.Session(config=cfg)
    cfg.gpu_options.visible_device_list = "0"
    with tf.Session(config=cfg) as s:
        assert any(d.device_type == "GPU" for d in s.list_devices())


def test_device_count_zero_gpus_keeps_everything_on_the_cpu():
    g = tf.Graph()
    with g.as_default():
        y = tf.constant([1.0, 2.0]) * 3.0
    with tf.Session(graph=g, config=tf.ConfigProto(device_count={"GPU": 0})) as s:
        assert all(d.device_type == "CPU" for d in s.list_devices())
        assert s.run(y).tolist() == [3.0, 6.0]


def test_simulated_device_arrays_refuse_host_arrays_as_cupy_does():
    xp = backend.xp()
    if backend.backend().cupy is not None:
        pytest.skip("real GPU: CuPy itself enforces this")
    d = xp.ones(3)
    with pytest.raises(TypeError, match="host array"):
        d + np.ones(3)
    assert type(d.get()) is np.ndarray and isinstance(d * 2.0, backend.FakeDeviceArray)


def test_a_cnn_trains_on_the_gpu_as_on_the_cpu():
    x = _r(8, 12, 12, 3)
    y = rng.integers(0, 4, 8).astype(np.int64)

    def build(a, b):
        w = tf.get_variable("w", [3, 3, 3, 8], initializer=tf.random_normal_initializer(
            stddev=0.2, seed=1))
        h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(a, w, [1, 1, 1, 1], "SAME")),
                           [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.nn.lrn(h, 2, 1.0, 1e-3, 0.75)
        h = tf.nn.avg_pool(h, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        w2 = tf.get_variable("w2", [3 * 3 * 8, 4], initializer=tf.random_normal_initializer(
            stddev=0.2, seed=2))
        logits = tf.matmul(tf.reshape(h, [-1, 3 * 3 * 8]), w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=b, logits=logits))
        with tf.control_dependencies([tf.train.MomentumOptimizer(0.05, 0.9).minimize(
                loss)]):
            return tf.identity(loss)

    _compare(build, {"a": x, "b": y}, ["Conv2D", "MaxPool", "LRN", "AvgPool"], steps=4,
             rtol=1e-3, atol=1e-4)


def test_an_allocation_the_gpu_cannot_make_is_resource_exhausted_naming_the_node():
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        n = tf.placeholder(tf.int32, [1])
        big = tf.fill(tf.concat([n, n], 0), 1.0, name="huge")
    with tf.Session(graph=g) as s, pytest.raises(tf.errors.ResourceExhaustedError,
                                                 match="huge"):
        s.run(big, {n: [1 << 22]})


def test_a_traced_gpu_step_reports_the_gpu_kernels():
    g = tf.Graph()
    with g.as_default(), tf.device("/gpu:0"):
        a = tf.placeholder(tf.float32, [4, 4])
        y = tf.matmul(a, a)
    meta = tf.RunMetadata()
    with tf.Session(graph=g) as s:
        s.run(y, {a: np.eye(4, dtype=F)},
              options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    gpu = [d for d in meta.step_stats.dev_stats if d.device.endswith("GPU:0")]
    assert gpu and any(n.node_name == "MatMul" for n in gpu[0].node_stats)
    mm = next(n for n in gpu[0].node_stats if n.node_name == "MatMul")
    assert list(mm.output[0].tensor_description.shape.dim[0:1])[0].size == 4


TRAINING_PATH = ("MatMul", "BatchMatMulV2", "BiasAdd", "BiasAddGrad", "Conv2D",
                 "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad",
                 "AvgPool", "AvgPoolGrad", "LRN", "LRNGrad", "Relu", "ReluGrad", "Softmax",
                 "SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits",
                 "Sum", "Mean", "AddV2", "Mul", "ConcatV2", "Reshape", "ReadVariableOp",
                 "AssignVariableOp", "ResourceApplyAdam", "ResourceApplyMomentum",
                 "ResourceApplyGradientDescent", "RandomStandardNormal", "TruncatedNormal")


def test_gpu_kernel_coverage_is_reported_and_covers_the_training_path(capsys):
    from tensorflux.framework import op_registry
    from tensorflux.kernels import registry

    ops = sorted(op_registry.registered_ops())
    on_gpu = [op for op in ops if registry.has_kernel(op, "GPU")]
    with capsys.disabled():
        print(f"\nGPU kernels: {len(on_gpu)} of {len(ops)} op types "
              f"({100 * len(on_gpu) / len(ops):.0f}%)")
    assert all(registry.has_kernel(op, "GPU") for op in TRAINING_PATH), \
        [op for op in TRAINING_PATH if not registry.has_kernel(op, "GPU")]


@pytest.mark.parametrize("unroll", ["dynamic_rnn", "static_rnn"])
def test_an_lstm_trains_on_the_gpu_as_on_the_cpu(unroll):
    x = _r(4, 6, 5)

    def build(a):
        tf.set_random_seed(1)
        cell = tf.nn.rnn_cell.LSTMCell(8, initializer=tf.random_normal_initializer(seed=3))
        if unroll == "dynamic_rnn":
            out, _ = tf.nn.dynamic_rnn(cell, a, dtype=tf.float32)
        else:
            outs, _ = tf.nn.static_rnn(cell, tf.unstack(a, axis=1), dtype=tf.float32)
            out = tf.stack(outs, 1)
        loss = tf.reduce_sum(out * out)
        with tf.control_dependencies([tf.train.GradientDescentOptimizer(0.01).minimize(
                loss)]):
            return tf.identity(loss)

    ops = ["TensorArrayV3", "Enter", "Merge", "Switch"] if unroll == "dynamic_rnn" else \
        ["MatMul", "Sigmoid", "Tanh"]
    _compare(build, {"a": x}, ops, steps=3, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["scatter_add", "scatter_sub", "scatter_mul", "scatter_div",
                                "scatter_min", "scatter_max", "scatter_update"])
def test_resource_scatters_with_repeated_indices_match_cpu(op):
    idx = np.array([3, 0, 3, 1, 3], np.int32)

    def build(u):
        v = tf.get_variable("v", initializer=np.arange(1, 13, dtype=np.float32).reshape(4, 3)
                            + 1.0, use_resource=True)
        with tf.control_dependencies([getattr(tf, op)(v, idx, u)]):
            return v.read_value()

    _compare(build, {"u": (_r(5, 3) + 2.0).astype(np.float32)}, ["ResourceScatter" +
             op.split("_")[1].capitalize()])


@pytest.mark.parametrize("unroll", ["static", "dynamic"])
def test_an_lstm_language_model_with_adam_trains_on_the_gpu_as_on_the_cpu(unroll):
    # Adam's sparse update of the embedding (Unique, ResourceScatterAdd) beside a variable
    # the initializer pinned to the GPU.
    ids = np.random.default_rng(0).integers(0, 50, (3, 4)).astype(np.int32)

    def build(x):
        tf.set_random_seed(2)
        emb = tf.get_variable("emb", [50, 8], initializer=tf.random_normal_initializer(
            seed=4))
        inputs = tf.nn.embedding_lookup(emb, x)
        cell = tf.nn.rnn_cell.BasicLSTMCell(8)
        if unroll == "dynamic":
            out, _ = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
        else:
            outs, _ = tf.nn.static_rnn(cell, tf.unstack(inputs, axis=1), dtype=tf.float32)
            out = tf.stack(outs, 1)
        logits = tf.layers.dense(tf.reshape(out, [-1, 8]), 50, kernel_initializer=(
            tf.random_normal_initializer(seed=5)))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(x, [-1]), logits=logits))
        with tf.control_dependencies([tf.train.AdamOptimizer(0.01).minimize(loss)]):
            return tf.identity(loss)

    _compare(build, {"x": ids}, ["Unique", "ResourceScatterAdd", "ResourceGather"],
             steps=3, rtol=1e-4, atol=1e-4)


def test_a_gpu_to_cpu_transfer_is_queued_and_the_cpu_receiver_waits_for_it(monkeypatch):
    queued = []
    real = backend.to_host_async

    def spy(value):
        pending = real(value)
        queued.append(type(pending).__name__)
        return pending

    monkeypatch.setattr(backend, "to_host_async", spy)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        with tf.device("/gpu:0"):
            y = tf.matmul(x, tf.ones([3, 2]))
        with tf.device("/cpu:0"):
            z = tf.reduce_sum(y * 2.0)
    with tf.Session(graph=g) as s:
        out = s.run(z, {x: np.arange(6, dtype=np.float32).reshape(2, 3)})
    assert out == pytest.approx(2 * 2 * np.arange(6).sum())
    assert queued == ["PendingHost"]


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("training", [True, False])
def test_fused_batch_norm_and_its_gradient_match_cpu(fmt, training):
    x = _r(4, 5, 6, 3) * 3.0 + 1.0
    if fmt == "NCHW":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))

    def build(a):
        scale = tf.constant([1.5, 0.5, 2.0])
        offset = tf.constant([0.1, -0.2, 0.3])
        mean = tf.constant([0.9, 1.1, 1.0])
        var = tf.constant([8.0, 9.0, 10.0])
        y, m, v = tf.nn.fused_batch_norm(a * 1.0, scale, offset, mean=None if training
                                         else mean, variance=None if training else var,
                                         data_format=fmt, is_training=training)
        loss = tf.reduce_sum(y * y * tf.reshape(tf.range(tf.size(y), dtype=tf.float32),
                                                tf.shape(y)) / 100.0)
        return [y, m, v] + tf.gradients(loss, [a, scale, offset])

    _compare(build, {"a": x}, ["FusedBatchNormV3", "FusedBatchNormGradV3"], rtol=1e-4,
             atol=1e-4)


def test_tf_layers_batch_normalization_trains_on_the_gpu_as_on_the_cpu():
    x = _r(8, 6, 6, 4)

    def build(a):
        tf.set_random_seed(7)
        h = tf.layers.conv2d(a, 5, 3, padding="same", kernel_initializer=(
            tf.random_normal_initializer(seed=1)))
        h = tf.nn.relu(tf.layers.batch_normalization(h, training=True))
        loss = tf.reduce_mean(h * h)
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        with tf.control_dependencies([train]):
            return [tf.identity(loss)] + [v.read_value() for v in tf.global_variables()
                                          if "moving" in v.name]

    _compare(build, {"a": x}, ["FusedBatchNormV3", "FusedBatchNormGradV3"], steps=3,
             rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("padding,strides,dilations,fmt", [
    ("SAME", 1, 1, "NHWC"), ("VALID", 2, 1, "NHWC"), ("SAME", 1, 2, "NHWC"),
    ("SAME", 2, 1, "NCHW")])
def test_depthwise_conv2d_and_its_gradients_match_cpu(padding, strides, dilations, fmt):
    x = _r(2, 7, 6, 3)
    if fmt == "NCHW":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    w = _r(3, 3, 3, 2)

    def build(a):
        f = tf.constant(w)
        s = [1, 1, strides, strides] if fmt == "NCHW" else [1, strides, strides, 1]
        y = tf.nn.depthwise_conv2d(a * 1.0, f, s, padding, rate=[dilations, dilations],
                                   data_format=fmt)
        loss = tf.reduce_sum(y * y)
        return [y] + tf.gradients(loss, [a, f])

    _compare(build, {"a": x}, ["DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                               "DepthwiseConv2dNativeBackpropFilter"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("method,align,half", [
    ("bilinear", False, False), ("bilinear", True, False), ("bilinear", False, True),
    ("bicubic", False, True), ("area", False, False), ("nearest", False, True)])
def test_image_resizes_and_their_gradients_match_cpu(method, align, half):
    x = _r(2, 5, 7, 3)
    op = {"bilinear": "ResizeBilinear", "bicubic": "ResizeBicubic", "area": "ResizeArea",
          "nearest": "ResizeNearestNeighbor"}[method]

    def build(a):
        fn = getattr(tf.raw_ops, op)
        kw = {} if method == "area" else {"half_pixel_centers": half}
        y = fn(images=a * 1.0, size=[9, 4], align_corners=align, **kw)
        out = [y]
        if method in ("bilinear", "bicubic"):
            out += tf.gradients(tf.reduce_sum(y * y), [a])
        return out

    _compare(build, {"a": x}, [op] + ([op + "Grad"] if method in ("bilinear", "bicubic")
                                      else []), rtol=1e-4, atol=1e-4)
