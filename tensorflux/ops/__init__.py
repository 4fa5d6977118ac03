"""Op definitions, TF1 wrappers and gradients, one module per op family."""

# math_ops first: the other math families (unary_ops, comparison_ops, reduction_ops, ...)
# import its helpers, and it re-exports their TF1 names once it has defined them.
from tensorflux.ops import math_ops  # noqa: F401, I001
from tensorflux.ops import (  # noqa: F401 - importing registers the ops
    array_ops,
    clip_ops,
    comparison_ops,
    constant_op,
    conv_ops,
    control_flow_grad,
    control_flow_ops,
    data_flow_ops,
    embedding_ops,
    functional_ops,
    init_ops,
    io_ops,
    logging_ops,
    matrix_ops,
    nn_impl,
    nn_ops,
    parsing_ops,
    partitioned_variables,
    pooling_ops,
    random_ops,
    reduction_ops,
    runtime_ops,
    save_restore_ops,
    sequence_ops,
    sparse_ops,
    state_ops,
    tensor_array_ops,
    training_ops,
    unary_ops,
    variable_scope,
    variables,
)
