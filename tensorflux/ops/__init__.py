"""Op definitions, TF1 wrappers and gradients, one module per op family."""

from tensorflux.ops import (  # noqa: F401 - importing registers the ops
    array_ops,
    clip_ops,
    constant_op,
    control_flow_ops,
    init_ops,
    math_ops,
    nn_impl,
    nn_ops,
    random_ops,
    runtime_ops,
    state_ops,
    training_ops,
    variable_scope,
    variables,
)
