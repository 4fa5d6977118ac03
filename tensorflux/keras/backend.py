"""`tf.keras.backend` for graph mode: the Keras session, the learning phase, and the
backend functions TF1 Keras programs call (`K.placeholder`, `K.function`, `K.mean`, ...).

The session: `get_session()` returns the session set with `set_session`, else the
default session, else one made here on the default graph; before returning it, it
initializes the global variables that are not yet initialized in it (TF1 Keras does the
same, so `model.fit` works without `tf.global_variables_initializer()`).

The learning phase: one boolean `placeholder_with_default(False)` per graph named
"keras_learning_phase", fed True by `fit`/`train_on_batch`; `set_learning_phase(0|1)`
replaces it with a Python int for the graph's later layers.
"""

from __future__ import annotations

import weakref

import numpy as np

from tensorflux.autodiff import gradients as _gradients_lib
from tensorflux.framework import dtypes
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import clip_ops, nn_impl
from tensorflux.ops import (
    array_ops,
    comparison_ops,
    constant_op,
    joining_ops,
    math_ops,
    matrix_ops,
    nn_ops,
    random_ops,
    reduction_ops,
    state_ops,
    unary_ops,
)
from tensorflux.runtime import session as session_lib
from tensorflux.train import checkpoint_restore
from tensorflux.variables import variables as variables_lib

__all__ = [
    "get_session", "set_session", "clear_session", "learning_phase", "set_learning_phase",
    "placeholder", "variable", "constant", "eval", "get_value", "set_value",
    "batch_get_value", "batch_set_value", "function", "gradients", "dot", "sum", "mean",
    "max", "min", "prod", "std", "var", "any", "all", "argmax", "argmin", "square", "sqrt",
    "abs", "exp", "log", "pow", "sign", "round", "maximum", "minimum", "concatenate",
    "reshape", "permute_dimensions", "expand_dims", "squeeze", "flatten", "batch_flatten",
    "shape", "int_shape", "ndim", "dtype", "floatx", "set_floatx", "epsilon",
    "set_epsilon", "cast", "cast_to_floatx", "clip", "categorical_crossentropy",
    "binary_crossentropy", "sparse_categorical_crossentropy", "softmax", "relu", "elu",
    "sigmoid", "hard_sigmoid", "tanh", "softplus", "softsign", "stack", "zeros", "ones",
    "zeros_like", "ones_like", "eye", "random_normal", "random_uniform", "image_data_format",
    "set_image_data_format", "is_placeholder", "is_tensor", "is_keras_tensor", "equal",
    "not_equal", "greater", "less", "transpose", "tile", "gather", "one_hot", "dropout",
    "l2_normalize", "batch_dot", "stop_gradient", "update", "update_add", "update_sub",
    "in_train_phase", "in_test_phase", "switch", "count_params", "name_scope", "get_uid",
    "reset_uids", "manual_variable_initialization", "backend", "repeat",
]

_FLOATX = "float32"
_EPSILON = 1e-7
_IMAGE_DATA_FORMAT = "channels_last"
_SESSION: dict = {"session": None}
_MANUAL_INIT = {"on": False}
# Per graph: the learning-phase placeholder, a fixed learning phase, layer-name uids,
# assign placeholders per variable, and the variables already initialized.
_GRAPH_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

name_scope = graph_lib.name_scope


def backend() -> str:
    return "tensorflow"


def _state() -> dict:
    g = graph_lib.get_default_graph()
    return _GRAPH_STATE.setdefault(g, {"phase": None, "fixed": None, "assign": {},
                                       "initialized": weakref.WeakKeyDictionary()})


# ---- configuration ---------------------------------------------------------------------
def floatx() -> str:
    return _FLOATX


def set_floatx(value) -> None:
    global _FLOATX
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}")
    _FLOATX = str(value)


def epsilon() -> float:
    return _EPSILON


def set_epsilon(value) -> None:
    global _EPSILON
    _EPSILON = float(value)


def image_data_format() -> str:
    return _IMAGE_DATA_FORMAT


def set_image_data_format(data_format) -> None:
    global _IMAGE_DATA_FORMAT
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown data_format: {data_format}")
    _IMAGE_DATA_FORMAT = data_format


def manual_variable_initialization(value) -> None:
    """True: `get_session` leaves variable initialization to the user."""
    _MANUAL_INIT["on"] = bool(value)


def get_uid(prefix="") -> int:
    """Per graph, 1 on the first call with `prefix`, then 2, 3, ..."""
    from tensorflux.layers import base as _layers_base

    uids = _layers_base._NAME_UIDS.setdefault(graph_lib.get_default_graph(), {})
    uids[prefix] = uids.get(prefix, 0) + 1
    return uids[prefix]


