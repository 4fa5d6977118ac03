"""TF1 programs that use Keras the TF1 way, written in the style of the public examples
(Keras as a layer library inside a tf.Session; tf.keras models next to raw TF ops), run
with `tf` = tensorflux on scikit-learn's digits."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.keras.backend.clear_session()
    yield
    tf.keras.backend.clear_session()


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[d.target]
    return x[:1500], y[:1500], x[1500:], y[1500:]


# "Keras as a simplified interface to TensorFlow" (2016): Keras layers on a placeholder,
# a TF loss and optimizer, the learning phase fed by hand.
KERAS_AS_TF_INTERFACE = """
from tensorflow.keras import backend as K
from tensorflow.keras.layers import Dense, Dropout
from tensorflow.keras.losses import categorical_crossentropy
from tensorflow.keras.metrics import categorical_accuracy as accuracy

sess = tf.Session()
K.set_session(sess)
img = tf.placeholder(tf.float32, shape=(None, 64))
x = Dense(64, activation='relu')(img)
x = Dropout(0.2)(x)
preds = Dense(10, activation='softmax')(x)
labels = tf.placeholder(tf.float32, shape=(None, 10))
loss = tf.reduce_mean(categorical_crossentropy(labels, preds))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
sess.run(tf.global_variables_initializer())
with sess.as_default():
    for i in range(300):
        idx = np.random.RandomState(i).randint(0, len(x_train), 50)
        train_step.run(feed_dict={img: x_train[idx], labels: y_train[idx],
                                  K.learning_phase(): 1})
acc_value = tf.reduce_mean(accuracy(labels, preds))
with sess.as_default():
    result = acc_value.eval(feed_dict={img: x_test, labels: y_test})
"""

# A tf.keras model trained with fit, then used as a graph: its output in tf.gradients
# (a saliency map) and its weights saved with tf.train.Saver from the Keras session.
TF_KERAS_MODEL_IN_GRAPH = """
model = tf.keras.models.Sequential([
    tf.keras.layers.Reshape((8, 8, 1), input_shape=(64,)),
    tf.keras.layers.Conv2D(8, (3, 3), activation='relu', padding='same'),
    tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(32, activation='relu'),
    tf.keras.layers.Dense(10, activation='softmax'),
])
model.compile(optimizer=tf.train.AdamOptimizer(0.01), loss='categorical_crossentropy',
              metrics=['accuracy'])
model.fit(x_train, y_train, epochs=4, batch_size=64, verbose=0)
loss, acc = model.evaluate(x_test, y_test, verbose=0)
sess = tf.keras.backend.get_session()
class_score = tf.reduce_max(model.output, axis=1)
saliency = tf.gradients(class_score, model.input)[0]
sal = sess.run(saliency, {model.input: x_test[:3]})
saver = tf.train.Saver()
path = saver.save(sess, ckpt_dir + '/model.ckpt')
result = (acc, sal.shape, path)
"""


def _run(program, digits, **extra):
    x_train, y_train, x_test, y_test = digits
    ns = {"tf": tf, "np": np, "x_train": x_train, "y_train": y_train, "x_test": x_test,
          "y_test": y_test, **extra}
    code = program.replace("from tensorflow.keras", "from tensorflux.keras")
    exec(code, ns)  # noqa: S102 - the test's own program text
    return ns["result"]


def test_keras_as_a_simplified_interface_to_tensorflow(digits):
    tf.set_random_seed(0)
    assert _run(KERAS_AS_TF_INTERFACE, digits) > 0.85


def test_tf_keras_model_used_as_a_tf1_graph(digits, tmp_path):
    tf.set_random_seed(0)
    np.random.seed(0)
    acc, sal_shape, path = _run(TF_KERAS_MODEL_IN_GRAPH, digits, ckpt_dir=str(tmp_path))
    assert acc > 0.85 and sal_shape == (3, 64)
    assert path.endswith("model.ckpt")
