/*
 * stagewise._native._rows: per-query row operations on result lists.
 *
 * Why C: these steps resist numpy, which can only sort everything. Joining runs on (query, document) for
 * fusion, and judgements to results for evaluation, is a hash join inside each query, on data that fits in
 * the cache. Putting fused rows in trec_eval's order (score descending, then doc id descending in byte order)
 * needs a comparison that falls back to the doc id string on a tie, which RRF produces for nearly every row:
 * one vectorised sort of packed keys does most of it, and a pass here settles the ties.
 *
 * Strings are Arrow-style columns, int64 offsets (n + 1) into one byte buffer. A function that reads strings
 * takes a sequence of (offsets, data) columns read as one ("sources"): column k's row i is row base[k] + i,
 * so the runs being fused need not be copied into one column first.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------------------------------------- strings */

typedef struct {
    Py_ssize_t m, step;              /* step: the largest power of two below m (0 when m == 1) */
    Py_buffer *offsets, *data;       /* m each */
    const int64_t **off;             /* m: the offsets, for reading */
    const unsigned char **bytes;     /* m: the data, for reading */
    int64_t *base;                   /* m + 1: column k holds rows base[k]..base[k + 1] */
} Sources;

static void sources_close(Sources *s) {
    for (Py_ssize_t k = 0; k < s->m; k++) {
        if (s->offsets && s->offsets[k].obj) PyBuffer_Release(&s->offsets[k]);
        if (s->data && s->data[k].obj) PyBuffer_Release(&s->data[k]);
    }
    free(s->offsets);
    free(s->data);
    free(s->off);
    free(s->bytes);
    free(s->base);
    s->offsets = s->data = NULL;
    s->off = NULL;
    s->bytes = NULL;
    s->base = NULL;
}

/* Open a sequence of (offsets int64, data) pairs; 0 on success, -1 with an exception set. */
static int sources_open(Sources *s, PyObject *seq) {
    memset(s, 0, sizeof *s);
    Py_ssize_t m = PySequence_Size(seq);
    if (m < 0) return -1;
    s->offsets = calloc((size_t)m + 1, sizeof *s->offsets);
    s->data = calloc((size_t)m + 1, sizeof *s->data);
    s->off = calloc((size_t)m + 1, sizeof *s->off);
    s->bytes = calloc((size_t)m + 1, sizeof *s->bytes);
    s->base = calloc((size_t)m + 1, sizeof *s->base);
    if (!s->offsets || !s->data || !s->off || !s->bytes || !s->base) {
        sources_close(s);
        PyErr_NoMemory();
        return -1;
    }
    s->m = m;
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *item = PySequence_GetItem(seq, k);
        if (!item) goto fail;
        int ok = PyArg_ParseTuple(item, "y*y*", &s->offsets[k], &s->data[k]);
        Py_DECREF(item);
        if (!ok) goto fail;
        Py_ssize_t rows = s->offsets[k].len / (Py_ssize_t)sizeof(int64_t) - 1;
        const int64_t *off = s->offsets[k].buf;
        /* offsets never decrease (StringColumn's invariant); the ends are checked */
        if (rows < 0 || off[0] < 0 || off[rows] > s->data[k].len) {
            PyErr_SetString(PyExc_ValueError, "string offsets must hold n + 1 values within the data");
            goto fail;
        }
        s->off[k] = off;
        s->bytes[k] = s->data[k].buf;
        s->base[k + 1] = s->base[k] + rows;
    }
    s->step = 0;
    while (s->step * 2 < m) s->step = s->step ? s->step * 2 : 1;
    if (s->step >= m) s->step /= 2;
    return 0;
fail:
    sources_close(s);
    return -1;
}

static inline int64_t sources_rows(const Sources *s) { return s->base[s->m]; }

/* The bytes of global row ``row`` (0 <= row < sources_rows). The column is found by a branch-free binary
 * search: rows of fused runs alternate between columns at random, and a branch on that would mispredict half
 * the time. */
static inline const unsigned char *locate(const Sources *s, int64_t row, int64_t *len) {
    Py_ssize_t k = 0; /* the last column whose base is <= row (an empty column shares its base with the next) */
    for (Py_ssize_t step = s->step; step > 0; step >>= 1) {
        Py_ssize_t next = k + step;
        k = (next < s->m && s->base[next] <= row) ? next : k;
    }
    const int64_t *off = s->off[k];
    int64_t i = row - s->base[k];
    *len = off[i + 1] - off[i];
    return s->bytes[k] + off[i];
}

/* Eight bytes as a big-endian word, whose integer order is their byte order on any machine (compilers turn
 * the loop into one load and a byte swap). */
static inline uint64_t big_endian_word(const unsigned char *p) {
    uint64_t w = 0;
    for (int k = 0; k < 8; k++) w = w << 8 | p[k];
    return w;
}

/* Byte-order comparison of two strings, as strcmp orders them (a prefix sorts first). */
static inline int compare_strings(const Sources *s, int64_t a, int64_t b) {
    int64_t la, lb;
    const unsigned char *pa = locate(s, a, &la), *pb = locate(s, b, &lb);
    if (la >= 8 && lb >= 8) { /* most ids differ in their first eight bytes: compare them as one word */
        uint64_t wa = big_endian_word(pa), wb = big_endian_word(pb);
        if (wa != wb) return (wa > wb) - (wa < wb);
    }
    int c = memcmp(pa, pb, (size_t)(la < lb ? la : lb));
    if (c) return c;
    return (la > lb) - (la < lb);
}