def reset_uids() -> None:
    from tensorflux.layers import base as _layers_base

    _layers_base._NAME_UIDS.pop(graph_lib.get_default_graph(), None)


# ---- the session and the learning phase ------------------------------------------------
def get_session():
    """The Keras session (see the module docstring), its uninitialized variables
    initialized."""
    default = session_lib.get_default_session()
    if default is not None:
        session = default
    else:
        session = _SESSION["session"]
        if session is None or session.graph is not graph_lib.get_default_graph() or \
                getattr(session, "_closed", False):
            session = _SESSION["session"] = session_lib.Session(
                graph=graph_lib.get_default_graph())
    # weights created since a load_weights restore before anything initializes them
    checkpoint_restore.run_streaming_restores(session.graph)
    if not _MANUAL_INIT["on"]:
        _initialize_variables(session)
    return session


# Object-based checkpoints run in the Keras session when no session is the default, as
# TensorFlow's Keras arranges it.
checkpoint_restore.register_session_provider(get_session)


def _initialize_variables(session) -> None:
    with session.graph.as_default():
        done = _state()["initialized"].setdefault(session, weakref.WeakSet())
        todo = [v for v in variables_lib.global_variables() + variables_lib.local_variables()
                if v not in done]
        if not todo:
            return
        flags = session.run([variables_lib.is_variable_initialized(v) for v in todo])
        fresh = [v for v, f in zip(todo, flags, strict=True) if not f]
        if fresh:
            session.run(variables_lib.variables_initializer(fresh))
        for v in todo:
            done.add(v)


def set_session(session) -> None:
    """Makes `session` the Keras session."""
    _SESSION["session"] = session


def clear_session() -> None:
    """A new default graph: the session, the learning phase and the layer-name uids go."""
    _SESSION["session"] = None
    graph_lib.reset_default_graph()


def learning_phase():
    """The learning phase: a Python int when fixed with `set_learning_phase`, else this
    graph's boolean placeholder (default False)."""
    state = _state()
    if state["fixed"] is not None:
        return state["fixed"]
    if state["phase"] is None:
        with graph_lib.name_scope(""):
            state["phase"] = array_ops.placeholder_with_default(
                False, shape=(), name="keras_learning_phase")
    return state["phase"]


def _phase_feed(value) -> dict:
    """The feed that sets the learning phase to `value` (empty when it is fixed)."""
    phase = learning_phase()
    return {phase: bool(value)} if isinstance(phase, Tensor) else {}


