"""CPU kernel of tensorflux/ops/conv_nd_ops.py: Conv computed by the Conv2D kernel
(kernels/cpu/conv_ops.py) or the Conv3D kernel (conv3d_ops.py), with the extra batch
dimensions flattened into one and the feature groups split for Conv3D (Conv2D's kernel
takes groups). TensorFlow's CPU kernel takes neither channels first nor groups (it raises
Unimplemented); these compute them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from tensorflux.kernels.cpu._nn_common import _checked, _invalid
from tensorflux.kernels.cpu.conv3d_ops import _conv3d
from tensorflux.kernels.cpu.conv_ops import _conv2d
from tensorflux.kernels.registry import kernel_factory


def _inner_compute(node, rank: int):
    """The Conv2D (rank 4) or Conv3D (rank 5) compute function for `node`'s attributes."""
    a = node.attrs
    first = a["data_format"] == "CHANNELS_FIRST"
    strides, dilations = list(a["strides"]), list(a["dilations"]) or [1] * rank
    if len(strides) != rank or len(dilations) != rank:
        raise _invalid(f"Conv of a rank-{rank} input needs {rank} strides and dilations, got "
                       f"{len(strides)} and {len(dilations)}")
    other = (0, 1) if first else (0, rank - 1)
    if any(strides[i] != 1 for i in other):
        raise _invalid("Current implementation does not support strides in the batch and "
                       "depth dimensions.")
    if any(dilations[i] != 1 for i in other):
        raise _invalid("Current implementation does not support dilation rates in the batch "
                       "and depth dimensions.")
    if rank == 5 and a["padding"] == "EXPLICIT":
        raise _invalid("Explicit padding not supported for 3D Convolution")
    formats = {4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}[rank]
    attrs = {"strides": strides, "dilations": dilations, "padding": a["padding"],
             "explicit_paddings": list(a["explicit_paddings"]),
             "data_format": formats[0] if first else formats[1]}
    op = "Conv2D" if rank == 4 else "Conv3D"
    make = _conv2d if rank == 4 else _conv3d
    return make(SimpleNamespace(name=node.name, op=op, attrs=attrs, inputs=node.inputs))


def _by_groups(inner, ctx, x, w, groups: int, channel_axis: int):
    """`inner` on each feature group: input channels and output channels split alike."""
    xs = np.split(x, groups, axis=channel_axis)
    ws = np.split(w, groups, axis=-1)
    return np.concatenate([inner(ctx, xg, wg) for xg, wg in zip(xs, ws, strict=True)],
                          axis=channel_axis)


@kernel_factory("Conv", expensive=True)
@_checked
def _conv(node):
    batch_dims, groups = node.attrs["batch_dims"], node.attrs["groups"]
    rank = len(node.attrs["strides"])
    first = node.attrs["data_format"] == "CHANNELS_FIRST"
    if batch_dims < 0:
        raise _invalid("Batch dims must be non-negative.")
    inner = _inner_compute(node, rank)

    def compute(ctx, x, w):
        if x.ndim != rank + batch_dims - 1 or w.ndim != rank:
            raise _invalid(f"Conv with batch_dims={batch_dims} and {rank} strides needs an "
                           f"input of rank {rank + batch_dims - 1} and a filter of rank "
                           f"{rank}: got {list(x.shape)} and {list(w.shape)}")
        lead = x.shape[:batch_dims]
        flat = x.reshape((int(np.prod(lead, dtype=np.int64)),) + x.shape[batch_dims:])
        channel_axis = 1 if first else rank - 1
        depth = flat.shape[channel_axis]
        if w.shape[-2] == 0 or depth % w.shape[-2] or depth // w.shape[-2] != groups \
                or w.shape[-1] % groups:
            raise _invalid(f"Input depth {depth}, filter depths {list(w.shape[-2:])} and "
                           f"groups {groups} do not agree: input depth must be groups times "
                           "the filter's input depth, and groups divide its output depth")
        if groups > 1 and rank == 5:
            out = _by_groups(inner, ctx, flat, w, groups, channel_axis)
        else:
            out = inner(ctx, flat, w)
        return out.reshape(lead + out.shape[1:])

    return compute
