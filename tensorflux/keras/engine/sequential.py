"""`tf.keras.Sequential`: a linear stack of layers, a functional model once its input
shape is known (from the first layer's `input_shape`, an `Input` added first, the first
call, or the first batch of `fit`)."""

from __future__ import annotations

from tensorflux.framework.operation import Tensor
from tensorflux.keras.engine.base_layer import Layer
from tensorflux.keras.engine.input_layer import Input, InputLayer
from tensorflux.keras.engine.training import Model

__all__ = ["Sequential"]


class Sequential(Model):
    """Layers applied in order.

    Raises (from `add`):
      TypeError: something that is not a layer.
      ValueError: a layer whose output is several tensors.
    """

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self._stack: list = []
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> list:
        return list(self._stack)

    def add(self, layer) -> None:
        if isinstance(layer, Tensor) and hasattr(layer, "_keras_history") and \
                isinstance(layer._keras_history[0], InputLayer):
            self._input_tensor = layer
            return
        if isinstance(layer, InputLayer):
            self._input_tensor = layer._inbound_nodes[0].outputs[0]
            return
        if not isinstance(layer, Layer):
            raise TypeError("The added layer must be an instance of class Layer. Found: "
                            f"{layer}")
        self._stack.append(layer)
        if self._is_graph_network:
            out = layer(self.outputs[0])
            self._set_graph(self.inputs[0], out)
        elif getattr(self, "_input_tensor", None) is not None:
            self._build_stack(self._input_tensor)
        elif len(self._stack) == 1 and layer._batch_input_shape is not None:
            x = Input(batch_shape=layer._batch_input_shape, name=f"{layer.name}_input",
                      dtype=layer.dtype)
            self._build_stack(x)
        self._compiled = None
        self._functions = {}

    def _set_graph(self, inputs, out) -> None:
        if isinstance(out, (list, tuple)):
            raise ValueError("All layers in a Sequential model should have a single output "
                             "tensor. For multi-output layers, use the functional API.")
        self._init_graph_network(inputs, out)

    def _build_stack(self, x) -> None:
        out = x
        for layer in self._stack:
            out = layer(out)
        self._set_graph(x, out)

    def _build_graph_from_inputs(self, inputs) -> None:
        self._build_stack(inputs)

    def pop(self) -> None:
        """Removes the last layer.

        Raises:
          TypeError: an empty model."""
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        self._stack.pop()
        if self._is_graph_network:
            if self._stack:
                self._build_stack(self.inputs[0])
            else:
                self._is_graph_network = False
                self.inputs, self.outputs, self.built = [], [], False

    def __call__(self, inputs, *args, **kwargs):
        if not self._is_graph_network:
            shape = inputs.shape.as_list()
            self._build_stack(Input(batch_shape=tuple(shape), name=(
                f"{self._stack[0].name}_input" if self._stack else None)))
        return super().__call__(inputs, *args, **kwargs)

    def predict_classes(self, x, batch_size=32, verbose=0):
        import numpy as np

        proba = self.predict(x, batch_size=batch_size)
        return np.argmax(proba, axis=-1) if proba.shape[-1] > 1 else \
            (proba > 0.5).astype("int32")

    def predict_proba(self, x, batch_size=32, verbose=0):
        return self.predict(x, batch_size=batch_size)
