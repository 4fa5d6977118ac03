"""`tf.distributions.Normal(loc, scale)`: Gaussians, batch shape the broadcast of the two
parameters. Samples are `loc + scale * N(0, 1)` (fully reparameterized: gradients reach
loc and scale through `sample`)."""

from __future__ import annotations

import math

from tensorflux.debugging import check_ops
from tensorflux.distributions import distribution, kullback_leibler, util
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    joining_ops,
    random_ops,
    special_math_ops,
    unary_ops,
)

__all__ = ["Normal"]

_HALF_LOG_TWO_PI = 0.5 * math.log(2. * math.pi)
_INV_SQRT2 = 1. / math.sqrt(2.)


class Normal(util.LocScaleMixin, distribution.Distribution):
    """The normal distribution N(loc, scale**2)."""

    _PARAM_NAMES = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[loc, scale]) as scope:
            p = distribution.float_parameters({"loc": loc, "scale": scale})
            self._loc, self._scale = p["loc"], p["scale"]
            if validate_args:
                with graph_lib.control_dependencies([check_ops.assert_positive(self._scale)]):
                    self._scale = array_ops.identity(self._scale, name="scale")
        super().__init__(dtype=self._scale.dtype,
                         reparameterization_type=distribution.FULLY_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters, graph_parents=[self._loc, self._scale],
                         name=scope)

    def _sample_n(self, n, seed=None):
        shape = joining_ops.concat([[n], self.batch_shape_tensor()], 0)
        draws = random_ops.random_normal(shape, mean=0., stddev=1., dtype=self._loc.dtype,
                                         seed=seed)
        return draws * self._scale + self._loc

    def _z(self, x):
        with graph_lib.name_scope("standardize", values=[x]):
            return (x - self._loc) / self._scale

    def _log_prob(self, x):
        return -0.5 * unary_ops.square(self._z(x)) - (_HALF_LOG_TWO_PI
                                                      + unary_ops.log(self._scale))

    def _cdf(self, x):
        return 0.5 * unary_ops.erfc(-self._z(x) * _INV_SQRT2)

    def _log_cdf(self, x):
        return _log_ndtr(self._z(x))

    def _survival_function(self, x):
        return 0.5 * unary_ops.erfc(self._z(x) * _INV_SQRT2)

    def _log_survival_function(self, x):
        return _log_ndtr(-self._z(x))

    def _quantile(self, p):
        return self._loc + self._scale * special_math_ops.ndtri(p)

    def _entropy(self):
        scale = self._scale * array_ops.ones_like(self._loc)
        return 0.5 + _HALF_LOG_TWO_PI + unary_ops.log(scale)

    def _mean(self):
        return self._loc * array_ops.ones_like(self._scale)

    def _stddev(self):
        return self._scale * array_ops.ones_like(self._loc)

    def _mode(self):
        return self._mean()


def _log_ndtr(z):
    """log Phi(z) in three pieces, each where it is accurate in float32: above 5,
    log1p(-Phi(-z)); from -10 to 5, log(Phi(z)); below -10 the asymptotic series
    log(phi(z) / -z * (1 - 1/z^2 + 3/z^4 - 15/z^6))."""
    lower, upper = comparison_ops.less(z, -10.), comparison_ops.greater(z, 5.)
    ones = array_ops.ones_like(z)
    z_low = comparison_ops.where(lower, z, ones * -10.)  # each piece sees only safe values
    z_mid = comparison_ops.where(lower, ones * -10., comparison_ops.where(upper, ones * 5., z))
    z_high = comparison_ops.where(upper, z, ones * 5.)
    z2 = unary_ops.square(z_low)
    series = 1. - 1. / z2 + 3. / (z2 * z2) - 15. / (z2 * z2 * z2)
    low = -0.5 * z2 - _HALF_LOG_TWO_PI - unary_ops.log(-z_low) + unary_ops.log(series)
    mid = unary_ops.log(0.5 * unary_ops.erfc(-z_mid * _INV_SQRT2))
    high = unary_ops.log1p(-0.5 * unary_ops.erfc(z_high * _INV_SQRT2))
    return comparison_ops.where(lower, low, comparison_ops.where(upper, high, mid))


@kullback_leibler.RegisterKL(Normal, Normal)
def _kl_normal_normal(n_a, n_b, name=None):
    """KL(N(m_a, s_a) || N(m_b, s_b)) = (m_a - m_b)^2 / (2 s_b^2)
    + (r - 1 - log r) / 2 with r = s_a^2 / s_b^2."""
    with graph_lib.name_scope(name or "kl_normal_normal",
                              values=[n_a.loc, n_b.loc, n_a.scale, n_b.scale]):
        var_b = unary_ops.square(n_b.scale)
        ratio = unary_ops.square(n_a.scale) / var_b
        return (unary_ops.square(n_a.loc - n_b.loc) / (2. * var_b)
                + 0.5 * (ratio - 1. - unary_ops.log(ratio)))
