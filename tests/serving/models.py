"""SavedModels for the serving tests, written with tensorflux's own SavedModel builder.

`export_model(dir, bias)` writes one version: its signatures

    serving_default  x: float32 [?, 3]         -> y: float32 [?, 2]  (y = x @ W + bias)
    two              a: float32 [?], b: int32 [?] -> sum: float32 [?], twice: int32 [?]
    echo             s: string [?]             -> s_bytes, text: string [?]
    classify         inputs: serialized tf.Example (x: float [2]) -> classes, scores [?, 2]
    regress          inputs: serialized tf.Example (x: float [2]) -> outputs [?]

`bias` tells versions apart (every y entry moves by it). `export_simple(dir, bias)` writes
the default signature alone with `tf.saved_model.simple_save`.
"""

from __future__ import annotations

import numpy as np

import tensorflux as tf

W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)


def expected_y(x, bias: float) -> np.ndarray:
    return np.asarray(x, np.float32) @ W + np.float32(bias)


def _linear(bias):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(W, name="w")
    b = tf.Variable(np.float32(bias), name="b")
    return x, tf.add(tf.matmul(x, w), b, name="y")


def export_simple(export_dir: str, bias: float) -> None:
    with tf.Graph().as_default(), tf.Session() as sess:
        x, y = _linear(bias)
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, export_dir, inputs={"x": x}, outputs={"y": y})


def export_model(export_dir: str, bias: float) -> None:
    sdu = tf.saved_model.signature_def_utils
    with tf.Graph().as_default(), tf.Session() as sess:
        x, y = _linear(bias)
        a = tf.placeholder(tf.float32, [None], name="a")
        bb = tf.placeholder(tf.int32, [None], name="bb")
        s = tf.placeholder(tf.string, [None], name="s")
        serialized = tf.placeholder(tf.string, [None], name="examples")
        feats = tf.parse_example(serialized, {"x": tf.FixedLenFeature([2], tf.float32)})
        scores = tf.nn.softmax(feats["x"], name="scores")
        n = tf.shape(serialized)[0]
        classes = tf.tile(tf.constant([["neg", "pos"]]), tf.stack([n, 1]), name="classes")
        sess.run(tf.global_variables_initializer())
        sigs = {
            "serving_default": sdu.predict_signature_def({"x": x}, {"y": y}),
            "two": sdu.predict_signature_def(
                {"a": a, "b": bb}, {"sum": a + tf.cast(bb, tf.float32), "twice": bb * 2}),
            "echo": sdu.predict_signature_def(
                {"s": s}, {"s_bytes": tf.identity(s), "text": tf.identity(s)}),
            "classify": sdu.classification_signature_def(serialized, classes, scores),
            "regress": sdu.regression_signature_def(
                serialized, tf.reduce_sum(feats["x"], axis=1)),
        }
        builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
        builder.add_meta_graph_and_variables(sess, [tf.saved_model.tag_constants.SERVING],
                                             signature_def_map=sigs)
        builder.save()
