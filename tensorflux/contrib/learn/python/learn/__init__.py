"""`tensorflow.contrib.learn.python.learn`: see `datasets`."""
