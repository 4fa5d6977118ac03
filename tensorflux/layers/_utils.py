"""Argument normalization and output-length arithmetic shared by the conv and pool layers
(TF1's conv_utils)."""

from __future__ import annotations

import numpy as np


def normalize_tuple(value, n: int, name: str) -> tuple:
    """An int or n ints as a tuple of n ints.

    Raises:
      ValueError: anything else."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    try:
        values = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value}") from None
    if len(values) != n:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value}")
    return values


def normalize_padding(value) -> str:
    """"valid" or "same".

    Raises:
      ValueError: anything else."""
    padding = str(value).lower()
    if padding not in ("valid", "same"):
        raise ValueError("The `padding` argument must be one of \"valid\", \"same\". "
                         f"Received: {value}")
    return padding


def conv_output_length(length, k, padding, stride, dilation=1):
    """The output length of a convolution or pool along one axis (None when unknown)."""
    if length is None:
        return None
    eff = (k - 1) * dilation + 1
    out = length - eff + 1 if padding == "valid" else length
    return (out + stride - 1) // stride


def deconv_output_length(length, k, padding, stride, dilation=1):
    """The output length of a transposed convolution along one axis (None when unknown)."""
    if length is None:
        return None
    eff = (k - 1) * dilation + 1
    if padding == "valid":
        return length * stride + max(eff - stride, 0)
    return length * stride
