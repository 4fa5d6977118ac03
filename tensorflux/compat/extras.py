"""TF1 top-level names that are aliases, constants or thin helpers over what tensorflux
already has (`tf.op_scope`, `tf.dimension_value`, `tf.OpError`, ...)."""

from __future__ import annotations

import contextlib
import enum
import inspect as _inspect
import os as _os
from types import SimpleNamespace as _SimpleNamespace

from tensorflux.autodiff.custom_gradient import custom_gradient as _custom_gradient
from tensorflux.control_flow import nest  # tf.nest (tensorflux/control_flow/nest.py)
from tensorflux.framework import errors as _errors
from tensorflux.framework import graph as _graph_lib
from tensorflux.framework.common_shapes import constant_value as _constant_value
from tensorflux.framework.dtypes import QUANTIZED_DTYPES
from tensorflux.framework.operation import Tensor as _Tensor
from tensorflux.framework.sparse_tensor import SparseTensor as _SparseTensor
from tensorflux.framework.tensor_conversion import convert_to_tensor as _convert_to_tensor
from tensorflux.framework.tensor_shape import Dimension, as_shape, dimension_value
from tensorflux.ops import array_ops, comparison_ops
from tensorflux.ops import logging_ops as _logging_ops
from tensorflux.protos.meta_graph_pb2 import MetaGraphDef, TensorInfo
from tensorflux.variables import variable_scope as _variable_scope
from tensorflux.variables import variables as _variables

__all__ = ["CXX11_ABI_FLAG", "CXX_VERSION", "MONOLITHIC_BUILD", "QUANTIZED_DTYPES", "OpError",
           "MetaGraphDef", "TensorInfo", "UnconnectedGradients",
           "dimension_value", "dimension_at_index", "op_scope", "variable_op_scope",
           "get_static_value", "assert_variables_initialized",
           "convert_to_tensor_or_sparse_tensor", "is_symbolic_tensor", "grad_pass_through",
           "recompute_grad", "nest", "sysconfig", "resource_loader"]

CXX11_ABI_FLAG = 0
CXX_VERSION = 0
MONOLITHIC_BUILD = 0
OpError = _errors.OpError


class UnconnectedGradients(enum.Enum):
    """What tf.gradients gives for an x that y does not depend on."""

    NONE = "none"
    ZERO = "zero"


def dimension_at_index(shape, index):
    """The Dimension at `index` of `shape` (unknown when the rank is)."""
    shape = as_shape(shape)
    if shape.ndims is None:
        return Dimension(None)
    return shape.dims[index] if isinstance(shape.dims[index], Dimension) else \
        Dimension(shape.dims[index])


@contextlib.contextmanager
def op_scope(values, name, default_name=None):
    """TF1's deprecated `tf.op_scope(values, name, default_name)`: a name scope."""
    with _graph_lib.name_scope(name, default_name, values) as scope:
        yield scope


@contextlib.contextmanager
def variable_op_scope(values, name_or_scope, default_name=None, initializer=None,
                      regularizer=None, caching_device=None, partitioner=None,
                      custom_getter=None, reuse=None, dtype=None, use_resource=None,
                      constraint=None):
    """TF1's deprecated `tf.variable_op_scope`: a variable scope over `values`."""
    with _variable_scope.variable_scope(name_or_scope, default_name=default_name,
                                        values=values, initializer=initializer,
                                        regularizer=regularizer, reuse=reuse,
                                        dtype=dtype) as scope:
        yield scope


def get_static_value(tensor, partial=False):
    """The value of `tensor` computable without running a graph, else None."""
    if not hasattr(tensor, "op"):
        return tensor
    return _constant_value(tensor)


def assert_variables_initialized(var_list=None):
    """An op that fails at run time while any of `var_list` (default: all global
    variables) is uninitialized (`tf.assert_variables_initialized`)."""
    var_list = _variables.global_variables() if var_list is None else var_list
    with _graph_lib.name_scope("assert_variables_initialized"):
        uninit = _variables.report_uninitialized_variables(var_list)
        ok = comparison_ops.equal(array_ops.size(uninit), 0)
        return _logging_ops.Assert(ok, [uninit], name="assert")


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    """A SparseTensor as it is, anything else through convert_to_tensor."""
    if isinstance(value, _SparseTensor):
        return value
    return _convert_to_tensor(value, dtype=dtype, name=name)


def is_symbolic_tensor(tensor) -> bool:
    """True for a graph tensor (every tensorflux Tensor is one: there is no eager mode)."""
    return isinstance(tensor, _Tensor)


def grad_pass_through(f):
    """`tf.grad_pass_through(f)`: a function computing f(x) in the forward pass whose
    gradient is the identity (the incoming gradient passes through unchanged)."""

    def wrapped(*args):
        @_custom_gradient
        def identity_grad(*xs):
            y = f(*xs)
            return y, (lambda dy: dy if len(xs) == 1 else [dy] * len(xs))

        return identity_grad(*args)

    return wrapped


def recompute_grad(f):
    """`tf.recompute_grad(f)`: f itself (the same values and gradients; tensorflux keeps
    the forward activations instead of recomputing them)."""
    return f


sysconfig = _SimpleNamespace(
    get_include=lambda: _os.path.join(_os.path.dirname(_os.path.dirname(__file__)), "include"),
    get_lib=lambda: _os.path.dirname(_os.path.dirname(__file__)),
    get_compile_flags=lambda: [], get_link_flags=lambda: [],
    get_build_info=lambda: {"is_cuda_build": False, "is_rocm_build": False})
"""`tf.sysconfig`: where tensorflux lives (it builds no C++ custom-op libraries)."""


resource_loader = _SimpleNamespace(
    get_data_files_path=lambda: _os.path.dirname(_os.path.abspath(
        _inspect.stack()[1].filename)),
    get_path_to_datafile=lambda path: _os.path.join(_os.path.dirname(_os.path.abspath(
        _inspect.stack()[1].filename)), path),
    get_root_dir_with_all_resources=lambda: _os.path.dirname(_os.path.dirname(__file__)),
    readahead_file_path=lambda path, readahead="128M": path)
"""`tf.resource_loader`: paths of data files beside the calling module."""
