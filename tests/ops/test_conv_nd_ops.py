"""Conv (`tf.conv`, tensorflux/ops/conv_nd_ops.py) and Conv2DBackpropInputV2 /
Conv2DBackpropFilterV2 (`tf.conv2d_backprop_input_v2` / `_filter_v2`, ops/conv_ops.py):
Conv against a NumPy convolution for 2-D and 3-D filters, batch_dims 0-3, both channel
layouts, groups, strides, dilations and paddings; its values where TensorFlow's CPU kernel
runs, its static shapes and shape errors, and every op definition against the oracle; the
V2 backprops equal to the V1 ops (and to TensorFlow's V1 ops: TF has no CPU kernel for V2)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tests import oracle

pytestmark = pytest.mark.usefixtures("fresh_graph")


def run(fetch):
    with tf.Session() as sess:
        return sess.run(fetch)


def numpy_conv(x, w, strides, dilations, padding, pairs=None, groups=1):
    """A direct convolution of x [N, *spatial, C] with w [*taps, C / groups, F]."""
    taps = w.shape[:-2]
    pads, outs = [], []
    for i, (size, k) in enumerate(zip(x.shape[1:-1], taps, strict=True)):
        s, d = strides[i], dilations[i]
        eff = (k - 1) * d + 1
        if padding == "SAME":
            out = -(-size // s)
            need = max(0, (out - 1) * s + eff - size)
            pads.append((need // 2, need - need // 2))
        else:
            pads.append(pairs[i] if padding == "EXPLICIT" else (0, 0))
            out = (size + sum(pads[-1]) - eff) // s + 1
        outs.append(out)
    xp = np.pad(x.astype(np.float64), [(0, 0)] + pads + [(0, 0)])
    cg, fg = w.shape[-2], w.shape[-1] // groups
    y = np.zeros((x.shape[0], *outs, w.shape[-1]))
    for tap in itertools.product(*[range(k) for k in taps]):
        window = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                       for t, d, s, o in zip(tap, dilations, strides, outs, strict=True))
        patch = xp[(slice(None),) + window]
        for g in range(groups):
            y[..., g * fg:(g + 1) * fg] += patch[..., g * cg:(g + 1) * cg] @ \
                w[tap][:, g * fg:(g + 1) * fg].astype(np.float64)
    return y


# (input shape, filter shape, batch_dims, strides (spatial), dilations, padding, pairs, groups)
CASES = [
    ((2, 7, 6, 4), (3, 2, 4, 5), 1, (1, 1), (1, 1), "VALID", None, 1),
    ((2, 7, 6, 4), (3, 2, 4, 5), 1, (2, 1), (1, 2), "SAME", None, 1),
    ((2, 7, 6, 4), (3, 3, 4, 5), 1, (1, 2), (2, 1), "EXPLICIT", [(1, 2), (0, 1)], 1),
    ((2, 7, 6, 4), (3, 2, 2, 6), 1, (1, 1), (1, 1), "VALID", None, 2),
    ((2, 3, 7, 6, 4), (3, 2, 4, 5), 2, (1, 1), (1, 2), "SAME", None, 1),
    ((2, 2, 1, 7, 6, 3), (2, 2, 3, 2), 3, (2, 2), (1, 1), "VALID", None, 1),
    ((7, 6, 4), (3, 2, 4, 5), 0, (1, 1), (1, 1), "SAME", None, 1),
    ((2, 5, 6, 4, 4), (2, 2, 3, 4, 5), 1, (1, 2, 1), (1, 1, 1), "SAME", None, 1),
    ((2, 5, 6, 4, 4), (2, 2, 3, 4, 5), 1, (2, 1, 1), (1, 2, 1), "VALID", None, 1),
    ((2, 5, 6, 4, 4), (2, 2, 2, 2, 6), 1, (1, 1, 1), (1, 1, 1), "VALID", None, 2),
    ((3, 2, 5, 6, 4, 4), (2, 2, 3, 4, 5), 2, (1, 1, 1), (1, 1, 1), "VALID", None, 1),
]


def _attrs(strides, dilations, padding, pairs, first):
    """Conv's attributes: the spatial values with 1s (0s) for the batch and channel axes."""
    def full(spatial, one):
        return [one, one] + list(spatial) if first else [one] + list(spatial) + [one]
    explicit = [] if pairs is None else [v for p in full(pairs, (0, 0)) for v in p]
    return dict(strides=full(strides, 1), dilations=full(dilations, 1), padding=padding,
                explicit_paddings=explicit)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}b{c[2]}{c[5]}g{c[7]}")
