"""CPU kernels of the gathering, scattering and selection ops (tensorflux/ops/gather_ops.py).

Indices are validated the way TensorFlow does (NumPy would wrap negative ones around):
an out-of-range index is an InvalidArgumentError naming its position.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import resource_guard
from tensorflux.kernels import interrupt, intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu.array_ops import _invalid, _shape_str, _zeros
from tensorflux.kernels.registry import kernel, kernel_factory


def _position(shape, flat: int) -> str:
    return ",".join(str(int(i)) for i in np.unravel_index(flat, shape)) if shape else ""


def _check_range(indices: np.ndarray, limit: int, what: str = "indices") -> None:
    """InvalidArgumentError for the first entry of `indices` outside [0, limit)."""
    if indices.size == 0 or native.indices_in_range(indices, limit):
        return
    if indices.min() >= 0 and indices.max() < limit:
        return
    flat = int(np.flatnonzero((indices.reshape(-1) < 0) | (indices.reshape(-1) >= limit))[0])
    pos = _position(indices.shape, flat)
    name = f"{what}[{pos}]" if indices.ndim else what
    raise _invalid(f"{name} = {int(indices.reshape(-1)[flat])} is not in [0, {limit})")


# ---- Gather, GatherV2 ---------------------------------------------------------------------


def _gather(params, indices, axis: int, batch_dims: int, ctx=None):
    n = params.ndim
    if not -n <= axis < n:
        raise _invalid(f"Expected axis in the range [{-n}, {n}), but got {axis}")
    axis %= n
    if params.ndim == 0:
        raise _invalid("params must be at least 1 dimensional")
    others = params.shape[:axis] + params.shape[axis + 1:]
    if batch_dims == 0 and 0 in others:  # empty slices: TF copies nothing, checks nothing
        return np.empty(params.shape[:axis] + indices.shape + params.shape[axis + 1:],
                        params.dtype)
    _check_range(indices, params.shape[axis])
    if batch_dims == 0:
        return _take(params, indices, axis, ctx)
    if batch_dims < 0:
        batch_dims += indices.ndim
    if params.shape[:batch_dims] != indices.shape[:batch_dims]:
        raise _invalid(f"params.shape[:{batch_dims}] {_shape_str(params.shape[:batch_dims])} "
                       f"should equal indices.shape[:{batch_dims}] "
                       f"{_shape_str(indices.shape[:batch_dims])}")
    # Flatten the batch dims, gather per batch with one fancy index, restore the batch.
    batch = params.shape[:batch_dims]
    b = int(np.prod(batch, dtype=np.int64))
    p = params.reshape((b,) + params.shape[batch_dims:])
    idx = indices.reshape((b,) + indices.shape[batch_dims:])
    a = axis - batch_dims + 1  # the gathered axis of p
    p = np.moveaxis(p, a, 1)  # (b, N, pre..., post...)
    rows = np.arange(b).reshape((b,) + (1,) * (idx.ndim - 1))
    out = p[rows, idx]  # (b, idx..., pre..., post...)
    k = idx.ndim - 1
    pre = a - 1
    order = [0] + list(range(1 + k, 1 + k + pre)) + list(range(1, 1 + k)) + \
        list(range(1 + k + pre, out.ndim))
    out = np.transpose(out, order)
    return out.reshape(batch + out.shape[1:])


def _take(params, indices, axis: int, ctx):
    """np.take(params, indices, axis) (indices in range), in blocks checking the step
    between them (kernels/interrupt.py) when the output is large: of the indices when
    axis is 0, else of params' axis 0. The output's size is checked against the resource
    guard first."""
    shape = params.shape[:axis] + indices.shape + params.shape[axis + 1:]
    size = int(np.prod(shape, dtype=np.float64))
    if size <= interrupt.SPAN_ELEMENTS:
        return np.take(params, indices, axis=axis)
    resource_guard.check_shape(shape, params.dtype, ctx)
    out = np.empty(shape, params.dtype)
    if axis == 0:
        flat = indices.reshape(-1)
        rows = out.reshape((flat.size,) + params.shape[1:])
        for lo, hi in interrupt.spans(flat.size, size // max(1, flat.size), ctx):
            np.take(params, flat[lo:hi], axis=0, out=rows[lo:hi])
    else:
        for lo, hi in interrupt.spans(params.shape[0], size // params.shape[0], ctx):
            np.take(params[lo:hi], indices, axis=axis, out=out[lo:hi])
    return out


@kernel_factory("GatherV2")
def _gather_v2(node):
    batch_dims = node.attrs["batch_dims"]

    def compute(ctx, params, indices, axis):
        return _gather(params, indices, int(axis), batch_dims, ctx)

    return compute


@kernel("Gather")
def _gather_v1(ctx, params, indices):
    return _gather(params, indices, 0, 0, ctx)


# ---- GatherNd, ScatterNd ------------------------------------------------------------------


@kernel("GatherNd")
def _gather_nd(ctx, params, indices):
    if indices.ndim == 0:
        raise _invalid("indices must be at least a vector")
    k = indices.shape[-1]
    if k > params.ndim:
        raise _invalid(f"index innermost dimension length must be <= params rank; saw: {k} vs. "
                       f"{params.ndim}")
    outer = indices.shape[:-1]
    flat = indices.reshape(int(np.prod(outer, dtype=np.int64)), k)  # -1 is ambiguous for k=0
    if k == 0 and params.size == 0 and flat.shape[0] > 0:
        raise _invalid(f"Requested more than 0 entries, but params is empty.  Params shape: "
                       f"{_shape_str(params.shape)}")
    limits = np.array(params.shape[:k], dtype=np.int64)
    if k == 0:
        return np.array(np.broadcast_to(params, outer + params.shape))
    tail = params.shape[k:]
    n, item = flat.shape[0], max(k, int(np.prod(tail, dtype=np.int64)))
    if n * item <= interrupt.SPAN_ELEMENTS:
        return _gather_rows(params, flat, limits, outer, 0).reshape(outer + tail)
    # Many rows: checked and gathered in blocks, the step checked between them (the values
    # of one call; 32M indices took ~2.5 s in one).
    resource_guard.check_shape((n,) + tail, params.dtype, ctx)
    out = np.empty((n,) + tail, params.dtype)
    for lo, hi in interrupt.spans(n, item, ctx):
        out[lo:hi] = _gather_rows(params, flat[lo:hi], limits, outer, lo)
    return out.reshape(outer + tail)


def _gather_rows(params, rows, limits, outer, first: int):
    """params at each row of `rows` (index tuples; row r is the (first + r)-th of the
    indices of shape `outer`), after checking that every one is inside."""
    bad = (rows < 0) | (rows >= limits)
    if bad.any():
        i = int(np.flatnonzero(bad.any(axis=1))[0])
        raise _invalid(f"indices{_bracket(outer, first + i)} = "
                       f"[{', '.join(map(str, rows[i].tolist()))}] does not index into param "
                       f"shape {_shape_str(params.shape)}, node name: GatherNd")
    return params[tuple(rows.T)]


def _bracket(outer, i: int) -> str:
    return f"[{_position(outer, i)}]" if outer else ""


@kernel("ScatterNd")
def _scatter_nd(ctx, indices, updates, shape):
    shape = tuple(shape.tolist())
    if indices.ndim == 0:
        raise _invalid("Indices must be at least a vector")
    k = indices.shape[-1]
    outer = indices.shape[:-1]
    if updates.shape[:len(outer)] != outer or updates.shape[len(outer):] != shape[k:]:
        raise _invalid(f"Dimensions [0,{len(outer)}) of indices[shape="
                       f"{_shape_str(indices.shape)}] must match dimensions [0,{len(outer)}) "
                       f"of updates[shape={_shape_str(updates.shape)}]")
    flat = indices.reshape(-1, k)
    limits = np.array(shape[:k], dtype=np.int64)
    bad = (flat < 0) | (flat >= limits)
    if bad.any():
        i = int(np.flatnonzero(bad.any(axis=1))[0])
        raise _invalid(f"indices{_bracket(outer, i)} = [{', '.join(map(str, flat[i].tolist()))}]"
                       f" does not index into shape {_shape_str(shape)}")
    resource_guard.check_shape(shape, updates.dtype, ctx)
    out = _zeros(shape, updates.dtype)
    rows = updates.reshape((-1,) + shape[k:])
    if k == 1 and flat.shape[0]:
        # np.add.at is slow; without repeated indices a plain assignment does the same.
        ids = flat[:, 0]
        if np.unique(ids).size == ids.size:
            out[ids] = rows
            return out
    # In blocks, in order (the step is checked between them): the values of one np.add.at.
    for lo, hi in interrupt.spans(flat.shape[0], max(1, rows[0].size) if rows.size else 1,
                                  ctx):
        np.add.at(out, tuple(flat[lo:hi].T), rows[lo:hi])
    return out


# ---- OneHot --------------------------------------------------------------------------------


@kernel_factory("OneHot")
def _one_hot(node):
    axis = node.attrs["axis"]

    def compute(ctx, indices, depth, on_value, off_value):
        depth = int(depth)
        if depth < 0:
            raise _invalid(f"depth must be non-negative, got: {depth}")
        n = indices.ndim
        if not -1 <= axis <= n:
            raise _invalid(f"Expected axis to be -1 or between [0, {n + 1}).  But received: "
                           f"{axis}")
        resource_guard.check_shape(indices.shape + (depth,), on_value.dtype, ctx)
        columns = np.arange(depth, dtype=indices.dtype)
        if interrupt.blocked(indices.size * depth * on_value.dtype.itemsize):
            # In blocks of the (index, depth) matrix, checking the step between them.
            dtype = np.result_type(on_value, off_value)
            flat = indices.reshape(-1, 1)
            out = np.empty((flat.shape[0], depth), dtype)
            for idx in interrupt.regions(out.shape, dtype.itemsize, ctx):
                rows, cols = (idx + (slice(None),))[:2]
                out[idx] = np.where(flat[rows] == columns[cols], on_value, off_value)
            out = out.reshape(indices.shape + (depth,))
        else:
            out = np.where(indices[..., None] == columns, on_value, off_value)
        if axis != -1 and axis != n:
            out = np.moveaxis(out, -1, axis)
        return out

    return compute


# ---- Unique --------------------------------------------------------------------------------


@kernel_factory("Unique")
def _unique(node):
    idx_type = node.attrs["out_idx"].as_numpy_dtype

    def compute(ctx, x):
        if x.ndim != 1:
            raise _invalid("unique expects a 1D vector.")
        values, idx = unique_values(x, ctx)
        return values, idx.astype(idx_type)

    return compute


def unique_values(x: np.ndarray, ctx=None) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values of a 1-D `x` in order of first appearance, the index of each
    element's value); every NaN is its own value, as in TF (its hash map never finds NaN).
    A large `x` goes through sorts that check step `ctx` between blocks."""
    if x.size == 0:
        return x.copy(), np.zeros(0, np.int64)
    if x.size > interrupt.SPAN_ELEMENTS:
        return _unique_by_blocks(x, ctx)
    values, first, inverse = np.unique(x, return_index=True, return_inverse=True,
                                       equal_nan=False)
    order = np.argsort(first, kind="stable")  # by first appearance, as TF orders them
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return values[order], rank[inverse.reshape(-1)]