/* gather_strings(sources, rows int64[, through int64]) -> (offsets bytes, data bytes): the strings of ``rows``
 * in that order; with through, of rows[through[i]] (saves the caller a gathered copy of rows). */
static PyObject *gather_strings(PyObject *self, PyObject *args) {
    PyObject *seq;
    Py_buffer rb, tb = {0};
    if (!PyArg_ParseTuple(args, "Oy*|y*", &seq, &rb, &tb)) return NULL;
    Sources src;
    PyObject *offsets_out = NULL, *data_out = NULL, *result = NULL;
    if (sources_open(&src, seq) < 0) {
        PyBuffer_Release(&rb);
        if (tb.obj) PyBuffer_Release(&tb);
        return NULL;
    }
    const int64_t *rows = rb.buf, *through = tb.buf;
    Py_ssize_t n_rows = rb.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t n = through ? tb.len / (Py_ssize_t)sizeof(int64_t) : n_rows;
    int64_t total = 0, len;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (through && (through[i] < 0 || through[i] >= n_rows)) {
            PyErr_SetString(PyExc_IndexError, "row out of range");
            goto done;
        }
        int64_t row = through ? rows[through[i]] : rows[i];
        if (row < 0 || row >= sources_rows(&src)) {
            PyErr_SetString(PyExc_IndexError, "row out of range");
            goto done;
        }
        locate(&src, row, &len);
        if (len < 0) {
            PyErr_SetString(PyExc_ValueError, "string offsets must not decrease");
            goto done;
        }
        total += len;
    }
    offsets_out = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    data_out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!offsets_out || !data_out) goto done;
    int64_t *o = (int64_t *)PyBytes_AS_STRING(offsets_out);
    char *d = PyBytes_AS_STRING(data_out);
    int64_t at = 0;
    o[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *p = locate(&src, through ? rows[through[i]] : rows[i], &len);
        memcpy(d + at, p, (size_t)len);
        at += len;
        o[i + 1] = at;
    }
    result = PyTuple_Pack(2, offsets_out, data_out);
done:
    Py_XDECREF(offsets_out);
    Py_XDECREF(data_out);
    sources_close(&src);
    PyBuffer_Release(&rb);
    if (tb.obj) PyBuffer_Release(&tb);
    return result;
}

/* ----------------------------------------------------------------------------------- evaluation order */

/* The bits of a double, mapped so that unsigned order is descending score order; -0.0 maps as 0.0. */
static inline uint64_t descending_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    if ((u << 1) == 0) u = 0; /* -0.0 as 0.0, in bits (x + 0.0 would not survive -ffast-math) */
    u ^= (u >> 63) ? ~(uint64_t)0 : (uint64_t)1 << 63; /* ascending order */
    return ~u;
}

/* A score as trec_eval 9 and pytrec_eval hold it: rounded to a C float, so scores that differ only beyond
 * single precision tie (and are then ordered by doc id). Out of float range is infinity, as IEEE rounding has
 * it; tested before the cast because C leaves converting an out-of-range double to float undefined. */
static inline double as_single(double x) {
    if (x >= 0x1.ffffffp127) return INFINITY;
    if (x <= -0x1.ffffffp127) return -INFINITY;
    return (double)(float)x;
}

static int bit_width(uint64_t v) {
    int b = 0;
    while (b < 64 && (v >> b)) b++;
    return b;
}

/* sort_keys(query int32 (n), n_queries, scores float64 (n), single) -> (bytearray of n uint64 keys, index bits)
 *
 * Why: ordering ~100 results per query by score is a job for one vectorised sort of everything (numpy's
 * sort of uint64), not for a comparison sort per query, whose branch on random scores is a coin flip. Each
 * row's key packs its query code (top bits), the top bits of its score in descending order, and its row
 * number (bottom index-bits bits), so sorting the keys groups rows by query (whatever their input order),
 * orders them by score up to the truncation, and keeps every key distinct. settle_order finishes the job
 * where the truncation ties. With ``single``, scores are compared as C floats (as_single). Returns None
 * when query and row numbers leave fewer than 16 bits for the score
 * (over 2^48 rows and queries together); the caller then sorts another way. */
static PyObject *sort_keys(PyObject *self, PyObject *args) {
    Py_buffer qb, scb;
    Py_ssize_t n_queries;
    int single;
    if (!PyArg_ParseTuple(args, "y*ny*p", &qb, &n_queries, &scb, &single)) return NULL;
    const int32_t *query = qb.buf;
    const double *score = scb.buf;
    Py_ssize_t n = scb.len / (Py_ssize_t)sizeof(double);
    PyObject *out = NULL, *result = NULL;
    if (qb.len / (Py_ssize_t)sizeof(int32_t) != n || n_queries < 0) {
        PyErr_SetString(PyExc_ValueError, "one query code per score");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (query[i] < 0 || query[i] >= n_queries) {
            PyErr_SetString(PyExc_IndexError, "query code out of range");
            goto done;
        }
    }
    int index_bits = bit_width((uint64_t)(n > 0 ? n - 1 : 0));
    int query_bits = bit_width((uint64_t)(n_queries > 0 ? n_queries - 1 : 0));
    int score_bits = 64 - index_bits - query_bits;
    if (score_bits < 16) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint64_t)); /* writable: sorted in place */
    if (!out) goto done;
    uint64_t *key = (uint64_t *)PyByteArray_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t top = query_bits ? (uint64_t)query[i] << (64 - query_bits) : 0;
        double x = single ? as_single(score[i]) : score[i];
        key[i] = top | (descending_bits(x) >> (64 - score_bits) << index_bits) | (uint64_t)i;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("Oi", out, index_bits);
