/* tensorflux.kernels.cpu._qkernels: the eight-bit kernels in C (issue 19, quantized
 * inference). Python side: tensorflux/kernels/cpu/_qnative.py, which says which kernel of
 * kernels/cpu/quantization_ops.py uses what.
 *
 * Optional, like _native (setup.py builds it with optional=True): without it every
 * quantized kernel runs its NumPy path, and the values are the same. Everything here is
 * integer arithmetic, so "the same" means equal, not close:
 *
 *   - gemm: out (int32) = (a - za) (b - zb) for quint8 a (m x k), b (k x n) and integer
 *     zero points. Three ways, chosen per call (the caller may force a lower one, which
 *     tests do): AVX-512 VNNI (vpdpbusd: u8 x s8 in groups of four k, into s32), AVX2
 *     (vpmaddwd on u8 widened to s16: no saturation, unlike vpmaddubsw), and plain C. The
 *     zero points come out through row and column sums:
 *         sum_k (a - za)(b' - zb') = D - zb' * rowsum(a) - za * colsum(b') + k za zb'
 *     with b' = b - off (off = 128 on the VNNI path, which needs a signed b, else 0),
 *     zb' = zb - off and D = sum_k a b'. Every step wraps modulo 2^32, so the result is
 *     exact whenever the true value fits in int32; the caller only calls when
 *     k * max|a - za| * max|b - zb| < 2^31 (the NumPy path's values are exact there too).
 *     The VNNI and AVX2 paths are compiled with target attributes and chosen at run time
 *     (__builtin_cpu_supports): the build needs no -march flag and runs on any CPU.
 *   - conv: QuantizedConv2D (NHWC, any strides, explicit padding) as the same product over
 *     patch rows copied per chunk (im2col in u8; a padded tap holds the zero point, i.e.
 *     real zero, as TF pads).
 *   - requantize: TF's fixed-point qint32 -> quint8 loop (16 fractional bits, int64).
 *   - bias_add: quint8 input through a 256-entry table of its int32 values, plus a per
 *     channel int32 (QuantizedBiasAdd); clamp_u8: max/min on quint8 (QuantizedRelu/Relu6);
 *     quantize_u8: QuantizeV2's MIN_FIRST loop (float32, no FMA contraction: the build's
 *     -ffp-contract=off, as for _native).
 *
 * Threads: a small pool of its own (this file is separate from _native.c; the same design:
 * helpers spin briefly where a core is to spare, then sleep on a condition variable
 * (_pool.h helper_wait), chunks are claimed one at a time, a caller that
 * finds the pool busy runs alone, pthread_atfork resets it in a child). Products poll a
 * stop cell and a deadline between chunks (kernels/interrupt.py), as _native's do.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The AVX2 and AVX-512 code needs a compiler that knows avx512vnni (GCC 8, clang 7);
 * with another one (or -DQK_NO_X86, which tests the portable build) only plain C is built. */
