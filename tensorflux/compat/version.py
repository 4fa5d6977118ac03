"""`tf.version`: the TensorFlow API version tensorflux implements, and its GraphDef
versions.

VERSION is the TensorFlow release whose tf.compat.v1 API tensorflux follows (the oracle
its tests compare with), and so also `tf.__version__`, which programs test; tensorflux's
own release is in GIT_VERSION ("tensorflux-X.Y.Z") and the package metadata.
"""

from tensorflux.framework import versions as _versions

VERSION = "2.21.0"
GIT_VERSION = f"tensorflux-{_versions.__version__}"
COMPILER_VERSION = "Python"
GRAPH_DEF_VERSION = 1205  # the producer version of the GraphDefs tensorflux writes
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0

__all__ = ["VERSION", "GIT_VERSION", "COMPILER_VERSION", "GRAPH_DEF_VERSION",
           "GRAPH_DEF_VERSION_MIN_CONSUMER", "GRAPH_DEF_VERSION_MIN_PRODUCER"]
