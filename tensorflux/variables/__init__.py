"""Variables, built only from ops (state_ops): `tf.Variable`, variable scopes, partitioned
variables and the initializers. The TF1 names are exported by `tensorflux/__init__.py`."""
