"""`tf.contrib.stateless`: random numbers that are a function of a shape-[2] int seed
(TF1's names for `tf.random.stateless_*`; the same ops, tensorflux/ops/
stateless_random_ops.py)."""

from tensorflux.ops.stateless_random_ops import (  # noqa: F401
    stateless_multinomial,
    stateless_normal,
    stateless_truncated_normal,
    stateless_uniform,
)

stateless_random_uniform = stateless_uniform
stateless_random_normal = stateless_normal

__all__ = ["stateless_multinomial", "stateless_random_normal", "stateless_random_uniform",
           "stateless_truncated_normal"]
