"""Behaviour TF1 libraries rely on, found by running tflearn's examples (images, nlp,
extending_tensorflow, basics) under tensorflux (`import tensorflow` aliased to it):

- a reference variable is true in `if not step_tensor:` (TF1's RefVariable has no truth
  test; a resource variable refuses one, as in TF);
- the raw ops TF1's `contrib.factorization...clustering_ops` module re-exports
  (`nearest_neighbors`, tflearn's KMeans);
- tensor_forest's parameters may be NumPy integers (`n_classes = np.max(labels) + 1`);
- TF1's module paths under contrib (`tensorflow.contrib.layers.python.layers.initializers`,
  `...legacy_seq2seq.python.ops.seq2seq`, `...framework.python.ops`, ...), also when
  `tensorflow` is aliased to tensorflux, which needs every module on the path to be a
  package.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util

import numpy as np
import pytest

import tensorflux as tf
from tests.aliased_import import aliased_tensorflux
from tests.oracle import run_tf


@pytest.mark.oracle
def test_reference_variable_is_true_resource_variable_refuses():
    theirs = run_tf("""
out = []
for use_resource in (False, True):
    v = tf.Variable(0., trainable=False, use_resource=use_resource)
    try:
        out.append(bool(v))
    except Exception as e:
        out.append(type(e).__name__)
result = out
""")
    ours = []
    with tf.Graph().as_default():
        for use_resource in (False, True):
            v = tf.Variable(0., trainable=False, use_resource=use_resource)
            try:
                ours.append(bool(v))
            except TypeError:
                ours.append("TypeError")
    assert ours[0] is True and theirs[0] is True
    # TF 2.21 raises its OperatorNotAllowedInGraphError (a TypeError) for the resource one.
    assert ours[1] == "TypeError" and theirs[1] in ("TypeError", "OperatorNotAllowedInGraphError")


def test_clustering_ops_module_has_the_raw_ops():
    from tensorflux.contrib.factorization.python.ops import clustering_ops

    with tf.Graph().as_default(), tf.Session() as sess:
        points = np.array([[0., 0.], [5., 5.], [1., 0.]], np.float32)
        centers = np.array([[0., 0.], [4., 4.]], np.float32)
        idx, dist = sess.run(clustering_ops.nearest_neighbors(points, centers, 1))
    np.testing.assert_array_equal(idx[:, 0], [0, 1, 0])
    np.testing.assert_allclose(dist[:, 0], [0., 2., 1.])
    assert clustering_ops.kmeans_plus_plus_initialization is not None
    assert clustering_ops.kmc2_chain_initialization is not None


def test_forest_params_take_numpy_integers():
    from tensorflux.contrib.tensor_forest.python import tensor_forest

    labels = np.array([0, 3, 1], np.uint8)
    params = tensor_forest.ForestHParams(num_classes=np.max(labels) + 1,
                                         num_features=np.int64(4), num_trees=np.int32(2),
                                         max_nodes=np.int64(10)).fill()
    with tf.Graph().as_default():
        graph = tensor_forest.RandomForestGraphs(params)
        x = tf.constant(np.random.RandomState(0).rand(6, 4), tf.float32)
        y = tf.constant([0, 1, 2, 3, 0, 1], tf.float32)
        train = graph.training_graph(x, y)
    assert params.params_proto["num_outputs"] == 4 and train is not None


_TF1_PATHS = [
    ("contrib.layers.python.layers.initializers", "variance_scaling_initializer",
     "contrib.layers"),
    ("contrib.layers.python.layers.layers", "conv2d", "contrib.layers"),
    ("contrib.layers.python.layers.utils", "collect_named_outputs", "contrib.layers_utils"),
    ("contrib.legacy_seq2seq.python.ops.seq2seq", "embedding_rnn_seq2seq",
     "contrib.legacy_seq2seq"),
    ("contrib.framework.python.ops", "add_arg_scope", "contrib.framework"),
    ("contrib.framework.python.ops.variables", "get_variables", "contrib.framework"),
    ("contrib.rnn.python.ops.core_rnn_cell", "BasicLSTMCell", "contrib.rnn"),
    ("contrib.seq2seq.python.ops.helper", "TrainingHelper", "contrib.seq2seq"),
    ("contrib.image.python.ops.image_ops", "bipartite_match", "contrib.image"),
    ("contrib.slim.python.slim.nets.inception_v3", "inception_v3_base", None),
    ("contrib.slim.nets", "inception", None),
]


@pytest.mark.parametrize("path,name,owner", _TF1_PATHS)
def test_tf1_contrib_paths_import_directly_and_aliased(path, name, owner):
    module = importlib.import_module(f"tensorflux.{path}")
    assert callable(getattr(module, name)) or hasattr(getattr(module, name), "__name__")
    if owner is not None:
        assert getattr(module, name) is getattr(importlib.import_module(f"tensorflux.{owner}"),
                                                name)
    with aliased_tensorflux():
        aliased = importlib.import_module(f"aliasedtf.{path}")
        assert getattr(aliased, name) is getattr(module, name)
