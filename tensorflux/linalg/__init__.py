"""`tf.linalg`: the linear-algebra ops (tensorflux/ops/linalg_ops.py, linalg_factor_ops.py,
matrix_ops.py, tridiagonal_ops.py) and the functions built from them (linalg_impl.py,
tridiagonal.py) under their TF1 `tf.linalg.*` names, and the LinearOperator class library
(linear_operator/)."""

from tensorflux.linalg.linalg_impl import (  # noqa: F401
    adjoint,
    cholesky_solve,
    eye,
    logdet,
    lu_matrix_inverse,
    lu_reconstruct,
    lu_solve,
    matrix_rank,
    matrix_transpose,
    matvec,
    norm,
    normalize,
    pinv,
    slogdet,
    trace,
)
from tensorflux.linalg.linalg_impl import matrix_transpose as transpose  # noqa: F401
from tensorflux.linalg.linear_operator import (  # noqa: F401
    LinearOperator,
    LinearOperatorAdjoint,
    LinearOperatorBlockDiag,
    LinearOperatorBlockLowerTriangular,
    LinearOperatorCirculant,
    LinearOperatorCirculant2D,
    LinearOperatorCirculant3D,
    LinearOperatorComposition,
    LinearOperatorDiag,
    LinearOperatorFullMatrix,
    LinearOperatorHouseholder,
    LinearOperatorIdentity,
    LinearOperatorInversion,
    LinearOperatorKronecker,
    LinearOperatorLowerTriangular,
    LinearOperatorLowRankUpdate,
    LinearOperatorPermutation,
    LinearOperatorScaledIdentity,
    LinearOperatorToeplitz,
    LinearOperatorTridiag,
    LinearOperatorZeros,
)
from tensorflux.linalg.tridiagonal import (  # noqa: F401
    eigh_tridiagonal,
    tridiagonal_matmul,
    tridiagonal_solve,
)
from tensorflux.nn.clip_ops import global_norm  # noqa: F401
from tensorflux.nn.nn_impl import l2_normalize  # noqa: F401
from tensorflux.ops.linalg_factor_ops import lu, qr, svd  # noqa: F401
from tensorflux.ops.linalg_factor_ops import matrix_exponential as expm  # noqa: F401
from tensorflux.ops.linalg_factor_ops import matrix_logarithm as logm  # noqa: F401
from tensorflux.ops.linalg_factor_ops import matrix_solve as solve  # noqa: F401
from tensorflux.ops.linalg_factor_ops import matrix_solve_ls as lstsq  # noqa: F401
from tensorflux.ops.linalg_factor_ops import matrix_square_root as sqrtm  # noqa: F401
from tensorflux.ops.linalg_factor_ops import matrix_triangular_solve as triangular_solve  # noqa: F401,E501
from tensorflux.ops.linalg_factor_ops import self_adjoint_eig as eigh  # noqa: F401
from tensorflux.ops.linalg_factor_ops import self_adjoint_eigvals as eigvalsh  # noqa: F401
from tensorflux.ops.linalg_ops import cross  # noqa: F401
from tensorflux.ops.linalg_ops import diag as tensor_diag  # noqa: F401
from tensorflux.ops.linalg_ops import diag_part as tensor_diag_part  # noqa: F401
from tensorflux.ops.linalg_ops import matrix_band_part as band_part  # noqa: F401
from tensorflux.ops.linalg_ops import matrix_diag as diag  # noqa: F401
from tensorflux.ops.linalg_ops import matrix_diag_part as diag_part  # noqa: F401
from tensorflux.ops.linalg_ops import matrix_set_diag as set_diag  # noqa: F401
from tensorflux.ops.math_ext_ops import einsum, tensordot  # noqa: F401
from tensorflux.ops.matrix_ops import cholesky, matmul  # noqa: F401
from tensorflux.ops.matrix_ops import matrix_determinant as det  # noqa: F401
from tensorflux.ops.matrix_ops import matrix_inverse as inv  # noqa: F401
