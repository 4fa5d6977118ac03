"""tf.contrib.gan.features and tf.contrib.gan.eval: weight clipping, conditioning, virtual
batch norm and the tensor pool; the classifier score, Frechet and kernel distances against
NumPy/SciPy, image grids, and the summaries' tags."""

import numpy as np
import pytest
import scipy.linalg

import tensorflux as tf
from tensorflux.contrib import gan as tfgan

RNG = np.random.RandomState(5)


def test_clip_variables():
    with tf.Graph().as_default(), tf.Session() as sess:
        v = tf.Variable([0.5, -0.2, 0.05])
        opt = tfgan.features.clip_variables(tf.train.GradientDescentOptimizer(1.0), [v], 0.1)
        step = opt.minimize(tf.reduce_sum(v * tf.constant([-1.0, 1.0, 0.01])))
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        np.testing.assert_allclose(sess.run(v), [0.1, -0.1, 0.04], rtol=1e-6)


def test_condition_tensor_and_from_onehot():
    x = RNG.randn(3, 2, 2).astype(np.float32)
    cond = RNG.randn(3, 5).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        out = tfgan.features.condition_tensor(tf.constant(x), tf.constant(cond))
        with tf.variable_scope("labels"):
            labels = tf.one_hot([0, 2, 1], 3)
            out2 = tfgan.features.condition_tensor_from_onehot(tf.constant(x), labels, 4)
        names = sorted(v.op.name for v in tf.global_variables())
        assert names == ["fully_connected/biases", "fully_connected/weights",
                         "labels/embedding", "labels/fully_connected/biases",
                         "labels/fully_connected/weights"]
        sess.run(tf.global_variables_initializer())
        w, b = sess.run(["fully_connected/weights:0", "fully_connected/biases:0"])
        assert out.shape.as_list() == [3, 2, 2]
        np.testing.assert_allclose(sess.run(out), x + (cond @ w + b).reshape(3, 2, 2),
                                   rtol=1e-5)
        emb, w2, b2 = sess.run(["labels/embedding:0", "labels/fully_connected/weights:0",
                                "labels/fully_connected/biases:0"])
        want = x + ((np.eye(3)[[0, 2, 1]] @ emb) @ w2 + b2).reshape(3, 2, 2)
        np.testing.assert_allclose(sess.run(out2), want, rtol=1e-5)
        with pytest.raises(ValueError, match="at least 2D"):
            tfgan.features.condition_tensor(tf.constant(x), tf.constant([1.0, 2.0]))


def _vbn_reference(ref, x, eps=1e-3):
    """Each example of x normalized with the mean/mean-square of ref plus itself."""
    b = ref.shape[0]
    axes = tuple(range(ref.ndim - 1))
    ref_mean, ref_sq = ref.mean(axes), (ref ** 2).mean(axes)
    out = []
    for ex in x:
        ex_axes = tuple(range(ex.ndim - 1))
        mean = (b * ref_mean + ex.mean(ex_axes)) / (b + 1)
        sq = (b * ref_sq + (ex ** 2).mean(ex_axes)) / (b + 1)
        out.append((ex - mean) / np.sqrt(sq - mean ** 2 + eps))
    return np.stack(out), (ref - ref_mean) / np.sqrt(ref_sq - ref_mean ** 2 + eps)


def test_virtual_batch_norm():
    ref = (RNG.randn(5, 3, 4) * 2 + 1).astype(np.float32)
    x = RNG.randn(3, 3, 4).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        vbn = tfgan.features.VBN(ref)
        out = vbn(tf.constant(x))
        single = vbn(tf.constant(x[1:2]))
        normed_ref = vbn.reference_batch_normalization()
        assert sorted(v.op.name for v in tf.trainable_variables()) == ["VBN/beta", "VBN/gamma"]
        sess.run(tf.global_variables_initializer())
        want, want_ref = _vbn_reference(ref.astype(np.float64), x.astype(np.float64))
        np.testing.assert_allclose(sess.run(out), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sess.run(normed_ref), want_ref, rtol=1e-4, atol=1e-5)
        # an example's output does not depend on the rest of its batch
        np.testing.assert_allclose(sess.run(single)[0], want[1], rtol=1e-4, atol=1e-5)
        grads = tf.gradients(tf.reduce_sum(out * x), tf.trainable_variables())
        assert all(g is not None for g in grads)
        with pytest.raises(ValueError, match="are incompatible"):
            vbn(tf.zeros([2, 3, 5]))
        with pytest.raises(ValueError, match="cannot be the same"):
            tfgan.features.VBN(ref, axis=0)


