"""QuantizedConcat (`tf.quantized_concat`, tensorflux/ops/quantization_ops.py): the output
range and the requantized values against a NumPy statement of TensorFlow's arithmetic
(float32 dequantize, scale, round half away from zero, clamp), every quantized type; values,
static shapes, shape-function and run-time errors and the op definition against the oracle
(whose CPU kernels take quint8 and qint32)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors, op_registry
from tests import oracle

pytestmark = pytest.mark.usefixtures("fresh_graph")

F = np.float32


def numpy_requantize(q, lo, hi, out_lo, out_hi, info):
    """q's integers from [lo, hi] into [out_lo, out_hi] (TF's MIN_FIRST float32 steps)."""
    steps = 2.0 ** (8 * q.dtype.itemsize)
    scale = F((F(hi) - F(lo)) / (steps - 1.0))
    lo_r = F(lo) if lo == hi else F(np.round(F(lo) / scale) * scale)  # |.5| never occurs
    x = q.astype(F) * scale + F(lo_r - F(info.min) * scale)
    out_scale = F(0) if out_hi == out_lo else F((steps - 1.0) / (F(out_hi) - F(out_lo)))
    shifted = np.trunc(x * out_scale + np.copysign(F(0.5), x * out_scale))
    y = shifted - (np.trunc(F(out_lo) * out_scale + np.copysign(F(0.5), out_lo)) - F(info.min))
    return np.clip(y, info.min, info.max).astype(q.dtype)


def numpy_quantized_concat(values, mins, maxes, axis):
    info = np.iinfo(values[0].dtype)
    lo, hi = min(min(mins), 0.0), max(maxes)
    if info.min < 0:
        lo, hi = -max(abs(lo), abs(hi)), max(abs(lo), abs(hi))
    parts = [v if (F(a), F(b)) == (F(lo), F(hi)) else numpy_requantize(v, a, b, lo, hi, info)
             for v, a, b in zip(values, mins, maxes, strict=True)]
    return np.concatenate(parts, axis), F(lo), F(hi)


QTYPES = [tf.quint8, tf.qint8, tf.quint16, tf.qint16, tf.qint32]
CARRIERS = {tf.quint8: np.uint8, tf.qint8: np.int8, tf.quint16: np.uint16,
            tf.qint16: np.int16, tf.qint32: np.int32}


@pytest.mark.parametrize("qtype", QTYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("ranges", [[(-1.0, 2.0), (0.5, 3.0)], [(-1.0, 2.0), (-1.0, 2.0)],
                                    [(1.0, 2.0), (1.5, 5.0), (-0.25, 0.75)],
                                    [(0.0, 0.0), (-2.0, 0.0)]])
@pytest.mark.parametrize("axis", [0, 1])
def test_against_numpy(qtype, ranges, axis):
    rng = np.random.default_rng(len(ranges) + axis)
    info = np.iinfo(CARRIERS[qtype])
    top = min(info.max, 2**20) if qtype == tf.qint32 else info.max
    bottom = max(info.min, -2**20)
    values = [rng.integers(bottom, top, (3, 4 + i), endpoint=True).astype(info.dtype)
              if axis else rng.integers(bottom, top, (2 + i, 4), endpoint=True).astype(
                  info.dtype) for i in range(len(ranges))]
    mins, maxes = [r[0] for r in ranges], [r[1] for r in ranges]
    out = tf.quantized_concat(axis, [tf.constant(v, qtype) for v in values], mins, maxes)
    assert out.output.shape.as_list() == list(np.concatenate(values, axis).shape)
    assert out.output_min.shape.as_list() == out.output_max.shape.as_list() == []
    with tf.Session() as sess:
        got = sess.run(out)
    want = numpy_quantized_concat(values, mins, maxes, axis)
    assert got.output.dtype == info.dtype
    np.testing.assert_array_equal(got.output, want[0])
    assert (got.output_min, got.output_max) == want[1:]


_PROGRAM = """
rng = np.random.RandomState(7)
outs = {}
ranges = [[(-1.0, 2.0), (0.5, 3.0)], [(1.0, 2.0), (1.5, 5.0), (-0.3, 0.7)],
          [(-1.7, 2.9), (0.3, 3.7)], [(3.0, 1.0), (0.0, 2.0)], [(0.0, 0.0), (0.0, 0.0)],
          [(float("nan"), 1.0), (0.0, 2.0)], [(-float("inf"), 1.0), (0.0, 2.0)],
          [(-100.0, -50.0), (-3.0, -1.0)], [(-1e-3, 1e-3), (-1e-3, 1e-3)]]
