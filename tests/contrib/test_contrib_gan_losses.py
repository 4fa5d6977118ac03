"""tf.contrib.gan.losses: each TF-GAN loss against its NumPy formula (weights, label
smoothing, reductions), the LOSSES collection, the model-tuple versions, the gradient
penalty's value and gradient, the mutual information penalty and combine_adversarial_loss.
(TF 2.21 has no contrib to ask: the formulas are TF 1.15's, transcribed in NumPy.)"""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import gan as tfgan

wargs = tfgan.losses.wargs
RNG = np.random.RandomState(3)
REAL = RNG.randn(6, 1).astype(np.float32)
GEN = RNG.randn(6, 1).astype(np.float32)
W = np.array([[1.], [0.], [2.], [1.], [0.5], [0.]], np.float32)


def _xent(labels, logits):
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


def _mean_nonzero(values, weights=1.0):
    weights = np.broadcast_to(np.asarray(weights, np.float64), values.shape)
    return float((values * weights).sum() / max((weights != 0).sum(), 1))


_CASES = [
    ("wasserstein_g", lambda r, g: wargs.wasserstein_generator_loss(g),
     lambda r, g: _mean_nonzero(-g)),
    ("wasserstein_g_w", lambda r, g: wargs.wasserstein_generator_loss(g, weights=W),
     lambda r, g: _mean_nonzero(-g, W)),
    ("wasserstein_d", lambda r, g: wargs.wasserstein_discriminator_loss(r, g),
     lambda r, g: g.mean() - r.mean()),
    ("wasserstein_d_w",
     lambda r, g: wargs.wasserstein_discriminator_loss(r, g, real_weights=W,
                                                       generated_weights=2.0),
     lambda r, g: _mean_nonzero(g, 2.0) - _mean_nonzero(r, W)),
    ("minimax_d", lambda r, g: wargs.minimax_discriminator_loss(r, g),
     lambda r, g: _xent(1 - 0.25 / 2, r).mean() + _xent(0, g).mean()),
    ("minimax_d_nosmooth",
     lambda r, g: wargs.minimax_discriminator_loss(r, g, label_smoothing=0.0),
     lambda r, g: _xent(1, r).mean() + _xent(0, g).mean()),
    ("minimax_g", lambda r, g: wargs.minimax_generator_loss(g),
     lambda r, g: -(_xent(1, np.ones_like(g)).mean() + _xent(0, g).mean())),
    ("modified_d", lambda r, g: wargs.modified_discriminator_loss(r, g),
     lambda r, g: _xent(1 - 0.25 / 2, r).mean() + _xent(0, g).mean()),
    ("modified_g", lambda r, g: wargs.modified_generator_loss(g),
     lambda r, g: _xent(1, g).mean()),
    ("modified_g_w", lambda r, g: wargs.modified_generator_loss(g, weights=W),
     lambda r, g: _mean_nonzero(_xent(1, g), W)),
    ("lsq_g", lambda r, g: wargs.least_squares_generator_loss(g),
     lambda r, g: ((g - 1) ** 2 / 2).mean()),
    ("lsq_g_label", lambda r, g: wargs.least_squares_generator_loss(g, real_label=0.9),
     lambda r, g: ((g - 0.9) ** 2 / 2).mean()),
    ("lsq_d", lambda r, g: wargs.least_squares_discriminator_loss(r, g),
     lambda r, g: ((r - 1) ** 2 / 2).mean() + (g ** 2 / 2).mean()),
    ("lsq_d_labels",
     lambda r, g: wargs.least_squares_discriminator_loss(r, g, real_label=0.5,
                                                         fake_label=-1),
     lambda r, g: ((r - 0.5) ** 2 / 2).mean() + ((g + 1) ** 2 / 2).mean()),
]


@pytest.mark.parametrize("name,build,reference", _CASES, ids=[c[0] for c in _CASES])
def test_adversarial_losses_against_numpy(name, build, reference):
    with tf.Graph().as_default(), tf.Session() as sess:
        loss = build(tf.constant(REAL), tf.constant(GEN))
        assert loss.shape.as_list() == []
        collected = tf.get_collection(tf.GraphKeys.LOSSES)
        want = reference(REAL.astype(np.float64), GEN.astype(np.float64))
        np.testing.assert_allclose(sess.run(loss), want, rtol=1e-5, atol=1e-6)
        if name == "minimax_g":  # TF-GAN adds the discriminator loss it negates
            assert len(collected) == 1
            np.testing.assert_allclose(sess.run(collected[0]), -want, rtol=1e-5)
        else:
            assert collected == [loss]  # the whole loss, once


