"""CPU kernels of tensorflux/ops/sdca_ops.py, TensorFlow's SDCA step by step in its
precisions (float32 weights and deltas, double duals and dot products).

One SdcaOptimizer run, for each example in turn (TensorFlow shuffles them with a
nondeterministic seed and runs shards of them on threads at once; here they run in order,
one of the orders TensorFlow may take):
- wx = sum over the example's features of value * shrink(w + num_loss_partitions * delta)
  (and prev_wx with the weights as given), shrink being the L1 proximal step
  sign(w) * max(|w| - l1/l2, 0);
- the loss updater's new dual for (label, weight, dual, wx, |x|^2 / l2);
- every weight the example touches moves by value * (new dual - dual) * weight / l2;
- the state row becomes (new dual, primal loss at prev_wx, dual loss of the old dual,
  weight).
With `adaptive` the examples are drawn with probability proportional to
weight * sqrt(|x|^2 + l2 * smoothness) * |dual + loss'(wx)|, each draw of an example kept
with probability 0.1^(times drawn before), at most num_examples tries, then the examples
not drawn by decreasing probability (TensorFlow's scheme; its draws come from a
nondeterministic seed, these from a fixed one).
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.framework import dtypes, errors
from tensorflux.kernels.cpu.state_ops import _existing, _uninitialized, as_handle
from tensorflux.kernels.registry import kernel, kernel_factory
from tensorflux.lib.hashing import fingerprint128

_F = np.float32
_DOUBLE_MAX = float(np.finfo(np.float64).max)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# ---- the loss updaters -------------------------------------------------------------------


def _binary_label(label: float) -> float:
    if label == 0.0:
        return -1.0
    if label == 1.0:
        return 1.0
    raise _invalid("Only labels of 0.0 or 1.0 are supported right now. Found example with "
                   f"label: {_F(label):g}")


class _Logistic:
    smoothness = 4.0
    convert = staticmethod(_binary_label)

    @staticmethod
    def update(parts, y, weight, dual, wx, norm):
        scale = parts * norm * weight
        x = 0.0
        for _ in range(10):  # Newton's method on a tanh reparametrization
            t = math.tanh(x)
            numerator = -2 * y * x - wx - scale * (0.5 * (1 + t) / y - dual)
            denominator = -2 * y - scale * (1 - t * t) * 0.5 / y
            x -= numerator / denominator
        return 0.5 * (1 + math.tanh(x)) / y

    @staticmethod
    def dual_loss(dual, y, weight):
        ay = dual * y
        log_ay = math.log(ay) if ay > 0 else 0.0
        rest = 1 - ay
        log_rest = math.log(rest) if rest > 0 else 0.0
        return (ay * log_ay + rest * log_rest) * weight

    @staticmethod
    def primal_loss(wx, y, weight):
        ywx = y * wx
        if ywx > 0:
            return math.log1p(math.exp(-ywx)) * weight
        return (math.log1p(math.exp(ywx)) - ywx) * weight

    @staticmethod
    def derivative(wx, y, weight):
        if y * wx > 0:
            term = math.exp(-y * wx) / (1 + math.exp(-y * wx))
        else:
            term = 1 / (1 + math.exp(y * wx))
        return -term * y * weight


class _Squared:
    smoothness = 1.0

    @staticmethod
    def convert(label):
        return label

    @staticmethod
    def update(parts, y, weight, dual, wx, norm):
        return dual + (y - dual - wx) / (1 + parts * norm * weight)

    @staticmethod
    def dual_loss(dual, y, weight):
        return dual * (0.5 * dual - y) * weight

    @staticmethod
    def primal_loss(wx, y, weight):
        error = wx - y
        return error * error * weight * 0.5

    @staticmethod
    def derivative(wx, y, weight):
        return (wx - y) * weight


class _Hinge:
    smoothness = 0.0
    gamma = 0.0
    convert = staticmethod(_binary_label)

    @classmethod
    def update(cls, parts, y, weight, dual, wx, norm):
        candidate = dual + (y - wx - cls.gamma * dual) / (parts * weight * norm + cls.gamma)
        if y * candidate < 0:
            return 0.0
        if y * candidate > 1.0:
            return y
        return candidate

    @classmethod
    def dual_loss(cls, dual, y, weight):
        ya = dual * y
        if ya < 0 or ya > 1.0:
            return _DOUBLE_MAX
        return (-ya + 0.5 * cls.gamma * dual * dual) * weight if cls.gamma else -ya * weight

    @staticmethod
    def primal_loss(wx, y, weight):
        return max(0.0, 1 - y * wx) * weight

    @staticmethod
    def derivative(wx, y, weight):
        return -y * weight if y * wx < 1 else 0.0


class _SmoothHinge(_Hinge):
    smoothness = gamma = 1.0

    @classmethod
    def primal_loss(cls, wx, y, weight):
        ywx = y * wx
        if ywx >= 1:
            return 0.0
        if ywx <= 1 - cls.gamma:
            return (1 - ywx - cls.gamma / 2) * weight
        return (1 - ywx) * (1 - ywx) * weight * 0.5 / cls.gamma

    @classmethod
    def derivative(cls, wx, y, weight):
        if y * wx >= 1:
            return 0.0
        if y * wx <= 1 - cls.gamma:
            return -y
        return (wx - y) / cls.gamma


class _Poisson:
    smoothness = 1.0

    @staticmethod
    def convert(label):
        if label < 0.0:
            raise _invalid("Only non-negative labels can be used with the Poisson log loss. "
                           f"Found example with label: {_F(label):g}")
        return label

    @staticmethod
    def update(parts, y, weight, dual, wx, norm):
        scale = parts * norm * weight
        rest = y - dual
        x = math.log(rest) if rest > 0 else 0.0
        for _ in range(10):  # Newton's method on x = log(y - new dual)
            e = math.exp(x)
            x -= (x - wx - scale * (y - dual - e)) / (1 + scale * e)
        return y - math.exp(x)

    @staticmethod
    def dual_loss(dual, y, weight):
        rest = y - dual
        if rest == 0.0:
            return 0.0
        if rest < 0.0:
            return _DOUBLE_MAX
        return rest * (math.log(rest) - 1) * weight

    @staticmethod
    def primal_loss(wx, y, weight):
        return (math.exp(wx) - wx * y) * weight

    @staticmethod
    def derivative(wx, y, weight):
        return (math.exp(wx) - y) * weight


LOSSES = {"logistic_loss": _Logistic, "squared_loss": _Squared, "hinge_loss": _Hinge,
          "smooth_hinge_loss": _SmoothHinge, "poisson_loss": _Poisson}


# ---- SdcaOptimizer -------------------------------------------------------------------------


class _Regularization:
    """l1/l2 as TensorFlow holds them: float32 attrs, the shrinkage l1/l2 divided in float32
    and kept in double."""

    def __init__(self, l1: float, l2: float):
        self.l2 = float(_F(l2))
        with np.errstate(divide="ignore", invalid="ignore"):
            self.shrinkage = float(_F(l1) / _F(l2))
        self.shrinkage32 = _F(self.shrinkage)

    def shrink(self, w: np.ndarray) -> np.ndarray:
        """The proximal step on doubles: copysign(max(|w| - s, 0), w), 0 when that is 0."""
        return np.where(np.abs(w) - self.shrinkage > 0,
                        np.copysign(np.maximum(np.abs(w) - self.shrinkage, 0.0), w), 0.0)

    def shrink32(self, w: np.ndarray) -> np.ndarray:
        """Its float32 form: sign(w) * max(|w| - s, 0)."""
        return np.sign(w) * np.maximum(np.abs(w) - self.shrinkage32, _F(0))


def _sequential_sum(start: float, terms: np.ndarray) -> float:
    """start + terms[0] + terms[1] + ... in order, in double (as TF's running sums)."""
    if terms.size == 0:
        return start
    return float(np.cumsum(np.concatenate([[start], terms]))[-1])


class _Example:
    __slots__ = ("weight", "label", "sparse", "dense", "norm")

    def __init__(self, weight, label):
        self.weight, self.label = weight, label
        self.sparse = []   # per sparse group: (positions, values as doubles or None)
        self.dense = []    # per dense group: the float32 row
        self.norm = 0.0


def _sparse_runs(example_ids, features, num_examples):
    """Per example, the slice of its features: the run of entries equal to its id starting
    where the previous example's run ended (TensorFlow reads sorted example ids so)."""
    end = 0
    for example in range(num_examples):
        start = end
        while end < example_ids.size and example_ids[end] == example:
            end += 1
        yield example, start, end


def _parse_examples(weights, labels, sparse_groups, dense_groups):
    """The examples with their features; sparse_groups holds per group (example ids,
    feature indices, values or None, feature index -> weight position)."""
    examples = [_Example(float(w), float(y)) for w, y in zip(weights, labels, strict=True)]
    for example_ids, features, values, index_of in sparse_groups:
        for example, start, end in _sparse_runs(example_ids, features, len(examples)):
            found = features[start:end]
            positions = []
            for f in found.tolist():
                if f not in index_of:
                    raise _invalid(f"Found sparse feature indices out of valid range: {f}")
                positions.append(index_of[f])
            vals = None if values is None else values[start:end].astype(np.float64)
            examples[example].sparse.append((np.array(positions, np.int64), vals, found))
    for features in dense_groups:
        for example, ex in enumerate(examples):
            ex.dense.append(features[example])
    for ex in examples:
        total = 0.0
        for _, vals, found in ex.sparse:
            if np.unique(found).size != found.size:
                raise _invalid("Duplicate index in sparse vector.")
            total = _sequential_sum(total, np.ones(found.size) if vals is None else vals * vals)
        for row in ex.dense:
            total += float(np.sum(np.square(row), dtype=_F))
        ex.norm = total
    return examples


class _Model:
    """The weights as given (float32, flattened) and the deltas this run accumulates."""

    def __init__(self, sparse, dense, partitions: int, reg: _Regularization):
        self.sparse = [w.reshape(-1).astype(_F) for w in sparse]
        self.dense = [w.reshape(-1).astype(_F) for w in dense]
        self.sparse_deltas = [np.zeros_like(w) for w in self.sparse]
        self.dense_deltas = [np.zeros_like(w) for w in self.dense]
        self.partitions, self.reg = partitions, reg

    def wx(self, ex: _Example) -> tuple[float, float]:
        """(w.x, prev_w.x): with the current weights (nominal + partitions * delta) and
        with the nominal ones, each weight shrunk."""
        scale, reg = _F(self.partitions), self.reg
        prev = wx = 0.0
        for nominals, deltas, (positions, vals, _) in zip(self.sparse, self.sparse_deltas,
                                                          ex.sparse, strict=True):
            nominal = nominals[positions]
            current = nominal + deltas[positions] * scale
            v = 1.0 if vals is None else vals
            prev = _sequential_sum(prev, v * reg.shrink(nominal.astype(np.float64)))
            wx = _sequential_sum(wx, v * reg.shrink(current.astype(np.float64)))
        for nominals, deltas, row in zip(self.dense, self.dense_deltas, ex.dense, strict=True):
            current = nominals + deltas * scale
            prev += float(np.sum(row * reg.shrink32(nominals), dtype=_F))
            wx += float(np.sum(row * reg.shrink32(current), dtype=_F))
        return wx, prev

    def update(self, ex: _Example, delta: float) -> None:
        """Every weight the example touches moves by its value times `delta`."""
        for deltas, (positions, vals, _) in zip(self.sparse_deltas, ex.sparse, strict=True):
            v = 1.0 if vals is None else vals
            deltas[positions] = (deltas[positions].astype(np.float64) + v * delta).astype(_F)
        for j, row in enumerate(ex.dense):
            self.dense_deltas[j] = self.dense_deltas[j] + row * _F(delta)


def _adaptive_order(examples, model, state, loss, reg) -> list[int]:
    """Importance-sampled example order (see the module docstring)."""
    n = len(examples)
    probs = np.zeros(n)
    for i, ex in enumerate(examples):
        try:
            label = loss.convert(ex.label)
        except errors.InvalidArgumentError:
            label = ex.label  # TensorFlow samples with the label unconverted
        kappa = float(state[i, 0]) + loss.derivative(model.wx(ex)[0], label, 1.0)
        probs[i] = float(_F(ex.weight * math.sqrt(ex.norm + reg.l2 * loss.smoothness)
                            * abs(kappa)))
    total = probs.sum()
    if not np.isfinite(total) or total <= 0:
        return list(range(n))
    rng = np.random.default_rng(0)
    counts = np.zeros(n, np.int64)
    order: list[int] = []
    retries = 0
    while len(order) < n and retries < n:
        picked = int(rng.choice(n, p=probs / total))
        if rng.random() > 0.1 ** counts[picked]:
            retries += 1
            continue
        counts[picked] += 1
        order.append(picked)
    unseen = sorted((i for i in range(n) if counts[i] == 0), key=lambda i: -probs[i])
    return order + unseen[:n - len(order)]


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _sparse_groups(ex_ids, feature_ids, values, index_lists):
    groups = []
    for i, (examples, features, indices) in enumerate(zip(ex_ids, feature_ids, index_lists,
                                                          strict=True)):
        examples, features = examples.reshape(-1), features.reshape(-1)
        if examples.size != features.size:
            raise _invalid(f"Found mismatched example_indices and feature_indices "
                           f"[{' '.join(map(str, examples[:10].tolist()))}] vs "
                           f"[{' '.join(map(str, features[:10].tolist()))}]")
        vals = values[i].reshape(-1) if i < len(values) else None
        if vals is not None and vals.size != features.size:
            raise _invalid(f"sparse_feature_values[{i}] has {vals.size} values for "
                           f"{features.size} feature indices")
        index_of = {int(f): k for k, f in enumerate(indices.reshape(-1).tolist())}
        groups.append((examples, features, vals, index_of))
    return groups


def _checked_inputs(n_dense, dense, dense_weights, weights, labels, state):
    n = weights.size
    if labels.size != n:
        raise _invalid(f"Expected {n} example labels but got {labels.size}")
    for i, (features, w) in enumerate(zip(dense, dense_weights, strict=True)):
        if features.ndim != 2:
            raise _invalid(f"Dense features at index {i} must be rank 2 but is rank "
                           f"{features.ndim}")
        if features.shape[1] > w.size:
            raise _invalid(f"More dense features than we have parameters for: "
                           f"{features.shape[1]}")
        if features.shape[1] != w.size or features.shape[0] != n:
            raise _invalid(f"Dense features at index {i} must be [{n}, {w.size}], got "
                           f"{_shape_str(features.shape)}")
    if state.ndim != 2:
        raise _invalid(f"example_state_data must be rank 2 but is rank {state.ndim}")
    if state.shape != (n, 4):
        raise _invalid(f"Expected shape [{n},4] for example_state_data, got "
                       f"{_shape_str(state.shape)}")


@kernel_factory("SdcaOptimizer", "SdcaOptimizerV2", expensive=True)
def _sdca_optimizer(node):
    a = node.attrs
    loss_type = a["loss_type"].decode() if isinstance(a["loss_type"], bytes) else a["loss_type"]
    loss = LOSSES[loss_type]
    adaptive = a["adaptative"] if "adaptative" in a else a["adaptive"]
    n_sparse, n_values = a["num_sparse_features"], a["num_sparse_features_with_values"]
    n_dense, partitions = a["num_dense_features"], a["num_loss_partitions"]
    reg = _Regularization(a["l1"], a["l2"])
    sizes = [n_sparse, n_sparse, n_values, n_dense, 1, 1, n_sparse, n_sparse, n_dense, 1]
    bounds = np.cumsum([0] + sizes).tolist()

    def compute(ctx, *args):
        if n_sparse + n_dense == 0:
            raise _invalid("Requires at least one feature to train.")
        (ex_ids, feature_ids, values, dense, (weights,), (labels,), indices, sparse_w,
         dense_w, (state,)) = [args[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        weights, labels = weights.reshape(-1), labels.reshape(-1)
        groups = _sparse_groups(ex_ids, feature_ids, values, indices)
        _checked_inputs(n_dense, dense, dense_w, weights, labels, state)
        examples = _parse_examples(weights, labels, groups, list(dense))
        model = _Model(sparse_w, dense_w, partitions, reg)
        state = state.astype(_F, copy=True)
        order = _adaptive_order(examples, model, state, loss, reg) if adaptive \
            else range(len(examples))
        for i in order:
            ex = examples[i]
            dual = float(state[i, 0])
            label = loss.convert(ex.label)
            wx, prev = model.wx(ex)
            new_dual = loss.update(partitions, label, ex.weight, dual, wx, ex.norm / reg.l2)
            model.update(ex, (new_dual - dual) * ex.weight / reg.l2)
            state[i] = (new_dual, loss.primal_loss(prev, label, ex.weight),
                        loss.dual_loss(dual, label, ex.weight), ex.weight)
        return (state,
                *[d.reshape(w.shape) for d, w in zip(model.sparse_deltas, sparse_w,
                                                     strict=True)],
                *[d.reshape(w.shape) for d, w in zip(model.dense_deltas, dense_w,
                                                     strict=True)])

    return compute


# ---- SdcaShrinkL1, SdcaFprint ----------------------------------------------------------------


@kernel_factory("SdcaShrinkL1")
def _sdca_shrink_l1(node):
    reg = _Regularization(node.attrs["l1"], node.attrs["l2"])

    def compute(ctx, *handles):
        for h in handles:
            handle = as_handle(h)
            var = _existing(ctx, handle, dtypes.float32, "update")
            with var.lock:
                if var.value is None:
                    raise _uninitialized(ctx, handle)
                var.value = reg.shrink32(np.asarray(var.value, _F)).astype(_F)

    return compute


@kernel("SdcaFprint")
def _sdca_fprint(ctx, strings):
    if strings.ndim != 1:
        raise _invalid(f"Input must be a vector, got shape {_shape_str(strings.shape)}")
    out = np.empty((strings.size, 2), np.uint64)
    for i, s in enumerate(strings.tolist()):
        low, high = fingerprint128(s if isinstance(s, bytes) else str(s).encode())
        out[i] = (low if low >= 2 else (low - 2) % (1 << 64), high)
    return out.view(np.int64)
