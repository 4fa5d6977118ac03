"""`tf.contrib.graph_editor.util`: list conversions, graph checks, control outputs and
placeholders shared by the graph editor's modules."""

from __future__ import annotations

import re

from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.ops import array_ops

__all__ = [
    "ControlOutputs", "ListView", "check_graphs", "concatenate_unique", "find_corresponding",
    "find_corresponding_elem", "flatten_tree", "get_consuming_ops", "get_generating_ops",
    "get_predefined_collection_names", "get_tensors", "get_unique_graph", "is_iterable",
    "make_list_of_op", "make_list_of_t", "make_placeholder_from_dtype_and_shape",
    "make_placeholder_from_tensor", "placeholder_name", "scope_basename", "scope_dirname",
    "scope_finalize", "transform_tree",
]

_DEFAULT_PLACEHOLDER_PREFIX = "geph"


def concatenate_unique(la, lb):
    """Appends to list `la` the elements of `lb` it does not hold yet; returns `la`."""
    seen = set(la)
    for item in lb:
        if item not in seen:
            la.append(item)
            seen.add(item)
    return la


class ListView:
    """A read-only view of a list (SubGraphView's ops, inputs and outputs)."""

    def __init__(self, list_):
        if not isinstance(list_, list):
            raise TypeError(f"Expected a list, got: {type(list_)}.")
        self._list = list_

    def __iter__(self):
        return iter(self._list)

    def __len__(self):
        return len(self._list)

    def __bool__(self):
        return bool(self._list)

    def __getitem__(self, i):
        return self._list[i]

    def __add__(self, other):
        return list(self._list) + list(other)

    def __radd__(self, other):
        return list(other) + list(self._list)

    def __contains__(self, item):
        return item in self._list

    def __eq__(self, other):
        return list(self) == list(other) if isinstance(other, (list, ListView)) else NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(self._list)


def is_iterable(obj) -> bool:
    """True for an iterable that is not a single tf.Tensor."""
    if isinstance(obj, Tensor):
        return False
    try:
        iter(obj)
    except TypeError:
        return False
    return True


def flatten_tree(tree, leaves=None) -> list:
    """The leaves of a tree of dicts (their values), lists and tuples."""
    if leaves is None:
        leaves = []
    if isinstance(tree, dict):
        for child in tree.values():
            flatten_tree(child, leaves)
    elif is_iterable(tree) and not isinstance(tree, (str, bytes)):
        for child in tree:
            flatten_tree(child, leaves)
    else:
        leaves.append(tree)
    return leaves


def transform_tree(tree, fn, iterable_type=tuple):
    """`tree` with every leaf replaced by `fn(leaf)`; dicts and lists keep their kind,
    other iterables become `iterable_type`."""
    if isinstance(tree, dict):
        return type(tree)((k, transform_tree(v, fn, iterable_type)) for k, v in tree.items())
    if isinstance(tree, list):
        return [transform_tree(child, fn, iterable_type) for child in tree]
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a namedtuple
        return type(tree)(*[transform_tree(child, fn, iterable_type) for child in tree])
    if is_iterable(tree) and not isinstance(tree, (str, bytes)):
        return iterable_type(transform_tree(child, fn, iterable_type) for child in tree)
    return fn(tree)


def check_graphs(*args) -> None:
    """Checks that every argument with a `graph` belongs to the same graph.

    Raises:
      ValueError: two arguments belong to different graphs.
    """
    graph = None
    for i, item in enumerate(args):
        g = getattr(item, "graph", None)
        if graph is None and g is not None:
            graph = g
        elif g is not None and g is not graph:
            raise ValueError(f"Argument[{i}]: Wrong graph!")


