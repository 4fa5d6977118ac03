"""k-means clustering as a graph (TF1's `tf.contrib.factorization.KMeans`).

    kmeans = KMeans(inputs=x, num_clusters=25, distance_metric="cosine",
                    use_mini_batch=True)
    (all_scores, cluster_idx, scores, cluster_centers_initialized, cluster_centers_var,
     init_op, train_op) = kmeans.training_graph()
    sess.run(tf.global_variables_initializer(), feed)
    sess.run(init_op, feed)        # picks initial centers (until initialized)
    sess.run(train_op, feed)       # one Lloyd iteration, or one mini-batch update

Distances: squared Euclidean, or cosine (1 - x.c with x and c scaled to unit length).
Initial centers: "random" (rows of the inputs drawn uniformly with `random_seed`; a batch
with no more rows than the centers missing gives them all, and the next init_op run adds
more, as TF1's), "kmeans_plus_plus" (the KmeansPlusPlusInitialization op over the first
input's rows, with `kmeans_plus_plus_num_retries` extra draws per center keeping the best),
"kmc2" (below), a tensor or array, or a function `fn(inputs, num_clusters)`.

Full-batch training replaces each center by the mean of the points assigned to it (an
empty cluster's center goes to zero, as TF's 1e-6 denominator makes it); mini-batch
training moves each center assigned k new points by (sum of the points - k center) /
(n + k), n its count: the running mean.

Mini-batch counts, as TF1 keeps them: with `mini_batch_steps_per_iteration` 1 the centers
move every step and each count starts at 1 (the initial center weighs as one point). With
S > 1 steps per iteration the steps move a second copy ("clusters_updated") while the
distances are taken to the published centers ("clusters"); every S-th step ends by
publishing the copy (unit length for cosine) and setting the counts back to 0, so that an
iteration's centers are the means of the points assigned to them during it, and S steps
over the batches of a data set make one Lloyd iteration ("update_in_steps" counts down to
the next publication). TF1 publishes at the start of the step after (its reads of the
centers race with the publication); here the S steps of an iteration all see its centers.

KMC2 seeding (Bachem et al., AAAI 2016, as TF1 runs it): the first init_op run picks one
center, the first row of the first input (the batch is assumed shuffled); each later run
adds max(min(centers missing, rows // kmc2_chain_length), 1) centers, center i from one
KMC2ChainInitialization chain over rows [i L, (i + 1) L) (all rows when fewer than L) with
their squared distances to the centers so far. `cluster_centers_initialized` turns true
once all num_clusters are there; until then run init_op again (with new batches).
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import nn_impl
from tensorflux.ops import (
    array_ops,
    clustering_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    matrix_ops,
    random_ops,
    reduction_ops,
    sequence_ops,
    state_ops,
    unary_ops,
)
from tensorflux.ops.clustering_ops import (  # noqa: F401 - TF1's module re-exports its raw ops
    kmc2_chain_initialization,
    kmeans_plus_plus_initialization,
    nearest_neighbors,
)
from tensorflux.variables import variables

SQUARED_EUCLIDEAN_DISTANCE = "squared_euclidean"
COSINE_DISTANCE = "cosine"
RANDOM_INIT = "random"
KMEANS_PLUS_PLUS_INIT = "kmeans_plus_plus"
KMC2_INIT = "kmc2"
CLUSTERS_VAR_NAME = "clusters"


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
      mini_batch_steps_per_iteration: how many mini-batch steps between publications of
        the updated centers (see the module docstring).
      random_seed: the seed of the initial centers' draws.
      kmeans_plus_plus_num_retries: extra draws per k-means++ center, the best kept
        (negative: 2 + log(num_clusters)).
      kmc2_chain_length: the rows one KMC2 chain looks at to add one center.

    Raises:
      ValueError: a bad `num_clusters`, `distance_metric`, `initial_clusters`,
        `mini_batch_steps_per_iteration` or `kmc2_chain_length`, inputs not of rank 2, or
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
                RANDOM_INIT, KMEANS_PLUS_PLUS_INIT, KMC2_INIT):
            raise ValueError(f"Unsupported initialization {initial_clusters!r}")
        if (not isinstance(mini_batch_steps_per_iteration, int)
                or mini_batch_steps_per_iteration < 1):
            raise ValueError("mini_batch_steps_per_iteration must be a positive int, got "
                             f"{mini_batch_steps_per_iteration!r}")
        if not isinstance(kmc2_chain_length, int) or kmc2_chain_length < 1:
            raise ValueError(f"kmc2_chain_length must be a positive int, got "
                             f"{kmc2_chain_length!r}")
        self._inputs = [convert_to_tensor(x) for x in
                        (inputs if isinstance(inputs, (list, tuple)) else [inputs])]
        self._num_clusters = num_clusters
        self._initial_clusters = initial_clusters
        self._distance_metric = distance_metric
        self._use_mini_batch = use_mini_batch
        self._random_seed = random_seed
        self._retries = kmeans_plus_plus_num_retries
        self._chain_length = kmc2_chain_length
        self._steps_per_iteration = mini_batch_steps_per_iteration if use_mini_batch else 1
        if any(x.shape.ndims not in (None, 2) for x in self._inputs):
            raise ValueError("KMeans needs rank-2 inputs; got shapes "
                             f"{[x.shape for x in self._inputs]}")
        dims = {x.shape.as_list()[-1] for x in self._inputs if x.shape.ndims == 2} - {None}
        if len(dims) > 1:
            raise ValueError(f"KMeans' inputs have different numbers of columns: {dims}")
        self._dim = dims.pop() if dims else None  # None: the centers' shape is set by init

    def _cosine(self) -> bool:
        return self._distance_metric == COSINE_DISTANCE

    def _named_init(self) -> str | None:
        return self._initial_clusters if isinstance(self._initial_clusters, str) else None

    def _kmc2(self) -> bool:
        return self._named_init() == KMC2_INIT

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
        if self._named_init() == KMEANS_PLUS_PLUS_INIT:
            return _kmeans_plus_plus(inputs[0], k, self._random_seed, self._retries)
        value = init(self._inputs, k) if callable(init) else init
        return math_ops.cast(convert_to_tensor(value), inputs[0].dtype)

    def training_graph(self):
        """The k-means graph.

        Returns:
          (all_scores, cluster_idx, scores, cluster_centers_initialized,
          cluster_centers_var, init_op, training_op): lists (one entry per input) of
          the [n, num_clusters] distances, the nearest center's index and its
          distance; a bool variable, True once `init_op` picked all the centers; the
          centers' variable; the op that picks initial centers (until they are all
          there); the op of one training step.
        """
        inputs = self._inputs
        if self._cosine():
            inputs = [nn_impl.l2_normalize(x, axis=1) for x in inputs]
        state = self._create_variables(self._inputs[0].dtype.base_dtype)
        init_op = self._init_op(inputs, state)
        centers = state.centers.value()
        if self._cosine() and not self._centers_normalized():
            centers = nn_impl.l2_normalize(centers, axis=1)
        all_scores = self._distances(inputs, centers)
        cluster_idx = [reduction_ops.argmin(d, 1) for d in all_scores]
        scores = [reduction_ops.reduce_min(d, 1) for d in all_scores]
        if self._use_mini_batch:
            train = self._mini_batch_step(inputs, cluster_idx, state.updated, state.counts)
            if state.steps_left is not None:
                train = self._publish_every_iteration(train, state)
        else:
            train = self._full_batch_step(inputs, cluster_idx, state.centers)
        return (all_scores, cluster_idx, scores, state.initialized, state.centers, init_op,
                train)

    def _create_variables(self, dtype) -> _State:
        k, steps = self._num_clusters, self._steps_per_iteration

        def centers_variable(name):
            return variables.Variable(
                array_ops.zeros([k, self._dim or 0], dtype), name=name, trainable=False,
                validate_shape=self._dim is not None)

        # TF1's names, at the caller's scope: the estimator reads "clusters".
        state = _State(centers_variable(CLUSTERS_VAR_NAME),
                       variables.Variable(False, name="initialized", trainable=False))
        if self._use_mini_batch:
            # The counts start at 1 (the initial center weighs as one point), or at 0
            # when they are reset every iteration.
            first = array_ops.ones if steps == 1 else array_ops.zeros
            state.counts = variables.Variable(first([k], dtypes.int64),
                                              name="clusters_count", trainable=False)
            state.updated = state.centers
        if steps > 1:
            state.updated = centers_variable("clusters_updated")
            state.steps_left = variables.Variable(np.int64(steps), name="update_in_steps",
                                                  trainable=False)
        if self._kmc2() or self._named_init() == RANDOM_INIT:
            state.selected = variables.Variable(np.int64(0), name="clusters_selected",
                                                trainable=False)
        return state

    def _init_op(self, inputs, state):
        def pick():
            if state.selected is not None:  # rounds: KMC2, random
                value, selected = (self._kmc2_centers(inputs[0], state) if self._kmc2()
                                   else self._random_centers(inputs, state))
                done = comparison_ops.equal(selected, self._num_clusters)
                assigns = [state_ops.assign(state.selected, selected)]
            else:
                value = self._initial_value(inputs)
                if self._cosine():
                    value = nn_impl.l2_normalize(value, axis=1)
                value.set_shape([self._num_clusters, self._dim])
                done, assigns = True, []
            assigns += [state_ops.assign(v, value, validate_shape=False)
                        for v in {id(state.centers): state.centers,
                                  id(state.updated): state.updated}.values() if v is not None]
            with graph_lib.control_dependencies(assigns):
                return array_ops.identity(state_ops.assign(state.initialized, done))
        return builders.cond(state.initialized.value(), lambda: array_ops.identity(True),
                             pick, name="initialize_clusters").op

    def _kmc2_centers(self, points, state):
        """The centers after one KMC2 round over `points` (module docstring), and how many
        there are: ([num_clusters, d] tensor whose rows past the count are zero, int64)."""
        k, length = self._num_clusters, self._chain_length
        selected = state.selected.value()
        n = array_ops.shape(points, out_type=dtypes.int64)[0]
        start = self._centers_so_far(state, selected, points)
        # The first center ever is the first row, alone in its round (TF1's loop tests
        # for "no center yet" once, before its iterations).
        fresh = math_ops.cast(comparison_ops.equal(selected, 0), dtypes.int64)
        start = _with_row(start, 0, points[0], math_ops.cast(fresh, points.dtype))
        to_add = (1 - fresh) * math_ops.maximum(math_ops.minimum(k - selected, n // length), 1)

        def add_one(i, centers, count):
            subset = points[i * length:(i + 1) * length]
            _, dist = clustering_ops.nearest_neighbors(
                math_ops.cast(subset, dtypes.float32),
                math_ops.cast(centers[:count], dtypes.float32), np.int64(1))
            chosen = clustering_ops.kmc2_chain_initialization(
                array_ops.reshape(dist, [-1]), np.int64(self._random_seed or 0))
            return (i + 1, _with_row(centers, count, gather_ops.gather(subset, chosen)),
                    count + 1)

        _, centers, count = builders.while_loop(
            lambda i, centers, count: i < to_add, add_one,
            [np.int64(0), start, selected + fresh],
            name="kmc2")
        return centers, count

    def _centers_so_far(self, state, selected, points):
        """The [num_clusters, d] centers picked so far (rows past `selected` zero)."""
        dim = array_ops.shape(points, out_type=dtypes.int64)[1]
        return builders.cond(
            selected > 0, state.centers.value,
            lambda: array_ops.zeros(joining_ops.stack([np.int64(self._num_clusters), dim]),
                                    points.dtype))

    def _random_centers(self, inputs, state):
        """The centers after one round of random picks (TF1's): all the rows when there
        are no more than the centers missing, else that many rows drawn uniformly (with
        replacement) from all the inputs; and how many centers there are."""
        k = self._num_clusters
        points = inputs[0] if len(inputs) == 1 else joining_ops.concat(inputs, 0)
        selected = state.selected.value()
        n = array_ops.shape(points, out_type=dtypes.int64)[0]
        missing = k - selected
        new = builders.cond(
            n <= missing, lambda: array_ops.identity(points),
            lambda: gather_ops.gather(points, random_ops.random_uniform(
                array_ops.reshape(missing, [1]), 0, n, dtype=dtypes.int64,
                seed=self._random_seed)))
        count = selected + math_ops.minimum(n, missing)
        so_far = self._centers_so_far(state, selected, points)
        centers = joining_ops.concat([so_far[:selected], new, so_far[count:]], 0)
        return centers, count

    def _publish_every_iteration(self, update, state):
        """After `update` (one mini-batch step on the updated copy): the countdown to the
        next publication, and when it reaches 0 the publication (the updated centers
        become the centers, unit length for cosine; the counts restart from 0)."""
        with graph_lib.control_dependencies([update]):
            left = state.steps_left.value() - 1

            def publish():
                updated = state.updated.value()
                if self._cosine():
                    updated = nn_impl.l2_normalize(updated, axis=1)
                with graph_lib.control_dependencies([
                        state_ops.assign(state.centers, updated, validate_shape=False),
                        state_ops.assign(state.counts,
                                         array_ops.zeros_like(state.counts))]):
                    return state_ops.assign(state.steps_left, self._steps_per_iteration)

            return builders.cond(left <= 0, publish,
                                 lambda: state_ops.assign(state.steps_left, left),
                                 name="publish_centers").op

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


class _State:
    """KMeans' variables: the centers, whether they are all picked, and where used the
    mini-batch counts, the updated copy of the centers and the steps to its publication,
    and how many KMC2 centers are picked."""

    __slots__ = ("centers", "initialized", "counts", "updated", "steps_left", "selected")

    def __init__(self, centers, initialized):
        self.centers, self.initialized = centers, initialized
        self.counts = self.updated = self.steps_left = self.selected = None


def _with_row(matrix, row, value, weight=1.0):
    """`matrix` with row `row` moved to `value` (by `weight`: 1 replaces it, 0 keeps it)."""
    k = array_ops.shape(matrix)[0]
    mask = gather_ops.one_hot(row, k, dtype=matrix.dtype) * weight
    return matrix + mask[:, None] * (value[None, :] - matrix)


def _kmeans_plus_plus(points, k, seed, retries):
    """k-means++ seeding of `points`' rows by the KmeansPlusPlusInitialization op (TF's
    picks for the same seed): each next center drawn with probability proportional to the
    squared distance to the nearest center so far, `retries` more draws made and the one
    lowering the total distance most kept (negative: 2 + log(k))."""
    rows = clustering_ops.kmeans_plus_plus_initialization(
        math_ops.cast(points, dtypes.float32), np.int64(k), np.int64(seed or 0),
        np.int64(retries), name="kmeans_plus_plus_initialization")
    return math_ops.cast(rows, points.dtype)
