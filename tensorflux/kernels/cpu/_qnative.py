"""The Python side of the optional C extension `_qkernels` (tensorflux/kernels/cpu/_qkernels.c):
the eight-bit kernels of kernels/cpu/quantization_ops.py in C.

  - `matmul`, `conv2d`: QuantizedMatMul and QuantizedConv2D's integer products of quint8
    operands with their zero points, in int32 (AVX-512 VNNI or AVX2, the best this CPU
    runs; `path=` or TENSORFLUX_QGEMM_PATH=generic|avx2|vnni asks for a given one, plain C
    included, which is otherwise left to NumPy's float products: see `_path`);
  - `requantize_32_to_8`: Requantize's fixed-point qint32 -> quint8 loop;
  - `bias_add`: QuantizedBiasAdd's table lookup plus a per-channel int32;
  - `clamp_u8`: QuantizedRelu / QuantizedRelu6 on quint8;
  - `quantize_u8`: QuantizeV2's MIN_FIRST loop into quint8 (float32 arithmetic, no FMA);
  - `conv2d_fused`, `matmul_fused`: the fused ops (QuantizedConv2DWithBias[AndRelu]And
    Requantize, QuantizedMatMulWithBias[AndRelu]AndRequantize): the product, + an int32
    bias per channel, requantize and clamp, applied per block of rows while it is in cache.

The values are the NumPy paths' exactly (integer arithmetic throughout; the products only
where every sum fits in int32, where NumPy's float products are exact too;
tests/kernels/test_qnative.py compares them). Every function returns None when it cannot
take the call (no extension, `TENSORFLUX_NATIVE=0`, another dtype, a product that could
leave int32) and the kernel runs its NumPy path.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from tensorflux.kernels import interrupt, intra_op

try:
    from tensorflux.kernels.cpu import _qkernels as _mod
except ImportError:  # not built (no C compiler at install time)
    _mod = None
if os.environ.get("TENSORFLUX_NATIVE", "1").strip() == "0":
    _mod = None

PATHS = {"generic": 0, "avx2": 1, "vnni": 2}
_DEFAULT_PATH = PATHS.get(os.environ.get("TENSORFLUX_QGEMM_PATH", "").strip().lower(), -1)
_INT32_BOUND = 1 << 31
_U8 = np.dtype(np.uint8)
_NO_STOP = contextlib.nullcontext((None, 0.0))


def available() -> bool:
    """True when the extension is loaded."""
    return _mod is not None


def best_path() -> str | None:
    """The product path this CPU runs ('vnni', 'avx2', 'generic'), None without the
    extension."""
    if _mod is None:
        return None
    return {v: k for k, v in PATHS.items()}[_mod.best_path()]


def _path(path: str | None) -> int | None:
    """The path a product asks for: `path`, else TENSORFLUX_QGEMM_PATH, else the best one;
    None when that would be plain C by default (a CPU without AVX2, or another
    architecture): there the NumPy path's float BLAS products are faster (measured on this
    x86 machine: the whole digits CNN 26.6 ms of CPU with plain C products, 23 with
    NumPy's, 4.1 with VNNI, 7.1 with AVX2)."""
    if path is not None:
        return PATHS[path]
    if _DEFAULT_PATH >= 0:
        return _DEFAULT_PATH
    return -1 if _mod.best_path() > PATHS["generic"] else None


def _exact(k: int, za: int, zb: int) -> bool:
    """Whether every (a - za)(b - zb) sum over k of quint8 values fits in int32 (then the
    wrapping int32 arithmetic of the C loops gives the exact value, as NumPy's float
    products do)."""
    ma, mb = max(abs(za), abs(255 - za)), max(abs(zb), abs(255 - zb))
    return k * ma * mb < _INT32_BOUND


def _stop_for(work: float):
    return interrupt.native_stop() if work > interrupt.CHUNK_FLOPS else _NO_STOP


def _parts(parts: int, work: float, floor: float = intra_op.MIN_FLOPS) -> int:
    return parts if work >= floor else 1


