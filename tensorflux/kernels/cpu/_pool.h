/* The intra-op thread pool shared by the C extensions (_native.c and _qkernels.c include
 * this file; each extension gets a pool of its own): POOL_SLOTS independent slots, each
 * with helper threads of its own started on demand and one task at a time, so that up to
 * POOL_SLOTS kernels running side by side (on inter-op threads) each split over helpers
 * (a caller that finds every slot busy runs its work alone); chunks claimed by an atomic
 * counter, the caller working too. A call may stop between chunks (a stop cell Python
 * sets, a deadline). pthread_atfork(forget_helpers_in_child) resets the pool in a forked
 * child. Needs Python.h, pthread.h, sched.h, stdatomic.h, stdint.h and time.h included
 * first. */

#ifndef TFX_POOL_H
#define TFX_POOL_H

#if defined(__linux__)
#include <fcntl.h>         /* helper_wait: /proc/loadavg, kept open */
#include <sys/resource.h>  /* getrusage(RUSAGE_THREAD): helper_wait's preemption count */
#include <unistd.h>
#endif

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
/* Kernels that may split at the same time. Why more than one: beside a competing process
 * the kernel shares the cores per runnable thread, so two products running side by side
 * that each split over the intra-op threads get more of the cores than two that run one
 * thread each (BENCHMARKS.md, "Two splits at once"); and a plan that does not depend on
 * whether the pool is free keeps a product's bits the same from run to run. */
#define POOL_SLOTS 4

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;       /* helpers wait for a task */
    pthread_cond_t done_cv;       /* the caller waits for chunks */
    atomic_int helpers;           /* helper threads started (changed under mu) */
    atomic_int busy;              /* a caller owns the task below */
    atomic_llong seq;             /* bumped for every task posted */
    atomic_int closed;            /* the current task is finished: helpers keep out */
    atomic_int inside;            /* helpers currently inside the task */
    atomic_int caller_waiting;    /* the caller sleeps on done_cv */
    /* the task */
    chunk_fn fn;
    void *arg;
    int64_t count;
    int max_helpers;              /* helpers that may join (the caller's `parts` - 1) */
    const stop_t *stop;           /* polled before each chunk (NULL: never stops) */
    atomic_llong skipped;         /* chunks not run because the call stopped */
    atomic_int joined;
    atomic_llong next;
    atomic_llong finished;
    /* the CPU each helper ran its latest chunk on (-1: none claimed in this task) */
    atomic_int helper_cpu[MAX_HELPERS];
    /* helpers' waits before sleeping (helper_wait): tasks to let pass without one, and
     * how many the next contended wait sets */
    atomic_int spin_skip;
    atomic_int spin_backoff;
} pool_slot_t;

#define POOL_SLOT_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, \
                        PTHREAD_COND_INITIALIZER}
static pool_slot_t pool_slots[POOL_SLOTS] = {POOL_SLOT_INIT, POOL_SLOT_INIT, POOL_SLOT_INIT,
                                             POOL_SLOT_INIT};

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

