"""Fractional max and average pooling (Graham, 2014): FractionalMaxPool, FractionalAvgPool
and their gradients, with the TF1 wrappers `tf.nn.fractional_max_pool` and
`tf.nn.fractional_avg_pool`. Kernels: kernels/cpu/fractional_pool_ops.py.

Each op also returns its pooling sequences: row_pooling_sequence[i] is the first input row
of output row i (the last entry is the input height), so the gradients route through
exactly the regions the forward pass used.
"""

from __future__ import annotations

import math

from tensorflux.framework import dtypes
from tensorflux.framework.common_shapes import checked_dims, constant_value_as_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient
from tensorflux.ops import array_ops

__all__ = ["fractional_max_pool", "fractional_avg_pool"]

_T = "T: {float, double, int32, int64}"
_POOL_ATTRS = ["pooling_ratio: list(float) >= 4", "pseudo_random: bool = false",
               "overlapping: bool = false", "deterministic: bool = false", "seed: int = 0",
               "seed2: int = 0", _T]


def _fractional_pool_shape(op):
    ratio = op.attrs["pooling_ratio"]
    for r in ratio:
        if r < 1.0:
            raise ValueError(f"pooling_ratio cannot be smaller than 1, got: {r:g}")
    dims = checked_dims(op.inputs[0], rank=4) or [None] * 4
    out = [None if d is None else int(math.floor(d / r)) for d, r in zip(dims, ratio,
                                                                          strict=True)]
    seq = [[None if d is None else d + 1] for d in out[1:3]]
    return [out] + seq


define_op("FractionalMaxPool", inputs=["value: T"],
          outputs=["output: T", "row_pooling_sequence: int64", "col_pooling_sequence: int64"],
          attrs=_POOL_ATTRS, shape_fn=_fractional_pool_shape, stateful=True)
define_op("FractionalAvgPool", inputs=["value: T"],
          outputs=["output: T", "row_pooling_sequence: int64", "col_pooling_sequence: int64"],
          attrs=_POOL_ATTRS, shape_fn=_fractional_pool_shape, stateful=True)
define_op("FractionalMaxPoolGrad",
          inputs=["orig_input: T", "orig_output: T", "out_backprop: T",
                  "row_pooling_sequence: int64", "col_pooling_sequence: int64"],
          outputs=["output: T"], attrs=["overlapping: bool = false", _T],
          shape_fn=lambda op: [op.inputs[0].shape])


def _avg_grad_shape(op):
    return [constant_value_as_shape(op.inputs[0])]


define_op("FractionalAvgPoolGrad",
          inputs=["orig_input_tensor_shape: int64", "out_backprop: T",
                  "row_pooling_sequence: int64", "col_pooling_sequence: int64"],
          outputs=["output: T"], attrs=["overlapping: bool = false", _T],
          shape_fn=_avg_grad_shape)


def _pool(op_type, value, pooling_ratio, pseudo_random, overlapping, deterministic, seed,
          seed2, name):
    return apply_op(op_type, value=value, pooling_ratio=[float(r) for r in pooling_ratio],
                    pseudo_random=pseudo_random, overlapping=overlapping,
                    deterministic=deterministic, seed=seed, seed2=seed2,
                    name=name or op_type)


def fractional_max_pool(value, pooling_ratio, pseudo_random=False, overlapping=False,
                        deterministic=False, seed=0, seed2=0, name=None):
    """Max pooling of NHWC `value` over regions of fractional mean size `pooling_ratio`
    ([1.0, rows, cols, 1.0], each >= 1) (`tf.nn.fractional_max_pool`).

    Args:
      pseudo_random: region boundaries from one random offset (else a random shuffle of
        region sizes).
      overlapping: each region also takes the first row / column of the next.
      deterministic: the same regions on every run (seeded by seed, seed2, which must be 0
        otherwise).

    Returns:
      (output, row_pooling_sequence, col_pooling_sequence).

    Raises:
      ValueError: a pooling ratio below 1 or a value not of rank 4.
    """
    return _pool("FractionalMaxPool", value, pooling_ratio, pseudo_random, overlapping,
                 deterministic, seed, seed2, name)


def fractional_avg_pool(value, pooling_ratio, pseudo_random=False, overlapping=False,
                        deterministic=False, seed=0, seed2=0, name=None):
    """Average pooling over fractional regions (`tf.nn.fractional_avg_pool`); arguments and
    results as fractional_max_pool's."""
    return _pool("FractionalAvgPool", value, pooling_ratio, pseudo_random, overlapping,
                 deterministic, seed, seed2, name)


@gradient("FractionalMaxPool")
def _fractional_max_pool_grad(op, grad, _row=None, _col=None):
    return [apply_op("FractionalMaxPoolGrad", orig_input=op.inputs[0],
                     orig_output=op.outputs[0], out_backprop=grad,
                     row_pooling_sequence=op.outputs[1], col_pooling_sequence=op.outputs[2],
                     overlapping=op.attrs["overlapping"])]


@gradient("FractionalAvgPool")
def _fractional_avg_pool_grad(op, grad, _row=None, _col=None):
    shape = array_ops.shape(op.inputs[0], out_type=dtypes.int64)
    return [apply_op("FractionalAvgPoolGrad", orig_input_tensor_shape=shape,
                     out_backprop=grad, row_pooling_sequence=op.outputs[1],
                     col_pooling_sequence=op.outputs[2], overlapping=op.attrs["overlapping"])]


@gradient("FractionalMaxPoolGrad")
def _fractional_max_pool_grad_grad(op, grad):
    raise LookupError("No gradient defined for operation 'FractionalMaxPoolGrad' (op type: "
                      "FractionalMaxPoolGrad)")


@gradient("FractionalAvgPoolGrad")
def _fractional_avg_pool_grad_grad(op, grad):
    raise LookupError("No gradient defined for operation 'FractionalAvgPoolGrad' (op type: "
                      "FractionalAvgPoolGrad)")
