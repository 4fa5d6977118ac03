"""`tf.contrib.layers.utils` (also `tf.contrib.slim.utils`): the helpers contrib's layers
share, and the end-point bookkeeping of TF-Slim's networks.

A layer given `outputs_collections` adds its output to those collections and appends an
*alias* to the tensor (`tensor.aliases`, a list): the layer's variable-scope name
(`vgg_16/conv1/conv1_1`) or, for layers without variables, its name scope with the trailing
"/" removed (`vgg_16/pool1`). `convert_collection_to_dict` turns such a collection into the
ordered `{alias: tensor}` dict that the networks return as their `end_points`; a tensor in
the collection without aliases is keyed by its op's name (`name` when not output 0).
"""

from __future__ import annotations

import collections as _collections

from tensorflux.framework import graph as graph_lib
from tensorflux.framework import tensor_shape

__all__ = ["collect_named_outputs", "append_tensor_alias", "gather_tensors_aliases",
           "get_tensor_aliases", "convert_collection_to_dict", "constant_value",
           "static_cond", "smart_cond", "get_variable_collections", "two_element_tuple",
           "n_positive_integers", "channel_dimension", "last_dimension", "NamedOutputs"]

NamedOutputs = _collections.namedtuple("NamedOutputs", ["name", "outputs"])


def collect_named_outputs(collections, alias, outputs):
    """Adds `outputs` to each of `collections` with the alias `alias` appended to it; a
    no-op when `collections` is empty. Returns `outputs`."""
    if collections:
        append_tensor_alias(outputs, alias)
        graph_lib.add_to_collections(collections, outputs)
    return outputs


def append_tensor_alias(tensor, alias):
    """Appends `alias` (a trailing "/" removed) to `tensor.aliases`. Returns `tensor`."""
    if alias.endswith("/"):
        alias = alias[:-1]
    aliases = getattr(tensor, "aliases", None)
    if aliases is None:
        tensor.aliases = [alias]
    else:
        aliases.append(alias)
    return tensor


def gather_tensors_aliases(tensors):
    """All the aliases of `tensors`, in order."""
    return [alias for t in tensors for alias in get_tensor_aliases(t)]


def get_tensor_aliases(tensor):
    """`tensor.aliases`, or `[op name]` (output 0) / `[tensor name]` when it has none."""
    aliases = getattr(tensor, "aliases", None)
    if aliases is not None:
        return aliases
    return [tensor.op.name] if tensor.name.endswith(":0") else [tensor.name]


def convert_collection_to_dict(collection, clear_collection=False):
    """The ordered dict `{alias: tensor}` of the tensors in `collection` (one entry per
    alias); with `clear_collection`, the collection is emptied afterwards."""
    out = _collections.OrderedDict(
        (alias, tensor) for tensor in graph_lib.get_collection(collection)
        for alias in get_tensor_aliases(tensor))
    if clear_collection:
        graph_lib.get_default_graph().clear_collection(collection)
    return out


def constant_value(value_or_tensor_or_var, dtype=None):
    """The value of a Python value or of a constant tensor; None for a variable or a tensor
    whose value is not known statically.

    Raises:
      ValueError: the argument is None, or a tensor of a dtype other than `dtype`.
    """
    from tensorflux.framework import common_shapes
    from tensorflux.framework.operation import Tensor
    from tensorflux.variables.variables import Variable

    if value_or_tensor_or_var is None:
        raise ValueError("value_or_tensor_or_var cannot be None")
    value = value_or_tensor_or_var
    if isinstance(value, (Tensor, Variable)):
        if dtype and value.dtype != dtype:
            raise ValueError(f"It has the wrong type {value.dtype} instead of {dtype}")
        return None if isinstance(value, Variable) else common_shapes.constant_value(value)
    return value


