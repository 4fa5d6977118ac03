"""`tensorflow.contrib.tensor_forest.python.tensor_forest`: extremely randomized forests
grown online, TF 1.4-1.15's design ("V4").

    hparams = tensor_forest.ForestHParams(num_classes=10, num_features=784,
                                          num_trees=10, max_nodes=1000).fill()
    forest = tensor_forest.RandomForestGraphs(hparams)
    train_op = forest.training_graph(X, Y)          # Y: class ids
    probabilities, tree_paths, variance = forest.inference_graph(X)
    init = tf.group(tf.global_variables_initializer(),
                    resources.initialize_resources(resources.shared_resources()))

Each tree is two resources (tensorflux/ops/tensor_forest_ops.py): its nodes and the
statistics of its fertile leaves; both are registered in GraphKeys.RESOURCES and saved by
tf.train.Saver through GraphKeys.SAVEABLE_OBJECTS. `fill()` computes TF 1.15's defaults.
Only dense features, the "basic" finish and "none" pruning strategies are implemented.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import random

from tensorflux.contrib.framework_variables import VariableDeviceChooser
from tensorflux.contrib.tensor_forest.python.ops import data_ops, model_ops, stats_ops
from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    gather_ops,
    joining_ops,
    math_ops,
    random_ops,
    reduction_ops,
    slicing_ops,
    unary_ops,
)
from tensorflux.variables import variable_scope

__all__ = ["ForestHParams", "RandomForestGraphs", "RandomTreeGraphs", "ForestVariables",
           "TreeVariables", "build_params_proto", "get_epoch_variable"]

_log = logging.getLogger("tensorflux")

# TF's enum names, kept as strings: (leaf model, statistics) per model_name.
CLASSIFICATION_LEAF_MODEL_TYPES = {
    "all_dense": ("MODEL_DENSE_CLASSIFICATION", "STATS_DENSE_GINI"),
    "all_sparse": ("MODEL_SPARSE_CLASSIFICATION", "STATS_SPARSE_GINI"),
    "sparse_then_dense": ("MODEL_SPARSE_OR_DENSE_CLASSIFICATION",
                          "STATS_SPARSE_THEN_DENSE_GINI"),
}
REGRESSION_MODEL_TYPE = ("MODEL_REGRESSION", "STATS_LEAST_SQUARES_REGRESSION",
                         "COLLECTION_BASIC")
FINISH_TYPES = {"basic": "SPLIT_FINISH_BASIC",
                "hoeffding": "SPLIT_FINISH_DOMINATE_HOEFFDING",
                "bootstrap": "SPLIT_FINISH_DOMINATE_BOOTSTRAP"}
PRUNING_TYPES = {"none": "SPLIT_PRUNE_NONE", "half": "SPLIT_PRUNE_HALF",
                 "quarter": "SPLIT_PRUNE_QUARTER", "10_percent": "SPLIT_PRUNE_10_PERCENT",
                 "hoeffding": "SPLIT_PRUNE_HOEFFDING"}
SPLIT_TYPES = {"less_or_equal": "less_or_equal", "less": "less"}


class ForestHParams:
    """A forest's hyperparameters; `fill()` computes the ones left at 0 (TF 1.15's rules).

    `num_classes` (classes, or outputs for regression) and `num_features` must be given.
    """

    def __init__(self, num_trees=100, max_nodes=10000, bagging_fraction=1.0,
                 num_splits_to_consider=0, feature_bagging_fraction=1.0,
                 max_fertile_nodes=0, split_after_samples=250, valid_leaf_threshold=1,
                 dominate_method="bootstrap", dominate_fraction=0.99,
                 model_name="all_dense", split_finish_name="basic",
                 split_pruning_name="none", prune_every_samples=0,
                 early_finish_check_every_samples=0, collate_examples=False,
                 checkpoint_stats=False, use_running_stats_method=False,
                 initialize_average_splits=False, inference_tree_paths=False,
                 param_file=None, split_name="less_or_equal", **kwargs):
        self.num_trees = num_trees
        self.max_nodes = max_nodes
        self.bagging_fraction = bagging_fraction
        self.feature_bagging_fraction = feature_bagging_fraction
        self.num_splits_to_consider = num_splits_to_consider
        self.max_fertile_nodes = max_fertile_nodes  # unused, as in TF 1.15
        self.split_after_samples = split_after_samples
        self.valid_leaf_threshold = valid_leaf_threshold
        self.dominate_method = dominate_method
        self.dominate_fraction = dominate_fraction
        self.model_name = model_name
        self.split_finish_name = split_finish_name
        self.split_pruning_name = split_pruning_name
        self.collate_examples = collate_examples
        self.checkpoint_stats = checkpoint_stats
        self.use_running_stats_method = use_running_stats_method
        self.initialize_average_splits = initialize_average_splits
        self.inference_tree_paths = inference_tree_paths
        self.param_file = param_file
        self.split_name = split_name
        self.early_finish_check_every_samples = early_finish_check_every_samples
        self.prune_every_samples = prune_every_samples
        for name, value in kwargs.items():
            setattr(self, name, value)

    def values(self) -> dict:
        return self.__dict__

    def fill(self) -> ForestHParams:
        """Sets the parameters that depend on others; returns self.

        Raises:
          AttributeError: num_classes or num_features is not set.
        """
        _ = self.num_classes, self.num_features
        self.bagged_num_features = int(self.feature_bagging_fraction * self.num_features)
        self.bagged_features = None
        if self.feature_bagging_fraction < 1.0:
            self.bagged_features = [random.sample(range(self.num_features),
                                                  self.bagged_num_features)
                                    for _ in range(self.num_trees)]
        self.regression = getattr(self, "regression", False)
        self.num_outputs = self.num_classes if self.regression else 1
        self.num_output_columns = self.num_classes + 1
        self.num_splits_to_consider = self.num_splits_to_consider or min(
            max(10, math.floor(math.sqrt(self.num_features))), 1000)
        self.base_random_seed = getattr(self, "base_random_seed", 0)
        model = REGRESSION_MODEL_TYPE if self.regression else \
            CLASSIFICATION_LEAF_MODEL_TYPES[self.model_name]
        self.leaf_model_type, self.stats_model_type = model[0], model[1]
        self.finish_type = FINISH_TYPES["basic"] if self.regression else \
            FINISH_TYPES[self.split_finish_name]
        self.pruning_type = PRUNING_TYPES[self.split_pruning_name]
        if self.pruning_type == "SPLIT_PRUNE_NONE":
            self.prune_every_samples = 0
        else:  # prune half-way through split_after_samples
            self.prune_every_samples = (self.prune_every_samples or
                                        int(self.split_after_samples) / 2)
        if self.finish_type == "SPLIT_FINISH_BASIC":
            self.early_finish_check_every_samples = 0
        else:  # check a quarter of the way through
            self.early_finish_check_every_samples = (
                self.early_finish_check_every_samples or int(self.split_after_samples) / 4)
        self.split_type = SPLIT_TYPES[self.split_name]
        return self


def build_params_proto(params) -> dict:
    """The parameters the forest's ops read (TF's TensorForestParams fields), as a dict.

    Raises:
      NotImplementedError: early-finish or pruning strategies, depth-dependent values.
    """
    if params.finish_type != "SPLIT_FINISH_BASIC":
        raise NotImplementedError(f"split_finish_name={params.split_finish_name!r}: only "
                                  "'basic' is implemented")
    if params.pruning_type != "SPLIT_PRUNE_NONE":
        raise NotImplementedError(f"split_pruning_name={params.split_pruning_name!r}: only "
                                  "'none' is implemented")
    for field in ("split_after_samples", "num_splits_to_consider"):
        if not isinstance(getattr(params, field), numbers.Number):
            raise NotImplementedError(f"{field} must be a number (depth-dependent values are "
                                      "not implemented)")
    input_features = params.bagged_num_features if params.bagged_features else \
        params.num_features
    # int(): TF's proto fields take NumPy integers (tflearn passes `np.max(labels) + 1`).
    return {"num_trees": int(params.num_trees), "max_nodes": int(params.max_nodes),
            "regression": bool(params.regression), "num_outputs": int(params.num_classes),
            "num_features": int(params.num_features), "input_features": int(input_features),
            "num_splits_to_consider": int(params.num_splits_to_consider),
            "split_after_samples": int(params.split_after_samples),
            "split_type": params.split_type,
            "checkpoint_stats": bool(params.checkpoint_stats),
            "inference_tree_paths": bool(params.inference_tree_paths)}


def get_epoch_variable():
    """TF's epoch variable of `limit_epochs`, or [0] (unused by the forest)."""
    return [0]


