"""`tf.keras.preprocessing`: sequence padding (sequence), Tokenizer (text),
ImageDataGenerator over arrays (image)."""

from tensorflux.keras.preprocessing import image, sequence, text  # noqa: F401
