"""Crash safety: processes killed with SIGKILL in the middle of saving never leave a latest
checkpoint that cannot be restored, and a killed training loop resumes and finishes.

Each program runs in a process of its own, forked from one that imported tensorflux
(tests/forkserver.py), so the many kills do not each pay the import."""

from __future__ import annotations

import os
import random
import signal
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import tensorflux as tf
from tensorflux import checkpoint
from tests.forkserver import ForkServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fork_server():
    with ForkServer(ROOT) as server:
        yield server


# Saves forever; every variable's value encodes the step, so a restored checkpoint can be
# checked for consistency (all tensors from one save, and from the step in its name).
_SAVER_LOOP = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflux as tf
    directory, sharded = sys.argv[1], sys.argv[2] == "1"
    config = tf.ConfigProto(device_count={"CPU": 2})
    step = tf.Variable(0, dtype=tf.int64, name="step")
    with tf.device("/cpu:0"):
        a = tf.Variable(np.zeros((64, 32), np.float32), name="a")
    with tf.device("/cpu:1" if sharded else "/cpu:0"):
        b = tf.Variable(np.zeros(1000), name="b")
        s = tf.Variable([b""] * 3, name="s")
    n = tf.placeholder(tf.int64, [])
    nf = tf.cast(n, tf.float32)
    update = tf.group(step.assign(n), a.assign(tf.fill([64, 32], nf)),
                      b.assign(tf.fill([1000], tf.cast(n, tf.float64))),
                      s.assign(tf.fill([3], tf.as_string(n) if hasattr(tf, "as_string")
                                       else tf.constant("x"))))
    saver = tf.train.Saver(max_to_keep=3, sharded=sharded)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        latest = tf.train.latest_checkpoint(directory)
        i = 0
        if latest:
            saver.restore(sess, latest)
            saver.recover_last_checkpoints([latest])
            i = int(sess.run(step))
        print("ready", flush=True)
        while True:
            i += 1
            sess.run(update, {n: i})
            saver.save(sess, directory + "/model", global_step=i, write_meta_graph=i % 2 == 0)
""")


def _check_restorable(directory: str, saver, sess, variables) -> int:
    latest = tf.train.latest_checkpoint(directory)
    if latest is None:
        return 0
    step_from_name = int(latest.rsplit("-", 1)[1])
    with checkpoint.open_checkpoint(latest) as reader:  # every byte verified
        values = {name: reader.read(name) for name in reader.entries()}
    assert int(values["step"]) == step_from_name
    assert (values["a"] == step_from_name).all() and (values["b"] == step_from_name).all()
    saver.restore(sess, latest)  # and through the graph ops
    assert int(sess.run(variables[0])) == step_from_name
    return step_from_name


@pytest.mark.parametrize("wanted", [12, pytest.param(32, marks=pytest.mark.slow)])
def test_sigkill_during_saves_never_breaks_the_latest_checkpoint(tmp_path, wanted,
                                                                 fork_server):
    """`wanted` kills at random moments of a saving loop (12 in the default run: each
    starts a process; 32 under `-m slow`)."""
    rng = random.Random(1234)
    g = tf.Graph()
    with g.as_default():
        variables = [tf.Variable(0, dtype=tf.int64, name="step"),
                     tf.Variable(np.zeros((64, 32), np.float32), name="a"),
                     tf.Variable(np.zeros(1000), name="b"),
                     tf.Variable([b""] * 3, name="s")]
        saver = tf.train.Saver(variables)
    sess = tf.Session(graph=g)
    steps, trials, start = [], 0, time.monotonic()
    # Kills go on past `wanted` until the saves got past step 30 (on a busy machine a child
    # saves less between its start and its kill).
    while (trials < wanted or steps[-1] <= 30) and time.monotonic() - start < 90:
        sharded = trials % 3 == 2
        proc = fork_server.spawn(_SAVER_LOOP, str(tmp_path), "1" if sharded else "0")
        try:
            line = proc.stdout.readline()
            assert line.strip() == b"ready", proc.stderr.read().decode()[-3000:]
            time.sleep(rng.uniform(0.0, 0.25))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
            proc.stderr.close()
        steps.append(_check_restorable(str(tmp_path), saver, sess, variables))
        trials += 1
    sess.close()
    assert trials >= min(wanted, 12)  # fewer when the machine is busy (bounded by time)
    assert steps == sorted(steps) and steps[-1] > 30  # progress survives every kill
    # Leftovers of the kills are cleaned by later saves: at most one kill's worth remains.
    leftovers = [n for n in os.listdir(tmp_path) if ".tmp-" in n]
    assert len(leftovers) <= 4, leftovers


_TRAINING = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflux as tf
    directory, last_step = sys.argv[1], int(sys.argv[2])
    data = np.linspace(-1, 1, 48, dtype=np.float32).reshape(16, 3)
    x = tf.constant(data)
    y = tf.constant(data @ np.array([[0.5], [-1.0], [2.0]], np.float32))
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
    hooks = [tf.train.StopAtStepHook(last_step=last_step)]
    latest = tf.train.latest_checkpoint(directory)
    if latest and tf.train.load_variable(latest, "global_step") >= last_step:
        hooks = None  # killed after its last save: done (a monitored session always runs
        last_step = 0  # at least one step, as TensorFlow's does)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks,
                                           save_checkpoint_steps=7,
                                           log_step_count_steps=0) as sess:
        print("started", flush=True)
        while last_step and not sess.should_stop():
            sess.run(train_op)
    print(tf.train.load_variable(directory, "global_step"),
          repr(tf.train.load_variable(directory, "w").ravel().tolist()), flush=True)
""")


def test_killed_training_loop_resumes_and_reaches_the_same_final_step(tmp_path, fork_server):
    # 400 steps take ~0.5 s after "started" here: longer than any of the kill delays below
    # (120 steps took 0.17 s, and the first delay, 0.16 s, sometimes came too late).
    last_step = 400
    reference = fork_server.spawn(_TRAINING, str(tmp_path / "ref"), str(last_step))
    ref_out, ref_err = reference.communicate(timeout=120)
    assert reference.returncode == 0, ref_err.decode()[-3000:]
    rng = random.Random(7)
    directory = str(tmp_path / "killed")
    kills = 0
    for _ in range(20):
        # Unbuffered, so the line read here leaves the rest to communicate().
        proc = fork_server.spawn(_TRAINING, directory, str(last_step), bufsize=0)
        started = proc.stdout.readline().decode()
        if kills < 4 and started.strip() == "started":
            time.sleep(rng.uniform(0.02, 0.25))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                proc.stdout.close()
                proc.stderr.close()
                kills += 1
                continue
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()[-3000:]
        final = (started + out.decode()).splitlines()[-1]
        break
    assert kills >= 1
    assert final == ref_out.decode().splitlines()[-1]  # same step, same weights
    assert final.startswith(f"{last_step} ")
