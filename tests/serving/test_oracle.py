"""tensorflux-serve serves SavedModels that TensorFlow itself wrote (TF1 simple_save and
SavedModelBuilder with a classification signature), with TensorFlow's own outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tensorflux.serving.manager import ModelManager
from tensorflux.serving.server import BackgroundServer
from tests.oracle import run_tf
from tests.serving.conftest import Client

X = [[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]]

_TF_EXPORT = """
cfg = json.loads(CFG)
with tf.Graph().as_default(), tf.Session() as s:
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable([[1., 2.], [3., 4.], [5., 6.]], name="w")
    y = tf.nn.softmax(tf.matmul(x, w) / 10.0, name="y")
    s.run(tf.global_variables_initializer())
    tf.saved_model.simple_save(s, cfg["simple"], {"x": x}, {"y": y})
    predicted = s.run(y, {x: np.array(cfg["x"], np.float32)})
with tf.Graph().as_default(), tf.Session() as s:
    serialized = tf.placeholder(tf.string, [None], name="tf_example")
    f = tf.parse_example(serialized, {"x": tf.FixedLenFeature([3], tf.float32)})
    w = tf.Variable([[1., 2.], [3., 4.], [5., 6.]], name="w")
    scores = tf.nn.softmax(tf.matmul(f["x"], w) / 10.0)
    classes = tf.tile(tf.constant([["a", "b"]]), [tf.shape(serialized)[0], 1])
    s.run(tf.global_variables_initializer())
    sig = tf.saved_model.signature_def_utils.classification_signature_def(
        serialized, classes, scores)
    b = tf.saved_model.builder.SavedModelBuilder(cfg["classify"])
    b.add_meta_graph_and_variables(s, [tf.saved_model.tag_constants.SERVING],
                                   signature_def_map={"serving_default": sig})
    b.save()
result = {"y": predicted.tolist()}
"""


@pytest.mark.oracle
def test_serves_tensorflow_written_saved_models(tmp_path):
    cfg = {"simple": str(tmp_path / "simple" / "1"), "classify": str(tmp_path / "cls" / "7"),
           "x": X}
    theirs = run_tf(f"CFG = {json.dumps(json.dumps(cfg))}\n" + _TF_EXPORT, timeout=180)
    simple = ModelManager("simple", str(tmp_path / "simple"), poll_wait_seconds=0)
    cls = ModelManager("cls", str(tmp_path / "cls"), poll_wait_seconds=0)
    simple.start()
    cls.start()
    try:
        with BackgroundServer(simple) as a, BackgroundServer(cls) as b:
            status, body = Client(a.url).predict({"instances": X}, model="simple")
            assert status == 200
            np.testing.assert_allclose(body["predictions"], theirs["y"], rtol=1e-5)
            status, body = Client(b.url).call(
                "POST", "/v1/models/cls:classify", {"examples": [{"x": r} for r in X]})
            assert status == 200
            got = [[score for _, score in row] for row in body["result"]]
            np.testing.assert_allclose(got, theirs["y"], rtol=1e-5)
            assert [label for label, _ in body["result"][0]] == ["a", "b"]
    finally:
        simple.stop()
        cls.stop()
