"""`tf.distributions.Categorical(logits=None, probs=None)`: distributions over the classes
0..K-1, K the last dimension of the parameter; the batch shape is the parameter's shape
without it. Samples are integers (`dtype`, int32 by default) drawn with `multinomial`."""

from __future__ import annotations

from tensorflux.distributions import distribution, kullback_leibler, util
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import nn_impl
from tensorflux.ops import (
    array_ops,
    joining_ops,
    math_ops,
    nn_ops,
    random_ops,
    reduction_ops,
)

__all__ = ["Categorical"]


class Categorical(util.LogitsProbsMixin, distribution.Distribution):
    """A batch of categorical distributions over `event_size` classes."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="Categorical"):
        parameters = dict(locals())
        with graph_lib.name_scope(name, values=[logits, probs]) as scope:
            self._logits, self._probs = util.logits_and_probs(logits, probs, True)
            self._event_size = array_ops.shape(self._logits, name="event_size")[-1] \
                if self._logits.shape[-1:].num_elements() is None else \
                convert_to_tensor(self._logits.shape.as_list()[-1], dtype=dtypes.int32,
                                  name="event_size")
        super().__init__(dtype=dtypes.as_dtype(dtype),
                         reparameterization_type=distribution.NOT_REPARAMETERIZED,
                         validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                         parameters=parameters, graph_parents=[self._logits, self._probs],
                         name=scope)

    @property
    def event_size(self):
        """The number of classes (a scalar int32 tensor)."""
        return self._event_size

    def _batch_shape(self):
        return self._logits.shape[:-1]

    def _batch_shape_tensor(self):
        return array_ops.shape(self._logits)[:-1]

    def _sample_n(self, n, seed=None):
        logits_2d = (self._logits if self._logits.shape.ndims == 2
                     else array_ops.reshape(self._logits, [-1, self._event_size]))
        sample_dtype = dtypes.int64 if self.dtype.size > 4 else dtypes.int32
        draws = random_ops.multinomial(logits_2d, n, seed=seed, output_dtype=sample_dtype)
        draws = array_ops.reshape(array_ops.transpose(draws),
                                  joining_ops.concat([[n], self.batch_shape_tensor()], 0))
        return math_ops.cast(draws, self.dtype)

    def _broadcast(self, k):
        """`k` as integer labels and the logits, broadcast against each other."""
        k = math_ops.cast(k, self.dtype) if k.dtype.is_floating else k
        logits = self._logits
        if not (logits.shape[:-1].is_fully_defined() and k.shape.is_fully_defined()
                and logits.shape[:-1] == k.shape):
            logits = logits * array_ops.ones_like(array_ops.expand_dims(k, -1),
                                                  dtype=logits.dtype)
            k = k * array_ops.ones(array_ops.shape(logits)[:-1], dtype=k.dtype)
            k.set_shape(logits.shape[:-1])
        return k, logits

    def _log_prob(self, k):
        k, logits = self._broadcast(k)
        return -nn_impl.sparse_softmax_cross_entropy_with_logits(labels=k, logits=logits)

    def _entropy(self):
        return -reduction_ops.reduce_sum(nn_ops.log_softmax(self._logits) * self._probs,
                                         axis=-1)

    def _mode(self):
        ret = reduction_ops.argmax(self._logits, axis=self._logits.shape.ndims - 1)
        ret = math_ops.cast(ret, self.dtype)
        ret.set_shape(self.batch_shape)
        return ret


@kullback_leibler.RegisterKL(Categorical, Categorical)
def _kl_categorical_categorical(a, b, name=None):
    """KL(a || b) = sum_k p_a(k) (log p_a(k) - log p_b(k))."""
    with graph_lib.name_scope(name or "kl_categorical_categorical",
                              values=[a.logits, b.logits]):
        return reduction_ops.reduce_sum(
            nn_ops.softmax(a.logits) * (nn_ops.log_softmax(a.logits)
                                        - nn_ops.log_softmax(b.logits)), axis=-1)
