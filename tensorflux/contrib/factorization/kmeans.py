"""The k-means estimator (TF1's `tf.contrib.factorization.KMeansClustering`).

    def input_fn():
        return tf.train.limit_epochs(tf.constant(points), num_epochs=1)

    kmeans = tf.contrib.factorization.KMeansClustering(num_clusters=5, use_mini_batch=False)
    for _ in range(10):
        kmeans.train(input_fn)          # one pass: full-batch, one Lloyd iteration
        print(kmeans.cluster_centers(), kmeans.score(input_fn))
    cluster_indices = list(kmeans.predict_cluster_index(input_fn))

The model is a `KMeans` graph over the input's features (a [batch, d] tensor; a dict of
them is concatenated along the columns in the order of its sorted keys, or read through
`feature_columns`). Training first runs the initialization until all centers are picked
(each run reads a batch), then steps; the loss is the batch's summed distance to the nearest
centers. With `relative_tolerance` training stops once the loss changes by less than that
fraction (of 1 + |previous loss|) from one step to the next.
"""

from __future__ import annotations

from tensorflux.contrib.factorization.clustering_ops import (
    CLUSTERS_VAR_NAME,
    COSINE_DISTANCE,
    KMC2_INIT,
    KMEANS_PLUS_PLUS_INIT,
    RANDOM_INIT,
    SQUARED_EUCLIDEAN_DISTANCE,
    KMeans,
)
from tensorflux.estimator import export as export_lib
from tensorflux.estimator.estimator import Estimator
from tensorflux.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorflux.feature_column import feature_column
from tensorflux.framework import graph as graph_lib
from tensorflux.metrics import metrics_impl
from tensorflux.ops import array_ops, joining_ops, reduction_ops, state_ops
from tensorflux.platform import tf_logging as logging
from tensorflux.summary import summary
from tensorflux.train import session_run_hook
from tensorflux.train.global_step import get_global_step

__all__ = ["KMeansClustering"]


class _InitializeClustersHook(session_run_hook.SessionRunHook):
    """Runs the initialization until the centers are all picked, once the session is up
    (only the chief picks; the other workers wait for it)."""

    def __init__(self, init_op, is_initialized_var, is_chief):
        self._init_op, self._initialized, self._is_chief = (init_op, is_initialized_var,
                                                            is_chief)

    def after_create_session(self, session, coord):
        import time

        while not session.run(self._initialized):
            if self._is_chief:
                session.run(self._init_op)
            else:
                time.sleep(1)


class _LossRelativeChangeHook(session_run_hook.SessionRunHook):
    """Stops training when the loss changes by less than `tolerance` of 1 + |previous|."""

    def __init__(self, loss, tolerance):
        self._loss, self._tolerance, self._previous = loss, tolerance, None

    def before_run(self, run_context):
        return session_run_hook.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        loss = float(run_values.results)
        if self._previous is not None:
            change = abs(loss - self._previous) / (1 + abs(self._previous))
            if change < self._tolerance:
                logging.info("KMeans loss changed by %g < %g: stopping", change,
                             self._tolerance)
                run_context.request_stop()
        self._previous = loss


def _points(features, feature_columns):
    """The [batch, d] points of the input's features."""
    if not isinstance(features, dict):
        return features
    if feature_columns:
        return feature_column.input_layer(features, feature_columns)
    keys = sorted(features)
    return joining_ops.concat([features[k] for k in keys], axis=1) if len(keys) > 1 \
        else features[keys[0]]