#if !defined(QK_NO_X86) && (defined(__x86_64__) || defined(__i386__)) && \
    ((defined(__clang__) && __clang_major__ >= 7) || \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define QK_X86 1
#include <immintrin.h>
#define QK_AVX2 __attribute__((target("avx2")))
#define QK_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define QK_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#else
#define QK_X86 0
#endif

enum { PATH_GENERIC = 0, PATH_AVX2 = 1, PATH_VNNI = 2 };

#include "_pool.h"

/* ---------------------------------------------------------------------------------------
 * The product. A chunk is a block of rows of a (rows of patches, for conv): its rows are
 * copied into a buffer of stride kp (k rounded up to 4, zero-filled) unless a already has
 * that layout, then multiplied by b packed for the path. */

struct elem_s;
struct gemm_s;
typedef void (*span_fn)(const struct elem_s *, int64_t, int64_t);

typedef struct gemm_s {
    int path;
    int64_t m, n, k, kp, groups;  /* groups: kp / 4 */
    int32_t za, zbp;              /* zbp = zb - off */
    const uint8_t *a;             /* gemm: a (m x k); conv: the input */
    int32_t *out;                 /* m x n */
    void *bpack;                  /* b in the path's layout */
    uint32_t *colcorr;            /* per column: za * colsum(b') - k za zb' (n, padded) */
    int64_t rows;                 /* rows per chunk */
    int64_t count;                /* chunks */
    /* conv geometry (conv only: nonzero h) */
    int64_t h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
    uint8_t pad;                  /* the input's zero point, for padded taps */
    atomic_int *oom;              /* set by a chunk that could not get its buffer */
    /* the fused ops (conv_fused, gemm_fused): out8 set, each chunk's int32 rows go to a
     * buffer of the chunk's own and `epi` turns them into out8's rows while they are in
     * cache: + bias per column (wrapping), Requantize's fixed point, clamp to [lo, hi] */
    uint8_t *out8;
    const int32_t *bias;
    int64_t rq_scale, rq_offset;
    uint8_t lo, hi;
    span_fn requant;
    void (*epi)(const struct gemm_s *, int32_t *, int64_t, int64_t);
} gemm_t;

/* b as the generic path takes it: b' (k x n) widened to uint32. */
static void *pack_generic(const uint8_t *b, int64_t k, int64_t n) {
    uint32_t *p = malloc((size_t)(k * n + 1) * sizeof(uint32_t));
    if (p == NULL) return NULL;
    for (int64_t i = 0; i < k * n; i++) p[i] = b[i];
    return p;
}

/* Column corrections and, in `g`, the layout facts every path shares. */
static int col_corrections(gemm_t *g, const uint8_t *b, int off, int64_t npad) {
    g->colcorr = calloc((size_t)npad + 16, sizeof(uint32_t));
    if (g->colcorr == NULL) return -1;
    uint32_t kzz = (uint32_t)g->k * (uint32_t)g->za * (uint32_t)g->zbp;
    for (int64_t i = 0; i < g->k; i++)  /* column sums of b, row by row */
        for (int64_t j = 0; j < g->n; j++) g->colcorr[j] += b[i * g->n + j];
    for (int64_t j = 0; j < g->n; j++) {
        uint32_t s = g->colcorr[j] - (uint32_t)off * (uint32_t)g->k;  /* sum of b' */
        g->colcorr[j] = (uint32_t)g->za * s - kzz;
    }
    return 0;
}

static uint32_t rowsum_u8(const uint8_t *a, int64_t k) {
    uint32_t s = 0;
    for (int64_t i = 0; i < k; i++) s += a[i];
    return s;
}

/* Generic rows: out[r] = a[r] b' - zb' rowsum - colcorr. */
static void rows_generic(const gemm_t *g, const uint8_t *a, int64_t lda, int64_t nrows,
                         int32_t *out) {
    const uint32_t *b = g->bpack;
    int64_t n = g->n;
    for (int64_t r = 0; r < nrows; r++) {
        uint32_t *acc = (uint32_t *)(out + r * n);
        const uint8_t *ar = a + r * lda;
        for (int64_t j = 0; j < n; j++) acc[j] = 0;
        for (int64_t i = 0; i < g->k; i++) {
            uint32_t v = ar[i];
            const uint32_t *br = b + i * n;
            for (int64_t j = 0; j < n; j++) acc[j] += v * br[j];
        }
        uint32_t rs = (uint32_t)g->zbp * rowsum_u8(ar, g->k);
        for (int64_t j = 0; j < n; j++) acc[j] = acc[j] - rs - g->colcorr[j];
    }
}

#if QK_X86
/* AVX2: b packed per block of 8 columns, per group of four k: two 8-lane vectors of s16
 * pairs, (b[4g], b[4g+1]) and (b[4g+2], b[4g+3]), so that vpmaddwd of a broadcast pair of
 * a's (zero-extended) bytes adds both products into one int32 lane per column. */
static void *pack_avx2(const uint8_t *b, int64_t k, int64_t n, int64_t groups) {
    int64_t blocks = (n + 7) / 8;
    int16_t *p = calloc((size_t)(blocks * groups * 32 + 16), sizeof(int16_t));
    if (p == NULL) return NULL;
    for (int64_t i = 0; i < k; i++) {  /* in b's order: one pass over it */
        int16_t *row = p + (i / 4) * 32 + ((i % 4) / 2) * 16 + (i % 2);
        const uint8_t *src = b + i * n;
        for (int64_t j = 0; j < n; j++) row[(j / 8) * groups * 32 + (j % 8) * 2] = src[j];
    }
    return p;
}

#define AVX2_MR 4
#define AVX2_KERNEL(NB)                                                                      \
static QK_AVX2 void avx2_tile_##NB(const gemm_t *g, const uint8_t *const *ar, int mr,     \
                                   int64_t jb, int32_t *out, const uint32_t *rs) {          \
    const int16_t *bp = (const int16_t *)g->bpack;                                          \
    __m256i c[AVX2_MR][NB];                                                                  \
    for (int r = 0; r < AVX2_MR; r++)                                                        \
        for (int b = 0; b < NB; b++) c[r][b] = _mm256_setzero_si256();                      \
    for (int64_t gi = 0; gi < g->groups; gi++) {                                             \
        __m256i b0[NB], b1[NB];                                                              \
        for (int b = 0; b < NB; b++) {                                                       \
            const int16_t *q = bp + (((jb + b) * g->groups + gi) * 2) * 16;                  \
            b0[b] = _mm256_loadu_si256((const __m256i *)q);                                  \
            b1[b] = _mm256_loadu_si256((const __m256i *)(q + 16));                           \
        }                                                                                    \
        for (int r = 0; r < AVX2_MR; r++) {                                                  \
            uint32_t x;                                                                      \
            memcpy(&x, ar[r] + 4 * gi, 4);                                                   \
            __m256i lo = _mm256_set1_epi32((int)((x & 0xffu) | ((x & 0xff00u) << 8)));       \
            __m256i hi = _mm256_set1_epi32((int)(((x >> 16) & 0xffu) | ((x >> 8) & 0xff0000u))); \
            for (int b = 0; b < NB; b++)                                                     \
                c[r][b] = _mm256_add_epi32(c[r][b], _mm256_add_epi32(                        \
                    _mm256_madd_epi16(lo, b0[b]), _mm256_madd_epi16(hi, b1[b])));            \
        }                                                                                    \
    }                                                                                        \
    for (int b = 0; b < NB; b++) {                                                           \
        int64_t j0 = 8 * (jb + b);                                                           \
        __m256i cc = _mm256_loadu_si256((const __m256i *)(g->colcorr + j0));                \
        int64_t left = g->n - j0;                                                            \
        for (int r = 0; r < mr; r++) {                                                       \
            __m256i v = _mm256_sub_epi32(_mm256_sub_epi32(c[r][b],                           \
                                         _mm256_set1_epi32((int)rs[r])), cc);               \
            int32_t *o = out + r * g->n + j0;                                                \
            if (left >= 8) {                                                                 \
                _mm256_storeu_si256((__m256i *)o, v);                                        \
            } else {                                                                         \
                int32_t t[8];                                                                \
                _mm256_storeu_si256((__m256i *)t, v);                                        \
                memcpy(o, t, (size_t)left * sizeof(int32_t));                                \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
}
AVX2_KERNEL(1)
AVX2_KERNEL(2)

static QK_AVX2 void rows_avx2(const gemm_t *g, const uint8_t *a, int64_t lda, int64_t nrows,
                              int32_t *out) {
    int64_t blocks = (g->n + 7) / 8;
    for (int64_t r0 = 0; r0 < nrows; r0 += AVX2_MR) {
        int mr = (int)(nrows - r0 < AVX2_MR ? nrows - r0 : AVX2_MR);
        const uint8_t *ar[AVX2_MR];
        uint32_t rs[AVX2_MR];
        for (int r = 0; r < AVX2_MR; r++) {
            ar[r] = a + (r0 + (r < mr ? r : mr - 1)) * lda;
            rs[r] = (uint32_t)g->zbp * rowsum_u8(ar[r], g->k);
        }
        for (int64_t jb = 0; jb < blocks; jb += 2) {
            if (blocks - jb >= 2) avx2_tile_2(g, ar, mr, jb, out + r0 * g->n, rs);
            else avx2_tile_1(g, ar, mr, jb, out + r0 * g->n, rs);
        }
    }
}

/* VNNI: b' = b - 128 (s8) packed per block of 16 columns, per group of four k: 64 bytes,
 * the four k of column c in lane c, as vpdpbusd takes them. */
static void *pack_vnni(const uint8_t *b, int64_t k, int64_t n, int64_t groups) {
    int64_t blocks = (n + 15) / 16;
    int8_t *p = calloc((size_t)(blocks * groups * 64 + 64), 1);
    if (p == NULL) return NULL;
    for (int64_t i = 0; i < k; i++) {  /* in b's order: one pass over it */
        int8_t *row = p + (i / 4) * 64 + (i % 4);
        const uint8_t *src = b + i * n;
        for (int64_t j = 0; j < n; j++)
            row[(j / 16) * groups * 64 + (j % 16) * 4] = (int8_t)((int)src[j] - 128);
    }
    return p;
}

/* The sum of a row's k bytes (vpsadbw over 64 bytes at a time). */
static QK_VNNI uint32_t rowsum_vnni(const uint8_t *a, int64_t k) {
    __m512i acc = _mm512_setzero_si512(), zero = _mm512_setzero_si512();
    int64_t i = 0;
    for (; i + 64 <= k; i += 64)
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_loadu_si512((const void *)(a + i)),
                                                    zero));
    if (i < k) {
        __mmask64 mask = ((__mmask64)1 << (k - i)) - 1;
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(mask, a + i), zero));
    }
    return (uint32_t)_mm512_reduce_add_epi64(acc);
}