# ---- a stable argsort in blocks --------------------------------------------------------------


def _stable_argsort(x: np.ndarray, ctx=None) -> np.ndarray:
    """np.argsort(x, kind="stable") of a 1-D array, in steps of a few milliseconds that
    check the step between them (kernels/interrupt.py): blocks sorted one by one, then
    merged pairwise (equal keys keep the earlier block's first, NaN last, as the sort
    does), each merge cut into spans of searchsorted. The same permutation as one call."""
    n = x.size
    block = max(1, interrupt.SPAN_ELEMENTS // 8)  # a sort costs ~10 passes per element
    if n <= interrupt.SPAN_ELEMENTS:
        return np.argsort(x, kind="stable")
    runs = []
    for lo, hi in interrupt.spans(n, 1, ctx, block):
        perm = np.argsort(x[lo:hi], kind="stable")
        runs.append((x[lo:hi][perm], perm + lo))
    while len(runs) > 1:
        merged = [_merge(runs[i], runs[i + 1], ctx) for i in range(0, len(runs) - 1, 2)]
        runs = merged + ([runs[-1]] if len(runs) % 2 else [])
    return runs[0][1]


def _merge(a, b, ctx):
    """The merge of two sorted runs (keys, indices), every index of `a` below every index
    of `b`: stable (on equal keys `a` first)."""
    (ka, ia), (kb, ib) = a, b
    if ka.size + kb.size <= interrupt.SPAN_ELEMENTS:  # one short call: timsort's merge
        keys, idx = np.concatenate([ka, kb]), np.concatenate([ia, ib])
        order = np.argsort(keys, kind="stable")
        return keys[order], idx[order]
    keys = np.empty(ka.size + kb.size, ka.dtype)
    idx = np.empty(keys.size, ia.dtype)
    for mine, other, side, ids in ((ka, kb, "left", ia), (kb, ka, "right", ib)):
        for lo, hi in interrupt.spans(mine.size, 4, ctx):
            pos = np.searchsorted(other, mine[lo:hi], side=side)
            pos += np.arange(lo, hi)
            keys[pos] = mine[lo:hi]
            idx[pos] = ids[lo:hi]
    return keys, idx


def _unique_by_blocks(x: np.ndarray, ctx):
    """Unique of a large 1-D `x` through `_stable_argsort` (the sorts check the step; the
    rest are single passes): the values and indices of the np.unique path above."""
    perm = _stable_argsort(x, ctx)
    s = x[perm]
    new = np.empty(s.size, bool)
    new[0] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])  # NaN != NaN: each NaN its own value
    group = np.cumsum(new) - 1
    first = perm[new]  # the lowest index of each value (the sort is stable)
    order = _stable_argsort(first, ctx)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    idx = np.empty(x.size, rank.dtype)
    idx[perm] = rank[group]
    return x[first[order]], idx


