"""Input producers and batchers (tensorflux/train/input.py), and the Figure 1 example."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorflux as tf

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _drain(fetch, init_local=True, limit=10_000):
    """Runs `fetch` with the queue runners until OutOfRangeError; returns the values."""
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        if init_local:
            sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            for _ in range(limit):
                out.append(sess.run(fetch))
        except tf.errors.OutOfRangeError as e:
            coord.request_stop(e)
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    return out


def test_string_input_producer_epochs(graph):
    q = tf.train.string_input_producer(["a", "b", "c"], num_epochs=2, shuffle=False)
    assert q.queue_ref.op.name == "input_producer"
    got = _drain(q.dequeue())
    assert got == [b"a", b"b", b"c"] * 2


def test_string_input_producer_shuffles_each_epoch(graph):
    names = [f"f{i}" for i in range(20)]
    q = tf.train.string_input_producer(names, num_epochs=3, shuffle=True, seed=4)
    got = _drain(q.dequeue())
    assert len(got) == 60
    for e in range(3):
        assert sorted(got[20 * e:20 * e + 20]) == sorted(n.encode() for n in names)
    assert got[:20] != [n.encode() for n in names]


def test_string_input_producer_rejects_empty_input(graph):
    with pytest.raises(ValueError, match="requires a non-null input tensor"):
        tf.train.string_input_producer([])
    p = tf.placeholder_with_default(tf.constant([], tf.string), [None])
    q = tf.train.string_input_producer(p)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="string_input_producer requires a non-null input tensor"):
            coord.join(threads, stop_grace_period_secs=10)
        del q


def test_range_and_slice_input_producers(graph):
    q = tf.train.range_input_producer(5, num_epochs=1, shuffle=False)
    assert _drain(q.dequeue()) == [0, 1, 2, 3, 4]
    with tf.Graph().as_default():
        x, y = tf.train.slice_input_producer([tf.constant([[1, 2], [3, 4], [5, 6]]),
                                              tf.constant(["a", "b", "c"])],
                                             num_epochs=1, shuffle=False)
        got = _drain([x, y])
    assert [(a.tolist(), b) for a, b in got] == [([1, 2], b"a"), ([3, 4], b"b"),
                                                ([5, 6], b"c")]


def test_batch_with_smaller_final_batch(graph):
    x = tf.train.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
    batch = tf.train.batch([x], 4, allow_smaller_final_batch=True)
    assert isinstance(batch, tf.Tensor) and batch.shape.as_list() == [None]
    got = _drain(batch)
    assert [b.tolist() for b in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_batch_without_smaller_final_batch_drops_the_remainder(graph):
    x = tf.train.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
    batch = tf.train.batch([x], 4)
    assert batch.shape.as_list() == [4]
    assert [b.tolist() for b in _drain(batch)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_batch_dict_enqueue_many_and_dynamic_pad(graph):
    q = tf.train.range_input_producer(6, num_epochs=1, shuffle=False)
    i = q.dequeue()
    seq = tf.range(i)  # variable length: 0..5 elements
    out = tf.train.batch({"i": i, "seq": seq}, 3, dynamic_pad=True)
    assert sorted(out) == ["i", "seq"] and out["seq"].shape.as_list() == [3, None]
    got = _drain(out)
    assert [g["i"].tolist() for g in got] == [[0, 1, 2], [3, 4, 5]]
    assert got[0]["seq"].tolist() == [[0, 0], [0, 0], [0, 1]]
    assert got[1]["seq"].shape == (3, 5)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="All shapes must be fully defined"):
            tf.train.batch([tf.range(tf.placeholder_with_default(3, []))], 2)
        many = tf.train.batch([tf.constant([[1, 2], [3, 4], [5, 6]])], 2, enqueue_many=True)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            assert sess.run(many).tolist() == [[1, 2], [3, 4]]
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)


def test_shuffle_batch_is_seeded_and_complete(graph):
    def run(seed):
        with tf.Graph().as_default():
            x = tf.train.range_input_producer(100, num_epochs=1, shuffle=False).dequeue()
            b = tf.train.shuffle_batch([x], 10, capacity=50, min_after_dequeue=20, seed=seed,
                                       allow_smaller_final_batch=True)
            return np.concatenate(_drain(b)).tolist()

    a = run(3)
    assert sorted(a) == list(range(100)) and a != list(range(100))
    with pytest.raises(ValueError, match="capacity 5 must be bigger than min_after_dequeue 5"):
        tf.train.shuffle_batch([tf.constant(1)], 2, capacity=5, min_after_dequeue=5)


def test_batch_join_and_shuffle_batch_join(graph):
    qa = tf.train.range_input_producer(5, num_epochs=1, shuffle=False)
    qb = tf.train.range_input_producer(5, num_epochs=1, shuffle=False)
    joined = tf.train.batch_join([[qa.dequeue()], [qb.dequeue() + 100]], 2,
                                 allow_smaller_final_batch=True)
    got = np.concatenate(_drain(joined)).tolist()
    assert sorted(got) == list(range(5)) + list(range(100, 105))
    with tf.Graph().as_default():
        qa = tf.train.range_input_producer(5, num_epochs=1, shuffle=False)
        qb = tf.train.range_input_producer(5, num_epochs=1, shuffle=False)
        sj = tf.train.shuffle_batch_join([[qa.dequeue()], [qb.dequeue() + 100]], 3,
                                         capacity=20, min_after_dequeue=2, seed=1,
                                         allow_smaller_final_batch=True)
        got = np.concatenate(_drain(sj)).tolist()
    assert sorted(got) == list(range(5)) + list(range(100, 105))


def test_maybe_batch_with_a_keep_vector(graph):
    data = tf.constant([1, 2, 3, 4, 5, 6])
    keep = tf.constant([True, False, True, False, True, False])
    b = tf.train.maybe_batch([data], keep, 3, enqueue_many=True)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        assert sess.run(b).tolist() == [1, 3, 5]
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)


def test_tfrecord_pipeline_end_to_end(graph, tmp_path):
    paths = []
    for k in range(3):
        path = str(tmp_path / f"{k}.tfrecord")
        with tf.python_io.TFRecordWriter(path) as w:
            for i in range(40):
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[k * 40 + i]))}))
                w.write(ex.SerializeToString())
        paths.append(path)
    fq = tf.train.string_input_producer(paths, num_epochs=2, seed=1)
    _, value = tf.TFRecordReader().read(fq)
    y = tf.parse_single_example(value, {"y": tf.FixedLenFeature([], tf.int64)})["y"]
    batch = tf.train.shuffle_batch([y], 16, capacity=100, min_after_dequeue=20, num_threads=3,
                                   seed=2, allow_smaller_final_batch=True)
    got = np.concatenate(_drain(batch)).tolist()
    assert sorted(got) == sorted(list(range(120)) * 2)


def test_match_filenames_once(graph, tmp_path):
    for name in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / name).write_text("x")
    files = tf.train.match_filenames_once(str(tmp_path / "*.txt"))
    assert files in tf.local_variables()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(files).tolist() == [str(tmp_path / n).encode() for n in
                                            ("a.txt", "b.txt")]


def test_figure1_example_runs():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "figure1_pipeline.py"),
                           "--epochs", "2"], cwd=ROOT, capture_output=True, text=True,
                          timeout=45)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = re.search(r"Figure 1 pipeline: (\d+) training steps over 2 epochs of 1000 examples; "
                  r"restored checkpoint accuracy (0\.\d+)", proc.stdout)
    assert m, proc.stdout
    assert int(m.group(1)) == 63  # ceil(2000 / 32) batches
    assert float(m.group(2)) > 0.85
