"""`tensorflow.examples.tutorials`: see `mnist`."""
