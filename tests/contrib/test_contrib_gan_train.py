"""tf.contrib.gan's models, gan_loss and train ops: the variable scopes and collections as
TF-GAN names them (Generator/Discriminator, the discriminator's variables reused on real
data), the update ops split by scope, each train op updating only its network, the
sequential and joint hooks' step counts, slim's train-step function, and a small GAN on
2-D Gaussian data whose generated mean moves to the data's."""

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.contrib import gan as tfgan


def _gen(z):
    return tf.layers.dense(z, 2, name="g")


def _disc(x, _):
    return tf.layers.dense(x, 1, name="d")


def _changed(before, after) -> list[bool]:
    return [not np.array_equal(a, b) for a, b in zip(before, after, strict=True)]


def _names(variables):
    return sorted(v.op.name for v in variables)


def test_gan_model_scopes_and_reuse():
    with tf.Graph().as_default():
        model = tfgan.gan_model(_gen, _disc, tf.zeros([4, 2]), tf.zeros([4, 3]))
        assert _names(model.generator_variables) == ["Generator/g/bias", "Generator/g/kernel"]
        assert _names(model.discriminator_variables) == ["Discriminator/d/bias",
                                                         "Discriminator/d/kernel"]
        assert len(tf.trainable_variables()) == 4  # one discriminator for both inputs
        assert model.generator_scope.name == "Generator"
        assert model.discriminator_scope.name == "Discriminator"
        assert model.discriminator_real_outputs.op.name.startswith("Discriminator_1/")
        assert model.generator_fn is _gen and model.discriminator_fn is _disc
        summed = lambda x, _: tf.reduce_sum(x, 1)  # noqa: E731
        with pytest.raises(ValueError, match="must be the same shape as real data"):
            tfgan.gan_model(_gen, summed, tf.zeros([4, 5]), tf.zeros([4, 3]),
                            generator_scope="G2", discriminator_scope="D2")
        other = tfgan.gan_model(_gen, summed, tf.zeros([4, 5]), tf.zeros([4, 3]),
                                generator_scope="G3", discriminator_scope="D3",
                                check_shapes=False)
        assert _names(other.generator_variables)[0].startswith("G3/")


def test_acgan_infogan_cyclegan_stargan_models():
    with tf.Graph().as_default():
        def ac_disc(x, _):
            return tf.layers.dense(x, 1, name="d"), tf.layers.dense(x, 3, name="c")

        ac = tfgan.acgan_model(_gen, ac_disc, tf.zeros([4, 2]), tf.zeros([4, 3]),
                               tf.one_hot([0, 1, 2, 0], 3))
        assert ac.discriminator_gen_classification_logits.op.name.startswith(
            "Discriminator/generated/")
        assert ac.discriminator_real_outputs.op.name.startswith("Discriminator/real/")
        with pytest.raises(TypeError, match="must output a tuple"):
            tfgan.acgan_model(_gen, _disc, tf.zeros([4, 2]), tf.zeros([4, 3]), None,
                              generator_scope="G", discriminator_scope="D")

        def info_disc(x, _):
            logits = tf.layers.dense(x, 1, name="d")
            return logits, [tf.distributions.Normal(tf.layers.dense(x, 1, name="q"), 1.0)]

        info = tfgan.infogan_model(lambda zs: _gen(tf.concat(zs, 1)), info_disc,
                                   tf.zeros([4, 2]), [tf.zeros([4, 2])], [tf.zeros([4, 1])],
                                   generator_scope="IG", discriminator_scope="ID")
        assert len(info.generator_inputs) == 2 and len(info.predicted_distributions) == 1
        assert info.discriminator_fn(tf.zeros([4, 2]), None).shape.as_list() == [4, 1]
        with pytest.raises(ValueError, match="must be the same as the length"):
            tfgan.infogan_model(lambda zs: _gen(tf.concat(zs, 1)), info_disc,
                                tf.zeros([4, 2]), [tf.zeros([4, 2])], [],
                                generator_scope="IG2", discriminator_scope="ID2")

        cyc = tfgan.cyclegan_model(_gen, _disc, tf.zeros([4, 2]), tf.ones([4, 2]))
        assert _names(cyc.model_x2y.generator_variables) == [
            "ModelX2Y/Generator/g/bias", "ModelX2Y/Generator/g/kernel"]
        assert _names(cyc.model_y2x.discriminator_variables)[0].startswith(
            "ModelY2X/Discriminator/")
        assert cyc.reconstructed_x.shape.as_list() == [4, 2]

        def star_gen(x, target):
            return tf.layers.dense(tf.concat([x, target], 1), 2, name="sg")

        def star_disc(x, num_domains):
            return tf.layers.dense(x, 1, name="src"), tf.layers.dense(x, num_domains)

        star = tfgan.stargan_model(star_gen, star_disc, tf.zeros([4, 2]),
                                   tf.one_hot([0, 1, 2, 1], 3), generator_scope="SG",
                                   discriminator_scope="SD")
        assert star.generated_data_domain_target.shape.as_list() == [4, 3]
        assert star.discriminator_input_data_domain_predication.shape.as_list() == [4, 3]
        assert len(star.generator_variables) == 2
        loss = tfgan.stargan_loss(star)
        assert loss.generator_loss.shape.as_list() == []


