"""The graph optimizer: folding and CSE are visible in the step graph; results never change."""

import numpy as np
import pytest

import tensorflux as tf

L0 = tf.ConfigProto(graph_options=tf.GraphOptions(
    optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)))


def _step_nodes(sess):
    (step,) = sess._steps.values()
    return [n for p in step.partition_graphs.values() for n in p.nodes]


def _graph():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [None], name="p")
        c = tf.constant(2.0) + tf.constant(3.0)  # folds to one constant
        a = p + c
        b = p + c  # the same expression again: CSE keeps one
        out = tf.identity(a) + tf.identity(b)
    return g, p, out


def test_folding_and_cse_are_visible_and_harmless():
    g, p, out = _graph()
    x = np.arange(3, dtype=np.float32)
    with tf.Session(graph=g) as s1, tf.Session(graph=g, config=L0) as s0:
        v1, v0 = s1.run(out, {p: x}), s0.run(out, {p: x})
        np.testing.assert_array_equal(v1, v0)
        np.testing.assert_array_equal(v1, 2 * (x + 5))
        ops1 = [n.op for n in _step_nodes(s1)]
        ops0 = [n.op for n in _step_nodes(s0)]
    assert ops0.count("AddV2") == 4 and ops1.count("AddV2") == 2
    assert ops0.count("Identity") == 2 and ops1.count("Identity") == 1
    assert ops1.count("Const") == 1


@pytest.mark.parametrize("flags", [(True, False), (False, True)])
def test_individual_flags_at_l0(flags):
    fold, cse = flags
    g, p, out = _graph()
    cfg = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(
        opt_level=tf.OptimizerOptions.L0, do_constant_folding=fold,
        do_common_subexpression_elimination=cse)))
    with tf.Session(graph=g, config=cfg) as s:
        np.testing.assert_array_equal(s.run(out, {p: [1.0]}), [12.0])
        ops = [n.op for n in _step_nodes(s)]
    assert (ops.count("Const") == 1) == fold
    assert (ops.count("Identity") == 1) == cse


def test_fed_and_fetched_nodes_keep_identity():
    g = tf.Graph()
    with g.as_default():
        c1 = tf.constant(1.0) + tf.constant(1.0)
        c2 = tf.constant(1.0) + tf.constant(1.0)
    with tf.Session(graph=g) as s:
        assert s.run([c1, c2], {c1: 5.0}) == [5.0, 2.0]


def test_folding_keeps_control_dependencies_of_folded_constants():
    """`1 - beta` inside control_dependencies([assign]) folds to a constant that must still
    wait for the assign (the Adam sparse update depends on it)."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        assign = v.assign(5.0)
        with tf.control_dependencies([assign]):
            k = tf.constant(2.0) - tf.constant(1.0)  # folds; the Const waits on the assign
        later = v.assign_add(k)  # must see 5.0, not 1.0
    for cfg in (None, L0):
        with tf.Session(graph=g, config=cfg) as s:
            s.run(v.initializer)
            assert s.run(later) == 6.0


def test_unread_nodes_kept_by_control_edges_become_no_ops():
    """A stateless node whose output nothing reads (a tf.tuple gate keeps the input gradient
    of a first layer, as TF's gated gradients do; tf.gradients itself no longer gates
    gradients no x needs) is not computed, as grappler's dependency optimizer does; what
    waited on it still waits on its inputs."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4, 4, 1])
        w = tf.Variable(np.ones((2, 2, 1, 1), np.float32))
        y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
        grad_w = tf.gradients(tf.reduce_sum(y), w)[0]
        grad_x = tf.nn.conv2d_backprop_input(tf.shape(x), w, tf.ones_like(y), [1, 1, 1, 1],
                                             "SAME")
        grad_w, _ = tf.tuple([grad_w, grad_x])
        train = tf.train.GradientDescentOptimizer(0.1).apply_gradients([(grad_w, w)])
        init = tf.global_variables_initializer()
    feed = {x: np.ones((2, 4, 4, 1), np.float32)}
    results = []
    for config in (None, L0):
        with tf.Session(graph=g, config=config) as s:
            s.run(init)
            s._steps.clear()
            s.run(train, feed)
            ops = [n.op for n in _step_nodes(s)]
            results.append(s.run(w))
        assert ("Conv2DBackpropInput" in ops) == (config is L0)
        assert "Conv2DBackpropFilter" in ops
    np.testing.assert_array_equal(*results)


