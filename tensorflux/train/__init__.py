"""`tf.train`: optimizers, learning-rate schedules, the global step, graph writing.

Everything here is built from graph ops (paper §4): no privileged runtime paths.
"""

from tensorflux.distributed import client as _grpc_client  # noqa: F401 - grpc:// sessions
from tensorflux.distributed.cluster import ClusterSpec
from tensorflux.distributed.server import Server
from tensorflux.ops.sdca_ops import sdca_fprint, sdca_optimizer, sdca_shrink_l1  # noqa: F401
from tensorflux.protos.checkpoint_state_pb2 import CheckpointState
from tensorflux.protos.cluster_pb2 import ClusterDef, JobDef
from tensorflux.protos.example_pb2 import Example, SequenceExample
from tensorflux.protos.feature_pb2 import (
    BytesList,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
)
from tensorflux.protos.saver_pb2 import SaverDef
from tensorflux.protos.tensorflow_server_pb2 import ServerDef
from tensorflux.summary.summary_iterator import summary_iterator
from tensorflux.summary.writer_cache import FileWriterCache as SummaryWriterCache
from tensorflux.train.adadelta import AdadeltaOptimizer
from tensorflux.train.adagrad import AdagradOptimizer
from tensorflux.train.adam import AdamOptimizer
from tensorflux.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FeedFnHook,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    StepCounterHook,
    StopAtStepHook,
)
from tensorflux.train.checkpoint import Checkpoint, CheckpointOptions
from tensorflux.train.checkpoint_management import (
    checkpoint_exists,
    checkpoints_iterator,
    generate_checkpoint_state_proto,
    get_checkpoint_mtimes,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
)
from tensorflux.train.checkpoint_manager import CheckpointManager
from tensorflux.train.checkpoint_utils import (
    NewCheckpointReader,
    init_from_checkpoint,
    list_variables,
    load_checkpoint,
    load_variable,
)
from tensorflux.train.coordinator import Coordinator, LooperThread
from tensorflux.train.device_setter import (
    GreedyLoadBalancingStrategy,
    byte_size_load_fn,
    replica_device_setter,
)
from tensorflux.train.ftrl import FtrlOptimizer
from tensorflux.train.global_step import (
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)
from tensorflux.train.gradient_descent import GradientDescentOptimizer
from tensorflux.train.input import (
    batch,
    batch_join,
    input_producer,
    limit_epochs,
    match_filenames_once,
    maybe_batch,
    maybe_batch_join,
    maybe_shuffle_batch,
    maybe_shuffle_batch_join,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)
from tensorflux.train.learning_rate_decay import (
    cosine_decay,
    cosine_decay_restarts,
    exponential_decay,
    inverse_time_decay,
    linear_cosine_decay,
    natural_exp_decay,
    noisy_linear_cosine_decay,
    piecewise_constant,
    piecewise_constant_decay,
    polynomial_decay,
)
from tensorflux.train.momentum import MomentumOptimizer
from tensorflux.train.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    Scaffold,
    SessionCreator,
    SingularMonitoredSession,
    WorkerSessionCreator,
)
from tensorflux.train.moving_averages import ExponentialMovingAverage
from tensorflux.train.optimizer import Optimizer
from tensorflux.train.proximal import (
    AdagradDAOptimizer,
    ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer,
)
from tensorflux.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from tensorflux.train.rmsprop import RMSPropOptimizer
from tensorflux.train.saver import Saver, export_meta_graph, import_meta_graph
from tensorflux.train.session_manager import SessionManager
from tensorflux.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from tensorflux.train.summary_hooks import ProfilerHook, SummarySaverHook
from tensorflux.train.supervisor import Supervisor, basic_train_loop
from tensorflux.train.sync_replicas_optimizer import SyncReplicasOptimizer
from tensorflux.train.training_util import assert_global_step, write_graph
from tensorflux.train.warm_starting import VocabInfo, warm_start

__all__ = [
    "CheckpointSaverHook", "CheckpointSaverListener", "ChiefSessionCreator", "FeedFnHook",
    "FinalOpsHook", "LoggingTensorHook", "MonitoredSession", "MonitoredTrainingSession",
    "NanLossDuringTrainingError", "NanTensorHook", "Scaffold", "SecondOrStepTimer",
    "SessionCreator", "SessionRunArgs", "SessionRunContext", "SessionRunHook",
    "SessionRunValues", "SingularMonitoredSession", "StepCounterHook", "StopAtStepHook",
    "WorkerSessionCreator", "GlobalStepWaiterHook", "ProfilerHook", "SummarySaverHook",
    "SummaryWriterCache", "summary_iterator",
    "NewCheckpointReader", "Saver", "SaverDef", "CheckpointState", "checkpoint_exists",
    "export_meta_graph", "generate_checkpoint_state_proto", "get_checkpoint_mtimes",
    "get_checkpoint_state", "import_meta_graph", "latest_checkpoint", "list_variables",
    "load_checkpoint", "load_variable", "remove_checkpoint", "update_checkpoint_state",
    "AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer", "FtrlOptimizer",
    "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer", "RMSPropOptimizer",
    "cosine_decay", "create_global_step", "exponential_decay", "get_global_step",
    "get_or_create_global_step", "global_step", "inverse_time_decay", "natural_exp_decay",
    "piecewise_constant", "polynomial_decay", "write_graph",
    "BytesList", "Coordinator", "Example", "Feature", "FeatureList", "FeatureLists",
    "Features", "FloatList", "Int64List", "LooperThread", "QueueRunner", "SequenceExample",
    "add_queue_runner", "batch", "batch_join", "input_producer", "limit_epochs",
    "match_filenames_once", "maybe_batch", "maybe_batch_join", "maybe_shuffle_batch",
    "maybe_shuffle_batch_join", "range_input_producer", "shuffle_batch",
    "shuffle_batch_join", "slice_input_producer", "start_queue_runners",
    "string_input_producer",
    "ClusterSpec", "Server",
    # GreedyLoadBalancingStrategy and byte_size_load_fn were tf.contrib.training's in TF1
    # (TensorFlow 2.x has no contrib; tensorflux has no tf.contrib package).
    "GreedyLoadBalancingStrategy", "byte_size_load_fn", "replica_device_setter",
    "SessionManager", "Supervisor", "SyncReplicasOptimizer",
    "ExponentialMovingAverage", "checkpoints_iterator", "cosine_decay_restarts",
    "linear_cosine_decay", "noisy_linear_cosine_decay", "piecewise_constant_decay",
    "basic_train_loop", "assert_global_step", "ClusterDef", "JobDef", "ServerDef",
    "AdagradDAOptimizer", "ProximalAdagradOptimizer", "ProximalGradientDescentOptimizer",
    "init_from_checkpoint", "warm_start", "VocabInfo",
    "Checkpoint", "CheckpointManager", "CheckpointOptions",
]
