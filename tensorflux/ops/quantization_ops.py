"""Quantized inference: QuantizeV2 and Dequantize, the fake-quant ops of quantization-aware
training (FakeQuantWithMinMaxArgs/Vars/VarsPerChannel and their gradient ops), and the
eight-bit compute ops (QuantizedMatMul, QuantizedConv2D, QuantizedBiasAdd, QuantizedRelu,
QuantizedRelu6, RequantizationRange, Requantize, QuantizeDownAndShrinkRange, QuantizedConcat).
Kernels are in
tensorflux/kernels/cpu/quantization_ops.py; the public names are in tensorflux/quantization.

Contract (TensorFlow's CPU kernels; the kernel module states the arithmetic bit for bit):
- A quantized tensor travels as three tensors: the integer values and the float `min` and
  `max` that the lowest and highest integer stand for. Ops that produce quantized tensors
  return the range beside the values.
- QuantizeV2's modes: MIN_COMBINED maps [min, max] linearly onto the whole integer range;
  MIN_FIRST rounds `min` to a whole step first, so that real zero is exactly representable;
  SCALED is symmetric around zero (no zero point), one scale from whichever side binds.
  The range is first widened to contain 0 and to be at least `ensure_minimum_range` wide
  (relative to its magnitude). `axis` >= 0 quantizes each slice along that axis with its own
  range (not for MIN_FIRST).
- QuantizedMatMul / QuantizedConv2D multiply quint8 by quint8 into qint32, subtracting each
  input's zero point; the output range is the product of the two one-step sizes times the
  qint32 extremes. QuantizedBiasAdd adds in a symmetric qint32 range with 2^17 headroom.
  Requantize / RequantizationRange / QuantizeDownAndShrinkRange bring qint32 results back
  to eight bits, in a requested range or in the range the values actually use.
- QuantizedConcat puts its inputs in one range, from the lowest min (but at most 0) to the
  highest max (symmetric around 0 for the signed types), requantizing the inputs whose range
  differs.
- The fake-quant ops round float values to the grid of `num_bits` levels over a range
  nudged so that 0 is a grid point; their gradient passes through inside the nudged range
  and goes to min (below) or max (above) for the Vars forms (straight-through estimator).
"""

from __future__ import annotations

from tensorflux.framework import dtypes, tensor_shape
from tensorflux.framework.common_shapes import checked_dims, merge_dim, static_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, gradient, not_differentiable
from tensorflux.framework.tensor_conversion import convert_to_tensor
from tensorflux.ops.conv_ops import _out_dim
from tensorflux.ops.joining_ops import concat_dims
from tensorflux.ops.pooling_ops import _pool_output

__all__ = ["quantize", "quantize_v2", "dequantize", "quantize_and_dequantize",
           "quantize_and_dequantize_v2", "fake_quant_with_min_max_args",
           "fake_quant_with_min_max_args_gradient", "fake_quant_with_min_max_vars",
           "fake_quant_with_min_max_vars_gradient", "fake_quant_with_min_max_vars_per_channel",
           "fake_quant_with_min_max_vars_per_channel_gradient", "quantized_mat_mul",
           "quantized_conv2d", "quantized_max_pool", "quantized_relu", "quantized_relu6",
           "quantized_bias_add", "requantization_range", "requantize",
           "quantize_down_and_shrink_range"]

_QTYPES = "{qint8, quint8, qint32, qint16, quint16}"
_MODE = "mode: {'MIN_COMBINED', 'MIN_FIRST', 'SCALED'} = \"MIN_COMBINED\""
_FQ_ATTRS = ["num_bits: int = 8", "narrow_range: bool = false"]
_ARGS_ATTRS = ["min: float = -6", "max: float = 6"] + _FQ_ATTRS
_RANGE_OUT = ["output_min: float", "output_max: float"]


# ---- shape functions ---------------------------------------------------------------------


def _range_shape(op, t, axis):
    """The shape of a min/max input: a scalar without an axis, else [dim(axis)]."""
    dims = static_dims(t)
    if axis < 0:
        return []
    if dims is not None and len(dims) != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {len(dims)} for '{op.name}' "
                         f"(op: '{op.type}')")
    return [dims[0] if dims else None]


