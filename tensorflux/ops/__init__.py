"""Op definitions, TF1 wrappers and gradients, one module per op family.

Only op families live here; the libraries built from them have packages of their own
(tensorflux/variables, control_flow, autodiff, nn).
"""

# math_ops first: the other math families (unary_ops, comparison_ops, reduction_ops, ...)
# import its helpers.
from tensorflux.ops import math_ops  # noqa: F401, I001
from tensorflux.ops import (  # noqa: F401 - importing registers the ops
    array_ext_ops,
    array_ops,
    batch_norm_ops,
    candidate_sampling_ops,
    comparison_ops,
    constant_op,
    conv_ops,
    conv3d_ops,
    control_flow_ops,
    data_flow_ops,
    depthwise_conv_ops,
    gather_ops,
    image_ops,
    io_ops,
    joining_ops,
    linalg_factor_ops,
    linalg_ops,
    logging_ops,
    lookup_ops,
    math_ext_ops,
    morphology_ops,
    matrix_ops,
    nn_ops,
    parsing_ops,
    pooling_ops,
    quantization_ops,
    random_ops,
    random_ext_ops,
    ref_variable_ops,
    reduction_ops,
    runtime_ops,
    save_restore_ops,
    script_ops,
    segment_ops,
    sequence_ops,
    set_ops,
    slicing_ops,
    sparse_ops,
    special_math_ops,
    spectral_ops,
    state_ops,
    string_ops,
    summary_ops,
    tensor_array_ops,
    training_ops,
    tridiagonal_ops,
    unary_ops,
)
