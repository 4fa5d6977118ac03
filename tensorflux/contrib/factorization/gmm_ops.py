"""Gaussian mixture models by expectation-maximization (TF1's
`tf.contrib.factorization.python.ops.gmm_ops`: `GmmAlgorithm` and `gmm`).

The model: K components with weights alpha_k ("alpha"), means mu_k ("clusters", stored
[K, 1, d]) and covariances ("clusters_covs": [K, d, d] full, or [K, d] diagonals). Per
point x and component k,

    log p_k(x) = log alpha_k + log N(x; mu_k, S_k)

with S_k the covariance plus 1e-3 I (full; read through its Cholesky factor) or the
diagonal plus 1e-3 (diag). One training step is one EM iteration over the inputs (a
tensor, or a list of shards): responsibilities w_ik = softmax_k log p_k(x_i), then with
N_k = sum_i w_ik, alpha_k = N_k / sum N, mu_k = sum_i w_ik x_i / N_k and
S_k = sum_i w_ik x_i x_i^T / N_k - mu_k mu_k^T + 1e-3 I (the new means; its diagonal for
"diag"), each only when `params` names it ("w", "m", "c"). Initialization (once): the
means are the given ones or rows of the inputs drawn uniformly with the seed, every
covariance the first shard's sample covariance (n - 1) plus 1e-3 I, the weights 1/K.

Assignments are the most responsible component per point; scores each point's log
likelihood log sum_k p_k(x); the loss (TF1's) the log of the summed likelihoods,
logsumexp over all points of their scores.
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow import builders
from tensorflux.debugging import check_ops
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    gather_ops,
    joining_ops,
    linalg_factor_ops,
    linalg_ops,
    math_ops,
    matrix_ops,
    random_ops,
    reduction_ops,
    state_ops,
    unary_ops,
)
from tensorflux.variables import variables

FULL_COVARIANCE = "full"
DIAG_COVARIANCE = "diag"
# Keeps divisions by a component's mass finite when no point belongs to it.
MEPS = float(np.finfo(float).eps)
_MIN_VAR = 1e-3
_F32 = dtypes.float32


def _covariance(x, diag: bool):
    """The sample covariance (n - 1) of x's rows: [d, d], or [1, d] variances."""
    n = math_ops.cast(array_ops.shape(x)[0], _F32)
    x = x - reduction_ops.reduce_mean(x, 0, keepdims=True)
    if diag:
        return reduction_ops.reduce_sum(unary_ops.square(x), 0, keepdims=True) / (n - 1)
    return matrix_ops.matmul(x, x, transpose_a=True) / (n - 1)


def _random_rows(data, k, seed):
    """k rows of the shards drawn uniformly (with replacement)."""
    points = data[0] if len(data) == 1 else joining_ops.concat(data, 0)
    n = array_ops.shape(points, out_type=dtypes.int64)[0]
    check = check_ops.assert_less_equal(
        np.int64(k), n, message=f"GMM needs at least num_clusters={k} rows to draw from")
    with graph_lib.control_dependencies([check]):
        rows = random_ops.random_uniform([k], 0, n, dtype=dtypes.int64, seed=seed)
    return gather_ops.gather(points, rows)


