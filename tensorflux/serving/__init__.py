"""A TensorFlow-Serving-compatible model server (`tensorflux-serve`).

    servable.py  Servable: one loaded SavedModel version (tf.Session + saved_model.loader)
    manager.py   ModelManager: numbered version directories, polling, hot swap, unloading
    codec.py     TF Serving's REST JSON <-> NumPy (instances/inputs, b64, examples)
    batching.py  BatchScheduler: concurrent requests merged along dimension 0
    server.py    the aiohttp application and the `tensorflux-serve` command
    fastpath.py  the REST connections: the common small request past aiohttp's machinery
    grpc_service.py  TF Serving's gRPC PredictionService/Predict (--grpc_port)
"""

from tensorflux.serving.manager import ModelManager  # noqa: F401
from tensorflux.serving.servable import SavedModelServable, Servable  # noqa: F401
