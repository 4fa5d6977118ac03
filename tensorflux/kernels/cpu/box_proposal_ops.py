"""CPU kernel of tensorflux/ops/box_proposal_ops.py, after TensorFlow's GPU kernel (its only
one), in float32:

1. per image, the scores in (height, width, anchor) order sorted by decreasing value, equal
   scores in index order (a stable radix sort on the floats' bits: NaN first, +0 before -0);
   the first min(pre_nms_topn, H*W*A) are decoded;
2. decoding against the anchor (y1, x1, y2, x2) at the same (h, w, a): width = x2 - x1,
   center x1 + width/2 moved by width * dx, width scaled by exp(min(dw, log(1000/16)));
   likewise in y; then every coordinate clipped to [0, image width (height)];
3. a box is kept when min(width, height) >= min_size * image scale, in score order;
4. greedy NMS over the kept boxes: box j is suppressed by an earlier selected box i when
   intersection > (area_i + area_j - intersection) * nms_threshold (boxes of zero area
   never take part); the first post_nms_topn selected are returned as (y1, x1, y2, x2)
   with their scores, zeros after them.
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.cpu._nn_common import _invalid
from tensorflux.kernels.registry import kernel_factory

_F = np.float32
_XFORM_CLIP = _F(math.log(1000.0 / 16.0))


def _descending_order(scores: np.ndarray) -> np.ndarray:
    """Indices of a stable sort of float32 scores by decreasing bit order (as a radix sort
    of the floats: sign-magnitude turned into an unsigned order)."""
    bits = scores.view(np.uint32)
    keys = np.where(bits >> 31, ~bits, bits | np.uint32(0x80000000))
    return np.argsort(~keys, kind="stable")


def _decode(deltas, anchors, info, min_size):
    """Boxes (x1, y1, x2, y2) [n, 4] of deltas (dy, dx, dh, dw) on anchors (y1, x1, y2, x2),
    clipped to the image, and the keep-by-size flags."""
    y1, x1, y2, x2 = anchors.T
    dy, dx, dh, dw = deltas.T
    dw, dh = np.minimum(dw, _XFORM_CLIP), np.minimum(dh, _XFORM_CLIP)
    out = []
    for lo, hi, d_ctr, d_size in ((x1, x2, dx, dw), (y1, y2, dy, dh)):
        size = hi - lo
        ctr = lo + _F(0.5) * size
        pred_ctr = ctr + size * d_ctr
        pred_size = size * np.exp(d_size)
        out.append((pred_ctr - _F(0.5) * pred_size, pred_ctr + _F(0.5) * pred_size))
    (x1, x2), (y1, y2) = out
    height, width, scale = info[0], info[1], info[2]
    x1, x2 = (np.maximum(np.minimum(v, width), _F(0)) for v in (x1, x2))
    y1, y2 = (np.maximum(np.minimum(v, height), _F(0)) for v in (y1, y2))
    keep = np.minimum(x2 - x1, y2 - y1) >= _F(min_size * scale)
    return np.stack([x1, y1, x2, y2], axis=1), keep


def _nms(boxes: np.ndarray, threshold: np.float32, limit: int) -> list[int]:
    """Greedy NMS over boxes (x1, y1, x2, y2) in score order: the selected indices, at most
    `limit`."""
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    alive = np.ones(len(boxes), bool)
    selected: list[int] = []
    for i in range(len(boxes)):
        if not alive[i]:
            continue
        selected.append(i)
        if len(selected) == limit:
            break
        if areas[i] == 0:
            continue
        rest = np.arange(i + 1, len(boxes))
        rest = rest[alive[rest] & (areas[rest] != 0)]
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), _F(0))
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), _F(0))
        inter = w * h
        alive[rest[inter > (areas[i] + areas[rest] - inter) * threshold]] = False
    return selected


def _scalar(value, index: int, dtype):
    a = np.asarray(value)
    if a.ndim != 0:
        raise _invalid(f"Expected a scalar in input {index}but got shape "
                       f"[{','.join(map(str, a.shape))}]")
    return dtype(a)


def _check_shapes(scores, deltas, info, anchors):
    if scores.ndim != 4 or deltas.ndim != 4 or info.ndim != 2 or anchors.ndim != 3:
        raise _invalid("scores and bbox_deltas must be 4-D, image_info 2-D and anchors 3-D, "
                       f"got {list(scores.shape)}, {list(deltas.shape)}, {list(info.shape)} "
                       f"and {list(anchors.shape)}")
    n, h, w, a = scores.shape
    if a == 0 or anchors.shape[2] // a != 4:
        raise errors.OutOfRangeError(None, None, "Box dimensions need to be 4")
    if deltas.shape != (n, h, w, 4 * a) or anchors.shape != (h, w, 4 * a) \
            or info.shape[0] != n or info.shape[1] < 3:
        raise _invalid(f"bbox_deltas must be [{n}, {h}, {w}, {4 * a}], anchors [{h}, {w}, "
                       f"{4 * a}] and image_info [{n}, 5] for scores {list(scores.shape)}, "
                       f"got {list(deltas.shape)}, {list(anchors.shape)} and "
                       f"{list(info.shape)}")


@kernel_factory("GenerateBoundingBoxProposals")
def _generate_bounding_box_proposals(node):
    post_nms_topn = node.attrs["post_nms_topn"]

    def compute(ctx, scores, deltas, info, anchors, nms_threshold, pre_nms_topn, min_size):
        if post_nms_topn <= 0:
            raise _invalid("post_nms_topn can't be 0 or less")
        _check_shapes(scores, deltas, info, anchors)
        threshold = _scalar(nms_threshold, 4, _F)
        if threshold < 0 or threshold > 1:
            raise _invalid(f"nms_threshold should be between 0 and 1. Got {threshold:g}")
        top = _scalar(pre_nms_topn, 5, int)
        if top <= 0:
            raise _invalid(f"pre_nms_topn should be greater than 0{top}")
        least = _scalar(min_size, 6, _F)
        n = scores.shape[0]
        flat_scores = scores.reshape(n, -1)
        flat_deltas = deltas.reshape(n, -1, 4)
        flat_anchors = anchors.reshape(-1, 4)
        rois = np.zeros((n, post_nms_topn, 4), _F)
        probs = np.zeros((n, post_nms_topn), _F)
        for image in range(n):
            order = _descending_order(flat_scores[image])[:top]
            boxes, keep = _decode(flat_deltas[image, order], flat_anchors[order], info[image],
                                  least)
            boxes, kept_scores = boxes[keep], flat_scores[image, order][keep]
            chosen = _nms(boxes, threshold, post_nms_topn)
            rois[image, :len(chosen)] = boxes[chosen][:, [1, 0, 3, 2]]
            probs[image, :len(chosen)] = kept_scores[chosen]
        return rois, probs

    return compute
