"""RNN cells (`tf.nn.rnn_cell.*`), built only from other ops (DESIGN §1).

A cell is a callable `(output, new_state) = cell(inputs, state)` with `state_size` and
`output_size`. The cells here are TensorFlow 1.x's, with the same variable names, shapes,
initializers and gate orders, so that checkpoints line up:

  cell            variables (under the cell's scope, default "<rnn scope>/<snake_name>")
  BasicRNNCell    kernel [in + n, n], bias [n] (zeros)
  GRUCell         gates/kernel [in + n, 2n], gates/bias [2n] (ones), candidate/kernel
                  [in + n, n], candidate/bias [n] (zeros); gates split r, u
  BasicLSTMCell   kernel [in + n, 4n], bias [4n] (zeros); gates split i, j, f, o
  LSTMCell        kernel [in + h, 4n], bias [4n], w_f_diag, w_i_diag, w_o_diag [n]
                  (peepholes), projection/kernel [n, num_proj]; h = num_proj or n
  MultiRNNCell    cell_0/..., cell_1/... inside "multi_rnn_cell"

Scoping follows TF's layer-based cells (tf.layers.Layer): the first call captures the
cell's variable scope, `variable_scope(scope, default_name=<snake class name or name>)`
under the current scope (so two cells in one scope become "basic_lstm_cell" and
"basic_lstm_cell_1"); later calls re-enter that scope with reuse=True, wherever they are
made; ops go to the name scope opened with it. Plain `RNNCell` subclasses (MultiRNNCell,
user cells calling `tf.get_variable` in `call`) first re-enter the variable scope current
at their first call, as TF's `RNNCell.__call__` does; wrappers open no scope of their own.

The small `nest` helpers below (flatten / pack / map over tuples, lists, namedtuples and
dicts) are what the cells and `rnn.py` need of `tf.nest`.
"""

from __future__ import annotations

import collections
import copy
import re

import numpy as np

from tensorflux.control_flow.control_flow_util import flatten, is_nested, map_structure
from tensorflux.framework import common_shapes, dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.graph import GraphKeys
from tensorflux.framework.operation import Tensor
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn import clip_ops
from tensorflux.ops import (
    array_ops,
    constant_op,
    joining_ops,
    math_ops,
    matrix_ops,
    nn_ops,
    slicing_ops,
    unary_ops,
)
from tensorflux.variables import init_ops, partitioned_variables
from tensorflux.variables import variable_scope as vs
from tensorflux.variables.variables import Variable

# The TF1 public names of this module (tf.nn.rnn_cell.*).
__all__ = ["RNNCell", "LayerRNNCell", "BasicRNNCell", "GRUCell", "LSTMStateTuple",
           "BasicLSTMCell", "LSTMCell", "MultiRNNCell"]

_BIAS_VARIABLE_NAME = "bias"
_WEIGHTS_VARIABLE_NAME = "kernel"
ASSERT_LIKE_RNNCELL_ERROR_REGEXP = "is not an RNNCell"


# ---- helpers ------------------------------------------------------------------------------

def _hasattr(obj, attr_name: str) -> bool:
    try:
        getattr(obj, attr_name)
    except AttributeError:
        return False
    return True


def assert_like_rnncell(cell_name: str, cell) -> None:
    """Raises TypeError if `cell` does not look like an RNNCell (TF's check)."""
    conditions = [_hasattr(cell, "output_size"), _hasattr(cell, "state_size"),
                  _hasattr(cell, "get_initial_state") or _hasattr(cell, "zero_state"),
                  callable(cell)]
    errors = ["'output_size' property is missing", "'state_size' property is missing",
              "either 'zero_state' or 'get_initial_state' method is required",
              "is not callable"]
    if not all(conditions):
        missing = [e for e, ok in zip(errors, conditions, strict=True) if not ok]
        raise TypeError(f"The argument {cell_name!r} ({cell}) is not an RNNCell: "
                        f"{', '.join(missing)}.")


