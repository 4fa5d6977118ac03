"""Small helpers shared by the control-flow builders, their gradients and TensorArray.

Two groups:
- `nest`: flatten / pack / compare nested structures (lists, tuples, namedtuples, dicts) of
  tensors, the way TensorFlow's `nest` does for tf.cond and tf.while_loop. A TensorArray and
  anything else that is not a list, tuple or dict is a leaf.
- questions about ops and their control-flow contexts (is this Exit the end of a loop? which
  WhileContext holds this op?), named after TensorFlow's `control_flow_util`.
"""

from __future__ import annotations

import collections
import contextlib

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation

# ---- nest -----------------------------------------------------------------------------------


def is_nested(x) -> bool:
    """True for the containers nest looks into: lists, tuples (namedtuples too) and dicts."""
    return isinstance(x, (list, tuple, dict))


def _children(x) -> list:
    return [x[k] for k in _sorted_keys(x)] if isinstance(x, dict) else list(x)


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:  # keys of mixed types: TF sorts them by their string
        return sorted(d, key=str)


def flatten(structure) -> list:
    """The leaves of `structure` in order (dict values by sorted key); a leaf gives [leaf]."""
    if not is_nested(structure):
        return [structure]
    out = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _rebuild(like, items):
    if isinstance(like, dict):  # values come by sorted key; keys keep `like`'s order
        by_key = dict(zip(_sorted_keys(like), items, strict=True))
        if isinstance(like, collections.defaultdict):
            out = type(like)(like.default_factory)
            out.update((k, by_key[k]) for k in like)
            return out
        return type(like)((k, by_key[k]) for k in like)
    if isinstance(like, tuple) and hasattr(like, "_fields"):  # namedtuple
        return type(like)(*items)
    return type(like)(items)


def pack_sequence_as(structure, flat_sequence):
    """`flat_sequence` (as `flatten` gives it) shaped like `structure`.

    Raises:
      TypeError: `flat_sequence` is a string or not iterable.
      ValueError: the number of leaves differs.
    """
    if isinstance(flat_sequence, (str, bytes)) or not hasattr(flat_sequence, "__iter__"):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence}\ninto a structure, but "
                        f"found incompatible type `{type(flat_sequence)}` instead.")
    flat_sequence = list(flat_sequence)
    if not is_nested(structure) and len(flat_sequence) != 1:
        raise ValueError(f"The target structure is of type `{type(structure)}`\n  {structure}"
                         f"\nHowever the input is a sequence ({type(flat_sequence)}) of length "
                         f"{len(flat_sequence)}.\n  {flat_sequence}\nnest cannot guarantee that "
                         f"it is safe to map one to the other.")
    n = len(flatten(structure))
    if n != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {n} elements, but "
                         f"flat_sequence had {len(flat_sequence)} elements.  Structure: "
                         f"{structure}, flat_sequence: {flat_sequence}.")
    it = iter(flat_sequence)

    def build(s):
        if not is_nested(s):
            return next(it)
        return _rebuild(s, [build(c) for c in _children(s)])

    return build(structure)


def _skeleton(s) -> str:
    if isinstance(s, dict):
        return "{" + ", ".join(f"{k!r}: {_skeleton(s[k])}" for k in _sorted_keys(s)) + "}"
    if isinstance(s, list):
        return "[" + ", ".join(_skeleton(c) for c in s) + "]"
    if isinstance(s, tuple):
        inner = ", ".join(_skeleton(c) for c in s)
        return "(" + inner + ("," if len(s) == 1 else "") + ")"
    return "."


def assert_same_structure(a, b, check_types: bool = True) -> None:
    """Raises unless `a` and `b` nest the same way (TensorFlow's messages).

    Raises:
      ValueError: one is nested where the other is not, or lengths or dict keys differ.
      TypeError: with `check_types`, the sequence types differ (list vs tuple, namedtuples).
    """
    try:
        _compare_structures(a, b, check_types)
    except (ValueError, TypeError) as e:
        raise type(e)(
            f"The two structures don't have the same nested structure.\n\nFirst structure: "
            f"{a}\n\nSecond structure: {b}\n\nMore specifically: {e}\nEntire first "
            f"structure:\n{_skeleton(a)}\nEntire second structure:\n{_skeleton(b)}") from None


def _compare_structures(a, b, check_types: bool) -> None:
    if is_nested(a) != is_nested(b):
        nested, flat = (a, b) if is_nested(a) else (b, a)
        raise ValueError(f'Substructure "{nested}" is a sequence, while substructure '
                         f'"{flat}" is not')
    if not is_nested(a):
        return
    if check_types and type(a) is not type(b):
        raise TypeError(f"The two namedtuples don't have the same sequence type. First "
                        f"structure {a} has type {type(a).__name__}, while second structure "
                        f"{b} has type {type(b).__name__}")
    if isinstance(a, dict) and isinstance(b, dict) and set(a) != set(b):
        raise ValueError(f"The two dictionaries don't have the same set of keys. First "
                         f"structure has keys {_sorted_keys(a)}, while second structure has "
                         f"keys {_sorted_keys(b)}")
    if len(a) != len(b):
        raise ValueError(f"The two structures don't have the same number of elements. First "
                         f"structure: {a}. Second structure: {b}")
    for x, y in zip(_children(a), _children(b), strict=True):
        _compare_structures(x, y, check_types)


