"""`tf.distributions.Beta(concentration1, concentration0)`: densities
x^(c1-1) (1-x)^(c0-1) / B(c1, c0) on (0, 1). Samples are G1 / (G1 + G0) for gamma draws
G1 ~ Gamma(c1), G0 ~ Gamma(c0), the second seeded with TF1's derived seed (fully
reparameterized through RandomGamma's implicit gradient)."""

from __future__ import annotations

from tensorflux.debugging import check_ops
from tensorflux.distributions import distribution, kullback_leibler, util
from tensorflux.framework import graph as graph_lib
from tensorflux.math import math_impl
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    random_ext_ops,
    special_math_ops,
    unary_ops,
)

__all__ = ["Beta"]


class Beta(distribution.Distribution):
    """A batch of Beta distributions."""

    _PARAM_NAMES = ("concentration1", "concentration0")

    def __init__(self, concentration1=None, concentration0=None, validate_args=False,
                 allow_nan_stats=True, name="Beta"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[concentration1, concentration0]) as scope:
            p = util.checked_parameters(
                {"concentration1": concentration1, "concentration0": concentration0},
                validate_args, positive=("concentration1", "concentration0"))
            self._concentration1, self._concentration0 = p["concentration1"], p["concentration0"]
            self._total_concentration = self._concentration1 + self._concentration0
        super().__init__(dtype=self._total_concentration.dtype,
                         reparameterization_type=distribution.FULLY_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters,
                         graph_parents=[self._concentration1, self._concentration0,
                                        self._total_concentration], name=scope)

    @property
    def concentration1(self):
        return self._concentration1

    @property
    def concentration0(self):
        return self._concentration0

    @property
    def total_concentration(self):
        return self._total_concentration

    def _batch_shape(self):
        return self._total_concentration.shape

    def _batch_shape_tensor(self):
        return array_ops.shape(self._total_concentration)

    def _sample_n(self, n, seed=None):
        ones = array_ops.ones_like(self._total_concentration, dtype=self.dtype)
        gamma1 = random_ext_ops.random_gamma(shape=[n], alpha=ones * self._concentration1,
                                             dtype=self.dtype, seed=seed)
        gamma2 = random_ext_ops.random_gamma(shape=[n], alpha=ones * self._concentration0,
                                             dtype=self.dtype,
                                             seed=util.gen_new_seed(seed, "beta"))
        return gamma1 / (gamma1 + gamma2)

    def _unit_interval(self, x):
        if not self.validate_args:
            return x
        with graph_lib.control_dependencies([
                check_ops.assert_positive(x, message="sample must be positive"),
                check_ops.assert_less(x, array_ops.ones_like(x),
                                      message="sample must be less than 1")]):
            return array_ops.identity(x)

    def _log_normalization(self):
        return (unary_ops.lgamma(self._concentration1) + unary_ops.lgamma(self._concentration0)
                - unary_ops.lgamma(self._total_concentration))

    def _log_prob(self, x):
        x = self._unit_interval(x)
        return (math_impl.xlogy(self._concentration1 - 1., x)
                + (self._concentration0 - 1.) * unary_ops.log1p(-x)
                - self._log_normalization())

    def _cdf(self, x):
        x = self._unit_interval(x)
        return special_math_ops.betainc(self._concentration1, self._concentration0, x)

    def _entropy(self):
        return (self._log_normalization()
                - (self._concentration1 - 1.) * unary_ops.digamma(self._concentration1)
                - (self._concentration0 - 1.) * unary_ops.digamma(self._concentration0)
                + ((self._total_concentration - 2.)
                   * unary_ops.digamma(self._total_concentration)))

    def _mean(self):
        return self._concentration1 / self._total_concentration

    def _variance(self):
        mean = self._mean()
        return mean * (1. - mean) / (1. + self._total_concentration)

    def _mode(self):
        mode = (self._concentration1 - 1.) / (self._total_concentration - 2.)
        defined = comparison_ops.logical_and(comparison_ops.greater(self._concentration1, 1.),
                                             comparison_ops.greater(self._concentration0, 1.))
        return util.nan_where_not(defined, mode, self.allow_nan_stats,
                                  "Mode undefined for concentration1 <= 1 or "
                                  "concentration0 <= 1.")


@kullback_leibler.RegisterKL(Beta, Beta)
def _kl_beta_beta(d1, d2, name=None):
    """KL(d1 || d2) = log B(d2) - log B(d1) - sum_i psi(c_i1) (c_i2 - c_i1)
    + psi(total_1) (total_2 - total_1), the sum over concentration1 and concentration0."""
    with graph_lib.name_scope(name or "kl_beta_beta",
                              values=[d1.concentration1, d1.concentration0,
                                      d2.concentration1, d2.concentration0]):
        return (d2._log_normalization() - d1._log_normalization()
                - unary_ops.digamma(d1.concentration1)
                * (d2.concentration1 - d1.concentration1)
                - unary_ops.digamma(d1.concentration0)
                * (d2.concentration0 - d1.concentration0)
                + unary_ops.digamma(d1.total_concentration)
                * (d2.total_concentration - d1.total_concentration))
