"""`tf.distributions.Gamma(concentration, rate)` and its special case
`tf.distributions.Exponential(rate)` (concentration 1). Gamma samples come from
`random_gamma` (fully reparameterized: RandomGamma's implicit gradient reaches the
concentration, and dividing by the rate reaches the rate); Exponential samples are
-log(U) / rate with U uniform on [tiny, 1), as in TF1."""

from __future__ import annotations

import numpy as np

from tensorflux.distributions import distribution, kullback_leibler, util
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.math import math_impl
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    joining_ops,
    random_ext_ops,
    random_ops,
    special_math_ops,
    unary_ops,
)

__all__ = ["Exponential", "Gamma"]


class Gamma(distribution.Distribution):
    """Gamma(concentration alpha, rate beta): density beta^alpha x^(alpha-1) e^(-beta x)
    / Gamma(alpha) for x > 0."""

    _PARAM_NAMES = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=False, allow_nan_stats=True,
                 name="Gamma"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[concentration, rate]) as scope:
            p = util.checked_parameters({"concentration": concentration, "rate": rate},
                                        validate_args, positive=("concentration", "rate"))
            self._concentration, self._rate = p["concentration"], p["rate"]
        super().__init__(dtype=self._concentration.dtype,
                         reparameterization_type=distribution.FULLY_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters,
                         graph_parents=[self._concentration, self._rate], name=scope)

    @property
    def concentration(self):
        return self._concentration

    @property
    def rate(self):
        return self._rate

    def _batch_shape(self):
        return joining_ops.broadcast_static_shape(self._concentration.shape,
                                                  self._rate.shape)

    def _batch_shape_tensor(self):
        return joining_ops.broadcast_dynamic_shape(array_ops.shape(self._concentration),
                                                   array_ops.shape(self._rate))

    def _sample_n(self, n, seed=None):
        return random_ext_ops.random_gamma(shape=[n], alpha=self._concentration,
                                           beta=self._rate, dtype=self.dtype, seed=seed)

    def _log_prob(self, x):
        x = util.positive_sample(self.validate_args, x)
        unnormalized = (math_impl.xlogy(self._concentration - 1., x) - self._rate * x)
        normalization = (unary_ops.lgamma(self._concentration)
                         - self._concentration * unary_ops.log(self._rate))
        return unnormalized - normalization

    def _cdf(self, x):
        x = util.positive_sample(self.validate_args, x)
        return special_math_ops.igamma(self._concentration, self._rate * x)

    def _entropy(self):
        c = self._concentration
        return (c - unary_ops.log(self._rate) + unary_ops.lgamma(c)
                + (1. - c) * unary_ops.digamma(c))

    def _mean(self):
        return self._concentration / self._rate

    def _variance(self):
        return self._concentration / unary_ops.square(self._rate)

    def _stddev(self):
        return unary_ops.sqrt(self._concentration) / self._rate

    def _mode(self):
        mode = (self._concentration - 1.) / self._rate
        mode = mode * array_ops.ones_like(self._concentration)
        return util.nan_where_not(comparison_ops.greater(self._concentration, 1.), mode,
                                  self.allow_nan_stats,
                                  "mode not defined when any concentration <= 1")


class Exponential(Gamma):
    """Exponential(rate): density rate e^(-rate x) for x > 0."""

    _PARAM_NAMES = ("rate",)

    def __init__(self, rate, validate_args=False, allow_nan_stats=True, name="Exponential"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[rate]) as scope:
            rate = convert_to_tensor(rate, name="rate")
            super().__init__(concentration=array_ops.ones([], dtype=rate.dtype), rate=rate,
                             validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                             name=scope)
        self._parameters = {k: v for k, v in parameters.items()
                            if k not in ("self", "__class__")}

    def _sample_n(self, n, seed=None):
        shape = joining_ops.concat([[n], array_ops.shape(self._rate)], 0)
        uniform = random_ops.random_uniform(shape, minval=np.finfo(
            self.dtype.as_numpy_dtype).tiny, maxval=1., seed=seed, dtype=self.dtype)
        return -unary_ops.log(uniform) / self._rate

    def _log_survival_function(self, x):
        return -self._rate * x


@kullback_leibler.RegisterKL(Gamma, Gamma)
def _kl_gamma_gamma(g0, g1, name=None):
    """KL(Gamma(a0, b0) || Gamma(a1, b1)) = (a0 - a1) psi(a0) + lgamma(a1) - lgamma(a0)
    + a1 (log b0 - log b1) + a0 (b1 / b0 - 1)."""
    with graph_lib.name_scope(name or "kl_gamma_gamma",
                              values=[g0.concentration, g0.rate, g1.concentration, g1.rate]):
        return ((g0.concentration - g1.concentration) * unary_ops.digamma(g0.concentration)
                + unary_ops.lgamma(g1.concentration) - unary_ops.lgamma(g0.concentration)
                + g1.concentration * unary_ops.log(g0.rate)
                - g1.concentration * unary_ops.log(g1.rate)
                + g0.concentration * (g1.rate / g0.rate - 1.))
