"""The op registry: one table, keyed by the op type string, joining each op's signature, shape
function and gradient. Kernels are registered separately per device (tensorflux.kernels).

An op is declared once with TensorFlow's own compact signature syntax:

    define_op(
        "MatMul",
        inputs=["a: T", "b: T"],
        outputs=["product: T"],
        attrs=["transpose_a: bool = false", "transpose_b: bool = false",
               "T: {half, bfloat16, float, double, int32, int64, complex64, complex128}"],
        shape_fn=_matmul_shape)

Argument specs are `name: T` (a type attribute), `name: float` (a fixed dtype), `name: N * T`
(a list of N tensors of one type), `name: Tlist` (a `list(type)` attribute) or `name: Ref(T)`.
Attribute specs are `name: kind [= default]` where kind is `type`, `int`, `float`, `bool`,
`string`, `shape`, `tensor`, `func`, `list(...)` of those, a set of allowed types `{float,
double}` or strings `{'SAME', 'VALID'}`, or `int >= 1`. Defaults use the same literal syntax
TensorFlow's registrations do (`false`, `1`, `"NHWC"`, `[1, 1, 1, 1]`, `DT_FLOAT`).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tensorflux.framework import attr_values, dtypes, tensor_shape
from tensorflux.framework import flops as flops_lib
from tensorflux.protos import op_def_pb2

NO_DEFAULT = object()
"""Sentinel: the attribute has no default, so every node must set it."""

NOT_DIFFERENTIABLE = "not_differentiable"
NO_GRADIENT = "no_gradient"  # TensorFlow defines none: tf.gradients through it is a LookupError
"""Marks an op whose outputs carry no gradient (the gradient driver returns None for it)."""

# Named groups TensorFlow's registrations use in place of explicit type lists.
_TYPE_GROUPS: dict[str, tuple[str, ...]] = {
    "numbertype": ("float", "double", "int32", "uint8", "int16", "int8", "complex64", "int64",
                   "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16",
                   "complex128", "half", "uint32", "uint64"),
    "realnumbertype": ("float", "double", "int32", "uint8", "int16", "int8", "int64",
                       "bfloat16", "uint16", "half", "uint32", "uint64"),
    "floatingtype": ("half", "bfloat16", "float", "double"),
    "quantizedtype": ("qint8", "quint8", "qint32", "qint16", "quint16"),
    "alltypes": (),  # empty: no restriction
}


@dataclass(slots=True)
class ArgDef:
    """One input or output of an op: its name and how its dtype is determined."""

    name: str
    dtype: dtypes.DType | None = None  # fixed type, e.g. `shape: int32`
    type_attr: str | None = None  # `x: T`
    number_attr: str | None = None  # `values: N * T`
    type_list_attr: str | None = None  # `outputs: Tout`
    is_ref: bool = False


@dataclass(slots=True)
class AttrDef:
    """One attribute of an op: its kind, default and allowed values."""

    name: str
    kind: str  # "type", "int", "list(int)", ...
    default: Any = NO_DEFAULT
    allowed: tuple | None = None  # dtypes for type attrs, strings for string attrs
    minimum: int | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


@dataclass(slots=True)
class OpDef:
    """The signature and graph-construction rules of one op type."""

    name: str
    inputs: tuple[ArgDef, ...]
    outputs: tuple[ArgDef, ...]
    attrs: dict[str, AttrDef]
    shape_fn: Callable | None = None
    is_stateful: bool = False
    allows_uninitialized_input: bool = False
    is_commutative: bool = False
    control_flow: bool = False  # Switch, Merge, Enter, Exit, NextIteration, LoopCond
    # How the dataflow executor treats the op's outputs (runtime/executor.py's header):
    # "merge", "enter", "exit", "next_iteration", "switch" (an ordinary node to the executor;
    # the loop compiler looks for it), "dead_aware" (runs on dead inputs: _Send forwards
    # deadness, ControlTrigger is never dead), or None (an ordinary op).
    flow_kind: str | None = None
    broadcasts: bool = False  # inputs broadcast: the gradient driver sums grads back
    extras: dict = field(default_factory=dict)
    module: str | None = None  # the module that called define_op: `tensorflux.ops.<family>`
    cost_free: bool = False  # the cost model charges the per-node overhead only
    flops: str | None = None  # its FLOP formula (framework/flops.py): "matmul", "unary:5", ...
    keep_identity: bool = False  # the graph optimizer never folds, merges or NoOps it away
    # Reads nothing of its inputs but their shapes (Shape, Size, Rank): the static schedule
    # runs it as soon as its inputs exist, so that it keeps no large input alive.
    shape_only: bool = False

    @property
    def has_ref_inputs(self) -> bool:
        """Whether an input is declared `Ref(T)` (the op updates a TF1 reference variable)."""
        return any(a.is_ref for a in self.inputs)

    def to_proto(self):
        """This definition as an `op_def_pb2.OpDef` message."""
        proto = op_def_pb2.OpDef(name=self.name, is_stateful=self.is_stateful,
                                 is_commutative=self.is_commutative,
                                 allows_uninitialized_input=self.allows_uninitialized_input)
        for arg, dst in [(a, proto.input_arg) for a in self.inputs] + [
                (a, proto.output_arg) for a in self.outputs]:
            pa = dst.add(name=arg.name, is_ref=arg.is_ref)
            if arg.dtype is not None:
                pa.type = arg.dtype.as_datatype_enum
            pa.type_attr = arg.type_attr or ""
            pa.number_attr = arg.number_attr or ""
            pa.type_list_attr = arg.type_list_attr or ""
        for attr in self.attrs.values():
            pattr = proto.attr.add(name=attr.name, type=attr.kind)
            if attr.has_default and attr.default is not None:
                pattr.default_value.CopyFrom(attr_values.to_proto(attr.default, attr.kind))
            if attr.minimum is not None:
                pattr.has_minimum = True
                pattr.minimum = attr.minimum
            if attr.allowed:
                kind = "list(type)" if attr.kind == "type" else "list(string)"
                pattr.allowed_values.CopyFrom(attr_values.to_proto(list(attr.allowed), kind))
        return proto


_OPS: dict[str, OpDef] = {}


# ------------------------------------------------------------------------------------------
# Parsing the signature syntax.

_ARG_RE = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*$")
_ATTR_RE = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*(?:(?<![<>])=\s*(.+?))?\s*$")


def _parse_arg(spec: str, attrs: dict[str, AttrDef]) -> ArgDef:
    m = _ARG_RE.match(spec)
    if not m:
        raise ValueError(f"Bad argument spec {spec!r}")
    name, rest = m.groups()
    arg = ArgDef(name)
    if rest.startswith("Ref(") and rest.endswith(")"):
        arg.is_ref = True
        rest = rest[4:-1].strip()
    if "*" in rest:
        number, type_part = (s.strip() for s in rest.split("*", 1))
        arg.number_attr = number
        rest = type_part
    if rest in attrs:
        kind = attrs[rest].kind
        if kind == "type":
            arg.type_attr = rest
        elif kind == "list(type)":
            arg.type_list_attr = rest
        else:
            raise ValueError(f"{spec!r}: attr {rest!r} is a {kind}, not a type")
    else:
        arg.dtype = dtypes.as_dtype(rest)
    return arg


def _parse_default(text: str, kind: str):
    text = text.strip()
    if kind == "type" or kind == "list(type)":
        if kind == "list(type)":
            return [dtypes.as_dtype(t.strip().removeprefix("DT_").lower())
                    for t in text.strip("[]").split(",") if t.strip()]
        return dtypes.as_dtype(text.removeprefix("DT_").lower())
    if kind == "shape":
        if text in ("unknown", "None"):
            return None

        return tensor_shape.TensorShape(ast.literal_eval(text))
    if kind in ("tensor", "func"):
        return None if text == "None" else ast.literal_eval(text)
    lowered = {"true": "True", "false": "False"}.get(text, text)
    value = ast.literal_eval(lowered)
    if kind == "float" or kind == "list(float)":
        value = [float(v) for v in value] if isinstance(value, list) else float(value)
    return value


def _parse_attr(spec: str) -> AttrDef:
    m = _ATTR_RE.match(spec)
    if not m:
        raise ValueError(f"Bad attr spec {spec!r}")
    name, kind, default = m.groups()
    attr = AttrDef(name, kind)
    if kind.startswith("{"):  # allowed values
        items = [s.strip() for s in kind.strip("{}").split(",") if s.strip()]
        if items and items[0][0] in "'\"":
            attr.kind = "string"
            attr.allowed = tuple(ast.literal_eval(s) for s in items)
        else:
            attr.kind = "type"
            attr.allowed = _resolve_types(items)
    elif kind in _TYPE_GROUPS:
        attr.kind = "type"
        attr.allowed = _resolve_types([kind]) or None
    elif ">=" in kind:
        base, minimum = (s.strip() for s in kind.split(">="))
        attr.kind, attr.minimum = base, int(minimum)
    if default is not None:
        attr.default = _parse_default(default, attr.kind)
    return attr


def _resolve_types(names: Iterable[str]) -> tuple[dtypes.DType, ...]:
    out: list[dtypes.DType] = []
    for n in names:
        for t in _TYPE_GROUPS.get(n, (n,)):
            dt = dtypes.as_dtype(t)
            if dt not in out:
                out.append(dt)
    return tuple(out)


# ------------------------------------------------------------------------------------------
# Registration and lookup.


def registering_module() -> str | None:
    """The module whose top-level code is running the registration that calls this: the
    innermost `<module>` frame on the stack, so an op, kernel or gradient registered through a
    helper function (`_binary("Less", ...)`) is recorded under the module that called the
    helper. None when no module body is running."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            return frame.f_globals.get("__name__")
        frame = frame.f_back
    return None