#define VNNI_MR 8
#define VNNI_KERNEL(NB, MR)                                                                  \
static QK_VNNI void vnni_tile_##NB(const gemm_t *g, const uint8_t *const *ar, int mr,     \
                                   int64_t jb, int32_t *out, const uint32_t *rs) {          \
    const int8_t *bp = (const int8_t *)g->bpack;                                            \
    __m512i c[MR][NB];                                                                       \
    for (int r = 0; r < MR; r++)                                                             \
        for (int b = 0; b < NB; b++) c[r][b] = _mm512_setzero_si512();                       \
    for (int64_t gi = 0; gi < g->groups; gi++) {                                             \
        __m512i bv[NB];                                                                      \
        for (int b = 0; b < NB; b++)                                                         \
            bv[b] = _mm512_loadu_si512((const void *)(bp + ((jb + b) * g->groups + gi) * 64)); \
        for (int r = 0; r < MR; r++) {                                                       \
            int32_t x;                                                                       \
            memcpy(&x, ar[r] + 4 * gi, 4);                                                   \
            __m512i av = _mm512_set1_epi32(x);                                               \
            for (int b = 0; b < NB; b++) c[r][b] = _mm512_dpbusd_epi32(c[r][b], av, bv[b]);  \
        }                                                                                    \
    }                                                                                        \
    for (int b = 0; b < NB; b++) {                                                           \
        int64_t j0 = 16 * (jb + b);                                                          \
        __m512i cc = _mm512_loadu_si512((const void *)(g->colcorr + j0));                   \
        int64_t left = g->n - j0;                                                            \
        __mmask16 mask = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);    \
        for (int r = 0; r < (mr < MR ? mr : MR); r++) {                                      \
            __m512i v = _mm512_sub_epi32(_mm512_sub_epi32(c[r][b],                           \
                                         _mm512_set1_epi32((int)rs[r])), cc);               \
            _mm512_mask_storeu_epi32(out + r * g->n + j0, mask, v);                          \
        }                                                                                    \
    }                                                                                        \
}
VNNI_KERNEL(1, 8)
VNNI_KERNEL(2, 8)

static QK_VNNI void rows_vnni(const gemm_t *g, const uint8_t *a, int64_t lda, int64_t nrows,
                              int32_t *out) {
    int64_t blocks = (g->n + 15) / 16;
    for (int64_t r0 = 0; r0 < nrows; r0 += VNNI_MR) {
        int mr = (int)(nrows - r0 < VNNI_MR ? nrows - r0 : VNNI_MR);
        const uint8_t *ar[VNNI_MR];
        uint32_t rs[VNNI_MR];
        for (int r = 0; r < VNNI_MR; r++) {
            ar[r] = a + (r0 + (r < mr ? r : mr - 1)) * lda;
            rs[r] = (uint32_t)g->zbp * rowsum_vnni(ar[r], g->k);
        }
        int32_t *o = out + r0 * g->n;
        for (int64_t jb = 0; jb < blocks; jb += 2) {
            if (blocks - jb >= 2) vnni_tile_2(g, ar, mr, jb, o, rs);
            else vnni_tile_1(g, ar, mr, jb, o, rs);
        }
    }
}
#endif

static void rows_any(const gemm_t *g, const uint8_t *a, int64_t lda, int64_t nrows,
                     int32_t *out) {
#if QK_X86
    if (g->path == PATH_VNNI) { rows_vnni(g, a, lda, nrows, out); return; }
    if (g->path == PATH_AVX2) { rows_avx2(g, a, lda, nrows, out); return; }
#endif
    rows_generic(g, a, lda, nrows, out);
}

/* Copies n bytes in 8-byte moves, writing up to 7 bytes past dst + n (the caller has room
 * there and overwrites it next) and reading up to 7 past src + n (slack in the strip). */
static inline void copy_over(uint8_t *dst, const uint8_t *src, int64_t n) {
    for (int64_t i = 0; i < n; i += 8) memcpy(dst + i, src + i, 8);
}

/* n bytes, inline for the short runs here (a call to memcpy or memset costs more than
 * a row of a small image): overlapping moves of 16, 8 or 4 bytes. */
static inline void small_copy(uint8_t *dst, const uint8_t *src, int64_t n) {
    if (n > 64) {
        memcpy(dst, src, (size_t)n);
    } else if (n >= 16) {
        for (int64_t i = 0; i + 16 < n; i += 16) memcpy(dst + i, src + i, 16);
        memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = src[i];
    }
}

static inline void small_set(uint8_t *dst, uint8_t v, int64_t n) {
    if (n > 32) memset(dst, v, (size_t)n);
    else for (int64_t i = 0; i < n; i++) dst[i] = v;
}

/* Padded input rows: `count` rows of image img from input row iy0 on, each padded with the
 * zero point (real zero) on both sides, rows outside the image all zero point; row r at
 * strip + r * stride, wpad pixels wide from input column -pl. */
static void fill_rows(const gemm_t *g, int64_t img, int64_t iy0, int64_t count, uint8_t *strip,
                      int64_t stride, int64_t wpad) {
    int64_t c = g->c;
    const uint8_t *base = g->a + img * g->h * g->w * c;
    int64_t left = g->pl < wpad ? g->pl : wpad;
    int64_t inside = wpad - left < g->w ? wpad - left : g->w;
    int64_t right = wpad - left - inside;
    for (int64_t r = 0; r < count; r++) {
        uint8_t *row = strip + r * stride;
        int64_t iy = iy0 + r;
        if (iy < 0 || iy >= g->h) {
            small_set(row, g->pad, wpad * c);
            continue;
        }
        small_set(row, g->pad, left * c);
        small_copy(row + left * c, base + iy * g->w * c, inside * c);
        small_set(row + (left + inside) * c, g->pad, right * c);
    }
}

/* The patch rows [p0, p1) of a conv (output pixels in NHW order) into buf (stride kp; room
 * for 8 bytes past its end). The windows are read from padded rows: a whole padded image
 * (`slab`: filled once per image) when it fits the scratch, else per output row its kh
 * rows; either way the patch of pixel x is kh runs of kw * c bytes at x * sw * c. */
