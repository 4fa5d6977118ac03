"""Gradient-boosted trees (TF1's tf.estimator.BoostedTreesClassifier/Regressor).

The model is one tree ensemble resource, `boosted_trees` (ops/boosted_trees_ops.py),
checkpointed as TF's SaveableObject does it: `boosted_trees:0_stamp` and
`boosted_trees:0_serialized` (a TreeEnsemble message).

Features. Every feature column is a bucketized_column (one feature per element: its bucket
id), an indicator_column (one feature per category: 0 or 1) or a float numeric_column (one
feature per element, bucketized by quantile boundaries: about 1/quantile_sketch_epsilon
buckets, computed from the first n_batches_per_layer training batches, which grow nothing,
and checkpointed as `boosted_trees/QuantileAccumulator:0_bucket_boundaries_<i>`), taken in
the order of the columns' names, as TF does.

Training, one layer per `n_batches_per_layer` batches. Each step routes the batch through
the ensemble (BoostedTreesTrainingPredict: the logits and the leaf of the latest tree each
example reaches), takes the gradient and hessian of the head's loss (mean over the batch,
TF's SUM_OVER_BATCH_SIZE) with respect to the logits, and sums them per (feature, leaf,
bucket). With one batch per layer the sums feed BoostedTreesCalculateBestGainsPerFeature and
BoostedTreesUpdateEnsemble at once; with more, they are added to a stats accumulator (a
variable) and the layer grows on the n-th batch from their mean. A tree is finalized at
`max_depth`; training stops once `n_trees` trees are (the growth op is then skipped). With
`center_bias`, the first steps move the bias (BoostedTreesCenterBias, from the mean gradient
and hessian) until it settles, before any tree grows. pruning_mode 'pre' makes no split of
negative gain (gain less tree_complexity); 'post' grows them and prunes each finalized tree.

As in TF 1.x, the classifier is binary only and the regressor one-dimensional.
`train_in_memory` is accepted and unused: every step routes its batch through all trees.
"""

from __future__ import annotations

import collections
import math

from tensorflux.estimator import heads as heads_lib
from tensorflux.estimator.canned import _check_classes, _head
from tensorflux.estimator.estimator import Estimator
from tensorflux.estimator.model_fn import ModeKeys
from tensorflux.framework import dtypes
from tensorflux.losses.losses_impl import Reduction
from tensorflux.train import session_run_hook
from tensorflux.train.saver import SaveableObject, SaveSpec

_ENSEMBLE_NAME = "boosted_trees"
_PRUNING_MODES = ("none", "pre", "post")


class _TreeEnsembleSaveable(SaveableObject):
    """Saves the ensemble as (stamp, serialized TreeEnsemble); restores by deserializing
    it after creating it (TF's _TreeEnsembleSavable)."""

    def __init__(self, handle, create_op, name):
        from tensorflux.ops import boosted_trees_ops as bt

        stamp, serialized = bt.serialize_ensemble(handle)
        super().__init__(handle, [SaveSpec(stamp, "", name + "_stamp"),
                                  SaveSpec(serialized, "", name + "_serialized")], name)
        self.handle, self._create_op = handle, create_op

    def restore(self, restored_tensors, restored_shapes):
        from tensorflux.framework import graph as graph_lib
        from tensorflux.ops import boosted_trees_ops as bt

        with graph_lib.get_default_graph().control_dependencies([self._create_op]):
            return bt.deserialize_ensemble(self.handle, restored_tensors[0],
                                           restored_tensors[1])


