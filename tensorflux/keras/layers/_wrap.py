"""Keras layer classes made from `tf.layers` classes: Keras's identifiers and defaults on
top of the TF1 layer's graph code."""

from __future__ import annotations

from tensorflux.keras.engine.base_layer import Layer, resolve_identifiers


def keras_class(tf_cls, name, positional, defaults=None, doc=None, supports_masking=False):
    """A Keras layer class `name` running `tf_cls`: positional arguments are bound to the
    names in `positional`, `defaults` fill what the caller leaves out, string identifiers
    become objects; `supports_masking` passes input masks through (Keras's flag).

    Raises (from the class):
      TypeError: too many positional arguments or an unknown keyword."""

    def __init__(self, *args, **kwargs):
        if len(args) > len(positional):
            raise TypeError(f"{name}() takes at most {len(positional)} positional "
                            f"arguments ({len(args)} given)")
        for key, value in zip(positional, args, strict=False):
            if key in kwargs:
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
            kwargs[key] = value
        merged = dict(defaults or {})
        merged.update(kwargs)
        rest = self._keras_kwargs({k: merged.pop(k) for k in list(merged)
                                   if k in ("input_shape", "input_dim", "batch_input_shape",
                                            "batch_size", "weights", "autocast",
                                            "dynamic")})
        merged.update(rest)
        tf_cls.__init__(self, **resolve_identifiers(merged))

    return type(name, (Layer, tf_cls), {"__init__": __init__, "_positional": tuple(positional),
                                        "__doc__": doc or tf_cls.__doc__,
                                        "supports_masking": supports_masking,
                                        "__module__": "tensorflux.keras.layers"})
