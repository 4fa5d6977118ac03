"""CPU kernels (NumPy), one module per op family, mirroring tensorflux/ops/.

Once they are imported, `_blas.apply_process_policy()` sets the process-wide BLAS threading
and malloc policy that the kernels assume (_blas.py explains both).
"""

from tensorflux.kernels.cpu import (  # noqa: F401 - importing registers the kernels
    _blas,
    array_ext_ops,
    array_ops,
    batch_norm_ops,
    candidate_sampling_ops,
    comparison_ops,
    constant_op,
    control_flow_ops,
    conv3d_ops,
    conv_ops,
    data_flow_ops,
    dataset_ops,
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
    math_ops,
    matrix_ops,
    nn_ops,
    parsing_ops,
    pooling_ops,
    quantization_ops,
    random_ext_ops,
    random_ops,
    reduction_ops,
    ref_variable_ops,
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
    unary_ops,
)

# After the kernel modules: every BLAS they load (NumPy's, SciPy's) is in the process now.
_blas.apply_process_policy()
