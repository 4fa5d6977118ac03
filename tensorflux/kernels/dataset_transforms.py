"""More dataset transformations at run time: shard, scan, window, unique, ignore_errors,
take_while, group_by_window, directed interleave (choose_from_datasets), random,
assert_cardinality and dense_to_sparse_batch; and `cardinality`, TensorFlow's count of a
dataset's elements where it is known without reading them.

The iterator contract and the per-element error rules are datasets.py's (its module
docstring). A window or a group is handed to functions and iterators as an
`ElementsDataset` over the elements it gathered (TensorFlow's nested datasets).
"""

from __future__ import annotations

import os

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import dataset_batching, dataset_files
from tensorflux.kernels import datasets as ds
from tensorflux.kernels.datasets import (
    Dataset,
    Iterator,
    _call,
    _drain,
    _Failed,
    _failure,
    _GenIterator,
    _pull,
    as_dataset,
    resumable,
)
from tensorflux.lib import philox

INFINITE = -1
UNKNOWN = -2


class ElementsDataset(Dataset):
    """A dataset over elements already produced (a window, a group)."""

    def __init__(self, elements: list):
        self.elements = elements

    def iterate(self, env):
        return _GenIterator(iter(self.elements))


# ---- selection ------------------------------------------------------------------------------

class ShardDataset(Dataset):
    """Every `num_shards`-th element, starting at `index`."""

    def __init__(self, input_ds: Dataset, num_shards: int, index: int):
        if num_shards <= 0:
            raise errors.InvalidArgumentError(
                None, None, f"Number of shards must be greater than zero (currently "
                f"num_shards = {num_shards}).")
        if not 0 <= index < num_shards:
            raise errors.InvalidArgumentError(
                None, None, f"Index must be between 0 and {num_shards - 1} (currently "
                f"index = {index}).")
        self.input, self.num_shards, self.index = input_ds, num_shards, index

    def iterate(self, env):
        inner = self.input.iterate(env)

        def gen():
            i = 0
            for x in _drain(inner):
                if i % self.num_shards == self.index:
                    yield x
                i += 1
        return _GenIterator(gen(), [inner])


class UniqueDataset(Dataset):
    """The elements (one component of int32, int64 or string) not seen before, in the
    order they first came."""

    def __init__(self, input_ds: Dataset):
        self.input = input_ds

    def iterate(self, env):
        inner = self.input.iterate(env)

        def gen():
            seen = set()
            for x in _drain(inner):
                if isinstance(x, _Failed):
                    yield x
                    continue
                v = np.asarray(x[0])
                key = (v.shape, v.tobytes()) if v.dtype != object else \
                    (v.shape, tuple(v.reshape(-1).tolist()))
                if key not in seen:
                    seen.add(key)
                    yield x
        return _GenIterator(gen(), [inner])


class IgnoreErrorsDataset(Dataset):
    """The input's elements, those that failed left out (TensorFlow's ignore_errors)."""

    def __init__(self, input_ds: Dataset):
        self.input = input_ds

    def iterate(self, env):
        inner = self.input.iterate(env)

        def gen():
            while True:
                try:
                    x = inner.next()
                except Exception as e:  # noqa: BLE001 - a failed element is skipped
                    if not resumable(e):
                        raise
                    continue
                if x is None:
                    return
                yield x
        return _GenIterator(gen(), [inner])


class TakeWhileDataset(ds.FilterDataset):
    """The elements up to the first for which `predicate` is False."""

    stop_on_false = True


class ScanDataset(Dataset):
    """`f(state..., element..., captured...) -> (new state..., output...)` over the
    elements; `n_state` leading results are the state."""

    def __init__(self, input_ds: Dataset, fn, initial_state: list, captured: list):
        self.input, self.fn = input_ds, fn
        self.initial_state, self.captured = initial_state, captured

    def iterate(self, env):
        inner = self.input.iterate(env)
        n = len(self.initial_state)

        def gen():
            state = list(self.initial_state)
            for x in _drain(inner):
                if isinstance(x, _Failed):
                    yield x
                    continue
                try:
                    out = _call(self.fn, state + list(x), self.captured)
                except Exception as e:  # noqa: BLE001 - this element's error
                    yield _failure(e)
                    continue
                if out is None:
                    return
                state = list(out[:n])
                yield list(out[n:])
        return _GenIterator(gen(), [inner])