@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_conv_against_numpy(case, first, dtype):
    xs, ws, batch_dims, strides, dilations, padding, pairs, groups = case
    rng = np.random.default_rng(len(xs) * 7 + batch_dims)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    lead = x.shape[:batch_dims]
    flat = x.reshape((-1,) + x.shape[batch_dims:])
    want = numpy_conv(flat, w, strides, dilations, padding, pairs, groups)
    want = want.reshape(lead + want.shape[1:])
    if first:  # channels just after the batch dimensions
        x = np.moveaxis(x, -1, batch_dims)
        want = np.moveaxis(want, -1, batch_dims)
    out = tf.conv(x, w, batch_dims=batch_dims, groups=groups,
                  data_format="CHANNELS_FIRST" if first else "CHANNELS_LAST",
                  **_attrs(strides, dilations, padding, pairs, first))
    assert out.shape.as_list() == list(want.shape)
    got = run(out)
    assert got.dtype == dtype
    tol = 2e-2 if dtype == np.float16 else 1e-4
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_conv_int32_and_no_gradient():
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 4, (2, 5, 4, 3)).astype(np.int32)
    w = rng.integers(-3, 4, (2, 2, 3, 2)).astype(np.int32)
    got = run(tf.conv(x, w, [1, 1, 1, 1], "VALID"))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, numpy_conv(x, w, (1, 1), (1, 1), "VALID"))
    xt = tf.constant(x.astype(np.float32))
    with pytest.raises(LookupError, match="No gradient defined"):
        tf.gradients(tf.conv(xt, w.astype(np.float32), [1, 1, 1, 1], "VALID"), xt)


@pytest.mark.parametrize("padding, strides, dilations, explicit", [
    ("VALID", [1, 1, 1, 1], [1, 1, 1, 1], []),
    ("SAME", [1, 2, 3, 1], [1, 1, 1, 1], []),
    ("SAME", [1, 1, 1, 1], [1, 2, 1, 1], []),
    ("EXPLICIT", [1, 2, 1, 1], [1, 1, 1, 1], [0, 0, 1, 2, 0, 1, 0, 0]),
])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_v2_backprops_equal_the_v1_ops(padding, strides, dilations, explicit, data_format):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 4, 5)).astype(np.float32)
    if data_format == "NCHW":
        x = x.transpose(0, 3, 1, 2)
        strides = [strides[i] for i in (0, 3, 1, 2)]
        dilations = [dilations[i] for i in (0, 3, 1, 2)]
        explicit = [explicit[i] for i in (0, 1, 6, 7, 2, 3, 4, 5)] if explicit else []
    attrs = dict(strides=strides, padding=padding, explicit_paddings=explicit,
                 data_format=data_format, dilations=dilations)
    y = tf.raw_ops.Conv2D(input=x, filter=w, **attrs)
    dy = tf.constant(rng.standard_normal(y.shape.as_list()).astype(np.float32))
    v2 = [tf.conv2d_backprop_input_v2(x, w, dy, **attrs),
          tf.conv2d_backprop_filter_v2(x, w, dy, **attrs)]
    v1 = [tf.raw_ops.Conv2DBackpropInput(input_sizes=x.shape, filter=w, out_backprop=dy,
                                         **attrs),
          tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=w.shape, out_backprop=dy,
                                          **attrs)]
    assert [t.shape.as_list() for t in v2] == [list(x.shape), list(w.shape)]
    for a, b in zip(run(v2), run(v1), strict=True):
        np.testing.assert_array_equal(a, b)


# ---- TensorFlow --------------------------------------------------------------------------


