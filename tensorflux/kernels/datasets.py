"""Datasets and iterators at run time: what the `variant` tensors of dataset ops hold.

A dataset op's kernel (kernels/cpu/dataset_ops.py) returns a `Dataset`: an immutable
description of a sequence of elements (its inputs, functions and parameters), cheap to
make. `Dataset.iterate(env)` starts one pass over it, an `Iterator` whose `next()` returns
the next element (a list of arrays, one per component) or None at the end; an iterator
that has returned None keeps returning None.

Invariants:
- One `Env` per iterator tree (one MakeIterator): `close()` on the root closes every
  iterator below it; iterators that own threads (prefetch, parallel map) stop them then,
  and a thread that finds `env.stopped` set exits without producing more.
- `next()` is called by one thread at a time (the iterator resource serializes
  `get_next`); background threads touch only their own buffers, under their own lock.
- Functions (map, filter, flat_map, interleave) are `call(args) -> outputs` objects from
  kernels/functions.py: the traced body runs as a small step, never the Python function.
  A function raising OutOfRangeError ends the sequence, as in TensorFlow. A map whose
  body is row-wise (a parse_single_example: kernels/functions.row_wise) runs it once per
  chunk of elements (_RowWiseMapIterator), with the per-element results and errors; a
  batch of such a map, once per batch (dataset_batching._MapAndBatchIterator, TensorFlow's
  fusion). Batching datasets are in dataset_batching.py, file-backed ones in
  dataset_files.py.
- Errors are per element, as in TensorFlow: an element whose production fails (its map
  function raised, a check failed, an input below failed) raises its error from that one
  `next()`, and the next call goes on with the elements after it. A batch (or window,
  zip) with a failed element raises once and drops the elements it had gathered; a shuffle
  raises while it fills its buffer and keeps the buffer. Generator-based iterators pass a
  failure on as a `_Failed` element (`_drain`, `_pull`), which `_GenIterator` raises: a
  generator that raised could not go on. CancelledError, OutOfRangeError and errors that
  are not tf.errors still end the iteration.
"""

from __future__ import annotations

import collections
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from tensorflux.framework import errors
from tensorflux.lib import philox

AUTOTUNE = -1


def autotuned(n: int, default: int | None = None) -> int:
    """`n`, or a parallelism/buffer size chosen for this machine when `n` is AUTOTUNE."""
    if n == AUTOTUNE:
        return default or max(2, os.cpu_count() or 2)
    return n


class Env:
    """What the iterators of one tree share: the stop flag set when the tree is closed."""

    __slots__ = ("stopped",)

    def __init__(self):
        self.stopped = threading.Event()


class Iterator:
    """One pass over a dataset; subclasses implement `next()`."""

    def next(self) -> list | None:  # noqa: A003 - TensorFlow's GetNext
        raise NotImplementedError

    def close(self) -> None:
        for child in self.children():
            child.close()

    def children(self) -> list[Iterator]:
        return []


class Dataset:
    """A sequence of elements: `iterate(env)` starts a pass over it.

    `recipe` is (node, input values) of the dataset op that made it (kernels/cpu/
    dataset_ops.py records it; kernels/dataset_state.py saves iterators by it)."""

    recipe = None

    def iterate(self, env: Env) -> Iterator:
        raise NotImplementedError

    def saved_inputs(self, inputs: list) -> list:
        """The recipe's inputs as saved: a dataset that drew random seeds itself saves
        them instead of (0, 0)."""
        return inputs


def int64_seed(seed: int) -> np.int64:
    """A 64-bit seed as the int64 input that gives the same Philox stream."""
    return np.int64(seed - (1 << 64) if seed >= 1 << 63 else seed)


def _call(fn, element: list, captured: list) -> list | None:
    """fn(element + captured), or None when the function ends the sequence."""
    try:
        return fn(list(element) + list(captured))
    except errors.OutOfRangeError:
        return None


def resumable(e: BaseException) -> bool:
    """Whether the elements after one that failed with `e` still follow (see the module
    docstring)."""
    return isinstance(e, errors.OpError) and not isinstance(
        e, (errors.CancelledError, errors.OutOfRangeError))


def _pull(it: Iterator):
    """`x = yield from _pull(it)` in an element generator: it.next(), a resumable error of
    the input yielded as a _Failed (raised by the consumer's `next()`) and the next element
    tried on the call after."""
    while True:
        try:
            return it.next()
        except Exception as e:  # noqa: BLE001 - per element, unless it ends the iteration
            if not resumable(e):
                raise
            yield _Failed(e)