# ---- TopKV2 --------------------------------------------------------------------------------


def _descending_stable(x: np.ndarray) -> np.ndarray:
    """argsort of the last axis, largest first, equal values in index order (TF's order)."""
    n = x.shape[-1]
    return (n - 1) - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]


def _top_k_by_argmax(rows: np.ndarray, k: int) -> np.ndarray | None:
    """k rounds of argmax (which returns the first, i.e. lowest-index, maximum), each taking
    the winner out: O(k n) and much faster than sorting for small k. None when a value
    equals the sentinel used to take winners out (or is NaN): the caller sorts instead."""
    if rows.dtype.kind == "f":
        sentinel = -np.inf
        if not np.isfinite(rows.min()) or np.isnan(rows).any():
            return None
    elif rows.dtype.kind in "iu":
        sentinel = np.iinfo(rows.dtype).min
        if rows.min() == sentinel:
            return None
    else:
        return None
    work = rows.copy()
    r = np.arange(rows.shape[0])
    out = np.empty((rows.shape[0], k), dtype=np.int64)
    for j in range(k):
        a = work.argmax(axis=1)
        out[:, j] = a
        work[r, a] = sentinel
    return out


def _top_k_indices(x: np.ndarray, k: int) -> np.ndarray:
    n = x.shape[-1]
    if k == 0:
        return np.zeros(x.shape[:-1] + (0,), dtype=np.int64)
    if k <= 16 and 2 * k <= n and x.size:
        got = _top_k_by_argmax(x.reshape(-1, n), k)
        if got is not None:
            return got.reshape(x.shape[:-1] + (k,))
    if 8 * k > n or n < 64 or (x.dtype.kind == "f" and np.isnan(x).any()):
        return _descending_stable(x)[..., :k]
    # Large n, small k: select the k largest in O(n) per row (ties at the threshold go to
    # the lowest indices), then sort only those.
    rows = x.reshape(-1, n)
    thr = np.partition(rows, n - k, axis=-1)[:, n - k:n - k + 1]
    above = rows > thr
    need = k - above.sum(axis=1, keepdims=True)
    equal = rows == thr
    chosen = above | (equal & (np.cumsum(equal, axis=1) <= need))
    cols = np.nonzero(chosen)[1].reshape(-1, k)
    order = _descending_stable(np.take_along_axis(rows, cols, axis=1))
    return np.take_along_axis(cols, order, axis=1).reshape(x.shape[:-1] + (k,))


