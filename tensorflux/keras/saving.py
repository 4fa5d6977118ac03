"""Keras model configs, JSON, and whole models and weights in Keras's HDF5 layout.

Configs (`get_config`, `to_json`, `model_from_json`, `from_config`) follow Keras 2's
format: a layer is `{"class_name", "config"}`; its config is the name, trainable flag,
dtype, batch input shape and the constructor's arguments as the caller gave them
(`Layer.__init_subclass__` records them), with activations, initializers, regularizers,
constraints and nested layers serialized; a functional model lists its layers with their
`inbound_nodes` (`[layer name, node index, tensor index, call kwargs]` per input, node
indices counted among the nodes of this model) and its `input_layers`/`output_layers`.
Configs written by tf_keras load here: the keys tf_keras writes that tensorflux's
constructors do not take are dropped when they hold Keras's neutral value (`_NEUTRAL`),
and refused otherwise.

HDF5 files (h5py, imported only when such a file is written or read) use Keras's legacy
layout, so tf_keras reads what tensorflux writes and the other way round: file attributes
`model_config`, `training_config` (JSON), `keras_version`, `backend`; a `model_weights`
group (for `save_weights`, the file's root) with `layer_names`, and per layer a group with
`weight_names` and one dataset per weight under its name ("dense/kernel:0"). Weights load
by layer order (or by name with `by_name=True`), as Keras loads them. No pickle anywhere.
"""

from __future__ import annotations

import inspect
import json
import re

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.keras import activations, constraints, initializers, regularizers

__all__ = ["constructor_config", "deserialize_arguments", "serialize_layer",
           "deserialize_layer", "model_config", "model_from_config", "model_to_json",
           "model_from_json", "save_model", "load_model", "save_weights_hdf5",
           "load_weights_hdf5", "is_hdf5_path"]

KERAS_VERSION = "2.21.0"
_LAYER_KEYS = ("name", "trainable", "dtype", "input_shape", "input_dim", "batch_input_shape",
               "batch_size", "weights")
# Keys tf_keras writes for arguments some of tensorflux's layers do not take, with the
# value that means "nothing": such a key is dropped on loading when the layer refuses it
# and it holds that value (any value, for the keys of `_ANY_VALUE`: a choice of kernel).
_NEUTRAL = {"groups": 1, "sparse": False, "ragged": False, "optional": False,
            "time_major": False, "unroll": False, "implementation": None,
            "zero_output_for_mask": None, "reset_after": False, "stateful": False,
            "autocast": None, "dynamic": False, "input_length": None, "dilation_rate": 1,
            "output_padding": None}
_ANY_VALUE = ("implementation", "zero_output_for_mask", "autocast")
_REFUSED = re.compile(r"unexpected keyword argument '(\w+)'|multiple values for argument "
                      r"'(\w+)'|Keyword argument not understood: (\w+)")


def is_hdf5_path(filepath, save_format=None) -> bool:
    return save_format in ("h5", "hdf5", "keras") or \
        str(filepath).endswith((".h5", ".hdf5", ".keras"))


def _h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("Keras's HDF5 files need h5py (`pip install h5py`, or the "
                          "tensorflux[keras] extra).") from None
    return h5py


# ---- layer configs ------------------------------------------------------------------------
def _bound_arguments(layer) -> dict:
    """The arguments of the outermost constructor call of `layer`, by parameter name."""
    recorded = getattr(layer, "_constructor_args", None)
    if recorded is None:
        return {}
    init, args, kwargs = recorded
    signature = inspect.signature(init)
    bound = signature.bind(layer, *args, **kwargs)
    out = {}
    for name, value in list(bound.arguments.items())[1:]:
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            names = getattr(type(layer), "_positional", None)
            if value and (names is None or len(names) < len(value)):
                raise NotImplementedError(
                    f"Layer {layer.name} ({type(layer).__name__}) was built with positional "
                    "arguments its class does not name: override get_config.")
            out.update(zip(names or (), value, strict=False))
        else:
            out[name] = value
    return out


