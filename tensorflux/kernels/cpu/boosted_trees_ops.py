"""CPU kernels of the gradient-boosted-trees ops (tensorflux/ops/boosted_trees_ops.py).

The resource. A `TreeEnsembleResource` holds a stamp token and a `TreeEnsemble` message
(protos/boosted_trees.proto), the one source of truth: serialization is the message's bytes.
Prediction reads a per-tree array view of it (`_Tree`: leaf flags, split feature, threshold,
children, leaf value, the value a split node had as a leaf), built on first use after each
change. Every kernel holds the resource's lock while it reads or changes the message.

Leaf values. A tree's output is the value of the leaf an example reaches (times the tree's
weight, 1 for trees grown layer by layer); the ensemble's logits are the sum over trees.
Splitting a leaf of value v gives children v + learning_rate * contribution, and the split
node keeps v as its `original_leaf`: an example cached at a node that has since been split
changes its logits by (new leaf value - v) (BoostedTreesTrainingPredict).

Gains. For a node whose examples sum to gradient g and hessian h, the best leaf value under
l1/l2 regularization minimizes g*w + (h + l2)*w^2/2 + l1*|w|: w = -g'/(h + l2) with
g' = g shrunk towards 0 by l1 (w = 0 when |g| <= l1); the node's gain is g'^2/(h + l2)
(twice the loss's drop). A split's gain is the children's gains less the parent's less
tree_complexity; thresholds are bucket ids (feature <= threshold goes left).

Growth. Each BoostedTreesUpdateEnsemble counts a layer attempt and splits the chosen leaves
of the latest tree (a new tree when there is none or the latest is finalized); the new
leaves are the next layer ([start, end) in the growing metadata, [0, 1) for a new tree). At
max_depth layers the tree is finalized, post-pruned if asked (`prune_tree`), and an empty
tree (one leaf of value 0) is started.
"""

from __future__ import annotations

import threading

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu.data_flow_ops import lookup
from tensorflux.kernels.cpu.state_ops import as_handle, handle_kernel
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.protos import boosted_trees_pb2

TYPE_NAME = "N10tensorflow26BoostedTreesEnsembleResourceE"
_HESSIAN_EPS = 1e-15  # a node whose h + l2 is below this cannot be split
_MIN_DELTA_FOR_CENTER_BIAS = 0.01


class TreeEnsembleResource:
    """A tree ensemble: its stamp token and TreeEnsemble message, under one lock."""

    dropped = False

    def __init__(self, stamp: int, ensemble: boosted_trees_pb2.TreeEnsemble):
        self.lock = threading.Lock()
        self.stamp = stamp
        self.ensemble = ensemble
        self._trees: list | None = None

    def close_resource(self) -> None:
        self.dropped = True

    def changed(self, from_tree: int = 0) -> None:
        """Drops the array view of the trees from `from_tree` on after they changed."""
        if self._trees is not None:
            self._trees = self._trees[:from_tree]

    def trees(self) -> list:
        if self._trees is None:
            self._trees = []
        e = self.ensemble
        for t in range(len(self._trees), len(e.trees)):
            meta = e.tree_metadata[t] if t < len(e.tree_metadata) else None
            self._trees.append(_Tree(e.trees[t], meta))
        return self._trees

    def weights(self) -> list[float]:
        return list(self.ensemble.tree_weights)


def leaf_value(leaf) -> float:
    """The first logit of a Leaf (its scalar, or its vector's first value)."""
    if leaf.WhichOneof("leaf") == "vector" and leaf.vector.value:
        return float(leaf.vector.value[0])
    return float(leaf.scalar)