for i, rs in enumerate(ranges):
    for qtype, npt, lo, hi in ((tf.quint8, np.uint8, 0, 256),
                               (tf.qint32, np.int32, -2**31, 2**31)):
        axis = i % 2
        vals = [tf.constant(rng.randint(lo, hi, size=(2, 3 + j) if axis else (2 + j, 3),
                                        dtype=np.int64).astype(npt), qtype)
                for j in range(len(rs))]
        o = tf.quantized_concat(axis, vals, [r[0] for r in rs], [r[1] for r in rs])
        outs[f"{i}/{qtype.name}"] = list(o)
    outs[f"{i}/static"] = [o.output.shape.as_list(), o.output_min.shape.as_list()]
full = tf.constant(np.arange(256, dtype=np.uint8).reshape(1, 256), tf.quint8)
outs["table"] = list(tf.quantized_concat(0, [full, full], [-1.7, 0.3], [2.9, 3.7]))
with tf.Session() as sess:
    got = sess.run({k: v for k, v in outs.items() if not k.endswith("static")})
result = {k: [np.asarray(a).tolist() for a in v] for k, v in got.items()}
result.update({k: v for k, v in outs.items() if k.endswith("static")})
"""


@pytest.mark.oracle
def test_values_equal_tensorflow():
    ours, theirs = oracle.run_both(_PROGRAM, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        assert json.dumps(ours[key]) == json.dumps(theirs[key]), key


_ERRORS_PROGRAM = """
P = lambda shape: tf.placeholder(tf.quint8, shape)
result = {}
for key, (axis, shapes, mins) in {
        "dims": (0, [[2, 3], [1, 4]], [0.0, 1.0]), "unknown": (0, [[None, 3], [1, None]], [0, 1]),
        "rank": (0, [[2, 3], [3]], [0.0, 1.0]), "axis_range": (2, [[2, 3], [1, 3]], [0.0, 1.0]),
        "negative": (-1, [[2, 3], [2, 3]], [0.0, 1.0]), "min_rank": (0, [[2], [1]], [[0.0], 1.0]),
        "axis_rank": ([0], [[2], [1]], [0.0, 1.0]),
        "axis_unknown": (tf.placeholder(tf.int32, []), [[2, 3], [1, 3]], [0.0, 1.0])}.items():
    try:
        o = tf.quantized_concat(axis, [P(s) for s in shapes], mins, [2.0, 3.0])
        result[key] = [o.output.shape.as_list() if o.output.shape.ndims is not None else None,
                       o.output_min.shape.as_list()]
    except ValueError as e:
        result[key] = str(e).split(" for '")[0]
a = np.array([[0, 10, 255], [128, 3, 7]], np.uint8)
feeds = {"rank": (0, [a, a[0]], [0.0, 0.0]), "dims": (0, [a, a[:, :2]], [0.0, 0.0]),
         "scalars": (0, [np.uint8(3), np.uint8(4)], [0.0, 0.0]),
         "min_vector": (0, [a, a], [[0.0, 1.0], 0.0]), "axis_vector": ([1], [a, a], [0.0, 0.0]),
         "axis_2": (2, [a, a], [0.0, 0.0]), "negative_axis": (-1, [a, a], [0.0, 0.0])}
for key, (axis, vals, mins) in feeds.items():
    ps = [tf.placeholder(tf.quint8) for _ in vals]
    pm = [tf.placeholder(tf.float32) for _ in vals]
    pa = tf.placeholder(tf.int32)
    o = tf.quantized_concat(pa, ps, pm, [2.0, 3.0])
    feed = dict(zip(ps + pm, vals + mins)); feed[pa] = axis
    try:
        with tf.Session() as sess:
            sess.run(o.output, feed)
        result["run_" + key] = "ok"
    except tf.errors.InvalidArgumentError as e:
        result["run_" + key] = [l for l in e.message.splitlines() if "ConcatOp" in l or
                                "must be" in l or "should be" in l][0].strip()
"""


@pytest.mark.oracle
def test_shapes_and_errors_equal_tensorflow():
    ours, theirs = oracle.run_both(_ERRORS_PROGRAM, tf)
    assert ours == theirs


@pytest.mark.oracle
def test_op_definition_matches_tensorflow():
    from google.protobuf import json_format

    theirs = oracle.run_tf("""
from google.protobuf import json_format
from tensorflow.python.framework import op_def_registry
d = json_format.MessageToDict(op_def_registry.get("QuantizedConcat"))
d.pop("summary", None); d.pop("description", None)
result = json.dumps(d, sort_keys=True)
""")
    ours = json_format.MessageToDict(op_registry.get("QuantizedConcat").to_proto())
    assert json.loads(theirs) == ours


def test_float_values_have_no_kernel():
    out = tf.quantized_concat(0, [tf.constant([1.0]), tf.constant([2.0])], [0.0, 0.0],
                              [1.0, 1.0])
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                             match="no supported kernel"):
        sess.run(out.output)
