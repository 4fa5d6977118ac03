"""File formats: TFRecord framing (`tf.python_io`) and event files (summaries)."""