def test_a_whole_unread_chain_becomes_no_ops():
    """A chain nothing reads, kept only by a tf.tuple gate (log_softmax -> neg -> mul of
    stopped labels), goes whole, not just its last node; its inputs still run first."""
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.float32, [3, 5])
        v = tf.Variable(np.ones((5,), np.float32))
        keep = p * v
        chain = tf.negative(tf.nn.log_softmax(p * 2.0)) * 3.0
        out, _ = tf.tuple([keep, chain])
        fetch = tf.reduce_sum(out)
        init = tf.global_variables_initializer()
    feed = {p: np.arange(15, dtype=np.float32).reshape(3, 5)}
    for config in (None, L0):
        with tf.Session(graph=g, config=config) as s:
            s.run(init)
            s._steps.clear()
            assert s.run(fetch, feed) == pytest.approx(105.0)
            ops = [n.op for n in _step_nodes(s)]
        assert ("LogSoftmax" in ops) == (config is L0)
        assert ("Neg" in ops) == (config is L0)


# ---- Conv2D -> BiasAdd [-> Relu] fusion ------------------------------------------------------

# (name, input shape, filter shape, strides, padding, data format, relu): each conv path
# (im2col, Winograd, 1x1 product, FFT at batch 16, strided rows) with the fused bias/ReLU.
_FUSION_CASES = [
    ("im2col_5x5", (2, 9, 9, 16), (5, 5, 16, 8), 1, "SAME", "NHWC", True),
    ("winograd", (2, 12, 12, 48), (3, 3, 48, 64), 1, "SAME", "NHWC", True),
    ("pointwise_s2", (2, 8, 8, 16), (1, 1, 16, 32), 2, "VALID", "NHWC", True),
    ("fft", (16, 16, 16, 32), (5, 5, 32, 64), 1, "SAME", "NHWC", True),
    ("stride4_bias_only", (2, 23, 23, 3), (11, 11, 3, 8), 4, "VALID", "NHWC", False),
    ("nchw", (2, 4, 7, 7), (3, 3, 4, 6), 1, "SAME", "NCHW", True),
]


def _conv_layer(case, dtype=np.float32):
    name, xs, ws, s, pad, fmt, relu = case
    rng = np.random.default_rng(7)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(rng.standard_normal(xs).astype(dtype))
        w = tf.Variable(rng.standard_normal(ws).astype(dtype))
        b = tf.Variable(rng.standard_normal(ws[3]).astype(dtype))
        strides = [1, 1, s, s] if fmt == "NCHW" else [1, s, s, 1]
        conv = tf.nn.conv2d(x, w, strides, pad, data_format=fmt, name="conv")
        out = tf.nn.bias_add(conv, b, data_format=fmt, name="biased")
        if relu:
            out = tf.nn.relu(out, name="act")
        grads = tf.gradients(tf.reduce_sum(out * out), [w, b])
        init = tf.global_variables_initializer()
    return g, init, conv, out, grads


def _run_both(g, init, fetches):
    results = []
    for config in (None, L0):
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            values = sess.run(fetches)
            nodes = [n for p in list(sess._steps.values())[-1].partition_graphs.values()
                     for n in p.nodes]
            results.append((values, [n.op for n in nodes], [n.name for n in nodes]))
    return results


@pytest.mark.parametrize("case", _FUSION_CASES, ids=[c[0] for c in _FUSION_CASES])
def test_conv_bias_relu_fuse_with_the_unfused_values(case):
    """The chain becomes one _FusedConv2D under the last node's name; the layer's output
    and the gradients are the unfused (L0) ones bit for bit."""
    g, init, _, out, grads = _conv_layer(case)
    (fused, ops1, names1), (plain, ops0, _) = _run_both(g, init, [out] + grads)
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    assert ops1.count("_FusedConv2D") == 1 and "_FusedConv2D" not in ops0
    assert "BiasAdd" not in ops1 and "Relu" not in ops1
    assert out.op.name in names1


