"""`tf.compat`: string and path helpers, the behaviour switches (switches.py), `tf.version`,
and `tf.compat.v1`, which is the top-level `tensorflux` module itself (so that
`import tensorflux.compat.v1 as tf` works); tensorflux/__init__.py installs that alias with
`_install_v1` once the namespace is complete.
"""

from __future__ import annotations

import numbers
import os
import sys

import numpy as np

from tensorflux.compat import switches, version  # noqa: F401
from tensorflux.framework.tensor_shape import dimension_at_index, dimension_value  # noqa: F401

bytes_or_text_types = (bytes, str)
integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)


def as_bytes(bytes_or_text, encoding: str = "utf-8") -> bytes:
    """`bytes_or_text` as bytes (text encoded with `encoding`).

    Raises:
      TypeError: neither bytes nor text."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding: str = "utf-8") -> str:
    """`bytes_or_text` as text (bytes decoded with `encoding`).

    Raises:
      TypeError: neither bytes nor text."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value, encoding: str = "utf-8") -> str:
    """`value` as text: bytes decoded, anything else through `str`."""
    return as_text(value, encoding) if isinstance(value, bytes) else str(value)


def path_to_str(path):
    """An `os.PathLike` as its string; anything else unchanged."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path


def forward_compatible(year: int, month: int, day: int) -> bool:
    """Whether the forward-compatibility horizon is past the date: tensorflux's ops are
    those of TensorFlow 2.21, so dates up to its release are."""
    return (year, month, day) < (2026, 1, 1)


def _install_v1(module) -> None:
    """Makes `module` (the top-level namespace) importable as tensorflux.compat.v1."""
    this = sys.modules[__name__]
    this.v1 = module
    sys.modules[__name__ + ".v1"] = module
