"""CPU kernels of the control-flow ops (tensorflux/ops/control_flow_ops.py)."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.registry import DEAD, kernel

_ALL = ("CPU", "GPU")


@kernel("NoOp", device=_ALL, inline="")
def _no_op(ctx):
    return None


@kernel("Switch", "RefSwitch", device=_ALL)
def _switch(ctx, data, pred):
    return (DEAD, data) if pred else (data, DEAD)


@kernel("Merge", "RefMerge", device=_ALL)
def _merge(ctx, *inputs):
    # The executor runs a Merge once one input is live (or all are dead, without calling us).
    for i, v in enumerate(inputs):
        if v is not None and v is not DEAD:
            return v, np.int32(i)
    raise AssertionError("Merge ran without a live input")


@kernel("Enter", "Exit", "NextIteration", "LoopCond", "RefEnter", "RefExit",
        "RefNextIteration", device=_ALL, forwards_input=True)
def _forward(ctx, x):
    return x


@kernel("ControlTrigger", device=_ALL)
def _control_trigger(ctx):
    return None