@pytest.mark.parametrize("fetch", ["conv", "biased"])
def test_fetched_intermediates_are_not_fused(fetch):
    """An intermediate output the step fetches keeps its node (and its value)."""
    g, init, conv, out, _ = _conv_layer(_FUSION_CASES[0])
    inner = conv if fetch == "conv" else g.get_tensor_by_name("biased:0")
    (fused, ops1, _), (plain, _, _) = _run_both(g, init, [inner, out])
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    if fetch == "conv":
        assert "_FusedConv2D" not in ops1
    else:  # the conv and bias fuse; the Relu reads the fetched sum
        assert ops1.count("_FusedConv2D") == 1 and "Relu" in ops1


# (name, bias first, relu, a fetched Shape of the conv, a bias of the wrong length)
_ADD_CASES = [
    ("conv_plus_b_relu", False, True, False, False),
    ("b_plus_conv", True, True, False, False),
    ("no_relu", False, False, False, False),
    ("fetched_shape_keeps_the_conv", False, True, True, False),
    ("broadcast_scalar_like_bias", False, True, False, True),
]


@pytest.mark.parametrize("case", _ADD_CASES, ids=[c[0] for c in _ADD_CASES])
def test_conv_plus_bias_vector_fuses_as_a_bias_add(case):
    """`conv2d(x, w) + b` (AddV2 with a 1-D bias of the channel count, as tf.layers-free
    models write it) on a batch of unknown size, whose gradient reads Shape(conv): one
    _FusedConv2D, the Shape reading the fused output; values and gradients are L0's bit for
    bit. A fetched Shape, or a bias that only broadcasts ([1]), keeps the nodes."""
    _, bias_first, relu, fetch_shape, short_bias = case
    rng = np.random.default_rng(11)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 9, 9, 16])
        w = tf.Variable(rng.standard_normal((5, 5, 16, 8)).astype(np.float32))
        b = tf.Variable(rng.standard_normal(1 if short_bias else 8).astype(np.float32))
        conv = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="conv")
        out = b + conv if bias_first else conv + b
        if relu:
            out = tf.nn.relu(out, name="act")
        fetches = [out] + tf.gradients(tf.reduce_sum(out * out), [w, b])
        if fetch_shape:
            fetches.append(tf.shape(conv))
        init = tf.global_variables_initializer()
    feed = {x: rng.standard_normal((3, 9, 9, 16)).astype(np.float32)}
    (fused, ops1), (plain, ops0) = _run_fused_and_plain(g, init, fetches, feed)
    for a, c in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, c)
    assert "_FusedConv2D" not in ops0
    if fetch_shape or short_bias:
        assert "_FusedConv2D" not in ops1 and "Conv2D" in ops1
    else:
        assert ops1.count("_FusedConv2D") == 1 and "Conv2D" not in ops1
        assert "Relu" not in ops1


def test_half_precision_and_gpu_sessions_are_not_fused():
    """Half precision (the unfused nodes add in the narrow type) and sessions with a GPU
    (_FusedConv2D has a CPU kernel only) keep the three nodes."""
    from tensorflux.kernels.gpu import backend

    g, init, _, out, _ = _conv_layer(_FUSION_CASES[0], np.float16)
    (_, ops1, _), _ = _run_both(g, init, out)
    assert "_FusedConv2D" not in ops1
    g, init, _, out, _ = _conv_layer(_FUSION_CASES[0])
    backend.simulate_gpus(1)
    try:
        (_, ops1, _), _ = _run_both(g, init, out)
    finally:
        backend.simulate_gpus(0)
    assert "_FusedConv2D" not in ops1 and "Relu" in ops1


# ---- MatMul -> BiasAdd [-> Relu] fusion -----------------------------------------------------

# (name, transpose_a, transpose_b, relu, bias first, BiasAdd op, dtype, static batch)
_MATMUL_CASES = [
    ("dense_relu", False, False, True, False, False, np.float32, False),
    ("bias_first", False, False, True, True, False, np.float32, False),
    ("logits_no_relu", False, False, False, False, False, np.float32, False),
    ("bias_add_op", False, False, True, False, True, np.float32, True),
    ("transposes", True, True, True, False, False, np.float32, True),
    ("float64_transpose_b", False, True, False, False, True, np.float64, False),
]