def get_unique_graph(tops, check_types=None, none_if_empty=False):
    """The one graph of the ops/tensors `tops` (or `tops` itself if it is a graph).

    Raises:
      TypeError: `tops` is not iterable, or holds something not of `check_types`.
      ValueError: the elements belong to different graphs, or there are none.
    """
    if isinstance(tops, graph_lib.Graph):
        return tops
    if not is_iterable(tops):
        raise TypeError(f"{type(tops)} is not iterable")
    if check_types is None:
        check_types = (Operation, Tensor)
    elif not is_iterable(check_types):
        check_types = (check_types,)
    graph = None
    for top in tops:
        if not isinstance(top, tuple(check_types)):
            names = ", ".join(t.__name__ for t in check_types)
            raise TypeError(f"Expected a type in ({names}), got: {type(top)}")
        if graph is None:
            graph = top.graph
        elif graph is not top.graph:
            raise ValueError(f"Operation {top} does not belong to given graph")
    if graph is None and not none_if_empty:
        raise ValueError("Can't find the unique graph of an empty list")
    return graph


def make_list_of_op(ops, check_graph=True, allow_graph=True, ignore_ts=False) -> list:
    """`ops` (a graph, an op, or an iterable of ops) as a list of ops.

    Raises:
      TypeError: `ops` is a graph and `allow_graph` is False, or holds a non-op (tensors
        are dropped instead when `ignore_ts`).
      ValueError: the ops belong to different graphs (with `check_graph`).
    """
    if isinstance(ops, graph_lib.Graph):
        if allow_graph:
            return ops.get_operations()
        raise TypeError("allow_graph is False: cannot convert a tf.Graph.")
    ops = list(ops) if is_iterable(ops) else [ops]
    if not ops:
        return []
    if check_graph:
        check_types = None if ignore_ts else Operation
        get_unique_graph(ops, check_types=check_types)
    return [op for op in ops if isinstance(op, Operation)]


def get_tensors(graph) -> list:
    """Every output tensor of every op of `graph`.

    Raises:
      TypeError: `graph` is not a tf.Graph.
    """
    if not isinstance(graph, graph_lib.Graph):
        raise TypeError(f"Expected a graph, got: {type(graph)}")
    return [t for op in graph.get_operations() for t in op.outputs]


def make_list_of_t(ts, check_graph=True, allow_graph=True, ignore_ops=False) -> list:
    """`ts` (a graph, a tensor, or an iterable of tensors) as a list of tensors.

    Raises:
      TypeError: `ts` is a graph and `allow_graph` is False, or holds a non-tensor (ops
        are dropped instead when `ignore_ops`).
      ValueError: the tensors belong to different graphs (with `check_graph`).
    """
    if isinstance(ts, graph_lib.Graph):
        if allow_graph:
            return get_tensors(ts)
        raise TypeError("allow_graph is False: cannot convert a tf.Graph.")
    ts = list(ts) if is_iterable(ts) else [ts]
    if not ts:
        return []
    if check_graph:
        check_types = None if ignore_ops else Tensor
        get_unique_graph(ts, check_types=check_types)
    return [t for t in ts if isinstance(t, Tensor)]


def get_generating_ops(ts) -> list:
    """The op producing each tensor of `ts`."""
    return [t.op for t in make_list_of_t(ts, allow_graph=False)]


def get_consuming_ops(ts) -> list:
    """The ops consuming the tensors of `ts`, each once, in order."""
    ops = []
    for t in make_list_of_t(ts, allow_graph=False):
        concatenate_unique(ops, t.consumers())
    return ops


class ControlOutputs:
    """The control outputs of every op of a graph: the ops that list it as a control
    input. Built when made; `update()` rebuilds it if the graph changed."""

    def __init__(self, graph):
        if not isinstance(graph, graph_lib.Graph):
            raise TypeError(f"Expected a tf.Graph, got: {type(graph)}")
        self._graph = graph
        self._control_outputs = {}
        self._version = None
        self._build()

    def update(self):
        """Rebuilds the map if ops were added or changed since; returns self."""
        if self._version != self._graph_version():
            self._build()
        return self

    def _graph_version(self):
        return (self._graph.version, self._graph._mutation_version)

    def _build(self):
        self._control_outputs = {}
        for op in self._graph.get_operations():
            for control_input in op.control_inputs:
                self._control_outputs.setdefault(control_input, [])
                if op not in self._control_outputs[control_input]:
                    self._control_outputs[control_input].append(op)
        self._version = self._graph_version()

    def get_all(self) -> dict:
        return self._control_outputs

    def get(self, op) -> tuple:
        """The control outputs of `op` (a tuple, empty if none)."""
        return tuple(self._control_outputs.get(op, ()))

    @property
    def graph(self):
        return self._graph


