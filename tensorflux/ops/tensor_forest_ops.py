"""Extremely randomized forests grown online: TF 1.x's tensor_forest ops (its "V4" design).

Two resources per tree live in the device's ResourceMgr (kernels/cpu/tensor_forest_ops.py):

- a decision tree (DecisionTreeResourceHandleOp; CreateTreeVariable, TreeIsInitializedOp,
  TreeSerialize/TreeDeserialize, TreeSize): binary nodes testing one feature against a
  threshold, leaves holding per-class counts (classification) or mean outputs (regression);
- its fertile statistics (FertileStatsResourceHandleOp; CreateFertileStatsVariable,
  FertileStatsIsInitializedOp, FertileStatsSerialize/FertileStatsDeserialize): for each
  leaf, candidate splits and the label statistics of the examples on their left.

One training step of a tree: TraverseTreeV4 gives each example's leaf; UpdateModelV4 adds
the labels to the leaves' counts; ProcessInputV4 starts candidate splits at leaves from
incoming examples (a random feature, the example's value as threshold) and accumulates
the statistics of later ones, returning the leaves that have seen `split_after_samples`;
GrowTreeV4 splits those on their best candidate (smoothed, weighted Gini; variance for
regression) while the tree has fewer than `max_nodes` nodes. TreePredictionsV4 gives each
example its leaf's normalized counts (or mean outputs).

The `params` attr of every op is the forest's parameters serialized by
tensorflux.contrib.tensor_forest (JSON here, where TF used its TensorForestParams proto);
`input_spec` is accepted and unused (dense float features only).
"""

from __future__ import annotations

import functools
import json

from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.ops import constant_op

__all__: list[str] = []


@functools.lru_cache(maxsize=64)
def parse_params(params) -> dict:
    """The parameters an op's `params` attr holds (a JSON object)."""
    if isinstance(params, bytes):
        params = params.decode("utf-8")
    return json.loads(params) if params else {}


def _no_outputs(op):
    return []


def _batch(op) -> int | None:
    return op.inputs[1].shape.with_rank_at_least(1)[0] if op.inputs[1].shape.ndims else None


def _predictions_shape(op):
    outputs = parse_params(op.attrs["params"]).get("num_outputs")
    return [tensor_shape.TensorShape([_batch(op), outputs]), tensor_shape.TensorShape([None])]


def _feature_counts_shape(op):
    return [tensor_shape.TensorShape([parse_params(op.attrs["params"]).get("num_features")])]


_SPARSE = ["sparse_input_indices: int64", "sparse_input_values: float",
           "sparse_input_shape: int64"]
_DATA_ATTRS = ["input_spec: string", "params: string"]

for _kind, _handle in (("Tree", "DecisionTreeResourceHandleOp"),
                       ("FertileStats", "FertileStatsResourceHandleOp")):
    define_op(_handle, outputs=["resource: resource"],
              attrs=["container: string = ''", "shared_name: string = ''"],
              shape_fn=common_shapes.scalar, stateful=True, cost_free=True)
    define_op(f"{_kind}IsInitializedOp", inputs=["handle: resource"],
              outputs=["is_initialized: bool"], shape_fn=common_shapes.scalar, stateful=True)
define_op("CreateTreeVariable", inputs=["tree_handle: resource", "tree_config: string"],
          attrs=["params: string"], shape_fn=_no_outputs, stateful=True)