def _dense_layers(case):
    """Two fully connected layers on a fed batch; the training step's fetches (the output
    and the gradients, which read Shape(product) for an AddV2 bias) and the feed."""
    _, ta, tb, relu, bias_first, bias_add, dtype, static = case
    rng = np.random.default_rng(5)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(dtype, [9 if static else None, 13])
        h = x
        params = []
        for d, n in ((13, 17), (17, 6)):
            w0 = rng.standard_normal((n, d) if tb else (d, n)).astype(dtype)
            w = tf.Variable(w0)
            b = tf.Variable(rng.standard_normal(n).astype(dtype))
            lhs = tf.transpose(h) if ta else h
            p = tf.matmul(lhs, w, transpose_a=ta, transpose_b=tb)
            if bias_add:
                o = tf.nn.bias_add(p, b)
            else:
                o = b + p if bias_first else p + b
            h = tf.nn.relu(o) if relu else o
            params += [w, b]
        fetches = [h] + tf.gradients(tf.reduce_sum(h * h), params)
        init = tf.global_variables_initializer()
    feed = {x: rng.standard_normal((9, 13)).astype(dtype)}
    return g, init, fetches, feed


def _run_fused_and_plain(g, init, fetches, feed):
    results = []
    for config in (None, L0):
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            values = sess.run(fetches, feed)
            ops = [n.op for p in list(sess._steps.values())[-1].partition_graphs.values()
                   for n in p.nodes]
            results.append((values, ops))
    return results


@pytest.mark.parametrize("case", _MATMUL_CASES, ids=[c[0] for c in _MATMUL_CASES])
def test_matmul_bias_relu_fuse_with_the_unfused_values(case):
    """Each layer's MatMul -> bias [-> Relu] becomes one _FusedMatMul (the add's Shape of
    the product reading the fused output); outputs and gradients are L0's bit for bit."""
    g, init, fetches, feed = _dense_layers(case)
    (fused, ops1), (plain, ops0) = _run_fused_and_plain(g, init, fetches, feed)
    for a, c in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, c)
    assert "_FusedMatMul" not in ops0
    assert ops1.count("_FusedMatMul") == 2
    assert "Relu" not in ops1 and "BiasAdd" not in ops1


@pytest.mark.parametrize("what", ["product", "sum", "shape"])
def test_fetched_parts_of_a_dense_layer_are_not_fused(what):
    """A fetched product keeps the three nodes, as does a fetched Shape of the product (it
    is a reader other than the add); a fetched sum keeps its Relu apart."""
    rng = np.random.default_rng(6)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8])
        w = tf.Variable(rng.standard_normal((8, 5)).astype(np.float32))
        b = tf.Variable(rng.standard_normal(5).astype(np.float32))
        p = tf.matmul(x, w)
        o = p + b
        out = tf.nn.relu(o)
        extra = {"product": p, "sum": o, "shape": tf.shape(p)}[what]
        init = tf.global_variables_initializer()
    feed = {x: rng.standard_normal((4, 8)).astype(np.float32)}
    (fused, ops1), (plain, _) = _run_fused_and_plain(g, init, [out, extra], feed)
    for a, c in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, c)
    if what == "sum":
        assert ops1.count("_FusedMatMul") == 1 and "Relu" in ops1
    else:
        assert "_FusedMatMul" not in ops1 and "MatMul" in ops1


@pytest.mark.parametrize("what", ["broadcast_bias", "row_bias", "half", "unknown_columns"])
def test_adds_that_are_not_a_bias_are_left_alone(what):
    """A [1] bias (a broadcast), a bias of the rows' count ([m, 1]), half precision (the
    unfused nodes add in the narrow type) and a product whose column count is not static
    keep their nodes, with their values."""
    rng = np.random.default_rng(8)
    dtype = np.float16 if what == "half" else np.float32
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(dtype, [None, 6])
        w = tf.placeholder(dtype, [6, None]) if what == "unknown_columns" else \
            tf.Variable(rng.standard_normal((6, 4)).astype(dtype))
        b = tf.Variable(rng.standard_normal({"broadcast_bias": (1,), "row_bias": (3, 1)}.get(
            what, (4,))).astype(dtype))
        p = tf.matmul(x, w)
        out = tf.nn.relu(p + b)
        init = tf.global_variables_initializer()
    feed = {x: rng.standard_normal((3, 6)).astype(dtype)}
    if what == "unknown_columns":
        feed[w] = rng.standard_normal((6, 4)).astype(dtype)
    (fused, ops1), (plain, _) = _run_fused_and_plain(g, init, [out], feed)
    np.testing.assert_array_equal(fused[0], plain[0])
    assert "_FusedMatMul" not in ops1 and "MatMul" in ops1


