"""`tf.distributions.StudentT(df, loc, scale)`: Student's t with `df` degrees of freedom,
shifted and scaled. Samples are N / sqrt(G / df) * scale + loc with N standard normal and
G ~ Gamma(df / 2, rate 1/2) (the second draw seeded with TF1's derived seed; fully
reparameterized)."""

from __future__ import annotations

import math

from tensorflux.distributions import distribution, util
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    joining_ops,
    random_ext_ops,
    random_ops,
    special_math_ops,
    unary_ops,
)

__all__ = ["StudentT"]


class StudentT(util.LocScaleMixin, distribution.Distribution):
    """A batch of Student's t distributions."""

    _PARAM_NAMES = ("df", "loc", "scale")

    def __init__(self, df, loc, scale, validate_args=False, allow_nan_stats=True,
                 name="StudentT"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[df, loc, scale]) as scope:
            p = util.checked_parameters({"df": df, "loc": loc, "scale": scale},
                                        validate_args, positive=("df",))
            self._df, self._loc, self._scale = p["df"], p["loc"], p["scale"]
        super().__init__(dtype=self._scale.dtype,
                         reparameterization_type=distribution.FULLY_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters,
                         graph_parents=[self._df, self._loc, self._scale], name=scope)

    @property
    def df(self):
        return self._df

    def _batch_shape(self):
        return joining_ops.broadcast_static_shape(
            self._df.shape,
            joining_ops.broadcast_static_shape(self._loc.shape, self._scale.shape))

    def _batch_shape_tensor(self):
        return joining_ops.broadcast_dynamic_shape(
            array_ops.shape(self._df),
            joining_ops.broadcast_dynamic_shape(array_ops.shape(self._loc),
                                                array_ops.shape(self._scale)))

    def _sample_n(self, n, seed=None):
        shape = joining_ops.concat([[n], self.batch_shape_tensor()], 0)
        normal = random_ops.random_normal(shape, dtype=self.dtype, seed=seed)
        df = self._df * array_ops.ones(self.batch_shape_tensor(), dtype=self.dtype)
        gamma = random_ext_ops.random_gamma([n], 0.5 * df, beta=0.5, dtype=self.dtype,
                                            seed=util.gen_new_seed(seed, salt="student_t"))
        return normal * unary_ops.rsqrt(gamma / df) * self._scale + self._loc

    def _log_prob(self, x):
        y = (x - self._loc) / self._scale
        unnormalized = -0.5 * (self._df + 1.) * unary_ops.log1p(unary_ops.square(y)
                                                                 / self._df)
        normalization = (unary_ops.log(unary_ops.abs(self._scale))
                         + 0.5 * unary_ops.log(self._df) + 0.5 * math.log(math.pi)
                         + unary_ops.lgamma(0.5 * self._df)
                         - unary_ops.lgamma(0.5 * (self._df + 1.)))
        return unnormalized - normalization

    def _cdf(self, x):
        y = (x - self._loc) / self._scale
        x_t = self._df / (unary_ops.square(y) + self._df)
        neg_cdf = 0.5 * special_math_ops.betainc(0.5 * self._df, 0.5 * array_ops.ones_like(
            x_t), x_t)
        return comparison_ops.where(comparison_ops.less(y, 0.), neg_cdf, 1. - neg_cdf)

    def _entropy(self):
        ones = array_ops.ones(self.batch_shape_tensor(), dtype=self.dtype)
        df = self._df * ones
        half_df = 0.5 * df
        lbeta = (unary_ops.lgamma(half_df) + unary_ops.lgamma(0.5 * ones)
                 - unary_ops.lgamma(half_df + 0.5))
        return (unary_ops.log(unary_ops.abs(self._scale)) + 0.5 * unary_ops.log(df) + lbeta
                + 0.5 * (df + 1.) * (unary_ops.digamma(0.5 * (df + 1.))
                                     - unary_ops.digamma(half_df)))

    def _mean(self):
        mean = self._loc * array_ops.ones(self.batch_shape_tensor(), dtype=self.dtype)
        return util.nan_where_not(comparison_ops.greater(self._df * array_ops.ones_like(mean),
                                                         1.), mean, self.allow_nan_stats,
                                  "mean not defined for components of df <= 1")

    def _variance(self):
        ones = array_ops.ones(self.batch_shape_tensor(), dtype=self.dtype)
        df = self._df * ones
        # df / (df - 2) * scale^2 above 2; infinite on (1, 2]; undefined at or below 1
        safe_df = comparison_ops.where(comparison_ops.greater(df, 2.), df, 3. * ones)
        var = unary_ops.square(self._scale) * ones * safe_df / (safe_df - 2.)
        var = comparison_ops.where(comparison_ops.greater(df, 2.), var,
                                   float("inf") * ones)
        return util.nan_where_not(comparison_ops.greater(df, 1.), var, self.allow_nan_stats,
                                  "variance not defined for components of df <= 1")

    def _mode(self):
        return self._loc * array_ops.ones(self.batch_shape_tensor(), dtype=self.dtype)
