"""`tf.contrib.util`: TF1's tensor-value helpers under their contrib name
(`constant_value`, `make_tensor_proto`, `make_ndarray`)."""

from tensorflux.framework.common_shapes import constant_value  # noqa: F401
from tensorflux.framework.tensor_util import make_ndarray, make_tensor_proto  # noqa: F401
