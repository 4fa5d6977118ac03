"""`tf.saved_model.tag_constants`: the tags that name a MetaGraphDef of a SavedModel."""

SERVING = "serve"
TRAINING = "train"
GPU = "gpu"
TPU = "tpu"

__all__ = ["GPU", "SERVING", "TPU", "TRAINING"]