class TreeEnsemble:
    """The ensemble resource `name`: its handle, the op creating it (empty, or from
    `serialized_proto`), and its SaveableObject in the graph's SAVEABLE_OBJECTS."""

    def __init__(self, name, stamp_token=0, is_local=False, serialized_proto=""):
        from tensorflux.framework import graph as graph_lib
        from tensorflux.ops import boosted_trees_ops as bt

        with graph_lib.name_scope(name, "TreeEnsemble") as scope:
            self._name = scope
            self.resource_handle = bt.ensemble_resource_handle_op(shared_name=scope,
                                                                  name=scope)
            self.initializer = bt.create_ensemble(self.resource_handle, stamp_token,
                                                  serialized_proto)
        if not is_local:
            graph_lib.add_to_collection(
                graph_lib.GraphKeys.SAVEABLE_OBJECTS,
                _TreeEnsembleSaveable(self.resource_handle, self.initializer,
                                      self.resource_handle.name))

    def is_initialized(self):
        from tensorflux.ops import boosted_trees_ops as bt

        return bt.is_ensemble_initialized(self.resource_handle)

    def get_states(self):
        """(stamp_token, num_trees, num_finalized_trees, num_attempted_layers,
        last_layer_nodes_range)."""
        from tensorflux.ops import boosted_trees_ops as bt

        return bt.get_ensemble_states(self.resource_handle)

    def serialize(self):
        from tensorflux.ops import boosted_trees_ops as bt

        return bt.serialize_ensemble(self.resource_handle)


# ---- features ------------------------------------------------------------------------------


def _check_columns(feature_columns) -> list:
    """The columns in name order; ValueError for any that is not bucketized, indicator or
    a float numeric_column."""
    from tensorflux.feature_column import feature_column as fc

    columns = list(feature_columns or [])
    if not columns:
        raise ValueError("feature_columns must not be empty.")
    for column in columns:
        if isinstance(column, (fc.BucketizedColumn, fc.IndicatorColumn)) or \
                _is_float_column(column):
            continue
        raise ValueError("For now, only bucketized_column, indicator_column and float "
                         f"numeric_column are supported but got: {column}")
    return sorted(columns, key=lambda c: c.name)


def _is_float_column(column) -> bool:
    from tensorflux.feature_column import feature_column as fc

    return isinstance(column, fc.NumericColumn) and column.dtype.is_floating


def _source_name(column) -> str:
    """The raw feature a column reads (how feature importances are named)."""
    if _is_float_column(column):
        return column.key
    inner = getattr(column, "source_column", None) or column.categorical_column
    return getattr(inner, "key", None) or inner.name