def scope_finalize(scope: str) -> str:
    """`scope` ending with "/" (unless empty)."""
    if scope and not scope.endswith("/"):
        scope += "/"
    return scope


def scope_dirname(scope: str) -> str:
    """The part of `scope` up to and including its last "/" ("" if none)."""
    slash = scope.rfind("/")
    return "" if slash == -1 else scope[:slash + 1]


def scope_basename(scope: str) -> str:
    """The part of `scope` after its last "/"."""
    return scope[scope.rfind("/") + 1:]


def placeholder_name(t=None, scope=None, prefix=_DEFAULT_PLACEHOLDER_PREFIX) -> str:
    """The name the graph editor gives a placeholder standing for `t`:
    `<scope or t's scope><prefix>__<t's op basename>_<output index>`; without `t`,
    `<scope><prefix>`.

    Raises:
      TypeError: `t` is not a tf.Tensor.
    """
    if scope is not None:
        scope = scope_finalize(scope)
    if t is None:
        return f"{scope or ''}{prefix}"
    if not isinstance(t, Tensor):
        raise TypeError(f"Expected a tf.Tensor, got: {type(t)}")
    op_dirname, op_basename = scope_dirname(t.op.name), scope_basename(t.op.name)
    if scope is None:
        scope = op_dirname
    if op_basename.startswith(f"{prefix}__"):
        return scope + op_basename
    return f"{scope}{prefix}__{op_basename}_{t.value_index}"


def make_placeholder_from_tensor(t, scope=None, prefix=_DEFAULT_PLACEHOLDER_PREFIX):
    """A placeholder of `t`'s dtype and static shape in the default graph, named by
    `placeholder_name`."""
    return array_ops.placeholder(t.dtype.base_dtype, t.get_shape(),
                                 name=placeholder_name(t, scope=scope, prefix=prefix))


def make_placeholder_from_dtype_and_shape(dtype, shape=None, scope=None,
                                          prefix=_DEFAULT_PLACEHOLDER_PREFIX):
    """A placeholder of `dtype` and `shape` in the default graph, named
    `<scope><prefix>` (made unique)."""
    return array_ops.placeholder(dtype, shape,
                                 name=placeholder_name(scope=scope, prefix=prefix))


_INTERNAL_NAME = re.compile(r"^__\w+__$")


def get_predefined_collection_names() -> list:
    """The names of tf.GraphKeys' collections."""
    return [getattr(graph_lib.GraphKeys, key) for key in dir(graph_lib.GraphKeys)
            if not _INTERNAL_NAME.match(key)
            and isinstance(getattr(graph_lib.GraphKeys, key), str)]


def find_corresponding_elem(target, dst_graph, dst_scope="", src_scope=""):
    """The op or tensor of `dst_graph` named as `target` with `src_scope` replaced by
    `dst_scope`.

    Raises:
      ValueError: `target`'s name is not under `src_scope`.
      TypeError: `target` is neither an op nor a tensor.
    """
    src_name = target.name
    if src_scope:
        src_scope = scope_finalize(src_scope)
        if not src_name.startswith(src_scope):
            raise ValueError(f"{target} not in source scope {src_scope}")
        src_name = src_name[len(src_scope):]
    dst_name = scope_finalize(dst_scope) + src_name if dst_scope else src_name
    if isinstance(target, Tensor):
        return dst_graph.get_tensor_by_name(dst_name)
    if isinstance(target, Operation):
        return dst_graph.get_operation_by_name(dst_name)
    raise TypeError(f"Expected tf.Tensor or tf.Operation, got: {type(target)}")


def find_corresponding(targets, dst_graph, dst_scope="", src_scope=""):
    """`find_corresponding_elem` over a tree of ops and tensors."""
    return transform_tree(
        targets, lambda top: find_corresponding_elem(top, dst_graph, dst_scope, src_scope))

