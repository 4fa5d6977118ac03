"""Object-based checkpoints against TensorFlow 2.21 (tf.compat.v1.train.Checkpoint in graph
mode, tf_keras): the same program writes the same object graph; TensorFlow restores what
tensorflux wrote (in TensorFlow's file format) and tensorflux restores what TensorFlow
wrote, every value exactly, and training goes on alike on both sides."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.protos import trackable_object_graph_pb2
from tests import oracle

pytestmark = pytest.mark.oracle

OBJECT_GRAPH = """
v = tf.get_variable("v", [2], initializer=tf.ones_initializer())
w = tf.Variable([3.0], name="w")
gs = tf.train.get_or_create_global_step()
opt = tf.train.AdamOptimizer(0.1)
train = opt.minimize(tf.reduce_sum(v * v) + tf.reduce_sum(w), global_step=gs)
ck = tf.train.Checkpoint(v=v, sub=tf.train.Checkpoint(w=w), opt=opt, step=gs, lst=[v, w],
                         d={"a": w}, e=[])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(train)
    path = ck.save(DIR + "/ck", session=sess)
result = tf.train.NewCheckpointReader(path).get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
"""

BUILD = """
def build():
    v = tf.get_variable("v", initializer=np.array([1.0, 2.0], np.float32))
    w = tf.Variable([[3.0, -1.0]], name="w")
    gs = tf.train.get_or_create_global_step()
    opt = tf.train.AdamOptimizer(0.1)
    train = opt.minimize(tf.reduce_sum(v * v) + tf.reduce_sum(tf.sin(w)), global_step=gs)
    model = tf.keras.Sequential([tf.keras.layers.Dense(3, "tanh", input_shape=(2,)),
                                 tf.keras.layers.BatchNormalization(),
                                 tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.Adam(0.05), "mse")
    model._make_train_function()
    ck = tf.train.Checkpoint(v=v, more=[w, {"step": gs}], nested=tf.train.Checkpoint(opt=opt),
                             model=model)
    return ck, train, model

x = np.array([[1, 2], [3, 4], [-1, 0.5]], np.float32)
y = np.array([[1], [0], [2]], np.float32)

def steps(sess, train, model, n):
    for _ in range(n):
        sess.run(train)
        model.train_on_batch(x, y)

def values(path):
    r = tf.train.NewCheckpointReader(path)
    return {k: r.get_tensor(k) for k in r.get_variable_to_shape_map()
            if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}
"""

# trains two steps, saves, trains two more and writes again
WRITE = BUILD + """
ck, train, model = build()
sess = tf.keras.backend.get_session()
sess.run(tf.global_variables_initializer())
steps(sess, train, model, 2)
path = ck.save(DIR + "/written", session=sess)
steps(sess, train, model, 2)
result = {"path": path, "saved": values(path),
          "after": values(ck.write(DIR + "/after", session=sess))}
"""

# restores PATH (every value bound, none left over), then trains two steps
READ = BUILD + """
ck, train, model = build()
sess = tf.keras.backend.get_session()
status = ck.restore(PATH)
status.assert_consumed()
status.run_restore_ops(sess)
restored = values(ck.write(DIR + "/restored", session=sess))
steps(sess, train, model, 2)
result = {"restored": restored, "after": values(ck.write(DIR + "/after", session=sess))}
"""


def _here(code: str, **names):
    tf.keras.backend.clear_session()
    ns = {"tf": tf, "np": np, **names}
    exec(code, ns)  # noqa: S102 - our own program text
    return ns["result"]


def _summary(data: bytes) -> list:
    graph = trackable_object_graph_pb2.TrackableObjectGraph.FromString(data)
    return [([(c.node_id, c.local_name) for c in n.children],
             [(a.name, a.full_name, a.checkpoint_key) for a in n.attributes],
             [(s.original_variable_node_id, s.slot_name, s.slot_variable_node_id)
              for s in n.slot_variables], n.has_checkpoint_values.value)
            for n in graph.nodes]


def _same(ours: dict, theirs: dict, exact: bool) -> None:
    assert sorted(ours) == sorted(theirs)
    for key, value in ours.items():
        if exact:
            np.testing.assert_array_equal(value, theirs[key], err_msg=key)
        else:
            np.testing.assert_allclose(value, theirs[key], rtol=1e-4, atol=1e-5, err_msg=key)


def test_the_object_graph_is_tensorflows(tmp_path):
    (tmp_path / "tf").mkdir()
    theirs = oracle.run_tf(f"DIR = {str(tmp_path / 'tf')!r}\n" + OBJECT_GRAPH)
    ours = _here(OBJECT_GRAPH, DIR=str(tmp_path))
    assert _summary(ours) == _summary(theirs)


@pytest.mark.timeout(300)
def test_tensorflow_restores_what_we_wrote(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    monkeypatch.setenv("TENSORFLUX_CHECKPOINT_FORMAT", "tensorflow")
    (tmp_path / "ours").mkdir()
    (tmp_path / "tf").mkdir()
    ours = _here(WRITE, DIR=str(tmp_path / "ours"))
    theirs = oracle.run_tf(f"DIR = {str(tmp_path / 'tf')!r}\nPATH = {ours['path']!r}\n" +
                           READ, timeout=200)
    _same(ours["saved"], theirs["restored"], exact=True)
    _same(ours["after"], theirs["after"], exact=False)


@pytest.mark.timeout(300)
def test_we_restore_what_tensorflow_wrote(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    (tmp_path / "ours").mkdir()
    (tmp_path / "tf").mkdir()
    theirs = oracle.run_tf(f"DIR = {str(tmp_path / 'tf')!r}\n" + WRITE, timeout=200)
    ours = _here(READ, DIR=str(tmp_path / "ours"), PATH=theirs["path"])
    _same(ours["restored"], theirs["saved"], exact=True)
    _same(ours["after"], theirs["after"], exact=False)
