"""The other decoding helpers of `tf.contrib.seq2seq` (seq2seq_decoder.py has Helper,
TrainingHelper and GreedyEmbeddingHelper):

- ScheduledEmbeddingTrainingHelper: teacher forcing, except that each row, with
  probability `sampling_probability` per step, feeds the embedding of an id sampled from
  its own outputs (scheduled sampling, Bengio et al. 2015); a row not sampled has
  sample id -1;
- ScheduledOutputTrainingHelper: the same for continuous outputs: a sampled row feeds its
  outputs (through `next_inputs_fn`, then joined with `auxiliary_inputs`); sample ids are
  the boolean choices;
- SampleEmbeddingHelper: GreedyEmbeddingHelper drawing the next id from the softmax of
  the outputs (divided by `softmax_temperature`) instead of taking the argmax;
- InferenceHelper: inference on continuous outputs (`sample_fn`, `end_fn`);
- CustomHelper: a helper from three functions.

A sampled row's next input is chosen with `where`, so the rows not sampled keep the
teacher-forced input exactly.
"""

from __future__ import annotations

from tensorflux.contrib.seq2seq_decoder import GreedyEmbeddingHelper, Helper, TrainingHelper
from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.tensor_conversion import convert_to_tensor


def _bernoulli(probability, batch_size, seed):
    """A [batch] bool vector, True with `probability` (a scalar or one per row)."""
    from tensorflux.ops import array_ops, comparison_ops, random_ops

    draws = random_ops.random_uniform(array_ops.reshape(batch_size, [1]), seed=seed,
                                      dtype=probability.dtype)
    return comparison_ops.less(draws, probability)


def _categorical(logits, seed):
    """One id per row drawn from softmax(logits), int32 [batch]."""
    from tensorflux.ops import array_ops, math_ops, random_ops

    ids = random_ops.multinomial(logits, 1, seed=seed)
    return math_ops.cast(array_ops.reshape(ids, [-1]), dtypes.int32)


def _rows_where(mask, chosen, other):
    """`chosen` in the rows where `mask` ([batch] bool) holds, `other` elsewhere."""
    from tensorflux.ops import array_ops, comparison_ops

    for _ in range(other.shape.ndims - 1):
        mask = array_ops.expand_dims(mask, -1)
    mask = comparison_ops.logical_and(mask, array_ops.ones_like(other, dtype=dtypes.bool))
    return comparison_ops.where(mask, chosen, other)


def _probability(sampling_probability):
    p = convert_to_tensor(sampling_probability, name="sampling_probability")
    if p.shape.ndims not in (0, 1):
        raise ValueError(f"sampling_probability must be either a scalar or a vector. saw "
                         f"shape: {p.shape}")
    return p


class ScheduledEmbeddingTrainingHelper(TrainingHelper):
    def __init__(self, inputs, sequence_length, embedding, sampling_probability,
                 time_major=False, seed=None, scheduling_seed=None, name=None):
        from tensorflux.nn import embedding_ops

        self._embed = embedding if callable(embedding) else \
            (lambda ids: embedding_ops.embedding_lookup(embedding, ids))
        self._sampling_probability = _probability(sampling_probability)
        self._seed, self._scheduling_seed = seed, scheduling_seed
        super().__init__(inputs, sequence_length, time_major=time_major, name=name)

    def sample(self, time, outputs, state, name=None):
        from tensorflux.ops import array_ops, comparison_ops

        chosen = _bernoulli(self._sampling_probability, self.batch_size,
                            self._scheduling_seed)
        return comparison_ops.where(chosen, _categorical(outputs, self._seed),
                                    array_ops.fill(array_ops.reshape(self.batch_size, [1]),
                                                   -1))

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        from tensorflux.ops import comparison_ops, math_ops

        finished, base, state = super().next_inputs(time, outputs, state, sample_ids)
        sampled = comparison_ops.greater(sample_ids, -1)
        embedded = self._embed(math_ops.maximum(sample_ids, 0))
        return finished, _rows_where(sampled, embedded, base), state


