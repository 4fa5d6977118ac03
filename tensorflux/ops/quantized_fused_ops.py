"""The fused eight-bit ops of TensorFlow's oneDNN build, by its names, inputs and attrs:
QuantizedConv2DWithBias[AndRelu]AndRequantize and QuantizedMatMulWithBias[AndRelu]And
Requantize -- the product (as QuantizedConv2D / QuantizedMatMul), a bias added to its qint32
sum, requantized into the frozen output range [min_freezed_output, max_freezed_output] and,
with Relu, clamped at its zero; one kernel, one pass (kernels/cpu/quantized_fused_ops.py
gives the exact definition). The post-training transform (tensorflux/quantization/
transform.py) emits them.
"""

from __future__ import annotations

from tensorflux.framework import dtypes
from tensorflux.framework.op_registry import define_op, not_differentiable
from tensorflux.ops.quantization_ops import (
    _QTYPES,
    _apply,
    _quantized_conv2d_shape,
    _quantized_matmul_shape,
)

__all__ = []

_FUSED_IN = ["bias: Tbias", "min_freezed_output: float", "max_freezed_output: float"]
for _name, _out in (("QuantizedConv2DWithBiasAndReluAndRequantize", "DT_QUINT8"),
                    ("QuantizedConv2DWithBiasAndRequantize", "DT_QINT8")):
    define_op(_name,
              inputs=["input: Tinput", "filter: Tfilter", _FUSED_IN[0], "min_input: float",
                      "max_input: float", "min_filter: float", "max_filter: float"]
              + _FUSED_IN[1:],
              outputs=["output: out_type", "min_output: float", "max_output: float"],
              attrs=[f"Tinput: {_QTYPES}", f"Tfilter: {_QTYPES}", "Tbias: {float, qint32}",
                     f"out_type: {_QTYPES} = {_out}", "strides: list(int)",
                     "padding: {'SAME', 'VALID'}", "dilations: list(int) = [1, 1, 1, 1]",
                     "padding_list: list(int) = []"],
              shape_fn=_quantized_conv2d_shape)
for _name in ("QuantizedMatMulWithBiasAndReluAndRequantize",
              "QuantizedMatMulWithBiasAndRequantize"):
    define_op(_name,
              inputs=["a: T1", "b: T2", _FUSED_IN[0], "min_a: float", "max_a: float",
                      "min_b: float", "max_b: float"] + _FUSED_IN[1:],
              outputs=["out: Toutput", "min_out: float", "max_out: float"],
              attrs=[f"T1: {_QTYPES}", f"T2: {_QTYPES}", "Tbias: {float, qint32}",
                     f"Toutput: {_QTYPES} = DT_QUINT8", "transpose_a: bool = false",
                     "transpose_b: bool = false",
                     "input_quant_mode: {'MIN_FIRST', 'SCALED'} = \"MIN_FIRST\""],
              shape_fn=_quantized_matmul_shape)
for _op in ("QuantizedConv2DWithBiasAndReluAndRequantize", "QuantizedConv2DWithBiasAndRequantize",
            "QuantizedMatMulWithBiasAndReluAndRequantize",
            "QuantizedMatMulWithBiasAndRequantize"):
    not_differentiable(_op)


def quantized_conv2d_with_bias_and_requantize(input, filter, bias, min_input,  # noqa: A002
                                              max_input, min_filter, max_filter,
                                              min_freezed_output, max_freezed_output,
                                              strides, padding, relu=False,
                                              out_type=dtypes.quint8,
                                              dilations=(1, 1, 1, 1), name=None):
    """QuantizedConv2D, + bias (float, or qint32 in the accumulator's range), requantized
    into [min_freezed_output, max_freezed_output] (and clamped at its zero when `relu`), in
    one kernel: `QuantizedConv2DWithBias[AndRelu]AndRequantize`. (output, min, max)."""
    op = "QuantizedConv2DWithBiasAndReluAndRequantize" if relu else \
        "QuantizedConv2DWithBiasAndRequantize"
    return _apply(op, input=input, filter=filter, bias=bias, min_input=min_input,
                  max_input=max_input, min_filter=min_filter, max_filter=max_filter,
                  min_freezed_output=min_freezed_output,
                  max_freezed_output=max_freezed_output, strides=list(strides),
                  padding=padding, out_type=out_type, dilations=list(dilations), name=name)


def quantized_mat_mul_with_bias_and_requantize(a, b, bias, min_a, max_a, min_b, max_b,
                                               min_freezed_output, max_freezed_output,
                                               relu=False, Toutput=dtypes.quint8,
                                               transpose_a=False, transpose_b=False,
                                               name=None):
    """QuantizedMatMul with `quantized_conv2d_with_bias_and_requantize`'s bias,
    requantization and Relu in one kernel: `QuantizedMatMulWithBias[AndRelu]AndRequantize`."""
    op = "QuantizedMatMulWithBiasAndReluAndRequantize" if relu else \
        "QuantizedMatMulWithBiasAndRequantize"
    return _apply(op, a=a, b=b, bias=bias, min_a=min_a, max_a=max_a, min_b=min_b,
                  max_b=max_b, min_freezed_output=min_freezed_output,
                  max_freezed_output=max_freezed_output, Toutput=Toutput,
                  transpose_a=transpose_a, transpose_b=transpose_b, name=name)
