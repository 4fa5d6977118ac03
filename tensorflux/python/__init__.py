"""`tensorflux.python`: TensorFlow's internal module paths, for TF1 programs that import
them (`from tensorflow.python.framework import ops`, `from tensorflow.python.ops import
math_ops, array_ops`, `from tensorflow.python.client import device_lib`, ...), as
tutorials often do.

These are not copies of TensorFlow's internals. `tensorflux.python.<package>.<module>` is a
module made on import (`_Finder` below) whose attributes are looked up, in order, in:

1. `_EXTRA[path]`: names this package defines for that path, then `_FIRST[path]`'s modules
   (where a public namespace would give another function of the same name) (device_lib's
   `list_local_devices`, `ops.reset_default_graph`, ...); in `ops.gen_*_ops`, TensorFlow's
   generated op wrappers (`gen_nn_ops.conv2d(input, filter, strides, padding)`: the op's
   inputs then its attrs, `tf.raw_ops.generated_wrapper`);
2. the public namespaces that hold such names in TF1 (`_PUBLIC[package]`: `tf`, then
   `tf.nn`, `tf.math`, ...), so `math_ops.floor` is `tf.floor` and `ops.name_scope` is
   `tf.name_scope`;
3. tensorflux's own module of that name (`_INTERNAL`), e.g. `framework.tensor_shape`
   (`tensor_shape.scalar()`), `ops.init_ops`, `training.moving_averages`;
4. in any `ops.*_ops` module, the generated op wrappers as in 1. (TF's `io_ops`, `array_ops`,
   ... import their `gen_*_ops` wholesale: `io_ops.restore_v2`).

A name found nowhere raises AttributeError naming the module, as a missing attribute does.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys

_PREFIX = __name__ + "."

# package -> public namespaces searched (after the top level `tensorflux`).
_PUBLIC = {
    "framework": ["tensorflux.dtypes", "tensorflux.errors", "tensorflux.graph_util"],
    "ops": ["tensorflux.nn", "tensorflux.math", "tensorflux.linalg", "tensorflux.random",
            "tensorflux.image", "tensorflux.strings", "tensorflux.sparse", "tensorflux.io",
            "tensorflux.debugging", "tensorflux.nn.rnn_cell", "tensorflux.initializers",
            "tensorflux.sets", "tensorflux.bitwise", "tensorflux.signal"],
    "training": ["tensorflux.train"],
    "platform": ["tensorflux.logging", "tensorflux.gfile", "tensorflux.flags",
                 "tensorflux.test", "tensorflux.app"],
    "client": [],
    "layers": ["tensorflux.layers"],
    "summary": ["tensorflux.summary"],
    "saved_model": ["tensorflux.saved_model"],
    "util": ["tensorflux.compat"],
    "data": ["tensorflux.data"],
    "keras": ["tensorflux.keras"],
    "estimator": ["tensorflux.estimator", "tensorflux.estimator.export"],
    "lib": ["tensorflux.io"],
    "pywrap_tensorflow": ["tensorflux.train", "tensorflux.errors"],  # a module, not a package
    "eager": [],
    "tools": [],
}

# Top-level names under tensorflow.python that are modules (their names are attributes).
_FLAT = {"pywrap_tensorflow"}

# module path (under tensorflux.python) -> tensorflux modules searched after the public
# namespaces (their own functions and classes, TF's spelling where it differs).
_INTERNAL = {
    "framework.ops": ["tensorflux.framework.graph", "tensorflux.framework.operation",
                      "tensorflux.framework.tensor_conversion",
                      "tensorflux.framework.op_registry", "tensorflux.framework.meta_graph"],
    "framework.tensor_util": ["tensorflux.framework.tensor_util",
                              "tensorflux.framework.common_shapes"],
    "framework.errors_impl": ["tensorflux.errors"],
    "framework.sparse_tensor": ["tensorflux.sparse"],
    "framework.random_seed": ["tensorflux.random"],
    "ops.variable_scope": ["tensorflux.variables.variable_scope"],
    "ops.variables": ["tensorflux.variables.variables"],
    "ops.init_ops": ["tensorflux.variables.init_ops"],
    "ops.partitioned_variables": ["tensorflux.variables.partitioned_variables"],
    "ops.lookup_ops": ["tensorflux.lookup.lookup_ops", "tensorflux.lookup"],
    "ops.rnn": ["tensorflux.nn"],
    "ops.rnn_cell": ["tensorflux.nn.rnn_cell"],
    "ops.rnn_cell_impl": ["tensorflux.nn.rnn_cell"],
    "ops.gradients": ["tensorflux"],
    "ops.gradients_impl": ["tensorflux"],
    "platform.tf_logging": ["tensorflux.platform.tf_logging"],
    "platform.gfile": ["tensorflux.gfile"],
    "platform.flags": ["tensorflux.platform.flags"],
    "platform.app": ["tensorflux.platform.app"],
    "client.session": ["tensorflux.runtime.session"],
    "util.nest": ["tensorflux.control_flow.nest"],
    "util.tf_contextlib": ["contextlib"],  # TF wraps the standard library's
    "util.tf_inspect": ["inspect"],
    "layers.utils": ["tensorflux.layers.base"],
    "framework.smart_cond": ["tensorflux.layers.base"],
    "framework.function": ["tensorflux.autodiff.defun"],
    "ops.op_selector": ["tensorflux.framework.op_selector"],
    "tools.optimize_for_inference_lib": ["tensorflux.graph_util.inference"],
}

# module path -> tensorflux modules searched before the public namespaces, where a public
# namespace holds another function of the same name (tf.sparse.merge is not
# control_flow_ops.merge, the Merge op that slim's apply_with_random_selector calls).
_FIRST = {
    "ops.control_flow_ops": ["tensorflux.ops.control_flow_ops",
                             "tensorflux.control_flow.builders"],
}

# Where a package's module of the same name may live inside tensorflux.
_HOMES = {"framework": ["framework"], "ops": ["ops", "nn", "variables", "control_flow"],
          "training": ["train"], "platform": ["platform"], "layers": ["layers"],
          "summary": ["summary"], "saved_model": ["saved_model"], "data": ["data"],
          "client": ["runtime", "client"], "keras": ["keras"], "estimator": ["estimator"]}


def _reset_default_graph():
    from tensorflux import reset_default_graph

    reset_default_graph()


def _list_local_devices(session_config=None):
    """The devices a session would have here, as DeviceAttributes protos (TF's
    device_lib.list_local_devices)."""
    from tensorflux.protos import device_attributes_pb2
    from tensorflux.runtime import device as device_lib

    out = []
    for d in device_lib.make_local_devices(session_config):
        proto = device_attributes_pb2.DeviceAttributes(
            name="/device:" + d.name.rpartition("/device:")[2], device_type=d.device_type,
            memory_limit=d.memory_limit or 0, incarnation=d.incarnation)
        out.append(proto)
    return out


def _make_decorator(target, decorator_func, decorator_name=None, decorator_doc="",
                    decorator_argspec=None):
    """TF's tf_decorator.make_decorator: `decorator_func` dressed as `target` (name, doc,
    module, `__wrapped__`), as functools.update_wrapper does."""
    del decorator_name, decorator_doc, decorator_argspec
    functools.update_wrapper(decorator_func, target)
    return decorator_func


def _unwrap(maybe_decorated):
    """TF's tf_decorator.unwrap: (the decorators found, the innermost function)."""
    found = []
    while hasattr(maybe_decorated, "__wrapped__"):
        found.append(maybe_decorated)
        maybe_decorated = maybe_decorated.__wrapped__
    return found, maybe_decorated


