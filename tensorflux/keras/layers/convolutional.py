"""Keras convolution layers (tf.layers' convolutions with Keras identifiers),
DepthwiseConv2D, and the reshaping layers ZeroPadding, UpSampling, Cropping."""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import InputSpec, Layer
from tensorflux.keras.layers._wrap import keras_class
from tensorflux.layers import _utils
from tensorflux.layers import convolutional as tf_conv
from tensorflux.nn import conv_impl
from tensorflux.ops import array_ops, joining_ops, nn_ops

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose",
           "SeparableConv1D", "SeparableConv2D", "DepthwiseConv2D", "ZeroPadding1D",
           "ZeroPadding2D", "ZeroPadding3D", "UpSampling1D", "UpSampling2D", "Cropping1D",
           "Cropping2D", "Convolution1D", "Convolution2D", "Convolution3D"]

_CONV_ARGS = ["filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
              "activation", "use_bias", "kernel_initializer", "bias_initializer",
              "kernel_regularizer", "bias_regularizer", "activity_regularizer",
              "kernel_constraint", "bias_constraint"]
_INITS = {"kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"}
Conv1D = keras_class(tf_conv.Conv1D, "Conv1D", _CONV_ARGS, _INITS)
Conv2D = keras_class(tf_conv.Conv2D, "Conv2D", _CONV_ARGS, _INITS)
Conv3D = keras_class(tf_conv.Conv3D, "Conv3D", _CONV_ARGS, _INITS)
Conv2DTranspose = keras_class(tf_conv.Conv2DTranspose, "Conv2DTranspose",
                              _CONV_ARGS[:5] + _CONV_ARGS[6:], _INITS)
Conv3DTranspose = keras_class(tf_conv.Conv3DTranspose, "Conv3DTranspose",
                              _CONV_ARGS[:5] + _CONV_ARGS[6:], _INITS)
_SEP_ARGS = _CONV_ARGS[:6] + ["depth_multiplier", "activation", "use_bias",
                              "depthwise_initializer", "pointwise_initializer",
                              "bias_initializer", "depthwise_regularizer",
                              "pointwise_regularizer", "bias_regularizer",
                              "activity_regularizer", "depthwise_constraint",
                              "pointwise_constraint", "bias_constraint"]
SeparableConv1D = keras_class(tf_conv.SeparableConv1D, "SeparableConv1D", _SEP_ARGS,
                              {"depthwise_initializer": "glorot_uniform",
                               "pointwise_initializer": "glorot_uniform"})
SeparableConv2D = keras_class(tf_conv.SeparableConv2D, "SeparableConv2D", _SEP_ARGS,
                              {"depthwise_initializer": "glorot_uniform",
                               "pointwise_initializer": "glorot_uniform"})
Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D


