"""Placement: choose a device for every node of a StepGraph (paper §3.3; whitepaper §3.2.1).

1. Colocation groups by union-find: a node joins the groups named by its `_class`
   (`loc:@other`) attribute, and every consumer of a resource handle joins the group of the
   handle's producer (a variable's reads and updates run where the variable lives).
2. Feasible devices per group: those matching every member's requested (partial) device
   spec, on which every member has a registered kernel. With `allow_soft_placement`, a group
   whose request cannot be met falls back to any device where all members have kernels.
3. Choice: the first feasible device in the session's device order (GPUs before CPUs when
   nothing narrows the type), the way TensorFlow's default placer does.
"""

from __future__ import annotations

import sys

from tensorflux.framework import device_spec as device_spec_lib
from tensorflux.framework import dtypes, errors
from tensorflux.kernels import registry as kernel_registry
from tensorflux.runtime.device import Device, DeviceMgr
from tensorflux.runtime.step_graph import Node, StepGraph


class _UnionFind:
    def __init__(self, nodes):
        self.parent = {n: n for n in nodes}

    def find(self, n):
        while self.parent[n] is not n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            if ra.id < rb.id:
                self.parent[rb] = ra
            else:
                self.parent[ra] = rb


def _colocation_groups(sg: StepGraph) -> list[list[Node]]:
    uf = _UnionFind(sg.nodes)
    by_name = {n.name: n for n in sg.nodes}
    for n in sg.nodes:
        for other in n.colocation:
            if other in by_name:
                uf.union(n, by_name[other])
        for src, i in n.inputs:
            if src.output_dtypes[i] is dtypes.resource and src.op != "_Arg":
                uf.union(n, src)
    groups: dict[Node, list[Node]] = {}
    for n in sg.nodes:
        groups.setdefault(uf.find(n), []).append(n)
    return list(groups.values())


def _merged_request(group: list[Node], allow_soft: bool) -> str:
    """The merged device spec of a group; InvalidArgumentError if two requests conflict."""
    merged = None
    first = None
    for n in group:
        if not n.requested_device:
            continue
        spec = device_spec_lib.DeviceSpecV2.from_string(n.requested_device)
        if merged is None:
            merged, first = spec, n
            continue
        for field in ("job", "replica", "task", "device_type", "device_index"):
            a, b = getattr(merged, field), getattr(spec, field)
            if a is not None and b is not None and a != b:
                if allow_soft:
                    break
                raise errors.InvalidArgumentError(
                    None, None,
                    f"Cannot colocate nodes {{{{colocation_node {first.name}}}}} and "
                    f"{{{{colocation_node {n.name}}}}}: Cannot merge devices with incompatible "
                    f"{field}s: '{first.requested_device}' and '{n.requested_device}'")
        else:
            merged = merged.make_merged_spec(spec)
    return merged.to_string() if merged is not None else ""


def _supports(device: Device, group: list[Node]) -> bool:
    return all(kernel_registry.find_kernel(n.op, device.device_type, n.attrs) is not None
               for n in group)


def place(sg: StepGraph, device_mgr: DeviceMgr, allow_soft_placement: bool = False,
          log_device_placement: bool = False) -> None:
    """Sets `node.device` for every node. Raises InvalidArgumentError naming the node when
    no device can run it or its group's requests conflict."""
    devices = device_mgr.devices
    host = devices[0]
    ordered = [d for d in devices if d.device_type == "GPU"] + \
              [d for d in devices if d.device_type != "GPU"]
    for group in _colocation_groups(sg):
        if all(n.op == "_Arg" for n in group):
            for n in group:
                n.device = host.name
            continue
        request = _merged_request(group, allow_soft_placement)
        matching = [d for d in ordered if device_spec_lib.is_compatible(request, d.name)] \
            if request else ordered
        feasible = [d for d in matching if _supports(d, group)]
        if not feasible and allow_soft_placement:
            same_type = [d for d in ordered if _supports(d, group)]
            feasible = same_type
        if not feasible:
            raise _placement_error(group, request, matching, devices)
        for n in group:
            n.device = feasible[0].name
    if log_device_placement:
        for n in sg.nodes:
            print(f"{n.name}: ({n.op}): {n.device}", file=sys.stderr)


def _placement_error(group, request, matching, devices) -> errors.InvalidArgumentError:
    node = next((n for n in group if n.requested_device), group[0])
    names = ", ".join(d.name for d in devices)
    if not matching:
        msg = (f"Cannot assign a device for operation {node.name}: {{{{node {node.name}}}}} "
               f"was explicitly assigned to {request} but available devices are [ {names} ]. "
               "Make sure the device specification refers to a valid device.")
    else:
        kinds = sorted({d.device_type for d in matching})
        missing = next((n for n in group if not any(
            kernel_registry.find_kernel(n.op, k, n.attrs) for k in kinds)), node)
        dtype_info = {k: v.name for k, v in missing.attrs.items()
                      if isinstance(v, dtypes.DType)}
        msg = (f"Cannot assign a device for operation {missing.name}: Could not satisfy "
               f"explicit device specification '{request}' because no supported kernel for "
               f"{'/'.join(kinds)} devices is available (op {missing.op}"
               f"{', ' + str(dtype_info) if dtype_info else ''}).")
        if missing is not node:
            msg += f" The node is colocated with {node.name}."
    return errors.InvalidArgumentError(None, None, msg)
