"""`tf.random`: the random ops under their TF1 `tf.random.*` names."""

from tensorflux.framework import dtypes as _dtypes
from tensorflux.framework.random_seed import get_seed, set_random_seed  # noqa: F401
from tensorflux.ops.candidate_sampling_ops import (  # noqa: F401
    all_candidate_sampler,
    fixed_unigram_candidate_sampler,
    learned_unigram_candidate_sampler,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from tensorflux.ops.random_ext_ops import random_gamma as gamma  # noqa: F401
from tensorflux.ops.random_ext_ops import random_poisson as poisson  # noqa: F401
from tensorflux.ops.random_ops import multinomial, truncated_normal  # noqa: F401
from tensorflux.ops.random_ops import random_normal as normal  # noqa: F401
from tensorflux.ops.random_ops import random_shuffle as shuffle  # noqa: F401
from tensorflux.ops.random_ops import random_uniform as uniform  # noqa: F401


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """`num_samples` class indices per row drawn from the softmax of `logits`
    (`tf.random.categorical`); int64 unless `dtype` says otherwise."""
    return multinomial(logits, num_samples, seed=seed, name=name,
                       output_dtype=_dtypes.int64 if dtype is None else dtype)


# Stateless (Philox, TensorFlow's values bit for bit) and counter-based generators.
from tensorflux.ops.stateless_random_ops import (  # noqa: E402,F401
    Algorithm,
    fold_in,
    split,
    stateless_binomial,
    stateless_categorical,
    stateless_gamma,
    stateless_multinomial,
    stateless_normal,
    stateless_parameterized_truncated_normal,
    stateless_poisson,
    stateless_truncated_normal,
    stateless_uniform,
)
from tensorflux.random import experimental  # noqa: E402,F401
from tensorflux.random.generator import (  # noqa: E402,F401
    Generator,
    create_rng_state,
    get_global_generator,
    set_global_generator,
)
