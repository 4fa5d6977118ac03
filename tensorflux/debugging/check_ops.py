"""Assertions on tensors (`tf.assert_equal`, `tf.assert_rank`, ...; TF1's check_ops).

Every assertion is decided at graph-construction time when it can be:

- the elementwise comparisons (`assert_equal`, `assert_less`, ..., `assert_positive`) raise
  InvalidArgumentError at once when both sides have constant values and the condition
  fails, with the data items joined by newlines ("Condition x == y did not hold
  element-wise:\\nx (Const:0) = \\n[1 2]\\n..."); they return an `Assert` op either way (a
  NoOp for `assert_equal(x, x)`);
- the rank checks raise ValueError ("Tensor x:0 must have rank 2.  Received rank 1, shape
  (2,)") or return a NoOp named `static_checks_determined_all_ok` when the rank is known;
- type checks (`assert_integer`, `assert_type`, `assert_scalar`, `assert_same_float_dtype`,
  `assert_proper_iterable`) are static only.

Otherwise the returned `Assert` op fails the step with InvalidArgumentError "assertion
failed: [Condition x < y did not hold element-wise:] [x (x:0) = ] [1 5] ..." when it runs;
put it in `tf.control_dependencies` of what must not run on bad data. A `message` prefixes
the data ("message.  " for the unary and rank checks, as in TF).
"""

from __future__ import annotations

import numpy as np

from tensorflux.control_flow.builders import cond, group, with_dependencies
from tensorflux.framework import dtypes, errors
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import constant_value
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.sparse_tensor import SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops, comparison_ops, math_ops, reduction_ops, unary_ops
from tensorflux.ops.control_flow_ops import no_op
from tensorflux.ops.logging_ops import Assert

__all__ = [
    "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal", "assert_greater",
    "assert_greater_equal", "assert_negative", "assert_non_negative", "assert_positive",
    "assert_non_positive", "assert_near", "assert_rank", "assert_rank_at_least", "assert_rank_in",
    "assert_integer", "assert_type", "assert_scalar", "assert_proper_iterable",
    "assert_same_float_dtype", "is_numeric_tensor", "is_non_decreasing",
    "is_strictly_increasing",
]


def _prefix(message) -> str:
    return f"{message}.  " if message else ""


def _tensors(*items) -> list:
    """The tensors among `items` and the lists in them (for name_scope's graph lookup)."""
    out = []
    for item in items:
        if isinstance(item, (list, tuple)):
            out.extend(_tensors(*item))
        elif isinstance(item, (Tensor, Operation)):
            out.append(item)
    return out


# TF's static checks read values through `tensor_util.constant_value`, which folds only
# these op types (a StridedSlice of a Shape, a Sum of constants, ... wait for the run, where
# the Assert raises InvalidArgumentError); tensorflux's constant_value folds more, so a
# check is static here only when every op it folds is one of them.
_TF_FOLDED = frozenset({"Const", "Shape", "Size", "Rank", "Range", "Cast", "Concat",
                        "ConcatV2", "Pack", "Unpack", "Fill", "Equal", "NotEqual",
                        "StopGradient", "Identity"})
_SHAPE_OPS = frozenset({"Shape", "Size", "Rank"})  # read their input's static shape only


def _tf_static_value(tensor):
    """`constant_value(tensor)` where TF's constant_value also knows it, else None."""
    if not isinstance(tensor, Tensor) or not _tf_foldable(tensor.op, 0):
        return None
    return constant_value(tensor)


def _tf_foldable(op, depth) -> bool:
    if op.type not in _TF_FOLDED or depth > 64:
        return False
    return op.type in _SHAPE_OPS or all(_tf_foldable(t.op, depth + 1) for t in op.inputs)


def _static_text(item) -> str:
    if isinstance(item, Tensor):
        value = _tf_static_value(item)
        return str(item) if value is None else str(value)
    return str(item)


def _raise_static(data) -> None:
    raise errors.InvalidArgumentError(None, None, "\n".join(_static_text(d) for d in data))