def define_op(name: str, inputs: Iterable[str] = (), outputs: Iterable[str] = (),
              attrs: Iterable[str] = (), shape_fn: Callable | None = None,
              stateful: bool = False, *, cost_free: bool = False, flops: str | None = None,
              keep_identity: bool = False, **flags) -> OpDef:
    """Registers the op `name` and returns its OpDef.

    Args:
      name: the op type string, spelled as TensorFlow spells it.
      inputs, outputs: argument specs (see the module docstring).
      attrs: attribute specs.
      shape_fn: `fn(op) -> list of TensorShape`, one per output; it may read `op.inputs`,
        their shapes and constant values, and `op.get_attr`.
      stateful: the op has side effects or reads mutable state; never pruned by CSE or
        constant folding.
      cost_free: the op hands over references or metadata (Identity, Reshape, Shape, ...):
        the placer's cost model (runtime/cost_model.py) charges it the per-node overhead only.
      flops: the formula counting the op's float operations (framework/flops.py:
        "matmul", "conv2d", "pool", "unary:k", "binary:k", "reduce", "mean", ...), as
        TensorFlow's profiler counts them; `tf.profiler` reports it, and the placer's cost
        model costs the compute-bound ones by it (the rest by the bytes they move).
      keep_identity: each node of the op stays itself although the op is stateless
        (Placeholder and PlaceholderWithDefault stand for feeds, NoOp for its control
        edges): the graph optimizer (runtime/graph_optimizer.py) never folds it into a
        constant, merges two of them or turns one into a NoOp, as for stateful and
        control-flow ops.
      **flags: `is_commutative`, `allows_uninitialized_input`, `control_flow`, `flow_kind`,
        `shape_only` (the op reads only its inputs' shapes: runtime/static_executor.py
        schedules it early, so a large input is not kept alive for it).

    The calling module is recorded as `OpDef.module` (tests/test_layout.py checks that it is
    `tensorflux.ops.<family>` and that the kernels come from `tensorflux.kernels.cpu.<family>`).

    Raises:
      ValueError: the op is already registered or a spec is malformed.
    """
    if name in _OPS:
        raise ValueError(f"Op {name!r} is already registered")
    if flops is not None:
        flops_lib.parse(flops)
    attr_defs = {a.name: a for a in map(_parse_attr, attrs)}
    opdef = OpDef(
        name,
        tuple(_parse_arg(s, attr_defs) for s in inputs),
        tuple(_parse_arg(s, attr_defs) for s in outputs),
        attr_defs,
        shape_fn=shape_fn,
        is_stateful=stateful,
        module=registering_module(),
        cost_free=cost_free,
        flops=flops,
        keep_identity=keep_identity,
        **flags,
    )
    _OPS[name] = opdef
    return opdef


