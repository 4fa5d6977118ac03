"""`tf.graph_util` (TF1): freezing and pruning GraphDefs (graph_util_impl.py), and the
inference transforms that fold batch normalization into convolutions (inference.py)."""

from tensorflux.framework.importer import import_graph_def  # noqa: F401
from tensorflux.graph_util.graph_util_impl import *  # noqa: F401,F403
