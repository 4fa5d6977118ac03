"""Readers and file ops (tensorflux/ops/io_ops.py), checked against TensorFlow's keys,
values and counters on the same files."""

import os
import threading

import pytest

import tensorflux as tf
from tests.oracle import run_tf
from tests.threads_util import assert_close_cancels_blocked_runs


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


@pytest.fixture
def files(tmp_path):
    paths = {}
    tfr = tmp_path / "a.tfrecord"
    with tf.python_io.TFRecordWriter(str(tfr)) as w:
        for r in (b"hello", b"", b"x" * 300):
            w.write(r)
    paths["tfrecord"] = str(tfr)
    text = tmp_path / "b.txt"
    text.write_bytes(b"h1\nline1\r\nline2\n\nlast")
    paths["text"] = str(text)
    binary = tmp_path / "c.bin"
    binary.write_bytes(bytes(range(23)))
    paths["bin"] = str(binary)
    paths["dir"] = str(tmp_path)
    return paths


def _numbered_record_files(directory, files: int, per_file: int) -> list[str]:
    """`files` TFRecord files whose records are b"0", b"1", ... in order across the files."""
    paths = []
    for k in range(files):
        p = str(directory / f"{k}.tfrecord")
        with tf.python_io.TFRecordWriter(p) as w:
            for i in range(per_file):
                w.write(b"%d" % (k * per_file + i))
        paths.append(p)
    return paths


def _read_all(reader, work, up_to=None, limit=20):
    """Every (key, value) the reader gives for the work units, then the counters."""
    q = tf.FIFOQueue(10, tf.string)
    kv = reader.read(q) if up_to is None else reader.read_up_to(q, up_to)
    out = []
    with tf.Session() as sess:
        sess.run(q.enqueue_many([work]))
        sess.run(q.close())
        for _ in range(limit):
            try:
                k, v = sess.run(kv)
            except tf.errors.OutOfRangeError as e:
                out.append(("OutOfRange", e.message.splitlines()[0].split("'")[0]))
                break
            except tf.errors.OpError as e:
                out.append((type(e).__name__, e.message.splitlines()[0]))
                break
            out.append((k.tolist() if up_to else k, v.tolist() if up_to else v))
        counters = sess.run([reader.num_records_produced(), reader.num_work_units_completed()])
    return out, [int(c) for c in counters]


def test_tfrecord_reader(graph, files):
    path = files["tfrecord"]
    out, counters = _read_all(tf.TFRecordReader(), [path, path])
    keys = [f"{path}:0".encode(), f"{path}:21".encode(), f"{path}:37".encode()]
    assert out[:6] == [(k, v) for k, v in zip(keys, [b"hello", b"", b"x" * 300], strict=True)] * 2
    assert out[6] == ("OutOfRange", "FIFOQueue ")
    assert counters == [6, 2]


def test_tfrecord_reader_read_up_to_stays_within_a_file(graph, files):
    path = files["tfrecord"]
    out, counters = _read_all(tf.TFRecordReader(), [path, path], up_to=2)
    assert [len(k) for k, _ in out[:-1]] == [2, 1, 2, 1]
    assert out[1][1] == [b"x" * 300]
    assert counters == [6, 2]


def test_compressed_tfrecord_reader(graph, tmp_path):
    path = str(tmp_path / "z.tfrecord")
    opts = tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)
    with tf.python_io.TFRecordWriter(path, opts) as w:
        w.write(b"one")
        w.write(b"two")
    out, _ = _read_all(tf.TFRecordReader(options=opts), [path])
    assert [v for _, v in out[:2]] == [b"one", b"two"]
    assert out[1][0] == f"{path}:19".encode()


def test_text_line_reader(graph, files):
    path = files["text"]
    out, counters = _read_all(tf.TextLineReader(), [path])
    assert out[:-1] == [(f"{path}:{i}".encode(), v) for i, v in
                        enumerate([b"h1", b"line1", b"line2", b"", b"last"], 1)]
    assert counters == [5, 1]
    out, counters = _read_all(tf.TextLineReader(skip_header_lines=1), [path])
    assert [k for k, _ in out[:-1]][0] == f"{path}:2".encode()
    assert counters == [4, 1]


