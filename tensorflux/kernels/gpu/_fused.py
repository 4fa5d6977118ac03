"""CUDA kernels (CuPy ElementwiseKernels) for the window gathers that the array-module
code does tap by tap: col2im (the input gradient of a convolution) and the routing of a
max pool's gradient. Each is one pass over the output instead of one per window tap.

Only with CuPy (`get(name)` is None otherwise, and the callers keep their tap loops). A
kernel that fails to compile is reported once through the logger and not tried again, so
the tap loops still serve.
"""

from __future__ import annotations

import logging

from tensorflux.kernels.gpu import backend

_log = logging.getLogger("tensorflux")
_CACHE: dict = {}

_INDEX = """
int c = (int)(i % C); long long t = i / C; int w = (int)(t % W); t /= W;
int h = (int)(t % H); long long n = t / H;
"""

# The first maximum of output (n, oh, ow, c)'s window (padding skipped): `best` is `tap` of
# it (an int expression of a, b, h, w), -1 for a window wholly in the padding.
_FIRST_MAX = """
int best = -1; T m = 0;
for (int a = 0; a < KH; ++a) {{
  int h = oh * SH + a - PT; if (h < 0 || h >= H) continue;
  for (int b = 0; b < KW; ++b) {{
    int w = ow * SW + b - PL; if (w < 0 || w >= W) continue;
    T v = x[((n * H + h) * W + w) * C + c];
    if (best < 0 || v > m) {{ m = v; best = (int)({tap}); }}
  }}
}}
"""

