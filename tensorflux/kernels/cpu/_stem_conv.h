/* stem_conv: the forward convolution of a net's first layer (few input channels, a large
 * window at a stride: GoogLeNet's and ResNet-50's 7x7/2 on 3 channels, AlexNet's 11x11/4)
 * read straight from the padded NHWC input, without a patch matrix. Included by _native.c
 * after _thin_gemm.h (it uses that file's buffers, stop, pool and AVX-512 helpers).
 *
 * im2col copies kh*kw*C values per output pixel (59 MB for the 7x7/2 stem at batch 8) and
 * then multiplies them by the (kh*kw*C, F) filter. But one kernel row of a pixel's window
 * is kw*C consecutive values of one input row (NHWC), and the same values for the next
 * pixel start sw*C further on: a window row is a row of a matrix with row stride sw*C over
 * the input row. So here an output tile of 6 consecutive pixels x 64 filters keeps its 24
 * AVX-512 sums in registers over the whole window: per kernel row i and each of its kw*C
 * values t, the filter's row (i, t) (4 vectors, from cache: the filter is a few tens of
 * KB) and the 6 pixels' values broadcast, 24 FMAs. Output rows (image, row) are the chunks
 * the pool's threads claim. Each output is one FMA chain over (i, t) in order, whoever
 * computes it (the same bits on any number of threads); rounding differs from im2col's
 * product as one blocking of a GEMM from another. Where the CPU has AVX-512F. */

#define STEM_MR 6  /* output pixels of a tile */

#if NG_X86
#pragma GCC push_options
#pragma GCC optimize("no-wrapv")

/* Pixels [0, MR) at input offsets x + p * pix (pix = sw*C) times the filter's columns
 * [0, 16 NV) (stem_full: 64 of them; stem_one: the 16 or fewer of `mask`) into out (row
 * stride f per pixel); the window's value u (kernel row u / (kw*C), value u % (kw*C) of
 * it) at x + off[u] (off[0] = 0), 1 <= taps. */
/* The tile's small loops unrolled by hand: without it GCC 12 at -O3 keeps the 24 sums in a
 * stack array and stores them on every step of the window's loop (3x slower). */
#define STEM_UNROLL _Pragma("GCC unroll 8")
#define STEM_TILE(MR, NV, NAME, LOAD, STORE)                                                \
    __attribute__((target("avx512f"))) static void NAME(                                    \
            __mmask16 mask, const float *x, int64_t pix, const int64_t *off, int64_t taps,  \
            const float *w, int64_t f, float *out) {                                        \
        __m512 acc[MR][NV]; /* from the first value's products */                           \
        STEM_UNROLL for (int v = 0; v < NV; v++) {                                          \
            const __m512 b0 = LOAD(w + 16 * v);                                             \
            STEM_UNROLL for (int p = 0; p < MR; p++)                                        \
                acc[p][v] = _mm512_mul_ps(_mm512_set1_ps(x[p * pix]), b0);                  \
        }                                                                                   \
        for (int64_t u = 1; u < taps; u++) {                                                \
            const float *wt = w + u * f, *xu = x + off[u];                                  \
            __m512 bv[NV];                                                                  \
            STEM_UNROLL for (int v = 0; v < NV; v++)                                        \
                bv[v] = LOAD(wt + 16 * v);                                                  \
            STEM_UNROLL for (int p = 0; p < MR; p++) {                                      \
                const __m512 a = _mm512_set1_ps(xu[p * pix]);                               \
                STEM_UNROLL for (int v = 0; v < NV; v++)                                    \
                    acc[p][v] = _mm512_fmadd_ps(a, bv[v], acc[p][v]);                      \
            }                                                                               \
        }                                                                                   \
        STEM_UNROLL for (int p = 0; p < MR; p++)                                            \
            STEM_UNROLL for (int v = 0; v < NV; v++)                                        \
                STORE(out + p * f + 16 * v, acc[p][v]);                                     \
    }
