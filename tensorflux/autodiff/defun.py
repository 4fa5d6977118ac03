"""`tensorflow.python.framework.function.Defun`: TF1's decorator defining a graph function
of declared input types, often used to give a computation its own gradient
(`python_grad_func`) or to build it once per dtype.

tensorflux builds the body where the function is called (no FunctionDef and call op): the
arguments are converted to the declared dtypes, pass through one IdentityN (the function's
inputs) in a name scope of the function's name, and the body's ops follow. The values, and
the gradients `tf.gradients` computes through the body, are those of TF's call op. With
`python_grad_func(op, *grads)` (or `grad_func`, a Defun of the inputs then the output
gradients) the results pass through an IdentityN whose gradient calls it instead, `op`
standing for the call: its `inputs`, `outputs`, `type` (the function's name) and `name`.
Unlike TF's call op, the results keep the static shapes the body gives them.
"""

from __future__ import annotations

import itertools

from tensorflux.framework import dtypes, op_registry
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops import array_ops

__all__ = ["Defun"]

_ids = itertools.count()


class Defun:
    """`@Defun(*input_types, func_name=None, grad_func=None, python_grad_func=None,
    out_names=None, shape_func=None)`: decorates a Python function (see the module doc).

    With no input types the function takes the dtypes of whatever it is called with."""

    def __init__(self, *input_types, **kwargs):
        self._input_types = tuple(dtypes.as_dtype(t) for t in input_types)
        self._func_name = kwargs.pop("func_name", None)
        self._grad_func = kwargs.pop("grad_func", None)
        self._python_grad_func = kwargs.pop("python_grad_func", None)
        self._out_names = kwargs.pop("out_names", None)
        self._shape_func = kwargs.pop("shape_func", None)
        self._extra_kwargs = kwargs  # attrs (noinline, ...): no meaning when inlined

    def __call__(self, func):
        if not callable(func):
            raise ValueError(f"function {func} must be callable")
        return _DefinedFunction(func, self._input_types,
                                self._func_name or func.__name__, self._grad_func,
                                self._python_grad_func, self._out_names, self._shape_func)


class _CallOp:
    """What a `python_grad_func` receives as the call op."""

    def __init__(self, type_: str, name: str, inputs: list, outputs: list, graph):
        self.type, self.name, self.graph = type_, name, graph
        self.inputs, self.outputs = inputs, outputs


class _DefinedFunction:
    """A Defun-decorated function: calling it builds its body (see the module doc)."""

    def __init__(self, func, input_types, name, grad_func, python_grad_func, out_names,
                 shape_func):
        self._func = func
        self._input_types = input_types
        self._name = name
        self._grad_func = grad_func
        self._python_grad_func = python_grad_func
        self._out_names = out_names
        self._shape_func = shape_func

    @property
    def name(self) -> str:
        return self._name

    @property
    def declared_input_types(self) -> tuple:
        return self._input_types

    @property
    def python_grad_func(self):
        return self._python_grad_func

    @property
    def grad_func_name(self):
        return getattr(self._grad_func, "name", None)

    @property
    def captured_inputs(self) -> list:
        return []

    def __call__(self, *args, **kwargs):
        name = kwargs.pop("name", None)
        if kwargs:
            raise ValueError(f"Unknown keyword arguments: {sorted(kwargs)}")
        if self._input_types and len(args) != len(self._input_types):
            raise ValueError(f"Expected {len(self._input_types)} arguments, got "
                             f"{len(args)}.")
        types = self._input_types or (None,) * len(args)
        args = [convert_to_tensor(a, dtype=t) for a, t in zip(args, types, strict=True)]
        g = graph_lib.get_default_graph()
        with graph_lib.name_scope(name or self._name) as scope:
            inputs = list(array_ops.identity_n(args, name="inputs")) if args else []
            result = self._func(*inputs)
            single = not isinstance(result, (list, tuple))
            outputs = [convert_to_tensor(t) for t in ([result] if single else result)]
            if self._python_grad_func is not None or self._grad_func is not None:
                outputs = self._with_gradient(g, scope, args, outputs)
            if self._shape_func is not None:
                for t, shape in zip(outputs, self._shape_func(_CallOp(
                        self._name, scope.rstrip("/"), args, outputs, g)), strict=False):
                    t.set_shape(shape)
        if not outputs:
            return None
        return outputs[0] if single or len(outputs) == 1 else tuple(outputs)

    def _with_gradient(self, g, scope: str, args: list, outputs: list) -> list:
        """`outputs` through an IdentityN whose gradient is the function's own."""
        n_out = len(outputs)
        call = _CallOp(self._name, scope.rstrip("/"), args, outputs, g)
        grad_name = f"DefunGradient-{next(_ids)}"

        @op_registry.gradient(grad_name)
        def _grad(op, *grads):
            dys = list(grads[:n_out])
            if self._python_grad_func is not None:
                arg_grads = self._python_grad_func(call, *dys)
            else:
                arg_grads = self._grad_func(*(args + dys))
            if not isinstance(arg_grads, (list, tuple)):
                arg_grads = [arg_grads]
            if len(arg_grads) != len(args):
                raise ValueError(f"The gradient function of {self._name} returned "
                                 f"{len(arg_grads)} gradients for {len(args)} inputs.")
            return [None] * n_out + list(arg_grads)

        with g.gradient_override_map({"IdentityN": grad_name}):
            return list(array_ops.identity_n(outputs + args, name="outputs"))[:n_out]
