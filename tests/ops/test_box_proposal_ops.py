"""GenerateBoundingBoxProposals (`tf.image.generate_bounding_box_proposals`,
tensorflux/ops/box_proposal_ops.py): the proposals against a box-by-box Python statement of
TensorFlow's GPU algorithm (sort, decode, clip, size filter, greedy NMS, pad) on random
inputs, score ties, zero-area and oversized boxes; the op definition, static shapes and
shape errors against the oracle. TensorFlow has no CPU kernel for the op, so its values
cannot be asked of the (CPU) oracle."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework import errors, op_registry
from tests import oracle

pytestmark = pytest.mark.usefixtures("fresh_graph")

F = np.float32


def reference(scores, deltas, info, anchors, nms, pre, min_size, post):
    """One box at a time, in float32."""
    n, h, w, a = scores.shape
    rois = np.zeros((n, post, 4), F)
    probs = np.zeros((n, post), F)
    clip = F(math.log(1000.0 / 16.0))
    for img in range(n):
        flat = scores[img].reshape(-1)
        order = sorted(range(flat.size), key=lambda i: (-flat[i], i))[:pre]
        kept = []
        for i in order:
            ay1, ax1, ay2, ax2 = anchors.reshape(-1, 4)[i]
            dy, dx, dh, dw = deltas[img].reshape(-1, 4)[i]
            box = []
            for lo, hi, dc, ds in ((ax1, ax2, dx, dw), (ay1, ay2, dy, dh)):
                size = F(hi - lo)
                ctr = F(lo + F(0.5) * size) + F(size * dc)
                half = F(F(0.5) * F(size * np.exp(min(ds, clip))))
                box += [F(ctr - half), F(ctr + half)]
            x1, x2 = (min(max(v, F(0)), info[img, 1]) for v in box[:2])
            y1, y2 = (min(max(v, F(0)), info[img, 0]) for v in box[2:])
            if min(F(x2 - x1), F(y2 - y1)) >= F(F(min_size) * info[img, 2]):
                kept.append(((x1, y1, x2, y2), flat[i]))
        chosen = []
        for box, score in kept:
            if len(chosen) == post:
                break
            if not any(_overlaps(c, box, nms) for c, _ in chosen):
                chosen.append((box, score))
        for k, ((x1, y1, x2, y2), score) in enumerate(chosen):
            rois[img, k] = [y1, x1, y2, x2]
            probs[img, k] = score
    return rois, probs


def _overlaps(a, b, threshold):
    area_a = F((a[2] - a[0]) * (a[3] - a[1]))
    area_b = F((b[2] - b[0]) * (b[3] - b[1]))
    if area_a == 0 or area_b == 0:
        return False
    w = max(F(min(a[2], b[2]) - max(a[0], b[0])), F(0))
    h = max(F(min(a[3], b[3]) - max(a[1], b[1])), F(0))
    inter = F(w * h)
    return inter > F(F(area_a + area_b - inter) * F(threshold))


def make_inputs(seed, n=2, h=5, w=6, a=3, tie=False, flat=False):
    rng = np.random.default_rng(seed)
    scores = rng.random((n, h, w, a)).astype(F)
    if tie:
        scores = np.round(scores * 4).astype(F) / 4
    deltas = (rng.standard_normal((n, h, w, 4 * a)) * 0.3).astype(F)
    deltas[..., 3::4] += F(6.0) * (rng.random((n, h, w, a)) < 0.1)  # beyond the clip
    corner = rng.random((h, w, a, 2)) * 40
    size = rng.random((h, w, a, 2)) * 25 + 1
    if flat:
        size[..., 0] *= rng.random((h, w, a)) < 0.7  # zero-height anchors
    anchors = np.concatenate([corner, corner + size], -1).astype(F).reshape(h, w, 4 * a)
    info = np.array([[50, 60, 1.0, 0, 0], [45, 40, 0.5, 0, 0]][:n], F)
    return scores, deltas, info, anchors


CASES = [
    # (seed, nms_threshold, pre_nms_topn, min_size, post_nms_topn, tie, flat)
    (0, 0.7, 6000, 16.0, 300, False, False),
    (1, 0.5, 40, 4.0, 10, False, False),
    (2, 0.3, 90, 1.0, 25, True, False),
    (3, 0.0, 7, 0.0, 5, False, False),
    (4, 1.0, 6000, 2.0, 200, False, True),
    (5, 0.6, 1, 0.0, 3, True, True),
]


@pytest.mark.parametrize("seed, nms, pre, min_size, post, tie, flat", CASES)
def test_against_the_reference(seed, nms, pre, min_size, post, tie, flat):
    scores, deltas, info, anchors = make_inputs(seed, tie=tie, flat=flat)
    out = tf.image.generate_bounding_box_proposals(scores, deltas, info, anchors,
                                                   nms_threshold=nms, pre_nms_topn=pre,
                                                   min_size=min_size, post_nms_topn=post)
    assert out[0].shape.as_list() == [2, post, 4] and out[1].shape.as_list() == [2, post]
    with tf.Session() as sess:
        rois, probs = sess.run(out)
    want_rois, want_probs = reference(scores, deltas, info, anchors, nms, pre, min_size, post)
    np.testing.assert_allclose(rois, want_rois, rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(probs, want_probs)
    assert (np.diff(probs, axis=1) <= 0).all()


@pytest.mark.parametrize("change, message", [
    ({"nms_threshold": 1.5}, "nms_threshold should be between 0 and 1. Got 1.5"),
    ({"pre_nms_topn": 0}, "pre_nms_topn should be greater than 00"),
    ({"post_nms_topn": 0}, "post_nms_topn can't be 0 or less"),
])
def test_run_time_errors(change, message):
    scores, deltas, info, anchors = make_inputs(0, n=1, h=2, w=2, a=1)
    args = dict(nms_threshold=0.5, pre_nms_topn=10, min_size=1.0, post_nms_topn=4)
    args.update(change)
    out = tf.image.generate_bounding_box_proposals(scores, deltas, info, anchors, **args)
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match=message):
        sess.run(out)


_SHAPES_PROGRAM = """
P = lambda shape: tf.placeholder(tf.float32, shape)
G = tf.image.generate_bounding_box_proposals
result = {}
for key, (shapes, extra) in {
        "ok": ([[2, 3, 4, 2], [2, 3, 4, 8], [2, 5], [3, 4, 8]], {}),
        "unknown": ([None, None, None, None], {}),
        "unknown_n": ([[None, 3, 4, 2], [2, 3, 4, 8], [None, 5], [3, 4, 8]], {}),
        "scores_rank": ([[2, 3, 4], [2, 3, 4, 8], [2, 5], [3, 4, 8]], {}),
        "deltas_rank": ([[2, 3, 4, 2], [2, 3, 8], [2, 5], [3, 4, 8]], {}),
        "info_rank": ([[2, 3, 4, 2], [2, 3, 4, 8], [5], [3, 4, 8]], {}),
        "anchors_rank": ([[2, 3, 4, 2], [2, 3, 4, 8], [2, 5], [24, 4]], {}),
        "info_width": ([[2, 3, 4, 2], [2, 3, 4, 7], [2, 6], [3, 4, 5]], {}),
        "nms_rank": ([[2, 3, 4, 2], [2, 3, 4, 8], [2, 5], [3, 4, 8]], {"nms_threshold": [0.5]}),
        "pre_rank": ([[2, 3, 4, 2], [2, 3, 4, 8], [2, 5], [3, 4, 8]], {"pre_nms_topn": [5]}),
        "post": ([[2, 3, 4, 2], [2, 3, 4, 8], [2, 5], [3, 4, 8]], {"post_nms_topn": 7}),
        }.items():
    try:
        rois, probs = G(*[P(s) for s in shapes], **extra)
        result[key] = [rois.shape.as_list(), probs.shape.as_list(), rois.op.name]
    except ValueError as e:
        result[key] = str(e).split(" for '")[0]
"""


@pytest.mark.oracle
def test_static_shapes_and_errors_equal_tensorflow():
    ours, theirs = oracle.run_both(_SHAPES_PROGRAM, tf)
    assert ours == theirs


@pytest.mark.oracle
def test_op_definition_matches_tensorflow():
    from google.protobuf import json_format

    theirs = oracle.run_tf("""
from google.protobuf import json_format
from tensorflow.python.framework import op_def_registry
d = json_format.MessageToDict(op_def_registry.get("GenerateBoundingBoxProposals"))
d.pop("summary", None); d.pop("description", None)
result = json.dumps(d, sort_keys=True)
""")
    ours = json_format.MessageToDict(op_registry.get("GenerateBoundingBoxProposals").to_proto())
    assert json.loads(theirs) == ours
