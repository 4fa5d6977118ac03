"""`tf.contrib.slim.nets`: the image-classification networks TF1 shipped with TF-Slim, built
with slim's layers so that their variables, end points and checkpoints are named as TF1's
(a checkpoint of TF-Slim's model zoo restores into them).

    from tensorflux.contrib.slim.nets import resnet_v1
    with slim.arg_scope(resnet_v1.resnet_arg_scope()):
        logits, end_points = resnet_v1.resnet_v1_50(images, 1000, is_training=False)

Modules: `resnet_utils`, `resnet_v1`, `resnet_v2` (He et al. 2015/2016), `vgg` (Simonyan &
Zisserman 2014: configurations A, D and E), `alexnet` (Krizhevsky's one-tower variant),
`overfeat` (Sermanet et al. 2013, the fast model), `inception_v1` (GoogLeNet with batch
normalization), `inception_v2` (BN-Inception) and `inception_v3` (Szegedy et al. 2015), all
also in `inception`."""

from tensorflux.contrib.slim_nets import (  # noqa: F401
    alexnet,
    inception,
    inception_v1,
    inception_v2,
    inception_v3,
    overfeat,
    resnet_utils,
    resnet_v1,
    resnet_v2,
    vgg,
)

__all__ = ["alexnet", "inception", "inception_v1", "inception_v2", "inception_v3", "overfeat",
           "resnet_utils", "resnet_v1", "resnet_v2", "vgg"]
