/*
 * stagewise._native._trecparse: one pass over a TREC run or qrels file.
 *
 * Why C: a Python (or even polars) line reader is the slowest part of evaluating a large run; this reads
 * ~250 MB of MS MARCO-shaped run in well under a second on one core. It tokenises on any run of spaces or
 * tabs, skips blank lines and lines whose first field starts with '#', tolerates fields after the last
 * required one (as trec_eval does), interns query ids, stores document ids as Arrow-style offsets + bytes,
 * parses scores exactly (a fast path for short decimals, strtod otherwise) and hashes each (query, doc) pair.
 * Errors come back as a tuple ("error", code, line, field) so Python can word them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KIND_RUN 0
#define KIND_QRELS 1
#define MAX_FIELDS 7

enum { ERR_FIELDS = 1, ERR_SCORE = 2, ERR_LABEL = 3 };

/* FNV-1a over the query id's length, its bytes, then the doc id's bytes, finished with splitmix64's mixer.
 * The length prefix keeps ("ab", "c") and ("a", "bc") apart. Python's pair_keys computes the same. */
static inline uint64_t fnv(uint64_t h, const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t pair_hash(const char *q, size_t qn, const char *d, size_t dn) {
    uint64_t len = (uint64_t)qn;
    uint64_t h = fnv(0xcbf29ce484222325ULL, (const unsigned char *)&len, sizeof len);
    h = fnv(h, (const unsigned char *)q, qn);
    h = fnv(h, (const unsigned char *)d, dn);
    return mix(h);
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Parse a whole field as a finite double. Short decimals (at most 15 significant digits, no exponent) are
 * exact as integer / 10^k, both exactly representable, so one correctly rounded division gives the same
 * double as strtod (Clinger's fast path); anything else goes to strtod on a NUL-terminated copy. */
static int parse_double(const char *s, size_t n, double *out) {
    if (n == 0) return -1;
    size_t i = 0;
    int negative = 0;
    if (s[0] == '-' || s[0] == '+') {
        negative = s[0] == '-';
        i = 1;
    }
    uint64_t mantissa = 0;
    int digits = 0, frac = 0, seen_dot = 0, simple = i < n;
    for (; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            if (mantissa || c != '0') digits++;
            mantissa = mantissa * 10 + (uint64_t)(c - '0');
            if (seen_dot) frac++;
            if (digits > 15 || frac > 22) { simple = 0; break; }
        } else if (c == '.' && !seen_dot) {
            seen_dot = 1;
        } else {
            simple = 0;
            break;
        }
    }
    if (simple && (i > (size_t)(s[0] == '-' || s[0] == '+') + (size_t)seen_dot)) {
        double v = (double)mantissa / POW10[frac];
        *out = negative ? -v : v;
        return 0;
    }
    char tmp[128];
    if (n >= sizeof tmp) return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end = NULL;
    double v = strtod(tmp, &end);
    if (end != tmp + n || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int parse_long(const char *s, size_t n, int64_t *out) {
    size_t i = 0;
    int negative = 0;
    if (n && (s[0] == '-' || s[0] == '+')) {
        negative = s[0] == '-';
        i = 1;
    }
    if (i >= n || n - i > 18) return -1;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = negative ? -v : v;
    return 0;
}

static inline int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static PyObject *error_tuple(int code, Py_ssize_t line, const char *field, size_t n) {
    return Py_BuildValue("(siny#)", "error", code, line, field ? field : "", (Py_ssize_t)(field ? n : 0));
}


/* A column written straight into a bytes object sized for the worst case, shrunk once at the end. */
typedef struct {
    PyObject *bytes;
    char *at;
} Column;

static int column_open(Column *c, Py_ssize_t size) {
    c->bytes = PyBytes_FromStringAndSize(NULL, size > 0 ? size : 1);
    c->at = c->bytes ? PyBytes_AS_STRING(c->bytes) : NULL;
    return c->bytes ? 0 : -1;
}

static PyObject *column_close(Column *c) {
    Py_ssize_t used = c->at - PyBytes_AS_STRING(c->bytes);
    if (_PyBytes_Resize(&c->bytes, used)) return NULL;
    PyObject *out = c->bytes;
    c->bytes = NULL;
    return out;
}

#define PUT(col, value, type)                 \
    do {                                      \
        type v_ = (value);                    \
        memcpy((col).at, &v_, sizeof(type));  \
        (col).at += sizeof(type);             \
    } while (0)

/* parse(data: bytes-like, kind: 0 run / 1 qrels) -> dict of buffers, or ("error", code, line, field). */
static PyObject *parse(PyObject *self, PyObject *args) {
    Py_buffer view;
    int kind;
    if (!PyArg_ParseTuple(args, "y*i", &view, &kind)) return NULL;
    const char *p = view.buf, *end = p + view.len;
    const int need = kind == KIND_RUN ? 6 : 4;
    const int doc_field = 2, value_field = kind == KIND_RUN ? 4 : 3;

    Py_ssize_t rows = 1;
    for (const char *c = p; (c = memchr(c, '\n', (size_t)(end - c))) != NULL; c++) rows++;

    Column qcode = {0}, offsets = {0}, docs = {0}, values = {0}, ranks = {0}, keys = {0};
    PyObject *qid_codes = PyDict_New(), *qids = PyList_New(0), *result = NULL;
    const char *last_tag = NULL, *last_q = NULL;
    size_t last_tag_len = 0, last_q_len = 0;
    int32_t last_code = -1;
    Py_ssize_t line = 0;
    if (!qid_codes || !qids || column_open(&qcode, rows * 4) || column_open(&offsets, (rows + 1) * 8) ||
        column_open(&docs, view.len) || column_open(&values, rows * 8) ||
        column_open(&ranks, kind == KIND_RUN ? rows * 8 : 0) || column_open(&keys, rows * 8))
        goto fail;
    PUT(offsets, 0, int64_t);
    int64_t doc_bytes = 0;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        line++;
        const char *start[MAX_FIELDS];
        size_t len[MAX_FIELDS];
        int nf = 0;
        const char *c = p;
        while (nf < MAX_FIELDS) {
            while (c < eol && is_blank(*c)) c++;
            if (c >= eol) break;
            start[nf] = c;
            while (c < eol && !is_blank(*c)) c++;
            len[nf] = (size_t)(c - start[nf]);
            nf++;
        }
        p = eol + 1;
        if (nf == 0 || start[0][0] == '#') continue;
        if (nf < need) {
            result = Py_BuildValue("(sini)", "error", ERR_FIELDS, line, nf);
            goto done;
        }
        /* query id: runs are grouped by query, so compare with the previous line before the dict */
        int32_t code;
        if (last_q && len[0] == last_q_len && memcmp(start[0], last_q, last_q_len) == 0) {
            code = last_code;
        } else {
            PyObject *key = PyBytes_FromStringAndSize(start[0], (Py_ssize_t)len[0]);
            if (!key) goto fail;
            PyObject *found = PyDict_GetItemWithError(qid_codes, key);
            if (found) {
                code = (int32_t)PyLong_AsLong(found);
            } else if (PyErr_Occurred()) {
                Py_DECREF(key);
                goto fail;
            } else {
                code = (int32_t)PyList_GET_SIZE(qids);
                PyObject *number = PyLong_FromLong(code);
                if (!number || PyDict_SetItem(qid_codes, key, number) || PyList_Append(qids, key)) {
                    Py_XDECREF(number);
                    Py_DECREF(key);
                    goto fail;
                }
                Py_DECREF(number);
            }
            Py_DECREF(key);
            last_q = start[0];
            last_q_len = len[0];
            last_code = code;
        }
        PUT(qcode, code, int32_t);
        memcpy(docs.at, start[doc_field], len[doc_field]);
        docs.at += len[doc_field];
        doc_bytes += (int64_t)len[doc_field];
        PUT(offsets, doc_bytes, int64_t);
        PUT(keys, pair_hash(start[0], len[0], start[doc_field], len[doc_field]), uint64_t);
        if (kind == KIND_RUN) {
            double score;
            if (parse_double(start[value_field], len[value_field], &score)) {
                result = error_tuple(ERR_SCORE, line, start[value_field], len[value_field]);
                goto done;
            }
            int64_t rank;
            if (parse_long(start[3], len[3], &rank)) rank = INT64_MIN;
            PUT(values, score, double);
            PUT(ranks, rank, int64_t);
            last_tag = start[5];
            last_tag_len = len[5];
        } else {
            int64_t label;
            if (parse_long(start[value_field], len[value_field], &label) || label > INT32_MAX ||
                label < INT32_MIN) {
                result = error_tuple(ERR_LABEL, line, start[value_field], len[value_field]);
                goto done;
            }
            PUT(values, (int32_t)label, int32_t);
        }
    }
    {
        PyObject *q = column_close(&qcode), *o = column_close(&offsets), *d = column_close(&docs),
                 *v = column_close(&values), *r = column_close(&ranks), *k = column_close(&keys);
        if (q && o && d && v && r && k)
            result = Py_BuildValue("{s:O,s:N,s:N,s:N,s:N,s:N,s:N,s:y#}", "qids", qids, "qcode", q, "doc_offsets", o,
                                   "doc_data", d, "values", v, "ranks", r, "keys", k, "tag",
                                   last_tag ? last_tag : "", (Py_ssize_t)(last_tag ? last_tag_len : 0));
        else {
            Py_XDECREF(q); Py_XDECREF(o); Py_XDECREF(d); Py_XDECREF(v); Py_XDECREF(r); Py_XDECREF(k);
        }
    }
    goto done;
fail:
    result = NULL;
done:
    Py_XDECREF(qcode.bytes);
    Py_XDECREF(offsets.bytes);
    Py_XDECREF(docs.bytes);
    Py_XDECREF(values.bytes);
    Py_XDECREF(ranks.bytes);
    Py_XDECREF(keys.bytes);
    Py_XDECREF(qid_codes);
    Py_XDECREF(qids);
    PyBuffer_Release(&view);
    return result;
}

/* hash_pairs(qid_offsets, qid_data, doc_offsets, doc_data) -> bytes of uint64 keys, as parse computes them.
 * Offsets are int64 buffers of n + 1 entries. */
static PyObject *hash_pairs(PyObject *self, PyObject *args) {
    Py_buffer qo, qd, dof, dd;
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &qo, &qd, &dof, &dd)) return NULL;
    Py_ssize_t n = dof.len / (Py_ssize_t)sizeof(int64_t) - 1;
    PyObject *out = NULL;
    if (n < 0 || qo.len != dof.len) {
        PyErr_SetString(PyExc_ValueError, "offset buffers must both hold n + 1 int64 values");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint64_t));
    if (!out) goto done;
    const int64_t *qoff = qo.buf, *doff = dof.buf;
    const char *qdata = qd.buf, *ddata = dd.buf;
    uint64_t *keys = (uint64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++)
        keys[i] = pair_hash(qdata + qoff[i], (size_t)(qoff[i + 1] - qoff[i]), ddata + doff[i],
                            (size_t)(doff[i + 1] - doff[i]));
done:
    PyBuffer_Release(&qo);
    PyBuffer_Release(&qd);
    PyBuffer_Release(&dof);
    PyBuffer_Release(&dd);
    return out;
}