def matmul(a: np.ndarray, b: np.ndarray, za: int, zb: int, parts: int,
           path: str | None = None):
    """(a - za) @ (b - zb) as int32 for uint8 matrices a (m, k) and b (k, n), or None."""
    if _mod is None or a.dtype != _U8 or b.dtype != _U8 or a.ndim != 2 or b.ndim != 2:
        return None
    (m, k), n = a.shape, b.shape[1]
    if k == 0 or b.shape[0] != k or not _exact(k, za, zb):
        return None
    way = _path(path)
    if way is None:
        return None
    out = np.empty((m, n), np.int32)
    work = 2.0 * m * n * k
    with _stop_for(work) as (cell, deadline):
        done = _mod.gemm(np.ascontiguousarray(a), np.ascontiguousarray(b), out, m, k, n, za,
                         zb, way, _parts(parts, work), cell, deadline)
    if not done:
        interrupt.raise_stopped()
    return out


def conv2d(x: np.ndarray, w: np.ndarray, zx: int, zw: int, strides, pads, out_hw,
           parts: int, path: str | None = None):
    """QuantizedConv2D's product: (N, oh, ow, F) int32 of NHWC uint8 `x` and uint8 filter
    `w` (kh, kw, C, F) with zero points zx, zw; `pads` the (top, left) padding, the taps
    there count as real zero (zx); or None."""
    if _mod is None or x.dtype != _U8 or w.dtype != _U8 or not 0 <= zx <= 255:
        return None
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    if h == 0 or wd == 0 or c == 0 or not _exact(kh * kw * c, zx, zw):
        return None
    way = _path(path)
    if way is None:
        return None
    oh, ow = out_hw
    out = np.empty((n, oh, ow, f), np.int32)
    work = 2.0 * out.size * kh * kw * c
    with _stop_for(work) as (cell, deadline):
        done = _mod.conv(np.ascontiguousarray(x), np.ascontiguousarray(w), out, (n, h, wd, c),
                         (kh, kw, f), (strides[0], strides[1], pads[0], pads[1], oh, ow), zx,
                         zw, way, _parts(parts, work), cell, deadline)
    if not done:
        interrupt.raise_stopped()
    return out


def _epilogue(bias, epilogue, n):
    """(bias as contiguous int32 of n, (scale, offset, lo, hi)) for the fused calls, or
    None when the C loops cannot take them (as `requantize_32_to_8` and `clamp_u8`)."""
    scale, offset, lo, hi = epilogue
    if bias.dtype != np.int32 or bias.shape != (n,) or not 0 <= lo <= 255 or \
            not 0 <= hi <= 255 or not (-(1 << 63) <= scale < 1 << 63 and
                                       -(1 << 63) <= offset < 1 << 63):
        return None
    return np.ascontiguousarray(bias), (int(scale), int(offset), int(lo), int(hi))


def matmul_fused(a: np.ndarray, b: np.ndarray, za: int, zb: int, bias: np.ndarray,
                 epilogue, parts: int, path: str | None = None):
    """uint8 clamp(requantize((a - za) @ (b - zb) + bias), lo, hi) with epilogue =
    (scale, offset, lo, hi): `matmul`, then `requantize_32_to_8` of its sum with the int32
    `bias` (wrapping) and `clamp_u8`, in one pass over each block of rows; or None."""
    if _mod is None or a.dtype != _U8 or b.dtype != _U8 or a.ndim != 2 or b.ndim != 2:
        return None
    (m, k), n = a.shape, b.shape[1]
    if k == 0 or n == 0 or b.shape[0] != k or not _exact(k, za, zb):
        return None
    way, epi = _path(path), _epilogue(bias, epilogue, n)
    if way is None or epi is None:
        return None
    out = np.empty((m, n), np.uint8)
    work = 2.0 * m * n * k
    with _stop_for(work) as (cell, deadline):
        done = _mod.gemm_fused(np.ascontiguousarray(a), np.ascontiguousarray(b), epi[0], out,
                               m, k, n, za, zb, epi[1], way, _parts(parts, work), cell,
                               deadline)
    if not done:
        interrupt.raise_stopped()
    return out


