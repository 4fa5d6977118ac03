"""Gaps found by running TensorFlow's own TF1 sequence/text tutorials under tensorflux
(tensorflow/models tutorials/rnn/ptb and translate, tensorflow's word2vec_basic.py). Each
test rebuilds, in a few lines of our own, the pattern the tutorial used; facts checked with
the oracle (TF 2.21 tf.compat.v1) where it still has the API."""

from __future__ import annotations

import unittest

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


# ---- ptb_word_lm.py: export_meta_graph, then a fresh graph imports it and trains ----------


def test_apply_gradients_adds_its_op_to_the_train_op_collection():
    v = tf.Variable(1.0)
    opt = tf.train.GradientDescentOptimizer(0.1)
    step = tf.train.get_or_create_global_step()
    train = opt.apply_gradients([(tf.constant(1.0), v)], global_step=step)
    other = opt.minimize(v * 2.0)
    assert isinstance(train, tf.Operation)
    assert tf.get_collection(tf.GraphKeys.TRAIN_OP) == [train, other]
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert len(tf.get_collection("train_op")) == 3


def test_queue_runners_survive_a_meta_graph_round_trip():
    # ptb's reader: range_input_producer's runner, exported with the graph and started by a
    # Supervisor in the importing graph, and TF's "train_op" collection found there.
    with tf.Graph().as_default():
        with tf.name_scope("Train"):
            i = tf.train.range_input_producer(3, shuffle=False).dequeue()
            v = tf.Variable(0, name="total")
            tf.train.GradientDescentOptimizer(1.0).minimize(tf.cast(v, tf.float32) * 0.0
                                                            + tf.Variable(1.0))
        tf.add_to_collection("i", i)
        meta = tf.train.export_meta_graph()
    (qr_bytes,) = meta.collection_def["queue_runners"].bytes_list.value
    from tensorflux.protos import queue_runner_pb2
    qr_def = queue_runner_pb2.QueueRunnerDef.FromString(qr_bytes)
    assert qr_def.queue_name == "Train/input_producer"
    assert list(qr_def.queue_closed_exception_types) == [tf.errors.OUT_OF_RANGE]

    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(meta)
        (qr,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert isinstance(qr, tf.train.QueueRunner)
        assert qr.queue is g.get_operation_by_name("Train/input_producer")
        assert qr.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
        (train,) = tf.get_collection_ref("train_op")
        i = tf.get_collection("i")[0]
        sv = tf.train.Supervisor(logdir=None)
        with sv.managed_session() as sess:
            assert [sess.run(i) for _ in range(4)] == [0, 1, 2, 0]
            sess.run(train)


def test_queue_runner_from_proto_under_an_import_scope():
    with tf.Graph().as_default():
        tf.train.range_input_producer(2, shuffle=False)
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        tf.train.import_meta_graph(meta, import_scope="copy")
        (qr,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert qr.name == "copy/input_producer"
        assert [op.name for op in qr.enqueue_ops] == [
            "copy/input_producer/input_producer_EnqueueMany"]
        assert qr.to_proto(export_scope="copy").queue_name == "input_producer"
        assert qr.to_proto(export_scope="other") is None
    with pytest.raises(ValueError):
        tf.train.QueueRunner(queue=object(), queue_runner_def=qr.to_proto())


# ---- reader_test.py: a tf.test.TestCase whose setUp does not call super().setUp() --------


def test_test_case_without_super_set_up_has_sessions():
    class Case(tf.test.TestCase):
        def setUp(self):
            self.data = [1, 2]

        def test_it(self):
            with self.test_session() as sess:
                assert list(sess.run(tf.constant(self.data))) == [1, 2]

    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(Case).run(result)
    assert result.testsRun == 1 and not result.errors and not result.failures


# ---- word2vec_basic.py: the embedding projector's config beside the event files -----------


def test_projector_visualize_embeddings_writes_the_config(tmp_path):
    from google.protobuf import text_format

    from tensorflux.contrib.tensorboard.plugins import projector
    assert tf.contrib.tensorboard.plugins.projector is projector
    with tf.name_scope("embeddings"):
        emb = tf.Variable(tf.zeros([4, 2]))
    writer = tf.summary.FileWriter(str(tmp_path))
    config = projector.ProjectorConfig()
    info = config.embeddings.add()
    info.tensor_name = emb.name
    info.metadata_path = str(tmp_path / "metadata.tsv")
    info.sprite.single_image_dim.extend([28, 28])
    projector.visualize_embeddings(writer, config)
    writer.close()
    back = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(),
                             projector.ProjectorConfig())
    assert back == config
    assert back.embeddings[0].tensor_name == "embeddings/Variable:0"
    # TensorBoard's field numbers: tensor_name 1, metadata_path 2, sprite 5 (dims 2).
    assert info.SerializeToString().startswith(b"\n\x15embeddings/Variable:0\x12")
    assert projector.EmbeddingInfo(sprite=projector.SpriteMetadata(
        single_image_dim=[1])).SerializeToString() == b"*\x03\x12\x01\x01"


# ---- quickdraw's train_model.py: stacked bidirectional RNNs, train_and_evaluate -----------


def _bidi_inputs():
    x = np.random.default_rng(1).standard_normal((2, 5, 3)).astype(np.float32)
    return tf.constant(x), tf.constant([5, 3])


def test_stack_bidirectional_dynamic_rnn_is_bidirectional_layers_in_cell_scopes():
    x, lengths = _bidi_inputs()
    init = tf.constant_initializer(0.1)
    cells = lambda: [tf.nn.rnn_cell.LSTMCell(n, initializer=init) for n in (4, 2)]  # noqa: E731
    out, states_fw, states_bw = tf.contrib.rnn.stack_bidirectional_dynamic_rnn(
        cells(), cells(), x, sequence_length=lengths, dtype=tf.float32, scope="stack")
    assert out.shape.as_list() == [2, 5, 4]
    assert len(states_fw) == len(states_bw) == 2
    assert [v.op.name for v in tf.trainable_variables()][:2] == [
        "stack/cell_0/bidirectional_rnn/fw/lstm_cell/kernel",
        "stack/cell_0/bidirectional_rnn/fw/lstm_cell/bias"]
    # the same two layers by hand, over the same (constant-initialised) weights
    prev = x
    for i, (fw, bw) in enumerate(zip(cells(), cells(), strict=True)):
        with tf.variable_scope(f"by_hand/cell_{i}"):
            outputs, _ = tf.nn.bidirectional_dynamic_rnn(fw, bw, prev, sequence_length=lengths,
                                                         dtype=tf.float32)
            prev = tf.concat(outputs, 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, want, h_fw = sess.run([out, prev, states_fw[1].h])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(h_fw[1], got[1, 2, :2], rtol=1e-6)  # its last valid step
    assert not got[1, 3:].any()  # past the sequence's length


def test_stack_bidirectional_rnn_over_step_lists():
    x, _ = _bidi_inputs()
    steps = tf.unstack(x, axis=1)
    out, states_fw, _ = tf.contrib.rnn.stack_bidirectional_rnn(
        [tf.nn.rnn_cell.GRUCell(3)], [tf.nn.rnn_cell.GRUCell(3)], steps, dtype=tf.float32)
    assert len(out) == 5 and out[0].shape.as_list() == [2, 6]
    # TF passes the cell's scope object to static_bidirectional_rnn: no "bidirectional_rnn"
    assert tf.trainable_variables()[0].op.name == (
        "stack_bidirectional_rnn/cell_0/fw/gru_cell/gates/kernel")
    with pytest.raises(ValueError, match="same depth"):
        tf.contrib.rnn.stack_bidirectional_rnn([tf.nn.rnn_cell.GRUCell(3)] * 2,
                                               [tf.nn.rnn_cell.GRUCell(3)], steps)
    with pytest.raises(ValueError, match="initial_states_fw"):
        tf.contrib.rnn.stack_bidirectional_dynamic_rnn(
            [tf.nn.rnn_cell.GRUCell(3)], [tf.nn.rnn_cell.GRUCell(3)], x,
            initial_states_fw=[None, None])


def test_train_and_evaluate_skips_the_checkpoint_before_training(tmp_path):
    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(features["x"] * w - labels))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)

    def input_fn():
        data = tf.data.Dataset.from_tensors(({"x": [1.0, 2.0]}, [2.0, 4.0])).repeat()
        return data.make_one_shot_iterator().get_next()

    est = tf.estimator.Estimator(model_fn, config=tf.estimator.RunConfig(
        model_dir=str(tmp_path), save_checkpoints_steps=10))
    result, _ = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(input_fn, max_steps=20),
        tf.estimator.EvalSpec(input_fn, steps=1, throttle_secs=0))
    assert result["global_step"] == 20
    (events,) = (tmp_path / "eval").iterdir()
    steps = sorted({e.step for e in tf.train.summary_iterator(str(events))
                    if any(v.tag == "loss" for v in e.summary.value)})
    assert steps == [10, 20]  # TF: after the step-10 and step-20 checkpoints, not step 0


# ---- ptb_word_lm.py --use_fp16: half-precision products --------------------------------


def test_half_matmul_is_the_float32_product_rounded():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((40, 30)).astype(np.float16)
    b = rng.standard_normal((20, 30)).astype(np.float16)
    with tf.Session() as sess:
        got = sess.run(tf.matmul(a, b, transpose_b=True))
    assert got.dtype == np.float16
    want = (a.astype(np.float32) @ b.astype(np.float32).T).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3,
                               atol=1e-3)
    np.testing.assert_allclose(got.astype(np.float32), (a @ b.T).astype(np.float32),
                               rtol=2e-3, atol=1e-3)