class _GenIterator(Iterator):
    """An iterator over a Python generator of elements (sources and simple transforms); a
    `_Failed` the generator yields is raised here, and the generator goes on after it."""

    def __init__(self, gen, children=()):
        self._gen = gen
        self._children = list(children)
        self._done = False

    def next(self):  # noqa: A003
        if self._done:
            return None
        try:
            x = next(self._gen)
        except StopIteration:
            self._done = True
            return None
        if isinstance(x, _Failed):
            raise x.error
        return x

    def children(self):
        return self._children

    def close(self):
        try:
            self._gen.close()  # runs the generator's `finally` (open files)
        except (ValueError, AttributeError):  # running on another thread, or not a generator
            pass
        super().close()


def _drain(it: Iterator):
    """The elements of `it` until its end; a failed one comes as a `_Failed` (_pull), which
    the generators using this pass on."""
    while True:
        x = yield from _pull(it)
        if x is None:
            return
        yield x


def _failure(e: BaseException) -> _Failed:
    """`e` as a failed element, or raised when it ends the iteration."""
    if not resumable(e):
        raise e
    return _Failed(e)


# ---- sources -----------------------------------------------------------------------------

class TensorSliceDataset(Dataset):
    def __init__(self, components: list[np.ndarray]):
        n = {c.shape[0] if c.ndim else None for c in components}
        if None in n:
            raise errors.InvalidArgumentError(None, None,
                                              "All components must be at least 1-dimensional")
        if len(n) > 1:
            dims = [c.shape[0] for c in components]
            raise errors.InvalidArgumentError(
                None, None, f"All components must have the same size in the 0th dimension, "
                f"got {dims}")
        self.components = components
        self.n = n.pop() if n else 0

    def iterate(self, env):
        comps, n = self.components, self.n
        return _GenIterator([c[i, ...] for c in comps] for i in range(n))


class TensorDataset(Dataset):
    def __init__(self, components: list[np.ndarray]):
        self.components = components

    def iterate(self, env):
        return _GenIterator(iter([list(self.components)]))


class RangeDataset(Dataset):
    def __init__(self, start: int, stop: int, step: int, dtype):
        if step == 0:
            raise errors.InvalidArgumentError(None, None, "step must be a non-zero integer.")
        self.args = (start, stop, step)
        self.dtype = dtype

    def iterate(self, env):
        dt = self.dtype
        return _GenIterator([np.array(v, dtype=dt)] for v in range(*self.args))


class ListDataset(Dataset):
    """A dataset over a fixed list of elements (what a Python generator produced)."""

    def __init__(self, make_gen):
        self.make_gen = make_gen

    def iterate(self, env):
        return _GenIterator(iter(self.make_gen()))


# ---- element-wise transformations ---------------------------------------------------------

class MapDataset(Dataset):
    """`row_wise`: the function may run on several elements at once, their (one, scalar)
    components stacked (kernels/functions.row_wise): see _RowWiseMapIterator."""

    def __init__(self, input_ds: Dataset, fn, captured: list, num_parallel: int = 1,
                 row_wise: bool = False):
        self.input, self.fn, self.captured = input_ds, fn, captured
        self.num_parallel = autotuned(num_parallel)
        self.row_wise = row_wise

    def iterate(self, env):
        inner = self.input.iterate(env)
        if self.row_wise:
            return _RowWiseMapIterator(inner, self.fn, self.captured)
        if self.num_parallel > 1:
            return _ParallelMapIterator(inner, self.fn, self.captured, self.num_parallel, env)
        return _MapIterator(inner, self.fn, self.captured)


class _MapIterator(Iterator):
    """The function on each element in turn, on the consumer's thread. An element whose
    function fails raises its error and the elements after it follow (as TensorFlow's map)."""

    def __init__(self, inner: Iterator, fn, captured):
        self._inner, self._fn, self._captured = inner, fn, captured
        self._done = False

    def next(self):  # noqa: A003
        if self._done:
            return None
        x = self._inner.next()
        y = None if x is None else _call(self._fn, x, self._captured)
        if y is None:
            self._done = True
        return y

    def children(self):
        return [self._inner]