/* first_duplicate(qcode int32 bytes, keys uint64 bytes, n_queries) -> index of the first row whose
 * (query, doc) key repeats an earlier row of the same query; -1 if none; -2 if a query's rows are not
 * contiguous (the caller then checks another way). One small hash set per query block: cache friendly. */
static PyObject *first_duplicate(PyObject *self, PyObject *args) {
    Py_buffer qb, kb;
    Py_ssize_t n_queries;
    if (!PyArg_ParseTuple(args, "y*y*n", &qb, &kb, &n_queries)) return NULL;
    const int32_t *q = qb.buf;
    const uint64_t *k = kb.buf;
    Py_ssize_t n = kb.len / (Py_ssize_t)sizeof(uint64_t), answer = -1;
    unsigned char *seen = calloc((size_t)n_queries + 1, 1);
    uint64_t *table = NULL;
    unsigned char *used = NULL;
    size_t cap = 0;
    if (!seen) goto memory;
    for (Py_ssize_t i = 0; i < n && answer == -1;) {
        Py_ssize_t j = i;
        while (j < n && q[j] == q[i]) j++;
        if (q[i] < 0 || q[i] >= n_queries || seen[q[i]]) { answer = -2; break; }
        seen[q[i]] = 1;
        size_t want = 16;
        while (want < (size_t)(j - i) * 2) want *= 2;
        if (want > cap) {
            free(table);
            free(used);
            table = malloc(want * sizeof *table);
            used = malloc(want);
            if (!table || !used) goto memory;
            cap = want;
        }
        memset(used, 0, want);
        for (Py_ssize_t r = i; r < j; r++) {
            size_t slot = (size_t)k[r] & (want - 1);
            while (used[slot] && table[slot] != k[r]) slot = (slot + 1) & (want - 1);
            if (used[slot]) { answer = r; break; }
            used[slot] = 1;
            table[slot] = k[r];
        }
        i = j;
    }
    free(seen);
    free(table);
    free(used);
    PyBuffer_Release(&qb);
    PyBuffer_Release(&kb);
    return PyLong_FromSsize_t(answer);
memory:
    free(seen);
    free(table);
    free(used);
    PyBuffer_Release(&qb);
    PyBuffer_Release(&kb);
    return PyErr_NoMemory();
}

