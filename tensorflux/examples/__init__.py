"""`tensorflow.examples`: the tutorial helpers TF1 programs import (`tutorials.mnist`)."""
