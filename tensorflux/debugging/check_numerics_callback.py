"""`tf.debugging.enable_check_numerics` / `disable_check_numerics`: every floating-point op
output created afterwards (on this thread) is checked for NaN and Inf when it is computed.

While enabled, an op callback (tensorflux/framework/op_callbacks.py) sees each op a TF1
wrapper creates. For each float16/bfloat16/float32/float64 output it adds a CheckNumericsV2
op and hands the wrapper's caller that op's output in place of the raw one, so everything
built on the result sees checked values: a step in which the op produces a NaN or an Inf
fails with InvalidArgumentError naming the op (type, name, output index, dtype, shape, its
inputs) and the stack where it was created. The gradients of the checks check the gradients
too. Ops created before enabling, and ops of graphs imported from GraphDefs, are not touched.

Not instrumented: ops whose outputs cannot hold a new NaN or Inf because they only pass
values on (Identity, Reshape, ...), control-flow primitives (Switch, Merge, Enter, Exit,
NextIteration: a check between them would break the loop or the cond), placeholders (their
values come from feeds), restores and queue dequeues (stored values), reference outputs of
TF1 variables, and constants, which no wrapper creates through `apply_op` (their values are
known when the graph is built).
"""

from __future__ import annotations

import linecache
import os
import sys

from tensorflux.framework import dtypes, op_callbacks
from tensorflux.framework import graph as graph_lib
from tensorflux.ops.logging_ops import check_numerics_v2

__all__ = ["enable_check_numerics", "disable_check_numerics"]

_FLOATS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)

# Ops that only forward, reshape or select values (a NaN out means a NaN in, already
# checked where it was made), control-flow primitives, and fed values.
_SKIPPED = frozenset({
    "Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient", "Reshape",
    "ExpandDims", "Squeeze", "CheckNumerics", "CheckNumericsV2", "Print", "Placeholder",
    "PlaceholderWithDefault", "PlaceholderV2", "Switch", "RefSwitch", "Merge", "RefMerge",
    "Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration", "LoopCond",
    "ControlTrigger", "NoOp",
    # Values read back from checkpoints and queues: stored, not computed here (checked
    # where they were computed, when that was under these checks).
    "RestoreV2", "Restore", "RestoreSlice", "QueueDequeue", "QueueDequeueV2",
    "QueueDequeueMany", "QueueDequeueManyV2", "QueueDequeueUpTo", "QueueDequeueUpToV2",
})

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_THIS_FILE = os.path.abspath(__file__)


class _CheckNumericsCallback:
    """The op callback; its limits shape the stack trace in the error message."""

    def __init__(self, stack_height_limit: int, path_length_limit: int):
        self.stack_height_limit = stack_height_limit
        self.path_length_limit = path_length_limit

    def __call__(self, op, outputs):
        if op.type in _SKIPPED:
            return None
        checked = [i for i, t in enumerate(outputs)
                   if t.dtype in _FLOATS]
        if not checked:
            return None
        stack = self._stack()
        new = list(outputs)
        with graph_lib.name_scope(op.name + "/"):
            for i in checked:
                new[i] = check_numerics_v2(outputs[i], self._message(op, i, stack))
        return new

    def _stack(self) -> list[tuple[str, int, str]]:
        """The frames that led to the op's creation, outermost first, the innermost
        `stack_height_limit` of them, without those of this module, the callback registry
        and the traceback filter."""
        frames = []
        frame = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            path = os.path.abspath(code.co_filename)
            if path != _THIS_FILE and not path.endswith(
                    (os.sep + "op_callbacks.py", os.sep + "traceback_utils.py")):
                frames.append((code.co_filename, frame.f_lineno, code.co_name))
            frame = frame.f_back
        frames = frames[:max(self.stack_height_limit, 0)]
        return list(reversed(frames))

    def _message(self, op, index: int, stack) -> str:
        out = op.outputs[index]
        shape = "<unknown>" if out.shape.ndims is None else str(out.shape)
        lines = ["", "",
                 f'!!! Detected Infinity or NaN in output {index} of graph op "{op.type}" '
                 f"(# of outputs: {len(op.outputs)}) !!!",
                 f"  op name: {op.name}",
                 f"  dtype: {out.dtype}",
                 f"  shape: {shape}",
                 ""]
        if len(op.inputs) == 1:
            lines.append(f"  Input tensor: {op.inputs[0]}")
        elif op.inputs:
            lines.append(f"  Input tensors ({len(op.inputs)}):")
            lines.extend(f"    {i}: {t}" for i, t in enumerate(op.inputs))
        lines += ["", '  Stack trace of op\'s creation ("->": inferred user code):']
        for filename, lineno, func in stack:
            user = not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
            lines.append(f"{' -> ' if user else '    '}+ {self._path(filename)} (L{lineno}) "
                         f"{func}")
            source = linecache.getline(filename, lineno).strip()
            if source:
                lines.append(f"{' -> ' if user else '    '}|   {source}")
        lines.append("")
        return "\n".join(lines)

    def _path(self, filename: str) -> str:
        limit = self.path_length_limit
        if limit > 3 and len(filename) > limit:
            return "..." + filename[len(filename) - limit + 3:]
        return filename


def _current() -> _CheckNumericsCallback | None:
    for callback in op_callbacks.op_callbacks():
        if isinstance(callback, _CheckNumericsCallback):
            return callback
    return None


def enable_check_numerics(stack_height_limit=30, path_length_limit=50) -> None:
    """Checks every floating-point output of the ops created from now on, on this thread,
    for NaN and Inf (`tf.debugging.enable_check_numerics`; the module doc says which ops).

    A step in which such an output holds a NaN or an Inf fails with InvalidArgumentError
    naming the op, its output, and the stack where it was created. Calling it again only
    updates the limits.

    Args:
      stack_height_limit: how many frames of the op's creation stack the message shows
        (the innermost).
      path_length_limit: file paths longer than this are shortened to their last
        characters, after "...".
    """
    callback = _current()
    if callback is None:
        op_callbacks.add_op_callback(_CheckNumericsCallback(stack_height_limit,
                                                            path_length_limit))
    else:
        callback.stack_height_limit = stack_height_limit
        callback.path_length_limit = path_length_limit


def disable_check_numerics() -> None:
    """Stops checking the outputs of ops created from now on, on this thread
    (`tf.debugging.disable_check_numerics`); checks already in graphs stay. Does nothing
    when checking is not enabled."""
    callback = _current()
    if callback is not None:
        op_callbacks.remove_op_callback(callback)
