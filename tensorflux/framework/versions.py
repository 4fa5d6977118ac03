"""The version of tensorflux (TensorFlow keeps its own in framework/versions.py too, where
every layer can read it)."""

__version__ = "0.1.0"
