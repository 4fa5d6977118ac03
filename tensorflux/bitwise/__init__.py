"""`tf.bitwise`: bitwise ops on integer tensors (BitwiseAnd/Or/Xor and Invert from
tensorflux/ops/math_ops.py, LeftShift/RightShift from math_ext_ops.py)."""

from tensorflux.framework.op_def_library import apply_op
from tensorflux.ops.math_ext_ops import left_shift, right_shift  # noqa: F401


def bitwise_and(x, y, name=None):
    """x & y elementwise, with broadcasting (`tf.bitwise.bitwise_and`)."""
    return apply_op("BitwiseAnd", x=x, y=y, name=name or "BitwiseAnd")


def bitwise_or(x, y, name=None):
    """x | y elementwise, with broadcasting (`tf.bitwise.bitwise_or`)."""
    return apply_op("BitwiseOr", x=x, y=y, name=name or "BitwiseOr")


def bitwise_xor(x, y, name=None):
    """x ^ y elementwise, with broadcasting (`tf.bitwise.bitwise_xor`)."""
    return apply_op("BitwiseXor", x=x, y=y, name=name or "BitwiseXor")


def invert(x, name=None):
    """~x elementwise (`tf.bitwise.invert`)."""
    return apply_op("Invert", x=x, name=name or "Invert")