# (name, time steps, batch, extra AddN term, fetch one partial product)
_SUMMED_CASES = [
    ("static_rnn_like", 6, 4, False, False),
    ("with_a_plain_term", 5, 3, True, False),
    ("fetched_term_stays", 4, 4, False, True),
]


def _summed_products(steps, batch, extra, fetch_one, unknown_batch=False):
    """sum_t x_t^T . d_t as tf.gradients builds it for a weight used at every step of an
    unrolled loop (MatMul(transpose_a) behind tf.tuple's Identity gates, one AddN); with
    `unknown_batch`, the inputs' first dimension is None (a placeholder's batch) and the
    weight [512, 1024] (so that 128 rows a term pass the memory test)."""
    rng = np.random.default_rng(3)
    width = 512 if unknown_batch else 256
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(rng.standard_normal((width, 2 * width)).astype(np.float32))
        xs = [tf.constant(rng.standard_normal((batch, width)).astype(np.float32))
              for _ in range(steps)]
        if unknown_batch:
            xs = [tf.placeholder_with_default(x, [None, width]) for x in xs]
        ys = [tf.matmul(x, w) for x in xs]
        loss = tf.add_n([tf.reduce_sum(tf.tanh(y)) for y in ys])
        if extra:
            loss += tf.reduce_sum(w * w)
        (grad,) = tf.gradients(loss, [w])
        fetches = [grad]
        if fetch_one:  # one partial product, fetched: it stays a term of the AddN
            fetches.append(next(op.outputs[0] for op in g.get_operations()
                                if op.type == "MatMul" and op.get_attr("transpose_a")))
        init = tf.global_variables_initializer()
    return g, init, fetches


