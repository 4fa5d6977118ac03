"""`tf.distributions.Bernoulli(logits=None, probs=None)`: 0/1 outcomes (`dtype`, int32 by
default) with P(1) = probs = sigmoid(logits); the batch shape is the parameter's shape."""

from __future__ import annotations

from tensorflux.distributions import distribution, kullback_leibler, util
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.nn import nn_impl
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    joining_ops,
    math_ops,
    nn_ops,
    random_ops,
    unary_ops,
)

__all__ = ["Bernoulli"]


class Bernoulli(util.LogitsProbsMixin, distribution.Distribution):
    """A batch of Bernoulli distributions."""

    _PARAM_NAMES = ("logits",)

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="Bernoulli"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[logits, probs]) as scope:
            self._logits, self._probs = util.logits_and_probs(logits, probs, False)
        super().__init__(dtype=dtypes.as_dtype(dtype),
                         reparameterization_type=distribution.NOT_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters, graph_parents=[self._logits, self._probs],
                         name=scope)

    def _batch_shape(self):
        return self._logits.shape

    def _batch_shape_tensor(self):
        return array_ops.shape(self._logits)

    def _sample_n(self, n, seed=None):
        shape = joining_ops.concat([[n], self.batch_shape_tensor()], 0)
        uniform = random_ops.random_uniform(shape, seed=seed, dtype=self._probs.dtype)
        return math_ops.cast(comparison_ops.less(uniform, self._probs), self.dtype)

    def _log_prob(self, event):
        event = math_ops.cast(event, self._logits.dtype)
        logits = self._logits
        if not (event.shape.is_fully_defined() and logits.shape.is_fully_defined()
                and event.shape == logits.shape):  # broadcast the two
            logits = array_ops.ones_like(event) * logits
            event = array_ops.ones_like(logits) * event
        return -nn_impl.sigmoid_cross_entropy_with_logits(labels=event, logits=logits)

    def _entropy(self):
        return (-self._logits * (unary_ops.sigmoid(self._logits) - 1.)
                + nn_ops.softplus(-self._logits))

    def _mean(self):
        return array_ops.identity(self._probs)

    def _variance(self):
        return self._probs * (1. - self._probs)

    def _mode(self):
        return math_ops.cast(comparison_ops.greater(self._probs, 0.5), self.dtype)


@kullback_leibler.RegisterKL(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(a, b, name=None):
    """KL(a || b) = p_a log(p_a / p_b) + (1 - p_a) log((1 - p_a) / (1 - p_b)), from the
    logits through softplus."""
    with graph_lib.name_scope(name or "kl_bernoulli_bernoulli", values=[a.logits, b.logits]):
        delta0 = nn_ops.softplus(-b.logits) - nn_ops.softplus(-a.logits)
        delta1 = nn_ops.softplus(b.logits) - nn_ops.softplus(a.logits)
        return (unary_ops.sigmoid(a.logits) * delta0
                + unary_ops.sigmoid(-a.logits) * delta1)