static void run_chunks(pool_slot_t *p, int slot) {
    for (;;) {
        int64_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->count) return;
        if (slot >= 0) atomic_store(&p->helper_cpu[slot], current_cpu());
        if (p->stop != NULL && (atomic_load(&p->skipped) || should_stop(p->stop)))
            atomic_fetch_add(&p->skipped, 1);  /* counted as finished, not run */
        else
            p->fn(p->arg, i);
        if (atomic_fetch_add(&p->finished, 1) + 1 == p->count &&
                atomic_load(&p->caller_waiting)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* How long a helper that finished its chunks waits, spinning, for the next task before it
 * sleeps on work_cv (TENSORFLUX_HELPER_SPIN_US; 0: never). A training step's products come
 * a few small kernels apart, and waking a sleeping helper costs tens of microseconds (more
 * on a virtual machine, whose idle vCPU the host must schedule again), paid by every
 * product: the MLP step was 7-10% faster with the wait on an idle 2-core host
 * (BENCHMARKS.md "Helpers that wait a little"). A helper spins only where a core is to
 * spare: its thread may use two CPUs or more and the machine runs no more threads than it
 * has CPUs (cores_to_spare, which reads /proc/loadavg). A wait that does not get its core
 * to itself all the same (its thread's CPU time falls behind the clock, or the scheduler
 * preempts it) costs another thread that core: the helpers of that slot then sleep at
 * once for the next 16, 32, ... 4096 tasks, doubling with every contended wait and
 * shrinking slowly with uncontended ones (helper_wait). */
#define HELPER_SPIN_DEFAULT_US 300
#define HELPER_BACKOFF_MIN 16
#define HELPER_BACKOFF_MAX 4096
#define HELPER_LOOK_S 50e-6  /* a spin looks at the machine's runnable threads this often */

static double helper_spin_s = -1;  /* set once, by the first helper started */
static atomic_llong helper_spins;  /* spins started so far (all slots) */
/* Set by pool_rest() (a thread about to wait for another process: no task comes soon),
 * cleared by the next task posted: helpers do not spin meanwhile, and a spin under way
 * ends at once. A step that waits for a parameter server's reply would otherwise leave
 * its helpers spinning on the cores that process needs, and every such contended spin
 * turned the helpers' spins off for the next thousands of tasks (the step's products
 * included). */
static atomic_int pool_resting;

static inline void pool_rest(void) { atomic_store(&pool_resting, 1); }

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether a spin here would take no one's core: this thread may run on two CPUs or more,
 * and the machine's runnable threads (/proc/loadavg's count, this one included) are no
 * more than its CPUs. 1 when that cannot be read. */
static int loadavg_fd = -1, online_cpus = 0;
static pthread_once_t loadavg_once = PTHREAD_ONCE_INIT;
static __thread int thread_cpus = 0;

static void open_loadavg(void) {
#if defined(__linux__)
    loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    online_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
}

static int cores_to_spare(void) {
#if defined(__linux__)
    if (thread_cpus == 0) {
        cpu_set_t set;
        thread_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 2;
    }
    if (thread_cpus < 2) return 0;
    pthread_once(&loadavg_once, open_loadavg);
    if (loadavg_fd < 0 || online_cpus < 1) return 1;
    char buf[160];
    ssize_t n = pread(loadavg_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 1;
    buf[n] = '\0';  /* "0.28 0.80 0.97 2/345 12345": runnable/all after the 3rd space */
    char *q = buf;
    for (int spaces = 0; *q && spaces < 3; q++)
        if (*q == ' ') spaces++;
    char *end;
    long running = strtol(q, &end, 10);
    if (end == q || *end != '/') return 1;
    return running <= online_cpus;
#else
    return 1;
#endif
}

/* This thread's involuntary context switches so far (-1: unknown): the scheduler took its
 * core for another runnable thread. */
static long thread_preemptions(void) {
#if defined(RUSAGE_THREAD)
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) return ru.ru_nivcsw;
#endif
    return -1;
}

static double helper_spin_seconds(void) {
    if (helper_spin_s < 0) {
        const char *e = getenv("TENSORFLUX_HELPER_SPIN_US");
        double us = HELPER_SPIN_DEFAULT_US;
        if (e != NULL && *e != '\0') {
            char *end;
            double v = strtod(e, &end);
            if (end != e && v >= 0 && v <= 1e6) us = v;
        }
        helper_spin_s = us * 1e-6;
    }
    return helper_spin_s;
}

/* Before sleeping, a helper that just ran a task spins (pausing) until the next task is
 * posted or the spin time passes, unless the machine has no core to spare (cores_to_spare,
 * looked at again every HELPER_LOOK_S of the spin); a contended spin all the same (the
 * scheduler preempted the thread, or it got under 3/4 of the time as CPU) makes the slot's
 * helpers skip their spins for a while (see above). */
static void helper_wait(pool_slot_t *p, long long seen) {
    double spin = helper_spin_seconds();
    if (spin <= 0) return;
    if (atomic_load(&p->spin_skip) > 0) {
        atomic_fetch_sub(&p->spin_skip, 1);
        return;
    }
    if (atomic_load(&pool_resting) || !cores_to_spare()) return;
    atomic_fetch_add(&helper_spins, 1);
    long v0 = thread_preemptions();
    double w0 = monotonic_s(), c0 = thread_cpu_s(), w1 = w0;
    double next_look = w0 + HELPER_LOOK_S;
    for (unsigned i = 1; atomic_load(&p->seq) == seen; i++) {
        cpu_relax();
        if (i % 64) continue;
        if (atomic_load(&pool_resting)) return;  /* not contended: no backoff */
        if ((w1 = monotonic_s()) - w0 > spin) break;
        if (w1 > next_look) {  /* another thread became runnable meanwhile: make room */
            if (!cores_to_spare()) break;
            next_look = w1 + HELPER_LOOK_S;
        }
    }
    w1 = monotonic_s();
    double wall = w1 - w0, cpu = thread_cpu_s() - c0;
    int backoff = atomic_load(&p->spin_backoff);
    if ((wall > 20e-6 && cpu < 0.75 * wall) || thread_preemptions() != v0) {
        backoff = backoff < HELPER_BACKOFF_MIN ? HELPER_BACKOFF_MIN :
                  backoff >= HELPER_BACKOFF_MAX ? HELPER_BACKOFF_MAX : 2 * backoff;
        atomic_store(&p->spin_backoff, backoff);
        atomic_store(&p->spin_skip, backoff);
    } else if (backoff > 0) {
        atomic_store(&p->spin_backoff, backoff - (backoff + 15) / 16);  /* slowly */
    }
}

static void *helper_main(void *arg) {
    pool_slot_t *p = arg;
    long long seen = atomic_load(&p->seq);
    for (;;) {
        helper_wait(p, seen);
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->seq) == seen) pthread_cond_wait(&p->work_cv, &p->mu);
        seen = atomic_load(&p->seq);
        pthread_mutex_unlock(&p->mu);
        /* Announce before looking: the caller, once every chunk is done, closes the task and
         * waits until no helper is inside, so a late helper never reads a reused task. */
        atomic_fetch_add(&p->inside, 1);
        if (!atomic_load(&p->closed) && atomic_load(&p->seq) == seen) {
            int slot = atomic_fetch_add(&p->joined, 1);
            if (slot < p->max_helpers) run_chunks(p, slot);
        }
        atomic_fetch_sub(&p->inside, 1);
    }
    return NULL;
}

