"""`tf.errors`: the typed errors a step raises, one class per canonical error code.

`OpError(node_def, op, message, error_code)` is the base; each subclass fixes its code
(`InvalidArgumentError(node_def, op, message)`). The runtime names the failing node with
`annotate`, which returns a new error of the matching class whose message ends in TF's
node line and which remembers the node, its op type, its device and the Python stack where
it was created (the second line starts with a tab):

    Incompatible shapes: [2] vs. [3]
     [[node add (defined at model.py:17) = AddV2[_device="/job:localhost/..."]]]

`str(error)` then adds "Original stack trace for 'add':" and that stack, as TF1 does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
    "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError",
    "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
    "UnauthenticatedError", "exception_type_from_error_code", "error_code_from_exception_type",
    "annotate", "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
    "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
]

# Canonical error codes (error_codes.proto).
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16

# A frame of the stack where a node was created: (filename, lineno, funcname), optionally
# followed by the source line (the shape of traceback.extract_stack's entries).
Frame = Sequence[Any]


class OpError(Exception):
    """A TensorFlow operation failed; the base of every `tf.errors` class.

    Args:
      node_def: the `NodeDef` of the failing node, or None.
      op: the failing `Operation`, or None.
      message: what went wrong.
      error_code: the canonical error code (`tf.errors.INVALID_ARGUMENT`, ...).
    """

    def __init__(self, node_def: Any, op: Any, message: str, error_code: int,
                 *args: Any) -> None:
        super().__init__()
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code
        self._experimental_payloads: dict = args[0] if args and isinstance(args[0], dict) else {}
        # Set by `annotate`: the failing node as the runtime saw it.
        self._node_name: str | None = None
        self._op_type: str | None = None
        self._device: str | None = None
        self._traceback: list | None = None

    @property
    def message(self) -> str:
        """The error message, with the node line when the runtime named the node."""
        return self._message

    @property
    def op(self) -> Any:
        """The failing `Operation`, or None when unknown."""
        return self._op

    @property
    def node_def(self) -> Any:
        """The `NodeDef` of the failing node, or None when unknown."""
        return self._node_def

    @property
    def error_code(self) -> int:
        """The canonical error code of this error."""
        return self._error_code

    @property
    def experimental_payloads(self) -> dict:
        """Extra key/value details of the error (always a dict; usually empty)."""
        return self._experimental_payloads

    @property
    def node_name(self) -> str | None:
        """The name of the failing node as given to `annotate`, or None (not in TF)."""
        return self._node_name

    @property
    def device(self) -> str | None:
        """The device of the failing node as given to `annotate`, or None (not in TF)."""
        return self._device

    def _creation_stack(self) -> list | None:
        if self._traceback is not None:
            return self._traceback
        return getattr(self._op, "traceback", None)

    def __str__(self) -> str:
        stack = self._creation_stack()
        name = self._node_name or getattr(self._op, "name", None)
        if not stack or name is None:
            return self._message
        lines = [self._message, f"\n\nOriginal stack trace for {name!r}:\n"]
        lines.extend(_format_frames(stack))
        return "".join(lines)

    def __reduce__(self):
        # The op is not carried: Operations belong to one process's graph.
        if type(self) is OpError:
            return OpError, (self._node_def, None, self._message, self._error_code)
        return type(self), (self._node_def, None, self._message)


def _format_frames(stack: Sequence[Frame]) -> list[str]:
    out = []
    for frame in stack:
        filename, lineno, funcname = frame[0], frame[1], frame[2]
        out.append(f'  File "{filename}", line {lineno}, in {funcname}\n')
        if len(frame) > 3 and frame[3]:
            out.append(f"    {str(frame[3]).strip()}\n")
    return out


class CancelledError(OpError):
    """An operation or step was cancelled (a closed queue's pending enqueue, a step
    whose session closed, ...)."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, CANCELLED, *args)


class UnknownError(OpError):
    """An error with no better code, e.g. a kernel's Python exception of an unmapped type."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, UNKNOWN, *args)


class InvalidArgumentError(OpError):
    """An operation received an invalid argument (incompatible shapes, a missing
    feed, an out-of-range index, ...)."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, INVALID_ARGUMENT, *args)