def _in_graph_mode() -> bool:
    return True


def _executing_eagerly() -> bool:
    return False


def _variable(*args, **kwargs):
    """TF's variable_scope.variable: a TF1 `tf.Variable`."""
    import tensorflux as tf

    return tf.Variable(*args, **kwargs)


def _shape_internal(input, name=None, optimize=True, out_type=None):  # noqa: A002 - TF's
    """TF's array_ops.shape_internal: `tf.shape`, a Const when `optimize` and the static
    shape is fully defined (a SparseTensor's dense_shape)."""
    import tensorflux as tf

    out_type = out_type or tf.int32
    with tf.name_scope(name, "Shape", [input]) as scope:
        if isinstance(input, tf.SparseTensor):
            return tf.cast(input.dense_shape, out_type)
        input = tf.convert_to_tensor(input)
        if optimize and input.shape.is_fully_defined():
            return tf.constant(input.shape.as_list(), out_type, name=scope)
        return tf.shape(input, name=scope, out_type=out_type)


def _tensor_shape_tensor_conversion_function(s, dtype=None, name=None, as_ref=False):
    """TF's constant_op conversion of a fully defined TensorShape to an int32 (or `dtype`)
    tensor named `shape_as_tensor`."""
    import tensorflux as tf

    del as_ref
    if not s.is_fully_defined():
        raise ValueError(f"Cannot convert a partially known TensorShape {s} to a Tensor.")
    return tf.constant(s.as_list(), dtype=dtype or tf.int32, name=name or "shape_as_tensor")


# tensorflow.python.eager.context: tensorflux builds graphs only (no eager context).
_EAGER_CONTEXT = {
    "executing_eagerly": _executing_eagerly,
    "in_eager_mode": _executing_eagerly,
    "in_graph_mode": _in_graph_mode,
    "graph_mode": contextlib.nullcontext,
    "GRAPH_MODE": 0,
    "EAGER_MODE": 1,
}

ArgSpec = collections.namedtuple("ArgSpec", ["args", "varargs", "keywords", "defaults"])


