"""`tf.contrib.factorization`: k-means clustering (`KMeans`, its distance and
initialization constants) and its estimator `KMeansClustering`; weighted alternating least
squares (`WALSModel`) and its estimator `WALSMatrixFactorization`; Gaussian mixtures by EM
(`GMM`, `GmmAlgorithm`, `gmm`).

TF1's module paths (`tensorflow.contrib.factorization.python.ops.factorization_ops`,
`...clustering_ops`, `gmm_ops`, `kmeans`, `gmm`, `wals`) import as
`tensorflux.contrib.factorization.python.ops.<name>`. As in TF1, the name `gmm` here is
the function `gmm_ops.gmm` (the estimator's module is `...python.ops.gmm`).
"""

import sys as _sys
import types as _types

from tensorflux.contrib.factorization import (
    clustering_ops,
    factorization_ops,
    gmm,
    gmm_ops,
    kmeans,
    wals,
)
from tensorflux.contrib.factorization.clustering_ops import (  # noqa: F401
    COSINE_DISTANCE,
    KMC2_INIT,
    KMEANS_PLUS_PLUS_INIT,
    RANDOM_INIT,
    SQUARED_EUCLIDEAN_DISTANCE,
    KMeans,
)
from tensorflux.contrib.factorization.factorization_ops import WALSModel  # noqa: F401
from tensorflux.contrib.factorization.gmm import GMM  # noqa: F401
from tensorflux.contrib.factorization.gmm_ops import (  # noqa: F401
    DIAG_COVARIANCE,
    FULL_COVARIANCE,
    GmmAlgorithm,
)
from tensorflux.contrib.factorization.kmeans import KMeansClustering  # noqa: F401
from tensorflux.contrib.factorization.wals import WALSMatrixFactorization  # noqa: F401


def _package(name: str, **attrs):
    """A module object standing for one of TF1's package paths (no files of its own)."""
    module = _types.ModuleType(f"{__name__}.{name}")
    module.__path__ = []
    module.__dict__.update(attrs)
    _sys.modules.setdefault(module.__name__, module)
    return module


_OPS = {"clustering_ops": clustering_ops, "factorization_ops": factorization_ops,
        "gmm": gmm, "gmm_ops": gmm_ops, "kmeans": kmeans, "wals": wals}
for _name, _module in _OPS.items():
    _sys.modules.setdefault(f"{__name__}.python.ops.{_name}", _module)
python = _package("python", ops=_package("python.ops", **_OPS))
gmm = gmm_ops.gmm  # noqa: F811 - TF1's tf.contrib.factorization.gmm is the function
