"""The eight-bit kernels in C (tensorflux/kernels/cpu/_qkernels.c, _qnative.py): every product
path this CPU runs (AVX-512 VNNI, AVX2, plain C) against the exact integer product, and the
quantized ops with and without the extension against each other, equal to the bit (the
values against TensorFlow's are in tests/ops/test_quantization_ops.py). No timing here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import _qnative
from tests.threads_util import join, start

pytestmark = pytest.mark.timeout(60)

needs_ext = pytest.mark.skipif(not _qnative.available(), reason="_qkernels is not built")


def _paths():
    """The product paths this CPU runs (a lower one is forced with `path=`)."""
    best = _qnative.best_path()
    if best is None:
        return []
    return [p for p, v in _qnative.PATHS.items() if v <= _qnative.PATHS[best]]


def test_the_extension_is_built_where_a_compiler_is():
    if os.environ.get("TENSORFLUX_NATIVE", "1").strip() == "0":
        pytest.skip("TENSORFLUX_NATIVE=0")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        pytest.skip("no Python headers here")
    assert _qnative.available()
    assert _qnative.best_path() in _qnative.PATHS


def _exact(a, b, za, zb):
    return ((a.astype(np.int64) - za) @ (b.astype(np.int64) - zb)).astype(np.int32)


# k not a multiple of 4 or 64, tiny and large m and n, n not a multiple of 8 or 16.
_GEMM_SHAPES = [(1, 1, 1), (3, 5, 7), (17, 9, 16), (64, 144, 32), (5, 513, 65), (33, 64, 10),
                (7, 4, 17), (130, 3, 33), (1, 1000, 1), (257, 37, 129), (1030, 66, 48)]
_ZERO_POINTS = [(0, 0), (255, 255), (0, 255), (255, 0), (128, 3), (77, 200)]


@needs_ext
@pytest.mark.parametrize("path", ["generic", "avx2", "vnni"])
@pytest.mark.parametrize("m, k, n", _GEMM_SHAPES)
def test_gemm_is_the_exact_product(path, m, k, n):
    if path not in _paths():
        pytest.skip(f"this CPU does not run the {path} path")
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(0, 256, (k, n), dtype=np.uint8)
    a[0, :] = 255  # the extremes of the operands, against the extremes of the zero points
    b[:, 0] = 255
    for za, zb in _ZERO_POINTS:
        for parts in (1, 2):
            got = _qnative.matmul(a, b, za, zb, parts, path=path)
            np.testing.assert_array_equal(got, _exact(a, b, za, zb),
                                          err_msg=f"za={za} zb={zb} parts={parts}")


@needs_ext
def test_gemm_takes_transposed_operands_and_refuses_what_could_leave_int32():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (9, 20), dtype=np.uint8)
    b = rng.integers(0, 256, (11, 9), dtype=np.uint8)
    np.testing.assert_array_equal(_qnative.matmul(a.T, b.T, 3, 250, 2), _exact(a.T, b.T, 3, 250))
    assert _qnative.matmul(a.astype(np.int8), b.T, 0, 0, 1) is None  # qint8: NumPy path
    big = np.zeros((2, 40000), np.uint8)
    assert _qnative.matmul(big, big.T, 0, 255, 1) is None  # 40000 * 255 * 255 >= 2^31
    assert _qnative.matmul(a, b.T, -100000, 0, 1) is None


def _conv_exact(x, w, zx, zw, strides, pads, out_hw):
    """The conv in int64: the input padded with its zero point, windows times the filter."""
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x.astype(np.int64) - zx, [(0, 0), (pt, pb), (pl, pr), (0, 0)])
    kh, kw, c, f = w.shape
    oh, ow = out_hw
    out = np.zeros((x.shape[0], oh, ow, f), np.int64)
    wc = w.astype(np.int64) - zw
    for i in range(kh):
        for j in range(kw):
            win = xp[:, i:i + strides[0] * (oh - 1) + 1:strides[0],
                     j:j + strides[1] * (ow - 1) + 1:strides[1], :]
            out += win @ wc[i, j]
    return out.astype(np.int32)


# (N, H, W, C), (kh, kw, F), strides, ((top, bottom), (left, right)) padding
_CONV_CASES = [
    ((2, 8, 8, 1), (3, 3, 16), (1, 1), ((1, 1), (1, 1))),
    ((3, 8, 8, 16), (3, 3, 32), (2, 2), ((0, 1), (0, 1))),
    ((1, 7, 5, 3), (5, 2, 7), (1, 3), ((2, 2), (0, 1))),
    ((2, 6, 9, 17), (1, 1, 33), (1, 1), ((0, 0), (0, 0))),
    ((1, 4, 4, 5), (4, 4, 3), (3, 1), ((2, 1), (1, 2))),
    ((1, 3, 70, 2), (3, 3, 5), (1, 1), ((1, 1), (1, 1))),
    ((1, 130, 300, 3), (3, 3, 4), (1, 2), ((1, 1), (0, 1))),  # > 64 KiB padded: row strips
]


@needs_ext
@pytest.mark.parametrize("path", ["generic", "avx2", "vnni"])
@pytest.mark.parametrize("xs, ws, strides, pads", _CONV_CASES)
def test_conv_is_the_exact_product(path, xs, ws, strides, pads):
    if path not in _paths():
        pytest.skip(f"this CPU does not run the {path} path")
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = rng.integers(0, 256, xs, dtype=np.uint8)
    w = rng.integers(0, 256, ws[:2] + (xs[3], ws[2]), dtype=np.uint8)
    out_hw = tuple((xs[1 + d] + sum(pads[d]) - ws[d]) // strides[d] + 1 for d in (0, 1))
    for zx, zw in _ZERO_POINTS:
        for parts in (1, 2):
            got = _qnative.conv2d(x, w, zx, zw, strides, (pads[0][0], pads[1][0]), out_hw,
                                  parts, path=path)
            want = _conv_exact(x, w, zx, zw, strides, pads, out_hw)
            np.testing.assert_array_equal(got, want, err_msg=f"zx={zx} zw={zw} parts={parts}")


@needs_ext
def test_a_stopped_product_says_so():
    a = np.ones((64, 16), np.uint8)
    out = np.empty((64, 8), np.int32)
    cell = np.ones(1, np.int32)
    b = np.ones((16, 8), np.uint8)
    assert _qnative._mod.gemm(a, b, out, 64, 16, 8, 0, 0, -1, 1, cell, 0.0) is False


@needs_ext
def test_products_from_many_threads_at_once():
    """The pool takes one call at a time; the others run on their own threads."""
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (3000, 40), dtype=np.uint8)
    b = rng.integers(0, 256, (40, 24), dtype=np.uint8)
    want = _exact(a, b, 5, 130)
    bad = []

    def worker():
        for _ in range(5):
            if not np.array_equal(_qnative.matmul(a, b, 5, 130, 2), want):
                bad.append(1)

    join(*[start(worker) for _ in range(4)])
    assert not bad


# ---- the ops, with and without the extension ---------------------------------------------


def _with_and_without(monkeypatch, build):
    """The values `build()` fetches with the extension and with the NumPy paths."""
    def run():
        with tf.Graph().as_default(), tf.Session() as s:
            return s.run(build())

    ours = run()
    monkeypatch.setattr(_qnative, "_mod", None)
    theirs = run()
    monkeypatch.undo()
    return ours, theirs


def _assert_same(ours, theirs):
    for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        o, t = np.asarray(o), np.asarray(t)
        assert o.dtype == t.dtype and o.shape == t.shape, f"output {i}"
        np.testing.assert_array_equal(o.view(o.dtype[0]) if o.dtype.names else o,
                                      t.view(t.dtype[0]) if t.dtype.names else t,
                                      err_msg=f"output {i}")


def _q(values, dtype=None):
    return tf.constant(values, dtype or tf.quint8)


# Ranges with zero points inside, at both ends, and outside [0, 255] (the NumPy path there).
_RANGES = [(-1.0, 1.0), (0.0, 2.5), (-3.0, 0.0), (0.5, 4.0), (-0.01, 7.0)]


@needs_ext
@pytest.mark.parametrize("rx, rw", [(_RANGES[i], _RANGES[j]) for i in range(5)
                                    for j in (0, 2, 3)])
def test_quantized_conv2d_and_matmul_agree_with_the_numpy_paths(monkeypatch, rx, rw):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (2, 9, 7, 3), dtype=np.uint8)
    w = rng.integers(0, 256, (3, 2, 3, 5), dtype=np.uint8)
    a = rng.integers(0, 256, (6, 13), dtype=np.uint8)
    b = rng.integers(0, 256, (9, 13), dtype=np.uint8)
    qq = tf.quantization

    def build():
        out = []
        for strides, padding in (([1, 1, 1, 1], "SAME"), ([1, 2, 3, 1], "VALID"),
                                 ([1, 3, 2, 1], "SAME")):
            out += list(qq.quantized_conv2d(_q(x), _q(w), rx[0], rx[1], rw[0], rw[1],
                                            strides=strides, padding=padding))
        out += list(qq.quantized_mat_mul(_q(a), _q(b), rx[0], rx[1], rw[0], rw[1],
                                         transpose_b=True))
        out += list(qq.quantized_mat_mul(_q(a.T.copy()), _q(b.T.copy()), rx[0], rx[1], rw[0],
                                         rw[1], transpose_a=True))
        return out

    _assert_same(*_with_and_without(monkeypatch, build))


@needs_ext
@pytest.mark.parametrize("channels", [1, 10, 16, 17])
def test_bias_add_relu_and_requantize_agree_with_the_numpy_paths(monkeypatch, channels):
    rng = np.random.default_rng(channels)
    x = rng.integers(0, 256, (301, channels), dtype=np.uint8)
    x[0, 0], x[-1, -1] = 0, 255
    bias = rng.integers(0, 256, channels, dtype=np.uint8)
    acc = rng.integers(-2**31, 2**31, (29, channels), dtype=np.int64).astype(np.int32)
    acc.reshape(-1)[:2] = [-2**31, 2**31 - 1]
    qq = tf.quantization

    def build():
        out = []
        for (lo, hi), (blo, bhi) in (((-1.0, 2.0), (-0.5, 0.5)), ((0.0, 6.0), (-3.0, 1.0)),
                                     ((-4.0, -1.0), (0.25, 9.0))):
            out += list(qq.quantized_bias_add(_q(x), _q(bias), lo, hi, blo, bhi, tf.qint32))
            out += list(qq.quantized_relu(_q(x), lo, hi))
            out += list(qq.quantized_relu6(_q(x), lo, hi))
            out += list(qq.requantize(tf.constant(acc, tf.qint32), lo * 1e3, hi * 1e3,
                                      min(lo, 0.0), max(hi, 0.0), tf.quint8))
        return out

    _assert_same(*_with_and_without(monkeypatch, build))


@needs_ext
@pytest.mark.parametrize("lo, hi", [(-1.0, 1.0), (0.0, 6.0), (-3.3, 0.0), (-7.77, 2.1),
                                    (0.0, 1e-6), (-1e20, 1e20)])
def test_quantize_min_first_agrees_with_the_numpy_path(monkeypatch, lo, hi):
    """QuantizeV2 (MIN_FIRST, quint8): halves, NaN, infinities and huge values included."""
    rng = np.random.default_rng(7)
    x = rng.normal(0, 3, (40, 33)).astype(np.float32)
    x.reshape(-1)[:9] = [np.nan, np.inf, -np.inf, 0.5, -0.5, 1e30, -1e-45, 2.5, -0.0]

    def build():
        return list(tf.quantization.quantize(tf.constant(x), lo, hi, tf.quint8,
                                             mode="MIN_FIRST"))

    with np.errstate(invalid="ignore"):
        _assert_same(*_with_and_without(monkeypatch, build))


@needs_ext
@pytest.mark.parametrize("scale, offset", [(0, 0), (1 << 16, 1 << 15), (3 << 40, -(1 << 45)),
                                           (-(5 << 33), 12345), ((1 << 63) - 1, -(1 << 63)),
                                           (987654321987, 1 << 20)])
def test_requantize_loop_wraps_as_the_numpy_path(scale, offset):
    """int64 products and sums wrap, shifts are arithmetic, as NumPy's int64 arrays do (every
    version of the loop: plain C, AVX2, AVX-512)."""
    rng = np.random.default_rng(abs(scale) % 1000)
    x = rng.integers(-2**31, 2**31, 1000 + 13, dtype=np.int64).astype(np.int32)
    x[:4] = [-2**31, 2**31 - 1, 0, -1]
    value = x.astype(np.int64)
    with np.errstate(over="ignore"):
        value *= np.int64(scale)
        value >>= 32
        value += np.int64(offset)
    value >>= 16
    want = np.clip(value, 0, 255).astype(np.uint8)
    for path in _paths():
        for parts in (1, 2):
            np.testing.assert_array_equal(
                _qnative.requantize_32_to_8(x, scale, offset, parts, path=path), want,
                err_msg=f"{path} parts={parts}")


@needs_ext
@pytest.mark.parametrize("path", ["generic", "avx2", "vnni"])
def test_every_version_of_the_elementwise_loops(monkeypatch, path):
    """bias_add, clamp_u8 and quantize_u8 in the version `path` names, against NumPy."""
    if path not in _paths():
        pytest.skip(f"this CPU does not run the {path} path")
    rng = np.random.default_rng(11)
    for c in (1, 10, 16, 17, 40):
        x = rng.integers(0, 256, (33, c), dtype=np.uint8)
        table = rng.integers(-2**31, 2**31, 256).astype(np.int32)
        bias = rng.integers(-2**31, 2**31, c).astype(np.int32)
        want = (table[x].astype(np.int64) + bias).astype(np.int32)  # wraps as int32 adds
        np.testing.assert_array_equal(_qnative.bias_add(x, table, bias, 2, path=path), want)
        for lo, hi in ((0, 255), (7, 200), (200, 7)):
            np.testing.assert_array_equal(_qnative.clamp_u8(x, lo, hi, 2, path=path),
                                          np.minimum(np.maximum(x, lo), hi).astype(np.uint8))
    from tensorflux.kernels.cpu import quantization_ops as qo
    v = rng.normal(0, 3, 1000 + 7).astype(np.float32)
    v[:9] = [np.nan, np.inf, -np.inf, 0.5, -0.5, 1e30, -1e-45, 2.5, -0.0]
    for lo, hi in ((-1.0, 1.0), (0.0, 6.0), (-7.77, 2.1)):
        lo, hi = np.float32(lo), np.float32(hi)
        scale = np.float32(255.0 / float(hi - lo))
        shift = np.float32(qo._round_away(np.float32(lo * scale)))
        got = _qnative.quantize_u8(v, scale, shift, np.float32(0), np.float32(255), 2, path=path)
        with np.errstate(invalid="ignore"):
            q = qo._round_away(v * scale) - shift
            want = np.clip(q, np.float32(0), np.float32(255)).astype(np.int32).astype(np.uint8)
        np.testing.assert_array_equal(got, want, err_msg=f"range {lo} {hi}")


@needs_ext
def test_plain_c_products_only_when_asked(monkeypatch):
    """On a CPU without AVX2 the products stay with NumPy's float BLAS (faster than plain C)
    unless a path is asked for (`path=` or TENSORFLUX_QGEMM_PATH)."""
    a = np.full((4, 6), 7, np.uint8)
    real = _qnative._mod

    class NoSimd:
        def __getattr__(self, name):
            return getattr(real, name)

        @staticmethod
        def best_path():
            return 0

    monkeypatch.setattr(_qnative, "_mod", NoSimd())
    monkeypatch.setattr(_qnative, "_DEFAULT_PATH", -1)
    assert _qnative.matmul(a, a.T, 0, 0, 1) is None
    assert _qnative.conv2d(a.reshape(1, 4, 6, 1), a[:1, :1].reshape(1, 1, 1, 1), 0, 0, (1, 1),
                           (0, 0), (4, 6), 1) is None
    np.testing.assert_array_equal(_qnative.matmul(a, a.T, 0, 0, 1, path="generic"),
                                  _exact(a, a.T, 0, 0))
    monkeypatch.setattr(_qnative, "_DEFAULT_PATH", _qnative.PATHS["generic"])
    np.testing.assert_array_equal(_qnative.matmul(a, a.T, 1, 2, 1), _exact(a, a.T, 1, 2))


@needs_ext
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_and_the_path_variable():
    """A child forked after the pool started runs products on helpers of its own; the
    TENSORFLUX_QGEMM_PATH variable picks the product path (one subprocess for both)."""
    script = textwrap.dedent("""
        import os, numpy as np
        from tensorflux.kernels.cpu import _qnative
        assert _qnative._path(None) == _qnative.PATHS["generic"]
        a = np.full((3000, 40), 3, np.uint8)
        assert (_qnative.matmul(a, a.T[:, :24].copy(), 1, 2, 2) == 40 * 2 * 1).all()
        pid = os.fork()
        if pid == 0:
            ok = all((_qnative.matmul(a, a.T[:, :24].copy(), 1, 2, 2) == 80).all()
                     for _ in range(10))
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "TENSORFLUX_QGEMM_PATH": "generic"})
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
