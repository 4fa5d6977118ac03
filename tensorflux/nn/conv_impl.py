"""Convolutions and pools built from other ops, as TF1 builds them: `tf.nn.conv1d` and the
1-D pools (a size-1 spatial axis added, the 2-D op, the axis squeezed away),
`tf.nn.depthwise_conv2d` (DepthwiseConv2dNative, `rate` as dilations) and
`tf.nn.separable_conv2d` (depthwise, then a 1x1 pointwise Conv2D).
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import (
    array_ops,
    conv3d_ops,
    conv_ops,
    depthwise_conv_ops,
    joining_ops,
    pooling_ops,
)

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


# ---- rank-generic convolutions and pools, atrous and transposed forms ---------------------


def _spatial(value, name):
    rank = value.shape.ndims
    if rank is None:
        raise ValueError(f"{name} needs the rank of its input to be known")
    if rank not in (3, 4, 5):
        raise ValueError(f"{name} takes inputs of rank 3, 4 or 5 (1-3 spatial dimensions), "
                         f"got rank {rank}")
    return rank - 2


def _per_dim(value, n, name):
    if value is None:
        return [1] * n
    value = [int(value)] * n if isinstance(value, int) else [int(v) for v in value]
    if len(value) == 1:
        value = value * n
    if len(value) != n:
        raise ValueError(f"{name} must have {n} entries, got {value}")
    return value


def _channels_last(data_format) -> bool:
    return data_format is None or not str(data_format).startswith("NC")


def convolution(input, filter, padding, strides=None, dilation_rate=None, name=None,  # noqa: A002
                data_format=None, filters=None, dilations=None):
    """1-3D convolution chosen by the input's rank (`tf.nn.convolution`): Conv2D (conv1d
    through a height of 1) or Conv3D, with per-dimension strides and dilations."""
    filter = filters if filter is None else filter  # noqa: A001
    dilation_rate = dilations if dilation_rate is None else dilation_rate
    with graph_lib.name_scope(name, "convolution", [input, filter]) as scope:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        n = _spatial(input, "convolution")
        s, d = _per_dim(strides, n, "strides"), _per_dim(dilation_rate, n, "dilation_rate")
        last = _channels_last(data_format)
        if n == 1:
            return conv1d(input, filter, s[0], padding, data_format="NWC" if last else "NCW",
                          dilations=d[0], name=scope)
        full = lambda v: [1] + v + [1] if last else [1, 1] + v  # noqa: E731
        if n == 2:
            return conv_ops.conv2d(input, filter, full(s), padding, dilations=full(d),
                                   data_format="NHWC" if last else "NCHW", name=scope)
        return conv3d_ops.conv3d(input, filter, full(s), padding, dilations=full(d),
                                 data_format="NDHWC" if last else "NCDHW", name=scope)


def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None,  # noqa: A002
         name=None, data_format=None, dilations=None):
    """1-3D max or average pooling chosen by the input's rank (`tf.nn.pool`).

    A dilation rate above 1 pools every rate-th input (the windows spread out), computed
    as TF does: the input folded by space_to_batch, pooled, unfolded (VALID padding and
    `strides` of 1 only, as in TF).

    Raises:
      ValueError: an unknown pooling_type, strides and a dilation rate both above 1, SAME
        padding with a dilation rate above 1 (as TF), or window/strides of the wrong
        length.
    """
    dilation_rate = dilations if dilation_rate is None else dilation_rate
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}")
    with graph_lib.name_scope(name, f"{pooling_type.lower()}_pool", [input]) as scope:
        input = convert_to_tensor(input, name="input")  # noqa: A001
        n = _spatial(input, "pool")
        w, s = _per_dim(window_shape, n, "window_shape"), _per_dim(strides, n, "strides")
        rate = _per_dim(dilation_rate, n, "dilation_rate")
        if any(r != 1 for r in rate):
            if padding == "SAME":
                raise ValueError(f"pooling with 'SAME' padding is not implemented for "
                                 f"`dilation_rate` > 1. Received: padding={padding} and "
                                 f"dilation_rate={rate}")
            if any(k != 1 for k in s):
                raise ValueError(f"`strides > 1` not supported in conjunction with "
                                 f"`dilation_rate > 1`. Received: strides={s} and "
                                 f"dilation_rate={rate}")
            from tensorflux.nn.space_to_batch_impl import with_space_to_batch

            def undilated(x, _, converted_padding):
                return pool(x, w, pooling_type, converted_padding, None, None, None,
                            data_format)

            return with_space_to_batch(input, rate, padding, undilated, filter_shape=w,
                                       data_format=data_format or "NWC")
        last = _channels_last(data_format)
        full = lambda v: [1] + v + [1] if last else [1, 1] + v  # noqa: E731
        if n == 1:
            fn = max_pool1d if pooling_type == "MAX" else avg_pool1d
            return fn(input, w[0], s[0], padding, data_format="NWC" if last else "NCW",
                      name=scope)
        if n == 2:
            fn = pooling_ops.max_pool if pooling_type == "MAX" else pooling_ops.avg_pool
            return fn(input, full(w), full(s), padding,
                      data_format="NHWC" if last else "NCHW", name=scope)
        fn = conv3d_ops.max_pool3d if pooling_type == "MAX" else conv3d_ops.avg_pool3d
        return fn(input, full(w), full(s), padding,
                  data_format="NDHWC" if last else "NCDHW", name=scope)


def atrous_conv2d(value, filters, rate, padding, name=None):
    """A 2-D convolution with holes (`tf.nn.atrous_conv2d`): Conv2D dilated by `rate`."""
    with graph_lib.name_scope(name, "atrous_conv2d", [value, filters]) as scope:
        return conv_ops.conv2d(value, filters, [1, 1, 1, 1], padding,
                               dilations=[1, int(rate), int(rate), 1], name=scope)


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """The transpose of atrous_conv2d (`tf.nn.atrous_conv2d_transpose`)."""
    with graph_lib.name_scope(name, "atrous_conv2d_transpose", [value, filters]) as scope:
        return conv_ops.conv2d_transpose(value, filters, output_shape, [1, 1, 1, 1], padding,
                                         dilations=[1, int(rate), int(rate), 1], name=scope)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NWC", dilations=None, name=None):
    """The transpose of conv1d (`tf.nn.conv1d_transpose`): conv2d_transpose over a height
    of 1."""
    last = _channels_last(data_format)
    with graph_lib.name_scope(name, "conv1d_transpose", [input, filters]) as scope:
        axis = 1 if last else 2
        shape = convert_to_tensor(output_shape)
        shape = joining_ops.concat([shape[:axis], [1], shape[axis:]], 0)
        s = _per_dim(strides, 1, "strides")[0]
        d = _per_dim(dilations, 1, "dilations")[0]
        out = conv_ops.conv2d_transpose(
            array_ops.expand_dims(input, axis), array_ops.expand_dims(filters, 0), shape,
            [1, 1, s, 1] if last else [1, 1, 1, s], padding,
            data_format="NHWC" if last else "NCHW",
            dilations=[1, 1, d, 1] if last else [1, 1, 1, d])
        return array_ops.squeeze(out, [axis], name=scope)


def conv_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                   data_format=None, dilations=None, name=None):
    """1-3D transposed convolution chosen by `output_shape`'s length (`tf.nn.conv_transpose`)."""
    n = len(output_shape) - 2 if isinstance(output_shape, (list, tuple)) else \
        convert_to_tensor(output_shape).shape.as_list()[0] - 2
    last = _channels_last(data_format)
    if n == 1:
        return conv1d_transpose(input, filters, output_shape, strides, padding,
                                "NWC" if last else "NCW", dilations, name)
    s = _per_dim(strides, n, "strides")
    d = _per_dim(dilations, n, "dilations")
    full = lambda v: [1] + v + [1] if last else [1, 1] + v  # noqa: E731
    if n == 2:
        return conv_ops.conv2d_transpose(input, filters, output_shape, full(s), padding,
                                         data_format="NHWC" if last else "NCHW",
                                         dilations=full(d), name=name)
    return conv3d_ops.conv3d_transpose(input, filters, output_shape, full(s), padding,
                                       data_format="NDHWC" if last else "NCDHW", name=name,
                                       dilations=full(d))


def conv3d_backprop_filter(input, filter, out_backprop, strides, padding,  # noqa: A002
                           name=None):
    """TF1's `tf.nn.conv3d_backprop_filter`: the filter gradient given the filter itself
    (its shape) rather than its sizes."""
    return conv3d_ops.conv3d_backprop_filter_v2(input, array_ops.shape(filter), out_backprop,
                                                strides, padding, name=name)


depthwise_conv2d_backprop_input = depthwise_conv_ops.depthwise_conv2d_native_backprop_input
depthwise_conv2d_backprop_filter = depthwise_conv_ops.depthwise_conv2d_native_backprop_filter

__all__ += ["convolution", "pool", "atrous_conv2d", "atrous_conv2d_transpose",
            "conv1d_transpose", "conv_transpose", "conv3d_backprop_filter",
            "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter"]
