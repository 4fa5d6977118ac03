"""The rest of `tf.contrib.layers`' layer functions that TF-Slim's networks build with:
N-d `convolution` (conv1d, conv3d), `separable_conv2d`, `conv2d_in_plane`, `bias_add`,
`softmax`, `unit_norm`, `instance_norm`, `group_norm`, `max_pool3d` / `avg_pool3d` / `pool`,
and the `fully_connected` partials (`relu`, `relu6`, `elu`, `linear`).

Variables carry TF1 contrib's names (`SeparableConv2d/depthwise_weights`,
`SeparableConv2d/pointwise_weights`, `ConvInPlane/weights`, `InstanceNorm/beta`,
`GroupNorm/gamma`, ...) and are model variables; outputs go to `outputs_collections` under
the layer's scope name as alias (contrib/layers_utils.py), as in layers_core.py.
"""

from __future__ import annotations

import functools

from tensorflux.contrib import layers_utils as utils
from tensorflux.contrib.layers_core import (
    _finish,
    _relu,
    _var_collections,
    _xavier,
    _zeros,
    add_arg_scope,
    fully_connected,
    model_variable,
)
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor

__all__ = ["convolution", "convolution1d", "convolution3d", "conv1d", "conv3d",
           "separable_convolution2d", "separable_conv2d", "convolution2d_in_plane",
           "conv2d_in_plane", "bias_add", "softmax", "unit_norm", "instance_norm",
           "group_norm", "max_pool3d", "avg_pool3d", "pool", "relu", "relu6", "elu",
           "linear"]

