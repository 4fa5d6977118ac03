"""Gradient-boosted trees: ops over a tree-ensemble resource (TF's boosted_trees_ops).

An ensemble (kernels/cpu/boosted_trees_ops.py) is a `TreeEnsemble` message
(protos/boosted_trees.proto) and a stamp token. BoostedTreesEnsembleResourceHandleOp only
names it; BoostedTreesCreateEnsemble creates it from a serialized message (every other op
fails with NotFoundError before that; IsBoostedTreesEnsembleInitialized says whether it
exists). Trees grow layer by layer:

1. BoostedTreesTrainingPredict routes each example from its cached (tree, node) to a leaf of
   the latest tree: the logits' change since the cache and the leaf reached.
2. BoostedTreesMakeStatsSummary sums gradients and hessians per (feature, node, bucket).
3. BoostedTreesCalculateBestGainsPerFeature finds, per feature and node of the latest layer,
   the bucket threshold of highest gain and the two children's leaf values.
4. BoostedTreesUpdateEnsemble splits each node on its best feature (leaf values are the
   parent's plus `learning_rate` times the contribution) and finalizes the tree at
   `max_depth`, starting an empty one.

BoostedTreesPredict sums the leaves' values (times the tree weights) over all trees;
BoostedTreesCenterBias grows the first tree's root towards the loss's minimum;
BoostedTreesSerializeEnsemble/DeserializeEnsemble save and restore it (the checkpoint form),
BoostedTreesGetEnsembleStates reports the growth counters.

Float features are bucketized by quantile streams (BoostedTreesQuantileStream*: summaries of
(value, weight) added batch by batch, flushed into bucket boundaries) and
BoostedTreesBucketize.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__: list[str] = []

PRUNING_MODES = {"none": 0, "pre": 1, "post": 2}


def _no_outputs(op):
    return []


def _batch(op, index: int):
    shape = op.inputs[index].shape
    return shape[0] if shape.ndims else None


def _logits_shape(op, batch_input: int):
    dim = op.get_attr("logits_dimension")
    return tensor_shape.TensorShape([_batch(op, batch_input), dim])


define_op("BoostedTreesEnsembleResourceHandleOp", outputs=["resource: resource"],
          attrs=["container: string = ''", "shared_name: string = ''"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("BoostedTreesCreateEnsemble",
          inputs=["tree_ensemble_handle: resource", "stamp_token: int64",
                  "tree_ensemble_serialized: string"], shape_fn=_no_outputs, stateful=True)
define_op("IsBoostedTreesEnsembleInitialized", inputs=["tree_ensemble_handle: resource"],
          outputs=["is_initialized: bool"], shape_fn=common_shapes.scalar, stateful=True)
define_op("BoostedTreesSerializeEnsemble", inputs=["tree_ensemble_handle: resource"],
          outputs=["stamp_token: int64", "tree_ensemble_serialized: string"],
          shape_fn=lambda op: [tensor_shape.scalar(), tensor_shape.scalar()], stateful=True)
define_op("BoostedTreesDeserializeEnsemble",
          inputs=["tree_ensemble_handle: resource", "stamp_token: int64",
                  "tree_ensemble_serialized: string"], shape_fn=_no_outputs, stateful=True)
define_op("BoostedTreesGetEnsembleStates", inputs=["tree_ensemble_handle: resource"],
          outputs=["stamp_token: int64", "num_trees: int32", "num_finalized_trees: int32",
                   "num_attempted_layers: int32", "last_layer_nodes_range: int32"],
          shape_fn=lambda op: [tensor_shape.scalar()] * 4 + [tensor_shape.TensorShape([2])],
          stateful=True)


def ensemble_resource_handle_op(container="", shared_name="", name=None):
    """A handle naming a tree ensemble (not creating it)."""
    return apply_op("BoostedTreesEnsembleResourceHandleOp", container=container,
                    shared_name=shared_name, name=name)


def create_ensemble(handle, stamp_token, tree_ensemble_serialized, name=None):
    """Creates the ensemble `handle` names from a serialized TreeEnsemble ('' for empty)."""
    return apply_op("BoostedTreesCreateEnsemble", tree_ensemble_handle=handle,
                    stamp_token=stamp_token,
                    tree_ensemble_serialized=tree_ensemble_serialized, name=name)


def is_ensemble_initialized(handle, name=None):
    """Whether the ensemble `handle` names exists."""
    return apply_op("IsBoostedTreesEnsembleInitialized", tree_ensemble_handle=handle,
                    name=name)


def serialize_ensemble(handle, name=None):
    """(stamp_token, serialized TreeEnsemble) of the ensemble."""
    return tuple(apply_op("BoostedTreesSerializeEnsemble", tree_ensemble_handle=handle,
                          name=name))


def deserialize_ensemble(handle, stamp_token, tree_ensemble_serialized, name=None):
    """Replaces the ensemble's trees and stamp (creating it when absent)."""
    return apply_op("BoostedTreesDeserializeEnsemble", tree_ensemble_handle=handle,
                    stamp_token=stamp_token,
                    tree_ensemble_serialized=tree_ensemble_serialized, name=name)