def _quantize_v2_shape(op):
    axis = op.attrs["axis"]
    if axis < -1:
        raise ValueError(f"axis should be at least -1, got {axis}")
    dims = static_dims(op.inputs[0])
    if axis >= 0 and dims is not None and axis >= len(dims):
        raise ValueError(f"Shape must be at least rank {axis + 1} but is rank {len(dims)}")
    channel = dims[axis] if axis >= 0 and dims is not None else None
    lo = _range_shape(op, op.inputs[1], axis)
    hi = _range_shape(op, op.inputs[2], axis)
    if axis >= 0:
        channel = merge_dim(merge_dim(channel, lo[0]), hi[0])
        lo = hi = [channel]
    return [dims if dims is not None else tensor_shape.unknown_shape(), lo, hi]


def _dequantize_shape(op):
    axis = op.attrs["axis"]
    if axis < -1:
        raise ValueError(f"axis should be at least -1, got {axis}")
    dims = static_dims(op.inputs[0])
    return [dims if dims is not None else tensor_shape.unknown_shape()]


def _same_as_input(op):
    dims = static_dims(op.inputs[0])
    return [dims if dims is not None else tensor_shape.unknown_shape()]


def _fq_vars_shape(op):
    checked_dims(op.inputs[1], rank=0)
    checked_dims(op.inputs[2], rank=0)
    return _same_as_input(op)


def _fq_per_channel_shape(op):
    dims = checked_dims(op.inputs[0], at_least=1)
    depth = dims[-1] if dims is not None else None
    for t in op.inputs[1:3]:
        d = checked_dims(t, rank=1)
        depth = merge_dim(depth, d[0] if d else None)
    return [dims if dims is not None else tensor_shape.unknown_shape()]


def _fq_vars_grad_shape(op):
    x = static_dims(op.inputs[1])
    return [x if x is not None else tensor_shape.unknown_shape(), [], []]


def _fq_per_channel_grad_shape(op):
    x = checked_dims(op.inputs[1], at_least=1)
    depth = x[-1] if x is not None else None
    for t in op.inputs[2:4]:
        d = checked_dims(t, rank=1)
        depth = merge_dim(depth, d[0] if d else None)
    return [x if x is not None else tensor_shape.unknown_shape(), [depth], [depth]]


def _scalar_ranges(op, first):
    if "WithBias" in op.type:  # the fused ops (quantized_fused_ops.py): a bias vector first
        checked_dims(op.inputs[first], rank=1)
        first += 1
    for t in op.inputs[first:]:
        checked_dims(t, rank=0)


def _quantized_matmul_shape(op):
    a = checked_dims(op.inputs[0], rank=2) or [None, None]
    b = checked_dims(op.inputs[1], rank=2) or [None, None]
    _scalar_ranges(op, 2)
    if op.attrs["transpose_a"]:
        a = a[::-1]
    if op.attrs["transpose_b"]:
        b = b[::-1]
    if a[1] is not None and b[0] is not None and a[1] != b[0]:
        raise ValueError(f"Dimensions must be equal, but are {a[1]} and {b[0]} for "
                         f"'{op.name}' (op: 'QuantizedMatMul')")
    return [[a[0], b[1]], [], []]


def _quantized_conv2d_shape(op):
    x = checked_dims(op.inputs[0], rank=4) or [None] * 4
    w = checked_dims(op.inputs[1], rank=4) or [None] * 4
    _scalar_ranges(op, 2)
    strides = list(op.attrs["strides"])
    if len(strides) != 4:
        raise ValueError(f"Conv2D requires the stride attribute to contain 4 values, but got: "
                         f"{len(strides)}")
    dilations = list(op.attrs["dilations"])
    if x[3] is not None and w[2] is not None and x[3] != w[2]:
        raise ValueError(f"Dimensions must be equal, but are {x[3]} and {w[2]}")
    pad = op.attrs["padding"]
    oh = _out_dim(x[1], w[0], strides[1], dilations[1], pad, (0, 0))
    ow = _out_dim(x[2], w[1], strides[2], dilations[2], pad, (0, 0))
    return [[x[0], oh, ow, w[3]], [], []]


def _quantized_bias_add_shape(op):
    x = checked_dims(op.inputs[0], at_least=2)
    b = checked_dims(op.inputs[1], rank=1)
    _scalar_ranges(op, 2)
    if x is not None and b is not None:
        merge_dim(x[-1], b[0])
    return [x if x is not None else tensor_shape.unknown_shape(), [], []]