/* Starts helpers of slot `p` up to `n`; returns how many it has. (Helpers never touch
 * Python: callable with or without the GIL; p->mu orders it with the helpers.) */
static int slot_ensure_helpers(pool_slot_t *p, int n) {
    if (n > MAX_HELPERS) n = MAX_HELPERS;
    if (atomic_load(&p->helpers) >= n) return atomic_load(&p->helpers);
    pthread_mutex_lock(&p->mu);
    while (p->helpers < n) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        int rc = pthread_create(&th, &attr, helper_main, p);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        p->helpers++;
    }
    n = p->helpers;
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* Starts the first slot's helpers up to `n` ahead of a call (the other slots start theirs
 * when a call first needs them). */
static int ensure_helpers(int n) {
    return slot_ensure_helpers(&pool_slots[0], n);
}

/* Helper threads started so far, all slots together. */
static inline int pool_helpers(void) {
    int n = 0;
    for (int s = 0; s < POOL_SLOTS; s++) n += atomic_load(&pool_slots[s].helpers);
    return n;
}

/* A forked child has none of the parent's threads: it starts helpers of its own. */
static void forget_helpers_in_child(void) {
    for (int s = 0; s < POOL_SLOTS; s++) {
        pool_slot_t *p = &pool_slots[s];
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->work_cv, NULL);
        pthread_cond_init(&p->done_cv, NULL);
        p->helpers = 0;
        atomic_store(&p->busy, 0);
        atomic_store(&p->inside, 0);
        atomic_store(&p->caller_waiting, 0);
    }
}