def get_ensemble_states(handle, name=None):
    """(stamp_token, num_trees, num_finalized_trees, num_attempted_layers,
    last_layer_nodes_range) of the ensemble."""
    return tuple(apply_op("BoostedTreesGetEnsembleStates", tree_ensemble_handle=handle,
                          name=name))


def _stats_summary_shape(op):
    return [tensor_shape.TensorShape([op.get_attr("num_features"), op.get_attr("max_splits"),
                                      op.get_attr("num_buckets"), 2])]


define_op("BoostedTreesMakeStatsSummary",
          inputs=["node_ids: int32", "gradients: float", "hessians: float",
                  "bucketized_features_list: num_features * int32"],
          outputs=["stats_summary: float"],
          attrs=["max_splits: int >= 1", "num_buckets: int >= 1", "num_features: int >= 1"],
          shape_fn=_stats_summary_shape)


def make_stats_summary(node_ids, gradients, hessians, bucketized_features_list, max_splits,
                       num_buckets, name=None):
    """[num_features, max_splits, num_buckets, 2]: the sums of gradients and hessians of
    the examples per (feature, node, bucket)."""
    return apply_op("BoostedTreesMakeStatsSummary", node_ids=node_ids, gradients=gradients,
                    hessians=hessians, bucketized_features_list=list(bucketized_features_list),
                    max_splits=max_splits, num_buckets=num_buckets, name=name)


def _best_gains_shape(op):
    n = op.get_attr("num_features")
    vec, mat = tensor_shape.TensorShape([None]), tensor_shape.TensorShape([None, 1])
    return [vec] * n + [vec] * n + [vec] * n + [mat] * n + [mat] * n


define_op("BoostedTreesCalculateBestGainsPerFeature",
          inputs=["node_id_range: int32", "stats_summary_list: num_features * float",
                  "l1: float", "l2: float", "tree_complexity: float", "min_node_weight: float"],
          outputs=["node_ids_list: num_features * int32", "gains_list: num_features * float",
                   "thresholds_list: num_features * int32",
                   "left_node_contribs_list: num_features * float",
                   "right_node_contribs_list: num_features * float"],
          attrs=["max_splits: int >= 1", "num_features: int >= 1"],
          shape_fn=_best_gains_shape)


def calculate_best_gains_per_feature(node_id_range, stats_summary_list, l1, l2,
                                     tree_complexity, min_node_weight, max_splits, name=None):
    """Per feature: (node_ids, gains, thresholds, left and right node contributions) of
    the best split of each node in `node_id_range` that has one."""
    out = apply_op("BoostedTreesCalculateBestGainsPerFeature", node_id_range=node_id_range,
                   stats_summary_list=list(stats_summary_list), l1=l1, l2=l2,
                   tree_complexity=tree_complexity, min_node_weight=min_node_weight,
                   max_splits=max_splits, name=name)
    return tuple(out)


