/* tensorflux.lib._philox: TensorFlow's Philox4x32-10 stream and the distributions its random
 * kernels draw from it, in C. Python side: tensorflux/lib/philox.py, whose NumPy functions
 * are the reference these loops must equal bit for bit (tests/lib/test_philox_native.py).
 *
 * Optional, like the other extensions (setup.py builds it with optional=True): without it
 * lib/philox.py runs its NumPy paths, which give the same values, 20-100x slower for
 * normals (they emulate glibc's logf and sincosf in double arithmetic).
 *
 * One entry point, fill(kind, key, counter_lo, counter_hi, out, lo, span), writes len(out)
 * values of one distribution from the stream at (key, counter) -- the layout of TF's
 * StatelessRandomGetKeyCounter: key = the two key words (low first), counter = the 128-bit
 * block counter (low half first). What TF's kernels do with the stream (see philox.py's
 * docstring):
 *   - fixed-sample distributions take consecutive words: a block (4 words) gives 4 float32
 *     / half / int32 values or 2 float64 / int64 ones (two words each);
 *   - normals are Box-Muller pairs of words (float32) or of word pairs (float64), through
 *     the C library's logf/sincosf and log/sincos, as TF's BoxMullerFloat/Double on Linux;
 *   - truncated normals: output group g (4 values, float64 2) starts at block
 *     counter + 256 * g (float64 128 * g) and takes the candidates with |x| < 2 in order.
 * Built with -ffp-contract=off (setup.py): no FMA contraction, the roundings are TF's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define _GNU_SOURCE 1
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* glibc declares sincos/sincosf under _GNU_SOURCE only; Python.h includes math.h first. */
extern void sincosf(float, float *, float *);
extern void sincos(double, double *, double *);

enum {
    K_WORDS = 0,      /* raw uint32 words (full-range int32/uint32; int64 as pairs) */
    K_UNIFORM_F32 = 1,
    K_UNIFORM_F64 = 2,
    K_UNIFORM_LOW = 3, /* float32 (w & (2^lo - 1)) / 2^lo: half (lo 10), bfloat16 (lo 7) */
    K_NORMAL_F32 = 4,
    K_NORMAL_F64 = 5,
    K_TRUNC_F32 = 6,
    K_TRUNC_F64 = 7,
    K_INT32 = 8,       /* lo + w % span, uint32 arithmetic */
    K_INT64 = 9,       /* lo + (w0 | w1 << 32) % span, uint64 arithmetic */
};

typedef struct {
    uint32_t c[4];
    uint32_t k[2];
} stream_t;

static inline void stream_init(stream_t *s, uint64_t key, uint64_t lo, uint64_t hi) {
    s->k[0] = (uint32_t)key;
    s->k[1] = (uint32_t)(key >> 32);
    s->c[0] = (uint32_t)lo;
    s->c[1] = (uint32_t)(lo >> 32);
    s->c[2] = (uint32_t)hi;
    s->c[3] = (uint32_t)(hi >> 32);
}

static inline void stream_skip(stream_t *s, uint64_t blocks) {
    uint64_t lo = ((uint64_t)s->c[1] << 32) | s->c[0];
    uint64_t hi = ((uint64_t)s->c[3] << 32) | s->c[2];
    uint64_t nlo = lo + blocks;
    if (nlo < lo)
        hi++;
    s->c[0] = (uint32_t)nlo;
    s->c[1] = (uint32_t)(nlo >> 32);
    s->c[2] = (uint32_t)hi;
    s->c[3] = (uint32_t)(hi >> 32);
}