done:
    Py_XDECREF(out);
    PyBuffer_Release(&qb);
    PyBuffer_Release(&scb);
    return result;
}

/* The order of rows within a query: score descending (0.0 and -0.0 tie, as IEEE comparison has them; with
 * ``single``, compared as C floats), then doc id descending in byte order. Doc ids are distinct within a
 * query, so the order is total. */
typedef struct {
    const double *score;
    int single;
    const int64_t *rows; /* each row's string row */
    const Sources *strings;
} RowOrder;

static inline int goes_before(const RowOrder *o, int64_t a, int64_t b) {
    double sa = o->score[a], sb = o->score[b];
    if (o->single) {
        sa = as_single(sa);
        sb = as_single(sb);
    }
    if (sa != sb) return sa > sb;
    return compare_strings(o->strings, o->rows[a], o->rows[b]) > 0;
}

static void insertion_sort(const RowOrder *o, int64_t *a, Py_ssize_t n) {
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t v = a[i];
        Py_ssize_t j = i;
        while (j > 0 && goes_before(o, v, a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* Merge sort for long groups of ties (a run with one score for a whole deep list): insertion sort would be
 * quadratic there. ``tmp`` holds n / 2 + 1 rows. */
static void merge_sort(const RowOrder *o, int64_t *a, int64_t *tmp, Py_ssize_t n) {
    if (n <= 32) {
        insertion_sort(o, a, n);
        return;
    }
    Py_ssize_t h = n / 2;
    merge_sort(o, a, tmp, h);
    merge_sort(o, a + h, tmp, n - h);
    if (!goes_before(o, a[h], a[h - 1])) return; /* the halves are already in order */
    memcpy(tmp, a, (size_t)h * sizeof *a);
    Py_ssize_t i = 0, j = h, k = 0;
    while (i < h && j < n) a[k++] = goes_before(o, a[j], tmp[i]) ? a[j++] : tmp[i++];
    while (i < h) a[k++] = tmp[i++];
}

/* settle_order(sorted keys uint64 (n, writable), index bits, scores float64 (n), sources, str_rows int64 (n),
 *              single)
 *   -> None; the keys become the rows (int64) in trec_eval's order, in place.
 *
 * Each sorted key gives its row (bottom bits); rows whose keys agree above the row number share a query and
 * a truncated score, and are put in order by full score descending, then doc id (string str_rows[row])
 * descending: insertion sort for the usual small groups (ties, mostly pairs), merge sort for long ones. In
 * place because the keys are dead once read, and a second buffer of n rows costs page faults on every call. */
static PyObject *settle_order(PyObject *self, PyObject *args) {
    Py_buffer kb, scb, rb;
    PyObject *seq;
    int index_bits, single;
    if (!PyArg_ParseTuple(args, "w*iy*Oy*p", &kb, &index_bits, &scb, &seq, &rb, &single)) return NULL;
    Sources s;
    if (sources_open(&s, seq) < 0) {
        PyBuffer_Release(&kb);
        PyBuffer_Release(&scb);
        PyBuffer_Release(&rb);
        return NULL;
    }
    uint64_t *key = kb.buf;
    int64_t *order = kb.buf; /* the same buffer: position i is read as a key before it is written as a row */
    const int64_t *rows = rb.buf;
    Py_ssize_t n = kb.len / (Py_ssize_t)sizeof(uint64_t);
    int64_t n_str = sources_rows(&s);
    RowOrder by = {scb.buf, single, rows, &s};
    int64_t *tmp = NULL;
    Py_ssize_t tmp_cap = 0;
    PyObject *result = NULL;
    if (index_bits < 0 || index_bits > 63 || scb.len / (Py_ssize_t)sizeof(double) != n ||
        rb.len / (Py_ssize_t)sizeof(int64_t) != n) {
        PyErr_SetString(PyExc_ValueError, "one key, score and string row per row");
        goto done;
    }
    uint64_t mask = ((uint64_t)1 << index_bits) - 1;
    int bad = 0, no_memory = 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t group = 0;
    Py_ssize_t start = 0; /* first position of the current group of equal truncated keys */
    for (Py_ssize_t i = 0; i <= n; i++) {
        uint64_t high = i < n ? key[i] >> index_bits : 0;
        if (i == n || (i > start && high != group)) { /* a group ends at i: settle it */
            Py_ssize_t g = i - start;
            if (g > 32 && g / 2 + 1 > tmp_cap) {
                free(tmp);
                tmp_cap = g / 2 + 1;
                tmp = malloc((size_t)tmp_cap * sizeof *tmp);
                if (!tmp) {
                    no_memory = 1;
                    break;
                }
            }
            if (g > 32) merge_sort(&by, order + start, tmp, g);
            else if (g > 1) insertion_sort(&by, order + start, g);
            start = i;
            if (i == n) break;
        }
        int64_t v = (int64_t)(key[i] & mask);
        if (v >= n || rows[v] < 0 || rows[v] >= n_str) { /* checked as read: the buffer is spent anyway */
            bad = 1;
            break;
        }
        group = high;
        order[i] = v;
    }
    Py_END_ALLOW_THREADS
    if (no_memory) {
        PyErr_NoMemory();
        goto done;
    }
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "row or string row out of range");
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(tmp);
    sources_close(&s);
    PyBuffer_Release(&kb);
    PyBuffer_Release(&scb);
    PyBuffer_Release(&rb);
    return result;
}

/* An open-addressing hash table of int64 entries (-1: empty slot) keyed by 64-bit pair keys, cleared and
 * reused for each query: at most half full, so probes stay short. */
typedef struct {
    int64_t *slot;
    size_t cap, mask;
} Slots;

/* Clear the table for ``entries`` entries; 0 on success, -1 when memory runs out. */
static int slots_reset(Slots *t, Py_ssize_t entries) {
    size_t want = 16;
    while (want < (size_t)entries * 2) want *= 2;
    if (want > t->cap) {
        free(t->slot);
        t->slot = malloc(want * sizeof *t->slot);
        if (!t->slot) {
            t->cap = 0;
            return -1;
        }
        t->cap = want;
    }
    t->mask = want - 1;
    memset(t->slot, 0xFF, want * sizeof *t->slot);
    return 0;
}

static inline size_t slot_of(const Slots *t, uint64_t key) { return (size_t)(key ^ (key >> 32)) & t->mask; }

/* One part of a join: a run's rows (all, or those listed), their query codes and pair keys. */
typedef struct {
    Py_buffer codes, keys, rows; /* rows.buf NULL: every row of the run, in order */
    int64_t base;                /* the run's first row in the string column */
    Py_ssize_t n;
    PyObject *cand;              /* output: each row's candidate (int32 bytes) */
} Part;

static void release_parts(Part *parts, Py_ssize_t m) {
    for (Py_ssize_t p = 0; p < m; p++) {
        if (parts[p].codes.obj) PyBuffer_Release(&parts[p].codes);
        if (parts[p].keys.obj) PyBuffer_Release(&parts[p].keys);
        if (parts[p].rows.obj) PyBuffer_Release(&parts[p].rows);
        Py_XDECREF(parts[p].cand);
    }
    free(parts);
}

static inline int64_t part_row(const Part *part, Py_ssize_t i) {
    return part->base + (part->rows.buf ? ((const int64_t *)part->rows.buf)[i] : (int64_t)i);
}

/* join_pairs(parts, sources)
 *   parts: a sequence of (codes int32, keys uint64, rows int64 or None, base int), one per run; a part's codes
 *   never decrease; its row i is string base + rows[i] (base + i when rows is None).
 * -> (n_candidates, (candidate of each row of each part, int32 bytes, ...), query of each candidate int32,
 *     key of each candidate uint64, string row of each candidate int64)
 *
 * Rows of a query, across all parts, are joined on (key, document string) with one small hash table per
 * query: a key match is confirmed by the strings, so two different documents sharing a key stay apart.
 * Candidates are numbered by query, then by first appearance (part order, then row order). */
static PyObject *join_pairs(PyObject *self, PyObject *args) {
    PyObject *seq, *source_seq;
    if (!PyArg_ParseTuple(args, "OO", &seq, &source_seq)) return NULL;
    Sources s;
    if (sources_open(&s, source_seq) < 0) return NULL;
    int64_t n_str = sources_rows(&s);
    PyObject *query_b = NULL, *key_b = NULL, *home_b = NULL, *cands = NULL, *result = NULL;
    Py_ssize_t *cursor = NULL;
    Slots table = {NULL, 0, 0};
    int64_t n_cand = 0;
    Py_ssize_t total_rows = 0;
    Py_ssize_t m = PySequence_Size(seq);
    Part *parts = m > 0 ? calloc((size_t)m, sizeof *parts) : NULL;
    if (m < 1 || !parts) {
        if (!PyErr_Occurred()) {
            if (m >= 1) PyErr_NoMemory();
            else PyErr_SetString(PyExc_ValueError, "give at least one part");
        }
        goto done;
    }
    for (Py_ssize_t p = 0; p < m; p++) {
        PyObject *item = PySequence_GetItem(seq, p);
        if (!item) goto done;
        PyObject *rows_obj = NULL;
        long long base = 0;
        int ok = PyArg_ParseTuple(item, "y*y*OL", &parts[p].codes, &parts[p].keys, &rows_obj, &base);
        if (ok && rows_obj != Py_None && PyObject_GetBuffer(rows_obj, &parts[p].rows, PyBUF_SIMPLE) < 0) ok = 0;
        Py_DECREF(item);
        if (!ok) goto done;
        Part *part = &parts[p];
        part->base = base;
        part->n = part->keys.len / (Py_ssize_t)sizeof(uint64_t);
        if (part->codes.len / (Py_ssize_t)sizeof(int32_t) != part->n ||
            (part->rows.buf && part->rows.len / (Py_ssize_t)sizeof(int64_t) != part->n)) {
            PyErr_SetString(PyExc_ValueError, "one code, key (and row) per row of a part");
            goto done;
        }
        const int32_t *code = part->codes.buf;
        for (Py_ssize_t i = 0; i < part->n; i++) {
            int64_t row = part_row(part, i);
            if (row < 0 || row >= n_str) {
                PyErr_SetString(PyExc_IndexError, "string row out of range");
                goto done;
            }
            if (i && code[i] < code[i - 1]) {
                PyErr_SetString(PyExc_ValueError, "query codes must not decrease within a part");
                goto done;
            }
        }
        part->cand = PyBytes_FromStringAndSize(NULL, part->n * (Py_ssize_t)sizeof(int32_t));
        if (!part->cand) goto done;
        total_rows += part->n;
    }
    if (total_rows >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "more rows than int32 candidate numbers hold");
        goto done;
    }
    /* at most one candidate per row: sized for that, shrunk at the end */
    query_b = PyBytes_FromStringAndSize(NULL, total_rows * (Py_ssize_t)sizeof(int32_t));
    /* writable: a fused run can take the keys over and reorder them in place */
    key_b = PyByteArray_FromStringAndSize(NULL, total_rows * (Py_ssize_t)sizeof(uint64_t));
    home_b = PyBytes_FromStringAndSize(NULL, total_rows * (Py_ssize_t)sizeof(int64_t));
    cursor = calloc((size_t)m, sizeof *cursor);
    if (!query_b || !key_b || !home_b || !cursor) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int64_t *home = (int64_t *)PyBytes_AS_STRING(home_b);
    int32_t *cquery = (int32_t *)PyBytes_AS_STRING(query_b);
    uint64_t *ckey = (uint64_t *)PyByteArray_AS_STRING(key_b);
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        /* the next query: the smallest code under any cursor, and how many rows the parts give it */
        int have = 0;
        int32_t q = 0;
        for (Py_ssize_t p = 0; p < m; p++) {
            const int32_t *code = parts[p].codes.buf;
            if (cursor[p] < parts[p].n && (!have || code[cursor[p]] < q)) {
                q = code[cursor[p]];
                have = 1;
            }
        }
        if (!have) break;
        Py_ssize_t total = 0;
        for (Py_ssize_t p = 0; p < m; p++) {
            const int32_t *code = parts[p].codes.buf;
            Py_ssize_t end = cursor[p];
            while (end < parts[p].n && code[end] == q) end++;
            total += end - cursor[p];
        }
        if (slots_reset(&table, total)) {
            failed = 1;
            break;
        }
        for (Py_ssize_t p = 0; p < m; p++) {
            const Part *part = &parts[p];
            const int32_t *code = part->codes.buf;
            const uint64_t *key = part->keys.buf;
            int32_t *cand = (int32_t *)PyBytes_AS_STRING(part->cand);
            Py_ssize_t i = cursor[p];
            for (; i < part->n && code[i] == q; i++) {
                int64_t row = part_row(part, i);
                size_t slot = slot_of(&table, key[i]);
                int64_t c;
                while ((c = table.slot[slot]) >= 0) {
                    if (ckey[c] == key[i] && compare_strings(&s, home[c], row) == 0) break;
                    slot = (slot + 1) & table.mask;
                }
                if (c < 0) {
                    c = n_cand++;
                    table.slot[slot] = c;
                    cquery[c] = q;
                    ckey[c] = key[i];
                    home[c] = row;
                }
                cand[i] = (int32_t)c;
            }
            cursor[p] = i;
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    if (_PyBytes_Resize(&query_b, n_cand * (Py_ssize_t)sizeof(int32_t)) < 0 ||
        PyByteArray_Resize(key_b, n_cand * (Py_ssize_t)sizeof(uint64_t)) < 0 ||
        _PyBytes_Resize(&home_b, n_cand * (Py_ssize_t)sizeof(int64_t)) < 0)
        goto done;
    cands = PyTuple_New(m);
    if (!cands) goto done;
    for (Py_ssize_t p = 0; p < m; p++) {
        PyTuple_SET_ITEM(cands, p, parts[p].cand);
        parts[p].cand = NULL;
    }
    result = Py_BuildValue("LOOOO", (long long)n_cand, cands, query_b, key_b, home_b);
done:
    Py_XDECREF(cands);
    Py_XDECREF(query_b);
    Py_XDECREF(key_b);
    Py_XDECREF(home_b);
    free(cursor);
    free(table.slot);
    if (parts) release_parts(parts, m);
    sources_close(&s);
    return result;
}

/* match_pairs(small codes int32, small keys uint64, small sources, large codes int32, large keys uint64,
 *             large sources) -> (large rows int64 bytes, small rows int64 bytes)
 *
 * The (large row, small row) pairs of the same query and the same document: a semi-join of, say, judgements
 * (small) and a run (large). Both sides are grouped by query: the large side's codes never decrease; on the
 * small side a code of -1 marks a row to skip (a query the large side lacks) and the others never decrease.
 * Neither side repeats a document within a query (runs and qrels refuse that). Per query, the small side's
 * keys go in a hash table and the large side's rows probe it; a key match is confirmed by the strings. */
static PyObject *match_pairs(PyObject *self, PyObject *args) {
    Py_buffer scb, skb, lcb, lkb;
    PyObject *small_seq, *large_seq;
    if (!PyArg_ParseTuple(args, "y*y*Oy*y*O", &scb, &skb, &small_seq, &lcb, &lkb, &large_seq)) return NULL;
    Sources small, large;
    int opened = 0;
    PyObject *large_out = NULL, *small_out = NULL, *result = NULL;
    Slots table = {NULL, 0, 0};
    if (sources_open(&small, small_seq) < 0) goto release;
    opened = 1;
    if (sources_open(&large, large_seq) < 0) goto release;
    opened = 2;
    const int32_t *scode = scb.buf, *lcode = lcb.buf;
    const uint64_t *skey = skb.buf, *lkey = lkb.buf;
    Py_ssize_t n_s = skb.len / (Py_ssize_t)sizeof(uint64_t), n_l = lkb.len / (Py_ssize_t)sizeof(uint64_t);
    if (scb.len / (Py_ssize_t)sizeof(int32_t) != n_s || lcb.len / (Py_ssize_t)sizeof(int32_t) != n_l ||
        sources_rows(&small) != n_s || sources_rows(&large) != n_l) {
        PyErr_SetString(PyExc_ValueError, "one code, key and string per row on each side");
        goto release;
    }
    int32_t last = -1;
    for (Py_ssize_t i = 0; i < n_s; i++) {
        if (scode[i] < -1 || (scode[i] >= 0 && scode[i] < last)) {
            PyErr_SetString(PyExc_ValueError, "small side: codes must be -1 or never decrease");
            goto release;
        }
        if (scode[i] >= 0) last = scode[i];
    }
    for (Py_ssize_t j = 0; j < n_l; j++) {
        if (lcode[j] < 0 || (j && lcode[j] < lcode[j - 1])) {
            PyErr_SetString(PyExc_ValueError, "large side: codes must be >= 0 and never decrease");
            goto release;
        }
    }
    /* each small row matches at most one large row: n_s bounds the output */
    large_out = PyBytes_FromStringAndSize(NULL, n_s * (Py_ssize_t)sizeof(int64_t));
    small_out = PyBytes_FromStringAndSize(NULL, n_s * (Py_ssize_t)sizeof(int64_t));
    if (!large_out || !small_out) goto release;
    int64_t *lrows = (int64_t *)PyBytes_AS_STRING(large_out), *srows = (int64_t *)PyBytes_AS_STRING(small_out);
    Py_ssize_t found = 0, i = 0, j = 0;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    while (j < n_l && i < n_s) {
        int32_t q = lcode[j];
        Py_ssize_t j_end = j;
        while (j_end < n_l && lcode[j_end] == q) j_end++;
        while (i < n_s && scode[i] < q) i++; /* -1 rows and queries the large side lacks */
        Py_ssize_t i_end = i, count = 0;
        while (i_end < n_s && (scode[i_end] == q || scode[i_end] == -1)) count += scode[i_end++] == q;
        if (count) {
            if (slots_reset(&table, count)) {
                failed = 1;
                break;
            }
            for (Py_ssize_t r = i; r < i_end; r++) {
                if (scode[r] != q) continue;
                size_t slot = slot_of(&table, skey[r]);
                while (table.slot[slot] >= 0) slot = (slot + 1) & table.mask;
                table.slot[slot] = r;
            }
            for (Py_ssize_t r = j; r < j_end; r++) {
                size_t slot = slot_of(&table, lkey[r]);
                int64_t hit;
                while ((hit = table.slot[slot]) >= 0) {
                    if (skey[hit] == lkey[r]) {
                        int64_t la, lb;
                        const unsigned char *pa = locate(&small, hit, &la), *pb = locate(&large, r, &lb);
                        if (la == lb && memcmp(pa, pb, (size_t)la) == 0) {
                            if (found < n_s) {
                                lrows[found] = r;
                                srows[found] = hit;
                            }
                            found++;
                            break;
                        }
                    }
                    slot = (slot + 1) & table.mask;
                }
            }
        }
        i = i_end;
        j = j_end;
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto release;
    }
    if (found > n_s) {
        PyErr_SetString(PyExc_ValueError, "a document repeats within a query");
        goto release;
    }
    if (_PyBytes_Resize(&large_out, found * (Py_ssize_t)sizeof(int64_t)) < 0 ||
        _PyBytes_Resize(&small_out, found * (Py_ssize_t)sizeof(int64_t)) < 0)
        goto release;
    result = PyTuple_Pack(2, large_out, small_out);
release:
    Py_XDECREF(large_out);
    Py_XDECREF(small_out);
    free(table.slot);
    if (opened >= 1) sources_close(&small);
    if (opened >= 2) sources_close(&large);
    PyBuffer_Release(&scb);
    PyBuffer_Release(&skb);
    PyBuffer_Release(&lcb);
    PyBuffer_Release(&lkb);
    return result;
}

/* -------------------------------------------------------------------------------------------- TREC lines */

/* A score as polars' CSV writer spells a double (the bytes stagewise's TREC writer has always written): the
 * shortest digits that read back as the same double (Python's repr digits, from PyOS_double_to_string), laid
 * out positionally when the decimal exponent e of d.ddd x 10^e is in [-5, 16) ("0.00001", "123.0"), else as
 * "d.ddde+16" / "de-7" (no padding of the exponent); "NaN", "inf", "-inf"; zero keeps its sign ("-0.0").
 * Writes at most 32 bytes to out; returns the length, or -1 with an exception set. */
static int layout_score(const char *digits, int count, int e, int n, char *out);

/* The shortest digits of a double that some n x 10^-k (0 <= k <= 22, n < 10^15) reads back as, found without
 * big-number arithmetic: both n and 10^k are exact doubles, so n / 10^k is the correctly rounded value of that
 * decimal, what strtod gives. Below 10^15, decimals 10^-k apart are more than 4 ulps apart, so at most one of
 * them reads back as x, and the first k that has one gives the fewest digits (repr's). Run files' scores, with
 * their few decimals, take this path; 0 when it does not apply (the caller asks dtoa). */
static int short_decimal(double ax, char *digits, int *e) {
    static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (!(ax < 1e15)) return 0;
    for (int k = 0; k <= 22; k++) {
        double scaled = ax * pow10[k];
        if (scaled >= 1e15) return 0;
        double guess = nearbyint(scaled); /* within one of the exact product's nearest integer */
        for (int d = 0; d < 3; d++) {
            double n = guess + (d == 0 ? 0.0 : d == 1 ? -1.0 : 1.0);
            if (n < 1.0 || n / pow10[k] != ax) continue;
            char tmp[24];
            int len = 0;
            for (uint64_t v = (uint64_t)n; v; v /= 10) tmp[len++] = (char)('0' + v % 10);
            int count = 0;
            for (int i = len - 1; i >= 0; i--) digits[count++] = tmp[i];
            *e = len - 1 - k;
            while (count > 1 && digits[count - 1] == '0') count--;
            return count;
        }
    }
    return 0;
}

static int shortest_score(double x, char *out) {
    if (isnan(x)) return (int)(memcpy(out, "NaN", 3), 3);
    if (isinf(x)) return x > 0 ? (int)(memcpy(out, "inf", 3), 3) : (int)(memcpy(out, "-inf", 4), 4);
    int n = 0;
    if (signbit(x)) out[n++] = '-';
    if (x == 0.0) return (int)(memcpy(out + n, "0.0", 3), n + 3);
    char quick[24];
    int e, count = short_decimal(fabs(x), quick, &e);
    if (count) return layout_score(quick, count, e, n, out);
    char *text = PyOS_double_to_string(x, 'r', 0, 0, NULL);
    if (!text) return -1;
    /* text: [-]digits[.digits][e(+|-)digits]; the significant digits, and p: how many of them precede the
     * decimal point (negative or past the end when the point lies outside them) */
    char digits[24];
    int point = -1, p = 0, exp10 = 0;
    count = 0;
    const char *c = text + (text[0] == '-');
    for (; *c && *c != 'e'; c++) {
        if (*c == '.') {
            point = count;
            continue;
        }
        if (count == 0 && *c == '0') { /* a leading zero; after the point, it moves the digits right */
            if (point >= 0) p--;
            continue;
        }
        if (count < (int)sizeof digits) digits[count++] = *c;
    }
    p += point < 0 ? count : point;
    if (*c == 'e') exp10 = atoi(c + 1);
    PyMem_Free(text);
    while (count > 1 && digits[count - 1] == '0') count--;
    e = p - 1 + exp10; /* value = d1.d2... x 10^e */
    return layout_score(digits, count, e, n, out);
}

/* digits (count of them, no trailing zero but a lone "0") x 10^e laid out after the n bytes already in out */
static int layout_score(const char *digits, int count, int e, int n, char *out) {
    if (e >= -5 && e < 16) {
        if (e < 0) {
            out[n++] = '0';
            out[n++] = '.';
            for (int k = -1; k > e; k--) out[n++] = '0';
            memcpy(out + n, digits, (size_t)count);
            return n + count;
        }
        for (int k = 0; k <= e; k++) out[n++] = k < count ? digits[k] : '0';
        out[n++] = '.';
        if (count > e + 1) {
            memcpy(out + n, digits + e + 1, (size_t)(count - e - 1));
            return n + count - e - 1;
        }
        out[n++] = '0';
        return n;
    }
    out[n++] = digits[0];
    if (count > 1) {
        out[n++] = '.';
        memcpy(out + n, digits + 1, (size_t)(count - 1));
        n += count - 1;
    }
    n += sprintf(out + n, e > 0 ? "e+%d" : "e%d", e);
    return n;
}

/* Scores repeat a lot in fused runs (RRF gives every query the same few sums), so each formatted score is
 * kept in a small direct-mapped table keyed by its bits. */
#define SCORE_CACHE 16384
typedef struct {
    uint64_t bits[SCORE_CACHE];
    unsigned char len[SCORE_CACHE]; /* 0: empty */
    char text[SCORE_CACHE][32];
} ScoreCache;

static inline int cached_score(ScoreCache *cache, double x, char *out) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    size_t slot = (size_t)((bits ^ (bits >> 29) ^ (bits >> 47)) & (SCORE_CACHE - 1));
    if (cache->len[slot] && cache->bits[slot] == bits) {
        memcpy(out, cache->text[slot], 32);
        return cache->len[slot];
    }
    int n = shortest_score(x, out);
    if (n > 0) {
        cache->bits[slot] = bits;
        cache->len[slot] = (unsigned char)n;
        memcpy(cache->text[slot], out, (size_t)n);
    }
    return n;
}

static inline int decimal(int64_t v, char *out) { /* v >= 0 */
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int k = 0; k < n; k++) out[k] = tmp[n - 1 - k];
    return n;
}

