"""The 2015 whitepaper's Figure 1 program, made runnable.

Figure 1 of "TensorFlow: Large-Scale Machine Learning on Heterogeneous Distributed Systems"
builds a ReLU layer `relu(W x + b)` and a cost `C` computed from it, then runs the cost ten
times in a Session, feeding a new input each step. The figure elides the cost (`C = [...]`)
and the input; here the cost is the mean squared distance of the layer's output from a
fixed target, and each input is a batch of random 784-d vectors. The figure's `W x` with a
784x100 `W` is written the way TF1 programs write it for a batch of row vectors, `x W`.

    python examples/figure1_whitepaper.py

Change `import tensorflux as tf` to `import tensorflow.compat.v1 as tf` (and call
`tf.disable_v2_behavior()`) and it runs under TensorFlow unchanged.
"""

from __future__ import annotations

import numpy as np

import tensorflux as tf


def main() -> float:
    tf.set_random_seed(0)
    b = tf.Variable(tf.zeros([100]))                          # 100-d vector, init to zeroes
    W = tf.Variable(tf.random_uniform([784, 100], -1, 1))     # 784x100 matrix w/rnd vals
    x = tf.placeholder(tf.float32, [None, 784], name="x")     # Placeholder for input
    relu = tf.nn.relu(tf.matmul(x, W) + b)                    # Relu(Wx+b)
    C = tf.reduce_mean(tf.square(relu - 1.0), name="C")       # Cost computed as a function
                                                              # of Relu
    s = tf.Session()
    s.run(tf.global_variables_initializer())
    rng = np.random.default_rng(0)
    result = None
    for step in range(0, 10):
        input = rng.uniform(0.0, 1.0, (8, 784)).astype(np.float32)  # 8 784-d inputs
        result = s.run(C, feed_dict={x: input})              # Fetch cost, feeding x=input
        print(step, result)
    s.close()
    print(f"Figure 1 program ran 10 steps; last cost {result:.4f}")
    return float(result)


if __name__ == "__main__":
    main()
