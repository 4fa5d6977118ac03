"""`tf.contrib.keras`: TF1's early home of the Keras API, the same modules as `tf.keras`
(tensorflux/keras): `tf.contrib.keras.layers.Dense`, `.models.Sequential`, `.backend`, ..."""

from tensorflux.keras import *  # noqa: F401,F403