def _quantized_unary_shape(op):
    _scalar_ranges(op, 1)
    return _same_as_input(op) + [[], []]


def _requantize_shape(op):
    _scalar_ranges(op, 1)
    return _same_as_input(op) + [[], []]


def _quantized_max_pool_shape(op):
    _scalar_ranges(op, 1)
    return [_pool_output(op, checked_dims(op.inputs[0], rank=4)), [], []]


def _requantization_range_shape(op):
    _scalar_ranges(op, 1)
    return [[], []]


# ---- definitions -------------------------------------------------------------------------

define_op("QuantizeV2", inputs=["input: float", "min_range: float", "max_range: float"],
          outputs=["output: T"] + _RANGE_OUT,
          attrs=[f"T: {_QTYPES}", _MODE,
                 "round_mode: {'HALF_AWAY_FROM_ZERO', 'HALF_TO_EVEN'} = "
                 "\"HALF_AWAY_FROM_ZERO\"",
                 "narrow_range: bool = false", "axis: int = -1",
                 "ensure_minimum_range: float = 0.01"],
          shape_fn=_quantize_v2_shape)
define_op("Dequantize", inputs=["input: T", "min_range: float", "max_range: float"],
          outputs=["output: dtype"],
          attrs=[f"T: {_QTYPES}", _MODE, "narrow_range: bool = false", "axis: int = -1",
                 "dtype: {bfloat16, float} = DT_FLOAT"],
          shape_fn=_dequantize_shape)

define_op("FakeQuantWithMinMaxArgs", inputs=["inputs: float"], outputs=["outputs: float"],
          attrs=_ARGS_ATTRS, shape_fn=_same_as_input)
define_op("FakeQuantWithMinMaxArgsGradient", inputs=["gradients: float", "inputs: float"],
          outputs=["backprops: float"], attrs=_ARGS_ATTRS, shape_fn=_same_as_input)
define_op("FakeQuantWithMinMaxVars", inputs=["inputs: float", "min: float", "max: float"],
          outputs=["outputs: float"], attrs=_FQ_ATTRS, shape_fn=_fq_vars_shape)
_FQ_GRAD_IN = ["gradients: float", "inputs: float", "min: float", "max: float"]
_FQ_GRAD_OUT = ["backprops_wrt_input: float", "backprop_wrt_min: float",
                "backprop_wrt_max: float"]
define_op("FakeQuantWithMinMaxVarsGradient", inputs=_FQ_GRAD_IN, outputs=_FQ_GRAD_OUT,
          attrs=_FQ_ATTRS, shape_fn=_fq_vars_grad_shape)
define_op("FakeQuantWithMinMaxVarsPerChannel", inputs=["inputs: float", "min: float",
                                                       "max: float"],
          outputs=["outputs: float"], attrs=_FQ_ATTRS, shape_fn=_fq_per_channel_shape)
define_op("FakeQuantWithMinMaxVarsPerChannelGradient", inputs=_FQ_GRAD_IN,
          outputs=_FQ_GRAD_OUT, attrs=_FQ_ATTRS, shape_fn=_fq_per_channel_grad_shape)

define_op("QuantizedMatMul",
          inputs=["a: T1", "b: T2", "min_a: float", "max_a: float", "min_b: float",
                  "max_b: float"],
          outputs=["out: Toutput", "min_out: float", "max_out: float"],
          attrs=[f"T1: {_QTYPES}", f"T2: {_QTYPES}", f"Toutput: {_QTYPES} = DT_QINT32",
                 "transpose_a: bool = false", "transpose_b: bool = false",
                 f"Tactivation: {_QTYPES} = DT_QUINT8"],
          shape_fn=_quantized_matmul_shape)
define_op("QuantizedConv2D",
          inputs=["input: Tinput", "filter: Tfilter", "min_input: float", "max_input: float",
                  "min_filter: float", "max_filter: float"],
          outputs=["output: out_type", "min_output: float", "max_output: float"],
          attrs=[f"Tinput: {_QTYPES}", f"Tfilter: {_QTYPES}",
                 f"out_type: {_QTYPES} = DT_QINT32", "strides: list(int)",
                 "padding: {'SAME', 'VALID'}", "dilations: list(int) = [1, 1, 1, 1]"],
          shape_fn=_quantized_conv2d_shape)