class DeadlineExceededError(OpError):
    """A deadline (e.g. `RunOptions.timeout_in_ms`) expired first."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, DEADLINE_EXCEEDED, *args)


class NotFoundError(OpError):
    """A requested entity (file, variable, device) was not found."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, NOT_FOUND, *args)


class AlreadyExistsError(OpError):
    """An entity that an operation tried to create already exists."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, ALREADY_EXISTS, *args)


class PermissionDeniedError(OpError):
    """The caller may not run the operation."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, PERMISSION_DENIED, *args)


class ResourceExhaustedError(OpError):
    """Some resource (memory, a quota) ran out."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, RESOURCE_EXHAUSTED, *args)


class FailedPreconditionError(OpError):
    """The system is not in a state the operation needs (e.g. reading an
    uninitialized variable)."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, FAILED_PRECONDITION, *args)


class AbortedError(OpError):
    """The operation was aborted, typically by a concurrency conflict."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, ABORTED, *args)


class OutOfRangeError(OpError):
    """An operation went past the valid range (dequeuing from a closed, empty queue;
    the end of an input)."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, OUT_OF_RANGE, *args)


class UnimplementedError(OpError):
    """The operation is not implemented or not supported."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, UNIMPLEMENTED, *args)


class InternalError(OpError):
    """An invariant of the system was broken."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, INTERNAL, *args)


class UnavailableError(OpError):
    """The runtime (e.g. a remote task) is currently unavailable."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, UNAVAILABLE, *args)


class DataLossError(OpError):
    """Unrecoverable data loss or corruption (e.g. a truncated record file)."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, DATA_LOSS, *args)


class UnauthenticatedError(OpError):
    """The request lacks valid credentials."""

    def __init__(self, node_def: Any, op: Any, message: str, *args: Any) -> None:
        super().__init__(node_def, op, message, UNAUTHENTICATED, *args)


_CODE_TO_EXCEPTION: dict[int, type[OpError]] = {
    CANCELLED: CancelledError, UNKNOWN: UnknownError, INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError, NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError, PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError, FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError, OUT_OF_RANGE: OutOfRangeError, UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError, UNAVAILABLE: UnavailableError, DATA_LOSS: DataLossError,
    UNAUTHENTICATED: UnauthenticatedError,
}
_EXCEPTION_TO_CODE = {cls: code for code, cls in _CODE_TO_EXCEPTION.items()}


def exception_type_from_error_code(error_code: int) -> type[OpError]:
    """The `OpError` subclass for a canonical error code.

    Args:
      error_code: a code such as `tf.errors.NOT_FOUND`.

    Returns:
      The subclass, e.g. `NotFoundError`.

    Raises:
      KeyError: if `error_code` is not the code of an error (OK included).
    """
    return _CODE_TO_EXCEPTION[error_code]


def error_code_from_exception_type(cls: type) -> int:
    """The canonical error code of an `OpError` subclass.

    Args:
      cls: an exception class such as `NotFoundError`.

    Returns:
      Its error code; `UNKNOWN` for any other class (TF warns and does the same).
    """
    return _EXCEPTION_TO_CODE.get(cls, UNKNOWN)


# Python exceptions raised inside kernels, mapped as TF's py_func maps them, plus the OS
# errors whose meaning is plain. Anything else is UNKNOWN.
_PYTHON_TO_CODE: tuple[tuple[type, int], ...] = (
    (FileNotFoundError, NOT_FOUND),
    (FileExistsError, ALREADY_EXISTS),
    (PermissionError, PERMISSION_DENIED),
    (ValueError, INVALID_ARGUMENT),
    (TypeError, INVALID_ARGUMENT),
    (IndexError, INVALID_ARGUMENT),
    (KeyError, INVALID_ARGUMENT),
    (ZeroDivisionError, INVALID_ARGUMENT),
    (StopIteration, OUT_OF_RANGE),
    (MemoryError, RESOURCE_EXHAUSTED),
    (NotImplementedError, UNIMPLEMENTED),
    (TimeoutError, DEADLINE_EXCEEDED),
)


