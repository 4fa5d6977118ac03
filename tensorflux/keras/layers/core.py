"""Core Keras layers: Dense, Activation, Dropout, Flatten, Reshape, Permute,
RepeatVector, Lambda, ActivityRegularization."""

from __future__ import annotations

import inspect

import numpy as np

from tensorflux.framework import tensor_shape
from tensorflux.keras import activations, regularizers
from tensorflux.keras import backend as K
from tensorflux.keras.engine.base_layer import Layer
from tensorflux.keras.layers._wrap import keras_class
from tensorflux.layers import core as tf_core
from tensorflux.ops import array_ops, comparison_ops, joining_ops, math_ops

__all__ = ["Dense", "Activation", "Dropout", "Flatten", "Reshape", "Permute",
           "RepeatVector", "Lambda", "ActivityRegularization", "Masking"]

Dense = keras_class(tf_core.Dense, "Dense",
                    ["units", "activation", "use_bias", "kernel_initializer",
                     "bias_initializer", "kernel_regularizer", "bias_regularizer",
                     "activity_regularizer", "kernel_constraint", "bias_constraint"],
                    {"kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"},
                    supports_masking=True)
Dropout = keras_class(tf_core.Dropout, "Dropout", ["rate", "noise_shape", "seed"],
                      doc="Drops inputs with probability `rate` in the training phase "
                          "(`training` argument, else the learning phase).",
                      supports_masking=True)
Flatten = keras_class(tf_core.Flatten, "Flatten", ["data_format"])


class Activation(Layer):
    """Applies an activation function (a name or a callable)."""

    supports_masking = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return tensor_shape.TensorShape(input_shape)


class Reshape(Layer):
    """Reshapes to [batch] + target_shape (one entry may be -1).

    Raises:
      ValueError: a target size that cannot hold the input."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def _fix(self, input_shape):
        rest = input_shape[1:]
        target = list(self.target_shape)
        if -1 in target and all(d is not None for d in rest):
            known = int(np.prod([d for d in target if d != -1]))
            total = int(np.prod(rest))
            if known == 0 or total % known:
                raise ValueError("total size of new array must be unchanged, input_shape = "
                                 f"{list(rest)}, output_shape = {target}")
            target[target.index(-1)] = total // known
        elif all(d is not None for d in rest) and int(np.prod(rest)) != int(np.prod(target)):
            raise ValueError("total size of new array must be unchanged, input_shape = "
                             f"{list(rest)}, output_shape = {target}")
        return target

    def call(self, inputs):
        target = self._fix(inputs.shape.as_list())
        out = array_ops.reshape(inputs, joining_ops.stack(
            [array_ops.shape(inputs)[0]] + [int(d) for d in target]))
        out.set_shape([inputs.shape.as_list()[0]] + [None if d == -1 else d for d in target])
        return out

    def compute_output_shape(self, input_shape):
        dims = tensor_shape.TensorShape(input_shape).as_list()
        return tensor_shape.TensorShape([dims[0]] + [None if d == -1 else d
                                                     for d in self._fix(dims)])


class Permute(Layer):
    """Permutes the non-batch axes by `dims` (1-based, as Keras numbers them).

    Raises:
      ValueError: `dims` not a permutation of 1..n."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation `dims` for Permute Layer: "
                             f"{self.dims}. The set of indices in `dims` must be consecutive "
                             "and start from 1.")

    def call(self, inputs):
        return array_ops.transpose(inputs, perm=(0,) + self.dims)

    def compute_output_shape(self, input_shape):
        dims = tensor_shape.TensorShape(input_shape).as_list()
        return tensor_shape.TensorShape([dims[0]] + [dims[d] for d in self.dims])


