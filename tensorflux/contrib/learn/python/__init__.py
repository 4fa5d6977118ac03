"""`tensorflow.contrib.learn.python`: the module path TF1 programs import contrib.learn's
pieces by (`...python.learn.datasets.mnist`)."""