def test_gan_loss_terms_and_checks():
    with tf.Graph().as_default(), tf.Session() as sess:
        def gen(z):
            return tf.layers.dense(z, 2, kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(w))

        model = tfgan.gan_model(gen, _disc, tf.ones([4, 2]), tf.ones([4, 3]))
        plain = tfgan.gan_loss(model, add_summaries=False)
        penalized = tfgan.gan_loss(model, gradient_penalty_weight=10.0, add_summaries=False)
        sess.run(tf.global_variables_initializer())
        w_g = sess.run(model.generator_variables[0])
        d_gen, d_real = sess.run([model.discriminator_gen_outputs,
                                  model.discriminator_real_outputs])
        got = sess.run(plain)
        np.testing.assert_allclose(got.generator_loss, -d_gen.mean() + 0.5 * w_g.sum(),
                                   rtol=1e-5)
        np.testing.assert_allclose(got.discriminator_loss, d_gen.mean() - d_real.mean(),
                                   rtol=1e-5, atol=1e-6)
        d_kernel = sess.run(model.discriminator_variables[0])
        gp = (np.sqrt((d_kernel ** 2).sum() + 1e-10) - 1) ** 2  # a linear discriminator
        np.testing.assert_allclose(sess.run(penalized.discriminator_loss),
                                   got.discriminator_loss + 10 * gp, rtol=1e-5)
        with pytest.raises(ValueError, match="must be greater than 0"):
            tfgan.gan_loss(model, gradient_penalty_weight=-1.0)
        with pytest.raises(ValueError, match="must be an `InfoGANModel`"):
            tfgan.gan_loss(model, mutual_information_penalty_weight=1.0)
        with pytest.raises(ValueError, match="must be an `ACGANModel`"):
            tfgan.gan_loss(model, aux_cond_generator_weight=1.0)
        weight = tf.placeholder(tf.float32, [])
        checked = tfgan.gan_loss(model, gradient_penalty_weight=weight)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(checked.discriminator_loss, {weight: -1.0})
        tags = {s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)}
        assert "generator_wasserstein_loss_2/generator_wass_loss" in tags  # third gan_loss


def _bn_gen(z):
    return tf.layers.batch_normalization(tf.layers.dense(z, 2), training=True)


def _train_setup(gen=_gen, **kwargs):
    model = tfgan.gan_model(gen, _disc, tf.ones([4, 2]), tf.ones([4, 3]))
    loss = tfgan.gan_loss(model, add_summaries=False)
    ops = tfgan.gan_train_ops(model, loss, tf.train.GradientDescentOptimizer(0.1),
                              tf.train.GradientDescentOptimizer(0.1), **kwargs)
    return model, ops


def test_train_ops_update_only_their_network():
    with tf.Graph().as_default(), tf.Session() as sess:
        model, ops = _train_setup(_bn_gen, summarize_gradients=True)
        step = tf.train.get_global_step()
        sess.run(tf.global_variables_initializer())
        gen_vars, dis_vars = model.generator_variables, model.discriminator_variables
        moving = [v for v in tf.global_variables() if "moving_mean" in v.op.name]
        before = sess.run([gen_vars, dis_vars, moving])
        sess.run(ops.generator_train_op)
        after_g = sess.run([gen_vars, dis_vars, moving])
        assert any(_changed(before[0], after_g[0])) and not any(_changed(before[1], after_g[1]))
        assert not np.array_equal(before[2][0], after_g[2][0])  # the G scope's update op
        assert sess.run(step) == 0
        sess.run(ops.discriminator_train_op)
        after_d = sess.run([gen_vars, dis_vars])
        assert not any(_changed(after_g[0], after_d[0])) and any(_changed(after_g[1], after_d[1]))
        assert sess.run(step) == 0
        sess.run(ops.global_step_inc_op)
        assert sess.run(step) == 1 and ops.train_hooks == []
        tags = {s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)}
        assert any(t.startswith("generator_train/summarize_grads/") for t in tags)


def test_update_ops_outside_the_networks_and_transform_grads():
    with tf.Graph().as_default():
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.no_op(name="stray"))
        with pytest.raises(ValueError, match="There are unused update ops"):
            _train_setup()
    seen = []
    with tf.Graph().as_default():
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.no_op(name="stray"))

        def transform(grads_and_vars):
            seen.append(sorted(v.op.name for _, v in grads_and_vars))
            return grads_and_vars

        _train_setup(check_for_unused_update_ops=False, transform_grads_fn=transform)
        assert seen == [["Generator/g/bias", "Generator/g/kernel"],
                        ["Discriminator/d/bias", "Discriminator/d/kernel"]]


def _counting_train_ops():
    g_count = tf.Variable(0, name="g_count")
    d_count = tf.Variable(0, name="d_count")
    step = tf.train.get_or_create_global_step()
    return g_count, d_count, tfgan.GANTrainOps(g_count.assign_add(1), d_count.assign_add(1),
                                               step.assign_add(1))


