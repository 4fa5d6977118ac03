"""tensorflux: TensorFlow 1.x graph-mode programs, run by a Python runtime."""
