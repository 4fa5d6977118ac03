"""k-means clustering as a graph (TF1's `tf.contrib.factorization.KMeans`).

    kmeans = KMeans(inputs=x, num_clusters=25, distance_metric="cosine",
                    use_mini_batch=True)
    (all_scores, cluster_idx, scores, cluster_centers_initialized, cluster_centers_var,
     init_op, train_op) = kmeans.training_graph()
    sess.run(tf.global_variables_initializer(), feed)
    sess.run(init_op, feed)        # picks the initial centers once
    sess.run(train_op, feed)       # one Lloyd iteration, or one mini-batch update

Distances: squared Euclidean, or cosine (1 - x.c with x and c scaled to unit length).
Initial centers: "random" (rows of the inputs drawn uniformly with `random_seed`),
"kmeans_plus_plus" (k-means++ seeding of the first input's rows, with
`kmeans_plus_plus_num_retries` extra draws per center keeping the best), a tensor or array,
or a function `fn(inputs, num_clusters)`. Full-batch training replaces each center by the
mean of the points assigned to it (an empty cluster's center goes to zero, as TF's 1e-6
denominator makes it); mini-batch training moves each center assigned k new points by
(sum of the points - k center) / (n + k), n its points so far: the running mean.
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import nn_impl
from tensorflux.ops import (
    array_ops,
    gather_ops,
    joining_ops,
    math_ops,
    matrix_ops,
    random_ops,
    reduction_ops,
    script_ops,
    sequence_ops,
    state_ops,
    unary_ops,
)
from tensorflux.variables import variable_scope, variables

SQUARED_EUCLIDEAN_DISTANCE = "squared_euclidean"
COSINE_DISTANCE = "cosine"
RANDOM_INIT = "random"
KMEANS_PLUS_PLUS_INIT = "kmeans_plus_plus"
KMC2_INIT = "kmc2"


class KMeans:
    """The graph of k-means clustering of `inputs` (a [n, d] tensor or a list of them).

    Args:
      inputs: the points: a tensor, or a list of tensors (shards) with the same columns.
      num_clusters: how many centers (a positive int).
      initial_clusters: RANDOM_INIT, KMEANS_PLUS_PLUS_INIT, a [num_clusters, d] tensor or
        array, or `fn(inputs, num_clusters)` returning one.
      distance_metric: SQUARED_EUCLIDEAN_DISTANCE or COSINE_DISTANCE.
      use_mini_batch: mini-batch updates (running means) instead of full-batch Lloyd
        iterations.
      mini_batch_steps_per_iteration: only 1 (each step updates the centers).
      random_seed: the seed of the initial centers' draws.
      kmeans_plus_plus_num_retries: extra draws per k-means++ center, the best kept
        (negative: 2 + log(num_clusters)).
      kmc2_chain_length: accepted; KMC2 seeding is not provided.

    Raises:
      ValueError: a bad `num_clusters`, `distance_metric` or `initial_clusters`, KMC2
        seeding, `mini_batch_steps_per_iteration` other than 1, inputs not of rank 2, or
        shards with different numbers of columns.
    """

    def __init__(self, inputs, num_clusters, initial_clusters=RANDOM_INIT,
                 distance_metric=SQUARED_EUCLIDEAN_DISTANCE, use_mini_batch=False,
                 mini_batch_steps_per_iteration=1, random_seed=0,
                 kmeans_plus_plus_num_retries=2, kmc2_chain_length=200):
        if not isinstance(num_clusters, int) or num_clusters <= 0:
            raise ValueError(f"num_clusters must be a positive int, got {num_clusters!r}")
        if distance_metric not in (SQUARED_EUCLIDEAN_DISTANCE, COSINE_DISTANCE):
            raise ValueError(f"Unsupported distance metric {distance_metric!r}")
        if isinstance(initial_clusters, str) and initial_clusters not in (
                RANDOM_INIT, KMEANS_PLUS_PLUS_INIT):
            raise ValueError(f"Unsupported initialization {initial_clusters!r}"
                             + (": KMC2 seeding is not provided by tensorflux"
                                if initial_clusters == KMC2_INIT else ""))
        if mini_batch_steps_per_iteration != 1:
            raise ValueError("tensorflux's KMeans updates the centers every step: "
                             "mini_batch_steps_per_iteration must be 1, got "
                             f"{mini_batch_steps_per_iteration}")
        self._inputs = [convert_to_tensor(x) for x in
                        (inputs if isinstance(inputs, (list, tuple)) else [inputs])]
        self._num_clusters = num_clusters
        self._initial_clusters = initial_clusters
        self._distance_metric = distance_metric
        self._use_mini_batch = use_mini_batch
        self._random_seed = random_seed
        self._retries = kmeans_plus_plus_num_retries
        del kmc2_chain_length
        if any(x.shape.ndims not in (None, 2) for x in self._inputs):
            raise ValueError("KMeans needs rank-2 inputs; got shapes "
                             f"{[x.shape for x in self._inputs]}")
        dims = {x.shape.as_list()[-1] for x in self._inputs if x.shape.ndims == 2} - {None}
        if len(dims) > 1:
            raise ValueError(f"KMeans' inputs have different numbers of columns: {dims}")
        self._dim = dims.pop() if dims else None  # None: the centers' shape is set by init

    def _cosine(self) -> bool:
        return self._distance_metric == COSINE_DISTANCE

    def _centers_normalized(self) -> bool:
        """Whether the stored centers are kept at unit length (cosine, full batch)."""
        return self._cosine() and not self._use_mini_batch

    def _distances(self, inputs, centers):
        """[n, num_clusters] distances of each input's rows to the centers."""
        out = []
        for x in inputs:
            if self._cosine():
                out.append(1.0 - matrix_ops.matmul(x, centers, transpose_b=True))
            else:
                out.append(reduction_ops.reduce_sum(unary_ops.square(x), 1, keepdims=True)
                           - 2.0 * matrix_ops.matmul(x, centers, transpose_b=True)
                           + array_ops.transpose(reduction_ops.reduce_sum(
                               unary_ops.square(centers), 1, keepdims=True)))
        return out

    def _initial_value(self, inputs):
        init, k = self._initial_clusters, self._num_clusters
        named = init if isinstance(init, str) else None
        if named == RANDOM_INIT:
            points = inputs[0] if len(inputs) == 1 else joining_ops.concat(inputs, 0)
            n = array_ops.shape(points, out_type=dtypes.int64)[0]
            check = _assert_enough(n, k)
            with graph_lib.control_dependencies([check]):
                rows = random_ops.random_uniform([k], 0, n, dtype=dtypes.int64,
                                                 seed=self._random_seed)
            return gather_ops.gather(points, rows)
        if named == KMEANS_PLUS_PLUS_INIT:
            return _kmeans_plus_plus(inputs[0], k, self._random_seed, self._retries)
        value = init(self._inputs, k) if callable(init) else init
        return math_ops.cast(convert_to_tensor(value), inputs[0].dtype)

    def training_graph(self):
        """The k-means graph.

        Returns:
          (all_scores, cluster_idx, scores, cluster_centers_initialized,
          cluster_centers_var, init_op, training_op): lists (one entry per input) of
          the [n, num_clusters] distances, the nearest center's index and its
          distance; a bool variable, True once `init_op` ran; the centers' variable;
          the op that picks the initial centers (once); the op of one training step.
        """
        dtype = self._inputs[0].dtype.base_dtype
        inputs = self._inputs
        if self._cosine():
            inputs = [nn_impl.l2_normalize(x, axis=1) for x in inputs]
        k = self._num_clusters
        with variable_scope.variable_scope(None, default_name="kmeans"):
            centers_var = variables.Variable(
                array_ops.zeros([k, self._dim or 0], dtype), name="clusters",
                trainable=False, validate_shape=self._dim is not None)
            initialized = variables.Variable(False, name="initialized", trainable=False)
            counts = variables.Variable(array_ops.zeros([k], dtypes.int64),
                                        name="clusters_count", trainable=False) \
                if self._use_mini_batch else None
        init_op = self._init_op(inputs, centers_var, initialized)
        centers = centers_var.value()
        if self._cosine() and not self._centers_normalized():
            centers = nn_impl.l2_normalize(centers, axis=1)
        all_scores = self._distances(inputs, centers)
        cluster_idx = [reduction_ops.argmin(d, 1) for d in all_scores]
        scores = [reduction_ops.reduce_min(d, 1) for d in all_scores]
        if self._use_mini_batch:
            train = self._mini_batch_step(inputs, cluster_idx, centers_var, counts)
        else:
            train = self._full_batch_step(inputs, cluster_idx, centers_var)
        return all_scores, cluster_idx, scores, initialized, centers_var, init_op, train

    def _init_op(self, inputs, centers_var, initialized):
        def pick():
            value = self._initial_value(inputs)
            if self._cosine():
                value = nn_impl.l2_normalize(value, axis=1)
            value.set_shape([self._num_clusters, self._dim])
            assign = state_ops.assign(centers_var, value, validate_shape=False)
            with graph_lib.control_dependencies([assign]):
                return array_ops.identity(state_ops.assign(initialized, True))
        return builders.cond(initialized.value(), lambda: array_ops.identity(True), pick,
                             name="initialize_clusters").op

    def _full_batch_step(self, inputs, cluster_idx, centers_var):
        k = self._num_clusters
        sums = math_ops.add_n([sequence_ops.unsorted_segment_sum(x, idx, k)
                               for x, idx in zip(inputs, cluster_idx, strict=True)])
        counts = math_ops.add_n([sequence_ops.unsorted_segment_sum(
            array_ops.ones_like(idx, dtype=sums.dtype), idx, k) for idx in cluster_idx])
        new = sums / (array_ops.expand_dims(counts, 1) + 1e-6)
        if self._centers_normalized():
            new = nn_impl.l2_normalize(new, axis=1)
        return state_ops.assign(centers_var, new).op

    def _mini_batch_step(self, inputs, cluster_idx, centers_var, counts):
        updates = []
        for x, idx in zip(inputs, cluster_idx, strict=True):
            ids, slot = gather_ops.unique(idx)
            m = array_ops.size(ids)
            added = sequence_ops.unsorted_segment_sum(array_ops.ones_like(slot, dtypes.int64),
                                                  slot, m)
            old_counts = gather_ops.gather(counts.value(), ids)
            old_centers = gather_ops.gather(centers_var.value(), ids)
            step = (sequence_ops.unsorted_segment_sum(x, slot, m)
                    - math_ops.cast(added, x.dtype)[:, None] * old_centers)
            step = step / math_ops.cast(old_counts + added, x.dtype)[:, None]
            # Both reads of the old values come before either update.
            with graph_lib.control_dependencies([step]):
                updates.append(state_ops.scatter_add(counts, ids, added))
                updates.append(state_ops.scatter_add(centers_var, ids, step))
        return builders.group(*updates)