_VALUES_PROGRAM = """
rng = np.random.RandomState(0)
def arr(*shape, dt=np.float32):
    return (rng.standard_normal(shape) * 2).astype(dt)
x4, w4, x5, w5 = arr(2, 7, 6, 4), arr(3, 2, 4, 5), arr(2, 5, 6, 4, 4), arr(2, 2, 3, 4, 5)
outs = {
    "2d": tf.conv(x4, w4, [1, 1, 1, 1], "VALID"),
    "2d_same": tf.conv(x4, w4, [1, 2, 1, 1], "SAME", dilations=[1, 1, 2, 1]),
    "2d_explicit": tf.conv(x4, w4, [1, 1, 1, 1], "EXPLICIT",
                           explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0]),
    "3d": tf.conv(x5, w5, [1, 1, 1, 1, 1], "SAME"),
    "3d_strides": tf.conv(x5, w5, [1, 2, 1, 2, 1], "VALID"),
    "b2": tf.conv(x5, w4, [1, 1, 1, 1], "VALID", batch_dims=2),
    "b3": tf.conv(arr(2, 2, 3, 7, 6, 4), w4, [1, 2, 1, 1], "SAME", batch_dims=3),
    "b0": tf.conv(x4[0], w4, [1, 1, 1, 1], "VALID", batch_dims=0),
    "f64": tf.conv(x4.astype(np.float64), w4.astype(np.float64), [1, 1, 1, 1], "VALID"),
    "f16": tf.conv(x4.astype(np.float16), w4.astype(np.float16), [1, 1, 1, 1], "VALID"),
    "i32": tf.conv(np.round(x4).astype(np.int32), np.round(w4).astype(np.int32),
                   [1, 1, 1, 1], "VALID"),
}
dy = arr(2, 5, 5, 5)
if tf.__name__.startswith("tensorflow"):  # no CPU kernel for the V2 ops: TF's V1 ops
    outs["input"] = tf.nn.conv2d_backprop_input([2, 7, 6, 4], w4, dy, [1, 1, 1, 1], "VALID")
    outs["filter"] = tf.nn.conv2d_backprop_filter(x4, [3, 2, 4, 5], dy, [1, 1, 1, 1],
                                                  "VALID")
else:
    outs["input"] = tf.conv2d_backprop_input_v2(x4, w4, dy, [1, 1, 1, 1], "VALID")
    outs["filter"] = tf.conv2d_backprop_filter_v2(x4, w4, dy, [1, 1, 1, 1], "VALID")
with tf.Session() as sess:
    result = {k: v.astype(np.float64).tolist() for k, v in sess.run(outs).items()}
"""


