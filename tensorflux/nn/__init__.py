"""`tf.nn`: the neural-network ops and the compositions TF1 keeps under `tf.nn`.

Each op module lists its `tf.nn` names in `__all__`; this package re-exports them.
"""

from tensorflux.nn.conv_impl import *  # noqa: F401,F403
from tensorflux.nn.embedding_ops import *  # noqa: F401,F403
from tensorflux.nn.nn_impl import *  # noqa: F401,F403
from tensorflux.ops import gather_ops as _gather_ops
from tensorflux.ops import unary_ops as _unary_ops
from tensorflux.ops.batch_norm_ops import *  # noqa: F401,F403
from tensorflux.ops.candidate_sampling_ops import *  # noqa: F401,F403
from tensorflux.ops.conv3d_ops import *  # noqa: F401,F403
from tensorflux.ops.conv_ops import *  # noqa: F401,F403
from tensorflux.ops.depthwise_conv_ops import *  # noqa: F401,F403
from tensorflux.ops.nn_ops import *  # noqa: F401,F403
from tensorflux.ops.pooling_ops import *  # noqa: F401,F403

# Names TF1 also exposes under tf.nn but defines elsewhere.
for _module, _names in ((_unary_ops, ("sigmoid", "tanh")), (_gather_ops, ("top_k",))):
    for _name in _names:
        if hasattr(_module, _name):
            globals()[_name] = getattr(_module, _name)
del _module, _names, _name

# Recurrent networks (issue 4): tf.nn.rnn_cell.*, tf.nn.dynamic_rnn, tf.nn.static_rnn, ...
from tensorflux.nn import rnn_cell  # noqa: E402,F401

# Issue 18: more TF1 tf.nn names built from existing ops (tensorflux/nn/nn_extra.py).
from tensorflux.nn.nn_extra import *  # noqa: E402,F401,F403
from tensorflux.nn.raw_rnn_impl import raw_rnn, static_state_saving_rnn  # noqa: E402,F401
from tensorflux.nn.rnn import *  # noqa: E402,F401,F403
from tensorflux.nn.space_to_batch_impl import with_space_to_batch  # noqa: E402,F401
from tensorflux.ops.ctc_ops import *  # noqa: E402,F401,F403 - tf.nn.ctc_*, collapse_repeated
from tensorflux.ops.fractional_pool_ops import *  # noqa: E402,F401,F403 - fractional_*_pool
from tensorflux.ops.morphology_ops import dilation2d, erosion2d  # noqa: E402,F401
from tensorflux.ops.quantization_ops import (  # noqa: E402,F401 - tf.nn's names of the ops
    quantized_avg_pool,
    quantized_conv2d,
    quantized_max_pool,
    quantized_relu_x,
)
