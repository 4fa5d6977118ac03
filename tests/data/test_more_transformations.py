"""tf.data's further transformations (shard, window, scan, reduce, unique, take_while,
ignore_errors, group_by_window, choose/sample_from_datasets, cardinality, ...) and
tf.data.experimental (map_and_batch, parallel_interleave, bucket_by_sequence_length,
group_by_reducer, CSV readers, make_batched_features_dataset, TFRecordWriter): one TF1
program whose results are checked against the values TensorFlow 2.21 gives (recorded
below, and compared live when the oracle is installed)."""

from __future__ import annotations

import base64
import textwrap

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

PROGRAM = r"""
import os, tempfile
D = tf.data.Dataset
E = tf.data.experimental
d = tempfile.mkdtemp()
for name, text in (("a.csv", "x,y,name\n1,2.5,foo\n3,,bar\n"),
                   ("b.csv", "x,y,name\n5,6.0,baz\n")):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)
rec = os.path.join(d, "out.tfrecord")
ex_path = os.path.join(d, "ex.tfrecord")
w = tf.python_io.TFRecordWriter(ex_path)
for i in range(5):
    w.write(tf.train.Example(features=tf.train.Features(feature={
        "v": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
        "lab": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2]))})
    ).SerializeToString())
w.close()
seqs = D.from_generator(lambda: ([1] * n for n in [3, 1, 5, 2, 4, 6, 1, 2]), tf.int32,
                        tf.TensorShape([None]))
I64 = lambda v: tf.constant(v, tf.int64)
pipelines = {
    "shard": D.range(10).shard(3, 1),
    "window": D.range(7).window(3, 2, 2).flat_map(lambda w: w.batch(3)),
    "window_drop": D.range(7).window(2, 3, drop_remainder=True).flat_map(lambda w: w.batch(2)),
    "window_tuple": D.zip((D.range(5), D.range(5).map(lambda x: x * 2))).window(
        2, drop_remainder=True).flat_map(lambda a, b: D.zip((a.batch(2), b.batch(2)))),
    "scan": D.range(6).scan(I64(0), lambda s, x: (s + x, s * 10)),
    "scan_shape": D.range(4).scan(tf.zeros([0], tf.int64), lambda s, x: (
        tf.concat([s, [x]], 0), tf.size(s))),
    "unique": D.from_tensor_slices([3, 1, 3, 2, 1, 5]).unique(),
    "unique_str": D.from_tensor_slices(["a", "b", "a"]).apply(E.unique()),
    "take_while": D.range(10).take_while(lambda x: x < 4),
    "ignore_errors": D.from_tensor_slices([1., 2., 0., 4.]).map(
        lambda x: tf.check_numerics(1. / x, "bad")).apply(E.ignore_errors()),
    "group_by_window": D.range(10).group_by_window(lambda x: x % 3,
                                                   lambda k, w: w.batch(10), 2),
    "group_tail": D.from_tensor_slices(I64([5, 1, 3, 2, 7, 8, 4, 0])).apply(
        E.group_by_window(lambda x: x % 3, lambda k, w: w.map(lambda v: v * 100 + k).batch(
            10), window_size_func=lambda k: k + 2)),
    "choose_exp": E.choose_from_datasets([D.range(3), D.range(10, 12)],
                                         D.from_tensor_slices(I64([0, 1, 1, 1, 0, 0, 0, 1]))),
    "choose": D.choose_from_datasets([D.range(3), D.range(10, 12)],
                                     D.from_tensor_slices(I64([0, 1, 1, 1, 0, 0, 0, 1]))),
    "counter": E.Counter(2, 3).take(3),
    "counter_f": D.counter(1, -2, tf.float32).take(3),
    "map_and_batch": D.range(7).apply(E.map_and_batch(lambda x: x * 2, 3)),
    "map_and_batch_drop": D.range(7).apply(E.map_and_batch(lambda x: x * 2, 3,
                                                           drop_remainder=True)),
    "parallel_interleave": D.range(1, 4).apply(E.parallel_interleave(
        lambda x: D.range(x * 10, x * 10 + x), cycle_length=2, block_length=2)),
    "enumerate_dataset": D.range(3, 5).apply(E.enumerate_dataset(7)),
    "sparse_batch": D.from_tensor_slices([[1, 0, 0], [2, 3, 0], [4, 5, 6]]).map(
        lambda x: tf.boolean_mask(x, x > 0)).apply(E.dense_to_sparse_batch(2, [4])),
    "bucket": seqs.apply(E.bucket_by_sequence_length(
        lambda s: tf.size(s), [3, 5], [2, 2, 2])),
    "bucket_boundary": seqs.apply(E.bucket_by_sequence_length(
        lambda s: tf.size(s), [3, 7], [3, 3, 3], pad_to_bucket_boundary=True)),
    "bucket_nopad": D.range(9).apply(E.bucket_by_sequence_length(
        lambda x: tf.cast(x, tf.int32), [3, 6], [2, 2, 2], no_padding=True)),
    "group_by_reducer": D.range(10).apply(E.group_by_reducer(
        lambda x: (x * 7) % 3, E.Reducer(lambda k: I64(0), lambda s, x: s + x,
                                         lambda s: s * 10))),
    "list_files": D.list_files(os.path.join(d, "*.csv"), shuffle=False).map(
        lambda p: tf.strings.regex_replace(p, ".*/", "")),
    "csv": E.CsvDataset([os.path.join(d, "a.csv"), os.path.join(d, "b.csv")],
                        [tf.int32, tf.constant([-1.0]), ""], header=True),
    "csv_select": E.CsvDataset(os.path.join(d, "a.csv"), [tf.constant([0.5]), ""],
                               header=True, select_cols=[1, 2]),
    "make_csv": E.make_csv_dataset(os.path.join(d, "*.csv"), 2, label_name="x",
                                   shuffle=False, num_epochs=1),
    "features": E.make_batched_features_dataset(
        ex_path, 2, {"v": tf.FixedLenFeature([], tf.int64),
                     "lab": tf.FixedLenFeature([], tf.int64)},
        label_key="lab", shuffle=False, num_epochs=1),
    "assert_card_ok": D.range(3).apply(E.assert_cardinality(3)),
}
result = {}
def drain(ds):
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as s:
        while True:
            try:
                out.append(s.run(nxt))
            except tf.errors.OutOfRangeError:
                break
    return out
for name, ds in pipelines.items():
    result[name] = drain(ds)
cards = [D.range(10), D.range(10).map(lambda x: x), D.range(10).filter(lambda x: x > 2),
         D.range(10).batch(3), D.range(10).batch(3, True), D.range(10).repeat(),
         D.range(10).repeat(3), D.range(10).take(4), D.range(10).skip(4),
         D.range(10).skip(40), D.range(0).repeat(), D.zip((D.range(3), D.range(5))),
         D.range(3).concatenate(D.range(4)), D.range(10).shard(3, 1), D.range(10).window(3),
         D.range(10).window(3, 2, drop_remainder=True), D.range(10).shuffle(3),
         D.range(10).prefetch(2), D.range(10).cache(),
         D.range(10).flat_map(lambda x: D.range(x)), D.range(10).padded_batch(4, []),
         D.range(10).take(-1), D.range(10).repeat().take(5),
         D.range(10).scan(I64(0), lambda s, x: (s, x)), D.range(10).unique(),
         D.range(10).enumerate(), D.range(10).apply(E.assert_cardinality(10)),
         D.from_tensor_slices([[1, 2], [3, 4]]), D.from_tensors(1), E.RandomDataset(1)]
with tf.Session() as s:
    result["cardinality"] = s.run([E.cardinality(c) for c in cards])
    result["reduce"] = s.run(D.range(5).reduce(I64(0), lambda s, x: s + x))
    result["reduce_tuple"] = s.run(D.range(5).reduce(
        (I64(0), I64(1)), lambda s, x: (s[0] + x, s[1] * (x + 1))))
    result["reduce_shape"] = s.run(D.range(3).reduce(
        tf.zeros([0], tf.int64), lambda s, x: tf.concat([s, [x * 2]], 0)))
    result["single"] = s.run(E.get_single_element(D.from_tensors(([1, 2], "z"))))
    result["single_m"] = s.run(D.range(4).filter(lambda x: x > 2).get_single_element())
    errors = []
    for bad in (lambda: D.range(3).filter(lambda x: x > 5).get_single_element(),
                lambda: D.range(3).get_single_element()):
        try:
            s.run(bad())
        except tf.errors.InvalidArgumentError as e:
            errors.append("InvalidArgumentError")
    result["single_errors"] = errors
w_op = E.TFRecordWriter(rec).write(D.from_tensor_slices(["r1", "r2", "r3"]))
with tf.Session() as s:
    s.run(w_op)
result["tfrecord_writer"] = drain(tf.data.TFRecordDataset(rec))
nxt = tf.data.make_one_shot_iterator(D.range(4).apply(E.assert_cardinality(3))).get_next()
got = []
with tf.Session() as s:
    try:
        for _ in range(5):
            got.append(s.run(nxt))
    except tf.errors.FailedPreconditionError:
        got.append("FailedPreconditionError")
result["assert_card_bad"] = got
result["shapes"] = {k: [x.as_list() if x.ndims is not None else None for x in
                        tf.nest.flatten(tf.data.get_output_shapes(v))]
                    for k, v in pipelines.items() if k not in ("window", "window_drop")}
"""

