"""The quantization op cases compared bit for bit with TensorFlow (test_quantization_ops.py).

Each case is a plain dict, JSON-ready so one oracle run computes them all:
`{"op": "QuantizeV2", "inputs": {"input": (values, "float32"), ...}, "attrs": {...}}`.
Type attributes are spelled "dtype:quint8". Inputs are drawn from a fixed seed, with the
awkward values (exact half steps, the range ends, outside the range) mixed in.
"""

from __future__ import annotations

import itertools

import numpy as np

QTYPES = ["quint8", "qint8", "quint16", "qint16", "qint32"]
CARRIER = {"quint8": np.uint8, "qint8": np.int8, "quint16": np.uint16, "qint16": np.int16,
           "qint32": np.int32, "float32": np.float32, "float64": np.float64,
           "float16": np.float16}
RANGES = [(-1.0, 1.0), (-3.7, 5.2), (0.0, 6.0), (2.0, 3.0), (-0.001, 0.001), (-5.0, -2.0),
          (-0.3, 250.0)]


def _arr(values, dtype):
    return (np.asarray(values, CARRIER[dtype]).tolist(), dtype)


def _float_data(rng, lo, hi, n=24):
    width = max(hi - lo, 1e-3)
    x = rng.uniform(lo - 0.2 * width, hi + 0.2 * width, n)
    # exact half steps of an 8-bit grid, the ends, and zero
    step = width / 255.0
    extra = [lo, hi, 0.0, lo + 0.5 * step, lo + 1.5 * step, -0.5 * step, 0.5 * step]
    return np.concatenate([x, extra]).astype(np.float32)


def _quantized_data(rng, dtype, n=24):
    info = np.iinfo(CARRIER[dtype])
    lo, hi = max(int(info.min), -(1 << 20)), min(int(info.max), 1 << 20)
    x = rng.randint(lo, hi + 1, n)
    return np.concatenate([x, [info.min, info.max, 0]]).astype(CARRIER[dtype])


def quantize_cases(rng):
    cases = []
    for t, mode, (lo, hi) in itertools.product(QTYPES, ["MIN_COMBINED", "MIN_FIRST", "SCALED"],
                                               RANGES):
        x = _float_data(rng, lo, hi)
        variants = [{}]
        if mode == "SCALED":
            variants += [{"round_mode": "HALF_TO_EVEN"}, {"narrow_range": True}]
        if (lo, hi) == (-1.0, 1.0):
            variants += [{"ensure_minimum_range": 0.0}, {"ensure_minimum_range": 0.5}]
        for extra in variants:
            cases.append({"op": "QuantizeV2", "inputs": {
                "input": _arr(x, "float32"), "min_range": _arr(lo, "float32"),
                "max_range": _arr(hi, "float32")},
                "attrs": {"T": f"dtype:{t}", "mode": mode, **extra}})
    for t, mode in itertools.product(["quint8", "qint8", "qint32"], ["MIN_COMBINED", "SCALED"]):
        x = rng.normal(0, 2, (3, 4, 2)).astype(np.float32)
        cases.append({"op": "QuantizeV2", "inputs": {
            "input": _arr(x, "float32"), "min_range": _arr([-1.0, -3.0, 0.0, -0.5], "float32"),
            "max_range": _arr([1.0, 2.0, 4.0, 0.5], "float32")},
            "attrs": {"T": f"dtype:{t}", "mode": mode, "axis": 1}})
    return cases


