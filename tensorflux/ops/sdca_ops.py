"""Stochastic dual coordinate ascent (SDCA) for linear models, TensorFlow's ops:
SdcaOptimizer / SdcaOptimizerV2 (one pass of SDCA over a mini-batch, returning the new
per-example dual state and the weight deltas), SdcaShrinkL1 (the L1 proximal step applied
to variables in place) and SdcaFprint (128-bit FarmHash fingerprints of example ids), with
the TF1 wrappers `tf.train.sdca_optimizer`, `sdca_shrink_l1` and `sdca_fprint`.

The loss updaters (logistic, squared, hinge, smooth hinge, Poisson) and the CoCoA+
partition scaling are TensorFlow's; kernels: tensorflux/kernels/cpu/sdca_ops.py. None of
the ops has a gradient (TensorFlow registers them as not differentiable).
"""

from __future__ import annotations

import numpy as np

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.common_shapes import checked_dims, static_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.framework.operation import Tensor

__all__: list[str] = []  # tf.train.sdca_* (tensorflux/train)

LOSS_TYPES = ("logistic_loss", "squared_loss", "hinge_loss", "smooth_hinge_loss",
              "poisson_loss")


def _sdca_shape(op):
    """The example state [?, 4] (TensorFlow leaves the batch unknown); the deltas shaped as
    the weights they update."""
    a = op.attrs
    n_sparse, n_dense = a["num_sparse_features"], a["num_dense_features"]
    # inputs: example indices, feature indices, values, dense features, weights, labels,
    # sparse indices, then the sparse and the dense weights
    first_sparse_weights = 3 * n_sparse + a["num_sparse_features_with_values"] + n_dense + 2
    sparse = op.inputs[first_sparse_weights:first_sparse_weights + n_sparse]
    dense = op.inputs[first_sparse_weights + n_sparse:first_sparse_weights + n_sparse + n_dense]
    shapes = [[None, 4]]
    for t in list(sparse) + list(dense):
        dims = static_dims(t)
        shapes.append(tensor_shape.unknown_shape() if dims is None else dims)
    return shapes


def _define_sdca(op_type: str, adaptive_attr: str):
    define_op(op_type,
              inputs=["sparse_example_indices: num_sparse_features * int64",
                      "sparse_feature_indices: num_sparse_features * int64",
                      "sparse_feature_values: num_sparse_features_with_values * float",
                      "dense_features: num_dense_features * float", "example_weights: float",
                      "example_labels: float", "sparse_indices: num_sparse_features * int64",
                      "sparse_weights: num_sparse_features * float",
                      "dense_weights: num_dense_features * float",
                      "example_state_data: float"],
              outputs=["out_example_state_data: float",
                       "out_delta_sparse_weights: num_sparse_features * float",
                       "out_delta_dense_weights: num_dense_features * float"],
              attrs=["loss_type: {" + ", ".join(f"'{t}'" for t in LOSS_TYPES) + "}",
                     f"{adaptive_attr}: bool = false", "num_sparse_features: int >= 0",
                     "num_sparse_features_with_values: int >= 0",
                     "num_dense_features: int >= 0", "l1: float", "l2: float",
                     "num_loss_partitions: int >= 1", "num_inner_iterations: int >= 1"],
              shape_fn=_sdca_shape)


_define_sdca("SdcaOptimizer", "adaptative")
_define_sdca("SdcaOptimizerV2", "adaptive")


def _fprint_shape(op):
    dims = checked_dims(op.inputs[0], rank=1)
    return [[dims[0] if dims else None, 2]]


define_op("SdcaFprint", inputs=["input: string"], outputs=["output: int64"],
          shape_fn=_fprint_shape)
define_op("SdcaShrinkL1", inputs=["weights: Ref(num_features * float)"], outputs=[],
          attrs=["num_features: int >= 0", "l1: float", "l2: float"],
          shape_fn=lambda op: [])
not_differentiable("SdcaOptimizer", "SdcaOptimizerV2", "SdcaFprint", "SdcaShrinkL1")