def _size_tensor(x):
    """A size given as Tensor, int or shape, as an int32 vector (None if not fully known)."""
    if isinstance(x, Tensor):
        if x.shape.ndims == 0:
            return array_ops.expand_dims(x, 0)
        if x.shape.ndims != 1:
            raise ValueError(f"prefix tensor must be either a scalar or vector, but saw "
                             f"tensor: {x}")
        return x
    shape = tensor_shape.TensorShape(x)
    if not shape.is_fully_defined():
        return None
    return constant_op.constant(shape.as_list(), dtype=dtypes.int32)


def _static_size(x) -> tensor_shape.TensorShape:
    """A size given as Tensor, int or shape, as a TensorShape (unknown rank if not known)."""
    if isinstance(x, Tensor):
        value = common_shapes.constant_value(x)
        if value is None:
            return tensor_shape.TensorShape(None)
        return tensor_shape.TensorShape([int(v) for v in np.reshape(value, -1)])
    return tensor_shape.TensorShape(x)


def _concat(prefix, suffix, static: bool = False):
    """`prefix` + `suffix` (each an int, TensorShape or Tensor) as a shape.

    Returns an int32 vector Tensor, or with `static=True` a list with None for unknown
    dimensions (None when the rank is unknown).

    Raises:
      ValueError: a non-vector size tensor, or a partly unknown size asked for as a Tensor.
    """
    if static:
        shape = _static_size(prefix).concatenate(_static_size(suffix))
        return shape.as_list() if shape.ndims is not None else None
    p, s = _size_tensor(prefix), _size_tensor(suffix)
    if p is None or s is None:
        raise ValueError(f"Provided a prefix or suffix of None: {prefix} and {suffix}")
    return joining_ops.concat((p, s), 0)


def _zero_state_tensors(state_size, batch_size, dtype):
    """Zeros of shape [batch_size] + s for each s in the (nested) `state_size`."""

    def zeros_for(s):
        z = array_ops.zeros(_concat(batch_size, s), dtype=dtype)
        static = _concat(batch_size, s, static=True)
        if static is not None:
            z.set_shape(static)
        return z

    return map_structure(zeros_for, state_size)


def _check_supported_dtypes(dtype) -> None:
    if dtype is None:
        return
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_complex):
        raise ValueError(f"RNN cell only supports floating point inputs, but saw dtype: "
                         f"{dtype}")


def _check_rnn_cell_input_dtypes(inputs) -> None:
    for t in flatten(inputs):
        _check_supported_dtypes(t.dtype)


_ACTIVATIONS = {"tanh": unary_ops.tanh, "sigmoid": unary_ops.sigmoid, "relu": nn_ops.relu,
                "relu6": nn_ops.relu6, "elu": nn_ops.elu, "selu": nn_ops.selu,
                "softplus": nn_ops.softplus, "linear": lambda x: x}


def _get_activation(activation):
    """A callable for `activation` (a callable, a Keras activation name, or None: tanh)."""
    if not activation:
        return unary_ops.tanh
    if callable(activation):
        return activation
    try:
        return _ACTIVATIONS[activation]
    except KeyError:
        raise ValueError(f"Unknown activation function: {activation!r}. Known: "
                         f"{', '.join(sorted(_ACTIVATIONS))}") from None


