"""Ops the runtime inserts into step graphs: feeds (_Arg) and transfers (_Send, _Recv).

They never appear in a user's Graph; the Session's step builder and the partitioner add them.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes
from tensorflux.framework.op_registry import define_op, not_differentiable

define_op("_Arg", outputs=["output: T"], attrs=["T: type", "index: int >= 0"],
          shape_fn=common_shapes.unknown, stateful=True)
define_op("_Send", inputs=["tensor: T"],
          attrs=["T: type", "tensor_name: string", "send_device: string",
                 "send_device_incarnation: int", "recv_device: string",
                 "client_terminated: bool = false"],
          shape_fn=lambda op: [], stateful=True)
define_op("_Recv", outputs=["tensor: tensor_type"],
          attrs=["tensor_type: type", "tensor_name: string", "send_device: string",
                 "send_device_incarnation: int", "recv_device: string",
                 "client_terminated: bool = false"],
          shape_fn=common_shapes.unknown, stateful=True)
not_differentiable("_Arg", "_Send", "_Recv")
