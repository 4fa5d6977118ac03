"""Between-graph replicated training of an MLP on scikit-learn's digits.

Every task of the cluster runs this script; `tf.train.Server()` reads the cluster and
the task from TF_CONFIG (set by `tensorflux-cluster`). ps tasks serve the variables,
workers each build the same graph under `replica_device_setter` and train it with
asynchronous updates, or with `--sync` through `SyncReplicasOptimizer` (with `--backup N`
the step aggregates the gradients of the first `workers - N` replicas to finish).

    tensorflux-cluster --ps 1 --workers 2 -- python examples/distributed/digits.py
    tensorflux-cluster --ps 2 --workers 3 -- python examples/distributed/digits.py --sync --backup 1

Each worker prints its progress (global step, loss, global steps/s); the chief (worker 0)
prints the test accuracy at the end. `--slow_worker K --delay_ms 50` makes worker K sleep
before each of its steps (a straggler, for scaling.py).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from sklearn.datasets import load_digits

import tensorflux as tf


def load_data(seed: int = 0):
    """Digits flattened to 64 features in [0, 1], split 80/20 with a fixed shuffle."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_train = int(0.8 * len(x))
    x, y = x[order], y[order]
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


def dense(h, units, name, activation=None):
    with tf.variable_scope(name):
        w = tf.get_variable("w", [int(h.shape[-1]), units],
                            initializer=tf.glorot_uniform_initializer())
        b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
        h = tf.matmul(h, w) + b
        return activation(h) if activation else h


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=500, help="global steps to train")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=0.01)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--sync", action="store_true", help="use SyncReplicasOptimizer")
    p.add_argument("--backup", type=int, default=0,
                   help="backup workers (--sync): aggregate workers - backup gradients")
    p.add_argument("--slow_worker", type=int, default=-1, help="worker that sleeps")
    p.add_argument("--delay_ms", type=float, default=0.0, help="its sleep before each step")
    p.add_argument("--log_every", type=int, default=100, help="print every N local steps")
    p.add_argument("--checkpoint_dir", default=None)
    p.add_argument("--save_checkpoint_steps", type=int, default=None)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    server = tf.train.Server()  # cluster and task from TF_CONFIG
    task_info = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    job, task = task_info.get("type", "worker"), int(task_info.get("index", 0))
    if job == "ps":
        server.join()
        return 0
    spec = tf.train.ClusterSpec(json.loads(os.environ["TF_CONFIG"])["cluster"])
    num_workers = spec.num_tasks("worker")
    is_chief = task == 0

    (x_train, y_train), (x_test, y_test) = load_data()
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        images = tf.placeholder(tf.float32, [None, 64], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        logits = dense(dense(images, args.hidden, "fc1", tf.nn.relu), 10, "logits")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.AdamOptimizer(args.learning_rate)
        hooks = [tf.train.StopAtStepHook(last_step=args.steps)]
        if args.sync:
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=num_workers - args.backup,
                total_num_replicas=num_workers)
            hooks.append(opt.make_session_run_hook(is_chief))
        train_op = opt.minimize(loss, global_step=global_step)

    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{task}"])
    rng = np.random.default_rng(task + 1)
    delay = args.delay_ms / 1000.0 if task == args.slow_worker else 0.0
    local_step, g = 0, 0
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=is_chief, hooks=hooks, config=config,
            checkpoint_dir=args.checkpoint_dir,
            save_checkpoint_steps=args.save_checkpoint_steps,
            save_checkpoint_secs=None if args.save_checkpoint_steps else 600,
            save_summaries_steps=None, save_summaries_secs=None,
            log_step_count_steps=0, stop_grace_period_secs=1) as sess:
        start, g0 = time.monotonic(), None
        while not sess.should_stop():
            if delay:
                time.sleep(delay)
            idx = rng.integers(0, len(x_train), args.batch_size)
            _, loss_value, g = sess.run([train_op, loss, global_step],
                                        {images: x_train[idx], labels: y_train[idx]})
            if g0 is None:
                g0, start = g, time.monotonic()
            local_step += 1
            if local_step % args.log_every == 0:
                rate = (g - g0) / max(time.monotonic() - start, 1e-9)
                print(f"worker {task}: step {g} loss {loss_value:.4f} "
                      f"{rate:.1f} global steps/s", flush=True)
        elapsed = time.monotonic() - start
        rate = (g - (g0 or 0)) / max(elapsed, 1e-9)
        print(f"worker {task}: done, {local_step} local steps, global step {g}, "
              f"{rate:.1f} global steps/s", flush=True)
    if is_chief:  # the variables live on the ps tasks: read them from a plain session
        with tf.Session(server.target, config=config) as plain:
            acc = plain.run(accuracy, {images: x_test, labels: y_test})
        print(f"test accuracy {acc:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
