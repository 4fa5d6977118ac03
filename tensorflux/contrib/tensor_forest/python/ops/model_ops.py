"""`tensorflow.contrib.tensor_forest.python.ops.model_ops`: a tree's resource
(`tree_variable`) and the ops over it (traversal, predictions, leaf updates, size)."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.ops.tensor_forest_ops import (  # noqa: F401 - TF1's names
    create_tree_variable,
    decision_tree_resource_handle_op,
    feature_usage_counts,
    traverse_tree_v4,
    tree_deserialize,
    tree_is_initialized_op,
    tree_predictions_v4,
    tree_serialize,
    tree_size,
    update_model_v4,
)
from tensorflux.train.saver import BaseSaverBuilder
from tensorflux.variables import resources

__all__ = ["TreeVariableSavable", "TreeVariable", "tree_variable", "traverse_tree_v4",
           "tree_predictions_v4", "tree_size", "update_model_v4", "feature_usage_counts"]


class TreeVariableSavable(BaseSaverBuilder.SaveableObject):
    """Saves a tree as its serialized form (TreeSerialize) and restores it with
    TreeDeserialize, after the op that creates it."""

    def __init__(self, params, tree_handle, stats_handle, create_op, name):
        del stats_handle
        self.params = params
        spec = BaseSaverBuilder.SaveSpec(tree_serialize(tree_handle), "", name)
        super().__init__(tree_handle, [spec], name)
        self._tree_handle = tree_handle
        self._create_op = create_op

    def restore(self, restored_tensors, unused_restored_shapes):
        with graph_lib.control_dependencies([self._create_op]):
            return tree_deserialize(self._tree_handle, restored_tensors[0],
                                    params=self.params.serialized_params_proto)


class TreeVariable:
    """A tree resource: its handle op, its initializer (CreateTreeVariable from a
    serialized tree, empty for a new one-leaf tree) and its is-initialized op."""

    def __init__(self, params, tree_config, stats_handle, name, container=None):
        self._params = params
        self._tree_config = tree_config
        self._stats_handle = stats_handle
        self._name = name
        self._container = container
        self._init_op = None
        self.resource_handle = decision_tree_resource_handle_op(
            container or "", shared_name=name, name=name)

    @property
    def initializer(self):
        if self._init_op is None:
            self._init_op = create_tree_variable(
                self.resource_handle, self._tree_config,
                params=self._params.serialized_params_proto)
        return self._init_op

    def is_initialized(self):
        return tree_is_initialized_op(self.resource_handle)

    def saveable(self, name):
        return TreeVariableSavable(self._params, self.resource_handle, self._stats_handle,
                                   self.initializer, name)


def tree_variable(params, tree_config, stats_handle, name, container=None):
    """Creates a tree (saved by tf.train.Saver, registered as a shared resource) and
    returns its handle.

    Args:
      params: the forest's filled ForestHParams.
      tree_config: a serialized tree to start from ("" for a single leaf).
      stats_handle: the handle of the tree's fertile statistics (or None).
      name: the tree's name ("tree-3").
      container: an optional ResourceMgr container.

    Returns:
      The tree's resource handle.
    """
    with graph_lib.name_scope(name, "TreeVariable") as scope:
        tree = TreeVariable(params, tree_config, stats_handle, scope, container)
        handle = tree.resource_handle
        graph_lib.add_to_collection(GraphKeys.SAVEABLE_OBJECTS, tree.saveable(handle.name))
        resources.register_resource(handle, tree.initializer, tree.is_initialized())
        return handle
