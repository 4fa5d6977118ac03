"""RandomIndexShuffle: a stateless pseudorandom bijection of [0, max_index], TensorFlow's
values for every seed (`tf.random_index_shuffle`).

TensorFlow computes it with a cycle-walking cipher: a Simon-like Feistel block cipher whose
block is the smallest even number of bits (at least 16) holding max_index, keyed by the
three 32-bit words of the seed; an index is encrypted again and again until it falls in
[0, max_index]. Kernel: tensorflux/kernels/cpu/random_index_shuffle_ops.py.
"""

from __future__ import annotations

from tensorflux.framework import common_shapes, tensor_shape
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__ = ["random_index_shuffle"]

_INTS = "{int32, uint32, int64, uint64}"


def _dim_str(dims) -> str:
    return "[" + ", ".join("-1" if d is None else str(d) for d in dims) + "]"


def _random_index_shuffle_shape(op):
    """A scalar when every input is one (seed [3]); else a vector of the one length that
    index [n], seed [n, 3] and max_index [n] agree on; unknown while a rank is."""
    index_t, seed_t, max_t = op.inputs
    index = common_shapes.checked_dims(index_t)
    if index is not None and len(index) > 1:
        raise ValueError(f"Shape must be at most rank 1 but is rank {len(index)}")
    seed = common_shapes.checked_dims(seed_t, at_least=1)
    if seed is not None:
        if len(seed) > 2:
            raise ValueError(f"Shape must be at most rank 2 but is rank {len(seed)}")
        if seed[-1] != 3:
            raise ValueError(f"Seed must have shape [3] or [n, 3] but got {_dim_str(seed)}.")
    max_index = common_shapes.checked_dims(max_t)
    if max_index is not None and len(max_index) > 1:
        raise ValueError(f"Shape must be at most rank 1 but is rank {len(max_index)}")
    vector = (index is not None and len(index) == 1) or (seed is not None and len(seed) == 2) \
        or (max_index is not None and len(max_index) == 1)
    if not vector:
        if index is None or seed is None or max_index is None:
            return [tensor_shape.unknown_shape()]
        return [tensor_shape.TensorShape([])]
    n = index[0] if index else None
    if seed is not None and len(seed) == 2:
        if n is not None and seed[0] is not None and seed[0] != n:
            raise ValueError(f"Seed has shape {_dim_str(seed)} but must have shape "
                             f"[{n}, 3]. since index had shape [{n}].")
        n = seed[0] if n is None else n
    if max_index:
        if n is not None and max_index[0] is not None and max_index[0] != n:
            raise ValueError(f"Max index has shape [{max_index[0]}] but must have shape "
                             f"[{n}].")
        n = max_index[0] if n is None else n
    return [tensor_shape.TensorShape([n])]


define_op("RandomIndexShuffle", inputs=["index: dtype", "seed: Tseed", "max_index: dtype"],
          outputs=["output: dtype"],
          attrs=["rounds: int = 4", f"dtype: {_INTS}", f"Tseed: {_INTS}"],
          shape_fn=_random_index_shuffle_shape)
not_differentiable("RandomIndexShuffle")


def random_index_shuffle(index, seed, max_index, rounds=4, name=None):
    """The position of `index` in a pseudorandom permutation of [0, max_index].

    For a fixed seed and max_index the map index -> output is a bijection of
    [0, max_index]; the same inputs give the same output in every run (TensorFlow's values).

    Args:
      index: a scalar or vector of int32, uint32, int64 or uint64, each in [0, max_index].
      seed: the permutation's key, shape [3], or [n, 3] with one key per output.
      max_index: the largest index, a scalar or vector of index's dtype.
      rounds: the number of cipher rounds, an even number of at least 4.
      name: a name for the operation.

    Returns:
      A tensor of index's dtype: a scalar when every input is one, else a vector.

    Raises:
      InvalidArgumentError (at run time): an index outside [0, max_index], a negative
        max_index, mismatched lengths, or rounds odd or below 4.
    """
    return apply_op("RandomIndexShuffle", index=index, seed=seed, max_index=max_index,
                    rounds=rounds, name=name or "RandomIndexShuffle")
