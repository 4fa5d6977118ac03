"""A tensor_forest tree's fertile statistics: candidate splits per leaf and the label
statistics that choose among them (rules: kernels/cpu/_forest_model.py's docstring)."""

from __future__ import annotations

import threading

import numpy as np

from tensorflux.kernels.cpu._forest_model import Params, _from_bytes, _grow_rows, _to_bytes

_SLOT_ARRAYS = ("node", "depth", "nsplits", "feature", "threshold", "weight", "total",
                "left", "total_sq", "left_sq", "left_n")


def weighted_smoothed_gini(total, square, num_classes):
    """TF's WeightedSmoothedGini, elementwise, in float32."""
    smoothed = total + np.float32(num_classes)
    return total * (np.float32(1) - (square + 2 * total + np.float32(num_classes)) /
                    (smoothed * smoothed))


class FertileStats:
    """The slots of a tree's leaves; `lock` guards every use."""

    dropped = False

    def __init__(self, params: Params):
        self.params = params
        self.lock = threading.Lock()
        self.rng: np.random.Generator | None = None
        self.reset()

    def close_resource(self) -> None:
        self.dropped = True

    def reset(self) -> None:
        k, c = self.params.num_splits, self.params.num_outputs
        n = 4
        self.slot_of_node = np.full(16, -1, np.int32)
        self.free: list[int] = list(range(n - 1, -1, -1))
        self.node = np.full(n, -1, np.int32)
        self.depth = np.zeros(n, np.int32)
        self.nsplits = np.zeros(n, np.int32)
        self.feature = np.full((n, k), -1, np.int32)
        self.threshold = np.zeros((n, k), np.float32)
        self.weight = np.zeros(n, np.float32)
        self.total = np.zeros((n, c), np.float32)   # class weights, or output sums
        self.left = np.zeros((n, k, c), np.float32)
        reg = 1 if self.params.regression else 0    # regression only: squares and counts
        self.total_sq = np.zeros((n * reg, c), np.float32)
        self.left_sq = np.zeros((n * reg, k, c), np.float32)
        self.left_n = np.zeros((n * reg, k), np.float32)

    def maybe_initialize(self) -> None:
        if not (self.node >= 0).any():
            self.allocate(0, 0)

    # ---- slots ------------------------------------------------------------------------
    def allocate(self, node: int, depth: int) -> None:
        if not self.free:
            old = self.node.shape[0]
            for name in _SLOT_ARRAYS:
                arr = getattr(self, name)
                if arr.shape[0]:
                    setattr(self, name, _grow_rows(arr, 2 * old, -1 if name in (
                        "node", "feature") else 0))
            self.free = list(range(2 * old - 1, old - 1, -1))
        s = self.free.pop()
        self.slot_of_node = _grow_rows(self.slot_of_node, node + 1, -1)
        self.slot_of_node[node] = s
        self.node[s], self.depth[s] = node, depth
        self.clear_slot(s)

    def clear_slot(self, s: int) -> None:
        self.nsplits[s], self.weight[s] = 0, 0
        self.feature[s], self.threshold[s] = -1, 0
        self.total[s], self.left[s] = 0, 0
        if self.params.regression:
            self.total_sq[s], self.left_sq[s], self.left_n[s] = 0, 0, 0

    def release(self, node: int) -> None:
        s = self.slot_of_node[node]
        self.slot_of_node[node] = -1
        self.node[s] = -1
        self.free.append(int(s))

    def slots_of(self, leaf_ids: np.ndarray) -> np.ndarray:
        known = leaf_ids < self.slot_of_node.shape[0]
        return np.where(known, self.slot_of_node[np.where(known, leaf_ids, 0)], -1)

    # ---- ProcessInputV4 ---------------------------------------------------------------
    def process(self, x, labels, weights, leaf_ids, rng, grow: bool) -> np.ndarray:
        """Starts candidates and accumulates statistics (when `grow`: the tree may still
        split); returns the finished leaves among those this batch reached, in order."""
        slots = self.slots_of(leaf_ids)
        rows = np.flatnonzero(slots >= 0)
        s = slots[rows]
        if grow and rows.size:
            starting = self._start_candidates(x, rows, s, rng)
            keep = ~starting
            self._add_examples(x, labels[rows[keep]], weights[rows[keep]], rows[keep], s[keep])
        touched = np.unique(s)
        return np.sort(self.node[touched[self._finished(touched)]]).astype(np.int32)

    def _start_candidates(self, x, rows, s, rng) -> np.ndarray:
        """Which of the examples start a candidate (the first ones at each slot that
        still has no weight and fewer than K candidates); adds their candidates."""
        k = self.params.num_splits
        need = np.where(self.weight[s] == 0, k - self.nsplits[s], 0)
        if not need.any():
            return np.zeros(rows.size, bool)
        order = np.argsort(s, kind="stable")
        sorted_s = s[order]
        first = np.r_[0, np.flatnonzero(sorted_s[1:] != sorted_s[:-1]) + 1]
        counts = np.diff(np.r_[first, sorted_s.size])
        rank = np.empty(rows.size, np.int64)
        rank[order] = np.arange(sorted_s.size) - np.repeat(first, counts)
        starting = rank < need
        start_rows, start_slots = rows[starting], s[starting]
        column = self.nsplits[start_slots] + rank[starting]
        feats = rng.integers(0, x.shape[1], size=start_rows.size)
        self.feature[start_slots, column] = feats
        self.threshold[start_slots, column] = x[start_rows, feats]
        np.add.at(self.nsplits, start_slots, 1)
        return starting

    def _add_examples(self, x, labels, weights, rows, s) -> None:
        if not rows.size:
            return
        k = self.params.num_splits
        feats = self.feature[s]                                   # [m, K]
        valid = np.arange(k) < self.nsplits[s][:, None]
        values = x[rows[:, None], np.maximum(feats, 0)]
        thr = self.threshold[s]
        goes_left = (values <= thr if self.params.less_equal else values < thr) & valid
        m_idx, k_idx = np.nonzero(goes_left)
        slot_idx = s[m_idx]
        if self.params.regression:
            np.add.at(self.weight, s, 1.0)
            np.add.at(self.total, s, labels)
            np.add.at(self.total_sq, s, labels * labels)
            np.add.at(self.left, (slot_idx, k_idx), labels[m_idx])
            np.add.at(self.left_sq, (slot_idx, k_idx), labels[m_idx] ** 2)
            np.add.at(self.left_n, (slot_idx, k_idx), 1.0)
            return
        np.add.at(self.weight, s, weights)
        np.add.at(self.total, (s, labels), weights)
        np.add.at(self.left, (slot_idx, k_idx, labels[m_idx]), weights[m_idx])

    def _finished(self, slots: np.ndarray) -> np.ndarray:
        done = self.weight[slots] >= self.params.split_after_samples
        if not self.params.regression:
            done &= (self.total[slots] > 0).sum(axis=1) > 1
        return done

    # ---- GrowTreeV4 -------------------------------------------------------------------
    def best_split(self, s: int):
        """(feature, threshold, left leaf values, right leaf values) of slot s's best
        candidate, or None when no candidate has examples on both sides."""
        n = int(self.nsplits[s])
        if n == 0:
            return None
        if self.params.regression:
            return self._best_regression(s, n)
        c = np.float32(self.params.num_outputs)
        left = self.left[s, :n]
        right = self.total[s] - left
        lsum, rsum = left.sum(axis=1), right.sum(axis=1)
        score = (weighted_smoothed_gini(lsum, (left * left).sum(axis=1), c) +
                 weighted_smoothed_gini(rsum, (right * right).sum(axis=1), c))
        ok = (lsum > 0) & (rsum > 0)
        if not ok.any():
            return None
        best = int(np.argmin(np.where(ok, score, np.inf)))
        return self.feature[s, best], self.threshold[s, best], left[best], right[best]

    def _best_regression(self, s: int, n: int):
        ln = self.left_n[s, :n][:, None]
        rn = self.weight[s] - ln
        ok = (ln[:, 0] > 0) & (rn[:, 0] > 0)
        if not ok.any():
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            lmean = self.left[s, :n] / ln
            rmean = (self.total[s] - self.left[s, :n]) / rn
            var = (self.left_sq[s, :n] / ln - lmean * lmean +
                   (self.total_sq[s] - self.left_sq[s, :n]) / rn - rmean * rmean).sum(axis=1)
        best = int(np.argmin(np.where(ok, var, np.inf)))
        return self.feature[s, best], self.threshold[s, best], lmean[best], rmean[best]

    def grow(self, tree, finished: np.ndarray) -> None:
        """Splits the finished leaves on their best candidates while the tree has fewer
        than max_nodes nodes; a leaf with no usable candidate starts over."""
        for node in finished.tolist():
            if tree.size >= self.params.max_nodes:
                break
            if node >= self.slot_of_node.shape[0] or self.slot_of_node[node] < 0:
                continue
            s = int(self.slot_of_node[node])
            best = self.best_split(s)
            if best is None:
                self.clear_slot(s)
                continue
            child = tree.split(node, *best)
            depth = int(self.depth[s]) + 1
            self.release(node)
            self.allocate(child, depth)
            self.allocate(child + 1, depth)

    # ---- checkpoints ------------------------------------------------------------------
    def serialize(self) -> bytes:
        """The slots' leaves and depths; their statistics too with checkpoint_stats."""
        used = np.flatnonzero(self.node >= 0)
        used = used[np.argsort(self.node[used])]
        arrays = {"node": self.node[used], "depth": self.depth[used]}
        if self.params.checkpoint_stats:
            for name in _SLOT_ARRAYS[2:]:
                arr = getattr(self, name)
                if arr.shape[0]:
                    arrays[name] = arr[used]
        return _to_bytes(**arrays)

    def deserialize(self, blob: bytes) -> None:
        self.reset()
        if blob:
            z = _from_bytes(blob, "stats")
            for i, (node, depth) in enumerate(zip(z["node"].tolist(), z["depth"].tolist(),
                                                  strict=True)):
                self.allocate(node, depth)
                s = self.slot_of_node[node]
                for name in _SLOT_ARRAYS[2:]:
                    if name in z:
                        getattr(self, name)[s] = z[name][i]
        self.maybe_initialize()