/* The block at the current counter; the counter moves on by one. */
static inline void stream_block(stream_t *s, uint32_t out[4]) {
    uint32_t c0 = s->c[0], c1 = s->c[1], c2 = s->c[2], c3 = s->c[3];
    uint32_t k0 = s->k[0], k1 = s->k[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        if (r < 9) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
    stream_skip(s, 1);
}

static inline float u32_to_float(uint32_t x) {
    uint32_t bits = (x & 0x7FFFFFu) | 0x3F800000u;
    float f;
    memcpy(&f, &bits, 4);
    return f - 1.0f;
}

static inline double u64_to_double(uint32_t x0, uint32_t x1) {
    uint64_t bits = ((uint64_t)(x0 & 0xFFFFFu) << 32) | x1 | ((uint64_t)1023 << 52);
    double d;
    memcpy(&d, &bits, 8);
    return d - 1.0;
}

static inline void box_muller_f(uint32_t x0, uint32_t x1, float *f0, float *f1) {
    float u1 = u32_to_float(x0);
    if (u1 < 1.0e-7f)
        u1 = 1.0e-7f;
    const float v1 = (float)(2.0 * M_PI * (double)u32_to_float(x1));
    const float u2 = sqrtf(-2.0f * logf(u1));
    float s, c;
    sincosf(v1, &s, &c);
    *f0 = s * u2;
    *f1 = c * u2;
}

static inline void box_muller_d(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, double *d0,
                                double *d1) {
    double u1 = u64_to_double(x0, x1);
    if (u1 < 1.0e-7)
        u1 = 1.0e-7;
    const double v1 = 2.0 * M_PI * u64_to_double(x2, x3);
    const double u2 = sqrt(-2.0 * log(u1));
    double s, c;
    sincos(v1, &s, &c);
    *d0 = s * u2;
    *d1 = c * u2;
}

/* Words of the stream one at a time (TF's SingleSampleAdapter). */
typedef struct {
    stream_t s;
    uint32_t w[4];
    int used;
} single_t;

static inline uint32_t single_next(single_t *a) {
    if (a->used == 4) {
        stream_block(&a->s, a->w);
        a->used = 0;
    }
    return a->w[a->used++];
}

static void fill_truncated_f32(stream_t *s, float *out, Py_ssize_t n) {
    for (Py_ssize_t g = 0; g * 4 < n; g++) {
        single_t a = {.s = *s, .used = 4};
        stream_skip(&a.s, (uint64_t)g * 256);
        float group[4];
        int index = 0;
        while (index < 4) {
            float f[2];
            uint32_t x0 = single_next(&a);
            uint32_t x1 = single_next(&a);
            box_muller_f(x0, x1, &f[0], &f[1]);
            for (int i = 0; i < 2 && index < 4; i++)
                if (fabsf(f[i]) < 2.0f)
                    group[index++] = f[i];
        }
        Py_ssize_t take = n - g * 4 < 4 ? n - g * 4 : 4;
        memcpy(out + g * 4, group, (size_t)take * sizeof(float));
    }
}

static void fill_truncated_f64(stream_t *s, double *out, Py_ssize_t n) {
    for (Py_ssize_t g = 0; g * 2 < n; g++) {
        single_t a = {.s = *s, .used = 4};
        stream_skip(&a.s, (uint64_t)g * 128);
        double group[2];
        int index = 0;
        while (index < 2) {
            double d[2];
            uint32_t x0 = single_next(&a), x1 = single_next(&a);
            uint32_t x2 = single_next(&a), x3 = single_next(&a);
            box_muller_d(x0, x1, x2, x3, &d[0], &d[1]);
            for (int i = 0; i < 2 && index < 2; i++)
                if (fabs(d[i]) < 2.0)
                    group[index++] = d[i];
        }
        Py_ssize_t take = n - g * 2 < 2 ? n - g * 2 : 2;
        memcpy(out + g * 2, group, (size_t)take * sizeof(double));
    }
}

/* n values of a fixed-sample distribution: `per` values per block. */
static void fill_fixed(int kind, stream_t *s, char *out, Py_ssize_t n, uint64_t lo,
                       uint64_t span) {
    uint32_t w[4];
    const int per = (kind == K_UNIFORM_F64 || kind == K_NORMAL_F64 || kind == K_INT64) ? 2 : 4;
    const float low_scale = kind == K_UNIFORM_LOW ? 1.0f / (float)(1u << lo) : 0.0f;
    const uint32_t low_mask = kind == K_UNIFORM_LOW ? (1u << lo) - 1u : 0u;
    for (Py_ssize_t i = 0; i < n; i += per) {
        stream_block(s, w);
        int m = n - i < per ? (int)(n - i) : per;
        switch (kind) {
        case K_WORDS:
            memcpy(out + i * 4, w, (size_t)m * 4);
            break;
        case K_UNIFORM_F32:
            for (int j = 0; j < m; j++)
                ((float *)out)[i + j] = u32_to_float(w[j]);
            break;
        case K_UNIFORM_LOW:
            for (int j = 0; j < m; j++)
                ((float *)out)[i + j] = (float)(w[j] & low_mask) * low_scale;
            break;
        case K_UNIFORM_F64:
            for (int j = 0; j < m; j++)
                ((double *)out)[i + j] = u64_to_double(w[2 * j], w[2 * j + 1]);
            break;
        case K_INT32:
            for (int j = 0; j < m; j++)
                ((uint32_t *)out)[i + j] = (uint32_t)lo + w[j] % (uint32_t)span;
            break;
        case K_INT64:
            for (int j = 0; j < m; j++) {
                uint64_t bits = (uint64_t)w[2 * j] | ((uint64_t)w[2 * j + 1] << 32);
                ((uint64_t *)out)[i + j] = lo + bits % span;
            }
            break;
        case K_NORMAL_F32: {
            float f[4];
            box_muller_f(w[0], w[1], &f[0], &f[1]);
            box_muller_f(w[2], w[3], &f[2], &f[3]);
            memcpy(out + i * 4, f, (size_t)m * 4);
            break;
        }
        case K_NORMAL_F64: {
            double d[2];
            box_muller_d(w[0], w[1], w[2], w[3], &d[0], &d[1]);
            memcpy(out + i * 8, d, (size_t)m * 8);
            break;
        }
        }
    }
}

static int item_size(int kind) {
    switch (kind) {
    case K_UNIFORM_F64:
    case K_NORMAL_F64:
    case K_TRUNC_F64:
    case K_INT64:
        return 8;
    default:
        return 4;
    }
}

static PyObject *py_fill(PyObject *self, PyObject *args) {
    int kind;
    unsigned long long key, clo, chi, lo = 0, span = 0;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "iKKKw*|KK", &kind, &key, &clo, &chi, &buf, &lo, &span))
        return NULL;
    if (kind < K_WORDS || kind > K_INT64 || !PyBuffer_IsContiguous(&buf, 'C')) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "fill: unknown kind or a non-contiguous buffer");
        return NULL;
    }
    if ((kind == K_INT32 || kind == K_INT64) && span == 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "fill: an integer range needs span > 0");
        return NULL;
    }
    if (kind == K_UNIFORM_LOW && (lo < 1 || lo > 23)) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "fill: mantissa bits must be in [1, 23]");
        return NULL;
    }
    const Py_ssize_t n = buf.len / item_size(kind);
    stream_t s;
    stream_init(&s, key, clo, chi);
    Py_BEGIN_ALLOW_THREADS
    if (kind == K_TRUNC_F32)
        fill_truncated_f32(&s, (float *)buf.buf, n);
    else if (kind == K_TRUNC_F64)
        fill_truncated_f64(&s, (double *)buf.buf, n);
    else
        fill_fixed(kind, &s, (char *)buf.buf, n, lo, span);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
}

