"""Op definitions, TF1 wrappers and gradients, one module per op family."""

from tensorflux.ops import (  # noqa: F401 - importing registers the ops
    array_ops,
    constant_op,
    control_flow_ops,
    math_ops,
    runtime_ops,
)
