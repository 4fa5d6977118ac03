"""Composite tensors (RaggedTensor, IndexedSlices) in SavedModel signatures: TensorInfo's
`composite_tensor` encoding (a TypeSpecProto and the components' TensorInfos), as
TensorFlow writes and reads it; SavedModels with ragged inputs and outputs go both ways."""

from __future__ import annotations

import pytest

import tensorflux as tf
from tensorflux.protos import meta_graph_pb2
from tests.oracle import run_both, run_tf

INFOS = """
rt = tf.ragged.placeholder(tf.float32, 1, [3])
rt2 = tf.ragged.placeholder(tf.int32, 2, [])
rc = tf.ragged.constant([[1.]], row_splits_dtype=tf.int32)
sl = tf.IndexedSlices(tf.zeros([2, 3]), tf.constant([0, 1]), tf.constant([5, 3]))
sl2 = tf.IndexedSlices(tf.zeros([2, 3]), tf.constant([0, 1], tf.int64))
infos = [tf.saved_model.build_tensor_info(v) for v in (rt, rt2, rc, sl, sl2)]
result = {"infos": [i.SerializeToString() for i in infos],
          "back": [repr(tf.saved_model.get_tensor_from_tensor_info(i)) for i in infos]}
"""


def _parse(blob: bytes):
    return meta_graph_pb2.TensorInfo.FromString(blob)


@pytest.mark.oracle
def test_tensor_infos_are_tensorflows():
    ours, theirs = run_both(INFOS, tf)
    for mine, tfs in zip(ours["infos"], theirs["infos"], strict=True):
        assert _parse(mine) == _parse(tfs)


def test_composite_round_trip_in_tensorflux():
    with tf.Graph().as_default():
        rt = tf.ragged.placeholder(tf.int32, 2, [])
        info = tf.saved_model.build_tensor_info(rt)
        assert info.WhichOneof("encoding") == "composite_tensor"
        assert info.composite_tensor.type_spec.num_flat_components == 3
        back = tf.saved_model.get_tensor_from_tensor_info(info)
        assert isinstance(back, tf.RaggedTensor) and back.ragged_rank == 2
        assert back.flat_values is rt.flat_values
        assert [s.name for s in back.nested_row_splits] == \
            [s.name for s in rt.nested_row_splits]
        sl = tf.IndexedSlices(tf.zeros([2, 3]), tf.constant([0, 1]))
        back = tf.saved_model.get_tensor_from_tensor_info(tf.saved_model.build_tensor_info(sl))
        assert isinstance(back, tf.IndexedSlices) and back.dense_shape is None
        assert back.values is sl.values and back.indices is sl.indices


_RAGGED_VALUE = "tf.ragged.constant_value([[1., 2.], [], [3.]])"
_TF_RUN = """
with tf.Session(graph=tf.Graph()) as sess:
    mgd = tf.saved_model.loader.load(sess, ["serve"], D)
    sig = mgd.signature_def["serving_default"]
    x = tf.saved_model.get_tensor_from_tensor_info(sig.inputs["x"])
    y = tf.saved_model.get_tensor_from_tensor_info(sig.outputs["y"])
    out = sess.run(y, {x: VALUE})
    result = out.to_list()
"""


def _export_ragged(export_dir):
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.ragged.placeholder(tf.float32, 1, [])
        y = x * 2.0
        tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})


@pytest.mark.oracle
def test_tensorflow_runs_a_ragged_signature_saved_by_tensorflux(tmp_path):
    export_dir = str(tmp_path / "ragged")
    _export_ragged(export_dir)
    theirs = run_tf(f"D, VALUE = {export_dir!r}, {_RAGGED_VALUE}\n" + _TF_RUN)
    assert theirs == [[2.0, 4.0], [], [6.0]]


@pytest.mark.oracle
def test_tensorflux_runs_a_ragged_signature_saved_by_tensorflow(tmp_path):
    export_dir = str(tmp_path / "tf_ragged")
    run_tf(f"""
with tf.Graph().as_default(), tf.Session() as sess:
    x = tf.ragged.placeholder(tf.float32, 1, [])
    tf.saved_model.simple_save(sess, {export_dir!r}, {{"x": x}}, {{"y": x * 2.0}})
result = 0
""")
    ns = {"tf": tf, "D": export_dir, "VALUE": tf.ragged.constant_value([[1., 2.], [], [3.]])}
    exec(_TF_RUN.replace("VALUE = ", ""), ns)  # noqa: S102 - the test's own program
    assert ns["result"] == [[2.0, 4.0], [], [6.0]]


def test_ragged_signature_round_trip_in_tensorflux(tmp_path):
    export_dir = str(tmp_path / "ragged")
    _export_ragged(export_dir)
    ns = {"tf": tf, "D": export_dir, "VALUE": tf.ragged.constant_value([[1., 2.], [], [3.]])}
    exec(_TF_RUN, ns)  # noqa: S102 - the test's own program
    assert ns["result"] == [[2.0, 4.0], [], [6.0]]