def test_tensor_pool():
    with tf.Graph().as_default(), tf.Session() as sess:
        feed = tf.placeholder(tf.int32, [])
        pair = (feed, feed * 10)
        assert tfgan.features.tensor_pool(pair, pool_size=0) is pair
        never = tfgan.features.tensor_pool(feed, pool_size=2, pooling_probability=0.0,
                                           name="never")
        always = tfgan.features.tensor_pool(pair, pool_size=2, pooling_probability=1.0,
                                            name="always")
        assert always[0].shape.as_list() == [] and isinstance(always, tuple)
        assert [sess.run(never, {feed: i}) for i in range(5)] == list(range(5))
        got = [sess.run(always, {feed: i}) for i in range(6)]
        assert got[:2] == [(0, 0), (1, 10)]  # filling the pool
        for i, (a, b) in enumerate(got[2:], start=2):  # then an earlier pair, intact
            assert a < i and b == 10 * a
        assert len({a for a, _ in got[2:]}) > 1


def test_classifier_score_from_logits():
    logits = RNG.randn(8, 5).astype(np.float32)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    kl = (p * (np.log(p) - np.log(p.mean(0)))).sum(1)
    with tf.Graph().as_default(), tf.Session() as sess:
        score = tfgan.eval.classifier_score_from_logits(logits)
        assert score.dtype == tf.float32
        np.testing.assert_allclose(sess.run(score), np.exp(kl.mean()), rtol=1e-5)
        via_fn = tfgan.eval.classifier_score(tf.constant(logits), lambda x: x * 1.0,
                                             num_batches=2)
        np.testing.assert_allclose(sess.run(via_fn), np.exp(kl.mean()), rtol=1e-5)


def test_frechet_distances():
    real = RNG.randn(40, 4)
    gen = RNG.randn(30, 4) @ RNG.randn(4, 4) * 0.7 + 0.5
    covmean = scipy.linalg.sqrtm(np.cov(real, rowvar=False) @ np.cov(gen, rowvar=False)).real
    fid = (((real.mean(0) - gen.mean(0)) ** 2).sum()
           + np.trace(np.cov(real, rowvar=False) + np.cov(gen, rowvar=False) - 2 * covmean))
    diag = (((real.mean(0) - gen.mean(0)) ** 2).sum()
            + ((real.std(0) - gen.std(0)) ** 2).sum())
    with tf.Graph().as_default(), tf.Session() as sess:
        r32, g32 = tf.constant(real, tf.float32), tf.constant(gen, tf.float32)
        ev = tfgan.eval
        got = sess.run([ev.frechet_classifier_distance_from_activations(r32, g32),
                        ev.frechet_classifier_distance(r32, g32, tf.identity),
                        ev.mean_only_frechet_classifier_distance_from_activations(r32, g32),
                        ev.diagonal_only_frechet_classifier_distance_from_activations(
                            r32[:30], g32)])
        np.testing.assert_allclose(got[0], fid, rtol=1e-4)
        np.testing.assert_allclose(got[1], fid, rtol=1e-4)
        np.testing.assert_allclose(got[2], ((real.mean(0) - gen.mean(0)) ** 2).sum(),
                                   rtol=1e-5)
        diag = (((real[:30].mean(0) - gen.mean(0)) ** 2).sum()
                + ((real[:30].std(0) - gen.std(0)) ** 2).sum())
        np.testing.assert_allclose(got[3], diag, rtol=1e-4)
        with pytest.raises(ValueError):
            ev.frechet_classifier_distance_from_activations(tf.zeros([3]), tf.zeros([3]))


def _kid(real, gen):
    d = real.shape[1]
    k = lambda a, b: (a @ b.T / d + 1) ** 3  # noqa: E731
    m, n = len(real), len(gen)
    krr, kgg = k(real, real), k(gen, gen)
    return ((krr.sum() - np.trace(krr)) / (m * (m - 1))
            + (kgg.sum() - np.trace(kgg)) / (n * (n - 1)) - 2 * k(real, gen).mean())