/* How long the caller spins (pausing) for helpers still running a chunk on other CPUs
 * before it sleeps on done_cv: such a helper usually finishes within this (the chunks are
 * balanced), and waking from a sleep would cost more. It yields only to a helper on its own
 * CPU: on a core shared with another process, a yield hands that process a whole time slice
 * (milliseconds, for every split kernel), and the step waited for it (BENCHMARKS.md,
 * "Steady steps"). */
#define CALLER_SPIN_S 1e-3
#define CALLER_YIELDS 2000

static int helper_here(pool_slot_t *p, int me) {
    int joined = atomic_load(&p->joined);
    if (joined > p->max_helpers) joined = p->max_helpers;
    for (int h = 0; me >= 0 && h < joined; h++)
        if (atomic_load(&p->helper_cpu[h]) == me) return 1;
    return 0;
}

/* Spins until every chunk of the task is finished (1), or gives up (0): after
 * CALLER_SPIN_S of pausing while the helpers run elsewhere, or CALLER_YIELDS yields to a
 * helper that holds a chunk on this very CPU (it needs the core the caller would spin on). */
static int spin_until_finished(pool_slot_t *p, int64_t count) {
    double until = monotonic_s() + CALLER_SPIN_S;
    int yields = 0;
    for (unsigned i = 1; atomic_load(&p->finished) < count; i++) {
        if (i % 64) {
            cpu_relax();
            continue;
        }
        if (helper_here(p, current_cpu())) {
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
static void wait_helpers_outside(pool_slot_t *p) {
    for (int i = 0; atomic_load(&p->inside) > 0; i++) {
        if (i < 4096) {
            cpu_relax();
        } else {
            struct timespec nap = {0, 20000};
            nanosleep(&nap, NULL);
        }
    }
}

/* A free slot, now owned by the caller, with helpers started (NULL: every slot is busy, or
 * none has a helper and none can be started). */
static pool_slot_t *take_slot(int want_helpers) {
    for (int s = 0; s < POOL_SLOTS; s++) {
        pool_slot_t *p = &pool_slots[s];
        int expected = 0;
        if (atomic_load(&p->busy) || !atomic_compare_exchange_strong(&p->busy, &expected, 1))
            continue;
        if (slot_ensure_helpers(p, want_helpers) > 0) return p;
        atomic_store(&p->busy, 0);
        return NULL;
    }
    return NULL;
}

/* Runs fn(arg, 0..count-1) on this thread and up to parts-1 helpers of a free slot; false
 * (and nothing run) when every slot is taken or there is no helper, so the caller runs the
 * work its own way. Called without the GIL. */
static int pool_run(chunk_fn fn, void *arg, int64_t count, int parts, const stop_t *stop,
                    int64_t *skipped) {
    if (parts < 2 || count < 2) return 0;
    pool_slot_t *p = take_slot(parts - 1);
    if (p == NULL) return 0;
    p->fn = fn;
    p->arg = arg;
    p->count = count;
    p->max_helpers = parts - 1;
    p->stop = stop;
    atomic_store(&p->skipped, 0);
    atomic_store(&p->joined, 0);
    for (int h = 0; h < parts - 1 && h < MAX_HELPERS; h++) atomic_store(&p->helper_cpu[h], -1);
    atomic_store(&p->next, 0);
    atomic_store(&p->finished, 0);
    atomic_store(&p->closed, 0);
    if (atomic_load(&pool_resting)) atomic_store(&pool_resting, 0);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->seq, 1);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p, -1);
    if (atomic_load(&p->finished) < count && !spin_until_finished(p, count)) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->caller_waiting, 1);
        while (atomic_load(&p->finished) < count) pthread_cond_wait(&p->done_cv, &p->mu);
        atomic_store(&p->caller_waiting, 0);
        pthread_mutex_unlock(&p->mu);
    }
    atomic_store(&p->closed, 1);
    wait_helpers_outside(p);
    *skipped = atomic_load(&p->skipped);
    atomic_store(&p->busy, 0);
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
