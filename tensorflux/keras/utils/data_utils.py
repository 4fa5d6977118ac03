"""`keras.utils.data_utils` (Keras 2's module path): get_file and Sequence."""

from tensorflux.keras.utils import Sequence, get_file  # noqa: F401
