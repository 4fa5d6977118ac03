"""`tf.contrib.opt`: TF 1.15's extra optimizers. LazyAdamOptimizer, NadamOptimizer and
AdaMaxOptimizer (adam_variants.py); decoupled weight decay: AdamWOptimizer,
MomentumWOptimizer, `extend_with_decoupled_weight_decay` (weight_decay_optimizers.py);
AddSign/PowerSign and their sign-decay schedules (sign_optimizers.py); the wrappers
MovingAverageOptimizer and VariableClippingOptimizer (wrappers.py); ScipyOptimizerInterface
(external_optimizer.py)."""

from tensorflux.contrib.opt.adam_variants import (  # noqa: F401
    AdaMaxOptimizer,
    LazyAdamOptimizer,
    NadamOptimizer,
)
from tensorflux.contrib.opt.external_optimizer import (  # noqa: F401
    ExternalOptimizerInterface,
    ScipyOptimizerInterface,
)
from tensorflux.contrib.opt.sign_optimizers import (  # noqa: F401
    AddSignOptimizer,
    PowerSignOptimizer,
    get_cosine_decay_fn,
    get_linear_decay_fn,
    get_restart_decay_fn,
)
from tensorflux.contrib.opt.weight_decay_optimizers import (  # noqa: F401
    AdamWOptimizer,
    DecoupledWeightDecayExtension,
    MomentumWOptimizer,
    extend_with_decoupled_weight_decay,
)
from tensorflux.contrib.opt.wrappers import (  # noqa: F401
    MovingAverageOptimizer,
    VariableClippingOptimizer,
    clip_gradients_by_global_norm,
)