class GmmAlgorithm:
    """The EM graph of a Gaussian mixture (module docstring).

    Args:
      data: a list of [n_i, d] float32 tensors (shards).
      num_classes: K, the number of components.
      initial_means: a [K, d] tensor, or None to draw rows of the data.
      params: which parameters training updates: any of "w", "m", "c".
      covariance_type: FULL_COVARIANCE or DIAG_COVARIANCE.
      random_seed: the seed of the drawn initial means.

    Raises:
      ValueError: an unknown covariance type or parameter letter, or K not positive.
    """

    CLUSTERS_VARIABLE = "clusters"
    CLUSTERS_COVS_VARIABLE = "clusters_covs"
    CLUSTERS_WEIGHT = "alpha"

    def __init__(self, data, num_classes, initial_means=None, params="wmc",
                 covariance_type=FULL_COVARIANCE, random_seed=0):
        if covariance_type not in (FULL_COVARIANCE, DIAG_COVARIANCE):
            raise ValueError(f"Invalid covariance type: {covariance_type!r}")
        if set(params) - set("wmc"):
            raise ValueError(f"params may hold only 'w', 'm' and 'c', got {params!r}")
        if not isinstance(num_classes, int) or num_classes <= 0:
            raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
        self._data = [math_ops.cast(convert_to_tensor(x), _F32) for x in data]
        self._k, self._params, self._diag = (num_classes, params,
                                             covariance_type == DIAG_COVARIANCE)
        self._dims = array_ops.shape(self._data[0])[1]
        self._min_var = linalg_ops.diag(array_ops.ones(array_ops.reshape(self._dims, [1]),
                                                       _F32)) * _MIN_VAR
        empty = np.zeros(0, np.float32)
        self._means = variables.Variable(empty, name=self.CLUSTERS_VARIABLE,
                                         validate_shape=False)
        self._covs = variables.Variable(empty, name=self.CLUSTERS_COVS_VARIABLE,
                                        validate_shape=False)
        self._alpha = variables.Variable(np.full(num_classes, 1.0 / num_classes, np.float32),
                                         name=self.CLUSTERS_WEIGHT, validate_shape=False)
        self._initialized = variables.Variable(False, name="initialized")
        self._init_op = self._initialize(initial_means, random_seed)
        self._define_graph()

    def _initialize(self, initial_means, seed):
        def pick():
            means = (_random_rows(self._data, self._k, seed) if initial_means is None
                     else math_ops.cast(convert_to_tensor(initial_means), _F32))
            cov = _covariance(self._data[0], self._diag) + self._min_var
            if self._diag:
                covs = joining_ops.tile(linalg_ops.diag_part(cov)[None], [self._k, 1])
            else:
                covs = joining_ops.tile(cov[None], [self._k, 1, 1])
            with graph_lib.control_dependencies([
                    state_ops.assign(self._means, array_ops.expand_dims(means, 1),
                                     validate_shape=False),
                    state_ops.assign(self._covs, covs, validate_shape=False)]):
                return array_ops.identity(state_ops.assign(self._initialized, True))
        return builders.cond(self._initialized.value(), lambda: array_ops.identity(True),
                             pick, name="initialize_gmm").op

    def _log_probs(self, x, means, covs, alpha):
        """[n, K]: log alpha_k + log N(x_i; mu_k, S_k)."""
        d = math_ops.cast(self._dims, _F32)
        diff = x[None] - means[:, None, :]  # [K, n, d]
        if self._diag:
            var = covs + _MIN_VAR
            maha = reduction_ops.reduce_sum(unary_ops.square(diff) / var[:, None, :], 2)
            log_det = reduction_ops.reduce_sum(unary_ops.log(var), 1, keepdims=True)
        else:
            chol = matrix_ops.cholesky(covs + self._min_var)
            z = linalg_factor_ops.matrix_triangular_solve(
                chol, array_ops.transpose(diff, [0, 2, 1]), lower=True)  # [K, d, n]
            maha = reduction_ops.reduce_sum(unary_ops.square(z), 1)
            log_det = 2.0 * reduction_ops.reduce_sum(
                unary_ops.log(linalg_ops.matrix_diag_part(chol)), 1, keepdims=True)
        log_n = -0.5 * (maha + log_det + d * np.log(2 * np.pi).astype(np.float32))
        return array_ops.transpose(log_n) + unary_ops.log(alpha)[None]

    def _define_graph(self):
        means = array_ops.squeeze(array_ops.reshape(self._means.value(),
                                                    [self._k, 1, -1]), [1])
        covs = array_ops.reshape(self._covs.value(), [self._k, -1] if self._diag else
                                 joining_ops.stack([self._k, self._dims, self._dims]))
        alpha = array_ops.reshape(self._alpha.value(), [self._k])
        mass, weighted, weighted_sq = [], [], []
        self._scores, self._assignments = [], []
        for x in self._data:
            log_p = self._log_probs(x, means, covs, alpha)
            log_like = reduction_ops.reduce_logsumexp(log_p, axis=1, keepdims=True)
            w = unary_ops.exp(log_p - log_like)  # responsibilities [n, K]
            self._scores.append(log_like)
            self._assignments.append(reduction_ops.argmax(w, 1))
            mass.append(reduction_ops.reduce_sum(w, 0))
            weighted.append(matrix_ops.matmul(w, x, transpose_a=True))
            # sum_i w_ik x_i x_i^T: [K, d, d]
            weighted_sq.append(matrix_ops.matmul(
                array_ops.transpose(w)[:, :, None] * x[None],
                joining_ops.tile(x[None], [self._k, 1, 1]), transpose_a=True))
        self._train_op = self._maximize(math_ops.add_n(mass), math_ops.add_n(weighted),
                                         math_ops.add_n(weighted_sq), len(self._data))
        self._loss = reduction_ops.reduce_logsumexp(
            joining_ops.concat([array_ops.reshape(s, [-1]) for s in self._scores], 0))

    def _maximize(self, mass, weighted, weighted_sq, num_shards):
        """The M step's assignments (those `params` names)."""
        updates = []
        if "w" in self._params:
            per_shard = mass / num_shards
            updates.append(state_ops.assign(
                self._alpha, per_shard / (reduction_ops.reduce_sum(per_shard) + MEPS)))
        new_means = weighted / (mass[:, None] + MEPS)
        means_update = []
        if "m" in self._params:
            means_update.append(state_ops.assign(self._means, new_means[:, None, :],
                                                 validate_shape=False))
            updates += means_update
        if "c" in self._params:
            # The covariances are taken around the means as updated (or as they are).
            with graph_lib.control_dependencies(means_update):
                mu = array_ops.squeeze(array_ops.reshape(self._means.value(),
                                                         [self._k, 1, -1]), [1])
            second = weighted_sq / (mass[:, None, None] + MEPS)
            cov = second - mu[:, :, None] * mu[:, None, :] + self._min_var
            if self._diag:
                cov = linalg_ops.matrix_diag_part(cov)
            updates.append(state_ops.assign(self._covs, cov, validate_shape=False))
        return builders.group(*updates, name="gmm_train")

    def init_ops(self):
        """The op that picks the initial parameters (once)."""
        return self._init_op

    def is_initialized(self):
        """A bool variable, True once the initialization ran."""
        return self._initialized

    def training_ops(self):
        """The op of one EM iteration."""
        return self._train_op

    def alphas(self):
        return self._alpha

    def clusters(self):
        """The means' variable ([K, 1, d])."""
        return self._means

    def covariances(self):
        return self._covs

    def assignments(self):
        """Per shard, each point's most responsible component (int64)."""
        return list(self._assignments)

    def scores(self):
        """Each point's log likelihood, [n, 1] (shards concatenated)."""
        return (self._scores[0] if len(self._scores) == 1
                else joining_ops.concat(self._scores, 0))

    def log_likelihood_op(self):
        """The log of the summed likelihoods of all the points."""
        return self._loss


def gmm(inp, initial_clusters, num_clusters, random_seed,
        covariance_type=FULL_COVARIANCE, params="wmc"):
    """The graph of a Gaussian mixture fitted by EM.

    Args:
      inp: a [n, d] tensor or a list of them (shards).
      initial_clusters: "random" (rows of the input), or the [K, d] initial means.
      num_clusters: K.
      random_seed: the seed of the random initial means.
      covariance_type: "full" or "diag".
      params: which parameters training updates ("w", "m", "c").

    Returns:
      (loss, scores, [assignments], training_op, init_op, is_initialized): the log of the
      summed likelihoods; each point's log likelihood; the list of each shard's
      assignments, in a list; the op of one EM step; the initialization op; the bool
      variable set by it.

    Raises:
      ValueError: as `GmmAlgorithm`.
    """
    initial_means = None if isinstance(initial_clusters, str) and \
        initial_clusters == "random" else initial_clusters
    data = list(inp) if isinstance(inp, (list, tuple)) else [inp]
    algo = GmmAlgorithm(data, num_clusters, initial_means, params, covariance_type,
                        random_seed)
    return (algo.log_likelihood_op(), algo.scores(), [algo.assignments()],
            algo.training_ops(), algo.init_ops(), algo.is_initialized())
