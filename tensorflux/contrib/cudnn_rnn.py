"""`tf.contrib.cudnn_rnn`: the CPU cells whose variables have cuDNN's canonical layout
(`CudnnCompatibleLSTMCell`, `CudnnCompatibleGRUCell`: a checkpoint converted from a cuDNN
model loads into them) and the cuDNN layers `CudnnLSTM`, `CudnnGRU`, `CudnnRNNTanh` and
`CudnnRNNRelu`.

The layers need cuDNN: on a machine without a GPU TF1 builds their graph but cannot run it
(no CPU kernel for the CudnnRNN ops). tensorflux has no cuDNN kernels, so calling a layer
raises that error (InvalidArgumentError naming the missing kernel) when the graph is built;
use the compatible cells (with `tf.nn.dynamic_rnn`) on a CPU.
"""

from __future__ import annotations

from tensorflux.contrib.rnn_block_cells import LSTMBlockCell
from tensorflux.framework import dtypes, errors
from tensorflux.nn.rnn_cell_impl import GRUCell, _input_depth
from tensorflux.ops import joining_ops, matrix_ops, nn_ops, unary_ops
from tensorflux.variables import init_ops

CUDNN_RNN_UNIDIRECTION = "unidirectional"
CUDNN_RNN_BIDIRECTION = "bidirectional"
CUDNN_LSTM = "lstm"
CUDNN_GRU = "gru"
CUDNN_RNN_RELU = "rnn_relu"
CUDNN_RNN_TANH = "rnn_tanh"
CUDNN_INPUT_LINEAR_MODE = "linear_input"
CUDNN_INPUT_SKIP_MODE = "skip_input"
CUDNN_INPUT_AUTO_MODE = "auto_select"
CUDNN_LSTM_PARAMS_PER_LAYER = 8
CUDNN_GRU_PARAMS_PER_LAYER = 6
CUDNN_RNN_TANH_PARAMS_PER_LAYER = 2
CUDNN_RNN_RELU_PARAMS_PER_LAYER = 2


class CudnnCompatibleLSTMCell(LSTMBlockCell):
    """An LSTM cell computing what cuDNN's LSTM does (no forget bias, no peepholes), with
    variables "cudnn_compatible_lstm_cell/kernel" and ".../bias"."""

    def __init__(self, num_units, reuse=None):
        super().__init__(num_units, forget_bias=0, cell_clip=None, use_peephole=False,
                         reuse=reuse, name="cudnn_compatible_lstm_cell")


