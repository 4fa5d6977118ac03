"""SDCA ops (tensorflux/ops/sdca_ops.py): SdcaFprint equal to TensorFlow's 128-bit
fingerprints on many strings, SdcaShrinkL1 equal to TensorFlow's in place, and
SdcaOptimizer's state and deltas equal to TensorFlow's over several steps for every loss
type, adaptive or not, one or two loss partitions, with L1, on problems whose outcome does
not depend on TensorFlow's nondeterministic example order (one example; examples sharing
no features); the op definitions, static shapes and run-time errors against the oracle too.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import op_registry
from tensorflux.kernels.cpu import sdca_ops as sdca_kernels
from tests import oracle

pytestmark = pytest.mark.usefixtures("fresh_graph")


def run(fetch, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed_dict)


# ---- SdcaFprint ------------------------------------------------------------------------------


def _strings():
    rng = np.random.default_rng(11)
    out = [b"", b"a", b"ab", b"abc", b"hello world", b"0123456789abcdef", "é ü".encode()]
    for n in list(range(1, 40)) + [63, 64, 65, 127, 128, 129, 191, 255, 256, 300, 1000]:
        out.append(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
    return out


@pytest.mark.oracle
def test_fprint_equals_tensorflow():
    strings = _strings()
    program = f"""
result = tf.Session().run(tf.train.sdca_fprint(tf.constant({strings!r}))).tolist()
"""
    ours, theirs = oracle.run_both(program, tf)
    assert ours == theirs


def test_fprint_keeps_low_halves_0_and_1_free(monkeypatch):
    fake = {b"zero": (0, 7), b"one": (1, 8), b"two": (2, 9)}
    monkeypatch.setattr(sdca_kernels, "fingerprint128", fake.__getitem__)
    got = run(tf.train.sdca_fprint(tf.constant(list(fake))))
    assert got.tolist() == [[-2, 7], [-1, 8], [2, 9]]
    assert tf.train.sdca_fprint(tf.placeholder(tf.string, [None])).shape.as_list() == [None, 2]
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.train.sdca_fprint(tf.placeholder(tf.string, [2, 2]))


# ---- SdcaShrinkL1 ----------------------------------------------------------------------------


_SHRINK_PROGRAM = """
w1 = tf.Variable(np.array([1.0, -0.05, 0.3, -2.5, 0.0, 0.1], np.float32), use_resource=False)
w2 = tf.Variable(np.array([[0.7, -0.7], [1e-3, 3.0]], np.float32), use_resource=False)
result = []
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for l1, l2 in ((0.1, 1.0), (0.3, 0.7), (0.0, 2.0), (1.0, 3.0)):
        sess.run(tf.train.sdca_shrink_l1([w1, w2], l1, l2))
        result.append([v.tolist() for v in sess.run([w1, w2])])
"""


@pytest.mark.oracle
def test_shrink_l1_equals_tensorflow():
    ours, theirs = oracle.run_both(_SHRINK_PROGRAM, tf)
    assert ours == theirs


def test_shrink_l1_on_resource_variables():
    w = tf.Variable(np.array([1.0, -0.05, 0.3], np.float32))
    r = tf.Variable(np.array([1.0, -0.05, 0.3], np.float32), use_resource=False)
    step = tf.train.sdca_shrink_l1([w, r], 0.2, 2.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        got_w, got_r = sess.run([w, r])
    x = np.float32([1.0, -0.05, 0.3])
    np.testing.assert_array_equal(got_w, np.sign(x) * np.maximum(np.abs(x) - np.float32(0.1),
                                                                 np.float32(0)))
    np.testing.assert_array_equal(got_w, got_r)


# ---- SdcaOptimizer ----------------------------------------------------------------------------

# Steps of SDCA on problems TensorFlow solves deterministically: one example (sparse
# features with values, sparse features without, a dense group), or four examples with no
# feature in common. Each step feeds the state back and adds the deltas to the weights.
_OPTIMIZER_PROGRAM = """
F = np.float32
def labels_for(loss, n):
    return {"squared_loss": F([1.5, -0.7, 0.3, 2.0]), "poisson_loss": F([2.0, 0.0, 1.0, 3.0])
            }.get(loss, F([1.0, 0.0, 1.0, 0.0]))[:n]
def one_example(loss):
    return dict(ex=[[0, 0, 0], [0, 0]], feat=[[0, 2, 3], [1, 4]], vals=[[0.5, -1.0, 2.0]],
                dense=[F([[0.3, -0.2, 0.1]])], weights=F([1.5]), labels=labels_for(loss, 1),
                indices=[list(range(5)), list(range(6))],
                sparse_w=[F([0.1, -0.3, 0.2, 0.0, 0.05]), F([0.0] * 6)],
                dense_w=[F([0.2, 0.1, -0.4])])
