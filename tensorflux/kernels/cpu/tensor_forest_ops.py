"""CPU kernels of the tensor_forest ops (tensorflux/ops/tensor_forest_ops.py).

The handle ops only name a resource (container, shared_name or the node's name), as
VarHandleOp does; CreateTreeVariable / CreateFertileStatsVariable create it in the
ResourceMgr (an existing one is kept, as TF's ALREADY_EXISTS is ignored), the
*IsInitializedOp kernels say whether it exists. Every kernel holds the resources' locks
(stats before tree, TF's order) while it reads or changes them. The trees and statistics
themselves are kernels/cpu/_forest_model.py and _forest_stats.py.
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu._forest_model import DecisionTree, Params
from tensorflux.kernels.cpu._forest_stats import FertileStats
from tensorflux.kernels.cpu.data_flow_ops import lookup
from tensorflux.kernels.cpu.state_ops import as_handle, handle_kernel
from tensorflux.kernels.registry import kernel, kernel_factory

_TREE_TYPE = "N10tensorflow12tensorforest20DecisionTreeResourceE"
_STATS_TYPE = "N10tensorflow12tensorforest20FertileStatsResourceE"


def _params(node) -> Params:
    return Params.from_attr(node.attrs["params"])


kernel_factory("DecisionTreeResourceHandleOp", "FertileStatsResourceHandleOp",
               device_constant=True)(handle_kernel)
_get = lookup  # the resource a handle names, of a class: NotFound/InvalidArgument otherwise


def _tree(ctx, handle) -> DecisionTree:
    return _get(ctx, handle, DecisionTree, _TREE_TYPE)


def _stats(ctx, handle) -> FertileStats:
    return _get(ctx, handle, FertileStats, _STATS_TYPE)


def _config(value) -> bytes:
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise errors.InvalidArgumentError(None, None, "Tree config must be a scalar.")
    item = arr.item()
    return item if isinstance(item, bytes) else str(item).encode()


def _is_initialized(cls):
    def compute(ctx, handle):
        h = as_handle(handle)
        return np.bool_(isinstance(ctx.resource_mgr.get(h.container, h.name), cls))

    return compute


kernel("TreeIsInitializedOp")(_is_initialized(DecisionTree))
kernel("FertileStatsIsInitializedOp")(_is_initialized(FertileStats))


def _create_kernel(op_type: str, cls) -> None:
    @kernel_factory(op_type)
    def factory(node):
        params = _params(node)

        def compute(ctx, handle, config):
            res = cls(params)
            res.deserialize(_config(config))
            h = as_handle(handle)
            ctx.resource_mgr.lookup_or_create(h.container, h.name, lambda: res)

        return compute


_create_kernel("CreateTreeVariable", DecisionTree)
_create_kernel("CreateFertileStatsVariable", FertileStats)


@kernel("TreeSerialize")
def _tree_serialize(ctx, handle):
    tree = _tree(ctx, handle)
    with tree.lock:
        return np.array(tree.serialize(), dtype=object)


@kernel("FertileStatsSerialize")
def _stats_serialize(ctx, handle):
    stats = _stats(ctx, handle)
    with stats.lock:
        return np.array(stats.serialize(), dtype=object)


@kernel("TreeDeserialize")
def _tree_deserialize(ctx, handle, config):
    tree = _tree(ctx, handle)
    with tree.lock:
        tree.deserialize(_config(config))


@kernel("FertileStatsDeserialize")
def _stats_deserialize(ctx, handle, config):
    stats = _stats(ctx, handle)
    with stats.lock:
        stats.deserialize(_config(config))


@kernel("TreeSize")
def _tree_size(ctx, handle):
    tree = _tree(ctx, handle)
    with tree.lock:
        return np.int32(tree.size)


@kernel("FeatureUsageCounts")
def _feature_usage_counts(ctx, handle):
    tree = _tree(ctx, handle)
    with tree.lock:
        return tree.feature_counts()


# ---- inputs -----------------------------------------------------------------------------


def _dense_input(data, sparse_indices, params: Params) -> np.ndarray:
    if np.asarray(sparse_indices).size:
        raise errors.UnimplementedError(None, None, "tensor_forest here takes dense features "
                                        "only (sparse_input_indices must be empty)")
    x = np.asarray(data, dtype=np.float32)
    if x.ndim != 2:
        raise errors.InvalidArgumentError(
            None, None, f"input_data must be a matrix [batch, features], got shape "
            f"{list(x.shape)}")
    if params.input_features and x.shape[1] != params.input_features:
        raise errors.InvalidArgumentError(
            None, None, f"input_data has {x.shape[1]} features, but the forest was built for "
            f"{params.input_features} (num_features)")
    return x


def _labels(labels, n: int, params: Params) -> np.ndarray:
    y = np.asarray(labels, dtype=np.float32)
    if params.regression:
        y = y.reshape(n, -1) if y.size else y.reshape(n, 0)
        if y.shape[1] != params.num_outputs:
            raise errors.InvalidArgumentError(
                None, None, f"input_labels has {y.shape[1]} outputs per example, expected "
                f"{params.num_outputs}")
        return y
    if y.shape[:1] != (n,) or y.size != n:
        raise errors.InvalidArgumentError(
            None, None, f"input_labels must hold one label per example: {n} examples, "
            f"labels of shape {list(y.shape)}")
    classes = y.reshape(n).astype(np.int64)
    bad = (classes < 0) | (classes >= params.num_outputs)
    if bad.any():
        raise errors.InvalidArgumentError(
            None, None, f"Got label {classes[bad][0]} outside [0, {params.num_outputs}): is "
            "params.num_classes set correctly?")
    return classes


def _weights(weights, n: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float32).reshape(-1)
    if w.size == 0:
        return np.ones(n, np.float32)
    if w.size != n:
        raise errors.InvalidArgumentError(
            None, None, f"input_weights has {w.size} entries for {n} examples")
    return w


def _leaf_ids(leaf_ids, n: int, tree: DecisionTree) -> np.ndarray:
    ids = np.asarray(leaf_ids, dtype=np.int32).reshape(-1)
    if ids.size != n:
        raise errors.InvalidArgumentError(None, None, f"leaf_ids has {ids.size} entries for "
                                          f"{n} examples")
    # An id that stopped being a leaf (another step split it meanwhile) is harmless: its
    # counts are never read again and it has no fertile slot.
    if ids.size and (ids.min() < 0 or ids.max() >= tree.size):
        raise errors.InvalidArgumentError(None, None, f"leaf_ids must be node ids of the tree "
                                          f"(0 to {tree.size - 1})")
    return ids


# ---- inference and training -------------------------------------------------------------


@kernel_factory("TraverseTreeV4")
def _traverse(node):
    params = _params(node)

    def compute(ctx, handle, data, sparse_indices, sparse_values, sparse_shape):
        x = _dense_input(data, sparse_indices, params)
        tree = _tree(ctx, handle)
        with tree.lock:
            return tree.traverse(x)

    return compute


@kernel_factory("TreePredictionsV4")
def _predictions(node):
    params = _params(node)

    def compute(ctx, handle, data, sparse_indices, sparse_values, sparse_shape):
        x = _dense_input(data, sparse_indices, params)
        tree = _tree(ctx, handle)
        levels: list | None = [] if params.tree_paths else None
        with tree.lock:
            out = tree.predictions(tree.traverse(x, levels))
        paths = np.array([], dtype=object)
        if levels:
            steps = np.stack(levels, axis=1)
            paths = np.array([",".join(str(v) for v in row if v >= 0).encode()
                              for row in steps], dtype=object)
        return out, paths

    return compute


@kernel_factory("UpdateModelV4")
def _update_model(node):
    params = _params(node)

    def compute(ctx, handle, leaf_ids, labels, weights):
        n = np.asarray(leaf_ids).size
        y, w = _labels(labels, n, params), _weights(weights, n)
        tree = _tree(ctx, handle)
        with tree.lock:
            tree.update(_leaf_ids(leaf_ids, n, tree), y, w)

    return compute


@kernel_factory("ProcessInputV4")
def _process_input(node):
    params = _params(node)
    seed = node.attrs["random_seed"]

    def compute(ctx, tree_handle, stats_handle, data, sparse_indices, sparse_values,
                sparse_shape, labels, weights, leaf_ids):
        x = _dense_input(data, sparse_indices, params)
        n = x.shape[0]
        y, w = _labels(labels, n, params), _weights(weights, n)
        stats, tree = _stats(ctx, stats_handle), _tree(ctx, tree_handle)
        with stats.lock, tree.lock:
            ids = _leaf_ids(leaf_ids, n, tree)
            if stats.rng is None:  # TF seeds each op's generator once: seed, or entropy if 0
                stats.rng = np.random.default_rng(seed if seed else None)
            return stats.process(x, y, w, ids, stats.rng, tree.size < params.max_nodes)

    return compute


@kernel("GrowTreeV4")
def _grow_tree(ctx, tree_handle, stats_handle, finished):
    stats, tree = _stats(ctx, stats_handle), _tree(ctx, tree_handle)
    with stats.lock, tree.lock:
        stats.grow(tree, np.asarray(finished, dtype=np.int32).reshape(-1))


@kernel("FinalizeTree")
def _finalize_tree(ctx, tree_handle, stats_handle):
    _stats(ctx, stats_handle), _tree(ctx, tree_handle)  # leaves are normalized when read
