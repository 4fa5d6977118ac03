"""Quasi-random numbers: SobolSample and its TF1 wrapper `tf.math.sobol_sample`. The kernel is
in tensorflux/kernels/cpu/sobol_ops.py.

SobolSample(dim, num_results, skip) is the [num_results, dim] block of the unscrambled Sobol
sequence (Joe-Kuo direction numbers) that starts at point skip + 1: the sequence's first
point, all zeros, is never returned, as in TensorFlow. The op has no gradient.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__ = ["sobol_sample"]


def _sobol_shape(op):
    for t in op.inputs:
        common_shapes.checked_dims(t, rank=0)
    dim = common_shapes.scalar_value(op.inputs[0])
    num = common_shapes.scalar_value(op.inputs[1])
    return [tensor_shape.TensorShape([num, dim])]


define_op("SobolSample", inputs=["dim: int32", "num_results: int32", "skip: int32"],
          outputs=["samples: dtype"], attrs=["dtype: {float, double} = DT_FLOAT"],
          shape_fn=_sobol_shape)
not_differentiable("SobolSample")


def sobol_sample(dim, num_results, skip=0, dtype=None, name=None):
    """Points of the Sobol low-discrepancy sequence in the unit cube (`tf.math.sobol_sample`).

    Args:
      dim: a positive int32 scalar, the dimension of each point (at most 21200).
      num_results: a positive int32 scalar, how many points.
      skip: a non-negative int32 scalar, how many points of the sequence to skip first.
      dtype: float32 (the default) or float64.
      name: a name for the scope (default "sobol").

    Returns:
      A [num_results, dim] tensor of `dtype`.

    Raises:
      TypeError: `dtype` is not float32 or float64.
      ValueError: an argument is not a scalar.
    """
    with graph_lib.name_scope(name, "sobol", [dim, num_results, skip]):
        return apply_op("SobolSample", dim=dim, num_results=num_results, skip=skip,
                        dtype=dtype)