class KMeansClustering(Estimator):
    """An Estimator for k-means clustering (module docstring).

    Args:
      num_clusters: how many clusters.
      model_dir: where checkpoints and summaries go.
      initial_clusters: RANDOM_INIT, KMEANS_PLUS_PLUS_INIT, KMC2_INIT, the centers (an
        array or tensor), or `fn(inputs, num_clusters)` returning them.
      distance_metric: SQUARED_EUCLIDEAN_DISTANCE or COSINE_DISTANCE.
      seed: the seed of the initialization's draws.
      use_mini_batch: mini-batch steps (running means) instead of full-batch iterations.
      mini_batch_steps_per_iteration: steps between publications of the updated centers.
      kmeans_plus_plus_num_retries: extra draws per k-means++ center.
      relative_tolerance: stop training once the loss changes by less (None: never).
      config: a RunConfig.
      feature_columns: columns reading dict features (default: their values concatenated).
      random_seed: TF 1.4-1.14's name of `seed`.

    Raises:
      ValueError: as `KMeans` does, when the model is built.
    """

    SQUARED_EUCLIDEAN_DISTANCE = SQUARED_EUCLIDEAN_DISTANCE
    COSINE_DISTANCE = COSINE_DISTANCE
    RANDOM_INIT = RANDOM_INIT
    KMEANS_PLUS_PLUS_INIT = KMEANS_PLUS_PLUS_INIT
    KMC2_INIT = KMC2_INIT
    # The keys of the predictions and metrics, and the centers' variable.
    ALL_DISTANCES = "all_distances"
    CLUSTER_INDEX = "cluster_index"
    SCORE = "score"
    CLUSTER_CENTERS_VAR_NAME = CLUSTERS_VAR_NAME

    def __init__(self, num_clusters, model_dir=None, initial_clusters=RANDOM_INIT,
                 distance_metric=SQUARED_EUCLIDEAN_DISTANCE, seed=None, use_mini_batch=True,
                 mini_batch_steps_per_iteration=1, kmeans_plus_plus_num_retries=2,
                 relative_tolerance=None, config=None, feature_columns=None,
                 random_seed=None):
        kmeans_args = dict(num_clusters=num_clusters, initial_clusters=initial_clusters,
                           distance_metric=distance_metric, use_mini_batch=use_mini_batch,
                           mini_batch_steps_per_iteration=mini_batch_steps_per_iteration,
                           random_seed=seed if random_seed is None else random_seed,
                           kmeans_plus_plus_num_retries=kmeans_plus_plus_num_retries)

        def model_fn(features, labels, mode, config):
            del labels
            return _model_fn(_points(features, feature_columns), mode, config, kmeans_args,
                             relative_tolerance)

        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)

    def predict_cluster_index(self, input_fn):
        """Yields the index of each input point's nearest center."""
        for prediction in self.predict(input_fn, predict_keys=[self.CLUSTER_INDEX]):
            yield prediction[self.CLUSTER_INDEX]

    def score(self, input_fn):
        """The summed distance of one batch of the input to the nearest centers."""
        return self.evaluate(input_fn=input_fn, steps=1)[self.SCORE]

    def transform(self, input_fn):
        """Yields each input point's distances to all the centers (squared for the
        Euclidean metric)."""
        for prediction in self.predict(input_fn, predict_keys=[self.ALL_DISTANCES]):
            yield prediction[self.ALL_DISTANCES]

    def cluster_centers(self):
        """The centers, as the latest checkpoint holds them."""
        return self.get_variable_value(self.CLUSTER_CENTERS_VAR_NAME)


def _model_fn(points, mode, config, kmeans_args, relative_tolerance):
    (all_distances, cluster_index, scores, initialized, _, init_op,
     train_op) = KMeans(points, **kmeans_args).training_graph()
    loss = reduction_ops.reduce_sum(scores[0])
    summary.scalar("loss/raw", loss)
    step = state_ops.assign_add(get_global_step(), 1)
    with graph_lib.control_dependencies([train_op, step]):
        train_loss = array_ops.identity(loss)
    # The chief's initialization runs before the checkpoint saver's first save (chief hooks
    # come first), so that the step-0 checkpoint holds the picked centers: a train() whose
    # input the initialization used up still leaves them. Other workers wait for it.
    init_hook = _InitializeClustersHook(init_op, initialized, config.is_chief)
    chief_hooks, hooks = ([init_hook], []) if config.is_chief else ([], [init_hook])
    if relative_tolerance is not None:
        hooks.append(_LossRelativeChangeHook(loss, relative_tolerance))
    predictions = {KMeansClustering.ALL_DISTANCES: all_distances[0],
                   KMeansClustering.CLUSTER_INDEX: cluster_index[0]}
    return EstimatorSpec(
        mode=mode, predictions=predictions, loss=loss,
        train_op=train_loss.op if mode == ModeKeys.TRAIN else None,
        eval_metric_ops={KMeansClustering.SCORE: metrics_impl.mean(loss)},
        training_hooks=hooks, training_chief_hooks=chief_hooks,
        export_outputs={
            KMeansClustering.ALL_DISTANCES: export_lib.PredictOutput(all_distances[0]),
            KMeansClustering.CLUSTER_INDEX: export_lib.PredictOutput(cluster_index[0]),
            "serving_default": export_lib.PredictOutput(cluster_index[0])})
