"""CPU kernels (NumPy), one module per op family, mirroring tensorflux/ops/."""

from tensorflux.kernels.cpu import (  # noqa: F401 - importing registers the kernels
    array_ops,
    constant_op,
    control_flow_ops,
    math_ops,
    nn_ops,
    random_ops,
    runtime_ops,
    state_ops,
    training_ops,
)
