"""CPU kernels of KMC2ChainInitialization and NearestNeighbors (tensorflux/ops/
clustering_ops.py)."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu._math_common import _invalid
from tensorflux.kernels.registry import kernel
from tensorflux.lib import philox


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
