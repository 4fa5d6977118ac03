"""CPU kernels of the sparse crosses and counts (tensorflux/ops/sparse_ext_ops.py):
SparseCross, SparseCrossV2, DenseCountSparseOutput, SparseCountSparseOutput."""

from __future__ import annotations

import itertools

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import interrupt
from tensorflux.kernels.registry import kernel_factory
from tensorflux.lib import hashing

_M = (1 << 64) - 1
_MUL = 0xC6A4A7935BD1E995
_INT64_MAX = (1 << 63) - 1


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# ---- crosses -----------------------------------------------------------------------------


def _fingerprint_cat64(fp1: int, fp2: int) -> int:
    """FarmHash's FingerprintCat64: folds fingerprint fp2 into fp1."""
    def mix(v):
        return v ^ (v >> 47)
    result = fp1 ^ _MUL
    result ^= (mix((fp2 * _MUL) & _M) * _MUL) & _M
    result = (result * _MUL) & _M
    result = (mix(result) * _MUL) & _M
    return mix(result)


def _columns(indices, values, shapes, dense):
    """(batch size, per input a function row -> its list of features)."""
    batch = None
    for s in shapes:
        s = np.asarray(s).reshape(-1)
        if s.size != 2:
            raise _invalid(f"Expected rank 2 SparseTensor inputs, got dense shape "
                           f"{s.tolist()}")
        batch = _same_batch(batch, int(s[0]))
    for d in dense:
        if d.ndim != 2:
            raise _invalid(f"Dense inputs should be a matrix but received shape "
                           f"{list(d.shape)}")
        batch = _same_batch(batch, d.shape[0])
    columns = []
    for idx, vals in zip(indices, values, strict=True):
        rows: dict[int, list] = {}
        idx = np.asarray(idx).reshape(-1, 2)
        if len(idx) != len(vals):
            raise _invalid(f"Expected {len(idx)} values, got {len(vals)}")
        for (r, _), v in zip(idx.tolist(), np.asarray(vals).reshape(-1).tolist(),
                             strict=True):
            rows.setdefault(r, []).append(v)
        columns.append(lambda b, rows=rows: rows.get(b, []))
    for d in dense:
        columns.append(lambda b, d=d: d[b].tolist())
    return batch or 0, columns


def _same_batch(batch, n):
    if batch is not None and batch != n:
        raise _invalid(f"Expected batch size {batch} got {n}")
    return n


def _crosses(columns, batch, feature_fn, combine, ctx=None):
    """Per row, `combine` over the cartesian product of the columns' features (checking
    step `ctx` every few thousand rows)."""
    out_idx, out_vals, widest = [], [], 0
    for b in interrupt.each(ctx, range(batch)):
        lists = [[feature_fn(f) for f in col(b)] for col in columns]
        if not lists:
            continue
        crossed = [combine(p) for p in itertools.product(*lists)]
        widest = max(widest, len(crossed))
        out_idx.extend([b, j] for j in range(len(crossed)))
        out_vals.extend(crossed)
    return (np.array(out_idx, np.int64).reshape(-1, 2), out_vals,
            np.array([batch, widest], np.int64))


def _as_text(f) -> bytes:
    return f if isinstance(f, bytes) else str(int(f)).encode()


def _as_hash(f) -> int:
    return hashing.fingerprint64(f) if isinstance(f, bytes) else int(f) & _M


def _split_inputs(node, args):
    n, n_dense = node.attrs["N"], len(node.attrs["dense_types"])
    return (args[:n], args[n:2 * n], args[2 * n:3 * n],
            [np.asarray(d) for d in args[3 * n:3 * n + n_dense]])


@kernel_factory("SparseCross")
def _sparse_cross(node):
    a = node.attrs
    hashed, buckets, key = a["hashed_output"], a["num_buckets"], a["hash_key"] & _M

    def hashed_cross(features):
        h = key
        for f in features:
            h = _fingerprint_cat64(h, f)
        return h % buckets if buckets > 0 else h % _INT64_MAX

    def compute(ctx, *args):
        batch, columns = _columns(*_split_inputs(node, args))
        if hashed:
            idx, vals, shape = _crosses(columns, batch, _as_hash, hashed_cross, ctx)
            return idx, np.array(vals, np.uint64).astype(np.int64), shape
        idx, vals, shape = _crosses(columns, batch, _as_text, b"_X_".join, ctx)
        return idx, _strings(vals), shape

    return compute