/* TF's RandomShuffle order: a Fisher-Yates pass from the front over 0..n-1, row i swapped
 * with row i + w % (n - i), w the stream's i-th word (SingleSampleAdapter); n < 2^31.
 * With (start, stop): only the swaps of rows start..stop-1, the stream positioned at word
 * `start` (out must hold the first `start` swaps' result; start 0 fills it with 0..n-1),
 * so that a long pass can be made in pieces that give the permutation of one call. */
static PyObject *py_permutation(PyObject *self, PyObject *args) {
    unsigned long long key, clo, chi;
    long long start = 0, stop = -1;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "KKKw*|LL", &key, &clo, &chi, &buf, &start, &stop))
        return NULL;
    const Py_ssize_t n = buf.len / 8;
    if (!PyBuffer_IsContiguous(&buf, 'C') || n >= 0x7FFFFFFF) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "permutation: a contiguous int64 buffer of fewer "
                                          "than 2^31 elements");
        return NULL;
    }
    if (stop < 0 || stop > n - 1) stop = n - 1 > 0 ? n - 1 : 0;
    if (start < 0 || start > stop) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "permutation: 0 <= start <= stop expected");
        return NULL;
    }
    int64_t *out = (int64_t *)buf.buf;
    single_t a = {.used = 4};
    stream_init(&a.s, key, clo, chi);
    Py_BEGIN_ALLOW_THREADS
    if (start == 0)
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = i;
    stream_skip(&a.s, (uint64_t)start / 4);  /* word `start`: 4 words a block */
    for (long long w = 0; w < start % 4; w++)
        (void)single_next(&a);
    for (Py_ssize_t i = (Py_ssize_t)start; i < (Py_ssize_t)stop; i++) {
        Py_ssize_t j = i + (Py_ssize_t)(single_next(&a) % (uint32_t)(n - i));
        int64_t t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
}

