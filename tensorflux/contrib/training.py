"""`tf.contrib.training`: `HParams`, the hyperparameter container of TF1 models (GPT-2,
tensorflow/nmt, tensor2tensor); `create_train_op`/`train` (contrib/training_train.py) and
`evaluate_once`/`evaluate_repeatedly` with their hooks (contrib/training_eval.py).
(contrib.training's queue-based input helpers are not provided: tf.data covers them.)

HParams keeps each hyperparameter's type from its first value and casts later values to it
only where that loses nothing (an int may become a float, never the reverse; no number
becomes a bool or a string); `parse("lr=0.1,layers=[2,3],name=x")` reads TF1's command-line
form, `to_json`/`parse_json` the JSON form.
"""

from __future__ import annotations

import json
import numbers
import re

from tensorflux.contrib.training_eval import *  # noqa: F401,F403 - evaluate_once, hooks
from tensorflux.contrib.training_train import *  # noqa: F401,F403 - create_train_op, train

__all__ = ["HParams", "parse_values"]

# name, an optional [index], '=', then one value or a bracketed list; comma separated
_ASSIGNMENT = re.compile(
    r"(?P<name>[a-zA-Z][\w\.]*)(\[\s*(?P<index>\d+)\s*\])?\s*=\s*"
    r"((?P<val>[^,\[]*)|\[(?P<vals>[^\]]*)\])($|,\s*)")


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ValueError(f"Could not parse bool, {text!r}")


def _parser(param_type):
    if param_type is bool:
        return _parse_bool
    if param_type in (int, float, str):
        return param_type
    raise ValueError(f"Unsupported hyperparameter type {param_type.__name__}")


def parse_values(values: str, type_map: dict, ignore_unknown: bool = False) -> dict:
    """`name=value,name=[v1,v2],name[i]=value` -> {name: value, name: [values],
    name: {i: value}}, each value read as `type_map[name]` (bool, int, float or str).

    Raises:
      ValueError: a malformed assignment, an unknown name (unless `ignore_unknown`), a value
        that does not parse as its type, or two assignments to one name.
    """
    results: dict = {}
    pos = 0
    while pos < len(values):
        m = _ASSIGNMENT.match(values, pos)
        if not m:
            raise ValueError(f"Malformed hyperparameter value: {values[pos:]!r}")
        pos = m.end()
        name = m.group("name")
        if name not in type_map:
            if ignore_unknown:
                continue
            raise ValueError(f"Unknown hyperparameter type for {name}")
        parse = _parser(type_map[name])

        def read(text, name=name, parse=parse):
            try:
                return parse(text.strip() if parse is not str else text)
            except ValueError:
                raise ValueError(f"Could not parse hparam {name!r} of type "
                                 f"{type_map[name].__name__!r} with value {text!r} in "
                                 f"{values!r}") from None

        index = m.group("index")
        if index is not None:
            if m.group("vals") is not None:
                raise ValueError(f"Malformed hyperparameter value: {m.group(0)!r} (a list "
                                 "cannot be assigned to one element)")
            slot = results.setdefault(name, {})
            if not isinstance(slot, dict) or int(index) in slot:
                raise ValueError(f"Multiple assignments to variable {name!r} in {values}")
            slot[int(index)] = read(m.group("val"))
            continue
        if name in results:
            raise ValueError(f"Multiple assignments to variable {name!r} in {values}")
        if m.group("vals") is not None:
            items = m.group("vals").split(",") if m.group("vals").strip() else []
            results[name] = [read(v) for v in items]
        else:
            results[name] = read(m.group("val"))
    return results


def _cast(name: str, param_type, value):
    """`value` as `param_type` where that loses nothing, else ValueError."""
    fail = f"Could not cast hparam {name!r} of type {param_type!r} from value {value!r}"
    if param_type is type(None) or value is None:
        return value
    if issubclass(param_type, (str, bytes)) != isinstance(value, (str, bytes)):
        raise ValueError(fail)
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise ValueError(fail)
    return param_type(value)


class HParams:
    """Named hyperparameters, each an attribute (`hparams.learning_rate`).

    Args:
      hparam_def: not supported (a serialized HParamDef proto); must be None.
      model_structure: any object, kept for `get_model_structure`.
      **kwargs: the hyperparameters and their initial values (a list value makes a
        multi-valued hyperparameter of its first element's type).
    """

    _RESERVED = ("add_hparam", "set_hparam", "del_hparam", "parse", "override_from_dict",
                 "values", "get", "to_json", "parse_json", "set_from_map",
                 "set_model_structure", "get_model_structure")

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        if hparam_def is not None:
            raise ValueError("HParams from an HParamDef proto are not supported; pass the "
                             "values as keyword arguments")
        self._hparam_types: dict = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name: str, value) -> None:
        """Adds hyperparameter `name` (ValueError if it exists or is a method's name)."""
        if name in self._hparam_types or name in self._RESERVED or \
                getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"Multi-valued hyperparameters cannot be empty: {name}")
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name: str, value) -> None:
        """Sets `name` to `value` cast to its type (KeyError if unknown; ValueError if the
        cast would lose information, or a list is given for one value or the reverse)."""
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, dict) and is_list:  # name[i]=v assignments
            current = list(getattr(self, name))
            for index, item in value.items():
                if index >= len(current):
                    raise ValueError(f"Index {index} out of range for hyperparameter {name} "
                                     f"of length {len(current)}")
                current[index] = _cast(name, param_type, item)
            setattr(self, name, current)
        elif isinstance(value, (list, tuple)):
            if not is_list:
                raise ValueError(f"Must not pass a list for single-valued parameter: {name}")
            setattr(self, name, [_cast(name, param_type, v) for v in value])
        else:
            if is_list:
                raise ValueError(f"Must pass a list for multi-valued parameter: {name}.")
            setattr(self, name, _cast(name, param_type, value))

    def del_hparam(self, name: str) -> None:
        if name in self._hparam_types:
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values: str) -> HParams:
        """Overrides from a `name=value,...` string; returns self."""
        types = {name: t for name, (t, _) in self._hparam_types.items()}
        return self.override_from_dict(parse_values(values, types))

    def override_from_dict(self, values_dict) -> HParams:
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    set_from_map = override_from_dict

    def set_model_structure(self, model_structure) -> None:
        self._model_structure = model_structure

    def get_model_structure(self):
        return self._model_structure

    def to_json(self, indent=None, separators=None, sort_keys=False) -> str:
        return json.dumps(self.values(), indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def parse_json(self, values_json: str) -> HParams:
        return self.override_from_dict(json.loads(values_json))

    def values(self) -> dict:
        return {name: getattr(self, name) for name in self._hparam_types}

    def get(self, key, default=None):
        """The value of `key`, else `default` (ValueError if `default`'s type does not fit
        the hyperparameter's)."""
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            shown = f"list<{param_type.__name__}>" if is_list else param_type.__name__
            fail = (f"Hparam '{key}' of type '{shown}' is incompatible with default="
                    f"{default!r}")
            if is_list != isinstance(default, (list, tuple)):
                raise ValueError(fail)
            try:
                for item in (default if is_list else [default]):
                    _cast(key, param_type, item)
            except ValueError:
                raise ValueError(fail) from None
        return getattr(self, key)

    def __contains__(self, key) -> bool:
        return key in self._hparam_types

    def __str__(self) -> str:
        return str(sorted(self.values().items()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"