class ScheduledOutputTrainingHelper(TrainingHelper):
    sample_ids_dtype = dtypes.bool

    def __init__(self, inputs, sequence_length, sampling_probability, time_major=False,
                 seed=None, next_inputs_fn=None, auxiliary_inputs=None, name=None):
        from tensorflux.ops import joining_ops, tensor_array_ops

        self._sampling_probability = _probability(sampling_probability)
        self._seed, self._next_inputs_fn = seed, next_inputs_fn
        inputs = convert_to_tensor(inputs, name="inputs")
        self._aux = None
        if auxiliary_inputs is not None:
            aux = convert_to_tensor(auxiliary_inputs, name="auxiliary_inputs")
            inputs = joining_ops.concat([inputs, aux], -1)
            if not time_major:
                from tensorflux.contrib.seq2seq_decoder import _batch_time_swap

                aux = _batch_time_swap(aux)
            self._aux = tensor_array_ops.TensorArray(
                aux.dtype, size=0, dynamic_size=True,
                element_shape=aux.shape[1:]).unstack(aux)
        super().__init__(inputs, sequence_length, time_major=time_major, name=name)

    def sample(self, time, outputs, state, name=None):
        return _bernoulli(self._sampling_probability, self.batch_size, self._seed)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        from tensorflux.control_flow import builders
        from tensorflux.ops import comparison_ops, joining_ops, math_ops, reduction_ops

        finished, base, state = super().next_inputs(time, outputs, state, sample_ids)
        sample_ids = math_ops.cast(sample_ids, dtypes.bool)

        def sampled():
            fed = outputs if self._next_inputs_fn is None else self._next_inputs_fn(outputs)
            if self._aux is not None:
                fed = joining_ops.concat([fed, self._aux.read(time + 1)], -1)
            return _rows_where(sample_ids, fed, base)

        skip = comparison_ops.logical_or(reduction_ops.reduce_all(finished),
                                         comparison_ops.logical_not(
                                             reduction_ops.reduce_any(sample_ids)))
        return finished, builders.cond(skip, lambda: base, sampled), state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None,
                 seed=None):
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time, outputs, state, name=None):
        from tensorflux.framework.operation import Tensor

        if not isinstance(outputs, Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        logits = outputs if self._softmax_temperature is None else \
            outputs / self._softmax_temperature
        return _categorical(logits, self._seed)


class InferenceHelper(Helper):
    """Feeds `sample_fn(outputs)` (through `next_inputs_fn` if given) back as the next
    input; a row finishes when `end_fn(sample_ids)` says so."""

    def __init__(self, sample_fn, sample_shape, sample_dtype, start_inputs, end_fn,
                 next_inputs_fn=None):
        from tensorflux.ops import array_ops

        self._sample_fn, self._end_fn = sample_fn, end_fn
        self._next_inputs_fn = next_inputs_fn
        self.sample_ids_shape = tensor_shape.TensorShape(sample_shape)
        self.sample_ids_dtype = dtypes.as_dtype(sample_dtype)
        self._start_inputs = convert_to_tensor(start_inputs, name="start_inputs")
        self.batch_size = array_ops.shape(self._start_inputs)[0]

    def initialize(self, name=None):
        from tensorflux.ops import array_ops

        finished = array_ops.fill(array_ops.reshape(self.batch_size, [1]), False)
        return finished, self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = self._end_fn(sample_ids)
        fed = sample_ids if self._next_inputs_fn is None else self._next_inputs_fn(sample_ids)
        return finished, fed, state


class CustomHelper(Helper):
    """A helper made of `initialize_fn()` -> (finished, inputs), `sample_fn(time, outputs,
    state)` -> ids and `next_inputs_fn(time, outputs, state, sample_ids)` -> (finished,
    inputs, state); the batch size is the size of the first `finished`."""

    def __init__(self, initialize_fn, sample_fn, next_inputs_fn, sample_ids_shape=None,
                 sample_ids_dtype=None):
        self._initialize_fn, self._sample_fn = initialize_fn, sample_fn
        self._next_inputs_fn = next_inputs_fn
        self.sample_ids_shape = tensor_shape.TensorShape(sample_ids_shape or [])
        self.sample_ids_dtype = dtypes.as_dtype(sample_ids_dtype or dtypes.int32)
        self._batch_size = None

    @property
    def batch_size(self):
        if self._batch_size is None:
            raise ValueError("batch_size accessed before initialize was called")
        return self._batch_size

    def initialize(self, name=None):
        from tensorflux.ops import array_ops

        finished, inputs = self._initialize_fn()
        if self._batch_size is None:
            self._batch_size = array_ops.size(finished)
        return finished, inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        return self._next_inputs_fn(time=time, outputs=outputs, state=state,
                                    sample_ids=sample_ids)