def _partial_argspec(target: functools.partial) -> ArgSpec:
    """A partial's arguments: the function's less those bound by position, the keywords it
    binds as defaults (which all later arguments must then have too)."""
    spec = _getargspec(target.func)
    args = spec.args[len(target.args):]
    given = dict(zip(spec.args[len(spec.args) - len(spec.defaults or ()):],
                     spec.defaults or (), strict=True))
    given.update(target.keywords)
    first = next((i for i, a in enumerate(args) if a in given), len(args))
    missing = [a for a in args[first:] if a not in given]
    if missing:
        raise ValueError(f"{target} has some keyword-only arguments, which are not "
                         f"supported: {missing}.")
    defaults = tuple(given[a] for a in args[first:])
    return ArgSpec(args, spec.varargs, spec.keywords, defaults or None)


def _getargspec(target) -> ArgSpec:
    """TF's tf_inspect.getargspec (the Python 2 `inspect.getargspec`, gone from Python 3.11):
    keyword-only arguments are listed after the others, their defaults after theirs;
    partials show what is left to pass; classes and callable objects their `__init__` and
    `__call__`, `self` included."""
    if isinstance(target, functools.partial):
        return _partial_argspec(target)
    if isinstance(target, type):
        target = target.__init__
    elif not callable(target) or not (inspect.isroutine(target) or inspect.isbuiltin(target)):
        target = type(target).__call__
    full = inspect.getfullargspec(target)
    defaults = tuple(full.defaults or ())
    defaults += tuple(full.kwonlydefaults[a] for a in full.kwonlyargs
                      if a in (full.kwonlydefaults or {}))
    return ArgSpec(full.args + full.kwonlyargs, full.varargs, full.varkw, defaults or None)


_EXTRA = {
    "framework.ops": {"reset_default_graph": _reset_default_graph},
    "ops.array_ops": {"shape_internal": _shape_internal},
    "ops.variable_scope": {"variable": _variable},
    "framework.constant_op": {"_tensor_shape_tensor_conversion_function":
                              _tensor_shape_tensor_conversion_function},
    "client.device_lib": {"list_local_devices": _list_local_devices},
    "util.tf_decorator": {"make_decorator": _make_decorator, "unwrap": _unwrap},
    "util.tf_inspect": {"getargspec": _getargspec, "ArgSpec": ArgSpec},
    "eager.context": _EAGER_CONTEXT,
}


def _sources(path: str) -> list[str]:
    package, _, module = path.partition(".")
    names = _FIRST.get(path, []) + ["tensorflux"] + _PUBLIC.get(package, [])
    names += _INTERNAL.get(path, [])
    for home in _HOMES.get(package, []):
        names.append(f"tensorflux.{home}.{module}")
    return names


def _home_submodule(path: str, name: str):
    """tensorflux's own submodule `name` of the module at `path`, if there is one
    (`from tensorflow.python.keras.utils import np_utils`: tensorflux.keras.utils.np_utils)."""
    package, _, module = path.partition(".")
    for home in _HOMES.get(package, []):
        target = f"tensorflux.{home}.{module}.{name}"
        try:
            return importlib.import_module(target)
        except ModuleNotFoundError as e:
            if not target.startswith(e.name or ""):
                raise  # the submodule exists but its own import failed
    return None


def _module_getattr(path: str):
    extra = _EXTRA.get(path, {})

    def __getattr__(name: str):  # noqa: N807 - the module hook's name
        if name.startswith("__"):
            raise AttributeError(name)
        if name in extra:
            return extra[name]
        if "." not in path and path not in _FLAT:  # a package's names are its modules
            return importlib.import_module(f"{_PREFIX}{path}.{name}")
        if path.startswith("ops.gen_"):  # TF's generated op wrappers
            from tensorflux import raw_ops

            wrapper = raw_ops.generated_wrapper(name)
            if wrapper is not None:
                return wrapper
        for source in _sources(path):
            try:
                module = importlib.import_module(source)
            except ImportError:
                continue
            if hasattr(module, name):
                return getattr(module, name)
        if path.startswith("ops.") and path.endswith("_ops"):  # TF's *_ops modules
            # also hold their gen_*_ops' names
            from tensorflux import raw_ops

            wrapper = raw_ops.generated_wrapper(name)
            if wrapper is not None:
                return wrapper
        submodule = _home_submodule(path, name)
        if submodule is not None:
            return submodule
        raise AttributeError(f"module 'tensorflux.python.{path}' has no attribute '{name}' "
                             f"(tensorflux maps TensorFlow's internal modules onto its own "
                             f"API: this name has no counterpart)")

    return __getattr__


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module) -> None:
        path = module.__name__[len(_PREFIX):]
        if "." not in path and path not in _FLAT:  # a package: framework, ops, ...
            module.__path__ = []
        module.__getattr__ = _module_getattr(path)
        module.__doc__ = (f"TensorFlow's internal module tensorflow.python.{path}, mapped "
                          f"onto tensorflux (see tensorflux/python/__init__.py).")


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        rest = fullname[len(_PREFIX):].split(".")
        if len(rest) > 2 or rest[0] not in _PUBLIC:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(),
                                              is_package=len(rest) == 1 and
                                              rest[0] not in _FLAT)


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.append(_Finder())

__all__: list[str] = []