/* take_strings(offsets int64, data, rows int64) -> (offsets bytes, data bytes) of the rows in that order. */
static PyObject *take_strings(PyObject *self, PyObject *args) {
    Py_buffer ob, db, rb;
    if (!PyArg_ParseTuple(args, "y*y*y*", &ob, &db, &rb)) return NULL;
    const int64_t *off = ob.buf, *rows = rb.buf;
    const char *data = db.buf;
    Py_ssize_t n_in = ob.len / (Py_ssize_t)sizeof(int64_t) - 1, n = rb.len / (Py_ssize_t)sizeof(int64_t);
    PyObject *offsets_out = NULL, *data_out = NULL, *result = NULL;
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (rows[i] < 0 || rows[i] >= n_in) {
            PyErr_SetString(PyExc_IndexError, "row out of range");
            goto done;
        }
        total += off[rows[i] + 1] - off[rows[i]];
    }
    offsets_out = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    data_out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!offsets_out || !data_out) goto done;
    int64_t *o = (int64_t *)PyBytes_AS_STRING(offsets_out);
    char *d = PyBytes_AS_STRING(data_out);
    int64_t at = 0;
    o[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t len = off[rows[i] + 1] - off[rows[i]];
        memcpy(d + at, data + off[rows[i]], (size_t)len);
        at += len;
        o[i + 1] = at;
    }
    result = PyTuple_Pack(2, offsets_out, data_out);
done:
    Py_XDECREF(offsets_out);
    Py_XDECREF(data_out);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    PyBuffer_Release(&rb);
    return result;
}

static PyMethodDef methods[] = {
    {"take_strings", take_strings, METH_VARARGS, "Gather strings stored as offsets + bytes."},
    {"parse", parse, METH_VARARGS, "Parse TREC run (kind 0) or qrels (kind 1) bytes into column buffers."},
    {"hash_pairs", hash_pairs, METH_VARARGS, "64-bit keys of (query id, doc id) pairs, as parse computes."},
    {"first_duplicate", first_duplicate, METH_VARARGS, "First row repeating a (query, doc) key, or -1/-2."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trecparse", NULL, -1, methods};

PyMODINIT_FUNC PyInit__trecparse(void) { return PyModule_Create(&module); }
