"""Sweep of issue 21's "every kernel is interruptible or bounded": for every CPU kernel
family (kernels/cpu/<family>.py), huge-but-allowed cases run under a 100 ms deadline.

Each case is a graph whose large input is fed (so only the kernel's own work is timed) or
built from a small input by the kernel itself. A case is

  stops      DeadlineExceededError within 2 s of wall or CPU time (the kernel checks its
             step between blocks, or is abandoned);
  bounded    it returned its value within 2 s: it streams once over bytes some earlier
             kernel allocated (or the feed), under the resource guard;
  SLOW       it took 2 s or more: neither.

Families without a case say why in NO_CASE. Every family runs in a subprocess of its own
(memory returned, a runaway killed after --limit seconds).

    PYTHONPATH=$PWD python scripts/interrupt_sweep.py [--family NAME ...] [--limit 120]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

MIB = 1 << 20
BOUND_S = 2.0

NO_CASE = {
    "control_flow_ops": "Switch/Merge/Enter/Exit pass values on; a loop checks the step every "
                        "256 iterations (runtime/compiled_loops.py, the executors)",
    "runtime_ops": "_Arg/_Send/_Recv pass values on; _Recv waits on the step's events",
    "data_flow_ops": "queues, barriers and accumulators wait on the step's events; "
                     "enqueue/dequeue copy one element or batch",
    "lookup_ops": "one vectorized dict lookup per call; tables bounded by what was inserted",
    "io_ops": "one read or write of a file the user named (the system call cannot be cut)",
    "save_restore_ops": "one read or write per tensor (I/O; a half-written checkpoint is "
                        "never renamed into place)",
    "ref_variable_ops": "in-place variable updates (Assign*, Scatter*, Apply*) stay whole on "
                        "purpose: half an update would corrupt the variable",
    "state_ops": "in-place variable updates stay whole on purpose (see ref_variable_ops)",
    "training_ops": "the optimizers' in-place updates stay whole on purpose",
    "tensor_array_ops": "reads, writes and splits of elements; concat/stack copy once",
    "summary_ops": "one pass over the summarized tensor (histograms sort it once)",
    "image_webp_ops": "one decode of an image the guard bounds",
    "audio_ops": "one encode/decode pass (NumPy) over the samples",
    "constant_op": "see test_a_huge_splat_const_is_expanded_in_blocks_that_check_the_step",
    "script_ops": "user Python runs to its end (as in TensorFlow), then the step ends with "
                  "DeadlineExceededError/CancelledError (tests/kernels/test_interrupt_kernels.py)",
    "dataset_ops": "iterators run dataset functions as steps of their own (closed with the "
                   "session); GetNext yields one element or batch",
}


def _ph(feed, value, dtype=None):
    import tensorflux as tf

    value = np.asarray(value)
    t = tf.placeholder(tf.as_dtype(dtype or value.dtype), value.shape)
    feed[t] = value
    return t


def _floats(n, dtype=np.float32):
    return np.random.default_rng(0).standard_normal(n).astype(dtype)


class _Lazy:
    """An input array made when a case first runs (the table itself allocates nothing)."""

    def __init__(self, make):
        self.make, self.value = make, None

    def __call__(self):
        if self.value is None:
            self.value = self.make()
        return self.value


def _cases():  # family -> () -> [(label, builder() -> (fetch, feed))] (arrays made lazily)
    import tensorflux as tf

    lazy = _Lazy

    def fed(fn, *values):
        def build():
            feed = {}
            return fn(*(_ph(feed, v() if isinstance(v, _Lazy) else v) for v in values)), feed
        return build

    def small(fn):
        return lambda: (fn(), {})

    def shape(*dims):
        return tf.placeholder_with_default(np.array(dims, np.int32), [len(dims)])

    def n(v):
        return tf.placeholder_with_default(v, [])

    big = lazy(lambda: _floats(128 * MIB // 4))  # 128 MiB
    big2d = lazy(lambda: big().reshape(8192, -1))
    img = lazy(lambda: _floats(1 * 1024 * 1024 * 32).reshape(1, 1024, 1024, 32))
    words = lazy(lambda: np.array([b"Hello, World 12"] * 2_000_000, object))
    nums = lazy(lambda: np.array([b"12.5"] * 2_000_000, object))
    big32m = lazy(lambda: big()[:32 * MIB])
    return {
        "array_ext_ops": lambda: [
            ("ExtractImagePatches 1024^2x3 k8", fed(lambda x: tf.image.extract_patches(
                x, [1, 8, 8, 1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME"),
                lazy(lambda: img()[..., :3]))),
            ("ReverseSequence 128MiB", fed(lambda x: tf.reverse_sequence(
                x, np.full(8192, 100, np.int64), 1, 0), big2d)),
            ("SpaceToDepth 1024^2x32", fed(lambda x: tf.nn.space_to_depth(x, 4), img)),
            ("UniqueWithCounts 32M", fed(lambda x: tf.unique_with_counts(x)[2],
                                         (np.arange(32 * MIB) % 1000).astype(np.int32))),
            ("ListDiff 8M", fed(lambda x, y: tf.setdiff1d(x, y)[0],
                                np.arange(8 * MIB, dtype=np.int32),
                                np.arange(0, 8 * MIB, 2, dtype=np.int32))),
        ],
        "array_ops": lambda: [
            ("Fill 2GiB", small(lambda: tf.fill(shape(1 << 29), 1.0))),
            ("OnesLike 128MiB", fed(tf.ones_like, big)),
            ("Transpose 128MiB (+copy)", fed(lambda x: tf.transpose(x) + 0, big2d)),
        ],
        "batch_norm_ops": lambda: [
            ("FusedBatchNorm 1024^2x32", fed(lambda x: tf.nn.fused_batch_norm(
                x, tf.ones([32]), tf.zeros([32]))[0], img)),
        ],
        "candidate_sampling_ops": lambda: [
            ("UniformCandidateSampler 2^26", small(lambda: tf.nn.uniform_candidate_sampler(
                tf.zeros([1, 1], tf.int64), 1, 1 << 26, False, 1000)[0])),
        ],
        "comparison_ops": lambda: [
            ("Greater 128MiB", fed(lambda x: tf.greater(x, 0.0), big)),
            ("Where 128M bools", fed(tf.where, lazy(lambda: big() > 0))),
        ],
        "conv3d_ops": lambda: [
            ("Conv3D 64^3x16", fed(lambda x: tf.nn.conv3d(x, tf.ones([3, 3, 3, 16, 32]),
                                                         [1] * 5, "SAME"),
                                   _floats(64 ** 3 * 16).reshape(1, 64, 64, 64, 16))),
        ],
        "conv_ops": lambda: [
            ("Conv2D 1024^2x32 3x3x64", fed(lambda x: tf.nn.conv2d(
                x, tf.ones([3, 3, 32, 64]), [1, 1, 1, 1], "SAME"), img)),
        ],
        "ctc_ops": lambda: [
            ("CTCGreedyDecoder T=4096 B=256 C=64", fed(lambda x: tf.nn.ctc_greedy_decoder(
                x, np.full(256, 4096, np.int32))[0][0].values,
                _floats(4096 * 256 * 64).reshape(4096, 256, 64))),
        ],
        "depthwise_conv_ops": lambda: [
            ("DepthwiseConv2d 1024^2x32", fed(lambda x: tf.nn.depthwise_conv2d(
                x, tf.ones([5, 5, 32, 2]), [1, 1, 1, 1], "SAME"), img)),
        ],
        "fractional_pool_ops": lambda: [
            ("FractionalMaxPool 1024^2x32", fed(lambda x: tf.nn.fractional_max_pool(
                x, [1, 1.5, 1.5, 1])[0], img)),
        ],
        "gather_ops": lambda: [
            ("OneHot 2^15 x 2^14", small(lambda: tf.one_hot(tf.zeros([1 << 15], tf.int32),
                                                            n(1 << 14)))),
            ("GatherNd 32M rows", fed(lambda i: tf.gather_nd(tf.ones([1000, 4]), i),
                                      np.zeros((32 * MIB, 1), np.int32))),
            ("DynamicStitch 32M", fed(lambda i, v: tf.dynamic_stitch([i], [v]),
                                      np.arange(32 * MIB, dtype=np.int32), big32m)),
        ],
        "image_ops": lambda: [
            ("AdjustHue 1024^2x3 x32", fed(lambda x: tf.image.adjust_hue(x, 0.2),
                                           _floats(32 * 1024 * 1024 * 3).reshape(
                                               32, 1024, 1024, 3))),
            ("EncodePng 4096^2x3", fed(tf.image.encode_png, np.random.default_rng(1).integers(
                0, 255, (4096, 4096, 3), dtype=np.uint8))),
            ("NonMaxSuppression 50k boxes", fed(lambda b, s: tf.image.non_max_suppression(
                b, s, 50_000, 0.5), np.random.default_rng(2).uniform(0, 1, (50_000, 4))
                .astype(np.float32), _floats(50_000))),
            ("ResizeBilinear 512^2x3 -> 6000^2", small(lambda: tf.image.resize_bilinear(
                tf.ones([1, 512, 512, 3]), [6000, 6000])[0, 0, 0])),
        ],
        "joining_ops": lambda: [
            ("Tile 2GiB", small(lambda: tf.tile(tf.ones([1024, 1024]), shape(512, 1)))),
            ("ConcatV2 2x128MiB", fed(lambda x, y: tf.concat([x, y], 0), big, big)),
            ("BroadcastTo 2GiB", small(lambda: tf.broadcast_to(tf.ones([1, 1024]),
                                                               shape(1 << 19, 1024)))),
            ("MirrorPad 128MiB x4", fed(lambda x: tf.pad(x, [[4096, 4096], [2048, 2048]],
                                                         "REFLECT"), big2d)),
        ],
        "linalg_factor_ops": lambda: [
            ("Svd 1500^2", fed(lambda x: tf.svd(x, compute_uv=False),
                               np.eye(1500) * 2)),
        ],
        "linalg_ops": lambda: [
            ("MatrixDiag 16k^2", fed(tf.linalg.diag, _floats(16384))),
            ("MatrixBandPart 128MiB", fed(lambda x: tf.linalg.band_part(x, 3, 3), big2d)),
        ],
        "logging_ops": lambda: [
            ("StringFormat 16M summarize=-1", fed(lambda x: tf.strings.format(
                "{}", x, summarize=-1), _floats(16 * MIB))),
        ],
        "math_ext_ops": lambda: [
            ("LinSpace 2^29", small(lambda: tf.lin_space(0.0, 1.0, n(1 << 29)))),
            ("Bincount 32M", fed(lambda x: tf.math.bincount(x),
                                 (np.arange(32 * MIB) % 1000).astype(np.int32))),
            ("Einsum 1500^2", fed(lambda a: tf.einsum("ij,jk->ik", a, a),
                                  np.ones((1500, 1500), np.float32))),
        ],
        "math_ops": lambda: [
            ("Add 128MiB", fed(lambda x: x + x, big)),
            ("AddN 16 x 128MiB", fed(lambda x: tf.add_n([x] * 16), big)),
            ("Pow 128MiB", fed(lambda x: tf.pow(x, 2.5), big)),
        ],
        "matrix_ops": lambda: [
            ("MatMul 4096^2", fed(lambda a: tf.matmul(a, a), np.ones((4096, 4096), np.float32))),
            ("MatrixInverse 1500^2", fed(tf.linalg.inv, np.eye(1500) * 2)),
        ],
        "misc_ops": lambda: [
            ("ExtractVolumePatches 64^3x8 k4", fed(lambda x: tf.extract_volume_patches(
                x, [1, 4, 4, 4, 1], [1] * 5, "SAME"),
                _floats(64 ** 3 * 8).reshape(1, 64, 64, 64, 8))),
        ],
        "morphology_ops": lambda: [
            ("Dilation2D 1024^2x32 7x7", fed(lambda x: tf.nn.dilation2d(
                x, tf.zeros([7, 7, 32]), [1, 1, 1, 1], [1, 1, 1, 1], "SAME"), img)),
        ],
        "nn_ops": lambda: [
            ("Softmax 128MiB", fed(tf.nn.softmax, big2d)),
            ("LRN 1024^2x32", fed(tf.nn.lrn, img)),
        ],
        "parsing_ops": lambda: [
            ("DecodeCSV 2M records", fed(lambda x: tf.io.decode_csv(x, [[0.0]])[0], nums)),
            ("DecodeRaw 2M", fed(lambda x: tf.io.decode_raw(x, tf.uint8), words)),
            ("ParseExample 500k", lambda: _parse_example_case(tf)),
        ],
        "parsing_seq_ops": lambda: [
            ("ParseSequenceExample 200k", lambda: _parse_sequence_case(tf)),
        ],
        "pooling_ops": lambda: [
            ("MaxPool 1024^2x32 k64", fed(lambda x: tf.nn.max_pool(
                x, [1, 64, 64, 1], [1, 1, 1, 1], "SAME"), img)),
        ],
        "quantization_ops": lambda: [
            ("FakeQuantWithMinMaxArgs 128MiB", fed(tf.quantization.fake_quant_with_min_max_args,
                                                   big)),
            ("QuantizeV2 128MiB", fed(lambda x: tf.quantization.quantize(
                x, -1.0, 1.0, tf.quint8)[0], big)),
        ],
        "random_ext_ops": lambda: [
            ("RandomGamma 2^28", small(lambda: tf.random_gamma(shape(1 << 28), 0.5))),
            ("RandomPoisson 2^28", small(lambda: tf.random_poisson(3.0, shape(1 << 28)))),
        ],
        "random_ops": lambda: [
            ("RandomStandardNormal 2GiB", small(lambda: tf.random_normal(shape(1 << 29)))),
            ("TruncatedNormal 2GiB", small(lambda: tf.truncated_normal(shape(1 << 29)))),
            ("RandomUniformInt 2GiB", small(lambda: tf.random_uniform(
                shape(1 << 29), 0, 10, tf.int32))),
            ("Multinomial 2^27", small(lambda: tf.multinomial(tf.zeros([1, 10]), n(1 << 27)))),
            ("RandomShuffle 32M", fed(tf.random_shuffle, big32m)),
        ],
        "reduction_ops": lambda: [
            ("Sum axis 0 128MiB", fed(lambda x: tf.reduce_sum(x, 0), big2d)),
            ("ArgMax 128MiB", fed(lambda x: tf.argmax(x, 1), big2d)),
        ],
        "rnn_block_ops": lambda: [
            ("BlockLSTM T=200 B=64 H=1024", lambda: _block_lstm_case(tf)),
        ],
        "segment_ops": lambda: [
            ("SegmentSum 32M rows", fed(lambda x, i: tf.math.segment_sum(x, i), big32m,
                                        np.arange(32 * MIB, dtype=np.int32) // 3)),
        ],
        "sequence_ops": lambda: [
            ("Range 2^29", small(lambda: tf.range(n(1 << 29)))),
            ("Cumsum 128MiB", fed(lambda x: tf.cumsum(x, 0), big2d)),
        ],
        "set_ops": lambda: [
            ("DenseToDenseSetOperation 4M", fed(lambda a, b: tf.sets.intersection(a, b).values,
                                                 np.arange(1 << 22, dtype=np.int32).reshape(
                                                     1024, -1),
                                                 np.arange(1 << 22, dtype=np.int32).reshape(
                                                     1024, -1))),
        ],
        "slicing_ops": lambda: [
            ("StridedSliceGrad 2GiB", small(lambda: tf.gradients(tf.ones(
                shape(1 << 29))[::2], [])[:0] or tf.constant(0.0))),
            ("StridedSlice copy 128MiB", fed(lambda x: x[::2] + 0, big)),
        ],
        "sobol_ops": lambda: [
            ("SobolSample 2^24 x 8", small(lambda: tf.math.sobol_sample(8, n(1 << 24)))),
        ],
        "sparse_ext_ops": lambda: [
            ("SparseCross 1M rows", fed(lambda a, b: tf.sparse.cross([a, b]).values,
                                        np.array([[b"a", b"b"]] * (1 << 20), object),
                                        np.array([[b"c", b"d"]] * (1 << 20), object))),
        ],
        "sparse_ops": lambda: [
            ("SparseToDense 2GiB", small(lambda: tf.sparse_to_dense([[0]], shape(1 << 29),
                                                                    1.0))),
            ("SparseSegmentSum 32M", fed(lambda x, i, s: tf.sparse.segment_sum(x, i, s),
                                         lazy(lambda: big2d()[:1024, :4]),
                                         np.arange(32 * MIB, dtype=np.int32) % 1024,
                                         np.arange(32 * MIB, dtype=np.int32) // 16)),
        ],
        "special_math_ops": lambda: [
            ("Igamma 32M", fed(lambda x: tf.math.igamma(x, x), lazy(lambda: np.abs(big32m())))),
            ("Zeta 32M", fed(lambda x: tf.math.zeta(x + 2.0, x + 1.0),
                             lazy(lambda: np.abs(big32m())))),
        ],
        "spectral_nd_ops": lambda: [
            ("FFTND 2^23", fed(lambda x: tf.signal.fftnd(x), np.ones((1 << 12, 1 << 11),
                                                                     np.complex64))),
        ],
        "spectral_ops": lambda: [
            ("FFT 2^23", fed(tf.signal.fft, np.ones(1 << 23, np.complex64))),
        ],
        "stateless_random_ops": lambda: [
            ("StatelessRandomNormal 2^27", small(lambda: tf.random.stateless_normal(
                shape(1 << 27), [1, 2]))),
            ("StatelessTruncatedNormal 2^27", small(lambda: tf.random.stateless_truncated_normal(
                shape(1 << 27), [1, 2]))),
            ("StatelessRandomGamma 2^24", small(lambda: tf.random.stateless_gamma(
                shape(1 << 24), [1, 2], 0.5))),
            ("StatelessRandomPoisson 2^24", small(lambda: tf.random.stateless_poisson(
                shape(1 << 24), [1, 2], 3.0))),
            ("StatelessRandomBinomial 2^24", small(lambda: tf.random.stateless_binomial(
                shape(1 << 24), [1, 2], 50.0, 0.3))),
            ("StatelessParameterizedTruncatedNormal 2^24", small(
                lambda: tf.random.stateless_parameterized_truncated_normal(
                    shape(1 << 24), [1, 2], 0.0, 1.0, -1.0, 1.0))),
            ("StatelessMultinomial 2^26", small(lambda: tf.random.stateless_categorical(
                tf.zeros([1, 10]), n(1 << 26), [1, 2]))),
        ],
        "string_ops": lambda: [
            ("StringLower 2M", fed(tf.strings.lower, words)),
            ("RegexReplace 2M", fed(lambda x: tf.strings.regex_replace(x, "o+", "0"), words)),
            ("StringSplitV2 2M", fed(lambda x: tf.strings.split(x, " ").values, words)),
            ("StringToNumber 2M", fed(tf.strings.to_number, nums)),
            ("AsString 16M", fed(tf.as_string, lazy(lambda: big()[:16 * MIB]))),
            ("StringToHashBucketFast 2M", fed(lambda x: tf.strings.to_hash_bucket_fast(x, 9),
                                              words)),
            ("UnicodeDecode 2M", fed(lambda x: tf.strings.unicode_decode(x, "UTF-8").values,
                                     words)),
            ("ReduceJoin 2M", fed(lambda x: tf.strings.reduce_join(x), words)),
            ("EncodeBase64 2M", fed(tf.io.encode_base64, words)),
        ],
        "string_split_ops": lambda: [
            ("StringNGrams 4M tokens", fed(lambda x: tf.strings.ngrams(x, 3), np.array(
                [b"tok"] * (1 << 22), object))),
        ],
        "tridiagonal_ops": lambda: [
            ("TridiagonalSolve 2^24", fed(lambda d, r: tf.linalg.tridiagonal_solve(d, r),
                lazy(lambda: (np.ones((3, 1 << 24)) * [[1], [4], [1]]).astype(np.float32)),
                lazy(lambda: np.ones((1 << 24, 1), np.float32)))),
        ],
        "unary_ops": lambda: [
            ("Exp 128MiB", fed(tf.exp, big)),
            ("Lgamma 128MiB", fed(tf.math.lgamma, big)),
            ("Digamma 128MiB", fed(tf.math.digamma, big)),
        ],
        "unicode_script_ops": lambda: [
            ("UnicodeScript 32M", fed(tf.strings.unicode_script,
                                      (np.arange(32 * MIB) % 70000).astype(np.int32))),
        ],
    }


def _parse_example_case(tf):
    from tensorflux.protos import example_pb2

    ex = example_pb2.Example()
    ex.features.feature["x"].float_list.value.extend([1.0, 2.0])
    ex.features.feature["s"].bytes_list.value.append(b"abc")
    data = np.array([ex.SerializeToString()] * 500_000, object)
    feed = {}
    x = _ph(feed, data, tf.string)
    out = tf.io.parse_example(x, {"x": tf.io.FixedLenFeature([2], tf.float32),
                                  "s": tf.io.VarLenFeature(tf.string)})
    return out["x"], feed


def _parse_sequence_case(tf):
    from tensorflux.protos import example_pb2

    ex = example_pb2.SequenceExample()
    ex.context.feature["c"].int64_list.value.append(3)
    for _ in range(3):
        ex.feature_lists.feature_list["f"].feature.add().float_list.value.extend([1.0, 2.0])
    data = np.array([ex.SerializeToString()] * 200_000, object)
    feed = {}
    x = _ph(feed, data, tf.string)
    ctx, seqs, _ = tf.io.parse_sequence_example(
        x, context_features={"c": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={"f": tf.io.FixedLenSequenceFeature([2], tf.float32)})
    return seqs["f"], feed


def _block_lstm_case(tf):
    from tensorflux.contrib import rnn_block_cells  # noqa: F401 - registers the op wrappers

    feed = {}
    x = _ph(feed, _floats(200 * 64 * 1024).reshape(200, 64, 1024))
    cell = tf.contrib.rnn.LSTMBlockFusedCell(1024)
    y, _ = cell(x, dtype=tf.float32)
    return [y, tf.global_variables_initializer()], feed


def run_family(family: str, timeout_ms: int) -> list:
    import tensorflux as tf

    rows = []
    for label, build in _cases()[family]():
        g = tf.Graph()
        try:
            with g.as_default():
                fetch, feed = build()
                init = None
                if isinstance(fetch, list):
                    fetch, init = fetch
            with tf.Session(graph=g) as s:
                if init is not None:
                    s.run(init)
                start, start_cpu = time.monotonic(), time.process_time()
                try:
                    s.run(fetch, feed, options=tf.RunOptions(timeout_in_ms=timeout_ms))
                    outcome = "finished"
                except tf.errors.DeadlineExceededError:
                    outcome = "deadline"
                wall = time.monotonic() - start
                cpu = time.process_time() - start_cpu
        except Exception as e:  # noqa: BLE001 - a case that could not run is reported
            rows.append((family, label, f"ERROR {type(e).__name__}: {str(e)[:80]}", 0, 0))
            continue
        quick = wall < BOUND_S or cpu < BOUND_S
        verdict = ("stops" if outcome == "deadline" else "bounded") if quick else "SLOW"
        rows.append((family, label, verdict, round(wall, 2), round(cpu, 2)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", action="append")
    parser.add_argument("--timeout-ms", type=int, default=100)
    parser.add_argument("--limit", type=float, default=120.0)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child: run one family
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_family(args.one, args.timeout_ms)))
        return
    import tensorflux  # noqa: F401 - registers the kernels
    from tensorflux.kernels import registry

    families = sorted({k[0].module.rsplit(".", 1)[-1]
                       for (_, dev), k in registry.registered_kernels().items()
                       if dev == "CPU"})
    cases = _cases()
    for family in args.family or families:
        if family not in cases:
            print(f"{family:24s} {'-':44s} bounded: {NO_CASE.get(family, '(no case)')}",
                  flush=True)
            continue
        try:
            proc = subprocess.run(
                [sys.executable, __file__, "--one", family, "--timeout-ms",
                 str(args.timeout_ms)], capture_output=True, text=True, timeout=args.limit,
                env=dict(os.environ))
            rows = json.loads(proc.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            rows = [(family, "(all cases)", f"SLOW: killed after {args.limit:.0f} s", 0, 0)]
        except (json.JSONDecodeError, IndexError):
            rows = [(family, "(all cases)", f"ERROR: {proc.stderr.strip()[-200:]}", 0, 0)]
        for fam, label, verdict, wall, cpu in rows:
            print(f"{fam:24s} {label:44s} {verdict:8s} wall {wall:6.2f}s cpu {cpu:6.2f}s",
                  flush=True)


if __name__ == "__main__":
    main()
