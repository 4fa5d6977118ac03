"""TF1 top-level names kept only for old programs (their TF1 docs say "use X instead"):
`tf.arg_max` and `tf.arg_min`, the raw ArgMax/ArgMin ops with a required `dimension`."""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework.op_def_library import apply_op

__all__ = ["arg_max", "arg_min"]


def _raw_arg(op_type, input, dimension, output_type, name):  # noqa: A002
    if dimension is None:
        raise ValueError("Tried to convert 'dimension' to a tensor and failed. Error: None "
                         "values not supported.")
    return apply_op(op_type, input=input, dimension=dimension,
                    output_type=dtypes.as_dtype(output_type), name=name or op_type)


def arg_max(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002
    """The index of the largest value along `dimension` (`tf.arg_max`; prefer `tf.argmax`).

    Raises:
      ValueError: `dimension` is None, or out of range for the input's rank."""
    return _raw_arg("ArgMax", input, dimension, output_type, name)


def arg_min(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002
    """The index of the smallest value along `dimension` (`tf.arg_min`; prefer `tf.argmin`).

    Raises:
      ValueError: `dimension` is None, or out of range for the input's rank."""
    return _raw_arg("ArgMin", input, dimension, output_type, name)