class TreeVariables:
    """A tree's resources: `tree` and (when training) `stats`."""

    def __init__(self, params, tree_num, training, tree_config="", tree_stat=""):
        if not isinstance(getattr(params, "params_proto", None), dict):
            params.params_proto = build_params_proto(params)
        params.serialized_params_proto = json.dumps(params.params_proto, sort_keys=True)
        self.stats = None
        if training:
            self.stats = stats_ops.fertile_stats_variable(
                params, tree_stat, self.get_tree_name("stats", tree_num))
        self.tree = model_ops.tree_variable(params, tree_config, self.stats,
                                            self.get_tree_name("tree", tree_num))

    def get_tree_name(self, name, num) -> str:
        return f"{name}-{num}"


class ForestVariables:
    """Every tree's resources, each tree on the device its dummy variable was placed on."""

    def __init__(self, params, device_assigner, training=True,
                 tree_variables_class=TreeVariables, tree_configs=None, tree_stats=None):
        self.variables = []
        self.device_dummies = []
        with graph_lib.device(device_assigner):
            for i in range(params.num_trees):
                self.device_dummies.append(variable_scope.get_variable(
                    name=f"device_dummy_{i}", shape=0))
        for i in range(params.num_trees):
            with graph_lib.device(self.device_dummies[i].device):
                kwargs = {}
                if tree_configs is not None:
                    kwargs["tree_config"] = tree_configs[i]
                if tree_stats is not None:
                    kwargs["tree_stat"] = tree_stats[i]
                self.variables.append(tree_variables_class(params, i, training, **kwargs))

    def __setitem__(self, t, val):
        self.variables[t] = val

    def __getitem__(self, t):
        return self.variables[t]