define_op("TreeSerialize", inputs=["tree_handle: resource"], outputs=["tree_config: string"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("TreeDeserialize", inputs=["tree_handle: resource", "tree_config: string"],
          attrs=["params: string"], shape_fn=_no_outputs, stateful=True)
define_op("TreeSize", inputs=["tree_handle: resource"], outputs=["tree_size: int32"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("TreePredictionsV4", inputs=["tree_handle: resource", "input_data: float"] + _SPARSE,
          outputs=["predictions: float", "tree_paths: string"], attrs=_DATA_ATTRS,
          shape_fn=_predictions_shape, stateful=True)
define_op("TraverseTreeV4", inputs=["tree_handle: resource", "input_data: float"] + _SPARSE,
          outputs=["leaf_ids: int32"], attrs=_DATA_ATTRS,
          shape_fn=lambda op: [tensor_shape.TensorShape([_batch(op)])], stateful=True)
define_op("FeatureUsageCounts", inputs=["tree_handle: resource"],
          outputs=["feature_counts: int32"], attrs=["params: string"],
          shape_fn=_feature_counts_shape, stateful=True)
define_op("UpdateModelV4", inputs=["tree_handle: resource", "leaf_ids: int32",
                                   "input_labels: float", "input_weights: float"],
          attrs=["params: string"], shape_fn=_no_outputs, stateful=True)
define_op("CreateFertileStatsVariable", inputs=["stats_handle: resource", "stats_config: string"],
          attrs=["params: string"], shape_fn=_no_outputs, stateful=True)
define_op("FertileStatsSerialize", inputs=["stats_handle: resource"],
          outputs=["stats_config: string"], attrs=["params: string"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("FertileStatsDeserialize", inputs=["stats_handle: resource", "stats_config: string"],
          attrs=["params: string"], shape_fn=_no_outputs, stateful=True)
define_op("ProcessInputV4", inputs=["tree_handle: resource", "stats_handle: resource",
                                    "input_data: float"] + _SPARSE +
          ["input_labels: float", "input_weights: float", "leaf_ids: int32"],
          outputs=["finished_nodes: int32"], attrs=["random_seed: int"] + _DATA_ATTRS,
          shape_fn=lambda op: [tensor_shape.TensorShape([None])], stateful=True)
define_op("GrowTreeV4", inputs=["tree_handle: resource", "stats_handle: resource",
                                "finished_nodes: int32"],
          attrs=["params: string"], shape_fn=_no_outputs, stateful=True)
define_op("FinalizeTree", inputs=["tree_handle: resource", "stats_handle: resource"],
          attrs=["params: string"], shape_fn=_no_outputs, stateful=True)
not_differentiable("DecisionTreeResourceHandleOp", "FertileStatsResourceHandleOp",
                   "TreeIsInitializedOp", "FertileStatsIsInitializedOp", "CreateTreeVariable",
                   "TreeSerialize", "TreeDeserialize", "TreeSize", "TreePredictionsV4",
                   "TraverseTreeV4", "FeatureUsageCounts", "UpdateModelV4",
                   "CreateFertileStatsVariable", "FertileStatsSerialize",
                   "FertileStatsDeserialize", "ProcessInputV4", "GrowTreeV4", "FinalizeTree")


def _or_empty(x, dtype):
    """TF's wrappers pass [] for absent inputs (sparse features, weights): typed here."""
    if isinstance(x, (list, tuple)) and not x:
        return constant_op.constant([], dtype=dtype)
    return x


def _sparse_or_empty(indices, values, shape):
    return (_or_empty(indices, dtypes.int64), _or_empty(values, dtypes.float32),
            _or_empty(shape, dtypes.int64))


def _dense(data):
    return _or_empty(data, dtypes.float32)


def decision_tree_resource_handle_op(container="", shared_name="", name=None):
    return apply_op("DecisionTreeResourceHandleOp", container=container or "",
                    shared_name=shared_name, name=name or "DecisionTreeResourceHandleOp")


def fertile_stats_resource_handle_op(container="", shared_name="", name=None):
    return apply_op("FertileStatsResourceHandleOp", container=container or "",
                    shared_name=shared_name, name=name or "FertileStatsResourceHandleOp")


def tree_is_initialized_op(tree_handle, name=None):
    return apply_op("TreeIsInitializedOp", handle=tree_handle,
                    name=name or "TreeIsInitializedOp")


def fertile_stats_is_initialized_op(stats_handle, name=None):
    return apply_op("FertileStatsIsInitializedOp", handle=stats_handle,
                    name=name or "FertileStatsIsInitializedOp")


def create_tree_variable(tree_handle, tree_config, params, name=None):
    return apply_op("CreateTreeVariable", tree_handle=tree_handle, tree_config=tree_config,
                    params=params, name=name or "CreateTreeVariable")


def tree_serialize(tree_handle, name=None):
    return apply_op("TreeSerialize", tree_handle=tree_handle, name=name or "TreeSerialize")


def tree_deserialize(tree_handle, tree_config, params, name=None):
    return apply_op("TreeDeserialize", tree_handle=tree_handle, tree_config=tree_config,
                    params=params, name=name or "TreeDeserialize")


def tree_size(tree_handle, name=None):
    return apply_op("TreeSize", tree_handle=tree_handle, name=name or "TreeSize")


def tree_predictions_v4(tree_handle, input_data, sparse_input_indices, sparse_input_values,
                        sparse_input_shape, input_spec, params, name=None):
    """(predictions [batch, num_outputs], tree_paths) of one tree."""
    idx, vals, shape = _sparse_or_empty(sparse_input_indices, sparse_input_values,
                                        sparse_input_shape)
    return apply_op("TreePredictionsV4", tree_handle=tree_handle,
                    input_data=_dense(input_data), sparse_input_indices=idx,
                    sparse_input_values=vals, sparse_input_shape=shape, input_spec=input_spec,
                    params=params, name=name or "TreePredictionsV4")


def traverse_tree_v4(tree_handle, input_data, sparse_input_indices, sparse_input_values,
                     sparse_input_shape, input_spec, params, name=None):
    """The leaf id of each example."""
    idx, vals, shape = _sparse_or_empty(sparse_input_indices, sparse_input_values,
                                        sparse_input_shape)
    return apply_op("TraverseTreeV4", tree_handle=tree_handle, input_data=_dense(input_data),
                    sparse_input_indices=idx, sparse_input_values=vals,
                    sparse_input_shape=shape, input_spec=input_spec, params=params,
                    name=name or "TraverseTreeV4")


def feature_usage_counts(tree_handle, params, name=None):
    return apply_op("FeatureUsageCounts", tree_handle=tree_handle, params=params,
                    name=name or "FeatureUsageCounts")


def update_model_v4(tree_handle, leaf_ids, input_labels, input_weights, params, name=None):
    weights = _or_empty(input_weights, dtypes.float32)
    return apply_op("UpdateModelV4", tree_handle=tree_handle, leaf_ids=leaf_ids,
                    input_labels=input_labels, input_weights=weights, params=params,
                    name=name or "UpdateModelV4")


def create_fertile_stats_variable(stats_handle, stats_config, params, name=None):
    return apply_op("CreateFertileStatsVariable", stats_handle=stats_handle,
                    stats_config=stats_config, params=params,
                    name=name or "CreateFertileStatsVariable")


def fertile_stats_serialize(stats_handle, params, name=None):
    return apply_op("FertileStatsSerialize", stats_handle=stats_handle, params=params,
                    name=name or "FertileStatsSerialize")


def fertile_stats_deserialize(stats_handle, stats_config, params, name=None):
    return apply_op("FertileStatsDeserialize", stats_handle=stats_handle,
                    stats_config=stats_config, params=params,
                    name=name or "FertileStatsDeserialize")


def process_input_v4(tree_handle, stats_handle, input_data, sparse_input_indices,
                     sparse_input_values, sparse_input_shape, input_labels, input_weights,
                     leaf_ids, random_seed, input_spec, params, name=None):
    """The ids of the leaves ready to split after this batch's statistics."""
    idx, vals, shape = _sparse_or_empty(sparse_input_indices, sparse_input_values,
                                        sparse_input_shape)
    weights = _or_empty(input_weights, dtypes.float32)
    return apply_op("ProcessInputV4", tree_handle=tree_handle, stats_handle=stats_handle,
                    input_data=_dense(input_data), sparse_input_indices=idx,
                    sparse_input_values=vals, sparse_input_shape=shape,
                    input_labels=input_labels, input_weights=weights, leaf_ids=leaf_ids,
                    random_seed=random_seed, input_spec=input_spec, params=params,
                    name=name or "ProcessInputV4")


def grow_tree_v4(tree_handle, stats_handle, finished_nodes, params, name=None):
    return apply_op("GrowTreeV4", tree_handle=tree_handle, stats_handle=stats_handle,
                    finished_nodes=finished_nodes, params=params, name=name or "GrowTreeV4")


def finalize_tree(tree_handle, stats_handle, params, name=None):
    return apply_op("FinalizeTree", tree_handle=tree_handle, stats_handle=stats_handle,
                    params=params, name=name or "FinalizeTree")
