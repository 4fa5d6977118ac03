"""CPU kernels of KmeansPlusPlusInitialization, KMC2ChainInitialization and NearestNeighbors
(tensorflux/ops/clustering_ops.py).

The seeding kernels give TensorFlow's picks for the same seed: the same Philox words spent
the same way, and float32 arithmetic in TensorFlow's order where a comparison depends on
it (k-means++ compares totals of distances, summed as its CPU build's 8-lane vector
reduction does: `_lane_sums`).
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.kernels.cpu._math_common import _invalid
from tensorflux.kernels.registry import kernel
from tensorflux.lib import philox

_LANES = 8


def _lane_sums(a: np.ndarray) -> np.ndarray:
    """float32 sums along the last axis in the order of an 8-lane vector reduction: two
    accumulators over alternate blocks of 8, then the odd block left, then the lanes halved
    (i + 4, i + 2, i + 1), then the elements past the last whole block one by one."""
    a = np.asarray(a, np.float32)
    n = a.shape[-1]
    whole = n // _LANES * _LANES
    if whole == 0:
        out = np.zeros(a.shape[:-1], np.float32)
        for i in range(n):
            out = out + a[..., i]
        return out
    blocks = a[..., :whole].reshape(a.shape[:-1] + (-1, _LANES))
    acc = blocks[..., 0, :]
    if blocks.shape[-2] > 1:
        acc2 = blocks[..., 1, :]
        pairs = blocks.shape[-2] // 2
        for b in range(1, pairs):
            acc = acc + blocks[..., 2 * b, :]
            acc2 = acc2 + blocks[..., 2 * b + 1, :]
        acc = acc + acc2
        if blocks.shape[-2] % 2:
            acc = acc + blocks[..., -1, :]
    width = _LANES
    while width > 1:
        width //= 2
        acc = acc[..., :width] + acc[..., width:2 * width]
    out = acc[..., 0]
    for i in range(whole, n):
        out = out + a[..., i]
    return out


@kernel("KmeansPlusPlusInitialization", expensive=True)
def _kmeans_plus_plus_initialization(ctx, points, num_to_sample, seed, num_retries):
    if np.ndim(points) != 2:
        raise _invalid("Input points should be a matrix.")
    for value, what in ((num_to_sample, "num_to_sample"), (seed, "seed"),
                        (num_retries, "num_retries_per_sample")):
        if np.ndim(value) != 0:
            raise _invalid(f"Input {what} should be a scalar.")
    x = np.asarray(points, np.float32)
    n, k = x.shape[0], int(num_to_sample)
    retries = int(num_retries)
    if retries < 0:
        retries = 2 + int(math.log(k)) if k > 0 else 2
    if n <= 0:
        raise _invalid("Expected points.rows() > 0.")
    if k <= 0:
        raise _invalid("Expected num_to_sample > 0.")
    if k > n:
        raise _invalid(f"Expected num_to_sample <= points.rows(). {k} vs {n}.")
    return x[_kmeans_plus_plus_rows(x, k, int(seed), retries)]


def _kmeans_plus_plus_rows(x, k, seed, retries):
    """The k row indices k-means++ picks (ops/clustering_ops.py)."""
    n = x.shape[0]
    half_norms = np.float32(0.5) * _lane_sums(x * x)
    words = philox.WordStream(np.array([seed & 0xFFFFFFFFFFFFFFFF], np.uint64),
                              np.zeros(2, np.uint64))
    picked: list[int] = []
    nearest = np.full(n, np.inf, np.float32)  # half squared distances to the picks
    cumulative = None

    def draw():
        if not picked:  # uniform: a 64-bit word (low half first) modulo n
            lo, hi = words.take(2)
            return (int(hi) << 32 | int(lo)) % n
        while True:  # proportional to the distances; picked rows are drawn again
            target = words.rand_float() * cumulative[-1]
            index = int(np.searchsorted(cumulative, target, side="right"))
            if index not in picked:  # past the end (all distances 0): the last row
                return min(index, n - 1)

    def with_candidate(index):
        return np.minimum(nearest, (half_norms - x @ x[index]) + half_norms[index])

    for i in range(k):
        if i > 0:
            cumulative = np.cumsum(nearest, dtype=np.float32)
        best, best_total = None, np.float32(np.inf)
        for _ in range(1 + retries):
            index = draw()
            candidate = with_candidate(index)
            if retries == 0:
                best = (index, candidate)
                break
            total = _lane_sums(candidate)
            if total < best_total:
                best, best_total = (index, candidate), total
        if best is None:  # every total was inf or nan: TF keeps row 0's
            best = (0, with_candidate(0))
        index = min(best[0], n - 1)
        nearest = best[1]
        picked.append(index)
    return picked


@kernel("KMC2ChainInitialization")
def _kmc2_chain_initialization(ctx, distances, seed):
    if np.ndim(distances) != 1:
        raise _invalid("Input distances should be a vector.")
    if np.ndim(seed) != 0:
        raise _invalid("Input seed should be a scalar.")
    d = np.asarray(distances, np.float32)
    if d.size == 0:
        raise _invalid("Expected distances_tensor.size() > 0.")
    # One uniform float per candidate after the first, from the Philox stream whose key is
    # the seed and whose counter starts at zero.
    key = np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], np.uint64)
    u = philox.uint32_to_float(philox.words(key, np.zeros(2, np.uint64), d.size - 1))
    current = 0
    for i in range(1, d.size):
        if d[i] > u[i - 1] * d[current]:
            current = i
    return np.int64(current)


@kernel("NearestNeighbors", expensive=True)
def _nearest_neighbors(ctx, points, centers, k):
    if np.ndim(points) != 2 or np.ndim(centers) != 2:
        raise _invalid("points and centers must be matrices, got shapes "
                       f"{list(np.shape(points))} and {list(np.shape(centers))}")
    if points.shape[0] == 0:
        raise _invalid("Expected points.rows() > 0.")
    if points.shape[1] != centers.shape[1]:
        raise _invalid("points and centers must have the same number of columns, got "
                       f"{points.shape[1]} and {centers.shape[1]}")
    if np.ndim(k) != 0 or int(k) < 0:
        raise _invalid(f"k must be a non-negative scalar, got {k}")
    width = min(int(k), centers.shape[0])
    x = points.astype(np.float64)
    c = centers.astype(np.float64)
    dist = ((x * x).sum(1)[:, None] - 2.0 * (x @ c.T) + (c * c).sum(1)[None, :])
    np.maximum(dist, 0.0, out=dist)
    # A stable sort keeps equal distances in the centers' order.
    order = np.argsort(dist, axis=1, kind="stable")[:, :width]
    return (order.astype(np.int64),
            np.take_along_axis(dist, order, axis=1).astype(np.float32))
