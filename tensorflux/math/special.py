"""`tf.math.special`: the special functions TF1 keeps there (the Bessel functions)."""

from tensorflux.ops.special_math_ops import (  # noqa: F401
    bessel_i0,
    bessel_i0e,
    bessel_i1,
    bessel_i1e,
)