class DepthwiseConv2D(Layer):
    """Depthwise 2-D convolution: `depth_multiplier` filters per input channel, kernel
    "depthwise_kernel" [kh, kw, in, depth_multiplier], then a bias."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.kernel_size = _utils.normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = _utils.normalize_tuple(strides, 2, "strides")
        self.padding = _utils.normalize_padding(padding)
        self.data_format = data_format or K.image_data_format()
        self.dilation_rate = _utils.normalize_tuple(dilation_rate, 2, "dilation_rate")
        self.depth_multiplier = int(depth_multiplier)
        from tensorflux.keras.engine.base_layer import resolve_identifiers

        ids = resolve_identifiers({
            "activation": activation, "depthwise_initializer": depthwise_initializer,
            "bias_initializer": bias_initializer,
            "depthwise_regularizer": depthwise_regularizer,
            "bias_regularizer": bias_regularizer, "depthwise_constraint": depthwise_constraint,
            "bias_constraint": bias_constraint})
        self.activation, self.use_bias = ids["activation"], use_bias
        self._ids = ids
        self.input_spec = InputSpec(ndim=4)

    def build(self, input_shape) -> None:
        dims = tensor_shape.TensorShape(input_shape).as_list()
        channels = dims[1] if self.data_format == "channels_first" else dims[-1]
        if channels is None:
            raise ValueError("The channel dimension of the inputs to `DepthwiseConv2D` "
                             "should be defined. Found `None`.")
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            initializer=self._ids["depthwise_initializer"],
            regularizer=self._ids["depthwise_regularizer"],
            constraint=self._ids["depthwise_constraint"])
        self.bias = self.add_weight(
            "bias", (channels * self.depth_multiplier,),
            initializer=self._ids["bias_initializer"],
            regularizer=self._ids["bias_regularizer"],
            constraint=self._ids["bias_constraint"]) if self.use_bias else None
        self.built = True

    def call(self, inputs):
        fmt = "NCHW" if self.data_format == "channels_first" else "NHWC"
        strides = [1, 1] + list(self.strides) if fmt == "NCHW" else \
            [1] + list(self.strides) + [1]
        out = conv_impl.depthwise_conv2d(inputs, self.depthwise_kernel, strides,
                                         self.padding.upper(), data_format=fmt,
                                         dilations=list(self.dilation_rate))
        if self.bias is not None:
            out = nn_ops.bias_add(out, self.bias, data_format=fmt)
        return self.activation(out) if self.activation is not None else out


def _spatial(data_format, rank):
    return list(range(2, 2 + rank)) if data_format == "channels_first" else \
        list(range(1, 1 + rank))


def _pairs(value, rank, name):
    if isinstance(value, int):
        return ((value, value),) * rank
    value = tuple(value)
    if len(value) != rank:
        raise ValueError(f"`{name}` should have {rank} elements. Received: {value}")
    return tuple((v, v) if isinstance(v, int) else tuple(v) for v in value)


class _ZeroPadding(Layer):
    def __init__(self, rank, padding, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.rank = rank
        self.data_format = data_format or K.image_data_format()
        self.padding = _pairs(padding, rank, "padding")
        self.input_spec = InputSpec(ndim=rank + 2)

    def call(self, inputs):
        pads = [[0, 0]] * (self.rank + 2)
        for axis, pair in zip(_spatial(self.data_format, self.rank), self.padding,
                              strict=True):
            pads[axis] = list(pair)
        return joining_ops.pad(inputs, pads)


def _padding_class(rank):
    def __init__(self, padding=1 if rank == 1 else (1,) * rank, data_format=None, **kwargs):
        if rank == 1:  # an int or (left, right)
            data_format = "channels_last"
            padding = padding if isinstance(padding, int) else (tuple(padding),)
        _ZeroPadding.__init__(self, rank, padding, data_format, **kwargs)

    return type(f"ZeroPadding{rank}D", (_ZeroPadding,), {
        "__init__": __init__, "__doc__": f"Pads the {rank} spatial axes with zeros."})


ZeroPadding1D, ZeroPadding2D, ZeroPadding3D = (_padding_class(r) for r in (1, 2, 3))


class _Cropping(Layer):
    def __init__(self, rank, cropping, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.rank = rank
        self.data_format = data_format or K.image_data_format()
        self.cropping = _pairs(cropping, rank, "cropping")

    def call(self, inputs):
        slices = [slice(None)] * (self.rank + 2)
        for axis, (a, b) in zip(_spatial(self.data_format, self.rank), self.cropping,
                                strict=True):
            slices[axis] = slice(a, -b if b else None)
        return inputs[tuple(slices)]


class Cropping1D(_Cropping):
    """Crops (start, end) steps off axis 1."""

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(1, (tuple(cropping),) if not isinstance(cropping, int) else cropping,
                         "channels_last", **kwargs)


class Cropping2D(_Cropping):
    """Crops ((top, bottom), (left, right)) off the spatial axes."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(2, cropping, data_format, **kwargs)


class UpSampling1D(Layer):
    """Repeats each step `size` times along axis 1."""

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = int(size)

    def call(self, inputs):
        return _repeat_axis(inputs, self.size, 1)


def _repeat_axis(x, n, axis):
    """Each entry along `axis` repeated `n` times (nearest-neighbour upsampling)."""
    dims = x.shape.as_list()
    expanded = array_ops.expand_dims(x, axis + 1)
    tiled = joining_ops.tile(expanded, [1] * (axis + 1) + [n] + [1] * (len(dims) - axis - 1))
    dyn = array_ops.shape(x)
    new = [dyn[i] if d is None else d for i, d in enumerate(dims)]
    new[axis] = new[axis] * n
    out = array_ops.reshape(tiled, joining_ops.stack(new))
    static = list(dims)
    static[axis] = None if dims[axis] is None else dims[axis] * n
    out.set_shape(static)
    return out


class UpSampling2D(Layer):
    """Scales rows and columns up `size` times: "nearest" repeats them; "bilinear" and
    "bicubic" interpolate as `tf.image.resize` does (half-pixel centers).

    Raises:
      ValueError: another interpolation."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ValueError("`interpolation` argument should be one of: \"nearest\", "
                             f"\"bilinear\", \"bicubic\". Received: \"{interpolation}\".")
        self.interpolation = interpolation
        self.size = _utils.normalize_tuple(size, 2, "size")
        self.data_format = data_format or K.image_data_format()
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        h, w = _spatial(self.data_format, 2)
        if self.interpolation == "nearest":
            return _repeat_axis(_repeat_axis(inputs, self.size[0], h), self.size[1], w)
        from tensorflux.image import image_ops as images
        from tensorflux.ops import array_ops, joining_ops, math_ops

        x = inputs if self.data_format == "channels_last" else \
            array_ops.transpose(inputs, [0, 2, 3, 1])
        dims = x.shape.as_list()
        dyn = array_ops.shape(x)
        size = joining_ops.stack([(dims[i] if dims[i] is not None else dyn[i]) * s
                                  for i, s in zip((1, 2), self.size, strict=True)])
        fn = images.resize_bilinear if self.interpolation == "bilinear" else \
            images.resize_bicubic
        y = math_ops.cast(fn(x, size, half_pixel_centers=True), inputs.dtype)
        y.set_shape([dims[0], None if dims[1] is None else dims[1] * self.size[0],
                     None if dims[2] is None else dims[2] * self.size[1], dims[3]])
        return y if self.data_format == "channels_last" else \
            array_ops.transpose(y, [0, 3, 1, 2])
