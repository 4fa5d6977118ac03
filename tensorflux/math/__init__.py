"""`tf.math`: the math ops and functions under their TF1 `tf.math.*` names (the ops live in
tensorflux/ops/; compositions in math_impl.py)."""

# ruff: noqa: F401

from tensorflux.debugging.check_ops import (  # noqa: A004
    is_non_decreasing,
    is_strictly_increasing,
)
from tensorflux.math import special
from tensorflux.math.math_impl import (
    accumulate_n,
    approx_max_k,
    approx_min_k,  # noqa: A004
    confusion_matrix,
    log_sigmoid,
    multiply_no_nan,
    polyval,
    reciprocal_no_nan,
    reduce_std,
    reduce_variance,
    softsign,
    xdivy,
    xlog1py,
    xlogy,
    zero_fraction,
)
from tensorflux.nn.nn_impl import (  # noqa: A004
    l2_normalize,
)
from tensorflux.ops.array_ops import (  # noqa: A004
    invert_permutation,
)
from tensorflux.ops.comparison_ops import (  # noqa: A004
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    not_equal,
)
from tensorflux.ops.gather_ops import (  # noqa: A004
    top_k,
)
from tensorflux.ops.math_ext_ops import (  # noqa: A004
    bincount,
    cumulative_logsumexp,
)
from tensorflux.ops.math_ops import (  # noqa: A004
    add,
    add_n,
    angle,
    atan2,
    conj,
    divide,
    floordiv,
    floormod,
    imag,
    maximum,
    minimum,
    multiply,
    pow,
    real,
    scalar_mul,
    squared_difference,
    subtract,
    truediv,
)
from tensorflux.ops.math_ops import div_no_nan as divide_no_nan
from tensorflux.ops.math_ops import floormod as mod
from tensorflux.ops.misc_ops import nextafter  # noqa: F401,E402 - tf.math.nextafter
from tensorflux.ops.nn_ops import (  # noqa: A004
    in_top_k,
    log_softmax,
    softmax,
    softplus,
)
from tensorflux.ops.reduction_ops import (  # noqa: A004
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    reduce_all,
    reduce_any,
    reduce_euclidean_norm,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    unsorted_segment_sum,
)
from tensorflux.ops.segment_ops import (  # noqa: A004
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
    unsorted_segment_max,
    unsorted_segment_mean,
    unsorted_segment_min,
    unsorted_segment_prod,
    unsorted_segment_sqrt_n,
)
from tensorflux.ops.sequence_ops import (  # noqa: A004
    cumsum,
)
from tensorflux.ops.sobol_ops import sobol_sample
from tensorflux.ops.special_math_ops import (  # noqa: A004
    bessel_i0,
    bessel_i0e,
    bessel_i1,
    bessel_i1e,
    betainc,
    erfcinv,
    erfinv,
    igamma,
    igammac,
    lbeta,
    ndtri,
    polygamma,
    zeta,
)
from tensorflux.ops.unary_ops import (  # noqa: A004
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    ceil,
    cos,
    cosh,
    digamma,
    erf,
    erfc,
    exp,
    expm1,
    floor,
    is_finite,
    is_inf,
    is_nan,
    lgamma,
    log,
    log1p,
    negative,
    reciprocal,
    rint,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    tan,
    tanh,
)
