"""Graph-level and op-level random seeds (`tf.set_random_seed`, TF1 rules).

A random op's kernel is seeded from two attributes, `seed` and `seed2`; `get_seed` derives
them from the graph seed (`tf.set_random_seed`) and the op's own `seed` argument:

  graph seed | op seed | (seed, seed2)
  -----------+---------+-------------------------------------------------------------
  None       | None    | (None, None): the kernel seeds itself from OS entropy
  None       | s       | (DEFAULT_GRAPH_SEED, s)
  g          | None    | (g, n): n counts the ops of this graph that took a seed so far
  g          | s       | (g, s)

Both values are reduced modulo 2**31 - 1, and (0, 0), which kernels read as "unseeded", is
replaced by (0, 2**31 - 1). So with a graph seed, a program builds the same sequence of random
values in every fresh Session, while two random ops of one graph still differ.
"""

from __future__ import annotations

from tensorflux.framework import graph as graph_lib

__all__ = ["set_random_seed", "get_seed"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def _truncate_seed(seed: int) -> int:
    return int(seed) % _MAXINT32  # fits a 32-bit signed integer


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The (seed, seed2) pair a random op should use, from the default graph's seed.

    Args:
      op_seed: the op-level seed, or None.

    Returns:
      A pair of ints, or (None, None) when neither seed is set (nondeterministic).
    """
    g = graph_lib.get_default_graph()
    global_seed = g.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = g._next_op_seed() - 1  # the first op of a graph gets 0, as in TF
        seeds = (_truncate_seed(global_seed), _truncate_seed(op_seed))
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, _truncate_seed(op_seed))
    else:
        return None, None
    if seeds == (0, 0):  # kernels read (0, 0) as "unseeded"
        return 0, _MAXINT32
    return seeds


def set_random_seed(seed: int | None) -> None:
    """Sets the graph-level random seed of the default graph (`tf.set_random_seed`).

    Args:
      seed: an integer, or None to clear it.
    """
    graph_lib.get_default_graph().seed = None if seed is None else int(seed)
