"""`tf.convert_to_tensor` and the registry of conversion functions.

Tensors pass through (checked against the requested dtype); objects of registered types
(Variables, IndexedSlices, lists holding tensors, ...) are converted by their functions; anything
else becomes a Const, through the function ops/constant_op.py registers for `object` last
(priority 200, as TensorFlow's constant_op does).
"""

from __future__ import annotations

from collections.abc import Callable

from tensorflux.framework import dtypes
from tensorflux.framework.operation import Tensor

# (priority, base_type, fn): lower priority first, registration order within one priority.
_registry: list[tuple[int, type | tuple, Callable]] = []
_cache: dict[type, list[Callable]] = {}


def register_tensor_conversion_function(base_type, conversion_func: Callable,
                                        priority: int = 100) -> None:
    """Registers `conversion_func(value, dtype=None, name=None, as_ref=False) -> Tensor`.

    It is tried for values that are instances of `base_type` (a type or tuple of types),
    lower `priority` first. It may return NotImplemented to let the next one try.
    """
    _registry.append((priority, base_type, conversion_func))
    _registry.sort(key=lambda r: r[0])
    _cache.clear()


def _functions_for(cls: type) -> list[Callable]:
    fns = _cache.get(cls)
    if fns is None:
        fns = [fn for _, base, fn in _registry if issubclass(cls, base)]
        _cache[cls] = fns
    return fns


def convert_to_tensor(value, dtype=None, name: str | None = None, as_ref: bool = False,
                      preferred_dtype=None, dtype_hint=None) -> Tensor:
    """Converts `value` to a Tensor (`tf.convert_to_tensor`).

    Args:
      value: a Tensor, a registered convertible object, or a Python/NumPy value.
      dtype: the required element type; a Tensor of another dtype is a ValueError.
      name: the name of a Const created for a Python value.
      as_ref: ask for a reference (kept for TF1 signature compatibility).
      preferred_dtype: tried first for Python values; falls back to inference if it fails.

    Raises:
      ValueError: a Tensor of another dtype than `dtype`.
      TypeError: a value that cannot be converted to `dtype`.
    """
    if type(value) is Tensor:
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
            if not dtype.is_compatible_with(value.dtype):
                raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor "
                                 f"with dtype {value.dtype.name}: {value!r}")
        return value
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    preferred_dtype = preferred_dtype or dtype_hint
    if dtype is None and preferred_dtype is not None:
        try:
            t = _convert(value, dtypes.as_dtype(preferred_dtype), name, as_ref)
        except (TypeError, ValueError):
            t = None
        if t is not None:
            return t
    return _convert(value, dtype, name, as_ref)


def _convert(value, dtype, name, as_ref) -> Tensor:
    if isinstance(value, Tensor):
        return convert_to_tensor(value, dtype)
    for fn in _functions_for(type(value)):
        ret = fn(value, dtype=dtype, name=name, as_ref=as_ref)
        if ret is NotImplemented:
            continue
        if not isinstance(ret, Tensor):
            raise RuntimeError(f"{fn} returned non-Tensor: {ret!r}")
        if dtype is not None and not dtype.is_compatible_with(ret.dtype):
            raise RuntimeError(f"{fn}: conversion to {dtype.name} returned {ret.dtype.name}")
        return ret
    raise TypeError(f"Cannot convert {value!r} to a Tensor: no conversion function is "
                    "registered (is tensorflux.ops imported?)")


def convert_n_to_tensor(values, dtype=None, name=None, preferred_dtype=None) -> list[Tensor]:
    return [convert_to_tensor(v, dtype, name=None if name is None else f"{name}_{i}",
                              preferred_dtype=preferred_dtype) for i, v in enumerate(values)]


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    if hasattr(value, "_is_indexed_slices"):
        return value
    return convert_to_tensor(value, dtype, name)


def is_tensor(x) -> bool:
    return isinstance(x, Tensor) or hasattr(x, "_is_indexed_slices") or \
        hasattr(x, "_is_sparse_tensor")
