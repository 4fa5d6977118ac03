"""tf.contrib.factorization.KMeansClustering: the TF1 docstring's loop (each train() over
one epoch is a Lloyd iteration), predict_cluster_index/transform/score against NumPy,
mini-batch training with steps, the relative-tolerance stop, dict features, KMC2 seeding."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf

pytestmark = pytest.mark.timeout(120)
RNG = np.random.RandomState(0)
POINTS = RNG.permutation(np.concatenate(
    [RNG.normal(c, 0.3, (20, 2)) for c in ((0, 0), (4, 0), (0, 4))])).astype(np.float32)
START = POINTS[[0, 1, 2]]


def _one_epoch():
    return tf.train.limit_epochs(tf.convert_to_tensor(POINTS), num_epochs=1)


def _forever():
    return tf.train.limit_epochs(tf.convert_to_tensor(POINTS), num_epochs=None)


def _sq(points, centers):
    return ((points[:, None].astype(np.float64) - centers[None]) ** 2).sum(-1)


def _estimator(tmp_path, **kwargs):
    return tf.contrib.factorization.KMeansClustering(model_dir=str(tmp_path), **kwargs)


def test_the_docstring_loop_makes_lloyd_iterations(tmp_path):
    kmeans = _estimator(tmp_path, num_clusters=3, initial_clusters=START,
                        use_mini_batch=False)
    want = START.astype(np.float64)
    for _ in range(3):
        kmeans.train(_one_epoch)
        assign = _sq(POINTS, want).argmin(1)
        want = np.stack([POINTS[assign == c].mean(0) for c in range(3)])
        np.testing.assert_allclose(kmeans.cluster_centers(), want, rtol=1e-5, atol=1e-5)
    centers = kmeans.cluster_centers()
    distances = _sq(POINTS, centers)
    np.testing.assert_array_equal(list(kmeans.predict_cluster_index(_one_epoch)),
                                  distances.argmin(1))
    np.testing.assert_allclose(np.stack(list(kmeans.transform(_one_epoch))), distances,
                               rtol=1e-4, atol=1e-4)
    assert kmeans.score(_one_epoch) == pytest.approx(distances.min(1).sum(), rel=1e-4)
    assert kmeans.get_variable_value("global_step") == 3


def test_an_initialization_that_uses_up_the_input_is_kept(tmp_path):
    """kmeans++ reads the input: the first train() only picks the centers (its epoch is
    gone), and they are in the checkpoint for the next one."""
    kmeans = _estimator(tmp_path, num_clusters=3, initial_clusters="kmeans_plus_plus",
                        use_mini_batch=False, seed=2)
    kmeans.train(_one_epoch)
    first = kmeans.cluster_centers()
    assert kmeans.get_variable_value("initialized")
    assert {tuple(c) for c in first} <= {tuple(p) for p in POINTS}
    kmeans.train(_one_epoch)
    assign = _sq(POINTS, first).argmin(1)
    want = np.stack([POINTS[assign == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(kmeans.cluster_centers(), want, rtol=1e-5, atol=1e-5)


def test_mini_batch_training_with_steps_and_kmc2(tmp_path):
    kmeans = _estimator(tmp_path, num_clusters=3, initial_clusters="kmc2", seed=1,
                        use_mini_batch=True, mini_batch_steps_per_iteration=2)
    kmeans.train(_forever, steps=6)
    assert kmeans.get_variable_value("global_step") == 6
    centers = kmeans.cluster_centers()
    blobs = {(int(c[0] > 2), int(c[1] > 2)) for c in centers}
    assert blobs == {(0, 0), (1, 0), (0, 1)}


def test_relative_tolerance_stops_training(tmp_path):
    kmeans = _estimator(tmp_path, num_clusters=3, initial_clusters=START,
                        use_mini_batch=False, relative_tolerance=1e-4)
    kmeans.train(_forever, steps=50)
    assert 2 <= kmeans.get_variable_value("global_step") < 50


def test_dict_features_are_concatenated_in_key_order(tmp_path):
    def input_fn():
        return {"b": tf.constant(POINTS[:, 1:]), "a": tf.constant(POINTS[:, :1])}

    kmeans = _estimator(tmp_path, num_clusters=3, initial_clusters=START,
                        use_mini_batch=False)
    kmeans.train(input_fn, steps=1)
    assign = _sq(POINTS, START).argmin(1)
    want = np.stack([POINTS[assign == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(kmeans.cluster_centers(), want, rtol=1e-5, atol=1e-5)


def test_constants_and_tf1_module_path():
    from tensorflux.contrib.factorization.python.ops import kmeans

    est = kmeans.KMeansClustering
    assert est is tf.contrib.factorization.KMeansClustering
    assert (est.CLUSTER_INDEX, est.ALL_DISTANCES, est.SCORE, est.CLUSTER_CENTERS_VAR_NAME,
            est.KMC2_INIT) == ("cluster_index", "all_distances", "score", "clusters", "kmc2")


def _cond_contexts_reimport() -> bool:
    """Whether a meta graph with a tf.cond imports again (the init op's cond is in the
    exported graph; main gained this after this branch began)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        tf.cond(x > 0, lambda: x + 1, lambda: x - 1)
        meta = tf.train.export_meta_graph()
    try:
        with tf.Graph().as_default():
            tf.train.import_meta_graph(meta)
    except KeyError:
        return False
    return True


@pytest.mark.skipif(not _cond_contexts_reimport(),
                    reason="meta graphs with cond contexts do not import again here")
def test_export_serves_cluster_indices(tmp_path):
    kmeans = _estimator(tmp_path / "model", num_clusters=3, initial_clusters=START,
                        use_mini_batch=False, random_seed=3)  # TF 1.4's name of seed
    kmeans.train(_one_epoch)

    def serving_input_fn():
        points = tf.placeholder(tf.float32, [None, 2], name="points")
        return tf.estimator.export.ServingInputReceiver(points, {"points": points})

    path = kmeans.export_saved_model(str(tmp_path / "export"), serving_input_fn)
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], path)
        signature = meta.signature_def["serving_default"]
        got = sess.run(signature.outputs["output"].name,
                       {signature.inputs["points"].name: POINTS})
    np.testing.assert_array_equal(got, _sq(POINTS, kmeans.cluster_centers()).argmin(1))
