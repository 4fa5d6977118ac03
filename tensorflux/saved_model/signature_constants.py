"""`tf.saved_model.signature_constants`: signature keys, input/output keys and method
names that TensorFlow Serving's Predict, Classify and Regress APIs expect."""

DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"

PREDICT_INPUTS = "inputs"
PREDICT_OUTPUTS = "outputs"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"

CLASSIFY_INPUTS = "inputs"
CLASSIFY_OUTPUT_CLASSES = "classes"
CLASSIFY_OUTPUT_SCORES = "scores"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"

REGRESS_INPUTS = "inputs"
REGRESS_OUTPUTS = "outputs"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"

# Keys reserved for the init and train ops of TF2-style SavedModels.
INIT_OP_SIGNATURE_KEY = "__saved_model_init_op"
TRAIN_OP_SIGNATURE_KEY = "__saved_model_train_op"

__all__ = [
    "CLASSIFY_INPUTS", "CLASSIFY_METHOD_NAME", "CLASSIFY_OUTPUT_CLASSES",
    "CLASSIFY_OUTPUT_SCORES", "DEFAULT_SERVING_SIGNATURE_DEF_KEY", "PREDICT_INPUTS",
    "PREDICT_METHOD_NAME", "PREDICT_OUTPUTS", "REGRESS_INPUTS", "REGRESS_METHOD_NAME",
    "REGRESS_OUTPUTS",
]
