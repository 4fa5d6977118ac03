"""CPU kernel of _FusedElementwise (tensorflux/ops/fused_elementwise_ops.py): a tree of
float32 elementwise nodes in one pass of _native.c's `elementwise` (native.elementwise),
or, without the extension or for inputs it does not take (not C-contiguous), one NumPy
call per instruction. Each instruction rounds as its op's own kernel does, so the fused
node's values are the unfused nodes' bit for bit (tests/runtime/test_elementwise_fusion.py).
"""

from __future__ import annotations

import warnings

import numpy as np

from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu._math_common import _invalid, _shape_str
from tensorflux.kernels.registry import kernel_factory

warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)

_C_REGISTERS = 48  # _native.c EW_MAX_REGS: inputs + instructions the C loop takes
# op type -> _native.c's EW_* code
_CODES = {"Add": 0, "Sub": 1, "Mul": 2, "Neg": 3, "TanhGrad": 4, "SigmoidGrad": 5}


def one_instruction(op: str) -> bytes:
    """The program of `op` (TanhGrad, SigmoidGrad, ...) over inputs 0 and 1 alone, for
    native.elementwise (unary_ops.py's large TanhGrad and SigmoidGrad)."""
    return np.array([[_CODES[op], 0, 1]], np.int32).tobytes()


def _tanh_grad(y, dy):  # unary_ops.py's TanhGrad: dy * (1 - y * y)
    return np.multiply(dy, np.subtract(1, np.multiply(y, y)))


def _sigmoid_grad(y, dy):  # unary_ops.py's SigmoidGrad: (dy * y) * (1 - y)
    return np.multiply(np.multiply(dy, y), np.subtract(1, y))


_NUMPY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
          "Neg": lambda x, _: np.negative(x), "TanhGrad": _tanh_grad,
          "SigmoidGrad": _sigmoid_grad}


def _decode(node):
    ops = [op.decode() if isinstance(op, bytes) else op for op in node.attrs["ops"]]
    operands = [int(r) for r in node.attrs["operands"]]
    if not ops or len(operands) != 2 * len(ops) or any(op not in _CODES for op in ops):
        raise _invalid(f"_FusedElementwise takes ops among {sorted(_CODES)} with two "
                       f"operands each, got {ops} and {len(operands)} operands")
    n = node.attrs["N"]
    for i in range(len(ops)):
        if not all(0 <= r < n + i for r in operands[2 * i:2 * i + 2]):
            raise _invalid(f"_FusedElementwise instruction {i} reads a register that is not "
                           f"there yet: {operands[2 * i:2 * i + 2]}")
    return ops, operands


@kernel_factory("_FusedElementwise")
def _fused_elementwise(node):
    ops, operands = _decode(node)
    shape = tuple(int(d) for d in node.attrs["shape"])
    # _native.c's EW_MAX_REGS bounds inputs + instructions; a longer program is NumPy's
    run = native.elementwise_fn() if node.attrs["N"] + len(ops) <= _C_REGISTERS else \
        (lambda out, inputs, program: False)
    program = np.array([[_CODES[op], operands[2 * i], operands[2 * i + 1]]
                        for i, op in enumerate(ops)], np.int32).tobytes()

    def compute(ctx, *inputs):
        out = np.empty(shape, np.float32)
        if run(out, inputs, program):
            return out
        for i, x in enumerate(inputs):  # the C loop refused them: TF's message, or NumPy
            if np.shape(x) != shape and np.ndim(x) != 0:
                raise _invalid(f"_FusedElementwise input {i} has shape "
                               f"{_shape_str(np.shape(x))}, not {_shape_str(shape)} or a "
                               "scalar")
        regs = list(inputs)
        for i, op in enumerate(ops):
            regs.append(_NUMPY[op](regs[operands[2 * i]], regs[operands[2 * i + 1]]))
        np.copyto(out, regs[-1])
        return out

    return compute
