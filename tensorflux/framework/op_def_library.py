"""From a TF1 wrapper call to a graph node: `apply_op("MatMul", a=x, b=w, transpose_b=True)`.

`apply_op` converts Python and NumPy inputs to tensors, binds type attributes from the
inputs, checks them against the op's allowed types, fills attribute defaults, validates
attribute values, and creates the op in the inputs' graph. The op callbacks registered on the
thread (op_callbacks.py) then see the op and may replace the outputs handed back. The errors
are TensorFlow's: TypeError for dtype mismatches, ValueError for bad attribute values and
shape conflicts.
"""

from __future__ import annotations

import collections
import contextlib
from typing import Any

from tensorflux.framework import (
    attr_values,
    dtypes,
    op_callbacks,
    op_registry,
    tensor_shape,
    traceback_utils,
)
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_registry import ArgDef, OpDef
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor


@traceback_utils.filter_traceback
def apply_op(op_type: str, name: str | None = None, **keywords) -> Any:
    """Adds an op of type `op_type` to the inputs' graph (or the default graph).

    Args:
      op_type: a registered op type string.
      name: the op's name (made unique in the current name scope); defaults to `op_type`.
      **keywords: one entry per input argument (Tensor, Python or NumPy value, or a list for
        list arguments) and any attributes.

    Returns:
      The output Tensor for a single-output op, the Operation for an op with no outputs, or,
      as TensorFlow's generated wrappers return them, a named tuple with one field per output
      argument (a Tensor, or a list for list outputs), named after the op type:
      `TopKV2(values=..., indices=...)`.

    Raises:
      TypeError: a missing input, an unknown keyword, or a dtype that does not fit.
      ValueError: an attribute value that is not allowed, or incompatible shapes.
    """
    opdef = op_registry.get(op_type)
    input_values = []
    for arg in opdef.inputs:
        if arg.name not in keywords:
            raise TypeError(f"{_snake(op_type)}() missing required argument '{arg.name}' "
                            f"(input of op '{op_type}')")
        input_values.append(keywords.pop(arg.name))
    g = graph_lib.get_graph_from_inputs(_flatten(input_values))
    attrs: dict[str, Any] = {}
    for key, value in keywords.items():
        if key not in opdef.attrs and not key.startswith("_"):
            raise TypeError(f"{_snake(op_type)}() got an unexpected keyword argument '{key}'")
        if value is not None or key.startswith("_"):
            attrs[key] = value
    explicit_types = {k: dtypes.as_dtype(v) for k, v in attrs.items()
                      if k in opdef.attrs and opdef.attrs[k].kind == "type"}
    bound = dict(explicit_types)
    _bind_types_from_tensors(opdef, input_values, bound)

    inputs: list[Tensor] = []
    with g.as_default():
        # As in TensorFlow, inputs converted from Python values are named inside the op's
        # own scope ("Reshape/shape"), and the op takes that scope's (unique) name.
        needs_scope = not all(isinstance(v, Tensor) for v in _flatten(input_values))
        scope = g.name_scope(name or op_type) if needs_scope else contextlib.nullcontext()
        with scope as scope_name:
            for arg, value in zip(opdef.inputs, input_values, strict=True):
                inputs.extend(_convert_arg(op_type, opdef, arg, value, bound, attrs,
                                           convert_to_tensor))
    for k, dt in bound.items():
        if k in explicit_types and explicit_types[k] != dt:
            raise TypeError(f"Input of '{op_type}' Op has type {dt.name} that does not match "
                            f"attr {k}={explicit_types[k].name}.")
        attrs[k] = dt
    op_name = scope_name if needs_scope and scope_name else (name or op_type)
    if opdef.has_ref_inputs:
        # As TensorFlow's op_def_library: an op updating a variable through a `Ref(T)` input
        # (Assign, ApplyAdam, ...) is colocated with that variable.
        with contextlib.ExitStack() as stack:
            k = 0
            for arg, value in zip(opdef.inputs, input_values, strict=True):
                n = len(value) if arg.number_attr or arg.type_list_attr else 1
                if arg.is_ref:
                    for t in inputs[k:k + n]:
                        if t.dtype._is_ref_dtype:
                            stack.enter_context(g.colocate_with(t.op))
                k += n
            op = g._create_op_internal(op_type, tuple(inputs), attrs, op_name)
    else:
        op = g._create_op_internal(op_type, tuple(inputs), attrs, op_name)
    outs = op.outputs
    if outs and op_callbacks.any_op_callbacks():
        outs = op_callbacks.invoke_op_callbacks(op, outs)
    return _op_result(opdef, op, outs)


def _bind_types_from_tensors(opdef: OpDef, values, bound: dict) -> None:
    """Binds type attributes from inputs that already are tensors (before Python values are
    converted), so `tf.add(1, float_tensor)` converts the 1 to float32."""
    for arg, value in zip(opdef.inputs, values, strict=True):
        if arg.type_attr is None or arg.type_attr in bound:
            continue
        candidates = value if (arg.number_attr and isinstance(value, (list, tuple))) else [value]
        for v in candidates:
            if isinstance(v, Tensor):
                bound[arg.type_attr] = v.dtype.base_dtype
                break