def test_fixed_length_record_reader(graph, files):
    path = files["bin"]
    out, counters = _read_all(tf.FixedLengthRecordReader(5, header_bytes=2, footer_bytes=3),
                              [path])
    assert out[:-1] == [(f"{path}:{i}".encode(), bytes(range(2 + 5 * i, 7 + 5 * i)))
                        for i in range(3)]
    out, _ = _read_all(tf.FixedLengthRecordReader(5, hop_bytes=3), [path])
    assert [v for _, v in out[:-1]] == [bytes(range(p, p + 5)) for p in range(0, 19, 3)]


def test_whole_file_and_identity_readers(graph, files):
    out, counters = _read_all(tf.WholeFileReader(), [files["text"], files["bin"]])
    assert out[0] == (files["text"].encode(), b"h1\nline1\r\nline2\n\nlast")
    assert out[1] == (files["bin"].encode(), bytes(range(23)))
    assert counters == [2, 2]
    out, counters = _read_all(tf.IdentityReader(), [b"x", b"y"])
    assert out[:2] == [(b"x", b"x"), (b"y", b"y")]


def test_reset_and_serialize(graph, files):
    q = tf.FIFOQueue(10, tf.string)
    reader = tf.IdentityReader()
    key, _ = reader.read(q)
    state = reader.serialize_state()
    saved = tf.placeholder(tf.string, [])
    restore = reader.restore_state(saved)
    text_reader = tf.TextLineReader()
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[b"a", b"b", b"c"]]))
        assert sess.run(key) == b"a"
        snapshot = sess.run(state)
        assert sess.run(key) == b"b"
        sess.run(restore, {saved: snapshot})  # back to: "a" produced, "a" not finished
        assert sess.run([reader.num_records_produced(),
                         reader.num_work_units_completed()]) == [1, 0]
        assert sess.run(key) == b"c"  # "a" is finished, "b" was taken from the queue
        sess.run(reader.reset())
        assert sess.run([reader.num_records_produced(),
                         reader.num_work_units_completed()]) == [0, 0]
        with pytest.raises(tf.errors.UnimplementedError, match="Reader SerializeState"):
            sess.run(text_reader.serialize_state())
        with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse state"):
            sess.run(restore, {saved: b"\x08"})


def test_missing_file_then_next_one(graph, files):
    path = files["tfrecord"]
    missing = os.path.join(files["dir"], "nope.tfrecord")
    out, counters = _read_all(tf.TFRecordReader(), [missing, path])
    assert out[0] == ("NotFoundError", f"{missing}; No such file or directory")
    # the failed unit is skipped: the next read goes on with the next file
    q = tf.FIFOQueue(10, tf.string)
    reader = tf.TFRecordReader()
    _, v = reader.read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[missing, path]]))
        with pytest.raises(tf.errors.NotFoundError):
            sess.run(v)
        assert sess.run(v) == b"hello"


def test_corrupt_tfrecord_is_data_loss_never_garbage(graph, files, tmp_path):
    data = bytearray(open(files["tfrecord"], "rb").read())
    data[21 + 12] ^= 0xFF  # the data CRC of the empty second record
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    q = tf.FIFOQueue(10, tf.string)
    _, v = tf.TFRecordReader().read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue(str(bad)))
        assert sess.run(v) == b"hello"
        for _ in range(2):  # the reader stays at the bad record
            with pytest.raises(tf.errors.DataLossError) as e:
                sess.run(v)
            assert e.value.message.splitlines()[0] == \
                f"corrupted record at 33 in file {bad}"


def test_blocked_read_holds_no_thread_and_is_cancelled_by_close(graph, files):
    q = tf.FIFOQueue(10, tf.string)
    reader = tf.TFRecordReader()
    _, v = reader.read(q)
    sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=1))
    assert_close_cancels_blocked_runs(sess, v, 5)


def test_threads_share_one_reader(graph, tmp_path):
    paths = _numbered_record_files(tmp_path, 4, 50)
    q = tf.FIFOQueue(10, tf.string)
    _, v = tf.TFRecordReader().read(q)
    seen = []
    lock = threading.Lock()
    with tf.Session() as sess:
        sess.run(q.enqueue_many([paths]))
        sess.run(q.close())

        def worker():
            while True:
                try:
                    value = sess.run(v)
                except tf.errors.OutOfRangeError:
                    return
                with lock:
                    seen.append(int(value))

        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert sorted(seen) == list(range(200))


def test_read_write_and_match_files(graph, files):
    d = files["dir"]
    target = os.path.join(d, "new", "x.txt")
    write = tf.write_file(target, "hi")
    read = tf.read_file(target)
    match = tf.matching_files(os.path.join(d, "*.txt"))
    with tf.Session() as sess:
        sess.run(write)
        assert sess.run(read) == b"hi"
        assert sess.run(match).tolist() == [files["text"].encode()]
        with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
            sess.run(tf.read_file(os.path.join(d, "nope")))


