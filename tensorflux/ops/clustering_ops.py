"""The ops under k-means seeding (tf.contrib.factorization's KMeans): KmeansPlusPlusInitialization,
KMC2ChainInitialization and NearestNeighbors. Their kernels are in
tensorflux/kernels/cpu/clustering_ops.py.

KmeansPlusPlusInitialization(points, num_to_sample, seed, num_retries_per_sample) picks
num_to_sample distinct rows by k-means++: the first uniformly, each next one with
probability proportional to its squared distance to the nearest row picked so far; each
pick draws 1 + num_retries_per_sample candidates (negative: 2 + floor(log(num_to_sample))
retries) and keeps the one leaving the smallest total distance. Its random stream is
KMC2ChainInitialization's (Philox keyed by the seed).

KMC2ChainInitialization(distances, seed) runs one Markov chain of k-MC2 (Bachem et al.,
"Approximate k-means++ in sublinear time", AAAI 2016) over candidate points given their
squared distances to the centers chosen so far: the chain starts at candidate 0 and moves to
candidate i when distances[i] > u * distances[current], u uniform in [0, 1) (float32, drawn
from Philox keyed by the seed, one word per candidate); it returns the index where it ends.
NearestNeighbors(points, centers, k) gives, per point, the k centers nearest in squared
Euclidean distance (fewer when there are fewer centers), ties to the lower index. Neither
op has a gradient.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__: list[str] = []  # the public names are tf.contrib.factorization's


def _kmc2_shape(op):
    common_shapes.checked_dims(op.inputs[0], rank=1)
    common_shapes.checked_dims(op.inputs[1], rank=0)
    return [tensor_shape.TensorShape([])]


def _kmeans_plus_plus_shape(op):
    points = common_shapes.checked_dims(op.inputs[0], rank=2) or [None, None]
    for t in op.inputs[1:]:
        common_shapes.checked_dims(t, rank=0)
    return [tensor_shape.TensorShape([common_shapes.scalar_value(op.inputs[1]), points[1]])]


define_op("KmeansPlusPlusInitialization",
          inputs=["points: float", "num_to_sample: int64", "seed: int64",
                  "num_retries_per_sample: int64"],
          outputs=["samples: float"], shape_fn=_kmeans_plus_plus_shape)
define_op("KMC2ChainInitialization", inputs=["distances: float", "seed: int64"],
          outputs=["index: int64"], shape_fn=_kmc2_shape)


def _nearest_shape(op):
    points = common_shapes.checked_dims(op.inputs[0], rank=2) or [None, None]
    centers = common_shapes.checked_dims(op.inputs[1], rank=2) or [None, None]
    common_shapes.merge_dim(points[1], centers[1])
    common_shapes.checked_dims(op.inputs[2], rank=0)
    k = common_shapes.scalar_value(op.inputs[2])
    m = centers[0]
    width = None if k is None or m is None else min(k, m)
    return [tensor_shape.TensorShape([points[0], width])] * 2


define_op("NearestNeighbors", inputs=["points: float", "centers: float", "k: int64"],
          outputs=["nearest_center_indices: int64", "nearest_center_distances: float"],
          shape_fn=_nearest_shape)
not_differentiable("KmeansPlusPlusInitialization", "KMC2ChainInitialization",
                   "NearestNeighbors")


def kmeans_plus_plus_initialization(points, num_to_sample, seed, num_retries_per_sample,
                                    name=None):
    """The raw op (`tf.raw_ops.KmeansPlusPlusInitialization`): [num_to_sample, d] rows."""
    return apply_op("KmeansPlusPlusInitialization", points=points,
                    num_to_sample=num_to_sample, seed=seed,
                    num_retries_per_sample=num_retries_per_sample,
                    name=name or "KmeansPlusPlusInitialization")


def kmc2_chain_initialization(distances, seed, name=None):
    """The raw op (`tf.raw_ops.KMC2ChainInitialization`): the index of one new center."""
    return apply_op("KMC2ChainInitialization", distances=distances, seed=seed,
                    name=name or "KMC2ChainInitialization")


def nearest_neighbors(points, centers, k, name=None):
    """The raw op (`tf.raw_ops.NearestNeighbors`): (indices, squared distances), [n, k]."""
    return apply_op("NearestNeighbors", points=points, centers=centers, k=k,
                    name=name or "NearestNeighbors")