class _Failed:
    """An element whose function raised: the error is raised when the element is reached."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def _call_rows(fn, elements: list, captured: list, split: bool = True) -> list | None:
    """The results of a row-wise `fn` on `elements` from one call on their stacked
    components (with `split=False`: its outputs, stacked), or None if that call failed
    (the caller then calls per element, so each element gets its own result or error,
    exactly as unstacked)."""
    stacked = np.empty(len(elements), dtype=object)
    stacked[:] = [x[0].item() if isinstance(x[0], np.ndarray) else x[0] for x in elements]
    try:
        outs = fn([stacked] + list(captured))
    except Exception:  # noqa: BLE001 - redone per element, which reports it in place
        return None
    n = len(elements)
    if any(np.ndim(o) == 0 or np.shape(o)[0] != n for o in outs):
        return None
    if not split:
        return list(outs)
    return [[o[i, ...] for o in outs] for i in range(n)]


def _call_chunk(fn, elements: list, captured: list) -> list:
    """The results of `fn` on consecutive `elements` (a failure as _Failed, in its place),
    stopping after the first that ends the sequence (None)."""
    out: list = []
    for x in elements:
        try:
            y = _call(fn, x, captured)
        except Exception as e:  # noqa: BLE001 - raised in order by the consumer
            y = _Failed(e)
        out.append(y)
        if y is None:
            break
    return out


class _ParallelMapIterator(Iterator):
    """Up to `n` chunks of consecutive elements in flight on a pool of `n` threads; results
    are returned in input order, an element's error raised where the element comes (the
    elements after it follow, as with a single call). Inputs are read on
    the consumer's thread. A task maps a chunk of up to `CHUNK` elements rather than one: a
    hand-off between threads costs about as much as a small map function (parsing one
    Example), so one per element made 4 threads slower than one."""

    CHUNK = 16

    def __init__(self, inner: Iterator, fn, captured, n: int, env: Env):
        self._inner, self._fn, self._captured, self._n = inner, fn, captured, n
        self._pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="tfx-data-map")
        self._pending: collections.deque = collections.deque()
        self._ready: collections.deque = collections.deque()
        self._exhausted = False
        self._done = False
        self._env = env

    def _fill(self) -> None:
        while not self._exhausted and len(self._pending) < self._n:
            chunk, failure = [], None
            while len(chunk) < self.CHUNK:
                try:
                    x = self._inner.next()
                except Exception as e:  # noqa: BLE001 - raised in its place by next()
                    failure = _failure(e)
                    break
                if x is None:
                    self._exhausted = True
                    break
                chunk.append(x)
            if chunk:
                self._pending.append(self._pool.submit(_call_chunk, self._fn, chunk,
                                                       self._captured))
            if failure is not None:
                done: Future = Future()
                done.set_result([failure])
                self._pending.append(done)
                return

    def next(self):  # noqa: A003
        if self._done:
            return None
        if not self._ready:
            self._fill()
            if not self._pending:
                self._done = True
                return None
            self._ready.extend(self._pending.popleft().result())
        y = self._ready.popleft()
        if isinstance(y, _Failed):
            raise y.error  # as for a single call: the next elements follow
        if y is None:
            self._done = True
            for f in self._pending:
                f.cancel()
            self._pending.clear()
            self._ready.clear()
        return y

    def children(self):
        return [self._inner]

    def close(self):
        self._pool.shutdown(wait=False, cancel_futures=True)
        super().close()


class _RowWiseMapIterator(Iterator):
    """A map of a row-wise function (MapDataset.row_wise), sequential or parallel: up to
    CHUNK input elements are mapped with one call on their stacked components, on the
    consumer's thread. Such a function is a parse (Python holding the GIL), so threads
    would only add hand-offs; one call per chunk is what makes it fast. If that call fails,
    the chunk is mapped element by element, so every element gets its own result or error
    in its place and the ones after it follow, as with the per-element map; an error of the
    input is raised in its place too, after the elements read before it."""

    CHUNK = 64

    def __init__(self, inner: Iterator, fn, captured):
        self._inner, self._fn, self._captured = inner, fn, captured
        self._ready: collections.deque = collections.deque()
        self._done = False

    def _fill(self) -> None:
        chunk, failure = [], None
        while len(chunk) < self.CHUNK:
            try:
                x = self._inner.next()
            except Exception as e:  # noqa: BLE001 - raised in its place by next()
                failure = _Failed(e)
                break
            if x is None:
                break
            chunk.append(x)
        out = _call_rows(self._fn, chunk, self._captured) if len(chunk) > 1 else None
        if out is None:
            out = _call_chunk(self._fn, chunk, self._captured)
        self._ready.extend(out)
        if failure is not None:
            self._ready.append(failure)
        elif len(chunk) < self.CHUNK and (not out or out[-1] is not None):
            self._ready.append(None)  # the input ended

    def next(self):  # noqa: A003
        if self._done:
            return None
        if not self._ready:
            self._fill()
        y = self._ready.popleft()
        if isinstance(y, _Failed):
            raise y.error
        if y is None:
            self._done = True
            self._ready.clear()
        return y

    def children(self):
        return [self._inner]


class FilterDataset(Dataset):
    """The elements for which `predicate` is True (with `stop_on_false`, TakeWhile: the
    elements up to the first for which it is False)."""

    stop_on_false = False

    def __init__(self, input_ds: Dataset, predicate, captured: list):
        self.input, self.predicate, self.captured = input_ds, predicate, captured

    def iterate(self, env):
        inner = self.input.iterate(env)
        pred, captured = self.predicate, self.captured

        def gen():
            for x in _drain(inner):
                if isinstance(x, _Failed):
                    yield x
                    continue
                try:
                    keep = _call(pred, x, captured)
                except Exception as e:  # noqa: BLE001 - this element's error
                    yield _failure(e)
                    continue
                if keep is None:
                    return
                if np.shape(keep[0]) != ():
                    raise errors.InvalidArgumentError(
                        None, None, "Filter predicate `predicate` must return a scalar bool.")
                if bool(keep[0]):
                    yield x
                elif self.stop_on_false:
                    return
        return _GenIterator(gen(), [inner])


class FlatMapDataset(Dataset):
    def __init__(self, input_ds: Dataset, fn, captured: list):
        self.input, self.fn, self.captured = input_ds, fn, captured

    def iterate(self, env):
        inner = self.input.iterate(env)
        fn, captured = self.fn, self.captured
        current: list[Iterator] = []

        def gen():
            for x in _drain(inner):
                if isinstance(x, _Failed):
                    yield x
                    continue
                try:
                    out = _call(fn, x, captured)
                except Exception as e:  # noqa: BLE001 - this element's error
                    yield _failure(e)
                    continue
                if out is None:
                    return
                sub = as_dataset(out[0]).iterate(env)
                current[:] = [sub]
                yield from _drain(sub)
                sub.close()
        it = _GenIterator(gen(), [inner])
        it.children = lambda: [inner] + current
        return it


class InterleaveDataset(Dataset):
    def __init__(self, input_ds: Dataset, fn, captured: list, cycle_length: int,
                 block_length: int):
        if cycle_length == 0 or block_length <= 0:
            what = "cycle_length" if cycle_length == 0 else "block_length"
            raise errors.InvalidArgumentError(None, None, f"{what} must be greater than zero.")
        self.input, self.fn, self.captured = input_ds, fn, captured
        self.cycle_length = autotuned(cycle_length)
        self.block_length = block_length

    def iterate(self, env):
        return _InterleaveIterator(self, self.input.iterate(env), env)


class _InterleaveIterator(Iterator):
    """TensorFlow's order: `cycle_length` open inputs visited in turn, `block_length`
    elements from each; an exhausted input's slot takes the next input element when the
    cycle comes back to it."""

    def __init__(self, ds: InterleaveDataset, inner: Iterator, env: Env):
        self._ds, self._inner, self._env = ds, inner, env
        self._slots: list[Iterator | None] = [None] * ds.cycle_length
        self._cycle = self._block = self._open = 0
        self._end_of_input = False

    def _advance_cycle(self) -> None:
        self._block = 0
        self._cycle = (self._cycle + 1) % len(self._slots)

    def next(self):  # noqa: A003
        while not self._end_of_input or self._open > 0:
            it = self._slots[self._cycle]
            if it is not None:
                x = it.next()
                if x is not None:
                    self._block += 1
                    if self._block == self._ds.block_length:
                        self._advance_cycle()
                    return x
                it.close()
                self._slots[self._cycle] = None
                self._open -= 1
                self._advance_cycle()
            elif not self._end_of_input:
                x = self._inner.next()
                out = None if x is None else _call(self._ds.fn, x, self._ds.captured)
                if out is None:
                    self._end_of_input = True
                    continue
                self._slots[self._cycle] = as_dataset(out[0]).iterate(self._env)
                self._open += 1
            else:
                self._advance_cycle()
        return None

    def children(self):
        return [self._inner] + [s for s in self._slots if s is not None]


def as_dataset(value) -> Dataset:
    """The Dataset a variant value holds (a 0-d object array or the Dataset itself)."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.size == 1:
        value = value.reshape(-1)[0]
    if not isinstance(value, Dataset):
        raise errors.InvalidArgumentError(None, None, f"Expected a dataset variant, got "
                                          f"{type(value).__name__}")
    return value