define_op("BoostedTreesUpdateEnsemble",
          inputs=["tree_ensemble_handle: resource", "feature_ids: int32",
                  "node_ids: num_features * int32", "gains: num_features * float",
                  "thresholds: num_features * int32",
                  "left_node_contribs: num_features * float",
                  "right_node_contribs: num_features * float", "max_depth: int32",
                  "learning_rate: float"],
          attrs=["pruning_mode: int >= 0", "num_features: int >= 0"],
          shape_fn=_no_outputs, stateful=True)


def update_ensemble(handle, feature_ids, node_ids, gains, thresholds, left_node_contribs,
                    right_node_contribs, max_depth, learning_rate, pruning_mode, name=None):
    """Grows the latest tree by one layer of the best splits (see the module docstring)."""
    if isinstance(pruning_mode, str):
        pruning_mode = PRUNING_MODES[pruning_mode]
    return apply_op("BoostedTreesUpdateEnsemble", tree_ensemble_handle=handle,
                    feature_ids=feature_ids, node_ids=list(node_ids), gains=list(gains),
                    thresholds=list(thresholds), left_node_contribs=list(left_node_contribs),
                    right_node_contribs=list(right_node_contribs), max_depth=max_depth,
                    learning_rate=learning_rate, pruning_mode=pruning_mode, name=name)


define_op("BoostedTreesTrainingPredict",
          inputs=["tree_ensemble_handle: resource", "cached_tree_ids: int32",
                  "cached_node_ids: int32",
                  "bucketized_features: num_bucketized_features * int32"],
          outputs=["partial_logits: float", "tree_ids: int32", "node_ids: int32"],
          attrs=["num_bucketized_features: int >= 1", "logits_dimension: int"],
          shape_fn=lambda op: [_logits_shape(op, 1), op.inputs[1].shape, op.inputs[1].shape],
          stateful=True)
define_op("BoostedTreesPredict",
          inputs=["tree_ensemble_handle: resource",
                  "bucketized_features: num_bucketized_features * int32"],
          outputs=["logits: float"],
          attrs=["num_bucketized_features: int >= 1", "logits_dimension: int"],
          shape_fn=lambda op: [_logits_shape(op, 1)], stateful=True)
define_op("BoostedTreesExampleDebugOutputs",
          inputs=["tree_ensemble_handle: resource",
                  "bucketized_features: num_bucketized_features * int32"],
          outputs=["examples_debug_outputs_serialized: string"],
          attrs=["num_bucketized_features: int >= 1", "logits_dimension: int"],
          shape_fn=lambda op: [tensor_shape.TensorShape([_batch(op, 1)])], stateful=True)


def training_predict(handle, cached_tree_ids, cached_node_ids, bucketized_features,
                     logits_dimension, name=None):
    """(partial_logits, tree_ids, node_ids): each example's logits change since its cached
    (tree, node) (node -1: not cached) and the leaf of the latest tree it reaches."""
    return tuple(apply_op("BoostedTreesTrainingPredict", tree_ensemble_handle=handle,
                          cached_tree_ids=cached_tree_ids, cached_node_ids=cached_node_ids,
                          bucketized_features=list(bucketized_features),
                          logits_dimension=logits_dimension, name=name))


def predict(handle, bucketized_features, logits_dimension, name=None):
    """[batch, logits_dimension]: the ensemble's logits of each example."""
    return apply_op("BoostedTreesPredict", tree_ensemble_handle=handle,
                    bucketized_features=list(bucketized_features),
                    logits_dimension=logits_dimension, name=name)


