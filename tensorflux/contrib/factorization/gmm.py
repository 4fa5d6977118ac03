"""The Gaussian-mixture estimator (TF1's `tf.contrib.factorization.GMM`).

    gmm = tf.contrib.factorization.GMM(num_clusters=3, initial_clusters="random")
    gmm.train(input_fn, steps=20)        # one EM iteration per step
    gmm.clusters(), gmm.covariances(), gmm.weights()
    list(gmm.predict_assignments(input_fn)); gmm.score(input_fn)

The model is `gmm_ops.gmm` over the input's features (a dict of them is concatenated in
the order of its sorted keys). Training first runs the initialization (on the chief, before
the first checkpoint), then EM steps; the loss is TF1's (the log of the batch's summed
likelihoods). Evaluation sums the points' log likelihoods ("scores"); `score` returns that
sum.
"""

from __future__ import annotations

import numpy as np

from tensorflux.contrib.factorization import gmm_ops
from tensorflux.contrib.factorization.kmeans import _InitializeClustersHook, _points
from tensorflux.estimator.estimator import Estimator
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.framework import graph as graph_lib
from tensorflux.metrics import _util as metric_util
from tensorflux.ops import array_ops, reduction_ops, state_ops
from tensorflux.train.global_step import get_global_step

__all__ = ["GMM"]


def _streaming_sum(values):
    """(value, update_op) of the running sum of `values` over the evaluation."""
    total = metric_util.metric_variable([], values.dtype, name="streaming_sum")
    return total.value(), metric_util.assign_add(total, reduction_ops.reduce_sum(values))


class GMM(Estimator):
    """An Estimator fitting a Gaussian mixture by EM (module docstring).

    Args:
      num_clusters: how many components.
      model_dir: where checkpoints and summaries go.
      random_seed: the seed of the random initial means.
      params: which parameters training updates: any of "w", "m", "c".
      initial_clusters: "random", or the [num_clusters, d] initial means.
      covariance_type: "full" or "diag".
      config: a RunConfig.
    """

    SCORES = "scores"
    LOG_LIKELIHOOD = "loss"
    ASSIGNMENTS = "assignments"

    def __init__(self, num_clusters, model_dir=None, random_seed=0, params="wmc",
                 initial_clusters="random", covariance_type="full", config=None):
        gmm_args = (initial_clusters, num_clusters, random_seed, covariance_type, params)

        def model_fn(features, labels, mode, config):
            del labels
            return _model_fn(_points(features, None), mode, config, gmm_args)

        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)

    def fit(self, input_fn=None, steps=None, max_steps=None, monitors=None):
        """contrib.learn's name for `train` (TF1's class was a contrib.learn Estimator):
        `monitors` are session-run hooks."""
        return self.train(input_fn, hooks=monitors, steps=steps, max_steps=max_steps)

    def predict_assignments(self, input_fn):
        """Yields each input point's most responsible component."""
        for prediction in self.predict(input_fn=input_fn):
            yield prediction[self.ASSIGNMENTS]

    def score(self, input_fn, steps=None):
        """The summed log likelihood of the input (of `steps` batches)."""
        results = self.evaluate(input_fn=input_fn, steps=steps)
        # In float64: evaluate gives the fetched float32 (as TF's), whose exp underflows for
        # log likelihoods below about -87 (TF 1.15's score then returns -inf).
        return np.log(np.sum(np.exp(np.float64(results[self.SCORES]))))

    def weights(self):
        """The components' weights."""
        return self.get_variable_value(gmm_ops.GmmAlgorithm.CLUSTERS_WEIGHT)

    def clusters(self):
        """The means, [num_clusters, d]."""
        return np.squeeze(self.get_variable_value(gmm_ops.GmmAlgorithm.CLUSTERS_VARIABLE), 1)

    def covariances(self):
        """The covariances ([K, d, d], or [K, d] diagonals)."""
        return self.get_variable_value(gmm_ops.GmmAlgorithm.CLUSTERS_COVS_VARIABLE)


def _model_fn(points, mode, config, gmm_args):
    initial, k, seed, covariance_type, params = gmm_args
    loss, scores, assignments, train_op, init_op, initialized = gmm_ops.gmm(
        points, initial, k, seed, covariance_type, params)
    step = state_ops.assign_add(get_global_step(), 1)
    with graph_lib.control_dependencies([train_op, step]):
        train_loss = array_ops.identity(loss)
    init_hook = _InitializeClustersHook(init_op, initialized, config.is_chief)
    chief_hooks, hooks = ([init_hook], []) if config.is_chief else ([], [init_hook])
    return EstimatorSpec(
        mode=mode, predictions={GMM.ASSIGNMENTS: assignments[0][0]}, loss=loss,
        train_op=train_loss.op if mode == ModeKeys.TRAIN else None,
        eval_metric_ops={GMM.SCORES: _streaming_sum(scores)},
        training_hooks=hooks, training_chief_hooks=chief_hooks)
