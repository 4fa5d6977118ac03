"""File formats: TFRecord framing (`tf.python_io`)."""