class RepeatVector(Layer):
    """[batch, features] -> [batch, n, features]."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = int(n)
        self.input_spec = tf_core.InputSpec(ndim=2)

    def call(self, inputs):
        return K.repeat(inputs, self.n)

    def compute_output_shape(self, input_shape):
        dims = tensor_shape.TensorShape(input_shape).as_list()
        return tensor_shape.TensorShape([dims[0], self.n, dims[1]])


class Lambda(Layer):
    """Wraps `function(inputs, **arguments)` as a layer (it makes no weights).

    `mask` is the output mask: a tensor, or a function `(inputs, input_mask) -> mask`;
    without it the mask stops here (Keras). `function` gets `mask=` and `training=` when
    it takes them."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function, self.arguments = function, dict(arguments or {})
        self._output_shape = output_shape
        self.mask = mask
        if mask is not None:
            self.supports_masking = True
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._fn_args = frozenset(params)

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if "mask" in self._fn_args:
            kwargs["mask"] = mask
        if "training" in self._fn_args:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def get_config(self) -> dict:
        """The function by name (`function_type` "function"): loading it needs the
        function in `custom_objects`. No code goes into a config (Keras stores a Python
        lambda's bytecode; tensorflux never writes or runs code from a file).

        Raises:
          ValueError: an anonymous lambda as the function, output_shape or mask; a
            tensor as the mask."""
        for what, fn in (("function", self.function), ("output_shape", self._output_shape),
                         ("mask", self.mask)):
            if callable(fn) and getattr(fn, "__name__", "<lambda>") == "<lambda>":
                raise ValueError(f"tensorflux.keras: Lambda layer {self.name}'s {what} is a "
                                 "Python lambda, which cannot be saved (no code is stored "
                                 "in files): use a named function and pass it in "
                                 "custom_objects when loading")
        if self.mask is not None and not callable(self.mask):
            raise ValueError(f"tensorflux.keras: Lambda layer {self.name}'s mask is a "
                             "tensor, which a config cannot hold")
        config = {k: v for k, v in Layer.get_config(self).items()
                  if k not in ("function", "output_shape", "mask", "arguments")}
        config.update(function=self.function.__name__, function_type="function",
                      module=getattr(self.function, "__module__", None),
                      output_shape=(self._output_shape.__name__ if callable(
                          self._output_shape) else self._output_shape),
                      output_shape_type="function" if callable(self._output_shape)
                      else "raw", arguments=self.arguments,
                      mask=self.mask.__name__ if callable(self.mask) else None)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Raises:
          ValueError: a function stored as code (Keras's "lambda" type), or a function
            name not in `custom_objects`."""
        config = dict(config)
        objects = dict(custom_objects or {})

        def named(key, kind):
            value = config.pop(key, None)
            kind_value = config.pop(kind, "function")
            if value is None or kind_value == "raw":
                return value
            if kind_value == "lambda":
                raise ValueError(f"tensorflux.keras: Lambda layer {config.get('name')} "
                                 "holds Python bytecode, which tensorflux does not run from "
                                 "files: rebuild the layer in code, or give a named "
                                 "function in custom_objects")
            if value not in objects:
                raise ValueError(f"Unknown function: {value} (Lambda layer "
                                 f"{config.get('name')}). Please ensure this object is "
                                 "passed to the `custom_objects` argument.")
            return objects[value]

        function = named("function", "function_type")
        output_shape = named("output_shape", "output_shape_type")
        mask = config.pop("mask", None)
        if isinstance(mask, str):
            mask = objects.get(mask, mask)
        config.pop("module", None)
        config.pop("output_shape_module", None)
        return cls(function, output_shape=output_shape, mask=mask, **config)

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            raise NotImplementedError("Lambda: give `output_shape`")
        if callable(self._output_shape):
            return tensor_shape.TensorShape(self._output_shape(input_shape))
        dims = tensor_shape.TensorShape(input_shape).as_list()
        return tensor_shape.TensorShape([dims[0]] + list(self._output_shape))


class ActivityRegularization(Layer):
    """Identity that adds an L1/L2 activity loss."""

    supports_masking = True

    def __init__(self, l1=0.0, l2=0.0, **kwargs):  # noqa: E741
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = l1, l2

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return tensor_shape.TensorShape(input_shape)


class Masking(Layer):
    """Masks the time steps whose features all equal `mask_value`: their values become
    zero and the output's mask (`_keras_mask`, [batch, time]) is False there, so the
    layers after it (recurrent layers, GlobalAveragePooling1D, the losses) skip them."""

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def _keep(self, inputs):
        return K.any(comparison_ops.not_equal(inputs, self.mask_value), axis=-1,
                     keepdims=True)

    def compute_mask(self, inputs, mask=None):
        return K.any(comparison_ops.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        keep = self._keep(inputs)
        outputs = inputs * math_ops.cast(keep, inputs.dtype)
        outputs._keras_mask = array_ops.squeeze(keep, axis=[-1])
        return outputs

    def compute_output_shape(self, input_shape):
        return tensor_shape.TensorShape(input_shape)

    def get_config(self) -> dict:
        config = super().get_config()
        config["mask_value"] = self.mask_value
        return config