class RandomForestGraphs:
    """Builds the training and inference graphs of a forest."""

    def __init__(self, params, tree_configs=None, tree_stats=None, device_assigner=None,
                 variables=None, tree_variables_class=TreeVariables, tree_graphs=None,
                 training=True):
        self.params = params
        self.device_assigner = device_assigner or VariableDeviceChooser()
        _log.info("Constructing forest with params = %s", self.params.__dict__)
        self.variables = variables or ForestVariables(
            self.params, device_assigner=self.device_assigner, training=training,
            tree_variables_class=tree_variables_class, tree_configs=tree_configs,
            tree_stats=tree_stats)
        tree_graph_class = tree_graphs or RandomTreeGraphs
        self.trees = [tree_graph_class(self.variables[i], self.params, i)
                      for i in range(self.params.num_trees)]

    def _bag_features(self, tree_num, input_data):
        columns = self.params.bagged_features[tree_num]
        return array_ops.transpose(gather_ops.gather(array_ops.transpose(input_data),
                                                     columns))

    def get_all_resource_handles(self) -> list:
        return ([self.variables[i].tree for i in range(len(self.trees))] +
                [self.variables[i].stats for i in range(len(self.trees))])

    def training_graph(self, input_data, input_labels, num_trainers=1, trainer_id=0,
                       **tree_kwargs):
        """The op training every tree (of this trainer) on one batch.

        Args:
          input_data: a [batch, num_features] tensor (or a dict of feature tensors).
          input_labels: class ids [batch] (regression: [batch, num_classes] outputs).
          num_trainers: how many trainers share the trees.
          trainer_id: which of them this is.
          **tree_kwargs: passed to each tree's training_graph (input_weights).

        Returns:
          The grouped training op ("train").
        """
        dense, _, data_spec = data_ops.ParseDataTensorOrDict(input_data)
        labels = data_ops.ParseLabelTensorOrDict(input_labels)
        per_trainer = self.params.num_trees / num_trainers
        tree_graphs = []
        for i in range(int(trainer_id * per_trainer), int((trainer_id + 1) * per_trainer)):
            with graph_lib.device(self.variables.device_dummies[i].device):
                seed = self.params.base_random_seed
                if seed != 0:
                    seed += i
                tree_data, tree_labels = dense, labels
                if self.params.bagging_fraction < 1.0:
                    batch = slicing_ops.strided_slice(array_ops.shape(dense), [0], [1])
                    r = random_ops.random_uniform(batch, seed=seed)
                    mask = comparison_ops.less(
                        r, array_ops.ones_like(r) * self.params.bagging_fraction)
                    keep = array_ops.squeeze(comparison_ops.where(mask), axis=[1])
                    tree_data = gather_ops.gather(dense, keep)
                    tree_labels = gather_ops.gather(labels, keep)
                if self.params.bagged_features:
                    tree_data = self._bag_features(i, tree_data)
                tree_graphs.append(self.trees[i].training_graph(
                    tree_data, tree_labels, seed, data_spec=data_spec, **tree_kwargs))
        return builders.group(*tree_graphs, name="train")

    def inference_graph(self, input_data, **inference_args):
        """(probabilities [batch, num_classes] averaged over the trees, tree_paths,
        variance of the trees' outputs [batch, num_classes])."""
        dense, _, data_spec = data_ops.ParseDataTensorOrDict(input_data)
        probabilities, paths = [], []
        for i in range(self.params.num_trees):
            with graph_lib.device(self.variables.device_dummies[i].device):
                tree_data = dense
                if self.params.bagged_features:
                    tree_data = self._bag_features(i, tree_data)
                probs, path = self.trees[i].inference_graph(tree_data, data_spec,
                                                            **inference_args)
                probabilities.append(probs)
                paths.append(path)
        with graph_lib.device(self.variables.device_dummies[0].device):
            all_predict = joining_ops.stack(probabilities, axis=1)
            average_values = math_ops.div(reduction_ops.reduce_sum(all_predict, 1),
                                          self.params.num_trees, name="probabilities")
            tree_paths = joining_ops.stack(paths, axis=1)
            expected_squares = math_ops.div(
                reduction_ops.reduce_sum(all_predict * all_predict, 1), self.params.num_trees)
            variance = math_ops.maximum(0., expected_squares - average_values * average_values)
            return average_values, tree_paths, variance

    def average_size(self):
        """The mean number of nodes over the trees (float32)."""
        sizes = []
        for i in range(self.params.num_trees):
            with graph_lib.device(self.variables.device_dummies[i].device):
                sizes.append(self.trees[i].size())
        return reduction_ops.reduce_mean(math_ops.cast(joining_ops.stack(sizes),
                                                       dtypes.float32))

    def training_loss(self, features, labels, name="training_loss"):
        """TF's: minus the average tree size (features and labels unused)."""
        del features, labels
        return unary_ops.negative(self.average_size(), name=name)

    def validation_loss(self, features, labels):
        """TF's: minus the average tree size (features and labels unused)."""
        del features, labels
        return unary_ops.negative(self.average_size())

    def feature_importances(self):
        """How often each feature is tested, over all trees, as fractions of the total."""
        counts = [self.trees[i].feature_usage_counts() for i in range(self.params.num_trees)]
        total = reduction_ops.reduce_sum(joining_ops.stack(counts, 0), 0)
        return total / reduction_ops.reduce_sum(total)