def test_reduction_none_and_no_collection():
    with tf.Graph().as_default(), tf.Session() as sess:
        loss = wargs.wasserstein_discriminator_loss(
            REAL, GEN, reduction=tf.losses.Reduction.NONE, loss_collection=None)
        np.testing.assert_allclose(sess.run(loss), GEN - REAL, rtol=1e-6)
        assert tf.get_collection(tf.GraphKeys.LOSSES) == []


def test_acgan_losses():
    logits_r = RNG.randn(4, 3).astype(np.float32)
    logits_g = RNG.randn(4, 3).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]

    def xent(lab, logits):
        shifted = logits - logits.max(1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        return -(lab * logp).sum(1).mean()

    smoothed = labels * 0.8 + 0.2 / 3
    with tf.Graph().as_default(), tf.Session() as sess:
        d = wargs.acgan_discriminator_loss(logits_r, logits_g, labels, label_smoothing=0.2,
                                           add_summaries=True)
        g = wargs.acgan_generator_loss(logits_g, labels)
        np.testing.assert_allclose(sess.run(d), xent(labels, logits_g)
                                   + xent(smoothed, logits_r), rtol=1e-5)
        np.testing.assert_allclose(sess.run(g), xent(labels, logits_g), rtol=1e-5)
        tags = {s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)}
        assert {"acgan_discriminator_loss/discriminator_gen_ac_loss",
                "acgan_discriminator_loss/discriminator_real_ac_loss",
                "acgan_discriminator_loss/discriminator_ac_loss"} == tags


def _linear_disc(w):
    def disc(x, _):
        v = tf.get_variable("w", initializer=tf.constant(w))
        return tf.reduce_sum(x * v, axis=1)
    return disc


@pytest.mark.parametrize("target,one_sided", [(1.0, False), (2.0, False), (5.0, True)])
def test_gradient_penalty_value_and_gradient(target, one_sided):
    """D(x) = x . w has gradient w everywhere: the penalty is (|w| / target - 1)^2 whatever
    the random interpolation, and its gradient with respect to w is
    2 (|w|/t - 1) w / (|w| t); one-sided, only a norm above the target costs."""
    w = np.array([1.5, -2.0, 0.5], np.float32)
    real = RNG.randn(5, 3).astype(np.float32)
    gen = RNG.randn(5, 3).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        with tf.variable_scope("Discriminator") as scope:
            _linear_disc(w)(tf.constant(real), None)
        penalty = wargs.wasserstein_gradient_penalty(
            real, gen, None, _linear_disc(w), scope, target=target, one_sided=one_sided)
        var = tf.trainable_variables()
        assert len(var) == 1  # the discriminator's variable is reused
        grad = tf.gradients(penalty, var)[0]
        sess.run(tf.global_variables_initializer())
        norm = np.sqrt((w.astype(np.float64) ** 2).sum() + 1e-10)
        gap = norm / target - 1
        if one_sided:
            gap = max(gap, 0.0)
        got, got_grad = sess.run([penalty, grad])
        np.testing.assert_allclose(got, gap ** 2, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got_grad, 2 * gap * w / (norm * target), rtol=1e-4,
                                   atol=1e-6)


def test_gradient_penalty_interpolates():
    """D(x) = sum(x^2): gradient 2 x_hat at x_hat = x + alpha (G(z) - x); with
    G(z) = x the penalty is the mean of (2|x| - 1)^2. As in TF, the discriminator's scope
    is required (AUTO_REUSE without a name is refused) and so is a known rank."""
    real = RNG.randn(4, 2, 3).astype(np.float32)
    disc = lambda x, _: tf.reduce_sum(tf.square(x), [1, 2])  # noqa: E731
    with tf.Graph().as_default(), tf.Session() as sess:
        with tf.variable_scope("D") as scope:
            pass
        penalty = wargs.wasserstein_gradient_penalty(real, real, None, disc, scope)
        norms = 2 * np.sqrt((real.astype(np.float64) ** 2).sum((1, 2)) + 1e-10 / 4)
        np.testing.assert_allclose(sess.run(penalty), ((norms - 1) ** 2).mean(), rtol=1e-4)
        with pytest.raises(ValueError, match="without a name_or_scope"):
            wargs.wasserstein_gradient_penalty(real, real, None, disc, None)
        with pytest.raises(ValueError, match="unknown rank"):
            wargs.wasserstein_gradient_penalty(tf.placeholder(tf.float32), real, None,
                                               disc, scope)


