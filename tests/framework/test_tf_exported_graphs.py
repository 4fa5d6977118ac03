"""Issue 18's target: GraphDefs that TensorFlow 2.21 exports for models using the ops the
issue added import into tensorflux and run with TensorFlow's results (oracle tests)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle

# Built and run by TensorFlow; `fetch` maps a key to the tensor whose value is compared.
_PROGRAM = """
import base64
from tensorflow.python.ops import gen_array_ops
rng = np.random.RandomState(0)
fetch = {}
# CTC loss and greedy decoding
logits = tf.constant(rng.randn(5, 2, 4).astype(np.float32))
labels = tf.SparseTensor(indices=[[0, 0], [0, 1], [1, 0]], values=[1, 2, 1],
                         dense_shape=[2, 2])
seq_len = tf.constant([5, 4])
fetch["ctc_loss"] = tf.nn.ctc_loss(labels, logits, seq_len)
(decoded,), fetch["ctc_neg_sum_logits"] = tf.nn.ctc_greedy_decoder(logits, seq_len)
fetch["ctc_indices"], fetch["ctc_values"], fetch["ctc_shape"] = (
    decoded.indices, decoded.values, decoded.dense_shape)
# stateless random numbers (values fixed by the algorithm and the seeds)
fetch["stateless_uniform"] = tf.random.stateless_uniform([3, 4], seed=[1, 2])
fetch["stateless_normal"] = tf.random.stateless_normal([5], seed=[7, 8], dtype=tf.float64)
fetch["stateless_uniform_int"] = tf.random.stateless_uniform(
    [4], seed=[3, 4], minval=0, maxval=100, dtype=tf.int32)
# tridiagonal solve (diagonally dominant systems)
diags = tf.constant(rng.rand(2, 3, 4) + np.array([0, 3, 0])[None, :, None], tf.float64)
fetch["tridiagonal_solve"] = tf.linalg.tridiagonal_solve(
    diags, tf.constant(rng.rand(2, 4, 2), tf.float64))
# fractional max pooling with deterministic pooling sequences
fetch["fmp"], fetch["fmp_rows"], fetch["fmp_cols"] = tf.nn.fractional_max_pool(
    tf.constant(rng.rand(1, 8, 8, 2).astype(np.float32)), [1.0, 1.5, 1.5, 1.0],
    pseudo_random=True, overlapping=True, deterministic=True, seed=3, seed2=5)
# parsing a SequenceExample
ex = tf.train.SequenceExample()
ex.context.feature["len"].int64_list.value.append(3)
for v in (1.0, 2.0, 3.0):
    ex.feature_lists.feature_list["vals"].feature.add().float_list.value.append(v)
context, sequence = tf.io.parse_single_sequence_example(
    tf.constant(ex.SerializeToString()),
    context_features={"len": tf.io.FixedLenFeature([], tf.int64)},
    sequence_features={"vals": tf.io.FixedLenSequenceFeature([], tf.float32)})
fetch["parsed_len"], fetch["parsed_vals"] = context["len"], sequence["vals"]
# hashed sparse feature crosses
a = tf.SparseTensor([[0, 0], [1, 0]], tf.constant([b"a", b"b"]), [2, 1])
b = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], tf.constant([b"x", b"y", b"z"]), [2, 2])
crossed = tf.sparse.cross_hashed([a, b], num_buckets=100)
fetch["cross_indices"], fetch["cross_values"] = crossed.indices, crossed.values
# atrous convolution through space-to-batch
filt = tf.constant(rng.rand(2, 2, 2, 3).astype(np.float32))
fetch["with_space_to_batch"] = tf.nn.with_space_to_batch(
    tf.constant(rng.rand(1, 6, 6, 2).astype(np.float32)), dilation_rate=[2, 2],
    padding="SAME", filter_shape=[2, 2],
    op=lambda x, num_spatial_dims, padding: tf.nn.conv2d(x, filt, [1, 1, 1, 1], padding))
# 3-D patches
fetch["volume_patches"] = tf.extract_volume_patches(
    tf.constant(rng.rand(1, 4, 4, 4, 1).astype(np.float32)), [1, 2, 2, 2, 1],
    [1, 2, 2, 2, 1], "VALID")
# WAV codec
audio = np.sin(np.arange(16) / 3.0)[:, None] * np.array([[0.5, -0.25]])
fetch["wav"] = tf.audio.encode_wav(tf.constant(audio.astype(np.float32)), 8000)
fetch["wav_audio"], fetch["wav_rate"] = tf.audio.decode_wav(fetch["wav"])
# quasi-random numbers and the checks tf.debugging.enable_check_numerics adds
fetch["sobol"] = tf.math.sobol_sample(4, 6, skip=2)
fetch["checked"] = gen_array_ops.check_numerics_v2(fetch["stateless_uniform"], "msg")
with tf.Session() as s:
    values = s.run(fetch)
result = {"graph_def": base64.b64encode(
              tf.get_default_graph().as_graph_def().SerializeToString()).decode(),
          "names": {k: t.name for k, t in fetch.items()},
          "op_types": sorted({n.op for n in tf.get_default_graph().as_graph_def().node}),
          "values": values}
"""


@pytest.mark.oracle
def test_graph_defs_tensorflow_exports_run_with_its_values():
    out = oracle.run_tf("g_ = tf.Graph()\nwith g_.as_default():\n" + "\n".join(
        "    " + line for line in _PROGRAM.strip().splitlines()), timeout=180)
    for op_type in ("CTCLoss", "CTCGreedyDecoder", "StatelessRandomUniformV2",
                    "StatelessRandomNormalV2", "StatelessRandomUniformIntV2",
                    "StatelessRandomGetKeyCounter", "TridiagonalSolve", "FractionalMaxPool",
                    "ParseSequenceExampleV2", "SparseCross", "SpaceToBatchND",
                    "BatchToSpaceND", "ExtractVolumePatches", "EncodeWav", "DecodeWav",
                    "SobolSample", "CheckNumericsV2"):
        assert op_type in out["op_types"]  # the graph uses the ops it means to test
    gd = tf.GraphDef()
    gd.ParseFromString(base64.b64decode(out["graph_def"]))
    names = out["names"]
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="")
        with tf.Session() as sess:
            ours = sess.run({key: name for key, name in names.items()})
    assert set(ours) == set(out["values"])
    for key, theirs in out["values"].items():
        got = ours[key]
        if isinstance(theirs, bytes):
            assert got == theirs, key
            continue
        theirs = np.asarray(theirs)
        assert np.shape(got) == theirs.shape, key
        if theirs.dtype.kind in "fc":
            np.testing.assert_allclose(got, theirs, rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            np.testing.assert_array_equal(got, theirs, err_msg=key)