def _convert_arg(op_type, opdef, arg: ArgDef, value, bound, attrs, convert) -> list[Tensor]:
    if arg.number_attr or arg.type_list_attr:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"Expected list for '{arg.name}' argument to '{op_type}' Op, not "
                            f"{value!r}.")
        if arg.type_list_attr:
            tensors = [convert(v) for v in value]
            # As TensorFlow: a reference tensor (a TF1 variable) binds its base type.
            attrs[arg.type_list_attr] = [t.dtype if arg.is_ref else t.dtype.base_dtype
                                         for t in tensors]
            return tensors
        dtype = arg.dtype or bound.get(arg.type_attr)
        tensors = [_convert_one(op_type, opdef, arg, v, dtype, bound, convert) for v in value]
        if arg.type_attr and tensors:
            for t in tensors:
                if t.dtype.base_dtype != tensors[0].dtype.base_dtype:
                    raise TypeError(f"Tensors in list passed to '{arg.name}' of '{op_type}' "
                                    f"Op have types [{', '.join(x.dtype.name for x in tensors)}]"
                                    " that don't all match.")
            bound[arg.type_attr] = tensors[0].dtype.base_dtype
        n = len(tensors)
        if arg.number_attr in attrs and attrs[arg.number_attr] != n:
            raise ValueError(f"List argument '{arg.name}' to '{op_type}' Op with length {n} "
                             f"must match length {attrs[arg.number_attr]} of argument "
                             f"'{arg.number_attr}'.")
        attrs[arg.number_attr] = n
        return tensors
    return [_convert_one(op_type, opdef, arg, value, arg.dtype or bound.get(arg.type_attr),
                         bound, convert)]


def _exceeds_int32(value) -> bool:
    """True for a Python int, or a (nested) list or tuple of them, with one outside int32."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not -2**31 <= value < 2**31
    if isinstance(value, (list, tuple)):
        return any(_exceeds_int32(v) for v in value)
    return False


def _convert_one(op_type, opdef, arg: ArgDef, value, dtype, bound, convert) -> Tensor:
    preferred = None
    if dtype is None and arg.type_attr:
        attr = opdef.attrs[arg.type_attr]
        if attr.has_default and attr.default is not None:
            preferred = attr.default
            if preferred == dtypes.int32 and _exceeds_int32(value):
                preferred = None  # as TF: [2**40] as a Fill's dims is int64, never wrapped
    if isinstance(value, Tensor):
        t = value
        if dtype is not None and t.dtype.base_dtype != dtype:
            raise TypeError(f"Input '{arg.name}' of '{op_type}' Op has type {t.dtype.name} that "
                            f"does not match {_expected(opdef, arg, dtype)}.")
    else:
        try:
            t = convert(value, dtype=dtype, name=arg.name, preferred_dtype=preferred)
        except (TypeError, ValueError) as e:
            if dtype is None:
                raise
            raise TypeError(f"Expected {dtype.name} passed to parameter '{arg.name}' of op "
                            f"'{op_type}', got {value!r} of type '{type(value).__name__}' "
                            f"instead. Error: {e}") from None
    if arg.type_attr:
        allowed = opdef.attrs[arg.type_attr].allowed
        if allowed and t.dtype.base_dtype not in allowed:
            names = ", ".join(d.name for d in allowed)
            raise TypeError(f"Value passed to parameter '{arg.name}' has DataType "
                            f"{t.dtype.name} not in list of allowed values: {names}")
        bound.setdefault(arg.type_attr, t.dtype.base_dtype)
    return t


def _expected(opdef: OpDef, arg: ArgDef, dtype) -> str:
    """TensorFlow's wording for what a mismatched input should have been."""
    if arg.dtype is not None:
        return f"expected type of {dtype.name}"
    for other in opdef.inputs:
        if other.type_attr == arg.type_attr and other is not arg:
            return f"type {dtype.name} of argument '{other.name}'"
    return f"type {dtype.name}"


