"""`tf.distributions.Dirichlet(concentration)`: distributions on the simplex of the last
axis (event shape `[k]`, batch shape the rest). Samples are gamma draws normalized over
the last axis (fully reparameterized through RandomGamma's implicit gradient)."""

from __future__ import annotations

from tensorflux.debugging import check_ops
from tensorflux.distributions import distribution, kullback_leibler, util
from tensorflux.framework import graph as graph_lib
from tensorflux.math import math_impl
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    linalg_ops,
    math_ops,
    random_ext_ops,
    reduction_ops,
    special_math_ops,
    unary_ops,
)

__all__ = ["Dirichlet"]


class Dirichlet(distribution.Distribution):
    """A batch of Dirichlet distributions over `k` categories."""

    def __init__(self, concentration, validate_args=False, allow_nan_stats=True,
                 name="Dirichlet"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[concentration]) as scope:
            self._concentration = util.checked_parameters(
                {"concentration": concentration}, validate_args,
                positive=("concentration",))["concentration"]
            if validate_args:
                with graph_lib.control_dependencies([check_ops.assert_rank_at_least(
                        self._concentration, 1)]):
                    self._concentration = array_ops.identity(self._concentration)
            self._total_concentration = reduction_ops.reduce_sum(self._concentration, -1)
        super().__init__(dtype=self._concentration.dtype,
                         reparameterization_type=distribution.FULLY_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters,
                         graph_parents=[self._concentration, self._total_concentration],
                         name=scope)

    @property
    def concentration(self):
        return self._concentration

    @property
    def total_concentration(self):
        return self._total_concentration

    def _batch_shape(self):
        return self._concentration.shape.with_rank_at_least(1)[:-1]

    def _batch_shape_tensor(self):
        return array_ops.shape(self._total_concentration)

    def _event_shape(self):
        return self._concentration.shape.with_rank_at_least(1)[-1:]

    def _event_shape_tensor(self):
        return array_ops.shape(self._concentration)[-1:]

    def _sample_n(self, n, seed=None):
        gamma = random_ext_ops.random_gamma(shape=[n], alpha=self._concentration,
                                            dtype=self.dtype, seed=seed)
        return gamma / reduction_ops.reduce_sum(gamma, -1, keepdims=True)

    def _log_prob(self, x):
        x = util.positive_sample(self.validate_args, x)
        return (reduction_ops.reduce_sum(math_impl.xlogy(self._concentration - 1., x), -1)
                - special_math_ops.lbeta(self._concentration))

    def _entropy(self):
        k = math_ops.cast(array_ops.shape(self._concentration)[-1], self.dtype)
        total = self._total_concentration
        return (special_math_ops.lbeta(self._concentration)
                + (total - k) * unary_ops.digamma(total)
                - reduction_ops.reduce_sum((self._concentration - 1.)
                                           * unary_ops.digamma(self._concentration), -1))

    def _mean(self):
        return self._concentration / self._total_concentration[..., array_ops.newaxis]

    def _variance(self):
        total = self._total_concentration[..., array_ops.newaxis]
        mean = self._concentration / total
        return mean * (1. - mean) / (1. + total)

    def _covariance(self):
        total = self._total_concentration[..., array_ops.newaxis, array_ops.newaxis]
        mean = self._mean()
        outer = mean[..., :, array_ops.newaxis] * mean[..., array_ops.newaxis, :]
        return (linalg_ops.matrix_diag(mean) - outer) / (1. + total)

    def _mode(self):
        k = math_ops.cast(array_ops.shape(self._concentration)[-1], self.dtype)
        mode = ((self._concentration - 1.)
                / (self._total_concentration[..., array_ops.newaxis] - k))
        defined = reduction_ops.reduce_all(comparison_ops.greater(self._concentration, 1.),
                                           axis=-1, keepdims=True)
        defined = comparison_ops.logical_and(defined, array_ops.ones_like(
            mode, dtype=defined.dtype))  # broadcast to the mode's shape
        return util.nan_where_not(defined, mode, self.allow_nan_stats,
                                  "Mode undefined when any concentration <= 1")


@kullback_leibler.RegisterKL(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(d1, d2, name=None):
    """KL(d1 || d2) = sum_k (a1_k - a2_k)(psi(a1_k) - psi(sum a1)) - log B(a1)
    + log B(a2)."""
    with graph_lib.name_scope(name or "kl_dirichlet_dirichlet",
                              values=[d1.concentration, d2.concentration]):
        digamma_sum = unary_ops.digamma(
            reduction_ops.reduce_sum(d1.concentration, axis=-1, keepdims=True))
        digamma_diff = unary_ops.digamma(d1.concentration) - digamma_sum
        return (reduction_ops.reduce_sum((d1.concentration - d2.concentration)
                                         * digamma_diff, axis=-1)
                - special_math_ops.lbeta(d1.concentration)
                + special_math_ops.lbeta(d2.concentration))
