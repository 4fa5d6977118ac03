"""CPU kernels of the special functions (tensorflux/ops/special_math_ops.py), from
`scipy.special` (an optional dependency: without SciPy they are UnimplementedError at run
time). float16/bfloat16 inputs are computed in float32."""

from __future__ import annotations

import warnings

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu._math_common import _LOW_PRECISION, _binary, _heavy
from tensorflux.kernels.registry import kernel

try:  # optional: SciPy's special functions
    from scipy import special as _special
except ImportError:  # pragma: no cover - depends on the environment
    _special = None

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


def _scipy(name):
    if _special is None:  # pragma: no cover - depends on the environment
        raise errors.UnimplementedError(None, None, f"{name} needs SciPy (scipy.special), "
                                                    f"which is not installed")
    return _special


def _in_dtype(fn, name):
    """fn(*xs) computed in float32 for half inputs (float64 otherwise), cast to xs[0]'s
    dtype."""
    def compute(*xs):
        dtype = np.asarray(xs[0]).dtype
        work = np.float32 if dtype in _LOW_PRECISION else None
        args = [np.asarray(x, work) if work else np.asarray(x) for x in xs]
        return np.asarray(fn(_scipy(name), *args)).astype(dtype)

    return compute


def _polygamma(special, n, x):
    ok = (n >= 0) & (n == np.floor(n))
    out = special.polygamma(np.where(ok, n, 0).astype(np.int64), x)
    return np.where(ok, out, np.nan)


# Large outputs in blocks that check the step (_math_common._heavy): the same values.
kernel("Igamma")(_heavy(_in_dtype(lambda s, a, x: s.gammainc(a, x), "gammainc"), 2))
kernel("Igammac")(_heavy(_in_dtype(lambda s, a, x: s.gammaincc(a, x), "gammaincc"), 2))
kernel("Zeta")(_heavy(_in_dtype(lambda s, x, q: s.zeta(x, q), "zeta"), 2))
kernel("Polygamma")(_heavy(_in_dtype(_polygamma, "polygamma"), 2))


def _igamma_grad_a(special, a, x):
    """d/da P(a, x) from the series P = sum_n exp((a + n) log x - x - lgamma(a + n + 1)):
    dP/da = log(x) P - sum_n term_n digamma(a + n + 1). Terms are summed until they no
    longer change the sums (at most 100000 of them)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    safe_x = np.where(x > 0, x, 1.0)
    log_x = np.log(safe_x)
    total, weighted = np.zeros(a.shape), np.zeros(a.shape)
    for n in range(100000):
        term = np.exp((a + n) * log_x - safe_x - special.gammaln(a + n + 1))
        total += term
        weighted += term * special.digamma(a + n + 1)
        if n > x.max(initial=0.0) and np.all(term <= 1e-17 * np.maximum(total, 1e-300)):
            break
    out = log_x * total - weighted
    return np.where(x > 0, out, 0.0)


kernel("IgammaGradA")(_binary(_in_dtype(_igamma_grad_a, "gammaln")))


kernel("Betainc")(_heavy(_in_dtype(lambda s, a, b, x: s.betainc(a, b, x), "betainc"), 3))


def _unary_special(function_name):
    """The kernel `compute(ctx, x)` of scipy.special.<function_name>."""
    return _heavy(_in_dtype(lambda special, x: getattr(special, function_name)(x),
                            function_name), 1)


for _op, _fn in [("Erfinv", "erfinv"), ("Ndtri", "ndtri"), ("BesselI0e", "i0e"),
                 ("BesselI1e", "i1e"), ("BesselI0", "i0"), ("BesselI1", "i1"),
                 ("BesselJ0", "j0"), ("BesselJ1", "j1"), ("BesselY0", "y0"),
                 ("BesselY1", "y1"), ("BesselK0", "k0"), ("BesselK0e", "k0e"),
                 ("BesselK1", "k1"), ("BesselK1e", "k1e"), ("Dawsn", "dawsn"),
                 ("Expint", "expi"), ("Spence", "spence")]:
    kernel(_op)(_unary_special(_fn))

# scipy.special.fresnel gives (S(x), C(x)) together
kernel("FresnelSin")(_heavy(_in_dtype(lambda special, x: special.fresnel(x)[0], "fresnel"),
                            1))
kernel("FresnelCos")(_heavy(_in_dtype(lambda special, x: special.fresnel(x)[1], "fresnel"),
                            1))
