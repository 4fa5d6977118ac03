"""GPU kernels (CuPy), registered for device type "GPU"; used only where a GPU device
exists (kernels/gpu/backend.py: a real one, or the simulated ones of TENSORFLUX_FAKE_GPUS).
Importing this package registers them; it needs no CuPy."""

from tensorflux.kernels.gpu import (  # noqa: F401 - registers the kernels
    array_ops,
    batch_norm_ops,
    conv_ops,
    depthwise_conv_ops,
    image_ops,
    math_ops,
    nn_ops,
    pooling_ops,
    reduction_ops,
    state_ops,
    training_ops,
)
