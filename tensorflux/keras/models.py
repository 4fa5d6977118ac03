"""`tf.keras.models`: Model, Sequential, clone_model for functional and Sequential models
(a fresh copy of each layer, from its config, with new weights), and whole models in
Keras's HDF5 layout and JSON configs (keras/saving.py)."""

from __future__ import annotations

from tensorflux.keras import saving
from tensorflux.keras.engine.input_layer import Input, InputLayer
from tensorflux.keras.engine.sequential import Sequential
from tensorflux.keras.engine.training import Model

__all__ = ["Model", "Sequential", "clone_model", "load_model", "save_model",
           "model_from_json", "model_from_config"]


def _copy_layer(layer):
    return saving.deserialize_layer(saving.serialize_layer(layer))


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
    """A model saved by `model.save`/`save_model` in HDF5 (tensorflux's or tf_keras's),
    compiled with its saved arguments unless `compile=False`."""
    return saving.load_model(filepath, custom_objects, compile)


def save_model(model, filepath, overwrite=True, include_optimizer=True, save_format=None,
               **kwargs):
    model.save(filepath, overwrite=overwrite, include_optimizer=include_optimizer,
               save_format=save_format, **kwargs)


def model_from_json(json_string, custom_objects=None):
    """A new model (fresh weights) from `model.to_json()`'s string."""
    return saving.model_from_json(json_string, custom_objects)


def model_from_config(config, custom_objects=None):
    """A new model from `{"class_name", "config"}` (a layer config gives a layer)."""
    if config.get("class_name") in ("Sequential", "Model", "Functional"):
        return saving.model_from_config(config, custom_objects)
    return saving.deserialize_layer(config, custom_objects)
