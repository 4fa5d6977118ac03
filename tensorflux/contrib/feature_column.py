"""`tf.contrib.feature_column`: TF1's sequence feature columns and the layers over them
(`sequence_input_layer`, `concatenate_context_input`); the columns are also in
`tf.feature_column`. tensorflux/feature_column/sequence_feature_column.py has them."""

from tensorflux.feature_column.sequence_feature_column import (  # noqa: F401
    concatenate_context_input,
    sequence_categorical_column_with_hash_bucket,
    sequence_categorical_column_with_identity,
    sequence_categorical_column_with_vocabulary_file,
    sequence_categorical_column_with_vocabulary_list,
    sequence_input_layer,
    sequence_numeric_column,
)