define_op("QuantizedBiasAdd",
          inputs=["input: T1", "bias: T2", "min_input: float", "max_input: float",
                  "min_bias: float", "max_bias: float"],
          outputs=["output: out_type", "min_out: float", "max_out: float"],
          attrs=[f"T1: {_QTYPES}", f"T2: {_QTYPES}", f"out_type: {_QTYPES}"],
          shape_fn=_quantized_bias_add_shape)
for _relu in ("QuantizedRelu", "QuantizedRelu6"):
    define_op(_relu, inputs=["features: Tinput", "min_features: float", "max_features: float"],
              outputs=["activations: out_type", "min_activations: float",
                       "max_activations: float"],
              attrs=[f"Tinput: {_QTYPES}", f"out_type: {_QTYPES} = DT_QUINT8"],
              shape_fn=_quantized_unary_shape)
define_op("QuantizedMaxPool", inputs=["input: T", "min_input: float", "max_input: float"],
          outputs=["output: T", "min_output: float", "max_output: float"],
          attrs=[f"T: {_QTYPES}", "ksize: list(int)", "strides: list(int)",
                 "padding: {'SAME', 'VALID'}"],
          shape_fn=_quantized_max_pool_shape)
define_op("RequantizationRange", inputs=["input: Tinput", "input_min: float", "input_max: float"],
          outputs=_RANGE_OUT, attrs=[f"Tinput: {_QTYPES}"],
          shape_fn=_requantization_range_shape)
define_op("Requantize",
          inputs=["input: Tinput", "input_min: float", "input_max: float",
                  "requested_output_min: float", "requested_output_max: float"],
          outputs=["output: out_type"] + _RANGE_OUT,
          attrs=[f"Tinput: {_QTYPES}", f"out_type: {_QTYPES}"], shape_fn=_requantize_shape)
define_op("QuantizeDownAndShrinkRange",
          inputs=["input: Tinput", "input_min: float", "input_max: float"],
          outputs=["output: out_type"] + _RANGE_OUT,
          attrs=[f"Tinput: {_QTYPES}", f"out_type: {_QTYPES}"], shape_fn=_requantize_shape)

_QDQ_T = "T: {bfloat16, half, float, double}"
_QDQ_ATTRS = ["signed_input: bool = true", "num_bits: int = 8", "range_given: bool = false",
              _QDQ_T, "round_mode: {'HALF_TO_EVEN', 'HALF_UP'} = \"HALF_TO_EVEN\"",
              "narrow_range: bool = false", "axis: int = -1"]
for _qdq in ("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4"):
    define_op(_qdq, inputs=["input: T", "input_min: T", "input_max: T"], outputs=["output: T"],
              attrs=_QDQ_ATTRS, shape_fn=_same_as_input)


def _qdq_grad_shape(op):
    x = static_dims(op.inputs[1])
    lo, hi = static_dims(op.inputs[2]), static_dims(op.inputs[3])
    return [x if x is not None else tensor_shape.unknown_shape(),
            lo if lo is not None else tensor_shape.unknown_shape(),
            hi if hi is not None else tensor_shape.unknown_shape()]


define_op("QuantizeAndDequantizeV4Grad",
          inputs=["gradients: T", "input: T", "input_min: T", "input_max: T"],
          outputs=["input_backprop: T", "input_min_backprop: T", "input_max_backprop: T"],
          attrs=[_QDQ_T, "axis: int = -1"], shape_fn=_qdq_grad_shape)

# Quantized tensors carry no gradient (TF registers none); the fake-quant gradient ops are
# the gradients themselves.
for _op in ("QuantizeV2", "Dequantize", "QuantizedMatMul", "QuantizedConv2D",
            "QuantizedBiasAdd", "QuantizedRelu", "QuantizedRelu6", "QuantizedMaxPool",
            "RequantizationRange",
            "Requantize", "QuantizeDownAndShrinkRange", "FakeQuantWithMinMaxArgsGradient",
            "FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannelGradient",
            # TF registers one for V4Grad that returns 3 entries for its 4 inputs (unusable)
            "QuantizeAndDequantizeV4Grad"):
    not_differentiable(_op)


@gradient("QuantizeAndDequantizeV2")
def _quantize_and_dequantize_v2_grad(op, grad):
    """Straight through, unclamped (as TF's)."""
    return [grad, None, None]


