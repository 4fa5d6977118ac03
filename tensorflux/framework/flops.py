"""Floating-point operation counts of one op, by the formula its definition names.

`define_op(..., flops="matmul")` records which formula counts an op's float operations;
this module holds the formulas, with TensorFlow's counting rules (the counts its profiler
reports), so the two users read one fact:

- `tf.profiler` (tensorflux/profiler) reports `count(...)` per node, from static shapes;
- the placer's cost model (runtime/cost_model.py) turns the counts of the compute-bound
  formulas (`COMPUTE_BOUND`) into time, with unknown dimensions filled in by a guess.

A formula name may carry a factor after a colon: "unary:5" counts 5 operations per
element. The formulas:

| name | counts | ops |
| --- | --- | --- |
| matmul | 2 * k * output elements | MatMul, BatchMatMul(V2) |
| conv2d | 2 * multiply-adds of the forward convolution | Conv2D, _FusedConv2D, backprops (NHWC) |
| pool | window area * output elements (grads: see `_pool`) | MaxPool, AvgPool, grads |
| unary:k | k * elements of input 0 | Neg, Log, Square, Rsqrt:2, Softmax:5, BiasAdd |
| binary:k | k * output elements | Add, Sub, Mul, RealDiv, comparisons, ... |
| reduce | input elements - output elements | Sum, ArgMax, ArgMin, BiasAddGrad |
| mean | input elements | Mean |
| add_n | (inputs - 1) * elements of input 0 | AddN |
| l2_loss | 3 * input elements - 1 | L2Loss |
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

# Dimensions of one tensor: a list of ints, or None when not all of them are known.
Dims = list | None
AttrGetter = Callable[[str], object]

# Formulas whose kernels are limited by arithmetic rather than memory traffic.
COMPUTE_BOUND = frozenset({"matmul", "conv2d", "pool"})


def _elements(dims: Dims) -> int | None:
    return None if dims is None else math.prod(dims)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def _nhwc(attr: AttrGetter) -> bool:
    return _text(attr("data_format") or "NHWC") == "NHWC"


def _matmul(op_type, attr, ins, outs, factor):
    a, out = ins[0], outs[0] if outs else None
    if a is None or out is None or len(a) < 2:
        return None
    k = a[-2] if attr("transpose_a") or attr("adj_x") else a[-1]
    return 2 * k * math.prod(out)


def _conv2d(op_type, attr, ins, outs, factor):
    """Conv2D: 2 * output elements * window elements per output channel; the backprops
    count the forward product they stand for (through the strides)."""
    if not _nhwc(attr) or not outs:
        return None
    strides = list(attr("strides") or [1, 1, 1, 1])
    if op_type in ("Conv2D", "_FusedConv2D"):  # (the bias and activation: noise)
        out, filt = outs[0], ins[1]
        if out is None or filt is None or len(filt) != 4:
            return None
        return 2 * math.prod(out) * filt[0] * filt[1] * filt[2]
    by_input = op_type.startswith("Conv2DBackpropInput")
    image = outs[0] if by_input else ins[0]
    filt = ins[1] if by_input else outs[0]
    if image is None or filt is None or not image:
        return None
    return 2 * math.prod(image) * math.prod(filt) // (image[-1] * strides[1] * strides[2])


def _pool(op_type, attr, ins, outs, factor):
    """Forward: window area * output elements. AvgPoolGrad: twice that over the incoming
    gradient; MaxPoolGrad: area * forward output elements + forward output elements."""
    if not _nhwc(attr):
        return None
    area = math.prod(int(k) for k in (attr("ksize") or [1, 1, 1, 1]))
    if op_type == "AvgPoolGrad":
        grad = _elements(ins[1])
        return None if grad is None else 2 * area * grad
    if op_type == "MaxPoolGrad":
        forward = _elements(ins[1])
        return None if forward is None else (area + 1) * forward
    out = _elements(outs[0]) if outs else None
    return None if out is None else area * out


def _unary(op_type, attr, ins, outs, factor):
    n = _elements(ins[0]) if ins else None
    return None if n is None else n * factor


def _binary(op_type, attr, ins, outs, factor):
    n = _elements(outs[0]) if outs else None
    return None if n is None else n * factor


def _reduce(op_type, attr, ins, outs, factor):
    n, m = _elements(ins[0]) if ins else None, _elements(outs[0]) if outs else None
    return None if n is None or m is None else n - m


def _mean(op_type, attr, ins, outs, factor):
    return _elements(ins[0]) if ins else None


def _add_n(op_type, attr, ins, outs, factor):
    if not ins:
        return 0
    n = _elements(ins[0])
    return None if n is None else n * (len(ins) - 1)


def _l2_loss(op_type, attr, ins, outs, factor):
    n = _elements(ins[0]) if ins else None
    return None if n is None else 3 * n - 1


_FORMULAS = {"matmul": _matmul, "conv2d": _conv2d, "pool": _pool, "unary": _unary,
             "binary": _binary, "reduce": _reduce, "mean": _mean, "add_n": _add_n,
             "l2_loss": _l2_loss}


def parse(formula: str) -> tuple[str, int]:
    """(name, factor) of a formula spec like "unary:5".

    Raises:
      ValueError: the name is not a known formula.
    """
    name, _, factor = formula.partition(":")
    if name not in _FORMULAS:
        raise ValueError(f"Unknown FLOP formula {formula!r}; known: {sorted(_FORMULAS)}")
    return name, int(factor) if factor else 1


def count(formula: str, op_type: str, attr: AttrGetter, in_dims: Sequence[Dims],
          out_dims: Sequence[Dims]) -> int | None:
    """Float operations of one node by `formula` (its `define_op(..., flops=...)`).

    Args:
      formula: the formula spec, e.g. "matmul" or "unary:5".
      op_type: the node's op type (some formulas differ between forward and backprop ops).
      attr: returns the node's attribute by name (None when absent).
      in_dims: the dimensions of each data input (None where not fully known).
      out_dims: the dimensions of each output (None where not fully known).

    Returns:
      The count, or None when a shape the formula needs is not fully known (or, for
      convolutions and pooling, the layout is not NHWC).
    """
    name, factor = parse(formula)
    value = _FORMULAS[name](op_type, attr, list(in_dims), list(out_dims), factor)
    return None if value is None else int(value)


__all__ = ["COMPUTE_BOUND", "count", "parse"]