@kernel_factory("SparseCrossV2")
def _sparse_cross_v2(node):
    def compute(ctx, *args):
        sep = np.asarray(args[-1], dtype=object).item()
        batch, columns = _columns(*_split_inputs(node, args[:-1]))
        idx, vals, shape = _crosses(columns, batch, _as_text, bytes(sep).join, ctx)
        return idx, _strings(vals), shape

    return compute


def _strings(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# ---- counts ------------------------------------------------------------------------------


def _count(batches, values, weights, node, rank: int):
    """Counts of `values` (ints) in rows `batches`, as sparse (indices, values, shape)."""
    a = node.attrs
    out_dtype = a["output_type"].as_numpy_dtype
    maxlength, minlength, binary = a["maxlength"], a["minlength"], a["binary_output"]
    if values.size and values.min() < 0:
        raise _invalid("Input values must all be non-negative")
    keep = values < maxlength if maxlength > 0 else np.ones(values.shape, bool)
    values, batches = values[keep], batches[keep]
    w = weights[keep] if weights.size else np.ones(values.shape, out_dtype)
    largest = int(values.max()) if values.size else 0
    size = maxlength if maxlength > 0 else max(largest + 1, minlength)
    keys = np.stack([batches, values], 1).astype(np.int64).reshape(-1, 2)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    sums = np.zeros(len(uniq), np.float64 if np.issubdtype(out_dtype, np.floating)
                    else np.int64)
    np.add.at(sums, inverse.reshape(-1), w)
    counts = np.ones(len(uniq), out_dtype) if binary else sums.astype(out_dtype)
    indices = uniq if rank == 2 else uniq[:, 1:]
    return indices.astype(np.int64).reshape(-1, rank), counts, size


@kernel_factory("DenseCountSparseOutput")
def _dense_count(node):
    def compute(ctx, values, weights):
        values, weights = np.asarray(values), np.asarray(weights)
        if values.ndim not in (1, 2):
            raise _invalid(f"Input must be a 1 or 2-dimensional tensor. Got: "
                           f"[{','.join(map(str, values.shape))}]")
        if weights.size and weights.shape != values.shape:
            raise _invalid(f"Weights and values must have the same shape. Weight shape: "
                           f"{list(weights.shape)}; values shape: {list(values.shape)}")
        rows = values.shape[0] if values.ndim == 2 else 1
        batches = np.repeat(np.arange(rows), values.shape[-1]) if values.ndim == 2 else \
            np.zeros(values.size, np.int64)
        idx, counts, size = _count(batches, values.reshape(-1),
                                   weights.reshape(-1), node, values.ndim)
        shape = [rows, size] if values.ndim == 2 else [size]
        return idx, counts, np.array(shape, np.int64)

    return compute


@kernel_factory("SparseCountSparseOutput")
def _sparse_count(node):
    def compute(ctx, indices, values, dense_shape, weights):
        values, weights = np.asarray(values).reshape(-1), np.asarray(weights).reshape(-1)
        dense_shape = np.asarray(dense_shape).reshape(-1)
        if dense_shape.size not in (1, 2):
            raise _invalid(f"Input must be a 1 or 2-dimensional tensor. Got: "
                           f"[{','.join(map(str, dense_shape.tolist()))}]")
        if weights.size and weights.size != values.size:
            raise _invalid(f"Weights and values must have the same shape. Weight shape: "
                           f"[{weights.size}]; values shape: [{values.size}]")
        rank = int(dense_shape.size)
        indices = np.asarray(indices).reshape(-1, rank)
        batches = indices[:, 0] if rank == 2 else np.zeros(values.size, np.int64)
        idx, counts, size = _count(batches, values, weights, node, rank)
        shape = [int(dense_shape[0]), size] if rank == 2 else [size]
        return idx, counts, np.array(shape, np.int64)

    return compute