static void im2col_rows(const gemm_t *g, int64_t p0, int64_t p1, uint8_t *buf, uint8_t *strip,
                        int64_t stride, int64_t wpad, int slab) {
    int64_t c = g->c, k = g->k, run = g->kw * c, step = g->sw * c;
    int64_t x = p0 % g->ow, y = (p0 / g->ow) % g->oh, img = p0 / (g->ow * g->oh);
    int64_t slab_rows = (g->oh - 1) * g->sh + g->kh;
    if (slab) fill_rows(g, img, -g->pt, slab_rows, strip, stride, wpad);
    else fill_rows(g, img, y * g->sh - g->pt, g->kh, strip, stride, wpad);
    for (int64_t p = p0; p < p1; p++) {
        uint8_t *row = buf + (p - p0) * g->kp;
        const uint8_t *src = strip + (slab ? y * g->sh * stride : 0) + x * step;
        for (int64_t ky = 0; ky < g->kh; ky++) copy_over(row + ky * run, src + ky * stride, run);
        for (int64_t i = k; i < g->kp; i++) row[i] = 0;
        if (++x == g->ow) {
            x = 0;
            if (++y == g->oh) {
                y = 0;
                img++;
                if (slab && p + 1 < p1) fill_rows(g, img, -g->pt, slab_rows, strip, stride, wpad);
            }
            if (!slab && p + 1 < p1) fill_rows(g, img, y * g->sh - g->pt, g->kh, strip, stride,
                                               wpad);
        }
    }
}

static void gemm_chunk(void *arg, int64_t chunk) {
    const gemm_t *g = arg;
    int64_t r0 = chunk * g->rows, r1 = r0 + g->rows < g->m ? r0 + g->rows : g->m;
    int64_t nrows = r1 - r0;
    int fused = g->out8 != NULL, direct = g->h == 0 && g->kp == g->k;
    if (direct && !fused) {
        rows_any(g, g->a + r0 * g->k, g->k, nrows, g->out + r0 * g->n);
        return;
    }
    /* conv: padded rows as wide as every window of a row needs; a whole padded image
     * when it takes at most 64 KiB */
    int64_t wpad = g->h ? (g->ow - 1) * g->sw + g->kw : 0;
    int64_t stride = wpad * g->c + 16;
    int64_t slab_rows = g->h ? (g->oh - 1) * g->sh + g->kh : 0;
    int slab = slab_rows * stride <= 65536;
    int64_t scratch = g->h ? (slab ? slab_rows : g->kh) * stride : 0;
    /* fused: the chunk's int32 rows first (a multiple of 64 bytes), then the patches */
    int64_t accbytes = fused ? (nrows * g->n * 4 + 63) / 64 * 64 : 0;
    uint8_t *mem = malloc((size_t)(accbytes + (direct ? 0 : nrows * g->kp + 16 + scratch)));
    if (mem == NULL) {
        atomic_store(g->oom, 1);
        return;
    }
    int32_t *out = fused ? (int32_t *)mem : g->out + r0 * g->n;
    uint8_t *buf = mem + accbytes;
    if (direct) {
        rows_any(g, g->a + r0 * g->k, g->k, nrows, out);
    } else if (g->h) {
        im2col_rows(g, r0, r1, buf, buf + nrows * g->kp + 16, stride, wpad, slab);
    } else {
        for (int64_t r = 0; r < nrows; r++) {
            memcpy(buf + r * g->kp, g->a + (r0 + r) * g->k, (size_t)g->k);
            memset(buf + r * g->kp + g->k, 0, (size_t)(g->kp - g->k));
        }
    }
    if (!direct) rows_any(g, buf, g->kp, nrows, out);
    if (fused) g->epi(g, out, r0, nrows);
    free(mem);
}

static int cpu_path(void) {
#if QK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512f"))
        return PATH_VNNI;
    if (__builtin_cpu_supports("avx2")) return PATH_AVX2;
#endif
    return PATH_GENERIC;
}

/* Packs b for the path and fills in the plan; -1 when out of memory (no GIL held). */
static int gemm_setup(gemm_t *g, const uint8_t *b, int path, int32_t zb, int parts) {
    int best = cpu_path();
    g->path = (path < 0 || path > best) ? best : path;
    int off = g->path == PATH_VNNI ? 128 : 0;
    g->kp = (g->k + 3) / 4 * 4;
    g->groups = g->kp / 4;
    g->zbp = (int32_t)((uint32_t)zb - (uint32_t)off);
    g->bpack = NULL;
    g->colcorr = NULL;
#if QK_X86
    if (g->path == PATH_VNNI) g->bpack = pack_vnni(b, g->k, g->n, g->groups);
    else if (g->path == PATH_AVX2) g->bpack = pack_avx2(b, g->k, g->n, g->groups);
    else
#endif
        g->bpack = pack_generic(b, g->k, g->n);
    int64_t npad = (g->n + 15) / 16 * 16;
    if (g->bpack == NULL || col_corrections(g, b, off, npad) != 0) {
        free(g->bpack);
        free(g->colcorr);
        return -1;
    }
    /* Chunks: about four per thread, of whole row tiles, each one's patch buffer at most
     * 256 KiB (it stays in L2 while it is multiplied). */
    int64_t rows = (g->m + 4 * (int64_t)parts - 1) / (4 * (int64_t)parts);
    int64_t cap = (256 * 1024) / g->kp;
    if (rows > cap) rows = cap;
    if (rows > 2048) rows = 2048;
    /* fused: the chunk's int32 rows stay in L1/L2 and below malloc's mmap threshold */
    if (g->out8 != NULL && rows > (64 * 1024) / (4 * g->n))
        rows = (64 * 1024) / (4 * g->n);
    rows = (rows + 3) / 4 * 4;
    if (rows < 4) rows = 4;
    g->rows = rows;
    g->count = (g->m + rows - 1) / rows;
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Buffers: C-contiguous, of an expected item size and element count. */

typedef struct {
    Py_buffer view;
    int held;
} buf_t;

static void release(buf_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (b[i].held) PyBuffer_Release(&b[i].view);
}

/* Takes n buffers; sizes[i] elements of itemsizes[i] bytes; writable[i]. ValueError. */
static int get_bufs(PyObject **objs, const int64_t *sizes, const int *itemsizes,
                    const int *writable, buf_t *bufs, int n) {
    for (int i = 0; i < n; i++) bufs[i].held = 0;
    for (int i = 0; i < n; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (writable[i] ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &bufs[i].view, flags) != 0) {
            release(bufs, i);
            return -1;
        }
        bufs[i].held = 1;
        if (sizes[i] < 0 || bufs[i].view.len != (Py_ssize_t)(sizes[i] * itemsizes[i])) {
            release(bufs, i + 1);
            PyErr_Format(PyExc_ValueError, "_qkernels: buffer %d has %zd bytes, %lld "
                         "expected", i, bufs[i].view.len,
                         (long long)(sizes[i] * itemsizes[i]));
            return -1;
        }
    }
    return 0;
}

