/* tensorflux.kernels.cpu._native: the few CPU kernel loops that NumPy cannot run well from
 * Python, and a thread pool that runs them without the GIL.
 *
 * Optional. `pip install` builds it when a C compiler is there (setup.py marks it optional);
 * without it every kernel takes its NumPy path, which computes the same values
 * (tensorflux/kernels/cpu/native.py is the Python side and says which kernels use what).
 *
 * What is here, and why:
 *   - A pool of helper threads (pthreads) that never touch Python objects or the GIL. A
 *     kernel's work is cut into chunks that the caller and the helpers claim one at a time;
 *     the caller has released the GIL for the whole call. Python-level helper threads lose
 *     ~0.1 ms per hand-off waiting for the GIL, which is the size of the products they split.
 *     Between calls a helper spins up to 300 us for the next one, only while the machine
 *     has a core to spare (_pool.h helper_wait: the machine may be shared), then sleeps on a
 *     condition variable; a helper that never gets a core only means the caller claims its
 *     chunks.
 *     The caller, done with its chunks, spins briefly (pausing, never yielding) for the
 *     helpers' last chunks, then sleeps (spin_until_finished).
 *     Up to POOL_SLOTS kernels split at once, each over helpers of its own slot; a call that
 *     finds every slot busy runs its chunks on its own thread.
 *   - gemm: a product split into row or column blocks, each one call of NumPy's own BLAS
 *     (its cblas_sgemm/dgemm, found by native.py and handed over as a function pointer).
 *   - Fused optimizer updates: Adam in one pass over var, m, v and grad instead of NumPy's
 *     twelve; Momentum in one instead of four. The arithmetic is the NumPy path's, operation for operation, in the variable's
 *     type (the build turns off FMA contraction), so both paths give identical bits.
 *   - Relu and ReluGrad, which NumPy runs at ~0.4 ns per float32 element; MaxPool and
 *     MaxPoolGrad; im2col's copy of convolution patches (NumPy pays per contiguous run).
 *   - The dataflow executor's driver loop (DataflowCore, ReadyQueue; at the end of this
 *     file): ready queue and pending counts of plain nodes, ~20x fewer cycles a node than
 *     the Python loop, which keeps every other case (runtime/executor.py).
 *
 * Long calls stop early: every entry point that loops takes an optional stop cell (an int32
 * buffer that Python sets nonzero when the step is cancelled or its session closed) and the
 * step's deadline (CLOCK_MONOTONIC seconds, Python's time.monotonic(); 0: none). Loops poll
 * both between chunks (and pools inside an image, every ~1M taps); a call that stopped
 * skips the rest of its work and returns False (tensorflux/kernels/interrupt.py).
 *
 * Buffers come in through the buffer protocol (NumPy arrays; C-contiguous, checked here) and
 * every entry point checks sizes and formats before it releases the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_pool.h"

/* What an entry point returns: True when the work is done, False when it stopped early. */
static PyObject *done_or_stopped(int64_t skipped) {
    if (skipped) Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

/* ---------------------------------------------------------------------------------------
 * Buffers. */

typedef struct {
    Py_buffer view;
    int held;
} buf_t;

static void release(buf_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (b[i].held) PyBuffer_Release(&b[i].view);
}

/* Type code of a buffer: 'f' (float32), 'd' (float64), 0 for anything else. */
static char float_code(const Py_buffer *v) {
    const char *f = v->format ? v->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (f[1] != 0) return 0;
    if (f[0] == 'f' && v->itemsize == 4) return 'f';
    if (f[0] == 'd' && v->itemsize == 8) return 'd';
    return 0;
}

/* Takes C-contiguous float buffers of one type; sets *code. Raises ValueError. */
static int get_floats(PyObject **objs, const int *writable, buf_t *bufs, int n, char *code) {
    for (int i = 0; i < n; i++) bufs[i].held = 0;
    for (int i = 0; i < n; i++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable[i] ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &bufs[i].view, flags) != 0) {
            release(bufs, i);
            return -1;
        }
        bufs[i].held = 1;
        char c = float_code(&bufs[i].view);
        if (c == 0 || (i > 0 && c != *code)) {
            release(bufs, i + 1);
            PyErr_SetString(PyExc_ValueError, "native kernels take float32 or float64 "
                            "buffers of one type");
            return -1;
        }
        *code = c;
    }
    return 0;
}

static int64_t count_of(const Py_buffer *v) { return (int64_t)(v->len / v->itemsize); }

/* ---------------------------------------------------------------------------------------
 * gemm through NumPy's BLAS. */

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

typedef void (*sgemm64_t)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                          int64_t, const float *, int64_t, float, float *, int64_t);
typedef void (*dgemm64_t)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                          int64_t, const double *, int64_t, double, double *, int64_t);
typedef void (*sgemm32_t)(int, int, int, int32_t, int32_t, int32_t, float, const float *,
                          int32_t, const float *, int32_t, float, float *, int32_t);
typedef void (*dgemm32_t)(int, int, int, int32_t, int32_t, int32_t, double, const double *,
                          int32_t, const double *, int32_t, double, double *, int32_t);

static void *sgemm_ptr, *dgemm_ptr;
static int blas_ilp64;

/* A product is cut into chunks that the pool's threads claim one at a time, in one of two
 * ways (plan_gemm picks the one whose calls move less memory):
 *  - tiles: a grid of output tiles (rows x columns of out); a tile is one BLAS call, or, in
 *    a product that polls a stop, a few calls over consecutive pieces of k (the first
 *    writing the tile, the others adding to it: beta = 1), the stop polled between them;
 *  - k slices (products over a long k, several threads): chunk i is the whole output from
 *    the i-th piece of k, written into a partial product of its own (piece 0's is out
 *    itself), and the caller adds the partials into out in the order of the pieces.
 * The plan depends only on the product, the `parts` asked for and whether it polls, never
 * on which thread runs which chunk or whether the pool took the call (a call that finds
 * every pool slot busy runs the same chunks alone): a product's bits are the same from
 * run to run for a fixed configuration.
 * Why: every BLAS call packs its operands again (its rows of op(a) and its columns of
 * op(b), each times its k), so a product cut into c row blocks packs op(b) c times.
 * Cutting 1024^3 into the 11 row blocks of ~2e8 FLOP that polling needs cost 20-30% more
 * CPU than one call, and 640x512 from k = 10,000 (an LSTM's softmax gradient) 2.5x; pieces
 * of k (OpenBLAS blocks k itself by a few hundred) pack nothing twice. */
typedef struct {
    char code;
    int ta, tb;
    int64_t m, n, k, lda, ldb;
    /* the plan (plan_gemm): tiles of tile_m x tile_n, grid_n to a row of tiles, k in
     * pieces of k_piece; k_slices: chunks are k pieces of the whole output instead */
    int64_t tile_m, tile_n, grid_n, k_piece;
    int k_slices;
    int accumulate;           /* out += op(a) op(b) (beta = 1 from the first piece of k) */
    const char *a, *b;
    char *c;
    const stop_t *stop;       /* polled between k pieces (NULL: never) */
    atomic_int stopped;       /* a tile stopped between its pieces */
    char **partial;           /* k slices: one partial product per piece (partial[0] is c) */
} gemm_t;

static void gemm_call(const gemm_t *g, int64_t m, int64_t n, int64_t k, const char *a,
                      const char *b, int beta_one, char *c) {
    int ta = g->ta ? TRANS : NO_TRANS, tb = g->tb ? TRANS : NO_TRANS;
    if (g->code == 'f') {
        float beta = beta_one ? 1.0f : 0.0f;
        if (blas_ilp64)
            ((sgemm64_t)sgemm_ptr)(ROW_MAJOR, ta, tb, m, n, k, 1.0f, (const float *)a, g->lda,
                                   (const float *)b, g->ldb, beta, (float *)c, g->n);
        else
            ((sgemm32_t)sgemm_ptr)(ROW_MAJOR, ta, tb, (int32_t)m, (int32_t)n, (int32_t)k,
                                   1.0f, (const float *)a, (int32_t)g->lda, (const float *)b,
                                   (int32_t)g->ldb, beta, (float *)c, (int32_t)g->n);
    } else {
        double beta = beta_one ? 1.0 : 0.0;
        if (blas_ilp64)
            ((dgemm64_t)dgemm_ptr)(ROW_MAJOR, ta, tb, m, n, k, 1.0, (const double *)a,
                                   g->lda, (const double *)b, g->ldb, beta, (double *)c, g->n);
        else
            ((dgemm32_t)dgemm_ptr)(ROW_MAJOR, ta, tb, (int32_t)m, (int32_t)n, (int32_t)k,
                                   1.0, (const double *)a, (int32_t)g->lda, (const double *)b,
                                   (int32_t)g->ldb, beta, (double *)c, (int32_t)g->n);
    }
}

/* op(a)[r0.., k0..] and op(b)[k0.., c0..]: a is m x k (lda = k), or k x m when transposed
 * (lda = m); b is k x n (ldb = n), or n x k when transposed (ldb = k). */
static const char *a_at(const gemm_t *g, int64_t r0, int64_t k0, int64_t size) {
    return g->a + (g->ta ? k0 * g->lda + r0 : r0 * g->lda + k0) * size;
}

static const char *b_at(const gemm_t *g, int64_t k0, int64_t c0, int64_t size) {
    return g->b + (g->tb ? c0 * g->ldb + k0 : k0 * g->ldb + c0) * size;
}

/* Chunk i: out[tile i] = op(a)[its rows] op(b)[its columns] in pieces of k, or (k slices)
 * partial product i = the i-th piece of k. */
static void gemm_chunk(void *p, int64_t i) {
    gemm_t *g = p;
    int64_t size = g->code == 'f' ? 4 : 8;
    if (g->k_slices) {
        int64_t k0 = i * g->k_piece, k = g->k - k0 < g->k_piece ? g->k - k0 : g->k_piece;
        gemm_call(g, g->m, g->n, k, a_at(g, 0, k0, size), b_at(g, k0, 0, size),
                  i == 0 && g->accumulate, g->partial[i]);
        return;
    }
    int64_t r0 = (i / g->grid_n) * g->tile_m, c0 = (i % g->grid_n) * g->tile_n;
    int64_t m = g->m - r0 < g->tile_m ? g->m - r0 : g->tile_m;
    int64_t n = g->n - c0 < g->tile_n ? g->n - c0 : g->tile_n;
    char *c = g->c + (r0 * g->n + c0) * size;
    for (int64_t k0 = 0; k0 < g->k; k0 += g->k_piece) {
        if (k0 > 0 && should_stop(g->stop)) {
            atomic_store(&g->stopped, 1);
            return;
        }
        int64_t k = g->k - k0 < g->k_piece ? g->k - k0 : g->k_piece;
        gemm_call(g, m, n, k, a_at(g, r0, k0, size), b_at(g, k0, c0, size),
                  k0 > 0 || g->accumulate, c);
    }
}

#define GEMM_CHUNK_FLOPS 2e8      /* interrupt.CHUNK_FLOPS: a polled chunk's work, at most */
#define GEMM_TILE_FLOPS 1e8       /* a parallel product's chunks do at least this ... */
#define GEMM_CHUNKS_PER_PART 2    /* ... and are at most this many per thread (4: two 1024^3
                                   * products side by side, each split over 2 threads on 2
                                   * cores, took 8-9% more wall in 2 of 3 quiet rounds; 2:
                                   * within 3% of one thread each; BENCHMARKS.md, "Two splits
                                   * at once") */
#define GEMM_MIN_SIDE 64          /* tiles at least this many rows and columns ... */
#define GEMM_MIN_SIDE_POLLED 16   /* ... or this many where polling needs small tiles */
#define GEMM_MAX_GRID 512         /* rows (and columns) of tiles looked at, at most */
#define GEMM_MIN_K_PIECE 256      /* k pieces at least this long (OpenBLAS blocks k by ~300) */
#define GEMM_SLICE_BYTES (64 << 20)  /* k slices' partial products, at most */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The chunks of a product over `parts` threads, polled or not. The work is cut:
 *  - over several threads into about one chunk per GEMM_TILE_FLOPS, at least one per
 *    thread and at most GEMM_CHUNKS_PER_PART per thread: with chunks claimed dynamically,
 *    a thread that lost its core to another process holds the product back by at most one
 *    chunk, while big chunks pack less;
 *  - polled, into calls of at most GEMM_CHUNK_FLOPS (the stop is polled between them).
 * Of the grids of tiles that do so, the one that moves least memory: what its calls pack
 * (rows x columns of tiles + columns x rows of tiles, times k) plus out, read and written
 * once per piece of k; pieces shorter than GEMM_MIN_K_PIECE only when nothing else meets
 * the bound. k slices instead when they move less (they pack nothing twice, but write and
 * add a partial product per piece). */
static void plan_gemm(gemm_t *g, int parts, int polled) {
    double m = (double)g->m, n = (double)g->n, k = (double)g->k;
    double flops = 2.0 * m * n * k;
    int64_t want = 1;
    if (parts > 1) {
        double by_work = flops / GEMM_TILE_FLOPS;
        double most = (double)parts * GEMM_CHUNKS_PER_PART;
        want = by_work > most ? (int64_t)most : (int64_t)by_work;
        if (want < parts) want = parts;
    }
    int64_t side = polled ? GEMM_MIN_SIDE_POLLED : GEMM_MIN_SIDE;
    int64_t rows_max = g->m / side > 1 ? g->m / side : 1;
    int64_t cols_max = g->n / side > 1 ? g->n / side : 1;
    if (rows_max > GEMM_MAX_GRID) rows_max = GEMM_MAX_GRID;
    if (cols_max > GEMM_MAX_GRID) cols_max = GEMM_MAX_GRID;
    if (want > rows_max * cols_max) want = rows_max * cols_max;
    int64_t k_min = g->k < GEMM_MIN_K_PIECE ? g->k : GEMM_MIN_K_PIECE;
    int64_t best_tm = g->m, best_tn = g->n, best_cuts = 1;
    double best_cost = -1;
    int best_short = 1;
    for (int64_t r = 1; r <= rows_max; r++) {
        int64_t tm = ceil_div(g->m, r);
        if (r > 1 && ceil_div(g->m, tm) != r) continue;  /* the same tiles as a smaller r */
        for (int64_t c = want > r ? ceil_div(want, r) : 1; c <= cols_max; c++) {
            int64_t tn = ceil_div(g->n, c);
            if (c > 1 && ceil_div(g->n, tn) != c) continue;
            int64_t cuts = 1;
            if (polled) {
                double tile = 2.0 * (double)tm * (double)tn * k;
                cuts = tile > GEMM_CHUNK_FLOPS ? (int64_t)ceil(tile / GEMM_CHUNK_FLOPS) : 1;
                if (cuts > g->k) cuts = g->k;
            }
            int is_short = ceil_div(g->k, cuts) < k_min;
            double cost = k * (m * (double)c + n * (double)r) + (double)cuts * m * n;
            if (best_cost < 0 || is_short < best_short ||
                    (is_short == best_short && cost < best_cost)) {
                best_tm = tm;
                best_tn = tn;
                best_cuts = cuts;
                best_cost = cost;
                best_short = is_short;
            }
            if (cuts == 1) break;  /* more columns of tiles only pack more */
        }
    }
    g->k_slices = 0;
    g->tile_m = best_tm;
    g->tile_n = best_tn;
    g->grid_n = ceil_div(g->n, g->tile_n);
    g->k_piece = ceil_div(g->k, best_cuts);
    /* k slices: `want` pieces (more where polling needs them), none shorter than
     * GEMM_MIN_K_PIECE; each piece's partial product is written and added too */
    if (parts < 2) return;
    int64_t pieces = want, size = g->code == 'f' ? 4 : 8;
    if (polled && ceil(flops / GEMM_CHUNK_FLOPS) > (double)pieces)
        pieces = (int64_t)ceil(flops / GEMM_CHUNK_FLOPS);
    if (pieces > g->k / GEMM_MIN_K_PIECE) pieces = g->k / GEMM_MIN_K_PIECE;
    if (pieces < parts) return;
    int64_t piece = ceil_div(g->k, pieces);
    pieces = ceil_div(g->k, piece);
    if (polled && 2.0 * m * n * (double)piece > 1.5 * GEMM_CHUNK_FLOPS) return;
    double slice_cost = k * (m + n) + ((double)pieces + 2.0 * (double)(pieces - 1)) * m * n;
    if (slice_cost < best_cost &&
            (double)(pieces - 1) * m * n * (double)size <= GEMM_SLICE_BYTES) {
        g->k_slices = 1;
        g->k_piece = piece;
    }
}

static int64_t gemm_chunks(const gemm_t *g) {
    if (g->k_slices) return ceil_div(g->k, g->k_piece);
    return ceil_div(g->m, g->tile_m) * g->grid_n;
}

/* Runs a k-sliced plan: each piece into a partial product of its own (piece 0 into out,
 * the others allocated and freed here), on the pool when a slot is free, else alone, then
 * adds the partials into out in the order of the pieces (the same bits either way).
 * False (nothing run) when memory is short. */
static int run_k_slices(gemm_t *g, int parts, int64_t *skipped) {
    int64_t size = g->code == 'f' ? 4 : 8, count = gemm_chunks(g);
    size_t bytes = (size_t)(g->m * g->n * size);
    int ok = (g->partial = calloc((size_t)count, sizeof(char *))) != NULL;
    if (ok) g->partial[0] = g->c;
    for (int64_t s = 1; ok && s < count; s++)
        if ((g->partial[s] = malloc(bytes)) == NULL) ok = 0;
    if (ok && !pool_run(gemm_chunk, g, count, parts, g->stop, skipped))
        *skipped = run_serial(gemm_chunk, g, count, g->stop);
    if (ok && !*skipped) {
        int64_t len = g->m * g->n;
        for (int64_t s = 1; s < count; s++) {
            if (g->code == 'f') {
                float *o = (float *)g->c;
                const float *q = (const float *)g->partial[s];
                for (int64_t j = 0; j < len; j++) o[j] += q[j];
            } else {
                double *o = (double *)g->c;
                const double *q = (const double *)g->partial[s];
                for (int64_t j = 0; j < len; j++) o[j] += q[j];
            }
        }
    }
    if (g->partial != NULL)
        for (int64_t s = 1; s < count; s++) free(g->partial[s]);
    free(g->partial);
    g->partial = NULL;
    return ok;
}

/* gemm_plan(m, n, k, parts, polled, itemsize): how gemm would cut that product (for tests
 * and benchmarks): (tile rows, tile columns, k piece, k slices, chunks). */
static PyObject *py_gemm_plan(PyObject *self, PyObject *args) {
    long long m, n, k;
    int parts, polled, itemsize;
    if (!PyArg_ParseTuple(args, "LLLipi", &m, &n, &k, &parts, &polled, &itemsize)) return NULL;
    if (m < 1 || n < 1 || k < 1 || (itemsize != 4 && itemsize != 8)) {
        PyErr_SetString(PyExc_ValueError, "gemm_plan: positive sizes, itemsize 4 or 8");
        return NULL;
    }
    gemm_t g;
    memset(&g, 0, sizeof g);
    g.code = itemsize == 4 ? 'f' : 'd';
    g.m = m;
    g.n = n;
    g.k = k;
    plan_gemm(&g, parts < 1 ? 1 : parts, polled);
    return Py_BuildValue("LLLOL", (long long)g.tile_m, (long long)g.tile_n,
                         (long long)g.k_piece, g.k_slices ? Py_True : Py_False,
                         (long long)gemm_chunks(&g));
}

static PyObject *py_set_blas(PyObject *self, PyObject *args) {
    unsigned long long s, d;
    int ilp64;
    if (!PyArg_ParseTuple(args, "KKp", &s, &d, &ilp64)) return NULL;
    sgemm_ptr = (void *)(uintptr_t)s;
    dgemm_ptr = (void *)(uintptr_t)d;
    blas_ilp64 = ilp64;
    Py_RETURN_NONE;
}

static int two_d(const Py_buffer *v, int64_t *rows, int64_t *cols) {
    if (v->ndim != 2) return 0;
    *rows = v->shape[0];
    *cols = v->shape[1];
    return 1;
}

/* gemm(a, b, out, transpose_a, transpose_b, parts[, stop, deadline, accumulate]):
 * out = op(a) @ op(b), or with `accumulate` out += op(a) @ op(b) (BLAS's beta = 1: the
 * first piece of k added into out, the next ones into that), all C-contiguous; False when
 * it stopped early (out then holds a partial sum). */
static PyObject *py_gemm(PyObject *self, PyObject *args) {
    PyObject *objs[3], *cell = NULL;
    int ta, tb, parts, accumulate = 0;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "OOOppi|Odp", &objs[0], &objs[1], &objs[2], &ta, &tb, &parts,
                          &cell, &deadline, &accumulate))
        return NULL;
    static const int writable[3] = {0, 0, 1};
    buf_t bufs[3];
    char code;
    if (get_floats(objs, writable, bufs, 3, &code) != 0) return NULL;
    int64_t ar, ac, br, bc, cr, cc;
    if (!two_d(&bufs[0].view, &ar, &ac) || !two_d(&bufs[1].view, &br, &bc) ||
            !two_d(&bufs[2].view, &cr, &cc)) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "gemm takes matrices");
        return NULL;
    }
    gemm_t g;
    memset(&g, 0, sizeof g);
    g.code = code;
    g.ta = ta;
    g.tb = tb;
    g.accumulate = accumulate;
    g.m = ta ? ac : ar;
    g.n = tb ? br : bc;
    g.k = ta ? ar : ac;
    g.lda = ac;
    g.ldb = bc;
    g.a = bufs[0].view.buf;
    g.b = bufs[1].view.buf;
    g.c = bufs[2].view.buf;
    if ((tb ? bc : br) != g.k || cr != g.m || cc != g.n || g.m == 0 || g.n == 0 || g.k == 0) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "gemm: shapes do not match (or a dimension is 0)");
        return NULL;
    }
    if ((code == 'f' ? sgemm_ptr : dgemm_ptr) == NULL ||
            (!blas_ilp64 && (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX))) {
        release(bufs, 3);
        PyErr_SetString(PyExc_RuntimeError, "gemm: no BLAS for this product");
        return NULL;
    }
    stop_t stop;
    Py_buffer cell_view;
    int cell_held;
    if (get_stop(cell, deadline, &stop, &cell_view, &cell_held) != 0) {
        release(bufs, 3);
        return NULL;
    }
    int polled = stop.cell != NULL || stop.deadline > 0;
    g.stop = polled ? &stop : NULL;
    if (parts < 1) parts = 1;
    plan_gemm(&g, parts, polled);
    int64_t count = gemm_chunks(&g), skipped = 0;
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    int ran = parts > 1 && (g.k_slices ? run_k_slices(&g, parts, &skipped)
                                       : pool_run(gemm_chunk, &g, count, parts, g.stop, &skipped));
    if (!ran && g.k_slices) {
        /* no memory for the partial products: the chunks one thread needs */
        plan_gemm(&g, 1, polled);
        count = gemm_chunks(&g);
    }
    if (!ran)  /* alone (every pool slot is taken, or one thread): the same chunks */
        skipped = run_serial(gemm_chunk, &g, count, g.stop);
    Py_END_ALLOW_THREADS
    if (atomic_load(&g.stopped)) skipped++;
    if (cell_held) PyBuffer_Release(&cell_view);
    release(bufs, 3);
    return done_or_stopped(skipped);
}

/* ---------------------------------------------------------------------------------------
 * Elementwise kernels over chunks of flat arrays. */

#define CHUNK 65536  /* elements per chunk: 256 KiB of float32, cache-sized */

/* x86-64 builds get an AVX2 copy of each loop too, picked at load time by the CPU it runs
 * on (the baseline build has only SSE2). No FMA either way: -ffp-contract=off. */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#define LOOP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LOOP_CLONES
#endif

typedef struct {
    char code;
    int64_t n;
    char *p[5];
    double s[5];
    int flag;
} flat_t;

static void bounds(const flat_t *f, int64_t i, int64_t *lo, int64_t *hi) {
    *lo = i * CHUNK;
    *hi = *lo + CHUNK < f->n ? *lo + CHUNK : f->n;
}

/* Adam, in the variable's type T, as TensorFlow's kernel and the NumPy path order it:
 *   m += (g - m)*(1-b1);  v += (g*g - v)*(1-b2)
 *   var -= (m*lr_t) / (sqrt(v) + eps)        (Nesterov: (g*(1-b1) + b1*m) in place of m) */
#define ADAM_LOOP(T, SQRT)                                                                  \
    do {                                                                                    \
        T *restrict var = (T *)f->p[0], *restrict m = (T *)f->p[1], *restrict v = (T *)f->p[2]; \
        const T *restrict g = (const T *)f->p[3];                                           \
        const T lr = (T)f->s[0], b1 = (T)f->s[1], b2 = (T)f->s[2], eps = (T)f->s[3];        \
        const T c1 = (T)1 - b1, c2 = (T)1 - b2;                                             \
        if (f->flag) {                                                                      \
            for (int64_t j = lo; j < hi; j++) {                                             \
                T gj = g[j], mj = m[j] + (gj - m[j]) * c1, vj = v[j] + (gj * gj - v[j]) * c2; \
                m[j] = mj;                                                                  \
                v[j] = vj;                                                                  \
                var[j] -= ((gj * c1 + b1 * mj) * lr) / (SQRT(vj) + eps);                    \
            }                                                                               \
        } else {                                                                            \
            for (int64_t j = lo; j < hi; j++) {                                             \
                T gj = g[j], mj = m[j] + (gj - m[j]) * c1, vj = v[j] + (gj * gj - v[j]) * c2; \
                m[j] = mj;                                                                  \
                v[j] = vj;                                                                  \
                var[j] -= (mj * lr) / (SQRT(vj) + eps);                                     \
            }                                                                               \
        }                                                                                   \
    } while (0)

LOOP_CLONES static void adam_chunk(void *p, int64_t i) {
    const flat_t *f = p;
    int64_t lo, hi;
    bounds(f, i, &lo, &hi);
    if (f->code == 'f')
        ADAM_LOOP(float, __builtin_sqrtf);
    else
        ADAM_LOOP(double, __builtin_sqrt);
}

/* Momentum, in T, as TensorFlow's kernel and the NumPy path order it:
 *   accum = accum*momentum + grad;  var -= lr*accum
 *   (Nesterov: var -= grad*lr + (accum*momentum)*lr) */
#define MOMENTUM_LOOP(T)                                                                    \
    do {                                                                                    \
        T *restrict var = (T *)f->p[0], *restrict accum = (T *)f->p[1];                     \
        const T *restrict g = (const T *)f->p[2];                                           \
        const T lr = (T)f->s[0], mom = (T)f->s[1];                                          \
        if (f->flag) {                                                                      \
            for (int64_t j = lo; j < hi; j++) {                                             \
                T a = accum[j] * mom + g[j];                                                \
                accum[j] = a;                                                               \
                var[j] -= g[j] * lr + (a * mom) * lr;                                       \
            }                                                                               \
        } else {                                                                            \
            for (int64_t j = lo; j < hi; j++) {                                             \
                T a = accum[j] * mom + g[j];                                                \
                accum[j] = a;                                                               \
                var[j] -= lr * a;                                                           \
            }                                                                               \
        }                                                                                   \
    } while (0)

LOOP_CLONES static void momentum_chunk(void *p, int64_t i) {
    const flat_t *f = p;
    int64_t lo, hi;
    bounds(f, i, &lo, &hi);
    if (f->code == 'f')
        MOMENTUM_LOOP(float);
    else
        MOMENTUM_LOOP(double);
}

/* relu: x < 0 ? 0 : x (NaN stays NaN, as with np.maximum). `out` may be `x` (an input the
 * executor donated), so the pointers are not `restrict`: element j is read before it is
 * written, and no other element is touched. */
LOOP_CLONES static void relu_chunk(void *p, int64_t i) {
    const flat_t *f = p;
    int64_t lo, hi;
    bounds(f, i, &lo, &hi);
    if (f->code == 'f') {
        float *out = (float *)f->p[0];
        const float *x = (const float *)f->p[1];
        for (int64_t j = lo; j < hi; j++) out[j] = x[j] < 0.0f ? 0.0f : x[j];
    } else {
        double *out = (double *)f->p[0];
        const double *x = (const double *)f->p[1];
        for (int64_t j = lo; j < hi; j++) out[j] = x[j] < 0.0 ? 0.0 : x[j];
    }
}

/* relu_grad: g * (x > 0), a product, so that an Inf or NaN gradient stays NaN where x <= 0
 * (as TensorFlow's and the NumPy path's product do). `out` may be `g` or `x` (donated). */
LOOP_CLONES static void relu_grad_chunk(void *p, int64_t i) {
    const flat_t *f = p;
    int64_t lo, hi;
    bounds(f, i, &lo, &hi);
    if (f->code == 'f') {
        float *out = (float *)f->p[0];
        const float *g = (const float *)f->p[1], *x = (const float *)f->p[2];
        for (int64_t j = lo; j < hi; j++) out[j] = g[j] * (float)(x[j] > 0.0f);
    } else {
        double *out = (double *)f->p[0];
        const double *g = (const double *)f->p[1], *x = (const double *)f->p[2];
        for (int64_t j = lo; j < hi; j++) out[j] = g[j] * (double)(x[j] > 0.0);
    }
}

/* Runs `fn` over f->n elements: chunks on the pool when there are several and parts > 1.
 * (Never stopped early: one pass over buffers the caller already holds is bounded, and an
 * in-place update must not stop half-way.) */
static void run_flat_task(chunk_fn fn, void *task, int64_t count, int parts) {
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    run_all(fn, task, count, parts, NULL);
    Py_END_ALLOW_THREADS
}

static void run_flat(chunk_fn fn, flat_t *f, int parts) {
    run_flat_task(fn, f, (f->n + CHUNK - 1) / CHUNK, parts);
}

static int same_count(buf_t *bufs, int n, int64_t *count) {
    *count = count_of(&bufs[0].view);
    for (int i = 1; i < n; i++)
        if (count_of(&bufs[i].view) != *count) {
            release(bufs, n);
            PyErr_SetString(PyExc_ValueError, "native kernel: buffers differ in size");
            return 0;
        }
    return 1;
}

/* select: out[j] = cond[j] ? t[j] : e[j], bits copied (np.where's values, NaN payloads and
 * signed zeros included), branch-free: a mask of all ones where cond holds. Items of 1, 2,
 * 4 or 8 bytes (s[0]); t (flag bit 1) or e (flag bit 2) may be one item for all. A random
 * cond made np.where branch per element (~0.6 ns each) and the NumPy bit picking four
 * passes over the output. */
#define SELECT_LOOP(T)                                                              \
    do {                                                                            \
        T *o = (T *)f->p[0];                                                        \
        const T *t = (const T *)f->p[2], *e = (const T *)f->p[3];                   \
        if (f->flag == 0) {                                                         \
            for (int64_t j = lo; j < hi; j++) {                                     \
                const T m = (T)((T)0 - (T)(c[j] != 0));                             \
                o[j] = (T)((t[j] & m) | (e[j] & (T)~m));                            \
            }                                                                       \
        } else {                                                                    \
            const T t0 = t[0], e0 = e[0];                                           \
            const int ts = f->flag & 1, es = f->flag & 2;                           \
            for (int64_t j = lo; j < hi; j++) {                                     \
                const T m = (T)((T)0 - (T)(c[j] != 0));                             \
                o[j] = (T)(((ts ? t0 : t[j]) & m) | ((es ? e0 : e[j]) & (T)~m));    \
            }                                                                       \
        }                                                                           \
    } while (0)

LOOP_CLONES static void select_chunk(void *p, int64_t i) {
    const flat_t *f = p;
    int64_t lo, hi;
    bounds(f, i, &lo, &hi);
    const uint8_t *c = (const uint8_t *)f->p[1];
    switch ((int)f->s[0]) {
    case 1: SELECT_LOOP(uint8_t); break;
    case 2: SELECT_LOOP(uint16_t); break;
    case 4: SELECT_LOOP(uint32_t); break;
    default: SELECT_LOOP(uint64_t); break;
    }
}
#undef SELECT_LOOP

