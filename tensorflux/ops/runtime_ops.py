"""Ops the runtime inserts into step graphs: feeds (_Arg), transfers (_Send, _Recv) and
compiled loops (_CompiledLoop).

They never appear in a user's Graph; the Session's step builder, the partitioner and the
executor's loop compiler (runtime/compiled_loops.py) add them.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes
from tensorflux.framework.op_registry import define_op, not_differentiable

# Feeds and transfers hand over references: the placer's cost model charges them nothing
# but the per-node overhead (cost_free).
define_op("_Arg", outputs=["output: T"], attrs=["T: type", "index: int >= 0"],
          shape_fn=common_shapes.unknown, stateful=True, cost_free=True)
define_op("_Send", inputs=["tensor: T"],
          attrs=["T: type", "tensor_name: string", "send_device: string",
                 "send_device_incarnation: int", "recv_device: string",
                 "client_terminated: bool = false"],
          shape_fn=lambda op: [], stateful=True, cost_free=True, flow_kind="dead_aware")
define_op("_Recv", outputs=["tensor: tensor_type"],
          attrs=["tensor_type: type", "tensor_name: string", "send_device: string",
                 "send_device_incarnation: int", "recv_device: string",
                 "client_terminated: bool = false"],
          shape_fn=common_shapes.unknown, stateful=True, cost_free=True)
# One cheap while loop (its Enters, frame and Exits) as one node: inputs the loop variables
# and invariants' Enter inputs, outputs the Exits' values. `body` holds the generated Python
# function that runs it; the kernel calls it.
define_op("_CompiledLoop", inputs=["inputs: Tin"], outputs=["outputs: Tout"],
          attrs=["Tin: list(type) >= 0", "Tout: list(type) >= 0", "body: func"],
          shape_fn=common_shapes.unknown, stateful=True)
not_differentiable("_Arg", "_Send", "_Recv", "_CompiledLoop")
