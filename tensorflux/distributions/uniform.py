"""`tf.distributions.Uniform(low=0., high=1.)`: uniform on [low, high); the batch shape
is the broadcast of the two bounds."""

from __future__ import annotations

import math

from tensorflux.distributions import distribution
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    joining_ops,
    random_ops,
    unary_ops,
)

__all__ = ["Uniform"]


class Uniform(distribution.Distribution):
    """A batch of continuous uniform distributions."""

    _PARAM_NAMES = ("low", "high")

    def __init__(self, low=0., high=1., validate_args=False, allow_nan_stats=True,
                 name="Uniform"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[low, high]) as scope:
            p = distribution.float_parameters({"low": low, "high": high})
            self._low, self._high = p["low"], p["high"]
        super().__init__(dtype=self._low.dtype,
                         reparameterization_type=distribution.FULLY_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters, graph_parents=[self._low, self._high],
                         name=scope)

    @property
    def low(self):
        return self._low

    @property
    def high(self):
        return self._high

    def range(self, name="range"):
        """high - low."""
        with self._name_scope(name):
            return self._high - self._low

    def _batch_shape(self):
        return joining_ops.broadcast_static_shape(self._low.shape, self._high.shape)

    def _batch_shape_tensor(self):
        return joining_ops.broadcast_dynamic_shape(array_ops.shape(self._low),
                                                   array_ops.shape(self._high))

    def _sample_n(self, n, seed=None):
        shape = joining_ops.concat([[n], self.batch_shape_tensor()], 0)
        draws = random_ops.random_uniform(shape, dtype=self.dtype, seed=seed)
        return self._low + self.range() * draws

    def _prob(self, x):
        broadcast_x = x * array_ops.ones_like(self._low) * array_ops.ones_like(self._high)
        zeros = array_ops.zeros_like(broadcast_x)
        inside = array_ops.ones_like(broadcast_x) / self.range()
        outside = comparison_ops.logical_or(comparison_ops.less(broadcast_x, self._low),
                                            comparison_ops.greater_equal(broadcast_x,
                                                                         self._high))
        return comparison_ops.where(unary_ops.is_nan(broadcast_x), broadcast_x,
                                    comparison_ops.where(outside, zeros, inside))

    def _cdf(self, x):
        broadcast_x = x * array_ops.ones_like(self._low) * array_ops.ones_like(self._high)
        zeros, ones = array_ops.zeros_like(broadcast_x), array_ops.ones_like(broadcast_x)
        result = comparison_ops.where(comparison_ops.greater_equal(broadcast_x, self._high),
                                      ones, (broadcast_x - self._low) / self.range())
        return comparison_ops.where(comparison_ops.less(broadcast_x, self._low), zeros,
                                    result)

    def _entropy(self):
        return unary_ops.log(self.range())

    def _mean(self):
        return (self._low + self._high) / 2.

    def _variance(self):
        return unary_ops.square(self.range()) / 12.

    def _stddev(self):
        return self.range() / math.sqrt(12.)
