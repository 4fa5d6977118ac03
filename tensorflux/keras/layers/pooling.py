"""Keras pooling layers: tf.layers' Max/AveragePooling with Keras defaults (pool 2,
strides = pool size), and the global poolings."""

from __future__ import annotations

from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import InputSpec, Layer
from tensorflux.keras.layers._wrap import keras_class
from tensorflux.layers import pooling as tf_pool
from tensorflux.ops import array_ops, math_ops, reduction_ops

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalAveragePooling3D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "GlobalMaxPooling3D", "MaxPool1D", "MaxPool2D",
           "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D"]

_ARGS = ["pool_size", "strides", "padding", "data_format"]


def _pool(tf_cls, rank):
    defaults = {"pool_size": 2 if rank == 1 else (2,) * rank, "strides": None}
    return keras_class(tf_cls, tf_cls.__name__, _ARGS, defaults)


MaxPooling1D, MaxPooling2D, MaxPooling3D = (
    _pool(c, r) for c, r in ((tf_pool.MaxPooling1D, 1), (tf_pool.MaxPooling2D, 2),
                             (tf_pool.MaxPooling3D, 3)))
AveragePooling1D, AveragePooling2D, AveragePooling3D = (
    _pool(c, r) for c, r in ((tf_pool.AveragePooling1D, 1), (tf_pool.AveragePooling2D, 2),
                             (tf_pool.AveragePooling3D, 3)))
MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D


class _GlobalPooling(Layer):
    _reduce = None
    _rank = 0

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or ("channels_last" if self._rank == 1
                                           else K.image_data_format())
        self.keepdims = keepdims
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def _axes(self):
        return list(range(2, 2 + self._rank)) if self.data_format == "channels_first" else \
            list(range(1, 1 + self._rank))

    def call(self, inputs):
        return type(self)._reduce(inputs, axis=self._axes(), keepdims=self.keepdims)


class _GlobalAveragePooling1D(_GlobalPooling):
    """Global average pooling over the steps; with a [batch, steps] mask, the mean over
    the unmasked steps only. The mask stops here."""

    supports_masking = True
    _rank = 1

    def call(self, inputs, mask=None):
        axis = self._axes()[0]
        if mask is None:
            return reduction_ops.reduce_mean(inputs, axis=axis, keepdims=self.keepdims)
        m = array_ops.expand_dims(math_ops.cast(mask, inputs.dtype),
                                  2 if self.data_format == "channels_last" else 1)
        total = reduction_ops.reduce_sum(inputs * m, axis=axis, keepdims=self.keepdims)
        return total / reduction_ops.reduce_sum(m, axis=axis, keepdims=self.keepdims)

    def compute_mask(self, inputs, mask=None):
        return None


def _global(kind, rank):
    fn = reduction_ops.reduce_mean if kind == "Average" else reduction_ops.reduce_max
    base = _GlobalAveragePooling1D if (kind, rank) == ("Average", 1) else _GlobalPooling
    return type(f"Global{kind}Pooling{rank}D", (base,), {
        "_reduce": staticmethod(fn), "_rank": rank,
        "__doc__": f"Global {kind.lower()} pooling over {rank} spatial axes."})


GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D = (
    _global("Average", r) for r in (1, 2, 3))
GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D = (
    _global("Max", r) for r in (1, 2, 3))
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
