"""`tf.saved_model` (TF1): SavedModel directories that TensorFlow and TensorFlow Serving
read, written by `builder.SavedModelBuilder` / `simple_save` and read by `loader.load`.

    builder.py              SavedModelBuilder: MetaGraphDefs by tag set, variables, assets
    loader.py               load, maybe_saved_model_directory
    signature_def_utils.py  Predict / Classify / Regress SignatureDefs
    utils.py                TensorInfo <-> tensors
    constants.py, tag_constants.py, signature_constants.py: TensorFlow's names
"""

from tensorflux.saved_model import (  # noqa: F401 - the submodules TF1 names
    builder,
    constants,
    loader,
    main_op,
    signature_constants,
    signature_def_utils,
    tag_constants,
    utils,
)
from tensorflux.saved_model.builder import Builder  # noqa: F401
from tensorflux.saved_model.constants import *  # noqa: F401,F403
from tensorflux.saved_model.loader import *  # noqa: F401,F403
from tensorflux.saved_model.main_op import main_op_with_restore  # noqa: F401
from tensorflux.saved_model.signature_constants import *  # noqa: F401,F403
from tensorflux.saved_model.signature_def_utils import *  # noqa: F401,F403
from tensorflux.saved_model.simple_save import simple_save  # noqa: F401
from tensorflux.saved_model.tag_constants import *  # noqa: F401,F403
from tensorflux.saved_model.utils import *  # noqa: F401,F403