def disjoint(loss):
    return dict(ex=[[0, 0, 1, 2, 3, 3]], feat=[[0, 1, 2, 3, 4, 5]],
                vals=[[1.0, -0.5, 2.0, 0.25, 1.5, -1.0]], dense=[],
                weights=F([1.0, 2.0, 0.5, 1.0]), labels=labels_for(loss, 4),
                indices=[list(range(6))], sparse_w=[F([0.1, 0.2, -0.1, 0.0, 0.3, -0.2])],
                dense_w=[])
def train(problem, loss, adaptive, partitions, l1, steps=3):
    p = dict(problem)
    n = len(p["weights"])
    state = np.zeros((n, 4), F)
    out = []
    for _ in range(steps):
        with tf.Graph().as_default():
            o = tf.train.sdca_optimizer(
                [tf.constant(e, tf.int64) for e in p["ex"]],
                [tf.constant(f, tf.int64) for f in p["feat"]],
                [tf.constant(v, tf.float32) for v in p["vals"]],
                [tf.constant(d) for d in p["dense"]], p["weights"], p["labels"],
                [tf.constant(i, tf.int64) for i in p["indices"]],
                [tf.constant(w) for w in p["sparse_w"]], [tf.constant(w) for w in p["dense_w"]],
                state, loss, l1, 0.5, partitions, 1, adaptative=adaptive)
            state, sparse_d, dense_d = tf.Session().run(o)
        p["sparse_w"] = [w + d for w, d in zip(p["sparse_w"], sparse_d)]
        p["dense_w"] = [w + d for w, d in zip(p["dense_w"], dense_d)]
        out.append([state.tolist(), [d.tolist() for d in sparse_d],
                    [d.tolist() for d in dense_d]])
    return out
result = {}
for loss in LOSSES:
    for adaptive, partitions, l1 in ((False, 1, 0.0), (True, 1, 0.2), (False, 2, 0.1)):
        key = f"{loss}/{adaptive}/{partitions}/{l1}"
        result["one/" + key] = train(one_example(loss), loss, adaptive, partitions, l1)
        if not adaptive:
            result["disjoint/" + key] = train(disjoint(loss), loss, adaptive, partitions, l1)
"""


@pytest.mark.oracle
def test_optimizer_steps_equal_tensorflow():
    program = f"LOSSES = {list(sdca_kernels.LOSSES)!r}\n" + _OPTIMIZER_PROGRAM
    ours, theirs = oracle.run_both(program, tf, timeout=300)
    assert set(ours) == set(theirs)
    for key in sorted(theirs):
        for step, (got, want) in enumerate(zip(ours[key], theirs[key], strict=True)):
            for part, g, w in zip(("state", "sparse", "dense"), got, want, strict=True):
                g = np.asarray(g, np.float64) if part == "state" else g
                w = np.asarray(w, np.float64) if part == "state" else w
                if part == "state":
                    np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7,
                                               err_msg=f"{key} step {step} {part}")
                else:
                    for a, b in zip(g, w, strict=True):
                        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7,
                                                   err_msg=f"{key} step {step} {part}")


_ERRORS_PROGRAM = """
F = np.float32
def attempt(loss="logistic_loss", ex=(0, 1), feat=(0, 1), labels=(0.0, 1.0), state=(2, 4),
            dense=None, dense_w=None, indices=(0, 1), with_sparse=True):
    sparse = [[tf.constant(ex, tf.int64)], [tf.constant(feat, tf.int64)], [],
              [tf.constant(indices, tf.int64)], [tf.zeros([len(indices)])]]
    if not with_sparse:
        sparse = [[], [], [], [], []]
    o = tf.train.sdca_optimizer(sparse[0], sparse[1], sparse[2], dense or [], F([1.0, 1.0]),
                                F(labels), sparse[3], sparse[4], dense_w or [],
                                tf.zeros(state), loss, 0.0, 1.0, 1, 1, adaptative=False)
    try:
        tf.Session().run(o)
        return "ok"
    except tf.errors.OpError as e:
        lines = [line for line in e.message.splitlines() if line.strip()
                 and not line.startswith((" ", "\t", "Node:", "Detected at", "Graph execution"))]
        return type(e).__name__ + ": " + lines[0]