def dequantize_cases(rng):
    cases = []
    for t, mode, (lo, hi) in itertools.product(QTYPES, ["MIN_COMBINED", "MIN_FIRST", "SCALED"],
                                               RANGES):
        x = _quantized_data(rng, t)
        variants = [{}] + ([{"narrow_range": True}] if mode == "SCALED" else [])
        if mode == "MIN_COMBINED" and t in ("quint8", "qint8"):
            variants.append({"dtype": "dtype:bfloat16"})
        for extra in variants:
            cases.append({"op": "Dequantize", "inputs": {
                "input": _arr(x, t), "min_range": _arr(lo, "float32"),
                "max_range": _arr(hi, "float32")}, "attrs": {"mode": mode, **extra}})
    for t, mode in itertools.product(["quint8", "qint8"], ["MIN_COMBINED", "SCALED"]):
        x = _quantized_data(rng, t, 9)[:12].reshape(4, 3)
        cases.append({"op": "Dequantize", "inputs": {
            "input": _arr(x, t), "min_range": _arr([-1.0, -3.0, 0.0], "float32"),
            "max_range": _arr([1.0, 2.0, 4.0], "float32")}, "attrs": {"mode": mode, "axis": 1}})
    return cases


FQ_RANGES = [(-6.0, 6.0), (-1.0, 1.0), (0.0, 1.0), (-0.1, 3.3), (0.5, 2.0), (-3.0, -0.2),
             (-10.2, 9.7)]


def fake_quant_cases(rng):
    cases = []
    for (lo, hi), bits, narrow in itertools.product(FQ_RANGES, [2, 4, 8, 16], [False, True]):
        x = _float_data(rng, lo, hi)
        g = rng.normal(0, 1, x.shape).astype(np.float32)
        attrs = {"num_bits": bits, "narrow_range": narrow}
        cases.append({"op": "FakeQuantWithMinMaxArgs", "inputs": {"inputs": _arr(x, "float32")},
                      "attrs": {"min": lo, "max": hi, **attrs}})
        cases.append({"op": "FakeQuantWithMinMaxArgsGradient", "inputs": {
            "gradients": _arr(g, "float32"), "inputs": _arr(x, "float32")},
            "attrs": {"min": lo, "max": hi, **attrs}})
        rng_in = {"min": _arr(lo, "float32"), "max": _arr(hi, "float32")}
        cases.append({"op": "FakeQuantWithMinMaxVars", "inputs": {
            "inputs": _arr(x, "float32"), **rng_in}, "attrs": attrs})
        cases.append({"op": "FakeQuantWithMinMaxVarsGradient", "inputs": {
            "gradients": _arr(g, "float32"), "inputs": _arr(x, "float32"), **rng_in},
            "attrs": attrs})
    for shape in [(5,), (6, 5), (2, 3, 2, 5)]:
        lo = np.array([r[0] for r in FQ_RANGES[:5]], np.float32)
        hi = np.array([r[1] for r in FQ_RANGES[:5]], np.float32)
        x = rng.uniform(-7, 7, shape).astype(np.float32)
        g = rng.normal(0, 1, shape).astype(np.float32)
        for bits, narrow in [(8, False), (4, True)]:
            ins = {"inputs": _arr(x, "float32"), "min": _arr(lo, "float32"),
                   "max": _arr(hi, "float32")}
            attrs = {"num_bits": bits, "narrow_range": narrow}
            cases.append({"op": "FakeQuantWithMinMaxVarsPerChannel", "inputs": ins,
                          "attrs": attrs})
            cases.append({"op": "FakeQuantWithMinMaxVarsPerChannelGradient",
                          "inputs": {"gradients": _arr(g, "float32"), **ins}, "attrs": attrs})
    return cases


def _q8(rng, shape):
    return rng.randint(0, 256, shape).astype(np.uint8)


