"""_FusedElementwise: a tree of float32 elementwise nodes of one static shape as one node,
made only by the graph optimizer's rewrite of a CPU step graph (runtime/
elementwise_fusion.py), after differentiation: no gradient, no TF1 wrapper. Its kernel
(tensorflux/kernels/cpu/fused_elementwise_ops.py) computes every node of the tree in one
pass, rounding each as the node's own kernel does.

Attributes:
  ops: the op type of each instruction, in order: one of `INSTRUCTION_OPS`.
  operands: two registers per instruction (its inputs; a one-input op repeats its one).
    Registers 0..N-1 are the node's inputs, register N + i instruction i's result; the
    last instruction's result is the output.
  shape: the output's shape; each input has it, or is a scalar (rank 0), broadcast.
"""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__: list[str] = []

# The instructions' op types, with the number of inputs each reads (TanhGrad/SigmoidGrad:
# y, dy as their ops take them; AddN is written as a chain of Adds).
INSTRUCTION_OPS = {"Add": 2, "Sub": 2, "Mul": 2, "Neg": 1, "TanhGrad": 2, "SigmoidGrad": 2}


def _fused_elementwise_shape(op):
    return [tensor_shape.TensorShape(list(op.get_attr("shape")))]


define_op("_FusedElementwise", inputs=["inputs: N * T"], outputs=["y: T"],
          attrs=["ops: list(string)", "operands: list(int)", "shape: list(int)",
                 "N: int >= 1", "T: {float}"],
          shape_fn=_fused_elementwise_shape, flops="binary:1")
not_differentiable("_FusedElementwise")
