"""Gaps found by running TensorFlow's own TF1 sequence/text tutorials under tensorflux
(tensorflow/models tutorials/rnn/ptb and translate, tensorflow's word2vec_basic.py). Each
test rebuilds, in a few lines of our own, the pattern the tutorial used; facts checked with
the oracle (TF 2.21 tf.compat.v1) where it still has the API."""

from __future__ import annotations

import unittest

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
