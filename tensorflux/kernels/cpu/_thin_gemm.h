/* thin_gemm: out (m, n) = a (m, k) @ b (k, n) in float32 for a few rows (m <= THIN_NN_ROWS)
 * and a wide b: the forward products of fully connected layers at a small batch (AlexNet's
 * fc1: 8 x 9216 @ 9216 x 4096, 151 MB of weights read for 0.6 GFLOP). Included by
 * _native.c after its ngemm block (it uses that file's buffers, stop and pool).
 *
 * BLAS packs all of b for such a call (a copy of the weights, for the 8 rows' sake) and
 * runs on one thread; ngemm's 6-row tiles read each block of b twice for 8 rows. Here b is
 * read once, where it lies: the output's columns are cut into blocks that the pool's
 * threads claim; within a block, for each block of THIN_NN_KC rows of b, each strip of 48
 * columns keeps 8 rows x 3 AVX-512 vectors of sums in registers (24 accumulators), loads
 * them from the output (zero at the first block of k), adds one FMA per row of b in k
 * order, and stores them back. Rows beyond 8 take further passes of up to 8.
 * Every output is one chain of FMAs over k in order, whoever computes it: the same bits on
 * any number of threads; rounding differs from BLAS's as one blocking from another (the
 * same order as ngemm's within a k block, but without its per-block partial sums). Used
 * where the CPU has AVX-512F (`thin_nn_ready`); elsewhere the caller keeps BLAS. */

#define THIN_NN_ROWS 16
#define THIN_NN_KC 128
#define THIN_NN_STRIP 48
#define THIN_NN_BLOCK (8 * THIN_NN_STRIP) /* columns of a chunk: 384 */
#define THIN_NN_AHEAD 8                    /* rows of b prefetched ahead */

#if NG_X86
#pragma GCC push_options
#pragma GCC optimize("no-wrapv")

/* Rows [0, MR) of a (row stride lda) times b's rows [k0, k1) into the output columns at c:
 * thin_full_MR 48 columns (three vectors), thin_one_MR the 16 or fewer of `mask`;
 * `first`: the output holds nothing yet. MR is a constant in each (the loops unroll and the
 * sums stay in registers). */
/* The tile's small loops unrolled by hand (GCC 12 at -O3 may otherwise keep the sums in a
 * stack array: _stem_conv.h). */
#define THIN_NN_UNROLL _Pragma("GCC unroll 8")
#define THIN_NN_TILE(MR, NAME, NV, LOAD, STORE)                                             \
    __attribute__((target("avx512f"))) static void NAME(                                    \
            __mmask16 mask, const float *a, int64_t lda, const float *b, int64_t n,         \
            float *c, int64_t k0, int64_t k1, int first) {                                  \
        __m512 acc[MR][NV];                                                                 \
        THIN_NN_UNROLL for (int r = 0; r < MR; r++)                                         \
            THIN_NN_UNROLL for (int v = 0; v < NV; v++)                                     \
                acc[r][v] = first ? _mm512_setzero_ps() : LOAD(c + r * n + 16 * v);         \
        for (int64_t k = k0; k < k1; k++) {                                                 \
            const float *bk = b + k * n;                                                    \
            if (k + THIN_NN_AHEAD < k1)                                                     \
                THIN_NN_UNROLL for (int v = 0; v < NV; v++)                                 \
                    _mm_prefetch((const char *)(bk + THIN_NN_AHEAD * n + 16 * v),           \
                                 _MM_HINT_T0);                                              \
            __m512 bv[NV];                                                                  \
            THIN_NN_UNROLL for (int v = 0; v < NV; v++) bv[v] = LOAD(bk + 16 * v);          \
            THIN_NN_UNROLL for (int r = 0; r < MR; r++) {                                   \
                const __m512 x = _mm512_set1_ps(a[r * lda + k]);                            \
                THIN_NN_UNROLL for (int v = 0; v < NV; v++)                                 \
                    acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);                       \
            }                                                                               \
        }                                                                                   \
        THIN_NN_UNROLL for (int r = 0; r < MR; r++)                                         \
            THIN_NN_UNROLL for (int v = 0; v < NV; v++) STORE(c + r * n + 16 * v, acc[r][v]); \
    }