def _flatten(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from v
        else:
            yield v


_OUTPUT_TUPLES: dict[str, type] = {}


def output_tuple(opdef: OpDef) -> type:
    """The named tuple type of a multi-output op's outputs (TF's `_TopKV2Output`): called
    after the op type, one field per output argument."""
    cls = _OUTPUT_TUPLES.get(opdef.name)
    if cls is None:
        cls = collections.namedtuple(opdef.name, [a.name for a in opdef.outputs],
                                     rename=True)
        _OUTPUT_TUPLES[opdef.name] = cls
    return cls


def _op_result(opdef: OpDef, op: Operation, outs):
    if not opdef.outputs:
        return op
    if len(opdef.outputs) == 1 and not (opdef.outputs[0].number_attr
                                         or opdef.outputs[0].type_list_attr):
        return outs[0]
    result, i = [], 0
    for arg in opdef.outputs:
        n = _arg_length(arg, op.attrs)
        if arg.number_attr or arg.type_list_attr:
            result.append(list(outs[i:i + n]))
        else:
            result.append(outs[i])
        i += n
    return result[0] if len(result) == 1 else output_tuple(opdef)._make(result)


def _arg_length(arg: ArgDef, attrs) -> int:
    if arg.number_attr:
        return attrs[arg.number_attr]
    if arg.type_list_attr:
        return len(attrs[arg.type_list_attr])
    return 1


def _snake(op_type: str) -> str:
    out = []
    for i, ch in enumerate(op_type):
        if ch.isupper() and i and not op_type[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


# ------------------------------------------------------------------------------------------
# Used by Graph._create_op_internal for every new node.


def complete_attrs(opdef: OpDef, attrs: dict[str, Any], node_name: str) -> None:
    """Fills defaults and normalizes/validates every attribute value in place.

    Raises:
      ValueError: an unknown attribute, a missing one, or a value that is not allowed.
      TypeError: a value of the wrong kind.
    """
    for key in list(attrs):
        if key not in opdef.attrs:
            if key.startswith("_"):
                continue
            raise ValueError(f"NodeDef mentions attr '{key}' not in Op<name={opdef.name}>; "
                             f"NodeDef: {{{{node {node_name}}}}}")
        adef = opdef.attrs[key]
        value = attr_values.normalize(attrs[key], adef.kind, key, opdef.name)
        if adef.allowed and value is not None:
            if adef.kind == "type" and value not in adef.allowed:
                names = ", ".join(d.name for d in adef.allowed)
                raise TypeError(f"Value passed to parameter '{key}' has DataType {value.name} "
                                f"not in list of allowed values: {names}")
            if adef.kind == "string" and value not in adef.allowed:
                names = ", ".join(repr(s) for s in adef.allowed)
                raise ValueError(f"Attr '{key}' of '{opdef.name}' Op passed string "
                                 f"'{value}' not in: {names}.")
        if adef.minimum is not None:
            n = len(value) if isinstance(value, list) else value
            if n < adef.minimum:
                raise ValueError(f"Attr '{key}' of '{opdef.name}' Op passed {n} less than "
                                 f"minimum {adef.minimum}.")
        attrs[key] = value
    for key, adef in opdef.attrs.items():
        if key not in attrs:
            if not adef.has_default:
                raise ValueError(f"NodeDef missing attr '{key}' from Op<name={opdef.name}>; "
                                 f"NodeDef: {{{{node {node_name}}}}}")
            default = adef.default
            attrs[key] = list(default) if isinstance(default, list) else default


def output_dtypes(opdef: OpDef, attrs: dict[str, Any]) -> list[dtypes.DType]:
    out: list[dtypes.DType] = []
    for arg in opdef.outputs:
        if arg.type_list_attr:
            out.extend(attrs[arg.type_list_attr])
            continue
        dt = arg.dtype if arg.dtype is not None else attrs[arg.type_attr]
        if arg.is_ref:
            dt = dt._as_ref  # e.g. Barrier's handle: string_ref, as its consumers expect
        out.extend([dt] * (attrs[arg.number_attr] if arg.number_attr else 1))
    return out


def set_output_shapes(op: Operation) -> None:
    """Runs the op's shape function and stores the static shape of each output.

    Raises:
      ValueError: the input shapes are incompatible, with TensorFlow's message naming the
        node and listing the input shapes.
    """
    try:
        shapes = op._op_def.shape_fn(op)
    except (ValueError, TypeError) as e:
        in_shapes = ", ".join(_shape_str(t.shape) for t in op.inputs)
        args = ", ".join(t.op.name for t in op.inputs)
        raise ValueError(f"{e} for '{{{{node {op.name}}}}} = {op.type}[{_attr_str(op)}]"
                         f"({args})' with input shapes: {in_shapes}.") from None
    if shapes is None:
        return
    if len(shapes) != len(op.outputs):
        raise AssertionError(f"Shape function of {op.type} returned {len(shapes)} shapes for "
                             f"{len(op.outputs)} outputs")
    for t, s in zip(op.outputs, shapes, strict=True):
        if s is not None:
            t._shape = s if isinstance(s, tensor_shape.TensorShape) else \
                tensor_shape.TensorShape(s)


def _shape_str(shape: tensor_shape.TensorShape) -> str:
    if shape.ndims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def _attr_str(op: Operation) -> str:
    parts = []
    for k in sorted(op.attrs):
        v = op.attrs[k]
        if isinstance(v, dtypes.DType):
            v = "DT_" + v.name.upper().replace("FLOAT32", "FLOAT").replace("FLOAT64", "DOUBLE")
        elif isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, list):
            v = "[" + ", ".join(str(x) for x in v) + "]"
        elif not isinstance(v, (int, float, str)):
            continue
        parts.append(f"{k}={v}")
    return ", ".join(parts)
