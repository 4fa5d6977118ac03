"""Conv: TensorFlow's generic convolution op (`tf.conv`), 2-D or 3-D by the filter's rank,
over any number of leading batch dimensions (`batch_dims`), channels last or first, with
feature groups. TensorFlow has no gradient for it. Kernel:
tensorflux/kernels/cpu/conv_nd_ops.py (the Conv2D and Conv3D kernels on the batch flattened).
"""

from __future__ import annotations

from tensorflux.framework import tensor_shape
from tensorflux.framework.common_shapes import static_dims
from tensorflux.framework.op_def_library import apply_op
from tensorflux.framework.op_registry import define_op, no_gradient
from tensorflux.ops.conv_ops import _out_dim, int32_values

__all__: list[str] = []  # tf.conv is a top-level name (tensorflux/__init__.py)


def conv_attrs(op_attrs, rank: int) -> tuple[list, list, list]:
    """(strides, dilations, explicit padding pairs) of a Conv node whose input has `rank`
    dimensions besides the extra batch ones, checked as TensorFlow's shape function does.

    Raises:
      ValueError: a list of the wrong length, bad explicit paddings.
    """
    dilations = list(op_attrs["dilations"]) or [1] * rank
    if len(dilations) != rank:
        raise ValueError(f"Conv requires the dilation attribute to contain {rank} values, "
                         f"but got: {len(dilations)}")
    strides = list(op_attrs["strides"])
    if len(strides) != rank:
        raise ValueError(f"Stride attribute should contain {rank} values, but got: "
                         f"{len(strides)}")
    pads = list(op_attrs["explicit_paddings"])
    if op_attrs["padding"] != "EXPLICIT":
        if pads:
            raise ValueError("explicit_paddings attribute must be empty if the padding "
                             "attribute is not EXPLICIT")
        pairs = [(0, 0)] * rank
    else:
        if len(pads) != 2 * rank:
            raise ValueError(f"explicit_paddings attribute must contain {2 * rank} values, "
                             f"but got: {len(pads)}")
        if rank == 5:
            raise ValueError("Explicit padding not supported for 3D Convolution")
        if any(p < 0 for p in pads):
            raise ValueError("All elements of explicit_paddings must be nonnegative")
        pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(rank)]
    return int32_values("strides", strides), int32_values("dilations", dilations), pairs


def check_groups(depth, filter_depth, out_depth, groups: int) -> None:
    """The feature-group rules of TensorFlow's shape function (None: unknown).

    Raises:
      ValueError: the depths and `groups` do not agree.
    """
    if depth is not None and filter_depth is not None:
        if filter_depth == 0 or depth % filter_depth:
            raise ValueError(f"Depth of input ({depth}) is not a multiple of input depth of "
                             f"filter ({filter_depth})")
        if depth % groups:
            raise ValueError("Number of groups should divide input depth")
        if depth // filter_depth != groups:
            raise ValueError("Input depth divided by filter input depth does not match with "
                             f"groups parameter ({groups})")
    if out_depth is not None and out_depth % groups:
        raise ValueError("Number of groups should divide output depth")


def _conv_shape(op):
    batch_dims = op.attrs["batch_dims"]
    if batch_dims < 0:
        raise ValueError("Batch dims must be non-negative.")
    x, w = static_dims(op.inputs[0]), static_dims(op.inputs[1])
    if x is None or w is None:
        return [tensor_shape.unknown_shape()]
    rank = len(x) - batch_dims + 1
    if rank not in (4, 5):
        raise ValueError("Input tensor must be rank 4 or 5, excluding extra batch dimensions, "
                         f"but got: {rank}")
    if len(w) not in (4, 5):
        raise ValueError(f"Filter tensor must be rank 4 or 5, but got: {rank}")
    if len(w) != rank:
        raise ValueError("Input tensor rank must be the same as filter rank.")
    strides, dilations, pairs = conv_attrs(op.attrs, rank)
    first = op.attrs["data_format"] == "CHANNELS_FIRST"
    if first and any(pairs[i] != (0, 0) for i in (0, 1)) or \
            not first and any(pairs[i] != (0, 0) for i in (0, rank - 1)):
        raise ValueError("Nonzero explicit padding in the batch or depth dimensions is not "
                         "supported")
    lead, rest = x[:batch_dims], x[batch_dims:]
    spatial = rest[1:] if first else rest[:-1]
    check_groups(rest[0] if first else rest[-1], w[-2], w[-1], op.attrs["groups"])
    offset = 2 if first else 1
    out = [_out_dim(size, k, strides[a], dilations[a], op.attrs["padding"], pairs[a])
           for a, size, k in zip(range(offset, offset + rank - 2), spatial, w[:-2], strict=True)]
    return [lead + ([w[-1]] + out if first else out + [w[-1]])]


define_op("Conv", inputs=["input: T", "filter: T"], outputs=["output: T"],
          attrs=["T: {half, bfloat16, float, double, int32}", "strides: list(int)",
                 "padding: {'SAME', 'VALID', 'EXPLICIT'}", "explicit_paddings: list(int) = []",
                 "data_format: {'CHANNELS_FIRST', 'CHANNELS_LAST'} = \"CHANNELS_LAST\"",
                 "dilations: list(int) = []", "batch_dims: int = 1", "groups: int = 1"],
          shape_fn=_conv_shape)


def conv(input, filter, strides, padding, explicit_paddings=(),  # noqa: A002
         data_format="CHANNELS_LAST", dilations=(), batch_dims=1, groups=1, name=None):
    """A 2-D or 3-D convolution with leading batch dimensions (`tf.conv`, the raw Conv op).

    Args:
      input: [batch..., spatial..., channels] (CHANNELS_LAST) or [batch..., channels,
        spatial...], with `batch_dims` batch dimensions and 2 or 3 spatial ones.
      filter: [spatial..., in_channels / groups, out_channels].
      strides: one per dimension of input without its extra batch dimensions (4 or 5).
      padding: "SAME", "VALID" or "EXPLICIT" (2-D only).
      explicit_paddings: (before, after) per dimension, flattened, with "EXPLICIT".
      data_format: "CHANNELS_LAST" or "CHANNELS_FIRST".
      dilations: as strides; empty means 1s.
      batch_dims: the number of leading batch dimensions.
      groups: the number of feature groups.
      name: a name for the operation.

    Returns:
      The convolution, of input's dtype.
    """
    return apply_op("Conv", input=input, filter=filter, strides=list(strides), padding=padding,
                    explicit_paddings=list(explicit_paddings), data_format=data_format,
                    dilations=list(dilations), batch_dims=batch_dims, groups=groups,
                    name=name or "Conv")


no_gradient("Conv")  # as TensorFlow: tf.gradients through it is a LookupError
