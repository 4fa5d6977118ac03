"""tf.contrib modules that are TF1's names for core ones: lookup (plus contrib's own tables),
signal, keras, stateless."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import lookup


def test_hash_table_and_index_tables(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\nc\n")
    with tf.Graph().as_default(), tf.Session() as sess:
        table = lookup.HashTable(lookup.KeyValueTensorInitializer(["x", "y"], [1, 2],
                                                                  tf.string, tf.int64), -1)
        ids = lookup.index_table_from_file(str(vocab), num_oov_buckets=0)
        back = lookup.index_to_string_table_from_tensor(["a", "b"])
        old = lookup.string_to_index(tf.constant(["c", "a", "q"]), ["a", "b", "c"])
        hashed = lookup.IdTableWithHashBuckets(table, 3)
        sess.run(tf.tables_initializer())
        assert sess.run(table.lookup(tf.constant(["y", "z"]))).tolist() == [2, -1]
        assert sess.run(ids.lookup(tf.constant(["b", "z"]))).tolist() == [1, -1]
        assert sess.run(back.lookup(tf.constant([1, 5], tf.int64))).tolist() == [b"b", b"UNK"]
        assert sess.run(old).tolist() == [2, 0, -1]
        got = sess.run(hashed.lookup(tf.constant(["x", "w", "w"])))
        assert got[0] == 1 and 2 <= got[1] < 5 and got[1] == got[2]
        assert sess.run(hashed.size()) == 5


def test_mutable_dense_hash_table():
    with pytest.raises(ValueError, match="Empty and deleted keys must have different values"):
        lookup.MutableDenseHashTable(tf.int64, tf.float32, -1.0, empty_key=0, deleted_key=0)
    with tf.Graph().as_default(), tf.Session() as sess:
        t = lookup.MutableDenseHashTable(tf.int64, tf.float32, -1.0, empty_key=0,
                                         deleted_key=-1)
        sess.run(t.insert(tf.constant([5, 7], tf.int64), tf.constant([0.5, 0.7])))
        got = sess.run(t.lookup(tf.constant([7, 8], tf.int64)))
        np.testing.assert_allclose(got, [0.7, -1.0])


def test_aliases():
    c = tf.contrib
    assert c.signal.stft is tf.signal.stft and c.signal.hann_window is tf.signal.hann_window
    assert c.keras.layers.Dense is tf.keras.layers.Dense and c.keras.backend is tf.keras.backend
    assert c.stateless.stateless_random_uniform is tf.random.stateless_uniform
    with tf.Graph().as_default(), tf.Session() as sess:
        a = c.stateless.stateless_random_normal([3], seed=[1, 2])
        b = tf.random.stateless_normal([3], seed=[1, 2])
        np.testing.assert_array_equal(*sess.run([a, b]))