def test_kernel_classifier_distance():
    real, gen = RNG.randn(10, 3), RNG.randn(8, 3) + 0.3
    with tf.Graph().as_default(), tf.Session() as sess:
        one = tfgan.eval.kernel_classifier_distance_from_activations(
            tf.constant(real, tf.float32), tf.constant(gen, tf.float32))
        blocks = tfgan.eval.kernel_classifier_distance_from_activations(
            tf.constant(real), tf.constant(gen), max_block_size=4)
        np.testing.assert_allclose(sess.run(one), _kid(real, gen), rtol=1e-4)
        # 3 blocks: real 3,3,4 and gen 2,3,3 examples
        ests = [_kid(real[:3], gen[:2]), _kid(real[3:6], gen[2:5]), _kid(real[6:], gen[5:])]
        np.testing.assert_allclose(sess.run(blocks), np.mean(ests), rtol=1e-10)
        # unknown batch sizes: the blocks are cut at run time
        r_in, g_in = tf.placeholder(tf.float64, [None, 3]), tf.placeholder(tf.float64, [None, 3])
        kid, std = tfgan.eval.kernel_classifier_distance_and_std_from_activations(
            r_in, g_in, max_block_size=4)
        got = sess.run([kid, std], {r_in: real, g_in: gen})
        np.testing.assert_allclose(got, [np.mean(ests), np.std(ests, ddof=1) / np.sqrt(3)],
                                   rtol=1e-10)
        single = tfgan.eval.kernel_classifier_distance_and_std_from_activations(
            tf.constant(real), tf.constant(gen))
        assert np.isnan(sess.run(single[1]))
        size = tf.placeholder(tf.int32, [])  # the block size fed
        fed = tfgan.eval.kernel_classifier_distance_from_activations(
            tf.constant(real), tf.constant(gen), max_block_size=size)
        np.testing.assert_allclose(sess.run(fed, {size: 4}), np.mean(ests), rtol=1e-10)


def test_image_grid_and_reshaper():
    images = RNG.rand(6, 2, 3, 1).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        grid = sess.run(tfgan.eval.image_grid(images, (2, 3), image_shape=(2, 3),
                                              num_channels=1))
        assert grid.shape == (1, 4, 9, 1)
        for k in range(6):
            r, c = divmod(k, 3)
            np.testing.assert_array_equal(grid[0, 2 * r:2 * r + 2, 3 * c:3 * c + 3],
                                          images[k])
        flat = tfgan.eval.image_grid(images.reshape(6, 6), (3, 2), (2, 3), 1)
        assert flat.shape.as_list() == [1, 6, 6, 1]
        with pytest.raises(ValueError, match="incompatible with minibatch size"):
            tfgan.eval.image_grid(images, (2, 2), (2, 3), 1)
        with pytest.raises(ValueError, match="number of channels incompatible"):
            tfgan.eval.image_grid(images, (2, 3), (2, 3), 3)
        tiled = sess.run(tfgan.eval.image_reshaper(images[:5], num_cols=3))
        assert tiled.shape == (1, 4, 9, 1)
        np.testing.assert_array_equal(tiled[0, 2:4, 3:6], images[4])
        np.testing.assert_array_equal(tiled[0, 2:4, 6:9], np.zeros((2, 3, 1)))
        assert tfgan.eval.image_reshaper(list(images[:4])).shape.as_list() == [1, 4, 6, 1]


def test_summaries():
    with tf.Graph().as_default():
        def gen(z):
            return tf.reshape(tf.layers.dense(tf.layers.flatten(z), 12), [-1, 2, 2, 3])

        def disc(x, _):
            return tf.layers.dense(tf.layers.flatten(x), 1)

        model = tfgan.gan_model(gen, disc, tf.zeros([4, 2, 2, 3]), tf.zeros([4, 2, 2, 3]))
        tfgan.eval.add_gan_model_image_summaries(model, grid_size=2)
        tfgan.eval.add_image_comparison_summaries(model, display_diffs=True)
        tfgan.eval.add_regularization_loss_summaries(model)
        tags = sorted(s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES))
        assert tags[:2] == ["discriminator_regularization_loss",
                            "discriminator_variables/Discriminator/dense/bias_0"]
        assert {"real_data", "generated_data", "image_comparison",
                "generator_regularization_loss",
                "generator_variables/Generator/dense/kernel_0"} <= set(tags)
        cyc = tfgan.cyclegan_model(gen, disc, tf.zeros([4, 2, 2, 3]), tf.ones([4, 2, 2, 3]))
        with pytest.raises(ValueError, match="does not take CycleGANModels"):
            tfgan.eval.add_gan_model_image_summaries(cyc)
        tfgan.eval.add_cyclegan_image_summaries(cyc)
        tfgan.eval.add_gan_model_summaries(cyc)
        tags = {s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)}
        assert {"x2y_image_comparison_summaries/image_comparison",
                "y2x_image_comparison_summaries/image_comparison"} <= tags
        assert any(t.startswith("cyclegan_x2y_summaries/generator_variables/") for t in tags)


