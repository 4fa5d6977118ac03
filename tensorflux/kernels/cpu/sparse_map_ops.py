"""CPU kernels of the SparseTensors map ops (tensorflux/ops/sparse_map_ops.py): a resource
holding (indices, values, shape) under int64 handles, taken out by the Take."""

from __future__ import annotations

import itertools
import threading

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu._math_common import _invalid, _shape_str
from tensorflux.kernels.registry import kernel_factory


class SparseTensorsMap:
    """The stored SparseTensors of one map, by handle (thread-safe)."""

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._next = itertools.count(1)
        self._stored: dict[int, tuple] = {}

    def add(self, parts: list[tuple]) -> np.ndarray:
        with self._lock:
            handles = [next(self._next) for _ in parts]
            self._stored.update(zip(handles, parts, strict=True))
        return np.array(handles, np.int64)

    def take(self, handles) -> list[tuple]:
        """The entries of `handles`, in order, each taken out of the map (as TF, the ones
        before a missing handle are gone)."""
        out = []
        with self._lock:
            for h in handles:
                part = self._stored.pop(h, None)
                if part is None:
                    raise errors.InvalidArgumentError(
                        None, None, f"Unable to find SparseTensor: {h} in map: {self.name}")
                out.append(part)
        return out


def _map(ctx, node, shared_name: str) -> SparseTensorsMap:
    container = node.attrs.get("container", "")
    name = shared_name or node.name
    return ctx.resource_mgr.lookup_or_create(container, name, lambda: SparseTensorsMap(name))


def _checked(indices, values, shape, at_least: int):
    if indices.ndim != 2:
        raise _invalid(f"Input indices should be a matrix but received shape "
                       f"{_shape_str(indices.shape)}")
    if values.ndim != 1:
        raise _invalid(f"Input values should be a vector but received shape "
                       f"{_shape_str(values.shape)}")
    if shape.ndim != 1:
        raise _invalid(f"Input shape should be a vector but received shape "
                       f"{_shape_str(shape.shape)}")
    if indices.shape[0] != values.shape[0] or indices.shape[1] != shape.shape[0]:
        raise _invalid(f"Indices {_shape_str(indices.shape)}, values "
                       f"{_shape_str(values.shape)} and shape {_shape_str(shape.shape)} do "
                       f"not make a SparseTensor")
    if shape.shape[0] < at_least:
        raise _invalid(f"Rank of input SparseTensor should be > 1, but saw rank: "
                       f"{shape.shape[0]}")


@kernel_factory("AddSparseToTensorsMap")
def _add_one(node):
    shared = node.attrs.get("shared_name", "")

    def compute(ctx, indices, values, shape):
        _checked(indices, values, shape, 0)
        return _map(ctx, node, shared).add([(indices.copy(), values.copy(), shape.copy())])[0]

    return compute


@kernel_factory("AddManySparseToTensorsMap")
def _add_many(node):
    shared = node.attrs.get("shared_name", "")

    def compute(ctx, indices, values, shape):
        _checked(indices, values, shape, 2)
        rows = int(shape[0])
        if rows < 0:
            raise _invalid(f"Minibatch size {rows} is negative")
        first = indices[:, 0]
        if first.size and (first.min() < 0 or first.max() >= rows):
            bad = int(np.flatnonzero((first < 0) | (first >= rows))[0])
            raise _invalid(f"Indices of SparseTensor[{bad}] are out of the minibatch of "
                           f"{rows}")
        order = np.argsort(first, kind="stable")
        bounds = np.searchsorted(first[order], np.arange(rows + 1))
        rest = shape[1:].copy()
        parts = []
        for r in range(rows):
            at = order[bounds[r]:bounds[r + 1]]
            parts.append((indices[at, 1:], values[at], rest))
        return _map(ctx, node, shared).add(parts)

    return compute


@kernel_factory("TakeManySparseFromTensorsMap")
def _take_many(node):
    shared = node.attrs.get("shared_name", "")
    dtype = node.attrs["dtype"].as_numpy_dtype

    def compute(ctx, handles):
        if handles.ndim != 1:
            raise _invalid(f"sparse_handles should be a vector but received shape "
                           f"{_shape_str(handles.shape)}")
        parts = _map(ctx, node, shared).take(handles.tolist())
        if not parts:
            raise _invalid("Must have at least 1 serialized SparseTensor, but has 0")
        rank = parts[0][2].size
        for i, (_, values, shape) in enumerate(parts):
            if shape.size != rank:
                raise _invalid(f"Inconsistent rank across SparseTensors: rank prior to "
                               f"SparseTensor[{i}] was: {rank} but rank of SparseTensor[{i}] "
                               f"is: {shape.size}")
            if values.dtype != dtype:
                raise _invalid(f"Requested SparseTensor of type {np.dtype(dtype).name} but "
                               f"SparseTensor[{i}].values.dtype() == {values.dtype.name}")
        rows = [np.concatenate([np.full((len(ix), 1), i, np.int64), ix], 1)
                for i, (ix, _, _) in enumerate(parts)]
        indices = np.concatenate(rows, 0) if rows else np.zeros((0, rank + 1), np.int64)
        values = np.concatenate([v for _, v, _ in parts]).astype(dtype, copy=False)
        shape = np.concatenate([[len(parts)], np.max([s for _, _, s in parts], axis=0)])
        return indices.reshape(-1, rank + 1), values, shape.astype(np.int64)

    return compute