static PyObject *run_gemm(gemm_t *g, const uint8_t *b, int path, int32_t zb, int parts,
                          PyObject *cell, double deadline) {
    stop_t stop;
    Py_buffer cell_view;
    int cell_held;
    if (get_stop(cell, deadline, &stop, &cell_view, &cell_held) != 0) return NULL;
    if (parts > 1) ensure_helpers(parts - 1);
    int64_t skipped = 0;
    int failed = 0;
    atomic_int oom = 0;
    g->oom = &oom;
    Py_BEGIN_ALLOW_THREADS
    failed = gemm_setup(g, b, path, zb, parts);
    if (!failed && g->m > 0 && g->n > 0)
        skipped = run_all(gemm_chunk, g, g->count, parts, &stop);
    Py_END_ALLOW_THREADS
    if (cell_held) PyBuffer_Release(&cell_view);
    if (failed) return PyErr_NoMemory();
    free(g->bpack);
    free(g->colcorr);
    if (atomic_load(&oom)) return PyErr_NoMemory();
    if (skipped) Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

/* gemm(a, b, out, m, k, n, za, zb, path, parts, cell=None, deadline=0) -> bool */
static PyObject *py_gemm(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[3], *cell = Py_None;
    long long m, k, n;
    int za, zb, path, parts;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "OOOLLLiiii|Od", &objs[0], &objs[1], &objs[2], &m, &k, &n,
                          &za, &zb, &path, &parts, &cell, &deadline))
        return NULL;
    if (m < 0 || k < 1 || n < 0) {
        PyErr_SetString(PyExc_ValueError, "gemm: bad sizes");
        return NULL;
    }
    int64_t sizes[3] = {m * k, k * n, m * n};
    int items[3] = {1, 1, 4}, wr[3] = {0, 0, 1};
    buf_t bufs[3];
    if (get_bufs(objs, sizes, items, wr, bufs, 3) != 0) return NULL;
    gemm_t g;
    memset(&g, 0, sizeof g);
    g.m = m, g.n = n, g.k = k, g.za = za;
    g.a = bufs[0].view.buf;
    g.out = bufs[2].view.buf;
    PyObject *r = run_gemm(&g, bufs[1].view.buf, path, zb, parts, cell, deadline);
    release(bufs, 3);
    return r;
}

/* conv(x, w, out, (n, h, w, c), (kh, kw, f), (sh, sw, pt, pl, oh, ow), zx, zw, path,
 *      parts, cell=None, deadline=0) -> bool; w is (kh * kw * c, f), zx in [0, 255]. */
static PyObject *py_conv(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[3], *cell = Py_None;
    long long n, h, w, c, kh, kw, f, sh, sw, pt, pl, oh, ow;
    int zx, zw, path, parts;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "OOO(LLLL)(LLL)(LLLLLL)iiii|Od", &objs[0], &objs[1],
                          &objs[2], &n, &h, &w, &c, &kh, &kw, &f, &sh, &sw, &pt, &pl, &oh,
                          &ow, &zx, &zw, &path, &parts, &cell, &deadline))
        return NULL;
    if (n < 0 || h < 1 || w < 1 || c < 1 || kh < 1 || kw < 1 || f < 0 || sh < 1 || sw < 1 ||
            pt < 0 || pl < 0 || oh < 0 || ow < 0 || zx < 0 || zx > 255) {
        PyErr_SetString(PyExc_ValueError, "conv: bad geometry");
        return NULL;
    }
    int64_t sizes[3] = {n * h * w * c, kh * kw * c * f, n * oh * ow * f};
    int items[3] = {1, 1, 4}, wr[3] = {0, 0, 1};
    buf_t bufs[3];
    if (get_bufs(objs, sizes, items, wr, bufs, 3) != 0) return NULL;
    gemm_t g;
    memset(&g, 0, sizeof g);
    g.m = n * oh * ow, g.n = f, g.k = kh * kw * c, g.za = zx;
    g.a = bufs[0].view.buf;
    g.out = bufs[2].view.buf;
    g.h = h, g.w = w, g.c = c, g.oh = oh, g.ow = ow, g.kh = kh, g.kw = kw;
    g.sh = sh, g.sw = sw, g.pt = pt, g.pl = pl, g.pad = (uint8_t)zx;
    PyObject *r = run_gemm(&g, bufs[1].view.buf, path, zw, parts, cell, deadline);
    release(bufs, 3);
    return r;
}

/* ---------------------------------------------------------------------------------------
 * One-pass elementwise loops, cut into chunks of ELEMS for the pool. The plain loops
 * vectorize at -O3; on x86 the same loops are also compiled for AVX2 and AVX-512 and chosen
 * at run time, and Requantize and QuantizedBiasAdd have AVX-512 loops written out (every
 * version does the same operations: the same values). */

#define ELEMS (1 << 16)

typedef struct elem_s {
    const void *x;
    void *out;
    int64_t size, inner;  /* inner: the channel count (bias_add) */
    int64_t scale, offset;
    const int32_t *table, *bias;
    uint8_t lo, hi;
    float fscale, fshift, flower, fupper;  /* quantize_u8 */
} elem_t;

#if defined(__GNUC__) || defined(__clang__)
#define QK_MAYBE_UNUSED __attribute__((unused))  /* (not every version is picked) */
#else
#define QK_MAYBE_UNUSED
#endif
#define ELEM_BODIES(SUF, ATTR)                                                             \
static ATTR QK_MAYBE_UNUSED void requant_span##SUF(const elem_t *e, int64_t i0, int64_t i1) { \
    const int32_t *x = e->x;                                                               \
    uint8_t *o = e->out;                                                                   \
    uint64_t scale = (uint64_t)e->scale, offset = (uint64_t)e->offset;                     \
    int64_t lo = e->lo, hi = e->hi;                                                        \
    for (int64_t i = i0; i < i1; i++) {                                                    \
        int64_t v = (int64_t)((uint64_t)(int64_t)x[i] * scale) >> 32;                      \
        v = (int64_t)((uint64_t)v + offset) >> 16;                                         \
        o[i] = (uint8_t)(v < lo ? lo : v > hi ? hi : v);                                   \
    }                                                                                      \
}                                                                                          \
static ATTR QK_MAYBE_UNUSED void bias_span##SUF(const elem_t *e, int64_t i0, int64_t i1) { \
    const uint8_t *x = e->x;                                                               \
    int32_t *o = e->out;                                                                   \
    int64_t c = e->inner;                                                                  \
    int64_t ch = i0 % c;                                                                   \
    for (int64_t i = i0; i < i1; ch = 0) {                                                 \
        int64_t end = i - ch + c < i1 ? i - ch + c : i1;                                   \
        const int32_t *b = e->bias + ch;                                                   \
        for (int64_t j = 0; i < end; i++, j++)                                             \
            o[i] = (int32_t)((uint32_t)e->table[x[i]] + (uint32_t)b[j]);                  \
    }                                                                                      \
}                                                                                          \
static ATTR QK_MAYBE_UNUSED void quantize_span##SUF(const elem_t *e, int64_t i0, int64_t i1) { \
    const float *x = e->x;                                                                 \
    uint8_t *o = e->out;                                                                   \
    float scale = e->fscale, shift = e->fshift, lower = e->flower, upper = e->fupper;      \
    for (int64_t i = i0; i < i1; i++) {                                                    \
        float v = x[i] * scale, t = truncf(v);                                             \
        float r = fabsf(v - t) >= 0.5f ? t + (v > 0.0f ? 1.0f : -1.0f) : t;                \
        float q = r - shift;                                                               \
        q = q < lower ? lower : q;                                                         \
        q = q > upper ? upper : q;                                                         \
        o[i] = q == q ? (uint8_t)(int32_t)q : 0;                                           \
    }                                                                                      \
}                                                                                          \
static ATTR QK_MAYBE_UNUSED void clamp_span##SUF(const elem_t *e, int64_t i0, int64_t i1) { \
    const uint8_t *x = e->x;                                                               \
    uint8_t *o = e->out, lo = e->lo, hi = e->hi;                                           \
    for (int64_t i = i0; i < i1; i++) {                                                    \
        uint8_t v = x[i] < lo ? lo : x[i];                                                 \
        o[i] = v > hi ? hi : v;                                                            \
    }                                                                                      \
}