def _column_sizes(columns, num_quantiles: int) -> list[tuple[int, int]]:
    """(number of features, number of buckets) per column; a float column's values fall
    in at most num_quantiles + 2 buckets of its boundaries."""
    out = []
    for column in columns:
        n = column._variable_shape.num_elements()
        if _is_float_column(column):
            out.append((n, num_quantiles + 2))
        elif hasattr(column, "source_column"):
            per = len(column.boundaries) + 1
            out.append((n // per, per))
        else:
            out.append((n, 2))
    return out


def _float_values(features, columns) -> list:
    """The float32 [batch] values of every feature of the float columns, in order."""
    from tensorflux.feature_column import feature_column as fc

    out = []
    for column in columns:
        if _is_float_column(column):
            dense = fc.input_layer(dict(features), [column])
            out += [dense[:, i] for i in range(column._variable_shape.num_elements())]
    return out


def _bucketized_features(features, columns, boundaries=None) -> list:
    """The int32 [batch] bucket ids of every feature of `columns` (see the module doc);
    float columns' values are bucketized by `boundaries` (one tensor per float feature)."""
    from tensorflux.feature_column import feature_column as fc
    from tensorflux.ops import array_ops, math_ops, reduction_ops
    from tensorflux.ops import boosted_trees_ops as bt

    features = dict(features)
    floats = iter(bt.boosted_trees_bucketize(_float_values(features, columns), boundaries)
                  if boundaries else [])
    out = []
    for column, (n, per) in zip(columns, _column_sizes(columns, 0), strict=True):
        if _is_float_column(column):
            out += [next(floats) for _ in range(n)]
            continue
        dense = fc.input_layer(features, [column])
        if hasattr(column, "source_column"):
            ids = reduction_ops.argmax(array_ops.reshape(dense, [-1, n, per]), axis=2)
            ids = math_ops.cast(ids, dtypes.int32)
            out += [ids[:, i] for i in range(n)]
        else:
            hot = math_ops.cast(math_ops.minimum(dense, 1.0), dtypes.int32)
            out += [hot[:, i] for i in range(n)]
    return out


def _feature_names(columns) -> list[str]:
    """The raw-feature name of every bucketized feature, in feature order."""
    names = []
    for column, (n, _) in zip(columns, _column_sizes(columns, 0), strict=True):
        names += [_source_name(column)] * n
    return names


class _QuantileSaveable(SaveableObject):
    """Saves the quantile streams' boundaries as `<name>_bucket_boundaries_<i>`; restores
    by deserializing them after creating the streams (TF's QuantileAccumulatorSaveable)."""

    def __init__(self, handle, create_op, num_streams, name):
        from tensorflux.ops import boosted_trees_ops as bt

        bounds = bt.get_bucket_boundaries(handle, num_streams)
        super().__init__(handle, [SaveSpec(b, "", f"{name}_bucket_boundaries_{i}")
                                  for i, b in enumerate(bounds)], name)
        self.handle, self._create_op = handle, create_op

    def restore(self, restored_tensors, restored_shapes):
        from tensorflux.framework import graph as graph_lib
        from tensorflux.ops import boosted_trees_ops as bt

        with graph_lib.get_default_graph().control_dependencies([self._create_op]):
            return bt.quantile_resource_deserialize(self.handle, restored_tensors)


class QuantileAccumulator:
    """Quantile streams of `num_streams` float features: their handle, the op creating
    them, and their SaveableObject in the graph's SAVEABLE_OBJECTS."""

    def __init__(self, epsilon, num_streams, num_quantiles, name):
        from tensorflux.framework import graph as graph_lib
        from tensorflux.ops import boosted_trees_ops as bt

        self._num_streams, self._num_quantiles, self._epsilon = \
            num_streams, num_quantiles, epsilon
        with graph_lib.name_scope(name, "QuantileAccumulator") as scope:
            self.resource_handle = bt.quantile_stream_resource_handle_op(shared_name=scope,
                                                                         name=scope)
            self.initializer = bt.create_quantile_stream_resource(
                self.resource_handle, epsilon, num_streams)
        graph_lib.add_to_collection(
            graph_lib.GraphKeys.SAVEABLE_OBJECTS,
            _QuantileSaveable(self.resource_handle, self.initializer, num_streams,
                              self.resource_handle.name))

    def get_bucket_boundaries(self):
        from tensorflux.ops import boosted_trees_ops as bt

        return bt.get_bucket_boundaries(self.resource_handle, self._num_streams)

    def add_summaries(self, float_columns, example_weights):
        from tensorflux.ops import boosted_trees_ops as bt

        summaries = bt.make_quantile_summaries(float_columns, example_weights,
                                               self._epsilon)
        return bt.quantile_add_summaries(self.resource_handle, summaries)

    def flush(self):
        from tensorflux.ops import boosted_trees_ops as bt

        return bt.quantile_flush(self.resource_handle, self._num_quantiles)


# ---- training ------------------------------------------------------------------------------


class _Params(collections.namedtuple("_Params", [
        "n_trees", "max_depth", "learning_rate", "l1", "l2", "tree_complexity",
        "min_node_weight", "center_bias", "pruning_mode", "n_batches_per_layer",
        "quantile_sketch_epsilon", "bucket_sizes"])):
    """The tree hyper-parameters (checked as TF checks them) and each column's (number
    of features, number of buckets)."""

    def check(self) -> _Params:
        if self.n_batches_per_layer <= 0:
            raise ValueError(f"n_batches_per_layer must be positive; given "
                             f"{self.n_batches_per_layer}")
        if self.n_trees <= 0:
            raise ValueError(f"n_trees must be a positive integer; given {self.n_trees}")
        if self.max_depth <= 0:
            raise ValueError(f"max_depth must be a positive integer; given {self.max_depth}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive; given {self.learning_rate}")
        for what in ("l1", "l2", "tree_complexity", "min_node_weight"):
            if getattr(self, what) < 0:
                raise ValueError(f"{what} must be non-negative; given {getattr(self, what)}")
        if not 0 < self.quantile_sketch_epsilon < 1:
            raise ValueError(f"quantile_sketch_epsilon must be in (0, 1); given "
                             f"{self.quantile_sketch_epsilon}")
        if self.pruning_mode not in _PRUNING_MODES:
            raise ValueError(f"pruning_mode must be one of: none, pre, post. Given: "
                             f"{self.pruning_mode}")
        if self.pruning_mode != "none" and self.tree_complexity <= 0:
            raise ValueError("For pruning, tree_complexity must be positive.")
        if self.pruning_mode == "none" and self.tree_complexity > 0:
            raise ValueError("Tree complexity have no effect unless pruning mode is chosen.")
        return self

    @property
    def num_quantiles(self) -> int:
        return int(1.0 / self.quantile_sketch_epsilon)

    @property
    def max_splits(self) -> int:
        # node ids of the deepest layer that splits stay below 2**max_depth - 1
        return (1 << self.max_depth) - 1


class _StopAtTreesHook(session_run_hook.SessionRunHook):
    """Stops training once n_trees trees are finalized (or far too many layers were
    attempted without finishing them)."""

    def __init__(self, states, params: _Params):
        self._states, self._tree_params = states, params

    def before_run(self, run_context):
        return session_run_hook.SessionRunArgs(self._states)

    def after_run(self, run_context, run_values) -> None:
        finalized, attempted = run_values.results
        p = self._tree_params
        if finalized >= p.n_trees or attempted > 2 * p.n_trees * p.max_depth:
            run_context.request_stop()


def _grow(ensemble, params: _Params, stats) -> object:
    """The op growing one layer from the [num_features, max_splits, buckets, 2] stats."""
    from tensorflux.ops import boosted_trees_ops as bt
    from tensorflux.ops import joining_ops

    n = stats.shape[0]
    _, _, _, _, nodes_range = ensemble.get_states()
    gains = bt.calculate_best_gains_per_feature(
        nodes_range, joining_ops.unstack(stats, num=n), params.l1, params.l2,
        params.tree_complexity, params.min_node_weight, params.max_splits)
    return bt.update_ensemble(ensemble.resource_handle, list(range(n)), *gains,
                              max_depth=params.max_depth, learning_rate=params.learning_rate,
                              pruning_mode=params.pruning_mode)


class _Accumulator:
    """Means of a value over n batches: `apply(fn)` (built in a cond branch) runs fn on
    the value itself when n is 1; otherwise adds the value to a variable (`<name>`, with
    a count `<name>_count`) and on the n-th batch runs fn on their mean and starts over.
    The variables are made at construction, outside any cond."""

    def __init__(self, name: str, value, n: int):
        from tensorflux.variables import init_ops, variable_scope

        self.value, self.n = value, n
        if n == 1:
            return
        zeros = init_ops.zeros_initializer()
        self.total = variable_scope.get_variable(name, value.shape.as_list(), dtypes.float32,
                                                 initializer=zeros, trainable=False)
        self.count = variable_scope.get_variable(name + "_count", [], dtypes.int32,
                                                 initializer=zeros, trainable=False)

    def apply(self, fn):
        from tensorflux.control_flow import builders
        from tensorflux.framework import graph as graph_lib
        from tensorflux.ops import state_ops

        if self.n == 1:
            return builders.group(fn(self.value))
        total = self.total.assign_add(self.value)
        seen = self.count.assign_add(1)

        def use():
            with graph_lib.get_default_graph().control_dependencies([fn(total / self.n)]):
                return builders.group(
                    state_ops.assign_variable_op(self.total.handle, 0.0 * total),
                    state_ops.assign_variable_op(self.count.handle, 0 * seen))

        return builders.cond(seen >= self.n, use, lambda: builders.group(total, seen))


def _train_op(ensemble, params: _Params, loss, logits, node_ids, bucketized,
              quantile_phase=None):
    """The op of one training step (see the module docstring) and the states to stop on;
    `quantile_phase(grow_phase)` runs the growth only once float columns have
    boundaries."""
    from tensorflux.autodiff import gradients as grad_lib
    from tensorflux.control_flow import builders
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import (
        array_ops,
        comparison_ops,
        control_flow_ops,
        joining_ops,
        reduction_ops,
        state_ops,
    )
    from tensorflux.ops import boosted_trees_ops as bt
    from tensorflux.train.global_step import get_global_step
    from tensorflux.variables import variable_scope

    grads = grad_lib.gradients(loss, logits)[0]
    hessians = grad_lib.gradients(grads, logits)[0]
    num_buckets = max(per for _, per in params.bucket_sizes)
    stats = bt.make_stats_summary(node_ids, grads, hessians, bucketized, params.max_splits,
                                  num_buckets)
    _, _, finalized, _, _ = ensemble.get_states()
    n = params.n_batches_per_layer
    with variable_scope.variable_scope(_ENSEMBLE_NAME + "_training"):
        layer_stats = _Accumulator("stats_accumulator", stats, n)
        if params.center_bias:
            # the batch means of the (mean loss's) gradients and hessians, as TF takes them
            means = joining_ops.concat([reduction_ops.reduce_mean(grads, 0),
                                        reduction_ops.reduce_mean(hessians, 0)], 0)
            bias_stats = _Accumulator("bias_stats_accumulator", means, n)
            needed = variable_scope.get_variable("center_bias_needed", [], dtypes.bool,
                                                 initializer=_true_initializer(),
                                                 trainable=False)

    def grow():
        return layer_stats.apply(lambda s: _grow(ensemble, params, s))

    def center():
        def step(mean):
            go_on = bt.center_bias(ensemble.resource_handle,
                                   array_ops.reshape(mean[:1], [1, 1]),
                                   array_ops.reshape(mean[1:], [1, 1]), params.l1,
                                   params.l2)
            return state_ops.assign_variable_op(needed.handle, go_on)

        return bias_stats.apply(step)

    def grow_or_center():
        if not params.center_bias:
            return grow()
        return builders.cond(needed.read_value(), center, grow)

    def grow_phase():
        return builders.cond(comparison_ops.less(finalized, params.n_trees),
                             grow_or_center, control_flow_ops.no_op)

    op = grow_phase() if quantile_phase is None else quantile_phase(grow_phase)
    graph = graph_lib.get_default_graph()
    with graph.control_dependencies([op]):
        _, _, finalized_after, attempted_after, _ = ensemble.get_states()
        step = state_ops.assign_add(get_global_step(), 1).op
    return step, (finalized_after, attempted_after)


def _quantile_phase(quantiles, float_values, weights, n: int):
    """quantile_phase(grow_phase) (see _train_op): until the boundaries are ready, each
    step adds its float values to the quantile streams, and the n-th flushes them."""
    from tensorflux.control_flow import builders
    from tensorflux.framework import graph as graph_lib
    from tensorflux.ops import state_ops
    from tensorflux.variables import init_ops, variable_scope

    with variable_scope.variable_scope(_ENSEMBLE_NAME + "_training"):
        ready = variable_scope.get_variable(
            "are_boundaries_ready", [], dtypes.bool,
            initializer=init_ops.constant_initializer(False), trainable=False)
        seen = variable_scope.get_variable("quantile_batches", [], dtypes.int32,
                                           initializer=init_ops.zeros_initializer(),
                                           trainable=False)

    def accumulate():
        with graph_lib.get_default_graph().control_dependencies(
                [quantiles.add_summaries(float_values, weights)]):
            count = seen.assign_add(1)

        def flush():
            with graph_lib.get_default_graph().control_dependencies([quantiles.flush()]):
                return builders.group(state_ops.assign_variable_op(ready.handle, True))

        return builders.cond(count >= n, flush, lambda: builders.group(count))

    return lambda grow_phase: builders.cond(ready.read_value(), grow_phase, accumulate)


def _true_initializer():
    from tensorflux.variables import init_ops

    return init_ops.constant_initializer(True)


def _model_fn(head, columns, params: _Params, explain: dict):
    """The model_fn; with explain["on"], predictions also carry each example's serialized
    DebugOutput (BoostedTreesExampleDebugOutputs) under _DEBUG_KEY."""

    def model_fn(features, labels, mode, config):
        from tensorflux.estimator import model_fn as model_fn_lib
        from tensorflux.ops import array_ops, math_ops
        from tensorflux.ops import boosted_trees_ops as bt
        from tensorflux.train import monitored_session
        from tensorflux.variables import variables

        ensemble = TreeEnsemble(_ENSEMBLE_NAME)
        floats = _float_values(features, columns)
        quantiles = None if not floats else QuantileAccumulator(
            params.quantile_sketch_epsilon, len(floats), params.num_quantiles,
            _ENSEMBLE_NAME + "/QuantileAccumulator")
        bucketized = _bucketized_features(
            features, columns, quantiles.get_bucket_boundaries() if quantiles else None)
        hooks = []
        if mode == ModeKeys.TRAIN:
            batch = array_ops.shape(bucketized[0])[:1]
            # no cache: every example starts fresh (node -1) at the first tree
            logits, _, node_ids = bt.training_predict(
                ensemble.resource_handle, array_ops.zeros(batch, dtypes.int32),
                -array_ops.ones(batch, dtypes.int32), bucketized, head.logits_dimension)
            # an empty ensemble leaves them at -1: the root of the tree to come
            node_ids = math_ops.maximum(node_ids, 0)

            def train_op_fn(loss):
                phase = None if quantiles is None else _quantile_phase(
                    quantiles, floats, _example_weights(head, features, floats[0]),
                    params.n_batches_per_layer)
                op, states = _train_op(ensemble, params, loss, logits, node_ids, bucketized,
                                       phase)
                hooks.append(_StopAtTreesHook(states, params))
                return op
        else:
            logits = bt.predict(ensemble.resource_handle, bucketized, head.logits_dimension)
            train_op_fn = None
        spec = head.create_estimator_spec(features, mode, logits, labels,
                                          train_op_fn=train_op_fn)
        predictions = spec.predictions
        if mode == ModeKeys.PREDICT and explain.get("on"):
            predictions = dict(predictions, **{_DEBUG_KEY: bt.example_debug_outputs(
                ensemble.resource_handle, bucketized, head.logits_dimension)})
        scaffold = monitored_session.Scaffold(init_op=_init_op(
            variables, ensemble, quantiles))
        return model_fn_lib.EstimatorSpec(
            mode, predictions=predictions, loss=spec.loss, train_op=spec.train_op,
            eval_metric_ops=spec.eval_metric_ops, export_outputs=spec.export_outputs,
            training_hooks=hooks, scaffold=scaffold)

    return model_fn


def _init_op(variables, ensemble, quantiles):
    from tensorflux.control_flow import builders

    ops = [variables.global_variables_initializer(), ensemble.initializer]
    return builders.group(*ops, *([quantiles.initializer] if quantiles else []))


def _example_weights(head, features, like):
    """[batch] float32: the weight column's values, or ones."""
    from tensorflux.ops import array_ops

    weights = head._weights(features, like)
    return array_ops.ones_like(like) if isinstance(weights, float) \
        else array_ops.reshape(weights, [-1])


class _BoostedTrees(Estimator):
    """An Estimator of a boosted tree ensemble under `head` (see the module docstring)."""

    def __init__(self, head, feature_columns, n_batches_per_layer, model_dir, config, n_trees,
                 max_depth, learning_rate, l1_regularization, l2_regularization,
                 tree_complexity, min_node_weight, center_bias, pruning_mode,
                 quantile_sketch_epsilon):
        self._columns = _check_columns(feature_columns)
        params = _Params(n_trees, max_depth, learning_rate, l1_regularization,
                         l2_regularization, tree_complexity, min_node_weight, center_bias,
                         pruning_mode, n_batches_per_layer, quantile_sketch_epsilon,
                         _column_sizes(self._columns, 0)).check()
        params = params._replace(bucket_sizes=_column_sizes(self._columns,
                                                            params.num_quantiles))
        self._tree_params = params
        self._head = head
        self._explain: dict = {}
        super().__init__(_model_fn(head, self._columns, self._tree_params, self._explain),
                         model_dir=model_dir, config=config)

    def experimental_predict_with_explanations(self, input_fn, predict_keys=None,
                                               hooks=None, checkpoint_path=None):
        """The predictions with directional feature contributions: each example's
        prediction also has 'bias' (the prediction of the bias alone) and 'dfc' (an
        OrderedDict raw feature name -> how much the splits on it moved the prediction,
        largest moves first); bias plus the contributions is the prediction (the
        probability of class 1 for a classifier).

        Raises:
          ValueError: the estimator was built without center_bias.
        """
        if not self._tree_params.center_bias:
            raise ValueError("center_bias must be enabled during estimator instantiation "
                             "when using experimental_predict_with_explanations.")
        names = _feature_names(self._columns)
        activation = (lambda x: x) if isinstance(self._head, heads_lib.RegressionHead) \
            else _sigmoid
        self._explain["on"] = True
        try:
            for prediction in self.predict(input_fn, predict_keys=None, hooks=hooks,
                                           checkpoint_path=checkpoint_path):
                debug = prediction.pop(_DEBUG_KEY)
                if predict_keys is not None:
                    prediction = {k: prediction[k] for k in predict_keys}
                prediction.update(_contributions(debug, names, activation))
                yield prediction
        finally:
            self._explain["on"] = False

    def experimental_feature_importances(self, normalize=False):
        """OrderedDict raw feature name -> the sum of the gains of the splits on its
        features (over all trees, times the tree weights), most important first; with
        `normalize`, as shares of the total.

        Raises:
          ValueError: no trained model; with `normalize`, a negative importance or none
            above 0 (no tree has a split).
        """
        import numpy as np

        from tensorflux.train import checkpoint_utils

        proto = _load_ensemble(checkpoint_utils, self.model_dir)
        names = _feature_names(self._columns)
        per_feature = np.zeros(len(names))
        for tree, weight in zip(proto.trees, proto.tree_weights, strict=True):
            for node in tree.nodes:
                if node.WhichOneof("node") == "bucketized_split":
                    per_feature[node.bucketized_split.feature_id] += \
                        weight * node.metadata.gain
        if normalize:
            if (per_feature < 0).any():
                raise ValueError("feature_importances must be non-negative.")
            if per_feature.sum() <= 0:
                raise ValueError("Trees are all empty or contain only a root node.")
            per_feature = per_feature / per_feature.sum()
        totals = dict.fromkeys(dict.fromkeys(names), 0.0)
        for name, value in zip(names, per_feature, strict=True):
            totals[name] += float(value)
        return collections.OrderedDict(sorted(totals.items(), key=lambda kv: -kv[1]))


_DEBUG_KEY = "_debug_outputs"


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _contributions(serialized: bytes, names, activation) -> dict:
    """{'bias', 'dfc'} of one example's DebugOutput: the activated logits path's first
    value, and each later step's change credited to the feature its split tested."""
    from tensorflux.protos import boosted_trees_pb2

    debug = boosted_trees_pb2.DebugOutput.FromString(bytes(serialized))
    path = [activation(v) for v in debug.logits_path] or [activation(0.0)]
    dfc = dict.fromkeys(dict.fromkeys(names), 0.0)
    for feature, before, after in zip(debug.feature_ids, path[:-1], path[1:], strict=True):
        dfc[names[feature]] += after - before
    ordered = sorted(dfc.items(), key=lambda kv: -abs(kv[1]))
    return {"bias": path[0], "dfc": collections.OrderedDict(ordered)}


def _load_ensemble(checkpoint_utils, model_dir):
    from tensorflux.protos import boosted_trees_pb2

    reader = checkpoint_utils.load_checkpoint(model_dir)
    serialized = bytes(reader.get_tensor(_ENSEMBLE_NAME + ":0_serialized"))
    if not serialized:
        raise ValueError("Found empty serialized string for TreeEnsemble. You should only "
                         "call this method after training.")
    return boosted_trees_pb2.TreeEnsemble.FromString(serialized)


class BoostedTreesClassifier(_BoostedTrees):
    """A binary classifier of gradient-boosted trees over bucketized and indicator columns.

    Only n_classes=2 is supported (TF 1.x's multi-class trees are not implemented).

    Raises:
      ValueError: bad hyper-parameters, feature columns of another kind, or n_classes > 2.
    """

    def __init__(self, feature_columns, n_batches_per_layer, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, n_trees=100, max_depth=6,
                 learning_rate=0.1, l1_regularization=0.0, l2_regularization=0.0,
                 tree_complexity=0.0, min_node_weight=0.0, config=None, center_bias=False,
                 pruning_mode="none", quantile_sketch_epsilon=0.01, train_in_memory=False):
        _check_classes(n_classes, label_vocabulary)
        if n_classes != 2:
            raise ValueError(f"For now only binary classification is supported. n_classes "
                             f"given: {n_classes}")
        head = _head(n_classes, weight_column=weight_column,
                     label_vocabulary=label_vocabulary,
                     loss_reduction=Reduction.SUM_OVER_BATCH_SIZE)
        super().__init__(head, feature_columns, n_batches_per_layer, model_dir, config,
                         n_trees, max_depth, learning_rate, l1_regularization,
                         l2_regularization, tree_complexity, min_node_weight, center_bias,
                         pruning_mode, quantile_sketch_epsilon)


class BoostedTreesRegressor(_BoostedTrees):
    """A regressor of gradient-boosted trees over bucketized and indicator columns.

    Raises:
      ValueError: bad hyper-parameters, feature columns of another kind, or
        label_dimension > 1.
    """

    def __init__(self, feature_columns, n_batches_per_layer, model_dir=None,
                 label_dimension=1, weight_column=None, n_trees=100, max_depth=6,
                 learning_rate=0.1, l1_regularization=0.0, l2_regularization=0.0,
                 tree_complexity=0.0, min_node_weight=0.0, config=None, center_bias=False,
                 pruning_mode="none", quantile_sketch_epsilon=0.01, train_in_memory=False):
        if label_dimension != 1:
            raise ValueError(f"For now only label_dimension 1 is supported. Given: "
                             f"{label_dimension}")
        head = _head(None, label_dimension, weight_column,
                     loss_reduction=Reduction.SUM_OVER_BATCH_SIZE)
        super().__init__(head, feature_columns, n_batches_per_layer, model_dir, config,
                         n_trees, max_depth, learning_rate, l1_regularization,
                         l2_regularization, tree_complexity, min_node_weight, center_bias,
                         pruning_mode, quantile_sketch_epsilon)