def compute_cases(rng):
    """QuantizedMatMul, QuantizedConv2D, QuantizedBiasAdd, the relus and requantization."""
    cases = []
    for ta, tb, (ra, rb) in itertools.product([False, True], [False, True], [
            ((-1.0, 1.0), (-2.0, 3.0)), ((0.0, 6.0), (-0.5, 0.25)), ((-3.7, 5.2), (1.0, 2.0))]):
        a = _q8(rng, (4, 7) if ta else (7, 4))
        b = _q8(rng, (5, 4) if tb else (4, 5))
        cases.append({"op": "QuantizedMatMul", "inputs": {
            "a": _arr(a, "quint8"), "b": _arr(b, "quint8"),
            "min_a": _arr(ra[0], "float32"), "max_a": _arr(ra[1], "float32"),
            "min_b": _arr(rb[0], "float32"), "max_b": _arr(rb[1], "float32")},
            "attrs": {"transpose_a": ta, "transpose_b": tb, "Toutput": "dtype:qint32"}})
    for padding, stride, (kh, kw) in itertools.product(["SAME", "VALID"], [1, 2],
                                                       [(3, 3), (1, 1), (2, 3)]):
        x, w = _q8(rng, (2, 6, 5, 3)), _q8(rng, (kh, kw, 3, 4))
        cases.append({"op": "QuantizedConv2D", "inputs": {
            "input": _arr(x, "quint8"), "filter": _arr(w, "quint8"),
            "min_input": _arr(-1.5, "float32"), "max_input": _arr(2.5, "float32"),
            "min_filter": _arr(-0.7, "float32"), "max_filter": _arr(0.3, "float32")},
            "attrs": {"strides": [1, stride, stride, 1], "padding": padding,
                      "out_type": "dtype:qint32"}})
    for rx, rb in [((-1.0, 1.0), (-0.1, 0.2)), ((0.0, 6.0), (-3.0, 3.0)), ((-9.0, 1.0),
                                                                             (0.0, 0.5))]:
        cases.append({"op": "QuantizedBiasAdd", "inputs": {
            "input": _arr(_q8(rng, (3, 4)), "quint8"), "bias": _arr(_q8(rng, (4,)), "quint8"),
            "min_input": _arr(rx[0], "float32"), "max_input": _arr(rx[1], "float32"),
            "min_bias": _arr(rb[0], "float32"), "max_bias": _arr(rb[1], "float32")},
            "attrs": {"out_type": "dtype:qint32"}})
    for op, t, (lo, hi) in itertools.product(["QuantizedRelu", "QuantizedRelu6"],
                                             ["quint8", "qint32"], [(-1.0, 1.0), (-8.0, 12.0),
                                                                    (-3.0, 0.5)]):
        x = _quantized_data(rng, t)
        cases.append({"op": op, "inputs": {
            "features": _arr(x, t), "min_features": _arr(lo, "float32"),
            "max_features": _arr(hi, "float32")},
            "attrs": {"out_type": f"dtype:{t}"}})
    for padding, k, stride in itertools.product(["SAME", "VALID"], [2, 3], [1, 2]):
        cases.append({"op": "QuantizedMaxPool", "inputs": {
            "input": _arr(_q8(rng, (2, 5, 6, 3)), "quint8"), "min_input": _arr(-1.0, "float32"),
            "max_input": _arr(2.0, "float32")},
            "attrs": {"ksize": [1, k, k, 1], "strides": [1, stride, stride, 1],
                      "padding": padding}})
    for lo, hi in [(-1.0, 1.0), (-3000.0, 3000.0), (-0.01, 0.02), (-70000.0, 80000.0)]:
        x = _quantized_data(rng, "qint32")
        big = rng.randint(-(1 << 31), (1 << 31) - 1, 8).astype(np.int32)
        for data in (x, big, np.array([-5, 17, 200], np.int32)):
            ins = {"input": _arr(data, "qint32"), "input_min": _arr(lo, "float32"),
                   "input_max": _arr(hi, "float32")}
            cases.append({"op": "RequantizationRange", "inputs": ins, "attrs": {}})
            cases.append({"op": "QuantizeDownAndShrinkRange", "inputs": ins,
                          "attrs": {"out_type": "dtype:quint8"}})
            for req in [(-1.0, 1.0), (0.0, 2.5e-6), (-0.5, 7.0), (-3e-5, 4e-5)]:
                for out_t in ("quint8", "qint8"):
                    cases.append({"op": "Requantize", "inputs": {
                        **ins, "requested_output_min": _arr(req[0], "float32"),
                        "requested_output_max": _arr(req[1], "float32")},
                        "attrs": {"out_type": f"dtype:{out_t}"}})
    return cases


