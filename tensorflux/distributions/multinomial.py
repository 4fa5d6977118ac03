"""`tf.distributions.Multinomial(total_count, logits=None, probs=None)` and
`tf.distributions.DirichletMultinomial(total_count, concentration)`: counts over `k`
classes (event shape `[k]`) summing to `total_count`, float valued as in TF1. Samples are
class draws from `multinomial` summed as one-hot vectors; a Dirichlet-multinomial draws
its class probabilities from gamma samples first. Neither is reparameterized."""

from __future__ import annotations

from tensorflux.control_flow import functional_ops
from tensorflux.distributions import distribution, util
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    gather_ops,
    joining_ops,
    linalg_ops,
    math_ops,
    nn_ops,
    random_ext_ops,
    random_ops,
    reduction_ops,
    special_math_ops,
    unary_ops,
)

__all__ = ["DirichletMultinomial", "Multinomial"]


class _Counts(distribution.Distribution):
    """What the two count distributions share: the batch and event shapes from the last
    axis of `_param` (logits or concentration) broadcast with `_total_count`."""

    def _batch_shape(self):
        return joining_ops.broadcast_static_shape(self._param.shape[:-1],
                                                  self._total_count.shape)

    def _batch_shape_tensor(self):
        return joining_ops.broadcast_dynamic_shape(array_ops.shape(self._param)[:-1],
                                                   array_ops.shape(self._total_count))

    def _event_shape(self):
        return self._param.shape.with_rank_at_least(1)[-1:]

    def _event_shape_tensor(self):
        return array_ops.shape(self._param)[-1:]

    @property
    def total_count(self):
        return self._total_count


class Multinomial(util.LogitsProbsMixin, _Counts):
    """A batch of multinomial distributions: `total_count` draws from `k` classes."""

    def __init__(self, total_count, logits=None, probs=None, validate_args=False,
                 allow_nan_stats=True, name="Multinomial"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[total_count, logits, probs]) as scope:
            self._logits, self._probs = util.logits_and_probs(logits, probs, True)
            self._total_count = math_ops.cast(convert_to_tensor(
                total_count, name="total_count", preferred_dtype=self._probs.dtype),
                self._probs.dtype)
            self._param = self._logits
            self._mean_val = self._total_count[..., array_ops.newaxis] * self._probs
        super().__init__(dtype=self._probs.dtype,
                         reparameterization_type=distribution.NOT_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters,
                         graph_parents=[self._total_count, self._logits, self._probs],
                         name=scope)

    def _sample_n(self, n, seed=None):
        n_draws = math_ops.cast(self._total_count, dtypes.int32)
        k = self.event_shape_tensor()[0]
        # broadcast the counts and logits to one batch shape, then draw per batch member
        n_draws = array_ops.ones_like(self._logits[..., 0], dtype=n_draws.dtype) * n_draws
        logits = array_ops.ones_like(n_draws[..., array_ops.newaxis],
                                     dtype=self._logits.dtype) * self._logits
        flat_logits = array_ops.reshape(logits, [-1, k])
        flat_ndraws = n * array_ops.reshape(n_draws, [-1])

        def sample_single(args):
            logits, n_draw = args[0], args[1]  # [k], []
            x = random_ops.multinomial(logits[array_ops.newaxis, ...], n_draw, seed)
            x = array_ops.reshape(x, [n, -1])  # [n, n_draw]
            return reduction_ops.reduce_sum(gather_ops.one_hot(x, depth=k, dtype=self.dtype),
                                            axis=-2)

        x = functional_ops.map_fn(sample_single, [flat_logits, flat_ndraws],
                                  dtype=self.dtype)  # [batch, n, k]
        x = array_ops.transpose(x, perm=[1, 0, 2])
        final_shape = joining_ops.concat([[n], self.batch_shape_tensor(), [k]], 0)
        return array_ops.reshape(x, final_shape)

    def _log_prob(self, counts):
        log_normalization = -util.log_combinations(self._total_count, counts)
        return (reduction_ops.reduce_sum(counts * nn_ops.log_softmax(self._logits), -1)
                - log_normalization)

    def _mean(self):
        return array_ops.identity(self._mean_val)

    def _variance(self):
        return self._mean_val * (1. - self._probs)

    def _covariance(self):
        p = self._probs * array_ops.ones_like(self._total_count)[..., array_ops.newaxis]
        outer = -self._total_count[..., array_ops.newaxis, array_ops.newaxis] * (
            p[..., :, array_ops.newaxis] * p[..., array_ops.newaxis, :])
        return outer + linalg_ops.matrix_diag(self._variance())


class DirichletMultinomial(_Counts):
    """A batch of Dirichlet-multinomial distributions: class probabilities drawn from
    Dirichlet(concentration), then `total_count` class draws."""

    def __init__(self, total_count, concentration, validate_args=False,
                 allow_nan_stats=True, name="DirichletMultinomial"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[total_count, concentration]) as scope:
            p = util.checked_parameters({"total_count": total_count,
                                         "concentration": concentration}, validate_args,
                                        positive=("concentration",))
            self._total_count, self._concentration = p["total_count"], p["concentration"]
            self._param = self._concentration
            self._total_concentration = reduction_ops.reduce_sum(self._concentration, -1)
        super().__init__(dtype=self._concentration.dtype,
                         reparameterization_type=distribution.NOT_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters,
                         graph_parents=[self._concentration, self._total_count], name=scope)

    @property
    def concentration(self):
        return self._concentration

    @property
    def total_concentration(self):
        return self._total_concentration

    def _sample_n(self, n, seed=None):
        n_draws = math_ops.cast(self._total_count, dtypes.int32)
        k = self.event_shape_tensor()[0]
        gamma = random_ext_ops.random_gamma(shape=[n], alpha=self._concentration,
                                            dtype=self.dtype, seed=seed)
        logits = array_ops.reshape(unary_ops.log(gamma), [-1, k])
        draws = random_ops.multinomial(logits, n_draws, seed=util.gen_new_seed(
            seed, salt="dirichlet_multinomial"))
        x = reduction_ops.reduce_sum(gather_ops.one_hot(draws, depth=k), -2)
        final_shape = joining_ops.concat([[n], self.batch_shape_tensor(), [k]], 0)
        return math_ops.cast(array_ops.reshape(x, final_shape), self.dtype)

    def _log_prob(self, counts):
        return (special_math_ops.lbeta(self._concentration + counts)
                - special_math_ops.lbeta(self._concentration)
                + util.log_combinations(self._total_count, counts))

    def _mean(self):
        normalized = self._concentration / self._total_concentration[..., array_ops.newaxis]
        return self._total_count[..., array_ops.newaxis] * normalized

    def _variance(self):
        n = self._total_count[..., array_ops.newaxis]
        total = self._total_concentration[..., array_ops.newaxis]
        p = self._concentration / total
        return n * p * (1. - p) * (n + total) / (1. + total)