def map_structure(fn, *structures, check_types: bool = True):
    """`fn` applied leafwise to `structures` (which must nest alike); shaped like the first.

    Raises:
      ValueError: no structures, or they nest differently.
    """
    if not structures:
        raise ValueError("Must provide at least one structure")
    for s in structures[1:]:
        assert_same_structure(structures[0], s, check_types)
    flat = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flat, strict=True)])


# ---- ops and their contexts -------------------------------------------------------------------


def get_context(op: Operation):
    """The control-flow context `op` was built in (None at the top level)."""
    return op._control_flow_context


def set_context(op: Operation, ctx) -> None:
    op._control_flow_context = ctx


def IsSwitch(op: Operation) -> bool:  # noqa: N802 - TensorFlow's helper names
    return op.type in ("Switch", "RefSwitch")


def IsMerge(op: Operation) -> bool:  # noqa: N802
    return op.type in ("Merge", "RefMerge")


def IsLoopEnter(op: Operation) -> bool:  # noqa: N802
    return op.type in ("Enter", "RefEnter")


def IsLoopConstantEnter(op: Operation) -> bool:  # noqa: N802
    return IsLoopEnter(op) and bool(op.attrs.get("is_constant", False))


def IsLoopExit(op: Operation) -> bool:  # noqa: N802
    return op.type in ("Exit", "RefExit")


def IsCondSwitch(op: Operation) -> bool:  # noqa: N802
    """A Switch built by tf.cond: every consumer of its outputs is in a CondContext (a
    Switch is not itself inside the cond it feeds, so its consumers decide)."""
    if not IsSwitch(op) or not op.outputs:
        return False
    for t in op.outputs:
        for c in t._consumers:
            ctx = get_context(c)
            if ctx is not None and IsLoopEnter(c):
                ctx = ctx.outer_context
            if ctx is None or not ctx.IsCondContext():
                return False
    return True


def IsCondMerge(op: Operation) -> bool:  # noqa: N802
    """A Merge built by tf.cond: all its inputs come from CondContexts."""
    if not IsMerge(op) or not op.inputs:
        return False
    for t in op.inputs:
        ctx = GetOutputContext(t.op)
        if ctx is None or not ctx.IsCondContext():
            return False
    return True


def IsLoopSwitch(op: Operation) -> bool:  # noqa: N802
    """The Switch of a while-loop variable."""
    if not IsSwitch(op):
        return False
    ctx = get_context(op)
    return ctx is not None and ctx.IsWhileContext() and not IsCondSwitch(op)


def IsLoopMerge(op: Operation) -> bool:  # noqa: N802
    if not IsMerge(op):
        return False
    ctx = get_context(op)
    return ctx is not None and ctx.IsWhileContext() and not IsCondMerge(op)


def GetOutputContext(op: Operation):  # noqa: N802
    """The context `op`'s outputs live in: the parent of its own for an Exit."""
    ctx = get_context(op)
    if ctx is not None and IsLoopExit(op):
        ctx = ctx.outer_context
    return ctx


def GetWhileContext(op: Operation):  # noqa: N802
    """The innermost WhileContext `op` is in, or None."""
    ctx = get_context(op)
    return ctx.GetWhileContext() if ctx is not None else None


def GetLoopConstantEnter(value):  # noqa: N802
    """The constant Enter `value` comes from through Identities, or None."""
    op = value.op
    while op.type in ("Identity", "RefIdentity"):
        op = op.inputs[0].op
    return op if IsLoopConstantEnter(op) else None


def IsContainingContext(ctx, maybe_containing_ctx) -> bool:  # noqa: N802
    """True if `maybe_containing_ctx` is `ctx` or one of its outer contexts (None: root)."""
    while ctx is not maybe_containing_ctx:
        if ctx is None:
            return False
        ctx = ctx.outer_context
    return True


def OpInContext(op: Operation, ctx) -> bool:  # noqa: N802
    return IsContainingContext(get_context(op), ctx)


@contextlib.contextmanager
def outside_control_flow(g: graph_lib.Graph | None = None):
    """Builds ops clear of enclosing control dependencies AND control-flow contexts.

    What TensorFlow's `control_dependencies(None)` does: the ops it creates belong to no
    cond or loop until the builder assigns them one.
    """
    g = g or graph_lib.get_default_graph()
    saved = g._get_control_flow_context()
    g._set_control_flow_context(None)
    try:
        with g.control_dependencies(None):
            yield
    finally:
        g._set_control_flow_context(saved)


def set_control_inputs(op: Operation, control_inputs) -> None:
    """Replaces `op`'s control inputs (library use while building control flow)."""
    op._control_inputs = list(control_inputs)
    op._graph._mutation_version += 1
