"""tf.ragged.RaggedTensorValue: a RaggedTensor's value as NumPy arrays, what Session.run
returns for a fetched RaggedTensor and accepts as the feed of a ragged placeholder."""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes


class RaggedTensorValue:
    """A ragged value: `values` (an ndarray or a nested RaggedTensorValue) split into rows by
    the int64/int32 ndarray `row_splits`."""

    def __init__(self, values, row_splits):
        row_splits = np.asarray(row_splits)
        if row_splits.dtype not in (np.int32, np.int64):
            raise TypeError("row_splits must be a 1-D int32 or int64 numpy array")
        if not isinstance(values, (np.ndarray, RaggedTensorValue)):
            raise TypeError("values must be a numpy array or a RaggedTensorValue")
        self._values = values
        self._row_splits = row_splits

    values = property(lambda self: self._values)
    row_splits = property(lambda self: self._row_splits)
    row_splits_dtype = property(lambda self: dtypes.as_dtype(self._row_splits.dtype))

    @property
    def flat_values(self):
        v = self._values
        while isinstance(v, RaggedTensorValue):
            v = v.values
        return v

    @property
    def nested_row_splits(self) -> tuple:
        out = [self._row_splits]
        v = self._values
        while isinstance(v, RaggedTensorValue):
            out.append(v.row_splits)
            v = v.values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        return len(self.nested_row_splits)

    @property
    def dtype(self):
        return dtypes.as_dtype(self.flat_values.dtype)

    @property
    def shape(self):
        return tuple([len(self._row_splits) - 1] + [None] * self.ragged_rank
                     + list(self.flat_values.shape[1:]))

    def to_list(self) -> list:
        """The value as nested Python lists (scalars as Python numbers or bytes)."""
        if isinstance(self._values, RaggedTensorValue):
            items = self._values.to_list()
        else:
            items = self._values.tolist()
        s = self._row_splits.tolist()
        return [items[s[i]:s[i + 1]] for i in range(len(s) - 1)]

    def __str__(self) -> str:
        return f"<tf.RaggedTensorValue {self.to_list()}>"

    def __repr__(self) -> str:
        return (f"tf.RaggedTensorValue(values={self._values!r}, "
                f"row_splits={self._row_splits!r})")
