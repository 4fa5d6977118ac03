"""Gaps found by running MorvanZhou's TF1 tutorials (MorvanZhou/Tensorflow-Tutorial
`tutorial-contents/`, MorvanZhou/tutorials `tensorflowTUT/`) under tensorflux. Each test
rebuilds, in a few lines of our own, the pattern a tutorial used."""

from __future__ import annotations

import gc
import glob
import os
import time

import pytest

import tensorflux as tf
from tensorflux.framework import errors
from tensorflux.lib.io import event_file_writer


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _summary_steps(logdir):
    (path,) = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    return [e.step for e in tf.train.summary_iterator(path) if e.HasField("summary")]


# ---- 305_tensorboard.py: add_summary every step, the writer never closed ------------------


def test_a_dropped_unclosed_writer_still_writes_its_queued_events_at_exit(tmp_path,
                                                                        monkeypatch):
    # 305_tensorboard.py never closes its FileWriter; run as a module by runpy (or made in a
    # function) the writer is collected before the interpreter exits. The events still
    # queued to its thread were lost (TF wrote all 100; tensorflux 90 of 100). A slow disk
    # (the first write takes 0.2 s) keeps the events queued until the exit hook runs.
    write = event_file_writer._EventsFile.write

    def slow_write(self, records):
        if len(records) > 1 or b"loss" in records[0]:
            time.sleep(0.2)
        write(self, records)

    monkeypatch.setattr(event_file_writer._EventsFile, "write", slow_write)

    def train():
        writer = tf.summary.FileWriter(str(tmp_path), max_queue=1000)
        for step in range(50):
            value = tf.Summary.Value(tag="loss", simple_value=float(step))
            writer.add_summary(tf.Summary(value=[value]), step)

    train()
    gc.collect()
    event_file_writer._flush_open_writers()  # what the interpreter runs at exit
    assert _summary_steps(str(tmp_path)) == list(range(50))


def test_writer_thread_failure_is_raised_as_its_own_error(tmp_path):
    # An error in the writing thread is raised by the next add_event/flush/close, typed
    # (it was an AttributeError: the method that raises it had slipped out of the class).
    logdir = tmp_path / "log"
    writer = tf.summary.FileWriter(str(logdir))
    for path in glob.glob(str(logdir / "*")):
        os.remove(path)
    logdir.rmdir()
    logdir.write_text("now a file")  # the events file cannot be started again
    with pytest.raises(errors.NotFoundError):
        for step in range(3):
            writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1.0)]),
                               step)
            writer.flush()
    writer.close()  # closed already by the failure: a no-op