# What TensorFlow 2.21 (tf.compat.v1) gives for PROGRAM, normalized by _norm.
EXPECTED = {'shard': [1, 4, 7],
 'window': [[0, 2, 4], [2, 4, 6], [4, 6], [6]],
 'window_drop': [[0, 1], [3, 4]],
 'window_tuple': [[[0, 1], [0, 2]], [[2, 3], [4, 6]]],
 'scan': [0, 0, 10, 30, 60, 100],
 'scan_shape': [0, 1, 2, 3],
 'unique': [3, 1, 2, 5],
 'unique_str': ['a', 'b'],
 'take_while': [0, 1, 2, 3],
 'ignore_errors': [1.0, 0.5, 0.25],
 'group_by_window': [[0, 3], [1, 4], [2, 5], [6, 9], [7], [8]],
 'group_tail': [[101, 701, 401], [300, 0], [502, 202, 802]],
 'choose_exp': [0, 10, 11, 1, 2],
 'choose': [0, 10, 11],
 'counter': [2, 5, 8],
 'counter_f': [1.0, -1.0, -3.0],
 'map_and_batch_drop': [[0, 2, 4], [6, 8, 10]],
 'parallel_interleave': [10, 20, 21, 30, 31, 32],
 'sparse_batch': [[[[0, 0], [1, 0], [1, 1]], [1, 2, 3], [2, 4]],
                  [[[0, 0], [0, 1], [0, 2]], [4, 5, 6], [1, 4]]],
 'bucket': [[[1, 0], [1, 1]],
            [[1, 1, 1, 0], [1, 1, 1, 1]],
            [[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]],
            [[1, 0], [1, 1]]],
 'bucket_boundary': [[[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0]],
                     [[1, 0], [1, 1], [1, 0]],
                     [[1, 1]],
                     [[1, 1, 1, 1, 1, 1]]],
 'bucket_nopad': [[0, 1], [3, 4], [6, 7], [2], [5], [8]],
 'group_by_reducer': [180, 120, 150],
 'list_files': ['a.csv', 'b.csv'],
 'csv': [[1, 2.5, 'foo'], [3, -1.0, 'bar'], [5, 6.0, 'baz']],
 'csv_select': [[2.5, 'foo'], [0.5, 'bar']],
 'make_csv': [[{'name': ['foo', 'bar'], 'y': [2.5, 0.0]}, [1, 3]],
              [{'name': ['baz'], 'y': [6.0]}, [5]]],
 'features': [[{'v': [0, 1]}, [0, 1]], [{'v': [2, 3]}, [0, 1]], [{'v': [4]}, [0]]],
 'cardinality': [10,
                 -2,
                 -2,
                 4,
                 3,
                 -1,
                 30,
                 4,
                 6,
                 0,
                 0,
                 3,
                 7,
                 3,
                 4,
                 4,
                 10,
                 10,
                 10,
                 -2,
                 3,
                 10,
                 5,
                 10,
                 -2,
                 10,
                 10,
                 2,
                 1,
                 -1],
 'reduce': 10,
 'reduce_tuple': [10, 120],
 'reduce_shape': [0, 2, 4],
 'single': [[1, 2], 'z'],
 'single_m': 3,
 'single_errors': ['InvalidArgumentError', 'InvalidArgumentError'],
 'tfrecord_writer': ['r1', 'r2', 'r3'],
 'assert_card_bad': [0, 1, 2, 'FailedPreconditionError']}


