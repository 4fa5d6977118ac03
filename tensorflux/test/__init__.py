"""`tf.test`: gradient checking and small helpers."""

from tensorflux.autodiff.gradient_checker import (  # noqa: F401
    compute_gradient,
    compute_gradient_error,
)
from tensorflux.distributed.server import create_local_cluster  # noqa: F401
from tensorflux.runtime.device import gpu_count as _gpu_count


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability=None) -> bool:
    return _gpu_count() > 0


def is_built_with_cuda() -> bool:
    return _gpu_count() > 0


def gpu_device_name() -> str:
    return "/device:GPU:0" if _gpu_count() > 0 else ""
