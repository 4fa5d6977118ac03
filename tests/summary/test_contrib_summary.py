"""tf.contrib.summary: resource-based writers in graph mode. Each summary kind written and
read back (tag, step, value), the recording conditions, the writer's init/flush/close and
sharing by name, bad inputs, threads writing into one writer, TensorBoard reading the file,
and TensorFlow (its legacy summary_ops_v2, what contrib.summary was) reading our file and
writing the same events for the same program."""

from __future__ import annotations

import glob
import io
import os
import re
import socket
import threading

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tests import oracle

cs = tf.contrib.summary


def _files(logdir) -> list[str]:
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


def _events(logdir) -> list:
    """Every event after each file's version event, in file order."""
    return [e for f in _files(logdir) for e in list(tf.train.summary_iterator(f))[1:]]


def _values(logdir) -> list:
    """(tag, step, kind of value) of every summary value written."""
    return [(v.tag, e.step, v.WhichOneof("value")) for e in _events(logdir)
            for v in e.summary.value]


def _run_once(logdir, build, step=7):
    """Builds one summary under always-record with a fresh writer, runs it, closes."""
    with tf.Graph().as_default():
        writer = cs.create_file_writer(str(logdir))
        with writer.as_default(), cs.always_record_summaries():
            op = build(step)
        with tf.Session() as sess:
            sess.run(writer.init())
            got = sess.run(op)
            sess.run(writer.close())
    return got


# ---- every kind, read back ---------------------------------------------------------------

_RNG = np.random.RandomState(0)
_HIST = _RNG.randn(50).astype(np.float32)
_AUDIO = _RNG.uniform(-1, 1, (3, 16, 2)).astype(np.float32)


def _check_scalar(value):
    assert value.simple_value == pytest.approx(2.5)


def _check_int_scalar(value):
    assert value.simple_value == 9.0


def _check_histogram(value):
    h = value.histo
    assert h.num == 50 and h.min == pytest.approx(_HIST.min()) and \
        h.sum == pytest.approx(float(_HIST.astype(np.float64).sum()), rel=1e-6)
    assert sum(h.bucket) == 50 and len(h.bucket) == len(h.bucket_limit)


def _check_image(value):
    image = pytest.importorskip("PIL.Image")
    px = np.asarray(image.open(io.BytesIO(value.image.encoded_image_string)))
    assert (value.image.height, value.image.width, value.image.colorspace) == (4, 5, 3)
    assert px.shape == (4, 5, 3)


def _check_audio(value):
    a = value.audio
    assert (a.sample_rate, a.num_channels, a.length_frames, a.content_type) == \
        (16000.0, 2, 16, "audio/wav")
    assert a.encoded_audio_string[:4] == b"RIFF"


def _check_tensor(value):
    assert tf.make_ndarray(value.tensor).tolist() == [[1, 2], [3, 4]]
    assert value.metadata.plugin_data.plugin_name == "text"


KINDS = [  # (id, build(step), expected [(tag, kind)], check of the first value)
    ("scalar", lambda s: cs.scalar("loss", tf.constant(2.5), step=s),
     [("loss", "simple_value")], _check_scalar),
    ("scalar_int64_family", lambda s: cs.scalar("n", tf.constant(9, tf.int64), family="fam",
                                                step=s),
     [("fam/fam/n", "simple_value")], _check_int_scalar),
    ("histogram", lambda s: cs.histogram("w", tf.constant(_HIST), step=s),
     [("w", "histo")], _check_histogram),
    ("image", lambda s: cs.image("img", tf.random_uniform([2, 4, 5, 3]), max_images=3,
                                 step=s),
     [("img/image/0", "image"), ("img/image/1", "image")], _check_image),
    ("image_one", lambda s: cs.image("one", tf.zeros([3, 4, 5, 3], tf.uint8), max_images=1,
                                     step=s),
     [("one/image", "image")], _check_image),
    ("audio", lambda s: cs.audio("snd", tf.constant(_AUDIO), 16000, 2, step=s),
     [("snd/audio/0", "audio"), ("snd/audio/1", "audio")], _check_audio),
    ("generic", lambda s: cs.generic(
        "gen", tf.constant([[1, 2], [3, 4]]), step=s,
        metadata=tf.SummaryMetadata(
            plugin_data=tf.SummaryMetadata.PluginData(plugin_name="text"))),
     [("gen", "tensor")], _check_tensor),
]


