"""The Table 1 nets of benchmarks/programs/_convnets.py in PyTorch (NCHW, cuDNN), for the
side-by-side GPU benchmark: the same layers, channels, strides and batch sizes."""

from __future__ import annotations

import torch
from torch import nn


def _conv(c, out, k, stride, padding):
    pad = (k - 1) // 2 if padding == "SAME" else 0
    return [nn.Conv2d(c, out, k, stride, pad), nn.ReLU(inplace=True)]


def _pool(k, s, padding, avg=False):
    pad = (k - 1) // 2 if padding == "SAME" else 0
    return (nn.AvgPool2d if avg else nn.MaxPool2d)(k, s, pad)


class _Inception(nn.Module):
    def __init__(self, c, o1, r3, o3, r5, o5, op):
        super().__init__()
        self.b1 = nn.Sequential(*_conv(c, o1, 1, 1, "SAME"))
        self.b2 = nn.Sequential(*_conv(c, r3, 1, 1, "SAME"), *_conv(r3, o3, 3, 1, "SAME"))
        self.b3 = nn.Sequential(*_conv(c, r5, 1, 1, "SAME"), *_conv(r5, o5, 5, 1, "SAME"))
        self.b4 = nn.Sequential(_pool(3, 1, "SAME"), *_conv(c, op, 1, 1, "SAME"))
        self.out = o1 + o3 + o5 + op

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


def build(spec, image: int) -> nn.Module:
    layers, c, size, flat = [], 3, image, False
    for kind, a in spec:
        if kind == "conv":
            out, k, s, p = a
            layers += _conv(c, out, k, s, p)
            c = out
            size = (size + s - 1) // s if p == "SAME" else (size - k) // s + 1
        elif kind in ("pool", "avgpool"):
            k, s, p = a
            layers.append(_pool(k, s, p, avg=kind == "avgpool"))
            size = (size + 2 * ((k - 1) // 2 if p == "SAME" else 0) - k) // s + 1
        elif kind == "inception":
            block = _Inception(c, *a)
            layers.append(block)
            c = block.out
        else:
            if not flat:
                layers.append(nn.Flatten())
                c, flat = c * size * size, True
            layers.append(nn.Linear(c, a))
            if kind == "fc":
                layers.append(nn.ReLU(inplace=True))
            c = a
    return nn.Sequential(*layers)
