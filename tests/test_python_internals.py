"""`tensorflux.python.*`: TensorFlow's internal module paths that TF1 tutorials import
(`from tensorflow.python.framework import ops`, ...) resolve to tensorflux's API."""

import numpy as np
import pytest

import tensorflux as tf


def test_internal_paths_resolve_to_the_public_api():
    from tensorflux.python.client import device_lib
    from tensorflux.python.framework import dtypes, ops, tensor_shape, tensor_util
    from tensorflux.python.layers import utils
    from tensorflux.python.ops import (
        array_ops,
        init_ops,
        math_ops,
        nn_ops,
        random_ops,
        rnn,
        rnn_cell,
        variable_scope,
    )
    from tensorflux.python.platform import gfile, tf_logging
    from tensorflux.python.training import moving_averages, optimizer
    from tensorflux.python.util import nest

    assert ops.convert_to_tensor is tf.convert_to_tensor and ops.name_scope is tf.name_scope
    assert ops.Graph is tf.Graph and ops.GraphKeys is tf.GraphKeys
    assert math_ops.floor is tf.floor and math_ops.reduce_sum is tf.reduce_sum
    assert array_ops.shape is tf.shape and random_ops.random_uniform is tf.random_uniform
    assert nn_ops.conv2d is tf.nn.conv2d and rnn.dynamic_rnn is tf.nn.dynamic_rnn
    assert rnn_cell.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    assert variable_scope.get_variable is tf.get_variable
    assert init_ops.zeros_initializer is tf.zeros_initializer
    assert dtypes.float32 is tf.float32 and tensor_shape.scalar() == tf.TensorShape([])
    assert optimizer.Optimizer is tf.train.Optimizer and gfile.GFile is tf.gfile.GFile
    assert moving_averages.assign_moving_average is not None and tf_logging.info
    assert nest.flatten([1, (2, [3])]) == [1, 2, 3]
    assert [d.name for d in device_lib.list_local_devices()][0] == "/device:CPU:0"
    with tf.Graph().as_default():
        c = tf.constant(3.0)
        assert tensor_util.constant_value(c) == 3.0
        assert utils.smart_cond(tf.constant(True), lambda: 1, lambda: 2) == 1


def test_a_tutorials_dropout_written_against_internals():
    """The SELU paper's dropout as TF1 tutorials write it, with the internal modules."""
    from tensorflux.python.framework import ops, tensor_shape, tensor_util
    from tensorflux.python.ops import array_ops, math_ops, random_ops

    def dropout_selu(x, rate, alpha=-1.7580993408473766, fixed_point_mean=0.0,
                     fixed_point_var=1.0, seed=None):
        keep_prob = 1.0 - rate
        x = ops.convert_to_tensor(x, name="x")
        keep_prob = ops.convert_to_tensor(keep_prob, dtype=x.dtype, name="keep_prob")
        keep_prob.get_shape().assert_is_compatible_with(tensor_shape.scalar())
        alpha = ops.convert_to_tensor(alpha, dtype=x.dtype, name="alpha")
        if tensor_util.constant_value(keep_prob) == 1:
            return x
        random_tensor = keep_prob + random_ops.random_uniform(array_ops.shape(x), seed=seed,
                                                              dtype=x.dtype)
        binary = math_ops.floor(random_tensor)
        ret = x * binary + alpha * (1 - binary)
        a = math_ops.sqrt(fixed_point_var / (keep_prob * ((1 - keep_prob) *
                          math_ops.pow(alpha - fixed_point_mean, 2) + fixed_point_var)))
        b = fixed_point_mean - a * (keep_prob * fixed_point_mean + (1 - keep_prob) * alpha)
        return a * ret + b

    with ops.Graph().as_default():
        x = tf.constant(np.ones([1000], np.float32))
        y = dropout_selu(x, 0.2, seed=1)
        with tf.Session() as s:
            out = s.run(y)
    kept = np.isclose(out, out.max())
    assert 0.7 < kept.mean() < 0.9  # ~80% kept, the rest at one dropped value
    assert len(np.unique(out.round(5))) == 2