def set_learning_phase(value) -> None:
    """Fixes the learning phase to 0 (test) or 1 (train) for this graph.

    Raises:
      ValueError: a value other than 0 or 1."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _state()["fixed"] = int(value)


def in_train_phase(x, alt, training=None):
    """`x` in the training phase, `alt` otherwise (callables are called)."""
    from tensorflux.layers.base import smart_cond

    training = learning_phase() if training is None else training
    if training in (1, True):
        return x() if callable(x) else x
    if training in (0, False):
        return alt() if callable(alt) else alt
    return smart_cond(training, lambda: x() if callable(x) else x,
                      lambda: alt() if callable(alt) else alt)


def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


def switch(condition, then_expression, else_expression):
    from tensorflux.control_flow import builders

    if callable(then_expression) or callable(else_expression):
        return builders.cond(condition, then_expression, else_expression)
    return comparison_ops.where(condition, then_expression, else_expression)


# ---- tensors and variables -------------------------------------------------------------
def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None):
    """A placeholder of `shape` (or `ndim` unknown dimensions) and `dtype` (floatx)."""
    if sparse:
        raise ValueError("tensorflux.keras: sparse placeholders are not supported")
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    return array_ops.placeholder(dtypes.as_dtype(dtype or floatx()), shape=shape, name=name)


def is_placeholder(x) -> bool:
    return isinstance(x, Tensor) and x.op.type in ("Placeholder", "PlaceholderWithDefault")


def is_tensor(x) -> bool:
    return isinstance(x, (Tensor, variables_lib.Variable))


def is_keras_tensor(x) -> bool:
    if not is_tensor(x):
        raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a "
                         "symbolic tensor instance.")
    return hasattr(x, "_keras_history")


def variable(value, dtype=None, name=None, constraint=None):
    """A variable holding `value` (floatx unless `dtype`), initialized by `get_session`."""
    value = np.asarray(value, dtype=dtypes.as_dtype(dtype or floatx()).as_numpy_dtype)
    v = variables_lib.Variable(value, name=name, constraint=constraint)
    v._keras_shape = value.shape
    return v


def constant(value, dtype=None, shape=None, name=None):
    return constant_op.constant(value, dtype=dtypes.as_dtype(dtype or floatx()), shape=shape,
                                name=name)


def zeros(shape, dtype=None, name=None):
    return variable(np.zeros(shape), dtype, name)


def ones(shape, dtype=None, name=None):
    return variable(np.ones(shape), dtype, name)


def eye(size, dtype=None, name=None):
    return variable(np.eye(size), dtype, name)


def zeros_like(x, dtype=None, name=None):
    return array_ops.zeros_like(x, dtype=dtype, name=name)


def ones_like(x, dtype=None, name=None):
    return array_ops.ones_like(x, dtype=dtype, name=name)


def count_params(x) -> int:
    return int(np.prod(int_shape(x)))


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return random_ops.random_normal(shape, mean, stddev, dtype=dtypes.as_dtype(dtype or floatx()),
                                    seed=seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return random_ops.random_uniform(shape, minval, maxval,
                                     dtype=dtypes.as_dtype(dtype or floatx()), seed=seed)


def eval(x):  # noqa: A001 - Keras's name
    """The value of a tensor or variable, run in the Keras session."""
    return get_session().run(x)


def get_value(x):
    return get_session().run(x)


def batch_get_value(tensors) -> list:
    return get_session().run(list(tensors)) if tensors else []


def _assign_op(x):
    """A cached (placeholder, assign op) pair that sets variable `x`."""
    cache = _state()["assign"]
    if x not in cache:
        with graph_lib.name_scope(None):
            p = array_ops.placeholder(x.dtype.base_dtype, shape=x.shape)
            cache[x] = (p, state_ops.assign(x, p))
    return cache[x]


def set_value(x, value) -> None:
    batch_set_value([(x, value)])


def batch_set_value(tuples) -> None:
    """Sets each variable of the (variable, value) pairs in one session run."""
    if not tuples:
        return
    feeds, ops = {}, []
    for x, value in tuples:
        p, op = _assign_op(x)
        feeds[p] = np.asarray(value, dtype=x.dtype.base_dtype.as_numpy_dtype)
        ops.append(op)
    get_session().run(ops, feed_dict=feeds)


def update(x, new_x):
    return state_ops.assign(x, new_x)


def update_add(x, increment):
    return state_ops.assign_add(x, increment)


def update_sub(x, decrement):
    return state_ops.assign_sub(x, decrement)


class GraphFunction:
    """`K.function`: runs `outputs` (and `updates`) in the Keras session for a list of
    input values."""

    def __init__(self, inputs, outputs, updates=None, name=None, **session_kwargs):
        del name
        self.inputs, self.outputs = list(inputs), list(outputs)
        from tensorflux.control_flow import builders

        with graph_lib.control_dependencies(self.outputs):
            ups = [u[0].assign(u[1]) if isinstance(u, tuple) else u for u in (updates or [])]
            self.update_op = builders.group(*ups) if ups else None
        self.feed_dict = session_kwargs.pop("feed_dict", None) or {}
        self.fetches = session_kwargs.pop("fetches", []) or []
        if session_kwargs:
            raise ValueError(f"Invalid argument {sorted(session_kwargs)[0]} passed to "
                             "K.function")

    def __call__(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise TypeError("`inputs` should be a list or tuple.")
        feeds = dict(self.feed_dict)
        for t, v in zip(self.inputs, inputs, strict=True):
            feeds[t] = v
        fetches = self.outputs + ([self.update_op] if self.update_op is not None else [])
        out = get_session().run(fetches + list(self.fetches), feed_dict=feeds)
        return out[:len(self.outputs)]


def function(inputs, outputs, updates=None, name=None, **kwargs):
    return GraphFunction(inputs, outputs, updates=updates, name=name, **kwargs)


def gradients(loss, variables):
    return _gradients_lib.gradients(loss, variables)


def stop_gradient(variables):
    if isinstance(variables, (list, tuple)):
        return [array_ops.stop_gradient(v) for v in variables]
    return array_ops.stop_gradient(variables)


# ---- shapes and types ------------------------------------------------------------------
def shape(x):
    return array_ops.shape(x)


def int_shape(x):
    """The static shape as a tuple of ints and None (None for an unknown rank)."""
    if hasattr(x, "_keras_shape"):
        return tuple(x._keras_shape)
    s = x.shape if hasattr(x, "shape") else convert_to_tensor(x).shape
    if hasattr(s, "as_list"):
        return None if s.ndims is None else tuple(s.as_list())
    return tuple(s)


def ndim(x):
    s = int_shape(x)
    return None if s is None else len(s)


def dtype(x) -> str:
    return x.dtype.base_dtype.name


def cast(x, dtype):  # noqa: A002
    return math_ops.cast(x, dtypes.as_dtype(dtype))


def cast_to_floatx(x):
    return np.asarray(x, dtype=floatx())


def reshape(x, shape):  # noqa: A002
    return array_ops.reshape(x, shape)


def permute_dimensions(x, pattern):
    return array_ops.transpose(x, perm=list(pattern))


def transpose(x):
    return array_ops.transpose(x)


def expand_dims(x, axis=-1):
    return array_ops.expand_dims(x, axis)


def squeeze(x, axis):
    return array_ops.squeeze(x, [axis])


def flatten(x):
    return array_ops.reshape(x, [-1])


def batch_flatten(x):
    return array_ops.reshape(x, joining_ops.stack([-1, reduction_ops.reduce_prod(
        array_ops.shape(x)[1:])]))


def concatenate(tensors, axis=-1):
    if axis < 0:
        rank = ndim(tensors[0])
        axis = axis % rank if rank else 0
    return joining_ops.concat(list(tensors), axis)


def stack(x, axis=0):
    return joining_ops.stack(x, axis=axis)


def tile(x, n):
    return joining_ops.tile(x, [n] if isinstance(n, int) else n)


def repeat(x, n):
    """[batch, dim] -> [batch, n, dim]."""
    return joining_ops.tile(array_ops.expand_dims(x, 1), [1, n, 1])


def gather(reference, indices):
    from tensorflux.ops import gather_ops

    return gather_ops.gather(reference, indices)


def one_hot(indices, num_classes):
    from tensorflux.ops import gather_ops

    return gather_ops.one_hot(indices, depth=num_classes, axis=-1)


# ---- arithmetic ------------------------------------------------------------------------
def dot(x, y):
    """A matrix product; for rank > 2 operands, over x's last and y's second-last axis."""
    if ndim(x) is not None and ndim(x) > 2 or ndim(y) is not None and ndim(y) > 2:
        from tensorflux.ops import math_ext_ops

        return math_ext_ops.tensordot(x, y, [[ndim(x) - 1], [ndim(y) - 2]])
    return matrix_ops.matmul(x, y)


def batch_dot(x, y, axes=None):
    """Per batch entry, the dot product of x and y over `axes` (default: x's last and y's
    second-last for rank-3, last and last for rank-2)."""
    if isinstance(axes, int):
        axes = (axes, axes)
    nx, ny = ndim(x), ndim(y)
    if axes is None:
        axes = (nx - 1, ny - 2 if ny > 2 else ny - 1)
    ax, ay = (a % n for a, n in zip(axes, (nx, ny), strict=True))
    if nx == 2 and ny == 2:
        return reduction_ops.reduce_sum(x * y, axis=ax, keepdims=True) if ax == ay else \
            reduction_ops.reduce_sum(x * array_ops.transpose(y), axis=1, keepdims=True)
    xs = x if ax == nx - 1 else array_ops.transpose(x, [0] + [i for i in range(1, nx)
                                                           if i != ax] + [ax])
    ys = y if ay == 1 else array_ops.transpose(y, [0, ay] + [i for i in range(1, ny)
                                                            if i != ay])
    if nx == 2:
        xs = array_ops.expand_dims(xs, 1)
    if ny == 2:
        ys = array_ops.expand_dims(ys, 2)
    out = matrix_ops.matmul(xs, ys)
    if nx == 2:
        out = array_ops.squeeze(out, [1])
    if ny == 2:
        out = array_ops.squeeze(out, [-1])
    return out


def _reduce(fn):
    def reduce(x, axis=None, keepdims=False):
        return fn(x, axis=axis, keepdims=keepdims)

    return reduce


sum = _reduce(reduction_ops.reduce_sum)  # noqa: A001 - Keras's names


def mean(x, axis=None, keepdims=False):
    """reduce_mean; a bool tensor is cast to floatx first (Keras's mean of K.equal)."""
    x = convert_to_tensor(x)
    if x.dtype.base_dtype == dtypes.bool:
        x = math_ops.cast(x, floatx())
    return reduction_ops.reduce_mean(x, axis=axis, keepdims=keepdims)


max = _reduce(reduction_ops.reduce_max)  # noqa: A001
min = _reduce(reduction_ops.reduce_min)  # noqa: A001
prod = _reduce(reduction_ops.reduce_prod)


def var(x, axis=None, keepdims=False):
    m = reduction_ops.reduce_mean(x, axis=axis, keepdims=True)
    return reduction_ops.reduce_mean(unary_ops.square(x - m), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return unary_ops.sqrt(var(x, axis, keepdims))


def any(x, axis=None, keepdims=False):  # noqa: A001
    return reduction_ops.reduce_any(math_ops.cast(x, dtypes.bool), axis=axis, keepdims=keepdims)


def all(x, axis=None, keepdims=False):  # noqa: A001
    return reduction_ops.reduce_all(math_ops.cast(x, dtypes.bool), axis=axis, keepdims=keepdims)


def argmax(x, axis=-1):
    return reduction_ops.argmax(x, axis)


def argmin(x, axis=-1):
    return reduction_ops.argmin(x, axis)


square, sqrt, abs, exp, log, sign = (unary_ops.square, unary_ops.sqrt, unary_ops.abs,  # noqa: A001
                                     unary_ops.exp, unary_ops.log, unary_ops.sign)
maximum, minimum = math_ops.maximum, math_ops.minimum
equal, not_equal = comparison_ops.equal, comparison_ops.not_equal
greater, less = comparison_ops.greater, comparison_ops.less


def pow(x, a):  # noqa: A001
    return math_ops.pow(x, a)


def round(x):  # noqa: A001
    return unary_ops.round(x)


def clip(x, min_value, max_value):
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return clip_ops.clip_by_value(x, min_value, max_value)


def l2_normalize(x, axis=None):
    return nn_impl.l2_normalize(x, axis=axis)


def dropout(x, level, noise_shape=None, seed=None):
    return nn_impl.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


# ---- activations and losses ------------------------------------------------------------
def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """max(x, 0) with a slope `alpha` below `threshold` and a cap `max_value`."""
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return nn_ops.relu(x)
    negative = nn_ops.relu(-x + threshold) if alpha != 0.0 else None
    if threshold != 0.0:
        x = x * math_ops.cast(comparison_ops.greater(x, threshold), x.dtype)
    else:
        x = nn_ops.relu(x)
    if max_value is not None:
        x = clip_ops.clip_by_value(x, 0.0, max_value)
    if negative is not None:
        x = x - alpha * negative
    return x


def elu(x, alpha=1.0):
    out = nn_ops.elu(x)
    return out if alpha == 1 else comparison_ops.where(x > 0, out, alpha * out)


def softmax(x, axis=-1):
    return nn_ops.softmax(x, axis=axis)


def sigmoid(x):
    return unary_ops.sigmoid(x)


def hard_sigmoid(x):
    """clip(0.2 x + 0.5, 0, 1), Keras 2's piecewise-linear sigmoid."""
    return clip_ops.clip_by_value(x * 0.2 + 0.5, 0.0, 1.0)


def tanh(x):
    return unary_ops.tanh(x)


def softplus(x):
    return nn_ops.softplus(x)


def softsign(x):
    return x / (unary_ops.abs(x) + 1.0)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """-sum(target * log(output)) over `axis`; `output` probabilities (renormalized and
    clipped to [eps, 1 - eps]) or logits."""
    if from_logits:
        return nn_impl.softmax_cross_entropy_with_logits_v2(labels=target, logits=output,
                                                            axis=axis)
    output = output / reduction_ops.reduce_sum(output, axis, keepdims=True)
    output = clip_ops.clip_by_value(output, _EPSILON, 1.0 - _EPSILON)
    return -reduction_ops.reduce_sum(target * unary_ops.log(output), axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """The categorical cross-entropy with integer class labels `target`."""
    if axis not in (-1, ndim(output) - 1):
        output = array_ops.transpose(output, [i for i in range(ndim(output)) if i != axis]
                                     + [axis % ndim(output)])
    if not from_logits:
        output = unary_ops.log(clip_ops.clip_by_value(output, _EPSILON, 1.0 - _EPSILON))
    target = math_ops.cast(target, dtypes.int64)
    out_shape = array_ops.shape(output)[:-1]
    logits = array_ops.reshape(output, joining_ops.stack([-1, array_ops.shape(output)[-1]]))
    labels = array_ops.reshape(target, [-1])
    loss = nn_impl.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    res = array_ops.reshape(loss, out_shape)
    if output.shape.ndims is not None:
        res.set_shape(output.shape[:-1])
    return res


def binary_crossentropy(target, output, from_logits=False):
    """Elementwise -(t log(p) + (1 - t) log(1 - p)), p clipped to [eps, 1 - eps]."""
    if from_logits:
        return nn_impl.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    output = clip_ops.clip_by_value(output, _EPSILON, 1.0 - _EPSILON)
    return -(target * unary_ops.log(output + _EPSILON)
             + (1.0 - target) * unary_ops.log(1.0 - output + _EPSILON))
