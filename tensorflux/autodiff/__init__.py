"""Automatic differentiation: `tf.gradients` (the driver walking registered op gradients
backwards) and the finite-difference gradient checker."""
