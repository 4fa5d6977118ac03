"""The paper's Table 1 convnets (AlexNet, Overfeat, OxfordNet/VGG-A, GoogLeNet v1) as TF1
graphs, built with whichever `tf` module is passed in (tensorflux or TensorFlow), in NHWC.

Architectures as in the convnet-benchmarks suite the paper's Table 1 quotes: AlexNet
(227x227 input, 11x11/4 conv), Overfeat "fast" (231x231), VGG-A (224x224, eight 3x3 convs)
and GoogLeNet v1 (224x224, nine inception blocks); ReLU after every conv and hidden fc
layer, softmax cross-entropy on 1000 classes, plain SGD. `benchmarks/gpu/torch_nets.py`
builds the same nets in PyTorch for the side-by-side GPU run.

Beside them (issue 20), a ResNet-50-style step (`resnet50`, in `CPU_NETS` only): v1.5
bottleneck blocks (1x1, 3x3 with the stage's stride, 1x1; projection shortcuts where the
shape changes) with `tf.nn.fused_batch_norm` in training mode after every conv, as a TF1
user writes it by hand (scale and offset variables, batch statistics, no moving averages).
"""

from __future__ import annotations

IMAGE = {"alexnet": 227, "overfeat": 231, "vgg_a": 224, "googlenet": 224}
BATCH = {"alexnet": 128, "overfeat": 128, "vgg_a": 64, "googlenet": 128}  # the paper's

# (kind, args) layer lists; "conv": (out, k, stride, padding), "pool": (k, stride, padding),
# "fc": out (relu) and "logits": out.
_SPECS = {
    "alexnet": [("conv", (64, 11, 4, "VALID")), ("pool", (3, 2, "VALID")),
                ("conv", (192, 5, 1, "SAME")), ("pool", (3, 2, "VALID")),
                ("conv", (384, 3, 1, "SAME")), ("conv", (256, 3, 1, "SAME")),
                ("conv", (256, 3, 1, "SAME")), ("pool", (3, 2, "VALID")),
                ("fc", 4096), ("fc", 4096), ("logits", 1000)],
    "overfeat": [("conv", (96, 11, 4, "VALID")), ("pool", (2, 2, "VALID")),
                 ("conv", (256, 5, 1, "VALID")), ("pool", (2, 2, "VALID")),
                 ("conv", (512, 3, 1, "SAME")), ("conv", (1024, 3, 1, "SAME")),
                 ("conv", (1024, 3, 1, "SAME")), ("pool", (2, 2, "VALID")),
                 ("fc", 3072), ("fc", 4096), ("logits", 1000)],
    "vgg_a": [("conv", (64, 3, 1, "SAME")), ("pool", (2, 2, "VALID")),
              ("conv", (128, 3, 1, "SAME")), ("pool", (2, 2, "VALID")),
              ("conv", (256, 3, 1, "SAME")), ("conv", (256, 3, 1, "SAME")),
              ("pool", (2, 2, "VALID")),
              ("conv", (512, 3, 1, "SAME")), ("conv", (512, 3, 1, "SAME")),
              ("pool", (2, 2, "VALID")),
              ("conv", (512, 3, 1, "SAME")), ("conv", (512, 3, 1, "SAME")),
              ("pool", (2, 2, "VALID")),
              ("fc", 4096), ("fc", 4096), ("logits", 1000)],
    "googlenet": [("conv", (64, 7, 2, "SAME")), ("pool", (3, 2, "SAME")),
                  ("conv", (64, 1, 1, "SAME")), ("conv", (192, 3, 1, "SAME")),
                  ("pool", (3, 2, "SAME")),
                  ("inception", (64, 96, 128, 16, 32, 32)),
                  ("inception", (128, 128, 192, 32, 96, 64)), ("pool", (3, 2, "SAME")),
                  ("inception", (192, 96, 208, 16, 48, 64)),
                  ("inception", (160, 112, 224, 24, 64, 64)),
                  ("inception", (128, 128, 256, 24, 64, 64)),
                  ("inception", (112, 144, 288, 32, 64, 64)),
                  ("inception", (256, 160, 320, 32, 128, 128)), ("pool", (3, 2, "SAME")),
                  ("inception", (256, 160, 320, 32, 128, 128)),
                  ("inception", (384, 192, 384, 48, 128, 128)),
                  ("avgpool", (7, 1, "VALID")), ("logits", 1000)],
}
NETS = tuple(_SPECS)
IMAGE["resnet50"] = 224
# The nets of the CPU benchmark (benchmarks/programs/table1_convnets.py).
CPU_NETS = NETS + ("resnet50",)
_RESNET50_STAGES = ((64, 256, 3, 1), (128, 512, 4, 2), (256, 1024, 6, 2), (512, 2048, 3, 2))


