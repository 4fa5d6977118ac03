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
long long c = i % C; long long t = i / C; long long w = t % W; t /= W;
long long h = t % H; long long n = t / H;
"""

_SOURCES = {
    # dx[n,h,w,c] = sum over taps (a, b) whose window covers (h, w) of
    # dcols[n, oh, ow, a, b, c], with (oh, ow) the window's output position.
    "col2im": (
        "raw T dcols, int64 H, int64 W, int64 C, int64 OH, int64 OW, int64 KH, int64 KW, "
        "int64 SH, int64 SW, int64 DH, int64 DW, int64 PT, int64 PL", "T dx",
        _INDEX + """
T acc = 0;
for (long long a = 0; a < KH; ++a) {
  long long r = h + PT - a * DH;
  if (r < 0 || r % SH) continue;
  long long oh = r / SH; if (oh >= OH) continue;
  for (long long b = 0; b < KW; ++b) {
    long long s = w + PL - b * DW;
    if (s < 0 || s % SW) continue;
    long long ow = s / SW; if (ow >= OW) continue;
    acc += dcols[((((n * OH + oh) * OW + ow) * KH + a) * KW + b) * C + c];
  }
}
dx = acc;
"""),
    # For each output of a max pool: the first tap (a * KW + b) holding the maximum.
    "pool_argmax": (
        "raw T x, int64 H, int64 W, int64 C, int64 OH, int64 OW, int64 KH, int64 KW, "
        "int64 SH, int64 SW, int64 PT, int64 PL", "int32 arg",
        """
long long c = i % C; long long t = i / C; long long ow = t % OW; t /= OW;
long long oh = t % OH; long long n = t / OH;
int best = -1; T m = 0;
for (long long a = 0; a < KH; ++a) {
  long long h = oh * SH + a - PT; if (h < 0 || h >= H) continue;
  for (long long b = 0; b < KW; ++b) {
    long long w = ow * SW + b - PL; if (w < 0 || w >= W) continue;
    T v = x[((n * H + h) * W + w) * C + c];
    if (best < 0 || v > m) { m = v; best = (int)(a * KW + b); }
  }
}
arg = best;
"""),
    # The max of each window (padding ignored, NaN skipped as by fmax).
    "pool_max": (
        "raw T x, int64 H, int64 W, int64 C, int64 OH, int64 OW, int64 KH, int64 KW, "
        "int64 SH, int64 SW, int64 PT, int64 PL", "T y",
        """
long long c = i % C; long long t = i / C; long long ow = t % OW; t /= OW;
long long oh = t % OH; long long n = t / OH;
bool any = false; T m = 0;
for (long long a = 0; a < KH; ++a) {
  long long h = oh * SH + a - PT; if (h < 0 || h >= H) continue;
  for (long long b = 0; b < KW; ++b) {
    long long w = ow * SW + b - PL; if (w < 0 || w >= W) continue;
    T v = x[((n * H + h) * W + w) * C + c];
    if (!any || v > m || m != m) { m = v; any = true; }
  }
}
y = any ? m : (T)(-1.0 / 0.0);
"""),
    # dx[n,h,w,c] = sum of dy over the windows whose first maximum is (h, w).
    "pool_route": (
        "raw T dy, raw int32 arg, int64 H, int64 W, int64 C, int64 OH, int64 OW, int64 KH, "
        "int64 KW, int64 SH, int64 SW, int64 PT, int64 PL", "T dx",
        _INDEX + """
T acc = 0;
for (long long a = 0; a < KH; ++a) {
  long long r = h + PT - a;
  if (r < 0 || r % SH) continue;
  long long oh = r / SH; if (oh >= OH) continue;
  for (long long b = 0; b < KW; ++b) {
    long long s = w + PL - b;
    if (s < 0 || s % SW) continue;
    long long ow = s / SW; if (ow >= OW) continue;
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
