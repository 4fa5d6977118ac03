"""The `tf.linalg.LinearOperator*` class library: batches of matrices represented by their
structure (diagonal, triangular, Kronecker, circulant, ...), each built from graph ops so
that gradients flow through tf.gradients. The base class is in linear_operator.py."""

from tensorflux.linalg.linear_operator.basic import (  # noqa: F401
    LinearOperatorDiag,
    LinearOperatorFullMatrix,
    LinearOperatorLowerTriangular,
)
from tensorflux.linalg.linear_operator.blocks import (  # noqa: F401
    LinearOperatorBlockDiag,
    LinearOperatorBlockLowerTriangular,
)
from tensorflux.linalg.linear_operator.circulant import (  # noqa: F401
    LinearOperatorCirculant,
    LinearOperatorCirculant2D,
    LinearOperatorCirculant3D,
)
from tensorflux.linalg.linear_operator.identity import (  # noqa: F401
    LinearOperatorIdentity,
    LinearOperatorScaledIdentity,
    LinearOperatorZeros,
)
from tensorflux.linalg.linear_operator.linear_operator import LinearOperator  # noqa: F401
from tensorflux.linalg.linear_operator.low_rank import LinearOperatorLowRankUpdate  # noqa: F401
from tensorflux.linalg.linear_operator.special import (  # noqa: F401
    LinearOperatorHouseholder,
    LinearOperatorPermutation,
    LinearOperatorToeplitz,
    LinearOperatorTridiag,
)
from tensorflux.linalg.linear_operator.structural import (  # noqa: F401
    LinearOperatorAdjoint,
    LinearOperatorComposition,
    LinearOperatorInversion,
    LinearOperatorKronecker,
)
