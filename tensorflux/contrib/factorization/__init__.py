"""`tf.contrib.factorization`: k-means clustering (`KMeans`, its distance and
initialization constants)."""

from tensorflux.contrib.factorization.clustering_ops import (  # noqa: F401
    COSINE_DISTANCE,
    KMC2_INIT,
    KMEANS_PLUS_PLUS_INIT,
    RANDOM_INIT,
    SQUARED_EUCLIDEAN_DISTANCE,
    KMeans,
)