/* select(out, cond, t, e, parts): out, t, e C-contiguous of one item size (1, 2, 4 or 8
 * bytes), cond C-contiguous of one byte per item, out and cond of one length, t and e of
 * that length or of one item. ValueError otherwise. */
static PyObject *py_select(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    int parts;
    if (!PyArg_ParseTuple(args, "OOOOi", &objs[0], &objs[1], &objs[2], &objs[3], &parts))
        return NULL;
    buf_t bufs[4];
    for (int i = 0; i < 4; i++) bufs[i].held = 0;
    for (int i = 0; i < 4; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (i == 0 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &bufs[i].view, flags) != 0) {
            release(bufs, i);
            return NULL;
        }
        bufs[i].held = 1;
    }
    flat_t f;
    const Py_ssize_t size = bufs[0].view.itemsize;
    f.n = count_of(&bufs[0].view);
    f.flag = (count_of(&bufs[2].view) == 1 ? 1 : 0) | (count_of(&bufs[3].view) == 1 ? 2 : 0);
    if ((size != 1 && size != 2 && size != 4 && size != 8) || bufs[1].view.itemsize != 1
        || bufs[2].view.itemsize != size || bufs[3].view.itemsize != size
        || count_of(&bufs[1].view) != f.n
        || (!(f.flag & 1) && count_of(&bufs[2].view) != f.n)
        || (!(f.flag & 2) && count_of(&bufs[3].view) != f.n)) {
        release(bufs, 4);
        PyErr_SetString(PyExc_ValueError, "select: out, then and else of one item size (1, 2, "
                                          "4 or 8 bytes), a byte per item of cond");
        return NULL;
    }
    for (int i = 0; i < 4; i++) f.p[i] = bufs[i].view.buf;
    f.s[0] = (double)size;
    f.code = 0;
    run_flat(select_chunk, &f, parts);
    release(bufs, 4);
    Py_RETURN_NONE;
}

/* adam(var, m, v, grad, lr_t, beta1, beta2, epsilon, use_nesterov, parts), in place. */
static PyObject *py_adam(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    flat_t f;
    int parts;
    if (!PyArg_ParseTuple(args, "OOOOddddpi", &objs[0], &objs[1], &objs[2], &objs[3], &f.s[0],
                          &f.s[1], &f.s[2], &f.s[3], &f.flag, &parts))
        return NULL;
    static const int writable[4] = {1, 1, 1, 0};
    buf_t bufs[4];
    if (get_floats(objs, writable, bufs, 4, &f.code) != 0) return NULL;
    if (!same_count(bufs, 4, &f.n)) return NULL;
    for (int i = 0; i < 4; i++) f.p[i] = bufs[i].view.buf;
    run_flat(adam_chunk, &f, parts);
    release(bufs, 4);
    Py_RETURN_NONE;
}

/* momentum(var, accum, grad, lr, momentum, use_nesterov, parts), in place. */
static PyObject *py_momentum(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    flat_t f;
    int parts;
    if (!PyArg_ParseTuple(args, "OOOddpi", &objs[0], &objs[1], &objs[2], &f.s[0], &f.s[1],
                          &f.flag, &parts))
        return NULL;
    static const int writable[3] = {1, 1, 0};
    buf_t bufs[3];
    if (get_floats(objs, writable, bufs, 3, &f.code) != 0) return NULL;
    if (!same_count(bufs, 3, &f.n)) return NULL;
    for (int i = 0; i < 3; i++) f.p[i] = bufs[i].view.buf;
    run_flat(momentum_chunk, &f, parts);
    release(bufs, 3);
    Py_RETURN_NONE;
}

