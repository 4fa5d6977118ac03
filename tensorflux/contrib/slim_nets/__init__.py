"""`tf.contrib.slim.nets`: the networks TF1 shipped under that name, written from their
papers with TF-Slim's variable and end-point names: alexnet (v2), overfeat, vgg (a, 16, 19),
resnet_utils, resnet_v1 and resnet_v2 (50-200). TF1's `inception` module (v1-v3) is not
provided."""

from tensorflux.contrib.slim_nets import (  # noqa: F401
    alexnet,
    overfeat,
    resnet_utils,
    resnet_v1,
    resnet_v2,
    vgg,
)

__all__ = ["alexnet", "overfeat", "resnet_utils", "resnet_v1", "resnet_v2", "vgg"]