def error_code_for_exception(error: BaseException) -> int:
    """The canonical code an exception raised while running a node maps to.

    Args:
      error: an OpError (its own code) or any Python exception.

    Returns:
      The error code: ValueError, TypeError, IndexError, KeyError and ZeroDivisionError
      give INVALID_ARGUMENT; StopIteration OUT_OF_RANGE; MemoryError RESOURCE_EXHAUSTED;
      NotImplementedError UNIMPLEMENTED; others UNKNOWN.
    """
    if isinstance(error, OpError):
        return error.error_code
    for cls, code in _PYTHON_TO_CODE:
        if isinstance(error, cls):
            return code
    return UNKNOWN


def _exception_message(error: BaseException) -> str:
    if isinstance(error, OpError):
        return error.message
    if isinstance(error, KeyError) and len(error.args) == 1:
        return str(error.args[0])  # str(KeyError) adds quotes
    text = str(error)
    return text if text else type(error).__name__


def _node_line(node_name: str, op_type: str | None, device: str | None,
               stack: Sequence[Frame] | None, inputs: Sequence[str] | None) -> str:
    """TF's node line: `{{node x}}` alone, or TF1's form with creation site, type, device."""
    if not stack and not op_type and not device:
        return f"\t [[{{{{node {node_name}}}}}]]"
    # Without a creation site (a node imported from a GraphDef, e.g. on a worker task)
    # the name is TF's `{{node x}}` tag, which a TensorFlow client resolves in its graph.
    text = f"node {node_name}" if stack else f"{{{{node {node_name}}}}}"
    if stack:
        filename, lineno = stack[-1][0], stack[-1][1]
        text += f" (defined at {filename}:{lineno}) "
    if op_type or device:
        text = text.rstrip() + " = " + (op_type or "?")
        if device:
            text += f'[_device="{device}"]'
        if inputs is not None:
            text += "(" + ", ".join(inputs) + ")"
    return f"\t [[{text}]]"


def annotate(error: BaseException, node_name: str, op_type: str | None = None,
             device: str | None = None, traceback: Sequence[Frame] | None = None,
             op: Any = None, node_def: Any = None,
             inputs: Sequence[str] | None = None) -> OpError:
    """Names the node that failed: an OpError of the right class carrying the node.

    The runtime calls this when a kernel raises. The message gains TF's node line
    (`\\t [[{{node add}}]]`, or with the creation site, op type and device,
    `\\t [[node add (defined at m.py:17) = AddV2[_device="/job:..."]]]`), and `str()` of
    the result appends the stack where the node was created. An error that already names
    a node (raised by a nested step, or relayed by Recv) is returned unchanged.

    Args:
      error: an OpError, or any Python exception raised by a kernel (wrapped into the
        class for its code; see `error_code_for_exception`; the original is `__cause__`).
      node_name: the failing node's name.
      op_type: its op type ("AddV2"), or None.
      device: its full device name, or None.
      traceback: where the node was created: (filename, lineno, funcname[, line])
        tuples, outermost first (the order of `traceback.extract_stack` and of TF's
        `Operation.traceback`; the last frame is the one the node line names); or None.
      op: the failing `Operation`, when at hand (becomes `error.op`).
      node_def: its `NodeDef`, when at hand (becomes `error.node_def`).
      inputs: the node's input names, to print after the op type, or None.

    Returns:
      A new OpError subclass instance (or `error` itself if it already names a node).
    """
    if isinstance(error, OpError) and error._node_name is not None:
        return error
    code = error_code_for_exception(error)
    cls = _CODE_TO_EXCEPTION.get(code, UnknownError)
    stack = list(traceback) if traceback is not None else None
    message = _exception_message(error) + "\n" + _node_line(
        node_name, op_type, device, stack, inputs)
    if isinstance(error, OpError):
        op = op if op is not None else error.op
        node_def = node_def if node_def is not None else error.node_def
        payloads = error.experimental_payloads
    else:
        payloads = {}
    new = cls(node_def, op, message, payloads)
    new._node_name = node_name
    new._op_type = op_type
    new._device = device
    new._traceback = stack
    new.__cause__ = error
    new.__traceback__ = error.__traceback__
    return new


class raise_exception_on_not_ok_status:  # noqa: N801 - TF1's name
    """TF1's `tf.errors.raise_exception_on_not_ok_status()`: a context manager that lets
    tensorflux's typed errors through unchanged (there is no C status object to check)."""

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        return False
