"""tensorflux: TensorFlow 1.x graph-mode programs, run by a Python runtime.

`import tensorflux as tf` gives the TF1 namespace (tf.compat.v1 semantics): graphs, ops,
sessions, gradients, optimizers. Each op module lists its public names in `__all__`; this
package re-exports them.
"""

import tensorflux.kernels.cpu  # noqa: F401,E402 - registers every CPU kernel
import tensorflux.kernels.gpu  # noqa: F401,E402 - registers every GPU kernel (used only with a GPU)
import tensorflux.ops  # noqa: F401,E402 - registers every op
from tensorflux.framework import errors  # noqa: F401
from tensorflux.framework.common_shapes import constant_value as _constant_value  # noqa: F401
from tensorflux.framework.device_spec import DeviceSpec  # noqa: F401
from tensorflux.framework.dtypes import (  # noqa: F401
    DType,
    as_dtype,
    bfloat16,
    bool,  # noqa: A004 - tf.bool
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    qint8,
    qint16,
    qint32,
    quint8,
    quint16,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    variant,
)
from tensorflux.framework.graph import (  # noqa: F401
    Graph,
    GraphKeys,
    add_to_collection,
    add_to_collections,
    colocate_with,
    container,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    name_scope,
    reset_default_graph,
)
from tensorflux.framework.operation import Operation, Tensor  # noqa: F401
from tensorflux.framework.tensor_conversion import (  # noqa: F401
    convert_to_tensor,
    convert_to_tensor_or_indexed_slices,
    is_tensor,
    register_tensor_conversion_function,
)
from tensorflux.framework.tensor_shape import Dimension, TensorShape  # noqa: F401
from tensorflux.framework.tensor_util import MakeNdarray as make_ndarray  # noqa: F401
from tensorflux.framework.tensor_util import make_tensor_proto  # noqa: F401
from tensorflux.ops.array_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.gather_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.joining_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.slicing_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.constant_op import *  # noqa: F401,F403,E402
from tensorflux.ops.control_flow_ops import *  # noqa: F401,F403,E402
from tensorflux.control_flow.builders import *  # noqa: F401,F403,E402
from tensorflux.ops.math_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.unary_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.comparison_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.session_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.matrix_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.reduction_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.sequence_ops import *  # noqa: F401,F403,E402
from tensorflux.autodiff.gradients import *  # noqa: F401,F403,E402
from tensorflux.framework.indexed_slices import (  # noqa: F401,E402
    IndexedSlices,
    IndexedSlicesValue,
)
from tensorflux.framework.sparse_tensor import (  # noqa: F401,E402
    SparseTensor,
    SparseTensorSpec,
    SparseTensorValue,
)
from tensorflux.framework.indexed_slices import IndexedSlicesSpec  # noqa: F401,E402
from tensorflux.framework.tensor_spec import TensorSpec  # noqa: F401,E402
from tensorflux.framework.type_spec import (  # noqa: F401,E402
    NoneTensorSpec,
    TypeSpec,
    type_spec_from_value,
)
from tensorflux import nn  # noqa: F401,E402 - tf.nn
from tensorflux import sparse  # noqa: F401,E402 - tf.sparse
from tensorflux import test  # noqa: F401,E402
from tensorflux import train  # noqa: F401,E402 - tf.train
from tensorflux.framework.importer import import_graph_def  # noqa: F401,E402
from tensorflux.lib.io import tf_record as python_io  # noqa: F401,E402 - tf.python_io
from tensorflux.nn.clip_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.data_flow_ops import *  # noqa: F401,F403,E402
from tensorflux.control_flow.functional_ops import *  # noqa: F401,F403,E402
from tensorflux.control_flow.critical_section import *  # noqa: F401,F403,E402
from tensorflux.control_flow.batch_function import *  # noqa: F401,F403,E402
from tensorflux.variables.init_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.io_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.logging_ops import *  # noqa: F401,F403,E402
from tensorflux import debugging  # noqa: F401,E402 - tf.debugging
from tensorflux.debugging.check_ops import *  # noqa: F401,F403,E402
from tensorflux.debugging.numerics import *  # noqa: F401,F403,E402
from tensorflux.platform import app  # noqa: F401,E402 - tf.app
from tensorflux.platform import flags  # noqa: F401,E402 - tf.flags
from tensorflux.platform import gfile  # noqa: F401,E402 - tf.gfile
from tensorflux.platform import tf_logging as logging  # noqa: F401,E402 - tf.logging
from tensorflux.platform.tf_logging import get_logger  # noqa: F401,E402
from tensorflux import profiler  # noqa: F401,E402 - tf.profiler
from tensorflux.ops.parsing_ops import *  # noqa: F401,F403,E402
from tensorflux.variables.partitioned_variables import *  # noqa: F401,F403,E402
from tensorflux.ops.random_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.sparse_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.state_ops import *  # noqa: F401,F403,E402
from tensorflux.ops.tensor_array_ops import *  # noqa: F401,F403,E402
from tensorflux.variables.variable_scope import *  # noqa: F401,F403,E402
from tensorflux.variables.variables import *  # noqa: F401,F403,E402
from tensorflux.protos.attr_value_pb2 import AttrValue, NameAttrList  # noqa: F401,E402
from tensorflux.protos.config_pb2 import (  # noqa: F401,E402
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from tensorflux.protos.graph_pb2 import GraphDef  # noqa: F401,E402
from tensorflux.protos.node_def_pb2 import NodeDef  # noqa: F401,E402
from tensorflux.protos.tensor_pb2 import TensorProto  # noqa: F401,E402
from tensorflux.runtime.session import (  # noqa: F401,E402
    InteractiveSession,
    Session,
    get_default_session,
)
from tensorflux import client  # noqa: F401,E402 - tf.client.timeline
from tensorflux import summary  # noqa: F401,E402 - tf.summary
from tensorflux.protos.event_pb2 import (  # noqa: F401,E402
    Event,
    LogMessage,
    SessionLog,
    TaggedRunMetadata,
)
from tensorflux.protos.summary_pb2 import (  # noqa: F401,E402
    HistogramProto,
    Summary,
    SummaryDescription,
    SummaryMetadata,
)

from tensorflux import data  # noqa: E402,F401 - tf.data
from tensorflux.data.optional_ops import OptionalSpec  # noqa: E402,F401

# Issue 17: behaviour switches, tf.version, tf.compat (tf.compat.v1 is this module).
from tensorflux.compat.switches import *  # noqa: E402,F401,F403
from tensorflux.compat.version import *  # noqa: E402,F401,F403 - VERSION, GRAPH_DEF_VERSION, ...
from tensorflux.compat import version  # noqa: E402,F401 - tf.version

# `tf.__version__` is what programs test (`>= 1.12`, `startswith("2.")`): the TensorFlow
# version whose API tensorflux follows, as `tf.VERSION`; tensorflux's own release is
# `tf.version.GIT_VERSION` ("tensorflux-X.Y.Z") and the package metadata.
__version__ = VERSION  # noqa: F405
from tensorflux import compat  # noqa: E402,F401 - tf.compat
compat._install_v1(__import__(__name__))
from tensorflux import losses  # noqa: E402,F401 - tf.losses
from tensorflux import layers  # noqa: E402,F401 - tf.layers
from tensorflux import contrib  # noqa: E402,F401 - tf.contrib.layers regularizers
from tensorflux import metrics  # noqa: E402,F401 - tf.metrics
from tensorflux import distributions  # noqa: E402,F401 - tf.distributions
from tensorflux.ops.script_ops import *  # noqa: E402,F401,F403 - tf.py_func, tf.numpy_function
from tensorflux.autodiff.custom_gradient import *  # noqa: E402,F401,F403 - tf.custom_gradient
from tensorflux.variables.template import make_template  # noqa: E402,F401
from tensorflux.variables.creator_scope import *  # noqa: E402,F401,F403 - init_scope, ...
from tensorflux import lookup  # noqa: E402,F401 - tf.lookup
from tensorflux.lookup.lookup_ops import initialize_all_tables, tables_initializer  # noqa: E402,F401
# Issue 18: the math and linear-algebra namespaces and their top-level TF1 names.
from tensorflux import bitwise, dtypes, linalg, manip, math, random, sets  # noqa: E402,F401
from tensorflux.ops.linalg_factor_ops import *  # noqa: E402,F401,F403
from tensorflux.ops.linalg_ops import *  # noqa: E402,F401,F403
from tensorflux.ops.math_ext_ops import *  # noqa: E402,F401,F403
from tensorflux.ops.segment_ops import *  # noqa: E402,F401,F403
from tensorflux.ops.special_math_ops import *  # noqa: E402,F401,F403
from tensorflux.linalg.linalg_impl import *  # noqa: E402,F401,F403
from tensorflux.math.math_impl import *  # noqa: E402,F401,F403
from tensorflux.sparse.sparse_extra import *  # noqa: E402,F401,F403
from tensorflux.ops.matrix_ops import matmul as sparse_matmul  # noqa: E402,F401
from tensorflux.ops.random_ext_ops import *  # noqa: E402,F401,F403
from tensorflux.ops.random_index_shuffle_ops import *  # noqa: E402,F401,F403
# Issue 18 parts 3-6: tf.image, tf.strings, tf.io, tf.signal and more array ops.
from tensorflux import image  # noqa: E402,F401 - tf.image
from tensorflux.image.image_ops import random_crop  # noqa: E402,F401 - tf.random_crop
from tensorflux import strings  # noqa: E402,F401 - tf.strings
from tensorflux.ops.string_ops import *  # noqa: E402,F401,F403 - tf.string_join, tf.substr, ...
from tensorflux import io  # noqa: E402,F401 - tf.io
from tensorflux import signal  # noqa: E402,F401 - tf.signal
from tensorflux import spectral  # noqa: E402,F401 - tf.spectral
from tensorflux.ops.spectral_ops import fft, fft2d, fft3d, ifft, ifft2d, ifft3d  # noqa: E402,F401
from tensorflux.ops.array_ext_ops import *  # noqa: E402,F401,F403 - tf.roll, tf.space_to_depth, ...
# TF1 aliases, constants and thin helpers (tf.arg_max, tf.op_scope, tf.OpError, ...), tf.queue.
from tensorflux.compat.extras import *  # noqa: E402,F401,F403
from tensorflux.compat.deprecated_aliases import arg_max, arg_min  # noqa: E402,F401
from tensorflux import queue  # noqa: E402,F401 - tf.queue
initializers.tables_initializer = tables_initializer  # noqa: F405 - tf.initializers.tables_initializer
from tensorflux import saved_model  # noqa: E402,F401 - tf.saved_model
from tensorflux import graph_util  # noqa: E402,F401 - tf.graph_util
# Issue 19 part 4: tf.quantization and the TF1 top-level names of its ops.
from tensorflux import quantization  # noqa: E402,F401 - tf.quantization
from tensorflux.quantization import (  # noqa: E402,F401
    dequantize,
    fake_quant_with_min_max_args,
    fake_quant_with_min_max_args_gradient,
    fake_quant_with_min_max_vars,
    fake_quant_with_min_max_vars_gradient,
    fake_quant_with_min_max_vars_per_channel,
    fake_quant_with_min_max_vars_per_channel_gradient,
    quantize,
    quantize_v2,
)
# Issue 18 (breadth): SequenceExample parsing, tf.audio, n-d FFTs, sparse crosses, ...
from tensorflux.ops.parsing_seq_ops import parse_single_sequence_example  # noqa: E402,F401
from tensorflux import audio  # noqa: E402,F401 - tf.audio
from tensorflux.ops.spectral_nd_ops import raw_fftnd as fftnd  # noqa: E402,F401
from tensorflux.ops.spectral_nd_ops import raw_ifftnd as ifftnd  # noqa: E402,F401
from tensorflux.ops.spectral_nd_ops import raw_irfftnd as irfftnd  # noqa: E402,F401
from tensorflux.ops.spectral_nd_ops import raw_rfftnd as rfftnd  # noqa: E402,F401
from tensorflux.ops.sparse_ext_ops import sparse_merge  # noqa: E402,F401
from tensorflux.ops.misc_ops import (  # noqa: E402,F401
    batch_scatter_update,
    check_pinned,
    extract_volume_patches,
    timestamp,
)
from tensorflux.ops.nn_ops import approx_top_k  # noqa: E402,F401 - top-level raw ops
from tensorflux.ops.conv_nd_ops import conv  # noqa: E402,F401
from tensorflux.ops.quantization_ops import quantized_concat  # noqa: E402,F401
from tensorflux.ops.conv_ops import (  # noqa: E402,F401
    conv2d_backprop_filter_v2,
    conv2d_backprop_input_v2,
)
# Ragged tensors: tf.RaggedTensor, tf.ragged.
from tensorflux import ragged  # noqa: E402,F401 - tf.ragged
from tensorflux.ragged import RaggedTensor  # noqa: E402,F401
from tensorflux.ragged.ragged_tensor_spec import RaggedTensorSpec  # noqa: E402,F401
from tensorflux.ragged import dispatch as _ragged_dispatch  # noqa: E402
import sys as _sys  # noqa: E402
_ragged_dispatch.install_all(_sys.modules[__name__])  # tf.add, tf.nn.relu, ... take RaggedTensors
from tensorflux.ragged import ragged_parsing as _ragged_parsing  # noqa: E402
io.RaggedFeature = _ragged_parsing.RaggedFeature  # noqa: F405 - tf.io.RaggedFeature
io.parse_example = parse_example = _ragged_parsing.parse_example  # noqa: F405
io.parse_single_example = parse_single_example = _ragged_parsing.parse_single_example  # noqa: F405
from tensorflux.ragged.ragged_ops import ragged_fill_empty_rows  # noqa: E402,F401
from tensorflux.ragged.ragged_ops import ragged_fill_empty_rows_grad  # noqa: E402,F401
from tensorflux.ragged.ragged_string_ops import string_split  # noqa: E402,F401 - ragged results
from tensorflux import raw_ops  # noqa: E402,F401 - tf.raw_ops
from tensorflux import estimator  # noqa: E402,F401 - tf.estimator
from tensorflux import feature_column  # noqa: E402,F401 - tf.feature_column
from tensorflux import keras  # noqa: E402,F401 - tf.keras (Keras 2 in graph mode)
# `import tensorflow` imports multiprocessing's util module (TF's Keras data utilities use
# its pools), which registers multiprocessing's exit handler, the one that joins child
# processes still running. Libraries count on that handler running after their own atexit
# cleanups, registered later: tensorpack's ZeroMQ dataflows terminate their worker
# processes in one; with the handler registered after it (first imported when the workers
# start), the program hung at exit joining them.
import multiprocessing.util as _multiprocessing_util  # noqa: E402,F401