_SOURCES = {
    # dx[n,h,w,c] = sum over taps (a, b) whose window covers (h, w) of
    # dcols[n, oh, ow, a, b, c], with (oh, ow) the window's output position.
    "col2im": (
        "raw T dcols, int32 H, int32 W, int32 C, int32 OH, int32 OW, int32 KH, int32 KW, "
        "int32 SH, int32 SW, int32 DH, int32 DW, int32 PT, int32 PL", "T dx",
        _INDEX + """
T acc = 0;
for (int a = 0; a < KH; ++a) {
  int r = h + PT - a * DH;
  if (r < 0 || r % SH) continue;
  int oh = r / SH; if (oh >= OH) continue;
  for (int b = 0; b < KW; ++b) {
    int s = w + PL - b * DW;
    if (s < 0 || s % SW) continue;
    int ow = s / SW; if (ow >= OW) continue;
    acc += dcols[((((n * OH + oh) * OW + ow) * KH + a) * KW + b) * C + c];
  }
}
dx = acc;
"""),
    # For each output of a max pool: the first tap (a * KW + b) holding the maximum.
    "pool_argmax": (
        "raw T x, int32 H, int32 W, int32 C, int32 OH, int32 OW, int32 KH, int32 KW, "
        "int32 SH, int32 SW, int32 PT, int32 PL", "int32 arg",
        """
int c = (int)(i % C); long long t = i / C; int ow = (int)(t % OW); t /= OW;
int oh = (int)(t % OH); long long n = t / OH;
""" + _FIRST_MAX.format(tap="a * KW + b") + """
arg = best;
"""),
    # The max of each window (padding ignored, NaN skipped as by fmax).
    "pool_max": (
        "raw T x, int32 H, int32 W, int32 C, int32 OH, int32 OW, int32 KH, int32 KW, "
        "int32 SH, int32 SW, int32 PT, int32 PL", "T y",
        """
int c = (int)(i % C); long long t = i / C; int ow = (int)(t % OW); t /= OW;
int oh = (int)(t % OH); long long n = t / OH;
bool any = false; T m = 0;
for (int a = 0; a < KH; ++a) {
  int h = oh * SH + a - PT; if (h < 0 || h >= H) continue;
  for (int b = 0; b < KW; ++b) {
    int w = ow * SW + b - PL; if (w < 0 || w >= W) continue;
    T v = x[((n * H + h) * W + w) * C + c];
    if (!any || v > m || m != m) { m = v; any = true; }
  }
}
y = any ? m : (T)(-1.0 / 0.0);
"""),
    # Partial column sums of a (M, C) matrix: y[p, c] = sum of x[r, c] for r = p mod P
    # (adjacent threads read adjacent columns; full float accumulation, no TF32).
    "colsum_partial": ("raw T x, int64 M, int32 C, int32 P", "T y", """
int c = (int)(i % C); long long p = i / C;
T acc = 0;
for (long long r = p; r < M; r += P) acc += x[r * C + c];
y = acc;
"""),
    # ReLU's gradient in one pass.
    "relu_grad": ("T g, T x", "T y", "y = x > (T)0 ? g : (T)0;"),
    # One pass of MaxPoolGrad for float32/float64 arrays of fewer than 2**31 elements
    # (32-bit index math): each output finds its window's first maximum and adds its
    # gradient there (atomically: windows overlap). dx starts at zero.
    "pool_scatter": (
        "T g, raw T x, int32 H, int32 W, int32 C, int32 OH, int32 OW, int32 KH, int32 KW, "
        "int32 SH, int32 SW, int32 PT, int32 PL", "raw T dx",
        """
unsigned int j = (unsigned int)i;
int c = (int)(j % (unsigned int)C); unsigned int t = j / (unsigned int)C;
int ow = (int)(t % (unsigned int)OW); t /= (unsigned int)OW;
int oh = (int)(t % (unsigned int)OH); unsigned int n = t / (unsigned int)OH;
""" + _FIRST_MAX.format(tap="h * W + w") + """
if (best >= 0) atomicAdd(&dx[(n * H * W + best) * C + c], g);
"""),
    # dx[n,h,w,c] = sum of dy over the windows whose first maximum is (h, w).
    "pool_route": (
        "raw T dy, raw int32 arg, int32 H, int32 W, int32 C, int32 OH, int32 OW, int32 KH, "
        "int32 KW, int32 SH, int32 SW, int32 PT, int32 PL", "T dx",
        _INDEX + """
T acc = 0;
for (int a = 0; a < KH; ++a) {
  int r = h + PT - a;
  if (r < 0 || r % SH) continue;
  int oh = r / SH; if (oh >= OH) continue;
  for (int b = 0; b < KW; ++b) {
    int s = w + PL - b;
    if (s < 0 || s % SW) continue;
    int ow = s / SW; if (ow >= OW) continue;
    long long o = ((n * OH + oh) * OW + ow) * C + c;
    if (arg[o] == (int)(a * KW + b)) acc += dy[o];
  }
}
dx = acc;
"""),
}


def get(name: str):
    """The ElementwiseKernel `name`, or None (no CuPy, or it failed before)."""
    b = backend.backend()
    if b.cupy is None:
        return None
    if name not in _CACHE:
        params, out, body = _SOURCES[name]
        _CACHE[name] = b.cupy.ElementwiseKernel(params, out, body, f"tfx_{name}")
    return _CACHE[name]


def run(name: str, *args, **kwargs):
    """Runs kernel `name`; None when it is unavailable or fails to build (then never
    again)."""
    k = get(name)
    if k is None:
        return None
    try:
        return k(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - a compile error: the caller's loop serves
        _log.warning("GPU kernel %s unavailable, using the tap loop: %s", name, e)
        _CACHE[name] = None
        return None


def column_sum(x2):
    """The column sums of contiguous 2-D `x2` (a bias gradient, a reduction over leading
    axes): one pass of partial sums over row stripes, then a small reduction. None without
    CuPy."""
    if get("colsum_partial") is None:
        return None
    m, c = x2.shape
    stripes = max(1, min(m, 262144 // max(c, 1)))
    partial = backend.xp().empty((stripes, c), dtype=x2.dtype)
    if run("colsum_partial", x2, m, c, stripes, partial) is None:
        return None
    return partial.sum(axis=0)
