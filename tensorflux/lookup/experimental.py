"""`tf.lookup.experimental`: tables whose contents change (MutableHashTable)."""

from tensorflux.lookup.lookup_ops import MutableHashTable  # noqa: F401