_DATA_FORMATS = (None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW")


def _channels_first(data_format) -> bool:
    return bool(data_format) and data_format.startswith("NC")


# ---- convolutions -------------------------------------------------------------------------

@add_arg_scope
def convolution(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
                rate=1, activation_fn=_relu, normalizer_fn=None, normalizer_params=None,
                weights_initializer=None, weights_regularizer=None,
                biases_initializer=_zeros(), biases_regularizer=None, reuse=None,
                variables_collections=None, outputs_collections=None, trainable=True,
                scope=None, conv_dims=None):
    """An N-D convolution (N = rank - 2, 1 to 3; `conv_dims` checks it), dilated by `rate`,
    with biases or a normalizer, then the activation (variables `Conv/weights`,
    `Conv/biases`).

    Raises:
      ValueError: an unknown data_format, or an input rank other than 3-5 (or than
        conv_dims + 2).
    """
    from tensorflux.nn import conv_impl
    from tensorflux.variables import variable_scope

    if data_format not in _DATA_FORMATS:
        raise ValueError(f"Invalid data_format: {data_format!r}")
    with variable_scope.variable_scope(scope, "Conv", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if conv_dims is not None and conv_dims + 2 != rank:
            raise ValueError(f"Convolution expects input with rank {conv_dims + 2}, got "
                             f"{rank}")
        if rank not in (3, 4, 5):
            raise ValueError(f"Convolution not supported for input with rank {rank}")
        n = rank - 2
        first = _channels_first(data_format)
        kernel = list(utils.n_positive_integers(n, kernel_size))
        strides = list(utils.n_positive_integers(n, stride))
        rates = list(utils.n_positive_integers(n, rate))
        utils.check_stride_and_rate(strides, rates)
        channels = utils.channel_dimension(
            inputs.shape, "channels_first" if first else "channels_last", min_rank=rank)
        weights = model_variable("weights", kernel + [channels, num_outputs],
                                 dtype=inputs.dtype.base_dtype,
                                 initializer=weights_initializer or _xavier(),
                                 regularizer=weights_regularizer, trainable=trainable,
                                 collections=_var_collections(variables_collections,
                                                              "weights"))
        fmt = {3: "NCW", 4: "NCHW", 5: "NCDHW"}[rank] if first else \
            {3: "NWC", 4: "NHWC", 5: "NDHWC"}[rank]
        outputs = conv_impl.convolution(inputs, weights, padding.upper(), strides=strides,
                                       dilation_rate=rates, data_format=fmt)
        return _finish(outputs, normalizer_fn, normalizer_params, biases_initializer,
                       biases_regularizer, num_outputs, variables_collections, trainable,
                       activation_fn, outputs_collections,
                       "NCHW" if first else "NHWC", alias=sc.name)


@add_arg_scope
def convolution1d(inputs, num_outputs, kernel_size, stride=1, padding="SAME",
                  data_format=None, rate=1, **kwargs):
    """`convolution` of a rank-3 input."""
    return convolution(inputs, num_outputs, kernel_size, stride, padding, data_format, rate,
                       conv_dims=1, **kwargs)


@add_arg_scope
def convolution3d(inputs, num_outputs, kernel_size, stride=1, padding="SAME",
                  data_format=None, rate=1, **kwargs):
    """`convolution` of a rank-5 input (NDHWC or NCDHW)."""
    return convolution(inputs, num_outputs, kernel_size, stride, padding, data_format, rate,
                       conv_dims=3, **kwargs)


conv1d = convolution1d
conv3d = convolution3d


@add_arg_scope
def separable_convolution2d(inputs, num_outputs, kernel_size, depth_multiplier=1, stride=1,
                            padding="SAME", data_format="NHWC", rate=1,
                            activation_fn=_relu, normalizer_fn=None,
                            normalizer_params=None, weights_initializer=None,
                            pointwise_initializer=None, weights_regularizer=None,
                            biases_initializer=_zeros(), biases_regularizer=None,
                            reuse=None, variables_collections=None,
                            outputs_collections=None, trainable=True, scope=None):
    """A depthwise convolution (`depthwise_weights` [kh, kw, in, depth_multiplier]) then,
    unless `num_outputs` is None, a 1x1 convolution (`pointwise_weights`
    [1, 1, in * depth_multiplier, num_outputs]); biases or the normalizer, then the
    activation. `pointwise_initializer` defaults to `weights_initializer`.

    Raises:
      ValueError: data_format is not NHWC or NCHW.
    """
    from tensorflux.nn import conv_impl
    from tensorflux.variables import variable_scope

    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    weights_initializer = weights_initializer or _xavier()
    pointwise_initializer = pointwise_initializer or weights_initializer
    with variable_scope.variable_scope(scope, "SeparableConv2d", [inputs],
                                       reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        dtype = inputs.dtype.base_dtype
        kh, kw = utils.two_element_tuple(kernel_size)
        sh, sw = utils.two_element_tuple(stride)
        rate = list(utils.two_element_tuple(rate))
        first = data_format == "NCHW"
        channels = utils.channel_dimension(
            inputs.shape, "channels_first" if first else "channels_last", min_rank=4)
        weights_collections = _var_collections(variables_collections, "weights")
        depthwise = model_variable("depthwise_weights", [kh, kw, channels, depth_multiplier],
                                   dtype=dtype, initializer=weights_initializer,
                                   regularizer=weights_regularizer, trainable=trainable,
                                   collections=weights_collections)
        strides = [1, 1, sh, sw] if first else [1, sh, sw, 1]
        if num_outputs is None:
            outputs = conv_impl.depthwise_conv2d(inputs, depthwise, strides, padding.upper(),
                                               rate=rate, data_format=data_format)
            num_outputs = channels * depth_multiplier
        else:
            pointwise = model_variable(
                "pointwise_weights", [1, 1, channels * depth_multiplier, num_outputs],
                dtype=dtype, initializer=pointwise_initializer,
                regularizer=weights_regularizer, trainable=trainable,
                collections=weights_collections)
            outputs = conv_impl.separable_conv2d(inputs, depthwise, pointwise, strides,
                                               padding.upper(), rate=rate,
                                               data_format=data_format)
        return _finish(outputs, normalizer_fn, normalizer_params, biases_initializer,
                       biases_regularizer, num_outputs, variables_collections, trainable,
                       activation_fn, outputs_collections, data_format, alias=sc.name)


separable_conv2d = separable_convolution2d


@add_arg_scope
def convolution2d_in_plane(inputs, kernel_size, stride=1, padding="SAME",
                           activation_fn=_relu, normalizer_fn=None, normalizer_params=None,
                           weights_initializer=None, weights_regularizer=None,
                           biases_initializer=_zeros(), biases_regularizer=None, reuse=None,
                           variables_collections=None, outputs_collections=None,
                           trainable=True, scope=None):
    """One [kh, kw] filter (`ConvInPlane/weights` [kh, kw, 1, 1]) applied to every channel
    on its own (NHWC), with per-channel biases or the normalizer, then the activation."""
    from tensorflux.nn import conv_impl
    from tensorflux.ops import joining_ops
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope(scope, "ConvInPlane", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        kh, kw = utils.two_element_tuple(kernel_size)
        sh, sw = utils.two_element_tuple(stride)
        channels = utils.last_dimension(inputs.shape, min_rank=4)
        weights = model_variable("weights", [kh, kw, 1, 1], dtype=inputs.dtype.base_dtype,
                                 initializer=weights_initializer or _xavier(),
                                 regularizer=weights_regularizer, trainable=trainable,
                                 collections=_var_collections(variables_collections,
                                                              "weights"))
        depthwise = joining_ops.tile(weights, [1, 1, channels, 1])
        outputs = conv_impl.depthwise_conv2d(inputs, depthwise, [1, sh, sw, 1],
                                           padding.upper())
        return _finish(outputs, normalizer_fn, normalizer_params, biases_initializer,
                       biases_regularizer, channels, variables_collections, trainable,
                       activation_fn, outputs_collections, alias=sc.name)


conv2d_in_plane = convolution2d_in_plane


@add_arg_scope
def bias_add(inputs, activation_fn=None, initializer=_zeros(), regularizer=None, reuse=None,
             variables_collections=None, outputs_collections=None, trainable=True,
             data_format="NHWC", scope=None):
    """Adds `BiasAdd/biases` over the channels (the last axis, or axis 1 for NCHW), then
    the activation.

    Raises:
      ValueError: an unknown data_format, an unknown rank, NCHW with a rank other than 4,
        or unknown channels.
    """
    from tensorflux.ops import nn_ops
    from tensorflux.variables import variable_scope

    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    with variable_scope.variable_scope(scope, "BiasAdd", [inputs], reuse=reuse) as sc:
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is None:
            raise ValueError("Dims of shape must be known but is None")
        if rank != 4 and data_format == "NCHW":
            raise ValueError("Data format NCHW only supports 4D Tensor")
        n = inputs.shape.as_list()[1 if data_format == "NCHW" else -1]
        if n is None:
            raise ValueError("`C` dimension must be known but is None")
        biases = model_variable("biases", [n], dtype=inputs.dtype.base_dtype,
                                initializer=initializer, regularizer=regularizer,
                                trainable=trainable,
                                collections=_var_collections(variables_collections,
                                                             "biases"))
        outputs = nn_ops.bias_add(inputs, biases, data_format=data_format)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return utils.collect_named_outputs(outputs_collections, sc.name, outputs)


# ---- normalizations -----------------------------------------------------------------------

@add_arg_scope
def softmax(logits, scope=None):
    """Softmax over the last dimension of a rank >= 2 tensor (ops under "softmax")."""
    from tensorflux.ops import array_ops, nn_ops
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope(scope, "softmax", [logits]):
        logits = convert_to_tensor(logits)
        n = utils.last_dimension(logits.shape, min_rank=2)
        predictions = nn_ops.softmax(array_ops.reshape(logits, [-1, n]))
        predictions = array_ops.reshape(predictions, array_ops.shape(logits))
        predictions.set_shape(logits.shape)
        return predictions


@add_arg_scope
def unit_norm(inputs, dim, epsilon=1e-7, scope=None):
    """inputs / sqrt(epsilon + sum(inputs**2 over `dim`)).

    Raises:
      ValueError: unknown rank, or `dim` outside [0, rank).
    """
    from tensorflux.ops import math_ops, reduction_ops, unary_ops
    from tensorflux.variables import variable_scope

    with variable_scope.variable_scope(scope, "UnitNorm", [inputs]):
        inputs = convert_to_tensor(inputs)
        if inputs.shape.ndims is None:
            raise ValueError("The input rank must be known.")
        if dim < 0 or dim >= inputs.shape.ndims:
            raise ValueError("dim must be positive but smaller than the input rank.")
        lengths = unary_ops.sqrt(epsilon + reduction_ops.reduce_sum(unary_ops.square(inputs),
                                                                    dim, keepdims=True))
        return math_ops.div(inputs, lengths)


def _norm_params(name, n, dtype, initializers, variables_collections, trainable):
    from tensorflux.variables import init_ops

    default = init_ops.zeros_initializer() if name == "beta" else init_ops.ones_initializer()
    return model_variable(name, [n], dtype=dtype,
                          initializer=(initializers or {}).get(name, default),
                          trainable=trainable,
                          collections=_var_collections(variables_collections, name))


@add_arg_scope
def instance_norm(inputs, center=True, scale=True, epsilon=1e-6, activation_fn=None,
                  param_initializers=None, reuse=None, variables_collections=None,
                  outputs_collections=None, trainable=True, data_format="NHWC", scope=None):
    """Normalizes each example's each channel over its spatial axes (`InstanceNorm/beta`,
    `InstanceNorm/gamma` [C]).

    Raises:
      ValueError: unknown rank or channels, or a data_format other than NHWC/NCHW.
    """
    from tensorflux.nn import nn_impl
    from tensorflux.ops import array_ops
    from tensorflux.variables import variable_scope

    inputs = convert_to_tensor(inputs)
    rank = inputs.shape.ndims
    if rank is None:
        raise ValueError(f"Inputs {inputs.name} has undefined rank.")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    with variable_scope.variable_scope(scope, "InstanceNorm", [inputs], reuse=reuse) as sc:
        axis = 1 if data_format == "NCHW" else rank - 1
        n = inputs.shape.as_list()[axis]
        if n is None:
            raise ValueError(f"Inputs {inputs.name} has undefined channels dimension.")
        bshape = [1] * rank
        bshape[axis] = n
        dtype = inputs.dtype.base_dtype
        beta = gamma = None
        if center:
            beta = _norm_params("beta", n, dtype, param_initializers, variables_collections,
                                trainable)
            beta = array_ops.reshape(beta, bshape) if axis == 1 else beta
        if scale:
            gamma = _norm_params("gamma", n, dtype, param_initializers,
                                 variables_collections, trainable)
            gamma = array_ops.reshape(gamma, bshape) if axis == 1 else gamma
        axes = [a for a in range(1, rank) if a != axis]
        mean, variance = nn_impl.moments(inputs, axes, keep_dims=True)
        outputs = nn_impl.batch_normalization(inputs, mean, variance, beta, gamma, epsilon,
                                              name="instancenorm")
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return utils.collect_named_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def group_norm(inputs, groups=32, channels_axis=-1, reduction_axes=(-3, -2), center=True,
               scale=True, epsilon=1e-6, activation_fn=None, param_initializers=None,
               reuse=None, variables_collections=None, outputs_collections=None,
               trainable=True, scope=None, mean_close_to_zero=False):
    """Group normalization (Wu & He 2018): the channels split into `groups`; each example's
    each group normalized over `reduction_axes` and the group's channels, then the
    per-channel `GroupNorm/gamma` and `GroupNorm/beta`.

    Raises:
      ValueError: unknown rank, channels_axis among reduction_axes, unknown channels, or
        channels not a multiple of (or fewer than) groups.
    """
    from tensorflux.nn import nn_impl
    from tensorflux.ops import array_ops, joining_ops
    from tensorflux.variables import variable_scope

    inputs = convert_to_tensor(inputs)
    rank = inputs.shape.ndims
    if rank is None:
        raise ValueError(f"Inputs {inputs.name} has undefined rank.")
    channels_axis %= rank
    reduction_axes = [a % rank for a in reduction_axes]
    if channels_axis in reduction_axes:
        raise ValueError("reduction_axis must be mutually exclusive with channels_axis")
    channels = inputs.shape.as_list()[channels_axis]
    if channels is None:
        raise ValueError(f"Inputs {inputs.name} has undefined channel dimension: "
                         f"{channels_axis}.")
    if groups > channels:
        raise ValueError(f"Invalid groups {groups} for {channels} channels.")
    if channels % groups != 0:
        raise ValueError(f"{channels} channels is not commensurate with {groups} groups.")
    with variable_scope.variable_scope(scope, "GroupNorm", [inputs], reuse=reuse) as sc:
        # [..., C, ...] -> [..., G, C/G, ...]: axes after channels_axis shift by one.
        dynamic = array_ops.shape(inputs)
        grouped_shape = joining_ops.concat(
            [dynamic[:channels_axis], [groups, channels // groups],
             dynamic[channels_axis + 1:]], 0)
        grouped = array_ops.reshape(inputs, grouped_shape)
        moments_axes = [channels_axis + 1] + [a + 1 if a > channels_axis else a
                                              for a in reduction_axes]
        mean, variance = nn_impl.moments(grouped, moments_axes, keep_dims=True)
        dtype = inputs.dtype.base_dtype
        pshape = [1] * (rank + 1)
        pshape[channels_axis], pshape[channels_axis + 1] = groups, channels // groups
        beta = gamma = None
        if center:
            beta = array_ops.reshape(_norm_params("beta", channels, dtype, param_initializers,
                                                  variables_collections, trainable), pshape)
        if scale:
            gamma = array_ops.reshape(_norm_params("gamma", channels, dtype,
                                                   param_initializers,
                                                   variables_collections, trainable), pshape)
        outputs = nn_impl.batch_normalization(grouped, mean, variance, beta, gamma, epsilon)
        outputs = array_ops.reshape(outputs, dynamic)
        outputs.set_shape(inputs.shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return utils.collect_named_outputs(outputs_collections, sc.name, outputs)


# ---- pooling ------------------------------------------------------------------------------

def _pool3d(kind, inputs, kernel_size, stride, padding, data_format, outputs_collections,
            scope):
    from tensorflux.ops import conv3d_ops as nn

    if data_format not in ("NDHWC", "NCDHW"):
        raise ValueError("data_format has to be either NCDHW or NDHWC.")
    k = list(utils.n_positive_integers(3, kernel_size))
    s = list(utils.n_positive_integers(3, stride))
    full = (lambda v: [1, 1] + v) if data_format == "NCDHW" else (lambda v: [1] + v + [1])
    with graph_lib.name_scope(scope, "MaxPool3D" if kind == "max" else "AvgPool3D",
                              [inputs]) as sc:
        fn = nn.max_pool3d if kind == "max" else nn.avg_pool3d
        outputs = fn(convert_to_tensor(inputs), full(k), full(s), padding.upper(),
                     data_format=data_format)
        return utils.collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def max_pool3d(inputs, kernel_size, stride=2, padding="VALID", data_format="NDHWC",
               outputs_collections=None, scope=None):
    """3-D max pooling (NDHWC or NCDHW); kernel_size and stride an int or three."""
    return _pool3d("max", inputs, kernel_size, stride, padding, data_format,
                   outputs_collections, scope)


@add_arg_scope
def avg_pool3d(inputs, kernel_size, stride=2, padding="VALID", data_format="NDHWC",
               outputs_collections=None, scope=None):
    """3-D average pooling (NDHWC or NCDHW); kernel_size and stride an int or three."""
    return _pool3d("avg", inputs, kernel_size, stride, padding, data_format,
                   outputs_collections, scope)


@add_arg_scope
def pool(inputs, kernel_size, pooling_type, padding="VALID", data_format=None,
         dilation_rate=1, stride=1, outputs_collections=None, scope=None):
    """`tf.nn.pool` of a rank 3-5 input: "MAX" or "AVG" over a window of `kernel_size`.

    Raises:
      ValueError: an unknown data_format or rank.
    """
    from tensorflux.nn import conv_impl

    if data_format not in _DATA_FORMATS:
        raise ValueError(f"Invalid data_format: {data_format!r}")
    with graph_lib.name_scope(scope, f"{pooling_type.lower()}_pool", [inputs]) as sc:
        inputs = convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is None or rank not in (3, 4, 5):
            raise ValueError(f"Rank of inputs must be 3 to 5, got {rank}")
        n = rank - 2
        outputs = conv_impl.pool(
            inputs, list(utils.n_positive_integers(n, kernel_size)), pooling_type,
            padding.upper(), dilation_rate=list(utils.n_positive_integers(n, dilation_rate)),
            strides=list(utils.n_positive_integers(n, stride)), data_format=data_format)
        return utils.collect_named_outputs(outputs_collections, sc, outputs)


# ---- fully_connected with a fixed activation ----------------------------------------------

def _nn(name):
    def activation(x):
        from tensorflux.ops import nn_ops

        return getattr(nn_ops, name)(x)
    activation.__name__ = name
    return activation


relu = functools.partial(fully_connected, activation_fn=_nn("relu"))
relu6 = functools.partial(fully_connected, activation_fn=_nn("relu6"))
elu = functools.partial(fully_connected, activation_fn=_nn("elu"))
linear = functools.partial(fully_connected, activation_fn=None)