@pytest.mark.oracle
def test_values_equal_tensorflow():
    ours, theirs = oracle.run_both(_VALUES_PROGRAM, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        want = np.asarray(theirs[key])
        tol = 2e-2 if key == "f16" else 1e-4
        np.testing.assert_allclose(ours[key], want, rtol=tol, atol=tol * np.abs(want).max(),
                                   err_msg=key)


_SHAPES_PROGRAM = """
P = lambda shape: tf.placeholder(tf.float32, shape)
x4, w4 = [2, 7, 6, 4], [3, 2, 4, 5]
cases = {
    "w5x4": ([2, 7, 6, 4], [1, 3, 2, 4, 5], [1] * 4, "VALID", {}),
    "w2x4": (x4, [2, 4], [1] * 4, "VALID", {}),
    "w4x5": ([2, 5, 7, 6, 4], w4, [1] * 5, "VALID", {}),
    "w3x5": ([2, 5, 7, 6, 4], [3, 4, 5], [1] * 4, "VALID", {}),
    "x6b1": ([2, 2, 5, 7, 6, 4], [3, 2, 2, 4, 5], [1] * 5, "VALID", {}),
    "x6b2": ([2, 2, 5, 7, 6, 4], [3, 2, 2, 4, 5], [1] * 5, "VALID", {"batch_dims": 2}),
    "x6b3": ([2, 2, 5, 7, 6, 4], w4, [1] * 4, "VALID", {"batch_dims": 3}),
    "x4b0": ([7, 6, 4, 3], w4, [1] * 4, "VALID", {"batch_dims": 0}),
    "x3b0": ([7, 6, 4], w4, [1] * 4, "SAME", {"batch_dims": 0}),
    "bneg": ([7, 6, 4, 3], w4, [1] * 4, "VALID", {"batch_dims": -1}),
    "unknown_dims": ([None] * 4, [3, 2, None, 5], [1, 2, 1, 1], "SAME", {}),
    "unknown_b2": ([None, 3, None, 6, 4], w4, [1, 2, 1, 1], "SAME", {"batch_dims": 2}),
    "unknown_w": (x4, None, [1, 2, 1, 1], "SAME", {}),
    "unknown_x": (None, w4, [1, 2, 1, 1], "SAME", {}),
    "cf": ([2, 4, 7, 6], w4, [1, 1, 2, 1], "VALID", {"data_format": "CHANNELS_FIRST"}),
    "cf3d": ([2, 4, 5, 7, 6], [2, 3, 2, 4, 5], [1, 1, 2, 1, 1], "SAME",
             {"data_format": "CHANNELS_FIRST"}),
    "cf_b2": ([3, 2, 4, 7, 6], w4, [1, 1, 2, 1], "VALID",
              {"data_format": "CHANNELS_FIRST", "batch_dims": 2}),
    "groups": (x4, [3, 2, 2, 6], [1] * 4, "VALID", {"groups": 2}),
    "groups4": (x4, [3, 2, 1, 8], [1] * 4, "VALID", {"groups": 4}),
    "groups_input": (x4, [3, 2, 2, 6], [1] * 4, "VALID", {"groups": 3}),
    "groups_filter": (x4, [3, 2, 2, 6], [1] * 4, "VALID", {}),
    "groups_output": (x4, [3, 2, 2, 5], [1] * 4, "VALID", {"groups": 2}),
    "depth": (x4, [3, 2, 3, 5], [1] * 4, "VALID", {}),
    "depth_unknown": ([2, 7, 6, None], [3, 2, 3, 5], [1] * 4, "VALID", {}),
    "stride0": (x4, w4, [1, 0, 1, 1], "VALID", {}),
    "dilation0": (x4, w4, [1] * 4, "VALID", {"dilations": [1, 0, 1, 1]}),
    "strides_len": (x4, w4, [1] * 3, "VALID", {}),
    "dilations_len": (x4, w4, [1] * 3, "VALID", {"dilations": [1] * 3}),
    "explicit_len": (x4, w4, [1] * 4, "EXPLICIT", {"explicit_paddings": [0, 0, 1, 2]}),
    "explicit_not": (x4, w4, [1] * 4, "VALID", {"explicit_paddings": [0] * 8}),
    "explicit_neg": (x4, w4, [1] * 4, "EXPLICIT",
                     {"explicit_paddings": [0, 0, -1, 0, 0, 0, 0, 0]}),
    "explicit_batch": (x4, w4, [1] * 4, "EXPLICIT",
                       {"explicit_paddings": [1, 0, 0, 0, 0, 0, 0, 0]}),
    "explicit_3d": ([2, 5, 6, 4, 4], [2, 2, 3, 4, 5], [1] * 5, "EXPLICIT",
                    {"explicit_paddings": [0, 0, 1, 0, 0, 2, 1, 1, 0, 0]}),
    "explicit": (x4, w4, [1, 2, 1, 1], "EXPLICIT",
                 {"explicit_paddings": [0, 0, 1, 2, 0, 1, 0, 0], "dilations": [1, 1, 2, 1]}),
    "too_small": ([2, 2, 6, 4], w4, [1] * 4, "VALID", {}),
    "same_strides": (x4, w4, [1, 2, 3, 1], "SAME", {"dilations": [1, 2, 1, 1]}),
}
result = {}
for key, (xs, ws, strides, padding, extra) in cases.items():
    try:
        out = tf.conv(P(xs), P(ws), strides, padding, **extra)
        result[key] = None if out.shape.ndims is None else out.shape.as_list()
    except ValueError as e:
        result[key] = str(e).split(" for '")[0]
for key, (xs, ws, dys) in {"a": ([None, 7, 6, None], None, [2, None, None, 5]),
                          "b": (None, [3, 2, None, 5], None), "c": ([2, 7, 6], w4, None),
                          "d": (None, [3, 2, 4], [2, 2])}.items():
    for fn in ("conv2d_backprop_input_v2", "conv2d_backprop_filter_v2"):
        try:
            out = getattr(tf, fn)(P(xs), P(ws), P(dys), [1, 1, 1, 1], "VALID")
            result[fn + key] = out.shape.as_list()
        except ValueError as e:
            result[fn + key] = str(e).split(" for '")[0]
"""


@pytest.mark.oracle
def test_static_shapes_and_errors_equal_tensorflow():
    ours, theirs = oracle.run_both(_SHAPES_PROGRAM, tf)
    assert set(ours) == set(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differ, differ


OPS = ["Conv", "Conv2DBackpropInputV2", "Conv2DBackpropFilterV2"]


@pytest.mark.oracle
def test_op_definitions_match_tensorflow():
    from google.protobuf import json_format

    theirs = oracle.run_tf(f"""
from google.protobuf import json_format
from tensorflow.python.framework import op_def_registry
result = {{}}
for name in {OPS!r}:
    d = json_format.MessageToDict(op_def_registry.get(name))
    d.pop("summary", None); d.pop("description", None)
    result[name] = json.dumps(d, sort_keys=True)
""")
    for op_type in OPS:
        ours = json_format.MessageToDict(op_registry.get(op_type).to_proto())
        assert json.loads(theirs[op_type]) == ours, op_type
        assert op_registry.get_gradient(op_type) is op_registry.NO_GRADIENT  # TF: LookupError