/* The C library's float functions TF's kernels call, element by element: 0 log1pf(a),
 * 1 expm1f(a), 2 powf(a, b); a, b and out are float32 buffers of one length. */
static PyObject *py_libm_float(PyObject *self, PyObject *args) {
    int kind;
    Py_buffer a, b, out;
    if (!PyArg_ParseTuple(args, "iy*y*w*", &kind, &a, &b, &out))
        return NULL;
    const Py_ssize_t n = out.len / 4;
    if (kind < 0 || kind > 2 || a.len != out.len || (kind == 2 && b.len != out.len)
        || !PyBuffer_IsContiguous(&a, 'C') || !PyBuffer_IsContiguous(&b, 'C')
        || !PyBuffer_IsContiguous(&out, 'C')) {
        PyBuffer_Release(&a);
        PyBuffer_Release(&b);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "libm_float: unknown kind or mismatched buffers");
        return NULL;
    }
    const float *x = (const float *)a.buf, *y = (const float *)b.buf;
    float *o = (float *)out.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        o[i] = kind == 0 ? log1pf(x[i]) : kind == 1 ? expm1f(x[i]) : powf(x[i], y[i]);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* libm_double(kind, a, out): out = log(a) (kind 0) or exp(a) (kind 1), float64 buffers of
 * one length, each value from the C library (what TensorFlow's kernels compute). */
static PyObject *py_libm_double(PyObject *self, PyObject *args) {
    int kind;
    Py_buffer a, out;
    if (!PyArg_ParseTuple(args, "iy*w*", &kind, &a, &out))
        return NULL;
    const Py_ssize_t n = out.len / 8;
    if (kind < 0 || kind > 1 || a.len != out.len || !PyBuffer_IsContiguous(&a, 'C')
        || !PyBuffer_IsContiguous(&out, 'C')) {
        PyBuffer_Release(&a);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "libm_double: unknown kind or mismatched buffers");
        return NULL;
    }
    const double *x = (const double *)a.buf;
    double *o = (double *)out.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        o[i] = kind == 0 ? log(x[i]) : exp(x[i]);
    PyBuffer_Release(&a);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* The tries of TF's LogUniformSampler: two 32-bit words each (low word first), read from
 * `words` (pairs of them) or, with words NULL, made from the stream `s` as they are
 * needed (try i takes words 2i and 2i + 1 of the stream: half a block); at most `pairs`
 * tries either way. */
typedef struct {
    const uint32_t *words;
    Py_ssize_t pairs;
    stream_t s;
    uint32_t block[4];
} tries_t;

static inline int next_try(tries_t *t, Py_ssize_t i, uint32_t *w0, uint32_t *w1) {
    if (i >= t->pairs) return 0;
    if (t->words != NULL) {
        *w0 = t->words[2 * i];
        *w1 = t->words[2 * i + 1];
        return 1;
    }
    if ((i & 1) == 0) stream_block(&t->s, t->block);
    *w0 = t->block[2 * (i & 1)];
    *w1 = t->block[2 * (i & 1) + 1];
    return 1;
}

/* Each try is (int64)exp(u * log_range) - 1 mod range, u the try's double in [0, 1) and
 * exp the C library's. Fills o (n values) with the first n tries, or with `unique` with
 * the first n distinct values in the order the tries find them; returns the tries made,
 * -1 when they ran out first, -2 without memory. */
static Py_ssize_t log_uniform_tries(tries_t *t, int64_t *o, Py_ssize_t n, long long range,
                                    double log_range, int unique) {
    /* the distinct values so far: open addressing over a power of two >= 4n slots */
    size_t cap = 16;
    while (unique && cap < 4 * (size_t)n) cap <<= 1;
    int64_t *seen = unique ? PyMem_RawMalloc(cap * sizeof(int64_t)) : NULL;
    if (unique && seen == NULL) return -2;
    for (size_t i = 0; unique && i < cap; i++) seen[i] = -1;
    Py_ssize_t tries = 0, found = 0;
    uint32_t w0, w1;
    while (found < n) {
        if (!next_try(t, tries, &w0, &w1)) {
            tries = -1;
            break;
        }
        double u = u64_to_double(w0, w1);
        int64_t v = ((int64_t)exp(u * log_range) - 1) % range;
        tries++;
        if (unique) {
            size_t h = ((uint64_t)v * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (seen[h] != -1 && seen[h] != v) h = (h + 1) & (cap - 1);
            if (seen[h] == v) continue;
            seen[h] = v;
        }
        o[found++] = v;
    }
    PyMem_RawFree(seen);
    return tries;
}

/* log_uniform(words, out, range, log_range, unique): TF's LogUniformSampler over a
 * stream of 32-bit words (two per try, low word first), as log_uniform_tries; returns the
 * tries made, or -1 when the words ran out first (the caller draws some other way). */
static PyObject *py_log_uniform(PyObject *self, PyObject *args) {
    Py_buffer w, out;
    long long range;
    double log_range;
    int unique;
    if (!PyArg_ParseTuple(args, "y*w*Ldp", &w, &out, &range, &log_range, &unique))
        return NULL;
    if (range < 1 || w.len % 4 || out.len % 8 || !PyBuffer_IsContiguous(&w, 'C')
        || !PyBuffer_IsContiguous(&out, 'C')) {
        PyBuffer_Release(&w);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "log_uniform: uint32 words, int64 out, range >= 1");
        return NULL;
    }
    tries_t t;
    t.words = (const uint32_t *)w.buf;
    t.pairs = w.len / 8;
    Py_ssize_t tries = log_uniform_tries(&t, (int64_t *)out.buf, out.len / 8, range,
                                         log_range, unique);
    PyBuffer_Release(&w);
    PyBuffer_Release(&out);
    if (tries == -2) return PyErr_NoMemory();
    return PyLong_FromSsize_t(tries);
}

/* log_uniform_at(key, counter_lo, counter_hi, out, range, log_range, unique, max_tries):
 * log_uniform over the words of the stream at (key, counter), made as the tries need
 * them (no buffer of words); at most max_tries tries, else -1. */
static PyObject *py_log_uniform_at(PyObject *self, PyObject *args) {
    unsigned long long key, clo, chi;
    Py_buffer out;
    long long range;
    double log_range;
    int unique;
    Py_ssize_t max_tries;
    if (!PyArg_ParseTuple(args, "KKKw*Ldpn", &key, &clo, &chi, &out, &range, &log_range,
                          &unique, &max_tries))
        return NULL;
    if (range < 1 || out.len % 8 || max_tries < 0 || !PyBuffer_IsContiguous(&out, 'C')) {
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "log_uniform_at: int64 out, range >= 1, "
                                          "max_tries >= 0");
        return NULL;
    }
    tries_t t;
    t.words = NULL;
    t.pairs = max_tries;
    stream_init(&t.s, key, clo, chi);
    Py_ssize_t tries = log_uniform_tries(&t, (int64_t *)out.buf, out.len / 8, range,
                                         log_range, unique);
    PyBuffer_Release(&out);
    if (tries == -2) return PyErr_NoMemory();
    return PyLong_FromSsize_t(tries);
}