def _norm(x):
    if isinstance(x, dict):
        if set(x) == {"__b64__"}:  # bytes as the oracle's JSON carries them
            return base64.b64decode(x["__b64__"]).decode()
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_norm(v) for v in x]
    if isinstance(x, np.ndarray):
        return _norm(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, bytes):
        return x.decode()
    return x


def _run_program() -> dict:
    ns = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(textwrap.dedent(PROGRAM), ns)  # noqa: S102 - the shared test program
    return _norm(ns["result"])


@pytest.fixture(scope="module")
def ours():
    return _run_program()


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_matches_tensorflow_values(ours, key):
    assert ours[key] == EXPECTED[key]


@pytest.mark.oracle
def test_program_matches_tensorflow_live():
    mine, theirs = run_both(PROGRAM, tf, timeout=240)
    mine, theirs = _norm(mine), _norm(theirs)
    assert set(mine) == set(theirs)
    for key in sorted(theirs):
        assert mine[key] == theirs[key], key


D = tf.data.Dataset
E = tf.data.experimental


def _drain(ds, limit=1000):
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as s:
        for _ in range(limit):
            try:
                out.append(s.run(nxt))
            except tf.errors.OutOfRangeError:
                break
    return out


@pytest.mark.parametrize("build, error, match", [
    (lambda: D.range(4).shard(2, 2), tf.errors.InvalidArgumentError, "Index must be"),
    (lambda: D.range(4).shard(0, 0), tf.errors.InvalidArgumentError, "Number of shards"),
    (lambda: D.range(4).window(0).flat_map(lambda w: w), tf.errors.InvalidArgumentError,
     "Window size"),
    (lambda: D.range(4).window(2, 0).flat_map(lambda w: w), tf.errors.InvalidArgumentError,
     "Window shift"),
    (lambda: D.range(4).apply(E.assert_cardinality(6)),
     tf.errors.FailedPreconditionError, "contained only 4"),
    (lambda: D.list_files("/nonexistent-dir-tfx/*.none", shuffle=False),
     tf.errors.InvalidArgumentError, "No files matched pattern"),
    (lambda: D.range(3).group_by_window(lambda x: x, lambda k, w: w.batch(2),
                                        window_size_func=lambda k: k - 5),
     tf.errors.InvalidArgumentError, "Window size must be greater than zero"),
    (lambda: E.choose_from_datasets([D.range(2)], D.from_tensors(tf.constant(3, tf.int64))),
     tf.errors.InvalidArgumentError, "Selector index out of range"),
])
def test_run_time_errors(build, error, match):
    with tf.Graph().as_default():
        with pytest.raises(error, match=match):
            _drain(build())