def sdca_optimizer(sparse_example_indices, sparse_feature_indices, sparse_feature_values,
                   dense_features, example_weights, example_labels, sparse_indices,
                   sparse_weights, dense_weights, example_state_data, loss_type, l1, l2,
                   num_loss_partitions, num_inner_iterations, adaptative=True, name=None):
    """One pass of stochastic dual coordinate ascent over a mini-batch
    (`tf.train.sdca_optimizer`, the SdcaOptimizer op).

    Args:
      sparse_example_indices, sparse_feature_indices: per sparse feature group, the example
        (sorted) and feature index of each nonzero.
      sparse_feature_values: the values of the first groups' nonzeros (the other groups'
        are 1).
      dense_features: per dense group, a [num_examples, group size] matrix.
      example_weights, example_labels: [num_examples] floats.
      sparse_indices, sparse_weights: per sparse group, the feature indices that have
        weights and those weights.
      dense_weights: per dense group, its weights.
      example_state_data: [num_examples, 4]: dual, primal loss, dual loss, weight.
      loss_type: "logistic_loss", "squared_loss", "hinge_loss", "smooth_hinge_loss" or
        "poisson_loss".
      l1, l2: the symmetric regularization strengths (l2 > 0).
      num_loss_partitions: the number of partitions of the global loss (CoCoA+).
      num_inner_iterations: recorded (TensorFlow's kernel makes one pass).
      adaptative: sample examples by importance instead of in turn.
      name: a name for the operation.

    Returns:
      (out_example_state_data, out_delta_sparse_weights, out_delta_dense_weights): the new
      example state and the weight deltas to add.
    """
    return apply_op("SdcaOptimizer", sparse_example_indices=list(sparse_example_indices),
                    sparse_feature_indices=list(sparse_feature_indices),
                    sparse_feature_values=list(sparse_feature_values),
                    dense_features=list(dense_features), example_weights=example_weights,
                    example_labels=example_labels, sparse_indices=list(sparse_indices),
                    sparse_weights=list(sparse_weights), dense_weights=list(dense_weights),
                    example_state_data=example_state_data, loss_type=loss_type, l1=l1,
                    l2=l2, num_loss_partitions=num_loss_partitions,
                    num_inner_iterations=num_inner_iterations, adaptative=adaptative,
                    name=name or "SdcaOptimizer")


def sdca_shrink_l1(weights, l1, l2, name=None):
    """Applies the L1 proximal step sign(w) * max(|w| - l1 / l2, 0) to float32 variables in
    place (`tf.train.sdca_shrink_l1`); returns the op.

    TF1 reference variables (and their ref tensors) go to one SdcaShrinkL1 op, as in
    TensorFlow. tensorflux's default variables are resource variables, which SdcaShrinkL1
    cannot take (TensorFlow raises TypeError for them): those get the same step as a read,
    the shrink and an AssignVariableOp each, grouped with the op.
    """
    refs, resources = [], []
    for w in weights:
        t = getattr(w, "handle", w)
        (resources if isinstance(t, Tensor) and t.dtype == dtypes.resource else refs).append(t)
    if not resources:
        return apply_op("SdcaShrinkL1", weights=refs, l1=l1, l2=l2, name=name or "SdcaShrinkL1")
    g = graph_lib.get_graph_from_inputs(refs + resources)
    with g.as_default(), graph_lib.name_scope(name, "SdcaShrinkL1") as scope:
        updates = [apply_op("SdcaShrinkL1", weights=refs, l1=l1, l2=l2)] if refs else []
        shrinkage = np.float32(np.float32(l1) / np.float32(l2))
        for handle in resources:
            w = apply_op("ReadVariableOp", resource=handle, dtype=dtypes.float32)
            kept = apply_op("Maximum", x=apply_op("Sub", x=apply_op("Abs", x=w), y=shrinkage),
                            y=np.float32(0))
            updates.append(apply_op("AssignVariableOp", resource=handle,
                                    value=apply_op("Mul", x=apply_op("Sign", x=w), y=kept)))
        with g.control_dependencies(updates):
            return apply_op("NoOp", name=scope)


def sdca_fprint(input, name=None):  # noqa: A002
    """[N, 2] int64 FarmHash Fingerprint128 (low, high) of N strings
    (`tf.train.sdca_fprint`); a low half of 0 or 1 is moved down by 2 (kept for
    sentinels)."""
    return apply_op("SdcaFprint", input=input, name=name or "SdcaFprint")
