"""contrib's cell wrappers that own variables (`tf.contrib.rnn.EmbeddingWrapper`,
`InputProjectionWrapper`, `OutputProjectionWrapper`), as legacy_seq2seq builds its models
from them.

Unlike tf.nn.rnn_cell's DropoutWrapper family these are cells with a scope of their own
(`embedding_wrapper`, `input_projection_wrapper`, `output_projection_wrapper`): their
variables live there and the wrapped cell's scope opens inside it, so a checkpoint written by
a TF1 program names them as TensorFlow did (`.../rnn/embedding_wrapper/embedding`,
`.../output_projection_wrapper/kernel`, `.../output_projection_wrapper/basic_lstm_cell/...`).
"""

from __future__ import annotations

import math

from tensorflux.control_flow.control_flow_util import flatten
from tensorflux.framework import graph as graph_lib
from tensorflux.framework import tensor_shape
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.nn.embedding_ops import embedding_lookup
from tensorflux.nn.rnn_cell_impl import RNNCell, assert_like_rnncell
from tensorflux.ops import array_ops, joining_ops, matrix_ops, nn_ops
from tensorflux.platform import tf_logging
from tensorflux.variables import init_ops
from tensorflux.variables import variable_scope as vs

__all__ = ["EmbeddingWrapper", "InputProjectionWrapper", "OutputProjectionWrapper"]


class Linear:
    """`sum_i(args[i] @ W_i) + b` over a list of 2-D tensors, with one `kernel`
    [sum of input depths, output_size] and one `bias` [output_size] made in the current
    variable scope when constructed (contrib's `_Linear`); calling it computes the product.

    Raises:
      ValueError: no args, or an input whose depth is not known statically.
    """

    def __init__(self, args, output_size, build_bias, bias_initializer=None,
                 kernel_initializer=None):
        args = list(args) if isinstance(args, (list, tuple)) else [args]
        if not args:
            raise ValueError("`args` must be specified")
        total = 0
        for a in args:
            shape = a.shape
            if shape.ndims != 2:
                raise ValueError(f"linear is expecting 2D arguments: {shape}")
            depth = tensor_shape.dimension_value(shape[1])
            if depth is None:
                raise ValueError(f"linear expects shape[1] to be provided for shape {shape}, "
                                 f"but saw {shape[1]}")
            total += depth
        dtype = args[0].dtype.base_dtype
        scope = vs.get_variable_scope()
        with vs.variable_scope(scope) as outer:
            self._weights = vs.get_variable("kernel", [total, output_size], dtype=dtype,
                                            initializer=kernel_initializer)
            self._biases = None
            if build_bias:
                with vs.variable_scope(outer) as inner:
                    inner.set_partitioner(None)
                    if bias_initializer is None:
                        bias_initializer = init_ops.constant_initializer(0.0, dtype=dtype)
                    self._biases = vs.get_variable("bias", [output_size], dtype=dtype,
                                                   initializer=bias_initializer)

    def __call__(self, args):
        args = list(args) if isinstance(args, (list, tuple)) else [args]
        joined = args[0] if len(args) == 1 else joining_ops.concat(args, 1)
        out = matrix_ops.matmul(joined, self._weights)
        return out if self._biases is None else nn_ops.bias_add(out, self._biases)


class _OwnScopeWrapper(RNNCell):
    """A cell around `cell` that opens its own scope (a contrib wrapper)."""

    def __init__(self, cell, reuse=None, name=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, **kwargs)
        assert_like_rnncell("cell", cell)
        self._cell = cell

    state_size = property(lambda self: self._cell.state_size)
    wrapped_cell = property(lambda self: self._cell)

    def zero_state(self, batch_size, dtype):
        with graph_lib.name_scope(type(self).__name__ + "ZeroState"):
            return self._cell.zero_state(batch_size, dtype)


class EmbeddingWrapper(_OwnScopeWrapper):
    """Embeds integer inputs ([batch] or [batch, 1] ids) before `cell`.

    The `embedding` [embedding_classes, embedding_size] variable is placed on the CPU, as
    TensorFlow places it; its initializer is `initializer`, else the scope's, else uniform
    in [-sqrt(3), sqrt(3)].

    Raises:
      TypeError: `cell` is not a cell.
      ValueError: `embedding_classes` or `embedding_size` is not positive.
    """

    def __init__(self, cell, embedding_classes, embedding_size, initializer=None,
                 reuse=None):
        super().__init__(cell, reuse=reuse)
        if embedding_classes <= 0 or embedding_size <= 0:
            raise ValueError(f"Both embedding_classes and embedding_size must be > 0: "
                             f"{embedding_classes}, {embedding_size}.")
        self._embedding_classes = embedding_classes
        self._embedding_size = embedding_size
        self._initializer = initializer

    output_size = property(lambda self: self._cell.output_size)

    def call(self, inputs, state):
        with graph_lib.device("/cpu:0"):
            initializer = self._initializer or vs.get_variable_scope().initializer
            if initializer is None:
                root3 = math.sqrt(3)
                initializer = init_ops.random_uniform_initializer(-root3, root3)
            dtype = flatten(state)[0].dtype
            embedding = vs.get_variable("embedding",
                                        [self._embedding_classes, self._embedding_size],
                                        initializer=initializer, dtype=dtype)
            embedded = embedding_lookup(embedding, array_ops.reshape(inputs, [-1]))
        return self._cell(embedded, state)


class InputProjectionWrapper(_OwnScopeWrapper):
    """Projects the inputs to `num_proj` units (a `kernel` and `bias` in this wrapper's
    scope, then `activation`) before `cell`."""

    def __init__(self, cell, num_proj, activation=None, input_size=None, reuse=None):
        super().__init__(cell, reuse=reuse)
        if input_size is not None:
            tf_logging.warning("%s: The input_size parameter is deprecated.", self)
        self._num_proj = num_proj
        self._activation = activation
        self._linear = None

    output_size = property(lambda self: self._cell.output_size)

    def call(self, inputs, state):
        inputs = convert_to_tensor(inputs)
        if self._linear is None:
            self._linear = Linear(inputs, self._num_proj, True)
        projected = self._linear(inputs)
        if self._activation:
            projected = self._activation(projected)
        return self._cell(projected, state)


class OutputProjectionWrapper(_OwnScopeWrapper):
    """Projects `cell`'s outputs to `output_size` units (a `kernel` and `bias` in this
    wrapper's scope, then `activation`).

    Raises:
      ValueError: `output_size` is not positive.
    """

    def __init__(self, cell, output_size, activation=None, reuse=None):
        super().__init__(cell, reuse=reuse)
        if output_size < 1:
            raise ValueError(f"Parameter output_size must be > 0: {output_size}.")
        self._output_size = output_size
        self._activation = activation
        self._linear = None

    output_size = property(lambda self: self._output_size)

    def call(self, inputs, state):
        output, new_state = self._cell(inputs, state)
        if self._linear is None:
            self._linear = Linear(output, self._output_size, True)
        projected = self._linear(output)
        if self._activation:
            projected = self._activation(projected)
        return projected, new_state
