"""`tf.keras.preprocessing`: sequence padding (sequence)."""

from tensorflux.keras.preprocessing import sequence  # noqa: F401