def test_mutual_information_penalty():
    cat_logits = RNG.randn(4, 3).astype(np.float32)
    codes = np.eye(3, dtype=np.float32)[[1, 0, 2, 2]]
    cont = RNG.randn(4, 2).astype(np.float32)
    loc = RNG.randn(4, 2).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        dists = [tf.distributions.Categorical(logits=cat_logits),
                 tf.distributions.Normal(loc=loc, scale=np.ones_like(loc))]
        structured = [tf.argmax(codes, 1), tf.constant(cont)]
        loss = wargs.mutual_information_penalty(structured, dists)
        logp_cat = (cat_logits - np.log(np.exp(cat_logits).sum(1, keepdims=True)))
        cat = logp_cat[np.arange(4), codes.argmax(1)].mean()
        normal = (-0.5 * (cont - loc) ** 2 - 0.5 * np.log(2 * np.pi)).mean()
        np.testing.assert_allclose(sess.run(loss), -(cat + normal) / 2, rtol=1e-5)
        with pytest.raises(ValueError, match="must be the same"):
            wargs.mutual_information_penalty(structured[:1], dists)
        with pytest.raises(ValueError, match="list of `Distributions`"):
            wargs.mutual_information_penalty(structured, [cont, cont])


def test_combine_adversarial_loss():
    with tf.Graph().as_default(), tf.Session() as sess:
        v = tf.Variable([1.0, 2.0])
        main = tf.reduce_sum(3.0 * v)
        adv = tf.reduce_sum(v * v)
        fixed = wargs.combine_adversarial_loss(main, adv, weight_factor=0.5)
        ratio = wargs.combine_adversarial_loss(main, adv, gradient_ratio=2.0,
                                               gradient_summaries=False)
        assert wargs.combine_adversarial_loss(main, adv, weight_factor=0) is main
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(fixed), 9.0 + 0.5 * 5.0, rtol=1e-6)
        coeff = np.linalg.norm([3.0, 3.0]) / (np.linalg.norm([2.0, 4.0]) + 1e-6) / 2.0
        np.testing.assert_allclose(sess.run(ratio), 9.0 + coeff * 5.0, rtol=1e-5)
        # the coefficient carries no gradient: d/dv = 3 + coeff * 2 v
        np.testing.assert_allclose(sess.run(tf.gradients(ratio, v)[0]),
                                   3 + coeff * 2 * np.array([1.0, 2.0]), rtol=1e-5)
        with pytest.raises(ValueError, match="cannot both be `None"):
            wargs.combine_adversarial_loss(main, adv)
        with pytest.raises(ValueError, match="cannot both be specified"):
            wargs.combine_adversarial_loss(main, adv, weight_factor=1.0, gradient_ratio=1.0)


def _model(real=REAL, gen=GEN, **fields):
    values = dict.fromkeys(tfgan.GANModel._fields)
    values.update(discriminator_real_outputs=tf.constant(real),
                  discriminator_gen_outputs=tf.constant(gen), **fields)
    return tfgan.GANModel(**values)


def test_tuple_losses_read_the_model():
    with tf.Graph().as_default(), tf.Session() as sess:
        model = _model()
        pairs = [(tfgan.losses.wasserstein_discriminator_loss(model),
                  wargs.wasserstein_discriminator_loss(REAL, GEN)),
                 (tfgan.losses.minimax_generator_loss(model, label_smoothing=0.1),
                  wargs.minimax_generator_loss(GEN, label_smoothing=0.1)),
                 (tfgan.losses.least_squares_discriminator_loss(model, real_weights=W),
                  wargs.least_squares_discriminator_loss(REAL, GEN, real_weights=W))]
        for got, want in pairs:
            np.testing.assert_allclose(*sess.run([got, want]), rtol=1e-6)
        with pytest.raises(ValueError, match="present in both"):
            tfgan.losses.wasserstein_generator_loss(model, discriminator_gen_outputs=GEN)
        with pytest.raises(ValueError, match="`discriminator_gen_classification_logits` "
                                             "must be supplied"):
            tfgan.losses.acgan_generator_loss(model)  # a GANModel has no class logits


def test_cycle_consistency_loss():
    x, rx, y, ry = (RNG.randn(2, 3).astype(np.float32) for _ in range(4))
    with tf.Graph().as_default(), tf.Session() as sess:
        want = (np.abs(x - rx).mean() + np.abs(y - ry).mean()) / 2
        np.testing.assert_allclose(sess.run(wargs.cycle_consistency_loss(x, rx, y, ry)),
                                   want, rtol=1e-6)
        model = tfgan.CycleGANModel(_model(generator_inputs=tf.constant(x)),
                                    _model(generator_inputs=tf.constant(y)),
                                    tf.constant(rx), tf.constant(ry))
        np.testing.assert_allclose(sess.run(tfgan.losses.cycle_consistency_loss(model)),
                                   want, rtol=1e-6)