#define THIN_NN_FULL_LOAD(p) _mm512_loadu_ps(p)
#define THIN_NN_FULL_STORE(p, x) _mm512_storeu_ps(p, x)
#define THIN_NN_MASK_LOAD(p) _mm512_maskz_loadu_ps(mask, p)
#define THIN_NN_MASK_STORE(p, x) _mm512_mask_storeu_ps(p, mask, x)
#define THIN_NN_TILES(MR)                                                                   \
    THIN_NN_TILE(MR, thin_full_##MR, 3, THIN_NN_FULL_LOAD, THIN_NN_FULL_STORE)              \
    THIN_NN_TILE(MR, thin_one_##MR, 1, THIN_NN_MASK_LOAD, THIN_NN_MASK_STORE)
THIN_NN_TILES(1)
THIN_NN_TILES(2)
THIN_NN_TILES(3)
THIN_NN_TILES(4)
THIN_NN_TILES(5)
THIN_NN_TILES(6)
THIN_NN_TILES(7)
THIN_NN_TILES(8)

typedef void (*thin_nn_tile_fn)(__mmask16, const float *, int64_t, const float *, int64_t,
                                float *, int64_t, int64_t, int);
static const thin_nn_tile_fn thin_full[9] = {NULL, thin_full_1, thin_full_2, thin_full_3,
                                             thin_full_4, thin_full_5, thin_full_6,
                                             thin_full_7, thin_full_8};
static const thin_nn_tile_fn thin_one[9] = {NULL, thin_one_1, thin_one_2, thin_one_3,
                                            thin_one_4, thin_one_5, thin_one_6, thin_one_7,
                                            thin_one_8};
#pragma GCC pop_options
#endif

typedef struct {
    const float *a, *b;
    float *c;
    int64_t lda, m, n, k;
} thin_nn_t;

static void thin_nn_chunk(void *p, int64_t chunk) {
#if NG_X86
    const thin_nn_t *t = (const thin_nn_t *)p;
    const int64_t j0 = chunk * THIN_NN_BLOCK;
    const int64_t j1 = j0 + THIN_NN_BLOCK < t->n ? j0 + THIN_NN_BLOCK : t->n;
    for (int64_t k0 = 0; k0 < t->k; k0 += THIN_NN_KC) {
        const int64_t k1 = k0 + THIN_NN_KC < t->k ? k0 + THIN_NN_KC : t->k;
        for (int64_t i = 0; i < t->m; i += 8) {
            const int mr = t->m - i < 8 ? (int)(t->m - i) : 8;
            for (int64_t j = j0; j < j1;) {
                const float *ai = t->a + i * t->lda;
                float *ci = t->c + i * t->n + j;
                if (j1 - j >= THIN_NN_STRIP) {
                    thin_full[mr](0xFFFF, ai, t->lda, t->b + j, t->n, ci, k0, k1, k0 == 0);
                    j += THIN_NN_STRIP;
                } else {
                    const int w = j1 - j < 16 ? (int)(j1 - j) : 16;
                    thin_one[mr]((__mmask16)((1u << w) - 1u), ai, t->lda, t->b + j, t->n, ci,
                                 k0, k1, k0 == 0);
                    j += w;
                }
            }
        }
    }
#else
    (void)p;
    (void)chunk;
#endif
}

static int thin_nn_ready(void) {
#if NG_X86
    static int ready = -1;
    if (ready < 0) ready = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return ready;
#else
    return 0;
#endif
}

/* thin_nn(a, b, out, parts[, stop, deadline]): out = a @ b in float32, a (m, k) with
 * contiguous rows at any row stride and m <= THIN_NN_ROWS, b (k, n) and out (m, n)
 * C-contiguous. None without AVX-512F (nothing written); False if stopped. */
static PyObject *py_thin_nn(PyObject *self, PyObject *args) {
    PyObject *objs[3], *cell = NULL;
    int parts;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "OOOi|Od", &objs[0], &objs[1], &objs[2], &parts, &cell,
                          &deadline))
        return NULL;
    if (!thin_nn_ready()) Py_RETURN_NONE;
    buf_t bufs[3];
    char code;
    if (get_product_operands(objs, bufs, &code) != 0) return NULL;
    const Py_buffer *av = &bufs[0].view;
    int64_t br, bc, cr, cc;
    if (code != 'f' || float_code(av) != 'f' || av->ndim != 2 ||
            (av->shape[1] > 1 && av->strides[1] != 4) || av->strides[0] % 4 != 0 ||
            av->strides[0] < 4 * av->shape[1] || !two_d(&bufs[1].view, &br, &bc) ||
            !two_d(&bufs[2].view, &cr, &cc) || br != av->shape[1] || cr != av->shape[0] ||
            cc != bc || cr > THIN_NN_ROWS) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "thin_nn takes float32 a (m <= 16, k) with "
                        "contiguous rows, b (k, n) and out (m, n)");
        return NULL;
    }
    thin_nn_t t;
    t.m = cr;
    t.n = cc;
    t.k = br;
    t.lda = av->shape[0] > 1 ? av->strides[0] / 4 : t.k;
    t.a = (const float *)av->buf;
    t.b = (const float *)bufs[1].view.buf;
    t.c = (float *)bufs[2].view.buf;
    if (t.m == 0 || t.n == 0 || t.k == 0) {
        if (t.k == 0) memset(t.c, 0, (size_t)(t.m * t.n) * sizeof(float));
        release(bufs, 3);
        Py_RETURN_TRUE;
    }
    stop_t stop;
    Py_buffer cell_view;
    int cell_held;
    if (get_stop(cell, deadline, &stop, &cell_view, &cell_held) != 0) {
        release(bufs, 3);
        return NULL;
    }
    const int polled = stop.cell != NULL || stop.deadline > 0;
    if (parts < 1) parts = 1;
    const int64_t count = ceil_div(t.n, THIN_NN_BLOCK);
    int64_t skipped = 0;
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    skipped = parts > 1 && count > 1
                  ? run_all(thin_nn_chunk, &t, count, parts, polled ? &stop : NULL)
                  : run_serial(thin_nn_chunk, &t, count, polled ? &stop : NULL);
    Py_END_ALLOW_THREADS
    if (cell_held) PyBuffer_Release(&cell_view);
    release(bufs, 3);
    return done_or_stopped(skipped);
}
