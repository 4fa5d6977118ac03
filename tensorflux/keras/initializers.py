"""`tf.keras.initializers`: TF1 Keras's initializers are `tf.initializers`' classes
(variables/init_ops.py), with Keras's defaults where they differ (random ones: stddev or
limit 0.05), plus `get`/`serialize`/`deserialize` by name."""

from __future__ import annotations

from tensorflux.variables import init_ops
from tensorflux.variables.init_ops import (  # noqa: F401 - re-exported
    Constant,
    GlorotNormal,
    GlorotUniform,
    Identity,
    Initializer,
    Ones,
    Orthogonal,
    VarianceScaling,
    Zeros,
    he_normal,
    he_uniform,
    lecun_normal,
    lecun_uniform,
)

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "Orthogonal", "Identity", "GlorotNormal",
           "GlorotUniform", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "zeros", "ones", "constant", "random_normal",
           "random_uniform", "truncated_normal", "orthogonal", "identity", "get",
           "serialize", "deserialize"]


class RandomNormal(init_ops.RandomNormal):
    """Normal values, Keras's defaults (mean 0, stddev 0.05)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=None):
        super().__init__(mean=mean, stddev=stddev, seed=seed,
                         **({"dtype": dtype} if dtype is not None else {}))


class RandomUniform(init_ops.RandomUniform):
    """Uniform values in [minval, maxval), Keras's defaults (-0.05, 0.05)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype=None):
        super().__init__(minval=minval, maxval=maxval, seed=seed,
                         **({"dtype": dtype} if dtype is not None else {}))


class TruncatedNormal(init_ops.TruncatedNormal):
    """Truncated normal values, Keras's defaults (mean 0, stddev 0.05)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=None):
        super().__init__(mean=mean, stddev=stddev, seed=seed,
                         **({"dtype": dtype} if dtype is not None else {}))


glorot_normal, glorot_uniform = GlorotNormal, GlorotUniform
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
orthogonal, identity = Orthogonal, Identity
normal, uniform = RandomNormal, RandomUniform

_BY_NAME = {
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "random_normal": RandomNormal, "normal": RandomNormal, "randomnormal": RandomNormal,
    "random_uniform": RandomUniform, "uniform": RandomUniform,
    "randomuniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "truncatednormal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "variancescaling": VarianceScaling, "orthogonal": Orthogonal, "identity": Identity,
    "glorot_normal": GlorotNormal, "glorotnormal": GlorotNormal,
    "glorot_uniform": GlorotUniform, "glorotuniform": GlorotUniform,
    "he_normal": he_normal, "he_uniform": he_uniform, "lecun_normal": lecun_normal,
    "lecun_uniform": lecun_uniform,
}


def _lookup(table, name, kind):
    try:
        return table[name.lower()]
    except KeyError:
        raise ValueError(f"Unknown {kind}: {name}. Please ensure this object is passed to "
                         "the `custom_objects` argument.") from None


def get(identifier):
    """An initializer from a name, a config dict, an instance or a callable (None stays
    None).

    Raises:
      ValueError: an unknown name or an identifier of another kind."""
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return _lookup(_BY_NAME, identifier, "initializer")()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier}")


def serialize(initializer) -> dict:
    """`{"class_name", "config"}`: the constructor's parameters the instance keeps (a
    GlorotUniform writes its seed, not the VarianceScaling settings it fixes)."""
    import inspect

    params = inspect.signature(type(initializer).__init__).parameters
    attrs = {k: v for k, v in vars(initializer).items() if not k.startswith("_")}
    config = {k: attrs[k] for k in params if k in attrs}
    if "dtype" in config:
        config["dtype"] = getattr(config["dtype"], "name", config["dtype"])
    return {"class_name": type(initializer).__name__, "config": config}


def deserialize(config, custom_objects=None):
    cls = (custom_objects or {}).get(config["class_name"]) or _lookup(
        _BY_NAME, config["class_name"], "initializer")
    return cls(**config.get("config", {}))
