"""CPU kernels of CTCLoss, CTCGreedyDecoder and CTCBeamSearchDecoder (ops/ctc_ops.py).

CTCLoss runs the forward-backward recursions of Graves et al. (2006) in log space over the
whole batch at once: each label sequence l becomes l' = (blank, l1, blank, l2, ..., blank),
padded to the longest one, and one Python loop over time updates every (batch, state) pair.

  alpha[t, s] = y[t, l'_s] + logsumexp(alpha[t-1, s], alpha[t-1, s-1], alpha[t-1, s-2])
  beta[t, s]  = logsumexp over the same moves forwards of beta[t+1, s'] + y[t+1, l'_s']

with the s-2 move (skipping a blank) allowed only into a label different from the one two
states back, and, without `ctc_merge_repeated`, no stay on a label state. alpha includes
the step's emission and beta does not, so alpha + beta at any t is the log of the joint
probability of the sequence and the state; the loss is -log p(l | x) and the gradient with
respect to the logits is softmax(x) minus the posterior of each class. A sequence with no
valid path has infinite loss and gradient softmax(x), as in TensorFlow.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._nn_common import _invalid
from tensorflux.kernels.registry import kernel_factory

_NEG_INF = -np.inf


def _log_softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    shifted = x - m
    with np.errstate(divide="ignore"):
        return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def _logaddexp(*terms):
    out = terms[0]
    for t in terms[1:]:
        out = np.logaddexp(out, t)
    return out


def _check_inputs(x, idx, vals, seq):
    if x.ndim != 3:
        raise _invalid("inputs is not a 3-Tensor")
    if seq.ndim != 1:
        raise _invalid("sequence_length is not a vector")
    if idx.ndim != 2 or idx.shape[1] != 2:
        raise _invalid("labels_indices is not a matrix with 2 columns")
    if vals.ndim != 1:
        raise _invalid("labels_values is not a vector")
    max_time, batch, classes = x.shape
    if batch != seq.shape[0]:
        raise _invalid("len(sequence_length) != batch_size.  len(sequence_length):  "
                       f"{seq.shape[0]} batch_size: {batch}")
    if idx.shape[0] != vals.shape[0]:
        raise _invalid("labels_indices and labels_values must contain the same number of "
                       f"rows, but saw shapes: {list(idx.shape)} vs. {list(vals.shape)}")
    if batch == 0:
        raise _invalid("batch_size must not be 0")
    if classes == 0:
        raise _invalid("num_classes cannot be 0.")
    for b, n in enumerate(seq):
        if n > max_time:
            raise _invalid(f"sequence_length({b}) <= {max_time}")
        if n < 0:
            raise _invalid(f"seq_len({b}) < 0")


def _group_labels(idx, vals, batch):
    """The label list of each batch entry from the (ordered, unique) sparse indices."""
    bound = [batch, int(idx[:, 1].max()) + 1 if len(idx) else 0]
    for i, row in enumerate(idx):
        if not (0 <= row[0] < bound[0] and 0 <= row[1] < bound[1]):
            raise _invalid(f"label SparseTensor is not valid: indices[{i}] = "
                           f"[{row[0]},{row[1]}] is out of bounds: need 0 <= index < "
                           f"[{bound[0]},{bound[1]}]")
        if i and tuple(row) <= tuple(idx[i - 1]):
            word = "repeated" if tuple(row) == tuple(idx[i - 1]) else "out of order"
            raise _invalid(f"label SparseTensor is not valid: indices[{i}] = "
                           f"[{row[0]},{row[1]}] is {word}")
    groups = [[] for _ in range(batch)]
    for (b, _), v in zip(idx, vals, strict=True):
        groups[b].append(int(v))
    return groups


def _prepare_labels(labels, classes, seq, collapse, ignore_longer):
    """Per batch entry: its label list (repeats collapsed, ended by the first label at or
    above the blank), or None when it is too long for its input and that is ignored."""
    out = []
    for b, label in enumerate(labels):
        if not label:
            raise _invalid(f"Labels length is zero in batch {b}")
        kept, finished = [], False
        for i, v in enumerate(label):
            if i and collapse and v == label[i - 1]:
                continue
            if v >= classes - 1:
                finished = True
            elif finished:
                raise _invalid("Saw a non-null label (index >= num_classes - 1) following a "
                               f"null label, batch: {b} num_classes: {classes} labels: "
                               f"{','.join(map(str, label))}")
            else:
                kept.append(v)
        if any(v < 0 for v in kept):
            raise _invalid(f"All labels must be nonnegative integers, batch: {b} labels: "
                           f"{','.join(map(str, kept))}")
        if len(label) > seq[b]:
            if not ignore_longer:
                raise _invalid(f"Not enough time for target transition sequence (required: "
                               f"{len(label)}, available: {seq[b]}){b}You can turn this error "
                               "into a warning by using the flag "
                               "ignore_longer_outputs_than_inputs")
            kept = None
        out.append(kept)
    return out


def _state_tables(labels, classes, merge):
    """(l' [B, S] class of each state, valid [B, S], stay [B, S], skip [B, S]) masks."""
    batch = len(labels)
    longest = max((len(lab) for lab in labels if lab is not None), default=0)
    states = 2 * longest + 1
    blank = classes - 1
    lprime = np.full((batch, states), blank, dtype=np.int64)
    valid = np.zeros((batch, states), dtype=bool)
    for b, lab in enumerate(labels):
        if lab is None:
            continue
        lprime[b, 1:2 * len(lab):2] = lab
        valid[b, :2 * len(lab) + 1] = True
    is_blank = lprime == blank
    stay = is_blank | merge
    skip = np.zeros_like(valid)
    skip[:, 2:] = ~is_blank[:, 2:] & ~(merge & (lprime[:, 2:] == lprime[:, :-2]))
    return lprime, valid, stay, skip


def _shift(a, k):
    """a moved k states to the right along the last axis, -inf filled."""
    out = np.full_like(a, _NEG_INF)
    out[..., k:] = a[..., :a.shape[-1] - k]
    return out


def _unshift(a, k):
    out = np.full_like(a, _NEG_INF)
    out[..., :a.shape[-1] - k] = a[..., k:]
    return out


def _ctc_forward_backward(logp, lprime, valid, stay, skip, seq):
    """(log p(l|x) [B], log posterior-sum per class [T, B, C]) for the padded tables."""
    max_time, batch, classes = logp.shape
    states = lprime.shape[1]
    rows = np.arange(batch)[:, None]
    emit = logp[:, rows, lprime]  # [T, B, S]
    emit = np.where(valid, emit, _NEG_INF)
    alpha = np.full((max_time, batch, states), _NEG_INF, dtype=logp.dtype)
    if max_time:
        alpha[0, :, :2] = emit[0, :, :2]
    no_stay, no_skip = np.where(stay, 0, _NEG_INF), np.where(skip, 0, _NEG_INF)
    for t in range(1, max_time):
        interrupt.check()
        prev = alpha[t - 1]
        alpha[t] = emit[t] + _logaddexp(prev + no_stay, _shift(prev, 1),
                                        _shift(prev, 2) + no_skip)
    # The end states: the last blank and the last label of each sequence, at its last step.
    last_t = np.maximum(seq - 1, 0)
    ends = valid.sum(axis=1) - 1
    beta = np.full((max_time, batch, states), _NEG_INF, dtype=logp.dtype)
    at_end = np.full((batch, states), _NEG_INF, dtype=logp.dtype)
    at_end[np.arange(batch), ends] = 0
    at_end[np.arange(batch), np.maximum(ends - 1, 0)] = 0
    nxt_stay, nxt_skip = _unshift(no_stay, 0), _unshift(no_skip, 2)
    for t in range(max_time - 1, -1, -1):
        interrupt.check()
        if t < max_time - 1:
            after = beta[t + 1] + emit[t + 1]
            moved = _logaddexp(after + nxt_stay, _unshift(after, 1), _unshift(after, 2) + nxt_skip)
        else:
            moved = np.full((batch, states), _NEG_INF, dtype=logp.dtype)
        beta[t] = np.where((t == last_t)[:, None], at_end, moved)
    joint = alpha + beta
    log_p = np.logaddexp.reduce(joint[0], axis=1)
    per_class = np.full((max_time, batch, classes), _NEG_INF, dtype=logp.dtype)
    for s in range(states):
        cls = lprime[:, s]
        cur = per_class[:, np.arange(batch), cls]
        per_class[:, np.arange(batch), cls] = np.logaddexp(cur, joint[:, :, s])
    return log_p, per_class


def _ctc_loss_values(x, labels, seq, merge):
    """(loss [B], gradient [T, B, C]); entries whose labels are None get zeros."""
    max_time, batch, classes = x.shape
    logp = _log_softmax(x)
    lprime, valid, stay, skip = _state_tables(labels, classes, merge)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_p, per_class = _ctc_forward_backward(logp, lprime, valid, stay, skip, seq)
        posterior = np.exp(per_class - log_p[None, :, None])
    posterior = np.where(np.isfinite(log_p)[None, :, None], posterior, 0)
    grad = np.exp(logp) - posterior
    in_seq = np.arange(max_time)[:, None] < seq[None, :]
    ignored = np.array([lab is None for lab in labels])
    grad = np.where(in_seq[:, :, None] & ~ignored[None, :, None], grad, 0).astype(x.dtype)
    loss = np.where(ignored, 0, -log_p).astype(x.dtype)
    return loss, grad


@kernel_factory("CTCLoss", expensive=True)
def _ctc_loss(node):
    collapse = node.attrs["preprocess_collapse_repeated"]
    merge = node.attrs["ctc_merge_repeated"]
    ignore = node.attrs["ignore_longer_outputs_than_inputs"]

    def compute(ctx, x, idx, vals, seq):
        _check_inputs(x, idx, vals, seq)
        labels = _group_labels(idx, vals, x.shape[1])
        labels = _prepare_labels(labels, x.shape[2], seq.astype(np.int64), collapse, ignore)
        return _ctc_loss_values(x, labels, seq.astype(np.int64), merge)

    return compute


def _check_decoder_inputs(x, seq):
    if x.ndim != 3:
        raise _invalid("inputs is not a 3-Tensor")
    if seq.ndim != 1:
        raise _invalid("sequence_length is not a vector")
    if seq.shape[0] != x.shape[1]:
        raise _invalid(f"len(sequence_length) != batch_size.  len(sequence_length):  "
                       f"{seq.shape[0]} batch_size: {x.shape[1]}")
    for b, n in enumerate(seq):
        if n > x.shape[0]:
            raise _invalid(f"sequence_length({b}) <= {x.shape[0]}")


def _to_sparse(paths):
    """(indices [N, 2], values [N], dense shape [2]) of a list of label lists."""
    idx = [(b, i) for b, p in enumerate(paths) for i in range(len(p))]
    vals = [v for p in paths for v in p]
    width = max((len(p) for p in paths), default=0)
    return (np.array(idx, dtype=np.int64).reshape(-1, 2), np.array(vals, dtype=np.int64),
            np.array([len(paths), width], dtype=np.int64))


@kernel_factory("CTCGreedyDecoder")
def _ctc_greedy_decoder(node):
    merge = node.attrs["merge_repeated"]
    blank_attr = node.attrs["blank_index"]

    def compute(ctx, x, seq):
        _check_decoder_inputs(x, seq)
        max_time, batch, classes = x.shape
        blank = blank_attr + classes if blank_attr < 0 else blank_attr
        if not 0 <= blank < classes:
            raise _invalid(f"blank_index expected to be between {-classes} and {classes} "
                           f"but was {blank_attr}")
        best = np.argmax(x, axis=2) if classes else np.zeros((max_time, batch), np.int64)
        in_seq = np.arange(max_time)[:, None] < seq[None, :]
        top = np.max(x, axis=2) if classes else np.zeros((max_time, batch), x.dtype)
        log_prob = -np.sum(np.where(in_seq, top, 0), axis=0).reshape(batch, 1)
        paths = []
        for b in range(batch):
            cls = best[:seq[b], b]
            keep = cls != blank
            if merge and len(cls):
                keep[1:] &= cls[1:] != cls[:-1]
            paths.append(cls[keep].tolist())
        return (*_to_sparse(paths), log_prob.astype(x.dtype))

    return compute


class _Entry:
    """One prefix in the beam: its last label, parent, children and the (blank, label,
    total) log-probabilities before (`old`) and after (`new`) the current step."""

    __slots__ = ("label", "parent", "children", "old", "new")

    def __init__(self, parent, label):
        self.label, self.parent, self.children = label, parent, None
        self.old = [_NEG_INF] * 3
        self.new = [_NEG_INF] * 3

    def active(self):
        return self.new[2] != _NEG_INF

    def labels(self, merge):
        out, prev, e = [], -1, self
        while e.parent is not None:
            if not merge or e.label != prev:
                out.append(e.label)
            prev, e = e.label, e.parent
        return out[::-1]


_BLANK, _LABEL, _TOTAL = 0, 1, 2


class _BeamSearch:
    """CTC prefix beam search for one sequence, as TensorFlow's decoder steps it: the beam
    keeps the `width` best prefixes by total probability; each step first extends every
    prefix in place (same prefix, by a blank or a repeat of its last label), then offers
    each prefix's children, an entry falling out of the beam losing its probability.
    `merge` only changes how a prefix is read out: repeated labels merged (TF's
    merge_repeated), the search itself is plain CTC."""

    def __init__(self, width, classes, merge):
        self.width, self.classes, self.merge = width, classes, merge
        self.root = _Entry(None, -1)
        self.root.new[_TOTAL] = self.root.new[_BLANK] = 0.0
        self.leaves = [self.root]

    def _bottom(self):
        return min(self.leaves, key=lambda e: e.new[_TOTAL])

    def _candidate(self, p):
        return p[_TOTAL] > _NEG_INF and (len(self.leaves) < self.width
                                         or p[_TOTAL] >= self._bottom().new[_TOTAL])

    def step(self, logp):
        blank = self.classes - 1
        branches = sorted(self.leaves, key=lambda e: -e.new[_TOTAL])
        self.leaves = []
        for e in branches:
            e.old = list(e.new)
        for e in branches:
            if e.parent is not None:
                if e.parent.active():
                    same = e.label == e.parent.label
                    prev = e.parent.old[_BLANK] if same else e.parent.old[_TOTAL]
                    e.new[_LABEL] = np.logaddexp(e.new[_LABEL], prev)
                e.new[_LABEL] += logp[e.label]
            e.new[_BLANK] = e.old[_TOTAL] + logp[blank]
            e.new[_TOTAL] = np.logaddexp(e.new[_BLANK], e.new[_LABEL])
            self.leaves.append(e)
        for e in branches:
            if not self._candidate(e.old):
                continue
            if e.children is None:
                e.children = [_Entry(e, c) for c in range(self.classes - 1)]
            for c in e.children:
                if c.active():
                    continue
                same = c.label == e.label
                prev = e.old[_BLANK] if same else e.old[_TOTAL]
                c.new = [_NEG_INF, logp[c.label] + prev, logp[c.label] + prev]
                if self._candidate(c.new):
                    if len(self.leaves) >= self.width:
                        worst = self._bottom()
                        self.leaves.remove(worst)
                        worst.new = [_NEG_INF] * 3
                    self.leaves.append(c)
                else:
                    c.old = [_NEG_INF] * 3
                    c.new = [_NEG_INF] * 3

    def top_paths(self, n):
        if n > len(self.leaves):
            raise _invalid("Less leaves in the beam search than requested.")
        best = sorted(self.leaves, key=lambda e: -e.new[_TOTAL])[:n]
        return [e.labels(self.merge) for e in best], [e.new[_TOTAL] for e in best]


@kernel_factory("CTCBeamSearchDecoder", expensive=True)
def _ctc_beam_search_decoder(node):
    width, top = node.attrs["beam_width"], node.attrs["top_paths"]
    merge = node.attrs["merge_repeated"]

    def compute(ctx, x, seq):
        _check_decoder_inputs(x, seq)
        if top > width:
            raise _invalid(f"top_paths must be <= beam_width, but top_paths: {top} and "
                           f"beam_width: {width}")
        max_time, batch, classes = x.shape
        logp = _log_softmax(x.astype(np.float64))
        paths = [[None] * batch for _ in range(top)]
        log_prob = np.zeros((batch, top), dtype=x.dtype)
        for b in range(batch):
            search = _BeamSearch(width, classes, merge)
            for t in range(seq[b]):
                interrupt.check()
                search.step(logp[t, b].tolist())
            best, probs = search.top_paths(top)
            for k in range(top):
                paths[k][b] = best[k]
                log_prob[b, k] = probs[k]
        sparse = [_to_sparse(p) for p in paths]
        return tuple([s[0] for s in sparse] + [s[1] for s in sparse] + [s[2] for s in sparse]
                     + [log_prob])

    return compute
