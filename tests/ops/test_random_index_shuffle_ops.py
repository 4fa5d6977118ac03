"""RandomIndexShuffle (tensorflux/ops/random_index_shuffle_ops.py): a bijection of
[0, max_index] per seed (checked with NumPy), TensorFlow's values for every index dtype, seed
dtype, round count and block size (pinned, and against the oracle), the op definition and
static shapes as TensorFlow's, and its run-time errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors, op_registry
from tests import oracle

pytestmark = pytest.mark.usefixtures("fresh_graph")


def run(fetch, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed_dict)


def shuffle(index, seed, max_index, dtype=tf.int64, seed_dtype=tf.int64, rounds=4):
    return tf.random_index_shuffle(tf.constant(index, dtype), tf.constant(seed, seed_dtype),
                                   tf.constant(max_index, dtype), rounds=rounds)


# (max_index, seed, rounds, TensorFlow's outputs for indexes 0..9): the walk through the
# 16-bit block's table (small max_index), the element-wise walk, more rounds, a 42-bit block
# and max_index = 2^16 (a 16-bit block, which 65536 itself does not fit).
PINNED = [
    (9, (1, 2, 3), 4, [2, 0, 6, 4, 8, 1, 7, 9, 5, 3]),
    (100000, (5, 6, 7), 4, [34240, 5367, 99811, 70868, 16596, 52154, 92054, 23446, 34636,
                            31937]),
    (9, (1, 2, 3), 8, [6, 9, 4, 1, 3, 2, 0, 5, 7, 8]),
    (2**40, (11, 12, 13), 6, [366085361699, 293333175086, 377364260385, 303010019644,
                              344501425171, 280339203850, 354689772049, 291072916760,
                              406653106787, 339806172518]),
    (65536, (1, 2, 3), 4, [7886, 23762, 39666, 58068, 7056, 22922, 65476, 34766, 5234,
                           18216]),
]


@pytest.mark.parametrize("max_index, seed, rounds, want", PINNED)
def test_pinned_values_of_tensorflow(max_index, seed, rounds, want):
    got = run(shuffle(np.arange(10), seed, max_index, rounds=rounds))
    assert got.tolist() == want


@pytest.mark.parametrize("max_index", [0, 1, 2, 5, 63, 1000, 65535, 65537, 300000])
@pytest.mark.parametrize("seed", [(0, 0, 0), (7, -3, 2**31 - 1)])
def test_a_bijection_of_the_range(max_index, seed):
    size = min(max_index + 1, 5000)
    got = run(shuffle(np.arange(size), seed, max_index))
    assert got.dtype == np.int64
    assert got.min() >= 0 and got.max() <= max_index
    assert np.unique(got).size == size
    if size == max_index + 1:
        np.testing.assert_array_equal(np.sort(got), np.arange(size))


def test_each_output_its_own_seed_and_max_index():
    seeds = [[1, 2, 3], [4, 5, 6], [1, 2, 3]]
    got = run(shuffle([3, 3, 3], seeds, [9, 9, 100000]))
    assert got[0] == run(shuffle(3, [1, 2, 3], 9))
    assert got[1] == run(shuffle(3, [4, 5, 6], 9))
    assert got[2] == run(shuffle(3, [1, 2, 3], 100000))


_ORACLE_PROGRAM = """
cases = {}
for dt in (tf.int32, tf.uint32, tf.int64, tf.uint64):
    for sdt in (tf.int32, tf.uint32, tf.int64, tf.uint64):
        seed = [5, 2**31 - 7, 12] if sdt in (tf.uint32, tf.uint64, tf.int64) else [5, -7, 12]
        cases[f"{dt.name}/{sdt.name}"] = tf.random_index_shuffle(
            tf.constant(np.arange(40), dt), tf.constant(seed, sdt), tf.constant(39, dt))