def example_debug_outputs(handle, bucketized_features, logits_dimension, name=None):
    """[batch] serialized DebugOutput messages: each example's path through the trees
    (the bias, then the logits after each split passed, and the split features)."""
    return apply_op("BoostedTreesExampleDebugOutputs", tree_ensemble_handle=handle,
                    bucketized_features=list(bucketized_features),
                    logits_dimension=logits_dimension, name=name)


define_op("BoostedTreesCenterBias",
          inputs=["tree_ensemble_handle: resource", "mean_gradients: float",
                  "mean_hessians: float", "l1: float", "l2: float"],
          outputs=["continue_centering: bool"], shape_fn=common_shapes.scalar, stateful=True)


def center_bias(handle, mean_gradients, mean_hessians, l1, l2, name=None):
    """Moves the bias (the first tree's root) by one Newton step; whether to go on."""
    return apply_op("BoostedTreesCenterBias", tree_ensemble_handle=handle,
                    mean_gradients=mean_gradients, mean_hessians=mean_hessians, l1=l1, l2=l2,
                    name=name)


not_differentiable(
    "BoostedTreesEnsembleResourceHandleOp", "BoostedTreesCreateEnsemble",
    "IsBoostedTreesEnsembleInitialized", "BoostedTreesSerializeEnsemble",
    "BoostedTreesDeserializeEnsemble", "BoostedTreesGetEnsembleStates",
    "BoostedTreesMakeStatsSummary", "BoostedTreesCalculateBestGainsPerFeature",
    "BoostedTreesUpdateEnsemble", "BoostedTreesTrainingPredict", "BoostedTreesPredict",
    "BoostedTreesExampleDebugOutputs", "BoostedTreesCenterBias")


# ---- quantile streams (bucket boundaries of float features) --------------------------------

define_op("BoostedTreesQuantileStreamResourceHandleOp", outputs=["resource: resource"],
          attrs=["container: string = ''", "shared_name: string = ''"],
          shape_fn=common_shapes.scalar, stateful=True)
define_op("BoostedTreesCreateQuantileStreamResource",
          inputs=["quantile_stream_resource_handle: resource", "epsilon: float",
                  "num_streams: int64"],
          attrs=["max_elements: int = 1099511627776"], shape_fn=_no_outputs, stateful=True)
define_op("IsBoostedTreesQuantileStreamResourceInitialized",
          inputs=["quantile_stream_resource_handle: resource"],
          outputs=["is_initialized: bool"], shape_fn=common_shapes.scalar, stateful=True)
define_op("BoostedTreesMakeQuantileSummaries",
          inputs=["float_values: num_features * float", "example_weights: float",
                  "epsilon: float"],
          outputs=["summaries: num_features * float"], attrs=["num_features: int >= 0"],
          shape_fn=lambda op: [tensor_shape.TensorShape([None, 4])] *
          op.get_attr("num_features"))
define_op("BoostedTreesQuantileStreamResourceAddSummaries",
          inputs=["quantile_stream_resource_handle: resource",
                  "summaries: num_features * float"],
          attrs=["num_features: int >= 0"], shape_fn=_no_outputs, stateful=True)
define_op("BoostedTreesQuantileStreamResourceFlush",
          inputs=["quantile_stream_resource_handle: resource", "num_buckets: int64"],
          attrs=["generate_quantiles: bool = false"], shape_fn=_no_outputs, stateful=True)
define_op("BoostedTreesQuantileStreamResourceGetBucketBoundaries",
          inputs=["quantile_stream_resource_handle: resource"],
          outputs=["bucket_boundaries: num_features * float"],
          attrs=["num_features: int >= 0"],
          shape_fn=lambda op: [tensor_shape.TensorShape([None])] *
          op.get_attr("num_features"), stateful=True)
define_op("BoostedTreesQuantileStreamResourceDeserialize",
          inputs=["quantile_stream_resource_handle: resource",
                  "bucket_boundaries: num_streams * float"],
          attrs=["num_streams: int >= 1"], shape_fn=_no_outputs, stateful=True)