@pytest.mark.parametrize("build, error, match", [
    (lambda: D.range(3).map(lambda x: tf.cast(x, tf.float32)).unique(), TypeError,
     "does not support type"),
    (lambda: D.range(3).group_by_window(lambda x: x, lambda k, w: w), ValueError,
     "window_size"),
    (lambda: D.range(3).group_by_window(lambda x: tf.cast(x, tf.int32),
                                        lambda k, w: w, 2), ValueError, "scalar int64"),
    (lambda: D.range(3).group_by_window(lambda x: x, lambda k, w: k, 2), TypeError,
     "must return a `Dataset`"),
    (lambda: D.range(3).scan(tf.constant(0, tf.int64),
                             lambda s, x: (tf.cast(s, tf.int32), x)), TypeError,
     "must match the initial state"),
    (lambda: D.range(3).scan(tf.constant(0, tf.int64), lambda s, x: s), TypeError,
     "new_state, output_element"),
    (lambda: D.range(3).take_while(lambda x: x), ValueError, "scalar boolean"),
    (lambda: E.choose_from_datasets([D.range(2), D.range(2).map(lambda x: tf.cast(
        x, tf.int32))], D.range(2)), TypeError, "Incompatible dataset elements"),
    (lambda: E.choose_from_datasets([D.range(2)], D.range(2).map(lambda x: tf.cast(
        x, tf.int32))), TypeError, "choice_dataset"),
    (lambda: E.bucket_by_sequence_length(lambda x: x, [3], [1]), ValueError,
     "bucket_batch_sizes"),
    (lambda: E.TFRecordWriter("/tmp/x").write(D.range(2)), TypeError, "scalar `DT_STRING`"),
])
def test_build_time_errors(build, error, match):
    with tf.Graph().as_default():
        with pytest.raises(error, match=match):
            build()


