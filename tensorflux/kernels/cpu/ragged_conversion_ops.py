"""Kernels of RaggedTensorToVariant and RaggedTensorFromVariant (ops/ragged_conversion_ops.py).

A variant entry is a `RaggedVariant`: the nested row splits (a tuple of 1-D arrays, empty
for a dense tensor) and the flat values of one ragged tensor.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.registry import kernel_factory


class RaggedVariant:
    """One ragged tensor inside a variant tensor."""

    __slots__ = ("splits", "values")

    def __init__(self, splits: tuple, values: np.ndarray):
        self.splits, self.values = splits, values

    @property
    def ragged_rank(self) -> int:
        return len(self.splits)

    def nrows(self) -> int:
        return len(self.splits[0]) - 1 if self.splits else self.values.shape[0]

    def __repr__(self) -> str:
        return f"RaggedVariant(splits={list(self.splits)}, values={self.values!r})"


def _scalar(item) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = item
    return out


def _row(splits: tuple, values: np.ndarray, i: int) -> RaggedVariant:
    """Row i of the ragged tensor (splits, values): its splits rebased to start at 0."""
    if not splits:
        return RaggedVariant((), values[i])
    lo, hi = int(splits[0][i]), int(splits[0][i + 1])
    inner = []
    for s in splits[1:]:
        inner.append(s[lo:hi + 1] - s[lo])
        lo, hi = int(s[lo]), int(s[hi])
    return RaggedVariant(tuple(inner), values[lo:hi])


def _check_splits(splits: tuple, values: np.ndarray) -> None:
    for level, s in enumerate(splits):
        nvals = len(splits[level + 1]) - 1 if level + 1 < len(splits) else values.shape[0]
        if s.ndim != 1 or len(s) == 0 or s[0] != 0 or np.any(np.diff(s) < 0) or \
                s[-1] != nvals:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid ragged splits: splits[{level}] = {s.tolist()} for "
                f"{nvals} values")


@kernel_factory("RaggedTensorToVariant")
def _ragged_to_variant(node):
    batched = node.attrs["batched_input"]

    def compute(ctx, *args):
        splits, values = tuple(np.asarray(s) for s in args[:-1]), np.asarray(args[-1])
        _check_splits(splits, values)
        if not batched:
            return _scalar(RaggedVariant(splits, values))
        if not splits and values.ndim == 0:
            raise errors.InvalidArgumentError(
                None, None, "Unable to unbatch a ragged tensor of rank 0 (batched_input "
                "needs a tensor of rank >= 1)")
        n = len(splits[0]) - 1 if splits else values.shape[0]
        out = np.empty((n,), dtype=object)
        for i in range(n):
            out[i] = _row(splits, values, i)
        return out

    return compute


def _check_items(items: list, in_rank: int, values_dtype) -> None:
    for it in items:
        if it.ragged_rank != in_rank:
            raise errors.InvalidArgumentError(
                None, None, f"Encoded input RaggedVariant has ragged_rank={it.ragged_rank}. "
                f"Expected ragged_rank={in_rank}.")
        if it.values.dtype != values_dtype:
            raise errors.InvalidArgumentError(
                None, None, f"Expected values Tensor dtype: {values_dtype}, found: "
                f"{it.values.dtype}")


def _combine(items: list, in_rank: int, splits_dtype, values_dtype, lead: tuple):
    """(splits, values) of one ragged tensor made of `items` (RaggedVariants in row-major
    order over the dimensions `lead`, which become its outer ragged dimensions)."""
    # The leading dimensions but the last are uniform: entry j has lead[j + 1] rows each.
    splits = [np.arange(int(np.prod(lead[:j + 1])) + 1, dtype=splits_dtype) * lead[j + 1]
              for j in range(len(lead) - 1)]
    splits.append(np.concatenate([[0], np.cumsum([it.nrows() for it in items])])
                  .astype(splits_dtype))
    for level in range(in_rank):
        parts, offset = [np.zeros(1, splits_dtype)], 0
        for it in items:
            s = np.asarray(it.splits[level])
            parts.append((s[1:] + offset).astype(splits_dtype))
            offset += int(s[-1])
        splits.append(np.concatenate(parts))
    if not items:
        return splits, np.zeros((0,), values_dtype)
    return splits, np.concatenate([it.values for it in items])


@kernel_factory("RaggedTensorFromVariant")
def _ragged_from_variant(node):
    out_rank = node.attrs["output_ragged_rank"]
    in_rank = node.attrs["input_ragged_rank"]
    splits_dtype = node.attrs["Tsplits"].as_numpy_dtype
    values_dtype = np.dtype(node.attrs["Tvalues"].as_numpy_dtype)

    def compute(ctx, encoded):
        encoded = np.asarray(encoded, dtype=object)
        rank = in_rank if in_rank != -1 else out_rank - encoded.ndim
        if rank + encoded.ndim != out_rank:
            raise errors.InvalidArgumentError(
                None, None, f"output_ragged_rank ({out_rank}) must equal input_ragged_rank "
                f"({rank}) plus the rank of encoded_ragged ({encoded.ndim})")
        items = list(encoded.reshape(-1))
        _check_items(items, rank, values_dtype)
        if encoded.ndim == 0:
            splits, values = items[0].splits, items[0].values
        else:
            splits, values = _combine(items, rank, splits_dtype, values_dtype, encoded.shape)
        if not splits:
            return values  # a single output: the dense values
        return tuple(np.asarray(s, splits_dtype) for s in splits) + (values,)

    return compute