define_op("BoostedTreesBucketize",
          inputs=["float_values: num_features * float",
                  "bucket_boundaries: num_features * float"],
          outputs=["buckets: num_features * int32"], attrs=["num_features: int >= 0"],
          shape_fn=lambda op: [op.inputs[i].shape
                               for i in range(op.get_attr("num_features"))])


def quantile_stream_resource_handle_op(container="", shared_name="", name=None):
    """A handle naming a quantile stream resource (not creating it)."""
    return apply_op("BoostedTreesQuantileStreamResourceHandleOp", container=container,
                    shared_name=shared_name, name=name)


def create_quantile_stream_resource(handle, epsilon, num_streams, max_elements=1 << 40,
                                    name=None):
    """Creates `num_streams` empty quantile streams of approximation error `epsilon`."""
    return apply_op("BoostedTreesCreateQuantileStreamResource",
                    quantile_stream_resource_handle=handle, epsilon=epsilon,
                    num_streams=num_streams, max_elements=max_elements, name=name)


def is_quantile_stream_resource_initialized(handle, name=None):
    """Whether the quantile streams `handle` names exist."""
    return apply_op("IsBoostedTreesQuantileStreamResourceInitialized",
                    quantile_stream_resource_handle=handle, name=name)


def make_quantile_summaries(float_values, example_weights, epsilon, name=None):
    """Per feature, the [n, 4] (value, weight, min_rank, max_rank) summary of a batch."""
    return apply_op("BoostedTreesMakeQuantileSummaries", float_values=list(float_values),
                    example_weights=example_weights, epsilon=epsilon, name=name)


def quantile_add_summaries(handle, summaries, name=None):
    """Adds one summary per stream to the streams."""
    return apply_op("BoostedTreesQuantileStreamResourceAddSummaries",
                    quantile_stream_resource_handle=handle, summaries=list(summaries),
                    name=name)


def quantile_flush(handle, num_buckets, generate_quantiles=False, name=None):
    """Turns each stream into bucket boundaries (about `num_buckets` buckets)."""
    return apply_op("BoostedTreesQuantileStreamResourceFlush",
                    quantile_stream_resource_handle=handle, num_buckets=num_buckets,
                    generate_quantiles=generate_quantiles, name=name)


def get_bucket_boundaries(handle, num_features, name=None):
    """The bucket boundaries of each stream ([] before a flush)."""
    return apply_op("BoostedTreesQuantileStreamResourceGetBucketBoundaries",
                    quantile_stream_resource_handle=handle, num_features=num_features,
                    name=name)


def quantile_resource_deserialize(handle, bucket_boundaries, name=None):
    """Sets the streams' bucket boundaries (a checkpoint's restore)."""
    return apply_op("BoostedTreesQuantileStreamResourceDeserialize",
                    quantile_stream_resource_handle=handle,
                    bucket_boundaries=list(bucket_boundaries), name=name)


def boosted_trees_bucketize(float_values, bucket_boundaries, name=None):
    """Per feature, the bucket of each value: how many boundaries are below it."""
    return apply_op("BoostedTreesBucketize", float_values=list(float_values),
                    bucket_boundaries=list(bucket_boundaries), name=name)


not_differentiable(
    "BoostedTreesQuantileStreamResourceHandleOp", "BoostedTreesCreateQuantileStreamResource",
    "IsBoostedTreesQuantileStreamResourceInitialized", "BoostedTreesMakeQuantileSummaries",
    "BoostedTreesQuantileStreamResourceAddSummaries", "BoostedTreesQuantileStreamResourceFlush",
    "BoostedTreesQuantileStreamResourceGetBucketBoundaries",
    "BoostedTreesQuantileStreamResourceDeserialize", "BoostedTreesBucketize")
