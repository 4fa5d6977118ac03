"""tf.data pipelines run under TensorFlow and under tensorflux give the same elements and
the same static signatures (shuffles compared as multisets)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_both

PROGRAM = """
import os, tempfile
D = tf.data.Dataset
d = tempfile.mkdtemp()
path = os.path.join(d, "r.tfrecord")
w = tf.python_io.TFRecordWriter(path, options=tf.python_io.TFRecordOptions(
    tf.python_io.TFRecordCompressionType.GZIP))
for i in range(7):
    ex = tf.train.Example(features=tf.train.Features(feature={
        "v": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, 2 * i])),
        "s": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"s%d" % i]))}))
    w.write(ex.SerializeToString())
w.close()
feats = {"v": tf.FixedLenFeature([2], tf.int64), "s": tf.FixedLenFeature([], tf.string)}
pipelines = {
    "map_filter_batch": D.range(20).map(lambda x: x * 3).filter(
        lambda x: x % 2 > 0).batch(4),
    "padded": D.range(1, 6).map(lambda x: (tf.fill([x], x), x)).padded_batch(
        2, padded_shapes=([None], [])),
    "interleave": D.range(4).interleave(lambda x: D.range(x).map(lambda y: y + 10 * x),
                                        cycle_length=3, block_length=2),
    "flat_map_zip": D.zip((D.range(3), D.range(3).flat_map(
        lambda x: D.from_tensors(x).repeat(2)))).map(lambda a, b: a * 100 + b),
    "concat_unbatch": D.range(3).batch(2).concatenate(D.range(5, 9).batch(3)).unbatch(),
    "skip_take_repeat": D.range(10).skip(2).take(3).repeat(2).enumerate(),
    "dict_slices": D.from_tensor_slices({"a": [[1., 2.], [3., 4.]], "b": ["x", "y"]}).map(
        lambda e: (e["a"] * 2., e["b"])),
    "tfrecord": tf.data.TFRecordDataset([path], compression_type="GZIP").map(
        lambda r: tf.parse_single_example(r, feats), num_parallel_calls=3).map(
        lambda e: e["v"]).shuffle(5, seed=3).batch(3, drop_remainder=True).prefetch(1),
}
result = {}
for name, ds in pipelines.items():
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as s:
        while True:
            try:
                out.append(s.run(nxt))
            except tf.errors.OutOfRangeError:
                break
    result[name] = out
    result[name + ":shapes"] = [[d for d in s.as_list()] if s.ndims is not None else None
                                for s in _flat(tf.data.get_output_shapes(ds))]
"""

HELPER = """
def _flat(s):
    if isinstance(s, dict):
        return [x for k in sorted(s) for x in _flat(s[k])]
    if isinstance(s, tuple):
        return [x for v in s for x in _flat(v)]
    return [s]
"""


def _norm(x):
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_norm(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


@pytest.mark.oracle
def test_pipelines_match_tensorflow():
    ours, theirs = run_both(HELPER + PROGRAM, tf, timeout=180)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        a, b = _norm(ours[key]), _norm(theirs[key])
        if key == "tfrecord":  # shuffle orders differ; the batches' contents do not
            a = sorted(tuple(map(tuple, batch)) for batch in a)
            b = sorted(tuple(map(tuple, batch)) for batch in b)
            flat_a = sorted(x for batch in a for x in batch)
            flat_b = sorted(x for batch in b for x in batch)
            assert len(a) == len(b) == 2 and len(flat_a) == len(flat_b) == 6, key
            assert set(flat_a) <= {(i, 2 * i) for i in range(7)}
            continue
        assert a == b, key


@pytest.mark.oracle
def test_exported_graph_def_runs_in_tensorflow():
    import base64

    from tests.oracle import run_tf

    with tf.Graph().as_default() as g:
        c = tf.constant(3, tf.int64)
        ds = tf.data.Dataset.range(6).map(lambda x: x * c).filter(lambda x: x > 2).flat_map(
            lambda x: tf.data.Dataset.from_tensors(x).repeat(2)).batch(3)
        it = ds.make_initializable_iterator()
        it.get_next(name="next")
        gd = g.as_graph_def()
        assert len(gd.library.function) == 3
        nxt = it.get_next()
        with tf.Session() as sess:
            sess.run(it.initializer)
            from tests.data.test_dataset_ops import drain
            ours = [b.tolist() for b in drain(sess, nxt)]
    blob = base64.b64encode(gd.SerializeToString()).decode()
    theirs = run_tf(f"""
gd = tf.GraphDef()
gd.ParseFromString(base64.b64decode("{blob}"))
tf.import_graph_def(gd, name="")
result = []
with tf.Session() as s:
    s.run("MakeIterator")
    while True:
        try:
            result.append(s.run("next:0").tolist())
        except tf.errors.OutOfRangeError:
            break
""")
    assert ours == theirs == [[3, 3, 6], [6, 9, 9], [12, 12, 15], [15]]


def _tf_graph_def(code: str):
    """The GraphDef TensorFlow builds from `code` (as bytes), and its result."""
    import base64

    from tests.oracle import run_tf

    out = run_tf(code + """
import base64
result = {"gd": base64.b64encode(tf.get_default_graph().as_graph_def()
                                 .SerializeToString()).decode(), "values": values}
""")
    return base64.b64decode(out["gd"]), out["values"]


@pytest.mark.oracle
def test_tensorflow_graph_def_with_dataset_functions_runs_in_tensorflux():
    from tests.data.test_dataset_ops import drain

    blob, theirs = _tf_graph_def("""
c = tf.constant(3, tf.int64)
ds = tf.data.Dataset.range(8).map(lambda x: x * c).filter(lambda x: x % 2 > 0).flat_map(
    lambda x: tf.data.Dataset.from_tensors(x).repeat(2)).batch(3)
it = tf.data.make_initializable_iterator(ds)
nxt = it.get_next(name="next")
values = []
with tf.Session() as s:
    s.run(it.initializer)
    while True:
        try:
            values.append(s.run(nxt).tolist())
        except tf.errors.OutOfRangeError:
            break
""")
    gd = tf.GraphDef()
    gd.ParseFromString(blob)
    with tf.Graph().as_default() as g:
        tf.import_graph_def(gd, name="")
        with tf.Session() as sess:
            sess.run(g.get_operation_by_name("MakeIterator"))
            ours = [b.tolist() for b in drain(sess, g.get_tensor_by_name("next:0"))]
    assert ours == theirs == [[3, 3, 9], [9, 15, 15], [21, 21]]


def test_graph_def_round_trip_keeps_dataset_functions():
    from tests.data.test_dataset_ops import drain

    with tf.Graph().as_default() as g:
        c = tf.constant(10, tf.int64)
        ds = tf.data.Dataset.range(4).map(lambda x: (x + c, x)).interleave(
            lambda a, b: tf.data.Dataset.from_tensors(a).repeat(b), cycle_length=2)
        it = ds.make_initializable_iterator()
        it.get_next(name="next")
        gd = g.as_graph_def()
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(gd, name="")
        assert len(g2.as_graph_def().library.function) == len(gd.library.function) == 2
        with tf.Session() as sess:
            sess.run(g2.get_operation_by_name("MakeIterator"))
            assert drain(sess, g2.get_tensor_by_name("next:0")) == [11, 12, 12, 13, 13, 13]
