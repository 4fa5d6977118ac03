"""Convolution layers: Conv1D/2D/3D, SeparableConv1D/2D, Conv2DTranspose, Conv3DTranspose
and their functional forms (`tf.layers.conv2d`, ...). Kernels are [*kernel_size, in, out]
("kernel"), biases [out] ("bias"); separable layers have "depthwise_kernel" and
"pointwise_kernel"."""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.layers import _utils
from tensorflux.layers.base import InputSpec, Layer
from tensorflux.layers.core import normalize_data_format
from tensorflux.nn import conv_impl
from tensorflux.ops import array_ops, conv3d_ops, conv_ops, nn_ops
from tensorflux.ops.joining_ops import stack
from tensorflux.variables import init_ops

__all__ = ["Conv1D", "Conv2D", "Conv3D", "SeparableConv1D", "SeparableConv2D",
           "Conv2DTranspose", "Conv3DTranspose", "conv1d", "conv2d", "conv3d",
           "separable_conv1d", "separable_conv2d", "conv2d_transpose", "conv3d_transpose",
           "Convolution1D", "Convolution2D", "Convolution3D", "Convolution2DTranspose",
           "Convolution3DTranspose", "SeparableConvolution2D"]

_FORMATS = {(1, "channels_last"): "NWC", (1, "channels_first"): "NCW",
            (2, "channels_last"): "NHWC", (2, "channels_first"): "NCHW",
            (3, "channels_last"): "NDHWC", (3, "channels_first"): "NCDHW"}


class _Conv(Layer):
    """An N-D convolution layer (rank 1, 2 or 3 spatial axes); see `conv2d` for the args."""

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=init_ops.zeros_initializer(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.rank = rank
        self.filters = int(filters)
        self.kernel_size = _utils.normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = _utils.normalize_tuple(strides, rank, "strides")
        self.padding = _utils.normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = _utils.normalize_tuple(dilation_rate, rank, "dilation_rate")
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(ndim=rank + 2)
        self.kernel = self.bias = None

    @property
    def _channel_axis(self) -> int:
        return 1 if self.data_format == "channels_first" else -1

    def _input_channels(self, input_shape) -> int:
        input_shape = tensor_shape.TensorShape(input_shape).with_rank(self.rank + 2)
        channels = input_shape.dims[self._channel_axis].value
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found "
                             "`None`.")
        return channels

    def _kernel_shape(self, channels):
        return self.kernel_size + (channels, self.filters)

    def build(self, input_shape) -> None:
        channels = self._input_channels(input_shape)
        self.kernel = self.add_weight("kernel", self._kernel_shape(channels),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self._build_bias()
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: channels})
        self.built = True

    def _build_bias(self) -> None:
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,),
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)

    def _convolve(self, inputs):
        fmt = _FORMATS[(self.rank, self.data_format)]
        padding = self.padding.upper()
        if self.rank == 1:
            return conv_impl.conv1d(inputs, self.kernel, self.strides[0], padding,
                                    data_format=fmt, dilations=self.dilation_rate[0])
        if self.rank == 2:
            return conv_ops.conv2d(inputs, self.kernel, list(self.strides), padding,
                                   data_format=fmt, dilations=list(self.dilation_rate),
                                   name="Conv2D")
        return conv3d_ops.conv3d(inputs, self.kernel, list(self.strides), padding,
                                 data_format=fmt, dilations=list(self.dilation_rate),
                                 name="Conv3D")

    def _add_bias(self, outputs):
        if not self.use_bias:
            return outputs
        if self.data_format == "channels_first":
            if self.rank == 2:
                return nn_ops.bias_add(outputs, self.bias, data_format="NCHW")
            return outputs + array_ops.reshape(self.bias, [1, self.filters] + [1] * self.rank)
        return nn_ops.bias_add(outputs, self.bias)

    def call(self, inputs):
        outputs = self._add_bias(self._convolve(inputs))
        return self.activation(outputs) if self.activation is not None else outputs

    def _spatial_out(self, lengths):
        return [_utils.conv_output_length(n, k, self.padding, s, d) for n, k, s, d in
                zip(lengths, self.kernel_size, self.strides, self.dilation_rate, strict=True)]

    def compute_output_shape(self, input_shape):
        dims = tensor_shape.TensorShape(input_shape).with_rank(self.rank + 2).as_list()
        if self.data_format == "channels_first":
            return tensor_shape.TensorShape([dims[0], self.filters] + self._spatial_out(dims[2:]))
        return tensor_shape.TensorShape([dims[0]] + self._spatial_out(dims[1:-1])
                                        + [self.filters])


class Conv1D(_Conv):
    """1-D convolution layer over [batch, width, channels] (channels_last)."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)


class Conv2D(_Conv):
    """2-D convolution layer over [batch, height, width, channels] (channels_last)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)