/* log_uniform_counts(values, out, log_range, num_sampled, num_tries): the expected count
 * of each value under TF's LogUniformSampler, as its kernel computes it: the probability
 * p = (float)(log((v + 2) / (v + 1)) / log_range) in double (the C library's log), then
 * p * num_sampled in float when no try was repeated, else -expm1f(num_tries * log1pf(-p)),
 * each step in float. values: int64; out: float32 of the same length. */
static PyObject *py_log_uniform_counts(PyObject *self, PyObject *args) {
    Py_buffer in, out;
    double log_range;
    long long num_sampled, num_tries;
    if (!PyArg_ParseTuple(args, "y*w*dLL", &in, &out, &log_range, &num_sampled, &num_tries))
        return NULL;
    const Py_ssize_t n = in.len / 8;
    if (in.len % 8 || out.len != n * 4 || !PyBuffer_IsContiguous(&in, 'C')
        || !PyBuffer_IsContiguous(&out, 'C')) {
        PyBuffer_Release(&in);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "log_uniform_counts: int64 values, float32 out of "
                                          "one length");
        return NULL;
    }
    const int64_t *v = (const int64_t *)in.buf;
    float *o = (float *)out.buf;
    const float sampled = (float)num_sampled, tries = (float)num_tries;
    for (Py_ssize_t i = 0; i < n; i++) {
        const double x = (double)v[i];
        const float p = (float)(log((x + 2.0) / (x + 1.0)) / log_range);
        o[i] = num_tries == num_sampled ? p * sampled : -expm1f(tries * log1pf(-p));
    }
    PyBuffer_Release(&in);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* Walker's alias table as TF's DistributionSampler builds it: p_i = (w_i * n) / sum in
 * double (w_i * n in float), small and large buckets paired from the backs of two stacks
 * filled in index order; leftovers certain and their own alias. */
