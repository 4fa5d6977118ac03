"""TF1's `tensorflow.python.ops.resources`: resources other than variables (tensor_forest's
trees, ...) registered with the graph so that they can be initialized and checked.

`register_resource(handle, create_op, is_initialized_op)` adds a record to
`GraphKeys.RESOURCES` (shared, the default) or `GraphKeys.LOCAL_RESOURCES`;
`initialize_resources(resource_list)` groups the records' create ops,
`report_uninitialized_resources()` names the ones whose is_initialized op says no.
"""

from __future__ import annotations

import collections
import os

from tensorflux.control_flow import builders
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.ops import comparison_ops, constant_op, control_flow_ops, joining_ops, slicing_ops

__all__ = ["register_resource", "shared_resources", "local_resources",
           "initialize_resources", "report_uninitialized_resources"]

# One registered resource: its handle, the op creating it, a bool tensor "it exists".
_Resource = collections.namedtuple("_Resource", ["handle", "create", "is_initialized"])


def register_resource(handle, create_op, is_initialized_op, is_shared=True) -> None:
    """Registers a resource so that `initialize_resources` and
    `report_uninitialized_resources` see it.

    Args:
      handle: the resource's handle tensor.
      create_op: the op that creates (initializes) it.
      is_initialized_op: a bool tensor, true once the resource exists.
      is_shared: GraphKeys.RESOURCES if true, else GraphKeys.LOCAL_RESOURCES.
    """
    key = GraphKeys.RESOURCES if is_shared else GraphKeys.LOCAL_RESOURCES
    graph_lib.add_to_collection(key, _Resource(handle, create_op, is_initialized_op))


def shared_resources() -> list:
    """The resources registered as shared (GraphKeys.RESOURCES)."""
    return graph_lib.get_collection(GraphKeys.RESOURCES)


def local_resources() -> list:
    """The resources registered as local (GraphKeys.LOCAL_RESOURCES)."""
    return graph_lib.get_collection(GraphKeys.LOCAL_RESOURCES)


def report_uninitialized_resources(resource_list=None,
                                   name="report_uninitialized_resources"):
    """A 1-D string tensor: the handle names of the resources not yet initialized.

    Args:
      resource_list: the resources to check (default: shared and local ones).
      name: the name scope.

    Returns:
      The names of the uninitialized resources (empty when there are none).
    """
    if resource_list is None:
        resource_list = shared_resources() + local_resources()
    with graph_lib.name_scope(name):
        device = os.environ.get("TF_DEVICE_FOR_UNINITIALIZED_VARIABLES", "/cpu:0")
        with graph_lib.device(device):
            if not resource_list:
                return constant_op.constant([], dtype=dtypes.string)
            uninitialized = comparison_ops.logical_not(
                joining_ops.stack([r.is_initialized for r in resource_list]))
            names = constant_op.constant([r.handle.op.name for r in resource_list])
            return slicing_ops.boolean_mask(names, uninitialized)


def initialize_resources(resource_list, name="init"):
    """An op creating every resource of `resource_list` (a no-op for an empty list)."""
    if resource_list:
        return builders.group(*[r.create for r in resource_list], name=name)
    return control_flow_ops.no_op(name=name)
