"""`tf.keras.models`: Model, Sequential, and clone_model for functional and Sequential
models (a fresh copy of each layer with new weights)."""

from __future__ import annotations

from tensorflux.keras.engine.input_layer import Input, InputLayer
from tensorflux.keras.engine.sequential import Sequential
from tensorflux.keras.engine.training import Model

__all__ = ["Model", "Sequential", "clone_model", "load_model", "save_model"]


def _copy_layer(layer):
    if hasattr(layer, "_config"):
        return type(layer)(**layer._config)
    raise ValueError(f"tensorflux.keras: clone_model cannot copy layer {layer.name} "
                     f"({type(layer).__name__}); only recurrent layers keep their config")


def clone_model(model, input_tensors=None, clone_function=None):
    """A model of the same architecture with new weights (clone_function(layer) makes each
    layer; by default recurrent layers only)."""
    clone = clone_function or _copy_layer
    if isinstance(model, Sequential):
        layers = [clone(layer) for layer in model.layers]
        out = Sequential(layers)
        if input_tensors is not None:
            out(input_tensors)
        return out
    new_inputs = input_tensors or [Input(batch_shape=tuple(x.shape.as_list()))
                                   for x in model.inputs]
    values = {id(old): new for old, new in zip(model.inputs, new_inputs, strict=True)}
    for node in model._nodes:
        if isinstance(node.layer, InputLayer):
            continue
        layer = clone(node.layer)
        args = [values[id(t)] for t in node.inputs]
        outs = layer(args[0] if node.single_input else args, **node.kwargs)
        for old, new in zip(node.outputs, outs if isinstance(outs, list) else [outs],
                            strict=True):
            values[id(old)] = new
    return Model(new_inputs, [values[id(y)] for y in model.outputs])


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002
    raise NotImplementedError("tensorflux.keras: loading whole models is not supported; "
                              "rebuild the model in code and use load_weights.")


def save_model(model, filepath, **kwargs):
    model.save(filepath, **kwargs)