static PyObject *py_alias_table(PyObject *self, PyObject *args) {
    Py_buffer w, prob, alt;
    if (!PyArg_ParseTuple(args, "y*w*w*", &w, &prob, &alt))
        return NULL;
    const Py_ssize_t n = w.len / 4;
    if (prob.len != w.len || alt.len != n * 8 || !PyBuffer_IsContiguous(&w, 'C')
        || !PyBuffer_IsContiguous(&prob, 'C') || !PyBuffer_IsContiguous(&alt, 'C')) {
        PyBuffer_Release(&w);
        PyBuffer_Release(&prob);
        PyBuffer_Release(&alt);
        PyErr_SetString(PyExc_ValueError, "alias_table: float32 weights, float32 prob and "
                                          "int64 alt of one length");
        return NULL;
    }
    const float *weights = (const float *)w.buf;
    float *p_out = (float *)prob.buf;
    int64_t *a_out = (int64_t *)alt.buf;
    double *pr = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(double));
    Py_ssize_t *low = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    Py_ssize_t *high = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    PyObject *result = NULL;
    if (!pr || !low || !high) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    double sum = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        sum += weights[i];
        a_out[i] = -1;
    }
    Py_ssize_t nl = 0, nh = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        float scaled = weights[i] * (float)n;
        pr[i] = (double)scaled / sum;
        if (pr[i] < 1.0)
            low[nl++] = i;
        else
            high[nh++] = i;
    }
    while (nh > 0 && nl > 0) {
        Py_ssize_t l = low[--nl], h = high[--nh];
        a_out[l] = h;
        pr[h] = pr[h] - (1.0 - pr[l]);
        if (pr[h] < 1.0)
            low[nl++] = h;
        else
            high[nh++] = h;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        p_out[i] = (float)pr[i];
    for (Py_ssize_t i = 0; i < nh; i++) {
        p_out[high[i]] = 1.0f;
        a_out[high[i]] = high[i];
    }
    for (Py_ssize_t i = 0; i < nl; i++) {
        p_out[low[i]] = 1.0f;
        a_out[low[i]] = low[i];
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_RawFree(pr);
    PyMem_RawFree(low);
    PyMem_RawFree(high);
    PyBuffer_Release(&w);
    PyBuffer_Release(&prob);
    PyBuffer_Release(&alt);
    return result;
}

static PyMethodDef methods[] = {
    {"permutation", py_permutation, METH_VARARGS,
     "permutation(key, counter_lo, counter_hi, out): TF's RandomShuffle order of len(out) "
     "rows into the writable int64 buffer out."},
    {"fill", py_fill, METH_VARARGS,
     "fill(kind, key, counter_lo, counter_hi, out, lo=0, span=0): len(out) values of one "
     "distribution of TF's Philox stream at (key, counter) into the writable buffer out."},
    {"alias_table", py_alias_table, METH_VARARGS,
     "alias_table(weights, prob, alt): TF's DistributionSampler table of float32 weights "
     "into float32 prob and int64 alt."},
    {"log_uniform", py_log_uniform, METH_VARARGS,
     "log_uniform(words, out, range, log_range, unique): TF's log-uniform tries; the tries "
     "made, -1 when the words ran out."},
    {"log_uniform_at", py_log_uniform_at, METH_VARARGS,
     "log_uniform_at(key, counter_lo, counter_hi, out, range, log_range, unique, max_tries): "
     "log_uniform over the stream at (key, counter); the tries made, -1 past max_tries."},
    {"log_uniform_counts", py_log_uniform_counts, METH_VARARGS,
     "log_uniform_counts(values, out, log_range, num_sampled, num_tries): expected counts "
     "under TF's log-uniform sampler, float32"},
    {"libm_double", py_libm_double, METH_VARARGS,
     "libm_double(kind, a, out): out = log(a) (kind 0) or exp(a) (kind 1), float64 buffers "
     "of one length."},
    {"libm_float", py_libm_float, METH_VARARGS,
     "libm_float(kind, a, b, out): out = log1pf(a) (kind 0), expm1f(a) (1) or powf(a, b) (2), "
     "float32 buffers of one length."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_philox",
    "TensorFlow's Philox stream and random distributions in C (see tensorflux/lib/philox.py).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__philox(void) { return PyModule_Create(&module); }