def _binary_assert(sym, default_name, op_func, np_func, x, y, data, summarize, message, name):
    """`reduce_all(op_func(x, y))` as an Assert op, checked now when x and y are constant."""
    with graph_lib.name_scope(name, default_name, _tensors(x, y, data)):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if data is None:
            data = [f"Condition x {sym} y did not hold element-wise:",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        if message is not None:
            data = [message] + list(data)
        condition = reduction_ops.reduce_all(op_func(x, y))
        x_static, y_static = _tf_static_value(x), _tf_static_value(y)
        if x_static is not None and y_static is not None and \
                not np.all(np_func(x_static, y_static)):
            _raise_static(data)
        return Assert(condition, data, summarize=summarize)


_BINARY_DOC = """Asserts `x {sym} y` elementwise (`tf.{name}`).

    Args:
      x: a numeric tensor.
      y: a numeric tensor of x's dtype, broadcastable with x.
      data: what the error prints (default: the condition, x and y).
      summarize: how many entries of each tensor the error prints.
      message: a string put before the data.
      name: a name for the op (default "{name}").

    Returns:
      An Assert op that fails the step when the condition does not hold.

    Raises:
      InvalidArgumentError: x and y are constant and the condition does not hold.
    """


def _binary(sym: str, public: str, op_func, np_func):
    def check(x, y, data=None, summarize=None, message=None, name=None):
        return _binary_assert(sym, public, op_func, np_func, x, y, data, summarize, message,
                              name)

    check.__name__ = check.__qualname__ = public
    check.__doc__ = _BINARY_DOC.format(sym=sym, name=public)
    return check


assert_none_equal = _binary("!=", "assert_none_equal", comparison_ops.not_equal, np.not_equal)
assert_less = _binary("<", "assert_less", comparison_ops.less, np.less)
assert_less_equal = _binary("<=", "assert_less_equal", comparison_ops.less_equal,
                            np.less_equal)
assert_greater = _binary(">", "assert_greater", comparison_ops.greater, np.greater)
assert_greater_equal = _binary(">=", "assert_greater_equal", comparison_ops.greater_equal,
                               np.greater_equal)
_assert_equal = _binary("==", "assert_equal", comparison_ops.equal, np.equal)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    with graph_lib.name_scope(name, "assert_equal", _tensors(x, y, data)):
        if x is y:  # nothing to check; TF opens (and so uses up) this scope name too
            return no_op()
    return _assert_equal(x, y, data, summarize, message, name)


assert_equal.__doc__ = _BINARY_DOC.format(sym="==", name="assert_equal")


def _unary(sym: str, public: str, zero_first: bool, compare, joiner: str = "\n"):
    """`x sym 0` elementwise, as assert_less/assert_less_equal against a zero of x's dtype."""

    def check(x, data=None, summarize=None, message=None, name=None):
        message = _prefix(message)
        with graph_lib.name_scope(name, public, _tensors(x, data)):
            x = convert_to_tensor(x, name="x")
            if data is None:
                condition = f"Condition x {sym} 0 did not hold element-wise:"
                label = f"x ({x.name}) = "
                # TF's assert_non_positive glues the two strings into one item.
                data = [message, condition + label, x] if joiner == "" else \
                    [message, condition, label, x]
            zero = convert_to_tensor(0, dtype=x.dtype)
            a, b = (zero, x) if zero_first else (x, zero)
            return compare(a, b, data=data, summarize=summarize)

    check.__name__ = check.__qualname__ = public
    check.__doc__ = f"""Asserts `x {sym} 0` elementwise (`tf.{public}`).

    Args:
      x: a numeric tensor.
      data: what the error prints (default: the condition and x).
      summarize: how many entries of each tensor the error prints.
      message: a string put before the data.
      name: a name for the op (default "{public}").

    Returns:
      An Assert op that fails the step when the condition does not hold.

    Raises:
      InvalidArgumentError: x is constant and the condition does not hold.
    """
    return check


assert_negative = _unary("<", "assert_negative", False, assert_less)
assert_positive = _unary(">", "assert_positive", True, assert_less)
assert_non_negative = _unary(">=", "assert_non_negative", True, assert_less_equal)
assert_non_positive = _unary("<=", "assert_non_positive", False, assert_less_equal, joiner="")


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None,
                name=None):
    """Asserts `|x - y| < atol + rtol * |y|` elementwise (`tf.assert_near`).

    There is no graph-time check (as in TF): the returned op decides when it runs.

    Args:
      x: a float or complex tensor.
      y: a tensor of x's dtype, broadcastable with x.
      rtol: the relative tolerance (default 10 * eps of x's real dtype).
      atol: the absolute tolerance (default 10 * eps).
      data: what the error prints (default: the tolerances, x and y).
      summarize: how many entries of each tensor the error prints.
      message: a string put before the data.
      name: a name for the op (default "assert_near").

    Returns:
      An Assert op that fails the step when x and y are not close.
    """
    message = _prefix(message)
    with graph_lib.name_scope(name, "assert_near", _tensors(x, y, rtol, atol, data)):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        real = x.dtype.real_dtype if x.dtype.is_complex else x.dtype
        eps = np.finfo(real.as_numpy_dtype).eps
        rtol = convert_to_tensor(10 * eps if rtol is None else rtol, name="rtol", dtype=real)
        atol = convert_to_tensor(10 * eps if atol is None else atol, name="atol", dtype=real)
        if data is None:
            data = [message, f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        tolerance = math_ops.add(atol, math_ops.multiply(rtol, unary_ops.abs(y)))
        diff = unary_ops.abs(math_ops.subtract(x, y))
        condition = reduction_ops.reduce_all(comparison_ops.less(diff, tolerance))
        return Assert(condition, data, summarize=summarize)


class _StaticRankError(ValueError):
    """A rank known at graph time fails the check (turned into the public message)."""

    def __init__(self, actual: int, given):
        super().__init__("Static rank condition failed", actual, given)
        self.actual, self.given = actual, given


def _rank_assert(x, ranks, static_ok, dynamic_ok, data, summarize):
    """An Assert that `dynamic_ok(rank(x), ranks)` holds, or a NoOp when it is static.

    Raises:
      _StaticRankError: x's static rank fails `static_ok(rank, static ranks)`.
      ValueError: a given rank is not a scalar.
      TypeError: a given rank is not int32.
    """
    for r in ranks:
        assert_type(r, dtypes.int32)
    static = [_tf_static_value(r) for r in ranks]
    if all(s is not None for s in static):
        if any(np.ndim(s) != 0 for s in static):
            raise ValueError("Rank must be a scalar.")
        if x.shape.ndims is not None:
            if not static_ok(x.shape.ndims, [int(s) for s in static]):
                raise _StaticRankError(x.shape.ndims, [int(s) for s in static])
            return no_op(name="static_checks_determined_all_ok")
    condition = dynamic_ok(array_ops.rank(x), ranks)
    for r, s in zip(ranks, static, strict=True):
        if s is None:
            check = assert_rank(r, 0, data=["Rank must be a scalar. Received rank: ", r])
            condition = with_dependencies([check], condition)
    return Assert(condition, data, summarize=summarize)


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """Asserts that `x` has rank `rank` (`tf.assert_rank`).

    Args:
      x: a tensor.
      rank: an int32 scalar.
      data: what the error prints (default: the expected rank and x's shape).
      summarize: how many entries of each tensor the error prints.
      message: a string put before the data.
      name: a name for the op (default "assert_rank").

    Returns:
      A NoOp when the rank is known statically, else an Assert op.

    Raises:
      ValueError: x's static rank is not `rank`, or `rank` is not a scalar.
    """
    return _rank_check(x, [rank], "assert_rank", "must have rank", data, summarize, message,
                       name, lambda actual, given: actual == given[0],
                       lambda actual, given: comparison_ops.equal(actual, given[0]))


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """Asserts that `x` has rank `rank` or more (`tf.assert_rank_at_least`).

    Args:
      x: a tensor.
      rank: an int32 scalar.
      data: what the error prints (default: the least rank and x's shape).
      summarize: how many entries of each tensor the error prints.
      message: a string put before the data.
      name: a name for the op (default "assert_rank_at_least").

    Returns:
      A NoOp when the rank is known statically, else an Assert op.

    Raises:
      ValueError: x's static rank is below `rank`, or `rank` is not a scalar.
    """
    return _rank_check(x, [rank], "assert_rank_at_least", "must have rank at least", data,
                       summarize, message, name, lambda actual, given: actual >= given[0],
                       lambda actual, given: comparison_ops.greater_equal(actual, given[0]))


def _any_equal(actual, given):
    result = comparison_ops.equal(given[0], actual) if given else convert_to_tensor(False)
    for r in given[1:]:
        result = comparison_ops.logical_or(result, comparison_ops.equal(r, actual))
    return result


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """Asserts that the rank of `x` is one of `ranks` (`tf.assert_rank_in`).

    Args:
      x: a tensor.
      ranks: int32 scalars.
      data: what the error prints (default: the ranks and x's shape).
      summarize: how many entries of each tensor the error prints.
      message: a string put before the data.
      name: a name for the op (default "assert_rank_in").

    Returns:
      A NoOp when the rank is known statically, else an Assert op.

    Raises:
      ValueError: x's static rank is not in `ranks`, or a rank is not a scalar.
    """
    return _rank_check(x, list(ranks), "assert_rank_in", "must have rank in", data, summarize,
                       message, name, lambda actual, given: actual in given, _any_equal)


def _rank_check(x, ranks, default_name, what, data, summarize, message, name, static_ok,
                dynamic_ok):
    with graph_lib.name_scope(name, default_name, _tensors(x, data)):
        x = convert_to_tensor(x, name="x")
        ranks = [convert_to_tensor(r, name="rank") for r in ranks]
        message = _prefix(message)
        if data is None:
            data = [message, f"Tensor {x.name} {what}"] + ranks + [
                "Received shape: ", array_ops.shape(x)]
        try:
            return _rank_assert(x, ranks, static_ok, dynamic_ok, data, summarize)
        except _StaticRankError as e:
            given = e.given[0] if len(ranks) == 1 and default_name != "assert_rank_in" else \
                str(tuple(e.given))
            raise ValueError(f"{message}Tensor {x.name} {what} {given}.  Received rank "
                             f"{e.actual}, shape {x.shape}") from None


def assert_integer(x, message=None, name=None) -> Operation:
    """Asserts statically that `x` has an integer dtype (`tf.assert_integer`).

    Args:
      x: a tensor.
      message: a string put before the error.
      name: a name for the op.

    Returns:
      A NoOp.

    Raises:
      TypeError: x's dtype is not an integer type.
    """
    with graph_lib.name_scope(name, "assert_integer", _tensors(x)):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(f'{_prefix(message)}Expected "x" to be integer type.  Found: '
                            f"{x.name} of dtype {x.dtype}")
        return no_op("statically_determined_was_integer")


def assert_type(tensor, tf_type, message=None, name=None) -> Operation:
    """Asserts statically that `tensor` has dtype `tf_type` (`tf.assert_type`).

    Args:
      tensor: a tensor (or SparseTensor).
      tf_type: the expected DType.
      message: a string put before the error.
      name: a name for the op.

    Returns:
      A NoOp.

    Raises:
      TypeError: the dtypes differ.
    """
    tf_type = dtypes.as_dtype(tf_type)
    with graph_lib.name_scope(name, "assert_type", _tensors(tensor)):
        if not isinstance(tensor, SparseTensor):
            tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            label = getattr(tensor, "name", "tensor")
            raise TypeError(f"{_prefix(message)}{label} must be of type {tf_type!r}; got "
                            f"{tensor.dtype!r}")
        return no_op("statically_determined_correct_type")


def assert_scalar(tensor, name=None, message=None) -> Tensor:
    """Asserts statically that `tensor` is a scalar (`tf.assert_scalar`).

    Args:
      tensor: a tensor.
      name: a name for the scope.
      message: a string put before the error.

    Returns:
      `tensor` (converted).

    Raises:
      ValueError: its static rank is not 0 (an unknown rank fails too).
    """
    with graph_lib.name_scope(name, "assert_scalar", _tensors(tensor)) as scope:
        tensor = convert_to_tensor(tensor, name=scope.rstrip("/") or None)
        if tensor.shape.ndims != 0:
            raise ValueError(f"{_prefix(message)}Expected scalar shape for {tensor.name}, saw "
                             f"shape: {tensor.shape}.")
        return tensor


def assert_proper_iterable(values) -> None:
    """Asserts statically that `values` is an iterable other than a tensor, an array or a
    string (`tf.assert_proper_iterable`).

    Args:
      values: the object to check.

    Raises:
      TypeError: it is a Tensor, SparseTensor, ndarray, str or bytes, or not iterable.
    """
    if isinstance(values, (Tensor, SparseTensor, np.ndarray, str, bytes)):
        raise TypeError('Expected argument "values" to be a "proper" iterable.  Found: '
                        f"{type(values)}")
    if not hasattr(values, "__iter__"):
        raise TypeError(f'Expected argument "values" to be iterable.  Found: {type(values)}')


def assert_same_float_dtype(tensors=None, dtype=None):
    """The one floating dtype shared by `tensors` and `dtype` (`tf.assert_same_float_dtype`).

    Args:
      tensors: tensors (None entries are skipped), or None.
      dtype: the expected DType, or None.

    Returns:
      That DType; float32 when neither gives one.

    Raises:
      ValueError: the dtypes differ, or the shared one is not floating.
    """
    first = None
    for item in tensors or ():
        if item is None:
            continue
        item_type = item.dtype.base_dtype
        if dtype is None:
            dtype, first = item_type, item
        elif item_type != dtype:
            label = getattr(item, "name", str(item))
            origin = f" as {getattr(first, 'name', str(first))}" if first is not None else ""
            raise ValueError(f"{label}, type={item_type}, must be of the same type ({dtype})"
                             f"{origin}.")
    if dtype is None:
        return dtypes.float32
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype}.")
    return dtype