def _to_snake_case(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return "private" + s if s[0] == "_" else s


_object_uids: collections.Counter = collections.Counter()


def _unique_object_name(base: str) -> str:
    """Keras's per-process layer names: "gru_cell", "gru_cell_1", ..."""
    n = _object_uids[base]
    _object_uids[base] += 1
    return base if n == 0 else f"{base}_{n}"


def _graph_bound(value) -> bool:
    """Whether `value` belongs to a graph (a tensor, a variable, a scope): never copied."""
    return isinstance(value, (Tensor, Variable, vs.VariableScope, vs.variable_scope,
                              graph_lib.Graph))


# ---- the cell base classes ------------------------------------------------------------------

class RNNCell:
    """Abstract object representing an RNN cell (`tf.nn.rnn_cell.RNNCell`).

    Subclasses define `state_size`, `output_size` and `call(inputs, state)` returning
    `(output, new_state)`; variables come from `tf.get_variable` inside `call`, or from
    `add_variable` in `build(inputs_shape)` (see LayerRNNCell).

    Args:
      trainable: whether the cell's variables join TRAINABLE_VARIABLES.
      name: the cell's scope name (default: its class name in snake case).
      dtype: the variables' dtype (default: the first input's).
    """

    def __init__(self, trainable=True, name=None, dtype=None, _reuse=None, _scope=None,
                 **kwargs):
        unknown = set(kwargs) - {"autocast", "input_shape", "batch_input_shape"}
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]!r}")
        self.trainable = trainable
        if name is None or name == "":
            self._base_name = _to_snake_case(type(self).__name__)
            self._name = _unique_object_name(self._base_name)
        else:
            self._base_name = self._name = name
        self._reuse = _reuse
        self._dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
        self._scope = _scope
        self._current_scope = None
        self._rnncell_scope = None
        self.built = False
        self._trainable_weights = []
        self._non_trainable_weights = []

    def __deepcopy__(self, memo):
        """A copy with the same configuration and no graph state: unbuilt, no scope, no
        variables (legacy_seq2seq copies the cell it is given for its encoder, also a cell
        already used by an earlier bucket's model; TensorFlow's copy of a used cell fails on
        its graph's locks). The copy makes or reuses its variables by name when called."""
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            if key in ("_scope", "_current_scope", "_rnncell_scope") or _graph_bound(value):
                value = None
            elif key in ("_trainable_weights", "_non_trainable_weights"):
                value = []
            elif key == "built":
                value = False
            else:
                value = copy.deepcopy(value, memo)
            clone.__dict__[key] = value
        return clone

    # -- properties a subclass defines
    @property
    def state_size(self):
        """Size(s) of the state: an int, a TensorShape or a nested tuple of them."""
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        """Integer or TensorShape: the size of the outputs."""
        raise NotImplementedError("Abstract method")

    def build(self, _):
        """Creates the cell's variables; called once, on the first call."""

    def call(self, inputs, state):
        raise NotImplementedError("Abstract method")

    # -- Layer-like surface
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype.name if self._dtype is not None else None)

    @property
    def scope_name(self) -> str:
        if not self._scope:
            raise ValueError(f'No name available for layer scope because the layer '
                             f'"{self._name}" has not been used yet. The scope name is '
                             f'determined the first time the layer instance is called. You '
                             f'must therefore call the layer before querying `scope_name`.')
        return self._scope.name

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    weights = property(lambda self: self.trainable_weights + self.non_trainable_weights)
    variables = property(lambda self: self.weights)
    trainable_variables = property(lambda self: self.trainable_weights)
    non_trainable_variables = property(lambda self: self.non_trainable_weights)

    def _track(self, variable, trainable: bool) -> None:
        pool = self._trainable_weights if trainable else self._non_trainable_weights
        if all(variable is not v for v in pool):
            pool.append(variable)

    def _rnn_get_variable(self, getter, *args, **kwargs):
        variable = getter(*args, **kwargs)
        trainable = any(variable is v for v in
                        graph_lib.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        self._track(variable, trainable)
        return variable

    # -- calling
    def __call__(self, inputs, state, scope=None):
        """Runs the cell on `inputs` from `state`; returns `(output, new_state)`.

        Args:
          inputs: a `[batch_size, input_size]` tensor (or a nest of them).
          state: a `[batch_size, state_size]` tensor, or a nest of them matching
            `state_size`.
          scope: a variable scope (name or VariableScope) for the cell's variables.
        """
        if scope is not None:
            with vs.variable_scope(scope, custom_getter=self._rnn_get_variable) as scope:
                return self._layer_call(inputs, state, scope=scope)
        if self._rnncell_scope is None:
            self._rnncell_scope = vs.variable_scope(vs.get_variable_scope(),
                                                    custom_getter=self._rnn_get_variable)
        with self._rnncell_scope:
            return self._layer_call(inputs, state)

    def _set_scope(self, scope=None) -> None:
        if self._scope is None:
            if self._reuse:
                with vs.variable_scope(scope if scope is not None else self._base_name) \
                        as captured:
                    self._scope = captured
            else:
                with vs.variable_scope(scope, default_name=self._base_name) as captured:
                    self._scope = captured

    def _layer_call(self, inputs, state, scope=None):
        """tf.layers.Layer.__call__: capture the scope, build once, then `call`."""
        self._set_scope(scope)
        reuse = True if self.built else self._reuse
        with vs.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as cur:
            self._current_scope = cur
            with graph_lib.name_scope(cur.original_name_scope or None):
                if not self.built:
                    first = flatten(inputs)[0]
                    if self._dtype is None and isinstance(first, Tensor):
                        self._dtype = first.dtype.base_dtype
                    self._check_input_spec(inputs)
                    shapes = map_structure(lambda t: convert_to_tensor(t).shape, inputs)
                    self.build(shapes)
                    self.built = True
                return self.call(inputs, state)

    def _check_input_spec(self, inputs) -> None:
        pass

    def add_variable(self, name, shape, dtype=None, initializer=None, trainable=True,
                     partitioner=None, regularizer=None, constraint=None):
        """Gets or creates variable `name` in the cell's scope (tf.layers `add_weight`)."""
        dtype = dtypes.as_dtype(dtype or self._dtype or dtypes.float32)
        self._set_scope(None)
        reuse = self.built or self._reuse
        with vs.variable_scope(self._scope, reuse=reuse or None,
                               auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with graph_lib.name_scope(scope.original_name_scope or None):
                variable = vs.get_variable(
                    name, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, constraint=constraint, partitioner=partitioner,
                    trainable=trainable and self.trainable)
        # A partitioned variable is tracked by its shards, as the collections hold them.
        for part in (variable if partitioner is not None else [variable]):
            self._track(part, trainable and self.trainable)
        return variable

    add_weight = add_variable

    # -- initial states
    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """The zero state for `inputs` (their batch size and dtype), or for the given
        `batch_size` and `dtype`."""
        if inputs is not None:
            inputs = convert_to_tensor(inputs, name="inputs")
            if batch_size is not None:
                static = common_shapes.constant_value(batch_size) \
                    if isinstance(batch_size, Tensor) else batch_size
                if tensor_shape.dimension_value(inputs.shape[0]) != static:
                    raise ValueError(f"batch size from input tensor is different from the "
                                     f"input param. Input tensor batch: "
                                     f"{tensor_shape.dimension_value(inputs.shape[0])}, "
                                     f"batch_size: {batch_size}")
            if dtype is not None and inputs.dtype != dtype:
                raise ValueError(f"dtype from input tensor is different from the input "
                                 f"param. Input tensor dtype: {inputs.dtype}, dtype: {dtype}")
            batch_size = tensor_shape.dimension_value(inputs.shape[0]) or \
                array_ops.shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError(f"batch_size and dtype cannot be None while constructing "
                             f"initial state: batch_size={batch_size}, dtype={dtype}")
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype):
        """Zero-filled state tensor(s): `[batch_size] + s` for each `s` in `state_size`.

        Args:
          batch_size: int or scalar int Tensor.
          dtype: the state's dtype.
        """
        with graph_lib.name_scope(type(self).__name__ + "ZeroState"):
            return _zero_state_tensors(self.state_size, batch_size, dtype)


class LayerRNNCell(RNNCell):
    """An RNNCell whose variables are made in `build` (via `add_variable`), like a
    tf.layers Layer; `call` makes no `get_variable` calls."""

    def __call__(self, inputs, state, scope=None):
        return self._layer_call(inputs, state, scope=scope)

    def _check_input_spec(self, inputs) -> None:
        ndim = convert_to_tensor(inputs).shape.ndims
        if ndim is not None and ndim != 2:
            raise ValueError(f"Input 0 of layer {self._name} is incompatible with the layer: "
                             f"expected ndim=2, found ndim={ndim}. Full shape received: "
                             f"{convert_to_tensor(inputs).shape.as_list()}")


def _input_depth(cell, inputs_shape) -> int:
    depth = tensor_shape.dimension_value(tensor_shape.TensorShape(inputs_shape)[-1])
    if depth is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
    _check_supported_dtypes(cell._dtype)
    return depth


# ---- the cells -------------------------------------------------------------------------------

class BasicRNNCell(LayerRNNCell):
    """The most basic RNN cell: output = new_state = act(W [input, state] + b).

    Args:
      num_units: int, the number of units.
      activation: nonlinearity (callable or Keras name); default tanh.
      reuse: whether to reuse variables in an existing scope.
      name: the cell's scope name.
      dtype: the variables' dtype (default: the first input's).
    """

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None,
                 **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self._dtype)
        self._num_units = num_units
        self._activation = _get_activation(activation)

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME,
                                         shape=[depth + self._num_units, self._num_units])
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[self._num_units],
                                       initializer=init_ops.zeros_initializer())
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        gate_inputs = matrix_ops.matmul(joining_ops.concat([inputs, state], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        output = self._activation(gate_inputs)
        return output, output


class GRUCell(LayerRNNCell):
    """Gated recurrent unit cell (Cho et al., 2014), TF's formulation:
    r, u = split(sigmoid(W_g [x, h] + b_g)); c = act(W_c [x, r * h] + b_c);
    h' = u * h + (1 - u) * c.

    Args:
      num_units: int, the number of units.
      activation: nonlinearity of the candidate; default tanh.
      reuse: whether to reuse variables in an existing scope.
      kernel_initializer: initializer of both kernels (default: the scope's, else Glorot).
      bias_initializer: initializer of both biases (default: ones for the gates, zeros
        for the candidate).
      name, dtype: as for BasicRNNCell.
    """

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self._dtype)
        self._num_units = num_units
        self._activation = _get_activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        self._gate_kernel = self.add_variable(f"gates/{_WEIGHTS_VARIABLE_NAME}",
                                              shape=[depth + n, 2 * n],
                                              initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(
            f"gates/{_BIAS_VARIABLE_NAME}", shape=[2 * n],
            initializer=self._bias_initializer if self._bias_initializer is not None
            else init_ops.constant_initializer(1.0))
        self._candidate_kernel = self.add_variable(f"candidate/{_WEIGHTS_VARIABLE_NAME}",
                                                   shape=[depth + n, n],
                                                   initializer=self._kernel_initializer)
        self._candidate_bias = self.add_variable(
            f"candidate/{_BIAS_VARIABLE_NAME}", shape=[n],
            initializer=self._bias_initializer if self._bias_initializer is not None
            else init_ops.zeros_initializer())
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        gate_inputs = matrix_ops.matmul(joining_ops.concat([inputs, state], 1),
                                      self._gate_kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._gate_bias)
        value = unary_ops.sigmoid(gate_inputs)
        r, u = joining_ops.split(value=value, num_or_size_splits=2, axis=1)
        r_state = r * state
        candidate = matrix_ops.matmul(joining_ops.concat([inputs, r_state], 1),
                                    self._candidate_kernel)
        candidate = nn_ops.bias_add(candidate, self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


_LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


class LSTMStateTuple(_LSTMStateTuple):
    """`(c, h)`: the state of an LSTM cell (`tf.nn.rnn_cell.LSTMStateTuple`); `c` is the
    memory, `h` the output."""

    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


class BasicLSTMCell(LayerRNNCell):
    """Basic LSTM cell (no peepholes, clipping or projection).

    gates = W [x, h] + b split into i, j, f, o (that order);
    c' = c * sigmoid(f + forget_bias) + sigmoid(i) * act(j); h' = act(c') * sigmoid(o).

    Args:
      num_units: int, the number of units.
      forget_bias: float added to the forget gate's pre-activation (default 1.0).
      state_is_tuple: True: states are LSTMStateTuple(c, h); False: concatenated [c, h].
      activation: the inner nonlinearity; default tanh.
      reuse, name, dtype: as for BasicRNNCell.
    """

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self._dtype)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _get_activation(activation)

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME, shape=[depth + n, 4 * n])
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[4 * n],
                                       initializer=init_ops.zeros_initializer())
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        sigmoid = unary_ops.sigmoid
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = joining_ops.split(value=state, num_or_size_splits=2, axis=1)
        gate_inputs = matrix_ops.matmul(joining_ops.concat([inputs, h], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        i, j, f, o = joining_ops.split(value=gate_inputs, num_or_size_splits=4, axis=1)
        forget_bias = constant_op.constant(self._forget_bias, dtype=f.dtype)
        new_c = math_ops.add(math_ops.multiply(c, sigmoid(math_ops.add(f, forget_bias))),
                             math_ops.multiply(sigmoid(i), self._activation(j)))
        new_h = math_ops.multiply(self._activation(new_c), sigmoid(o))
        if self._state_is_tuple:
            return new_h, LSTMStateTuple(new_c, new_h)
        return new_h, joining_ops.concat([new_c, new_h], 1)


def _shards(num_shards):
    """A fixed-size partitioner for `num_shards` shards along axis 0, or None."""
    if num_shards is None:
        return None

    return partitioned_variables.fixed_size_partitioner(num_shards)


class LSTMCell(LayerRNNCell):
    """LSTM cell with optional peepholes (Sak et al., 2014), cell clipping and an output
    projection; gates i, j, f, o as in BasicLSTMCell.

    Args:
      num_units: int, the number of units.
      use_peepholes: add diagonal peephole connections (w_f_diag, w_i_diag, w_o_diag).
      cell_clip: if set, c is clipped to [-cell_clip, cell_clip] after each step.
      initializer: initializer of the kernel, peepholes and projection.
      num_proj: if set, h is projected to this size (projection/kernel).
      proj_clip: if set (with num_proj), the projected h is clipped to ±proj_clip.
      num_unit_shards, num_proj_shards: shard the kernel and the projection kernel along
        axis 0 into that many partitioned-variable parts ("kernel/part_0", ...).
      forget_bias: added to the forget gate's pre-activation (default 1.0).
      state_is_tuple: True: LSTMStateTuple(c, h); False: concatenated [c, h].
      activation: the inner nonlinearity; default tanh.
      reuse, name, dtype: as for BasicRNNCell.
    """

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None,
                 name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_supported_dtypes(self._dtype)
        self._num_units = num_units
        self._num_unit_shards = num_unit_shards
        self._num_proj_shards = num_proj_shards
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _get_activation(activation)
        h = num_proj if num_proj else num_units
        self._state_size = (LSTMStateTuple(num_units, h) if state_is_tuple
                            else num_units + h)
        self._output_size = h

    state_size = property(lambda self: self._state_size)
    output_size = property(lambda self: self._output_size)

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        h_depth = n if self._num_proj is None else self._num_proj
        init = self._initializer
        self._kernel = self.add_variable(_WEIGHTS_VARIABLE_NAME, shape=[depth + h_depth, 4 * n],
                                         initializer=init,
                                         partitioner=_shards(self._num_unit_shards))
        self._bias = self.add_variable(_BIAS_VARIABLE_NAME, shape=[4 * n],
                                       initializer=init_ops.zeros_initializer())
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", shape=[n], initializer=init)
            self._w_i_diag = self.add_variable("w_i_diag", shape=[n], initializer=init)
            self._w_o_diag = self.add_variable("w_o_diag", shape=[n], initializer=init)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable(f"projection/{_WEIGHTS_VARIABLE_NAME}",
                                                  shape=[n, self._num_proj],
                                                  initializer=init,
                                                  partitioner=_shards(self._num_proj_shards))
        self.built = True

    def call(self, inputs, state):
        _check_rnn_cell_input_dtypes([inputs, state])
        num_proj = self._num_units if self._num_proj is None else self._num_proj
        sigmoid = unary_ops.sigmoid
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = slicing_ops.slice(state, [0, 0], [-1, self._num_units])
            m_prev = slicing_ops.slice(state, [0, self._num_units], [-1, num_proj])
        if tensor_shape.dimension_value(inputs.shape.with_rank(2)[1]) is None:
            raise ValueError("Could not infer input size from inputs.get_shape()[-1]")
        lstm_matrix = matrix_ops.matmul(joining_ops.concat([inputs, m_prev], 1), self._kernel)
        lstm_matrix = nn_ops.bias_add(lstm_matrix, self._bias)
        i, j, f, o = joining_ops.split(value=lstm_matrix, num_or_size_splits=4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = matrix_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else \
            joining_ops.concat([c, m], 1)
        return m, new_state


class MultiRNNCell(RNNCell):
    """Cells applied in sequence, each one's output the next one's input; variables under
    "cell_0", "cell_1", ... in the MultiRNNCell's scope.

    Args:
      cells: a non-empty list of RNNCells.
      state_is_tuple: True: the state is a tuple with one entry per cell; False: the
        cells' states concatenated along axis 1 (cells must then have int state sizes).

    Raises:
      ValueError: no cells, or tuple states with `state_is_tuple=False`.
      TypeError: `cells` is not a list or tuple.
    """

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not is_nested(cells):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        self._cells = cells
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(is_nested(c.state_size) for c in cells):
            raise ValueError(f"Some cells return tuples of states, but the flag "
                             f"state_is_tuple is not set.  State sizes are: "
                             f"{[c.state_size for c in cells]}")

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    output_size = property(lambda self: self._cells[-1].output_size)

    def zero_state(self, batch_size, dtype):
        with graph_lib.name_scope(type(self).__name__ + "ZeroState"):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return super().zero_state(batch_size, dtype)

    @property
    def trainable_weights(self) -> list:
        if not self.trainable:
            return []
        return [w for cell in self._cells for w in getattr(cell, "trainable_weights", [])]

    @property
    def non_trainable_weights(self) -> list:
        weights = [w for c in self._cells for w in getattr(c, "non_trainable_weights", [])]
        if self.trainable:
            return weights
        return [w for c in self._cells for w in getattr(c, "trainable_weights", [])] + weights

    def call(self, inputs, state):
        cur_state_pos = 0
        cur_inp = inputs
        new_states = []
        for i, cell in enumerate(self._cells):
            with vs.variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    if not is_nested(state):
                        raise ValueError(f"Expected state to be a tuple of length "
                                         f"{len(self.state_size)}, but received: {state}")
                    cur_state = state[i]
                else:
                    cur_state = slicing_ops.slice(state, [0, cur_state_pos],
                                                [-1, cell.state_size])
                    cur_state_pos += cell.state_size
                cur_inp, new_state = cell(cur_inp, cur_state)
                new_states.append(new_state)
        new_states = tuple(new_states) if self._state_is_tuple else \
            joining_ops.concat(new_states, 1)
        return cur_inp, new_states