@gradient("QuantizeAndDequantizeV4")
def _quantize_and_dequantize_v4_grad(op, grad):
    """Straight through inside [input_min, input_max]; the range gets zeros."""
    return list(apply_op("QuantizeAndDequantizeV4Grad", gradients=grad, input=op.inputs[0],
                         input_min=op.inputs[1], input_max=op.inputs[2],
                         axis=op.attrs["axis"]))


@gradient("FakeQuantWithMinMaxArgs")
def _fake_quant_args_grad(op, grad):
    """Straight-through inside the nudged [min, max]; zero outside."""
    return [apply_op("FakeQuantWithMinMaxArgsGradient", gradients=grad, inputs=op.inputs[0],
                     min=op.attrs["min"], max=op.attrs["max"], num_bits=op.attrs["num_bits"],
                     narrow_range=op.attrs["narrow_range"])]


def _fake_quant_vars_grad(op, grad):
    """Input: straight-through inside the nudged range; min and max: the summed gradient
    of the elements clamped to them."""
    grad_op = op.type + "Gradient"
    dx, dmin, dmax = apply_op(grad_op, gradients=grad, inputs=op.inputs[0], min=op.inputs[1],
                              max=op.inputs[2], num_bits=op.attrs["num_bits"],
                              narrow_range=op.attrs["narrow_range"])
    return [dx, dmin, dmax]


gradient("FakeQuantWithMinMaxVars")(_fake_quant_vars_grad)
gradient("FakeQuantWithMinMaxVarsPerChannel")(_fake_quant_vars_grad)


# ---- TF1 wrappers ------------------------------------------------------------------------

def _apply(op_type: str, **kwargs):
    """apply_op named after the op by default; a multi-output op's outputs come in its
    named tuple (as `tf.raw_ops` returns them)."""
    return apply_op(op_type, name=kwargs.pop("name", None) or op_type, **kwargs)


def _resolve_axis(input, axis):  # noqa: A002
    """TF's rule: None is -1 (whole tensor); a negative axis needs a known rank."""
    if axis is None:
        return -1
    if axis < 0:
        dims = static_dims(input)
        if dims is None:
            raise ValueError("input should have known rank to use negative axis.")
        axis %= len(dims)
    return axis


def quantize_v2(input, min_range, max_range, T, mode="MIN_COMBINED", name=None,  # noqa: A002
                round_mode="HALF_AWAY_FROM_ZERO", narrow_range=False, axis=None,
                ensure_minimum_range=0.01):
    """Float to a quantized type (`tf.quantize_v2`, the op QuantizeV2): see the module
    docstring for the modes.

    Args:
      input: a float32 tensor.
      min_range, max_range: the float range (scalars, or 1-D along `axis`).
      T: the quantized dtype (qint8, quint8, qint16, quint16, qint32).
      mode: "MIN_COMBINED", "MIN_FIRST" or "SCALED".
      round_mode: "HALF_AWAY_FROM_ZERO", or "HALF_TO_EVEN" (SCALED only).
      narrow_range: SCALED leaves out the lowest integer (symmetric range).
      axis: quantize each slice along this axis with its own range; None for one range.
      ensure_minimum_range: the least width of the range, relative to its magnitude.

    Returns:
      (output, output_min, output_max): the values and the range they stand for.
    """
    input = convert_to_tensor(input, dtype=dtypes.float32, name="input")  # noqa: A001
    return _apply("QuantizeV2", input=input, min_range=min_range, max_range=max_range, T=T,
                  mode=mode, round_mode=round_mode, narrow_range=narrow_range,
                  axis=_resolve_axis(input, axis), ensure_minimum_range=ensure_minimum_range,
                  name=name)


def quantize(input, min_range, max_range, T, mode="MIN_COMBINED",  # noqa: A002
             round_mode="HALF_AWAY_FROM_ZERO", name=None, narrow_range=False, axis=None,
             ensure_minimum_range=0.01):
    """`tf.quantization.quantize` / `tf.quantize`: QuantizeV2 (see `quantize_v2`)."""
    return quantize_v2(input, min_range, max_range, T, mode=mode, name=name,
                       round_mode=round_mode, narrow_range=narrow_range, axis=axis,
                       ensure_minimum_range=ensure_minimum_range)