@pytest.mark.parametrize("build, expected, check", [k[1:] for k in KINDS],
                         ids=[k[0] for k in KINDS])
def test_each_kind_is_written_and_read_back(tmp_path, build, expected, check):
    assert _run_once(tmp_path, build) == True  # noqa: E712 - a NumPy bool
    assert _values(tmp_path) == [(tag, 7, kind) for tag, kind in expected]
    check(_events(tmp_path)[0].summary.value[0])


def test_graph_and_import_event(tmp_path):
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="some_node")
        writer = cs.create_file_writer(str(tmp_path))
        data = tf.placeholder(tf.string, [None])
        with writer.as_default():
            imported = cs.import_event(data)
        event = tf.Event(step=42, wall_time=3.0, summary=tf.Summary(
            value=[tf.Summary.Value(tag="imported", simple_value=9.0)]))
        with tf.Session() as sess:
            with writer.as_default():
                cs.initialize(graph=g, session=sess)
            sess.run(imported, {data: [event.SerializeToString()]})
            sess.run(writer.flush())
    graph_event, imported_event = _events(tmp_path)
    assert graph_event.step == 0
    assert "some_node" in [n.name for n in tf.GraphDef.FromString(graph_event.graph_def).node]
    assert imported_event == event


# ---- recording conditions ----------------------------------------------------------------


def test_recording_on_off_and_default(tmp_path):
    with tf.Graph().as_default() as g:
        writer = cs.create_file_writer(str(tmp_path))
        no_writer = cs.scalar("no_writer", 1.0, step=1)
        with writer.as_default():
            default = cs.scalar("default", 1.0, step=1)
            with cs.never_record_summaries():
                never = cs.scalar("never", 1.0, step=1)
                assert cs.should_record_summaries().op.type == "Const"
            with cs.always_record_summaries():
                always = cs.scalar("always", 1.0, step=1)
        assert no_writer.type == "NoOp"
        assert default.op.type == never.op.type == "Const"
        assert [op.type for op in g.get_operations()].count("WriteScalarSummary") == 1
        assert cs.all_summary_ops() == [default, never, always]
        with tf.Session() as sess:
            sess.run(cs.summary_writer_initializer_op())
            assert sess.run([default, never, always]) == [False, False, True]
            sess.run(writer.close())
    assert _values(tmp_path) == [("always", 1, "simple_value")]


