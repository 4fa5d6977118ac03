"""Fetch structures and feed dictionaries of `Session.run`.

A fetch mapper flattens any nesting of lists, tuples, namedtuples and dicts of graph
elements into one list of unique Tensors and target Operations, and rebuilds the results in
the same structure. Composite types (SparseTensor, IndexedSlices, ...) register how they
split into tensors for fetching and feeding in tensorflux/framework/session_run_conversions.py.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Operation, Tensor
from tensorflux.framework.session_run_conversions import conversion_for
from tensorflux.ops import session_ops


class _Mapper:
    """Unique fetches plus a function from their values to the user's structure."""

    __slots__ = ("tensors", "targets", "_build")

    def __init__(self, tensors, targets, build):
        self.tensors = tensors
        self.targets = targets
        self._build = build

    def build_results(self, values: list):
        return self._build(values)


def mapper_for(graph: graph_lib.Graph, fetches) -> _Mapper:
    """The mapper of `fetches` (fast path for a single Tensor)."""
    if type(fetches) is Tensor:
        _check_fetch(graph, fetches)
        return _Mapper([fetches], [], _first)
    elements: list = []
    index: dict = {}
    build = _flatten(graph, fetches, elements, index)
    tensors = [e for e in elements if isinstance(e, Tensor)]
    targets = [e for e in elements if isinstance(e, Operation)]
    pos_of_tensor = {t: k for k, t in enumerate(tensors)}
    slot = [pos_of_tensor.get(e, -1) for e in elements]

    def build_results(values):
        flat = [values[s] if s >= 0 else None for s in slot]
        return build(flat)

    return _Mapper(tensors, targets, build_results)


def _first(values):
    return values[0]


def _flatten(graph, fetch, elements: list, index: dict):
    """Adds the elements of `fetch` to `elements` (deduplicated); returns the rebuilder that
    turns the flat list of element values into the structure of `fetch`."""
    if fetch is None:
        raise TypeError('Argument `fetch` = None has invalid type "NoneType". Cannot be None')
    if isinstance(fetch, (Tensor, Operation, str, bytes)):
        element = _element(graph, fetch)
        if element not in index:
            index[element] = len(elements)
            elements.append(element)
        k = index[element]
        return lambda flat: flat[k]
    conv = conversion_for(fetch)
    if conv is not None:
        parts, rebuild = conv[0](fetch)
        subs = [_flatten(graph, p, elements, index) for p in parts]
        return lambda flat: rebuild([s(flat) for s in subs])
    if isinstance(fetch, Mapping):
        keys = list(fetch)
        subs = [_flatten(graph, fetch[k], elements, index) for k in keys]
        cls = type(fetch)

        def build_dict(flat):
            items = [(k, s(flat)) for k, s in zip(keys, subs, strict=True)]
            try:
                return cls(items)
            except TypeError:
                return dict(items)

        return build_dict
    if isinstance(fetch, (list, tuple)):
        subs = [_flatten(graph, f, elements, index) for f in fetch]
        if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):  # namedtuple
            cls = type(fetch)
            return lambda flat: cls(*[s(flat) for s in subs])
        cls = type(fetch)
        if cls in (list, tuple):
            return lambda flat: cls(s(flat) for s in subs)
        return lambda flat: cls([s(flat) for s in subs])
    if hasattr(fetch, "_as_graph_element"):
        element = _element(graph, fetch)
        if element not in index:
            index[element] = len(elements)
            elements.append(element)
        k = index[element]
        return lambda flat: flat[k]
    raise TypeError(f"Argument `fetch` = {fetch} has invalid type \"{type(fetch).__name__}\" "
                    "must be a string or Tensor. (Can not convert a "
                    f"{type(fetch).__name__} into a Tensor or Operation.)")


def _element(graph, fetch):
    try:
        if isinstance(fetch, (str, bytes)) and ":" in (name := _text(fetch)):
            # "v:0" names the variable in TF1 (Graph.get_tensor_by_name): fetch its value
            fetch = graph.get_tensor_by_name(name)
            fetch = getattr(fetch, "_as_graph_element", lambda: fetch)()
        element = graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
    except TypeError as e:
        raise TypeError(f"Argument `fetch` = {fetch} has invalid type "
                        f"\"{type(fetch).__name__}\" must be a string or Tensor. ({e})") from None
    except (ValueError, KeyError) as e:
        msg = f'"{e.args[0]}"' if isinstance(e, KeyError) else str(e)
        raise ValueError(f"Argument `fetch` = {fetch} cannot be interpreted as a Tensor. "
                         f"({msg})") from None
    _check_fetch(graph, element)
    return element


def _text(name) -> str:
    return name.decode() if isinstance(name, bytes) else name


def _check_fetch(graph, element) -> None:
    if element.graph is not graph:
        raise ValueError(f"Argument `fetch` = {element} cannot be interpreted as a Tensor. "
                         f"(Tensor {element} is not an element of this graph.)")
    if not graph.is_fetchable(element):
        op = element.op if isinstance(element, Tensor) else element
        raise ValueError(f"Operation '{op.name}' has been marked as not fetchable.")


# ------------------------------------------------------------------------------------------
# Feeds.


def feed_tensor(graph: graph_lib.Graph, key) -> Tensor:
    """The Tensor a feed_dict key names; TypeError/ValueError as TensorFlow raises them."""
    if type(key) is Tensor:
        element = key
    else:
        try:
            element = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except TypeError as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
        except (ValueError, KeyError) as e:
            msg = e.args[0] if isinstance(e, KeyError) else str(e)
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {msg}") from None
    if element.graph is not graph:
        raise TypeError(f"Cannot interpret feed_dict key as Tensor: Tensor {element!r} is "
                        "not an element of this graph.")
    if not graph.is_feedable(element):
        raise ValueError(f"Tensor {element.name} may not be fed.")
    return element


