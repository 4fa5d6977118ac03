"""Dataset.shuffle and RandomShuffleQueue hand out TensorFlow's orders for given seeds
(kernels/datasets.py's ShuffleDataset: TF's ring buffer, its per-pass Philox streams and
seed generators; kernels/queues.py), and with any seeds a shuffle stays a permutation of
its input, pass after pass."""

import numpy as np
import pytest

import tensorflux as tf

# (pipeline, the elements TensorFlow 2.21 gives, graph seed 3, one initializer run)
TF_ORDERS = [
    (lambda: tf.data.Dataset.range(20).shuffle(5, seed=7).repeat(2),
     [3, 2, 5, 4, 8, 9, 10, 1, 0, 7, 14, 12, 6, 16, 13, 17, 19, 11, 15, 18,
      0, 1, 2, 5, 6, 8, 4, 3, 11, 13, 14, 9, 12, 7, 10, 19, 17, 18, 15, 16]),
    (lambda: tf.data.Dataset.range(10).shuffle(100, seed=1, reshuffle_each_iteration=False)
     .repeat(2),
     [9, 5, 1, 7, 8, 4, 2, 3, 6, 0, 9, 5, 1, 7, 8, 4, 2, 3, 6, 0]),
    (lambda: tf.data.Dataset.range(12).shuffle(4).batch(3),
     [[1, 3, 5], [0, 4, 7], [8, 2, 11], [6, 10, 9]]),
    (lambda: tf.data.Dataset.range(10).repeat(3).shuffle(8, seed=2),
     [4, 1, 5, 3, 9, 8, 1, 3, 6, 7, 0, 5, 9, 2, 1, 6, 3, 4, 2, 5, 7, 0, 6, 7, 9, 8, 8, 2, 4, 0]),
]


def _all(sess, it):
    sess.run(it.initializer)
    out = []
    nxt = it.get_next()
    while True:
        try:
            out.append(sess.run(nxt).tolist())
        except tf.errors.OutOfRangeError:
            return out


@pytest.mark.parametrize("case", range(len(TF_ORDERS)))
def test_seeded_shuffles_give_tensorflows_order(case):
    build, want = TF_ORDERS[case]
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        it = tf.data.make_initializable_iterator(build())
        with tf.Session() as sess:
            assert _all(sess, it) == want
            assert _all(sess, it) == want  # a new initializer run starts over


@pytest.mark.parametrize("n,buffer_size", [(1, 1), (7, 1), (7, 3), (50, 7), (9, 1000)])
def test_unseeded_shuffles_are_permutations_and_passes_differ(n, buffer_size):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(n).shuffle(buffer_size).repeat(4)
        it = tf.data.make_initializable_iterator(ds)
        with tf.Session() as sess:
            got = np.array(_all(sess, it)).reshape(4, n)
    for row in got:
        assert sorted(row.tolist()) == list(range(n))
    if n >= 7 and buffer_size > 1:
        assert len({tuple(r) for r in got.tolist()}) > 1
    if buffer_size == 1:
        assert (got == np.arange(n)).all()


def test_random_shuffle_queue_dequeues_in_tensorflows_order():
    """RandomShuffleQueue picks element w % size (kernels/queues.py), TF 2.21's values."""
    with tf.Graph().as_default():
        tf.set_random_seed(4)
        q = tf.RandomShuffleQueue(40, 3, [tf.int32, tf.string], shapes=[[], []], seed=5)
        seedless = tf.RandomShuffleQueue(40, 0, [tf.int32], shapes=[[]])
        vals = list(range(15))
        enqueue = q.enqueue_many([vals, [str(v).encode() for v in vals]])
        more = q.enqueue_many([list(range(100, 110)), [b"x"] * 10])
        one, four = q.dequeue(), q.dequeue_many(4)
        close, rest = q.close(), q.dequeue_up_to(40)
        with tf.Session() as sess:
            sess.run(enqueue)
            assert [int(sess.run(one)[0]) for _ in range(3)] == [14, 1, 4]
            got, names = sess.run(four)
            assert got.tolist() == [13, 12, 9, 11]
            assert names.tolist() == [str(v).encode() for v in got]  # components together
            sess.run(more)
            assert sess.run(four)[0].tolist() == [103, 102, 109, 104]
            sess.run(close)
            assert sess.run(rest)[0].tolist() == [10, 105, 6, 100, 2, 5, 3, 108, 0, 7, 8, 107,
                                                  101, 106]
            sess.run(seedless.enqueue_many([list(range(12))]))
            assert sess.run(seedless.dequeue_many(12)).tolist() == [5, 11, 10, 7, 8, 1, 2, 4,
                                                                    3, 6, 9, 0]


def test_random_dataset_and_sample_from_datasets_give_tensorflows_values():
    """TF 2.21's values (graph seed 3): RandomDataset yields the words of PhiloxRandom(seed,
    seed2); sample_from_datasets picks with stateless multinomials seeded by its pairs."""
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        rand = tf.data.experimental.RandomDataset(seed=5).take(6)
        picks = tf.data.experimental.sample_from_datasets(
            [tf.data.Dataset.from_tensors(k).repeat() for k in range(3)], [0.2, 0.5, 0.3],
            seed=9).take(12)
        a = tf.data.make_one_shot_iterator(rand).get_next()
        b = tf.data.make_one_shot_iterator(picks).get_next()
        with tf.Session() as s:
            assert [int(s.run(a)) for _ in range(6)] == [
                2058544851, 32233798, 302027796, 3838645477, 1441186052, 3437574395]
            assert [int(s.run(b)) for _ in range(12)] == [1, 0, 1, 2, 1, 0, 0, 0, 0, 0, 1, 1]
