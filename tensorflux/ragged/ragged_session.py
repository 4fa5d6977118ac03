"""How Session.run fetches a RaggedTensor (as a RaggedTensorValue of its flat values and
row splits) and feeds one (a RaggedTensorValue into the placeholders of
`tf.ragged.placeholder`), registered like SparseTensor's in session_run_conversions."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import session_run_conversions
from tensorflux.ragged.ragged_tensor import RaggedTensor
from tensorflux.ragged.ragged_tensor_value import RaggedTensorValue


def _fetch(rt: RaggedTensor):
    splits = list(rt.nested_row_splits)

    def rebuild(values):
        result = values[0]
        for s in reversed(values[1:]):
            result = RaggedTensorValue(result, s)
        return result

    return [rt.flat_values] + splits, rebuild


def _feed(rt: RaggedTensor, value):
    if not isinstance(value, RaggedTensorValue):
        raise TypeError(f"The value fed to a RaggedTensor must be a RaggedTensorValue, got "
                        f"{type(value).__name__}")
    if value.ragged_rank != rt.ragged_rank:
        raise ValueError(f"ragged_rank mismatch: fed a value of ragged_rank "
                         f"{value.ragged_rank} to a RaggedTensor of ragged_rank "
                         f"{rt.ragged_rank}")
    pairs = [(rt.flat_values, value.flat_values)]
    for t, v in zip(rt.nested_row_splits, value.nested_row_splits, strict=True):
        pairs.append((t, np.asarray(v, t.dtype.as_numpy_dtype)))
    return pairs


session_run_conversions.register_session_run_conversion_functions(RaggedTensor, _fetch, _feed)
