"""The release of tensorflux (as pyproject.toml's), readable from every layer; `tf.__version__`
is the TensorFlow API version instead (tensorflux/compat/version.py)."""

__version__ = "0.1.0"
