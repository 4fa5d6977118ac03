"""`tf.keras.preprocessing`: sequence padding (sequence), Tokenizer (text)."""

from tensorflux.keras.preprocessing import sequence, text  # noqa: F401
