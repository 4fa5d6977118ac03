"""CPU kernels of the control-flow ops (tensorflux/ops/control_flow_ops.py)."""

from __future__ import annotations

from tensorflux.kernels.registry import kernel

_ALL = ("CPU", "GPU")


@kernel("NoOp", device=_ALL, inline="")
def _no_op(ctx):
    return None
