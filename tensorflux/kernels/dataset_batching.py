"""Batching datasets at run time: batch (with TensorFlow's map_and_batch fusion of a map
below it), padded_batch and unbatch. The iterator contract and the per-element error rules
are datasets.py's (its module docstring); a SparseTensor component arrives as a [3] variant
array per element and is stacked like any other (data/dataset_ops.py decodes the [N, 3]).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import datasets
from tensorflux.kernels.datasets import (
    Dataset,
    Iterator,
    MapDataset,
    _drain,
    _Failed,
    _failure,
    _GenIterator,
    resumable,
)


def _take_batch(it: Iterator, n: int, drop_remainder: bool, whole: bool = False) -> list | None:
    """The next `n` elements of `it` (fewer at its end; None when there are none, or too few
    with `drop_remainder`). An element's error is raised at once, the rows read dropped;
    with `whole`, only after reading the batch's other elements, which are dropped too
    (TensorFlow's map_and_batch fusion, on by default, fails a batch of a map that way)."""
    rows, failure = [], None
    while len(rows) < n:
        try:
            x = it.next()
        except Exception as e:  # noqa: BLE001 - the batch fails with the first error
            if not whole or not resumable(e):
                raise
            failure = failure or e
            x = []
        if x is None:
            break
        rows.append(x)
    if failure is not None:
        raise failure
    if not rows or (drop_remainder and len(rows) < n):
        return None
    return rows


class BatchDataset(Dataset):
    def __init__(self, input_ds: Dataset, batch_size: int, drop_remainder: bool):
        if batch_size <= 0:
            raise errors.InvalidArgumentError(None, None, "Batch size must be greater than "
                                              "zero.")
        self.input, self.batch_size, self.drop = input_ds, batch_size, drop_remainder

    def iterate(self, env):
        m = self.input
        if isinstance(m, MapDataset) and m.row_wise:
            return _MapAndBatchIterator(m.input.iterate(env), m.fn, m.captured,
                                        self.batch_size, self.drop)
        inner = self.input.iterate(env)
        whole = isinstance(m, MapDataset)

        def gen():
            while True:
                try:
                    rows = _take_batch(inner, self.batch_size, self.drop, whole)
                    if rows is None:
                        return
                    batch = [_stack(rows, i) for i in range(len(rows[0]))]
                except Exception as e:  # noqa: BLE001 - the rows gathered are dropped
                    yield _failure(e)
                    continue
                yield batch
        return _GenIterator(gen(), [inner])


class _MapAndBatchIterator(Iterator):
    """batch(map(f)) for a row-wise f, fused as TensorFlow's map_and_batch fusion (on by
    default there) does: each batch maps `size` input elements with one call and returns
    its stacked outputs as they are. A batch with an element whose function fails (or an
    input error) raises that error, its elements are dropped, and the next batch follows;
    a function ending the sequence (OutOfRangeError) ends it after the elements before."""

    def __init__(self, inner: Iterator, fn, captured, size: int, drop: bool):
        self._inner, self._fn, self._captured = inner, fn, captured
        self._size, self._drop = size, drop
        self._done = False

    def next(self):  # noqa: A003
        if self._done:
            return None
        chunk = []
        while len(chunk) < self._size:
            x = self._inner.next()  # an input error: raised, the next batch follows
            if x is None:
                self._done = True
                break
            chunk.append(x)
        if not chunk or (self._drop and len(chunk) < self._size):
            self._done = True
            return None
        stacked = datasets._call_rows(self._fn, chunk, self._captured, split=False) \
            if len(chunk) > 1 else None
        if stacked is not None:
            return stacked
        rows = []
        for y in datasets._call_chunk(self._fn, chunk, self._captured):
            if isinstance(y, _Failed):
                raise y.error
            if y is None:
                self._done = True
                break
            rows.append(y)
        if not rows or (self._drop and len(rows) < self._size):
            self._done = True
            return None
        return [_stack(rows, i) for i in range(len(rows[0]))]

    def children(self):
        return [self._inner]


def _stack(rows: list, i: int) -> np.ndarray:
    column = [r[i] for r in rows]
    try:
        return np.stack(column)
    except ValueError:  # say which element differs, as TensorFlow does
        pass
    first = np.shape(rows[0][i])
    for k, r in enumerate(rows):
        if np.shape(r[i]) != first:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot batch tensors with different shapes in component {i}. "
                f"First element had shape {list(first)} and element {k} had shape "
                f"{list(np.shape(r[i]))}.")
    return np.stack(column)


class PaddedBatchDataset(Dataset):
    def __init__(self, input_ds: Dataset, batch_size: int, padded_shapes: list,
                 padding_values: list, drop_remainder: bool):
        if batch_size <= 0:
            raise errors.InvalidArgumentError(None, None, "Batch size must be greater than "
                                              "zero.")
        self.input, self.batch_size, self.drop = input_ds, batch_size, drop_remainder
        self.padded_shapes = [[int(d) for d in np.reshape(s, -1)] for s in padded_shapes]
        self.padding_values = padding_values

    def iterate(self, env):
        m = self.input
        if isinstance(m, MapDataset) and m.row_wise:
            return _MapAndBatchIterator(m.input.iterate(env), m.fn, m.captured,
                                        self.batch_size, self.drop)
        inner = self.input.iterate(env)

        def gen():
            while True:
                try:
                    rows = _take_batch(inner, self.batch_size, self.drop)
                    if rows is None:
                        return
                    batch = [self._pad(rows, i) for i in range(len(rows[0]))]
                except Exception as e:  # noqa: BLE001 - the rows gathered are dropped
                    yield _failure(e)
                    continue
                yield batch
        return _GenIterator(gen(), [inner])

    def _pad(self, rows: list, i: int) -> np.ndarray:
        want = self.padded_shapes[i]
        shapes = [np.shape(r[i]) for r in rows]
        if any(len(s) != len(want) for s in shapes):
            raise errors.InvalidArgumentError(
                None, None, f"All elements in a batch must have the same rank as the padded "
                f"shape for component{i}: expected rank {len(want)} but got element with "
                f"rank {len(shapes[0])}")
        out_shape = []
        for d, w in enumerate(want):
            biggest = max(s[d] for s in shapes)
            if w >= 0 and biggest > w:
                raise errors.InvalidArgumentError(
                    None, None, "Attempted to pad to a smaller size than the input element.")
            out_shape.append(w if w >= 0 else biggest)
        fill = np.asarray(self.padding_values[i])
        dtype = np.asarray(rows[0][i]).dtype
        out = np.full([len(rows)] + out_shape, fill.reshape(()) if fill.size else 0,
                      dtype=dtype)
        for k, r in enumerate(rows):
            v = np.asarray(r[i])
            out[(k,) + tuple(slice(0, n) for n in v.shape)] = v
        return out


class UnbatchDataset(Dataset):
    def __init__(self, input_ds: Dataset):
        self.input = input_ds

    def iterate(self, env):
        inner = self.input.iterate(env)

        def gen():
            for x in _drain(inner):
                if isinstance(x, _Failed):
                    yield x
                    continue
                n = {np.shape(c)[0] if np.ndim(c) else None for c in x}
                if None in n or len(n) != 1:
                    yield _Failed(errors.InvalidArgumentError(
                        None, None, "Input element must have a non-scalar value in each "
                        "component and the same size in the 0th dimension."))
                    continue
                for j in range(n.pop()):
                    yield [np.asarray(c)[j, ...] for c in x]
        return _GenIterator(gen(), [inner])
