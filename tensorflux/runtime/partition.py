"""Partitioning: one subgraph per device, cross-device edges replaced by _Send/_Recv pairs.

Rules (paper §3.3, whitepaper §3.2.2):
- Every data edge whose endpoints sit on different devices becomes `src -> _Send` on the
  producer's device and `_Recv -> dst` on the consumer's. There is exactly one _Send/_Recv
  pair per (tensor, destination device): all consumers on that device share the _Recv.
- A cross-device control edge becomes a _Send of a tiny dummy constant that waits on the
  source, and a _Recv on the destination device that the consumer waits on.
- Each pair shares a rendezvous key built from the attrs `send_device`,
  `send_device_incarnation`, `recv_device` and `tensor_name` (plus the frame and iteration at
  run time), so the same partitions work with a local or a remote Rendezvous.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tensorflux.framework import dtypes
from tensorflux.runtime.device import DeviceMgr
from tensorflux.runtime.step_graph import Node, StepGraph


@dataclass
class Partition:
    device: str
    nodes: list[Node] = field(default_factory=list)
    args: list[tuple[int, Node]] = field(default_factory=list)  # (feed index, _Arg node)
    fetches: list[tuple[int, Node, int]] = field(default_factory=list)  # (fetch pos, node, out)
    targets: list[Node] = field(default_factory=list)


def partition(sg: StepGraph, device_mgr: DeviceMgr) -> dict[str, Partition]:
    parts: dict[str, Partition] = {}

    def part(device: str) -> Partition:
        if device not in parts:
            parts[device] = Partition(device)
        return parts[device]

    for n in sg.nodes:
        part(n.device)
    recvs: dict[tuple[Node, int, str], Node] = {}
    new_nodes: list[Node] = []

    def recv_for(src: Node, idx: int, dst_device: str, control: bool) -> Node:
        key = (src, -1 if control else idx, dst_device)
        if key in recvs:
            return recvs[key]
        incarnation = device_mgr.lookup(src.device).incarnation
        tag = "ctrl" if control else str(idx)
        edge = f"edge_{src.id}_{src.name}_{tag}"
        common = {"tensor_name": edge, "send_device": src.device, "recv_device": dst_device,
                  "send_device_incarnation": incarnation, "client_terminated": False}
        dtype = dtypes.float32 if control else src.output_dtypes[idx]
        if control:
            dummy = Node(f"{src.name}/_ctrl_dummy_{len(new_nodes)}", "Const",
                         {"dtype": dtype, "value": np.zeros((), np.float32)}, [], [src],
                         [dtype])
            dummy.device = src.device
            new_nodes.append(dummy)
            source: tuple[Node, int] = (dummy, 0)
        else:
            source = (src, idx)
        send = Node(f"{src.name}/_send_{tag}_to_{_short(dst_device)}", "_Send",
                    {"T": dtype, **common}, [source], [], [])
        recv = Node(f"{src.name}/_recv_{tag}_on_{_short(dst_device)}", "_Recv",
                    {"tensor_type": dtype, **common}, [], [], [dtype])
        send.device, recv.device = src.device, dst_device
        new_nodes.extend((send, recv))
        recvs[key] = recv
        return recv

    for n in list(sg.nodes):
        new_inputs = []
        for src, idx in n.inputs:
            if src.device != n.device:
                new_inputs.append((recv_for(src, idx, n.device, False), 0))
            else:
                new_inputs.append((src, idx))
        n.inputs = new_inputs
        n.control_inputs = [c if c.device == n.device else recv_for(c, 0, n.device, True)
                            for c in n.control_inputs]
    for n in new_nodes:
        sg.add(n)
    for n in sg.nodes:
        parts[n.device].nodes.append(n)
    for i, a in enumerate(sg.args):
        parts[a.device].args.append((i, a))
    for pos, (n, idx) in enumerate(sg.fetches):
        parts[n.device].fetches.append((pos, n, idx))
    for n in sg.targets:
        parts[n.device].targets.append(n)
    return parts


def _short(device: str) -> str:
    """`/job:localhost/replica:0/task:0/device:CPU:1` -> `CPU_1` (for readable node names)."""
    tail = device.rsplit("/device:", 1)[-1]
    return tail.replace(":", "_")
