"""Pooling layers: Max/AveragePooling1D/2D/3D and their functional forms. 1-D pools run
the 2-D op on a height of 1, as TF1 does."""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.layers import _utils
from tensorflux.layers.base import InputSpec, Layer
from tensorflux.layers.core import normalize_data_format
from tensorflux.ops import array_ops, conv3d_ops, pooling_ops

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "max_pooling1d", "max_pooling2d",
           "max_pooling3d", "average_pooling1d", "average_pooling2d", "average_pooling3d",
           "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D"]

_OPS = {("max", 2): pooling_ops.max_pool, ("avg", 2): pooling_ops.avg_pool,
        ("max", 3): conv3d_ops.max_pool3d, ("avg", 3): conv3d_ops.avg_pool3d}


class _Pooling(Layer):
    """A pool over `rank` spatial axes; `kind` is "max" or "avg"."""

    def __init__(self, kind, rank, pool_size, strides, padding="valid",
                 data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.kind, self.rank = kind, rank
        self.pool_size = _utils.normalize_tuple(pool_size, rank, "pool_size")
        self.strides = _utils.normalize_tuple(
            self.pool_size if strides is None else strides, rank, "strides")
        self.padding = _utils.normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)

    def call(self, inputs):
        first = self.data_format == "channels_first"
        pool_size, strides, rank = self.pool_size, self.strides, self.rank
        if rank == 1:
            axis = 2 if first else 1
            inputs = array_ops.expand_dims(inputs, axis)
            pool_size, strides, rank = (1,) + pool_size, (1,) + strides, 2
        fmt = {(2, False): "NHWC", (2, True): "NCHW", (3, False): "NDHWC",
               (3, True): "NCDHW"}[(rank, first)]
        ksize = [1, 1] + list(pool_size) if first else [1] + list(pool_size) + [1]
        step = [1, 1] + list(strides) if first else [1] + list(strides) + [1]
        out = _OPS[(self.kind, rank)](inputs, ksize, step, self.padding.upper(),
                                      data_format=fmt)
        return array_ops.squeeze(out, [axis]) if self.rank == 1 else out

    def compute_output_shape(self, input_shape):
        dims = tensor_shape.TensorShape(input_shape).with_rank(self.rank + 2).as_list()
        first = self.data_format == "channels_first"
        spatial = dims[2:] if first else dims[1:-1]
        out = [_utils.conv_output_length(n, k, self.padding, s) for n, k, s in
               zip(spatial, self.pool_size, self.strides, strict=True)]
        return tensor_shape.TensorShape([dims[0], dims[1]] + out if first
                                        else [dims[0]] + out + [dims[-1]])


def _pool_class(kind, rank, doc):
    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        _Pooling.__init__(self, kind, rank, pool_size, strides, padding, data_format, name,
                          **kwargs)

    name = f"{'Max' if kind == 'max' else 'Average'}Pooling{rank}D"
    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc})


MaxPooling1D = _pool_class("max", 1, "Max pooling over [batch, width, channels].")
MaxPooling2D = _pool_class("max", 2, "Max pooling over [batch, height, width, channels].")
MaxPooling3D = _pool_class("max", 3, "Max pooling over 3 spatial axes.")
AveragePooling1D = _pool_class("avg", 1, "Average pooling over [batch, width, channels].")
AveragePooling2D = _pool_class("avg", 2, "Average pooling over 2 spatial axes.")
AveragePooling3D = _pool_class("avg", 3, "Average pooling over 3 spatial axes.")
MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D


def _functional(cls):
    def pool(inputs, pool_size, strides, padding="valid", data_format="channels_last",
             name=None):
        return cls(pool_size, strides, padding=padding, data_format=data_format,
                   name=name).apply(inputs)

    pool.__doc__ = f"The functional form of `{cls.__name__}`."
    return pool


max_pooling1d, max_pooling2d, max_pooling3d = map(_functional, (MaxPooling1D, MaxPooling2D,
                                                                MaxPooling3D))
average_pooling1d, average_pooling2d, average_pooling3d = map(
    _functional, (AveragePooling1D, AveragePooling2D, AveragePooling3D))
