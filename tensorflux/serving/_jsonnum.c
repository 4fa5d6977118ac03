/* tensorflux.serving._jsonnum: a JSON array of numbers read straight into doubles.
 *
 * Optional (setup.py marks it so): without it codec.py decodes every request with json.loads
 * and np.asarray. With it, the common predict request -- one float input, a rectangular
 * nested list of numbers -- skips both: on the 2-core machine json.loads plus np.asarray of
 * a 1x8x8x1 image took ~50 us (the nested lists cost more than the numbers), this ~2 us.
 *
 *   numbers(body, start) -> (values, shape, ints, end, largest) or None
 *
 * reads the JSON array that begins at body[start] ('['): `values` a bytearray of the leaves
 * as C doubles in row-major order, `shape` their tuple of dimensions, `ints` how many leaves
 * were written as integers (no fraction, no exponent), `end` the offset just past the
 * array's closing bracket, `largest` the largest magnitude (inf if a literal overflowed).
It answers None -- never an error -- for anything it does not
 * take, and the caller then decodes the request the general way, which also gives the error
 * if there is one: a token that is not a JSON number (true, null, strings, NaN, Infinity,
 * objects), a malformed number or separator, an empty or ragged list, leaves at different
 * depths, nesting deeper than MAX_DEPTH, an integer of more than 18 digits (beyond int64,
 * where json + NumPy give another dtype), "-0" written as an integer (json reads it as the
 * integer 0, which converts to +0.0), a number longer than MAX_TOKEN characters.
 *
 * Values are what json.loads gives: a float token goes through PyOS_string_to_double, the
 * routine behind float() and json's float parsing (correctly rounded); an integer token of
 * at most 18 digits converts to the same double as Python's int -> float. Overflowing
 * literals come back as +-inf (the caller sends those the general way).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <string.h>

#define MAX_DEPTH 32
#define MAX_TOKEN 127
#define MAX_INT_DIGITS 18

static const char *skip_ws(const char *s, const char *e) {
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++;
    return s;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A well-formed JSON number [t, e) whose digits make an integer m < 2^53 and whose decimal
 * exponent x has |x| <= 22 is m * 10^x or m / 10^-x exactly rounded: both operands are exact
 * doubles and IEEE arithmetic rounds the one operation correctly (Clinger's fast path, the
 * one correctly rounded strtod implementations take first). Returns 0 with the value, or -1
 * (the caller then asks PyOS_string_to_double). */
static int exact_decimal(const char *t, const char *e, double *out) {
    static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                                   1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                                   1e20, 1e21, 1e22};
    int neg = 0, x = 0, nd = 0;
    unsigned long long m = 0;
    if (*t == '-') { neg = 1; t++; }
    for (; t < e && is_digit(*t); t++) {
        if (m == 0 && *t == '0') continue;  /* leading zeros add nothing */
        if (++nd > 16) return -1;
        m = m * 10 + (unsigned)(*t - '0');
    }
    if (t < e && *t == '.') {
        for (t++; t < e && is_digit(*t); t++) {
            if (m == 0 && *t == '0') { x--; continue; }
            if (++nd > 16) return -1;
            m = m * 10 + (unsigned)(*t - '0');
            x--;
        }
    }
    if (t < e) {  /* an exponent */
        int eneg = 0, ev = 0;
        t++;
        if (*t == '+' || *t == '-') { eneg = *t == '-'; t++; }
        for (; t < e; t++) {
            if (ev > 10000) return -1;
            ev = ev * 10 + (*t - '0');
        }
        x += eneg ? -ev : ev;
    }
    if (m >= (1ULL << 53)) return -1;
    double v = (double)m;
    if (m == 0) x = 0;
    if (x < -22 || x > 22) return -1;
    v = x < 0 ? v / pow10[-x] : v * pow10[x];
    *out = neg ? -v : v;
    return 0;
}

/* Parses one JSON number at *ps; returns 0 and advances *ps, or -1 if it is not one. */
static int read_number(const char **ps, const char *e, double *out, int *is_int) {
    const char *t = *ps, *s = *ps;
    char buf[MAX_TOKEN + 1];
    int digits = 0;
    if (s < e && *s == '-') s++;
    if (s >= e) return -1;
    if (*s == '0') {
        s++;
        digits = 1;
    } else if (*s >= '1' && *s <= '9') {
        while (s < e && is_digit(*s)) { s++; digits++; }
    } else {
        return -1;
    }
    *is_int = 1;
    if (s < e && *s == '.') {
        s++;
        if (s >= e || !is_digit(*s)) return -1;
        while (s < e && is_digit(*s)) s++;
        *is_int = 0;
    }
    if (s < e && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < e && (*s == '+' || *s == '-')) s++;
        if (s >= e || !is_digit(*s)) return -1;
        while (s < e && is_digit(*s)) s++;
        *is_int = 0;
    }
    Py_ssize_t len = s - t;
    if (len > MAX_TOKEN) return -1;
    if (*is_int && (digits > MAX_INT_DIGITS || (len == 2 && t[0] == '-' && t[1] == '0')))
        return -1;
    if (exact_decimal(t, s, out) == 0) {
        *ps = s;
        return 0;
    }
    memcpy(buf, t, (size_t)len);
    buf[len] = '\0';
    char *end = NULL;
    double v = PyOS_string_to_double(buf, &end, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (end != buf + len) return -1;
    *out = v;
    *ps = s;
    return 0;
}

