"""One TensorFlow run shared by the candidate-sampler op tests
(tests/ops/test_candidate_sampling_ops.py) and the sampled-loss tests
(tests/nn/test_sampled_losses.py): importing TensorFlow is most of an oracle call's time.

`tensorflow_results()` returns {"samplers": ..., "losses": ...}; it runs TensorFlow once per
test session and skips the calling test when the oracle venv is absent.
"""

from __future__ import annotations

import functools

from tests import oracle

ALL_OPS = ["UniformCandidateSampler", "LogUniformCandidateSampler",
           "LearnedUnigramCandidateSampler", "ThreadUnsafeUnigramCandidateSampler",
           "FixedUnigramCandidateSampler", "AllCandidateSampler", "ComputeAccidentalHits"]
UNIGRAMS = [3.0, 0.0, 1.0, 7.0, 2.5, 0.5, 9.0]
DISTORTION = 0.75
# (true_classes, sampled_candidates, num_true) of the accidental-hits comparisons
HITS = [([[1, 2], [3, 3], [2, 9]], [2, 3, 2, 5], 2), ([[4], [4]], [0, 1], 1),
        ([[0, 1, 2]], [2, 2, 1, 0, 1], 3), ([[7, 7]], [7], 2)]
VOCAB = "the,9\nof,4.5\nand,2\ncat,1\nsat,0.25\n"
DRAWS = 20000
UNIQUE_RUNS = 400

_SAMPLERS = f"""
from google.protobuf import json_format
from tensorflow.python.framework import op_def_registry
import tempfile
out = {{}}
out["opdefs"] = {{}}
for name in {ALL_OPS!r}:
    d = json_format.MessageToDict(op_def_registry.get(name))
    d.pop("summary", None); d.pop("description", None)
    out["opdefs"][name] = json.dumps(d, sort_keys=True)
vocab = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
vocab.write({VOCAB!r}); vocab.close()
with tf.Session() as s:
    big = tf.constant([[3], [77], [99999], [0]], tf.int64)
    c, t, e = s.run(tf.nn.log_uniform_candidate_sampler(big, 1, 64, False, 100000, seed=1))
    out["log_uniform_counts"] = [c, t, e]
    allc = tf.constant(np.arange(50).reshape(1, 50), tf.int64)
    out["log_uniform_unique"] = s.run(tf.nn.log_uniform_candidate_sampler(
        allc, 50, 10, True, 50, seed=2))
    out["uniform_unique"] = s.run(tf.nn.uniform_candidate_sampler(allc, 50, 40, True, 50,
                                                                   seed=3))
    out["uniform_counts"] = s.run(tf.nn.uniform_candidate_sampler([[4, 1]], 2, 3, False, 7))
    learned = tf.nn.learned_unigram_candidate_sampler([[0, 2], [2, 2]], 2, 3, False, 5, seed=4)
    out["learned"] = [s.run(learned)[1] for _ in range(4)]
    r7 = tf.constant(np.arange(4).reshape(1, 4), tf.int64)
    out["fixed_sharded"] = s.run(tf.nn.fixed_unigram_candidate_sampler(
        r7, 4, 2, False, 4, unigrams=[1., 2., 3., 4., 5., 6., 7., 8., 9.], distortion=0.5,
        num_reserved_ids=2, num_shards=3, shard=1))[1]
    r5 = tf.constant(np.arange(7).reshape(1, 7), tf.int64)
    out["fixed_vocab"] = s.run(tf.nn.fixed_unigram_candidate_sampler(
        r5, 7, 3, False, 7, vocab_file=vocab.name, num_reserved_ids=2, distortion=0.8))[1]
    hits = []
    for true, sampled, num_true in {HITS!r}:
        hits.append(s.run(tf.nn.compute_accidental_hits(
            tf.constant(true, tf.int64), tf.constant(sampled, tf.int64), num_true)))
    out["hits"] = hits
    freq = {{}}
    one = tf.constant([[0]], tf.int64)
    for name, op in [
            ("uniform", tf.nn.uniform_candidate_sampler(one, 1, {DRAWS}, False, 30, seed=5)),
            ("log_uniform",
             tf.nn.log_uniform_candidate_sampler(one, 1, {DRAWS}, False, 30, seed=5)),
            ("fixed_unigram", tf.nn.fixed_unigram_candidate_sampler(
                one, 1, {DRAWS}, False, 7, distortion={DISTORTION}, unigrams={UNIGRAMS},
                seed=5))]:
        freq[name] = np.bincount(s.run(op)[0], minlength=30)
    out["freq"] = freq
    uniq = tf.nn.log_uniform_candidate_sampler(one, 1, 5, True, 30, seed=6)
    inc = np.zeros(30, np.int64); counts = []
    for _ in range({UNIQUE_RUNS}):
        c, t, e = s.run(uniq)
        inc[c] += 1
        counts.append(float(t[0, 0]))
    out["unique_inclusion"] = inc
    out["unique_class0_counts"] = counts
    try:
        s.run(tf.nn.uniform_candidate_sampler(one, 1, 31, True, 30))
    except tf.errors.InvalidArgumentError as err:
        out["too_small"] = err.message.splitlines()[-2].strip()
"""

