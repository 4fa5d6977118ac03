"""CTCLoss, the CTC decoders and the tf.nn CTC helpers: against TensorFlow (one oracle
program), against a plain NumPy enumeration of alignments, and by finite differences."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(120)

PROGRAM = """
rng = np.random.RandomState(7)
x = tf.constant(rng.randn(6, 3, 5).astype(np.float32))
labels = tf.SparseTensor([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0], [2, 1], [2, 2]],
                         np.array([1, 1, 2, 3, 0, 2, 2, 2], np.int32), [3, 3])
seq = [6, 4, 5]
outs = []
for kw in ({}, {"ctc_merge_repeated": False}, {"preprocess_collapse_repeated": True}):
    loss = tf.nn.ctc_loss(labels, x, seq, **kw)
    outs += [loss, tf.gradients(tf.reduce_sum(loss * [1.0, 2.0, 3.0]), x)[0]]
xb = tf.transpose(x, [1, 0, 2])
outs.append(tf.nn.ctc_loss(labels, xb, seq, time_major=False))
dense = tf.constant([[1, 2, 2, 0], [3, 1, 0, 0], [2, 0, 0, 0]])
for blank in (None, 4, -2):
    loss = tf.nn.ctc_loss_v2(dense, x, [3, 2, 1], seq, blank_index=blank)
    outs += [loss, tf.gradients(loss, x)[0]]
shifted = tf.SparseTensor(labels.indices, labels.values + 1, labels.dense_shape)
outs.append(tf.nn.ctc_loss_v2(shifted, x, None, seq, blank_index=0))
outs.append(tf.nn.ctc_loss_v2(labels, xb, None, seq, logits_time_major=False, blank_index=-1))
for merge in (True, False):
    (d,), lp = tf.nn.ctc_greedy_decoder(x, seq, merge_repeated=merge)
    outs += [d.indices, d.values, d.dense_shape, lp]
(d,), lp = tf.nn.ctc_greedy_decoder(x, seq, blank_index=0)
outs += [d.indices, d.values, d.dense_shape, lp]
xs = tf.constant(rng.randn(7, 2, 4).astype(np.float32) * 2)
for merge in (True, False):
    ds, lp = tf.nn.ctc_beam_search_decoder(xs, [7, 5], beam_width=4, top_paths=3,
                                           merge_repeated=merge)
    for d in ds:
        outs += [d.indices, d.values, d.dense_shape]
    outs.append(lp)
ds, lp = tf.nn.ctc_beam_search_decoder_v2(x, seq, beam_width=10, top_paths=2)
outs += [ds[1].values, lp]
outs += list(tf.nn.ctc_unique_labels(tf.constant([[3, 4, 4, 3, 1], [0, 0, 5, 0, 5]])))
outs += list(tf.nn.collapse_repeated(tf.constant([[1, 1, 2, 2, 1], [1, 2, 3, 4, 5]]), [5, 3]))
with tf.Session() as s:
    result = [np.asarray(v).tolist() for v in s.run(outs)]