@pytest.mark.oracle
def test_readers_match_tensorflow(graph, files):
    cases = {
        "tfrecord": ("tf.TFRecordReader()", [files["tfrecord"]]),
        "text": ("tf.TextLineReader(skip_header_lines=1)", [files["text"]]),
        "fixed": ("tf.FixedLengthRecordReader(5, header_bytes=2, footer_bytes=3, "
                  "hop_bytes=4)", [files["bin"]]),
        "whole": ("tf.WholeFileReader()", [files["text"], files["bin"]]),
    }
    code = f"""
cases = {{k: (eval(r), w) for k, (r, w) in {cases!r}.items()}}
result = {{}}
for name, (reader, work) in cases.items():
    q = tf.FIFOQueue(10, tf.string)
    kv = reader.read(q)
    out = []
    with tf.Session() as s:
        s.run(q.enqueue_many([work])); s.run(q.close())
        while True:
            try:
                k, v = s.run(kv)
                out.append([k, v])
            except tf.errors.OutOfRangeError:
                break
        out.append([int(x) for x in s.run([reader.num_records_produced(),
                                            reader.num_work_units_completed()])])
    result[name] = out
"""
    want = run_tf(code)
    for name, (make, work) in cases.items():
        with tf.Graph().as_default():
            reader = eval(make)
            out, counters = _read_all(reader, work, limit=50)
        got = [[k, v] for k, v in out[:-1]] + [counters]
        assert got == want[name], name


def test_key_value_outputs_are_string_scalars(graph):
    q = tf.FIFOQueue(10, tf.string)
    k, v = tf.TFRecordReader().read(q)
    ks, vs = tf.TFRecordReader().read_up_to(q, 4)
    assert k.dtype == tf.string and k.shape.as_list() == []
    assert ks.shape.as_list() == [None] and vs.dtype == tf.string


def test_read_finding_the_reader_busy_is_served_by_the_pump(files):
    from tensorflux.kernels import queues
    from tensorflux.kernels.cpu import io_ops

    work = queues.FIFOQueue("work", [tf.string], [()], 10)
    work.enqueue(None, work.own([files["tfrecord"].encode()]), lambda r: None)
    reader = io_ops.TFRecordReader("r", "")
    got = []
    reader._pump_lock.acquire()  # as if another thread were serving a request
    reader.read(None, work, None, lambda r: got.append(r))
    reader.read(None, work, 2, lambda r: got.append(r))
    assert got == [] and len(reader._requests) == 2  # queued; no thread waits
    reader._release()  # the pump lets go: it serves what arrived meanwhile first
    assert [v.tolist() for _, v in got] == [b"hello", [b"", b"x" * 300]]
    assert reader.records_produced == 3 and not reader._pump_lock.locked()
    reader.read(None, work, None, lambda r: got.append(r))  # unit done, queue open: waits
    assert len(got) == 2 and reader._pump_lock.locked()
    work.close(None, False, lambda r: None)  # ends the wait: the pump resumes and lets go
    assert isinstance(got[2], tf.errors.OutOfRangeError) and not reader._pump_lock.locked()


def test_many_threads_mix_read_and_read_up_to_on_one_reader(graph, tmp_path):
    import sys

    paths = _numbered_record_files(tmp_path, 5, 120)
    q = tf.FIFOQueue(10, tf.string)
    reader = tf.TFRecordReader()
    _, one = reader.read(q)
    _, some = reader.read_up_to(q, 7)
    seen, lock = [], threading.Lock()
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interrupt the pump often: requests then queue up
    try:
        with tf.Session() as sess:
            sess.run(q.enqueue_many([paths]))
            sess.run(q.close())

            def worker(fetch):
                while True:
                    try:
                        value = sess.run(fetch)
                    except tf.errors.OutOfRangeError:
                        return
                    with lock:
                        seen.extend(int(v) for v in (value.tolist() if fetch is some
                                                     else [value]))

            threads = [threading.Thread(target=worker, args=(one if k % 3 else some,))
                       for k in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
                assert not t.is_alive()
            counters = sess.run([reader.num_records_produced(),
                                 reader.num_work_units_completed()])
    finally:
        sys.setswitchinterval(before)
    assert sorted(seen) == list(range(600))
    assert [int(c) for c in counters] == [600, 5]