class Conv3D(_Conv):
    """3-D convolution layer over [batch, depth, height, width, channels]."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1, 1), **kwargs):
        super().__init__(3, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)


class _SeparableConv(_Conv):
    """Depthwise convolution (depth_multiplier filters per input channel), then a 1x1
    convolution to `filters` channels."""

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                 depthwise_initializer=None, pointwise_initializer=None,
                 depthwise_regularizer=None, pointwise_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, **kwargs):
        super().__init__(rank, filters, kernel_size, strides, padding, data_format,
                         dilation_rate, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint
        self.depthwise_kernel = self.pointwise_kernel = None

    def build(self, input_shape) -> None:
        channels = self._input_channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1,) * self.rank + (channels * self.depth_multiplier,
                                                    self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._build_bias()
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: channels})
        self.built = True

    def _convolve(self, inputs):
        fmt = "NCHW" if self.data_format == "channels_first" else "NHWC"
        strides, rate = list(self.strides), list(self.dilation_rate)
        depthwise, pointwise = self.depthwise_kernel, self.pointwise_kernel
        if self.rank == 1:  # a height of 1, as TF1 does
            axis = 2 if fmt == "NCHW" else 1
            inputs = array_ops.expand_dims(inputs, axis)
            depthwise = array_ops.expand_dims(depthwise, 0)
            pointwise = array_ops.expand_dims(pointwise, 0)
            strides, rate = [1] + strides, [1] + rate
        full = [1, 1] + strides if fmt == "NCHW" else [1] + strides + [1]
        out = conv_impl.separable_conv2d(inputs, depthwise, pointwise, full,
                                         self.padding.upper(), rate=rate, data_format=fmt)
        return array_ops.squeeze(out, [axis]) if self.rank == 1 else out


class SeparableConv1D(_SeparableConv):
    """Depthwise separable 1-D convolution layer."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1, **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, **kwargs)


class SeparableConv2D(_SeparableConv):
    """Depthwise separable 2-D convolution layer."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                 **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, **kwargs)


class _ConvTranspose(_Conv):
    """The transpose of a convolution (its input gradient) with a kernel
    [*kernel_size, filters, in]."""

    def _kernel_shape(self, channels):
        return self.kernel_size + (self.filters, channels)

    def _spatial_out(self, lengths):
        return [_utils.deconv_output_length(n, k, self.padding, s) for n, k, s in
                zip(lengths, self.kernel_size, self.strides, strict=True)]

    def _convolve(self, inputs):
        fmt = _FORMATS[(self.rank, self.data_format)]
        static = self.compute_output_shape(inputs.shape).as_list()
        dynamic = array_ops.shape(inputs)
        out_shape = stack([d if d is not None else dynamic[i] for i, d in enumerate(static)])
        full = [1, 1] + list(self.strides) if fmt[1] == "C" else \
            [1] + list(self.strides) + [1]
        transpose = conv_ops.conv2d_transpose if self.rank == 2 else \
            conv3d_ops.conv3d_transpose
        out = transpose(inputs, self.kernel, out_shape, full, padding=self.padding.upper(),
                        data_format=fmt)
        out.set_shape(static)
        return out


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution layer ("deconvolution")."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format, 1, **kwargs)


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution layer."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", **kwargs):
        super().__init__(3, filters, kernel_size, strides, padding, data_format, 1, **kwargs)


Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Convolution2DTranspose, Convolution3DTranspose = Conv2DTranspose, Conv3DTranspose
SeparableConvolution2D = SeparableConv2D


def _functional(cls, inputs, args, kwargs):
    name, reuse = kwargs.pop("name", None), kwargs.pop("reuse", None)
    return cls(*args, name=name, _scope=name, _reuse=reuse, **kwargs).apply(inputs)


def conv1d(inputs, filters, kernel_size, *args, **kwargs):
    """The functional form of `Conv1D` (`tf.layers.conv1d`); `name` is the variable scope,
    `reuse` shares an earlier call's variables."""
    return _functional(Conv1D, inputs, (filters, kernel_size) + args, kwargs)


def conv2d(inputs, filters, kernel_size, *args, **kwargs):
    """The functional form of `Conv2D` (`tf.layers.conv2d`).

    Args (after inputs): filters, kernel_size, strides=(1, 1), padding="valid",
      data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
      kernel_initializer=None, bias_initializer=zeros, kernel_regularizer=None,
      bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
      bias_constraint=None, trainable=True, name=None, reuse=None.

    Raises:
      ValueError: inputs of the wrong rank or with an unknown channel dimension, a bad
        padding or data_format.
    """
    return _functional(Conv2D, inputs, (filters, kernel_size) + args, kwargs)


def conv3d(inputs, filters, kernel_size, *args, **kwargs):
    """The functional form of `Conv3D` (`tf.layers.conv3d`)."""
    return _functional(Conv3D, inputs, (filters, kernel_size) + args, kwargs)


def separable_conv1d(inputs, filters, kernel_size, *args, **kwargs):
    """The functional form of `SeparableConv1D` (`tf.layers.separable_conv1d`)."""
    return _functional(SeparableConv1D, inputs, (filters, kernel_size) + args, kwargs)


def separable_conv2d(inputs, filters, kernel_size, *args, **kwargs):
    """The functional form of `SeparableConv2D` (`tf.layers.separable_conv2d`)."""
    return _functional(SeparableConv2D, inputs, (filters, kernel_size) + args, kwargs)


def conv2d_transpose(inputs, filters, kernel_size, *args, **kwargs):
    """The functional form of `Conv2DTranspose` (`tf.layers.conv2d_transpose`)."""
    return _functional(Conv2DTranspose, inputs, (filters, kernel_size) + args, kwargs)


def conv3d_transpose(inputs, filters, kernel_size, *args, **kwargs):
    """The functional form of `Conv3DTranspose` (`tf.layers.conv3d_transpose`)."""
    return _functional(Conv3DTranspose, inputs, (filters, kernel_size) + args, kwargs)