def spec(name: str):
    return _SPECS[name]


def build(tf, name: str, batch: int, lr: float = 0.01, synthetic: bool = False):
    """(graph, images, labels, init op, train op, loss) of one SGD training step of net
    `name` at `batch`. Images and labels are placeholders to feed, or with `synthetic`
    fixed random tensors held in (untrained) variables where the model runs, as
    tf_cnn_benchmarks' synthetic data and a PyTorch loop over a tensor already on the GPU."""
    g = tf.Graph()
    size = IMAGE[name]
    with g.as_default():
        if synthetic:
            x = tf.Variable(tf.random_uniform([batch, size, size, 3], seed=1),
                            trainable=False)
            y = tf.Variable(tf.cast(tf.random_uniform([batch], 0, 1000, seed=2), tf.int64),
                            trainable=False)
        else:
            x = tf.placeholder(tf.float32, [batch, size, size, 3])
            y = tf.placeholder(tf.int64, [batch])
        counter = [0]

        def var(shape, fan_in):
            counter[0] += 1
            return tf.Variable(tf.truncated_normal(shape, stddev=(2.0 / fan_in) ** 0.5,
                                                   seed=counter[0]))

        def conv(h, out, k, stride, padding):
            c = int(h.shape[-1])
            w = var([k, k, c, out], k * k * c)
            b = tf.Variable(tf.zeros([out]))
            return tf.nn.relu(tf.nn.bias_add(
                tf.nn.conv2d(h, w, [1, stride, stride, 1], padding), b))

        def fc(h, out, relu=True):
            d = int(h.shape[-1])
            w = var([d, out], d)
            b = tf.Variable(tf.zeros([out]))
            o = tf.nn.bias_add(tf.matmul(h, w), b)
            return tf.nn.relu(o) if relu else o

        h = x
        for kind, a in _SPECS.get(name, []):
            if kind == "conv":
                h = conv(h, *a)
            elif kind == "pool":
                k, s, p = a
                h = tf.nn.max_pool(h, [1, k, k, 1], [1, s, s, 1], p)
            elif kind == "avgpool":
                k, s, p = a
                h = tf.nn.avg_pool(h, [1, k, k, 1], [1, s, s, 1], p)
            elif kind == "inception":
                o1, r3, o3, r5, o5, op = a
                b1 = conv(h, o1, 1, 1, "SAME")
                b2 = conv(conv(h, r3, 1, 1, "SAME"), o3, 3, 1, "SAME")
                b3 = conv(conv(h, r5, 1, 1, "SAME"), o5, 5, 1, "SAME")
                b4 = conv(tf.nn.max_pool(h, [1, 3, 3, 1], [1, 1, 1, 1], "SAME"), op, 1, 1,
                          "SAME")
                h = tf.concat([b1, b2, b3, b4], 3)
            else:
                if len(h.shape) == 4:
                    h = tf.reshape(h, [batch, -1])
                h = fc(h, a, relu=kind == "fc")
        if name == "resnet50":
            h = _resnet50(tf, x, var)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=h))
        train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, y, init, train, loss


def _resnet50(tf, x, var):
    """Logits of ResNet-50 (v1.5) on NHWC `x`; `var(shape, fan_in)` makes a weight."""

    def conv_bn(h, out, k, stride, relu=True):
        c = int(h.shape[-1])
        h = tf.nn.conv2d(h, var([k, k, c, out], k * k * c), [1, stride, stride, 1], "SAME")
        h, _, _ = tf.nn.fused_batch_norm(h, tf.Variable(tf.ones([out])),
                                         tf.Variable(tf.zeros([out])), is_training=True)
        return tf.nn.relu(h) if relu else h

    h = conv_bn(x, 64, 7, 2)
    h = tf.nn.max_pool(h, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    for mid, out, blocks, stride in _RESNET50_STAGES:
        for b in range(blocks):
            s = stride if b == 0 else 1
            shortcut = conv_bn(h, out, 1, s, relu=False) if b == 0 else h
            r = conv_bn(conv_bn(conv_bn(h, mid, 1, 1), mid, 3, s), out, 1, 1, relu=False)
            h = tf.nn.relu(r + shortcut)
    h = tf.reduce_mean(h, [1, 2])
    w = var([2048, 1000], 2048)
    return tf.nn.bias_add(tf.matmul(h, w), tf.Variable(tf.zeros([1000])))