class DirectedInterleaveDataset(Dataset):
    """The next element of `inputs[i]` for each `i` the selector gives. An empty input
    ends the sequence when `stop_on_empty`, else its turns are skipped; the sequence also
    ends when the selector or every input has ended."""

    def __init__(self, selector: Dataset, inputs: list[Dataset], stop_on_empty: bool):
        self.selector, self.inputs, self.stop_on_empty = selector, inputs, stop_on_empty

    def iterate(self, env):
        sel = self.selector.iterate(env)
        its: list[Iterator | None] = [d.iterate(env) for d in self.inputs]

        def gen():
            while any(it is not None for it in its):
                s = yield from _pull(sel)
                if s is None:
                    return
                i = int(np.asarray(s[0]))
                if not 0 <= i < len(its):
                    yield _Failed(errors.InvalidArgumentError(
                        None, None, f"Selector index out of range: {i} >= {len(its)}"))
                    continue
                it = its[i]
                if it is None:
                    continue
                x = yield from _pull(it)
                if x is None:
                    it.close()
                    its[i] = None
                    if self.stop_on_empty:
                        return
                    continue
                yield x
        it = _GenIterator(gen(), [sel])
        it.children = lambda: [sel] + [x for x in its if x is not None]
        return it


class RandomDataset(Dataset):
    """Endless pseudo-random int64 scalars: TF's values, the 32-bit words of
    PhiloxRandom(seed, seed2) one after another (each iteration starts over); (0, 0)
    seeds a fresh stream from the OS, as TF does."""

    def __init__(self, seed: int, seed2: int):
        if seed == 0 and seed2 == 0:
            seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
        self.seeds = (seed, seed2)

    def saved_inputs(self, inputs: list) -> list:
        return [ds.int64_seed(s) for s in self.seeds]

    def iterate(self, env):
        words = philox.single_words(*self.seeds)

        def gen():
            for w in words:
                yield [np.asarray(w, np.int64)]
        return _GenIterator(gen())


class AssertCardinalityDataset(Dataset):
    """The input's elements, failing when there are more or fewer than `expected`."""

    def __init__(self, input_ds: Dataset, expected: int):
        self.input, self.expected = input_ds, expected

    def iterate(self, env):
        inner = self.input.iterate(env)
        want = self.expected

        def describe(n: int) -> str:
            return "infinite" if n == INFINITE else str(n)

        def gen():
            n = 0
            for x in _drain(inner):
                if not isinstance(x, _Failed):
                    n += 1
                    if want != INFINITE and n > want:
                        raise errors.FailedPreconditionError(
                            None, None, f"Input dataset was expected to contain "
                            f"{describe(want)} elements but contained at least {n} "
                            "elements.")
                yield x
            if n != want:
                raise errors.FailedPreconditionError(
                    None, None, f"Input dataset was expected to contain {describe(want)} "
                    f"elements but contained only {n} elements.")
        return _GenIterator(gen(), [inner])


class SqlDataset(Dataset):
    """The rows of an SQL query on a SQLite database, each column converted to its output
    type (TensorFlow's SqlDataset; "sqlite" is its one driver)."""

    def __init__(self, driver: str, source: str, query: str, types: list):
        if driver != "sqlite":
            raise errors.InvalidArgumentError(
                None, None, f"The database type, {driver}, is not supported by SqlDataset. "
                "The set of supported databases is: {'sqlite'}.")
        self.source, self.query, self.types = source, query, types

    def iterate(self, env):
        import sqlite3

        def gen():
            try:
                conn = sqlite3.connect(f"file:{self.source}?mode=ro", uri=True)
            except sqlite3.Error as e:
                raise errors.InvalidArgumentError(None, None, f"Failed to open database "
                                                  f"{self.source}: {e}") from None
            try:
                cursor = conn.execute(self.query)
                if cursor.description is None or \
                        len(cursor.description) != len(self.types):
                    n = 0 if cursor.description is None else len(cursor.description)
                    raise errors.InvalidArgumentError(
                        None, None, f"The number of columns in query ({n}) must match the "
                        f"number of elements in output_types ({len(self.types)}).")
                for row in cursor:
                    yield [_sql_value(v, t) for v, t in zip(row, self.types, strict=True)]
            except sqlite3.Error as e:
                raise errors.InvalidArgumentError(None, None, f"SQLite error: {e}") from None
            finally:
                conn.close()
        return _GenIterator(gen())


def _sql_value(v, dtype) -> np.ndarray:
    if dtype is object:
        return np.asarray(v if isinstance(v, bytes) else str(v).encode(), dtype=object)
    try:
        return np.asarray(v, dtype=dtype)
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, None, f"Cannot convert column value {v!r} to {np.dtype(dtype).name}.") \
            from None


# ---- windows and groups -----------------------------------------------------------------------

