"""GPU kernels of the image resizes and their gradients (ops/image_ops.py): the CPU
kernels' interpolation weights (kernels/cpu/image_ops.py: one dense [out, in] matrix per
axis, computed on the host from the sizes alone) applied on the device as two batched
matrix products in float32; nearest neighbour gathers rows and columns.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu import image_ops as cpu_image
from tensorflux.kernels.gpu import backend
from tensorflux.kernels.gpu._common import host, hybrid


def _separable(x, wy: np.ndarray, wx: np.ndarray):
    """wy @ x[b, :, :, c] @ wx^T for every batch entry and channel, in float32."""
    xp = backend.xp()
    x = x.astype(np.float32, copy=False)
    b, h, w, c = x.shape
    o, p = wy.shape[0], wx.shape[0]
    wy = backend.to_device(wy.astype(np.float32))
    wx = backend.to_device(wx.astype(np.float32))
    rows = xp.matmul(wy, xp.ascontiguousarray(x).reshape(b, h, w * c))  # [b, o, w*c]
    return xp.matmul(wx, rows.reshape(b * o, w, c)).reshape(b, o, p, c)


def _resize(node):
    op_type = node.op
    align = node.attrs["align_corners"]
    half = node.attrs.get("half_pixel_centers", False)

    def compute(ctx, images, size):
        images, size = backend.to_device(images), host(size)
        h, w = cpu_image._check_size(images, size)
        if op_type == "ResizeNearestNeighbor":
            iy = backend.to_device(cpu_image._nearest_index(images.shape[1], h, align, half))
            ix = backend.to_device(cpu_image._nearest_index(images.shape[2], w, align, half))
            return images[:, iy][:, :, ix]
        wy = cpu_image._weights(op_type, images.shape[1], h, align, half)
        wx = cpu_image._weights(op_type, images.shape[2], w, align, half)
        return _separable(images, wy, wx)

    return compute


def _resize_grad(node):
    op_type = node.op
    align, half = node.attrs["align_corners"], node.attrs["half_pixel_centers"]

    def compute(ctx, grads, original):
        grads = backend.to_device(grads)
        wy = cpu_image._weights(op_type, original.shape[1], grads.shape[1], align, half)
        wx = cpu_image._weights(op_type, original.shape[2], grads.shape[2], align, half)
        return _separable(grads, wy.T, wx.T).astype(original.dtype)

    return compute


for _op in ("ResizeBilinear", "ResizeBicubic", "ResizeArea", "ResizeNearestNeighbor"):
    hybrid(_op, _resize)
for _op in ("ResizeBilinearGrad", "ResizeBicubicGrad"):
    hybrid(_op, _resize_grad)