def _assert_enough(n, k):
    return check_ops.assert_less_equal(
        math_ops.cast(k, dtypes.int64), n,
        message=f"KMeans needs at least num_clusters={k} input rows to draw its centers")


def _kmeans_plus_plus(points, k, seed, retries):
    """k-means++ seeding of `points`' rows (in NumPy through py_func): each next center is
    drawn with probability proportional to the squared distance to the nearest center so
    far; `retries` more draws are made and the one lowering the total distance most kept."""
    def seed_centers(x):
        n = x.shape[0]
        if n < k:
            raise ValueError(f"KMeans++ needs at least num_clusters={k} rows, got {n}")
        rng = np.random.RandomState(seed or None)
        tries = retries if retries >= 0 else int(2 + np.log(k))
        centers = [x[rng.randint(n)]]
        nearest = ((x - centers[0]) ** 2).sum(1)
        for _ in range(1, k):
            total = nearest.sum()
            p = nearest / total if total > 0 else np.full(n, 1.0 / n)
            picks = rng.choice(n, size=1 + tries, p=p)
            best = None
            for i in picks:
                cand = np.minimum(nearest, ((x - x[i]) ** 2).sum(1))
                if best is None or cand.sum() < best[1].sum():
                    best = (i, cand)
            centers.append(x[best[0]])
            nearest = best[1]
        return np.stack(centers).astype(x.dtype)

    value = script_ops.py_func(seed_centers, [points], points.dtype, stateful=True,
                               name="kmeans_plus_plus_initialization")
    return value