def _tiny_classifier_graph_def():
    """A stand-in for the Inception graph: input 'Mul', outputs 'logits' ([N, 3]) and
    'pool_3' ([N, 1, 1, 2])."""
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 4, 4, 3], name="Mul")
        means = tf.reduce_mean(x, [1, 2])
        tf.identity(tf.matmul(means, tf.constant(np.eye(3, dtype=np.float32) * 2)),
                    name="logits")
        tf.reshape(means[:, :2], [-1, 1, 1, 2], name="pool_3")
    return g.as_graph_def()


def test_inception_wrappers_with_a_given_graph(tmp_path):
    import tarfile

    graph_def = _tiny_classifier_graph_def()
    (tmp_path / tfgan.eval.INCEPTION_FROZEN_GRAPH).write_bytes(graph_def.SerializeToString())
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / tfgan.eval.INCEPTION_FROZEN_GRAPH,
                arcname=tfgan.eval.INCEPTION_FROZEN_GRAPH)
    loaded = tfgan.eval.get_graph_def_from_url_tarball(
        (tmp_path / "model.tar.gz").as_uri(), tfgan.eval.INCEPTION_FROZEN_GRAPH)
    assert loaded == graph_def
    assert tfgan.eval.get_graph_def_from_disk(
        str(tmp_path / tfgan.eval.INCEPTION_FROZEN_GRAPH)) == graph_def
    images = RNG.rand(4, 4, 4, 3).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        logits = tfgan.eval.run_inception(images, graph_def, image_size=4)
        pool = tfgan.eval.run_inception(images, image_size=4, default_graph_def_fn=lambda: loaded,
                                        output_tensor=tfgan.eval.INCEPTION_FINAL_POOL)
        both = tfgan.eval.run_inception(images, graph_def, image_size=4,
                                        output_tensor=["logits:0", "pool_3:0"])
        assert logits.op.name == "RunClassifier/logits" and pool.shape.as_list() == [4, 2]
        assert [t.shape.ndims for t in both] == [2, 2]
        means = images.mean((1, 2))
        np.testing.assert_allclose(sess.run(logits), means * 2, rtol=1e-5)
        np.testing.assert_allclose(sess.run(pool), means[:, :2], rtol=1e-5)
        pre = tfgan.eval.preprocess_image(tf.constant(np.full([2, 2, 3], 64, np.uint8)),
                                          height=3, width=3)
        np.testing.assert_allclose(sess.run(pre), np.full([3, 3, 3], -0.5))
        with pytest.raises(ValueError):
            tfgan.eval.run_inception(tf.zeros([2, 5, 5, 3]), graph_def, image_size=4)


def _np_conv(img, gain):
    """OpenCV-style 5x5 binomial filter with reflect (no edge repeat) padding."""
    k = np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]) / 256.0 * gain
    padded = np.pad(img, [(0, 0), (2, 2), (2, 2), (0, 0)], mode="reflect")
    h, w = img.shape[1:3]
    return sum(k[i, j] * padded[:, i:i + h, j:j + w] for i in range(5) for j in range(5))