class RandomTreeGraphs:
    """Builds one tree's training and inference graphs."""

    def __init__(self, variables, params, tree_num):
        self.variables = variables
        self.params = params
        self.tree_num = tree_num

    def training_graph(self, input_data, input_labels, random_seed, data_spec,
                       sparse_features=None, input_weights=None):
        """TraverseTreeV4 -> UpdateModelV4 and ProcessInputV4 -> GrowTreeV4 (after the
        update)."""
        if sparse_features is not None:
            raise NotImplementedError("tensor_forest here takes dense features only")
        if input_weights is None:
            input_weights = []
        spec = data_spec.SerializeToString()
        params = self.params.serialized_params_proto
        leaf_ids = model_ops.traverse_tree_v4(self.variables.tree, input_data, [], [], [],
                                              input_spec=spec, params=params)
        update_model = model_ops.update_model_v4(self.variables.tree, leaf_ids, input_labels,
                                                 input_weights, params=params)
        finished_nodes = stats_ops.process_input_v4(
            self.variables.tree, self.variables.stats, input_data, [], [], [], input_labels,
            input_weights, leaf_ids, random_seed=random_seed, input_spec=spec, params=params)
        with graph_lib.control_dependencies([update_model]):
            return stats_ops.grow_tree_v4(self.variables.tree, self.variables.stats,
                                          finished_nodes, params=params)

    def inference_graph(self, input_data, data_spec, sparse_features=None):
        """(predictions [batch, num_classes], tree_paths) of this tree."""
        if sparse_features is not None:
            raise NotImplementedError("tensor_forest here takes dense features only")
        return model_ops.tree_predictions_v4(
            self.variables.tree, input_data, [], [], [],
            input_spec=data_spec.SerializeToString(),
            params=self.params.serialized_params_proto)

    def size(self):
        """The tree's number of nodes (int32)."""
        return model_ops.tree_size(self.variables.tree)

    def feature_usage_counts(self):
        return model_ops.feature_usage_counts(self.variables.tree,
                                              params=self.params.serialized_params_proto)
