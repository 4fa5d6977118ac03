"""Run-time checks and printing: Assert, CheckNumerics, Print, StringFormat and PrintV2.

- `tf.Assert(condition, data, summarize=3)` adds an Assert op: when `condition` (a bool
  scalar) is false at run time, the step fails with InvalidArgumentError
  "assertion failed: [d0] [d1] ..." where each `data` tensor is summarized to at most
  `summarize` entries, formatted as TensorFlow formats them. Other ops wait on the check
  through a control dependency (`with tf.control_dependencies([assert_op])`). TensorFlow
  wraps the op in a `cond` when some data tensor is neither int32 nor string, so the data
  is computed only on failure; here the Assert runs unguarded (same result, the data
  computed every step).
- `tf.check_numerics(t, message)` passes `t` through and fails the step with
  "message : Tensor had NaN values" (Inf, "Inf and NaN") when it holds any; its gradient
  checks the incoming gradient the same way.
- `tf.Print(input_, data, message, first_n, summarize)` passes `input_` through and writes
  `message` followed by each data tensor in brackets to stderr, on the first `first_n`
  runs only when `first_n` >= 0.
- `tf.print(*inputs, output_stream=sys.stderr, summarize=3, sep=" ", end="\\n")` formats
  its inputs into one string with a StringFormat op (tensors become placeholders of a
  template, Python values are printed with `pprint`) and a PrintV2 op writes it.

All of these ops are stateful, so no pass of the runtime removes or merges them. Kernels
are in tensorflux/kernels/cpu/logging_ops.py.
"""

from __future__ import annotations

import pprint
import sys

from tensorflux.framework import common_shapes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor

# The TF1 public names of this module.
__all__ = ["Assert", "check_numerics", "Print", "print"]


def _assert_shape(op):
    cond = op.inputs[0].shape
    if cond.ndims is not None and cond.ndims != 0:
        raise ValueError(f"Shape must be rank 0 but is rank {cond.ndims}")
    return []


define_op("Assert", inputs=["condition: bool", "data: T"],
          attrs=["T: list(type)", "summarize: int = 3"], shape_fn=_assert_shape,
          stateful=True)
not_differentiable("Assert")


def Assert(condition, data, summarize=None, name=None) -> Operation:  # noqa: N802 - TF1 name
    """Fails the step when `condition` is false, printing `data` (`tf.Assert`).

    Args:
      condition: a bool scalar.
      data: tensors (or Python values) printed when the condition is false.
      summarize: how many entries of each data tensor to print (default 3).
      name: a name for the op.

    Returns:
      The Assert operation; use it in `tf.control_dependencies`.

    Raises:
      ValueError: `condition` has a static shape other than a scalar.
    """
    with graph_lib.name_scope(name, "Assert", [condition] + list(data)):
        xs = [convert_to_tensor(d) for d in data]
        return apply_op("Assert", condition=condition, data=xs,
                        summarize=3 if summarize is None else summarize, name="Assert")


define_op("CheckNumerics", inputs=["tensor: T"], outputs=["output: T"],
          attrs=["T: {bfloat16, half, float, double}", "message: string"],
          shape_fn=common_shapes.unchanged, stateful=True)


def check_numerics(tensor, message, name=None) -> Tensor:
    """`tensor` itself, failing the step if it holds a NaN or an Inf (`tf.check_numerics`).

    Args:
      tensor: a floating-point tensor.
      message: the start of the error message ("message : Tensor had NaN values").
      name: a name for the op.

    Returns:
      A tensor equal to `tensor`.

    Raises:
      TypeError: `tensor` is not of a floating-point type.
    """
    return apply_op("CheckNumerics", tensor=tensor, message=message,
                    name=name or "CheckNumerics")


@gradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    message = op.get_attr("message")
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    return [check_numerics(
        grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. " + message)]


define_op("CheckNumericsV2", inputs=["tensor: T"], outputs=["output: T"],
          attrs=["T: {bfloat16, half, float, double}", "message: string"],
          shape_fn=common_shapes.unchanged, stateful=True)


def check_numerics_v2(tensor, message, name=None) -> Tensor:
    """As `check_numerics`, the error telling +Inf from -Inf ("Tensor had -Inf and NaN
    values"); what `tf.debugging.enable_check_numerics` puts on op outputs."""
    return apply_op("CheckNumericsV2", tensor=tensor, message=message,
                    name=name or "CheckNumericsV2")


@gradient("CheckNumericsV2")
def _check_numerics_v2_grad(op, grad):
    message = op.get_attr("message")
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    return [check_numerics_v2(
        grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. " + message)]


define_op("Print", inputs=["input: T", "data: U"], outputs=["output: T"],
          attrs=["T: type", "U: list(type) >= 0", "message: string = ''",
                 "first_n: int = -1", "summarize: int = 3"],
          shape_fn=common_shapes.unchanged, stateful=True)


def Print(input_, data, message=None, first_n=None, summarize=None,  # noqa: N802 - TF1 name
          name=None) -> Tensor:
    """`input_` itself; each run writes `message` and `data` to stderr (`tf.Print`).

    The line is `message` followed by every data tensor summarized in brackets
    ("msg: [1 2 3...][7]"), as TensorFlow's Print kernel writes it.

    Args:
      input_: the tensor passed through.
      data: tensors to print.
      message: a string written before the data.
      first_n: print only on the first `first_n` runs (all runs when negative or None).
      summarize: how many entries of each tensor to print (default 3).
      name: a name for the op.

    Returns:
      A tensor equal to `input_`.
    """
    return apply_op("Print", input=input_, data=[convert_to_tensor(d) for d in data],
                    message=message or "", first_n=-1 if first_n is None else first_n,
                    summarize=3 if summarize is None else summarize, name=name or "Print")


@gradient("Print")
def _print_grad(op, grad):
    return [grad] + [None] * (len(op.inputs) - 1)


define_op("StringFormat", inputs=["inputs: T"], outputs=["output: string"],
          attrs=["T: list(type) >= 0", "template: string = '%s'",
                 "placeholder: string = '%s'", "summarize: int = 3"],
          shape_fn=common_shapes.scalar)
define_op("PrintV2", inputs=["input: string"],
          attrs=["output_stream: string = 'stderr'", "end: string = '\\n'"],
          shape_fn=_assert_shape, stateful=True)
not_differentiable("StringFormat", "PrintV2")

# Objects `tf.print` accepts as `output_stream`, by the PrintV2 attribute each stands for.
# tf.logging registers its functions here when it is imported (it lives in a higher layer).
_OUTPUT_STREAMS: dict[int, tuple[object, str]] = {}


def register_output_stream(stream, attr_value: str) -> None:
    """Lets `tf.print(..., output_stream=stream)` write to PrintV2's `attr_value`.

    Args:
      stream: the object a user passes (a logging function, a file object).
      attr_value: PrintV2's `output_stream`: "stdout", "stderr", "log(info)", ...
    """
    _OUTPUT_STREAMS[id(stream)] = (stream, attr_value)


def _output_stream_attr(stream) -> str:
    """PrintV2's `output_stream` attribute for the object or "file://" path given."""
    if stream is sys.stdout or stream is sys.__stdout__:
        return "stdout"
    if stream is sys.stderr or stream is sys.__stderr__:
        return "stderr"
    if isinstance(stream, str) and stream.startswith("file://"):
        return stream
    entry = _OUTPUT_STREAMS.get(id(stream))
    if entry is not None and entry[0] is stream:
        return entry[1]
    raise ValueError("Unsupported output stream, logging level, or file."
                     f"{stream}. Supported streams are sys.stdout, sys.stderr, "
                     "tf.logging.info, tf.logging.warning, tf.logging.error, and "
                     "'file://' paths.")


def _flatten(structure) -> list:
    """The leaves of nested lists, tuples and dicts (dicts in sorted key order)."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in _flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _pack_as(structure, leaves: list):
    """`structure` with its leaves replaced, in `_flatten` order, by `leaves` (consumed)."""
    if isinstance(structure, dict):
        packed = {k: _pack_as(structure[k], leaves) for k in sorted(structure)}
        return {k: packed[k] for k in structure}
    if isinstance(structure, (list, tuple)):
        items = [_pack_as(item, leaves) for item in structure]
        return type(structure)(items) if not hasattr(structure, "_fields") else \
            type(structure)(*items)
    return leaves.pop(0)


def _placeholder_for(text: str) -> str:
    """A placeholder that does not occur in `text`: "{}", "{_}", "{__}", ..."""
    placeholder = "{}"
    while placeholder in text:
        placeholder = placeholder[:1] + "_" + placeholder[1:]
    return placeholder


def _template(inputs, sep: str) -> tuple[str, str, list]:
    """(template, placeholder, tensors) that StringFormat turns into `tf.print`'s line."""
    free = [pprint.pformat(_pack_as(x, ["" if isinstance(leaf, Tensor) else leaf
                                        for leaf in _flatten(x)]))
            for x in inputs]
    placeholder = _placeholder_for(" ".join(free))
    parts, tensors = [], []
    for x in inputs:
        if isinstance(x, str):
            parts.append(x)
            continue
        if isinstance(x, Tensor):
            parts.append(placeholder)
            tensors.append(x)
            continue
        leaves = []
        for leaf in _flatten(x):
            if isinstance(leaf, Tensor):
                tensors.append(leaf)
                leaves.append(placeholder)
            else:
                leaves.append(leaf)
        parts.append(pprint.pformat(_pack_as(x, leaves)).replace(
            repr(placeholder), placeholder))
    return sep.join(parts), placeholder, tensors


def print(*inputs, **kwargs) -> Operation:  # noqa: A001 - TF1's name
    """Prints `inputs` when the returned op runs (`tf.print`).

    Tensors are printed with numpy-like nesting ("[[1 2 3]\\n [4 5 6]]"), at most
    `summarize` entries at each end of every dimension; Python strings as they are, other
    Python values as `pprint` formats them (tensors inside lists and dicts included).

    Args:
      *inputs: tensors, strings and Python structures, printed separated by `sep`.
      output_stream: sys.stderr (default), sys.stdout, tf.logging.info/warning/error, or
        a "file://path" string (appended to).
      summarize: entries printed at each end of each dimension (default 3; -1: all).
      sep: the separator between inputs (default " ").
      end: written after the line (default "\\n").
      name: a name for the op.

    Returns:
      The PrintV2 operation (run it, or add it to `tf.control_dependencies`).

    Raises:
      ValueError: an unknown keyword argument or output stream.
    """
    unknown = set(kwargs) - {"output_stream", "summarize", "sep", "end", "name"}
    if unknown:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {kwargs}")
    stream = _output_stream_attr(kwargs.get("output_stream", sys.stderr))
    summarize = kwargs.get("summarize", 3)
    name = kwargs.get("name")
    sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
    if len(inputs) == 1 and isinstance(inputs[0], Tensor) and inputs[0].dtype.name == "string" \
            and inputs[0].shape.ndims == 0:
        line = inputs[0]
    else:
        template, placeholder, tensors = _template(inputs, sep)
        line = apply_op("StringFormat", inputs=tensors, template=template,
                        placeholder=placeholder, summarize=3 if summarize is None else summarize,
                        name="StringFormat")
    return apply_op("PrintV2", input=line, output_stream=stream, end=end,
                    name=name or "PrintV2")