def test_record_every_n_global_steps(tmp_path):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        writer = cs.create_file_writer(str(tmp_path))
        with writer.as_default(), cs.record_summaries_every_n_global_steps(3):
            every = cs.scalar("every", tf.cast(step, tf.float32) * 10)
        with tf.name_scope("outer"), writer.as_default(), \
                cs.record_summaries_every_n_global_steps(2, step):
            inner = cs.scalar("inner", 1.0)
        increment = tf.assign_add(step, 1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(writer.init())
            recorded = []
            for _ in range(7):
                recorded.append(sess.run([every, inner]))
                sess.run(increment)
            sess.run(writer.flush())
    assert recorded == [[i % 3 == 0, i % 2 == 0] for i in range(7)]
    events = [(t, s) for t, s, _ in _values(tmp_path)]
    assert [s for t, s in events if t == "every"] == [0, 3, 6]
    assert [s for t, s in events if t == "outer/inner"] == [0, 2, 4, 6]
    scalars = {(e.summary.value[0].tag, e.step): e.summary.value[0].simple_value
               for e in _events(tmp_path)}
    assert scalars[("every", 6)] == 60.0


# ---- the writer: init, flush, close, sharing ---------------------------------------------


def test_file_name_init_flush_close(tmp_path):
    with tf.Graph().as_default():
        writer = cs.create_file_writer(str(tmp_path), flush_millis=10 ** 8,
                                       filename_suffix=".mine")
        with writer.as_default(), cs.always_record_summaries():
            op = cs.scalar("x", 1.0, step=1)
        with tf.Session() as sess:
            with pytest.raises(errors.NotFoundError, match="does not exist"):
                sess.run(op)  # not created yet
            sess.run(writer.init())
            sess.run(writer.init())  # the writer exists: no second file
            (path,) = _files(tmp_path)
            pattern = rf"events\.out\.tfevents\.\d{{10}}\.{re.escape(socket.gethostname())}" \
                      rf"\.{os.getpid()}\.\d+\.mine"
            assert re.fullmatch(pattern, os.path.basename(path))
            sess.run(op)
            sess.run(writer.flush())
            assert _values(tmp_path) == [("x", 1, "simple_value")]
            sess.run(writer.close())
            with pytest.raises(errors.NotFoundError):
                sess.run(op)
            with pytest.raises(errors.NotFoundError):
                sess.run(writer.flush())
            sess.run(writer.init())  # a new file
            sess.run(op)
    assert len(_files(tmp_path)) == 2 and len(_values(tmp_path)) == 2


def test_writers_are_shared_by_name(tmp_path):
    with tf.Graph().as_default():
        a = cs.create_file_writer(str(tmp_path / "run"))
        b = cs.create_file_writer(str(tmp_path / "run"))
        c = cs.create_file_writer(str(tmp_path / "run"), name="other")
        ops = []
        for i, w in enumerate([a, b, c]):
            with w.as_default(), cs.always_record_summaries():
                ops.append(cs.scalar("v", float(i), step=i))
        assert len(cs.summary_writer_initializer_op()) == 3
        with tf.Session() as sess:
            sess.run(cs.summary_writer_initializer_op())
            sess.run(ops)
            for w in (a, c):
                sess.run(w.close())
            with pytest.raises(errors.NotFoundError):
                sess.run(b.flush())  # a closed it: they are one writer
    per_file = [sorted(e.step for e in list(tf.train.summary_iterator(f))[1:])
                for f in _files(tmp_path / "run")]
    assert sorted(per_file) == [[0, 1], [2]]


def test_a_writer_left_open_is_flushed_when_the_session_closes(tmp_path):
    with tf.Graph().as_default():
        writer = cs.create_file_writer(str(tmp_path), flush_millis=10 ** 8)
        with writer.as_default(), cs.always_record_summaries():
            op = cs.scalar("x", 1.0, step=1)
        with tf.Session() as sess:
            sess.run([writer.init()])
            sess.run(op)
    assert _values(tmp_path) == [("x", 1, "simple_value")]


def test_noop_writer_and_helpers():
    with tf.Graph().as_default():
        none = cs.create_file_writer(None)
        with none.as_default(), cs.always_record_summaries():
            assert cs.scalar("x", 1.0, step=1).type == "NoOp"
        assert none.init().type == none.flush().type == none.close().type == "NoOp"
        assert cs.flush().type == "NoOp"
        assert cs.create_summary_file_writer(None).init().type == "NoOp"
    assert cs.eval_dir("/m") == "/m/eval" and cs.eval_dir("/m", "x") == "/m/eval_x"


# ---- bad input ---------------------------------------------------------------------------


def test_a_non_scalar_value_fails_naming_the_node(tmp_path):
    with pytest.raises(errors.InvalidArgumentError, match=r"(?s)value must be a scalar.*loss"):
        _run_once(tmp_path, lambda s: cs.scalar("loss", tf.constant([1.0, 2.0]), step=s))


def test_non_finite_histogram_and_bad_events_fail(tmp_path):
    with pytest.raises(errors.InvalidArgumentError, match="Nan in summary histogram for: h"):
        _run_once(tmp_path / "h", lambda s: cs.histogram("h", tf.constant([np.nan]), step=s))
    with tf.Graph().as_default():
        writer = cs.create_file_writer(str(tmp_path / "e"))
        with writer.as_default():
            op = cs.import_event(tf.constant([b"\xffnot an event"]))
        with tf.Session() as sess:
            sess.run(writer.init())
            with pytest.raises(errors.DataLossError):
                sess.run(op)


def test_a_bad_logdir_fails_when_the_writer_is_created(tmp_path):
    (tmp_path / "file").write_text("x")
    with tf.Graph().as_default():
        writer = cs.create_file_writer(str(tmp_path / "file" / "sub"))
        with tf.Session() as sess:
            with pytest.raises(errors.FailedPreconditionError,
                               match=r"(?s)is not a directory.*CreateSummaryFileWriter"):
                sess.run(writer.init())


def test_bad_arguments_when_building():
    with tf.Graph().as_default():
        writer = cs.create_file_writer("/tmp/unused-logdir")
        with writer.as_default(), cs.always_record_summaries():
            with pytest.raises(ValueError):
                cs.scalar("x", 1.0, step=tf.constant(1, tf.int32))
            with pytest.raises(TypeError, match="graph\\(\\) needs a tf.Tensor"):
                cs.graph(tf.get_default_graph())
        with pytest.raises(RuntimeError, match="No default tf.contrib.summary.SummaryWriter"):
            cs.initialize(session=object())
    with pytest.raises(errors.UnimplementedError, match="create_db_writer"):
        cs.create_db_writer("sqlite:///tmp/x.db")


# ---- threads -----------------------------------------------------------------------------


def test_threads_writing_into_one_writer(tmp_path):
    n_threads, n_steps = 6, 40
    with tf.Graph().as_default():
        value = tf.placeholder(tf.float32, [])
        step = tf.placeholder(tf.int64, [])
        writer = cs.create_file_writer(str(tmp_path), max_queue=3)
        with writer.as_default(), cs.always_record_summaries():
            ops = [cs.scalar(f"t{i}", value, step=step) for i in range(n_threads)]
            hist = cs.histogram("h", tf.fill([100], value), step=step)
        with tf.Session() as sess:
            sess.run(writer.init())
            failures = []

            def work(i):
                try:
                    for s in range(n_steps):
                        sess.run([ops[i], hist], {value: float(i), step: s})
                except Exception as e:  # noqa: BLE001 - reported below
                    failures.append(e)

            threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            assert not any(t.is_alive() for t in threads) and not failures
            sess.run(writer.close())
    values = _values(tmp_path)
    assert len(values) == 2 * n_threads * n_steps
    for i in range(n_threads):
        assert sorted(s for t, s, _ in values if t == f"t{i}") == list(range(n_steps))
    assert all(e.summary.value[0].simple_value == float(e.summary.value[0].tag[1:])
               for e in _events(tmp_path) if e.summary.value[0].tag != "h")


# ---- readers: TensorBoard, TensorFlow ----------------------------------------------------


def test_tensorboard_reads_the_file(tmp_path):
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    for _, build, _, _ in KINDS:
        _run_once(tmp_path, build)
    acc = ea.EventAccumulator(str(tmp_path), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    assert [e.value for e in acc.Scalars("loss")] == [2.5]
    assert tags["histograms"] == ["w"] and [e.step for e in acc.Histograms("w")] == [7]
    assert sorted(tags["images"]) == ["img/image/0", "img/image/1", "one/image"]
    assert sorted(tags["audio"]) == ["snd/audio/0", "snd/audio/1"]
    assert tags["tensors"] == ["gen"]


# One program run under TensorFlow (its legacy summary_ops_v2, `cs`) and under tensorflux:
# every kind, families and scopes, never/every-n recording, the graph, an imported event.
PROGRAM = r"""
import glob, os
rng = np.random.RandomState(0)
gs = tf.train.get_or_create_global_step()
w = cs.create_file_writer(LOGDIR, flush_millis=100)
ops = []
meta = b"\n\x06\n\x04text"
with w.as_default(), cs.always_record_summaries():
    ops.append(cs.scalar("loss", tf.constant(0.25), step=1))
    ops.append(cs.scalar("count", tf.constant(7, tf.int64), family="stats", step=2))
    ops.append(cs.histogram("weights", tf.constant(rng.randn(100).astype(np.float32)), step=3))
    ops.append(cs.histogram("ints", tf.constant(np.arange(-5, 9, dtype=np.int32)), step=3))
    ops.append(cs.image("img", tf.constant(rng.uniform(-1, 1, (2, 4, 5, 3)).astype(np.float32)),
                        max_images=3, step=4))
    ops.append(cs.image("one", tf.constant(rng.randint(0, 256, (2, 3, 3, 1)).astype(np.uint8)),
                        max_images=1, step=4))
    ops.append(cs.audio("snd", tf.constant(rng.uniform(-1, 1, (2, 20, 2)).astype(np.float32)),
                        8000.0, 1, step=5))
    ops.append(cs.generic("gen", tf.constant([[1, 2], [3, 4]], tf.int32), metadata=meta, step=6))
    ops.append(cs.generic("plain", tf.constant(1.5, tf.float64), step=6))
    with tf.name_scope("outer"):
        ops.append(cs.scalar("inner", tf.constant(1.5)))
with w.as_default(), cs.never_record_summaries():
    ops.append(cs.scalar("never", 1.0, step=1))
with w.as_default(), cs.record_summaries_every_n_global_steps(2):
    every = cs.scalar("every", tf.cast(gs, tf.float32) * 10)
ph = tf.placeholder(tf.string, [None])
with w.as_default():
    imp = cs.import_event(ph)
event = tf.Event(step=42, wall_time=1.0)
event.summary.value.add(tag="imported", simple_value=9.0)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    with w.as_default():
        cs.initialize(graph=tf.get_default_graph(), session=sess)
    recorded = [bool(sess.run(o)) for o in ops]
    for i in range(4):
        recorded.append(bool(sess.run(every)))
        sess.run(tf.assign_add(gs, 1))
    sess.run(imp, {ph: [event.SerializeToString()]})
    sess.run(w.close())
files = sorted(glob.glob(os.path.join(LOGDIR, "events.out.tfevents.*")))
result = {"recorded": recorded, "names": [os.path.basename(f) for f in files],
          "events": [e.SerializeToString() for f in files
                     for e in tf.train.summary_iterator(f)]}
"""


def _comparable(serialized: bytes) -> tf.Event:
    """The event without wall time or writer name, PNGs as pixels, a graph as its ops."""
    event = tf.Event.FromString(serialized)
    event.wall_time = 0
    event.source_metadata.Clear()
    if event.HasField("graph_def"):
        graph_def = tf.GraphDef.FromString(event.graph_def)
        event.graph_def = b"graph of %d Placeholder" % sum(
            n.op == "Placeholder" for n in graph_def.node)
    for value in event.summary.value:
        if value.HasField("image"):
            image = pytest.importorskip("PIL.Image")
            px = np.asarray(image.open(io.BytesIO(value.image.encoded_image_string)))
            value.image.encoded_image_string = px.tobytes() + repr(px.shape).encode()
    return event


@pytest.mark.oracle
def test_tensorflow_writes_the_same_events(tmp_path):
    if not oracle.available():
        pytest.skip("no TensorFlow oracle")
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    theirs = oracle.run_tf("from tensorflow.python.ops import summary_ops_v2 as cs\n"
                           "cs.graph = cs.graph_v1\n"
                           f"LOGDIR = {str(theirs_dir)!r}\n" + PROGRAM, timeout=120)
    ns = {"tf": tf, "np": np, "cs": cs, "LOGDIR": str(ours_dir)}
    with tf.Graph().as_default():
        exec(PROGRAM, ns)  # noqa: S102 - the shared test program
    ours = ns["result"]
    assert ours["recorded"] == theirs["recorded"]
    for names in (ours["names"], theirs["names"]):
        assert len(names) == 1 and re.fullmatch(r"events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+\.v2",
                                                names[0])
    assert len(ours["events"]) == len(theirs["events"]) == 15
    for mine, tfs in zip(ours["events"], theirs["events"], strict=True):
        assert _comparable(mine) == _comparable(tfs)

    # TensorFlow reads our file as we do.
    (path,) = _files(ours_dir)
    read_by_tf = oracle.run_tf(
        f"result = [e.SerializeToString() for e in tf.train.summary_iterator({path!r})]")
    assert read_by_tf == ours["events"]


def test_v1_summary_initialize_and_all_v2_summary_ops(tmp_path):
    """tf.compat.v1.summary's helpers for contrib (V2-style) summaries in graph mode."""
    with tf.Graph().as_default() as g:
        writer = cs.create_file_writer(str(tmp_path))
        with writer.as_default(), cs.always_record_summaries():
            op = cs.scalar("x", 2.0, step=3)
            assert tf.summary.all_v2_summary_ops() == [op]
            with tf.Session() as sess:
                tf.summary.initialize(graph=g, session=sess)
                sess.run(tf.summary.all_v2_summary_ops())
                sess.run(writer.close())
        with pytest.raises(RuntimeError, match="No default tf.contrib.summary.SummaryWriter"):
            tf.summary.initialize(session=None)
    assert _values(tmp_path) == [("x", 3, "simple_value")]