#define STEM_FULL_LOAD(p) _mm512_loadu_ps(p)
#define STEM_FULL_STORE(p, x) _mm512_storeu_ps(p, x)
#define STEM_MASK_LOAD(p) _mm512_maskz_loadu_ps(mask, p)
#define STEM_MASK_STORE(p, x) _mm512_mask_storeu_ps(p, mask, x)
#define STEM_TILES(MR)                                                                      \
    STEM_TILE(MR, 4, stem_full_##MR, STEM_FULL_LOAD, STEM_FULL_STORE)                       \
    STEM_TILE(MR, 1, stem_one_##MR, STEM_MASK_LOAD, STEM_MASK_STORE)
STEM_TILES(1)
STEM_TILES(2)
STEM_TILES(3)
STEM_TILES(4)
STEM_TILES(5)
STEM_TILES(6)


typedef void (*stem_tile_fn)(__mmask16, const float *, int64_t, const int64_t *, int64_t,
                             const float *, int64_t, float *);
static const stem_tile_fn stem_full[STEM_MR] = {stem_full_1, stem_full_2, stem_full_3,
                                                stem_full_4, stem_full_5, stem_full_6};
static const stem_tile_fn stem_one[STEM_MR] = {stem_one_1, stem_one_2, stem_one_3,
                                               stem_one_4, stem_one_5, stem_one_6};
#pragma GCC pop_options
#endif

typedef struct {
    const float *x, *w;
    float *out;
    const int64_t *off; /* the window's offsets in the input (stem_tile) */
    int64_t hp, wp, c, kh, kw, sh, sw, oh, ow, f;
} stem_t;

static void stem_chunk(void *p, int64_t chunk) {
#if NG_X86
    const stem_t *s = (const stem_t *)p;
    const int64_t b = chunk / s->oh, r = chunk % s->oh;
    const int64_t row = s->wp * s->c, span = s->kw * s->c, pix = s->sw * s->c;
    const float *xr = s->x + (b * s->hp + r * s->sh) * row;
    float *outr = s->out + (b * s->oh + r) * s->ow * s->f;
    for (int64_t j = 0; j < s->f;) {
        const int64_t width = s->f - j < 64 ? (s->f - j < 16 ? s->f - j : 16) : 64;
        const __mmask16 mask = (__mmask16)((1u << (width < 16 ? width : 16)) - 1u);
        const stem_tile_fn *tiles = width == 64 ? stem_full : stem_one;
        for (int64_t q = 0; q < s->ow; q += STEM_MR) {
            const int mr = s->ow - q < STEM_MR ? (int)(s->ow - q) : STEM_MR;
            tiles[mr - 1](mask, xr + q * pix, pix, s->off, s->kh * span, s->w + j, s->f,
                          outr + q * s->f + j);
        }
        j += width;
    }
#else
    (void)p;
    (void)chunk;
#endif
}

/* stem_conv(xp, w, out, sh, sw, parts[, stop, deadline]): out (N, oh, ow, F) = the VALID
 * convolution of padded NHWC xp (N, Hp, Wp, C) with w (kh, kw, C, F) at strides (sh, sw),
 * float32, all C-contiguous, oh and ow as the strides give them. None without AVX-512F
 * (nothing written); False if stopped. */
static PyObject *py_stem_conv(PyObject *self, PyObject *args) {
    PyObject *objs[3], *cell = NULL;
    int64_t sh, sw;
    int parts;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "OOOLLi|Od", &objs[0], &objs[1], &objs[2], &sh, &sw, &parts,
                          &cell, &deadline))
        return NULL;
    if (!thin_nn_ready()) Py_RETURN_NONE;
    static const int writable[3] = {0, 0, 1};
    buf_t bufs[3];
    char code;
    if (get_floats(objs, writable, bufs, 3, &code) != 0) return NULL;
    const Py_buffer *xv = &bufs[0].view, *wv = &bufs[1].view, *ov = &bufs[2].view;
    int bad = code != 'f' || xv->ndim != 4 || wv->ndim != 4 || ov->ndim != 4 || sh < 1 ||
              sw < 1;
    stem_t s;
    if (!bad) {
        s.hp = xv->shape[1];
        s.wp = xv->shape[2];
        s.c = xv->shape[3];
        s.kh = wv->shape[0];
        s.kw = wv->shape[1];
        s.f = wv->shape[3];
        s.sh = sh;
        s.sw = sw;
        s.oh = ov->shape[1];
        s.ow = ov->shape[2];
        bad = wv->shape[2] != s.c || ov->shape[0] != xv->shape[0] || ov->shape[3] != s.f ||
              s.kh > s.hp || s.kw > s.wp || s.oh != (s.hp - s.kh) / sh + 1 ||
              s.ow != (s.wp - s.kw) / sw + 1;
    }
    if (bad) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "stem_conv takes float32 NHWC xp, (kh, kw, C, F) "
                        "w and the VALID output");
        return NULL;
    }
    s.x = (const float *)xv->buf;
    s.w = (const float *)wv->buf;
    s.out = (float *)ov->buf;
    const int64_t count = xv->shape[0] * s.oh;
    if (count == 0 || s.ow == 0 || s.f == 0) {
        release(bufs, 3);
        Py_RETURN_TRUE;
    }
    const int64_t taps = s.kh * s.kw * s.c;
    int64_t *off = (int64_t *)malloc((size_t)taps * sizeof(int64_t));
    if (off == NULL) {
        release(bufs, 3);
        return PyErr_NoMemory();
    }
    for (int64_t u = 0; u < taps; u++)
        off[u] = (u / (s.kw * s.c)) * s.wp * s.c + u % (s.kw * s.c);
    s.off = off;
    stop_t stop;
    Py_buffer cell_view;
    int cell_held;
    if (get_stop(cell, deadline, &stop, &cell_view, &cell_held) != 0) {
        free(off);
        release(bufs, 3);
        return NULL;
    }
    const int polled = stop.cell != NULL || stop.deadline > 0;
    if (parts < 1) parts = 1;
    int64_t skipped = 0;
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    skipped = parts > 1 && count > 1
                  ? run_all(stem_chunk, &s, count, parts, polled ? &stop : NULL)
                  : run_serial(stem_chunk, &s, count, polled ? &stop : NULL);
    Py_END_ALLOW_THREADS
    free(off);
    if (cell_held) PyBuffer_Release(&cell_view);
    release(bufs, 3);
    return done_or_stopped(skipped);
}
