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