@pytest.mark.parametrize("case", _SUMMED_CASES, ids=[c[0] for c in _SUMMED_CASES])
def test_summed_products_merge_into_one_product(case):
    """The weight gradient of an unrolled loop (an AddN of x_t^T . d_t) becomes one MatMul
    of the stacked operands: the same sums (added in another order) and no partial products
    left; a term that is not such a product stays in the AddN."""
    _, steps, batch, extra, fetch_one = case
    g, init, fetches = _summed_products(steps, batch, extra, fetch_one)
    (merged, ops1, _), (plain, ops0, _) = _run_both(g, init, fetches)
    for a, b in zip(merged, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert ops1.count("ConcatV2") == ops0.count("ConcatV2") + 2
    terms = steps - fetch_one
    assert ops1.count("MatMul") == ops0.count("MatMul") - terms + 1
    assert ops1.count("AddN") == ops0.count("AddN") - (0 if extra or fetch_one else 1)


def test_summed_products_of_an_unknown_batch_merge():
    """Terms whose rows (the batch) are unknown statically merge too (the memory test
    counts them as _MERGE_UNKNOWN_ROWS rows each), with the same sums."""
    g, init, fetches = _summed_products(6, 4, False, False, unknown_batch=True)
    (merged, ops1, _), (plain, ops0, _) = _run_both(g, init, fetches)
    np.testing.assert_allclose(merged[0], plain[0], rtol=1e-5, atol=1e-5)
    assert ops1.count("ConcatV2") == ops0.count("ConcatV2") + 2
    assert ops1.count("MatMul") == ops0.count("MatMul") - 6 + 1


def test_small_or_looped_sums_of_products_are_left_alone():
    """Products below the size bound, or in a graph with a while loop, keep their AddN."""
    g, init, fetches = _summed_products(2, 2, False, False)
    with g.as_default():
        w = tf.global_variables()[0]
        small = tf.gradients(tf.reduce_sum(tf.matmul(tf.ones((2, 4)), w[:4, :8]) ** 2) +
                             tf.reduce_sum(tf.matmul(tf.ones((3, 4)), w[:4, :8]) ** 2), w)
        loop = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
    (_, ops1, _), (_, ops0, _) = _run_both(g, init, small)
    assert ops1.count("MatMul") == ops0.count("MatMul")
    (_, ops1, _), (_, ops0, _) = _run_both(g, init, fetches + [loop])
    assert ops1.count("MatMul") == ops0.count("MatMul")


# (name, x shape, data format, is_training, dtype, shortcut: x or a batch norm of x)
_BN_RELU_CASES = [
    ("nhwc_training", (2, 6, 6, 8), "NHWC", True, np.float32, "x"),
    ("nhwc_rows_in_blocks", (8, 32, 32, 16), "NHWC", True, np.float32, "x"),
    ("nhwc_inference", (2, 5, 5, 4), "NHWC", False, np.float32, "x"),
    ("nchw_training", (2, 4, 5, 5), "NCHW", True, np.float32, "x"),
    ("projection_shortcut", (2, 6, 6, 8), "NHWC", True, np.float32, "bn"),
    ("half_training", (2, 4, 4, 8), "NHWC", True, np.float16, "x"),
]


def _bn_relu_net(case, fetch_relu=False):
    """x * w -> batch norm -> Relu (fuses) -> batch norm -> add the shortcut -> Relu (a
    residual block's tail: fuses in float32 with the shortcut as the side input), with
    the gradients of a loss."""
    _, shape, fmt, training, dtype, shortcut = case
    c = shape[1] if fmt == "NCHW" else shape[-1]
    bshape = [1, c, 1, 1] if fmt == "NCHW" else [c]
    rng = np.random.default_rng(11)
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(rng.standard_normal(shape).astype(dtype))
        w = tf.Variable(rng.standard_normal(bshape).astype(dtype))
        params = [tf.Variable(rng.standard_normal(c).astype(np.float32)) for _ in range(4)]
        stats = {} if training else dict(mean=tf.constant(rng.standard_normal(c), tf.float32),
                                         variance=tf.constant(rng.random(c) + 0.5, tf.float32))
        h, _, _ = tf.nn.fused_batch_norm(x * w, params[0], params[1], data_format=fmt,
                                         is_training=training, **stats)
        act = tf.nn.relu(h, name="act")
        h2, _, _ = tf.nn.fused_batch_norm(act, params[2], params[3], data_format=fmt,
                                          is_training=training, **stats)
        if shortcut == "bn":
            x, _, _ = tf.nn.fused_batch_norm(x, params[0], params[3], data_format=fmt,
                                             is_training=training, **stats)
        out = tf.nn.relu(h2 + x, name="out")
        target = tf.constant(rng.standard_normal(shape).astype(dtype))
        loss = tf.reduce_sum(out * target)
        grads = tf.gradients(loss, [w] + params)
        init = tf.global_variables_initializer()
    return g, init, [loss] + grads + ([act] if fetch_relu else [])


@pytest.mark.parametrize("case", _BN_RELU_CASES, ids=[c[0] for c in _BN_RELU_CASES])
def test_batch_norm_relu_fuse_with_the_unfused_values(case):
    """The first batch norm and its Relu become one _FusedBatchNormEx, its gradient and
    the ReluGrad one _FusedBatchNormGradEx; the residual tail (batch norm, AddV2, Relu)
    one _FusedBatchNormEx with a side input in float32, and its gradient with the ReluGrad
    where nothing else reads that (a constant shortcut); outputs and every gradient are
    the unfused (L0) ones bit for bit."""
    g, init, fetches = _bn_relu_net(case)
    (fused, ops1, _), (plain, ops0, _) = _run_both(g, init, fetches)
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    tail = case[4] == np.float32  # the residual tail fuses too
    assert ops1.count("_FusedBatchNormEx") == 1 + tail
    alone = tail and case[5] == "x"  # the tail's ReluGrad feeds its batch norm only
    assert ops1.count("_FusedBatchNormGradEx") == 1 + alone
    assert ops1.count("Relu") == 1 - tail and ops1.count("ReluGrad") == 1 - alone
    assert ops0.count("Relu") == 2 and "_FusedBatchNormEx" not in ops0


def test_fetched_relu_is_not_fused_into_the_batch_norm():
    g, init, fetches = _bn_relu_net(_BN_RELU_CASES[0], fetch_relu=True)
    (fused, ops1, _), (plain, _, _) = _run_both(g, init, fetches)
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    # the fetched Relu and its batch norm stay; only the residual tail fuses
    assert ops1.count("Relu") == 1 and ops1.count("_FusedBatchNormEx") == 1


# (name, the product's side of the add, Identity gates between, addend shape, fetch the
# product, fuses): x + MatMul(a, b) with a [256, 64], b [64, 512]
_MATMUL_ADD_CASES = [
    ("addend_first", "right", 0, (256, 512), False, True),
    ("product_first", "left", 0, (256, 512), False, True),
    ("through_identities", "right", 2, (256, 512), False, True),
    ("fetched_product", "right", 0, (256, 512), True, False),
    ("broadcast_addend", "right", 0, (1, 512), False, False),
    ("small_product", "right", 0, (16, 512), False, False),
    ("addend_is_a_product", "right", 0, "product", False, False),
]


def _matmul_add(case):
    _, side, gates, addend_shape, fetch_product, _ = case
    rng = np.random.default_rng(17)
    two_products = addend_shape == "product"  # unfused, they may run side by side
    addend_shape = (256, 512) if two_products else addend_shape
    rows = addend_shape[0] if addend_shape[0] > 1 else 256
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable(rng.standard_normal((rows, 64)).astype(np.float32))
        b = tf.Variable(rng.standard_normal((64, 512)).astype(np.float32))
        x = tf.Variable(rng.standard_normal(addend_shape).astype(np.float32))
        x = tf.matmul(a * 2.0, b) if two_products else x
        product = tf.matmul(a, b)
        term = product
        for _ in range(gates):
            term = tf.identity(term)
        total = x + term if side == "right" else term + x
        fetches = [total, tf.gradients(tf.reduce_sum(total * total), [a])[0]]
        init = tf.global_variables_initializer()
    return g, init, fetches + ([product] if fetch_product else [])


@pytest.mark.parametrize("case", _MATMUL_ADD_CASES, ids=[c[0] for c in _MATMUL_ADD_CASES])
def test_matmul_add_fuses_with_the_unfused_values(case):
    """x + MatMul(a, b) becomes one _FusedMatMulAdd (the product added into x's buffer):
    the unfused (L0) values bit for bit (k = 64: one BLAS block); a fetched product, an
    addend that broadcasts, a product under the size bound and a sum of two products keep
    their nodes."""
    g, init, fetches = _matmul_add(case)
    (fused, ops1, _), (plain, ops0, _) = _run_both(g, init, fetches)
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    assert "_FusedMatMulAdd" not in ops0
    assert ops1.count("_FusedMatMulAdd") == int(case[-1])
    assert ops1.count("MatMul") == ops0.count("MatMul") - int(case[-1])


def _lstm_gradients(batch, steps, units):
    """The weight and bias gradients of an LSTM by dynamic_rnn: tf.gradients sums them
    over the loop's iterations (acc + x_t^T dy_t in the gradient loop)."""
    rng = np.random.default_rng(23)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)  # the same weights in every session
        x = tf.constant(rng.standard_normal((batch, steps, 32)).astype(np.float32))
        cell = tf.nn.rnn_cell.BasicLSTMCell(units)
        outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf.reduce_sum(tf.tanh(outputs))
        grads = tf.gradients(loss, tf.trainable_variables())
        init = tf.global_variables_initializer()
    return g, init, [loss] + grads


