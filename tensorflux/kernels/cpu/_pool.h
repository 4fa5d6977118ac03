/* The intra-op thread pool shared by the C extensions (_native.c and _qkernels.c include
 * this file; each extension gets a pool of its own): helper threads started on demand,
 * one task at a time (a caller that finds the pool busy runs its work alone), chunks
 * claimed by an atomic counter, the caller working too. A call may stop between chunks
 * (a stop cell Python sets, a deadline). pthread_atfork(forget_helpers_in_child) resets the
 * pool in a forked child. Needs Python.h, pthread.h, sched.h, stdatomic.h, stdint.h and
 * time.h included first. */

#ifndef TFX_POOL_H
#define TFX_POOL_H

/* ---------------------------------------------------------------------------------------
 * The pool. */

typedef void (*chunk_fn)(void *arg, int64_t chunk);

/* Why a call should stop: a cell Python sets (cancellation, close) and a deadline. */
typedef struct {
    const volatile int32_t *cell;  /* NULL: no cell */
    double deadline;               /* CLOCK_MONOTONIC seconds; 0: none */
} stop_t;

static int should_stop(const stop_t *s) {
    if (s == NULL) return 0;
    if (s->cell != NULL && *s->cell) return 1;
    if (s->deadline > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if ((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 > s->deadline) return 1;
    }
    return 0;
}

#define MAX_HELPERS 63

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;  /* helpers wait for a task */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;  /* the caller waits for chunks */
static atomic_int helpers;         /* helper threads started (changed under pool_mu) */
static atomic_int busy;            /* a caller owns the task below */
static atomic_llong seq;           /* bumped for every task posted */
static atomic_int closed;          /* the current task is finished: helpers keep out */
static atomic_int inside;          /* helpers currently inside the task */
static atomic_int caller_waiting;  /* the caller sleeps on done_cv */

static struct {
    chunk_fn fn;
    void *arg;
    int64_t count;
    int max_helpers;          /* helpers that may join (the caller's `parts` - 1) */
    const stop_t *stop;       /* polled before each chunk (NULL: never stops) */
    atomic_llong skipped;     /* chunks not run because the call stopped */
    atomic_int joined;
    atomic_llong next;
    atomic_llong finished;
} task;

/* The CPU a thread runs on (-1: unknown), and a pause for spin-waits. */
static int current_cpu(void) {
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The CPU each helper ran its latest chunk on (-1: none claimed in this task). */
static atomic_int helper_cpu[MAX_HELPERS];

static void run_chunks(int slot) {
    for (;;) {
        int64_t i = atomic_fetch_add(&task.next, 1);
        if (i >= task.count) return;
        if (slot >= 0) atomic_store(&helper_cpu[slot], current_cpu());
        if (task.stop != NULL && (atomic_load(&task.skipped) || should_stop(task.stop)))
            atomic_fetch_add(&task.skipped, 1);  /* counted as finished, not run */
        else
            task.fn(task.arg, i);
        if (atomic_fetch_add(&task.finished, 1) + 1 == task.count &&
                atomic_load(&caller_waiting)) {
            pthread_mutex_lock(&pool_mu);
            pthread_cond_broadcast(&done_cv);
            pthread_mutex_unlock(&pool_mu);
        }
    }
}

static void *helper_main(void *unused) {
    (void)unused;
    long long seen = atomic_load(&seq);
    for (;;) {
        pthread_mutex_lock(&pool_mu);
        while (atomic_load(&seq) == seen) pthread_cond_wait(&work_cv, &pool_mu);
        seen = atomic_load(&seq);
        pthread_mutex_unlock(&pool_mu);
        /* Announce before looking: the caller, once every chunk is done, closes the task and
         * waits until no helper is inside, so a late helper never reads a reused task. */
        atomic_fetch_add(&inside, 1);
        if (!atomic_load(&closed) && atomic_load(&seq) == seen) {
            int slot = atomic_fetch_add(&task.joined, 1);
            if (slot < task.max_helpers) run_chunks(slot);
        }
        atomic_fetch_sub(&inside, 1);
    }
    return NULL;
}

/* Starts helpers up to `n` (called with the GIL held; pool_mu orders it with the helpers). */
static int ensure_helpers(int n) {
    if (n > MAX_HELPERS) n = MAX_HELPERS;
    pthread_mutex_lock(&pool_mu);
    while (helpers < n) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        int rc = pthread_create(&th, &attr, helper_main, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        helpers++;
    }
    n = helpers;
    pthread_mutex_unlock(&pool_mu);
    return n;
}

/* A forked child has none of the parent's threads: it starts helpers of its own. */
static void forget_helpers_in_child(void) {
    pthread_mutex_init(&pool_mu, NULL);
    pthread_cond_init(&work_cv, NULL);
    pthread_cond_init(&done_cv, NULL);
    helpers = 0;
    atomic_store(&busy, 0);
    atomic_store(&inside, 0);
    atomic_store(&caller_waiting, 0);
}

/* How long the caller spins (pausing) for helpers still running a chunk on other CPUs
 * before it sleeps on done_cv: such a helper usually finishes within this (the chunks are
 * balanced), and waking from a sleep would cost more. It yields only to a helper on its own
 * CPU: on a core shared with another process, a yield hands that process a whole time slice
 * (milliseconds, for every split kernel), and the step waited for it (BENCHMARKS.md,
 * "Steady steps"). */
#define CALLER_SPIN_S 1e-3
#define CALLER_YIELDS 2000

static int helper_here(int me) {
    int joined = atomic_load(&task.joined);
    if (joined > task.max_helpers) joined = task.max_helpers;
    for (int h = 0; me >= 0 && h < joined; h++)
        if (atomic_load(&helper_cpu[h]) == me) return 1;
    return 0;
}

/* Spins until every chunk of the task is finished (1), or gives up (0): after
 * CALLER_SPIN_S of pausing while the helpers run elsewhere, or CALLER_YIELDS yields to a
 * helper that holds a chunk on this very CPU (it needs the core the caller would spin on). */
static int spin_until_finished(int64_t count) {
    double until = monotonic_s() + CALLER_SPIN_S;
    int yields = 0;
    for (unsigned i = 1; atomic_load(&task.finished) < count; i++) {
        if (i % 64) {
            cpu_relax();
            continue;
        }
        if (helper_here(current_cpu())) {
            if (++yields > CALLER_YIELDS) return 0;
            sched_yield();
        } else if (monotonic_s() > until) {
            return 0;
        }
    }
    return 1;
}

/* Waits until no helper is inside the closed task (a helper that woke late only looks at
 * it and leaves): spins a little, then sleeps in short naps (the helper may need this
 * core; a yield would hand it to another process for a whole slice). */
static void wait_helpers_outside(void) {
    for (int i = 0; atomic_load(&inside) > 0; i++) {
        if (i < 4096) {
            cpu_relax();
        } else {
            struct timespec nap = {0, 20000};
            nanosleep(&nap, NULL);
        }
    }
}

/* Runs fn(arg, 0..count-1) on this thread and up to parts-1 helpers; false (and nothing
 * run) when another caller owns the pool or there is no helper, so the caller runs the work
 * its own way. Called without the GIL (helpers were started by the caller beforehand). */
static int pool_run(chunk_fn fn, void *arg, int64_t count, int parts, const stop_t *stop,
                    int64_t *skipped) {
    int expected = 0;
    if (parts < 2 || count < 2 || helpers == 0 ||
            !atomic_compare_exchange_strong(&busy, &expected, 1))
        return 0;
    task.fn = fn;
    task.arg = arg;
    task.count = count;
    task.max_helpers = parts - 1;
    task.stop = stop;
    atomic_store(&task.skipped, 0);
    atomic_store(&task.joined, 0);
    for (int h = 0; h < parts - 1 && h < MAX_HELPERS; h++) atomic_store(&helper_cpu[h], -1);
    atomic_store(&task.next, 0);
    atomic_store(&task.finished, 0);
    atomic_store(&closed, 0);
    pthread_mutex_lock(&pool_mu);
    atomic_fetch_add(&seq, 1);
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&pool_mu);
    run_chunks(-1);
    if (atomic_load(&task.finished) < count && !spin_until_finished(count)) {
        pthread_mutex_lock(&pool_mu);
        atomic_store(&caller_waiting, 1);
        while (atomic_load(&task.finished) < count) pthread_cond_wait(&done_cv, &pool_mu);
        atomic_store(&caller_waiting, 0);
        pthread_mutex_unlock(&pool_mu);
    }
    atomic_store(&closed, 1);
    wait_helpers_outside();
    *skipped = atomic_load(&task.skipped);
    atomic_store(&busy, 0);
    return 1;
}

/* Runs fn(arg, 0..count-1): on the pool when it takes the call, else on this thread;
 * returns how many chunks were skipped because the call stopped (0: all done). Called
 * without the GIL. */
static int64_t run_serial(chunk_fn fn, void *arg, int64_t count, const stop_t *stop) {
    for (int64_t i = 0; i < count; i++) {
        if (should_stop(stop)) return count - i;
        fn(arg, i);
    }
    return 0;
}

static int64_t run_all(chunk_fn fn, void *arg, int64_t count, int parts, const stop_t *stop) {
    int64_t skipped = 0;
    if (pool_run(fn, arg, count, parts, stop, &skipped)) return skipped;
    return run_serial(fn, arg, count, stop);
}

/* Parses the optional (stop_cell, deadline) arguments into `s`; `view` holds the cell's
 * buffer when *held is set (release it after the call). Raises ValueError. */
static int get_stop(PyObject *cell, double deadline, stop_t *s, Py_buffer *view, int *held) {
    s->cell = NULL;
    s->deadline = deadline > 0 ? deadline : 0;
    *held = 0;
    if (cell == NULL || cell == Py_None) return 0;
    if (PyObject_GetBuffer(cell, view, PyBUF_C_CONTIGUOUS) != 0) return -1;
    *held = 1;
    if (view->len < (Py_ssize_t)sizeof(int32_t)) {
        PyBuffer_Release(view);
        *held = 0;
        PyErr_SetString(PyExc_ValueError, "stop cell: an int32 buffer expected");
        return -1;
    }
    s->cell = (const volatile int32_t *)view->buf;
    return 0;
}

#endif  /* TFX_POOL_H */
