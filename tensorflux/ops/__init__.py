"""Op definitions, TF1 wrappers and gradients, one module per op family.

Only op families live here; the libraries built from them have packages of their own
(tensorflux/variables, control_flow, autodiff, nn).
"""

from tensorflux.ops import (  # noqa: F401 - importing registers the ops
    array_ops,
    constant_op,
    control_flow_ops,
    data_flow_ops,
    gather_ops,
    io_ops,
    joining_ops,
    logging_ops,
    math_ops,
    matrix_ops,
    nn_ops,
    parsing_ops,
    random_ops,
    reduction_ops,
    runtime_ops,
    save_restore_ops,
    sequence_ops,
    slicing_ops,
    sparse_ops,
    state_ops,
    tensor_array_ops,
    training_ops,
)