# ---- order and count ----------------------------------------------------------------------

class RepeatDataset(Dataset):
    def __init__(self, input_ds: Dataset, count: int):
        self.input, self.count = input_ds, count

    def iterate(self, env):
        current: list[Iterator] = []

        def gen():
            epoch = 0
            while self.count < 0 or epoch < self.count:
                it = self.input.iterate(env)
                current[:] = [it]
                produced = False
                for x in _drain(it):
                    produced = True
                    yield x
                it.close()
                epoch += 1
                if not produced:  # an empty input repeated forever is still empty
                    return
        it = _GenIterator(gen())
        it.children = lambda: list(current)
        return it


class TakeDataset(Dataset):
    def __init__(self, input_ds: Dataset, count: int):
        self.input, self.count = input_ds, count

    def iterate(self, env):
        inner = self.input.iterate(env)

        def gen():
            n = 0
            while self.count < 0 or n < self.count:
                x = yield from _pull(inner)  # a failed element is not counted (as TF)
                if x is None:
                    return
                n += 1
                yield x
        return _GenIterator(gen(), [inner])


class SkipDataset(Dataset):
    def __init__(self, input_ds: Dataset, count: int):
        self.input, self.count = input_ds, count

    def iterate(self, env):
        inner = self.input.iterate(env)

        def gen():
            n = 0
            while self.count < 0 or n < self.count:
                try:
                    x = inner.next()
                except Exception as e:  # noqa: BLE001 - TF's Skip then starts over its count
                    n = 0
                    yield _failure(e)
                    continue
                if x is None:
                    return
                n += 1
            yield from _drain(inner)
        return _GenIterator(gen(), [inner])