/* relu(out, x, parts) */
static PyObject *py_relu(PyObject *self, PyObject *args) {
    PyObject *objs[2];
    flat_t f;
    int parts;
    if (!PyArg_ParseTuple(args, "OOi", &objs[0], &objs[1], &parts)) return NULL;
    static const int writable[2] = {1, 0};
    buf_t bufs[2];
    if (get_floats(objs, writable, bufs, 2, &f.code) != 0) return NULL;
    if (!same_count(bufs, 2, &f.n)) return NULL;
    f.p[0] = bufs[0].view.buf;
    f.p[1] = bufs[1].view.buf;
    run_flat(relu_chunk, &f, parts);
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* relu_grad(out, g, x, parts) */
static PyObject *py_relu_grad(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    flat_t f;
    int parts;
    if (!PyArg_ParseTuple(args, "OOOi", &objs[0], &objs[1], &objs[2], &parts)) return NULL;
    static const int writable[3] = {1, 0, 0};
    buf_t bufs[3];
    if (get_floats(objs, writable, bufs, 3, &f.code) != 0) return NULL;
    if (!same_count(bufs, 3, &f.n)) return NULL;
    for (int i = 0; i < 3; i++) f.p[i] = bufs[i].view.buf;
    run_flat(relu_grad_chunk, &f, parts);
    release(bufs, 3);
    Py_RETURN_NONE;
}

/* relu_grad_rows(out, g, x, parts): relu_grad over 2-D arrays whose rows are contiguous at
 * any row stride (a channel slice of a concatenation's gradient, NHWC viewed as (pixels,
 * channels)), blocks of rows of about CHUNK elements per pool task; same products as
 * relu_grad_chunk. `out` may be `g` or `x`. */
typedef struct {
    char code;
    int64_t rows, cols, block;
    int64_t ld[3];
    char *p[3];
} rows_t;

LOOP_CLONES static void relu_grad_rows_chunk(void *p, int64_t i) {
    const rows_t *f = p;
    int64_t r0 = i * f->block, r1 = r0 + f->block < f->rows ? r0 + f->block : f->rows;
    for (int64_t r = r0; r < r1; r++) {
        if (f->code == 'f') {
            float *out = (float *)f->p[0] + r * f->ld[0];
            const float *g = (const float *)f->p[1] + r * f->ld[1];
            const float *x = (const float *)f->p[2] + r * f->ld[2];
            for (int64_t j = 0; j < f->cols; j++) out[j] = g[j] * (float)(x[j] > 0.0f);
        } else {
            double *out = (double *)f->p[0] + r * f->ld[0];
            const double *g = (const double *)f->p[1] + r * f->ld[1];
            const double *x = (const double *)f->p[2] + r * f->ld[2];
            for (int64_t j = 0; j < f->cols; j++) out[j] = g[j] * (double)(x[j] > 0.0);
        }
    }
}

static PyObject *py_relu_grad_rows(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    int parts;
    if (!PyArg_ParseTuple(args, "OOOi", &objs[0], &objs[1], &objs[2], &parts)) return NULL;
    buf_t bufs[3];
    rows_t f;
    for (int i = 0; i < 3; i++) bufs[i].held = 0;
    for (int i = 0; i < 3; i++) {
        int flags = PyBUF_STRIDES | PyBUF_FORMAT | (i == 0 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &bufs[i].view, flags) != 0) {
            release(bufs, i);
            return NULL;
        }
        bufs[i].held = 1;
        const Py_buffer *v = &bufs[i].view;
        char c = float_code(v);
        if (i == 0) f.code = c;
        if (c == 0 || c != f.code || v->ndim != 2 ||
                (v->shape[1] > 1 && v->strides[1] != v->itemsize) ||
                v->strides[0] % v->itemsize != 0 || v->strides[0] < v->itemsize * v->shape[1] ||
                (i > 0 && (v->shape[0] != bufs[0].view.shape[0] ||
                           v->shape[1] != bufs[0].view.shape[1]))) {
            release(bufs, i + 1);
            PyErr_SetString(PyExc_ValueError, "relu_grad_rows takes 2-D float32 or float64 "
                            "arrays of one shape with contiguous rows");
            return NULL;
        }
        f.ld[i] = v->strides[0] / v->itemsize;
        f.p[i] = v->buf;
    }
    f.rows = bufs[0].view.shape[0];
    f.cols = bufs[0].view.shape[1];
    f.block = f.cols > 0 && f.cols < CHUNK ? CHUNK / f.cols : 1;
    int64_t count = f.rows > 0 && f.cols > 0 ? (f.rows + f.block - 1) / f.block : 0;
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    run_all(relu_grad_rows_chunk, &f, count, parts, NULL);
    Py_END_ALLOW_THREADS
    release(bufs, 3);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------
 * Skinny products of fully connected layers at small batches, where BLAS's packing and its
 * beta pass over the output cost more than the arithmetic (matrix_ops.py).
 *
 * outer_sum(out, a, b, parts): out (m, n) = a^T b for a (k, m), b (k, n), k small (the
 * weight gradient x^T dy): each output row is built in cache from the k terms, added in
 * order, and written to memory once:
 *     out[i, :] = a[0, i] * b[0, :];  out[i, :] += a[r, i] * b[r, :]  (r = 1 .. k-1).
 * thin_nt(out, a, b, parts): out (m, n) = a b^T for a (m, k) with m small, b (n, k) (the
 * input gradient dy w^T): one pass over b's rows; each dot product keeps 16 lanes,
 *     acc[l] += a[i, 16c + l] * b[j, 16c + l]  (c in order; the tail in lanes 0 .. t-1),
 * and sums them in lane order. Both are the order tests/kernels/test_native.py spells out
 * in NumPy (no FMA: -ffp-contract=off). */

#define THIN_ROWS 16
#define LANES 16

/* Streaming (non-temporal) stores of 16 values to 16-byte aligned `dst`: the weight
 * gradient is written once and read by the next kernel only after the whole of it (often
 * hundreds of megabytes) is done, so it should not go through the cache (no read for
 * ownership: ~2x faster writes). SSE2 is in every x86-64 build. */
#if defined(__SSE2__)
#include <emmintrin.h>
#define STREAM_OK(p) ((((uintptr_t)(p)) & 15) == 0)
static inline void stream_f(float *dst, const float *src) {
    for (int q = 0; q < LANES; q += 4) _mm_stream_ps(dst + q, _mm_loadu_ps(src + q));
}
static inline void stream_d(double *dst, const double *src) {
    for (int q = 0; q < LANES; q += 2) _mm_stream_pd(dst + q, _mm_loadu_pd(src + q));
}
#define STREAM_FENCE() _mm_sfence()
#else
#define STREAM_OK(p) 0
static inline void stream_f(float *dst, const float *src) { memcpy(dst, src, LANES * 4); }
static inline void stream_d(double *dst, const double *src) { memcpy(dst, src, LANES * 8); }
#define STREAM_FENCE() ((void)0)
#endif

typedef struct {
    char code;
    int64_t m, n, k, grain;
    const char *a, *b;
    char *c;
} skinny_t;

/* Both loops work on blocks that share their loads (each output keeps its own accumulators
 * and its order above, so the blocks change no value): outer_sum builds four output rows
 * at once, OUTER_STRIP columns at a time in a cache-resident strip (each b value loaded
 * once for the four), then streams the strip's rows out one after the other (interleaved
 * streaming stores to four rows thrash the write-combining buffers); thin_nt dots four rows
 * of b with two rows of a at once (eight accumulators; each a and b value loaded once for
 * the block), odd m and the last rows of b one at a time. The four-row blocks cut both
 * products' CPU time 2-2.5x (AlexNet's fc1: 9216x4096, batch 8: x^T dy 27-35 -> 13 ms,
 * dy w^T 33-36 -> 14 ms; TensorFlow 24 and 21). SKINNY_CLONES adds an AVX-512 copy. */
#define OUTER_BLOCK 4  /* (OUTER_ROWS and THIN_2X4 spell their rows out) */
#define THIN_BLOCK 4
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#define SKINNY_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SKINNY_CLONES
#endif

#define OUTER_ONE_ROW(T, STREAM, i)                                                         \
    do {                                                                                    \
        T *restrict out = (T *)s->c + (i) * n;                                              \
        const int streamed = STREAM_OK(out);                                                \
        const T a0 = a[i];                                                                  \
        for (int64_t j = 0; j < full; j += LANES) {  /* 16 outputs in registers */          \
            T acc[LANES];                                                                   \
            for (int l = 0; l < LANES; l++) acc[l] = a0 * b[j + l];                         \
            for (int64_t r = 1; r < s->k; r++) {                                            \
                const T ar = a[r * s->m + (i)];                                             \
                const T *restrict br = b + r * n + j;                                       \
                for (int l = 0; l < LANES; l++) acc[l] = acc[l] + ar * br[l];               \
            }                                                                               \
            if (streamed) STREAM(out + j, acc);                                             \
            else for (int l = 0; l < LANES; l++) out[j + l] = acc[l];                       \
        }                                                                                   \
        for (int64_t j = full; j < n; j++) {                                                \
            T v = a0 * b[j];                                                                \
            for (int64_t r = 1; r < s->k; r++) v = v + a[r * s->m + (i)] * b[r * n + j];    \
            out[j] = v;                                                                     \
        }                                                                                   \
    } while (0)

#define OUTER_STRIP 256  /* columns of a block of rows built in cache, then streamed out */

#define OUTER_ROWS(T, STREAM)                                                               \
    do {                                                                                    \
        const T *a = (const T *)s->a, *b = (const T *)s->b;                                 \
        const int64_t n = s->n, full = n / LANES * LANES;                                   \
        int64_t i = lo;                                                                     \
        for (; i + OUTER_BLOCK <= hi; i += OUTER_BLOCK) {                                   \
            T *restrict out[OUTER_BLOCK];                                                   \
            int streamed = 1;                                                               \
            for (int q = 0; q < OUTER_BLOCK; q++) {                                         \
                out[q] = (T *)s->c + (i + q) * n;                                           \
                streamed = streamed && STREAM_OK(out[q]);                                   \
            }                                                                               \
            for (int64_t j0 = 0; j0 < full; j0 += OUTER_STRIP) {                            \
                const int64_t j1 = j0 + OUTER_STRIP < full ? j0 + OUTER_STRIP : full;       \
                T strip[OUTER_BLOCK][OUTER_STRIP];                                             \
                for (int64_t j = j0; j < j1; j += LANES) {                                  \
                    T *restrict s0 = strip[0] + (j - j0), *restrict s1 = strip[1] + (j - j0); \
                    T *restrict s2 = strip[2] + (j - j0), *restrict s3 = strip[3] + (j - j0); \
                    const T *restrict b0 = b + j;                                           \
                    for (int l = 0; l < LANES; l++) {                                       \
                        s0[l] = a[i] * b0[l];                                               \
                        s1[l] = a[i + 1] * b0[l];                                           \
                        s2[l] = a[i + 2] * b0[l];                                           \
                        s3[l] = a[i + 3] * b0[l];                                           \
                    }                                                                       \
                    for (int64_t r = 1; r < s->k; r++) {                                    \
                        const T *restrict br = b + r * n + j;                               \
                        const T *ar = a + r * s->m + i;                                     \
                        const T x0 = ar[0], x1 = ar[1], x2 = ar[2], x3 = ar[3];             \
                        for (int l = 0; l < LANES; l++) {                                   \
                            s0[l] = s0[l] + x0 * br[l];                                     \
                            s1[l] = s1[l] + x1 * br[l];                                     \
                            s2[l] = s2[l] + x2 * br[l];                                     \
                            s3[l] = s3[l] + x3 * br[l];                                     \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
                for (int q = 0; q < OUTER_BLOCK; q++) {                                     \
                    if (streamed)                                                           \
                        for (int64_t j = j0; j < j1; j += LANES)                            \
                            STREAM(out[q] + j, strip[q] + (j - j0));                        \
                    else memcpy(out[q] + j0, strip[q], (size_t)(j1 - j0) * sizeof(T));      \
                }                                                                           \
            }                                                                               \
            for (int q = 0; q < OUTER_BLOCK; q++)                                           \
                for (int64_t j = full; j < n; j++) {                                        \
                    T v = a[i + q] * b[j];                                                  \
                    for (int64_t r = 1; r < s->k; r++)                                      \
                        v = v + a[r * s->m + i + q] * b[r * n + j];                         \
                    out[q][j] = v;                                                          \
                }                                                                           \
        }                                                                                   \
        for (; i < hi; i++) OUTER_ONE_ROW(T, STREAM, i);                                    \
    } while (0)

SKINNY_CLONES static void outer_rows(void *p, int64_t blk) {
    const skinny_t *s = p;
    int64_t lo = blk * s->grain, hi = lo + s->grain < s->m ? lo + s->grain : s->m;
    if (s->code == 'f') OUTER_ROWS(float, stream_f);
    else OUTER_ROWS(double, stream_d);
    STREAM_FENCE();
}

#define THIN_GROUP 4  /* rows of a whose 16 lanes each stay in registers together */

/* Dots rows j0 .. j0 + JB - 1 of b with every row of a, JB rows at once. */
#define THIN_DOTS(T, JB, j0)                                                                \
    do {                                                                                    \
        const T *restrict bj[JB];                                                           \
        for (int p = 0; p < JB; p++) bj[p] = b + ((j0) + p) * k;                            \
        for (int64_t i0 = 0; i0 < s->m; i0 += THIN_GROUP) {                                 \
            const int64_t g = s->m - i0 < THIN_GROUP ? s->m - i0 : THIN_GROUP;              \
            T acc[THIN_GROUP][JB][LANES];                                                   \
            for (int q = 0; q < THIN_GROUP; q++)                                            \
                for (int p = 0; p < JB; p++)                                                \
                    for (int l = 0; l < LANES; l++) acc[q][p][l] = 0;                       \
            const T *restrict ar[THIN_GROUP];                                               \
            for (int q = 0; q < THIN_GROUP; q++) ar[q] = a + (i0 + (q < g ? q : 0)) * k;    \
            for (int64_t c = 0; c < full; c += LANES)                                       \
                for (int q = 0; q < THIN_GROUP; q++)                                        \
                    for (int p = 0; p < JB; p++)                                            \
                        for (int l = 0; l < LANES; l++)                                     \
                            acc[q][p][l] = acc[q][p][l] + ar[q][c + l] * bj[p][c + l];      \
            for (int64_t q = 0; q < g; q++)                                                 \
                for (int p = 0; p < JB; p++) {                                              \
                    for (int64_t l = 0; l < k - full; l++)                                  \
                        acc[q][p][l] = acc[q][p][l] + ar[q][full + l] * bj[p][full + l];    \
                    T sum = acc[q][p][0];                                                   \
                    for (int l = 1; l < LANES; l++) sum = sum + acc[q][p][l];               \
                    out[(i0 + q) * s->n + (j0) + p] = sum;                                  \
                }                                                                           \
        }                                                                                   \
    } while (0)

/* Rows j .. j + 3 of b dotted with rows i, i + 1 of a: eight 16-lane accumulators. */
#define THIN_2X4(T, i, j)                                                                   \
    do {                                                                                    \
        const T *restrict x0 = a + (i) * k, *restrict x1 = a + (i + 1) * k;                 \
        const T *restrict y0 = b + (j) * k, *restrict y1 = y0 + k, *restrict y2 = y1 + k;   \
        const T *restrict y3 = y2 + k;                                                      \
        T c00[LANES], c01[LANES], c02[LANES], c03[LANES];                                   \
        T c10[LANES], c11[LANES], c12[LANES], c13[LANES];                                   \
        for (int l = 0; l < LANES; l++) {                                                   \
            c00[l] = c01[l] = c02[l] = c03[l] = 0;                                          \
            c10[l] = c11[l] = c12[l] = c13[l] = 0;                                          \
        }                                                                                   \
        for (int64_t c = 0; c < full; c += LANES)                                           \
            for (int l = 0; l < LANES; l++) {                                               \
                const T u0 = x0[c + l], u1 = x1[c + l];                                     \
                const T v0 = y0[c + l], v1 = y1[c + l], v2 = y2[c + l], v3 = y3[c + l];    \
                c00[l] = c00[l] + u0 * v0;                                                  \
                c01[l] = c01[l] + u0 * v1;                                                  \
                c02[l] = c02[l] + u0 * v2;                                                  \
                c03[l] = c03[l] + u0 * v3;                                                  \
                c10[l] = c10[l] + u1 * v0;                                                  \
                c11[l] = c11[l] + u1 * v1;                                                  \
                c12[l] = c12[l] + u1 * v2;                                                  \
                c13[l] = c13[l] + u1 * v3;                                                  \
            }                                                                               \
        T *acc[2][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}};                        \
        for (int q = 0; q < 2; q++)                                                         \
            for (int p = 0; p < 4; p++) {                                                   \
                const T *xq = q ? x1 : x0, *yp = b + ((j) + p) * k;                         \
                T *cq = acc[q][p];                                                          \
                for (int64_t l = 0; l < k - full; l++)                                      \
                    cq[l] = cq[l] + xq[full + l] * yp[full + l];                            \
                T sum = cq[0];                                                              \
                for (int l = 1; l < LANES; l++) sum = sum + cq[l];                          \
                out[((i) + q) * s->n + (j) + p] = sum;                                      \
            }                                                                               \
    } while (0)

#define THIN_COLUMNS(T)                                                                     \
    do {                                                                                    \
        const T *a = (const T *)s->a, *b = (const T *)s->b;                                 \
        T *out = (T *)s->c;                                                                 \
        const int64_t k = s->k, full = k / LANES * LANES;                                   \
        int64_t j = lo;                                                                     \
        if (s->m % 2 == 0)                                                                  \
            for (; j + THIN_BLOCK <= hi; j += THIN_BLOCK)                                   \
                for (int64_t i = 0; i < s->m; i += 2) THIN_2X4(T, i, j);                    \
        for (; j < hi; j++) THIN_DOTS(T, 1, j);                                             \
    } while (0)

SKINNY_CLONES static void thin_columns(void *p, int64_t blk) {
    const skinny_t *s = p;
    int64_t lo = blk * s->grain, hi = lo + s->grain < s->n ? lo + s->grain : s->n;
    if (s->code == 'f') THIN_COLUMNS(float);
    else THIN_COLUMNS(double);
}

/* skinny(out, a, b, thin, parts): outer_sum (thin false) or thin_nt (thin true); shapes as
 * above, all C-contiguous of one float type. */
static PyObject *py_skinny(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    int thin, parts;
    if (!PyArg_ParseTuple(args, "OOOpi", &objs[0], &objs[1], &objs[2], &thin, &parts))
        return NULL;
    static const int writable[3] = {1, 0, 0};
    buf_t bufs[3];
    skinny_t s;
    if (get_floats(objs, writable, bufs, 3, &s.code) != 0) return NULL;
    int64_t cr, cc, ar, ac, br, bc;
    int ok = two_d(&bufs[0].view, &cr, &cc) && two_d(&bufs[1].view, &ar, &ac) &&
             two_d(&bufs[2].view, &br, &bc);
    if (ok && thin) ok = ar == cr && br == cc && ac == bc && ar <= THIN_ROWS;
    else if (ok) ok = ac == cr && bc == cc && ar == br && ar >= 1;
    if (!ok || cr == 0 || cc == 0) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "skinny: shapes do not match");
        return NULL;
    }
    s.m = cr;
    s.n = cc;
    s.k = thin ? ac : ar;
    s.a = bufs[1].view.buf;
    s.b = bufs[2].view.buf;
    s.c = bufs[0].view.buf;
    /* chunks of about CHUNK output elements (outer) or of b's rows (thin) */
    int64_t len = thin ? s.n : s.m;
    int64_t per = thin ? (CHUNK / (s.k > 0 ? s.k : 1)) : (CHUNK / s.n);
    s.grain = per < 1 ? 1 : per;
    int64_t count = (len + s.grain - 1) / s.grain;
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    run_all(thin ? thin_columns : outer_rows, &s, count, parts, NULL);
    Py_END_ALLOW_THREADS
    release(bufs, 3);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------
 * Max pooling over H and W of NHWC data (pooling_ops.py's NumPy paths, loop for loop).
 *
 * A window tap outside the input (padding) counts as -inf, as the NumPy path pads with it.
 * MaxPool: the fmax of the taps in row-major window order (NaN ignored unless every tap is
 * NaN). MaxPoolGrad: each window's gradient goes to its first tap in that order that is
 * strictly greater than every earlier one (TF's CPU argmax scan; a NaN first tap keeps it),
 * and is dropped when that tap is padding. Every input element then takes the sum of the
 * gradients routed to it, added in tap order as the NumPy path adds them (`assign`: windows
 * that tile the input, where the NumPy path stores instead of adding). */

#define MAX_POOL_CHANNELS 4096  /* more channels: the NumPy path */

typedef struct {
    char code;
    int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
    const char *x, *g;
    char *out;
    int32_t *idx;   /* MaxPoolGrad: the routed tap of each window, [n, oh, ow, c] */
    int assign;
    const stop_t *stop;
    atomic_int *stopped;  /* set once any image saw the stop */
} pool_t;

/* Inside an image: polls the stop every POOL_POLL_TAPS window taps of work (a window is
 * at most the input: one image can take long); returns from the chunk when stopped. */
#define POOL_POLL_TAPS (1 << 20)
#define POOL_POLL(taps)                                                                     \
    do {                                                                                    \
        if (p->stop != NULL && (budget_ -= (taps)) < 0) {                                   \
            budget_ = POOL_POLL_TAPS;                                                       \
            if (atomic_load(p->stopped)) return;                                            \
            if (should_stop(p->stop)) {                                                     \
                atomic_store(p->stopped, 1);                                                \
                return;                                                                     \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* The loops load every operand before selecting (a select between loaded values
 * vectorizes; a conditional load or a float compare selecting an int does not). */
#define FIRST_MAX_STEP(v, m, id, k, t)                                                      \
    do {                                                                                    \
        __typeof__(m[k]) vk_ = v[k], mk_ = m[k];                                            \
        int32_t ik_ = id[k], mask_ = -(int32_t)(vk_ > mk_);                                 \
        id[k] = (ik_ & ~mask_) | ((t) & mask_);                                             \
        m[k] = vk_ > mk_ ? vk_ : mk_;                                                       \
    } while (0)
#define ROUTE_STEP(assign, id, gv, k, t)                                                    \
    do {                                                                                    \
        __typeof__(gv[k]) g_ = gv[k];                                                       \
        int32_t i_ = id[k];                                                                 \
        assign (i_ == (t) ? g_ : 0);                                                        \
    } while (0)

#define POOL_FWD_LOOP(T)                                                                    \
    do {                                                                                    \
        const T *x = (const T *)p->x;                                                       \
        T *out = (T *)p->out;                                                               \
        for (int64_t r = 0; r < p->oh; r++)                                                 \
            for (int64_t q = 0; q < p->ow; q++) {                                           \
                POOL_POLL(p->kh * p->kw * C);                                               \
                T *restrict o = out + ((b * p->oh + r) * p->ow + q) * C;                    \
                for (int64_t i = 0; i < p->kh; i++) {                                       \
                    int64_t y = r * p->sh + i - p->pt;                                      \
                    for (int64_t j = 0; j < p->kw; j++) {                                   \
                        int64_t z = q * p->sw + j - p->pl;                                  \
                        int inside = y >= 0 && y < p->h && z >= 0 && z < p->w;              \
                        const T *restrict v = x + ((b * p->h + y) * p->w + z) * C;          \
                        if (i == 0 && j == 0) {                                             \
                            for (int64_t k = 0; k < C; k++) o[k] = inside ? v[k] : -(T)INFINITY; \
                        } else if (inside) {                                                \
                            for (int64_t k = 0; k < C; k++) {                               \
                                T vk = v[k], ok = o[k];                                     \
                                o[k] = (vk > ok || ok != ok) ? vk : ok;                     \
                            }                                                               \
                        } else {  /* fmax(m, -inf): only a NaN m changes */                 \
                            for (int64_t k = 0; k < C; k++)                                 \
                                o[k] = o[k] != o[k] ? -(T)INFINITY : o[k];                  \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
    } while (0)

/* One image of MaxPool. */
LOOP_CLONES static void max_pool_image(void *arg, int64_t b) {
    const pool_t *p = arg;
    const int64_t C = p->c;
    int64_t budget_ = 0;
    if (p->code == 'f')
        POOL_FWD_LOOP(float);
    else
        POOL_FWD_LOOP(double);
}

/* Window (r, q) of image b: the running maxima `m` and each channel's first-maximum tap
 * `ids` (the first tap, replaced only by a strictly greater one; padding taps are -inf). */
#define SCAN_WINDOW(T, m, ids)                                                              \
    do {                                                                                    \
        int32_t t = 0;                                                                      \
        for (int64_t i = 0; i < p->kh; i++) {                                               \
            int64_t y = r * p->sh + i - p->pt;                                              \
            for (int64_t j = 0; j < p->kw; j++, t++) {                                      \
                int64_t z = q * p->sw + j - p->pl;                                          \
                int inside = y >= 0 && y < p->h && z >= 0 && z < p->w;                      \
                const T *restrict v = x + ((b * p->h + y) * p->w + z) * C;                  \
                if (t == 0) {                                                               \
                    for (int64_t k = 0; k < C; k++) {                                       \
                        m[k] = inside ? v[k] : -(T)INFINITY;                                \
                        ids[k] = 0;                                                         \
                    }                                                                       \
                } else if (inside) {                                                        \
                    for (int64_t k = 0; k < C; k++) FIRST_MAX_STEP(v, m, ids, k, t);        \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    } while (0)

#define POOL_ARGMAX_LOOP(T)                                                                 \
    do {                                                                                    \
        const T *x = (const T *)p->x;                                                       \
        T *restrict m = (T *)scratch;                                                       \
        for (int64_t r = 0; r < p->oh; r++)                                                 \
            for (int64_t q = 0; q < p->ow; q++) {                                           \
                POOL_POLL(p->kh * p->kw * C);                                               \
                int32_t *restrict id = p->idx + ((b * p->oh + r) * p->ow + q) * C;          \
                SCAN_WINDOW(T, m, id);                                                      \
            }                                                                               \
    } while (0)

#define POOL_ROUTE_LOOP(T)                                                                  \
    do {                                                                                    \
        const T *g = (const T *)p->g;                                                       \
        T *out = (T *)p->out;                                                               \
        for (int64_t y = 0; y < p->h; y++)                                                  \
            for (int64_t z = 0; z < p->w; z++) {                                            \
                POOL_POLL(p->kh * p->kw * C);                                               \
                T *restrict o = out + ((b * p->h + y) * p->w + z) * C;                      \
                for (int64_t k = 0; k < C; k++) o[k] = 0;                                   \
                for (int64_t i = 0; i < p->kh; i++) {                                       \
                    int64_t yy = y + p->pt - i;                                             \
                    if (yy < 0 || yy % p->sh) continue;                                     \
                    int64_t r = yy / p->sh;                                                 \
                    if (r >= p->oh) continue;                                               \
                    for (int64_t j = 0; j < p->kw; j++) {                                   \
                        int64_t zz = z + p->pl - j;                                         \
                        if (zz < 0 || zz % p->sw) continue;                                 \
                        int64_t q = zz / p->sw;                                             \
                        if (q >= p->ow) continue;                                           \
                        int32_t t = (int32_t)(i * p->kw + j);                               \
                        const int32_t *restrict id = p->idx + ((b * p->oh + r) * p->ow + q) * C; \
                        const T *restrict gv = g + ((b * p->oh + r) * p->ow + q) * C;       \
                        for (int64_t k = 0; k < C; k++) ROUTE_STEP(o[k] +=, id, gv, k, t);  \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
    } while (0)

/* Tiles (windows equal to the strides): one pass per window finds each channel's first
 * maximum and writes the window's taps at once, every input element written by at most one
 * window (those outside every window were zeroed first). */
#define POOL_TILES_LOOP(T)                                                                  \
    do {                                                                                    \
        const T *x = (const T *)p->x, *g = (const T *)p->g;                                 \
        T *out = (T *)p->out;                                                               \
        T *restrict m = (T *)scratch;                                                       \
        int32_t *restrict best = (int32_t *)(m + C);                                        \
        if ((p->h + p->pt + p->sh - 1) / p->sh > p->oh ||                                   \
                (p->w + p->pl + p->sw - 1) / p->sw > p->ow)                                 \
            memset(out + b * p->h * p->w * C, 0, (size_t)(p->h * p->w * C) * sizeof(T));   \
        for (int64_t r = 0; r < p->oh; r++)                                                 \
            for (int64_t q = 0; q < p->ow; q++) {                                           \
                POOL_POLL(p->kh * p->kw * C);                                               \
                const T *restrict gv = g + ((b * p->oh + r) * p->ow + q) * C;               \
                SCAN_WINDOW(T, m, best);                                                    \
                int32_t t = 0;                                                              \
                for (int64_t i = 0; i < p->kh; i++) {                                       \
                    int64_t y = r * p->sh + i - p->pt;                                      \
                    for (int64_t j = 0; j < p->kw; j++, t++) {                              \
                        int64_t z = q * p->sw + j - p->pl;                                  \
                        if (y < 0 || y >= p->h || z < 0 || z >= p->w) continue;             \
                        T *restrict o = out + ((b * p->h + y) * p->w + z) * C;              \
                        for (int64_t k = 0; k < C; k++) ROUTE_STEP(o[k] =, best, gv, k, t); \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
    } while (0)

/* One image of MaxPoolGrad: tiles in one pass; otherwise the argmax scan, then the routing
 * (gathered per input element, so images are independent chunks). */
LOOP_CLONES static void max_pool_grad_image(void *arg, int64_t b) {
    const pool_t *p = arg;
    const int64_t C = p->c;
    int64_t budget_ = 0;
    /* one window's running maxima (and, for tiles, first-maximum taps) per channel */
    double scratch[MAX_POOL_CHANNELS * 3 / 2];
    if (p->assign) {
        if (p->code == 'f')
            POOL_TILES_LOOP(float);
        else
            POOL_TILES_LOOP(double);
        return;
    }
    if (p->code == 'f') {
        POOL_ARGMAX_LOOP(float);
        POOL_ROUTE_LOOP(float);
    } else {
        POOL_ARGMAX_LOOP(double);
        POOL_ROUTE_LOOP(double);
    }
}

/* Parses (x, out, kh, kw, sh, sw, pad_top, pad_left, parts) plus, for the gradient, g and
 * idx; checks every size against the geometry. */
static PyObject *pool_call(PyObject *args, int grad) {
    PyObject *objs[3], *idx_obj = NULL, *cell = NULL;
    double deadline = 0;
    pool_t p;
    int parts;
    memset(&p, 0, sizeof p);
    if (grad) {
        if (!PyArg_ParseTuple(args, "OOOOLLLLLLpi|Od", &objs[0], &objs[1], &objs[2], &idx_obj,
                              &p.kh, &p.kw, &p.sh, &p.sw, &p.pt, &p.pl, &p.assign, &parts,
                              &cell, &deadline))
            return NULL;
    } else if (!PyArg_ParseTuple(args, "OOLLLLLLi|Od", &objs[0], &objs[1], &p.kh, &p.kw, &p.sh,
                                 &p.sw, &p.pt, &p.pl, &parts, &cell, &deadline)) {
        return NULL;
    }
    int n = grad ? 3 : 2;
    static const int writable_fwd[2] = {0, 1}, writable_grad[3] = {0, 0, 1};
    buf_t bufs[3];
    if (get_floats(objs, grad ? writable_grad : writable_fwd, bufs, n, &p.code) != 0)
        return NULL;
    /* x, the output-shaped array (out, or grad's g), and what is written */
    const Py_buffer *xv = &bufs[0].view, *ov = &bufs[1].view;
    const Py_buffer *outv = &bufs[n - 1].view;
    if (xv->ndim != 4 || ov->ndim != 4 || outv->ndim != 4 || p.kh < 1 || p.kw < 1 ||
            p.sh < 1 || p.sw < 1 || (p.assign && (p.kh != p.sh || p.kw != p.sw))) {
        release(bufs, n);
        PyErr_SetString(PyExc_ValueError, "pool: NHWC arrays and positive windows expected (tiles: windows equal to strides)");
        return NULL;
    }
    p.n = xv->shape[0]; p.h = xv->shape[1]; p.w = xv->shape[2]; p.c = xv->shape[3];
    p.oh = ov->shape[1]; p.ow = ov->shape[2];
    int bad = ov->shape[0] != p.n || ov->shape[3] != p.c || p.c > MAX_POOL_CHANNELS;
    if (grad)  /* g is [n, oh, ow, c]; out is x's shape */
        for (int d = 0; d < 4; d++) bad |= outv->shape[d] != xv->shape[d];
    Py_buffer iv;
    int have_idx = 0;
    if (!bad && grad) {
        if (PyObject_GetBuffer(idx_obj, &iv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
                != 0) {
            release(bufs, n);
            return NULL;
        }
        have_idx = 1;
        bad = iv.itemsize != 4 || iv.len != ov->len / ov->itemsize * 4;
    }
    if (bad) {
        if (have_idx) PyBuffer_Release(&iv);
        release(bufs, n);
        PyErr_SetString(PyExc_ValueError, "pool: array shapes do not match");
        return NULL;
    }
    p.x = xv->buf;
    if (grad) {
        p.g = ov->buf;
        p.idx = iv.buf;
    }
    p.out = outv->buf;
    stop_t stop;
    Py_buffer cell_view;
    int cell_held;
    if (get_stop(cell, deadline, &stop, &cell_view, &cell_held) != 0) {
        if (have_idx) PyBuffer_Release(&iv);
        release(bufs, n);
        return NULL;
    }
    atomic_int stopped = 0;
    if (stop.cell != NULL || stop.deadline > 0) {
        p.stop = &stop;
        p.stopped = &stopped;
    }
    chunk_fn fn = grad ? max_pool_grad_image : max_pool_image;
    int64_t skipped;
    if (p.n > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    skipped = run_all(fn, &p, p.n, parts, p.stop);
    Py_END_ALLOW_THREADS
    if (cell_held) PyBuffer_Release(&cell_view);
    if (have_idx) PyBuffer_Release(&iv);
    release(bufs, n);
    return done_or_stopped(skipped || atomic_load(&stopped));
}

/* max_pool(x, out, kh, kw, sh, sw, pad_top, pad_left, parts[, stop, deadline]) */
static PyObject *py_max_pool(PyObject *self, PyObject *args) { return pool_call(args, 0); }

/* max_pool_grad(x, g, out, idx, kh, kw, sh, sw, pad_top, pad_left, assign, parts[, stop,
 * deadline]) */
static PyObject *py_max_pool_grad(PyObject *self, PyObject *args) { return pool_call(args, 1); }

/* ---------------------------------------------------------------------------------------
 * im2col: the patch rows of a convolution (conv_ops.py's `_patches` copied out), for the
 * caller's own batch chunk: no pool here, the kernels split chunks over their threads and
 * this call only releases the GIL for the copy. */

/* im2col(xp, out, n0, kh, kw, sh, sw, dh, dw): out[b, r, q, i, j, :] =
 * xp[n0 + b, r*sh + i*dh, q*sw + j*dw, :] for every b < out.shape[0]. */
static PyObject *py_im2col(PyObject *self, PyObject *args) {
    PyObject *objs[2];
    int64_t n0, kh, kw, sh, sw, dh, dw;
    if (!PyArg_ParseTuple(args, "OOLLLLLLL", &objs[0], &objs[1], &n0, &kh, &kw, &sh, &sw,
                          &dh, &dw))
        return NULL;
    static const int writable[2] = {0, 1};
    buf_t bufs[2];
    char code;
    if (get_floats(objs, writable, bufs, 2, &code) != 0) return NULL;
    const Py_buffer *xv = &bufs[0].view, *ov = &bufs[1].view;
    int bad = xv->ndim != 4 || ov->ndim != 6;
    int64_t n = 0, h = 0, w = 0, c = 0, nb = 0, oh = 0, ow = 0;
    if (!bad) {
        n = xv->shape[0]; h = xv->shape[1]; w = xv->shape[2]; c = xv->shape[3];
        nb = ov->shape[0]; oh = ov->shape[1]; ow = ov->shape[2];
        bad = ov->shape[3] != kh || ov->shape[4] != kw || ov->shape[5] != c || n0 < 0 ||
              n0 + nb > n || kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1 ||
              (oh > 0 && (oh - 1) * sh + (kh - 1) * dh >= h) ||
              (ow > 0 && (ow - 1) * sw + (kw - 1) * dw >= w);
    }
    if (bad) {
        release(bufs, 2);
        PyErr_SetString(PyExc_ValueError, "im2col: shapes do not match the geometry");
        return NULL;
    }
    const size_t size = (size_t)xv->itemsize;
    const char *x = xv->buf;
    char *o = ov->buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t b = 0; b < nb; b++)
        for (int64_t r = 0; r < oh; r++)
            for (int64_t q = 0; q < ow; q++)
                for (int64_t i = 0; i < kh; i++) {
                    const char *row = x + (((n0 + b) * h + r * sh + i * dh) * w + q * sw) * c *
                                      (int64_t)size;
                    if (dw == 1) {  /* the kw taps are one contiguous run */
                        memcpy(o, row, (size_t)(kw * c) * size);
                        o += kw * c * (int64_t)size;
                    } else {
                        for (int64_t j = 0; j < kw; j++, o += c * (int64_t)size)
                            memcpy(o, row + j * dw * c * (int64_t)size, (size_t)c * size);
                    }
                }
    Py_END_ALLOW_THREADS
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* col2im(cols, img, oh, ow, kh, kw, sh, sw, dh, dw, tap_stride, pixel_stride, tap_offset,
 * length, gather): the adds between a matrix of tap products `cols` (flat) and an NHWC
 * image `img` (N', Hp, Wp, P) that a convolution's taps tie together, for the caller's
 * batch chunk. For every filter tap (i, j) in order (t = i*kw + j), then every image b and
 * output pixel (r, q) (p = (b*oh + r)*ow + q), with
 *     I = img[b, r*sh + i*dh, q*sw + j*dw, t*tap_offset : t*tap_offset + length],
 *     X = cols[t*tap_stride + p*pixel_stride : ... + length]:
 *   gather 0 (scatter): I += X. conv_ops.py's `_scatter_taps` (backprop-input by products:
 *     the NumPy adds of one strided slice per tap, in their order, the same bits) and the
 *     tap-spread out_backprop of `_spread_backprop_filter` (tap_stride 0).
 *   gather 1: X += I. `_spread_forward` (a conv with few filters: every tap's products of
 *     every input pixel summed into the output pixels, tap_stride 0). */
#define COL2IM_LOOP(T)                                                                      \
    do {                                                                                    \
        T *cols = (T *)cv->buf, *img = (T *)dv->buf;                                        \
        for (int64_t i = 0; i < kh; i++)                                                    \
            for (int64_t j = 0; j < kw; j++) {                                              \
                const int64_t t = i * kw + j;                                               \
                T *tap = cols + t * tap_stride;                                             \
                for (int64_t b = 0; b < nb; b++)                                            \
                    for (int64_t r = 0; r < oh; r++) {                                      \
                        T *row = img + ((b * hp + r * sh + i * dh) * wp + j * dw) * pc +    \
                                 t * tap_offset;                                            \
                        T *in = tap + (b * oh + r) * ow * pixel_stride;                     \
                        for (int64_t q = 0; q < ow; q++) {                                  \
                            T *restrict o = row + q * sw * pc;                              \
                            T *restrict v = in + q * pixel_stride;                          \
                            if (gather)                                                     \
                                for (int64_t k = 0; k < length; k++) v[k] += o[k];          \
                            else                                                            \
                                for (int64_t k = 0; k < length; k++) o[k] += v[k];          \
                        }                                                                   \
                    }                                                                       \
            }                                                                               \
    } while (0)

static PyObject *py_col2im(PyObject *self, PyObject *args) {
    PyObject *objs[2];
    int64_t oh, ow, kh, kw, sh, sw, dh, dw, tap_stride, pixel_stride, tap_offset, length;
    int gather;
    if (!PyArg_ParseTuple(args, "OOLLLLLLLLLLLLp", &objs[0], &objs[1], &oh, &ow, &kh, &kw,
                          &sh, &sw, &dh, &dw, &tap_stride, &pixel_stride, &tap_offset,
                          &length, &gather))
        return NULL;
    const int writable[2] = {gather, !gather};
    buf_t bufs[2];
    char code;
    if (get_floats(objs, writable, bufs, 2, &code) != 0) return NULL;
    const Py_buffer *cv = &bufs[0].view, *dv = &bufs[1].view;
    int bad = dv->ndim != 4;
    int64_t nb = 0, hp = 0, wp = 0, pc = 0;
    if (!bad) {
        nb = dv->shape[0]; hp = dv->shape[1]; wp = dv->shape[2]; pc = dv->shape[3];
        bad = oh < 1 || ow < 1 || kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1 ||
              tap_stride < 0 || tap_offset < 0 || length < 1 || pixel_stride < length ||
              (kh * kw - 1) * tap_offset + length > pc ||
              (oh - 1) * sh + (kh - 1) * dh >= hp || (ow - 1) * sw + (kw - 1) * dw >= wp ||
              (nb > 0 && (kh * kw - 1) * tap_stride + (nb * oh * ow - 1) * pixel_stride +
                                 length > count_of(cv));
    }
    if (bad) {
        release(bufs, 2);
        PyErr_SetString(PyExc_ValueError, "col2im: shapes do not match the geometry");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (code == 'f')
        COL2IM_LOOP(float);
    else
        COL2IM_LOOP(double);
    Py_END_ALLOW_THREADS
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* ======================================================================================
 * BEGIN convnets block (issue 20 part 3, helper wt-convnets): GradientDescent's update in
 * one pass, and the channel-last fused batch norm's passes over a (rows, C) matrix. */

/* gradient_descent: var -= alpha * delta, in var's type (the NumPy rule's two operations:
 * the product rounded, then the difference), one pass instead of a temporary and two. */
#define SGD_LOOP(T)                                                                         \
    do {                                                                                    \
        T *restrict var = (T *)f->p[0];                                                     \
        const T *restrict d = (const T *)f->p[1];                                           \
        const T alpha = (T)f->s[0];                                                         \
        for (int64_t j = lo; j < hi; j++) {                                                 \
            T step = alpha * d[j];                                                          \
            var[j] = var[j] - step;                                                         \
        }                                                                                   \
    } while (0)

LOOP_CLONES static void sgd_chunk(void *p, int64_t i) {
    const flat_t *f = p;
    int64_t lo, hi;
    bounds(f, i, &lo, &hi);
    if (f->code == 'f')
        SGD_LOOP(float);
    else
        SGD_LOOP(double);
}

/* gradient_descent(var, delta, alpha, parts), in place. */
static PyObject *py_gradient_descent(PyObject *self, PyObject *args) {
    PyObject *objs[2];
    flat_t f;
    int parts;
    if (!PyArg_ParseTuple(args, "OOdi", &objs[0], &objs[1], &f.s[0], &parts)) return NULL;
    static const int writable[2] = {1, 0};
    buf_t bufs[2];
    if (get_floats(objs, writable, bufs, 2, &f.code) != 0) return NULL;
    if (!same_count(bufs, 2, &f.n)) return NULL;
    f.p[0] = bufs[0].view.buf;
    f.p[1] = bufs[1].view.buf;
    run_flat(sgd_chunk, &f, parts);
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* in_range(indices, limit): whether every index of a C-contiguous int32 or int64 buffer
 * is in [0, limit) (a gather's or scatter's check in one pass, where NumPy makes two
 * comparisons, an or and an any). TypeError/ValueError for another buffer. */
static PyObject *py_in_range(PyObject *self, PyObject *args) {
    PyObject *obj;
    long long limit;
    if (!PyArg_ParseTuple(args, "OL", &obj, &limit)) return NULL;
    Py_buffer iv;
    if (PyObject_GetBuffer(obj, &iv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) return NULL;
    const char *fmt = iv.format ? iv.format : "B";
    if (*fmt == '<' || *fmt == '=' || *fmt == '@') fmt++;
    int ok = 1;
    if (iv.itemsize == 8 && (fmt[0] == 'q' || fmt[0] == 'l') && fmt[1] == 0) {
        const int64_t *x = iv.buf;
        const int64_t n = (int64_t)(iv.len / 8);
        int64_t bad = 0;
        for (int64_t k = 0; k < n; k++) bad |= (uint64_t)x[k] >= (uint64_t)limit;
        ok = !bad;
    } else if (iv.itemsize == 4 && (fmt[0] == 'i' || fmt[0] == 'l') && fmt[1] == 0) {
        const int32_t *x = iv.buf;
        const int64_t n = (int64_t)(iv.len / 4);
        int64_t bad = 0;
        for (int64_t k = 0; k < n; k++) bad |= (uint64_t)(int64_t)x[k] >= (uint64_t)limit;
        ok = !bad;
    } else {
        PyBuffer_Release(&iv);
        PyErr_SetString(PyExc_ValueError, "in_range: int32 or int64 indices expected");
        return NULL;
    }
    PyBuffer_Release(&iv);
    if (limit < 0) ok = 0;
    return PyBool_FromLong(ok);
}

/* accidental_hits(true_classes, sampled, num_true, indices, ids): TF's
 * ComputeAccidentalHits over int64 true_classes (batch * num_true, row-major) and int64
 * sampled candidates: for each true class in order that is among the candidates, its row
 * (int32, into `indices`) and the candidate's last position (int64, into `ids`); returns
 * how many (the buffers hold one entry per true class). A hash of the candidates instead
 * of NumPy's sort, search and masks. */
static PyObject *py_accidental_hits(PyObject *self, PyObject *args) {
    Py_buffer tv, sv, iv, dv;
    long long num_true;
    if (!PyArg_ParseTuple(args, "y*y*Lw*w*", &tv, &sv, &num_true, &iv, &dv)) return NULL;
    const int64_t nt = (int64_t)(tv.len / 8), ns = (int64_t)(sv.len / 8);
    const char *error = NULL;
    if (tv.len % 8 || sv.len % 8 || num_true < 1 || !PyBuffer_IsContiguous(&tv, 'C')
        || !PyBuffer_IsContiguous(&sv, 'C') || !PyBuffer_IsContiguous(&iv, 'C')
        || !PyBuffer_IsContiguous(&dv, 'C') || iv.len < nt * 4 || dv.len < nt * 8)
        error = "accidental_hits: int64 classes and candidates, num_true >= 1, int32 and "
                "int64 outputs of one entry per true class";
    size_t cap = 16;
    while (cap < 2 * (size_t)ns) cap <<= 1;
    int64_t *keys = NULL, *pos = NULL;
    if (error == NULL) {
        keys = PyMem_RawMalloc(cap * sizeof(int64_t));
        pos = PyMem_RawMalloc(cap * sizeof(int64_t));
    }
    if (error != NULL || keys == NULL || pos == NULL) {
        PyMem_RawFree(keys);
        PyMem_RawFree(pos);
        PyBuffer_Release(&tv);
        PyBuffer_Release(&sv);
        PyBuffer_Release(&iv);
        PyBuffer_Release(&dv);
        if (error != NULL) {
            PyErr_SetString(PyExc_ValueError, error);
            return NULL;
        }
        return PyErr_NoMemory();
    }
    const int64_t *t = tv.buf, *c = sv.buf;
    int32_t *rows = iv.buf;
    int64_t *ids = dv.buf, found = 0;
    for (size_t h = 0; h < cap; h++) pos[h] = -1;
    for (int64_t k = 0; k < ns; k++) { /* a later candidate of one value overwrites */
        size_t h = ((uint64_t)c[k] * 0x9E3779B97F4A7C15ull) & (cap - 1);
        while (pos[h] != -1 && keys[h] != c[k]) h = (h + 1) & (cap - 1);
        keys[h] = c[k];
        pos[h] = k;
    }
    for (int64_t k = 0; k < nt; k++) {
        size_t h = ((uint64_t)t[k] * 0x9E3779B97F4A7C15ull) & (cap - 1);
        while (pos[h] != -1 && keys[h] != t[k]) h = (h + 1) & (cap - 1);
        if (pos[h] != -1) {
            rows[found] = (int32_t)(k / num_true);
            ids[found++] = pos[h];
        }
    }
    PyMem_RawFree(keys);
    PyMem_RawFree(pos);
    PyBuffer_Release(&tv);
    PyBuffer_Release(&sv);
    PyBuffer_Release(&iv);
    PyBuffer_Release(&dv);
    return PyLong_FromLongLong(found);
}

/* scatter_rows(target, indices, updates, subtract): target[indices[k]] += updates[k] (or
 * -=) for k in order, row by row, in place: ResourceScatterAdd/Sub on a variable of rows.
 * target (rows, width) and updates (count, width) float32 or float64 of one type, indices
 * (count,) int64. Each element gets its updates one at a time in the order of `indices`,
 * as NumPy's ufunc.at and TensorFlow's CPU kernel add them (duplicates included), at a
 * few nanoseconds a row instead of ~1 us (one ufunc call per row). ValueError for an
 * index out of [0, rows): the caller checked them, this only refuses to write outside. */
static PyObject *py_scatter_rows(PyObject *self, PyObject *args) {
    PyObject *objs[2], *idx_obj;
    int subtract;
    if (!PyArg_ParseTuple(args, "OOOp", &objs[0], &idx_obj, &objs[1], &subtract)) return NULL;
    static const int writable[2] = {1, 0};
    buf_t bufs[2];
    char code;
    if (get_floats(objs, writable, bufs, 2, &code) != 0) return NULL;
    Py_buffer iv;
    if (PyObject_GetBuffer(idx_obj, &iv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        release(bufs, 2);
        return NULL;
    }
    const char *fmt = iv.format ? iv.format : "B";
    if (*fmt == '<' || *fmt == '=' || *fmt == '@') fmt++;
    int64_t count = iv.itemsize ? (int64_t)(iv.len / iv.itemsize) : 0;
    int64_t rows = bufs[0].view.ndim > 0 ? (int64_t)bufs[0].view.shape[0] : 0;
    int64_t width = rows ? count_of(&bufs[0].view) / rows : 0;
    const char *error = NULL;
    if (iv.itemsize != 8 || (fmt[0] != 'q' && fmt[0] != 'l') || fmt[1] != 0)
        error = "scatter_rows: int64 indices expected";
    else if (count_of(&bufs[1].view) != count * width)
        error = "scatter_rows: updates of count x width elements expected";
    const int64_t *idx = iv.buf;
    for (int64_t k = 0; error == NULL && k < count; k++)
        if (idx[k] < 0 || idx[k] >= rows) error = "scatter_rows: index out of range";
    if (error != NULL) {
        PyBuffer_Release(&iv);
        release(bufs, 2);
        PyErr_SetString(PyExc_ValueError, error);
        return NULL;
    }
    /* the rows in order, in the variable's type T */
#define SCATTER_ROWS(T)                                                         \
    do {                                                                        \
        T *t = bufs[0].view.buf;                                                \
        const T *u = bufs[1].view.buf;                                          \
        for (int64_t k = 0; k < count; k++) {                                   \
            T *row = t + idx[k] * width;                                        \
            const T *up = u + k * width;                                        \
            if (subtract)                                                       \
                for (int64_t j = 0; j < width; j++) row[j] -= up[j];            \
            else                                                                \
                for (int64_t j = 0; j < width; j++) row[j] += up[j];            \
        }                                                                       \
    } while (0)
    Py_BEGIN_ALLOW_THREADS
    if (code == 'f')
        SCATTER_ROWS(float);
    else
        SCATTER_ROWS(double);
    Py_END_ALLOW_THREADS
#undef SCATTER_ROWS
    PyBuffer_Release(&iv);
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* Several updates of one rule in one pass over the pool (the graph optimizer's
 * _FusedResourceApply* nodes: a step's per-variable Adam, Momentum or gradient descent
 * updates, runtime/graph_optimizer.py `fuse_optimizer_updates`): the chunks of every
 * variable are claimed from one list, so the pool is woken once per step instead of once
 * per variable, and a small variable (a bias) does not cost a round of its own. Each
 * variable's update is the single-variable kernel's, in the same order and type. */
typedef struct {
    chunk_fn fn;
    const flat_t *groups;
    const int64_t *first;  /* first[g]: group g's first chunk in the list */
    int count;
} many_t;

static void many_chunk(void *p, int64_t i) {
    const many_t *m = p;
    int lo = 0, hi = m->count - 1;  /* the last group whose first chunk is at most i */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (m->first[mid] <= i) lo = mid;
        else hi = mid - 1;
    }
    m->fn((void *)&m->groups[lo], i - m->first[lo]);
}

/* Adam's bias-corrected rate lr * sqrt(1 - beta2_power) / (1 - beta1_power), in the
 * variable's type as the NumPy rule computes it (each operation rounded to T). */
static double adam_rate(char code, double b1p, double b2p, double lr) {
    if (code == 'f') {
        float t = (float)lr * __builtin_sqrtf(1.0f - (float)b2p);
        return (double)(t / (1.0f - (float)b1p));
    }
    return lr * __builtin_sqrt(1.0 - b2p) / (1.0 - b1p);
}

/* updates_many(rule, items, use_nesterov, parts), in place: rule 0 Adam, items of (var, m,
 * v, grad, beta1_power, beta2_power, lr, beta1, beta2, epsilon); 1 Momentum, (var, accum,
 * grad, lr, momentum); 2 gradient descent, (var, delta, alpha). Scalars are taken in the
 * variable's type (float32: rounded to it). */
/* A scalar argument as a double: a Python number, or an object with a 0-d buffer (a
 * NumPy scalar or 0-d array; one with dimensions raises ValueError, so that the caller's
 * own path reports it as the kernel should). -1.0 with an exception set on failure. */
static double scalar_double(PyObject *o) {
    if (!PyFloat_Check(o) && !PyLong_Check(o) && PyObject_CheckBuffer(o)) {
        Py_buffer view;
        if (PyObject_GetBuffer(o, &view, PyBUF_ND) != 0) return -1.0;
        int ndim = view.ndim;
        PyBuffer_Release(&view);
        if (ndim != 0) {
            PyErr_SetString(PyExc_ValueError, "a scalar expected");
            return -1.0;
        }
    }
    return PyFloat_AsDouble(o);
}

static PyObject *py_updates_many(PyObject *self, PyObject *args) {
    static const int arrays_of[3] = {4, 3, 2}, scalars_of[3] = {6, 2, 1};
    static const int writable_of[3][4] = {{1, 1, 1, 0}, {1, 1, 0, 0}, {1, 0, 0, 0}};
    static const chunk_fn fn_of[3] = {adam_chunk, momentum_chunk, sgd_chunk};
    int rule, flag, parts;
    PyObject *items;
    if (!PyArg_ParseTuple(args, "iOpi", &rule, &items, &flag, &parts)) return NULL;
    if (rule < 0 || rule > 2) {
        PyErr_SetString(PyExc_ValueError, "updates_many: rule 0, 1 or 2");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(items, "updates_many takes a sequence of tuples");
    if (seq == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    int na = arrays_of[rule], ns = scalars_of[rule];
    if (count < 1 || count > 1 << 20) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "updates_many: 1 to 2^20 updates");
        return NULL;
    }
    flat_t *groups = calloc((size_t)count, sizeof(flat_t));
    int64_t *first = calloc((size_t)count + 1, sizeof(int64_t));
    buf_t *bufs = calloc((size_t)count * (size_t)na, sizeof(buf_t));
    Py_ssize_t held = 0;  /* groups whose buffers are held */
    int64_t elements = 0;
    int failed = groups == NULL || first == NULL || bufs == NULL;
    if (failed) PyErr_NoMemory();
    for (Py_ssize_t g = 0; !failed && g < count; g++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, g);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != na + ns) {
            PyErr_Format(PyExc_ValueError, "updates_many: item %zd is not a tuple of %d",
                         g, na + ns);
            failed = 1;
            break;
        }
        PyObject *objs[4];
        for (int a = 0; a < na; a++) objs[a] = PyTuple_GET_ITEM(item, a);
        flat_t *f = &groups[g];
        if (get_floats(objs, writable_of[rule], bufs + g * na, na, &f->code) != 0) {
            failed = 1;
            break;
        }
        held = g + 1;
        if (!same_count(bufs + g * na, na, &f->n)) {
            held = g;  /* same_count released them */
            failed = 1;
            break;
        }
        for (int a = 0; a < na; a++) f->p[a] = bufs[g * na + a].view.buf;
        double sc[6];
        for (int k = 0; k < ns && !failed; k++) {
            sc[k] = scalar_double(PyTuple_GET_ITEM(item, na + k));
            failed = sc[k] == -1.0 && PyErr_Occurred();
            if (f->code == 'f') sc[k] = (double)(float)sc[k];
        }
        if (failed) break;
        if (rule == 0) {  /* lr_t, beta1, beta2, epsilon: the single-variable kernel's */
            f->s[0] = adam_rate(f->code, sc[0], sc[1], sc[2]);
            for (int k = 1; k < 4; k++) f->s[k] = sc[k + 2];
        } else {
            for (int k = 0; k < ns; k++) f->s[k] = sc[k];
        }
        f->flag = flag;
        first[g + 1] = first[g] + (f->n + CHUNK - 1) / CHUNK;
        elements += f->n;
    }
    if (elements <= CHUNK) parts = 1;  /* less than one chunk's work: not worth a wake-up */
    if (!failed && first[count] > 0) {
        many_t m = {fn_of[rule], groups, first, (int)count};
        if (first[count] > 1 && parts > 1) ensure_helpers(parts - 1);
        Py_BEGIN_ALLOW_THREADS
        run_all(many_chunk, &m, first[count], parts, NULL);
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t g = 0; g < held; g++) release(bufs + g * na, na);
    free(groups);
    free(first);
    free(bufs);
    Py_DECREF(seq);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

/* Batch norm over the rows of a C-contiguous (rows, C) matrix (NHWC data), chunks of
 * BN_ROWS(C) rows claimed by the pool's threads:
 *   bn_sums(kind, x, y, v, partial, parts): per chunk i, partial[i, 0, :] and
 *     partial[i, 1, :] (float64) are the chunk's per-channel sums of
 *       kind 0 (statistics): d = x - v and d * d;
 *       kind 1 (gradient):   y (dy) and (x - v) * y (v the mean);
 *     the caller adds the partials in chunk order, so the result does not depend on which
 *     thread ran which chunk. Inside a chunk the sums run in T over blocks of BN_BLOCK rows
 *     (a float32 sum of a few dozen terms), added into float64: far closer to the exact
 *     sums than one running float32 sum over ~10^5 rows, and as fast (memory-bound).
 *   bn_rows(kind, x, y, out, m, k1, k2, k3, parts), per element, in T:
 *     kind 0 (normalize): out = ((x - m) * k1) + k2                      (y unused)
 *     kind 1 (dx, training): out = ((y * k1) - ((x - m) * k2)) - k3      (y is dy)
 *     kind 2 (dx, inference): out = y * k1
 *     kinds 3-5 (a ReLU fused in, `r` its output, as relu_chunk and relu_grad_chunk):
 *     kind 3: kind 0's value t, then t < 0 ? 0 : t; kinds 4 and 5: kinds 1 and 2 with y
 *     replaced by y * (r > 0) (ReluGrad's product); bn_sums kind 2: kind 1's sums of that
 *     masked y; kind 6 (a side input `r` added before the ReLU, as AddV2 then Relu):
 *     t = kind 0's value + r, then t < 0 ? 0 : t;
 *   the operations, order and type of batch_norm_ops' NumPy row passes, so the values are
 *   theirs bit for bit (no FMA contraction). */
#define BN_BLOCK 32
#define BN_ROWS(c) ((c) >= 16384 ? 4 : 65536 / (c) < 4 ? 4 : 65536 / (c))

typedef struct {
    char code;
    int kind;
    int64_t rows, c, chunk_rows, plane;  /* plane > 0: channel-first rows (bn_cf_*) */
    const char *x, *y, *v, *r;
    char *out;
    double *partial;
    const char *k1, *k2, *k3;
} bn_t;

#define BN_SUMS_LOOP(T)                                                                     \
    do {                                                                                    \
        const T *restrict x = (const T *)b->x, *restrict y = (const T *)b->y;               \
        const T *restrict v = (const T *)b->v;                                              \
        T *restrict a0 = (T *)acc, *restrict a1 = (T *)acc + c;                             \
        for (int64_t r0 = lo; r0 < hi; r0 += BN_BLOCK) {                                    \
            int64_t r1 = r0 + BN_BLOCK < hi ? r0 + BN_BLOCK : hi;                           \
            for (int64_t j = 0; j < c; j++) a0[j] = a1[j] = (T)0;                           \
            if (b->kind == 0) {                                                             \
                for (int64_t r = r0; r < r1; r++) {                                         \
                    const T *restrict xr = x + r * c;                                       \
                    for (int64_t j = 0; j < c; j++) {                                       \
                        T d = xr[j] - v[j];                                                 \
                        a0[j] += d;                                                         \
                        a1[j] += d * d;                                                     \
                    }                                                                       \
                }                                                                           \
            } else if (b->kind == 1) {                                                      \
                for (int64_t r = r0; r < r1; r++) {                                         \
                    const T *restrict xr = x + r * c, *restrict yr = y + r * c;             \
                    for (int64_t j = 0; j < c; j++) {                                       \
                        a0[j] += yr[j];                                                     \
                        a1[j] += (xr[j] - v[j]) * yr[j];                                    \
                    }                                                                       \
                }                                                                           \
            } else {                                                                        \
                const T *restrict rl = (const T *)b->r;                                     \
                for (int64_t r = r0; r < r1; r++) {                                         \
                    const T *restrict xr = x + r * c, *restrict yr = y + r * c;             \
                    const T *restrict mr = rl + r * c;                                      \
                    for (int64_t j = 0; j < c; j++) {                                       \
                        T g = yr[j] * (T)(mr[j] > (T)0);                                    \
                        a0[j] += g;                                                         \
                        a1[j] += (xr[j] - v[j]) * g;                                        \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
            for (int64_t j = 0; j < c; j++) {                                               \
                p0[j] += (double)a0[j];                                                     \
                p1[j] += (double)a1[j];                                                     \
            }                                                                               \
        }                                                                                   \
    } while (0)

LOOP_CLONES static void bn_sums_chunk(void *p, int64_t i) {
    const bn_t *b = p;
    const int64_t c = b->c, lo = i * b->chunk_rows;
    const int64_t hi = lo + b->chunk_rows < b->rows ? lo + b->chunk_rows : b->rows;
    double *restrict p0 = b->partial + 2 * i * c, *restrict p1 = p0 + c;
    for (int64_t j = 0; j < c; j++) p0[j] = p1[j] = 0.0;
    double stack[2 * 512];  /* T accumulators (2 * C of them): on the stack up to C = 512 */
    void *acc = c <= 512 ? (void *)stack : malloc((size_t)(2 * c) * sizeof(double));
    if (acc == NULL) {  /* cannot happen in practice; marks the result as unusable */
        for (int64_t j = 0; j < c; j++) p0[j] = p1[j] = NAN;
        return;
    }
    if (b->code == 'f')
        BN_SUMS_LOOP(float);
    else
        BN_SUMS_LOOP(double);
    if (acc != (void *)stack) free(acc);
}

#define BN_ROWS_LOOP(T)                                                                     \
    do {                                                                                    \
        const T *restrict x = (const T *)b->x, *restrict y = (const T *)b->y;               \
        const T *restrict m = (const T *)b->v, *restrict k1 = (const T *)b->k1;             \
        const T *restrict k2 = (const T *)b->k2, *restrict k3 = (const T *)b->k3;           \
        T *restrict out = (T *)b->out;                                                      \
        const T *restrict rl = (const T *)b->r;                                             \
        for (int64_t r = lo; r < hi; r++) {                                                 \
            const int64_t o = r * c;                                                        \
            if (b->kind == 0) {                                                             \
                for (int64_t j = 0; j < c; j++) {                                           \
                    T d = x[o + j] - m[j];                                                  \
                    T s = d * k1[j];                                                        \
                    out[o + j] = s + k2[j];                                                 \
                }                                                                           \
            } else if (b->kind == 1) {                                                      \
                for (int64_t j = 0; j < c; j++) {                                           \
                    T g = y[o + j] * k1[j];                                                 \
                    T d = x[o + j] - m[j];                                                  \
                    T e = d * k2[j];                                                        \
                    T h = g - e;                                                            \
                    out[o + j] = h - k3[j];                                                 \
                }                                                                           \
            } else if (b->kind == 2) {                                                      \
                for (int64_t j = 0; j < c; j++) out[o + j] = y[o + j] * k1[j];              \
            } else if (b->kind == 3) {                                                      \
                for (int64_t j = 0; j < c; j++) {                                           \
                    T d = x[o + j] - m[j];                                                  \
                    T s = d * k1[j];                                                        \
                    T t = s + k2[j];                                                        \
                    out[o + j] = t < (T)0 ? (T)0 : t;                                       \
                }                                                                           \
            } else if (b->kind == 4) {                                                      \
                for (int64_t j = 0; j < c; j++) {                                           \
                    T gm = y[o + j] * (T)(rl[o + j] > (T)0);                                \
                    T g = gm * k1[j];                                                       \
                    T d = x[o + j] - m[j];                                                  \
                    T e = d * k2[j];                                                        \
                    T h = g - e;                                                            \
                    out[o + j] = h - k3[j];                                                 \
                }                                                                           \
            } else if (b->kind == 5) {                                                      \
                for (int64_t j = 0; j < c; j++)                                             \
                    out[o + j] = (y[o + j] * (T)(rl[o + j] > (T)0)) * k1[j];                \
            } else {                                                                        \
                for (int64_t j = 0; j < c; j++) {                                           \
                    T d = x[o + j] - m[j];                                                  \
                    T s = d * k1[j];                                                        \
                    T t = (s + k2[j]) + rl[o + j];                                          \
                    out[o + j] = t < (T)0 ? (T)0 : t;                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    } while (0)

LOOP_CLONES static void bn_rows_chunk(void *p, int64_t i) {
    const bn_t *b = p;
    const int64_t c = b->c, lo = i * b->chunk_rows;
    const int64_t hi = lo + b->chunk_rows < b->rows ? lo + b->chunk_rows : b->rows;
    if (b->code == 'f')
        BN_ROWS_LOOP(float);
    else
        BN_ROWS_LOOP(double);
}

/* Checks the (rows, C) matrices and per-channel vectors of a batch-norm call: every
 * buffer of one float type, matrices of rows * C elements, vectors of C; fills b. */
static int bn_check(buf_t *bufs, const int *is_matrix, int n, int64_t c, bn_t *b) {
    int64_t rows = c > 0 ? count_of(&bufs[0].view) / c : 0;
    for (int i = 0; i < n; i++) {
        int64_t want = is_matrix[i] ? rows * c : c;
        if (c <= 0 || count_of(&bufs[i].view) != want) {
            release(bufs, n);
            PyErr_SetString(PyExc_ValueError, "batch norm: buffers do not match (rows, C)");
            return -1;
        }
    }
    b->rows = rows;
    b->c = c;
    b->chunk_rows = BN_ROWS(c);
    return 0;
}

static int64_t bn_chunks(const bn_t *b) {
    return (b->rows + b->chunk_rows - 1) / b->chunk_rows;
}

static void bn_run(chunk_fn fn, bn_t *b, int parts) {
    int64_t count = bn_chunks(b);
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    run_all(fn, b, count, parts, NULL);
    Py_END_ALLOW_THREADS
}

/* The channel-first forms (NCHW data, `plane` = H * W > 0): the data as N * C rows of
 * `plane` elements, row q of channel q % C; the same kinds, sums and elementwise operations
 * as above with the channel's value for every element of a row. A chunk's sums run in T
 * over BN_LANES interleaved accumulators per row, added into the chunk's float64 partial of
 * the row's channel; the caller adds the chunks' partials in chunk order. */
#define BN_LANES 16
#define BN_CF_ROWS(plane) ((plane) >= 65536 ? 1 : 65536 / (plane))

#define BN_CF_SUMS_LOOP(T)                                                                  \
    do {                                                                                    \
        const T *restrict xs = (const T *)b->x, *restrict ys = (const T *)b->y;             \
        const T *restrict rs = (const T *)b->r, *restrict vs = (const T *)b->v;             \
        for (int64_t q = lo; q < hi; q++) {                                                 \
            const int64_t ch = q % c, o = q * n;                                            \
            const T *restrict x = xs + o, *restrict y = ys + o;                             \
            const T v = vs[ch];                                                             \
            T a0[BN_LANES], a1[BN_LANES];                                                   \
            for (int l = 0; l < BN_LANES; l++) a0[l] = a1[l] = (T)0;                        \
            int64_t j = 0;                                                                  \
            if (b->kind == 0) {                                                             \
                for (; j + BN_LANES <= n; j += BN_LANES)                                    \
                    for (int l = 0; l < BN_LANES; l++) {                                    \
                        T d = x[j + l] - v;                                                 \
                        a0[l] += d;                                                         \
                        a1[l] += d * d;                                                     \
                    }                                                                       \
                for (; j < n; j++) {                                                        \
                    T d = x[j] - v;                                                         \
                    a0[0] += d;                                                             \
                    a1[0] += d * d;                                                         \
                }                                                                           \
            } else if (b->kind == 1) {                                                      \
                for (; j + BN_LANES <= n; j += BN_LANES)                                    \
                    for (int l = 0; l < BN_LANES; l++) {                                    \
                        a0[l] += y[j + l];                                                  \
                        a1[l] += (x[j + l] - v) * y[j + l];                                 \
                    }                                                                       \
                for (; j < n; j++) {                                                        \
                    a0[0] += y[j];                                                          \
                    a1[0] += (x[j] - v) * y[j];                                             \
                }                                                                           \
            } else {                                                                        \
                const T *restrict mr = rs + o;                                              \
                for (; j + BN_LANES <= n; j += BN_LANES)                                    \
                    for (int l = 0; l < BN_LANES; l++) {                                    \
                        T g = y[j + l] * (T)(mr[j + l] > (T)0);                             \
                        a0[l] += g;                                                         \
                        a1[l] += (x[j + l] - v) * g;                                        \
                    }                                                                       \
                for (; j < n; j++) {                                                        \
                    T g = y[j] * (T)(mr[j] > (T)0);                                         \
                    a0[0] += g;                                                             \
                    a1[0] += (x[j] - v) * g;                                                \
                }                                                                           \
            }                                                                               \
            double s0 = 0.0, s1 = 0.0;                                                      \
            for (int l = 0; l < BN_LANES; l++) {                                            \
                s0 += (double)a0[l];                                                        \
                s1 += (double)a1[l];                                                        \
            }                                                                               \
            p0[ch] += s0;                                                                   \
            p1[ch] += s1;                                                                   \
        }                                                                                   \
    } while (0)

LOOP_CLONES static void bn_cf_sums_chunk(void *p, int64_t i) {
    const bn_t *b = p;
    const int64_t c = b->c, n = b->plane, lo = i * b->chunk_rows;
    const int64_t hi = lo + b->chunk_rows < b->rows ? lo + b->chunk_rows : b->rows;
    double *restrict p0 = b->partial + 2 * i * c, *restrict p1 = p0 + c;
    for (int64_t j = 0; j < c; j++) p0[j] = p1[j] = 0.0;
    if (b->code == 'f')
        BN_CF_SUMS_LOOP(float);
    else
        BN_CF_SUMS_LOOP(double);
}

#define BN_CF_ROWS_LOOP(T)                                                                  \
    do {                                                                                    \
        for (int64_t q = lo; q < hi; q++) {                                                 \
            const int64_t ch = q % c, o = q * n;                                            \
            const T *restrict x = (const T *)b->x + o, *restrict y = (const T *)b->y + o;   \
            const T *restrict rl = b->r ? (const T *)b->r + o : NULL;                       \
            T *restrict out = (T *)b->out + o;                                              \
            const T m = ((const T *)b->v)[ch], k1 = ((const T *)b->k1)[ch];                 \
            const T k2 = ((const T *)b->k2)[ch], k3 = ((const T *)b->k3)[ch];               \
            if (b->kind == 0) {                                                             \
                for (int64_t j = 0; j < n; j++) {                                           \
                    T d = x[j] - m;                                                         \
                    T s = d * k1;                                                           \
                    out[j] = s + k2;                                                        \
                }                                                                           \
            } else if (b->kind == 1) {                                                      \
                for (int64_t j = 0; j < n; j++) {                                           \
                    T g = y[j] * k1;                                                        \
                    T d = x[j] - m;                                                         \
                    T e = d * k2;                                                           \
                    T h = g - e;                                                            \
                    out[j] = h - k3;                                                        \
                }                                                                           \
            } else if (b->kind == 2) {                                                      \
                for (int64_t j = 0; j < n; j++) out[j] = y[j] * k1;                         \
            } else if (b->kind == 3) {                                                      \
                for (int64_t j = 0; j < n; j++) {                                           \
                    T d = x[j] - m;                                                         \
                    T s = d * k1;                                                           \
                    T t = s + k2;                                                           \
                    out[j] = t < (T)0 ? (T)0 : t;                                           \
                }                                                                           \
            } else if (b->kind == 4) {                                                      \
                for (int64_t j = 0; j < n; j++) {                                           \
                    T gm = y[j] * (T)(rl[j] > (T)0);                                        \
                    T g = gm * k1;                                                          \
                    T d = x[j] - m;                                                         \
                    T e = d * k2;                                                           \
                    T h = g - e;                                                            \
                    out[j] = h - k3;                                                        \
                }                                                                           \
            } else if (b->kind == 5) {                                                      \
                for (int64_t j = 0; j < n; j++) out[j] = (y[j] * (T)(rl[j] > (T)0)) * k1;   \
            } else {                                                                        \
                for (int64_t j = 0; j < n; j++) {                                           \
                    T d = x[j] - m;                                                         \
                    T s = d * k1;                                                           \
                    T t = (s + k2) + rl[j];                                                 \
                    out[j] = t < (T)0 ? (T)0 : t;                                           \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    } while (0)

LOOP_CLONES static void bn_cf_rows_chunk(void *p, int64_t i) {
    const bn_t *b = p;
    const int64_t c = b->c, n = b->plane, lo = i * b->chunk_rows;
    const int64_t hi = lo + b->chunk_rows < b->rows ? lo + b->chunk_rows : b->rows;
    if (b->code == 'f')
        BN_CF_ROWS_LOOP(float);
    else
        BN_CF_ROWS_LOOP(double);
}

/* Turns b (checked as (rows, C) by bn_check) into channel-first rows of `plane`; -1 with
 * ValueError when the sizes do not split so. */
static int bn_planes(bn_t *b, long long plane, buf_t *bufs, int n) {
    b->plane = plane > 0 ? plane : 0;
    if (plane <= 0) return 0;
    if ((b->rows * b->c) % (plane * b->c) != 0) {
        release(bufs, n);
        PyErr_SetString(PyExc_ValueError, "batch norm: data do not split into (N, C, plane)");
        return -1;
    }
    b->rows = b->rows * b->c / plane;
    b->chunk_rows = BN_CF_ROWS(plane);
    return 0;
}

/* bn_sums(kind, x, y, v, partial, c, parts): partial (chunks, 2, C) float64, written. */
static PyObject *py_bn_sums(PyObject *self, PyObject *args) {
    PyObject *objs[4] = {NULL, NULL, NULL, NULL}, *pobj;
    bn_t b;
    int parts;
    long long c, plane = 0;
    if (!PyArg_ParseTuple(args, "iOOOOLi|OL", &b.kind, &objs[0], &objs[1], &objs[2], &pobj, &c,
                          &parts, &objs[3], &plane))
        return NULL;
    if (objs[3] == Py_None) objs[3] = NULL;
    int nb = b.kind == 2 ? 4 : 3;
    if (b.kind < 0 || b.kind > 2 || (b.kind == 2) != (objs[3] != NULL)) {
        PyErr_SetString(PyExc_ValueError, "bn_sums: kind 0, 1, or 2 with the ReLU's output");
        return NULL;
    }
    static const int writable[4] = {0, 0, 0, 0}, matrix[4] = {1, 1, 0, 1};
    buf_t bufs[4];
    if (get_floats(objs, writable, bufs, nb, &b.code) != 0) return NULL;
    if (bn_check(bufs, matrix, nb, (int64_t)c, &b) != 0) return NULL;
    if (bn_planes(&b, plane, bufs, nb) != 0) return NULL;
    buf_t pb;
    if (PyObject_GetBuffer(pobj, &pb.view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                           PyBUF_WRITABLE) != 0) {
        release(bufs, nb);
        return NULL;
    }
    pb.held = 1;
    if (float_code(&pb.view) != 'd' || count_of(&pb.view) != bn_chunks(&b) * 2 * b.c) {
        release(bufs, nb);
        release(&pb, 1);
        PyErr_SetString(PyExc_ValueError, "bn_sums: partial must be float64 (chunks, 2, C)");
        return NULL;
    }
    b.x = bufs[0].view.buf;
    b.y = bufs[1].view.buf;
    b.v = bufs[2].view.buf;
    b.r = nb == 4 ? bufs[3].view.buf : NULL;
    b.partial = pb.view.buf;
    bn_run(b.plane ? bn_cf_sums_chunk : bn_sums_chunk, &b, parts);
    release(bufs, nb);
    release(&pb, 1);
    Py_RETURN_NONE;
}

/* bn_rows(kind, x, y, out, m, k1, k2, k3, c, parts): out (rows, C) written. */
static PyObject *py_bn_rows(PyObject *self, PyObject *args) {
    PyObject *objs[8] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    bn_t b;
    int parts;
    long long c, plane = 0;
    if (!PyArg_ParseTuple(args, "iOOOOOOOLi|OL", &b.kind, &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &objs[6], &c, &parts, &objs[7], &plane))
        return NULL;
    if (objs[7] == Py_None) objs[7] = NULL;
    static const int writable[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    static const int matrix[8] = {1, 1, 1, 0, 0, 0, 0, 1};
    buf_t bufs[8];
    int masked = b.kind >= 4, nb = masked ? 8 : 7;
    if (b.kind < 0 || b.kind > 6 || masked != (objs[7] != NULL)) {
        PyErr_SetString(PyExc_ValueError,
                        "bn_rows: kind 0 to 6, a fourth matrix with kinds 4 to 6 only");
        return NULL;
    }
    if (get_floats(objs, writable, bufs, nb, &b.code) != 0) return NULL;
    if (bn_check(bufs, matrix, nb, (int64_t)c, &b) != 0) return NULL;
    if (bn_planes(&b, plane, bufs, nb) != 0) return NULL;
    b.x = bufs[0].view.buf;
    b.y = bufs[1].view.buf;
    b.out = bufs[2].view.buf;
    b.v = bufs[3].view.buf;
    b.k1 = bufs[4].view.buf;
    b.k2 = bufs[5].view.buf;
    b.k3 = bufs[6].view.buf;
    b.r = masked ? bufs[7].view.buf : NULL;
    bn_run(b.plane ? bn_cf_rows_chunk : bn_rows_chunk, &b, parts);
    release(bufs, nb);
    Py_RETURN_NONE;
}

/* swap_last2(src, dst, b, r, s, parts): dst (b, s, r) = src (b, r, s) with its last two axes
 * swapped, both C-contiguous, elements of 2, 4 or 8 bytes copied as they are (the NCHW <->
 * NHWC transposes of the conv kernels: NumPy's strided copy of a (64, 16, 1024) float32
 * array to (64, 1024, 16) took ~0.55 ms, this ~0.1 ms). Chunks of SWAP_TILE rows of one
 * matrix (or of several small ones) are claimed by the pool's threads; inside, tiles of
 * SWAP_TILE x SWAP_TILE, 8 x 8 AVX2 blocks for 4-byte elements, the output's rows
 * outermost (rows of 1024 floats are 4 KiB apart: one cache set; tiles of 32 rows cost 3x).
 * Exact copies: the same bits on any thread count. */
#define SWAP_TILE 128

typedef struct {
    const char *src;
    char *dst;
    int64_t r, s, row_blocks, units, per;  /* units: b * row_blocks; per: units a chunk */
    int size, avx2;
} swap_t;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define SWAP_X86 1
/* One 8 x 8 block of 4-byte elements: out[j * ldo + i] = in[i * ldi + j], i, j < 8. */
__attribute__((target("avx2"))) static void swap8x8(const float *in, int64_t ldi, float *out,
                                                   int64_t ldo) {
    __m256 r0 = _mm256_loadu_ps(in), r1 = _mm256_loadu_ps(in + ldi);
    __m256 r2 = _mm256_loadu_ps(in + 2 * ldi), r3 = _mm256_loadu_ps(in + 3 * ldi);
    __m256 r4 = _mm256_loadu_ps(in + 4 * ldi), r5 = _mm256_loadu_ps(in + 5 * ldi);
    __m256 r6 = _mm256_loadu_ps(in + 6 * ldi), r7 = _mm256_loadu_ps(in + 7 * ldi);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(out, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(out + ldo, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(out + 2 * ldo, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(out + 3 * ldo, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(out + 4 * ldo, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(out + 5 * ldo, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(out + 6 * ldo, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(out + 7 * ldo, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

#define SWAP_TILE_LOOP(T)                                                                   \
    do {                                                                                    \
        const T *restrict in = (const T *)w->src + m * r * s;                               \
        T *restrict out = (T *)w->dst + m * r * s;                                          \
        for (int64_t j = j0; j < j1; j++)                                                   \
            for (int64_t i = i0; i < i1; i++) out[j * r + i] = in[i * s + j];               \
    } while (0)

static void swap_tile_rest(const swap_t *w, int64_t m, int64_t i0, int64_t i1, int64_t j0,
                           int64_t j1) {
    const int64_t r = w->r, s = w->s;
    if (w->size == 4)
        SWAP_TILE_LOOP(uint32_t);
    else if (w->size == 8)
        SWAP_TILE_LOOP(uint64_t);
    else
        SWAP_TILE_LOOP(uint16_t);
}

/* Tile [i0, i1) x [j0, j1) of matrix m. */
static void swap_tile(const swap_t *w, int64_t m, int64_t i0, int64_t i1, int64_t j0,
                      int64_t j1) {
    const int64_t r = w->r, s = w->s;
#ifdef SWAP_X86
    if (w->avx2) {
        const float *in = (const float *)w->src + m * r * s;
        float *out = (float *)w->dst + m * r * s;
        int64_t ie = i0 + (i1 - i0) / 8 * 8, je = j0 + (j1 - j0) / 8 * 8;
        /* output rows outermost: their 8 lines (r elements apart, often 4 KiB: one cache
         * set) are written through before the next 8 */
        for (int64_t j = j0; j < je; j += 8)
            for (int64_t i = i0; i < ie; i += 8) swap8x8(in + i * s + j, s, out + j * r + i, r);
        if (je < j1) swap_tile_rest(w, m, i0, ie, je, j1);
        if (ie < i1) swap_tile_rest(w, m, ie, i1, j0, j1);
        return;
    }
#endif
    swap_tile_rest(w, m, i0, i1, j0, j1);
}

LOOP_CLONES static void swap_chunk(void *p, int64_t k) {
    const swap_t *w = p;
    const int64_t u1 = (k + 1) * w->per < w->units ? (k + 1) * w->per : w->units;
    for (int64_t u = k * w->per; u < u1; u++) {
        const int64_t m = u / w->row_blocks, i0 = (u % w->row_blocks) * SWAP_TILE;
        const int64_t i1 = i0 + SWAP_TILE < w->r ? i0 + SWAP_TILE : w->r;
        for (int64_t j0 = 0; j0 < w->s; j0 += SWAP_TILE)
            swap_tile(w, m, i0, i1, j0, j0 + SWAP_TILE < w->s ? j0 + SWAP_TILE : w->s);
    }
}

static PyObject *py_swap_last2(PyObject *self, PyObject *args) {
    PyObject *objs[2];
    long long b, r, s;
    int parts;
    if (!PyArg_ParseTuple(args, "OOLLLi", &objs[0], &objs[1], &b, &r, &s, &parts)) return NULL;
    buf_t bufs[2] = {{.held = 0}, {.held = 0}};
    for (int i = 0; i < 2; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (i ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &bufs[i].view, flags) != 0) {
            release(bufs, i);
            return NULL;
        }
        bufs[i].held = 1;
    }
    int64_t size = bufs[0].view.itemsize;
    if (b < 0 || r < 0 || s < 0 || (size != 2 && size != 4 && size != 8) ||
        bufs[1].view.itemsize != size || bufs[0].view.len != (Py_ssize_t)(b * r * s * size) ||
        bufs[1].view.len != bufs[0].view.len) {
        release(bufs, 2);
        PyErr_SetString(PyExc_ValueError,
                        "swap_last2: src and dst of b * r * s elements of 2, 4 or 8 bytes");
        return NULL;
    }
    swap_t w = {bufs[0].view.buf, bufs[1].view.buf, r, s, (r + SWAP_TILE - 1) / SWAP_TILE,
                0, 1, (int)size, 0};
#ifdef SWAP_X86
    w.avx2 = size == 4 && __builtin_cpu_supports("avx2");
#endif
    /* chunks of about 64 KiB: one row block of a narrow matrix is too little work */
    int64_t unit = SWAP_TILE * s * size;
    w.per = unit > 0 && unit < 65536 ? 65536 / unit : 1;
    w.units = b * w.row_blocks;
    int64_t count = (w.units + w.per - 1) / w.per;
    if (parts < 1) parts = 1;
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    if (count > 0) run_all(swap_chunk, &w, count, parts, NULL);
    Py_END_ALLOW_THREADS
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* Winograd F(2x2, 3x3)'s tile transforms (kernels/cpu/_winograd.py), one pass per tile
 * instead of NumPy's passes over strided views, with the NumPy functions' operations in
 * the same order and type (identical bits). Arrays may be strided views (a unit's slice of
 * a per-thread buffer); the channel axis must be contiguous. Each tile runs over blocks of
 * WINO_CB channels, every step a plain loop over a block (vectorized).
 *   wino_transform(kind, src, dst):
 *     kind 0, input:    src d (k, >= 2t+2, >= 2tw+2, C) -> dst v (16, k, t, tw, C)
 *     kind 1, output:   src m (16, k, t, tw, F) -> dst y (k, 2t, 2tw, F)
 *     kind 2, gradient: src e (k, 2t, 2tw, F) -> dst (16, k, t, tw, F) */
typedef struct {
    char *p;
    int64_t s[5];  /* strides in bytes */
    /* (a 6x6 input transform's source, kinds 3 and 5: tile (i, j)'s window starts at row
     * oy + step i, column ox + step j; rows and columns outside [0, h) x [0, w) read as
     * zeros, the convolution's padding without a padded copy) */
    int64_t oy, ox, h, w;
} wview_t;

#define WINO_CB 128

#define WINO_HELPERS(T, S)                                                                  \
    /* (a - c, b + c, c - b, b - d): B^T's rows, and its columns */                         \
    static inline void wino_b_##S(int64_t n, const T *restrict a, const T *restrict b,     \
                                  const T *restrict c, const T *restrict d, T *restrict o0, \
                                  T *restrict o1, T *restrict o2, T *restrict o3) {         \
        for (int64_t e = 0; e < n; e++) {                                                   \
            o0[e] = a[e] - c[e];                                                            \
            o1[e] = b[e] + c[e];                                                            \
            o2[e] = c[e] - b[e];                                                            \
            o3[e] = b[e] - d[e];                                                            \
        }                                                                                   \
    }                                                                                       \
    /* ((a + b) + c, (b - c) - d): A^T's rows, and its columns */                           \
    static inline void wino_a_##S(int64_t n, const T *restrict a, const T *restrict b,     \
                                  const T *restrict c, const T *restrict d, T *restrict o0, \
                                  T *restrict o1) {                                         \
        for (int64_t e = 0; e < n; e++) {                                                   \
            T s = a[e] + b[e], u = b[e] - c[e];                                             \
            o0[e] = s + c[e];                                                               \
            o1[e] = u - d[e];                                                               \
        }                                                                                   \
    }                                                                                       \
    /* (x, x + y, x - y, -y): the gradient transform's rows, and its columns */            \
    static inline void wino_g_##S(int64_t n, const T *restrict x, const T *restrict y,     \
                                  T *restrict o0, T *restrict o1, T *restrict o2,           \
                                  T *restrict o3) {                                         \
        for (int64_t e = 0; e < n; e++) {                                                   \
            o0[e] = x[e];                                                                   \
            o1[e] = x[e] + y[e];                                                            \
            o2[e] = x[e] - y[e];                                                            \
            o3[e] = -y[e];                                                                  \
        }                                                                                   \
    }                                                                                       \
    static inline __attribute__((always_inline)) void wino_tiles_##S(                       \
        int kind, const wview_t *src, const wview_t *dst, int64_t k, int64_t t,             \
        int64_t tw, int64_t c) {                                                            \
        T r[4][4][WINO_CB];                                                                 \
        for (int64_t b = 0; b < k; b++)                                                     \
            for (int64_t i = 0; i < t; i++)                                                 \
                for (int64_t j = 0; j < tw; j++)                                            \
                    for (int64_t c0 = 0; c0 < c; c0 += WINO_CB) {                           \
                        const int64_t n = c - c0 < WINO_CB ? c - c0 : WINO_CB;              \
                        T *tile[16]; /* the 16 transformed positions (kinds 0, 2; m: 1) */  \
                        char *base = kind == 1 ? src->p : dst->p;                           \
                        const int64_t *s = kind == 1 ? src->s : dst->s;                     \
                        for (int p = 0; p < 16; p++)                                        \
                            tile[p] = (T *)(base + p * s[0] + b * s[1] + i * s[2] +         \
                                            j * s[3]) + c0;                                 \
                        if (kind == 0) {                                                    \
                            const T *x[4][4];                                               \
                            for (int a = 0; a < 4; a++)                                     \
                                for (int q = 0; q < 4; q++)                                 \
                                    x[a][q] = (const T *)(src->p + b * src->s[0] +          \
                                              (2 * i + a) * src->s[1] +                     \
                                              (2 * j + q) * src->s[2]) + c0;                \
                            for (int q = 0; q < 4; q++)                                     \
                                wino_b_##S(n, x[0][q], x[1][q], x[2][q], x[3][q], r[0][q],  \
                                           r[1][q], r[2][q], r[3][q]);                      \
                            for (int p = 0; p < 4; p++)                                     \
                                wino_b_##S(n, r[p][0], r[p][1], r[p][2], r[p][3],           \
                                           tile[4 * p], tile[4 * p + 1], tile[4 * p + 2],   \
                                           tile[4 * p + 3]);                                \
                        } else if (kind == 1) {                                             \
                            T *y[2][2];                                                     \
                            for (int a = 0; a < 2; a++)                                     \
                                for (int q = 0; q < 2; q++)                                 \
                                    y[a][q] = (T *)(dst->p + b * dst->s[0] +                \
                                              (2 * i + a) * dst->s[1] +                     \
                                              (2 * j + q) * dst->s[2]) + c0;                \
                            for (int q = 0; q < 4; q++)                                     \
                                wino_a_##S(n, tile[q], tile[4 + q], tile[8 + q],            \
                                           tile[12 + q], r[0][q], r[1][q]);                 \
                            for (int a = 0; a < 2; a++)                                     \
                                wino_a_##S(n, r[a][0], r[a][1], r[a][2], r[a][3], y[a][0],  \
                                           y[a][1]);                                        \
                        } else {                                                            \
                            const T *x[2][2];                                               \
                            for (int a = 0; a < 2; a++)                                     \
                                for (int q = 0; q < 2; q++)                                 \
                                    x[a][q] = (const T *)(src->p + b * src->s[0] +          \
                                              (2 * i + a) * src->s[1] +                     \
                                              (2 * j + q) * src->s[2]) + c0;                \
                            for (int q = 0; q < 2; q++)                                     \
                                wino_g_##S(n, x[0][q], x[1][q], r[0][q], r[1][q], r[2][q],  \
                                           r[3][q]);                                        \
                            for (int p = 0; p < 4; p++)                                     \
                                wino_g_##S(n, r[p][0], r[p][1], tile[4 * p],                \
                                           tile[4 * p + 1], tile[4 * p + 2],                \
                                           tile[4 * p + 3]);                                \
                        }                                                                   \
                    }                                                                       \
    }

WINO_HELPERS(float, f)
WINO_HELPERS(double, d)

/* Winograd F(2x2, 5x5)'s tile transforms (kernels/cpu/_winograd5.py), the same scheme on
 * 6x6 tiles: B^T's rows (and columns) over six values, A^T's two rows over six.
 *     kind 3, input:  src d (k, >= 2t+4, >= 2tw+4, C) -> dst v (36, k, t, tw, C)
 *     kind 4, output: src m (36, k, t, tw, F) -> dst y (k, 2t, 2tw, F)
 * and Winograd F(4x4, 3x3)'s (kernels/cpu/_winograd4.py): the same B^T on 6x6 tiles four
 * pixels apart, A^T's four rows over six:
 *     kind 5, input:    src d (k, >= 4t+2, >= 4tw+2, C) -> dst v (36, k, t, tw, C)
 *     kind 6, output:   src m (36, k, t, tw, F) -> dst y (k, 4t, 4tw, F)
 *     kind 7, gradient: src e (k, 4t, 4tw, F) -> dst (36, k, t, tw, F), A e A^T
 * Kinds 3 and 5 also take an unpadded source and an origin (oy, ox): windows start at
 * (oy + step i, ox + step j), pixels outside the source read as zeros (wview_t). */
/* The 6x6 transforms' arithmetic on one value or one vector of type V (loaded by L,
 * stored by ST, constants cast by K), the NumPy functions' operations in the same order. */
#define WV6_AT(V, p) ((p)[e])
#define WV6_PUT(V, p, v) ((p)[e] = (v))
#define WV6_LOAD(V, p) (*(const V *)((p) + e))
#define WV6_STORE(V, p, v) (*(V *)((p) + e) = (v))
#define WINO6_B(V, L, ST, K)                                                                \
    {                                                                                       \
        const V a0 = L(V, x0), a1 = L(V, x1), a2 = L(V, x2), a3 = L(V, x3);                 \
        const V a4 = L(V, x4), a5 = L(V, x5);                                               \
        const V s1 = a3 + a4, u1 = a1 + a2, s2 = a4 - a3, u2 = a1 - a2;                     \
        const V s3 = a4 - a2, u3 = a3 - a1;                                                 \
        ST(V, o0, K 4 * a0 - K 5 * a2 + a4);                                                \
        ST(V, o1, s1 - K 4 * u1);                                                           \
        ST(V, o2, s2 + K 4 * u2);                                                           \
        ST(V, o3, s3 + K 2 * u3);                                                           \
        ST(V, o4, s3 - K 2 * u3);                                                           \
        ST(V, o5, K 4 * a1 - K 5 * a3 + a5);                                                \
    }
#define WINO6_A(V, L, ST, K)                                                                \
    {                                                                                       \
        const V a1 = L(V, m1), a2 = L(V, m2), a3 = L(V, m3), a4 = L(V, m4);                 \
        const V s12 = a1 + a2, s34 = a3 + a4, d12 = a1 - a2, d34 = a3 - a4;                 \
        ST(V, y0, L(V, m0) + s12 + s34);                                                    \
        ST(V, y1, d12 + K 2 * d34 + L(V, m5));                                              \
    }
#define WINO6_A4(V, L, ST, K)                                                               \
    {                                                                                       \
        const V a1 = L(V, m1), a2 = L(V, m2), a3 = L(V, m3), a4 = L(V, m4);                 \
        const V s12 = a1 + a2, s34 = a3 + a4, d12 = a1 - a2, d34 = a3 - a4;                 \
        ST(V, y0, L(V, m0) + s12 + s34);                                                    \
        ST(V, y1, d12 + K 2 * d34);                                                         \
        ST(V, y2, s12 + K 4 * s34);                                                         \
        ST(V, y3, d12 + K 8 * d34 + L(V, m5));                                              \
    }
#define WINO6_G4(V, L, ST, K)                                                               \
    {                                                                                       \
        const V a0 = L(V, e0), a1 = L(V, e1), a2 = L(V, e2), a3 = L(V, e3);                 \
        const V s02 = a0 + a2, s13 = a1 + a3;                                               \
        const V t02 = a0 + K 4 * a2, t13 = K 2 * a1 + K 8 * a3;                             \
        ST(V, o0, a0);                                                                      \
        ST(V, o1, s02 + s13);                                                               \
        ST(V, o2, s02 - s13);                                                               \
        ST(V, o3, t02 + t13);                                                               \
        ST(V, o4, t02 - t13);                                                               \
        ST(V, o5, a3);                                                                      \
    }
#define WINO6_HELPERS(T, S)                                                                 \
    /* 32-byte vectors at any alignment, one per step of the loops below (the rest one      \
     * value at a time): GCC left B^T's loop scalar (12 pointers, more than it checks       \
     * for overlaps at run time), 3.5x slower than these. */                                \
    typedef T wv6_##S __attribute__((vector_size(32), aligned(sizeof(T)), may_alias));      \
    enum { WV6_##S = 32 / sizeof(T) };                                                      \
    static inline void wino6_b_##S(int64_t n, const T *const x[6], T *const o[6]) {         \
        const T *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];     \
        T *o0 = o[0], *o1 = o[1], *o2 = o[2], *o3 = o[3], *o4 = o[4], *o5 = o[5];           \
        int64_t e = 0;                                                                      \
        for (; e + WV6_##S <= n; e += WV6_##S)                                              \
            WINO6_B(wv6_##S, WV6_LOAD, WV6_STORE, (T))                                      \
        for (; e < n; e++)                                                                  \
            WINO6_B(T, WV6_AT, WV6_PUT, (T))                                                \
    }                                                                                       \
    static inline void wino6_a_##S(int64_t n, const T *const m[6], T *y0, T *y1) {          \
        const T *m0 = m[0], *m1 = m[1], *m2 = m[2], *m3 = m[3], *m4 = m[4], *m5 = m[5];     \
        int64_t e = 0;                                                                      \
        for (; e + WV6_##S <= n; e += WV6_##S)                                              \
            WINO6_A(wv6_##S, WV6_LOAD, WV6_STORE, (T))                                      \
        for (; e < n; e++)                                                                  \
            WINO6_A(T, WV6_AT, WV6_PUT, (T))                                                \
    }                                                                                       \
    /* F(4, 3)'s A^T: (m0 + s12) + s34, d12 + 2 d34, s12 + 4 s34, (d12 + 8 d34) + m5 */     \
    static inline void wino6_a4_##S(int64_t n, const T *const m[6], T *const y[4]) {        \
        const T *m0 = m[0], *m1 = m[1], *m2 = m[2], *m3 = m[3], *m4 = m[4], *m5 = m[5];     \
        T *y0 = y[0], *y1 = y[1], *y2 = y[2], *y3 = y[3];                                   \
        int64_t e = 0;                                                                      \
        for (; e + WV6_##S <= n; e += WV6_##S)                                              \
            WINO6_A4(wv6_##S, WV6_LOAD, WV6_STORE, (T))                                     \
        for (; e < n; e++)                                                                  \
            WINO6_A4(T, WV6_AT, WV6_PUT, (T))                                               \
    }                                                                                       \
    /* F(4, 3)'s A over four values: (e0, (e0 + e2) + (e1 + e3), (e0 + e2) - (e1 + e3),     \
     * (e0 + 4 e2) + (2 e1 + 8 e3), (e0 + 4 e2) - (2 e1 + 8 e3), e3) */                     \
    static inline void wino6_g4_##S(int64_t n, const T *const x[4], T *const o[6]) {        \
        const T *e0 = x[0], *e1 = x[1], *e2 = x[2], *e3 = x[3];                             \
        T *o0 = o[0], *o1 = o[1], *o2 = o[2], *o3 = o[3], *o4 = o[4], *o5 = o[5];           \
        int64_t e = 0;                                                                      \
        for (; e + WV6_##S <= n; e += WV6_##S)                                              \
            WINO6_G4(wv6_##S, WV6_LOAD, WV6_STORE, (T))                                     \
        for (; e < n; e++)                                                                  \
            WINO6_G4(T, WV6_AT, WV6_PUT, (T))                                               \
    }                                                                                       \
    static const T wino6_zeros_##S[WINO_CB]; /* (the padding's values) */                    \
    static inline __attribute__((always_inline)) void wino6_tiles_##S(                      \
        int kind, const wview_t *src, const wview_t *dst, int64_t k, int64_t t,             \
        int64_t tw, int64_t c) {                                                            \
        T r[6][6][WINO_CB];                                                                 \
        const int64_t step = kind >= 5 ? 4 : 2; /* pixels between tiles (kinds 3, 5) */     \
        const int out_kind = kind == 4 || kind == 6;                                        \
        for (int64_t b = 0; b < k; b++)                                                     \
            for (int64_t i = 0; i < t; i++)                                                 \
                for (int64_t j = 0; j < tw; j++)                                            \
                    for (int64_t c0 = 0; c0 < c; c0 += WINO_CB) {                           \
                        const int64_t n = c - c0 < WINO_CB ? c - c0 : WINO_CB;              \
                        T *tile[36];                                                        \
                        char *base = out_kind ? src->p : dst->p;                            \
                        const int64_t *s = out_kind ? src->s : dst->s;                      \
                        for (int p = 0; p < 36; p++)                                        \
                            tile[p] = (T *)(base + p * s[0] + b * s[1] + i * s[2] +         \
                                            j * s[3]) + c0;                                 \
                        if (kind == 7) {                                                    \
                            for (int q = 0; q < 4; q++) { /* A over each column */          \
                                const T *col[4];                                            \
                                T *rows[6];                                                 \
                                for (int a = 0; a < 4; a++)                                 \
                                    col[a] = (const T *)(src->p + b * src->s[0] +           \
                                             (4 * i + a) * src->s[1] +                      \
                                             (4 * j + q) * src->s[2]) + c0;                 \
                                for (int a = 0; a < 6; a++) rows[a] = r[a][q];              \
                                wino6_g4_##S(n, col, rows);                                 \
                            }                                                               \
                            for (int p = 0; p < 6; p++) { /* then over each row */          \
                                const T *row[4] = {r[p][0], r[p][1], r[p][2], r[p][3]};     \
                                wino6_g4_##S(n, row, &tile[6 * p]);                         \
                            }                                                               \
                        } else if (!out_kind) {                                             \
                            const T *col[6];                                                \
                            T *rows[6];                                                     \
                            for (int q = 0; q < 6; q++) { /* B^T over each column */        \
                                const int64_t x = src->ox + step * j + q;                   \
                                for (int a = 0; a < 6; a++) {                               \
                                    const int64_t y = src->oy + step * i + a;               \
                                    col[a] = y < 0 || y >= src->h || x < 0 || x >= src->w   \
                                        ? wino6_zeros_##S                                   \
                                        : (const T *)(src->p + b * src->s[0] +              \
                                                      y * src->s[1] + x * src->s[2]) + c0;  \
                                    rows[a] = r[a][q];                                      \
                                }                                                           \
                                wino6_b_##S(n, col, rows);                                  \
                            }                                                               \
                            for (int p = 0; p < 6; p++) { /* then over each row */          \
                                const T *row[6];                                            \
                                for (int q = 0; q < 6; q++) row[q] = r[p][q];               \
                                wino6_b_##S(n, row, &tile[6 * p]);                          \
                            }                                                               \
                        } else if (kind == 6) {                                             \
                            for (int q = 0; q < 6; q++) { /* A^T over each column */        \
                                const T *col[6];                                            \
                                T *rows[4] = {r[0][q], r[1][q], r[2][q], r[3][q]};          \
                                for (int a = 0; a < 6; a++) col[a] = tile[6 * a + q];       \
                                wino6_a4_##S(n, col, rows);                                 \
                            }                                                               \
                            for (int a = 0; a < 4; a++) { /* then over each row */          \
                                const T *row[6];                                            \
                                T *y[4];                                                    \
                                for (int q = 0; q < 6; q++) row[q] = r[a][q];               \
                                for (int q = 0; q < 4; q++)                                 \
                                    y[q] = (T *)(dst->p + b * dst->s[0] +                   \
                                           (4 * i + a) * dst->s[1] +                        \
                                           (4 * j + q) * dst->s[2]) + c0;                   \
                                wino6_a4_##S(n, row, y);                                    \
                            }                                                               \
                        } else {                                                            \
                            for (int q = 0; q < 6; q++) { /* A^T over each column */        \
                                const T *col[6];                                            \
                                for (int a = 0; a < 6; a++) col[a] = tile[6 * a + q];       \
                                wino6_a_##S(n, col, r[0][q], r[1][q]);                      \
                            }                                                               \
                            for (int a = 0; a < 2; a++) { /* then over each row */          \
                                const T *row[6];                                            \
                                for (int q = 0; q < 6; q++) row[q] = r[a][q];               \
                                T *y0 = (T *)(dst->p + b * dst->s[0] +                      \
                                        (2 * i + a) * dst->s[1] + (2 * j) * dst->s[2]) + c0; \
                                T *y1 = (T *)((char *)y0 + dst->s[2]);                      \
                                wino6_a_##S(n, row, y0, y1);                                \
                            }                                                               \
                        }                                                                   \
                    }                                                                       \
    }

WINO6_HELPERS(float, f)
WINO6_HELPERS(double, d)

/* (the tile loops are inlined here so that the AVX2 clone has AVX2 loops: as functions of
 * their own they were built for the baseline's SSE2 only) */
LOOP_CLONES static void wino_run(int kind, char code, const wview_t *src, const wview_t *dst,
                                 int64_t k, int64_t t, int64_t tw, int64_t c) {
    if (kind >= 3 && code == 'f')
        wino6_tiles_f(kind, src, dst, k, t, tw, c);
    else if (kind >= 3)
        wino6_tiles_d(kind, src, dst, k, t, tw, c);
    else if (code == 'f')
        wino_tiles_f(kind, src, dst, k, t, tw, c);
    else
        wino_tiles_d(kind, src, dst, k, t, tw, c);
}

/* Takes a strided float buffer of `ndim` dimensions whose last axis is contiguous. */
static int get_strided(PyObject *obj, int writable, int ndim, buf_t *b, char *code,
                       wview_t *w) {
    b->held = 0;
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) != 0) return -1;
    b->held = 1;
    char cd = float_code(&b->view);
    if (cd == 0 || (*code && cd != *code) || b->view.ndim != ndim ||
            b->view.strides[ndim - 1] != b->view.itemsize) {
        PyErr_SetString(PyExc_ValueError, "wino_transform: float buffers of one type, the "
                        "expected rank, the channel axis contiguous");
        return -1;
    }
    *code = cd;
    w->p = b->view.buf;
    for (int i = 0; i < ndim; i++) w->s[i] = b->view.strides[i];
    return 0;
}

static PyObject *py_wino_transform(PyObject *self, PyObject *args) {
    int kind;
    PyObject *sobj, *dobj, *origin = Py_None;
    long long oy = 0, ox = 0;
    if (!PyArg_ParseTuple(args, "iOO|O", &kind, &sobj, &dobj, &origin)) return NULL;
    if (origin != Py_None && ((kind != 3 && kind != 5) ||
                              !PyArg_ParseTuple(origin, "LL", &oy, &ox))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "wino_transform: an origin for kinds 3 and 5");
        return NULL;
    }
    if (kind < 0 || kind > 7) {
        PyErr_SetString(PyExc_ValueError, "wino_transform: kind 0 to 7");
        return NULL;
    }
    buf_t bufs[2] = {{.held = 0}, {.held = 0}};
    wview_t src, dst;
    char code = 0;
    const int out_kind = kind == 1 || kind == 4 || kind == 6;  /* tiles -> pixels */
    const int sdim = out_kind ? 5 : 4, ddim = out_kind ? 4 : 5;
    if (get_strided(sobj, 0, sdim, &bufs[0], &code, &src) != 0 ||
            get_strided(dobj, 1, ddim, &bufs[1], &code, &dst) != 0) {
        release(bufs, 2);
        return NULL;
    }
    const Py_ssize_t *ss = bufs[0].view.shape, *ds = bufs[1].view.shape;
    src.oy = oy;
    src.ox = ox;
    src.h = ss[1];
    src.w = ss[2];
    const int virtual = origin != Py_None;  /* (any source size: zeros beyond it) */
    int64_t k, t, tw, c;
    int ok;
    if (kind == 0) {  /* d (k, H, W, C) -> v (16, k, t, tw, C) */
        k = ds[1]; t = ds[2]; tw = ds[3]; c = ds[4];
        ok = ds[0] == 16 && ss[0] == k && ss[1] >= 2 * t + 2 && ss[2] >= 2 * tw + 2 &&
             ss[3] == c;
    } else if (kind == 1) {  /* m (16, k, t, tw, F) -> y (k, 2t, 2tw, F) */
        k = ss[1]; t = ss[2]; tw = ss[3]; c = ss[4];
        ok = ss[0] == 16 && ds[0] == k && ds[1] == 2 * t && ds[2] == 2 * tw && ds[3] == c;
    } else if (kind == 2) {  /* e (k, 2t, 2tw, F) -> (16, k, t, tw, F) */
        k = ds[1]; t = ds[2]; tw = ds[3]; c = ds[4];
        ok = ds[0] == 16 && ss[0] == k && ss[1] == 2 * t && ss[2] == 2 * tw && ss[3] == c;
    } else if (kind == 3) {  /* d (k, H, W, C) -> v (36, k, t, tw, C) */
        k = ds[1]; t = ds[2]; tw = ds[3]; c = ds[4];
        ok = ds[0] == 36 && ss[0] == k && ss[3] == c &&
             (virtual || (ss[1] >= 2 * t + 4 && ss[2] >= 2 * tw + 4));
    } else if (kind == 4) {  /* m (36, k, t, tw, F) -> y (k, 2t, 2tw, F) */
        k = ss[1]; t = ss[2]; tw = ss[3]; c = ss[4];
        ok = ss[0] == 36 && ds[0] == k && ds[1] == 2 * t && ds[2] == 2 * tw && ds[3] == c;
    } else if (kind == 5) {  /* d (k, H, W, C) -> v (36, k, t, tw, C) */
        k = ds[1]; t = ds[2]; tw = ds[3]; c = ds[4];
        ok = ds[0] == 36 && ss[0] == k && ss[3] == c &&
             (virtual || (ss[1] >= 4 * t + 2 && ss[2] >= 4 * tw + 2));
    } else if (kind == 6) {  /* m (36, k, t, tw, F) -> y (k, 4t, 4tw, F) */
        k = ss[1]; t = ss[2]; tw = ss[3]; c = ss[4];
        ok = ss[0] == 36 && ds[0] == k && ds[1] == 4 * t && ds[2] == 4 * tw && ds[3] == c;
    } else {  /* e (k, 4t, 4tw, F) -> (36, k, t, tw, F) */
        k = ds[1]; t = ds[2]; tw = ds[3]; c = ds[4];
        ok = ds[0] == 36 && ss[0] == k && ss[1] == 4 * t && ss[2] == 4 * tw && ss[3] == c;
    }
    if (!ok) {
        release(bufs, 2);
        PyErr_SetString(PyExc_ValueError, "wino_transform: shapes do not match");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    wino_run(kind, code, &src, &dst, k, t, tw, c);
    Py_END_ALLOW_THREADS
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* bias_relu(out, bias, relu): out (rows, F) += bias, then (relu) max(., 0), in place, one
 * pass: _FusedConv2D's epilogue (conv_ops._bias_epilogue) with the NumPy operations'
 * values (the sum rounded, then `v < 0 ? 0 : v`, which keeps NaN and -0.0 as
 * np.maximum(v, 0) does). Called per chunk from the kernel's threads: no pool here. */
#define BIAS_RELU_LOOP(T)                                                                   \
    do {                                                                                    \
        T *restrict o = (T *)out;                                                           \
        const T *restrict b = (const T *)bias;                                              \
        for (int64_t r = 0; r < rows; r++, o += f) {                                        \
            if (relu)                                                               \
                for (int64_t j = 0; j < f; j++) {                                           \
                    T v = o[j] + b[j];                                                      \
                    o[j] = v < (T)0 ? (T)0 : v;                                             \
                }                                                                           \
            else                                                                            \
                for (int64_t j = 0; j < f; j++) o[j] = o[j] + b[j];                         \
        }                                                                                   \
    } while (0)

LOOP_CLONES static void bias_relu_run(char code, char *out, const char *bias, int64_t rows,
                                      int64_t f, int relu) {
    if (code == 'f')
        BIAS_RELU_LOOP(float);
    else
        BIAS_RELU_LOOP(double);
}

static PyObject *py_bias_relu(PyObject *self, PyObject *args) {
    PyObject *objs[2];
    int relu;
    if (!PyArg_ParseTuple(args, "OOp", &objs[0], &objs[1], &relu)) return NULL;
    static const int writable[2] = {1, 0};
    buf_t bufs[2];
    char code;
    if (get_floats(objs, writable, bufs, 2, &code) != 0) return NULL;
    int64_t f = count_of(&bufs[1].view), n = count_of(&bufs[0].view);
    if (f <= 0 || n % f != 0) {
        release(bufs, 2);
        PyErr_SetString(PyExc_ValueError, "bias_relu: out must be (rows, len(bias))");
        return NULL;
    }
    char *o = bufs[0].view.buf;
    const char *b = bufs[1].view.buf;
    Py_BEGIN_ALLOW_THREADS
    bias_relu_run(code, o, b, n / f, f, relu);
    Py_END_ALLOW_THREADS
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* elementwise(out, inputs, program) -> bool: the graph optimizer's _FusedElementwise (runtime/
 * elementwise_fusion.py): a tree of float32 elementwise nodes of one shape computed in one
 * pass, block by block (EW_BLOCK elements), each node's values in a block-sized register,
 * where NumPy makes a call, an output array and a pass per node (~1 us each on the few
 * thousand elements of an RNN cell). `program` is int32 triples (op, a, b): registers
 * 0..n_in-1 are the inputs (each of out's size, or of one element: a scalar, broadcast),
 * register n_in + i instruction i's result; the last instruction writes out. Each op
 * rounds as its NumPy kernel does, operation for operation (no FMA: -ffp-contract=off):
 * TanhGrad is b * (1 - a * a), SigmoidGrad (b * a) * (1 - a), with a = y, b = dy.
 * `inputs` is a tuple of C-contiguous float32 buffers, each of out's shape or of rank 0;
 * False (nothing written) for any that is not (the caller's NumPy path takes them). */
enum { EW_ADD, EW_SUB, EW_MUL, EW_NEG, EW_TANH_GRAD, EW_SIGMOID_GRAD, EW_OPS };
#define EW_BLOCK 256
#define EW_MAX_REGS 48 /* inputs and instructions together (elementwise_fusion.py's caps) */

LOOP_CLONES static void ew_run(float *out, const float *const *in, const int *wide, int n_in,
                               const int32_t *prog, int n_ins, int64_t n) {
    static _Thread_local float regs[EW_MAX_REGS][EW_BLOCK];
    const float *src[EW_MAX_REGS];
    for (int r = 0; r < n_in; r++)
        if (!wide[r])
            for (int j = 0; j < EW_BLOCK; j++) regs[r][j] = in[r][0];
    for (int64_t base = 0; base < n; base += EW_BLOCK) {
        int64_t len = n - base < EW_BLOCK ? n - base : EW_BLOCK;
        for (int r = 0; r < n_in; r++) src[r] = wide[r] ? in[r] + base : regs[r];
        for (int i = 0; i < n_ins; i++) {
            const int32_t *p = prog + 3 * i;
            float *restrict d = i == n_ins - 1 ? out + base : regs[n_in + i];
            const float *restrict a = src[p[1]];
            const float *restrict b = src[p[2]];
            switch (p[0]) {
            case EW_ADD:
                for (int64_t j = 0; j < len; j++) d[j] = a[j] + b[j];
                break;
            case EW_SUB:
                for (int64_t j = 0; j < len; j++) d[j] = a[j] - b[j];
                break;
            case EW_MUL:
                for (int64_t j = 0; j < len; j++) d[j] = a[j] * b[j];
                break;
            case EW_NEG:
                for (int64_t j = 0; j < len; j++) d[j] = -a[j];
                break;
            case EW_TANH_GRAD:
                for (int64_t j = 0; j < len; j++) {
                    float t = a[j] * a[j];
                    t = 1.0f - t;
                    d[j] = b[j] * t;
                }
                break;
            default: /* EW_SIGMOID_GRAD */
                for (int64_t j = 0; j < len; j++) {
                    float t1 = b[j] * a[j];
                    float t2 = 1.0f - a[j];
                    d[j] = t1 * t2;
                }
                break;
            }
            src[n_in + i] = d;
        }
    }
}

/* Takes a C-contiguous float32 buffer of `like`'s shape, or of rank 0 (a scalar), into *b;
 * 0 when `obj` is not one (no exception set). */
static int ew_buffer(PyObject *obj, const Py_buffer *like, int writable, buf_t *b) {
    b->held = 0;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) != 0) {
        PyErr_Clear();
        return 0;
    }
    b->held = 1;
    const Py_buffer *v = &b->view;
    if (float_code(v) != 'f') return 0;
    if (like == NULL || v->ndim == 0) return 1;
    if (v->ndim != like->ndim) return 0;
    for (int d = 0; d < v->ndim; d++)
        if (v->shape[d] != like->shape[d]) return 0;
    return 1;
}

/* One pool task of a split `elementwise`: chunk i is elements [i * CHUNK, (i + 1) * CHUNK)
 * of every wide input and of out (a scalar input is read whole by each chunk). */
typedef struct {
    float *out;
    const float *const *in;
    const int *wide;
    int n_in, n_ins;
    const int32_t *prog;
    int64_t n;
} ew_task_t;

static void ew_chunk(void *p, int64_t i) {
    const ew_task_t *t = p;
    int64_t lo = i * CHUNK, len = t->n - lo < CHUNK ? t->n - lo : CHUNK;
    const float *in[EW_MAX_REGS];
    for (int r = 0; r < t->n_in; r++) in[r] = t->wide[r] ? t->in[r] + lo : t->in[r];
    ew_run(t->out + lo, in, t->wide, t->n_in, t->prog, t->n_ins, len);
}

/* elementwise(out, inputs, program[, parts]): parts > 1 splits an output of more than
 * CHUNK elements over the pool (the large TanhGrad and SigmoidGrad of unary_ops.py, one
 * instruction each, whose `out` may be one of the inputs, donated: every element is read
 * before it is written, and no other element is touched). */
static PyObject *py_elementwise(PyObject *self, PyObject *args) {
    PyObject *out_obj, *seq;
    const char *prog_bytes;
    Py_ssize_t prog_len;
    int parts = 1;
    if (!PyArg_ParseTuple(args, "OO!y#|i", &out_obj, &PyTuple_Type, &seq, &prog_bytes,
                          &prog_len, &parts))
        return NULL;
    Py_ssize_t n_in = PyTuple_GET_SIZE(seq);
    int n_ins = (int)(prog_len / (3 * (Py_ssize_t)sizeof(int32_t)));
    if (n_in < 1 || n_ins < 1 || n_in + n_ins > EW_MAX_REGS ||
        prog_len != (Py_ssize_t)(3 * sizeof(int32_t)) * n_ins) {
        PyErr_SetString(PyExc_ValueError, "elementwise: bad program or too many inputs");
        return NULL;
    }
    int32_t prog[3 * EW_MAX_REGS];
    memcpy(prog, prog_bytes, (size_t)prog_len);
    for (int i = 0; i < n_ins; i++) {
        int32_t op = prog[3 * i], a = prog[3 * i + 1], b = prog[3 * i + 2];
        if (op < 0 || op >= EW_OPS || a < 0 || b < 0 || a >= n_in + i || b >= n_in + i) {
            PyErr_SetString(PyExc_ValueError, "elementwise: bad instruction");
            return NULL;
        }
    }
    buf_t bufs[EW_MAX_REGS + 1];
    const float *in[EW_MAX_REGS];
    int wide[EW_MAX_REGS];
    int held = 1;
    int ok = ew_buffer(out_obj, NULL, 1, &bufs[0]) && bufs[0].view.len > 0;
    for (Py_ssize_t r = 0; ok && r < n_in; r++, held++) {
        ok = ew_buffer(PyTuple_GET_ITEM(seq, r), &bufs[0].view, 0, &bufs[r + 1]);
        in[r] = bufs[r + 1].view.buf;
        wide[r] = bufs[r + 1].view.ndim != 0 || bufs[0].view.ndim == 0;
    }
    if (!ok) {
        release(bufs, held);
        Py_RETURN_FALSE;
    }
    int64_t n = count_of(&bufs[0].view);
    float *o = bufs[0].view.buf;
    if (parts > 1 && n > CHUNK) {
        ew_task_t t = {o, in, wide, (int)n_in, n_ins, prog, n};
        run_flat_task(ew_chunk, &t, (n + CHUNK - 1) / CHUNK, parts);
    } else if (n >= (1 << 14)) {
        Py_BEGIN_ALLOW_THREADS
        ew_run(o, in, wide, (int)n_in, prog, n_ins, n);
        Py_END_ALLOW_THREADS
    } else {
        ew_run(o, in, wide, (int)n_in, prog, n_ins, n);
    }
    release(bufs, held);
    Py_RETURN_TRUE;
}

/* resize_nearest(out, images, iy, ix, parts): ResizeNearestNeighbor of NHWC `images` into
 * `out` [N, OH, OW, C] (C-contiguous, one item size, any type: pixels are copied as bytes),
 * out[n, y, x] = images[n, iy[y], ix[x]], `iy` and `ix` int64 (image_ops.py's
 * _nearest_index), in one pass where NumPy's two fancy indexings make two. Tasks are blocks
 * of output rows; a row whose source row is the previous row's is one copy of that row
 * (an integer upsampling's repeated rows). */
typedef struct {
    char *out;
    const char *in;
    const int64_t *iy, *ix;
    int64_t n, h, w, oh, ow, px, rows_per;
} rnn_t;

static void rnn_chunk(void *p, int64_t i) {
    const rnn_t *t = p;
    int64_t r0 = i * t->rows_per, r1 = r0 + t->rows_per < t->n * t->oh ? r0 + t->rows_per
                                                                        : t->n * t->oh;
    int64_t row_bytes = t->ow * t->px;
    for (int64_t r = r0; r < r1; r++) {
        int64_t b = r / t->oh, y = r % t->oh;
        char *dst = t->out + r * row_bytes;
        if (r > r0 && y > 0 && t->iy[y] == t->iy[y - 1]) {
            memcpy(dst, dst - row_bytes, (size_t)row_bytes);
            continue;
        }
        const char *src = t->in + ((b * t->h + t->iy[y]) * t->w) * t->px;
        for (int64_t x = 0; x < t->ow; x++)
            memcpy(dst + x * t->px, src + t->ix[x] * t->px, (size_t)t->px);
    }
}

static int get_c_buffers(PyObject **objs, const int *writable, buf_t *bufs, int n) {
    for (int i = 0; i < n; i++) bufs[i].held = 0;
    for (int i = 0; i < n; i++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable[i] ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &bufs[i].view, flags) != 0) {
            release(bufs, i);
            return -1;
        }
        bufs[i].held = 1;
    }
    return 0;
}

static PyObject *py_resize_nearest(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    int parts;
    if (!PyArg_ParseTuple(args, "OOOOi", &objs[0], &objs[1], &objs[2], &objs[3], &parts))
        return NULL;
    static const int writable[4] = {1, 0, 0, 0};
    buf_t bufs[4];
    if (get_c_buffers(objs, writable, bufs, 4) != 0) return NULL;
    const Py_buffer *o = &bufs[0].view, *im = &bufs[1].view, *vy = &bufs[2].view,
                    *vx = &bufs[3].view;
    int ok = o->ndim == 4 && im->ndim == 4 && o->itemsize == im->itemsize &&
             o->shape[0] == im->shape[0] && o->shape[3] == im->shape[3] && vy->ndim == 1 &&
             vx->ndim == 1 && vy->itemsize == 8 && vx->itemsize == 8 &&
             vy->shape[0] == o->shape[1] && vx->shape[0] == o->shape[2];
    rnn_t t = {0};
    if (ok) {
        t = (rnn_t){o->buf, im->buf, vy->buf, vx->buf, im->shape[0], im->shape[1],
                    im->shape[2], o->shape[1], o->shape[2], im->shape[3] * im->itemsize, 1};
        for (int64_t y = 0; ok && y < t.oh; y++) ok = t.iy[y] >= 0 && t.iy[y] < t.h;
        for (int64_t x = 0; ok && x < t.ow; x++) ok = t.ix[x] >= 0 && t.ix[x] < t.w;
    }
    if (!ok) {
        release(bufs, 4);
        PyErr_SetString(PyExc_ValueError, "resize_nearest: bad shapes, types or indices");
        return NULL;
    }
    int64_t rows = t.n * t.oh, row_bytes = t.ow * t.px;
    if (rows > 0 && row_bytes > 0) {
        t.rows_per = (CHUNK * 4) / row_bytes > 1 ? (CHUNK * 4) / row_bytes : 1;
        run_flat_task(rnn_chunk, &t, (rows + t.rows_per - 1) / t.rows_per, parts);
    }
    release(bufs, 4);
    Py_RETURN_NONE;
}

/* resize_nearest_grad(out, grads, ky, kx, parts): ResizeNearestNeighborGrad of an integer
 * upsampling of float32 NHWC by ky x kx (out [N, H, W, C], grads [N, H*ky, W*kx, C]): each
 * output pixel the sum of its ky x kx block in _resize_nearest.py's _sum_into order, so the same
 * float32 values: per block column j2 the column's rows added top to bottom, and those
 * column sums added left to right. Tasks are blocks of output rows. */
typedef struct {
    float *out;
    const float *g;
    int64_t n, h, w, c, ky, kx, rows_per;
} rnng_t;

#define RNNG_LANES 256 /* channels summed per block (a column sum's stack buffer) */

LOOP_CLONES static void rnng_chunk(void *p, int64_t i) {
    const rnng_t *t = p;
    int64_t r0 = i * t->rows_per, r1 = r0 + t->rows_per < t->n * t->h ? r0 + t->rows_per
                                                                       : t->n * t->h;
    int64_t c = t->c, gw = t->w * t->kx * c; /* a grads row, in floats */
    for (int64_t r = r0; r < r1; r++) {
        const float *g0 = t->g + r * t->ky * gw; /* grads row (b, y * ky): r = b * h + y */
        float *restrict dst = t->out + r * t->w * c;
        if (t->ky == 2 && t->kx == 2) { /* the common 2x upsampling: the same sums, unrolled */
            for (int64_t x = 0; x < t->w; x++, dst += c) {
                const float *restrict a = g0 + 2 * x * c, *restrict b = a + c;
                const float *restrict a1 = a + gw, *restrict b1 = b + gw;
                for (int64_t k = 0; k < c; k++) dst[k] = (a[k] + a1[k]) + (b[k] + b1[k]);
            }
            continue;
        }
        for (int64_t x = 0; x < t->w; x++, dst += c) {
            for (int64_t j2 = 0; j2 < t->kx; j2++) {
                const float *col = g0 + (x * t->kx + j2) * c;
                for (int64_t k0 = 0; k0 < c; k0 += RNNG_LANES) {
                    int64_t m = c - k0 < RNNG_LANES ? c - k0 : RNNG_LANES;
                    float s[RNNG_LANES];
                    for (int64_t k = 0; k < m; k++) s[k] = col[k0 + k];
                    for (int64_t j1 = 1; j1 < t->ky; j1++) {
                        const float *restrict cj = col + j1 * gw + k0;
                        for (int64_t k = 0; k < m; k++) s[k] += cj[k];
                    }
                    if (j2 == 0)
                        for (int64_t k = 0; k < m; k++) dst[k0 + k] = s[k];
                    else
                        for (int64_t k = 0; k < m; k++) dst[k0 + k] += s[k];
                }
            }
        }
    }
}

static PyObject *py_resize_nearest_grad(PyObject *self, PyObject *args) {
    PyObject *objs[2];
    rnng_t t = {0};
    int parts;
    if (!PyArg_ParseTuple(args, "OOLLi", &objs[0], &objs[1], &t.ky, &t.kx, &parts))
        return NULL;
    static const int writable[2] = {1, 0};
    buf_t bufs[2];
    char code;
    if (get_floats(objs, writable, bufs, 2, &code) != 0) return NULL;
    const Py_buffer *o = &bufs[0].view, *g = &bufs[1].view;
    if (code != 'f' || o->ndim != 4 || g->ndim != 4 || t.ky < 1 || t.kx < 1 ||
        g->shape[0] != o->shape[0] || g->shape[3] != o->shape[3] ||
        g->shape[1] != o->shape[1] * t.ky || g->shape[2] != o->shape[2] * t.kx) {
        release(bufs, 2);
        PyErr_SetString(PyExc_ValueError, "resize_nearest_grad: bad shapes or types");
        return NULL;
    }
    t.out = o->buf;
    t.g = g->buf;
    t.n = o->shape[0], t.h = o->shape[1], t.w = o->shape[2], t.c = o->shape[3];
    int64_t rows = t.n * t.h, per_row = t.w * t.c * t.ky * t.kx;
    if (rows > 0 && per_row > 0) {
        t.rows_per = CHUNK / per_row > 1 ? CHUNK / per_row : 1;
        run_flat_task(rnng_chunk, &t, (rows + t.rows_per - 1) / t.rows_per, parts);
    }
    release(bufs, 2);
    Py_RETURN_NONE;
}

/* END convnets block
 * ====================================================================================== */

/* sparse_xent(logits, labels, loss, backprop): SparseSoftmaxCrossEntropyWithLogits over
 * (batch, classes) logits in one pass per row, where NumPy's form is a dozen calls (each a
 * few microseconds on a small batch, and slower still when a big product has just pushed
 * the interpreter out of the cache): max of the row (NaN propagates), e = exp(x - max),
 * s = sum of e in order, loss = log(s) - (x[label] - max), backprop = e / s, minus 1 at the
 * label; s is summed in double, the rest is in the logits' type (expf/logf for float32).
 * The C library's exp is slower per element than NumPy's vectorized one, so native.py
 * sends only small inputs here (XENT_MAX_ELEMENTS). Labels int32 or int64 (C-contiguous,
 * one per row). Returns -1, or the row of the first label outside [0, classes), having
 * written nothing. */
#define XENT_ROWS(T, EXP, LOG)                                                              \
    do {                                                                                    \
        const T *restrict x = (const T *)xv;                                                \
        T *restrict bp = (T *)bv;                                                           \
        T *restrict loss = (T *)lv;                                                         \
        for (int64_t r = 0; r < rows; r++, x += classes, bp += classes) {                   \
            T mx = x[0];                                                                    \
            for (int64_t j = 1; j < classes; j++)                                           \
                if (x[j] > mx || x[j] != x[j]) mx = x[j];                                   \
            double total = 0;                                                               \
            for (int64_t j = 0; j < classes; j++) total += (bp[j] = EXP(x[j] - mx));        \
            T sum = (T)total;                                                               \
            int64_t at = label_at(labels, wide, r);                                         \
            loss[r] = LOG(sum) - (x[at] - mx);                                              \
            for (int64_t j = 0; j < classes; j++) bp[j] = bp[j] / sum;                      \
            bp[at] -= (T)1;                                                                 \
        }                                                                                   \
    } while (0)

static inline int64_t label_at(const void *labels, int wide, int64_t r) {
    return wide ? ((const int64_t *)labels)[r] : (int64_t)((const int32_t *)labels)[r];
}

static void xent_rows(char code, const char *xv, const void *labels, int wide, char *lv,
                      char *bv, int64_t rows, int64_t classes) {
    if (code == 'f')
        XENT_ROWS(float, expf, logf);
    else
        XENT_ROWS(double, exp, log);
}

static PyObject *py_sparse_xent(PyObject *self, PyObject *args) {
    PyObject *objs[3], *labels_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &labels_obj, &objs[1], &objs[2]))
        return NULL;
    static const int writable[3] = {0, 1, 1};
    buf_t bufs[3], lab;
    char code;
    if (get_floats(objs, writable, bufs, 3, &code) != 0) return NULL;
    lab.held = 0;
    if (PyObject_GetBuffer(labels_obj, &lab.view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        release(bufs, 3);
        return NULL;
    }
    lab.held = 1;
    const char *f = lab.view.format ? lab.view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    int wide = lab.view.itemsize == 8;
    int64_t rows = count_of(&lab.view), n = count_of(&bufs[0].view);
    int64_t classes = rows > 0 ? n / rows : 0;
    if (f[0] == 0 || f[1] != 0 || strchr("ilq", f[0]) == NULL ||
            (lab.view.itemsize != 4 && lab.view.itemsize != 8) || rows < 1 || classes < 1 ||
            classes * rows != n || count_of(&bufs[2].view) != n ||
            count_of(&bufs[1].view) != rows) {
        release(bufs, 3);
        release(&lab, 1);
        PyErr_SetString(PyExc_ValueError, "sparse_xent: (rows, classes) logits and "
                        "backprop, rows int32/int64 labels and losses");
        return NULL;
    }
    int64_t bad = -1;
    for (int64_t r = 0; r < rows && bad < 0; r++) {
        int64_t v = label_at(lab.view.buf, wide, r);
        if (v < 0 || v >= classes) bad = r;
    }
    if (bad < 0) {
        Py_BEGIN_ALLOW_THREADS
        xent_rows(code, bufs[0].view.buf, lab.view.buf, wide, bufs[1].view.buf,
                  bufs[2].view.buf, rows, classes);
        Py_END_ALLOW_THREADS
    }
    release(bufs, 3);
    release(&lab, 1);
    return PyLong_FromLongLong(bad);
}

/* =========================================================================================
 * ngemm block (issue 20, helper convs3): a float32 GEMM of its own for the products of
 * convolutions, out (+)= op(a) @ b with a narrow b (the filter: a few hundred columns or
 * fewer) and many rows, read where they lie: no packing of either operand.
 *
 * OpenBLAS packs its operands for every call; a convolution's patch or pixel matrix
 * (25,088 x 64-576 in ResNet-50's first stage) is packed whole for a filter of 64 columns,
 * and its products ran at 60-78 GFLOP/s of CPU on this Zen 4 against ~100 for a large
 * square one. Here the output is cut into tiles of 6 rows x 64 columns (24 AVX-512
 * accumulators); per step of k, the tile's row of b (4 vectors, contiguous) is loaded and
 * each of a's 6 values broadcast into 4 FMAs. k runs in blocks of NG_KC (b's block stays
 * in L1/L2) inside blocks of NG_MC rows (the output block stays in L2 across them; for
 * a^T b, whose k is long, the k blocks are outermost instead).
 * `trans`: a is given as its (k, m) transpose, element (r, k) at a[r + k*lda] (the filter
 * gradients' x^T dy). The sums run over k in order, one FMA per step and a vector add of
 * each earlier k block's partial tile: rounding differs from BLAS's (as one BLAS blocking
 * differs from another), and is the same for any number of threads (a tile is summed by
 * one thread). Used where the CPU has AVX-512F, or (6 x 16 tiles, `ng2_tile`) AVX2 and
 * FMA (`ngemm_ready`). */

#define NG_MR 6
#define NG_KC 128
#define NG_MC 96

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define NG_X86 1
/* Python's own flags build extensions with -fwrapv, under which GCC 12 keeps the tile's 24
 * accumulators in memory (a store of each per step of k: 2.5x slower); this block has no
 * signed overflow to wrap. */
#pragma GCC push_options
#pragma GCC optimize("no-wrapv")

__attribute__((target("avx512f"), always_inline)) static inline void ng_tile(
        int trans, int mr, int nv, __mmask16 last, const float *a, int64_t lda,
        const float *b, int64_t ldb, float *c, int64_t ldc, int64_t kc, int add) {
    __m512 acc[NG_MR][4];
    for (int r = 0; r < NG_MR; r++)
        for (int v = 0; v < 4; v++) acc[r][v] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++) {
        __m512 bv[4];
        for (int v = 0; v < nv; v++)
            bv[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * v)
                                : _mm512_loadu_ps(b + 16 * v);
        for (int r = 0; r < mr; r++) {
            __m512 av = _mm512_set1_ps(trans ? a[r] : a[r * lda]);
            for (int v = 0; v < nv; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
        }
        b += ldb;
        a += trans ? lda : 1;
    }
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) {
            __mmask16 m = v == nv - 1 ? last : (__mmask16)0xFFFF;
            float *p = c + r * ldc + 16 * v;
            __m512 x = acc[r][v];
            if (add) x = _mm512_add_ps(_mm512_maskz_loadu_ps(m, p), x);
            _mm512_mask_storeu_ps(p, m, x);
        }
}

#define NG_COLS(T, MR)                                                                   \
    switch (nv) {                                                                        \
    case 4: ng_tile(T, MR, 4, last, a, lda, b, ldb, c, ldc, kc, add); break;             \
    case 3: ng_tile(T, MR, 3, last, a, lda, b, ldb, c, ldc, kc, add); break;             \
    case 2: ng_tile(T, MR, 2, last, a, lda, b, ldb, c, ldc, kc, add); break;             \
    default: ng_tile(T, MR, 1, last, a, lda, b, ldb, c, ldc, kc, add);                   \
    }
#define NG_ROWS(T)                                                                       \
    switch (mr) {                                                                        \
    case 6: NG_COLS(T, 6) break;                                                         \
    case 5: NG_COLS(T, 5) break;                                                         \
    case 4: NG_COLS(T, 4) break;                                                         \
    case 3: NG_COLS(T, 3) break;                                                         \
    case 2: NG_COLS(T, 2) break;                                                         \
    default: NG_COLS(T, 1)                                                               \
    }

__attribute__((target("avx512f"))) static void ng_tile_n(
        int mr, int nv, __mmask16 last, const float *a, int64_t lda, const float *b,
        int64_t ldb, float *c, int64_t ldc, int64_t kc, int add) { NG_ROWS(0) }

__attribute__((target("avx512f"))) static void ng_tile_t(
        int mr, int nv, __mmask16 last, const float *a, int64_t lda, const float *b,
        int64_t ldb, float *c, int64_t ldc, int64_t kc, int add) { NG_ROWS(1) }

/* out[r0:r1, j0:j1] (+)= op(a)[r0:r1] @ b[:, j0:j1] */
static void ng_block(const float *a, int64_t lda, int trans, const float *b, int64_t ldb,
                     float *c, int64_t ldc, int64_t r0, int64_t r1, int64_t j0, int64_t j1,
                     int64_t k, int accumulate) {
    /* (a^T b: blocks of k outermost, so that each of b's blocks is read once) */
    int64_t mc = trans ? r1 - r0 : NG_MC;
    for (int64_t i0 = r0; i0 < r1; i0 += mc) {
        int64_t i1 = r1 - i0 < mc ? r1 : i0 + mc;
        for (int64_t k0 = 0; k0 < k; k0 += NG_KC) {
            int64_t kc = k - k0 < NG_KC ? k - k0 : NG_KC;
            int add = accumulate || k0 > 0;
            for (int64_t i = i0; i < i1; i += NG_MR) {
                int mr = i1 - i < NG_MR ? (int)(i1 - i) : NG_MR;
                const float *ai = trans ? a + k0 * lda + i : a + i * lda + k0;
                for (int64_t j = j0; j < j1; j += 64) {
                    int64_t w = j1 - j < 64 ? j1 - j : 64;
                    int nv = (int)((w + 15) / 16);
                    __mmask16 last = (__mmask16)((1u << (w - 16 * (nv - 1))) - 1);
                    if (trans)
                        ng_tile_t(mr, nv, last, ai, lda, b + k0 * ldb + j, ldb, c + i * ldc + j,
                                  ldc, kc, add);
                    else
                        ng_tile_n(mr, nv, last, ai, lda, b + k0 * ldb + j, ldb, c + i * ldc + j,
                                  ldc, kc, add);
                }
            }
        }
    }
}

/* The AVX2 + FMA copy (CPUs without AVX-512F: Zen 2/3, Haswell to Comet Lake): 16 ymm
 * registers hold a tile of 6 rows x 16 columns (12 accumulators), the step's 2 vectors of
 * b and one broadcast value of a; the columns of a partial tile are masked (loads of b and
 * of the output, stores). k runs in blocks of NG2_KC (a last block of up to 1.5 NG2_KC
 * whole: the CNN's k = 75 is one block), so the sums differ from the AVX-512 tiles' as one
 * BLAS blocking from another, and again do not depend on the number of threads. For a b
 * the column strips are outermost within a block of rows (a strip of b's k block stays in
 * L1 while the row tiles stream past; on Zen 3 this and NG2_KC = 64 took the 25088x64 @
 * 64x64 product from 51 to 80-89 GFLOP/s); for a^T b the row tiles are (their strip of a
 * is a cache line per k). */
#define NG2_NR 16
#define NG2_KC 64
#define NG2_MC 96

__attribute__((target("avx2,fma"), always_inline)) static inline void ng2_tile(
        int trans, int mr, int nv, int masked, __m256i last, const float *a, int64_t lda,
        const float *b, int64_t ldb, float *c, int64_t ldc, int64_t kc, int add) {
    __m256 acc[NG_MR][2];
    for (int r = 0; r < NG_MR; r++)
        for (int v = 0; v < 2; v++) acc[r][v] = _mm256_setzero_ps();
    for (int64_t k = 0; k < kc; k++) {
        __m256 bv[2];
        for (int v = 0; v < nv; v++)
            bv[v] = masked && v == nv - 1 ? _mm256_maskload_ps(b + 8 * v, last)
                                          : _mm256_loadu_ps(b + 8 * v);
        for (int r = 0; r < mr; r++) {
            __m256 av = _mm256_broadcast_ss(trans ? a + r : a + r * lda);
            for (int v = 0; v < nv; v++) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
        }
        b += ldb;
        a += trans ? lda : 1;
    }
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) {
            float *p = c + r * ldc + 8 * v;
            __m256 x = acc[r][v];
            if (masked && v == nv - 1) {
                if (add) x = _mm256_add_ps(_mm256_maskload_ps(p, last), x);
                _mm256_maskstore_ps(p, last, x);
            } else {
                if (add) x = _mm256_add_ps(_mm256_loadu_ps(p), x);
                _mm256_storeu_ps(p, x);
            }
        }
}

#define NG2_COLS(T, MR)                                                                  \
    if (nv == 2 && !masked) ng2_tile(T, MR, 2, 0, last, a, lda, b, ldb, c, ldc, kc, add); \
    else if (nv == 2) ng2_tile(T, MR, 2, 1, last, a, lda, b, ldb, c, ldc, kc, add);      \
    else ng2_tile(T, MR, 1, 1, last, a, lda, b, ldb, c, ldc, kc, add);
#define NG2_ROWS(T)                                                                      \
    switch (mr) {                                                                        \
    case 6: NG2_COLS(T, 6) break;                                                        \
    case 5: NG2_COLS(T, 5) break;                                                        \
    case 4: NG2_COLS(T, 4) break;                                                        \
    case 3: NG2_COLS(T, 3) break;                                                        \
    case 2: NG2_COLS(T, 2) break;                                                        \
    default: NG2_COLS(T, 1)                                                              \
    }

__attribute__((target("avx2,fma"))) static void ng2_tile_n(
        int mr, int nv, int masked, __m256i last, const float *a, int64_t lda, const float *b,
        int64_t ldb, float *c, int64_t ldc, int64_t kc, int add) { NG2_ROWS(0) }

__attribute__((target("avx2,fma"))) static void ng2_tile_t(
        int mr, int nv, int masked, __m256i last, const float *a, int64_t lda, const float *b,
        int64_t ldb, float *c, int64_t ldc, int64_t kc, int add) { NG2_ROWS(1) }

/* ng_block with the AVX2 tiles */
__attribute__((target("avx2,fma"))) static void ng2_block(
        const float *a, int64_t lda, int trans, const float *b, int64_t ldb, float *c,
        int64_t ldc, int64_t r0, int64_t r1, int64_t j0, int64_t j1, int64_t k,
        int accumulate) {
    int64_t mc = trans ? r1 - r0 : NG2_MC;
    for (int64_t i0 = r0; i0 < r1; i0 += mc) {
        int64_t i1 = r1 - i0 < mc ? r1 : i0 + mc;
        for (int64_t k0 = 0, kc; k0 < k; k0 += kc) {
            /* (a short last block joins the one before: k = 75 is one block) */
            kc = 2 * (k - k0) <= 3 * NG2_KC ? k - k0 : NG2_KC;
            int add = accumulate || k0 > 0;
            /* a b: columns outermost, a 16-column strip of b's block stays in L1 while
             * the rows' tiles stream past; a^T b (a's k rows far apart): rows outermost,
             * the tile's strip of a (a cache line per k) stays in L1 across the columns */
            int64_t nj = (j1 - j0 + NG2_NR - 1) / NG2_NR, ni = (i1 - i0 + NG_MR - 1) / NG_MR;
            for (int64_t t = 0; t < nj * ni; t++) {
                int64_t j = j0 + NG2_NR * (trans ? t % nj : t / ni);
                int64_t i = i0 + NG_MR * (trans ? t / nj : t % ni);
                int64_t w = j1 - j < NG2_NR ? j1 - j : NG2_NR;
                int nv = (int)((w + 7) / 8), tail = (int)(w - 8 * (nv - 1));
                int masked = tail < 8;
                __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail),
                                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
                int mr = i1 - i < NG_MR ? (int)(i1 - i) : NG_MR;
                const float *ai = trans ? a + k0 * lda + i : a + i * lda + k0;
                if (trans)
                    ng2_tile_t(mr, nv, masked, last, ai, lda, b + k0 * ldb + j, ldb,
                               c + i * ldc + j, ldc, kc, add);
                else
                    ng2_tile_n(mr, nv, masked, last, ai, lda, b + k0 * ldb + j, ldb,
                               c + i * ldc + j, ldc, kc, add);
            }
        }
    }
}
#pragma GCC pop_options
#else
#define NG_X86 0
#endif

typedef struct {
    const float *a, *b;
    float *c;
    int64_t lda, m, n, k, rows, cols, grid_n;
    int trans, accumulate, avx2;
} ngemm_t;

static void ngemm_chunk(void *p, int64_t chunk) {
#if NG_X86
    const ngemm_t *g = (const ngemm_t *)p;
    int64_t r0 = (chunk / g->grid_n) * g->rows, j0 = (chunk % g->grid_n) * g->cols;
    int64_t r1 = r0 + g->rows < g->m ? r0 + g->rows : g->m;
    int64_t j1 = j0 + g->cols < g->n ? j0 + g->cols : g->n;
    if (g->avx2)
        ng2_block(g->a, g->lda, g->trans, g->b, g->n, g->c, g->n, r0, r1, j0, j1, g->k,
                  g->accumulate);
    else
        ng_block(g->a, g->lda, g->trans, g->b, g->n, g->c, g->n, r0, r1, j0, j1, g->k,
                 g->accumulate);
#else
    (void)p;
    (void)chunk;
#endif
}

static int ngemm_ready(void) {
#if NG_X86
    static int ready = -1;
    if (ready < 0)
        ready = __builtin_cpu_supports("avx512f") ? 1
              : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 2 : 0;
    return ready;
#else
    return 0;
#endif
}

/* The operands of an ngemm call: b (read) and out (written) as float buffers, a as any
 * strided buffer (the caller checks its layout); 0, or -1 with an exception set and nothing
 * held. */
static int get_product_operands(PyObject *objs[3], buf_t bufs[3], char *code) {
    static const int writable[2] = {0, 1};
    if (get_floats(objs + 1, writable, bufs + 1, 2, code) != 0) return -1;
    if (PyObject_GetBuffer(objs[0], &bufs[0].view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
        release(bufs + 1, 2);
        return -1;
    }
    bufs[0].held = 1;
    return 0;
}

/* ngemm(a, b, out, transpose_a, accumulate, parts[, stop, deadline]): out (+)= op(a) @ b,
 * float32; b and out C-contiguous, a (m, k) (or its (k, m) transpose when transpose_a)
 * with contiguous rows at any row stride. None when this CPU has neither AVX-512F nor
 * AVX2 + FMA (nothing written); False if stopped. The output is cut into a grid of blocks (rows: multiples of
 * NG_MR; columns: of 64) that the pool's threads claim, a few per thread when it has rows
 * enough. */
static PyObject *py_ngemm(PyObject *self, PyObject *args) {
    PyObject *objs[3], *cell = NULL;
    int ta, accumulate, parts;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "OOOppi|Od", &objs[0], &objs[1], &objs[2], &ta, &accumulate,
                          &parts, &cell, &deadline))
        return NULL;
    if (!ngemm_ready()) Py_RETURN_NONE;
    buf_t bufs[3];
    char code;
    if (get_product_operands(objs, bufs, &code) != 0) return NULL;
    const Py_buffer *av = &bufs[0].view;
    if (code != 'f' || float_code(av) != 'f' || av->ndim != 2 ||
            (av->shape[1] > 1 && av->strides[1] != 4) || av->strides[0] % 4 != 0 ||
            av->strides[0] < 4 * av->shape[1]) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "ngemm takes float32 matrices (a: contiguous rows)");
        return NULL;
    }
    int64_t ar = av->shape[0], ac = av->shape[1], br, bc, cr, cc;
    if (!two_d(&bufs[1].view, &br, &bc) || !two_d(&bufs[2].view, &cr, &cc)) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "ngemm takes float32 matrices");
        return NULL;
    }
    ngemm_t g;
    memset(&g, 0, sizeof g);
    g.trans = ta;
    g.accumulate = accumulate;
    g.avx2 = ngemm_ready() == 2;
    g.m = ta ? ac : ar;
    g.k = ta ? ar : ac;
    g.n = bc;
    g.lda = av->strides[0] / 4;
    g.a = (const float *)bufs[0].view.buf;
    g.b = (const float *)bufs[1].view.buf;
    g.c = (float *)bufs[2].view.buf;
    if (br != g.k || cr != g.m || cc != g.n) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "ngemm: shapes do not match");
        return NULL;
    }
    if (g.m == 0 || g.n == 0) {
        release(bufs, 3);
        Py_RETURN_TRUE;
    }
    if (g.k == 0) {  /* nothing to add; a plain product of nothing is zeros */
        if (!accumulate) memset(g.c, 0, (size_t)(g.m * g.n) * sizeof(float));
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
    int polled = stop.cell != NULL || stop.deadline > 0;
    if (parts < 1) parts = 1;
    /* Blocks: whole rows of NG_MC (or fewer, for 4 per thread), all columns unless there
     * are too few row blocks to go round. */
    int64_t want = (ta ? 1 : 4) * (int64_t)parts;  /* a^T b: every block reads all of b */
    int64_t rows = NG_MC, cols = ceil_div(g.n, 64) * 64;
    if (ceil_div(g.m, rows) < want) {
        rows = ceil_div(ceil_div(g.m, want), NG_MR) * NG_MR;
        if (rows < 4 * NG_MR) rows = 4 * NG_MR;
    }
    if (ceil_div(g.m, rows) < want && g.n > 64) {
        int64_t cut = ceil_div(want, ceil_div(g.m, rows));
        cols = ceil_div(ceil_div(g.n, cut), 64) * 64;
    }
    /* a block's product at most about GEMM_CHUNK_FLOPS when the call polls a stop */
    while (polled && rows > NG_MR && 2.0 * rows * cols * g.k > GEMM_CHUNK_FLOPS)
        rows = ceil_div(rows / 2, NG_MR) * NG_MR;
    g.rows = rows;
    g.cols = cols;
    g.grid_n = ceil_div(g.n, cols);
    int64_t count = ceil_div(g.m, rows) * g.grid_n, skipped = 0;
    if (count > 1 && parts > 1) ensure_helpers(parts - 1);
    Py_BEGIN_ALLOW_THREADS
    skipped = parts > 1 && count > 1 ? run_all(ngemm_chunk, &g, count, parts, polled ? &stop : NULL)
                                     : run_serial(ngemm_chunk, &g, count, polled ? &stop : NULL);
    Py_END_ALLOW_THREADS
    if (cell_held) PyBuffer_Release(&cell_view);
    release(bufs, 3);
    return done_or_stopped(skipped);
}

/* ngemm_batch(a, b, out, accumulate): out[p] (+)= a[p] @ b[p] for every p, on this thread
 * (ngemm's blocks for one part, so the same bits as one ngemm call per p): a (P, m, k)
 * float32 with contiguous rows (or each a[p] the transpose of such a (k, m) array), b
 * (P, k, n) C-contiguous and out (P, m, n) with each out[p]
 * C-contiguous. One call for a Winograd work unit's 16 or 36 per-position products,
 * without a Python call each. */
static PyObject *py_ngemm_batch(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    int accumulate;
    if (!PyArg_ParseTuple(args, "OOOp", &objs[0], &objs[1], &objs[2], &accumulate))
        return NULL;
    if (!ngemm_ready()) Py_RETURN_NONE;
    /* (the positions of out at any stride: padded buffers, kernels/cpu/_winograd.py) */
    buf_t bufs[3] = {{.held = 0}, {.held = 0}, {.held = 0}};
    char code = 0;
    static const int read_only[1] = {0};
    if (get_floats(objs + 1, read_only, bufs + 1, 1, &code) != 0) return NULL;
    if (PyObject_GetBuffer(objs[0], &bufs[0].view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
        release(bufs, 3);
        return NULL;
    }
    bufs[0].held = 1;
    if (PyObject_GetBuffer(objs[2], &bufs[2].view,
                           PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE) != 0) {
        release(bufs, 3);
        return NULL;
    }
    bufs[2].held = 1;
    const Py_buffer *av = &bufs[0].view, *bv = &bufs[1].view, *ov = &bufs[2].view;
    int bad = code != 'f' || float_code(av) != 'f' || float_code(ov) != 'f' ||
              av->ndim != 3 || bv->ndim != 3 || ov->ndim != 3;
    if (!bad)
        bad = (ov->shape[2] > 1 && ov->strides[2] != 4) ||
              (ov->shape[1] > 1 && ov->strides[1] != 4 * ov->shape[2]) ||
              ov->strides[0] % 4 != 0 ||
              (ov->shape[0] > 1 && ov->strides[0] < 4 * ov->shape[1] * ov->shape[2]);
    /* a[p] (m, k) with contiguous rows, or (ta) the transpose of a (k, m) such array */
    const int ta = !bad && av->shape[2] > 1 && av->strides[2] != 4;
    if (!bad && ta)
        bad = (av->shape[1] > 1 && av->strides[1] != 4) || av->strides[2] % 4 != 0 ||
              av->strides[0] % 4 != 0 || av->strides[2] < 4 * av->shape[1] ||
              bv->shape[0] != av->shape[0] || ov->shape[0] != av->shape[0] ||
              bv->shape[1] != av->shape[2] || ov->shape[1] != av->shape[1] ||
              ov->shape[2] != bv->shape[2];
    else if (!bad)
        bad = (av->shape[2] > 1 && av->strides[2] != 4) || av->strides[1] % 4 != 0 ||
              av->strides[0] % 4 != 0 || av->strides[1] < 4 * av->shape[2] ||
              bv->shape[0] != av->shape[0] || ov->shape[0] != av->shape[0] ||
              bv->shape[1] != av->shape[2] || ov->shape[1] != av->shape[1] ||
              ov->shape[2] != bv->shape[2];
    if (bad) {
        release(bufs, 3);
        PyErr_SetString(PyExc_ValueError, "ngemm_batch takes float32 (P, m, k) (rows "
                        "contiguous), (P, k, n) and (P, m, n) (each p's C-contiguous) arrays");
        return NULL;
    }
    ngemm_t g;
    memset(&g, 0, sizeof g);
    g.trans = ta;
    g.accumulate = accumulate;
    g.avx2 = ngemm_ready() == 2;
    g.m = av->shape[1];
    g.k = av->shape[2];
    g.n = bv->shape[2];
    g.lda = (ta ? av->strides[2] : av->strides[1]) / 4;
    const int64_t positions = av->shape[0];
    if (g.m == 0 || g.n == 0 || positions == 0) {
        release(bufs, 3);
        Py_RETURN_TRUE;
    }
    /* ngemm's blocks for parts = 1 (see py_ngemm) */
    const int64_t want = ta ? 1 : 4;
    int64_t rows = NG_MC, cols = ceil_div(g.n, 64) * 64;
    if (ceil_div(g.m, rows) < want) {
        rows = ceil_div(ceil_div(g.m, want), NG_MR) * NG_MR;
        if (rows < 4 * NG_MR) rows = 4 * NG_MR;
    }
    if (ceil_div(g.m, rows) < want && g.n > 64) {
        int64_t cut = ceil_div(want, ceil_div(g.m, rows));
        cols = ceil_div(ceil_div(g.n, cut), 64) * 64;
    }
    g.rows = rows;
    g.cols = cols;
    g.grid_n = ceil_div(g.n, cols);
    const int64_t count = ceil_div(g.m, rows) * g.grid_n;
    const char *a0 = av->buf;
    const float *b0 = bv->buf;
    float *c0 = ov->buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t p = 0; p < positions; p++) {
        g.a = (const float *)(a0 + p * av->strides[0]);
        g.b = b0 + p * g.k * g.n;
        g.c = (float *)((char *)c0 + p * ov->strides[0]);
        if (g.k == 0) {
            if (!accumulate) memset(g.c, 0, (size_t)(g.m * g.n) * sizeof(float));
            continue;
        }
        run_serial(ngemm_chunk, &g, count, NULL);
    }
    Py_END_ALLOW_THREADS
    release(bufs, 3);
    Py_RETURN_TRUE;
}

/* END ngemm block
 * ====================================================================================== */

/* thin_nn: the forward products of fully connected layers at a small batch */
#include "_thin_gemm.h"
/* stem_conv: a net's first convolution read straight from its input */
#include "_stem_conv.h"

/* ngemm_isa(): which tiles ngemm runs on this CPU: 1 AVX-512F, 2 AVX2 + FMA, 0 none */
static PyObject *py_ngemm_isa(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(ngemm_ready());
}

static PyObject *py_helpers(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(pool_helpers());
}

/* helper_spin([us]): how long (microseconds) a helper spins for its next task before it
 * sleeps (_pool.h helper_wait; TENSORFLUX_HELPER_SPIN_US); sets it first when given. */
static PyObject *py_helper_spin(PyObject *self, PyObject *args) {
    double us = -1;
    if (!PyArg_ParseTuple(args, "|d", &us)) return NULL;
    double now = helper_spin_seconds();
    if (us >= 0) {
        if (us > 1e6) {
            PyErr_SetString(PyExc_ValueError, "helper_spin: at most 1e6 microseconds");
            return NULL;
        }
        helper_spin_s = us * 1e-6;  /* (a slot's backoff from contended spins stays) */
        now = helper_spin_s;
    }
    return PyFloat_FromDouble(round(now * 1e9) / 1e3);  /* microseconds, to the ns */
}

/* helpers_rest(): helpers stop spinning until the next task is posted (_pool.h
 * pool_rest): called by a thread about to wait for another process. */
static PyObject *py_helpers_rest(PyObject *self, PyObject *unused) {
    pool_rest();
    Py_RETURN_NONE;
}

/* helper_spins(): how many times helpers started a spin so far. */
static PyObject *py_helper_spins(PyObject *self, PyObject *unused) {
    return PyLong_FromLongLong(atomic_load(&helper_spins));
}

/* helper_spin_skips(): per slot, the tasks its helpers let pass without spinning now (a
 * contended spin sets them). */
static PyObject *py_helper_spin_skips(PyObject *self, PyObject *unused) {
    PyObject *out = PyList_New(POOL_SLOTS);
    if (out == NULL) return NULL;
    for (int s = 0; s < POOL_SLOTS; s++) {
        PyObject *v = PyLong_FromLong(atomic_load(&pool_slots[s].spin_skip));
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, s, v);
    }
    return out;
}

/* ---- the dataflow executor's driver loop (tensorflux/runtime/executor.py) ----------------
 *
 * `DataflowCore(items, specs, DEAD)` holds an executor's static node table, built once per
 * Executor; `core.ready()` makes a step's ready queue, a `ReadyQueue` of (item, frame,
 * iteration) that the Python executor uses as it used a deque (append, popleft, clear,
 * len). `ready.drain(run, ctx)` is `_Run._loop`'s inner loop: it pops ready nodes until none
 * is left or the step failed, and runs the common ones here, as the Python methods of
 * `_Run` would, on the same per-step state (`_Iteration`'s lists and `outstanding_ops`):
 *   - a plain node (`_Item.plain`: a cheap synchronous kernel whose live outputs stay in its
 *     frame and feed no Merge): inputs taken from the iteration's entries (freed at their
 *     last use), the kernel called (a pass-through kernel, Identity's inline `{0}` or NoOp's
 *     nothing, without a call), outputs stored, consumers counted down (`_process`);
 *   - Switch, Merge and any node feeding a Merge: the kernel called, then `_propagate`'s
 *     rules (DEAD outputs, Merge pending counts: 2 per control edge, the low bit for the
 *     first live data input; dead counts; a dead value to a lone Exit recorded in the
 *     frame's `dead_exits`);
 *   - a dead node of those kinds (and an asynchronous or expensive one): its kernel
 *     skipped, every output DEAD, propagated as above;
 *   - a NextIteration: its kernel here, the next iteration started by `run._complete`.
 * Everything else goes to the Python methods of `run`, which stay the executor's one
 * definition of those cases: Enter, Exit and dead-aware ops, live asynchronous and
 * expensive kernels (`_process`), a failing kernel (`_fail`, which names the node), a wrong
 * number of outputs (`_complete`), finished iterations (`_cleanup_iterations`). Before any
 * Python code runs, the loop writes back what it caches and forgets it afterwards, so
 * either side may run any node.
 * Everything runs on the driver thread with the GIL held.
 */

/* How a node runs here: PY through run._process; CALL, FORWARD (input 0 is the output) and
 * NOTHING (no outputs, no call) are plain nodes; GENERAL calls the kernel and propagates as
 * `_propagate` does (DEAD outputs, Merge consumers: Switch, Merge); DEAD_ONLY runs only
 * when dead (an asynchronous or expensive kernel's node); NEXT is a NextIteration: dead,
 * it ends here, live, its kernel runs here and run._complete starts the next iteration.
 * A node of any mode but PY that is dead is completed dead here. */
enum { DF_PY = 0, DF_CALL = 1, DF_FORWARD = 2, DF_NOTHING = 3, DF_GENERAL = 4, DF_DEAD_ONLY = 5,
       DF_NEXT = 6 };

typedef struct {
    PyObject *item;    /* the _Item (owned) */
    PyObject *kernel;  /* its compute (owned; NULL unless DF_CALL) */
    int mode, local, num_outputs, out_base, n_in, n_edges, is_merge, lone_exit;
    Py_ssize_t *in_slots;  /* into DataflowCore.ints */
    Py_ssize_t *edges;     /* pairs (consumer index, consumer's local id) */
    Py_ssize_t *out_idx;   /* per edge: the output it carries, -1 for a control edge */
} DfNode;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    DfNode *nodes;
    Py_ssize_t *ints;
    PyObject *dead_value;  /* kernels.registry.DEAD (owned) */
} DfCore;

typedef struct {
    Py_ssize_t idx, i;
    PyObject *frame, *iter; /* owned */
} DfEntry;

typedef struct {
    PyObject_HEAD
    DfCore *core;
    DfEntry *buf;
    Py_ssize_t cap, head, len;
} DfReady;

static PyObject *df_str_cidx, *df_str_iterations, *df_str_entries, *df_str_pending,
    *df_str_dead, *df_str_uses, *df_str_outstanding_ops, *df_str_outstanding_frames,
    *df_str_error, *df_str_process, *df_str_fail, *df_str_complete, *df_str_cleanup,
    *df_str_dead_exits, *df_str_frame_id, *df_str_frame_iter;

static void df_core_dealloc(DfCore *self) {
    for (Py_ssize_t k = 0; k < self->n; k++) {
        Py_XDECREF(self->nodes[k].item);
        Py_XDECREF(self->nodes[k].kernel);
    }
    PyMem_Free(self->nodes);
    PyMem_Free(self->ints);
    Py_XDECREF(self->dead_value);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* DataflowCore(items, specs, dead): specs[k] = (mode, local, num_outputs, out_base,
 * in_slots, consumer indices, the output index of each consumer's edge (-1: control),
 * kernel, flags: 1 a Merge, 2 an Exit whose one input is that data edge, 4 a single output
 * that nothing reads); `dead` is DEAD. */
static PyObject *df_core_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *items, *specs, *dead;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyList_Type, &items, &PyList_Type, &specs, &dead))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    if (PyList_GET_SIZE(specs) != n) {
        PyErr_SetString(PyExc_ValueError, "items and specs differ in length");
        return NULL;
    }
    DfCore *self = (DfCore *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->dead_value = dead;
    Py_INCREF(dead);
    self->nodes = PyMem_Calloc(n ? n : 1, sizeof(DfNode));
    if (self->nodes == NULL) { Py_DECREF(self); return PyErr_NoMemory(); }
    self->n = n;
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *s = PyList_GET_ITEM(specs, k);
        if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != 9 ||
                !PyTuple_Check(PyTuple_GET_ITEM(s, 4)) || !PyTuple_Check(PyTuple_GET_ITEM(s, 5)) ||
                !PyTuple_Check(PyTuple_GET_ITEM(s, 6)) ||
                PyTuple_GET_SIZE(PyTuple_GET_ITEM(s, 6)) != PyTuple_GET_SIZE(PyTuple_GET_ITEM(s, 5))) {
            PyErr_SetString(PyExc_TypeError, "a spec is (mode, local, num_outputs, out_base, "
                            "in_slots, consumers, output indices, kernel, flags)");
            Py_DECREF(self);
            return NULL;
        }
        total += PyTuple_GET_SIZE(PyTuple_GET_ITEM(s, 4)) + 3 * PyTuple_GET_SIZE(PyTuple_GET_ITEM(s, 5));
    }
    self->ints = PyMem_Calloc(total ? total : 1, sizeof(Py_ssize_t));
    if (self->ints == NULL) { Py_DECREF(self); return PyErr_NoMemory(); }
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *s = PyList_GET_ITEM(specs, k);
        DfNode *d = &self->nodes[k];
        d->mode = (int)PyLong_AsLong(PyTuple_GET_ITEM(s, 0));
        d->local = (int)PyLong_AsLong(PyTuple_GET_ITEM(s, 1));
        d->num_outputs = (int)PyLong_AsLong(PyTuple_GET_ITEM(s, 2));
        d->out_base = (int)PyLong_AsLong(PyTuple_GET_ITEM(s, 3));
        long flags = PyLong_AsLong(PyTuple_GET_ITEM(s, 8));
        if (PyErr_Occurred()) { Py_DECREF(self); return NULL; }
        d->is_merge = (flags & 1) != 0;
        d->lone_exit = (flags & 2) != 0;
        if (d->mode < DF_PY || d->mode > DF_NEXT) d->mode = DF_PY;
        d->item = PyList_GET_ITEM(items, k);
        Py_INCREF(d->item);
        PyObject *kernel = PyTuple_GET_ITEM(s, 7);
        if (d->mode == DF_CALL || d->mode == DF_GENERAL || d->mode == DF_NEXT) {
            if (!PyCallable_Check(kernel)) d->mode = DF_PY;
            else { d->kernel = kernel; Py_INCREF(kernel); }
        }
        PyObject *ins = PyTuple_GET_ITEM(s, 4), *outs = PyTuple_GET_ITEM(s, 5);
        d->n_in = (int)PyTuple_GET_SIZE(ins);
        d->in_slots = self->ints + at;
        for (Py_ssize_t j = 0; j < d->n_in; j++)
            self->ints[at++] = PyLong_AsSsize_t(PyTuple_GET_ITEM(ins, j));
        d->n_edges = (int)PyTuple_GET_SIZE(outs);
        d->edges = self->ints + at;
        for (Py_ssize_t j = 0; j < d->n_edges; j++) {
            Py_ssize_t c = PyLong_AsSsize_t(PyTuple_GET_ITEM(outs, j));
            if (c < 0 || c >= n) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "consumer out of range");
                Py_DECREF(self);
                return NULL;
            }
            self->ints[at++] = c;
            self->ints[at++] = -1;  /* the consumer's local id, below */
        }
        PyObject *idxs = PyTuple_GET_ITEM(s, 6);
        d->out_idx = self->ints + at;
        for (Py_ssize_t j = 0; j < d->n_edges; j++) {
            Py_ssize_t o = PyLong_AsSsize_t(PyTuple_GET_ITEM(idxs, j));
            if (o < -1 || o >= d->num_outputs) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "output out of range");
                Py_DECREF(self);
                return NULL;
            }
            self->ints[at++] = o;
        }
        if (PyErr_Occurred()) { Py_DECREF(self); return NULL; }
        if (d->mode == DF_FORWARD && (d->n_in != 1 || d->num_outputs != 1)) d->mode = DF_PY;
        if (d->mode == DF_NOTHING && d->num_outputs != 0) d->mode = DF_PY;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        DfNode *d = &self->nodes[k];
        for (int j = 0; j < d->n_edges; j++) d->edges[2 * j + 1] = self->nodes[d->edges[2 * j]].local;
    }
    return (PyObject *)self;
}

static PyTypeObject DfReadyType;

static PyObject *df_core_ready(DfCore *self, PyObject *unused) {
    DfReady *r = PyObject_New(DfReady, &DfReadyType);
    if (r == NULL) return NULL;
    r->core = self;
    Py_INCREF(self);
    r->cap = 64;
    r->head = r->len = 0;
    r->buf = PyMem_Malloc(r->cap * sizeof(DfEntry));
    if (r->buf == NULL) { Py_DECREF(r); return PyErr_NoMemory(); }
    return (PyObject *)r;
}

static PyMethodDef df_core_methods[] = {
    {"ready", (PyCFunction)df_core_ready, METH_NOARGS, "ready(): an empty ReadyQueue"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DfCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tensorflux.kernels.cpu._native.DataflowCore",
    .tp_basicsize = sizeof(DfCore),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DataflowCore(items, specs): an executor's node table (see _native.c)",
    .tp_new = df_core_new,
    .tp_dealloc = (destructor)df_core_dealloc,
    .tp_methods = df_core_methods,
};

static void df_ready_clear_entries(DfReady *r) {
    while (r->len) {
        DfEntry *e = &r->buf[r->head];
        r->head = (r->head + 1) % r->cap;
        r->len--;
        Py_DECREF(e->frame);
        Py_DECREF(e->iter);
    }
    r->head = 0;
}

static void df_ready_dealloc(DfReady *r) {
    if (r->buf != NULL) df_ready_clear_entries(r);
    PyMem_Free(r->buf);
    Py_XDECREF(r->core);
    PyObject_Free(r);
}

/* Appends (idx, frame, iteration); steals nothing. */
static int df_push(DfReady *r, Py_ssize_t idx, PyObject *frame, PyObject *iter, Py_ssize_t i) {
    if (r->len == r->cap) {
        DfEntry *nb = PyMem_Malloc(2 * r->cap * sizeof(DfEntry));
        if (nb == NULL) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t k = 0; k < r->len; k++) nb[k] = r->buf[(r->head + k) % r->cap];
        PyMem_Free(r->buf);
        r->buf = nb;
        r->head = 0;
        r->cap *= 2;
    }
    DfEntry *e = &r->buf[(r->head + r->len) % r->cap];
    e->idx = idx;
    e->i = i;
    e->frame = frame;
    e->iter = iter;
    Py_INCREF(frame);
    Py_INCREF(iter);
    r->len++;
    return 0;
}

static int df_item_index(DfReady *r, PyObject *item, Py_ssize_t *idx) {
    PyObject *c = PyObject_GetAttr(item, df_str_cidx);
    if (c == NULL) return -1;
    *idx = PyLong_AsSsize_t(c);
    Py_DECREF(c);
    if (*idx == -1 && PyErr_Occurred()) return -1;
    if (*idx < 0 || *idx >= r->core->n || r->core->nodes[*idx].item != item) {
        PyErr_SetString(PyExc_ValueError, "not a node of this executor");
        return -1;
    }
    return 0;
}

static PyObject *df_ready_append(DfReady *r, PyObject *t) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
        PyErr_SetString(PyExc_TypeError, "append takes (item, frame, iteration)");
        return NULL;
    }
    Py_ssize_t idx, i = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 2));
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (df_item_index(r, PyTuple_GET_ITEM(t, 0), &idx) < 0) return NULL;
    if (df_push(r, idx, PyTuple_GET_ITEM(t, 1), PyTuple_GET_ITEM(t, 2), i) < 0) return NULL;
    Py_RETURN_NONE;
}

/* push_indices(indices, frame, iteration): the nodes of those indices, in order. */
static PyObject *df_ready_push_indices(DfReady *r, PyObject *args) {
    PyObject *indices, *frame, *iter;
    if (!PyArg_ParseTuple(args, "O!OO!", &PyList_Type, &indices, &frame, &PyLong_Type, &iter))
        return NULL;
    Py_ssize_t i = PyLong_AsSsize_t(iter);
    if (i == -1 && PyErr_Occurred()) return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(indices); k++) {
        Py_ssize_t idx = PyLong_AsSsize_t(PyList_GET_ITEM(indices, k));
        if (idx == -1 && PyErr_Occurred()) return NULL;
        if (idx < 0 || idx >= r->core->n) {
            PyErr_SetString(PyExc_IndexError, "node index out of range");
            return NULL;
        }
        if (df_push(r, idx, frame, iter, i) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *df_ready_popleft(DfReady *r, PyObject *unused) {
    if (r->len == 0) {
        PyErr_SetString(PyExc_IndexError, "pop from an empty ReadyQueue");
        return NULL;
    }
    DfEntry e = r->buf[r->head];
    r->head = (r->head + 1) % r->cap;
    r->len--;
    PyObject *item = r->core->nodes[e.idx].item;
    Py_INCREF(item);
    return Py_BuildValue("(NNN)", item, e.frame, e.iter);  /* steals the entry's references */
}

static PyObject *df_ready_clear(DfReady *r, PyObject *unused) {
    df_ready_clear_entries(r);
    Py_RETURN_NONE;
}

static Py_ssize_t df_ready_len(DfReady *r) { return r->len; }

/* The state of the iteration the loop last touched, loaded from its _Iteration and written
 * back (outstanding_ops) before any Python code runs; dropped after it. */
typedef struct {
    PyObject *frame, *st, *entries, *pending, *dead, *uses;
    Py_ssize_t i;
    long outstanding, frames, loaded_outstanding;
} DfCache;

static int df_flush(DfCache *c) {
    if (c->st == NULL || c->outstanding == c->loaded_outstanding) return 0;
    PyObject *v = PyLong_FromLong(c->outstanding);
    if (v == NULL) return -1;
    int rc = PyObject_SetAttr(c->st, df_str_outstanding_ops, v);
    Py_DECREF(v);
    c->loaded_outstanding = c->outstanding;
    return rc;
}

static void df_drop(DfCache *c) {
    Py_CLEAR(c->st);
    Py_CLEAR(c->entries);
    Py_CLEAR(c->pending);
    Py_CLEAR(c->dead);
    Py_CLEAR(c->uses);
    Py_CLEAR(c->frame);  /* held, so that no other frame can take its address meanwhile */
}

static int df_long_attr(PyObject *o, PyObject *name, long *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    *out = PyLong_AsLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* Loads frame.iterations[i]; 1: loaded, 0: its state is not plain lists (the node goes to
 * Python), -1: error. */
static int df_load(DfCache *c, PyObject *frame, PyObject *iter, Py_ssize_t i) {
    if (c->st != NULL && c->frame == frame && c->i == i) return 1;
    if (df_flush(c) < 0) return -1;
    df_drop(c);
    PyObject *iters = PyObject_GetAttr(frame, df_str_iterations);
    if (iters == NULL) return -1;
    PyObject *st = PyObject_GetItem(iters, iter);
    Py_DECREF(iters);
    if (st == NULL) return -1;
    c->st = st;
    c->entries = PyObject_GetAttr(st, df_str_entries);
    c->pending = c->entries ? PyObject_GetAttr(st, df_str_pending) : NULL;
    c->dead = c->pending ? PyObject_GetAttr(st, df_str_dead) : NULL;
    c->uses = c->dead ? PyObject_GetAttr(st, df_str_uses) : NULL;
    if (c->uses == NULL || df_long_attr(st, df_str_outstanding_ops, &c->outstanding) < 0 ||
            df_long_attr(st, df_str_outstanding_frames, &c->frames) < 0) {
        df_drop(c);
        return -1;
    }
    c->loaded_outstanding = c->outstanding;
    c->frame = frame;
    Py_INCREF(frame);
    c->i = i;
    if (!PyList_CheckExact(c->entries) || !PyList_CheckExact(c->pending) ||
            !PyList_CheckExact(c->dead) || !PyList_CheckExact(c->uses) ||
            PyList_GET_SIZE(c->dead) != PyList_GET_SIZE(c->pending)) {
        df_drop(c);
        return 0;
    }
    return 1;
}

/* Adds `delta` to the int at lst[k]; the new value, or LONG_MIN on error. */
static long df_add(PyObject *lst, Py_ssize_t k, long delta) {
    long v = PyLong_AsLong(PyList_GET_ITEM(lst, k));
    if (v == -1 && PyErr_Occurred()) return LONG_MIN;
    PyObject *nv = PyLong_FromLong(v + delta);
    if (nv == NULL) return LONG_MIN;
    PyObject *old = PyList_GET_ITEM(lst, k);
    PyList_SET_ITEM(lst, k, nv);
    Py_DECREF(old);
    return v + delta;
}

static void df_set(PyObject *lst, Py_ssize_t k, PyObject *v) { /* steals v */
    PyObject *old = PyList_GET_ITEM(lst, k);
    PyList_SET_ITEM(lst, k, v);
    Py_XDECREF(old);
}

/* Whether node `d` can run here in the cached iteration: its slots lie in the iteration's
 * lists (else Python runs it, and reports what is wrong). */
static int df_fits(DfCache *c, DfNode *d) {
    Py_ssize_t ns = PyList_GET_SIZE(c->entries), np_ = PyList_GET_SIZE(c->pending);
    if (d->local >= np_ || d->out_base + d->num_outputs > ns) return 0;
    if (!PyLong_CheckExact(PyList_GET_ITEM(c->dead, d->local))) return 0;
    for (int j = 0; j < d->n_in; j++)
        if (d->in_slots[j] >= ns || d->in_slots[j] >= PyList_GET_SIZE(c->uses)) return 0;
    for (int j = 0; j < d->n_edges; j++)
        if (d->edges[2 * j + 1] >= np_) return 0;
    return 1;
}

/* Whether the node is dead (it skips its kernel): a Merge without a live input, any other
 * node with a dead input. -1: error. */
static int df_is_dead(DfCore *core, DfCache *c, DfNode *d) {
    if (d->is_merge) {
        for (int j = 0; j < d->n_in; j++) {
            PyObject *v = PyList_GET_ITEM(c->entries, d->in_slots[j]);
            if (v != Py_None && v != core->dead_value) return 0;
        }
        return 1;
    }
    PyObject *dead = PyList_GET_ITEM(c->dead, d->local);
    return PyObject_IsTrue(dead);
}

static long df_get(PyObject *lst, Py_ssize_t k) {
    long v = PyLong_AsLong(PyList_GET_ITEM(lst, k));
    return (v == -1 && PyErr_Occurred()) ? LONG_MIN : v;
}

/* `_Run._propagate` in the cached iteration: stores the node's outputs `values` (borrowed)
 * and counts down its consumers, Merges included; 0 or -1 (error). */
static int df_propagate(DfReady *r, DfCache *c, DfEntry *e, DfNode *d, PyObject **values,
                        int is_dead) {
    DfCore *core = r->core;
    for (int k = 0; k < d->num_outputs; k++) {
        Py_INCREF(values[k]);
        df_set(c->entries, d->out_base + k, values[k]);
    }
    for (int j = 0; j < d->n_edges; j++) {
        Py_ssize_t dst = d->edges[2 * j], dl = d->edges[2 * j + 1], idx = d->out_idx[j];
        DfNode *t = &core->nodes[dst];
        long p, dc;
        int go;
        if (t->is_merge) {
            if (idx < 0) {  /* a dead control input does not kill a Merge */
                if ((p = df_add(c->pending, dl, -2)) == LONG_MIN) return -1;
                if (p == 1 && (dc = df_get(c->dead, dl)) == LONG_MIN) return -1;
                go = p == 0 || (p == 1 && dc == t->n_in);
            } else if (values[idx] != core->dead_value) {
                if ((p = df_get(c->pending, dl)) == LONG_MIN) return -1;
                go = p == 1;
                if ((p & 1) && df_add(c->pending, dl, -1) == LONG_MIN) return -1;
            } else {
                if ((dc = df_add(c->dead, dl, 1)) == LONG_MIN) return -1;
                if ((p = df_get(c->pending, dl)) == LONG_MIN) return -1;
                go = p == 1 && dc == t->n_in;
            }
        } else {
            if (is_dead || (idx >= 0 && values[idx] == core->dead_value)) {
                if (t->lone_exit) {  /* frame.dead_exits[dst] = None */
                    PyObject *exits = PyObject_GetAttr(e->frame, df_str_dead_exits);
                    if (exits == NULL) return -1;
                    int rc = PyObject_SetItem(exits, t->item, Py_None);
                    Py_DECREF(exits);
                    if (rc < 0) return -1;
                    continue;
                }
                if (df_add(c->dead, dl, 1) == LONG_MIN) return -1;
            }
            if ((p = df_add(c->pending, dl, -1)) == LONG_MIN) return -1;
            go = p == 0;
        }
        if (go) {
            c->outstanding++;
            if (df_push(r, dst, e->frame, e->iter, e->i) < 0) return -1;
        }
    }
    return 0;
}

/* The end of `_Run._complete`: the node is no longer outstanding; a finished iteration is
 * cleaned up by Python. 0 or -1. */
static int df_done(DfCache *c, DfEntry *e, PyObject *cleanup) {
    c->outstanding--;
    if (c->outstanding != 0 || c->frames != 0) return 0;
    if (df_flush(c) < 0) return -1;
    df_drop(c);
    PyObject *res = PyObject_CallFunctionObjArgs(cleanup, e->frame, e->iter, NULL);
    if (res == NULL) return -1;
    Py_DECREF(res);
    return 0;
}

#define DF_MAX_INLINE_ARGS 16

/* ctx.frame_iter = (frame.frame_id, i), as `_Run._start` sets it for a NextIteration. */
static int df_set_frame_iter(PyObject *ctx, DfEntry *e) {
    PyObject *fid = PyObject_GetAttr(e->frame, df_str_frame_id);
    if (fid == NULL) return -1;
    PyObject *t = PyTuple_Pack(2, fid, e->iter);
    Py_DECREF(fid);
    if (t == NULL) return -1;
    int rc = PyObject_SetAttr(ctx, df_str_frame_iter, t);
    Py_DECREF(t);
    return rc;
}

/* Reports a kernel's exception to run._fail(exception, item), as `_process`'s `except`
 * does; 1, or -1 on error. */
static int df_kernel_failed(DfCache *c, DfNode *d, PyObject *fail) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    if (value == NULL) { Py_INCREF(Py_None); value = Py_None; }
    if (df_flush(c) < 0) { Py_DECREF(value); return -1; }
    df_drop(c);
    PyObject *res = PyObject_CallFunctionObjArgs(fail, value, d->item, NULL);
    Py_DECREF(value);
    if (res == NULL) return -1;
    Py_DECREF(res);
    return 1;
}

/* Runs one node in the cached iteration `c` (`_Run._process` and what it calls, for the
 * node's mode): 0 done, 1 handed to run._complete or run._fail (Python), 2 not taken (the
 * caller hands the node to run._process; nothing was touched), -1 error. */
static int df_run_node(DfReady *r, DfCache *c, DfEntry *e, DfNode *d, PyObject *ctx,
                       PyObject *fail, PyObject *complete, PyObject *cleanup) {
    int is_dead = df_is_dead(r->core, c, d);
    if (is_dead < 0) return -1;
    if (!is_dead && d->mode == DF_DEAD_ONLY) return 2;
    PyObject *stack[DF_MAX_INLINE_ARGS + 1];
    PyObject **args = stack;
    if (d->n_in + 1 > DF_MAX_INLINE_ARGS + 1) {
        args = PyMem_Malloc((d->n_in + 1) * sizeof(PyObject *));
        if (args == NULL) { PyErr_NoMemory(); return -1; }
    }
    int rc = 0;
    args[0] = ctx;
    for (int j = 0; j < d->n_in; j++) {  /* take the inputs, freeing each at its last use */
        Py_ssize_t s = d->in_slots[j];
        PyObject *v = PyList_GET_ITEM(c->entries, s);
        Py_INCREF(v);
        args[j + 1] = v;
        long u = df_add(c->uses, s, -1);
        if (u == LONG_MIN) { for (int q = 1; q <= j + 1; q++) Py_DECREF(args[q]); rc = -1; goto out; }
        if (u == 0) { Py_INCREF(Py_None); df_set(c->entries, s, Py_None); }
    }
    if (is_dead) {  /* every output DEAD; consumers count the deadness */
        for (int j = 1; j <= d->n_in; j++) Py_DECREF(args[j]);
        PyObject *dead_values[DF_MAX_INLINE_ARGS], **values = dead_values;
        if (d->num_outputs > DF_MAX_INLINE_ARGS) {
            values = PyMem_Malloc(d->num_outputs * sizeof(PyObject *));
            if (values == NULL) { PyErr_NoMemory(); rc = -1; goto out; }
        }
        for (int k = 0; k < d->num_outputs; k++) values[k] = r->core->dead_value;
        rc = d->mode == DF_NEXT ? 0 : df_propagate(r, c, e, d, values, 1);  /* a dead
            NextIteration propagates nothing */
        if (values != dead_values) PyMem_Free(values);
        if (rc == 0) rc = df_done(c, e, cleanup);
        goto out;
    }
    PyObject *out;
    if (d->mode == DF_FORWARD) {
        out = args[1];
    } else if (d->mode == DF_NOTHING) {
        for (int j = 1; j <= d->n_in; j++) Py_DECREF(args[j]);
        out = NULL;
    } else {
        if (d->mode == DF_NEXT && df_set_frame_iter(ctx, e) < 0) {
            for (int j = 1; j <= d->n_in; j++) Py_DECREF(args[j]);
            rc = -1;
            goto out;
        }
        out = PyObject_Vectorcall(d->kernel, args, (size_t)(d->n_in + 1), NULL);
        for (int j = 1; j <= d->n_in; j++) Py_DECREF(args[j]);
        if (out == NULL) { rc = df_kernel_failed(c, d, fail); goto out; }
    }
    int n = d->num_outputs;
    if (d->mode == DF_NEXT || (n > 1 && (!(PyTuple_CheckExact(out) || PyList_CheckExact(out)) ||
                                         PySequence_Fast_GET_SIZE(out) != n))) {
        /* _complete starts the next iteration, or reports the mismatch (or takes another
         * kind of sequence) */
        if (df_flush(c) < 0) { Py_DECREF(out); rc = -1; goto out; }
        df_drop(c);
        PyObject *res = PyObject_CallFunctionObjArgs(complete, d->item, e->frame, e->iter,
                                                     out, Py_False, NULL);
        Py_DECREF(out);
        if (res == NULL) { rc = -1; goto out; }
        Py_DECREF(res);
        rc = 1;
        goto out;
    }
    if (d->mode == DF_GENERAL) {  /* outputs may be DEAD (a Switch) or feed a Merge */
        PyObject **values = n == 1 ? &out : n > 1 ? PySequence_Fast_ITEMS(out) : NULL;
        rc = df_propagate(r, c, e, d, values, 0);
        Py_XDECREF(out);
        if (rc == 0) rc = df_done(c, e, cleanup);
        goto out;
    }
    /* a plain node: live outputs that stay in the frame and feed no Merge (a node whose
     * outputs nothing reads has none: executor._drop_unread_outputs) */
    if (n == 1) {
        df_set(c->entries, d->out_base, out);
    } else if (n > 1) {
        PyObject **items = PySequence_Fast_ITEMS(out);
        for (int k = 0; k < n; k++) {
            Py_INCREF(items[k]);
            df_set(c->entries, d->out_base + k, items[k]);
        }
        Py_DECREF(out);
    } else {
        Py_XDECREF(out);
    }
    long started = -1;
    for (int j = 0; j < d->n_edges; j++) {
        Py_ssize_t dst = d->edges[2 * j], local = d->edges[2 * j + 1];
        long p = df_add(c->pending, local, -1);
        if (p == LONG_MIN) { rc = -1; goto out; }
        if (p == 0) {
            started++;
            if (df_push(r, dst, e->frame, e->iter, e->i) < 0) { rc = -1; goto out; }
        }
    }
    if (started) {
        c->outstanding += started + 1;
        rc = df_done(c, e, cleanup);
    }
out:
    if (args != stack) PyMem_Free(args);
    return rc;
}

static int df_failed(PyObject *run) {
    PyObject *err = PyObject_GetAttr(run, df_str_error);
    if (err == NULL) return -1;
    int failed = err != Py_None;
    Py_DECREF(err);
    return failed;
}

/* drain(run, ctx): runs ready nodes until none is ready or the step failed. */
static PyObject *df_ready_drain(DfReady *r, PyObject *args) {
    PyObject *run, *ctx;
    if (!PyArg_ParseTuple(args, "OO", &run, &ctx)) return NULL;
    int failed = df_failed(run);
    if (failed) return failed < 0 ? NULL : (Py_INCREF(Py_None), Py_None);
    PyObject *process = PyObject_GetAttr(run, df_str_process);
    PyObject *fail = process ? PyObject_GetAttr(run, df_str_fail) : NULL;
    PyObject *complete = fail ? PyObject_GetAttr(run, df_str_complete) : NULL;
    PyObject *cleanup = complete ? PyObject_GetAttr(run, df_str_cleanup) : NULL;
    DfCache c = {0};
    int ok = cleanup != NULL;
    while (ok && r->len) {
        DfEntry e = r->buf[r->head];  /* the queue's references move to `e` */
        r->head = (r->head + 1) % r->cap;
        r->len--;
        DfNode *d = &r->core->nodes[e.idx];
        int rc = 0;
        if (d->mode != DF_PY) {
            int loaded = df_load(&c, e.frame, e.iter, e.i);
            if (loaded < 0) rc = -1;
            else if (loaded == 0 || !df_fits(&c, d)) rc = 2;
            else rc = df_run_node(r, &c, &e, d, ctx, fail, complete, cleanup);
        } else {
            rc = 2;
        }
        if (rc == 2) {  /* the node goes to run._process */
            if (df_flush(&c) < 0) rc = -1;
            else {
                df_drop(&c);
                PyObject *res = PyObject_CallFunctionObjArgs(process, d->item, e.frame, e.iter,
                                                             ctx, (PyObject *)r, NULL);
                if (res == NULL) rc = -1;
                else { Py_DECREF(res); rc = 1; }
            }
        }
        Py_DECREF(e.frame);
        Py_DECREF(e.iter);
        if (rc < 0) ok = 0;
        else if (rc == 1) {
            failed = df_failed(run);
            if (failed) ok = 0;
            if (failed < 0) rc = -1;
        }
        if (rc < 0) break;
    }
    int flushed = PyErr_Occurred() ? 0 : df_flush(&c);
    df_drop(&c);
    Py_XDECREF(process);
    Py_XDECREF(fail);
    Py_XDECREF(complete);
    Py_XDECREF(cleanup);
    if (PyErr_Occurred()) return NULL;
    if (flushed < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef df_ready_methods[] = {
    {"append", (PyCFunction)df_ready_append, METH_O, "append((item, frame, iteration))"},
    {"push_indices", (PyCFunction)df_ready_push_indices, METH_VARARGS,
     "push_indices(indices, frame, iteration): the items of those indices, in order"},
    {"popleft", (PyCFunction)df_ready_popleft, METH_NOARGS, "(item, frame, iteration)"},
    {"clear", (PyCFunction)df_ready_clear, METH_NOARGS, "empties the queue"},
    {"drain", (PyCFunction)df_ready_drain, METH_VARARGS,
     "drain(run, ctx): runs ready nodes until none is ready or run.error is set"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods df_ready_as_sequence = {.sq_length = (lenfunc)df_ready_len};

static PyTypeObject DfReadyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tensorflux.kernels.cpu._native.ReadyQueue",
    .tp_basicsize = sizeof(DfReady),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a step's ready queue (DataflowCore.ready())",
    .tp_dealloc = (destructor)df_ready_dealloc,
    .tp_methods = df_ready_methods,
    .tp_as_sequence = &df_ready_as_sequence,
};

/* own_many(vars, ndarray): state_ops.own_value for each variable (its lock held by the
 * caller): the stored array itself when nothing but the variable holds it (an ndarray,
 * writeable, referenced by the variable alone, and its base, if any, an ndarray held by
 * it alone), else a copy (its `copy()`) put in the variable's place. Returns the list of
 * arrays, or the index of the first variable whose value is None (nothing changed from
 * it on). One call for a fused update's dozen variables, whose Python form was three
 * calls each. */
static PyObject *tk_str_flags, *tk_str_owndata, *tk_str_nbytes;  /* interned (Tracker's init) */
static PyObject *tk_str_value, *tk_str_base, *tk_str_writeable, *tk_str_copy;

static int own_alone(PyObject *arr, PyObject *ndarray) {
    /* arr: a new reference (ours) besides the variable's */
    if ((PyObject *)Py_TYPE(arr) != ndarray || Py_REFCNT(arr) > 2) return 0;
    PyObject *flags = PyObject_GetAttr(arr, tk_str_flags);
    if (flags == NULL) return -1;
    PyObject *w = PyObject_GetAttr(flags, tk_str_writeable);
    Py_DECREF(flags);
    if (w == NULL) return -1;
    int writeable = PyObject_IsTrue(w);
    Py_DECREF(w);
    if (writeable <= 0) return writeable;
    PyObject *base = PyObject_GetAttr(arr, tk_str_base);
    if (base == NULL) return -1;
    /* the base is held by arr and by our reference */
    int alone = base == Py_None || (PyObject_TypeCheck(base, (PyTypeObject *)ndarray) &&
                                    Py_REFCNT(base) <= 2);
    Py_DECREF(base);
    return alone;
}

static PyObject *py_own_many(PyObject *self, PyObject *args) {
    PyObject *vars, *ndarray;
    if (!PyArg_ParseTuple(args, "OO!", &vars, &PyType_Type, &ndarray)) return NULL;
    PyObject *seq = PySequence_Fast(vars, "own_many: a sequence of variables");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *var = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *arr = PyObject_GetAttr(var, tk_str_value);
        if (arr == NULL) goto fail;
        if (arr == Py_None) {
            Py_DECREF(arr);
            Py_DECREF(out);
            Py_DECREF(seq);
            return PyLong_FromSsize_t(i);
        }
        int alone = own_alone(arr, ndarray);
        if (alone < 0) {
            Py_DECREF(arr);
            goto fail;
        }
        if (!alone) {
            PyObject *copy = PyObject_CallMethodNoArgs(arr, tk_str_copy);
            Py_DECREF(arr);
            if (copy == NULL || PyObject_SetAttr(var, tk_str_value, copy) < 0) {
                Py_XDECREF(copy);
                goto fail;
            }
            arr = copy;
        }
        PyList_SET_ITEM(out, i, arr);
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_DECREF(out);
    Py_DECREF(seq);
    return NULL;
}

/* =========================================================================================
 * Tracker: runtime/device.py's MemoryTracker bookkeeping in C (issue 20). A compiled step
 * counts the outputs of its expensive kernels (tracing.memory_wrapper) and a weak
 * reference takes each off when it dies; in Python that cost ~4 us a tensor (a lambda and
 * a lock each way), ~2% of the MLP step. Here: track(value) counts a new ndarray owning its
 * data (returns the bytes added; 0 for anything else or one already counted), and the
 * weak reference's callback is a C function. The GIL makes each call atomic: no lock.
 * Garbage-collected (the callback refers to the tracker, each weak reference to the
 * callback). */

typedef struct {
    PyObject_HEAD
    PyObject *ndarray;   /* numpy.ndarray */
    PyObject *live;      /* id(array) -> weak reference */
    PyObject *info;      /* id(weak reference) -> (id(array), nbytes) */
    PyObject *callback;  /* this tracker's _free */
    long long bytes, peak, allocs, largest;
} TrackerObject;

/* Forgets the entry of weak reference `ref` (its referent died): returns 0 or -1. */
static int tracker_forget(TrackerObject *self, PyObject *ref, int count) {
    PyObject *rk = PyLong_FromVoidPtr(ref);
    if (rk == NULL) return -1;
    PyObject *entry = PyDict_GetItemWithError(self->info, rk);
    if (entry == NULL) {
        Py_DECREF(rk);
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(entry);
    int rc = PyDict_DelItem(self->info, rk);
    Py_DECREF(rk);
    if (rc == 0 && count) {
        PyObject *key = PyTuple_GET_ITEM(entry, 0);
        PyObject *cur = PyDict_GetItemWithError(self->live, key);
        if (cur == ref) {
            self->bytes -= PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 1));
            rc = PyDict_DelItem(self->live, key);
        } else if (cur == NULL && PyErr_Occurred()) {
            rc = -1;
        }
    }
    Py_DECREF(entry);
    return rc;
}

static PyObject *tracker_free(PyObject *self, PyObject *ref) {
    TrackerObject *t = (TrackerObject *)self;
    if (t->info == NULL || t->live == NULL) Py_RETURN_NONE;  /* cleared */
    if (tracker_forget(t, ref, 1) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef tracker_free_def = {"_free", tracker_free, METH_O,
                                       "a tracked array died: its bytes come off"};

static PyObject *tracker_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *ndarray;
    if (!PyArg_ParseTuple(args, "O!", &PyType_Type, &ndarray)) return NULL;
    TrackerObject *t = PyObject_GC_New(TrackerObject, type);
    if (t == NULL) return NULL;
    t->ndarray = Py_NewRef(ndarray);
    t->live = PyDict_New();
    t->info = PyDict_New();
    t->callback = NULL;
    t->bytes = t->peak = t->allocs = t->largest = 0;
    PyObject_GC_Track(t);
    if (t->live == NULL || t->info == NULL ||
            (t->callback = PyCFunction_New(&tracker_free_def, (PyObject *)t)) == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static int tracker_traverse(TrackerObject *t, visitproc visit, void *arg) {
    Py_VISIT(t->ndarray);
    Py_VISIT(t->live);
    Py_VISIT(t->info);
    Py_VISIT(t->callback);
    return 0;
}

static int tracker_clear(TrackerObject *t) {
    Py_CLEAR(t->callback);
    Py_CLEAR(t->live);
    Py_CLEAR(t->info);
    Py_CLEAR(t->ndarray);
    return 0;
}

static void tracker_dealloc(TrackerObject *t) {
    PyObject_GC_UnTrack(t);
    tracker_clear(t);
    PyObject_GC_Del(t);
}

static PyObject *tracker_track(TrackerObject *t, PyObject *value) {
    if (t->live == NULL || (PyObject *)Py_TYPE(value) != t->ndarray) return PyLong_FromLong(0);
    PyObject *flags = PyObject_GetAttr(value, tk_str_flags);
    if (flags == NULL) return NULL;
    PyObject *own = PyObject_GetAttr(flags, tk_str_owndata);
    Py_DECREF(flags);
    if (own == NULL) return NULL;
    int owns = PyObject_IsTrue(own);
    Py_DECREF(own);
    if (owns <= 0) return owns < 0 ? NULL : PyLong_FromLong(0);
    PyObject *nb = PyObject_GetAttr(value, tk_str_nbytes);
    if (nb == NULL) return NULL;
    long long n = PyLong_AsLongLong(nb);
    PyObject *key = n == -1 && PyErr_Occurred() ? NULL : PyLong_FromVoidPtr(value);
    PyObject *ref = NULL, *rk = NULL, *entry = NULL, *result = NULL;
    if (key == NULL) goto done;
    PyObject *old = PyDict_GetItemWithError(t->live, key);  /* borrowed */
    if (old == NULL && PyErr_Occurred()) goto done;
    if (old != NULL) {
        if (PyWeakref_GetObject(old) == value) {  /* counted already */
            result = PyLong_FromLong(0);
            goto done;
        }
        if (tracker_forget(t, old, 0) < 0) goto done;  /* a dead one's leftover entry */
    }
    if ((ref = PyWeakref_NewRef(value, t->callback)) == NULL ||
            (rk = PyLong_FromVoidPtr(ref)) == NULL ||
            (entry = PyTuple_Pack(2, key, nb)) == NULL ||
            PyDict_SetItem(t->info, rk, entry) < 0 || PyDict_SetItem(t->live, key, ref) < 0)
        goto done;
    t->bytes += n;
    t->allocs += 1;
    if (n > t->largest) t->largest = n;
    if (t->bytes > t->peak) t->peak = t->bytes;
    result = PyLong_FromLongLong(n);
done:
    Py_XDECREF(entry);
    Py_XDECREF(rk);
    Py_XDECREF(ref);
    Py_XDECREF(key);
    Py_DECREF(nb);
    return result;
}

static PyObject *tracker_reset_peak(TrackerObject *t, PyObject *unused) {
    t->peak = t->bytes;
    Py_RETURN_NONE;
}

static PyObject *tracker_stats(TrackerObject *t, PyObject *unused) {
    return Py_BuildValue("{s:L,s:L,s:L,s:L}", "bytes_in_use", t->bytes, "peak_bytes_in_use",
                         t->peak, "num_allocs", t->allocs, "largest_alloc_size", t->largest);
}

static PyMethodDef tracker_methods[] = {
    {"track", (PyCFunction)tracker_track, METH_O,
     "track(value): counts a new array owning its data; the bytes added"},
    {"reset_peak", (PyCFunction)tracker_reset_peak, METH_NOARGS, "peak = bytes in use"},
    {"stats", (PyCFunction)tracker_stats, METH_NOARGS, "the four counters, as a dict"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef tracker_members[] = {
    {"bytes_in_use", T_LONGLONG, offsetof(TrackerObject, bytes), READONLY, NULL},
    {"peak_bytes_in_use", T_LONGLONG, offsetof(TrackerObject, peak), READONLY, NULL},
    {"num_allocs", T_LONGLONG, offsetof(TrackerObject, allocs), READONLY, NULL},
    {"largest_alloc_size", T_LONGLONG, offsetof(TrackerObject, largest), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject TrackerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tensorflux.kernels.cpu._native.Tracker",
    .tp_basicsize = sizeof(TrackerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Tracker(numpy.ndarray): a device's memory counters (runtime/device.py)",
    .tp_new = tracker_new,
    .tp_dealloc = (destructor)tracker_dealloc,
    .tp_traverse = (traverseproc)tracker_traverse,
    .tp_clear = (inquiry)tracker_clear,
    .tp_methods = tracker_methods,
    .tp_members = tracker_members,
};

static int tracker_init_module(PyObject *m) {
    if (PyType_Ready(&TrackerType) < 0) return -1;
    if ((tk_str_flags = PyUnicode_InternFromString("flags")) == NULL ||
            (tk_str_owndata = PyUnicode_InternFromString("owndata")) == NULL ||
            (tk_str_nbytes = PyUnicode_InternFromString("nbytes")) == NULL ||
            (tk_str_value = PyUnicode_InternFromString("value")) == NULL ||
            (tk_str_base = PyUnicode_InternFromString("base")) == NULL ||
            (tk_str_writeable = PyUnicode_InternFromString("writeable")) == NULL ||
            (tk_str_copy = PyUnicode_InternFromString("copy")) == NULL)
        return -1;
    Py_INCREF(&TrackerType);
    if (PyModule_AddObject(m, "Tracker", (PyObject *)&TrackerType) < 0) {
        Py_DECREF(&TrackerType);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * VarReader: ReadVariableOp's kernel for the common case, without a Python frame
 * (kernels/cpu/state_ops.py). VarReader(found, slow) called as (ctx, handle): when the
 * FoundVars `found` holds an entry for this very handle, ctx's resource manager at the
 * same version and ctx's device, the variable's value read under its lock; in every other
 * case (and for a variable without a value) `slow(ctx, handle)`, the Python kernel, which
 * looks the variable up and raises the kernel's errors. A compiled MLP step reads 20
 * variables, each two Python frames right after big kernels. */

typedef struct {
    PyObject_HEAD
    PyObject *found;
    PyObject *slow;
    vectorcallfunc vectorcall;
} VarReaderObject;

static PyObject *vr_str_entry, *vr_str_rm, *vr_str_version, *vr_str_device, *vr_str_lock,
    *vr_str_acquire, *vr_str_release;

/* The value the entry names for (ctx, handle), a new reference; NULL without an error set
 * when the entry does not apply (the caller takes the slow path); NULL with an error when
 * the lock failed. */
static PyObject *vr_fast(VarReaderObject *r, PyObject *ctx, PyObject *handle) {
    PyObject *entry = PyObject_GetAttr(r->found, vr_str_entry), *value = NULL;
    PyObject *rm = NULL, *version = NULL, *device = NULL, *lock = NULL;
    if (entry == NULL || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 6) goto miss;
    PyObject *handles = PyTuple_GET_ITEM(entry, 3), *vars = PyTuple_GET_ITEM(entry, 4);
    if (!PyTuple_Check(handles) || PyTuple_GET_SIZE(handles) != 1 ||
            PyTuple_GET_ITEM(handles, 0) != handle || !PyList_Check(vars) ||
            PyList_GET_SIZE(vars) != 1)
        goto miss;
    if ((rm = PyObject_GetAttr(ctx, vr_str_rm)) == NULL || rm != PyTuple_GET_ITEM(entry, 0))
        goto miss;
    if ((device = PyObject_GetAttr(ctx, vr_str_device)) == NULL ||
            device != PyTuple_GET_ITEM(entry, 2))
        goto miss;
    if ((version = PyObject_GetAttr(rm, vr_str_version)) == NULL ||
            PyObject_RichCompareBool(version, PyTuple_GET_ITEM(entry, 1), Py_EQ) != 1)
        goto miss;
    PyObject *var = PyList_GET_ITEM(vars, 0);
    if ((lock = PyObject_GetAttr(var, vr_str_lock)) == NULL) goto miss;
    PyObject *took = PyObject_CallMethodNoArgs(lock, vr_str_acquire);
    if (took == NULL) goto fail;
    Py_DECREF(took);
    value = PyObject_GetAttr(var, tk_str_value);
    PyObject *released = PyObject_CallMethodNoArgs(lock, vr_str_release);
    if (released == NULL) {
        Py_CLEAR(value);
        goto fail;
    }
    Py_DECREF(released);
    if (value == Py_None) Py_CLEAR(value);  /* no value: the slow path raises */
    if (value == NULL) goto miss;
    goto done;
miss:
    PyErr_Clear();
    value = NULL;
    goto done;
fail:
    value = NULL;
done:
    Py_XDECREF(entry);
    Py_XDECREF(rm);
    Py_XDECREF(version);
    Py_XDECREF(device);
    Py_XDECREF(lock);
    return value;
}

static PyObject *vr_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    VarReaderObject *r = (VarReaderObject *)self;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        PyObject *value = vr_fast(r, args[0], args[1]);
        if (value != NULL || PyErr_Occurred()) return value;
    }
    return PyObject_Vectorcall(r->slow, args, nargsf, kwnames);
}

static PyObject *vr_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *found, *slow;
    if (!PyArg_ParseTuple(args, "OO:VarReader", &found, &slow)) return NULL;
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "VarReader: slow must be callable");
        return NULL;
    }
    VarReaderObject *r = PyObject_GC_New(VarReaderObject, type);
    if (r == NULL) return NULL;
    r->found = Py_NewRef(found);
    r->slow = Py_NewRef(slow);
    r->vectorcall = vr_vectorcall;
    PyObject_GC_Track(r);
    return (PyObject *)r;
}

static int vr_traverse(VarReaderObject *r, visitproc visit, void *arg) {
    Py_VISIT(r->found);
    Py_VISIT(r->slow);
    return 0;
}

static int vr_clear(VarReaderObject *r) {
    Py_CLEAR(r->found);
    Py_CLEAR(r->slow);
    return 0;
}

static void vr_dealloc(VarReaderObject *r) {
    PyObject_GC_UnTrack(r);
    vr_clear(r);
    PyObject_GC_Del(r);
}

static PyObject *vr_call(PyObject *self, PyObject *args, PyObject *kw) {
    return PyVectorcall_Call(self, args, kw);
}

static PyMemberDef vr_members[] = {
    {"slow", T_OBJECT, offsetof(VarReaderObject, slow), READONLY, "the Python kernel"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject VarReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tensorflux.kernels.cpu._native.VarReader",
    .tp_basicsize = sizeof(VarReaderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "VarReader(found, slow): ReadVariableOp's kernel (kernels/cpu/state_ops.py)",
    .tp_new = vr_new,
    .tp_dealloc = (destructor)vr_dealloc,
    .tp_traverse = (traverseproc)vr_traverse,
    .tp_clear = (inquiry)vr_clear,
    .tp_call = vr_call,
    .tp_vectorcall_offset = offsetof(VarReaderObject, vectorcall),
    .tp_members = vr_members,
};

static int vr_init_module(PyObject *m) {
    if (PyType_Ready(&VarReaderType) < 0) return -1;
#define VR_INTERN(var, s) if ((var = PyUnicode_InternFromString(s)) == NULL) return -1
    VR_INTERN(vr_str_entry, "entry");
    VR_INTERN(vr_str_rm, "resource_mgr");
    VR_INTERN(vr_str_version, "version");
    VR_INTERN(vr_str_device, "device");
    VR_INTERN(vr_str_lock, "lock");
    VR_INTERN(vr_str_acquire, "acquire");
    VR_INTERN(vr_str_release, "release");
#undef VR_INTERN
    Py_INCREF(&VarReaderType);
    if (PyModule_AddObject(m, "VarReader", (PyObject *)&VarReaderType) < 0) {
        Py_DECREF(&VarReaderType);
        return -1;
    }
    return 0;
}

static int df_init_module(PyObject *m) {
    if (PyType_Ready(&DfCoreType) < 0 || PyType_Ready(&DfReadyType) < 0) return -1;
#define DF_INTERN(var, s) if ((var = PyUnicode_InternFromString(s)) == NULL) return -1
    DF_INTERN(df_str_cidx, "cidx");
    DF_INTERN(df_str_iterations, "iterations");
    DF_INTERN(df_str_entries, "entries");
    DF_INTERN(df_str_pending, "pending");
    DF_INTERN(df_str_dead, "dead");
    DF_INTERN(df_str_uses, "uses");
    DF_INTERN(df_str_outstanding_ops, "outstanding_ops");
    DF_INTERN(df_str_outstanding_frames, "outstanding_frames");
    DF_INTERN(df_str_error, "error");
    DF_INTERN(df_str_process, "_process");
    DF_INTERN(df_str_fail, "_fail");
    DF_INTERN(df_str_complete, "_complete");
    DF_INTERN(df_str_cleanup, "_cleanup_iterations");
    DF_INTERN(df_str_dead_exits, "dead_exits");
    DF_INTERN(df_str_frame_id, "frame_id");
    DF_INTERN(df_str_frame_iter, "frame_iter");
#undef DF_INTERN
    Py_INCREF(&DfCoreType);
    if (PyModule_AddObject(m, "DataflowCore", (PyObject *)&DfCoreType) < 0) {
        Py_DECREF(&DfCoreType);
        return -1;
    }
    return 0;
}

static PyMethodDef methods[] = {
    {"set_blas", py_set_blas, METH_VARARGS,
     "set_blas(sgemm_address, dgemm_address, ilp64): NumPy's cblas_sgemm/dgemm"},
    {"gemm_plan", py_gemm_plan, METH_VARARGS,
     "gemm_plan(m, n, k, parts, polled, itemsize): (tile rows, tile columns, k piece, "
     "k slices, chunks) of such a gemm"},
    {"gemm", py_gemm, METH_VARARGS,
     "gemm(a, b, out, transpose_a, transpose_b, parts[, stop, deadline]): out = op(a) @ "
     "op(b); False if stopped"},
    {"adam", py_adam, METH_VARARGS,
     "adam(var, m, v, grad, lr_t, beta1, beta2, epsilon, use_nesterov, parts): in place"},
    {"momentum", py_momentum, METH_VARARGS,
     "momentum(var, accum, grad, lr, momentum, use_nesterov, parts): in place"},
    {"in_range", py_in_range, METH_VARARGS, "in_range(indices, limit): bool"},
    {"accidental_hits", py_accidental_hits, METH_VARARGS,
     "accidental_hits(true_classes, sampled, num_true, indices, ids): the hits found"},
    {"select", py_select, METH_VARARGS, "select(out, cond, t, e, parts)"},
    {"relu", py_relu, METH_VARARGS, "relu(out, x, parts)"},
    {"scatter_rows", py_scatter_rows, METH_VARARGS,
     "scatter_rows(target, indices, updates, subtract): rows added in order, in place"},
    {"relu_grad", py_relu_grad, METH_VARARGS, "relu_grad(out, gradients, features, parts)"},
    {"relu_grad_rows", py_relu_grad_rows, METH_VARARGS,
     "relu_grad_rows(out, gradients, features, parts): 2-D, rows contiguous at any stride"},
    {"skinny", py_skinny, METH_VARARGS,
     "skinny(out, a, b, thin, parts): out = a.T @ b (k small) or a @ b.T (thin: m small)"},
    {"max_pool", py_max_pool, METH_VARARGS,
     "max_pool(x, out, kh, kw, sh, sw, pad_top, pad_left, parts[, stop, deadline]): NHWC; "
     "False if stopped"},
    {"max_pool_grad", py_max_pool_grad, METH_VARARGS,
     "max_pool_grad(x, grad, out, idx, kh, kw, sh, sw, pad_top, pad_left, assign, parts"
     "[, stop, deadline]): False if stopped"},
    {"im2col", py_im2col, METH_VARARGS,
     "im2col(xp, out, n0, kh, kw, sh, sw, dh, dw): a batch chunk's convolution patches"},
    {"col2im", py_col2im, METH_VARARGS,
     "col2im(cols, img, oh, ow, kh, kw, sh, sw, dh, dw, tap_stride, pixel_stride, tap_offset, "
     "length, gather): a batch chunk's adds of tap products into an image (or, gather, of "
     "an image's tap slices into products), tap by tap"},
    /* convnets block */
    {"updates_many", py_updates_many, METH_VARARGS,
     "updates_many(rule, items, use_nesterov, parts): several Adam (0), Momentum (1) or "
     "gradient descent (2) updates in place, in one pass over the pool"},
    {"gradient_descent", py_gradient_descent, METH_VARARGS,
     "gradient_descent(var, delta, alpha, parts): var -= alpha * delta in place"},
    {"bn_sums", py_bn_sums, METH_VARARGS,
     "bn_sums(kind, x, y, v, partial, c, parts): per-chunk per-channel sums of a batch norm"},
    {"bn_rows", py_bn_rows, METH_VARARGS,
     "bn_rows(kind, x, y, out, m, k1, k2, k3, c, parts): a batch norm's elementwise pass"},
    {"swap_last2", py_swap_last2, METH_VARARGS,
     "swap_last2(src, dst, b, r, s, parts): dst (b, s, r) = src (b, r, s) transposed"},
    {"wino_transform", py_wino_transform, METH_VARARGS,
     "wino_transform(kind, src, dst[, origin]): Winograd F(2x2, 3x3) input (0), output (1) "
     "or gradient (2), F(2x2, 5x5) input (3) or output (4), F(4x4, 3x3) input (5), "
     "output (6) or gradient (7) tile transforms; origin (oy, ox): 3 and 5 from an "
     "unpadded source"},
    {"own_many", py_own_many, METH_VARARGS,
     "own_many(vars, ndarray): each variable's array an update may write (copy-on-write)"},
    {"sparse_xent", py_sparse_xent, METH_VARARGS,
     "sparse_xent(logits, labels, loss, backprop): -1 or the row of a bad label"},
    {"elementwise", py_elementwise, METH_VARARGS,
     "elementwise(out, inputs, program[, parts]) -> bool: float32 elementwise ops in one "
     "pass"},
    {"resize_nearest", py_resize_nearest, METH_VARARGS,
     "resize_nearest(out, images, iy, ix, parts): out[n, y, x] = images[n, iy[y], ix[x]]"},
    {"resize_nearest_grad", py_resize_nearest_grad, METH_VARARGS,
     "resize_nearest_grad(out, grads, ky, kx, parts): float32 sums of ky x kx blocks"},
    {"bias_relu", py_bias_relu, METH_VARARGS,
     "bias_relu(out, bias, relu): out (rows, F) += bias, then max(., 0) if relu; in place"},
    /* end convnets block */
    /* ngemm block */
    {"ngemm", py_ngemm, METH_VARARGS,
     "ngemm(a, b, out, transpose_a, accumulate, parts[, stop, deadline]): out (+)= op(a) @ b "
     "in float32 without packing; None without AVX-512F or AVX2, False if stopped"},
    {"ngemm_batch", py_ngemm_batch, METH_VARARGS,
     "ngemm_batch(a, b, out, accumulate): out[p] (+)= a[p] @ b[p] on this thread; None "
     "without AVX-512F or AVX2"},
    {"stem_conv", py_stem_conv, METH_VARARGS,
     "stem_conv(xp, w, out, sh, sw, parts[, stop, deadline]): out = the VALID conv of padded "
     "NHWC xp with w at strides (sh, sw), float32, without a patch matrix; None without "
     "AVX-512F, False if stopped"},
    {"thin_nn", py_thin_nn, METH_VARARGS,
     "thin_nn(a, b, out, parts[, stop, deadline]): out = a @ b in float32 for a of at most "
     "16 rows, b read once where it lies; None without AVX-512F, False if stopped"},
    {"ngemm_isa", py_ngemm_isa, METH_NOARGS,
     "ngemm's tiles on this CPU: 1 AVX-512F, 2 AVX2 + FMA, 0 none (ngemm declines)"},
    /* end ngemm block */
    {"helpers", py_helpers, METH_NOARGS, "helper threads started so far"},
    {"helper_spin", py_helper_spin, METH_VARARGS, "helpers' spin before sleeping, in us"},
    {"helper_spin_skips", py_helper_spin_skips, METH_NOARGS, "per slot, spins skipped now"},
    {"helper_spins", py_helper_spins, METH_NOARGS, "spins helpers started so far"},
    {"helpers_rest", py_helpers_rest, METH_NOARGS, "helpers stop spinning until a task"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "Fused CPU kernel loops and a GIL-free thread pool (see tensorflux/kernels/cpu/native.py).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    static int registered;
    if (!registered) {
        pthread_atfork(NULL, NULL, forget_helpers_in_child);
        registered = 1;
    }
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (df_init_module(m) < 0 || tracker_init_module(m) < 0 ||
                      vr_init_module(m) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