def test_window_of_dict_elements_and_captured_tensors():
    with tf.Graph().as_default():
        k = tf.constant(100, tf.int64)
        ds = D.from_tensor_slices({"a": np.arange(5), "b": np.arange(5) * 2}).window(
            3, 2).flat_map(lambda w: D.zip((w["a"].batch(3), w["b"].batch(3)))).map(
            lambda a, b: a * k + b)
        got = [x.tolist() for x in _drain(ds)]
        total = D.range(4).reduce(tf.constant(0, tf.int64), lambda s, x: s + x * k)
        with tf.Session() as s:
            assert s.run(total) == 600
    assert got == [[0, 102, 204], [204, 306, 408], [408]]


def test_sample_from_datasets_follows_the_weights():
    with tf.Graph().as_default():
        ds = E.sample_from_datasets([D.from_tensors(0).repeat(), D.from_tensors(1).repeat(),
                                     D.from_tensors(2).repeat()], [0.2, 0.5, 0.3], seed=7)
        got = np.asarray(_drain(ds.take(3000), 3000))
        again = np.asarray(_drain(E.sample_from_datasets(
            [D.from_tensors(0).repeat(), D.from_tensors(1).repeat(),
             D.from_tensors(2).repeat()], [0.2, 0.5, 0.3], seed=7).take(50), 50))
    freq = np.bincount(got, minlength=3) / len(got)
    # Three standard deviations of a binomial proportion at n = 3000: < 0.03.
    np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=0.03)
    np.testing.assert_array_equal(got[:50], again)  # a seed fixes the sequence


def test_sample_from_datasets_ends_or_skips_empty_inputs():
    with tf.Graph().as_default():
        got = sorted(_drain(E.sample_from_datasets([D.range(3), D.range(10, 14)], seed=1)))
        stopped = _drain(E.sample_from_datasets([D.range(3), D.range(10, 14)], seed=1,
                                                stop_on_empty_dataset=True))
    assert got == [0, 1, 2, 10, 11, 12, 13]
    assert len(stopped) < 7 and (set(stopped) >= {0, 1, 2} or set(stopped) >= {10, 11, 12,
                                                                                 13})


@pytest.mark.oracle
def test_exported_graph_runs_in_tensorflow():
    import base64 as b64

    from tests.oracle import run_tf

    with tf.Graph().as_default() as g:
        ds = D.range(20).shard(2, 1).scan(tf.constant(0, tf.int64), lambda s, x: (
            s + x, s)).window(3, 2).flat_map(lambda w: w.batch(3)).map(
            lambda b: tf.reduce_sum(b)).apply(E.group_by_window(
                lambda x: x % 2, lambda k, w: w.batch(2), 2)).unbatch().take_while(
            lambda x: x < 200)
        it = ds.make_initializable_iterator()
        it.get_next(name="next")
        total = ds.reduce(tf.constant(0, tf.int64), lambda s, x: s + x)
        tf.identity(total, name="total")
        gd = g.as_graph_def()
        nxt = it.get_next()
        with tf.Session() as sess:
            sess.run(it.initializer)
            ours = [int(v) for v in _drain_session(sess, nxt)]
            ours_total = int(sess.run(total))
    blob = b64.b64encode(gd.SerializeToString()).decode()
    theirs = run_tf(f"""
gd = tf.GraphDef()
gd.ParseFromString(base64.b64decode("{blob}"))
tf.import_graph_def(gd, name="")
out = []
with tf.Session() as s:
    s.run("MakeIterator")
    while True:
        try:
            out.append(int(s.run("next:0")))
        except tf.errors.OutOfRangeError:
            break
    result = [out, int(s.run("total:0"))]
""")
    assert [ours, ours_total] == theirs
    assert ours


