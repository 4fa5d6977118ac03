"""Program-level utilities TF1 keeps outside the graph API: `tf.logging` (tf_logging.py),
`tf.flags` / `tf.app.flags` (flags.py), `tf.app.run` (app.py) and `tf.gfile` (gfile.py).
They use no ops except that tf_logging registers its functions as `tf.print` streams.
"""