class _Tree:
    """One tree's nodes as arrays (see the module docstring)."""

    __slots__ = ("is_leaf", "feature", "threshold", "left", "right", "value", "original",
                 "pruned_to", "pruned_change")

    def __init__(self, tree, meta=None):
        n = len(tree.nodes)
        self.is_leaf = np.ones(n, bool)
        self.feature = np.zeros(n, np.int64)
        self.threshold = np.zeros(n, np.int64)
        self.left = np.zeros(n, np.int64)
        self.right = np.zeros(n, np.int64)
        self.value = np.zeros(n, np.float64)
        self.original = np.zeros(n, np.float64)
        for i, node in enumerate(tree.nodes):
            kind = node.WhichOneof("node")
            if kind == "bucketized_split":
                s = node.bucketized_split
                self.is_leaf[i] = False
                self.feature[i], self.threshold[i] = s.feature_id, s.threshold
                self.left[i], self.right[i] = s.left_id, s.right_id
                self.original[i] = leaf_value(node.metadata.original_leaf)
            elif kind in ("categorical_split", "dense_split"):
                raise errors.UnimplementedError(None, None, f"{kind} nodes are not supported")
            else:
                self.value[i] = leaf_value(node.leaf)
        # post-pruning: where each node of the unpruned tree went, and how its value changed
        moved = meta.post_pruned_nodes_meta if meta is not None else []
        self.pruned_to = np.array([m.new_node_id for m in moved], np.int64)
        self.pruned_change = np.array([m.logit_change[0] if m.logit_change else 0.0
                                       for m in moved], np.float64)

    def route(self, features: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """The leaf each example (a column of `features`) reaches from `nodes`."""
        nodes = nodes.copy()
        while True:
            active = np.nonzero(~self.is_leaf[nodes])[0]
            if active.size == 0:
                return nodes
            at = nodes[active]
            feature = self.feature[at]
            if feature.max() >= features.shape[0]:
                raise errors.InvalidArgumentError(
                    None, None, f"The tree splits on feature {int(feature.max())} but only "
                    f"{features.shape[0]} bucketized features were given")
            go_left = features[feature, active] <= self.threshold[at]
            nodes[active] = np.where(go_left, self.left[at], self.right[at])


# ---- the resource and its lifetime ---------------------------------------------------------


kernel_factory("BoostedTreesEnsembleResourceHandleOp", device_constant=True)(handle_kernel)


def _find(ctx, handle):
    h = as_handle(handle)
    return h, ctx.resource_mgr.get(h.container, h.name)


def _ensemble(ctx, handle) -> TreeEnsembleResource:
    return lookup(ctx, handle, TreeEnsembleResource, TYPE_NAME)


def _parse(serialized) -> boosted_trees_pb2.TreeEnsemble:
    data = serialized.item() if isinstance(serialized, np.ndarray) else serialized
    proto = boosted_trees_pb2.TreeEnsemble()
    try:
        proto.ParseFromString(bytes(data))
    except Exception as e:  # the message's DecodeError
        raise errors.InvalidArgumentError(
            None, None, "Unable to parse tree ensemble proto.") from e
    return proto


@kernel("BoostedTreesCreateEnsemble")
def _create(ctx, handle, stamp, serialized):
    h = as_handle(handle)
    proto = _parse(serialized)
    created = []

    def make():
        created.append(True)
        return TreeEnsembleResource(int(stamp), proto)

    ctx.resource_mgr.lookup_or_create(h.container, h.name, make)
    if not created:
        raise errors.AlreadyExistsError(
            None, None, f"Resource {h.container or ctx.resource_mgr.default_container}/"
            f"{h.name}/{TYPE_NAME} already exists.")


@kernel("IsBoostedTreesEnsembleInitialized")
def _is_initialized(ctx, handle):
    _, res = _find(ctx, handle)
    return np.bool_(isinstance(res, TreeEnsembleResource))


@kernel("BoostedTreesSerializeEnsemble")
def _serialize(ctx, handle):
    res = _ensemble(ctx, handle)
    with res.lock:
        return np.int64(res.stamp), np.array(res.ensemble.SerializeToString(), dtype=object)


@kernel("BoostedTreesDeserializeEnsemble")
def _deserialize(ctx, handle, stamp, serialized):
    res = _ensemble(ctx, handle)
    proto = _parse(serialized)
    with res.lock:
        res.stamp, res.ensemble = int(stamp), proto
        res.changed()


@kernel("BoostedTreesGetEnsembleStates")
def _states(ctx, handle):
    res = _ensemble(ctx, handle)
    with res.lock:
        e = res.ensemble
        finalized = sum(1 for m in e.tree_metadata if m.is_finalized)
        g = e.growing_metadata
        # with no tree yet, or a latest tree with no layer (the bias tree that
        # BoostedTreesCenterBias makes), the next layer is a root
        fresh = not e.trees or e.tree_metadata[-1].num_layers_grown == 0
        nodes = [0, 1] if fresh else [g.last_layer_node_start, g.last_layer_node_end]
        return (np.int64(res.stamp), np.int32(len(e.trees)), np.int32(finalized),
                np.int32(g.num_layers_attempted), np.array(nodes, np.int32))


# ---- prediction --------------------------------------------------------------------------


def _features(bucketized, batch: int) -> np.ndarray:
    cols = [np.asarray(f).reshape(-1) for f in bucketized]
    for c in cols:
        if c.shape[0] != batch:
            raise errors.InvalidArgumentError(
                None, None, f"Bucketized features must all have {batch} examples, got "
                f"{c.shape[0]}")
    return np.stack(cols).astype(np.int64) if cols else np.zeros((0, batch), np.int64)


def predict_logits(res: TreeEnsembleResource, features: np.ndarray) -> np.ndarray:
    """[batch] float64: the sum over trees of weight * the value of the leaf reached."""
    batch = features.shape[1]
    out = np.zeros(batch, np.float64)
    root = np.zeros(batch, np.int64)
    for tree, w in zip(res.trees(), res.weights(), strict=True):
        out += w * tree.value[tree.route(features, root)]
    return out


def _check_logits_dimension(dim: int) -> None:
    if dim != 1:
        raise errors.UnimplementedError(
            None, None, f"Only logits_dimension 1 is supported, got {dim}")


@kernel_factory("BoostedTreesPredict")
def _predict(node):
    dim = node.attrs["logits_dimension"]

    def compute(ctx, handle, *bucketized):
        _check_logits_dimension(dim)
        res = _ensemble(ctx, handle)
        batch = np.asarray(bucketized[0]).reshape(-1).shape[0]
        with res.lock:
            logits = predict_logits(res, _features(bucketized, batch))
        return logits.astype(np.float32).reshape(batch, 1)

    return compute


def training_predict(res: TreeEnsembleResource, features, cached_trees, cached_nodes):
    """(partial logits float64 [batch], tree ids, node ids) as BoostedTreesTrainingPredict."""
    batch = features.shape[1]
    trees, weights = res.trees(), res.weights()
    partial = np.zeros(batch, np.float64)
    tree_ids = np.asarray(cached_trees, np.int64).copy()
    nodes = np.asarray(cached_nodes, np.int64).copy()
    if not trees or batch == 0:  # nothing to route through: the caches stay
        return partial, tree_ids.astype(np.int32), nodes.astype(np.int32)
    latest = len(trees) - 1
    if (tree_ids > latest).any() or (tree_ids < 0).any():
        raise errors.InvalidArgumentError(None, None, "Cached tree ids out of range")
    fresh = nodes < 0
    nodes[fresh] = 0
    for t in range(int(tree_ids.min()), latest + 1):
        tree, w = trees[t], weights[t]
        here = np.nonzero(tree_ids == t)[0]
        if here.size:
            start = nodes[here]
            cached = ~fresh[here]
            if tree.pruned_to.size and cached.any():  # cached before the tree was pruned
                old = start[cached]
                if old.max() >= tree.pruned_to.size:
                    raise errors.InvalidArgumentError(None, None,
                                                      "Cached node ids out of range")
                partial[here[cached]] += w * tree.pruned_change[old]
                start[cached] = tree.pruned_to[old]
            if start.max() >= tree.is_leaf.size:
                raise errors.InvalidArgumentError(None, None, "Cached node ids out of range")
            leaf = tree.route(features[:, here], start)
            partial[here] += w * tree.value[leaf]
            # a cached example holds the value its node had: a leaf's, or the original
            # leaf of a node split since
            held = np.where(tree.is_leaf[start], tree.value[start], tree.original[start])
            partial[here[cached]] -= w * held[cached]
            nodes[here] = leaf
        if t < latest:
            tree_ids[here] = t + 1
            nodes[here] = 0
            fresh[here] = True
    return partial, tree_ids.astype(np.int32), nodes.astype(np.int32)


@kernel_factory("BoostedTreesTrainingPredict")
def _training_predict(node):
    dim = node.attrs["logits_dimension"]

    def compute(ctx, handle, cached_trees, cached_nodes, *bucketized):
        _check_logits_dimension(dim)
        res = _ensemble(ctx, handle)
        batch = np.asarray(cached_trees).reshape(-1).shape[0]
        with res.lock:
            partial, trees, nodes = training_predict(
                res, _features(bucketized, batch), np.asarray(cached_trees).reshape(-1),
                np.asarray(cached_nodes).reshape(-1))
        return partial.astype(np.float32).reshape(batch, 1), trees, nodes

    return compute


@kernel_factory("BoostedTreesExampleDebugOutputs")
def _debug_outputs(node):
    dim = node.attrs["logits_dimension"]

    def compute(ctx, handle, *bucketized):
        _check_logits_dimension(dim)
        res = _ensemble(ctx, handle)
        batch = np.asarray(bucketized[0]).reshape(-1).shape[0]
        features = _features(bucketized, batch)
        with res.lock:
            paths = [boosted_trees_pb2.DebugOutput() for _ in range(batch)]
            logits = np.zeros(batch, np.float64)
            trees = res.trees()
            if trees:  # the path starts at the bias: the first tree's root as a leaf
                root = trees[0].value[0] if trees[0].is_leaf[0] else trees[0].original[0]
                for p in paths:
                    p.logits_path.append(float(res.weights()[0] * root))
            for tree, w in zip(res.trees(), res.weights(), strict=True):
                _debug_path(tree, w, features, logits, paths)
        return np.array([p.SerializeToString() for p in paths], dtype=object)

    return compute


def _debug_path(tree, weight, features, logits, paths) -> None:
    """Appends one tree's splits to each example's DebugOutput: the feature of each split
    node passed and the logits after it (the earlier trees' sum plus the value of the node
    reached: a leaf's, or the original leaf of a split node)."""
    for i in range(features.shape[1]):
        n, base = 0, logits[i]
        while not tree.is_leaf[n]:
            paths[i].feature_ids.append(int(tree.feature[n]))
            n = tree.left[n] if features[tree.feature[n], i] <= tree.threshold[n] \
                else tree.right[n]
            child = tree.value[n] if tree.is_leaf[n] else tree.original[n]
            paths[i].logits_path.append(float(base + weight * child))
        logits[i] = base + weight * tree.value[n]


# ---- statistics and gains ------------------------------------------------------------------


@kernel_factory("BoostedTreesMakeStatsSummary", expensive=True)
def _make_stats_summary(node):
    max_splits, num_buckets = node.attrs["max_splits"], node.attrs["num_buckets"]

    def compute(ctx, node_ids, gradients, hessians, *bucketized):
        return make_stats_summary(node_ids, gradients, hessians, bucketized, max_splits,
                                  num_buckets)

    return compute


def make_stats_summary(node_ids, gradients, hessians, bucketized, max_splits, num_buckets):
    """[num_features, max_splits, num_buckets, 2] float32 sums of (gradient, hessian)."""
    node_ids = np.asarray(node_ids).reshape(-1).astype(np.int64)
    g = np.asarray(gradients, np.float32)
    h = np.asarray(hessians, np.float32)
    g = g[:, 0] if g.ndim > 1 else g  # [batch, logits_dimension]: the first logit's
    h = h[:, 0] if h.ndim > 1 else h
    if node_ids.size and (node_ids.min() < 0 or node_ids.max() >= max_splits):
        raise errors.InvalidArgumentError(
            None, None, f"Node ids must be in [0, {max_splits}), got {node_ids.max()}")
    out = np.zeros((len(bucketized), max_splits, num_buckets, 2), np.float32)
    cells = max_splits * num_buckets
    for f, feature in enumerate(bucketized):
        b = np.asarray(feature).reshape(-1).astype(np.int64)
        if b.size and (b.min() < 0 or b.max() >= num_buckets):
            raise errors.InvalidArgumentError(
                None, None, f"Bucket ids must be in [0, {num_buckets}), got {b.max()}")
        cell = node_ids * num_buckets + b
        out[f, :, :, 0] = np.bincount(cell, g, cells).reshape(max_splits, num_buckets)
        out[f, :, :, 1] = np.bincount(cell, h, cells).reshape(max_splits, num_buckets)
    return out


def weight_and_gain(g, h, l1: float, l2: float):
    """(leaf weight, gain) of nodes with gradient sums g and hessian sums h (arrays)."""
    g, h = np.asarray(g, np.float64), np.asarray(h, np.float64)
    shrunk = g
    if l1 > 0:
        shrunk = np.where(g > l1, g - l1, np.where(g < -l1, g + l1, 0.0))
    denom = h + l2
    ok = denom > _HESSIAN_EPS
    weight = np.where(ok, -shrunk / np.where(ok, denom, 1.0), 0.0)
    return weight, np.where(ok, -shrunk * weight, 0.0)


def best_splits(stats: np.ndarray, l1, l2, tree_complexity, min_node_weight):
    """The best split of each node of [nodes, num_buckets, 2] stats: (whether the node has
    one (its hessian reaches `min_node_weight`), gain, threshold, left weight, right weight),
    one array each.

    Thresholds 0 .. num_buckets - 1 are tried (the last puts every example left); the
    first of equal gains wins."""
    cum = np.cumsum(stats.astype(np.float64), axis=1)
    total_g, total_h = cum[:, -1:, 0], cum[:, -1:, 1]
    _, parent_gain = weight_and_gain(total_g[:, 0], total_h[:, 0], l1, l2)
    lw, lg = weight_and_gain(cum[:, :, 0], cum[:, :, 1], l1, l2)
    rw, rg = weight_and_gain(total_g - cum[:, :, 0], total_h - cum[:, :, 1], l1, l2)
    gains = (lg + rg).astype(np.float32)
    b = np.argmax(gains, axis=1) if gains.size else np.zeros(0, np.int64)
    rows = np.arange(b.size)
    # the split's gain in float32, as TensorFlow computes it
    gain = gains[rows, b] - parent_gain.astype(np.float32) - np.float32(tree_complexity)
    return total_h[:, 0] >= min_node_weight, gain, b, lw[rows, b], rw[rows, b]


@kernel_factory("BoostedTreesCalculateBestGainsPerFeature", expensive=True)
def _best_gains(node):
    n = node.attrs["num_features"]

    def compute(ctx, node_id_range, *rest):
        summaries, (l1, l2, complexity, min_weight) = rest[:n], rest[n:]
        start, end = (int(x) for x in np.asarray(node_id_range).reshape(-1)[:2])
        outs = [[], [], [], [], []]
        for stats in summaries:
            stats = np.asarray(stats)
            if not 0 <= start <= end <= stats.shape[0]:
                raise errors.InvalidArgumentError(
                    None, None, f"Node id range [{start}, {end}) is not within the "
                    f"{stats.shape[0]} nodes of the stats summary")
            ok, gain, threshold, left, right = best_splits(
                stats[start:end], float(l1), float(l2), float(complexity),
                float(min_weight))
            outs[0].append(np.arange(start, end, dtype=np.int32)[ok])
            outs[1].append(gain[ok].astype(np.float32))
            outs[2].append(threshold[ok].astype(np.int32))
            outs[3].append(left[ok].astype(np.float32).reshape(-1, 1))
            outs[4].append(right[ok].astype(np.float32).reshape(-1, 1))
        flat = tuple(x for group in outs for x in group)
        return flat if len(flat) != 1 else flat[0]

    return compute


# ---- growing -------------------------------------------------------------------------------


def _new_tree(e: boosted_trees_pb2.TreeEnsemble, root_value: float = 0.0) -> None:
    e.trees.add().nodes.add().leaf.scalar = root_value
    e.tree_weights.append(1.0)
    e.tree_metadata.add()


def _growable_tree(e: boosted_trees_pb2.TreeEnsemble) -> int:
    """The latest tree, or a new one when there is none or it is finalized; counts the
    layer attempt."""
    g = e.growing_metadata
    if not e.trees or e.tree_metadata[-1].is_finalized:
        _new_tree(e)
        g.last_layer_node_start, g.last_layer_node_end = 0, 1
    g.num_layers_attempted += 1
    return len(e.trees) - 1


def choose_splits(feature_ids, node_ids, gains, thresholds, lefts, rights, pruning_mode):
    """node id -> (gain, feature id, threshold, left, right): the best candidate of each
    node over the features (equal gains: the smaller feature id); pre-pruning drops
    negative gains."""
    best: dict[int, tuple] = {}
    for f, nodes, gs, ts, ls, rs in zip(feature_ids, node_ids, gains, thresholds, lefts,
                                        rights, strict=True):
        for node_id, gain, t, left, right in zip(
                np.asarray(nodes).reshape(-1), np.asarray(gs).reshape(-1),
                np.asarray(ts).reshape(-1), np.asarray(ls).reshape(-1),
                np.asarray(rs).reshape(-1), strict=True):
            if pruning_mode == 1 and gain < 0:
                continue
            cand = (float(gain), int(f), int(t), float(left), float(right))
            old = best.get(int(node_id))
            if old is None or cand[0] > old[0] or (cand[0] == old[0] and cand[1] < old[1]):
                best[int(node_id)] = cand
    return best


def grow_layer(e: boosted_trees_pb2.TreeEnsemble, best: dict, max_depth: int,
               learning_rate: float, post_prune: bool = False) -> None:
    """Splits the latest tree's nodes in `best` (see `choose_splits`); finalizes the tree
    at max_depth (post-pruning it if asked) and starts an empty one."""
    t = _growable_tree(e)
    if not best:
        return
    tree, meta, g = e.trees[t], e.tree_metadata[t], e.growing_metadata
    if meta.num_layers_grown == 0:
        g.num_trees_attempted += 1  # the tree's first layer
    first = len(tree.nodes)
    for node_id in sorted(best):
        gain, feature, threshold, left, right = best[node_id]
        node = tree.nodes[node_id]
        if node.WhichOneof("node") != "leaf":
            raise errors.InvalidArgumentError(
                None, None, f"Node {node_id} of tree {t} is not a leaf")
        parent = leaf_value(node.leaf)
        original = boosted_trees_pb2.Leaf()
        original.CopyFrom(node.leaf)
        keep_original = original != boosted_trees_pb2.Leaf()  # a leaf of 0 is not kept
        left_id, right_id = len(tree.nodes), len(tree.nodes) + 1
        tree.nodes.add().leaf.scalar = parent + learning_rate * left
        tree.nodes.add().leaf.scalar = parent + learning_rate * right
        node = tree.nodes[node_id]
        split = node.bucketized_split
        split.feature_id, split.threshold = feature, threshold
        split.left_id, split.right_id = left_id, right_id
        node.metadata.gain = gain
        if keep_original:
            node.metadata.original_leaf.CopyFrom(original)
    meta.num_layers_grown += 1
    g.last_layer_node_start, g.last_layer_node_end = first, len(tree.nodes)
    if meta.num_layers_grown >= max_depth:
        meta.is_finalized = True
        if post_prune:
            prune_tree(tree, meta)
        _new_tree(e)
        g.last_layer_node_start, g.last_layer_node_end = 0, 1


def prune_tree(tree, meta) -> None:
    """Post-pruning of a finalized tree: a split of negative gain whose children are both
    leaves becomes a leaf again (its original value), bottom up until none is left; the
    nodes left are renumbered in their order. `meta.post_pruned_nodes_meta` then maps each
    node id of the unpruned tree to the node it became part of and the change of the
    value an example cached there holds. A tree pruned to its root stays, a single leaf."""
    nodes = list(tree.nodes)
    n = len(nodes)
    leaf = [node.WhichOneof("node") == "leaf" for node in nodes]
    parent = {}
    for i, node in enumerate(nodes):
        if not leaf[i]:
            parent[node.bucketized_split.left_id] = parent[node.bucketized_split.right_id] = i
    removed = [False] * n
    held = [leaf_value(node.leaf) if leaf[i] else leaf_value(node.metadata.original_leaf)
            for i, node in enumerate(nodes)]
    changed = True
    while changed:
        changed = False
        for i in reversed(range(n)):
            if removed[i] or leaf[i] or nodes[i].metadata.gain >= 0:
                continue
            s = nodes[i].bucketized_split
            if leaf[s.left_id] and leaf[s.right_id]:
                leaf[i], removed[s.left_id], removed[s.right_id] = True, True, True
                changed = True
    if not any(removed):
        return
    new_id = {}
    for i in range(n):
        if not removed[i]:
            new_id[i] = len(new_id)

    def target(i):
        while removed[i]:
            i = parent[i]
        return i

    kept = []
    for i in range(n):
        if removed[i]:
            continue
        node = boosted_trees_pb2.Node()
        if leaf[i]:
            node.leaf.scalar = held[i]
        else:
            node.CopyFrom(nodes[i])
            s = node.bucketized_split
            s.left_id, s.right_id = new_id[s.left_id], new_id[s.right_id]
        kept.append(node)
    for i in range(n):
        t = target(i)
        m = meta.post_pruned_nodes_meta.add()
        m.new_node_id = new_id[t]
        m.logit_change.append(held[t] - held[i] if leaf[t] else 0.0)
    del tree.nodes[:]
    tree.nodes.extend(kept)


@kernel_factory("BoostedTreesUpdateEnsemble")
def _update(node):
    n, pruning = node.attrs["num_features"], node.attrs["pruning_mode"]

    def compute(ctx, handle, feature_ids, *rest):
        lists = [rest[i * n:(i + 1) * n] for i in range(5)]
        max_depth, learning_rate = int(rest[5 * n]), float(rest[5 * n + 1])
        best = choose_splits(np.asarray(feature_ids).reshape(-1), *lists, pruning)
        res = _ensemble(ctx, handle)
        with res.lock:
            latest = len(res.ensemble.trees) - 1  # only it can change; new ones are added
            grow_layer(res.ensemble, best, max_depth, learning_rate, post_prune=pruning == 2)
            res.stamp += 1  # every update is a new version of the ensemble
            res.changed(max(latest, 0))

    return compute


@kernel("BoostedTreesCenterBias")
def _center_bias(ctx, handle, mean_gradients, mean_hessians, l1, l2):
    g = float(np.asarray(mean_gradients).reshape(-1)[0])
    h = float(np.asarray(mean_hessians).reshape(-1)[0])
    step, _ = weight_and_gain(g, h, float(l1), float(l2))
    step = float(step)
    res = _ensemble(ctx, handle)
    with res.lock:
        e = res.ensemble
        if not e.trees:
            _new_tree(e, step)
            bias = step
        else:
            root = e.trees[0].nodes[0]
            bias = leaf_value(root.leaf) + step
            root.leaf.scalar = bias
        res.stamp += 1
        res.changed()
    return np.bool_(bias != 0 and abs(step / bias) > _MIN_DELTA_FOR_CENTER_BIAS)


# ---- quantile streams ----------------------------------------------------------------------
#
# A stream keeps its summaries exactly (every distinct value with its summed weight), so
# its approximation error is 0, within any epsilon. A flush turns it into bucket
# boundaries: the smallest and largest value, and for each rank i * total / num_buckets the
# value whose middle rank ((rank before it + rank after it) / 2) is nearest (the smaller
# on a tie), without duplicates. BoostedTreesBucketize puts a value in the bucket of the
# first boundary not below it (numpy's searchsorted, side "left").

QUANTILE_TYPE_NAME = "N10tensorflow24BoostedTreesQuantileStreamResourceE"


class QuantileStreamResource:
    """`num_streams` streams of (value, weight) summaries and their bucket boundaries."""

    dropped = False

    def __init__(self, epsilon: float, num_streams: int, max_elements: int):
        self.lock = threading.Lock()
        self.epsilon, self.max_elements = epsilon, max_elements
        self.summaries: list[list] = [[] for _ in range(num_streams)]
        self.boundaries = [np.zeros(0, np.float32) for _ in range(num_streams)]

    def close_resource(self) -> None:
        self.dropped = True


kernel_factory("BoostedTreesQuantileStreamResourceHandleOp", device_constant=True)(
    handle_kernel)


def _streams(ctx, handle) -> QuantileStreamResource:
    h, res = _find(ctx, handle)
    if not isinstance(res, QuantileStreamResource):
        container = h.container or ctx.resource_mgr.default_container
        raise errors.NotFoundError(None, None, f"Resource {container}/{h.name}/"
                                   f"{QUANTILE_TYPE_NAME} does not exist.")
    return res


@kernel_factory("BoostedTreesCreateQuantileStreamResource")
def _create_streams(node):
    max_elements = node.attrs["max_elements"]

    def compute(ctx, handle, epsilon, num_streams):
        h = as_handle(handle)
        if float(epsilon) <= 0:
            raise errors.InvalidArgumentError(None, None,
                                              "An epsilon value of zero is not allowed.")
        ctx.resource_mgr.lookup_or_create(h.container, h.name, lambda: QuantileStreamResource(
            float(epsilon), int(num_streams), max_elements))

    return compute


@kernel("IsBoostedTreesQuantileStreamResourceInitialized")
def _streams_initialized(ctx, handle):
    _, res = _find(ctx, handle)
    return np.bool_(isinstance(res, QuantileStreamResource))


def quantile_summary(values, weights) -> np.ndarray:
    """[n, 4] float32 rows (value, weight, min_rank, max_rank) of the distinct values."""
    values = np.asarray(values, np.float32).reshape(-1)
    weights = np.asarray(weights, np.float32).reshape(-1)
    keep = weights > 0
    distinct, inverse = np.unique(values[keep], return_inverse=True)
    summed = np.bincount(inverse, weights[keep], distinct.size)
    after = np.cumsum(summed)
    return np.stack([distinct, summed, after - summed, after], axis=1).astype(np.float32)


@kernel("BoostedTreesMakeQuantileSummaries")
def _make_summaries(ctx, *args):
    *values, weights, _epsilon = args
    out = tuple(quantile_summary(v, weights) for v in values)
    return out if len(out) != 1 else out[0]


@kernel("BoostedTreesQuantileStreamResourceAddSummaries")
def _add_summaries(ctx, handle, *summaries):
    res = _streams(ctx, handle)
    with res.lock:
        if len(summaries) != len(res.summaries):
            raise errors.InvalidArgumentError(
                None, None, f"Expected {len(res.summaries)} summaries, got {len(summaries)}")
        for stream, summary in zip(res.summaries, summaries, strict=True):
            stream.append(np.asarray(summary, np.float32).reshape(-1, 4)[:, :2])


def bucket_boundaries(pairs: np.ndarray, num_buckets: int, quantiles: bool) -> np.ndarray:
    """The boundaries (or with `quantiles` the num_buckets + 1 quantiles) of (value, weight)
    pairs, as the section comment says."""
    if pairs.size == 0:
        return np.zeros(0, np.float32)
    summary = quantile_summary(pairs[:, 0], pairs[:, 1])
    values, middle = summary[:, 0], (summary[:, 2] + summary[:, 3]) / 2
    targets = np.arange(num_buckets + 1) * (summary[-1, 3] / max(num_buckets, 1))
    picked = values[np.argmin(np.abs(middle[None, :] - targets[:, None]), axis=1)]
    if quantiles:
        return picked.astype(np.float32)
    return np.unique(np.concatenate([values[:1], picked, values[-1:]])).astype(np.float32)


@kernel_factory("BoostedTreesQuantileStreamResourceFlush")
def _flush(node):
    quantiles = node.attrs["generate_quantiles"]

    def compute(ctx, handle, num_buckets):
        res = _streams(ctx, handle)
        with res.lock:
            for i, stream in enumerate(res.summaries):
                pairs = np.concatenate(stream) if stream else np.zeros((0, 2), np.float32)
                res.boundaries[i] = bucket_boundaries(pairs, int(num_buckets), quantiles)
                res.summaries[i] = []

    return compute


@kernel("BoostedTreesQuantileStreamResourceGetBucketBoundaries")
def _get_boundaries(ctx, handle):
    res = _streams(ctx, handle)
    with res.lock:
        out = tuple(b.copy() for b in res.boundaries)
    return out if len(out) != 1 else out[0]


@kernel("BoostedTreesQuantileStreamResourceDeserialize")
def _deserialize_streams(ctx, handle, *boundaries):
    res = _streams(ctx, handle)
    with res.lock:
        if len(boundaries) != len(res.boundaries):
            raise errors.InvalidArgumentError(
                None, None, f"Expected {len(res.boundaries)} streams' boundaries, got "
                f"{len(boundaries)}")
        res.boundaries = [np.asarray(b, np.float32).reshape(-1).copy() for b in boundaries]


@kernel("BoostedTreesBucketize")
def _bucketize(ctx, *args):
    n = len(args) // 2
    out = tuple(np.searchsorted(np.asarray(b, np.float32).reshape(-1),
                                np.asarray(v, np.float32), side="left").astype(np.int32)
                for v, b in zip(args[:n], args[n:], strict=True))
    return out if len(out) != 1 else out[0]
