"""Lookup tables filled from datasets (tensorflux/data/lookup.py; the
InitializeTableFromDataset op and kernel): tf.data.experimental.DatasetInitializer,
table_from_dataset, index_table_from_dataset, against TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


PROGRAM = """
E = tf.data.experimental
keys = tf.data.Dataset.range(100, 105)
ds = tf.data.Dataset.zip((keys, tf.data.Dataset.range(5).map(lambda x: x * 10)))
words = tf.data.Dataset.from_tensor_slices([b"a", b"b", b"c"])
tables = [
    tf.lookup.StaticHashTable(E.DatasetInitializer(ds), -1),
    E.table_from_dataset(ds, default_value=-1, num_oov_buckets=2, key_dtype=tf.int64),
    E.table_from_dataset(ds, default_value=-5, vocab_size=3, key_dtype=tf.int64),
    E.index_table_from_dataset(tf.data.Dataset.range(3, 6), key_dtype=tf.int64,
                               num_oov_buckets=3),
    E.index_table_from_dataset(words, num_oov_buckets=1),
    E.index_table_from_dataset(words, num_oov_buckets=4,
                               hasher_spec=E.table_from_dataset.__defaults__[4]._replace(
                                   hasher="legacy")),
    E.table_from_dataset(tf.data.Dataset.zip((words, words.map(lambda w: w + b"!"))),
                         default_value=b"?"),
]
int_keys = tf.constant([100, 104, 7, 5, 3, 1000], tf.int64)
str_keys = tf.constant([b"b", b"zz", b"a", b"q"])
lookups = [t.lookup(int_keys if t.key_dtype == tf.int64 else str_keys) for t in tables]
sizes = [t.size() for t in tables]
names = [t.resource_handle.op.name for t in tables]
with tf.Session() as sess:
    sess.run(tf.tables_initializer())
    values = [sess.run(x).tolist() for x in lookups]
    counts = [int(sess.run(x)) for x in sizes]
"""


@pytest.mark.oracle
def test_tables_are_tensorflows(graph):
    want = run_tf(PROGRAM + "result = [values, counts, names]")
    scope: dict = {"tf": tf}
    exec(PROGRAM, scope)
    got = [scope["values"], scope["counts"], scope["names"]]
    values = want[0][:-1] + [[_b64(v) for v in want[0][-1]]]
    assert got == [values, want[1], want[2]]
    assert want[0][0] == [0, 40, -1, -1, -1, -1]


def _b64(v):
    import base64

    return base64.b64decode(v["__b64__"]) if isinstance(v, dict) else v


CHECKS = """
E = tf.data.experimental
keys = tf.data.Dataset.range(3)
pairs = tf.data.Dataset.zip((keys, keys))
builds = [
    lambda: E.DatasetInitializer(tf.data.Dataset.zip((keys, keys, keys))),
    lambda: E.DatasetInitializer(tf.data.Dataset.zip((keys.batch(2), keys))),
    lambda: E.DatasetInitializer(tf.data.Dataset.zip((keys, keys.batch(2)))),
    lambda: E.table_from_dataset(pairs, num_oov_buckets=-1),
    lambda: E.table_from_dataset(pairs, vocab_size=0),
    lambda: E.table_from_dataset(pairs, key_dtype=tf.float32),
    lambda: E.table_from_dataset(tf.data.Dataset.zip((keys, keys.map(tf.as_string)))),
    lambda: E.table_from_dataset(pairs, num_oov_buckets=2),
]
errors = []
for build in builds:
    try:
        build()
        errors.append(None)
    except (ValueError, TypeError) as e:
        errors.append([type(e).__name__, str(e)[:150]])
t1 = E.table_from_dataset(pairs, vocab_size=7, key_dtype=tf.int64)
t2 = E.table_from_dataset(tf.data.Dataset.zip((
    tf.data.Dataset.from_tensor_slices([1, 1]), tf.data.Dataset.from_tensor_slices([2, 3]))))
runs = []
with tf.Session() as sess:
    for t in (t1, t2):
        try:
            sess.run(t.initializer)
            runs.append(None)
        except tf.errors.OpError as e:
            m = e.message
            k = m.find("Node: ")
            m = m[k:].split("\\n")[1] if k >= 0 else m
            runs.append([type(e).__name__, m.split("\\n")[0]])
"""


@pytest.mark.oracle
def test_errors_are_tensorflows(graph):
    want = run_tf(CHECKS + "result = [errors, runs]")
    scope: dict = {"tf": tf}
    exec(CHECKS, scope)
    strip = [e if e is None or "element spec" not in e[1] else [e[0], e[1][:120]]
             for e in want[0]]
    got = [e if e is None or "element spec" not in e[1] else [e[0], e[1][:120]]
           for e in scope["errors"]]
    assert [got, scope["runs"]] == [strip, want[1]]
    assert want[1][1][1].startswith("HashTable has different value for same key")


def test_the_initializer_runs_with_tables_initializer_and_again(graph):
    v = tf.placeholder(tf.int64, [None])
    ds = tf.data.Dataset.zip((tf.data.Dataset.from_tensor_slices(v),
                              tf.data.Dataset.from_tensor_slices(v * 2)))
    init = tf.data.experimental.DatasetInitializer(ds)
    assert (init.key_dtype, init.value_dtype) == (tf.int64, tf.int64)
    table = tf.lookup.StaticHashTable(init, -1)
    assert table.initializer in tf.get_collection(tf.GraphKeys.TABLE_INITIALIZERS)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not initialized"):
            sess.run(table.lookup(tf.constant([1], tf.int64)))
        sess.run(tf.tables_initializer(), {v: [1, 2, 3]})
        sess.run(tf.tables_initializer(), {v: [1, 2, 3]})  # the same contents: a no-op
        np.testing.assert_array_equal(sess.run(table.lookup(tf.constant([3, 9], tf.int64))),
                                      [6, -1])
        with pytest.raises(tf.errors.FailedPreconditionError, match="different data"):
            sess.run(table.initializer, {v: [4]})
    with pytest.raises(TypeError, match="Invalid key dtype"):
        init.initialize(tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer([b"a"], [1]), -1))