#define QK_NOATTR
ELEM_BODIES(, QK_NOATTR)
#if QK_X86
ELEM_BODIES(_avx2, QK_AVX2)
ELEM_BODIES(_avx512, QK_AVX512)

/* requantize with AVX-512, 16 values at a time in two halves of eight int64 (the compiler's
 * own vectorization of the scalar loop clamps through masks and permutes: 2x slower). */
static QK_AVX512 void requant_span_x(const elem_t *e, int64_t i0, int64_t i1) {
    const int32_t *x = e->x;
    uint8_t *o = e->out;
    const __m512i sc = _mm512_set1_epi64(e->scale), off = _mm512_set1_epi64(e->offset),
                  zero = _mm512_set1_epi64(e->lo), top = _mm512_set1_epi64(e->hi);
    int64_t i = i0;
    for (; i + 16 <= i1; i += 16) {
        __m512i v = _mm512_loadu_si512((const void *)(x + i));
        __m512i h[2] = {_mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)),
                        _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1))};
        __m128i r[2];
        for (int q = 0; q < 2; q++) {
            __m512i t = _mm512_srai_epi64(_mm512_mullo_epi64(h[q], sc), 32);
            t = _mm512_srai_epi64(_mm512_add_epi64(t, off), 16);
            t = _mm512_min_epi64(_mm512_max_epi64(t, zero), top);
            r[q] = _mm512_cvtepi64_epi8(t);
        }
        _mm_storeu_si128((__m128i *)(o + i), _mm_unpacklo_epi64(r[0], r[1]));
    }
    requant_span_avx512(e, i, i1);
}

/* bias_add with AVX-512: per row of c channels, 16 at a time; the 256-entry table lives in
 * 16 registers and is read by eight two-register permutes (index bits 0-4) and a tree of
 * blends on bits 5, 6 and 7 (a gather costs more on the CPUs this is for). */
static QK_AVX512 void bias_span_permute(const elem_t *e, int64_t i0, int64_t i1) {
    const uint8_t *x = e->x;
    int32_t *o = e->out;
    int64_t c = e->inner;
    __m512i t[16];
    for (int q = 0; q < 16; q++) t[q] = _mm512_loadu_si512((const void *)(e->table + 16 * q));
    const __m512i b5 = _mm512_set1_epi32(32), b6 = _mm512_set1_epi32(64),
                  b7 = _mm512_set1_epi32(128);
    int64_t ch = i0 % c;
    for (int64_t i = i0; i < i1; ch = 0) {
        int64_t end = i - ch + c < i1 ? i - ch + c : i1;
        const int32_t *b = e->bias + ch;
        for (int64_t j = 0; i < end;) {
            int64_t left = end - i, step = left < 16 ? left : 16;
            __mmask16 m = (__mmask16)((1u << step) - 1);
            __m512i idx = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, x + i));
            __m512i r[8];
            for (int q = 0; q < 8; q++)
                r[q] = _mm512_permutex2var_epi32(t[2 * q], idx, t[2 * q + 1]);
            __mmask16 m5 = _mm512_test_epi32_mask(idx, b5), m6 = _mm512_test_epi32_mask(idx, b6),
                      m7 = _mm512_test_epi32_mask(idx, b7);
            __m512i s0 = _mm512_mask_blend_epi32(m5, r[0], r[1]);
            __m512i s1 = _mm512_mask_blend_epi32(m5, r[2], r[3]);
            __m512i s2 = _mm512_mask_blend_epi32(m5, r[4], r[5]);
            __m512i s3 = _mm512_mask_blend_epi32(m5, r[6], r[7]);
            s0 = _mm512_mask_blend_epi32(m6, s0, s1);
            s2 = _mm512_mask_blend_epi32(m6, s2, s3);
            s0 = _mm512_mask_blend_epi32(m7, s0, s2);
            __m512i v = _mm512_add_epi32(s0, _mm512_maskz_loadu_epi32(m, b + j));
            _mm512_mask_storeu_epi32(o + i, m, v);
            i += step;
            j += step;
        }
    }
}
#endif

typedef struct {
    elem_t e;
    span_fn fn;
} elem_task_t;

static void elem_chunk(void *arg, int64_t chunk) {
    const elem_task_t *t = arg;
    int64_t i0 = chunk * ELEMS, i1 = i0 + ELEMS < t->e.size ? i0 + ELEMS : t->e.size;
    t->fn(&t->e, i0, i1);
}

