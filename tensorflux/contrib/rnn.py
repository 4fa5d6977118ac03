"""`tf.contrib.rnn`: TF1 example programs import their cells and `static_rnn` from here
(`from tensorflow.contrib import rnn`). The same classes and functions as `tf.nn.rnn_cell`
and `tf.nn`, plus contrib's cells over the fused recurrent ops (LSTMBlockCell,
LSTMBlockFusedCell, GRUBlockCell, GRUBlockCellV2; tensorflux/contrib/rnn_block_cells.py)
and LayerNormBasicLSTMCell (tensorflux/contrib/layer_norm_rnn_cell.py), and the wrappers that
own variables (EmbeddingWrapper, InputProjectionWrapper, OutputProjectionWrapper;
tensorflux/contrib/rnn_wrappers.py), NASCell (tensorflux/contrib/rnn_extra_cells.py) and the
stacked bidirectional RNNs (tensorflux/contrib/rnn_stacked.py). contrib's other extra cells
are not provided."""

import sys as _sys

from tensorflux.contrib import tf1_paths as _tf1_paths  # noqa: E402
from tensorflux.nn.rnn import static_bidirectional_rnn, static_rnn  # noqa: F401
from tensorflux.nn.rnn_cell import *  # noqa: F401,F403
from tensorflux.nn.rnn_cell import __all__ as _cells

__all__ = list(_cells) + ["static_rnn", "static_bidirectional_rnn"]

# contrib's cells over the fused recurrent ops
from tensorflux.contrib.rnn_block_cells import *  # noqa: E402,F401,F403
from tensorflux.contrib.rnn_block_cells import __all__ as _block_cells  # noqa: E402

__all__ += list(_block_cells)
from tensorflux.contrib.layer_norm_rnn_cell import LayerNormBasicLSTMCell  # noqa: E402,F401

__all__ += ["LayerNormBasicLSTMCell"]
from tensorflux.contrib.rnn_wrappers import (  # noqa: E402,F401
    EmbeddingWrapper,
    InputProjectionWrapper,
    OutputProjectionWrapper,
)

__all__ += ["EmbeddingWrapper", "InputProjectionWrapper", "OutputProjectionWrapper"]
from tensorflux.contrib.rnn_extra_cells import NASCell  # noqa: E402,F401

__all__ += ["NASCell"]
from tensorflux.contrib.rnn_stacked import (  # noqa: E402,F401
    stack_bidirectional_dynamic_rnn,
    stack_bidirectional_rnn,
)

__all__ += ["stack_bidirectional_rnn", "stack_bidirectional_dynamic_rnn"]


python = _tf1_paths.register(__name__, {
    f"python.ops.{_name}": _sys.modules[__name__]
    for _name in ("rnn_cell", "core_rnn_cell", "rnn", "core_rnn", "lstm_ops", "gru_ops")})
