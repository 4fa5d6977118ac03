"""`tf.contrib.cluster_resolver`: TPUClusterResolver (there are no TPUs: it raises a
ValueError saying so) and the resolvers' base names for programs that import them."""

from tensorflux.contrib.tpu import TPUClusterResolver  # noqa: F401