/* format_score(x) -> bytes: one score as trec_lines writes it (for tests). */
static PyObject *format_score(PyObject *self, PyObject *args) {
    double x;
    if (!PyArg_ParseTuple(args, "d", &x)) return NULL;
    char out[40];
    int n = shortest_score(x, out);
    return n < 0 ? NULL : PyBytes_FromStringAndSize(out, n);
}

/* trec_lines(query_ids (offsets, data), row_offsets int64, docs (offsets, data), scores float64, tag bytes,
 * start, stop) -> bytes: the TREC lines "qid Q0 doc rank score tag\n" of queries start..stop-1, whose rows are
 * row_offsets[q]..row_offsets[q + 1] (ranks count from 1 within each query). */
static PyObject *trec_lines(PyObject *self, PyObject *args) {
    PyObject *qseq, *dseq;
    Py_buffer ob, sb, tb;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "Oy*Oy*y*nn", &qseq, &ob, &dseq, &sb, &tb, &start, &stop)) return NULL;
    Sources queries, docs;
    int opened = 0;
    PyObject *result = NULL;
    ScoreCache *cache = NULL;
    if (sources_open(&queries, qseq) < 0) goto done;
    opened = 1;
    if (sources_open(&docs, dseq) < 0) goto done;
    opened = 2;
    const int64_t *rows = ob.buf;
    const double *scores = sb.buf;
    Py_ssize_t n_queries = ob.len / (Py_ssize_t)sizeof(int64_t) - 1;
    int64_t n_rows = sb.len / (Py_ssize_t)sizeof(double);
    if (n_queries != sources_rows(&queries) || start < 0 || stop > n_queries || start > stop ||
        (n_queries >= 0 && (rows[0] < 0 || rows[n_queries] > n_rows || rows[n_queries] > sources_rows(&docs)))) {
        PyErr_SetString(PyExc_ValueError, "trec_lines: offsets, ids, docs and scores do not match");
        goto done;
    }
    /* an upper bound of the output: every row's fixed parts plus its strings */
    int64_t bound = 0;
    for (Py_ssize_t q = start; q < stop; q++) {
        if (rows[q + 1] < rows[q]) {
            PyErr_SetString(PyExc_ValueError, "trec_lines: row offsets must not decrease");
            goto done;
        }
        int64_t qlen, first = rows[q], last = rows[q + 1];
        locate(&queries, q, &qlen);
        bound += (last - first) * (qlen + (int64_t)tb.len + 3 + 20 + 40 + 5);
        if (last > first) {
            int64_t a, b;
            const unsigned char *pa = locate(&docs, first, &a), *pb = locate(&docs, last - 1, &b);
            /* rows of one column are contiguous; across columns, add each row's length */
            if (docs.m == 1) bound += (int64_t)(pb + b - pa);
            else
                for (int64_t i = first; i < last; i++) bound += (locate(&docs, i, &a), a);
        }
    }
    /* one table for the module, kept between calls (a stream of small query groups reuses it); the GIL,
     * held throughout, keeps calls from sharing it at once */
    static ScoreCache *kept = NULL;
    if (!kept) kept = calloc(1, sizeof *kept);
    cache = kept;
    if (!cache) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bound);
    if (!result) goto done;
    char *w = PyBytes_AS_STRING(result);
    for (Py_ssize_t q = start; q < stop; q++) {
        int64_t qlen;
        const unsigned char *qid = locate(&queries, q, &qlen);
        for (int64_t i = rows[q]; i < rows[q + 1]; i++) {
            int64_t dlen;
            const unsigned char *doc = locate(&docs, i, &dlen);
            memcpy(w, qid, (size_t)qlen);
            w += qlen;
            memcpy(w, " Q0 ", 4);
            w += 4;
            memcpy(w, doc, (size_t)dlen);
            w += dlen;
            *w++ = ' ';
            w += decimal(i - rows[q] + 1, w);
            *w++ = ' ';
            int n = cached_score(cache, scores[i], w);
            if (n < 0) {
                Py_CLEAR(result);
                goto done;
            }
            w += n;
            *w++ = ' ';
            memcpy(w, tb.buf, (size_t)tb.len);
            w += tb.len;
            *w++ = '\n';
        }
    }
    _PyBytes_Resize(&result, (Py_ssize_t)(w - PyBytes_AS_STRING(result)));
done:
    if (opened >= 1) sources_close(&queries);
    if (opened >= 2) sources_close(&docs);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&tb);
    return result;
}

static PyMethodDef methods[] = {
    {"gather_strings", gather_strings, METH_VARARGS, "The strings of some rows of one or more columns."},
    {"sort_keys", sort_keys, METH_VARARGS, "Keys whose sort orders rows by query, then truncated score."},
    {"settle_order", settle_order, METH_VARARGS,
     "Sorted keys to rows in place, with truncation ties put in score then doc id order."},
    {"join_pairs", join_pairs, METH_VARARGS, "Join parts of rows on (query, key, document string)."},
    {"match_pairs", match_pairs, METH_VARARGS, "Rows of two sides with the same query and document."},
    {"format_score", format_score, METH_VARARGS, "One score as trec_lines writes it (shortest round trip)."},
    {"trec_lines", trec_lines, METH_VARARGS, "TREC run lines of a range of queries, as one bytes object."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rows(void) { return PyModule_Create(&module); }
