"""Convolutions and pools built from other ops, as TF1 builds them: `tf.nn.conv1d` and the
1-D pools (a size-1 spatial axis added, the 2-D op, the axis squeezed away),
`tf.nn.depthwise_conv2d` (DepthwiseConv2dNative, `rate` as dilations) and
`tf.nn.separable_conv2d` (depthwise, then a 1x1 pointwise Conv2D).
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, conv_ops, depthwise_conv_ops, pooling_ops

__all__ = ["conv1d", "max_pool1d", "avg_pool1d", "depthwise_conv2d", "separable_conv2d"]


def _one(value, name):
    if isinstance(value, int):
        return value
    value = list(value)
    if len(value) == 1:
        return int(value[0])
    if len(value) == 3:
        return int(value[1])
    raise ValueError(f"{name} should be of length 1 or 3. Received: {name}={value}")


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D convolution of [batch, width, channels] ("NWC") or "NCW" `value` with filters
    [kw, in, out] (`tf.nn.conv1d`): a Conv2D over a height of 1.

    Raises:
      ValueError: a bad data_format, or what conv2d raises.
    """
    value = input if value is None else value
    with graph_lib.name_scope(name, "conv1d", [value, filters]):
        if data_format is None or data_format in ("NHWC", "NWC"):
            axis, fmt = 1, "NHWC"
            strides, rates = [1, 1, _one(stride, "stride"), 1], [1, 1, _one(dilations or 1,
                                                                          "dilations"), 1]
        elif data_format in ("NCHW", "NCW"):
            axis, fmt = 2, "NCHW"
            strides, rates = [1, 1, 1, _one(stride, "stride")], [1, 1, 1, _one(
                dilations or 1, "dilations")]
        else:
            raise ValueError("`data_format` must be 'NWC' or 'NCW'. Received: "
                             f"data_format={data_format}")
        value = array_ops.expand_dims(value, axis)
        filters = array_ops.expand_dims(filters, 0)
        out = conv_ops.conv2d(value, filters, strides, padding,
                              use_cudnn_on_gpu=use_cudnn_on_gpu, data_format=fmt,
                              dilations=rates)
        return array_ops.squeeze(out, [axis])


def _pool1d(pool, default, input, ksize, strides, padding, data_format, name):  # noqa: A002
    if data_format not in ("NWC", "NCW", None):
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: "
                         f"data_format={data_format}")
    axis = 2 if data_format == "NCW" else 1
    fmt = "NCHW" if data_format == "NCW" else "NHWC"
    k, s = _one(ksize, "ksize"), _one(strides, "strides")
    window = [1, 1, 1, k] if fmt == "NCHW" else [1, 1, k, 1]
    step = [1, 1, 1, s] if fmt == "NCHW" else [1, 1, s, 1]
    with graph_lib.name_scope(name, default, [input]):
        out = pool(array_ops.expand_dims(input, axis), window, step, padding, data_format=fmt)
        return array_ops.squeeze(out, [axis])


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Max over windows of a [batch, width, channels] tensor (`tf.nn.max_pool1d`)."""
    return _pool1d(pooling_ops.max_pool, "MaxPool1d", input, ksize, strides, padding,
                   data_format, name)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Mean over windows of a [batch, width, channels] tensor (`tf.nn.avg_pool1d`)."""
    return _pool1d(pooling_ops.avg_pool, "AvgPool1D", input, ksize, strides, padding,
                   data_format, name)


def _rate_as_dilations(rate, dilations, data_format):
    if rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'rate' and 'dilations'.")
    rate = dilations if rate is None else rate
    if rate is None:
        return [1, 1, 1, 1]
    rate = [int(rate)] * 2 if isinstance(rate, int) else [int(r) for r in rate]
    if len(rate) != 2:
        raise ValueError(f"rate must have length 2. Received: rate={rate}")
    return [1, 1] + rate if data_format == "NCHW" else [1] + rate + [1]


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """Depthwise 2-D convolution (`tf.nn.depthwise_conv2d`): each input channel convolved
    with its own `channel_multiplier` filters [kh, kw, in, multiplier]; `rate` dilates."""
    data_format = data_format or "NHWC"
    with graph_lib.name_scope(name, "depthwise", [input, filter]) as scope:
        return depthwise_conv_ops.depthwise_conv2d_native(
            input, filter, strides, padding, data_format=data_format,
            dilations=_rate_as_dilations(rate, dilations, data_format), name=scope)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None, dilations=None):
    """A depthwise convolution followed by a 1x1 convolution mixing the channels
    (`tf.nn.separable_conv2d`); `pointwise_filter` is [1, 1, in * multiplier, out].

    Raises:
      ValueError: a pointwise filter that is not 1x1.
    """
    data_format = data_format or "NHWC"
    with graph_lib.name_scope(name, "separable_conv2d",
                              [input, depthwise_filter, pointwise_filter]) as scope:
        pointwise_filter = convert_to_tensor(pointwise_filter, name="pointwise_filter")
        dims = pointwise_filter.shape.as_list() if pointwise_filter.shape.ndims else None
        if dims is not None and (len(dims) != 4 or dims[0] not in (1, None) or
                                 dims[1] not in (1, None)):
            raise ValueError("Pointwise filter must have shape [1, 1, in_channels * "
                             f"channel_multiplier, out_channels]. Received: {dims}")
        depthwise = depthwise_conv_ops.depthwise_conv2d_native(
            input, depthwise_filter, strides, padding, data_format=data_format,
            dilations=_rate_as_dilations(rate, dilations, data_format), name="depthwise")
        return conv_ops.conv2d(depthwise, pointwise_filter, [1, 1, 1, 1], "VALID",
                               data_format=data_format, name=scope)