typedef struct {
    double *v;
    Py_ssize_t n, cap;
} Values;

static int push(Values *vals, double x) {
    if (vals->n == vals->cap) {
        Py_ssize_t cap = vals->cap ? 2 * vals->cap : 64;
        double *nv = PyMem_Realloc(vals->v, (size_t)cap * sizeof(double));
        if (nv == NULL) return -1;
        vals->v = nv;
        vals->cap = cap;
    }
    vals->v[vals->n++] = x;
    return 0;
}

/* The array at s (a '['), as described at the top; 0 on success, -1 when not taken. */
static int read_array(const char *s, const char *e, Values *vals, Py_ssize_t *dims,
                      int *ndim, Py_ssize_t *ints, double *largest, const char **end) {
    Py_ssize_t count[MAX_DEPTH + 1];
    int depth = 1, leaf_depth = -1;
    for (int i = 0; i <= MAX_DEPTH; i++) dims[i] = -1;
    if (s >= e || *s != '[') return -1;
    s++;
    count[1] = 0;
    for (;;) {
        /* a value of the list at `depth` */
        s = skip_ws(s, e);
        if (s >= e) return -1;
        if (*s == '[') {
            if (depth >= MAX_DEPTH || (leaf_depth >= 0 && depth >= leaf_depth)) return -1;
            depth++;
            count[depth] = 0;
            s++;
            continue;
        }
        if (leaf_depth < 0) leaf_depth = depth;
        else if (depth != leaf_depth) return -1;
        double x;
        int is_int;
        if (read_number(&s, e, &x, &is_int) < 0) return -1;
        if (push(vals, x) < 0) return -2;
        *ints += is_int;
        if (fabs(x) > *largest || x != x) *largest = fabs(x);
        count[depth]++;
        /* after a value: ',' (another follows) or ']' (the list ends, itself a value) */
        for (;;) {
            s = skip_ws(s, e);
            if (s >= e) return -1;
            if (*s == ',') {
                s++;
                break;
            }
            if (*s != ']') return -1;
            s++;
            if (dims[depth] < 0) dims[depth] = count[depth];
            else if (dims[depth] != count[depth]) return -1;
            depth--;
            if (depth == 0) {
                *ndim = leaf_depth;
                *end = s;
                return 0;
            }
            count[depth]++;
        }
    }
}

static PyObject *py_numbers(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "y*n", &view, &start)) return NULL;
    if (start < 0 || start >= view.len) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    const char *base = (const char *)view.buf;
    Values vals = {NULL, 0, 0};
    Py_ssize_t dims[MAX_DEPTH + 1], ints = 0;
    int ndim = 0;
    double largest = 0.0;
    const char *end = NULL;
    int rc = read_array(base + start, base + view.len, &vals, dims, &ndim, &ints, &largest,
                        &end);
    PyObject *result = NULL;
    if (rc == -2) {
        PyErr_NoMemory();
    } else if (rc < 0) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        PyObject *values = PyByteArray_FromStringAndSize((const char *)vals.v,
                                                         vals.n * (Py_ssize_t)sizeof(double));
        PyObject *shape = PyTuple_New(ndim);
        if (values != NULL && shape != NULL) {
            for (int i = 0; i < ndim; i++)
                PyTuple_SET_ITEM(shape, i, PyLong_FromSsize_t(dims[i + 1]));
            result = Py_BuildValue("(OOnnd)", values, shape, ints, (Py_ssize_t)(end - base),
                                   largest);
        }
        Py_XDECREF(values);
        Py_XDECREF(shape);
    }
    PyMem_Free(vals.v);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"numbers", py_numbers, METH_VARARGS,
     "numbers(body, start) -> (values, shape, ints, end, largest) or None: the JSON array of "
     "numbers "
     "at body[start] (see _jsonnum.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jsonnum",
    "A JSON array of numbers read straight into doubles (tensorflux/serving/codec.py).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__jsonnum(void) { return PyModule_Create(&module); }