result = {
    "label": attempt(labels=(0.5, 1.0)),
    "poisson": attempt(loss="poisson_loss", labels=(-1.0, 1.0)),
    "squared": attempt(loss="squared_loss", labels=(-1.0, 7.0)),
    "range": attempt(feat=(0, 7)),
    "duplicate": attempt(ex=(0, 0, 1), feat=(1, 1, 0)),
    "state": attempt(state=(2, 3)),
    "labels": attempt(labels=(1.0,)),
    "dense_rank": attempt(dense=[F([1.0, 2.0])], dense_w=[F([0.0, 0.0])]),
    "dense_wide": attempt(dense=[F([[1.0] * 4] * 2)], dense_w=[F([0.0, 0.0])]),
    "nothing": attempt(with_sparse=False),
}
"""


@pytest.mark.oracle
def test_run_time_errors_equal_tensorflow():
    ours, theirs = oracle.run_both(_ERRORS_PROGRAM, tf)
    assert ours == theirs


def test_examples_run_in_order_and_share_weights():
    """Three examples touching one weight, in one run: as three runs of one example each,
    the weights updated between them (num_loss_partitions = 1)."""
    feats = [[0, 1], [1, 2], [0, 2]]
    labels = np.float32([1.0, -0.5, 2.0])

    def step(examples, weights, state):
        ex = [e for e, f in enumerate(examples) for _ in f]
        out = tf.train.sdca_optimizer(
            [tf.constant(ex, tf.int64)], [tf.constant(sum(examples, []), tf.int64)], [], [],
            np.ones(len(examples), np.float32), labels[:len(examples)] if len(examples) > 1
            else labels[[feats.index(examples[0])]], [tf.constant([0, 1, 2], tf.int64)],
            [weights], [], state, "squared_loss", 0.0, 1.0, 1, 1, adaptative=False)
        return run(out)

    whole_state, (whole_delta,), _ = step(feats, np.zeros(3, np.float32),
                                          np.zeros((3, 4), np.float32))
    weights = np.zeros(3, np.float32)
    for i, f in enumerate(feats):
        state, (delta,), _ = step([f], weights, np.zeros((1, 4), np.float32))
        np.testing.assert_allclose(state[0, 0], whole_state[i, 0], rtol=1e-6)
        weights = weights + delta
    np.testing.assert_allclose(weights, whole_delta, rtol=1e-6)


_DEFINITIONS = ["SdcaOptimizer", "SdcaOptimizerV2", "SdcaFprint", "SdcaShrinkL1"]


@pytest.mark.oracle
def test_op_definitions_and_static_shapes_match_tensorflow():
    from google.protobuf import json_format

    theirs = oracle.run_tf(f"""
from google.protobuf import json_format
from tensorflow.python.framework import op_def_registry
result = {{}}
for name in {_DEFINITIONS!r}:
    d = json_format.MessageToDict(op_def_registry.get(name))
    d.pop("summary", None); d.pop("description", None)
    result[name] = json.dumps(d, sort_keys=True)
""")
    for op_type in _DEFINITIONS:
        ours = json_format.MessageToDict(op_registry.get(op_type).to_proto())
        assert json.loads(theirs[op_type]) == ours, op_type
        assert op_registry.get_gradient(op_type) == op_registry.NOT_DIFFERENTIABLE
    shapes = """
o = tf.train.sdca_optimizer([tf.placeholder(tf.int64)], [tf.placeholder(tf.int64)], [],
                            [tf.placeholder(tf.float32, [None, 3])], [1.0, 1.0], [0.0, 1.0],
                            [tf.placeholder(tf.int64)], [tf.placeholder(tf.float32, [7, 1])],
                            [tf.placeholder(tf.float32, [3])], tf.zeros([2, 4]),
                            "hinge_loss", 0.0, 1.0, 1, 1)
result = [o[0].shape.as_list(), o[1][0].shape.as_list(), o[2][0].shape.as_list()]
"""
    ours_shapes, their_shapes = oracle.run_both(shapes, tf)
    assert ours_shapes == their_shapes == [[None, 4], [7, 1], [3]]


def test_v2_op_and_errors_of_a_bad_graph():
    out = tf.raw_ops.SdcaOptimizerV2(
        sparse_example_indices=[], sparse_feature_indices=[], sparse_feature_values=[],
        dense_features=[np.float32([[1.0, 2.0]])], example_weights=np.float32([1.0]),
        example_labels=np.float32([1.0]), sparse_indices=[], sparse_weights=[],
        dense_weights=[np.float32([0.0, 0.0])], example_state_data=np.zeros((1, 4), np.float32),
        loss_type="hinge_loss", l1=0.0, l2=1.0, num_loss_partitions=1, num_inner_iterations=1,
        adaptive=True)
    state, _, (delta,) = run(out)
    # hinge: the dual moves to min(1, (1 - 0) / |x|^2) = 0.2, the weights by 0.2 * x
    np.testing.assert_allclose(state[0], [0.2, 1.0, 0.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(delta, [0.2, 0.4], rtol=1e-6)
    with pytest.raises(ValueError, match="Attr 'loss_type' of 'SdcaOptimizer' Op passed string "
                                         "'cubic_loss' not in"):
        tf.train.sdca_optimizer([], [], [], [np.float32([[1.0]])], [1.0], [1.0], [], [],
                                [np.float32([0.0])], np.zeros((1, 4), np.float32), "cubic_loss",
                                0.0, 1.0, 1, 1)
