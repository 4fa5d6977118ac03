"""`tf.saved_model.constants`: the names of a SavedModel directory's parts.

    export_dir/
      saved_model.pb (or saved_model.pbtxt)   a SavedModel proto: MetaGraphDefs by tag set
      variables/variables.index               TensorFlow's tensor-bundle checkpoint
      variables/variables.data-00000-of-00001
      assets/                                  files the graph reads (vocabularies, ...)
"""

ASSETS_DIRECTORY = "assets"
ASSETS_KEY = "saved_model_assets"
DEBUG_DIRECTORY = "debug"
DEBUG_INFO_FILENAME_PB = "saved_model_debug_info.pb"
LEGACY_INIT_OP_KEY = "legacy_init_op"
MAIN_OP_KEY = "saved_model_main_op"
TRAIN_OP_KEY = "saved_model_train_op"
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
SAVED_MODEL_SCHEMA_VERSION = 1
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"

__all__ = [
    "ASSETS_DIRECTORY", "ASSETS_KEY", "DEBUG_DIRECTORY", "DEBUG_INFO_FILENAME_PB",
    "LEGACY_INIT_OP_KEY", "MAIN_OP_KEY", "SAVED_MODEL_FILENAME_PB",
    "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION", "VARIABLES_DIRECTORY",
    "VARIABLES_FILENAME",
]
