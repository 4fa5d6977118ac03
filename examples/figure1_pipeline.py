"""The OSDI 2016 paper's Figure 1 training pipeline, made runnable.

Figure 1 of "TensorFlow: A System for Large-Scale Machine Learning" shows one dataflow
graph holding a whole training pipeline: a *reader* subgraph that turns input files into
records, *preprocessing* run by several concurrent steps, a queue feeding *training*
steps that update shared parameters, and a *checkpoint* subgraph that periodically saves
them. This program builds exactly that, TF1-style, on a small synthetic task (logistic
regression of a linear label rule over 8 features):

    input files -> string_input_producer -> TFRecordReader -> RandomShuffleQueue
        (reader subgraph: 1 QueueRunner thread)
    shuffle queue -> parse_single_example + normalisation + noise -> FIFOQueue
        (preprocessing: 3 QueueRunner threads, 3 concurrent steps)
    FIFOQueue.dequeue_many(32) -> logistic regression -> GradientDescent
        (training steps in the main thread until the input runs out)
    tf.train.Saver every 50 steps and at the end (checkpoint subgraph)

then restores the checkpoint into a fresh Session and measures accuracy on held-out data.

    python examples/figure1_pipeline.py [--epochs 4] [--dir DIR]

Change `import tensorflux as tf` to `import tensorflow.compat.v1 as tf` (and call
`tf.disable_v2_behavior()`) and it runs under TensorFlow unchanged.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import tensorflux as tf

FEATURES = 8
BATCH = 32
TRUE_W = np.linspace(-1.0, 1.0, FEATURES).astype(np.float32)


def write_input_files(directory: str, files: int = 4, per_file: int = 250) -> list[str]:
    """Synthetic training data as TFRecord files of tf.train.Example protos."""
    rng = np.random.default_rng(0)
    paths = []
    for k in range(files):
        path = os.path.join(directory, f"train-{k}.tfrecord")
        with tf.python_io.TFRecordWriter(path) as writer:
            for _ in range(per_file):
                x = rng.normal(size=FEATURES).astype(np.float32)
                y = int(x @ TRUE_W > 0)
                example = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}))
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths


def reader_subgraph(files, epochs):
    """Files -> records, shuffled: the reader subgraph and its queue."""
    filename_queue = tf.train.string_input_producer(files, num_epochs=epochs, seed=1)
    _, record = tf.TFRecordReader().read(filename_queue)
    shuffle = tf.RandomShuffleQueue(capacity=400, min_after_dequeue=100, dtypes=[tf.string],
                                    shapes=[[]], seed=2, name="shuffle_queue")
    tf.train.add_queue_runner(tf.train.QueueRunner(shuffle, [shuffle.enqueue([record])]))
    return shuffle


def preprocessing_subgraph(shuffle, threads=3):
    """Records -> (features, label) examples, by `threads` concurrent steps."""
    parsed = tf.parse_single_example(shuffle.dequeue(), {
        "x": tf.FixedLenFeature([FEATURES], tf.float32),
        "y": tf.FixedLenFeature([], tf.int64)})
    x = parsed["x"] / tf.sqrt(tf.reduce_sum(tf.square(parsed["x"])) + 1e-6)  # normalise
    x = x + tf.random_normal([FEATURES], stddev=0.01, seed=3)  # augmentation noise
    y = tf.cast(parsed["y"], tf.float32)
    examples = tf.FIFOQueue(capacity=200, dtypes=[tf.float32, tf.float32],
                            shapes=[[FEATURES], []], name="example_queue")
    enqueue = examples.enqueue([x, y])
    tf.train.add_queue_runner(tf.train.QueueRunner(examples, [enqueue] * threads))
    return examples


def training_subgraph(examples):
    """Batches -> parameter updates."""
    x, y = examples.dequeue_up_to(BATCH)
    w = tf.Variable(tf.zeros([FEATURES, 1]), name="w")
    b = tf.Variable(0.0, name="b")
    logits = tf.squeeze(tf.matmul(x, w), [1]) + b
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(2.0).minimize(loss, global_step=global_step)
    return train, loss, global_step, w, b


def accuracy(w, b, n=2000) -> float:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    y = (x @ TRUE_W > 0)
    x /= np.sqrt((x * x).sum(axis=1, keepdims=True) + 1e-6)
    return float(((x @ w[:, 0] + b > 0) == y).mean())


def main(epochs: int, directory: str) -> tuple[int, float]:
    files = write_input_files(directory)
    checkpoint_prefix = os.path.join(directory, "model.ckpt")
    tf.set_random_seed(0)
    shuffle = reader_subgraph(files, epochs)
    examples = preprocessing_subgraph(shuffle)
    train, loss, global_step, w, b = training_subgraph(examples)
    saver = tf.train.Saver([w, b, global_step])  # the checkpoint subgraph
    init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
    with tf.Session() as sess:
        sess.run(init)
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            while not coord.should_stop():
                _, step = sess.run([train, global_step])
                if step % 50 == 0:
                    saver.save(sess, checkpoint_prefix, global_step=global_step)
        except tf.errors.OutOfRangeError as e:
            coord.request_stop(e)  # the input ran out: a clean stop
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        step = sess.run(global_step)
        last = saver.save(sess, checkpoint_prefix, global_step=global_step)
    with tf.Session() as sess:  # a fresh session restores the parameters
        saver.restore(sess, last)
        w_value, b_value, restored_step = sess.run([w, b, global_step])
    assert restored_step == step
    return int(step), accuracy(w_value, b_value)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--dir", default=None, help="where to write data and checkpoints")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        steps, acc = main(args.epochs, args.dir or tmp)
    print(f"Figure 1 pipeline: {steps} training steps over {args.epochs} epochs of 1000 "
          f"examples; restored checkpoint accuracy {acc:.3f}")