def test_control_flow_ops_is_tensorflows_module_not_a_public_namesake():
    """slim's apply_with_random_selector: control_flow_ops.merge/switch are the Merge and
    Switch ops (tf.sparse.merge is another function); with_dependencies is TF's helper."""
    from tensorflux.python.ops import control_flow_ops

    assert control_flow_ops.cond is tf.cond and control_flow_ops.group is tf.group
    assert control_flow_ops.while_loop is tf.while_loop
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        sel = tf.placeholder(tf.int32, [])
        outs = [control_flow_ops.switch(x, tf.equal(sel, case))[1] * (case + 1.0)
                for case in range(3)]
        merged, index = control_flow_ops.merge(outs)
        assert merged.op.type == "Merge"
        total = tf.Variable(0.0)
        bump = tf.assign_add(total, 1.0)
        after = control_flow_ops.with_dependencies([bump], merged)
        with tf.Session() as s:
            s.run(total.initializer)
            for case in range(3):
                got, idx = s.run([after, index], {sel: case})
                assert got.tolist() == [case + 1.0, 2 * (case + 1.0)] and idx == case
            assert s.run(total) == 3.0


def test_unknown_names_and_modules():
    from tensorflux.python.ops import math_ops

    with pytest.raises(AttributeError, match="tensorflux.python.ops.math_ops"):
        math_ops.not_a_function  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        import tensorflux.python.nosuchpackage  # noqa: F401


# TensorFlow 2.21's generated wrappers' parameters (inspect.signature, less `name`).
GEN_SIGNATURES = {
    'gen_nn_ops.conv2d':
        ("input filter strides padding "
         "use_cudnn_on_gpu explicit_paddings data_format dilations").split(),
    'gen_nn_ops.max_pool':
        ("input ksize strides "
         "padding explicit_paddings data_format").split(),
    'gen_nn_ops.bias_add': ['value', 'bias', 'data_format'],
    'gen_nn_ops.lrn': ['input', 'depth_radius', 'bias', 'alpha', 'beta'],
    'gen_nn_ops.fused_batch_norm_v3':
        ("x scale offset mean variance "
         "epsilon exponential_avg_factor data_format is_training").split(),
    'gen_nn_ops.relu6': ['features'],
    'gen_nn_ops.avg_pool': ['value', 'ksize', 'strides', 'padding', 'data_format'],
    'gen_nn_ops.conv2d_backprop_input':
        ("input_sizes filter out_backprop strides padding "
         "use_cudnn_on_gpu explicit_paddings data_format dilations").split(),
    'gen_nn_ops.softmax_cross_entropy_with_logits': ['features', 'labels'],
    'gen_math_ops.mat_mul': ['a', 'b', 'transpose_a', 'transpose_b', 'grad_a', 'grad_b'],
    'gen_math_ops.batch_mat_mul_v2': ['x', 'y', 'adj_x', 'adj_y', 'grad_x', 'grad_y'],
    'gen_math_ops.arg_max': ['input', 'dimension', 'output_type'],
    'gen_math_ops._sum': ['input', 'axis', 'keep_dims'],
    'gen_math_ops.add_n': ['inputs'],
    'gen_math_ops.cast': ['x', 'DstT', 'Truncate'],
    'gen_math_ops.select': ['condition', 'x', 'y'],
    'gen_math_ops._range': ['start', 'limit', 'delta'],
    'gen_array_ops.reshape': ['tensor', 'shape'],
    'gen_array_ops.concat_v2': ['values', 'axis'],
    'gen_array_ops.expand_dims': ['input', 'axis'],
    'gen_array_ops.pad': ['input', 'paddings'],
    'gen_array_ops.strided_slice':
        ("input begin end strides begin_mask "
         "end_mask ellipsis_mask new_axis_mask shrink_axis_mask").split(),
    'gen_array_ops.squeeze': ['input', 'axis'],
    'gen_array_ops.one_hot': ['indices', 'depth', 'on_value', 'off_value', 'axis'],
    'gen_array_ops.split': ['axis', 'value', 'num_split'],
}


@pytest.mark.parametrize("key", sorted(GEN_SIGNATURES))
def test_generated_wrappers_take_tensorflows_arguments(key):
    from tensorflux import raw_ops

    module, name = key.split(".")
    assert raw_ops.generated_wrapper(name).arg_names == tuple(GEN_SIGNATURES[key])