def _drain_session(sess, nxt):
    out = []
    while True:
        try:
            out.append(sess.run(nxt))
        except tf.errors.OutOfRangeError:
            return out


def test_from_list_pad_to_cardinality_and_options():
    with tf.Graph().as_default():
        padded = _drain(D.from_tensor_slices({"a": [1, 2]}).apply(E.pad_to_cardinality(4)))
        listed = _drain(E.from_list([(1, "a"), (2, "b")]))
        opts = tf.data.Options()
        opts.experimental_optimization.map_fusion = True
        opts.experimental_distribute.auto_shard_policy = E.AutoShardPolicy.DATA
        got = D.range(3).with_options(opts).options()
        variant = E.to_variant(D.range(2))
        again = _drain(E.from_variant(variant, E.get_structure(D.range(2))))
    assert _norm(padded) == [{"a": 1, "valid": True}, {"a": 2, "valid": True},
                             {"a": 0, "valid": False}, {"a": 0, "valid": False}]
    assert _norm(listed) == [[1, "a"], [2, "b"]]
    assert got.experimental_optimization.map_fusion is True
    assert got.experimental_distribute.auto_shard_policy == E.AutoShardPolicy.DATA
    assert again == [0, 1]


def test_sql_dataset_reads_sqlite_rows(tmp_path):
    import sqlite3

    db = str(tmp_path / "t.db")
    conn = sqlite3.connect(db)
    conn.execute("create table p (name text, age integer, h real)")
    conn.executemany("insert into p values (?, ?, ?)",
                     [("ann", 30, 1.7), ("bob", 41, 1.8), ("cy", 7, 1.2)])
    conn.commit()
    conn.close()
    with tf.Graph().as_default():
        rows = _drain(E.SqlDataset("sqlite", db, "select name, age, h from p where age > 10 "
                                   "order by age", (tf.string, tf.int32, tf.float64)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="number of columns"):
            _drain(E.SqlDataset("sqlite", db, "select name from p", (tf.string, tf.int32)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="SQLite error"):
            _drain(E.SqlDataset("sqlite", db, "select nope from p", (tf.string,)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="not supported"):
            _drain(E.SqlDataset("mysql", db, "select 1", (tf.int32,)))
    assert _norm(rows) == [["ann", 30, 1.7], ["bob", 41, 1.8]]
    assert rows[0][1].dtype == np.int32


def test_get_next_as_optional_and_optional_values():
    with tf.Graph().as_default():
        it = tf.data.make_initializable_iterator(D.range(2).map(
            lambda x: (x, tf.cast(x, tf.float32) * 2)))
        opt = E.get_next_as_optional(it)
        has, val = opt.has_value(), opt.get_value()
        full = E.Optional.from_value({"a": tf.constant([1, 2]), "b": tf.constant("s")})
        empty = E.Optional.empty((tf.int32, [3]))
        with tf.Session() as s:
            s.run(it.initializer)
            got = [s.run([has, val]) for _ in range(2)]
            assert not s.run(has)  # the end gives an empty optional, not an error
            with pytest.raises(tf.errors.InvalidArgumentError, match="does not have a value"):
                s.run(val)
            f_has, f_val = s.run([full.has_value(), full.get_value()])
            assert not s.run(empty.has_value())
    assert _norm(got) == [[True, [0, 0.0]], [True, [1, 2.0]]]
    assert f_has and _norm(f_val) == {"a": [1, 2], "b": "s"}
    assert empty.element_spec.shape.as_list() == [3]


@pytest.mark.parametrize("initial", [None, [0.8, 0.2]])
def test_rejection_resample_reaches_the_target_distribution(initial):
    rng = np.random.default_rng(0)
    labels = (rng.random(6000) < 0.2).astype(np.int64)  # 80% of class 0
    with tf.Graph().as_default():
        ds = D.from_tensor_slices((labels, np.arange(6000))).apply(E.rejection_resample(
            lambda y, i: y, [0.5, 0.5], initial_dist=initial, seed=3))
        got = _drain(ds.take(2000), 2000)
    classes = np.array([c for c, _ in got])
    assert len(got) == 2000
    # 2000 draws of a fair coin: three standard deviations are 0.034.
    assert abs(classes.mean() - 0.5) < 0.034
    assert all(c == y and labels[i] == y for c, (y, i) in got)
