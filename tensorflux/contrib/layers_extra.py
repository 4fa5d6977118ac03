"""The pieces of TF1's `tf.contrib.layers` that example programs use beside the regularizers:
`flatten` and the contrib initializers (`xavier_initializer`, `variance_scaling_initializer`),
built on `tf.layers` and the random ops.

The contrib initializers differ from `tf.variance_scaling_initializer`: the mode is spelled
"FAN_IN"/"FAN_OUT"/"FAN_AVG", and the normal case draws a truncated normal of standard
deviation sqrt(1.3 * factor / n) (not scale / n divided by the truncated normal's spread).
"""

from __future__ import annotations

import functools
import math

from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.layers import core as core_layers
from tensorflux.ops import random_ops

__all__ = ["flatten", "xavier_initializer", "xavier_initializer_conv2d",
           "variance_scaling_initializer", "recompute_grad"]

_CONTRIB_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


def flatten(inputs, outputs_collections=None, scope=None):
    """[batch, d1, ..., dk] -> [batch, d1 * ... * dk] (`tf.contrib.layers.flatten`).

    Ops live under the name scope `scope` (default "Flatten"); the output is added to each
    collection of `outputs_collections`. Shapes are `tf.layers.flatten`'s.
    """
    from tensorflux.contrib.layers_utils import collect_named_outputs

    with graph_lib.name_scope(scope, "Flatten", [inputs]) as sc:
        outputs = core_layers.flatten(convert_to_tensor(inputs))
    return collect_named_outputs(outputs_collections, sc, outputs)


def _fans(shape) -> tuple[float, float]:
    """Contrib's fan rule: [in, out] or [..., in, out] with the receptive field multiplied in;
    a 1-D shape counts its one dimension as both fans."""
    shape = [int(d) for d in shape]
    if not shape:
        return 1.0, 1.0
    fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
    fan_out = float(shape[-1])
    for dim in shape[:-2]:
        fan_in *= dim
        fan_out *= dim
    return fan_in, fan_out


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=dtypes.float32):
    """An initializer of variance `factor / n`, n the fan `mode` names
    (`tf.contrib.layers.variance_scaling_initializer`; the default is He initialization).

    Args:
      factor: the variance multiplier.
      mode: "FAN_IN", "FAN_OUT" or "FAN_AVG".
      uniform: draw from a uniform distribution (limit sqrt(3 * factor / n)) instead of a
        truncated normal (stddev sqrt(1.3 * factor / n)).
      seed: the op-level seed.
      dtype: a floating type.

    Returns:
      A callable `(shape, dtype=None, partition_info=None) -> Tensor`.

    Raises:
      TypeError: `dtype` is not floating point, or `mode` is not one of the three modes.
    """
    if not dtypes.as_dtype(dtype).is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in _CONTRIB_MODES:
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def _initializer(shape, dtype=dtype, partition_info=None):
        dtype = dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        full = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = _fans(full)
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=seed)
        stddev = math.sqrt(1.3 * factor / n)
        return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=seed)

    return _initializer


def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """Glorot/Xavier initialization (`tf.contrib.layers.xavier_initializer`): variance
    1 / fan_avg, uniform by default."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer


def recompute_grad(fn, use_data_dep=None, tupleize_grads=False):
    """`tf.contrib.layers.recompute_grad(fn)`: `fn` with the same values and gradients
    (TF recomputes the forward pass during the backward one to save memory; tensorflux
    keeps the forward activations, as `tf.recompute_grad` here). Usable as a decorator."""
    del use_data_dep, tupleize_grads

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapped
