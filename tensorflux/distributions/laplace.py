"""`tf.distributions.Laplace(loc, scale)`: densities exp(-|x - loc| / scale) / (2 scale).
Samples are loc - scale sign(U) log1p(-|U|) with U uniform on (-1, 1) (fully
reparameterized)."""

from __future__ import annotations

import math

import numpy as np

from tensorflux.distributions import distribution, util
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    joining_ops,
    random_ops,
    unary_ops,
)

__all__ = ["Laplace"]


def _log_cdf_laplace(z):
    """log of the standard Laplace CDF: z - log 2 below 0, log1p(-exp(-z) / 2) above."""
    lower = -math.log(2.) + z
    upper = unary_ops.log1p(-0.5 * unary_ops.exp(-unary_ops.abs(z)))
    return comparison_ops.where(comparison_ops.less(z, 0.), lower, upper)


class Laplace(util.LocScaleMixin, distribution.Distribution):
    """A batch of Laplace distributions."""

    _PARAM_NAMES = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True,
                 name="Laplace"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[loc, scale]) as scope:
            p = util.checked_parameters({"loc": loc, "scale": scale}, validate_args,
                                        positive=("scale",))
            self._loc, self._scale = p["loc"], p["scale"]
        super().__init__(dtype=self._loc.dtype,
                         reparameterization_type=distribution.FULLY_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters, graph_parents=[self._loc, self._scale],
                         name=scope)

    def _sample_n(self, n, seed=None):
        shape = joining_ops.concat([[n], self.batch_shape_tensor()], 0)
        np_dtype = self.dtype.as_numpy_dtype
        # the open interval (-1, 1): the smallest number above -1 is -1 + eps/2
        uniform = random_ops.random_uniform(shape, minval=np.nextafter(np_dtype(-1.),
                                                                       np_dtype(0.)),
                                            maxval=1., dtype=self.dtype, seed=seed)
        return (self._loc - self._scale * unary_ops.sign(uniform)
                * unary_ops.log1p(-unary_ops.abs(uniform)))

    def _z(self, x):
        return (x - self._loc) / self._scale

    def _log_prob(self, x):
        return -unary_ops.abs(self._z(x)) - (math.log(2.) + unary_ops.log(self._scale))

    def _cdf(self, x):
        z = self._z(x)
        return 0.5 - 0.5 * unary_ops.sign(z) * unary_ops.expm1(-unary_ops.abs(z))

    def _log_cdf(self, x):
        return _log_cdf_laplace(self._z(x))

    def _log_survival_function(self, x):
        return _log_cdf_laplace(-self._z(x))

    def _entropy(self):
        scale = self._scale + array_ops.zeros_like(self._loc)
        return math.log(2.) + 1. + unary_ops.log(scale)

    def _mean(self):
        return self._loc + array_ops.zeros_like(self._scale)

    def _stddev(self):
        return math.sqrt(2.) * self._scale * array_ops.ones_like(self._loc)

    def _mode(self):
        return self._mean()
