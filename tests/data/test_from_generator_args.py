"""Dataset.from_generator as TF1 programs use it: `args=` converted to tensors and handed to
the generator as NumPy values when a pass starts, and yielded values converted with NumPy's
`asarray(value, dtype)` (floats promised as integers truncated).

Found by public TF1 programs: Kyubyong/transformer's `generator_fn(sents1, sents2,
vocab_fpath)` gets its sentences through `args=` and calls `.decode("utf-8")` on each;
chiphuyen's word2vec generator yields float64 labels (`np.zeros([batch, 1])`) for an int32
component.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

# What the generator receives: (type name, dtype, shape, value) per argument, the value as
# plain Python (bytes kept as bytes).
ARGS_PROGRAM = """
seen = []
def gen(*args):
    row = []
    for a in args:
        v = a.tolist() if hasattr(a, "tolist") else a
        row.append([type(a).__name__, str(getattr(a, "dtype", "")),
                    list(getattr(a, "shape", [])) if hasattr(a, "shape") else None,
                    [x.decode() if isinstance(x, bytes) else x for x in v]
                    if isinstance(v, list) else (v.decode() if isinstance(v, bytes) else v)])
    seen.append(row)
    for i in range(int(args[6])):
        yield i
p = tf.placeholder(tf.int64, [])
ds = tf.data.Dataset.from_generator(
    gen, tf.int64, tf.TensorShape([]),
    args=(["ab", "cd"], "path", 3, 2.5, [1, 2], b"x", p, tf.constant([1.5, 2.5])))
it = tf.data.make_initializable_iterator(ds)
nxt = it.get_next()
out = []
with tf.Session() as s:
    for n in (2, 3):
        s.run(it.initializer, {p: n})
        while True:
            try:
                out.append(int(s.run(nxt)))
            except tf.errors.OutOfRangeError:
                break
result = {"seen": seen, "out": out}
"""


@pytest.mark.oracle
def test_generator_args_are_evaluated_per_pass_and_passed_as_numpy_values_like_tf():
    ours, theirs = run_both(ARGS_PROGRAM, tf)
    assert ours == theirs
    first = ours["seen"][0]
    assert first[0][:2] == ["ndarray", "object"] and first[0][3] == ["ab", "cd"]
    assert first[1][0] == "bytes" and first[2][:2] == ["int32", "int32"]
    assert [row[6][3] for row in ours["seen"]] == [2, 3]  # the placeholder, fed per pass
    assert ours["out"] == [0, 1, 0, 1, 2]


def test_generator_args_strings_arrive_as_bytes_for_decode():
    """Kyubyong/transformer's pattern: sentences and a vocabulary path through `args`."""
    def gen(sents, path):
        assert isinstance(path, bytes)
        for s in sents:
            yield len(s.decode("utf-8").split())

    ds = tf.data.Dataset.from_generator(gen, tf.int32, tf.TensorShape([]),
                                        args=(["a b", "c d e"], "vocab.txt"))
    nxt = tf.data.make_one_shot_iterator(ds.repeat(2)).get_next()
    with tf.Session() as s:
        assert [s.run(nxt) for _ in range(4)] == [2, 3, 2, 3]


@pytest.mark.parametrize("value, dtype, expected", [
    (np.array([[2.7], [-1.5]]), tf.int32, np.array([[2], [-1]], np.int32)),  # truncated
    ([True, False], tf.float32, np.array([1.0, 0.0], np.float32)),
    (np.int64(3), tf.int32, np.int32(3)),
    (2 ** 40, tf.int32, np.int32(0)),  # wraps, as TF's conversion does
])
def test_yielded_values_convert_like_numpy_asarray_with_the_dtype(value, dtype, expected):
    """TF 1.x converts with `np.asarray(value, dtype)`; these cases give the same under TF
    2.21 (which refuses a Python list of floats for an integer dtype, and numeric text)."""
    ds = tf.data.Dataset.from_generator(lambda: iter([value]), dtype)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as s:
        got = s.run(nxt)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_yielded_text_that_is_no_number_is_an_invalid_argument():
    ds = tf.data.Dataset.from_generator(lambda: iter(["abc"]), tf.int32)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                          match="expected type was int32.*'abc'"):
        s.run(nxt)
