"""GenerateBoundingBoxProposals (`tf.image.generate_bounding_box_proposals`): the region
proposals of Faster R-CNN's RPN (arXiv:1506.01497, eq. 2). Per image: the pre_nms_topn
highest scores, their boxes decoded from the deltas against their anchors, clipped to the
image and dropped when a side is below min_size (times the image's scale), then greedy
non-maximum suppression, keeping post_nms_topn (zeros pad the rest).

TensorFlow has only a GPU kernel; the CPU kernel (kernels/cpu/box_proposal_ops.py) follows
its algorithm step for step in float32. No gradient, as in TensorFlow.
"""

from __future__ import annotations

from tensorflux.framework.common_shapes import checked_dims, merge_dim
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable

__all__: list[str] = []  # tf.image.generate_bounding_box_proposals (tensorflux/image)


def _proposals_shape(op):
    scores = checked_dims(op.inputs[0], rank=4)
    checked_dims(op.inputs[1], rank=4)
    info = checked_dims(op.inputs[2], rank=2)
    if info is not None and info[1] is not None and info[1] != 5:
        raise ValueError(f"Dimension must be 5 but is {info[1]}")
    checked_dims(op.inputs[3], rank=3)
    for t in op.inputs[4:]:
        checked_dims(t, rank=0)
    n = merge_dim(None, scores[0]) if scores is not None else None
    k = op.attrs["post_nms_topn"]
    return [[n, k, 4], [n, k]]


define_op("GenerateBoundingBoxProposals",
          inputs=["scores: float", "bbox_deltas: float", "image_info: float", "anchors: float",
                  "nms_threshold: float", "pre_nms_topn: int32", "min_size: float"],
          outputs=["rois: float", "roi_probabilities: float"],
          attrs=["post_nms_topn: int = 300"], shape_fn=_proposals_shape)
not_differentiable("GenerateBoundingBoxProposals")


def generate_bounding_box_proposals(scores, bbox_deltas, image_info, anchors,
                                    nms_threshold=0.7, pre_nms_topn=6000, min_size=16,
                                    post_nms_topn=300, name=None):
    """Region proposals from anchor scores and box deltas
    (`tf.image.generate_bounding_box_proposals`).

    Args:
      scores: [num_images, height, width, num_anchors] anchor scores (any order).
      bbox_deltas: [num_images, height, width, 4 * num_anchors], per anchor
        (dy, dx, dh, dw) relative to the anchor's center and size.
      image_info: [num_images, 5]: height, width, scale (and two unused values).
      anchors: [height, width, 4 * num_anchors], per position and anchor
        (y1, x1, y2, x2).
      nms_threshold: the IoU above which a lower-scored box is suppressed, in [0, 1].
      pre_nms_topn: how many of the highest scores per image are decoded.
      min_size: boxes with a side below min_size * scale are dropped.
      post_nms_topn: how many boxes per image are returned.
      name: a name for the operation.

    Returns:
      (rois, roi_probabilities): [num_images, post_nms_topn, 4] boxes (y1, x1, y2, x2) in
      decreasing score order and their scores [num_images, post_nms_topn], zero-padded.
    """
    return apply_op("GenerateBoundingBoxProposals", scores=scores, bbox_deltas=bbox_deltas,
                    image_info=image_info, anchors=anchors, nms_threshold=nms_threshold,
                    pre_nms_topn=pre_nms_topn, min_size=min_size, post_nms_topn=post_nms_topn,
                    name=name or "GenerateBoundingBoxProposals")