def _qdq(op_type, input, input_min, input_max, signed_input, num_bits,  # noqa: A002
         range_given, round_mode, name, narrow_range, axis):
    input = convert_to_tensor(input, name="input")  # noqa: A001
    return apply_op(op_type, input=input, input_min=input_min, input_max=input_max,
                    signed_input=signed_input, num_bits=num_bits, range_given=range_given,
                    round_mode=round_mode, narrow_range=narrow_range,
                    axis=_resolve_axis(input, axis), name=name or op_type)


def quantize_and_dequantize(input, input_min, input_max, signed_input=True,  # noqa: A002
                            num_bits=8, range_given=False, round_mode="HALF_TO_EVEN",
                            name=None, narrow_range=False, axis=None):
    """Float values rounded to `num_bits` levels and back, over a symmetric (signed) or
    [0, max] range that keeps 0 exact (`tf.quantization.quantize_and_dequantize`, op
    QuantizeAndDequantizeV2; its gradient passes straight through).

    Args:
      input: a floating tensor.
      input_min, input_max: the range, used when `range_given` (else the data's own).
      signed_input: a signed integer grid (else unsigned).
      num_bits: the grid's bits.
      range_given: use `input_min`/`input_max` (values outside are clamped).
      round_mode: "HALF_TO_EVEN" or "HALF_UP".
      narrow_range: a signed grid without its lowest level.
      axis: per-slice ranges along this axis; None for one range.
    """
    return _qdq("QuantizeAndDequantizeV2", input, input_min, input_max, signed_input, num_bits,
                range_given, round_mode, name, narrow_range, axis)


def quantize_and_dequantize_v2(input, input_min, input_max, signed_input=True,  # noqa: A002
                               num_bits=8, range_given=False, round_mode="HALF_TO_EVEN",
                               name=None, narrow_range=False, axis=None):
    """As `quantize_and_dequantize` (op QuantizeAndDequantizeV4), with a gradient that is
    zero outside [input_min, input_max]."""
    return _qdq("QuantizeAndDequantizeV4", input, input_min, input_max, signed_input, num_bits,
                range_given, round_mode, name, narrow_range, axis)


def dequantize(input, min_range, max_range, mode="MIN_COMBINED", name=None,  # noqa: A002
               axis=None, narrow_range=False, dtype=dtypes.float32):
    """A quantized tensor back to float (`tf.quantization.dequantize`, op Dequantize).

    Args:
      input: a quantized tensor; min_range, max_range: the range it stands for.
      mode: the mode it was quantized with; narrow_range and axis likewise.
      dtype: float32, or bfloat16 (MIN_COMBINED only).
    """
    input = convert_to_tensor(input, name="input")  # noqa: A001
    return apply_op("Dequantize", input=input, min_range=min_range, max_range=max_range,
                    mode=mode, narrow_range=narrow_range, axis=_resolve_axis(input, axis),
                    dtype=dtype, name=name or "Dequantize")


def fake_quant_with_min_max_args(inputs, min=-6, max=6, num_bits=8,  # noqa: A002
                                 narrow_range=False, name=None):
    """Float values rounded to `num_bits` levels over the fixed range [min, max], nudged so
    that 0 is exact (`tf.quantization.fake_quant_with_min_max_args`)."""
    return apply_op("FakeQuantWithMinMaxArgs", inputs=inputs, min=float(min), max=float(max),
                    num_bits=num_bits, narrow_range=narrow_range,
                    name=name or "FakeQuantWithMinMaxArgs")


def fake_quant_with_min_max_args_gradient(gradients, inputs, min=-6, max=6,  # noqa: A002
                                          num_bits=8, narrow_range=False, name=None):
    """The gradient of `fake_quant_with_min_max_args`: `gradients` where the input lies in
    the nudged range, 0 elsewhere."""
    return apply_op("FakeQuantWithMinMaxArgsGradient", gradients=gradients, inputs=inputs,
                    min=float(min), max=float(max), num_bits=num_bits,
                    narrow_range=narrow_range, name=name or "FakeQuantWithMinMaxArgsGradient")


def fake_quant_with_min_max_vars(inputs, min, max, num_bits=8,  # noqa: A002
                                 narrow_range=False, name=None):
    """As `fake_quant_with_min_max_args` with the range in scalar tensors (trainable)."""
    return apply_op("FakeQuantWithMinMaxVars", inputs=inputs, min=min, max=max,
                    num_bits=num_bits, narrow_range=narrow_range,
                    name=name or "FakeQuantWithMinMaxVars")