class ShuffleDataset(Dataset):
    """TensorFlow's buffered shuffle, with TF's orders for given seeds: a ring buffer of
    `buffer_size` is filled from the input; each element handed out is the one at offset
    w % (buffered count) from the ring's start, w the next word of the pass's Philox stream,
    and the element at the start takes its slot. A pass's stream is PhiloxRandom(s1, s2):
    with `reshuffle` each pass (an iterator: a new epoch of a repeat) takes the next two
    words of PhiloxRandom(seed, seed2) as (s1, s2) (TF's RandomSeedGenerator), without it
    every pass uses (seed, seed2) (FixedSeedGenerator). Seeds (0, 0) mean two random ones."""

    def __init__(self, input_ds: Dataset, buffer_size: int, seed: int, seed2: int,
                 reshuffle: bool):
        if buffer_size <= 0 and buffer_size != AUTOTUNE:
            raise errors.InvalidArgumentError(None, None,
                                              "buffer_size must be greater than zero.")
        self.input, self.buffer_size = input_ds, autotuned(buffer_size, 1024)
        self.reshuffle = reshuffle
        if seed == 0 and seed2 == 0:
            seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
        self.seeds = (seed, seed2)
        self._seed_words = philox.single_words(seed, seed2) if reshuffle else None
        self._lock = threading.Lock()

    def saved_inputs(self, inputs: list) -> list:
        return inputs[:-2] + [int64_seed(s) for s in self.seeds]

    def _pass_seeds(self) -> tuple[int, int]:
        if self._seed_words is None:
            return self.seeds
        with self._lock:
            return next(self._seed_words), next(self._seed_words)

    def iterate(self, env):
        words = philox.single_words(*self._pass_seeds())
        inner = self.input.iterate(env)

        def gen():
            size = self.buffer_size
            ring: list = []
            start = end = 0  # the buffered elements are ring[start % size .. end % size)
            source = _drain(inner)
            exhausted = False
            while True:
                while not exhausted and end - start < size:
                    x = next(source, None)
                    if x is None:
                        exhausted = True
                    elif isinstance(x, _Failed):  # raised at once; the buffer is kept
                        yield x
                    else:
                        if end < size:
                            ring.append(x)
                        else:
                            ring[end % size] = x
                        end += 1
                if end == start:
                    return
                index = (start + next(words) % (end - start)) % size
                out, ring[index] = ring[index], ring[start % size]
                ring[start % size] = None
                start += 1
                yield out
        return _GenIterator(gen(), [inner])


