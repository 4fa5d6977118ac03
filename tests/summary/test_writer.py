"""tf.summary.FileWriter and event files: the file's name and first event, what each add_*
writes, reading back with tf.train.summary_iterator, TensorBoard's EventAccumulator and
TensorFlow's own summary_iterator, and a writer killed mid-write leaving whole records."""

from __future__ import annotations

import glob
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tensorflux.lib.io.tf_record import frame_record
from tests import oracle

ROOT = Path(__file__).resolve().parents[2]


def _events(logdir) -> list:
    files = sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))
    return [e for f in files for e in tf.train.summary_iterator(f)]


def _scalar(tag, value):
    return tf.Summary(value=[tf.Summary.Value(tag=tag, simple_value=value)])


def test_file_name_and_first_event(tmp_path):
    before = int(time.time())
    writer = tf.summary.FileWriter(str(tmp_path / "run"), filename_suffix=".v1")
    writer.close()
    (path,) = glob.glob(str(tmp_path / "run" / "*"))
    name = os.path.basename(path)
    prefix, stamp, rest = name[:len("events.out.tfevents.")], name[20:30], name[31:]
    assert prefix == "events.out.tfevents." and rest == socket.gethostname() + ".v1"
    assert before <= int(stamp) <= time.time() and len(stamp) == 10
    (first,) = _events(tmp_path / "run")
    assert first.file_version == "brain.Event:2" and first.wall_time == int(stamp)
    assert writer.get_logdir() == str(tmp_path / "run")


def test_what_each_add_writes(tmp_path):
    meta = tf.SummaryMetadata(plugin_data=tf.SummaryMetadata.PluginData(plugin_name="text"))
    with_meta = tf.Summary(value=[tf.Summary.Value(tag="t", metadata=meta, simple_value=1)])
    run_metadata = tf.RunMetadata()
    run_metadata.step_stats.dev_stats.add(device="/cpu:0")
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
        with tf.summary.FileWriter(str(tmp_path), graph=g) as writer:
            writer.add_summary(_scalar("loss", 0.5), global_step=3)
            writer.add_summary(_scalar("loss", 0.25).SerializeToString(), np.int64(4))
            writer.add_summary(with_meta, 5)
            writer.add_summary(with_meta, 6)
            writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 7)
            writer.add_run_metadata(run_metadata, "step_8", 8)
            with pytest.raises(ValueError, match="tag was already used"):
                writer.add_run_metadata(run_metadata, "step_8", 9)
            writer.add_event(tf.Event(wall_time=12.5, step=9, file_version="x"))
            with pytest.raises(TypeError, match="must be an instance of `Graph`"):
                writer.add_graph(42)
    events = _events(tmp_path)
    kinds = [e.WhichOneof("what") for e in events]
    assert kinds == ["file_version", "graph_def", "meta_graph_def", "summary", "summary",
                     "summary", "summary", "session_log", "tagged_run_metadata",
                     "file_version"]
    assert [n.name for n in tf.GraphDef.FromString(events[1].graph_def).node] == ["c"]
    assert [e.step for e in events[3:9]] == [3, 4, 5, 6, 7, 8]
    assert events[4].summary.value[0].simple_value == 0.25
    # The metadata goes with the first summary of a tag only.
    assert events[5].summary.value[0].HasField("metadata")
    assert not events[6].summary.value[0].HasField("metadata")
    assert with_meta.value[0].HasField("metadata")  # the caller's proto is left alone
    assert tf.RunMetadata.FromString(events[8].tagged_run_metadata.run_metadata) == \
        run_metadata
    assert (events[9].wall_time, events[9].step) == (12.5, 9)


def test_closed_writer_warns_and_reopen_starts_a_new_file(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_summary(_scalar("a", 1.0), 1)
    writer.close()
    with pytest.warns(UserWarning, match="closed FileWriter"):
        writer.add_summary(_scalar("a", 2.0), 2)
    time.sleep(1.05 - time.time() % 1)  # the next file is named after a later second
    writer.reopen()
    writer.add_summary(_scalar("a", 3.0), 3)
    writer.flush()
    assert len(os.listdir(tmp_path)) == 2
    writer.close()
    steps = [e.step for e in _events(tmp_path) if e.HasField("summary")]
    assert steps == [1, 3]


def test_a_logdir_that_cannot_be_made_fails_at_construction(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(errors.FailedPreconditionError, match="is not a directory"):
        tf.summary.FileWriter(str(tmp_path / "file" / "sub"))


def test_flush_puts_events_on_disk_and_the_queue_bounds_pending_events(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), max_queue=2, flush_secs=3600)
    for step in range(50):
        writer.add_summary(_scalar("x", float(step)), step)
    writer.flush()
    assert [e.step for e in _events(tmp_path)[1:]] == list(range(50))
    writer.close()


def test_file_writer_cache(tmp_path):
    try:
        a = tf.summary.FileWriterCache.get(str(tmp_path))
        assert tf.summary.FileWriterCache.get(str(tmp_path)) is a
        assert tf.train.SummaryWriterCache is tf.summary.FileWriterCache
    finally:
        tf.summary.FileWriterCache.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning):
            a.flush()  # closed by clear()