class CudnnCompatibleGRUCell(GRUCell):
    """A GRU cell computing what cuDNN's GRU does: the reset gate multiplies the hidden
    projection after its bias, c = tanh(W_x x + b_x + r (W_h h + b_h)). Variables under
    "cudnn_compatible_gru_cell": gates/kernel, gates/bias, candidate/input_projection/
    {kernel,bias}, candidate/hidden_projection/{kernel,bias}."""

    def __init__(self, num_units, reuse=None, kernel_initializer=None):
        super().__init__(num_units, activation=None, reuse=reuse,
                         kernel_initializer=kernel_initializer,
                         name="cudnn_compatible_gru_cell")

    def build(self, inputs_shape):
        depth, n = _input_depth(self, inputs_shape), self._num_units
        bias = self._bias_initializer
        self._gate_kernel = self.add_variable("gates/kernel", shape=[depth + n, 2 * n],
                                              initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(
            "gates/bias", shape=[2 * n],
            initializer=bias if bias is not None else init_ops.constant_initializer(1.0))
        self._candidate_input_kernel = self.add_variable(
            "candidate/input_projection/kernel", shape=[depth, n],
            initializer=self._kernel_initializer)
        self._candidate_hidden_kernel = self.add_variable(
            "candidate/hidden_projection/kernel", shape=[n, n],
            initializer=self._kernel_initializer)
        zeros = bias if bias is not None else init_ops.zeros_initializer()
        self._candidate_input_bias = self.add_variable("candidate/input_projection/bias",
                                                       shape=[n], initializer=zeros)
        self._candidate_hidden_bias = self.add_variable("candidate/hidden_projection/bias",
                                                        shape=[n], initializer=zeros)
        self.built = True

    def call(self, inputs, state):
        gates = nn_ops.bias_add(matrix_ops.matmul(joining_ops.concat([inputs, state], 1),
                                                  self._gate_kernel), self._gate_bias)
        r, u = joining_ops.split(value=unary_ops.sigmoid(gates), num_or_size_splits=2, axis=1)
        candidate = nn_ops.bias_add(matrix_ops.matmul(inputs, self._candidate_input_kernel),
                                    self._candidate_input_bias)
        candidate += r * nn_ops.bias_add(
            matrix_ops.matmul(state, self._candidate_hidden_kernel),
            self._candidate_hidden_bias)
        candidate = self._activation(candidate)
        new_h = (1 - u) * candidate + u * state
        return new_h, new_h


class _CudnnRNN:
    """The cuDNN layers' arguments and checks; calling one needs a cuDNN kernel."""

    _rnn_mode = None

    def __init__(self, num_layers, num_units, input_mode=CUDNN_INPUT_LINEAR_MODE,
                 direction=CUDNN_RNN_UNIDIRECTION, dropout=0., seed=None,
                 dtype=dtypes.float32, kernel_initializer=None, bias_initializer=None,
                 name=None):
        if direction not in (CUDNN_RNN_UNIDIRECTION, CUDNN_RNN_BIDIRECTION):
            raise ValueError(f"Invalid direction: {direction}, expecting "
                             f"{CUDNN_RNN_UNIDIRECTION} or {CUDNN_RNN_BIDIRECTION}")
        if input_mode not in (CUDNN_INPUT_LINEAR_MODE, CUDNN_INPUT_SKIP_MODE,
                              CUDNN_INPUT_AUTO_MODE):
            raise ValueError(f"Invalid input_mode: {input_mode}, expect one of "
                             f"({CUDNN_INPUT_LINEAR_MODE}, {CUDNN_INPUT_SKIP_MODE}, "
                             f"{CUDNN_INPUT_AUTO_MODE})")
        dtype = dtypes.as_dtype(dtype)
        if dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
            raise ValueError(f"Only support float16, float32, float64, provided {dtype}")
        self.num_layers, self.num_units = num_layers, num_units
        self.input_mode, self.direction = input_mode, direction
        self.dropout, self.seed, self.dtype = dropout, seed, dtype
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer
        self.name = name or {"lstm": "cudnn_lstm", "gru": "cudnn_gru",
                             "rnn_tanh": "cudnn_rnn_tanh",
                             "rnn_relu": "cudnn_rnn_relu"}[self._rnn_mode]

    @property
    def rnn_mode(self):
        return self._rnn_mode

    @property
    def num_dirs(self):
        return 1 if self.direction == CUDNN_RNN_UNIDIRECTION else 2

    def __call__(self, inputs, initial_state=None, sequence_lengths=None, time_major=True,
                 training=True):
        """Raises InvalidArgumentError: tensorflux has no cuDNN kernel (TF1 on a machine
        without a GPU fails the same way when the graph runs)."""
        raise errors.InvalidArgumentError(
            None, None, "No OpKernel was registered to support Op 'CudnnRNN' used by "
            f"{self.name}: tensorflux has no cuDNN kernels (Registered devices: [CPU]). "
            "Use tf.contrib.cudnn_rnn.CudnnCompatibleLSTMCell/CudnnCompatibleGRUCell with "
            "tf.nn.dynamic_rnn on a CPU.")

    apply = __call__


class CudnnLSTM(_CudnnRNN):
    """cuDNN's multi-layer LSTM (`tf.contrib.cudnn_rnn.CudnnLSTM`); needs a GPU."""

    _rnn_mode = CUDNN_LSTM


class CudnnGRU(_CudnnRNN):
    """cuDNN's multi-layer GRU (`tf.contrib.cudnn_rnn.CudnnGRU`); needs a GPU."""

    _rnn_mode = CUDNN_GRU


class CudnnRNNTanh(_CudnnRNN):
    """cuDNN's multi-layer tanh RNN; needs a GPU."""

    _rnn_mode = CUDNN_RNN_TANH


class CudnnRNNRelu(_CudnnRNN):
    """cuDNN's multi-layer ReLU RNN; needs a GPU."""

    _rnn_mode = CUDNN_RNN_RELU
