"""Behaviour that public TF1 programs (tensorflow/nmt, openai/gpt-2) found missing:
tf.data functions in a session on a cluster target (the task graphs carry the function
library), importing a function that ignores an argument, tf.test.TestCase's soft placement
and assertion helpers, `tf.__version__`, TensorFlow's internal `lookup_ops` path, and beam
search over an AttentionWrapper's state (a scalar `time` in the cell state)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture(scope="module")
def worker_target():
    workers, _ = tf.test.create_local_cluster(1, 0)
    return workers[0].target


def test_dataset_functions_run_on_a_cluster_target(worker_target):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices(([1, 2, 3, 4], [5, 6, 7, 8]))
        ds = ds.map(lambda a, b: (a * 10, b)).apply(tf.data.experimental.group_by_window(
            key_func=lambda a, b: tf.cast(a % 20, tf.int64),
            reduce_func=lambda key, window: window.batch(2), window_size=2))
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        with tf.Session(worker_target) as sess:
            sess.run(it.initializer)
            first = sess.run(nxt)
            v = tf.Variable(1.0)  # an extension of the session's graph, functions resent
            sess.run(v.initializer)
            second = sess.run(nxt)
    got = sorted([tuple(first[0]), tuple(second[0])])
    assert got == [(10, 30), (20, 40)]


def test_imported_function_may_ignore_an_argument():
    with tf.Graph().as_default() as g:
        ds = tf.data.Dataset.range(6).apply(tf.data.experimental.group_by_window(
            key_func=lambda x: x % 2, reduce_func=lambda unused_key, w: w.batch(3),
            window_size=3))
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        graph_def = g.as_graph_def()
        name = nxt.name
    with tf.Graph().as_default() as h:
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            out = h.get_tensor_by_name(name)
            got = sorted(tuple(sess.run(out)) for _ in range(2))
    assert got == [(0, 2, 4), (1, 3, 5)]


class _Case(tf.test.TestCase):
    def runTest(self):  # noqa: N802
        pass


def test_test_case_sessions_place_softly_and_helpers():
    case = _Case()
    case.setUp()
    try:
        with tf.device("/device:GPU:0"):
            x = tf.constant([1.0, 2.0]) * 2
        with case.cached_session() as sess:
            case.assertAllClose(sess.run(x), [2.0, 4.0])
        case.assertAllClose({"a": [np.ones(2), np.zeros(3)]}, {"a": [[1, 1], [0, 0, 0]]})
        with pytest.raises(AssertionError):
            case.assertAllEqual({"a": 1}, {"b": 1})
        with case.assertRaisesOpError("End of sequence"):
            it = tf.data.make_one_shot_iterator(tf.data.Dataset.range(0))
            case.evaluate(it.get_next())
        with pytest.raises(AssertionError, match="does not match"):
            with case.assertRaisesOpError("something else"):
                raise tf.errors.InvalidArgumentError(None, None, "bad input")
        with pytest.raises(AssertionError, match="not raised"):
            with case.assertRaisesWithPredicateMatch(ValueError, lambda e: True):
                pass
        case.assertAllCloseAccordingToType(np.float16([1.0]), [1.0004])
        case.assertItemsEqual([1, 2, 2], [2, 1, 2])
        case.assertStartsWith("tensorflux", "tensor")
    finally:
        case.tearDown()


def test_version_is_the_api_version():
    assert tf.__version__ == tf.VERSION == tf.version.VERSION
    assert tf.version.GIT_VERSION.startswith("tensorflux-")


def test_internal_lookup_ops_path():
    from tensorflux.python.ops import lookup_ops

    with tf.Graph().as_default():
        table = lookup_ops.index_table_from_tensor(tf.constant(["a", "b"]), default_value=-1)
        ids = table.lookup(tf.constant(["b", "z", "a"]))
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            np.testing.assert_array_equal(sess.run(ids), [1, -1, 0])


def test_beam_search_over_an_attention_wrapper():
    batch, beam, units, vocab = 2, 3, 6, 7
    seq2seq = tf.contrib.seq2seq
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        memory = tf.random_normal([batch, 4, units])
        tiled = seq2seq.tile_batch(memory, beam)
        mechanism = seq2seq.LuongAttention(units, tiled)
        cell = seq2seq.AttentionWrapper(tf.nn.rnn_cell.GRUCell(units), mechanism,
                                        attention_layer_size=units)
        init = cell.zero_state(batch * beam, tf.float32)
        decoder = seq2seq.BeamSearchDecoder(
            cell, tf.random_normal([vocab, 5]), tf.fill([batch], 1), 2, init, beam,
            output_layer=tf.layers.Dense(vocab))
        out, state, _ = seq2seq.dynamic_decode(decoder, maximum_iterations=5)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            ids, time = sess.run([out.predicted_ids, state.cell_state.time])
    assert ids.shape[0] == batch and ids.shape[2] == beam and ids.shape[1] <= 5
    assert np.all((ids >= 0) & (ids < vocab))
    assert np.ndim(time) == 0
