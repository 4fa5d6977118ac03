"""TF1's IdTableWithHashBuckets (tf.contrib.lookup; also under table_from_dataset) with
each hasher: ids and sizes equal to TensorFlow 2.21's on the same keys (recorded from
tensorflow.python.ops.lookup_ops), its argument checks and messages."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import lookup

KEYS = ["a", "b", "c", "zz", "q"]
# hasher -> (ids of KEYS over a table {a: 0, b: 1} with 5 buckets, ids of ["a", "c"] with
# no table and 5 buckets), as TensorFlow computes them
EXPECTED = {
    "fasthash": ([0, 1, 4, 4, 5], [4, 2]),
    "legacy": ([0, 1, 4, 3, 5], [3, 2]),
    "stronghash": ([0, 1, 6, 5, 5], [1, 4]),
}
SPECS = {"fasthash": lookup.FastHashSpec, "legacy": lookup.HasherSpec("legacy", None),
         "stronghash": lookup.StrongHashSpec((1, 2))}


def _table():
    return lookup.HashTable(lookup.KeyValueTensorInitializer(
        ["a", "b"], tf.constant([0, 1], tf.int64)), -1)


@pytest.mark.parametrize("hasher", list(EXPECTED))
def test_ids_and_sizes_equal_tensorflows(hasher):
    with tf.Graph().as_default(), tf.Session() as s:
        with_table = lookup.IdTableWithHashBuckets(_table(), 5, hasher_spec=SPECS[hasher])
        alone = lookup.IdTableWithHashBuckets(None, 5, hasher_spec=SPECS[hasher],
                                              key_dtype=tf.string)
        assert (with_table.name, alone.name) == ("hash_table", "hash_bucket")
        s.run(tf.tables_initializer())
        ids, size, alone_ids, alone_size = s.run([
            with_table.lookup(tf.constant(KEYS)), with_table.size(),
            alone.lookup(tf.constant(["a", "c"])), alone.size()])
        np.testing.assert_array_equal(ids, EXPECTED[hasher][0])
        np.testing.assert_array_equal(alone_ids, EXPECTED[hasher][1])
        assert (size, alone_size) == (7, 5)


def test_integer_keys_and_a_table_without_buckets():
    with tf.Graph().as_default(), tf.Session() as s:
        for dtype in (tf.int64, tf.int32):
            table = lookup.IdTableWithHashBuckets(None, 7, key_dtype=dtype)
            np.testing.assert_array_equal(s.run(table.lookup(tf.constant([1, 2, 3], dtype))),
                                          [5, 5, 2])
        plain = lookup.IdTableWithHashBuckets(_table(), 0)
        s.run(tf.tables_initializer())
        np.testing.assert_array_equal(s.run(plain.lookup(tf.constant(["b", "x"]))), [1, -1])


@pytest.mark.parametrize("make,error,message", [
    (lambda: lookup.IdTableWithHashBuckets(None, 0), ValueError,
     "`oov_buckets` must be > 0 if no `table` is supplied."),
    (lambda: lookup.IdTableWithHashBuckets(None, 3, hasher_spec="x"), TypeError,
     "`hasher_spec` must be of type HasherSpec, got <class 'str'>."),
    (lambda: lookup.StrongHashSpec([1]), ValueError, "`key` must have size 2, received 1"),
    (lambda: lookup.StrongHashSpec(["a", 2]), TypeError,
     "Invalid key ['a', 2]. Must be unsigned integer values."),
    (lambda: lookup.IdTableWithHashBuckets(_table(), 3, key_dtype=tf.int64), TypeError,
     "Invalid `key dtype`, expected integer but got <dtype: 'string'>."),
    (lambda: lookup.IdTableWithHashBuckets(None, 3, key_dtype=tf.float32), TypeError,
     "Invalid `key_dtype`, expected integer or string, got <dtype: 'float32'>."),
])
def test_argument_errors_as_tensorflow(make, error, message):
    with tf.Graph().as_default():
        with pytest.raises(error) as e:
            make()
        assert str(e.value) == message
