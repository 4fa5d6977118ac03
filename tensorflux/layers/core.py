"""Core layers: Dense, Dropout, Flatten, and their functional forms."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import tensor_shape
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.layers.base import InputSpec, Layer, smart_cond
from tensorflux.nn import nn_impl
from tensorflux.ops import array_ops, matrix_ops, nn_ops
from tensorflux.ops.joining_ops import concat
from tensorflux.sparse import sparse_extra as sparse_ops
from tensorflux.variables import init_ops

__all__ = ["Dense", "Dropout", "Flatten", "dense", "dropout", "flatten"]


class Dense(Layer):
    """outputs = activation(inputs . kernel + bias), over the last axis of `inputs`.

    Args:
      units: the output size.
      activation: a function of the pre-activation (None: linear).
      use_bias: whether to add a bias.
      kernel_initializer, bias_initializer: initializers (kernel default: glorot uniform,
        `tf.get_variable`'s default; bias default zeros).
      kernel_regularizer, bias_regularizer, activity_regularizer: functions giving losses.
      kernel_constraint, bias_constraint: functions applied to the weights after updates.
      trainable, name: as `Layer`.
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=init_ops.zeros_initializer(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.input_spec = InputSpec(min_ndim=2)
        self.kernel = self.bias = None

    @staticmethod
    def _last_dim(input_shape) -> int:
        input_shape = tensor_shape.TensorShape(input_shape)
        last = input_shape.dims[-1].value if input_shape.ndims else None
        if last is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {input_shape}")
        return last

    def build(self, input_shape) -> None:
        last = self._last_dim(input_shape)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = self.add_weight("kernel", [last, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", [self.units], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        rank = inputs.shape.ndims
        if isinstance(inputs, SparseTensor):  # a sparse batch of rows (Keras's sparse Input)
            if rank != 2:
                raise ValueError(f"A Dense layer takes a SparseTensor of rank 2, got rank "
                                 f"{rank}")
            outputs = sparse_ops.sparse_tensor_dense_matmul(inputs, self.kernel)
        elif rank == 2:
            outputs = matrix_ops.matmul(inputs, self.kernel)
        else:
            flat = array_ops.reshape(inputs, [-1, self.kernel.shape.as_list()[0]])
            outputs = array_ops.reshape(
                matrix_ops.matmul(flat, self.kernel),
                concat([array_ops.shape(inputs)[:-1], [self.units]], 0))
            outputs.set_shape(self.compute_output_shape(inputs.shape))
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs

    def compute_output_shape(self, input_shape):
        input_shape = tensor_shape.TensorShape(input_shape).with_rank_at_least(2)
        self._last_dim(input_shape)
        return input_shape[:-1].concatenate(self.units)


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=init_ops.zeros_initializer(), kernel_regularizer=None,
          bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """The functional form of `Dense` (`tf.layers.dense`): `name` is the variable scope,
    opened as is; `reuse` shares the variables of an earlier call with that name.

    Raises:
      ValueError: an input whose last dimension is unknown.
    """
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class Dropout(Layer):
    """Drops each input with probability `rate` (scaling the rest by 1/(1-rate)) when
    called with `training` true; the identity otherwise.

    Args:
      rate: the drop probability.
      noise_shape: the shape of the drop decisions, broadcast to the input's.
      seed: the op seed.
      name: the layer name.
    """

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=False):
        return smart_cond(
            training,
            lambda: nn_impl.dropout(inputs, noise_shape=self.noise_shape, seed=self.seed,
                                    rate=self.rate),
            lambda: array_ops.identity(inputs))

    def compute_output_shape(self, input_shape):
        return tensor_shape.TensorShape(input_shape)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """The functional form of `Dropout` (`tf.layers.dropout`); `training` is a Python bool
    or a boolean tensor."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name).apply(
        inputs, training=training)


class Flatten(Layer):
    """Reshapes [batch, d1, d2, ...] to [batch, d1 * d2 * ...] (channels first data is
    put channels last first, as TF1 does)."""

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        rank = inputs.shape.ndims
        if self.data_format == "channels_first" and rank is not None and rank > 2:
            inputs = array_ops.transpose(inputs, [0] + list(range(2, rank)) + [1])
        if rank == 1:
            return array_ops.expand_dims(inputs, 1)
        rest = inputs.shape.as_list()[1:] if rank is not None else [None]
        if all(d is not None for d in rest):
            return array_ops.reshape(inputs, [-1, int(np.prod(rest, dtype=np.int64))])
        return array_ops.reshape(inputs, concat([array_ops.shape(inputs)[:1], [-1]], 0))

    def compute_output_shape(self, input_shape):
        input_shape = tensor_shape.TensorShape(input_shape).with_rank_at_least(1)
        rest = input_shape.as_list()[1:]
        size = int(np.prod(rest)) if all(d is not None for d in rest) else None
        return tensor_shape.TensorShape([input_shape.dims[0].value, size if rest else 1])


def flatten(inputs, name=None, data_format="channels_last"):
    """The functional form of `Flatten` (`tf.layers.flatten`)."""
    return Flatten(name=name, data_format=data_format).apply(inputs)


def normalize_data_format(value) -> str:
    """"channels_last" or "channels_first" (None: channels_last).

    Raises:
      ValueError: anything else."""
    value = "channels_last" if value is None else str(value).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of \"channels_first\", "
                         f"\"channels_last\". Received: {value}")
    return value
