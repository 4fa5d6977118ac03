"""`tf.keras.datasets`: mnist, fashion_mnist, cifar10, boston_housing, imdb, reuters
loaded from the Keras cache only (~/.keras/datasets or $KERAS_HOME/datasets): tensorflux
never downloads; a missing file raises FileNotFoundError saying where to put it."""

from tensorflux.keras.datasets import boston_housing, cifar10, fashion_mnist, imdb, mnist, reuters  # noqa: F401