def get(name: str) -> OpDef:
    """The OpDef of op type `name`; NotFoundError-like KeyError with a clear message."""
    try:
        return _OPS[name]
    except KeyError:
        raise KeyError(f"Op type not registered '{name}' in tensorflux") from None


def lookup(name: str) -> OpDef | None:
    return _OPS.get(name)


def registered_ops() -> dict[str, OpDef]:
    """All registered op definitions by type string (a copy)."""
    return dict(_OPS)


# Gradient functions by op type, or by any name a `gradient_override_map` may point to.
_GRADIENTS: dict[str, Callable | str] = {}
# The module each entry of _GRADIENTS was registered from (tests check it mirrors the op's).
_GRADIENT_MODULES: dict[str, str | None] = {}


def gradient(op_type: str) -> Callable:
    """Decorator registering `fn(op, *output_grads) -> one entry per input` for `op_type`
    (also `tf.RegisterGradient`: the name need not be an op type)."""

    def register(fn):
        if op_type in _GRADIENTS:
            raise KeyError(f"Registering two gradient with name '{op_type}'! (Previous "
                           f"registration was in {_GRADIENTS[op_type]})")
        _GRADIENTS[op_type] = fn
        _GRADIENT_MODULES[op_type] = registering_module()
        return fn

    return register


def not_differentiable(*op_types: str) -> None:
    """Declares that the outputs of each op type carry no gradient (`tf.NotDifferentiable`)."""
    for t in op_types:
        if not isinstance(t, str):
            raise TypeError("op_type must be a string")
        _GRADIENTS[t] = NOT_DIFFERENTIABLE
        _GRADIENT_MODULES[t] = registering_module()


def no_gradient(*op_types: str) -> None:
    """Declares that each op type has no gradient, as TensorFlow defines none for it:
    `tf.gradients` through one raises LookupError, as through an op nobody decided on
    (`not_differentiable` instead makes its outputs carry no gradient)."""
    for t in op_types:
        _GRADIENTS[t] = NO_GRADIENT
        _GRADIENT_MODULES[t] = registering_module()


def get_gradient(name: str) -> Callable | str | None:
    """The gradient function registered under `name`, NOT_DIFFERENTIABLE, NO_GRADIENT, or
    None."""
    return _GRADIENTS.get(name)


def gradient_module(name: str) -> str | None:
    """The module that registered the gradient (or `not_differentiable`) under `name`."""
    return _GRADIENT_MODULES.get(name)


def set_shape_fn(op_type: str, fn: Callable) -> None:
    get(op_type).shape_fn = fn
