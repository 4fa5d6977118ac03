"""`tf.losses`: TF1's loss functions (losses_impl.py) and loss collections (util.py)."""

from tensorflux.losses.losses_impl import *  # noqa: F401,F403
from tensorflux.losses.util import *  # noqa: F401,F403