def test_gen_ops_modules_build_nodes():
    from tensorflux.python.ops import gen_array_ops, gen_math_ops, gen_nn_ops

    with tf.Graph().as_default():
        x = tf.ones([1, 4, 4, 1])
        c = gen_nn_ops.conv2d(x, tf.ones([2, 2, 1, 1]), [1, 1, 1, 1], "VALID")
        m = gen_math_ops.mat_mul(tf.ones([2, 3]), tf.ones([3, 2]), transpose_b=False)
        s = gen_math_ops._sum(tf.ones([2, 3]), [1], keep_dims=True)  # a hidden op's name
        r = gen_array_ops.reshape(tf.ones([4]), [2, 2], name="r")
        assert c.op.type == "Conv2D" and s.op.type == "Sum" and r.op.name == "r"
        with tf.Session() as sess:
            got = sess.run([c, m, s])
        np.testing.assert_array_equal(got[0], np.full([1, 3, 3, 1], 4.0))
        np.testing.assert_array_equal(got[1], np.full([2, 2], 3.0))
        np.testing.assert_array_equal(got[2], [[3.0], [3.0]])
        with pytest.raises(TypeError, match="multiple values"):
            gen_array_ops.reshape(tf.ones([4]), [2, 2], tensor=tf.ones([4]))
        with pytest.raises(AttributeError):
            gen_math_ops.not_an_op  # noqa: B018


def test_library_helpers_and_pywrap():
    """What TF1 libraries (tflearn) import from TensorFlow's internals."""
    import contextlib
    import inspect

    from tensorflux.python.util import tf_contextlib, tf_decorator, tf_inspect

    from tensorflux.python import pywrap_tensorflow

    assert tf_contextlib.contextmanager is contextlib.contextmanager
    assert tf_inspect.getfullargspec is inspect.getfullargspec
    assert pywrap_tensorflow.NewCheckpointReader is tf.train.NewCheckpointReader

    def target(x):
        """Target's doc."""
        return x

    def wrapper(*args):
        return target(*args) + 1

    made = tf_decorator.make_decorator(target, wrapper)
    assert made is wrapper and made.__name__ == "target" and made.__doc__ == "Target's doc."
    assert tf_decorator.unwrap(made) == ([made], target)


def test_core_proto_paths_are_the_proto_modules():
    from tensorflux.core.example import example_pb2
    from tensorflux.core.framework import graph_pb2, summary_pb2
    from tensorflux.core.protobuf import config_pb2, meta_graph_pb2
    from tensorflux.core.util import event_pb2

    from tensorflux.protos import config_pb2 as real_config
    from tensorflux.protos import graph_pb2 as real_graph

    assert graph_pb2 is real_graph and config_pb2 is real_config
    assert tf.Summary is summary_pb2.Summary and example_pb2.Example is tf.train.Example
    assert meta_graph_pb2.MetaGraphDef and event_pb2.Event
    with pytest.raises(ImportError):
        from tensorflux.core.framework import no_such_pb2  # noqa: F401


def test_programs_hang_attributes_on_tensors_and_ops():
    with tf.Graph().as_default():
        x = tf.constant(1.0) * 2
        x.scope = "layer1/"
        x.op.m_name = "mine"
        assert x.scope == "layer1/" and x.op.m_name == "mine"
        with pytest.raises(AttributeError):
            x.not_set  # noqa: B018


def test_keras_paths_reach_tf_keras():
    from tensorflux.python.keras import backend, layers
    from tensorflux.python.keras.layers import Dense
    from tensorflux.python.keras.utils import to_categorical

    assert Dense is layers.Dense is tf.keras.layers.Dense
    assert backend.get_session is tf.keras.backend.get_session
    assert to_categorical([1, 2], 3).shape == (2, 3)


def test_keras_utils_submodules_and_estimator_paths():
    """cleverhans (`from tensorflow.python.keras.utils import np_utils`) and the
    cloudml-samples census trainer (`from tensorflow.python.estimator.model_fn import
    ModeKeys`), written against TF 1.x's internal modules."""
    from tensorflux.python.estimator import estimator
    from tensorflux.python.estimator.export import export
    from tensorflux.python.estimator.model_fn import EstimatorSpec, ModeKeys
    from tensorflux.python.keras.utils import np_utils

    assert np_utils.to_categorical([1], 2).tolist() == [[0.0, 1.0]]
    assert ModeKeys is tf.estimator.ModeKeys and ModeKeys.PREDICT == "infer"
    assert EstimatorSpec is tf.estimator.EstimatorSpec
    assert estimator.Estimator is tf.estimator.Estimator
    assert export.ServingInputReceiver is tf.estimator.export.ServingInputReceiver