def conv2d_fused(x: np.ndarray, w: np.ndarray, zx: int, zw: int, strides, pads, out_hw,
                 bias: np.ndarray, epilogue, parts: int, path: str | None = None):
    """`conv2d`'s product with `matmul_fused`'s epilogue, as uint8 (N, oh, ow, F); or
    None."""
    if _mod is None or x.dtype != _U8 or w.dtype != _U8 or not 0 <= zx <= 255:
        return None
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    if h == 0 or wd == 0 or c == 0 or f == 0 or not _exact(kh * kw * c, zx, zw):
        return None
    way, epi = _path(path), _epilogue(bias, epilogue, f)
    if way is None or epi is None:
        return None
    oh, ow = out_hw
    out = np.empty((n, oh, ow, f), np.uint8)
    work = 2.0 * out.size * kh * kw * c
    with _stop_for(work) as (cell, deadline):
        done = _mod.conv_fused(np.ascontiguousarray(x), np.ascontiguousarray(w), epi[0], out,
                               (n, h, wd, c), (kh, kw, f),
                               (strides[0], strides[1], pads[0], pads[1], oh, ow), zx, zw,
                               epi[1], way, _parts(parts, work), cell, deadline)
    if not done:
        interrupt.raise_stopped()
    return out


def _elementwise_parts(parts: int, size: int) -> int:
    return _parts(parts, size, intra_op.MIN_ELEMENTS)


def _loop(path: str | None) -> int:
    """The version of an elementwise loop: `path`'s ('generic', 'avx2', 'vnni': the AVX-512
    one), else the best this CPU runs (they all give the same values)."""
    return -1 if path is None else PATHS[path]


def requantize_32_to_8(x: np.ndarray, scale_fp: int, offset: int, parts: int,
                       path: str | None = None):
    """uint8 clip(((x * scale_fp) >> 32 + offset) >> 16, 0, 255) of int32 `x` with int64
    wrapping (Requantize's fixed point), or None."""
    if _mod is None or x.dtype != np.int32 or not (
            -(1 << 63) <= scale_fp < 1 << 63 and -(1 << 63) <= offset < 1 << 63):
        return None
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.uint8)
    _mod.requantize(x, out, x.size, scale_fp, offset, _elementwise_parts(parts, x.size),
                    _loop(path))
    return out


def bias_add(x: np.ndarray, table: np.ndarray, bias: np.ndarray, parts: int,
             path: str | None = None):
    """int32 table[x] + bias along the last axis (wrapping) for 8-bit `x`, or None."""
    if _mod is None or x.dtype.itemsize != 1 or x.ndim < 1 or x.shape[-1] == 0 or \
            table.dtype != np.int32 or table.shape != (256,) or bias.dtype != np.int32 or \
            bias.shape != (x.shape[-1],):
        return None
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.int32)
    _mod.bias_add(x.view(_U8), np.ascontiguousarray(table), np.ascontiguousarray(bias), out,
                  x.size, bias.size, _elementwise_parts(parts, x.size), _loop(path))
    return out


def quantize_u8(x: np.ndarray, scale, shift, lower, upper, parts: int,
                path: str | None = None):
    """uint8 of clip(round_half_away(x * scale) - shift, lower, upper) for float32 `x`,
    float32 arithmetic (QuantizeV2's MIN_FIRST loop; NaN gives 0 as NumPy's cast does),
    or None."""
    if _mod is None or x.dtype != np.float32 or not (0 <= lower and upper <= 255):
        return None
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.uint8)
    _mod.quantize_u8(x, out, x.size, float(scale), float(shift), float(lower), float(upper),
                     _elementwise_parts(parts, x.size), _loop(path))
    return out


def clamp_u8(x: np.ndarray, lo: int, hi: int, parts: int, path: str | None = None):
    """min(max(x, lo), hi) of uint8 `x`, or None."""
    if _mod is None or x.dtype != _U8 or not 0 <= lo <= 255 or not 0 <= hi <= 255:
        return None
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.uint8)
    _mod.clamp_u8(x, out, x.size, lo, hi, _elementwise_parts(parts, x.size), _loop(path))
    return out