class WindowDataset(Dataset):
    """Windows of `size` elements (every `stride`-th), one starting every `shift`
    elements; each element of the output holds one nested dataset per component."""

    def __init__(self, input_ds: Dataset, size: int, shift: int, stride: int, drop: bool):
        for name, v in (("Window size", size), ("Window shift", shift),
                        ("Window stride", stride)):
            if v <= 0:
                raise errors.InvalidArgumentError(None, None,
                                                  f"{name} must be greater than zero.")
        self.input, self.size, self.shift, self.stride = input_ds, size, shift, stride
        self.drop = drop

    def iterate(self, env):
        inner = self.input.iterate(env)
        span = (self.size - 1) * self.stride + 1

        def gen():
            buf: list = []  # the elements from the current window's start on
            ended = False
            while True:
                while not ended and len(buf) < span:
                    x = yield from _pull(inner)
                    if x is None:
                        ended = True
                    else:
                        buf.append(x)
                rows = buf[:span:self.stride]
                if not rows or (self.drop and len(rows) < self.size):
                    return
                yield [_variant(ElementsDataset([[r[i]] for r in rows]))
                       for i in range(len(rows[0]))]
                if ended and len(buf) <= self.shift:
                    return
                skip = self.shift - len(buf)
                del buf[:self.shift]
                while skip > 0 and not ended:  # a shift beyond the buffered elements
                    x = yield from _pull(inner)
                    if x is None:
                        ended = True
                    skip -= 1
        return _GenIterator(gen(), [inner])


def _variant(dataset: Dataset) -> np.ndarray:
    """`dataset` as a scalar variant value."""
    out = np.empty((), dtype=object)
    out[()] = dataset
    return out


class GroupByWindowDataset(Dataset):
    """Elements grouped by `key_fn`; a group of `window_size_fn(key)` elements, and every
    group left at the end (by ascending key), is given to `reduce_fn(key, group)`, whose
    dataset's elements are the output."""

    def __init__(self, input_ds: Dataset, key_fn, reduce_fn, size_fn, key_args: list,
                 reduce_args: list, size_args: list):
        self.input = input_ds
        self.key, self.reduce, self.size = (key_fn, key_args), (reduce_fn, reduce_args), \
            (size_fn, size_args)

    def _scalar(self, fn_args, args: list, what: str) -> np.ndarray:
        out = _call(fn_args[0], args, fn_args[1])
        v = np.asarray(out[0])
        if v.shape != () or v.dtype != np.int64:
            raise errors.InvalidArgumentError(
                None, None, f"`{what}` must return a scalar int64, got {v.dtype} of shape "
                f"{v.shape}.")
        return v

    def iterate(self, env):
        inner = self.input.iterate(env)
        current: list[Iterator] = []

        def emit(key: np.ndarray, rows: list):
            out = _call(self.reduce[0], [key, _variant(ElementsDataset(rows))],
                        self.reduce[1])
            if out is None:
                return
            sub = as_dataset(out[0]).iterate(env)
            current[:] = [sub]
            yield from _drain(sub)
            sub.close()

        def gen():
            groups: dict[int, list] = {}
            sizes: dict[int, int] = {}
            for x in _drain(inner):
                if isinstance(x, _Failed):
                    yield x
                    continue
                try:
                    key = self._scalar(self.key, x, "key_func")
                    k = int(key)
                    if k not in sizes:
                        size = int(self._scalar(self.size, [key], "window_size_func"))
                        if size <= 0:
                            raise errors.InvalidArgumentError(
                                None, None, f"Window size must be greater than zero, "
                                f"but got {size}.")
                        sizes[k] = size
                except Exception as e:  # noqa: BLE001 - this element's error
                    yield _failure(e)
                    continue
                group = groups.setdefault(k, [])
                group.append(x)
                if len(group) == sizes[k]:
                    del groups[k]
                    yield from emit(key, group)
            for k in sorted(groups):
                yield from emit(np.asarray(k, dtype=np.int64), groups[k])
        it = _GenIterator(gen(), [inner])
        it.children = lambda: [inner] + current
        return it


