"""`tensorflow.contrib.tensor_forest.python.ops.stats_ops`: a tree's fertile statistics
(`fertile_stats_variable`) and the ops that grow the tree from them."""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.ops.tensor_forest_ops import (  # noqa: F401 - TF1's names
    create_fertile_stats_variable,
    fertile_stats_deserialize,
    fertile_stats_is_initialized_op,
    fertile_stats_resource_handle_op,
    fertile_stats_serialize,
    finalize_tree,
    grow_tree_v4,
    process_input_v4,
)
from tensorflux.train.saver import BaseSaverBuilder
from tensorflux.variables import resources

__all__ = ["FertileStatsVariableSavable", "FertileStatsVariable", "fertile_stats_variable",
           "process_input_v4", "grow_tree_v4", "finalize_tree"]


class FertileStatsVariableSavable(BaseSaverBuilder.SaveableObject):
    """Saves fertile statistics serialized (FertileStatsSerialize: the fertile leaves,
    their statistics only with `checkpoint_stats`) and restores them."""

    def __init__(self, params, stats_handle, create_op, name):
        self.params = params
        tensor = fertile_stats_serialize(stats_handle, params=params.serialized_params_proto)
        super().__init__(stats_handle, [BaseSaverBuilder.SaveSpec(tensor, "", name)], name)
        self._stats_handle = stats_handle
        self._create_op = create_op

    def restore(self, restored_tensors, unused_restored_shapes):
        with graph_lib.control_dependencies([self._create_op]):
            return fertile_stats_deserialize(self._stats_handle, restored_tensors[0],
                                             params=self.params.serialized_params_proto)


class FertileStatsVariable:
    """A fertile-statistics resource: handle op, initializer, is-initialized op."""

    def __init__(self, params, stats_config, name, container=None):
        self._params = params
        self._stats_config = stats_config
        self._name = name
        self._init_op = None
        self.resource_handle = fertile_stats_resource_handle_op(
            container or "", shared_name=name, name=name)

    @property
    def initializer(self):
        if self._init_op is None:
            self._init_op = create_fertile_stats_variable(
                self.resource_handle, self._stats_config,
                params=self._params.serialized_params_proto)
        return self._init_op

    def is_initialized(self):
        return fertile_stats_is_initialized_op(self.resource_handle)


def fertile_stats_variable(params, stats_config, name, container=None):
    """Creates a tree's fertile statistics (saved by tf.train.Saver, registered as a
    shared resource) and returns their handle.

    Args:
      params: the forest's filled ForestHParams.
      stats_config: serialized statistics to start from ("" for a fresh root slot).
      name: the statistics' name ("stats-3").
      container: an optional ResourceMgr container.

    Returns:
      The statistics' resource handle.
    """
    with graph_lib.name_scope(name, "FertileStatsVariable") as scope:
        stats = FertileStatsVariable(params, stats_config, scope, container)
        handle = stats.resource_handle
        saveable = FertileStatsVariableSavable(params, handle, stats.initializer, handle.name)
        graph_lib.add_to_collection(GraphKeys.SAVEABLE_OBJECTS, saveable)
        resources.register_resource(handle, stats.initializer, stats.is_initialized())
        return handle