static void run_elem(elem_task_t *t, int parts) {
    if (parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    run_all(elem_chunk, t, (t->e.size + ELEMS - 1) / ELEMS, parts, NULL);
    Py_END_ALLOW_THREADS
}

#if QK_X86
static int has_avx2(void) { return cpu_path() >= PATH_AVX2; }

static int has_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

/* The version of an elementwise loop for `path` (0 plain, 1 AVX2, 2 AVX-512; -1 the best
 * this CPU runs): tests run each one. */
static span_fn pick(int path, span_fn plain, span_fn avx2, span_fn avx512) {
    if ((path < 0 || path >= 2) && has_avx512()) return avx512;
    if ((path < 0 || path >= 1) && has_avx2()) return avx2;
    return plain;
}
#define PICK(path, name, wide) pick(path, name, name##_avx2, wide)
#else
#define PICK(path, name, wide) ((void)(path), name)
#endif

/* requantize(x int32, out uint8, scale_fp, offset, parts, path=-1) */
static PyObject *py_requantize(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[2];
    long long size, scale, offset;
    int parts, path = -1;
    if (!PyArg_ParseTuple(args, "OOLLLi|i", &objs[0], &objs[1], &size, &scale, &offset, &parts,
                          &path))
        return NULL;
    int64_t sizes[2] = {size, size};
    int items[2] = {4, 1}, wr[2] = {0, 1};
    buf_t bufs[2];
    if (get_bufs(objs, sizes, items, wr, bufs, 2) != 0) return NULL;
    elem_task_t t;
    memset(&t, 0, sizeof t);
    t.e.x = bufs[0].view.buf, t.e.out = bufs[1].view.buf, t.e.size = size;
    t.e.scale = scale, t.e.offset = offset, t.e.lo = 0, t.e.hi = 255;
    t.fn = PICK(path, requant_span, requant_span_x);
    run_elem(&t, parts);
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* bias_add(x uint8, table int32[256], bias int32[c], out int32, size, c, parts, path=-1) */
static PyObject *py_bias_add(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4];
    long long size, c;
    int parts, path = -1;
    if (!PyArg_ParseTuple(args, "OOOOLLi|i", &objs[0], &objs[1], &objs[2], &objs[3], &size,
                          &c, &parts, &path))
        return NULL;
    if (c < 1 || size % c != 0) {
        PyErr_SetString(PyExc_ValueError, "bias_add: bad sizes");
        return NULL;
    }
    int64_t sizes[4] = {size, 256, c, size};
    int items[4] = {1, 4, 4, 4}, wr[4] = {0, 0, 0, 1};
    buf_t bufs[4];
    if (get_bufs(objs, sizes, items, wr, bufs, 4) != 0) return NULL;
    elem_task_t t;
    memset(&t, 0, sizeof t);
    t.e.x = bufs[0].view.buf, t.e.table = bufs[1].view.buf, t.e.bias = bufs[2].view.buf;
    t.e.out = bufs[3].view.buf, t.e.size = size, t.e.inner = c;
    t.fn = PICK(path, bias_span, bias_span_permute);
    run_elem(&t, parts);
    release(bufs, 4);
    Py_RETURN_NONE;
}

/* clamp_u8(x uint8, out uint8, size, lo, hi, parts, path=-1): min(max(x, lo), hi) */
static PyObject *py_clamp_u8(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[2];
    long long size;
    int lo, hi, parts, path = -1;
    if (!PyArg_ParseTuple(args, "OOLiii|i", &objs[0], &objs[1], &size, &lo, &hi, &parts, &path))
        return NULL;
    if (lo < 0 || lo > 255 || hi < 0 || hi > 255) {
        PyErr_SetString(PyExc_ValueError, "clamp_u8: bounds outside [0, 255]");
        return NULL;
    }
    int64_t sizes[2] = {size, size};
    int items[2] = {1, 1}, wr[2] = {0, 1};
    buf_t bufs[2];
    if (get_bufs(objs, sizes, items, wr, bufs, 2) != 0) return NULL;
    elem_task_t t;
    memset(&t, 0, sizeof t);
    t.e.x = bufs[0].view.buf, t.e.out = bufs[1].view.buf, t.e.size = size;
    t.e.lo = (uint8_t)lo, t.e.hi = (uint8_t)hi;
    t.fn = PICK(path, clamp_span, clamp_span_avx512);
    run_elem(&t, parts);
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* quantize_u8(x float32, out uint8, size, scale, shift, lower, upper, parts, path=-1):
 * QuantizeV2's
 * MIN_FIRST loop: round half away from zero of x * scale, minus shift, clamped to
 * [lower, upper] (NaN: 0, as NumPy's int32 cast gives INT_MIN); float32 throughout. */
static PyObject *py_quantize_u8(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[2];
    long long size;
    float scale, shift, lower, upper;
    int parts, path = -1;
    if (!PyArg_ParseTuple(args, "OOLffffi|i", &objs[0], &objs[1], &size, &scale, &shift, &lower,
                          &upper, &parts, &path))
        return NULL;
    if (!(lower >= 0.0f && upper <= 255.0f)) {
        PyErr_SetString(PyExc_ValueError, "quantize_u8: bounds outside [0, 255]");
        return NULL;
    }
    int64_t sizes[2] = {size, size};
    int items[2] = {4, 1}, wr[2] = {0, 1};
    buf_t bufs[2];
    if (get_bufs(objs, sizes, items, wr, bufs, 2) != 0) return NULL;
    elem_task_t t;
    memset(&t, 0, sizeof t);
    t.e.x = bufs[0].view.buf, t.e.out = bufs[1].view.buf, t.e.size = size;
    t.e.fscale = scale, t.e.fshift = shift, t.e.flower = lower, t.e.fupper = upper;
    t.fn = PICK(path, quantize_span, quantize_span_avx512);
    run_elem(&t, parts);
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------
 * The fused ops (QuantizedConv2DWithBias[AndRelu]AndRequantize, QuantizedMatMulWithBias
 * [AndRelu]AndRequantize): the product of a chunk's rows into int32, then, while those rows
 * are in cache, + bias per column (wrapping, as bias_add), requantize (the same loop as
 * requantize) and clamp to [lo, hi] (the same as clamp_u8): the values of the three
 * elementwise calls on the whole product, in one pass. */

static void fused_epilogue(const gemm_t *g, int32_t *acc, int64_t r0, int64_t nrows) {
    int64_t n = g->n, size = nrows * n;
    const int32_t *b = g->bias;
    for (int64_t r = 0; r < nrows; r++) {
        int32_t *row = acc + r * n;
        for (int64_t j = 0; j < n; j++) row[j] = (int32_t)((uint32_t)row[j] + (uint32_t)b[j]);
    }
    elem_t e;
    memset(&e, 0, sizeof e);
    e.x = acc, e.out = g->out8 + r0 * n, e.size = size;
    e.scale = g->rq_scale, e.offset = g->rq_offset, e.lo = g->lo, e.hi = g->hi;
    g->requant(&e, 0, size);  /* (clamps to [lo, hi]: the Relu in the same pass) */
}

#if QK_X86
/* The same with AVX-512, bias add and requantize in one pass (16 columns at a time, the
 * arithmetic of requant_span_x). */
static QK_AVX512 void fused_epilogue_avx512(const gemm_t *g, int32_t *acc, int64_t r0,
                                            int64_t nrows) {
    int64_t n = g->n;
    uint8_t *out = g->out8 + r0 * n;
    const __m512i sc = _mm512_set1_epi64(g->rq_scale), off = _mm512_set1_epi64(g->rq_offset),
                  lo = _mm512_set1_epi64(g->lo), hi = _mm512_set1_epi64(g->hi);
    for (int64_t r = 0; r < nrows; r++) {
        const int32_t *row = acc + r * n;
        uint8_t *o = out + r * n;
        for (int64_t j = 0; j < n; j += 16) {
            int64_t left = n - j;
            __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
            __m512i v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, row + j),
                                         _mm512_maskz_loadu_epi32(m, g->bias + j));
            __m512i h[2] = {_mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)),
                            _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1))};
            __m128i q[2];
            for (int k = 0; k < 2; k++) {
                __m512i t = _mm512_srai_epi64(_mm512_mullo_epi64(h[k], sc), 32);
                t = _mm512_srai_epi64(_mm512_add_epi64(t, off), 16);
                t = _mm512_min_epi64(_mm512_max_epi64(t, lo), hi);
                q[k] = _mm512_cvtepi64_epi8(t);
            }
            _mm_mask_storeu_epi8(o + j, m, _mm_unpacklo_epi64(q[0], q[1]));
        }
    }
}
#endif