_NUMERIC = frozenset(dtypes.as_dtype(t) for t in (
    "float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "uint32", "uint64", "qint8", "qint16", "qint32", "quint8", "quint16",
    "complex64", "complex128"))


def is_numeric_tensor(tensor) -> bool:
    """Whether `tensor` is a Tensor of a numeric dtype (`tf.is_numeric_tensor`)."""
    return isinstance(tensor, Tensor) and tensor.dtype in _NUMERIC


def _monotonic(x, compare, default_name, name) -> Tensor:
    with graph_lib.name_scope(name, default_name, _tensors(x)):
        flat = array_ops.reshape(x, [-1])
        if not is_numeric_tensor(flat):
            raise TypeError(f"Expected x to be numeric, instead found: {flat}")
        return reduction_ops.reduce_all(compare(flat[:-1], flat[1:]))


def is_non_decreasing(x, name=None) -> Tensor:
    """True iff `x[i] <= x[i+1]` for every pair in row-major order (`tf.is_non_decreasing`).

    Args:
      x: a numeric tensor (fewer than two elements: True).
      name: a name for the scope.

    Returns:
      A bool scalar tensor.

    Raises:
      TypeError: x is not numeric.
    """
    return _monotonic(x, comparison_ops.less_equal, "is_non_decreasing", name)