def serialize_value(key: str, value):
    """A constructor argument as JSON-ready data (identifiers by the argument's name)."""
    from tensorflux.keras.engine.base_layer import Layer

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Layer):
        return serialize_layer(value)
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, dtypes.DType):
        return value.name
    if isinstance(value, (list, tuple)):
        return [serialize_value(key, v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: serialize_value(k, v) for k, v in value.items()}
    if key.endswith("initializer"):
        return initializers.serialize(value)
    if key.endswith("regularizer"):
        return regularizers.serialize(value)
    if key.endswith("constraint"):
        return constraints.serialize(value)
    if callable(value):
        return activations.serialize(value)
    raise TypeError(f"Cannot serialize the argument {key}={value!r} of a layer config")


def constructor_config(layer) -> dict:
    """The recorded constructor arguments of `layer` other than the base layer's."""
    own = _accepted(type(layer))
    return {k: serialize_value(k, v) for k, v in _bound_arguments(layer).items()
            if k not in _LAYER_KEYS or (k == "input_dim" and k in own)}


def _accepted(cls) -> set:
    names = set(getattr(cls, "_positional", ()))
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        init = inspect.unwrap(init)
        names.update(p.name for p in inspect.signature(init).parameters.values()
                     if p.kind not in (inspect.Parameter.VAR_KEYWORD,
                                       inspect.Parameter.VAR_POSITIONAL))
    return names


def deserialize_arguments(cls, config: dict, custom_objects=None) -> dict:
    """Constructor arguments of `cls` from a layer config (tensorflux's or tf_keras's):
    dtype policies as their dtype, identifier dicts and nested layers as objects."""
    out = dict(config)
    dtype = out.get("dtype")
    if isinstance(dtype, dict):  # a dtype policy
        out["dtype"] = dtype.get("config", {}).get("name", "float32")
    if out.get("dtype") in ("mixed_float16", "mixed_bfloat16"):
        raise ValueError(f"tensorflux.keras: the dtype policy {out['dtype']} is not supported")
    for key, value in config.items():
        if isinstance(value, dict) and "class_name" in value and key in (
                "layer", "backward_layer", "cell"):
            out[key] = deserialize_layer(value, custom_objects)
        elif isinstance(value, dict) and "class_name" in value:
            out[key] = _deserialize_identifier(key, value, custom_objects)
        elif isinstance(value, str) and custom_objects and value in custom_objects and (
                key.endswith(("activation", "initializer", "regularizer", "constraint"))):
            out[key] = custom_objects[value]
    return out


def _is_neutral(key, value) -> bool:
    if key in _ANY_VALUE or value is None:
        return True
    neutral = _NEUTRAL[key]
    if isinstance(value, (list, tuple)) and not isinstance(neutral, (list, tuple)):
        return all(v == neutral for v in value)
    return value == neutral


def construct(cls, kwargs: dict):
    """`cls(**kwargs)`, leaving out the tf_keras-only keys the class refuses while they
    hold their neutral value.

    Raises:
      ValueError: a tf_keras option this layer does not have, set to something else."""
    kwargs = dict(kwargs)
    while True:
        try:
            return cls(**kwargs)
        except TypeError as e:
            match = _REFUSED.search(str(e))
            key = next((g for g in match.groups() if g), None) if match else None
            if key is None or key not in kwargs:
                raise
            if key not in _NEUTRAL or not _is_neutral(key, kwargs[key]):
                raise ValueError(f"tensorflux.keras: {cls.__name__}({key}={kwargs[key]!r}) "
                                 "is not supported") from e
            del kwargs[key]


def _deserialize_identifier(key, value, custom_objects):
    value = {"class_name": value["class_name"], "config": value.get("config", {})}
    if key.endswith("initializer"):
        config = {k: v for k, v in value["config"].items() if k != "dtype"}
        return initializers.deserialize({"class_name": value["class_name"], "config": config},
                                        custom_objects)
    if key.endswith("regularizer"):
        return regularizers.deserialize(value, custom_objects)
    if key.endswith("constraint"):
        return constraints.deserialize(value, custom_objects)
    if key.endswith("activation"):
        return activations.deserialize(value["config"].get("name", value["class_name"]),
                                       custom_objects)
    return value


def serialize_layer(layer) -> dict:
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def _objects(custom_objects) -> dict:
    from tensorflux.keras import utils

    merged = dict(utils.get_custom_objects())
    merged.update(custom_objects or {})
    return merged


def _layer_class(class_name: str, custom_objects):
    from tensorflux.keras import layers, models

    cls = custom_objects.get(class_name) if custom_objects else None
    if cls is None:
        cls = getattr(layers, class_name, None) or (
            getattr(models, class_name, None) if class_name in (
                "Sequential", "Model", "Functional") else None)
    if class_name == "Functional":
        cls = models.Model
    if not isinstance(cls, type):
        raise ValueError(f"Unknown layer: {class_name}. Please ensure this object is passed "
                         "to the `custom_objects` argument.")
    return cls


def deserialize_layer(config: dict, custom_objects=None):
    """A layer (or model) from `{"class_name", "config"}`.

    Raises:
      ValueError: an unknown class name (give it in `custom_objects`)."""
    custom_objects = _objects(custom_objects)
    from tensorflux.keras.engine.network import Network

    cls = _layer_class(config["class_name"], custom_objects)
    inner = config.get("config", {})
    if issubclass(cls, Network):
        return model_from_config(config, custom_objects)
    from_config = cls.from_config
    params = inspect.signature(from_config).parameters
    if "custom_objects" in params:
        return from_config(inner, custom_objects=custom_objects)
    from tensorflux.keras.engine.base_layer import Layer

    if from_config.__func__ is Layer.from_config.__func__:
        return construct(cls, deserialize_arguments(cls, inner, custom_objects))
    return from_config(inner)


# ---- model configs ------------------------------------------------------------------------
def _model_nodes(model) -> dict:
    """id(node) -> the node's index among the nodes of its layer that are in `model`."""
    inside = {id(n) for n in model._nodes}
    index = {}
    for layer in {id(n.layer): n.layer for n in model._nodes}.values():
        k = 0
        for node in layer._inbound_nodes:
            if id(node) in inside:
                index[id(node)] = k
                k += 1
    return index


def _history_entry(tensor, node_index) -> list:
    layer, index, tensor_index = tensor._keras_history
    return [layer.name, node_index[id(layer._inbound_nodes[index])], tensor_index]


def model_config(model) -> dict:
    """`model.get_config()`: a Sequential model's layers, or a functional model's layers,
    nodes, inputs and outputs.

    Raises:
      NotImplementedError: a subclassed model (its graph is Python code, as in Keras)."""
    from tensorflux.framework.operation import Tensor
    from tensorflux.keras.engine.input_layer import InputLayer
    from tensorflux.keras.engine.sequential import Sequential

    if isinstance(model, Sequential):
        layers = []
        if model._is_graph_network:
            first = model.inputs[0]._keras_history[0]
            if isinstance(first, InputLayer):
                layers.append(serialize_layer(first))
        layers += [serialize_layer(layer) for layer in model.layers]
        return {"name": model.name, "layers": layers}
    if not model._is_graph_network:
        raise NotImplementedError("Subclassed models have no config: their graph is the "
                                  "code of `call`. Save their weights instead.")
    node_index = _model_nodes(model)
    layers = []
    for layer in model.layers:
        inbound = []
        if not isinstance(layer, InputLayer):
            for node in layer._inbound_nodes:
                if id(node) not in node_index:
                    continue
                kwargs = {k: v for k, v in node.kwargs.items() if k != "mask"}
                if any(isinstance(v, Tensor) for v in _leaves(kwargs)):
                    raise NotImplementedError(
                        f"tensorflux.keras: the call of layer {layer.name} passes tensors as "
                        f"keyword arguments ({sorted(kwargs)}); such a model has no config")
                kwargs = {k: serialize_value(k, v) for k, v in kwargs.items()}
                inbound.append([_history_entry(t, node_index) + [kwargs]
                                for t in node.inputs])
        layers.append({"name": layer.name, "class_name": type(layer).__name__,
                       "config": layer.get_config(), "inbound_nodes": inbound})
    return {"name": model.name, "layers": layers,
            "input_layers": [_history_entry(t, node_index) for t in model.inputs],
            "output_layers": [_history_entry(t, node_index) for t in model.outputs]}


def _leaves(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    else:
        yield value


def model_from_config(config: dict, custom_objects=None):
    """A new model (new weights) from `{"class_name", "config"}` or a bare model config.

    Raises:
      ValueError: an unknown layer class, or nodes whose inputs never become available."""
    from tensorflux.keras.engine.input_layer import InputLayer
    from tensorflux.keras.engine.sequential import Sequential
    from tensorflux.keras.engine.training import Model

    custom_objects = _objects(custom_objects)
    class_name = config.get("class_name", "Model" if "input_layers" in config
                            else "Sequential")
    inner = config.get("config", config)
    if isinstance(inner, list):  # Keras 1's Sequential: a bare layer list
        inner = {"layers": inner}
    if class_name == "Sequential":
        model = Sequential(name=inner.get("name"))
        for layer_config in inner["layers"]:
            model.add(deserialize_layer(layer_config, custom_objects))
        return model
    if class_name not in ("Model", "Functional"):
        cls = custom_objects.get(class_name)
        if cls is None:
            raise ValueError(f"Unknown model class: {class_name}")
        return cls.from_config(inner)
    created, outputs = {}, {}
    pending = []
    for layer_config in inner["layers"]:
        layer = deserialize_layer(layer_config, custom_objects)
        created[layer_config["name"]] = layer
        if isinstance(layer, InputLayer):
            outputs[(layer_config["name"], 0)] = layer._inbound_nodes[0].outputs
        for node_data in layer_config.get("inbound_nodes", []):
            pending.append((layer_config["name"], layer, _node_entries(node_data)))
    made = {name: 1 if isinstance(layer, InputLayer) else 0
            for name, layer in created.items()}
    while pending:
        progress, waiting = False, []
        for name, layer, entries in pending:
            if any((e[0], e[1]) not in outputs for e in entries) or \
                    any(w[0] == name for w in waiting):
                waiting.append((name, layer, entries))
                continue
            inputs = [outputs[(e[0], e[1])][e[2]] for e in entries]
            kwargs = dict(entries[0][3]) if len(entries[0]) > 3 and entries[0][3] else {}
            result = layer(inputs[0] if len(inputs) == 1 else inputs, **kwargs)
            outputs[(name, made[name])] = list(result) if isinstance(result, (list, tuple)) \
                else [result]
            made[name] += 1
            progress = True
        if not progress:
            raise ValueError("The model config's nodes cannot be connected: "
                             f"{[(n, [e[:3] for e in es]) for n, _, es in waiting]}")
        pending = waiting

    def tensors(spec):
        return [outputs[(e[0], e[1])][e[2]] for e in spec]

    ins, outs = tensors(inner["input_layers"]), tensors(inner["output_layers"])
    return Model(ins[0] if len(ins) == 1 else ins, outs[0] if len(outs) == 1 else outs,
                 name=inner.get("name"))


def _node_entries(node_data) -> list:
    if isinstance(node_data, dict):  # Keras 3's {"args": ..., "kwargs": ...}
        raise ValueError("tensorflux.keras: Keras 3 model configs are not supported")
    return [list(e) for e in node_data]


def model_to_json(model, **kwargs) -> str:
    return json.dumps({"class_name": _model_class_name(model),
                       "config": model.get_config(), "keras_version": KERAS_VERSION,
                       "backend": "tensorflow"}, default=_json_default, **kwargs)


def _model_class_name(model) -> str:
    from tensorflux.keras.engine.sequential import Sequential

    if isinstance(model, Sequential):
        return "Sequential"
    return "Functional" if type(model).__name__ == "Model" else type(model).__name__


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dtypes.DType):
        return value.name
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def model_from_json(json_string: str, custom_objects=None):
    return model_from_config(json.loads(json_string), custom_objects)


# ---- HDF5 ---------------------------------------------------------------------------------
def _layer_weights(layer) -> list:
    return list(layer.trainable_weights) + [w for w in layer.non_trainable_weights]


def _encode(names) -> np.ndarray:
    return np.array([n.encode("utf8") for n in names], dtype=object) if names else \
        np.zeros((0,), dtype="S1")


def _decode(values) -> list:
    return [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in values]


def save_weights_to_group(group, layers) -> None:
    from tensorflux.keras import backend as K

    group.attrs["layer_names"] = _encode([layer.name for layer in layers])
    group.attrs["backend"] = "tensorflow"
    group.attrs["keras_version"] = KERAS_VERSION
    for layer in layers:
        weights = _layer_weights(layer)
        values = K.batch_get_value(weights) if weights else []
        g = group.create_group(layer.name)
        g.attrs["weight_names"] = _encode([w.name for w in weights])
        for w, value in zip(weights, values, strict=True):
            g.create_dataset(w.name, data=np.asarray(value))


def _file_layers(group) -> list:
    """(name, [weight arrays]) of the layers with weights in a Keras weights group."""
    out = []
    for name in _decode(group.attrs["layer_names"]):
        g = group[name]
        names = _decode(g.attrs.get("weight_names", []))
        if names:
            out.append((name, [np.asarray(g[n]) for n in names]))
    return out


def load_weights_from_group(group, layers, by_name=False, skip_mismatch=False) -> None:
    """Sets `layers`' weights from a Keras weights group.

    Raises:
      ValueError: a different number of layers with weights (by order), a layer whose
        weight count or shapes differ (unless skip_mismatch, with by_name)."""
    from tensorflux.keras import backend as K

    stored = _file_layers(group)
    pairs = []
    if by_name:
        by = dict(stored)
        for layer in layers:
            values = by.get(layer.name)
            if values is None:
                continue
            weights = _layer_weights(layer)
            if len(values) != len(weights) or any(
                    tuple(w.shape.as_list()) != v.shape for w, v in zip(weights, values,
                                                                          strict=False)):
                if skip_mismatch:
                    continue
                raise ValueError(f"Layer #{layers.index(layer)} (named \"{layer.name}\") "
                                 f"expects {len(weights)} weight(s) of shapes "
                                 f"{[tuple(w.shape.as_list()) for w in weights]}, but the "
                                 f"saved weights have shapes {[v.shape for v in values]}.")
            pairs.extend(zip(weights, values, strict=True))
        K.batch_set_value(pairs)
        return
    with_weights = [layer for layer in layers if _layer_weights(layer)]
    if len(with_weights) != len(stored):
        raise ValueError(f"You are trying to load a weight file containing {len(stored)} "
                         f"layers into a model with {len(with_weights)} layers.")
    for k, (layer, (name, values)) in enumerate(zip(with_weights, stored, strict=True)):
        weights = _layer_weights(layer)
        if len(weights) != len(values):
            raise ValueError(f"Layer #{k} (named \"{layer.name}\" in the current model) was "
                             f"found to correspond to layer {name} in the save file. However "
                             f"the new layer {layer.name} expects {len(weights)} weights, but "
                             f"the saved weights have {len(values)} elements.")
        for w, v in zip(weights, values, strict=True):
            if tuple(w.shape.as_list()) != v.shape:
                raise ValueError(f"Shape mismatch in layer #{k} (named {layer.name}) for "
                                 f"weight {w.name}. Weight expects shape "
                                 f"{tuple(w.shape.as_list())}. Received saved weight with "
                                 f"shape {v.shape}")
            pairs.append((w, v))
    K.batch_set_value(pairs)


def save_weights_hdf5(model, filepath) -> None:
    h5py = _h5py()
    with h5py.File(str(filepath), "w") as f:
        save_weights_to_group(f, model.layers)


def load_weights_hdf5(model, filepath, by_name=False, skip_mismatch=False) -> None:
    h5py = _h5py()
    with h5py.File(str(filepath), "r") as f:
        group = f["model_weights"] if "layer_names" not in f.attrs and \
            "model_weights" in f else f
        load_weights_from_group(group, model.layers, by_name, skip_mismatch)


def _training_config(model):
    args = getattr(model, "_compile_args", None)
    if args is None or getattr(model, "optimizer", None) is None:
        return None
    loss, metrics, loss_weights = args

    from tensorflux.keras import losses

    def name(obj):
        if obj is None or isinstance(obj, (str, int, float)):
            return obj
        if isinstance(obj, losses.Loss):  # its options too (from_logits, ...)
            return {"class_name": type(obj).__name__,
                    "config": {**obj.get_config(), **getattr(obj, "_fn_kwargs", {})}}
        if isinstance(obj, (list, tuple)):
            return [name(o) for o in obj]
        if isinstance(obj, dict):
            return {k: name(v) for k, v in obj.items()}
        return getattr(obj, "__name__", None) or getattr(obj, "name", None) or \
            type(obj).__name__

    optimizer = model.optimizer
    if not hasattr(optimizer, "get_config"):
        return None
    return {"loss": name(loss), "metrics": name(metrics), "loss_weights": name(loss_weights),
            "sample_weight_mode": None, "weighted_metrics": None,
            "optimizer_config": {"class_name": type(optimizer).__name__,
                                 "config": optimizer.get_config()}}


def optimizer_state(model) -> list:
    """The optimizer's variables in a fixed order: the Keras iteration count and learning
    rate, the other non-slot variables by name (Adam's beta powers), then per trainable
    weight in the model's order its slots by slot name (none before the train op
    exists)."""
    opt = getattr(model, "optimizer", None)
    if opt is None or not hasattr(opt, "get_slot_names"):
        return []
    state = [v for v in (getattr(opt, "_iterations", None), getattr(opt, "_lr_var", None))
             if v is not None]
    non_slot = getattr(opt, "_non_slot_dict", {})
    state += sorted(non_slot.values(), key=lambda v: v.name)
    names = sorted(opt.get_slot_names())
    for weight in model.trainable_weights:
        state += [slot for slot in (opt.get_slot(weight, n) for n in names) if slot is not None]
    return state


def save_model(model, filepath, overwrite=True, include_optimizer=True) -> None:
    """The model's config, weights, compile arguments and (once it has trained) its
    optimizer's state (`optimizer_weights`, in `optimizer_state`'s order) in one HDF5 file
    (Keras's layout).

    Raises:
      NotImplementedError: a subclassed model (no config)."""
    del overwrite
    h5py = _h5py()
    config = model_to_json(model)
    training = _training_config(model) if include_optimizer else None
    with h5py.File(str(filepath), "w") as f:
        f.attrs["keras_version"] = KERAS_VERSION
        f.attrs["backend"] = "tensorflow"
        f.attrs["model_config"] = config
        if training is not None:
            f.attrs["training_config"] = json.dumps(training, default=_json_default)
        save_weights_to_group(f.create_group("model_weights"), model.layers)
        state = optimizer_state(model) if training is not None else []
        if state:
            from tensorflux.keras import backend as K

            group = f.create_group("optimizer_weights")
            group.attrs["weight_names"] = _encode([v.name for v in state])
            group.attrs[_VELOCITY_MARK] = True  # SGD's momentum slots hold Keras's velocity
            for v, value in zip(state, K.batch_get_value(state), strict=True):
                group.create_dataset(v.name, data=np.asarray(value))


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002
    """A model from an HDF5 file written by `save_model` (tensorflux's or tf_keras's):
    config, weights, and `compile` with the saved arguments when `compile`.

    Raises:
      ValueError: a file without a model config (a weights file), or one that does not
        fit the config.
      OSError: a file that is not HDF5."""
    h5py = _h5py()
    from tensorflux.keras import losses, optimizers

    custom_objects = _objects(custom_objects)
    with h5py.File(str(filepath), "r") as f:
        raw = f.attrs.get("model_config")
        if raw is None:
            raise ValueError(f"No model config found in the file at {filepath}: a weights "
                             "file? Use model.load_weights.")
        raw = raw.decode("utf8") if isinstance(raw, bytes) else raw
        model = model_from_config(json.loads(raw), custom_objects)
        load_weights_from_group(f["model_weights"], model.layers)
        training = f.attrs.get("training_config")
        saved_state, velocity = None, True
        if "optimizer_weights" in f:
            group = f["optimizer_weights"]
            saved_state = [np.asarray(group[n])
                           for n in _decode(group.attrs.get("weight_names", []))]
            velocity = bool(group.attrs.get(_VELOCITY_MARK, False))
    if compile and training is not None:
        training = json.loads(training.decode("utf8") if isinstance(training, bytes)
                              else training)
        opt = training["optimizer_config"]
        optimizer = optimizers.deserialize(opt, custom_objects)

        def resolve(obj):
            if isinstance(obj, str):
                return custom_objects.get(obj, obj)
            if isinstance(obj, list):
                return [resolve(o) for o in obj]
            if isinstance(obj, dict) and "class_name" in obj:  # a Loss object
                cls = custom_objects.get(obj["class_name"]) or getattr(
                    losses, obj["class_name"], None)
                if not isinstance(cls, type):
                    raise ValueError(f"Unknown loss: {obj['class_name']}. Please ensure "
                                     "this object is passed to the `custom_objects` "
                                     "argument.")
                return cls(**obj.get("config", {}))
            if isinstance(obj, dict):
                return {k: resolve(v) for k, v in obj.items()}
            return obj

        model.compile(optimizer=optimizer, loss=resolve(training["loss"]),
                      metrics=resolve(training.get("metrics")),
                      loss_weights=training.get("loss_weights"))
        if saved_state:
            _restore_optimizer_state(model, saved_state, filepath, velocity)
    return model


# Set on `optimizer_weights` by tensorflux versions whose Keras SGD keeps Keras's velocity
# in its "momentum" slots; earlier ones kept tf.train's accumulator there (accum = momentum
# accum + g; var -= lr accum), which loads as the velocity -lr * accum.
_VELOCITY_MARK = "tensorflux_sgd_velocity"


def _restore_optimizer_state(model, values, filepath, velocity=True) -> None:
    """Builds the train op (the slots) and sets the optimizer's variables; a state that
    does not fit (another optimizer's file, tf_keras's) is left out with a warning, as
    Keras does. `velocity` False: SGD's momentum slots hold tf.train's accumulators
    (`_VELOCITY_MARK`)."""
    from tensorflux.keras import backend as K
    from tensorflux.platform import tf_logging

    model._ensure_compiled()
    model._train_op()
    state = optimizer_state(model)
    if len(state) != len(values) or any(
            tuple(v.shape.as_list()) != np.shape(x) for v, x in zip(state, values,
                                                                     strict=False)):
        tf_logging.warning(
            "Error in loading the saved optimizer state from %s: %d saved values for %d "
            "variables of this optimizer (or other shapes). The model's optimizer starts "
            "from a fresh state.", filepath, len(values), len(state))
        return
    if not velocity:
        values = _accumulators_as_velocities(model.optimizer, state, values)
    K.batch_set_value(list(zip(state, values, strict=True)))


def _accumulators_as_velocities(optimizer, state, values) -> list:
    """`values` with an SGD's momentum slots turned from tf.train's accumulators into
    Keras's velocities (-lr * accum, lr the decayed rate of the next step)."""
    from tensorflux.keras import optimizers

    if not isinstance(optimizer, optimizers.SGD) or not optimizer.momentum_value:
        return values
    saved = dict(zip(map(id, state), values, strict=True))
    lr = float(saved[id(optimizer._lr_var)]) / (
        1.0 + optimizer.decay_value * float(saved[id(optimizer._iterations)]))
    slots = {id(s) for s in optimizer._slots.get("momentum", {}).values()}
    return [np.asarray(-lr * x, x.dtype) if id(v) in slots else x
            for v, x in zip(state, values, strict=True)]