# (name, loss function, num_true, weight shards, partition strategy, remove_accidental_hits)
LOSS_CASES = [
    ("softmax_hits", "sampled_softmax_loss", 1, 1, "mod", True),
    ("softmax_two_true_mod3", "sampled_softmax_loss", 2, 3, "mod", False),
    ("softmax_two_true_div2_hits", "sampled_softmax_loss", 2, 2, "div", True),
    ("nce", "nce_loss", 1, 1, "mod", False),
    ("nce_two_true_div2_hits", "nce_loss", 2, 2, "div", True),
]

# One TF1 program, run by both frameworks: each case's losses and the gradients of their
# sum with respect to the weight shards, the biases and the inputs (made dense), with fixed
# `sampled_values` (the same candidates and expected counts in both).
LOSS_PROGRAM = f"""
def dense(value, shape):
    if hasattr(value, "indices"):
        out = np.zeros(shape, np.asarray(value.values).dtype)
        np.add.at(out, np.asarray(value.indices), np.asarray(value.values))
        return out
    return np.asarray(value)

def shards_of(w, n, strategy):
    return [w[k::n] for k in range(n)] if strategy == "mod" else np.array_split(w, n)

rng = np.random.RandomState(0)
result = {{}}
for name, loss_name, num_true, n_shards, strategy, remove in {LOSS_CASES!r}:
    x = rng.normal(size=(4, 5)).astype(np.float32)
    w = (0.5 * rng.normal(size=(10, 5))).astype(np.float32)
    b = rng.normal(size=10).astype(np.float32)
    labels = rng.randint(0, 10, size=(4, num_true)).astype(np.int64)
    sampled = np.array([labels[0, 0], 7, 3, 7, labels[2, -1], 0], np.int64)
    true_count = rng.uniform(0.1, 1.5, size=(4, num_true)).astype(np.float32)
    sampled_count = rng.uniform(0.1, 1.5, size=6).astype(np.float32)
    shards = shards_of(w, n_shards, strategy)
    with tf.Graph().as_default():
        ws = [tf.constant(s) for s in shards]
        bias, inputs = tf.constant(b), tf.constant(x)
        loss = getattr(tf.nn, loss_name)(
            weights=ws if n_shards > 1 else ws[0], biases=bias, labels=tf.constant(labels),
            inputs=inputs, num_sampled=6, num_classes=10, num_true=num_true,
            sampled_values=(tf.constant(sampled), tf.constant(true_count),
                            tf.constant(sampled_count)),
            remove_accidental_hits=remove, partition_strategy=strategy)
        grads = tf.gradients(loss, ws + [bias, inputs])
        with tf.Session() as sess:
            values = sess.run([loss] + grads)
    shapes = [s.shape for s in shards] + [b.shape, x.shape]
    result[name] = dict(inputs=[x, w, b, labels, sampled, true_count, sampled_count],
                        loss=values[0],
                        grads=[dense(g, s) for g, s in zip(values[1:], shapes)])
"""


# One TF1 program, run by both frameworks: every sampler, with and without `unique`, over
# ranges that are and are not powers of two, three runs in one Session; the values must be
# equal bit for bit (the same Philox stream, read as TF's samplers read it).
EXACT_PROGRAM = """
exact = {}
with tf.Graph().as_default():
    tf.set_random_seed(7)
    tc = tf.constant([[3, 1], [77, 5], [999, 0], [0, 4]], tf.int64)
    ops = {}
    weights = [float((i * 7919) % 101) + 0.5 for i in range(1000)]
    for unique in (False, True):
        u = "_unique" if unique else ""
        ops["log_uniform" + u] = tf.nn.log_uniform_candidate_sampler(tc, 2, 64, unique, 1000)
        ops["uniform" + u] = tf.nn.uniform_candidate_sampler(tc, 2, 50, unique, 1000)
        ops["uniform_pow2" + u] = tf.nn.uniform_candidate_sampler(tc, 2, 20, unique, 1024,
                                                                  seed=5)
        ops["learned" + u] = tf.nn.learned_unigram_candidate_sampler(tc, 2, 30, unique, 1000)
        ops["fixed" + u] = tf.nn.fixed_unigram_candidate_sampler(
            tc, 2, 40, unique, 1000, unigrams=weights, distortion=0.75)
        ops["fixed_reserved" + u] = tf.nn.fixed_unigram_candidate_sampler(
            tf.constant([[1, 2]], tf.int64), 2, 5, unique, 13,
            unigrams=[3.0, 0.0, 1.0, 7.0, 2.5, 0.5, 9.0, 4.0, 4.0, 1.0], num_reserved_ids=3,
            distortion=0.5)
    big = tf.constant([[3], [77], [99999], [0]], tf.int64)
    ops["log_uniform_100k"] = tf.nn.log_uniform_candidate_sampler(big, 1, 64, True, 100000,
                                                                  seed=1)
    with tf.Session() as sess:
        for step in range(3):
            for key, value in sess.run(ops).items():
                exact[f"{key}/{step}"] = [np.asarray(v).tolist() for v in value]
"""


@functools.lru_cache(maxsize=1)
def _run() -> dict:
    return oracle.run_tf(_SAMPLERS + "samplers_ = out\n" + LOSS_PROGRAM + EXACT_PROGRAM +
                         "result = dict(samplers=samplers_, losses=result, exact=exact)\n",
                         timeout=180)


def tensorflow_results() -> dict:
    """{"samplers": the sampler statistics, "losses": LOSS_PROGRAM's result, "exact":
    EXACT_PROGRAM's} from TensorFlow.

    Skips the calling test when the oracle venv is absent.
    """
    if not oracle.available():
        oracle.run_tf("result = None")  # skips
    return _run()
