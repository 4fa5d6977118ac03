"""The fake-quantization layers contrib.quantize inserts: `LastValueQuantize` (the range
of the last batch; weights) and `MovingAvgQuantize` (exponential moving averages of the
batch ranges; activations). Each keeps its range in variables `<scope>/min` and
`<scope>/max` (made with get_variable, not trainable) and feeds them to
FakeQuantWithMinMaxVars (PerChannel when `per_channel`). In training the range is updated
from the batch first, widened to hold 0 (or made symmetric around it); in eval the
variables are read as they are."""

from __future__ import annotations

from tensorflux.framework.graph import GraphKeys
from tensorflux.ops import math_ops, quantization_ops, reduction_ops
from tensorflux.train import moving_averages
from tensorflux.variables import init_ops, variable_scope, variables

__all__ = ["LastValueQuantize", "MovingAvgQuantize"]


def _range_variable(name, shape, init, vars_collection):
    collections = [vars_collection] if vars_collection else []
    if GraphKeys.GLOBAL_VARIABLES not in collections:
        collections.append(GraphKeys.GLOBAL_VARIABLES)
    return variable_scope.get_variable(
        name, shape=shape, initializer=init_ops.constant_initializer(init),
        collections=collections, trainable=False,
        aggregation=variables.VariableAggregation.MEAN)


def _min_max_shape(inputs, per_channel, name_prefix):
    if not per_channel:
        return [], None
    dims = inputs.get_shape().ndims
    if dims not in (1, 2, 4):
        raise ValueError(f"Expected 1D, 2D or 4D input, was: {inputs.get_shape()} in "
                         f"scope: {name_prefix}")
    return [inputs.get_shape()[-1].value], {1: None, 2: [0], 4: [0, 1, 2]}[dims]


def _batch_range(inputs, per_channel, reduce_dims, num_bits, narrow_range, symmetric):
    """The batch's (min, max), extended to hold 0 (symmetric: around 0)."""
    if per_channel and reduce_dims is None:
        batch_min = batch_max = inputs
    else:
        batch_min = reduction_ops.reduce_min(inputs, axis=reduce_dims, name="BatchMin")
        batch_max = reduction_ops.reduce_max(inputs, axis=reduce_dims, name="BatchMax")
    if symmetric:
        # two's complement: the negative side is one step longer unless narrow
        ratio = -1.0 if narrow_range else -((1 << num_bits) - 2) / (1 << num_bits)
        return (math_ops.minimum(batch_min, batch_max / ratio),
                math_ops.maximum(batch_max, batch_min * ratio))
    return math_ops.minimum(batch_min, 0.0), math_ops.maximum(batch_max, 0.0)


def _fake_quant(inputs, min_var, max_var, per_channel, num_bits, narrow_range):
    if per_channel:
        return quantization_ops.fake_quant_with_min_max_vars_per_channel(
            inputs, min_var, max_var, num_bits=num_bits, narrow_range=narrow_range,
            name="FakeQuantWithMinMaxVarsPerChannel")
    return quantization_ops.fake_quant_with_min_max_vars(
        inputs, min_var, max_var, num_bits=num_bits, narrow_range=narrow_range,
        name="FakeQuantWithMinMaxVars")


def _quantize(inputs, update, per_channel, init_min, init_max, vars_collection, name_prefix,
              reuse, is_training, num_bits, narrow_range, symmetric):
    with variable_scope.variable_scope(None, default_name=name_prefix, values=[inputs],
                                       reuse=reuse) as scope:
        scope.set_partitioner(None)
        shape, reduce_dims = _min_max_shape(inputs, per_channel, name_prefix)
        min_var = _range_variable("min", shape, init_min, vars_collection)
        max_var = _range_variable("max", shape, init_max, vars_collection)
        if not is_training:
            return _fake_quant(inputs, min_var, max_var, per_channel, num_bits, narrow_range)
        range_min, range_max = _batch_range(inputs, per_channel, reduce_dims, num_bits,
                                            narrow_range, symmetric)
        new_min, new_max = update(min_var, range_min, "Min"), update(max_var, range_max, "Max")
        return _fake_quant(inputs, new_min, new_max, per_channel, num_bits, narrow_range)


def LastValueQuantize(inputs, per_channel=False, init_min=-6.0, init_max=6.0,  # noqa: N802
                      vars_collection=None, name_prefix="LastValueQuant", reuse=None,
                      is_training=True, num_bits=8, narrow_range=False, symmetric=False):
    """Fake-quantizes `inputs` over the range of the last batch (assigned to the variables
    `min`/`max` under the variable scope `name_prefix`, made unique).

    Returns:
      The fake-quantized tensor.

    Raises:
      ValueError: `per_channel` on an input that is not 1-, 2- or 4-D.
    """
    def update(var, value, which):
        return var.assign(value, name=f"Assign{which}Last")

    return _quantize(inputs, update, per_channel, init_min, init_max, vars_collection,
                     name_prefix, reuse, is_training, num_bits, narrow_range, symmetric)


def MovingAvgQuantize(inputs, per_channel=False, init_min=-6.0, init_max=6.0,  # noqa: N802
                      ema_decay=0.999, vars_collection=GraphKeys.MOVING_AVERAGE_VARIABLES,
                      name_prefix="MovingAvgQuantize", reuse=None, is_training=True,
                      num_bits=8, narrow_range=False, symmetric=False):
    """Fake-quantizes `inputs` over exponential moving averages (decay `ema_decay`,
    zero-debiased as tf.train.assign_moving_average) of the batch ranges, kept in the
    variables `min`/`max` under the variable scope `name_prefix`, made unique.

    Returns:
      The fake-quantized tensor.

    Raises:
      ValueError: `per_channel` on an input that is not 1-, 2- or 4-D.
    """
    def update(var, value, which):
        return moving_averages.assign_moving_average(var, value, ema_decay,
                                                     name=f"Assign{which}Ema")

    return _quantize(inputs, update, per_channel, init_min, init_max, vars_collection,
                     name_prefix, reuse, is_training, num_bits, narrow_range, symmetric)