def process_feeds(graph: graph_lib.Graph, feed_dict) -> dict[Tensor, object]:
    """feed_dict -> {Tensor: NumPy value}, expanding composite keys and checking values."""
    if not isinstance(feed_dict, Mapping):
        raise TypeError("feed_dict must be a dictionary (or another Mapping) of graph "
                        f"elements to values, not a {type(feed_dict).__name__}")
    out: dict[Tensor, object] = {}
    for key, value in feed_dict.items():
        if isinstance(key, (Tensor, str)):  # the common case, without building a list
            t = feed_tensor(graph, key)
            out[t] = convert_feed(t, value)
            continue
        for k, v in _expand_feed(key, value):
            t = feed_tensor(graph, k)
            out[t] = convert_feed(t, v)
    return out


def _expand_feed(key, value):
    """(key, value) -> [(tensor key, its value)]: composite keys (a SparseTensor) split into
    their parts, a nested tuple of keys (an RNN's LSTMStateTuples) paired with a value of
    the same structure, as TensorFlow's feed_dict takes them, and a resource variable into
    its reads (_variable_reads)."""
    if isinstance(key, (Tensor, str)):
        return [(key, value)]
    reads = _variable_reads(key)
    if reads is not None:
        return [(t, value) for t in reads]
    conv = conversion_for(key)
    if conv is not None and conv[1] is not None:
        return [pair for k, v in conv[1](key, value) for pair in _expand_feed(k, v)]
    if isinstance(key, tuple) and not hasattr(key, "_as_graph_element"):
        if not isinstance(value, (tuple, list)) or len(value) != len(key):
            raise ValueError(f"Feed key {key!r} is a tuple; its value must be a tuple of "
                             f"the same length, got {type(value).__name__} {value!r:.200}")
        return [pair for k, v in zip(key, value, strict=True)
                for pair in _expand_feed(k, v)]
    return [(key, value)]


def _variable_reads(key) -> list[Tensor] | None:
    """A resource variable fed as a whole (`feed_dict={v: value}`, cleverhans' L-BFGS
    attack): its reads, or None for any other key.

    TF1 made `tf.Variable` a reference variable, whose consumers all take the one
    VariableV2 output: feeding the variable gives every one of them the value, for that
    step, without initializing or changing the variable. tensorflux's variables are
    resource variables, read by a ReadVariableOp per consumer; feeding the variable feeds
    them all (those that are feedable), except the reads an update returns (they come
    from TF1's Assign outputs, which a feed of the variable leaves alone).
    """
    handle = getattr(key, "handle", None)
    if not (isinstance(handle, Tensor) and handle.dtype is dtypes.resource and
            hasattr(key, "_as_graph_element")):
        return None
    graph = handle.graph
    element = key._as_graph_element()
    reads = [element] if isinstance(element, Tensor) else []
    for op in handle._consumers:
        if op._type == "ReadVariableOp":
            t = op._outputs[0]
            if t not in reads and not hasattr(t, "_updated_variable") and \
                    graph.is_feedable(t):
                reads.append(t)
    return reads


def convert_feed(t: Tensor, value):
    """`value` as a NumPy array of `t`'s dtype, checked against `t`'s static shape."""
    dtype = t.dtype
    if isinstance(value, session_ops.TensorHandle):
        value = value.handle  # a persistent tensor is fed by its handle
    if isinstance(value, Tensor):
        raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed "
                        "values include Python scalars, strings, lists, numpy ndarrays, or "
                        "TensorHandles. For reference, the tensor object was "
                        f"{value!r} which was passed to the argument `feed_dict` with key "
                        f"{t!r}.")
    np_dtype = dtype.numpy_dtype  # storage dtype (plain integers for quantized types)
    if type(value) is np.ndarray and value.dtype == np_dtype:
        arr = value
    elif dtype is dtypes.string:
        arr = _string_feed(value)
    elif dtype is dtypes.resource or dtype is dtypes.variant:
        arr = value
    else:
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                ok = np_dtype.type(value) == value
            except (OverflowError, ValueError):
                ok = False
            if not ok:
                raise TypeError(f"Type of feed value {value} with type {type(value)} is not "
                                f"compatible with Tensor type {dtype!r}. Try explicitly "
                                "setting the type of the feed tensor to a larger type (e.g. "
                                "int64).")
        try:
            arr = np.asarray(value, dtype=np_dtype)
        except (TypeError, ValueError) as e:  # NumPy's class, as TensorFlow keeps it
            raise type(e)(f"{e} (while feeding {t.name} of dtype {dtype.name})") from None
    shape = t._shape
    if shape._dims_tuple is not None and not tensor_shape.is_compatible_with_numpy_shape(
            shape, np.shape(arr)):
        raise ValueError(f"Cannot feed value of shape {tuple(np.shape(arr))!r} for Tensor "
                         f"{t.name!r}, which has shape {str(shape)!r}")
    return arr


def _string_feed(value) -> np.ndarray:
    arr = np.asarray(value, dtype=object)
    flat = arr.reshape(-1)
    for k, v in enumerate(flat):
        if isinstance(v, str):
            flat[k] = v.encode()
        elif not isinstance(v, bytes):
            if isinstance(v, np.bytes_):
                flat[k] = bytes(v)
            else:
                raise TypeError(f"Cannot feed {v!r} of type {type(v).__name__} into a string "
                                "tensor")
    return arr