class DenseToSparseBatchDataset(Dataset):
    """Batches of `batch_size` elements (one component) as one SparseTensor of dense
    shape [batch, *row_shape] holding each element's values at the top-left (TensorFlow's
    dense_to_sparse_batch; a row_shape dimension of -1 takes the batch's largest)."""

    def __init__(self, input_ds: Dataset, batch_size: int, row_shape: list[int]):
        if batch_size <= 0:
            raise errors.InvalidArgumentError(None, None, "Batch size must be greater than "
                                              "zero.")
        self.input, self.batch_size, self.row_shape = input_ds, batch_size, row_shape

    def iterate(self, env):
        inner = self.input.iterate(env)

        def gen():
            while True:
                try:
                    rows = dataset_batching._take_batch(inner, self.batch_size, False)
                    if rows is None:
                        return
                    batch = [self._sparse([np.asarray(r[0]) for r in rows])]
                except Exception as e:  # noqa: BLE001 - the rows gathered are dropped
                    yield _failure(e)
                    continue
                yield batch
        return _GenIterator(gen(), [inner])

    def _sparse(self, rows: list[np.ndarray]) -> np.ndarray:
        rank = len(self.row_shape)
        shape = list(self.row_shape)
        for r in rows:
            if r.ndim != rank:
                raise errors.InvalidArgumentError(
                    None, None, f"Input element had shape {list(r.shape)} that is "
                    f"incompatible with the row shape {self.row_shape}.")
            for d, (n, want) in enumerate(zip(r.shape, self.row_shape, strict=True)):
                if want == -1:
                    shape[d] = max(shape[d], n) if shape[d] != -1 else n
                elif n > want:
                    raise errors.InvalidArgumentError(
                        None, None, f"Input element had shape {list(r.shape)} that is "
                        f"incompatible with the row shape {self.row_shape}.")
        shape = [0 if s == -1 else s for s in shape]
        idx = [np.concatenate([np.full((r.size, 1), i, np.int64),
                               np.argwhere(np.ones(r.shape, bool)).astype(np.int64)], 1)
               for i, r in enumerate(rows)]
        indices = np.concatenate(idx) if idx else np.zeros((0, rank + 1), np.int64)
        values = np.concatenate([r.reshape(-1) for r in rows])
        out = np.empty(3, dtype=object)
        out[:] = [indices, values, np.asarray([len(rows)] + shape, np.int64)]
        return out


# ---- cardinality --------------------------------------------------------------------------------

def cardinality(d: Dataset) -> int:
    """The number of elements of `d`, INFINITE, or UNKNOWN (TensorFlow's rules: what
    filters, maps of TF1's Dataset.map, flat maps and files produce is unknown)."""
    if isinstance(d, ds.TensorSliceDataset):
        return d.n
    if isinstance(d, ds.TensorDataset):
        return 1
    if isinstance(d, ds.RangeDataset):
        return len(range(*d.args))
    if isinstance(d, RandomDataset):
        return INFINITE
    if isinstance(d, ds.ZipDataset):
        counts = [cardinality(x) for x in d.inputs]
        if UNKNOWN in counts:
            return UNKNOWN
        finite = [n for n in counts if n != INFINITE]
        return min(finite) if finite else INFINITE
    if isinstance(d, ds.ConcatenateDataset):
        a, b = cardinality(d.first), cardinality(d.second)
        if INFINITE in (a, b):
            return INFINITE
        return UNKNOWN if UNKNOWN in (a, b) else a + b
    if isinstance(d, AssertCardinalityDataset):
        return d.expected
    passes = (ds.ShuffleDataset, ds.PrefetchDataset, ds.CacheDataset, ScanDataset,
              dataset_files.FileCacheDataset)
    if isinstance(d, passes):
        return cardinality(d.input)
    rules = ((ds.RepeatDataset, _repeat), (ds.TakeDataset, _take), (ds.SkipDataset, _skip),
             ((dataset_batching.BatchDataset, dataset_batching.PaddedBatchDataset), _batch),
             (WindowDataset, _window), (ShardDataset, _shard))
    for kind, rule in rules:
        if isinstance(d, kind):
            n = cardinality(d.input)
            return rule(d, n)
    return UNKNOWN


def _repeat(d, n: int) -> int:
    if n in (INFINITE, UNKNOWN):
        return n
    if d.count < 0:
        return 0 if n == 0 else INFINITE
    return n * d.count


def _take(d, n: int) -> int:
    if n == UNKNOWN:
        return UNKNOWN
    if d.count < 0:
        return n
    return d.count if n == INFINITE else min(n, d.count)


def _skip(d, n: int) -> int:
    if n in (INFINITE, UNKNOWN):
        return n
    return 0 if d.count < 0 else max(0, n - d.count)


def _batch(d, n: int) -> int:
    if n in (INFINITE, UNKNOWN):
        return n
    return n // d.batch_size if d.drop else -(-n // d.batch_size)


def _window(d, n: int) -> int:
    if n in (INFINITE, UNKNOWN):
        return n
    if d.drop:
        rest = n - ((d.size - 1) * d.stride + 1)
        return rest // d.shift + 1 if rest >= 0 else 0
    return -(-n // d.shift)


def _shard(d, n: int) -> int:
    if n in (INFINITE, UNKNOWN):
        return n
    return n // d.num_shards + (1 if d.index < n % d.num_shards else 0)