def test_a_loop_gradient_sum_is_added_into_in_place(monkeypatch):
    """The gradient loop's sum of a weight's per-iteration products fuses, and the compiled
    loop donates the sum to it from the second iteration on (the first one's is also the
    Enter's value): the gradients are the unfused ones (L0), compiled or run by the
    dataflow executor, bit for bit (k = the batch, one BLAS block)."""
    from tensorflux.kernels import buffers
    from tensorflux.runtime.exec_options import ExecOptions

    steps, units = 5, 256
    donated = []
    real = buffers.donated_output

    def counting(inputs, positions, shape, dtype):  # the kernels' pick of a donated input
        out = real(inputs, positions, shape, dtype)
        if out is not None and out.shape == (32 + units, 4 * units) and positions == (2,):
            donated.append(out.shape)
        return out

    monkeypatch.setattr(buffers, "donated_output", counting)
    g, init, fetches = _lstm_gradients(48, steps, units)
    results = []
    for config, options in ((None, None), (L0, None),
                            (None, ExecOptions(compile_loops=False))):
        donated.clear()
        with tf.Session(graph=g, config=config, exec_options=options) as sess:
            sess.run(init)
            results.append(sess.run(fetches))
        if config is None and options is None:
            assert len(donated) == steps - 1  # the weight's sum, in place
    for fused in results[1:]:
        for a, b in zip(results[0], fused, strict=True):
            np.testing.assert_array_equal(a, b)
