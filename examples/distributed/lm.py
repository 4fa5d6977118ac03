"""A word-level LSTM language model trained between-graph (asynchronously) on a cluster.

The embedding and the softmax weights are sharded over the ps tasks
(`partitioner=tf.fixed_size_partitioner(num_ps)`), and the loss is
`tf.nn.sampled_softmax_loss`, as in the large language models of the TensorFlow paper
(section 6.4), in miniature: the corpus is a few KB of public-domain text embedded below.

    tensorflux-cluster --ps 2 --workers 3 -- python examples/distributed/lm.py

Each worker prints its progress (global step, sampled loss, global steps/s); the chief
(worker 0) prints the full-softmax perplexity on the text at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time

import numpy as np

import tensorflux as tf

# Public domain: the Gettysburg Address (1863) and the opening of the Declaration of
# Independence (1776).
TEXT = """
Four score and seven years ago our fathers brought forth on this continent, a new nation,
conceived in Liberty, and dedicated to the proposition that all men are created equal.
Now we are engaged in a great civil war, testing whether that nation, or any nation so
conceived and so dedicated, can long endure. We are met on a great battle-field of that
war. We have come to dedicate a portion of that field, as a final resting place for those
who here gave their lives that that nation might live. It is altogether fitting and proper
that we should do this. But, in a larger sense, we can not dedicate, we can not
consecrate, we can not hallow this ground. The brave men, living and dead, who struggled
here, have consecrated it, far above our poor power to add or detract. The world will
little note, nor long remember what we say here, but it can never forget what they did
here. It is for us the living, rather, to be dedicated here to the unfinished work which
they who fought here have thus far so nobly advanced. It is rather for us to be here
dedicated to the great task remaining before us, that from these honored dead we take
increased devotion to that cause for which they gave the last full measure of devotion,
that we here highly resolve that these dead shall not have died in vain, that this nation,
under God, shall have a new birth of freedom, and that government of the people, by the
people, for the people, shall not perish from the earth.
When in the Course of human events, it becomes necessary for one people to dissolve the
political bands which have connected them with another, and to assume among the powers of
the earth, the separate and equal station to which the Laws of Nature and of Nature's God
entitle them, a decent respect to the opinions of mankind requires that they should
declare the causes which impel them to the separation. We hold these truths to be
self-evident, that all men are created equal, that they are endowed by their Creator with
certain unalienable Rights, that among these are Life, Liberty and the pursuit of
Happiness. That to secure these rights, Governments are instituted among Men, deriving
their just powers from the consent of the governed, That whenever any Form of Government
becomes destructive of these ends, it is the Right of the People to alter or to abolish
it, and to institute new Government, laying its foundation on such principles and
organizing its powers in such form, as to them shall seem most likely to effect their
Safety and Happiness.
"""


def corpus():
    """The text as word ids, and the vocabulary (most frequent first)."""
    words = re.findall(r"[a-z'-]+|[.,]", TEXT.lower())
    vocab, counts = np.unique(words, return_counts=True)
    vocab = [str(w) for w in vocab[np.argsort(-counts, kind="stable")]]
    index = {w: i for i, w in enumerate(vocab)}
    return np.array([index[w] for w in words], dtype=np.int64), vocab


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=250, help="global steps to train")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--num_steps", type=int, default=12, help="unrolled words per example")
    p.add_argument("--embedding", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--num_sampled", type=int, default=32, help="sampled softmax classes")
    p.add_argument("--learning_rate", type=float, default=0.01)
    p.add_argument("--log_every", type=int, default=50, help="print every N local steps")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    server = tf.train.Server()  # cluster and task from TF_CONFIG
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    job = tf_config.get("task", {}).get("type", "worker")
    task = int(tf_config.get("task", {}).get("index", 0))
    if job == "ps":
        server.join()
        return 0
    spec = tf.train.ClusterSpec(tf_config["cluster"])
    num_ps = max(spec.num_tasks("ps") if "ps" in spec.jobs else 1, 1)

    ids, vocab = corpus()
    vocab_size, n = len(vocab), args.num_steps
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        inputs = tf.placeholder(tf.int64, [None, n], name="inputs")
        targets = tf.placeholder(tf.int64, [None, n], name="targets")
        partitioner = tf.fixed_size_partitioner(num_ps)
        init = tf.random_uniform_initializer(-0.1, 0.1)
        embedding = tf.get_variable("embedding", [vocab_size, args.embedding],
                                    initializer=init, partitioner=partitioner)
        softmax_w = tf.get_variable("softmax_w", [vocab_size, args.hidden],
                                    initializer=init, partitioner=partitioner)
        softmax_b = tf.get_variable("softmax_b", [vocab_size],
                                    initializer=tf.zeros_initializer())
        # "div": row i of the whole variable is in the shard that holds it contiguously
        # (fixed_size_partitioner's split), so tf.concat of the shards is the matrix.
        embedded = tf.nn.embedding_lookup(embedding, inputs, partition_strategy="div")
        cell = tf.nn.rnn_cell.BasicLSTMCell(args.hidden)
        outputs, _ = tf.nn.dynamic_rnn(cell, embedded, dtype=tf.float32)
        outputs = tf.reshape(outputs, [-1, args.hidden])
        flat_targets = tf.reshape(targets, [-1, 1])
        loss = tf.reduce_mean(tf.nn.sampled_softmax_loss(
            weights=list(softmax_w), biases=softmax_b, labels=flat_targets,
            inputs=outputs, num_sampled=args.num_sampled, num_classes=vocab_size,
            partition_strategy="div"))
        full_logits = tf.matmul(outputs, tf.concat(list(softmax_w), 0),
                                transpose_b=True) + softmax_b
        full_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(targets, [-1]), logits=full_logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdamOptimizer(args.learning_rate).minimize(
            loss, global_step=global_step)

    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{task}"])
    rng = np.random.default_rng(task + 1)
    starts = np.arange(len(ids) - n - 1)
    local_step, g = 0, 0
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=task == 0, config=config,
            hooks=[tf.train.StopAtStepHook(last_step=args.steps)],
            save_checkpoint_secs=None, save_summaries_steps=None, save_summaries_secs=None,
            log_step_count_steps=0, stop_grace_period_secs=1) as sess:
        g0, start = None, time.monotonic()
        while not sess.should_stop():
            s = rng.choice(starts, args.batch_size)[:, None] + np.arange(n)
            _, loss_value, g = sess.run([train_op, loss, global_step],
                                        {inputs: ids[s], targets: ids[s + 1]})
            if g0 is None:
                g0, start = g, time.monotonic()
            local_step += 1
            if local_step % args.log_every == 0:
                rate = (g - g0) / max(time.monotonic() - start, 1e-9)
                print(f"worker {task}: step {g} sampled loss {loss_value:.3f} "
                      f"{rate:.1f} global steps/s", flush=True)
        rate = (g - (g0 or 0)) / max(time.monotonic() - start, 1e-9)
        print(f"worker {task}: done, {local_step} local steps, {rate:.1f} global steps/s",
              flush=True)
    if task == 0:  # the variables live on the ps tasks: read them from a plain session
        s = np.arange(0, len(ids) - n - 1, n)[:, None] + np.arange(n)
        with tf.Session(server.target, config=config) as plain:
            value = plain.run(full_loss, {inputs: ids[s], targets: ids[s + 1]})
        print(f"perplexity {np.exp(value):.2f} (a uniform guess: {vocab_size})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
