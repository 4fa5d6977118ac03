"""`tf.contrib.gan` (TF-GAN as in TF 1.15): the model tuples (contrib/gan/namedtuples.py),
the model and loss builders (train.py: `gan_model`, `infogan_model`, `acgan_model`,
`cyclegan_model`, `stargan_model`, `gan_loss`, `cyclegan_loss`, `stargan_loss`), the train
ops and loops (train_ops.py: `gan_train_ops`, `gan_train`, the train hooks and steps),
and the submodules `losses` (with `losses.wargs`), `features`, `eval` and `estimator`
(`GANEstimator`). `import tensorflow.contrib.gan as tfgan` works with the alias
(scripts/tf1_programs/alias), and so do TF1's module paths under
`tensorflow.contrib.gan.python` (`...python.losses.python.losses_impl`, ...)."""

import sys as _sys

from tensorflux.contrib import tf1_paths as _tf1_paths
from tensorflux.contrib.gan import estimator, eval, features, losses, namedtuples  # noqa: A004,F401
from tensorflux.contrib.gan import losses_wargs as _wargs
from tensorflux.contrib.gan.namedtuples import *  # noqa: F401,F403
from tensorflux.contrib.gan.train import *  # noqa: F401,F403
from tensorflux.contrib.gan.train_ops import *  # noqa: F401,F403

_HERE = _sys.modules[__name__]
python = _tf1_paths.register(__name__, {
    "python.namedtuples": namedtuples,
    "python.train": _HERE,
    "python.losses.python.losses_impl": _wargs,
    "python.losses.python.losses_wargs": _wargs,
    "python.losses.python.tuple_losses": losses,
    "python.losses.python.tuple_losses_impl": losses,
    **{f"python.features.python.{name}{suffix}": features
       for name in ("clip_weights", "conditioning_utils", "random_tensor_pool",
                    "spectral_normalization", "virtual_batchnorm")
       for suffix in ("", "_impl")},
    **{f"python.eval.python.{name}{suffix}": eval
       for name in ("classifier_metrics", "eval_utils", "sliced_wasserstein", "summaries")
       for suffix in ("", "_impl")},
    "python.estimator.python.gan_estimator": estimator,
    "python.estimator.python.gan_estimator_impl": estimator,
})