def static_cond(pred, fn1, fn2):
    """`fn1()` if the Python value `pred` is true, else `fn2()`.

    Raises:
      TypeError: `fn1` or `fn2` is not callable.
    """
    if not callable(fn1):
        raise TypeError("fn1 must be callable.")
    if not callable(fn2):
        raise TypeError("fn2 must be callable.")
    return fn1() if pred else fn2()


def smart_cond(pred, fn1, fn2, name=None):
    """`static_cond` when `pred`'s value is known when building, else `tf.cond`."""
    from tensorflux.control_flow import builders

    value = constant_value(pred)
    if value is not None:
        return static_cond(value, fn1, fn2)
    return builders.cond(pred, fn1, fn2, name=name)


def get_variable_collections(variables_collections, name):
    """The collections for the variable `name`: `variables_collections[name]` for a dict,
    else `variables_collections` itself."""
    if isinstance(variables_collections, dict):
        return variables_collections.get(name)
    return variables_collections


def _get_dimension(shape, dim, min_rank=1):
    dims = tensor_shape.as_shape(shape).dims
    if dims is None:
        raise ValueError("dims of shape must be known but is None")
    if len(dims) < min_rank:
        raise ValueError(f"rank of shape must be at least {min_rank} not: {len(dims)}")
    value = tensor_shape.dimension_value(dims[dim])
    if value is None:
        raise ValueError(f"dimension {dim} of shape must be known but is None: {shape}")
    return value


def channel_dimension(shape, data_format, min_rank=1):
    """The channels' size of `shape` for `data_format` ("channels_first"/"channels_last").

    Raises:
      ValueError: rank unknown or below `min_rank`, or the dimension unknown.
    """
    return _get_dimension(shape, 1 if data_format == "channels_first" else -1, min_rank)


def last_dimension(shape, min_rank=1):
    """The last dimension of `shape` (known), which has at least `min_rank` dimensions.

    Raises:
      ValueError: rank unknown or below `min_rank`, or the last dimension unknown.
    """
    return _get_dimension(shape, -1, min_rank)


def two_element_tuple(int_or_tuple):
    """`(v, v)` for an int, the pair for a list/tuple/TensorShape of two.

    Raises:
      ValueError: anything else.
    """
    if isinstance(int_or_tuple, (list, tuple)):
        if len(int_or_tuple) != 2:
            raise ValueError(f"Must be a list with 2 elements: {int_or_tuple}")
        return int(int_or_tuple[0]), int(int_or_tuple[1])
    if isinstance(int_or_tuple, int):
        return int(int_or_tuple), int(int_or_tuple)
    if isinstance(int_or_tuple, tensor_shape.TensorShape):
        if len(int_or_tuple) == 2:
            return int_or_tuple[0], int_or_tuple[1]
    raise ValueError("Must be an int, a list with 2 elements or a TensorShape of length 2")


def check_stride_and_rate(strides, rates):
    """contrib's convolutions (through tf.layers) refuse a stride and a dilation rate both
    above 1.

    Raises:
      ValueError: some stride > 1 and some rate > 1.
    """
    if any(s > 1 for s in strides) and any(r > 1 for r in rates):
        raise ValueError("`strides > 1` not supported in conjunction with `dilation_rate > 1`."
                         f" Received: strides={list(strides)} and dilation_rate={list(rates)}")


def n_positive_integers(n, value):
    """A tuple of `n` positive ints from one int (repeated) or `n` of them.

    Raises:
      TypeError: `n` is not an int.
      ValueError: `n` or a value is not positive, or the length is not `n`.
    """
    n = int(n)
    if n <= 0:
        raise ValueError("n must be a positive integer")
    if isinstance(value, tensor_shape.TensorShape):
        value = value.as_list()
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"Expected sequence of {n} integers, but received {value}")
        values = tuple(int(x) for x in value)
    else:
        values = (int(value),) * n
    for x in values:
        if x <= 0:
            raise ValueError(f"expected positive integer, but received {x}")
    return values
