"""`tf.lookup`: lookup tables built from the HashTableV2 resource ops."""

from tensorflux.lookup import experimental  # noqa: F401
from tensorflux.lookup.lookup_ops import (  # noqa: F401
    KeyValueTensorInitializer,
    StaticHashTable,
    StaticVocabularyTable,
    TextFileIndex,
    TextFileInitializer,
    index_table_from_file,
    index_table_from_tensor,
    index_to_string_table_from_file,
    index_to_string_table_from_tensor,
)