def fake_quant_with_min_max_vars_gradient(gradients, inputs, min, max,  # noqa: A002
                                          num_bits=8, narrow_range=False, name=None):
    """(backprops_wrt_input, backprop_wrt_min, backprop_wrt_max) of the Vars op."""
    return _apply("FakeQuantWithMinMaxVarsGradient", gradients=gradients, inputs=inputs,
                  min=min, max=max, num_bits=num_bits, narrow_range=narrow_range, name=name)


def fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits=8,  # noqa: A002
                                             narrow_range=False, name=None):
    """As `fake_quant_with_min_max_vars` with one range per entry of the last dimension."""
    return apply_op("FakeQuantWithMinMaxVarsPerChannel", inputs=inputs, min=min, max=max,
                    num_bits=num_bits, narrow_range=narrow_range,
                    name=name or "FakeQuantWithMinMaxVarsPerChannel")


def fake_quant_with_min_max_vars_per_channel_gradient(gradients, inputs, min,  # noqa: A002
                                                      max, num_bits=8,  # noqa: A002
                                                      narrow_range=False, name=None):
    """The per-channel gradients; backprop_wrt_min/max have one entry per channel."""
    return _apply("FakeQuantWithMinMaxVarsPerChannelGradient", gradients=gradients,
                  inputs=inputs, min=min, max=max, num_bits=num_bits,
                  narrow_range=narrow_range, name=name)


def quantized_mat_mul(a, b, min_a, max_a, min_b, max_b, Toutput=dtypes.qint32,
                      transpose_a=False, transpose_b=False, Tactivation=dtypes.quint8,
                      name=None):
    """quint8 x quint8 -> qint32 matrix product with its range: (out, min_out, max_out)."""
    return _apply("QuantizedMatMul", a=a, b=b, min_a=min_a, max_a=max_a, min_b=min_b,
                  max_b=max_b, Toutput=Toutput, transpose_a=transpose_a,
                  transpose_b=transpose_b, Tactivation=Tactivation, name=name)


def quantized_conv2d(input, filter, min_input, max_input, min_filter,  # noqa: A002
                     max_filter, strides, padding, out_type=dtypes.qint32,
                     dilations=(1, 1, 1, 1), name=None):
    """quint8 NHWC input x quint8 filter -> qint32: (output, min_output, max_output)."""
    return _apply("QuantizedConv2D", input=input, filter=filter, min_input=min_input,
                  max_input=max_input, min_filter=min_filter, max_filter=max_filter,
                  strides=list(strides), padding=padding, out_type=out_type,
                  dilations=list(dilations), name=name)


def quantized_bias_add(input, bias, min_input, max_input, min_bias, max_bias,  # noqa: A002
                       out_type, name=None):
    """Adds a quantized bias along the last dimension: (output, min_out, max_out)."""
    return _apply("QuantizedBiasAdd", input=input, bias=bias, min_input=min_input,
                  max_input=max_input, min_bias=min_bias, max_bias=max_bias,
                  out_type=out_type, name=name)


def quantized_relu(features, min_features, max_features, out_type=dtypes.quint8, name=None):
    """max(features, 0) on quantized values; the range is unchanged (`QuantizedRelu`)."""
    return _apply("QuantizedRelu", features=features, min_features=min_features,
                  max_features=max_features, out_type=out_type, name=name)


def quantized_relu6(features, min_features, max_features, out_type=dtypes.quint8, name=None):
    """min(max(features, 0), 6) on quantized values (`QuantizedRelu6`)."""
    return _apply("QuantizedRelu6", features=features, min_features=min_features,
                  max_features=max_features, out_type=out_type, name=name)


def quantized_max_pool(input, min_input, max_input, ksize, strides, padding,  # noqa: A002
                       name=None):
    """Max pooling of quantized NHWC values; the range is unchanged (`QuantizedMaxPool`)."""
    return _apply("QuantizedMaxPool", input=input, min_input=min_input, max_input=max_input,
                  ksize=list(ksize), strides=list(strides), padding=padding, name=name)


def requantization_range(input, input_min, input_max, name=None):  # noqa: A002
    """(output_min, output_max): the float range the qint32 values actually use."""
    return _apply("RequantizationRange", input=input, input_min=input_min,
                  input_max=input_max, name=name)


