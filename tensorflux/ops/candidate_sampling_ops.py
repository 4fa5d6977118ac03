"""Candidate samplers and accidental hits: the ops behind sampled losses (`tf.nn.*`).

Every sampler op takes `true_classes` [batch_size, num_true] (int64) and returns
`sampled_candidates` [num_sampled] (int64), `true_expected_count` [batch_size, num_true] and
`sampled_expected_count` [num_sampled] (float32): how many times each class is expected to
appear among the sampled candidates. Samplers differ in the distribution over
[0, range_max):

- LogUniformCandidateSampler: Zipfian, P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1);
- UniformCandidateSampler: P(k) = 1 / range_max;
- FixedUnigramCandidateSampler: P(k) proportional to unigrams[k] ** distortion (from the
  `unigrams` attr or a CSV `vocab_file` whose last column is the count);
- LearnedUnigramCandidateSampler (and ThreadUnsafeUnigramCandidateSampler): P(k)
  proportional to 1 + the number of times k was a true class in earlier runs;
- AllCandidateSampler: every class of [0, num_sampled), each expected once.

With `unique=True` the candidates are distinct (drawn until `num_sampled` distinct values
came) and the expected count of a class of probability p after n draws is
1 - (1 - p) ** n; with `unique=False` it is p * num_sampled. The samplers are stateful random
ops seeded like the others (`framework/random_seed.get_seed`); kernels in
kernels/cpu/candidate_sampling_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.random_seed import get_seed

# The TF1 public names of this module (tf.nn.*).
__all__ = ["uniform_candidate_sampler", "log_uniform_candidate_sampler",
           "fixed_unigram_candidate_sampler", "learned_unigram_candidate_sampler",
           "all_candidate_sampler", "compute_accidental_hits"]

_SAMPLER_OUTPUTS = ["sampled_candidates: int64", "true_expected_count: float",
                    "sampled_expected_count: float"]
_SAMPLER_ATTRS = ["num_true: int >= 1", "num_sampled: int >= 1", "unique: bool"]
_SEEDS = ["seed: int = 0", "seed2: int = 0"]
_UNIGRAM_ATTRS = ["vocab_file: string = ''", "distortion: float = 1.0",
                  "num_reserved_ids: int = 0", "num_shards: int >= 1 = 1",
                  "shard: int >= 0 = 0", "unigrams: list(float) = []"]

def _sampler_shape(op):
    """[num_sampled], [batch_size, num_true], [num_sampled]."""
    batch = common_shapes.with_rank(common_shapes.static_dims(op.inputs[0]), 2)[0]
    num_sampled = op.get_attr("num_sampled")
    sampled = tensor_shape.TensorShape([num_sampled])
    return [sampled, tensor_shape.TensorShape([batch, op.get_attr("num_true")]), sampled]


_SAMPLERS = {
    "UniformCandidateSampler": ["range_max: int >= 1"],
    "LogUniformCandidateSampler": ["range_max: int >= 1"],
    "LearnedUnigramCandidateSampler": ["range_max: int >= 1"],
    "ThreadUnsafeUnigramCandidateSampler": ["range_max: int >= 1"],
    "FixedUnigramCandidateSampler": ["range_max: int >= 1"] + _UNIGRAM_ATTRS,
    "AllCandidateSampler": [],
}
for _op_type, _extra in _SAMPLERS.items():
    define_op(_op_type, inputs=["true_classes: int64"], outputs=_SAMPLER_OUTPUTS,
              attrs=_SAMPLER_ATTRS + _extra + _SEEDS, shape_fn=_sampler_shape, stateful=True)
    not_differentiable(_op_type)


def _sample(op_type: str, true_classes, seed, name, **attrs):
    """Runs one sampler op with seeds from `seed` and the graph seed; its outputs by name
    (the op's named tuple, as TensorFlow's generated wrappers return them)."""
    seed1, seed2 = get_seed(seed)
    return apply_op(op_type, true_classes=true_classes, seed=seed1, seed2=seed2,
                    name=name or op_type, **attrs)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                              seed=None, name=None):
    """Samples classes uniformly from [0, range_max) (`tf.nn.uniform_candidate_sampler`).

    Args:
      true_classes: int64 [batch_size, num_true], the target classes.
      num_true: the number of target classes per example.
      num_sampled: the number of classes to sample.
      unique: sample without replacement (all candidates distinct).
      range_max: the number of classes.
      seed: the op-level seed.
      name: a name for the op.

    Returns:
      (sampled_candidates [num_sampled] int64, true_expected_count [batch_size, num_true]
      float32, sampled_expected_count [num_sampled] float32), a namedtuple.

    Raises:
      ValueError: `num_true`, `num_sampled` or `range_max` below 1, or `true_classes` not a
        matrix.
      InvalidArgumentError (at run time): `unique` with `num_sampled > range_max`, or a true
        class outside [0, range_max).
    """
    return _sample("UniformCandidateSampler", true_classes, seed, name, num_true=num_true,
                   num_sampled=num_sampled, unique=unique, range_max=range_max)


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """Samples classes from the log-uniform (Zipfian) distribution over [0, range_max)
    (`tf.nn.log_uniform_candidate_sampler`): P(k) = log((k + 2) / (k + 1)) /
    log(range_max + 1), for classes sorted by decreasing frequency.

    Arguments, results and errors as `uniform_candidate_sampler`.
    """
    return _sample("LogUniformCandidateSampler", true_classes, seed, name, num_true=num_true,
                   num_sampled=num_sampled, unique=unique, range_max=range_max)


def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique,
                                      range_max, seed=None, name=None):
    """Samples classes from the distribution of the true classes seen so far
    (`tf.nn.learned_unigram_candidate_sampler`): every class starts with weight 1 and each
    run adds 1 per occurrence in `true_classes`, after sampling.

    Arguments, results and errors as `uniform_candidate_sampler`.
    """
    return _sample("LearnedUnigramCandidateSampler", true_classes, seed, name,
                   num_true=num_true, num_sampled=num_sampled, unique=unique,
                   range_max=range_max)


def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                    vocab_file="", distortion=1.0, num_reserved_ids=0,
                                    num_shards=1, shard=0, unigrams=(), seed=None, name=None):
    """Samples classes with probabilities proportional to given counts raised to
    `distortion` (`tf.nn.fixed_unigram_candidate_sampler`).

    Args:
      true_classes, num_true, num_sampled, unique, range_max, seed, name: as
        `uniform_candidate_sampler`.
      vocab_file: a CSV file, one class per line, its count in the last column.
      distortion: the power the counts are raised to (1: unigram, 0: uniform).
      num_reserved_ids: classes [0, num_reserved_ids) come first, with weight 0.
      num_shards, shard: keep only the classes with id % num_shards == shard (ids counted
        from the reserved ones this shard keeps); `range_max` is the shard's class count.
      unigrams: the counts, in place of `vocab_file` (exactly one of the two).

    Returns:
      As `uniform_candidate_sampler`.

    Raises:
      As `uniform_candidate_sampler`; at run time also InvalidArgumentError for neither or
      both of `vocab_file` and `unigrams`, a malformed file, or `range_max` not equal to the
      shard's class count.
    """
    return _sample("FixedUnigramCandidateSampler", true_classes, seed, name,
                   num_true=num_true, num_sampled=num_sampled, unique=unique,
                   range_max=range_max, vocab_file=vocab_file, distortion=distortion,
                   num_reserved_ids=num_reserved_ids, num_shards=num_shards, shard=shard,
                   unigrams=[float(u) for u in unigrams])


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """Returns every class of [0, num_sampled), each with expected count 1
    (`tf.nn.all_candidate_sampler`), for testing sampled losses against full ones.

    Arguments and results as `uniform_candidate_sampler` (`unique` is ignored).
    """
    return _sample("AllCandidateSampler", true_classes, seed, name, num_true=num_true,
                   num_sampled=num_sampled, unique=unique)


# ---- ComputeAccidentalHits ---------------------------------------------------------------


def _accidental_hits_shape(op):
    true_dims = common_shapes.with_rank(common_shapes.static_dims(op.inputs[0]), 2)
    num_true = op.get_attr("num_true")
    if true_dims[1] is not None and true_dims[1] != num_true:
        raise ValueError(f"Dimension must be {num_true} but is {true_dims[1]}")
    common_shapes.with_rank(common_shapes.static_dims(op.inputs[1]), 1)
    return [tensor_shape.TensorShape([None])] * 3


define_op("ComputeAccidentalHits", inputs=["true_classes: int64", "sampled_candidates: int64"],
          outputs=["indices: int32", "ids: int64", "weights: float"],
          attrs=["num_true: int"] + _SEEDS, shape_fn=_accidental_hits_shape)
not_differentiable("ComputeAccidentalHits")


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """Where sampled candidates equal a true class (`tf.nn.compute_accidental_hits`).

    For each example i and each of its true classes found among `sampled_candidates`
    (at its last position j there), one hit: indices[h] = i, ids[h] = j and weights[h] =
    the lowest float32, to be added to the sampled logit [i, j] so that it is ignored.

    Args:
      true_classes: int64 [batch_size, num_true].
      sampled_candidates: int64 [num_sampled], a candidate sampler's first output.
      num_true: the number of true classes per example.
      seed, name: the op-level seed (unused by the computation) and a name.

    Returns:
      (indices int32, ids int64, weights float32), 1-D of the number of hits, a namedtuple.

    Raises:
      ValueError: `true_classes` not [?, num_true] or `sampled_candidates` not a vector.
    """
    seed1, seed2 = get_seed(seed)
    return apply_op("ComputeAccidentalHits", true_classes=true_classes,
                    sampled_candidates=sampled_candidates, num_true=num_true, seed=seed1,
                    seed2=seed2, name=name or "ComputeAccidentalHits")
