"""The two resources of a tensor_forest tree (TF's V4 design), in NumPy, batch-vectorized.

`DecisionTree`: node i is a leaf while `feature[i] < 0`; an inner node sends an example
left (to `left[i]`) when `x[feature[i]] <= threshold[i]` (`<` with split_type "less"),
right (to `left[i] + 1`) otherwise, NaN included. Node 0 is the root; a split appends the
two children, so ids only grow and a tree of n nodes uses ids 0..n-1. A leaf's `values`
row holds its per-class weights (classification) or mean outputs (regression).

`FertileStats`: one slot per leaf that may still split (every leaf: TF's "collection
basic"), holding up to K = num_splits_to_consider candidate splits. Per leaf, in batch
order, TF's rules:
  * while the slot has no weight and fewer than K candidates, each arriving example starts
    one candidate (a random feature, the example's value as threshold) and is not counted;
  * later examples add their label to the slot's totals and, for each candidate they go
    left of, to its left statistics;
  * a slot is finished once its weight reaches split_after_samples and (classification)
    it has seen two classes. GrowTreeV4 then splits it on its best candidate, the lowest
    sum of both sides' weighted smoothed Gini (TF's stat_utils: w * (1 - (sum of squares +
    2w + C) / (w + C)^2)); for regression the lowest sum of the sides' variances. Candidates
    with an empty side never win; a slot with no winner starts over.
Invariant: `slot_of_node[n] >= 0` only for leaves n; freed slots are reused.
"""

from __future__ import annotations

import functools
import io
import json
import threading

import numpy as np

from tensorflux.framework import errors


def _grow_rows(arr: np.ndarray, rows: int, fill=0) -> np.ndarray:
    if arr.shape[0] >= rows:
        return arr
    new = np.full((max(rows, 2 * arr.shape[0]),) + arr.shape[1:], fill, dtype=arr.dtype)
    new[:arr.shape[0]] = arr
    return new


def _to_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _from_bytes(blob: bytes, what: str) -> dict:
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError) as exc:
        raise errors.InvalidArgumentError(None, None, f"Unable to parse {what} config.") \
            from exc


class Params:
    """The fields of a forest's params the kernels read."""

    __slots__ = ("num_outputs", "num_features", "input_features", "max_nodes", "regression",
                 "num_splits", "split_after_samples", "less_equal", "checkpoint_stats",
                 "tree_paths")

    def __init__(self, p: dict):
        self.num_outputs = int(p.get("num_outputs", 2))
        self.num_features = int(p.get("num_features", 0))
        self.input_features = int(p.get("input_features", self.num_features))
        self.max_nodes = int(p.get("max_nodes", 10000))
        self.regression = bool(p.get("regression", False))
        self.num_splits = int(p.get("num_splits_to_consider", 10))
        self.split_after_samples = float(p.get("split_after_samples", 250))
        self.less_equal = p.get("split_type", "less_or_equal") != "less"
        self.checkpoint_stats = bool(p.get("checkpoint_stats", False))
        self.tree_paths = bool(p.get("inference_tree_paths", False))

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def from_attr(params) -> Params:
        """The Params of an op's `params` attr (a JSON object; ops/tensor_forest_ops.py)."""
        if isinstance(params, bytes):
            params = params.decode("utf-8")
        return Params(json.loads(params) if params else {})


class DecisionTree:
    """A tree's nodes (see the module docstring); `lock` guards every use."""

    dropped = False

    def __init__(self, params: Params):
        self.params = params
        self.lock = threading.Lock()
        self.reset()

    def close_resource(self) -> None:
        self.dropped = True

    def reset(self) -> None:
        self.size = 1
        self.feature = np.full(16, -1, np.int32)
        self.threshold = np.zeros(16, np.float32)
        self.left = np.full(16, -1, np.int32)
        self.values = np.zeros((16, self.params.num_outputs), np.float32)

    # ---- traversal and predictions ----------------------------------------------------
    def traverse(self, x: np.ndarray, paths: list | None = None) -> np.ndarray:
        """Each row's leaf id, all rows moving down one level per pass."""
        ids = np.zeros(x.shape[0], np.int32)
        active = np.arange(x.shape[0])
        if paths is not None:
            paths.append(ids.copy())
        while active.size and self.size > 1:
            node = ids[active]
            feat = self.feature[node]
            inner = feat >= 0
            active, node, feat = active[inner], node[inner], feat[inner]
            if not active.size:
                break
            value = x[active, feat]
            thr = self.threshold[node]
            left = value <= thr if self.params.less_equal else value < thr
            ids[active] = self.left[node] + (~left).astype(np.int32)
            if paths is not None:
                step = np.full(x.shape[0], -1, np.int32)
                step[active] = ids[active]
                paths.append(step)
        return ids

    def predictions(self, leaf_ids: np.ndarray) -> np.ndarray:
        """Each example's leaf values, normalized to sum to one for classification (TF
        leaves all-zero rows, such as an untrained tree's, as they are)."""
        out = self.values[leaf_ids]
        if not self.params.regression:
            total = out.sum(axis=1, keepdims=True)
            scale = (total > 0) & (total != 1)
            out = np.where(scale, out / np.where(scale, total, 1), out)
        return out.astype(np.float32, copy=False)

    def update(self, leaf_ids: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> None:
        """UpdateModelV4: add each example's weight to its leaf's count of its class
        (regression leaves keep the means they were split with, as in TF)."""
        if self.params.regression or not leaf_ids.size:
            return
        c = self.params.num_outputs
        flat = np.bincount(leaf_ids.astype(np.int64) * c + labels, weights=weights,
                           minlength=self.size * c)
        self.values[:self.size] += flat.reshape(self.size, c).astype(np.float32)

    def split(self, node: int, feature: int, threshold: float, left_values, right_values):
        """Turns leaf `node` into a test with two new leaves; returns the left one's id."""
        child = self.size
        rows = child + 2
        self.feature = _grow_rows(self.feature, rows, -1)
        self.threshold = _grow_rows(self.threshold, rows)
        self.left = _grow_rows(self.left, rows, -1)
        self.values = _grow_rows(self.values, rows)
        self.values[child] = left_values
        self.values[child + 1] = right_values
        self.feature[node], self.threshold[node], self.left[node] = feature, threshold, child
        self.size = rows
        return child

    def feature_counts(self) -> np.ndarray:
        used = self.feature[:self.size]
        n = self.params.num_features
        counts = np.bincount(used[used >= 0], minlength=n)[:n]
        return counts.astype(np.int32)

    # ---- checkpoints ------------------------------------------------------------------
    def serialize(self) -> bytes:
        n = self.size
        return _to_bytes(feature=self.feature[:n], threshold=self.threshold[:n],
                         left=self.left[:n], values=self.values[:n])

    def deserialize(self, blob: bytes) -> None:
        self.reset()
        if not blob:
            return
        z = _from_bytes(blob, "tree")
        if z["values"].shape[1:] != (self.params.num_outputs,):
            raise errors.InvalidArgumentError(
                None, None, f"Tree config has {z['values'].shape[1:]} outputs per leaf, "
                f"expected {self.params.num_outputs}")
        self.size = int(z["feature"].shape[0])
        self.feature, self.threshold = z["feature"].copy(), z["threshold"].copy()
        self.left, self.values = z["left"].copy(), z["values"].copy()