def _top_k_by_rows(ctx, x: np.ndarray, k: int) -> np.ndarray:
    """`_top_k_indices` in blocks of rows (each row's result is independent of the others),
    run by intra_op.parallel_for, which checks the step before every block. One row is
    never cut: a sort of one huge row is a single NumPy call (bounded: O(n log n) in an
    input some kernel allocated under the resource guard)."""
    n = x.shape[-1]
    if n > interrupt.SPAN_ELEMENTS and k and (8 * k > n or (
            x.dtype.kind == "f" and np.isnan(x).any())):
        # Rows too long for one sort call: `_descending_stable` row by row, by blocks.
        rows = x.reshape(-1, n)
        out = np.empty((rows.shape[0], k), np.int64)
        for r in range(rows.shape[0]):
            out[r] = ((n - 1) - _stable_argsort(rows[r, ::-1], ctx)[::-1])[:k]
        return out.reshape(x.shape[:-1] + (k,))
    if x.size <= interrupt.SPAN_ELEMENTS or x.ndim < 2 or x.size == 0:
        return _top_k_indices(x, k)
    rows = x.reshape(-1, n)
    out = np.empty((rows.shape[0], k), np.int64)

    def work(lo, hi):
        out[lo:hi] = _top_k_indices(rows[lo:hi], k)

    # A sort or selection costs ~10x a pass per element; rows out of cache cost more.
    per = max(1, interrupt.SPAN_ELEMENTS // (8 * max(1, n)))
    with interrupt.scope(ctx):
        intra_op.parallel_for(work, rows.shape[0], per, intra_op.workers(ctx))
    return out.reshape(x.shape[:-1] + (k,))


@kernel_factory("TopKV2")
def _top_k(node):
    idx_type = node.attrs["index_type"].as_numpy_dtype

    def compute(ctx, x, k):
        k = int(k)
        if k < 0:
            raise _invalid(f"Need k >= 0, got {k}")
        if x.ndim < 1:
            raise _invalid(f"input must be >= 1-D, got shape {_shape_str(x.shape)}")
        if x.shape[-1] < k:
            raise _invalid(f"input must have at least k columns. Had {x.shape[-1]}, needed {k}")
        idx = _top_k_by_rows(ctx, x, k)
        return np.take_along_axis(x, idx, axis=-1), idx.astype(idx_type)

    return compute


# ---- DynamicPartition, DynamicStitch -------------------------------------------------------


@kernel_factory("DynamicPartition")
def _dynamic_partition(node):
    num = node.attrs["num_partitions"]

    def compute(ctx, data, partitions):
        p = partitions
        if data.shape[:p.ndim] != p.shape:
            raise _invalid(f"data.shape must start with partitions.shape, got data.shape = "
                           f"{_shape_str(data.shape)}, partitions.shape = "
                           f"{_shape_str(p.shape)}")
        _check_range(p, num, "partitions")
        rows = data.reshape((-1,) + data.shape[p.ndim:])
        flat = p.reshape(-1)
        if num == 1:  # one output: the bare value
            return rows.copy()
        order = _stable_argsort(flat, ctx)
        counts = np.bincount(flat, minlength=num)
        return tuple(np.split(rows[order], np.cumsum(counts)[:-1]))

    return compute


@kernel_factory("DynamicStitch", "ParallelDynamicStitch")
def _dynamic_stitch(node):
    n = node.attrs["N"]

    def compute(ctx, *args):
        indices, data = args[:n], args[n:]
        rest = data[0].shape[indices[0].ndim:]
        size = 0
        for i, (idx, d) in enumerate(zip(indices, data, strict=True)):
            if d.shape[:idx.ndim] != idx.shape:
                raise _invalid(f"data[{i}].shape = {_shape_str(d.shape)} does not start with "
                               f"indices[{i}].shape = {_shape_str(idx.shape)}")
            if d.shape[idx.ndim:] != rest:
                raise _invalid(f"Need data[0].shape[{indices[0].ndim}:] = {_shape_str(rest)} "
                               f"to match data[{i}].shape[{idx.ndim}:] = "
                               f"{_shape_str(d.shape[idx.ndim:])}")
            if idx.size:
                if idx.min() < 0:
                    bad = int(np.flatnonzero(idx.reshape(-1) < 0)[0])
                    raise _invalid(f"indices[{bad}] is out of range")
                size = max(size, int(idx.max()) + 1)
        out = _zeros((size,) + rest, data[0].dtype)
        for idx, d in zip(indices, data, strict=True):
            out[idx.reshape(-1)] = d.reshape((-1,) + rest)
        return out

    return compute