class ZipDataset(Dataset):
    def __init__(self, inputs: list[Dataset]):
        self.inputs = inputs

    def iterate(self, env):
        its = [d.iterate(env) for d in self.inputs]

        def gen():
            while True:
                parts, failure = [], None
                for it in its:  # every input advances, as in TF, even after one failed
                    try:
                        x = it.next()
                    except Exception as e:  # noqa: BLE001 - the tuple fails, its parts dropped
                        failure = failure or _failure(e)
                        continue
                    if x is None:
                        return
                    parts.extend(x)
                yield failure or parts
        return _GenIterator(gen(), its)


class ConcatenateDataset(Dataset):
    def __init__(self, first: Dataset, second: Dataset):
        self.first, self.second = first, second

    def iterate(self, env):
        current: list[Iterator] = []

        def gen():
            for d in (self.first, self.second):
                it = d.iterate(env)
                current[:] = [it]
                yield from _drain(it)
                it.close()
        it = _GenIterator(gen())
        it.children = lambda: list(current)
        return it


class CacheDataset(Dataset):
    """Elements cached in memory during the first complete pass; later passes (the next
    epochs of a repeat) read the cache."""

    def __init__(self, input_ds: Dataset):
        self.input = input_ds
        self._cache: list | None = None
        self._lock = threading.Lock()

    def iterate(self, env):
        with self._lock:
            cache = self._cache
        if cache is not None:
            return _GenIterator(iter(cache))
        inner = self.input.iterate(env)

        def gen():
            filled = []
            for x in _drain(inner):
                if not isinstance(x, _Failed):  # a failed element is not cached (as TF)
                    filled.append(x)
                yield x
            with self._lock:
                if self._cache is None:
                    self._cache = filled
        return _GenIterator(gen(), [inner])


# ---- prefetching -----------------------------------------------------------------------

class PrefetchDataset(Dataset):
    def __init__(self, input_ds: Dataset, buffer_size: int):
        if buffer_size < 0 and buffer_size != AUTOTUNE:
            raise errors.InvalidArgumentError(None, None,
                                              "buffer_size must be >= 0 or set to -1 (AUTOTUNE)")
        self.input = input_ds
        self.buffer_size = autotuned(buffer_size, 8)

    def iterate(self, env):
        inner = self.input.iterate(env)
        if self.buffer_size == 0:
            return inner
        return _PrefetchIterator(inner, self.buffer_size, env)


class _PrefetchIterator(Iterator):
    """A background thread (started on the first `next`) reads ahead up to `capacity`
    elements, errors buffered in their place. It ends after the input's end or an error
    that ends the iteration (buffered too, so the consumer sees them in order) or as soon as
    the tree is closed."""

    def __init__(self, inner: Iterator, capacity: int, env: Env):
        self._inner, self._capacity, self._env = inner, capacity, env
        self._buf: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def _produce(self) -> None:
        stopped = self._env.stopped
        while not stopped.is_set():
            with self._cond:
                while len(self._buf) >= self._capacity and not stopped.is_set():
                    self._cond.wait()
            if stopped.is_set():
                break
            try:
                x = self._inner.next()
            except BaseException as e:  # noqa: BLE001 - handed to the consumer
                x = e
            with self._cond:
                self._buf.append(x)
                self._cond.notify_all()
            if x is None or isinstance(x, BaseException) and not resumable(x):
                break

    def next(self):  # noqa: A003
        if self._thread is None:
            self._thread = threading.Thread(target=self._produce, name="tfx-data-prefetch",
                                            daemon=True)
            self._thread.start()
        with self._cond:
            while not self._buf:
                if self._env.stopped.is_set():
                    raise errors.CancelledError(None, None, "Iterator was cancelled")
                self._cond.wait(0.5)
            x = self._buf[0]
            if x is None:
                return None
            if isinstance(x, BaseException):
                if resumable(x):
                    self._buf.popleft()
                    self._cond.notify_all()
                else:
                    self._buf[0] = None
                raise x
            self._buf.popleft()
            self._cond.notify_all()
            return x

    def children(self):
        return [self._inner]

    def close(self):
        self._env.stopped.set()
        with self._cond:
            self._cond.notify_all()
        super().close()


# ---- Python generators (Dataset.from_generator) -------------------------------------------

_generators: dict[str, object] = {}
_generators_lock = threading.Lock()


def register_generator(make) -> str:
    """Registers `make() -> iterable of elements` (flat lists of arrays); returns its token
    (what a PyGeneratorDataset op names)."""
    with _generators_lock:
        token = f"pygen_{len(_generators)}"
        _generators[token] = make
    return token


def generator(token: str):
    """The callable registered under `token`, or None."""
    return _generators.get(token)