def requantize(input, input_min, input_max, requested_output_min,  # noqa: A002
               requested_output_max, out_type, name=None):
    """qint32 values re-expressed in `out_type` over the requested range (`Requantize`)."""
    return _apply("Requantize", input=input, input_min=input_min, input_max=input_max,
                  requested_output_min=requested_output_min,
                  requested_output_max=requested_output_max, out_type=out_type, name=name)


def quantize_down_and_shrink_range(input, input_min, input_max, out_type,  # noqa: A002
                                   name=None):
    """qint32 values re-expressed in `out_type` over the range they actually use."""
    return _apply("QuantizeDownAndShrinkRange", input=input, input_min=input_min,
                  input_max=input_max, out_type=out_type, name=name)


# ---- QuantizedAvgPool, QuantizedReluX (issue 18: tf.nn.quantized_avg_pool, quantized_relu_x)

define_op("QuantizedAvgPool", inputs=["input: T", "min_input: float", "max_input: float"],
          outputs=["output: T", "min_output: float", "max_output: float"],
          attrs=[f"T: {_QTYPES}", "ksize: list(int)", "strides: list(int)",
                 "padding: {'SAME', 'VALID'}"],
          shape_fn=_quantized_max_pool_shape)
define_op("QuantizedReluX", inputs=["features: Tinput", "max_value: float",
                                    "min_features: float", "max_features: float"],
          outputs=["activations: out_type", "min_activations: float", "max_activations: float"],
          attrs=[f"Tinput: {_QTYPES}", f"out_type: {_QTYPES} = DT_QUINT8"],
          shape_fn=_quantized_unary_shape)
not_differentiable("QuantizedAvgPool", "QuantizedReluX")


def quantized_avg_pool(input, min_input, max_input, ksize, strides, padding,  # noqa: A002
                       name=None):
    """Average pooling of quantized NHWC values: the mean of each window's unpadded integers,
    rounded half to even; the range is unchanged
    (`tf.nn.quantized_avg_pool`)."""
    return _apply("QuantizedAvgPool", input=input, min_input=min_input, max_input=max_input,
                  ksize=list(ksize), strides=list(strides), padding=padding, name=name)


def quantized_relu_x(features, max_value, min_features, max_features, out_type=dtypes.quint8,
                     name=None):
    """min(max(features, 0), max_value) on quantized values; the range is unchanged
    (`tf.nn.quantized_relu_x`)."""
    return _apply("QuantizedReluX", features=features, max_value=max_value,
                  min_features=min_features, max_features=max_features, out_type=out_type,
                  name=name)


__all__ += ["quantized_avg_pool", "quantized_relu_x"]


# ---- QuantizedConcat (tf.quantized_concat) ------------------------------------------------


def _quantized_concat_shape(op):
    n = op.attrs["N"]
    dims = concat_dims(op.inputs[1:1 + n], op.inputs[0])
    for t in op.inputs[1 + n:]:
        checked_dims(t, rank=0)
    return [dims if dims is not None else tensor_shape.unknown_shape(), [], []]


# TF's op leaves T open; its CPU kernels take quint8 and qint32 (tensorflux's every
# quantized type).
define_op("QuantizedConcat",
          inputs=["concat_dim: int32", "values: N * T", "input_mins: N * float",
                  "input_maxes: N * float"],
          outputs=["output: T", "output_min: float", "output_max: float"],
          attrs=["N: int >= 2", "T: type"], shape_fn=_quantized_concat_shape)
not_differentiable("QuantizedConcat")


def quantized_concat(concat_dim, values, input_mins, input_maxes, name=None):
    """Concatenates quantized tensors along `concat_dim` in one output range
    (`tf.quantized_concat`).

    Args:
      concat_dim: a scalar int32, in [0, rank) (no negative dimensions).
      values: at least two quantized tensors of one type and rank.
      input_mins, input_maxes: the float range of each of `values` (scalars).
      name: a name for the operation.

    Returns:
      (output, output_min, output_max): the concatenation, each input requantized into
      [output_min, output_max] unless its range is that one already; output_min is the
      lowest input min (at most 0), output_max the highest input max, both widened to the
      larger magnitude for signed types.
    """
    return _apply("QuantizedConcat", concat_dim=concat_dim, values=list(values),
                  input_mins=list(input_mins), input_maxes=list(input_maxes), name=name)


__all__ += ["quantized_concat"]