def quantize_and_dequantize_cases(rng):
    cases = []
    grid = itertools.product(["QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4"],
                             ["float32", "float64"], [True, False], [4, 8],
                             [True, False], ["HALF_TO_EVEN", "HALF_UP"])
    for op, dt, signed, bits, given, rmode in grid:
        x = rng.uniform(-3, 5, 30).astype(CARRIER[dt])
        x[:4] = [0.0, 0.5 * 4 / 127, 1.5 * 4 / 127, -2.5 * 4 / 127]  # half steps
        for lo, hi in [(-1.0, 4.0), (0.0, 2.0), (-2.5, 0.7)]:
            cases.append({"op": op, "inputs": {
                "input": _arr(x, dt), "input_min": _arr(lo, dt), "input_max": _arr(hi, dt)},
                "attrs": {"signed_input": signed, "num_bits": bits, "range_given": given,
                          "round_mode": rmode, "narrow_range": signed and bits == 4}})
            if not given:
                break
    x = rng.uniform(-3, 5, (4, 3, 5)).astype(np.float32)
    # (per-slice given ranges: TF 2.21's kernel refuses them, test_quantization_ops.py)
    ins = {"input": _arr(x, "float32"), "input_min": _arr([-1.0, 0.0, -3.0], "float32"),
           "input_max": _arr([1.0, 2.0, 0.5], "float32")}
    for op in ("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4"):
        cases.append({"op": op, "inputs": ins, "attrs": {"range_given": False, "axis": 1}})
    g = rng.normal(0, 1, x.shape).astype(np.float32)
    for axis, lo, hi in [(-1, -1.0, 2.0), (1, [-1.0, 0.0, -3.0], [1.0, 2.0, 0.5])]:
        cases.append({"op": "QuantizeAndDequantizeV4Grad", "inputs": {
            "gradients": _arr(g, "float32"), "input": _arr(x, "float32"),
            "input_min": _arr(lo, "float32"), "input_max": _arr(hi, "float32")},
            "attrs": {"axis": axis}})
    return cases


def all_cases(seed=19):
    rng = np.random.RandomState(seed)
    return (quantize_cases(rng) + dequantize_cases(rng) + fake_quant_cases(rng)
            + compute_cases(rng) + quantize_and_dequantize_cases(rng))


# The oracle side: runs every case in TensorFlow (tf.raw_ops), one session per case so an
# unsupported combination reports its own error.
ORACLE_RUNNER = """
import json
CARRIER = {"quint8": "uint8", "qint8": "int8", "quint16": "uint16", "qint16": "int16",
           "qint32": "int32", "float32": "float32", "float64": "float64",
           "float16": "float16"}
def _attr(v):
    return tf.as_dtype(v[6:]) if isinstance(v, str) and v.startswith("dtype:") else v
def _plain(r):
    r = np.asarray(r)
    if r.dtype.names:
        r = r.view(r.dtype[0])
    if r.dtype.name == "bfloat16":
        r = r.astype(np.float32)
    return r
def run_cases(cases):
    out = []
    for c in cases:
        g = tf.Graph()
        with g.as_default():
            kw = {k: tf.constant(np.array(v, CARRIER[dt]), dtype=getattr(tf, dt))
                  for k, (v, dt) in c["inputs"].items()}
            kw.update({k: _attr(v) for k, v in c["attrs"].items()})
            try:
                op = getattr(tf.raw_ops, c["op"])(**kw)
                fetch = list(op) if isinstance(op, (tuple, list)) else [op]
                with tf.Session() as s:
                    out.append([_plain(r) for r in s.run(fetch)])
            except Exception as e:
                out.append({"error": type(e).__name__})
    return out
"""