def is_strictly_increasing(x, name=None) -> Tensor:
    """True iff `x[i] < x[i+1]` for every pair in row-major order
    (`tf.is_strictly_increasing`).

    Args:
      x: a numeric tensor (fewer than two elements: True).
      name: a name for the scope.

    Returns:
      A bool scalar tensor.

    Raises:
      TypeError: x is not numeric.
    """
    return _monotonic(x, comparison_ops.less, "is_strictly_increasing", name)


def _known(size) -> bool:
    """Whether a dimension size or spec symbol is a definite integer."""
    if size is None or isinstance(size, Tensor):
        return False
    try:
        int(size)
    except (TypeError, ValueError):
        return False
    return True


def _dimension_sizes(x) -> list:
    """x's dimension sizes, ints where static, scalars of `tf.shape(x)` where not; a
    scalar counts as one dimension of size 1."""
    dynamic = array_ops.shape(x)
    if x.shape.ndims == 0:
        return [1]
    if x.shape.ndims is not None:
        return [d if d is not None else dynamic[i] for i, d in enumerate(x.shape.as_list())]
    is_scalar = comparison_ops.equal(array_ops.rank(x), 0)
    return cond(is_scalar, lambda: convert_to_tensor([1]), lambda: dynamic)


def _shape_spec(x, spec, prefix: str):
    """(x, leading dims unspecified, sizes, symbols) of one `assert_shapes` entry."""
    if not (hasattr(spec, "__iter__") or hasattr(spec, "__getitem__")):
        raise ValueError(f"{prefix}Tensor {x.name}.  Specified shape must be an iterable.  An "
                         "iterable has the attribute `__iter__` or `__getitem__`.  Received "
                         f"specified shape: {spec}")
    spec = tuple(spec)
    for i, symbol in enumerate(spec):
        if symbol is Ellipsis or (isinstance(symbol, str) and symbol == "*"):
            if i != 0:
                raise ValueError(f"{prefix}Tensor {x.name} specified shape index {i}.  Symbol "
                                 "`...` or `*` for a variable number of unspecified "
                                 "dimensions is only allowed as the first entry")
    leading = bool(spec) and (spec[0] is Ellipsis or spec[0] == "*")
    symbols = spec[1:] if leading else spec
    return x, leading, _dimension_sizes(x), symbols or (1,)