@pytest.mark.parametrize("hooks_fn", [tfgan.get_sequential_train_hooks,
                                      tfgan.get_joint_train_hooks])
def test_train_hooks_run_the_right_number_of_steps(hooks_fn):
    with tf.Graph().as_default():
        g_count, d_count, ops = _counting_train_ops()
        counts = {}

        class Record(tf.train.SessionRunHook):
            def end(self, session):
                values = session.run([g_count, d_count, tf.train.get_global_step()])
                counts.update(zip(("g", "d", "step"), values, strict=True))

        tfgan.gan_train(ops, None, get_hooks_fn=hooks_fn(tfgan.GANTrainSteps(2, 5)),
                        hooks=[tf.train.StopAtStepHook(num_steps=3), Record()],
                        save_checkpoint_secs=None, save_summaries_steps=None)
        assert counts == {"g": 6, "d": 15, "step": 3}


def test_joint_hooks_group_the_updates():
    hooks = tfgan.get_joint_train_hooks(tfgan.GANTrainSteps(3, 5))(
        tfgan.GANTrainOps("g", "d", "inc", train_hooks=["sync"]))
    assert [(h._train_ops, h._train_steps) for h in hooks[:3]] == [
        (["g", "d"], 3), (["g"], 0), (["d"], 2)]
    assert hooks[3] == "sync"
    seq = tfgan.get_sequential_train_hooks(tfgan.GANTrainSteps(3, 5))(
        tfgan.GANTrainOps("g", "d", "inc"))
    assert [(h._train_ops, h._train_steps) for h in seq] == [(["g"], 3), (["d"], 5)]


def test_sequential_train_steps_for_slim():
    with tf.Graph().as_default(), tf.Session() as sess:
        g_count, d_count, ops = _counting_train_ops()
        step = tf.train.get_global_step()
        sess.run(tf.global_variables_initializer())
        train_step = tfgan.get_sequential_train_steps(tfgan.GANTrainSteps(1, 3))
        loss, stop = train_step(sess, ops, step, {})
        assert (loss, stop) == (1 + (1 + 2 + 3), False)
        loss, stop = train_step(sess, ops, step, {"should_stop": tf.greater_equal(step, 2)})
        assert stop and sess.run([g_count, d_count, step]) == [2, 6, 2]


def test_small_gan_on_gaussian_data_trains():
    """Generated 2-D points move from near 0 to the data's mean (3, -2)."""

    def gen(z):
        return tf.layers.dense(tf.layers.dense(z, 16, tf.nn.relu), 2)

    def disc(x, _):
        return tf.layers.dense(tf.layers.dense(x, 16, tf.nn.relu), 1)

    with tf.Graph().as_default():
        tf.set_random_seed(1)
        real = tf.random_normal([64, 2], mean=[3.0, -2.0], stddev=0.3)
        model = tfgan.gan_model(gen, disc, real, tf.random_normal([64, 4]))
        loss = tfgan.gan_loss(model, tfgan.losses.modified_generator_loss,
                              tfgan.losses.modified_discriminator_loss)
        ops = tfgan.gan_train_ops(model, loss, tf.train.AdamOptimizer(1e-2, 0.5),
                                  tf.train.AdamOptimizer(1e-2, 0.5))
        mean = tf.reduce_mean(model.generated_data, 0)
        seen = []

        class Record(tf.train.SessionRunHook):
            def after_create_session(self, session, coord):
                seen.append(session.run(mean))

            def end(self, session):
                seen.append(session.run(mean))

        tfgan.gan_train(ops, None, hooks=[tf.train.StopAtStepHook(num_steps=400), Record()],
                        save_checkpoint_secs=None, save_summaries_steps=None)
    target = np.array([3.0, -2.0])
    start, end = (np.linalg.norm(m - target) for m in seen)
    assert start > 2.0 and end < 0.3 * start, seen  # GAN training oscillates around it


def test_cyclegan_loss_and_train_ops():
    with tf.Graph().as_default(), tf.Session() as sess:
        model = tfgan.cyclegan_model(_gen, _disc, tf.ones([4, 2]), tf.zeros([4, 2]))
        loss = tfgan.cyclegan_loss(model, cycle_consistency_loss_weight=2.0)
        ops = tfgan.gan_train_ops(model, loss, tf.train.GradientDescentOptimizer(0.1),
                                  tf.train.GradientDescentOptimizer(0.1))
        assert len(ops.generator_train_op) == 2 and len(ops.discriminator_train_op) == 2
        sess.run(tf.global_variables_initializer())
        lsq = tfgan.losses.least_squares_generator_loss(model.model_x2y,
                                                        add_summaries=False)
        cycle = tfgan.losses.cycle_consistency_loss(model)
        got, want_lsq, want_cycle = sess.run([loss.loss_x2y.generator_loss, lsq, cycle])
        np.testing.assert_allclose(got, want_lsq + 2.0 * want_cycle, rtol=1e-5)
        sess.run([ops.generator_train_op, ops.discriminator_train_op, ops.global_step_inc_op])
        with pytest.raises(ValueError, match="must be a `CycleGANModel`"):
            tfgan.cyclegan_loss(model.model_x2y)