def test_summary_iterator_stops_at_a_truncated_last_record(tmp_path):
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(_scalar("a", 1.0), 1)
    (path,) = glob.glob(str(tmp_path / "*"))
    whole = Path(path).read_bytes()
    partial = frame_record(tf.Event(step=2).SerializeToString())
    for cut in (3, 14, len(partial) - 1):
        Path(path).write_bytes(whole + partial[:cut])
        assert [e.step for e in tf.train.summary_iterator(path)] == [0, 1]
    Path(path).write_bytes(whole[:-1] + b"\x00")  # a whole record, corrupt: still an error
    with pytest.raises(errors.DataLossError, match="corrupted record"):
        list(tf.train.summary_iterator(path))


def _write_everything(logdir: str) -> None:
    x = tf.placeholder(tf.float32, [None, 4, 4, 1])
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.histogram("w", x)
    tf.summary.image("img", x, max_outputs=1)
    tf.summary.audio("snd", tf.reshape(x, [-1, 16]), 8000.0, max_outputs=1)
    tf.summary.text("txt", tf.constant("hi"))
    merged = tf.summary.merge_all()
    rng = np.random.default_rng(0)
    with tf.Session() as sess, tf.summary.FileWriter(logdir, sess.graph) as writer:
        for step in range(3):
            md = tf.RunMetadata()
            s = sess.run(merged, {x: rng.random((2, 4, 4, 1))}, run_metadata=md,
                         options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
            writer.add_summary(s, step)
            writer.add_run_metadata(md, f"step{step}", step)


def test_tensorboard_reads_everything(tmp_path):
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with tf.Graph().as_default():
        _write_everything(str(tmp_path))
    acc = ea.EventAccumulator(str(tmp_path), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    assert (tags["scalars"], tags["histograms"], tags["images"], tags["audio"],
            tags["tensors"], tags["run_metadata"]) == \
        (["loss"], ["w"], ["img/image"], ["snd/audio"], ["txt"], ["step0", "step1", "step2"])
    assert tags["graph"] and tags["meta_graph"]
    assert [s.step for s in acc.Scalars("loss")] == [0, 1, 2]
    assert acc.Histograms("w")[0].histogram_value.num == 32
    assert (acc.Images("img/image")[0].width, acc.Images("img/image")[0].height) == (4, 4)
    assert acc.Audio("snd/audio")[0].content_type == "audio/wav"
    assert acc.Tensors("txt")[0].tensor_proto.string_val == [b"hi"]
    assert any(n.op == "MergeSummary" for n in acc.Graph().node)
    assert acc.RunMetadata("step1").step_stats.dev_stats


@pytest.mark.oracle
def test_tensorflow_reads_the_same_events(tmp_path):
    with tf.Graph().as_default():
        _write_everything(str(tmp_path))
    (path,) = glob.glob(str(tmp_path / "*"))
    theirs = oracle.run_tf(f"""
result = [e.SerializeToString() for e in tf.train.summary_iterator({path!r})]
""")
    ours = [e.SerializeToString() for e in tf.train.summary_iterator(path)]
    assert len(ours) == 1 + 2 + 2 * 3 and theirs == ours


_KILLED_WRITER = """
import sys, tensorflux as tf
writer = tf.summary.FileWriter(sys.argv[1], flush_secs=3600)
img = tf.Summary.Image(encoded_image_string=bytes(range(256)) * 400)
for step in range(10 ** 9):
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="i", image=img)]), step)
    if step == 200:
        print("started", flush=True)
"""


def test_a_writer_killed_mid_write_leaves_whole_records(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline() == "started\n"
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    (path,) = glob.glob(str(tmp_path / "*"))
    steps = [e.step for e in tf.train.summary_iterator(path) if e.HasField("summary")]
    assert len(steps) > 200 and steps == list(range(len(steps)))


def test_events_of_a_writer_never_closed_are_flushed_at_exit(tmp_path):
    program = ("import sys, tensorflux as tf\n"
               "w = tf.summary.FileWriter(sys.argv[1], flush_secs=3600)\n"
               "for i in range(100):\n"
               "    w.add_summary(tf.Summary(value=[tf.Summary.Value(tag='a')]), i)\n")
    subprocess.run([sys.executable, "-c", program, str(tmp_path)], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert [e.step for e in _events(tmp_path)] == [0] + list(range(100))