def _spec_rank_check(x, leading: bool, rank: int, data, summarize, message, name):
    if leading:
        return None if rank in (0, 1) else assert_rank_at_least(
            x, rank, data=data, summarize=summarize, message=message, name=name)
    if rank in (0, 1):
        return assert_rank_in(x, [0, 1], data=data, summarize=summarize, message=message,
                              name=name)
    return assert_rank(x, rank, data=data, summarize=summarize, message=message, name=name)


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts that tensors have the given ranks and consistent dimension sizes
    (`tf.debugging.assert_shapes`).

    Each entry pairs a tensor with a spec: a sequence of sizes (ints), symbols (strings
    naming a size that must be the same wherever the symbol appears), None or "." (any
    size), and optionally `...` or "*" first (any number of leading dimensions). A scalar
    matches a spec of rank 0 or 1.

    Args:
      shapes: a list of (tensor, spec) pairs or a dict {tensor: spec}.
      data: what the error prints (default: what was expected and the received shape).
      summarize: how many entries of each tensor the error prints.
      message: a string put before the data.
      name: a name for the ops (default "assert_shapes").

    Returns:
      A NoOp that runs the run-time checks left over.

    Raises:
      ValueError: a rank or a size known at graph time does not match.
    """
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    prefix = _prefix(message)
    with graph_lib.name_scope(name, "assert_shapes", _tensors([x for x, _ in pairs], data)):
        specs = [_shape_spec(convert_to_tensor(x), s, prefix) for x, s in pairs
                 if s is not None]
        rank_checks = [c for x, leading, _, symbols in specs
                       if (c := _spec_rank_check(x, leading, len(symbols), data, summarize,
                                                 message, name)) is not None]
        size_checks, seen = [], {}
        for x, leading, sizes, symbols in specs:
            for i, symbol in enumerate(symbols):
                if symbol is None or (isinstance(symbol, str) and symbol == "."):
                    continue
                dim = i - len(symbols) if leading else i
                with graph_lib.control_dependencies(rank_checks):
                    actual = sizes[dim]
                if not _known(symbol) and symbol not in seen:
                    seen[symbol] = (actual, x, dim)
                    continue
                check = _size_check(x, dim, actual, symbol, seen, data, summarize, prefix)
                if check is not None:
                    size_checks.append(check)
    with graph_lib.control_dependencies(rank_checks):
        return group(size_checks)


def _size_check(x, dim, actual, symbol, seen, data, summarize, prefix):
    """None when the size is checked statically, else an Assert that it matches."""
    if _known(symbol):
        expected, why = int(symbol), "Specified explicitly"
    else:
        expected, by, at = seen[symbol]
        why = f"Specified by tensor {by.name} dimension {at}"
    if _known(actual) and _known(expected):
        if int(actual) != int(expected):
            raise ValueError(f"{prefix}{why}.  Tensor {x.name} dimension {dim} must have size "
                             f"{int(expected)}.  Received size {int(actual)}, shape {x.shape}")
        return None
    condition = comparison_ops.equal(convert_to_tensor(actual), convert_to_tensor(expected))
    if data is None:
        data = [prefix, why, f"Tensor {x.name} dimension", dim, "must have size", expected,
                "Received shape: ", array_ops.shape(x)]
    return Assert(condition, data, summarize=summarize)