for r in (4, 6, 10):
    for m in (1, 2**16 - 1, 2**17, 2**20 + 3, 2**31 - 1, 2**32 - 1, 2**32, 2**45 + 17):
        cases[f"r{r}/m{m}"] = tf.random_index_shuffle(
            tf.constant([0, 1, m // 3, m // 2, m], tf.int64),
            tf.constant([[r, m % 97, 3]] * 5, tf.int64), tf.constant(m, tf.int64), rounds=r)
big = 2**64 - 5
cases["u64"] = tf.random_index_shuffle(tf.constant([0, 9, 2**63, big], tf.uint64),
                                       tf.constant([9, 8, 7], tf.uint64),
                                       tf.constant(big, tf.uint64))
cases["scalar"] = tf.random_index_shuffle(7, [1, 2, 3], 11)
cases["vector_max"] = tf.random_index_shuffle(7, [1, 2, 3], [7, 8, 9, 300])
cases["vector_seed"] = tf.random_index_shuffle(1, [[1, 2, 3], [3, 2, 1]], 1)
with tf.Session() as sess:
    result = {k: v.tolist() for k, v in sess.run(cases).items()}
"""


@pytest.mark.oracle
def test_values_equal_tensorflow():
    ours, theirs = oracle.run_both(_ORACLE_PROGRAM, tf)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        assert ours[key] == theirs[key], key


# ---- definition, shapes, errors ---------------------------------------------------------


@pytest.mark.oracle
def test_op_definition_matches_tensorflow():
    from google.protobuf import json_format

    theirs = oracle.run_tf("""
from google.protobuf import json_format
from tensorflow.python.framework import op_def_registry
d = json_format.MessageToDict(op_def_registry.get("RandomIndexShuffle"))
d.pop("summary", None); d.pop("description", None)
result = json.dumps(d, sort_keys=True)
""")
    ours = json_format.MessageToDict(op_registry.get("RandomIndexShuffle").to_proto())
    assert json.loads(theirs) == ours
    assert op_registry.get_gradient("RandomIndexShuffle") == op_registry.NOT_DIFFERENTIABLE


def _p(shape):
    return tf.placeholder(tf.int32, shape)


# (index, seed, max_index) shapes -> the static shape, or the ValueError's words (TF's)
SHAPES = [
    ([], [3], [], []),
    ([4], [3], [], [4]),
    ([None], [5, 3], [], [5]),
    (None, [5, 3], [], [5]),
    ([], None, [], None),
    ([], [3], None, None),
    ([], [3], [None], [None]),
    ([None], [3], [4], [4]),
    ([], [None, 3], [], [None]),
    ([4], [5, 3], [], "Seed has shape [5, 3] but must have shape [4, 3]. since index had "
                      "shape [4]."),
    ([], [5, 3], [4], "Max index has shape [4] but must have shape [5]."),
    ([2], [3], [3], "Max index has shape [3] but must have shape [2]."),
    ([], [2], [], "Seed must have shape [3] or [n, 3] but got [2]."),
    ([], [None], [], "Seed must have shape [3] or [n, 3] but got [-1]."),
    ([], [5, 4], [], "Seed must have shape [3] or [n, 3] but got [5, 4]."),
    ([1, 1], [3], [], "Shape must be at most rank 1 but is rank 2"),
    ([], [5, 3, 1], [], "Shape must be at most rank 2 but is rank 3"),
    ([], [], [], "Shape must be at least rank 1 but is rank 0"),
]


@pytest.mark.parametrize("index, seed, max_index, want", SHAPES)
def test_static_shapes_as_tensorflow(index, seed, max_index, want):
    if isinstance(want, str):
        with pytest.raises(ValueError, match=want.replace("[", r"\[").replace("]", r"\]")
                           .replace(".", r"\.")):
            tf.random_index_shuffle(_p(index), _p(seed), _p(max_index))
        return
    out = tf.random_index_shuffle(_p(index), _p(seed), _p(max_index))
    assert out.shape.as_list() == want if want is not None else out.shape.ndims is None


# (index, seed, max_index, rounds) -> TensorFlow's message (rounds: TF leaves it unchecked)
RUN_ERRORS = [
    (12, [1, 2, 3], 9, 4, "max_index must be >= index, but 9 < 12"),
    (-1, [1, 2, 3], 9, 4, "index must be >= 0 but was -1"),
    (3, [1, 2, 3], -1, 4, "max_index must be >= 0 but was -1"),
    ([3, 4], [[1, 2, 3]], 9, 4, "Seed must be a vector of size [3] or a matrix of size "
                                "[2, 3] but got [1,3]."),
    (3, [1, 2, 3], 9, 3, "rounds must be an even number of at least 4, but is 3"),
    (3, [1, 2, 3], 9, 2, "rounds must be an even number of at least 4, but is 2"),
]


@pytest.mark.parametrize("index, seed, max_index, rounds, message", RUN_ERRORS)
def test_run_time_errors(index, seed, max_index, rounds, message):
    feeds = {}
    args = []
    for value in (index, seed, max_index):
        p = tf.placeholder(tf.int32)
        feeds[p] = value
        args.append(p)
    out = tf.random_index_shuffle(*args, rounds=rounds)
    with pytest.raises(errors.InvalidArgumentError) as info:
        run(out, feeds)
    assert message in str(info.value)