"""


def _here():
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the test's own program
    return scope["result"]


@pytest.mark.oracle
def test_against_tensorflow():
    got, want = _here(), run_tf(PROGRAM)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64),
                                   np.asarray(w, dtype=np.float64), rtol=2e-5, atol=2e-5,
                                   err_msg=f"output {i}")


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _brute_force_loss(logits, label, merge=True):
    """-log of the sum over all alignments of length T decoding to `label`."""
    steps, classes = logits.shape
    blank = classes - 1
    lp = _log_softmax(logits.astype(np.float64))
    total = 0.0
    for path in itertools.product(range(classes), repeat=steps):
        out, prev = [], None
        for c in path:
            if c != blank and (not merge or c != prev):
                out.append(c)
            prev = c
        if out == list(label):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total)


@pytest.mark.parametrize("label,merge", [([0, 1], True), ([1, 1], True), ([2, 0, 2], True),
                                         ([1, 1], False), ([0], False)])
def test_loss_equals_sum_over_alignments(label, merge):
    rng = np.random.RandomState(len(label))
    xv = rng.randn(5, 1, 4)
    with tf.Graph().as_default(), tf.Session() as s:
        sp = tf.SparseTensor([[0, i] for i in range(len(label))], np.array(label, np.int32),
                             [1, len(label)])
        loss = s.run(tf.nn.ctc_loss(sp, tf.constant(xv), [5], ctc_merge_repeated=merge))
    np.testing.assert_allclose(loss[0], _brute_force_loss(xv[:, 0], label, merge), rtol=1e-10)


def test_gradient_by_finite_differences():
    rng = np.random.RandomState(1)
    xv = rng.randn(5, 2, 4)
    with tf.Graph().as_default(), tf.Session():
        x = tf.constant(xv)
        sp = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], np.array([0, 2, 1], np.int32), [2, 2])
        loss = tf.nn.ctc_loss(sp, x, [5, 3])
        err = tf.test.compute_gradient_error(x, list(xv.shape), loss, [2], x_init_value=xv)
        assert err < 1e-6


def test_no_second_derivative():
    with tf.Graph().as_default():
        x = tf.constant(np.zeros((3, 1, 3), np.float32))
        sp = tf.SparseTensor([[0, 0]], np.array([1], np.int32), [1, 1])
        g = tf.gradients(tf.nn.ctc_loss(sp, x, [3]), x)[0]
        with pytest.raises(LookupError, match="second derivative"):
            tf.gradients(g, x)


def _loss_error(indices, values, seq, steps=3, **kw):
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.constant(np.zeros((steps, len(seq), 4), np.float32))
        sp = tf.SparseTensor(np.array(indices, np.int64).reshape(-1, 2),
                             np.array(values, np.int32), [len(seq), 5])
        return s.run(tf.nn.ctc_loss(sp, x, seq, **kw))


@pytest.mark.parametrize("indices,values,seq,message", [
    ([[0, 0], [0, 1], [0, 2], [0, 3]], [1, 2, 1, 2], [3], "Not enough time"),
    ([[0, 0]], [1], [4], r"sequence_length\(0\) <= 3"),
    ([[0, 0]], [1], [-1], r"seq_len\(0\) < 0"),
    ([], [], [3], "Labels length is zero"),
    ([[0, 0]], [-1], [3], "nonnegative"),
    ([[1, 0], [0, 0]], [1, 2], [3, 3], "not valid"),
    ([[0, 0], [0, 0]], [1, 1], [3], "repeated"),
    ([[2, 0]], [1], [3, 3], "out of bounds"),
    ([[0, 0], [0, 1]], [3, 1], [3], "non-null label"),
])
def test_bad_labels_and_lengths(indices, values, seq, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _loss_error(indices, values, seq)


def test_ignore_longer_outputs_and_null_labels():
    loss = _loss_error([[0, 0], [0, 1], [0, 2], [0, 3]], [1, 2, 1, 2], [3],
                       ignore_longer_outputs_than_inputs=True)
    assert loss.tolist() == [0.0]
    # A label at or above the blank ends the sequence: only blanks remain.
    np.testing.assert_allclose(_loss_error([[0, 0]], [3], [3]), [3 * np.log(4)], rtol=1e-6)


def test_graph_construction_errors():
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[0, 0]], np.array([1], np.int32), [1, 1])
        with pytest.raises(TypeError, match="SparseTensor"):
            tf.nn.ctc_loss(tf.constant([[1]]), tf.zeros([3, 1, 4]), [3])
        with pytest.raises(ValueError, match="rank 3"):
            tf.nn.ctc_loss(sp, tf.zeros([3, 4]), [3])
        with pytest.raises(ValueError, match="blank_index"):
            tf.nn.ctc_loss_v2(sp, tf.zeros([3, 1, 4]), None, [3])
        (d,), lp = tf.nn.ctc_greedy_decoder(tf.zeros([3, 2, 4]), [3, 3])
        assert d.indices.shape.as_list() == [None, 2] and lp.shape.as_list() == [2, 1]
        ds, lp = tf.nn.ctc_beam_search_decoder(tf.zeros([3, 2, 4]), [3, 3], top_paths=2,
                                               beam_width=3)
        assert len(ds) == 2 and lp.shape.as_list() == [2, 2]


def test_beam_search_errors():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.zeros([3, 1, 4])
        ds, _ = tf.nn.ctc_beam_search_decoder(x, [3], beam_width=2, top_paths=3)
        with pytest.raises(tf.errors.InvalidArgumentError, match="top_paths"):
            s.run(ds[0].values)
        ds, _ = tf.nn.ctc_beam_search_decoder(x, [0], beam_width=3, top_paths=2)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Less leaves"):
            s.run(ds[0].values)


def test_greedy_decoder_by_hand():
    inf = float("inf")
    logits = np.array([[[0., -inf, -inf], [-2.3, -inf, -0.1]],
                       [[-inf, -0.5, -inf], [-inf, -inf, -0.1]],
                       [[-inf, -inf, -inf], [-0.1, -inf, -2.3]]], np.float32)
    with tf.Graph().as_default(), tf.Session() as s:
        (d,), lp = tf.nn.ctc_greedy_decoder(logits, [2, 3], blank_index=1)
        ix, vals, shape, lpv = s.run([d.indices, d.values, d.dense_shape, lp])
    assert ix.tolist() == [[0, 0], [1, 0], [1, 1]] and vals.tolist() == [0, 2, 0]
    assert shape.tolist() == [2, 2]
    np.testing.assert_allclose(lpv, [[0.5], [0.3]], rtol=1e-6)
