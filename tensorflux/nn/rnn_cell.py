"""`tf.nn.rnn_cell`: the RNN cells and cell wrappers of TensorFlow 1.x."""

from tensorflux.nn.rnn_cell_impl import (  # noqa: F401
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    RNNCell,
)
from tensorflux.nn.rnn_cell_wrapper_impl import (  # noqa: F401
    DeviceWrapper,
    DropoutWrapper,
    ResidualWrapper,
)

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper"]