def test_sliced_wasserstein_pieces():
    from tensorflux.contrib.gan import sliced_wasserstein as swd

    img = RNG.rand(2, 8, 8, 3)
    down = _np_conv(img, 1)[:, ::2, ::2]
    up = np.zeros_like(img)
    up[:, ::2, ::2] = down
    levels_want = [img - _np_conv(up, 4), down]
    ramp = np.arange(2 * 8 * 8 * 3, dtype=np.float32).reshape(2, 8, 8, 3)
    a = RNG.randn(12, 5).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        levels = sess.run(swd._laplacian_pyramid(tf.constant(img, tf.float32), 2))
        for got, want in zip(levels, levels_want, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        patches = sess.run(swd._batch_to_patches(tf.constant(ramp), 4, 3))
        assert patches.shape == (8, 3, 3, 3)
        for k, patch in enumerate(patches):
            b, y, x = np.unravel_index(int(patch[1, 1, 0]) // 3, (2, 8, 8))
            assert b == k // 4 and 1 <= y < 7 and 1 <= x < 7
            np.testing.assert_array_equal(patch, ramp[b, y - 1:y + 2, x - 1:x + 2])
        shuffled = tf.constant(a[RNG.permutation(12)])
        same = [swd._sliced_wasserstein(tf.constant(a), shuffled, 3, 4),
                swd._sliced_wasserstein_svd(tf.constant(a), shuffled)]
        np.testing.assert_allclose(sess.run(same), [0.0, 0.0], atol=1e-5)


def test_sliced_wasserstein_distance():
    rng = np.random.RandomState(5)  # data of its own, whatever ran before
    smooth = np.repeat(np.repeat(rng.rand(8, 4, 4, 3), 4, 1), 4, 2).astype(np.float32)
    noise = rng.rand(8, 16, 16, 3).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(0)  # patches and projections are random: fixed draws
        scores = tfgan.eval.sliced_wasserstein_distance(
            tf.constant(smooth), tf.constant(noise), resolution_min=8, patches_per_image=16,
            patch_size=3, random_projection_dim=8)
        svd = tfgan.eval.sliced_wasserstein_distance(
            tf.constant(smooth), tf.constant(noise), resolution_min=16, patch_size=3,
            use_svd=True)
        assert len(scores) == 2 and len(svd) == 1  # 16 and 8; 16 only
        got = sess.run(scores + svd)
        for real_real, real_fake in got:
            assert 0 <= real_real < real_fake
        with pytest.raises(ValueError):
            tfgan.eval.sliced_wasserstein_distance(tf.zeros([2, 8, 8, 1]), tf.zeros([2, 8, 8, 1]))


def test_spectral_normalization():
    w = RNG.randn(3, 2, 4).astype(np.float32)
    sigma = np.linalg.svd(w.reshape(-1, 4), compute_uv=False)[0]
    with tf.Graph().as_default(), tf.Session() as sess:
        norm = tfgan.features.compute_spectral_norm(tf.constant(w), power_iteration_rounds=30)
        normalized = tfgan.features.spectral_normalize(tf.constant(w), 30)
        reg = tfgan.features.spectral_norm_regularizer(0.5, 30)(tf.constant(w))
        getter = tfgan.features.spectral_normalization_custom_getter(power_iteration_rounds=30)
        with tf.variable_scope("D", custom_getter=getter):
            out = tf.layers.dense(tf.ones([2, 3]), 5)
        kernel = [op for op in tf.get_default_graph().get_operations()
                  if op.name.endswith("dense/kernel/spectral_normalize/Reshape")]
        u_vars = [v.op.name for v in tf.global_variables() if "spectral_norm_u" in v.op.name]
        # the getter runs in the layer's scope, so the name repeats (as under TF 2.21)
        assert "D/dense/D/dense/kernel/spectral_normalize/spectral_norm/spectral_norm_u" in u_vars
        assert all("spectral_norm_u" not in v.op.name for v in tf.trainable_variables())
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(norm), sigma, rtol=1e-4)
        got = sess.run(normalized)
        assert got.shape == w.shape
        np.testing.assert_allclose(np.linalg.svd(got.reshape(-1, 4), compute_uv=False)[0], 1.0,
                                   rtol=1e-4)
        np.testing.assert_allclose(sess.run(reg), 0.5 * sigma, rtol=1e-4)
        assert kernel and sess.run(out).shape == (2, 5)
        used = sess.run(kernel[0].outputs[0])
        np.testing.assert_allclose(np.linalg.svd(used, compute_uv=False)[0], 1.0, rtol=1e-4)
        with pytest.raises(ValueError, match="cannot be an integer"):
            tfgan.features.spectral_norm_regularizer(1)
        assert tfgan.features.spectral_norm_regularizer(0.0)(tf.constant(w)) is None


def test_stargan_image_summaries():
    def gen(x, target):
        scale = tf.get_variable("s", initializer=1.0)
        return x * scale + tf.reshape(tf.reduce_sum(target, 1), [-1, 1, 1, 1])

    def disc(x, num_domains):
        flat = tf.layers.flatten(x)
        return tf.reduce_mean(flat, 1), tf.layers.dense(flat, num_domains)

    with tf.Graph().as_default(), tf.Session() as sess:
        model = tfgan.stargan_model(gen, disc, tf.ones([3, 2, 2, 3]),
                                    tf.one_hot([0, 1, 2], 3))
        tfgan.eval.add_stargan_image_summaries(model, num_images=2, display_diffs=True)
        sess.run(tf.global_variables_initializer())
        summary = tf.Summary.FromString(sess.run(tf.summary.merge_all()))
        images = [v.image for v in summary.value]
        assert [v.tag for v in summary.value] == [
            "stargan_image_generation/image/0", "stargan_image_generation/image/1"]
        assert (images[0].height, images[0].width) == (4, 8)  # 2 rows of 1 + 3 domains
