"""`tf.random.experimental`: the counter-based generators and seed helpers under their
experimental names."""

from tensorflux.ops.stateless_random_ops import Algorithm  # noqa: F401
from tensorflux.ops.stateless_random_ops import fold_in as stateless_fold_in  # noqa: F401
from tensorflux.ops.stateless_random_ops import split as stateless_split  # noqa: F401
from tensorflux.random.generator import (  # noqa: F401
    Generator,
    create_rng_state,
    get_global_generator,
    set_global_generator,
)