/* Parses the epilogue's (scale, offset, lo, hi) into g. */
static int fused_setup(gemm_t *g, PyObject *epi, int path) {
    long long scale, offset;
    int lo, hi;
    if (!PyArg_ParseTuple(epi, "LLii", &scale, &offset, &lo, &hi)) return -1;
    if (lo < 0 || lo > 255 || hi < 0 || hi > 255) {
        PyErr_SetString(PyExc_ValueError, "fused: bounds outside [0, 255]");
        return -1;
    }
    g->rq_scale = scale, g->rq_offset = offset, g->lo = (uint8_t)lo, g->hi = (uint8_t)hi;
    g->requant = PICK(path < 0 ? -1 : path, requant_span, requant_span_x);
    g->epi = fused_epilogue;
#if QK_X86
    if ((path < 0 || path >= 2) && has_avx512()) g->epi = fused_epilogue_avx512;
#endif
    return 0;
}

/* gemm_fused(a, b, bias int32[n], out uint8, m, k, n, za, zb, (scale, offset, lo, hi),
 *            path, parts, cell=None, deadline=0) -> bool */
static PyObject *py_gemm_fused(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4], *epi, *cell = Py_None;
    long long m, k, n;
    int za, zb, path, parts;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "OOOOLLLiiO!ii|Od", &objs[0], &objs[1], &objs[2], &objs[3],
                          &m, &k, &n, &za, &zb, &PyTuple_Type, &epi, &path, &parts, &cell,
                          &deadline))
        return NULL;
    if (m < 0 || k < 1 || n < 1) {
        PyErr_SetString(PyExc_ValueError, "gemm_fused: bad sizes");
        return NULL;
    }
    gemm_t g;
    memset(&g, 0, sizeof g);
    if (fused_setup(&g, epi, path) != 0) return NULL;
    int64_t sizes[4] = {m * k, k * n, n, m * n};
    int items[4] = {1, 1, 4, 1}, wr[4] = {0, 0, 0, 1};
    buf_t bufs[4];
    if (get_bufs(objs, sizes, items, wr, bufs, 4) != 0) return NULL;
    g.m = m, g.n = n, g.k = k, g.za = za;
    g.a = bufs[0].view.buf;
    g.bias = bufs[2].view.buf;
    g.out8 = bufs[3].view.buf;
    PyObject *r = run_gemm(&g, bufs[1].view.buf, path, zb, parts, cell, deadline);
    release(bufs, 4);
    return r;
}

/* conv_fused(x, w, bias int32[f], out uint8, (n, h, w, c), (kh, kw, f),
 *            (sh, sw, pt, pl, oh, ow), zx, zw, (scale, offset, lo, hi), path, parts,
 *            cell=None, deadline=0) -> bool */
static PyObject *py_conv_fused(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[4], *epi, *cell = Py_None;
    long long n, h, w, c, kh, kw, f, sh, sw, pt, pl, oh, ow;
    int zx, zw, path, parts;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "OOOO(LLLL)(LLL)(LLLLLL)iiO!ii|Od", &objs[0], &objs[1],
                          &objs[2], &objs[3], &n, &h, &w, &c, &kh, &kw, &f, &sh, &sw, &pt,
                          &pl, &oh, &ow, &zx, &zw, &PyTuple_Type, &epi, &path, &parts, &cell,
                          &deadline))
        return NULL;
    if (n < 0 || h < 1 || w < 1 || c < 1 || kh < 1 || kw < 1 || f < 1 || sh < 1 || sw < 1 ||
            pt < 0 || pl < 0 || oh < 0 || ow < 0 || zx < 0 || zx > 255) {
        PyErr_SetString(PyExc_ValueError, "conv_fused: bad geometry");
        return NULL;
    }
    gemm_t g;
    memset(&g, 0, sizeof g);
    if (fused_setup(&g, epi, path) != 0) return NULL;
    int64_t sizes[4] = {n * h * w * c, kh * kw * c * f, f, n * oh * ow * f};
    int items[4] = {1, 1, 4, 1}, wr[4] = {0, 0, 0, 1};
    buf_t bufs[4];
    if (get_bufs(objs, sizes, items, wr, bufs, 4) != 0) return NULL;
    g.m = n * oh * ow, g.n = f, g.k = kh * kw * c, g.za = zx;
    g.a = bufs[0].view.buf;
    g.bias = bufs[2].view.buf;
    g.out8 = bufs[3].view.buf;
    g.h = h, g.w = w, g.c = c, g.oh = oh, g.ow = ow, g.kh = kh, g.kw = kw;
    g.sh = sh, g.sw = sw, g.pt = pt, g.pl = pl, g.pad = (uint8_t)zx;
    PyObject *r = run_gemm(&g, bufs[1].view.buf, path, zw, parts, cell, deadline);
    release(bufs, 4);
    return r;
}

/* best_path() -> 0 (plain C), 1 (AVX2) or 2 (AVX-512 VNNI): what this CPU runs. */
static PyObject *py_best_path(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(cpu_path());
}

static PyMethodDef methods[] = {
    {"gemm", py_gemm, METH_VARARGS, "(a - za)(b - zb) of quint8 a, b into int32 out."},
    {"conv", py_conv, METH_VARARGS, "QuantizedConv2D's product (NHWC, explicit padding)."},
    {"requantize", py_requantize, METH_VARARGS, "qint32 -> quint8 (TF's fixed point)."},
    {"bias_add", py_bias_add, METH_VARARGS, "table[x] + bias per channel (int32)."},
    {"clamp_u8", py_clamp_u8, METH_VARARGS, "min(max(x, lo), hi) of uint8."},
    {"quantize_u8", py_quantize_u8, METH_VARARGS, "QuantizeV2's MIN_FIRST loop to quint8."},
    {"gemm_fused", py_gemm_fused, METH_VARARGS, "gemm + bias, requantize, clamp to uint8."},
    {"conv_fused", py_conv_fused, METH_VARARGS, "conv + bias, requantize, clamp to uint8."},
    {"best_path", py_best_path, METH_NOARGS, "The product path this CPU runs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_qkernels",
    "Eight-bit kernels in C (tensorflux/kernels/cpu/_qnative.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__qkernels(void) {
    static int once;
    if (!once) {
        pthread_atfork(NULL, NULL, forget_helpers_in_child);
        once = 1;
    }
    return PyModule_Create(&module);
}
