"""`tf.quantization`: quantize/dequantize, the fake-quant ops of quantization-aware training,
and the raw eight-bit ops; `transform` turns a frozen float graph into a quantized one
(post-training quantization with calibrated ranges).

The ops live in tensorflux/ops/quantization_ops.py; this package only names them.
"""

from tensorflux.ops.quantization_ops import (  # noqa: F401
    dequantize,
    fake_quant_with_min_max_args,
    fake_quant_with_min_max_args_gradient,
    fake_quant_with_min_max_vars,
    fake_quant_with_min_max_vars_gradient,
    fake_quant_with_min_max_vars_per_channel,
    fake_quant_with_min_max_vars_per_channel_gradient,
    quantize,
    quantize_and_dequantize,
    quantize_and_dequantize_v2,
    quantize_down_and_shrink_range,
    quantize_v2,
    quantized_bias_add,
    quantized_conv2d,
    quantized_mat_mul,
    quantized_max_pool,
    quantized_relu,
    quantized_relu6,
    requantization_range,
    requantize,
)
