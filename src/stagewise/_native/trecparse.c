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
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define HAVE_MMAP 1
#endif

#define KIND_RUN 0
#define KIND_QRELS 1
#define MAX_FIELDS 7

enum { ERR_FIELDS = 1, ERR_SCORE = 2, ERR_LABEL = 3 };

/* A 64-bit hash of (query id, doc id): the query id's length, then both ids eight bytes at a time, each word
 * multiplied in and folded, finished with splitmix64's mixer. The length keeps ("ab", "c") and ("a", "bc")
 * apart. hash_pairs below computes the same function for ids that did not come through this parser. */
static inline uint64_t absorb(uint64_t h, const unsigned char *s, size_t n) {
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ ((uint64_t)n << 59)) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

static inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The hash state after the query id: a run's rows of one query share it (parse_joined computes it once). */
static inline uint64_t query_hash(const char *q, size_t qn) {
    return absorb(mix(0x5EED0000ULL + (uint64_t)qn), (const unsigned char *)q, qn);
}

static inline uint64_t pair_hash_after(uint64_t query_state, const char *d, size_t dn) {
    return mix(absorb(query_state, (const unsigned char *)d, dn));
}

static inline uint64_t pair_hash(const char *q, size_t qn, const char *d, size_t dn) {
    return pair_hash_after(query_hash(q, qn), d, dn);
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Parse a whole field as a finite double. Short decimals (at most 15 significant digits, no exponent) are
 * exact as integer / 10^k, both exactly representable, so one correctly rounded division gives the same
 * double as strtod (Clinger's fast path); anything else goes to strtod on a NUL-terminated copy. */
static int parse_double(const char *s, size_t n, double *out) {
    if (n == 0) return -1;
    /* the usual score first: a sign, then at most 15 digits and a point (so at most 15 significant digits),
     * read without the general loop's bookkeeping; the same value as below, which takes anything else */
    size_t i0 = s[0] == '-' || s[0] == '+';
    if (n - i0 <= 16 && n > i0) {
        uint64_t v = 0;
        size_t dot = 0, k = i0;
        for (; k < n; k++) {
            unsigned d = (unsigned)(unsigned char)s[k] - '0';
            if (d < 10)
                v = v * 10 + d;
            else if (s[k] == '.' && !dot)
                dot = k + 1;
            else
                break;
        }
        size_t digits = n - i0 - (dot != 0);
        if (k == n && digits > 0 && digits <= 15) {
            double x = (double)v / POW10[dot ? n - dot : 0];
            *out = s[0] == '-' ? -x : x;
            return 0;
        }
    }
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

/* A relevance label: an integer, or a decimal number whose value is an integer ("1.0", as some tools write
 * qrels). trec_eval reads labels with atol, which would also take "2.5" as 2 and "rel" as 0; here those are
 * errors. */
static int parse_label(const char *s, size_t n, int64_t *out) {
    if (!parse_long(s, n, out)) return 0;
    double v;
    if (parse_double(s, n, &v) || v != floor(v) || v > INT32_MAX || v < INT32_MIN) return -1;
    *out = (int64_t)v;
    return 0;
}

static const unsigned char BLANK[256] = {[' '] = 1, ['\t'] = 1, ['\r'] = 1, ['\v'] = 1, ['\f'] = 1};

static inline int is_blank(char c) { return BLANK[(unsigned char)c]; }

static PyObject *error_tuple(int code, Py_ssize_t line, const char *field, size_t n) {
    return Py_BuildValue("(siny#)", "error", code, line, field ? field : "", (Py_ssize_t)(field ? n : 0));
}


/* A column written straight into a bytearray that grows by doubling and is shrunk once at the end, so the
 * parsed columns are never copied, and numpy can fix rows in place (a bytearray is writable). */
typedef struct {
    PyObject *bytes;
    Py_ssize_t used, cap;
} Column;

static int column_open(Column *c, Py_ssize_t cap) {
    c->cap = cap > 64 ? cap : 64;
    c->used = 0;
    c->bytes = PyByteArray_FromStringAndSize(NULL, c->cap);
    return c->bytes ? 0 : -1;
}

static inline int column_put(Column *c, const void *src, Py_ssize_t n) {
    if (c->used + n > c->cap) {
        Py_ssize_t cap = c->cap * 2;
        while (cap < c->used + n) cap *= 2;
        if (PyByteArray_Resize(c->bytes, cap)) return -1;
        c->cap = cap;
    }
    memcpy(PyByteArray_AS_STRING(c->bytes) + c->used, src, (size_t)n);
    c->used += n;
    return 0;
}

static PyObject *column_close(Column *c) {
    if (PyByteArray_Resize(c->bytes, c->used)) return NULL;
    PyObject *out = c->bytes;
    c->bytes = NULL;
    return out;
}

/* Parser state, kept across the chunks of a file read piece by piece. */
typedef struct {
    int kind, need, value_field;
    int padded; /* PAD readable bytes follow every piece (a file read by read_pieces): lines split by vector */
    Column qcode, offsets, docs, values, ranks, keys;
    PyObject *qid_codes, *qids, *error;
    char *last_q, *tag;
    size_t last_q_len, last_q_cap, tag_len, tag_cap;
    int32_t last_code;
    Py_ssize_t line;
    int64_t doc_bytes;
} Parser;

static int keep_copy(char **dst, size_t *cap, size_t *len, const char *src, size_t n) {
    if (n + 1 > *cap) {
        size_t grown = n + 64;
        char *p = realloc(*dst, grown);
        if (!p) return -1;
        *dst = p;
        *cap = grown;
    }
    memcpy(*dst, src, n);
    *len = n;
    return 0;
}

static int parser_open(Parser *ps, int kind, Py_ssize_t rows_hint, Py_ssize_t bytes_hint) {
    memset(ps, 0, sizeof *ps);
    ps->kind = kind;
    ps->need = kind == KIND_RUN ? 6 : 4;
    ps->value_field = kind == KIND_RUN ? 4 : 3;
    ps->last_code = -1;
    ps->qid_codes = PyDict_New();
    ps->qids = PyList_New(0);
    if (!ps->qid_codes || !ps->qids || column_open(&ps->qcode, rows_hint * 4) ||
        column_open(&ps->offsets, (rows_hint + 1) * 8) || column_open(&ps->docs, bytes_hint) ||
        column_open(&ps->values, rows_hint * (kind == KIND_RUN ? 8 : 4)) ||
        column_open(&ps->ranks, kind == KIND_RUN ? rows_hint * 4 : 0) || column_open(&ps->keys, rows_hint * 8))
        return -1;
    int64_t zero = 0;
    return column_put(&ps->offsets, &zero, sizeof zero);
}

static void parser_close(Parser *ps) {
    Py_XDECREF(ps->qcode.bytes);
    Py_XDECREF(ps->offsets.bytes);
    Py_XDECREF(ps->docs.bytes);
    Py_XDECREF(ps->values.bytes);
    Py_XDECREF(ps->ranks.bytes);
    Py_XDECREF(ps->keys.bytes);
    Py_XDECREF(ps->qid_codes);
    Py_XDECREF(ps->qids);
    Py_XDECREF(ps->error);
    free(ps->last_q);
    free(ps->tag);
}

static int query_code(Parser *ps, const char *q, size_t n, int32_t *code) {
    /* runs are grouped by query: compare with the previous line before asking the dict */
    if (ps->last_q && n == ps->last_q_len && memcmp(q, ps->last_q, n) == 0) {
        *code = ps->last_code;
        return 0;
    }
    PyObject *key = PyBytes_FromStringAndSize(q, (Py_ssize_t)n);
    if (!key) return -1;
    PyObject *found = PyDict_GetItemWithError(ps->qid_codes, key);
    if (found) {
        *code = (int32_t)PyLong_AsLong(found);
    } else if (PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    } else {
        *code = (int32_t)PyList_GET_SIZE(ps->qids);
        PyObject *number = PyLong_FromLong(*code);
        if (!number || PyDict_SetItem(ps->qid_codes, key, number) || PyList_Append(ps->qids, key)) {
            Py_XDECREF(number);
            Py_DECREF(key);
            return -1;
        }
        Py_DECREF(number);
    }
    Py_DECREF(key);
    ps->last_code = *code;
    return keep_copy(&ps->last_q, &ps->last_q_cap, &ps->last_q_len, q, n);
}

static inline int split_window(const char *p, const char *end, const char **eol, const char **start, size_t *len,
                               int *nf_out, int *odd);

/* Parse the complete lines in [p, end). Returns 0, 1 when the input is bad (ps->error set), -1 on a
 * Python error. */
static int parse_lines_into(Parser *ps, const char *p, const char *end, const char **last_tag, size_t *last_tag_len) {
    const int doc_field = 2;
    while (p < end) {
        const char *eol, *start[MAX_FIELDS];
        size_t len[MAX_FIELDS];
        int nf = 0, odd; /* odd: not looked at here (the reader checks the ids' encoding) */
        ps->line++;
        if (!ps->padded || !split_window(p, end, &eol, start, len, &nf, &odd)) {
            eol = memchr(p, '\n', (size_t)(end - p));
            if (!eol) eol = end;
            const char *c = p;
            while (nf < MAX_FIELDS) {
                while (c < eol && is_blank(*c)) c++;
                if (c >= eol) break;
                start[nf] = c;
                while (c < eol && !is_blank(*c)) c++;
                len[nf] = (size_t)(c - start[nf]);
                nf++;
            }
        }
        p = eol + 1;
        if (nf == 0 || start[0][0] == '#') continue;
        if (nf < ps->need) {
            ps->error = Py_BuildValue("(sini)", "error", ERR_FIELDS, ps->line, nf);
            return ps->error ? 1 : -1;
        }
        int32_t code;
        if (query_code(ps, start[0], len[0], &code)) return -1;
        const int vf = ps->value_field;
        uint64_t key = pair_hash(start[0], len[0], start[doc_field], len[doc_field]);
        ps->doc_bytes += (int64_t)len[doc_field];
        if (column_put(&ps->qcode, &code, sizeof code) ||
            column_put(&ps->docs, start[doc_field], (Py_ssize_t)len[doc_field]) ||
            column_put(&ps->offsets, &ps->doc_bytes, sizeof ps->doc_bytes) || column_put(&ps->keys, &key, sizeof key))
            return -1;
        if (ps->kind == KIND_RUN) {
            double score;
            if (parse_double(start[vf], len[vf], &score)) {
                ps->error = error_tuple(ERR_SCORE, ps->line, start[vf], len[vf]);
                return ps->error ? 1 : -1;
            }
            int64_t parsed_rank;
            int32_t rank = INT32_MIN; /* not an integer: the rank column is unusable (trec_eval ignores it) */
            if (!parse_long(start[3], len[3], &parsed_rank) && parsed_rank > INT32_MIN && parsed_rank <= INT32_MAX)
                rank = (int32_t)parsed_rank;
            if (column_put(&ps->values, &score, sizeof score) || column_put(&ps->ranks, &rank, sizeof rank))
                return -1;
            *last_tag = start[5];
            *last_tag_len = len[5];
        } else {
            int64_t label;
            if (parse_label(start[vf], len[vf], &label) || label > INT32_MAX || label < INT32_MIN) {
                ps->error = error_tuple(ERR_LABEL, ps->line, start[vf], len[vf]);
                return ps->error ? 1 : -1;
            }
            int32_t small = (int32_t)label;
            if (column_put(&ps->values, &small, sizeof small)) return -1;
        }
    }
    return 0;
}

/* Parse the complete lines in [p, end); the run id of the last line is copied once, at the end. */
static int parse_lines(Parser *ps, const char *p, const char *end) {
    const char *last_tag = NULL;
    size_t last_tag_len = 0;
    int status = parse_lines_into(ps, p, end, &last_tag, &last_tag_len);
    if (status == 0 && last_tag && keep_copy(&ps->tag, &ps->tag_cap, &ps->tag_len, last_tag, last_tag_len))
        return -1;
    return status;
}

static PyObject *parser_result(Parser *ps) {
    PyObject *q = column_close(&ps->qcode), *o = column_close(&ps->offsets), *d = column_close(&ps->docs),
             *v = column_close(&ps->values), *r = column_close(&ps->ranks), *k = column_close(&ps->keys), *out = NULL;
    if (q && o && d && v && r && k)
        out = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:y#}", "qids", ps->qids, "qcode", q, "doc_offsets", o,
                            "doc_data", d, "values", v, "ranks", r, "keys", k, "tag", ps->tag ? ps->tag : "",
                            (Py_ssize_t)(ps->tag ? ps->tag_len : 0));
    Py_XDECREF(q);
    Py_XDECREF(o);
    Py_XDECREF(d);
    Py_XDECREF(v);
    Py_XDECREF(r);
    Py_XDECREF(k);
    return out;
}

/* parse(data: bytes-like, kind: 0 run / 1 qrels) -> dict of buffers, or ("error", code, line, field). */
static PyObject *parse(PyObject *self, PyObject *args) {
    Py_buffer view;
    int kind;
    if (!PyArg_ParseTuple(args, "y*i", &view, &kind)) return NULL;
    const char *begin = view.buf, *end = begin + view.len;
    Py_ssize_t rows = 1;
    for (const char *c = begin; (c = memchr(c, '\n', (size_t)(end - c))) != NULL; c++) rows++;
    Parser ps;
    PyObject *result = NULL;
    if (parser_open(&ps, kind, rows, view.len) == 0) {
        int status = parse_lines(&ps, begin, end);
        if (status == 1) {
            result = ps.error;
            ps.error = NULL;
        } else if (status == 0) {
            result = parser_result(&ps);
        }
    }
    parser_close(&ps);
    PyBuffer_Release(&view);
    return result;
}

typedef int (*LinesFn)(void *state, const char *p, const char *end);

/* Bytes past a piece's end that may be read (zeros past the data read): a line's first 64 bytes are split
 * with vector compares (split_window) wherever it starts. */
#define PAD 64

#define PIECE ((size_t)16 << 20)

#ifdef HAVE_MMAP
/* A regular file mapped read-only: its lines before stop are read from the mapping (their last 64 bytes and
 * more lie inside it, as the vector splitting needs); the lines after it, from a padded copy (mapping_tail). A
 * file cut short while it is read ends the process (SIGBUS), as with every reader that maps files. */
typedef struct {
    char *map;
    size_t size, stop, page;
} Mapping;

/* 0, or 2 when the file cannot be mapped (the caller reads it instead). */
static int mapping_open(Mapping *m, int fd, size_t size) {
    if (size == 0) return 2;
    m->map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m->map == MAP_FAILED) return 2;
    madvise(m->map, size, MADV_SEQUENTIAL);
    m->size = size;
    m->page = (size_t)sysconf(_SC_PAGESIZE);
    m->stop = 0;
    for (size_t i = size > PAD ? size - PAD : 0; i-- > 0;)
        if (m->map[i] == '\n') {
            m->stop = i + 1;
            break;
        }
    return 0;
}

/* The lines in [from, to) (both lines' starts, to <= stop) handed to fn 16 MB at a time, without copying them;
 * the pages read are dropped from the mapping behind, so resident memory stays about one piece: fn's first
 * non-zero status. Needs no Python (the joined parse calls it without the GIL). */
static int mapping_lines(const Mapping *m, size_t from, size_t to, LinesFn fn, void *state) {
    size_t at = from, dropped = from / m->page * m->page;
    int status = 0;
    while (status == 0 && at < to) {
        const char *end = m->map + (at + PIECE < to ? at + PIECE : to);
        while (end > m->map + at && end[-1] != '\n') end--; /* to is a line's start: the loop ends before at */
        if (end == m->map + at) end = m->map + to;          /* one line longer than a piece */
        status = fn(state, m->map + at, end);
        at = (size_t)(end - m->map);
        size_t done = at / m->page * m->page;
        if (done > dropped) {
            madvise(m->map + dropped, done - dropped, MADV_DONTNEED);
            dropped = done;
        }
    }
    return status;
}

/* The lines after stop, from a copy with PAD zero bytes after it: fn's status, or -1 out of memory (no Python
 * error set: the caller sets it, holding the GIL). */
static int mapping_tail(const Mapping *m, LinesFn fn, void *state) {
    if (m->stop >= m->size) return 0;
    char *tail = calloc(m->size - m->stop + PAD, 1);
    if (!tail) return -1;
    memcpy(tail, m->map + m->stop, m->size - m->stop);
    int status = fn(state, tail, tail + (m->size - m->stop));
    free(tail);
    return status;
}

static void mapping_close(Mapping *m) { munmap(m->map, m->size); }

/* A regular file's lines handed to fn from its mapping: fn's first non-zero status, -1 with a Python error set,
 * or 2 when it cannot be mapped. */
static int map_pieces(int fd, size_t size, LinesFn fn, void *state) {
    Mapping m;
    if (mapping_open(&m, fd, size)) return 2;
    int status = mapping_lines(&m, 0, m.stop, fn, state);
    if (status == 0) status = mapping_tail(&m, fn, state);
    mapping_close(&m);
    if (status == -1 && !PyErr_Occurred()) PyErr_NoMemory();
    return status;
}
#endif

/* Hand a file's complete lines to fn, 16 MB at a time (a line longer than the buffer grows it), so the whole
 * file is never held: fn's first non-zero status (1: bad input), or -1 with a Python error set. A regular file
 * large enough is mapped (map_pieces: no copy through a buffer); anything else is read. */
static int read_pieces(FILE *f, PyObject *path_bytes, LinesFn fn, void *state) {
#ifdef HAVE_MMAP
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= PIECE / 4) {
        int mapped = map_pieces(fileno(f), (size_t)st.st_size, fn, state);
        if (mapped != 2) return mapped;
    }
#endif
    size_t cap = PIECE, held = 0;
    char *buf = malloc(cap + PAD);
    if (!buf) {
        PyErr_NoMemory();
        return -1;
    }
    int status = 0, at_end = 0;
    while (status == 0 && !at_end) {
        if (held == cap) { /* a single line longer than the buffer: grow it */
            char *grown = realloc(buf, cap * 2 + PAD);
            if (!grown) {
                PyErr_NoMemory();
                status = -1;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + held, 1, cap - held, f);
        held += got;
        memset(buf + held, 0, PAD);
        if (got == 0) {
            if (ferror(f)) {
                PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_bytes);
                status = -1;
                break;
            }
            at_end = 1;
        }
        const char *last = at_end ? buf + held : NULL;
        if (!at_end)
            for (size_t i = held; i > 0; i--)
                if (buf[i - 1] == '\n') {
                    last = buf + i;
                    break;
                }
        if (!last) continue; /* no complete line yet */
        status = fn(state, buf, last);
        size_t rest = held - (size_t)(last - buf);
        memmove(buf, last, rest);
        held = rest;
    }
    free(buf);
    return status;
}

static int parser_lines(void *state, const char *p, const char *end) { return parse_lines(state, p, end); }

/* parse_file(path, kind) -> as parse, reading the file in pieces so the whole file is never held. */
static PyObject *parse_file(PyObject *self, PyObject *args) {
    PyObject *path_bytes = NULL, *result = NULL;
    int kind;
    if (!PyArg_ParseTuple(args, "O&i", PyUnicode_FSConverter, &path_bytes, &kind)) return NULL;
    FILE *f = fopen(PyBytes_AS_STRING(path_bytes), "rb");
    if (!f) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_bytes);
        Py_DECREF(path_bytes);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    Parser ps;
    int status = parser_open(&ps, kind, size > 0 ? size / 32 : 1024, size > 0 ? size / 4 : 1 << 16);
    ps.padded = 1;
    if (status == 0) status = read_pieces(f, path_bytes, parser_lines, &ps);
    if (status == 1) {
        result = ps.error;
        ps.error = NULL;
    } else if (status == 0) {
        result = parser_result(&ps);
    }
    parser_close(&ps);
    fclose(f);
    Py_DECREF(path_bytes);
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

/* A score as trec_eval 9 holds it (a C float), by IEEE round-to-nearest: beyond the float range it rounds to
 * +-FLT_MAX or to infinity, as numpy's astype(float32) gives (a plain cast out of range is undefined in C). */
static inline float as_single(double s) {
    const double overflow = 340282356779733661637539395458142568448.0; /* 2^128 - 2^103: rounds to inf */
    double a = fabs(s);
    if (a <= (double)FLT_MAX) return (float)s;
    if (a < overflow) return s < 0 ? -FLT_MAX : FLT_MAX;
    return s < 0 ? -INFINITY : INFINITY;
}

/* Keys of one query block, in a table whose slots are stamped with the block's number: starting a block
 * costs nothing (no clearing); the table doubles when half full, re-inserting the block's keys. */
typedef struct {
    uint64_t *key;
    uint32_t *stamp;
    size_t cap, used;
    uint32_t block;
} BlockSet;

static int blockset_grow(BlockSet *s, size_t cap, const uint64_t *keys, Py_ssize_t from, Py_ssize_t to);

/* The keys a table holds before it doubles: an eighth of its slots while it is small (fewer collisions: a probe
 * is then one slot, its branch predicted), half beyond 65,536 slots, so a block of millions of rows costs 24
 * bytes a row. */
static inline size_t blockset_most(const BlockSet *s) { return s->cap <= ((size_t)1 << 16) ? s->cap / 8 : s->cap / 2; }

/* 1: key was already in the block; 0: added; -1: out of memory. */
static int blockset_add(BlockSet *s, uint64_t k, const uint64_t *keys, Py_ssize_t from, Py_ssize_t row) {
    if (s->used + 1 > blockset_most(s) && blockset_grow(s, s->cap ? s->cap * 2 : 1024, keys, from, row)) return -1;
    size_t mask = s->cap - 1, slot = (size_t)mix(k) & mask;
    while (s->stamp[slot] == s->block) {
        if (s->key[slot] == k) return 1;
        slot = (slot + 1) & mask;
    }
    s->stamp[slot] = s->block;
    s->key[slot] = k;
    s->used++;
    return 0;
}

/* The table emptied at cap slots (every stamp 0, block 1: no slot belongs to the block until re-inserted). */
static int blockset_realloc(BlockSet *s, size_t cap) {
    free(s->key);
    free(s->stamp);
    s->key = malloc(cap * sizeof *s->key);
    s->stamp = calloc(cap, sizeof *s->stamp);
    if (!s->key || !s->stamp) return -1;
    s->cap = cap;
    s->used = 0;
    s->block = 1;
    return 0;
}

static int blockset_grow(BlockSet *s, size_t cap, const uint64_t *keys, Py_ssize_t from, Py_ssize_t to) {
    if (blockset_realloc(s, cap)) return -1;
    for (Py_ssize_t r = from; r < to; r++) blockset_add(s, keys[r], keys, from, r); /* no repeats: checked */
    return 0;
}

static void blockset_next(BlockSet *s) {
    s->used = 0;
    if (++s->block == 0) { /* stamps wrapped around: clear them once */
        memset(s->stamp, 0, s->cap * sizeof *s->stamp);
        s->block = 1;
    }
}

/* run_layout(codes int32, scores float64, keys uint64, n_codes) -> (grouped, ordered, tied, repeat, starts).
 * One pass over a run's columns in input order, for the checks and the reordering of Run.from_columns:
 * grouped: every code's rows are contiguous; ordered: within each block the scores, compared as C floats
 * (trec_eval 9), never rise; tied: int64 bytes, each row i (in input order) whose score ties row i + 1's in
 * the same block (collected while ordered); repeat: the first row whose key repeats an earlier key of its
 * block (a possible duplicate document; -1: none), -2 when not grouped; starts: int64 bytes, each code's
 * first row (-1: no row). */
static PyObject *run_layout(PyObject *self, PyObject *args) {
    Py_buffer cb, sb, kb;
    Py_ssize_t n_codes;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &cb, &sb, &kb, &n_codes)) return NULL;
    const int32_t *code = cb.buf;
    const double *score = sb.buf;
    const uint64_t *key = kb.buf;
    Py_ssize_t n = cb.len / (Py_ssize_t)sizeof(int32_t), repeat = -1, block_from = 0;
    int grouped = 1, ordered = 1;
    PyObject *out = NULL;
    Column tied = {0}, starts = {0};
    BlockSet set = {0};
    if (sb.len != n * (Py_ssize_t)sizeof(double) || kb.len != n * (Py_ssize_t)sizeof(uint64_t) || n_codes < 0) {
        PyErr_SetString(PyExc_ValueError, "codes, scores and keys must have one entry per row");
        goto done;
    }
    if (column_open(&tied, 1024) || column_open(&starts, (n_codes + 1) * 8)) goto done;
    int64_t *start = (int64_t *)PyByteArray_AS_STRING(starts.bytes);
    for (Py_ssize_t c = 0; c < n_codes; c++) start[c] = -1;
    starts.used = n_codes * 8;
    float previous = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t c = code[i];
        float now = as_single(score[i]);
        if (c < 0 || c >= n_codes) {
            PyErr_SetString(PyExc_ValueError, "a query code is out of range");
            goto done;
        }
        if (i == 0 || c != code[i - 1]) {
            if (start[c] != -1) grouped = 0; /* the query's rows started earlier: not contiguous */
            start[c] = i;
            block_from = i;
            blockset_next(&set);
        } else if (ordered) {
            if (now > previous) {
                ordered = 0;
            } else if (now == previous) {
                int64_t at = i - 1;
                if (column_put(&tied, &at, sizeof at)) goto done;
            }
        }
        previous = now;
        if (grouped && repeat == -1) {
            int seen = blockset_add(&set, key[i], key, block_from, i);
            if (seen < 0) {
                PyErr_NoMemory();
                goto done;
            }
            if (seen) repeat = i;
        }
    }
    PyObject *t = column_close(&tied), *st = column_close(&starts);
    if (t && st)
        out = Py_BuildValue("(iiOnO)", grouped, ordered, t, grouped ? repeat : (Py_ssize_t)-2, st);
    Py_XDECREF(t);
    Py_XDECREF(st);
done:
    Py_XDECREF(tied.bytes);
    Py_XDECREF(starts.bytes);
    free(set.key);
    free(set.stamp);
    PyBuffer_Release(&cb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&kb);
    return out;
}

/* Blocks of rows given as (first row, length) in their new order, checked to cover all n rows exactly once
 * in total length (the caller builds them from a permutation of query blocks). */
static int blocks_valid(const int64_t *start, const int64_t *len, Py_ssize_t k, Py_ssize_t n) {
    int64_t total = 0;
    for (Py_ssize_t b = 0; b < k; b++) {
        if (start[b] < 0 || len[b] < 0 || start[b] + len[b] > n) return 0;
        total += len[b];
    }
    return total == n;
}

/* move_blocks(column (writable), itemsize, starts int64, lengths int64): the column's blocks of rows laid
 * out again in the given order, in place. One copy of the column is held meanwhile, not one of every
 * column at once, so a run's peak memory grows by its largest column only. */
static PyObject *move_blocks(PyObject *self, PyObject *args) {
    Py_buffer cb, sb, lb;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "w*ny*y*", &cb, &width, &sb, &lb)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t k = sb.len / (Py_ssize_t)sizeof(int64_t), n = width > 0 ? cb.len / width : -1;
    const int64_t *start = sb.buf, *len = lb.buf;
    char *copy = NULL;
    if (n < 0 || lb.len != sb.len || n * width != cb.len || !blocks_valid(start, len, k, n)) {
        PyErr_SetString(PyExc_ValueError, "the blocks must cover the column's rows");
        goto done;
    }
    copy = malloc((size_t)cb.len + 1);
    if (!copy) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(copy, cb.buf, (size_t)cb.len);
    char *out = cb.buf;
    for (Py_ssize_t b = 0; b < k; b++) {
        size_t bytes = (size_t)(len[b] * width);
        memcpy(out, copy + start[b] * width, bytes);
        out += bytes;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(copy);
    PyBuffer_Release(&cb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&lb);
    return result;
}

/* move_string_blocks(offsets int64 (writable), data (writable), starts, lengths): as move_blocks for a string
 * column: the bytes of each block move as one span, then the offsets are rewritten; one copy of the data,
 * then one of the offsets, is held meanwhile. */
static PyObject *move_string_blocks(PyObject *self, PyObject *args) {
    Py_buffer ob, db, sb, lb;
    if (!PyArg_ParseTuple(args, "w*w*y*y*", &ob, &db, &sb, &lb)) return NULL;
    PyObject *result = NULL;
    int64_t *off = ob.buf;
    Py_ssize_t n = ob.len / (Py_ssize_t)sizeof(int64_t) - 1, k = sb.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *start = sb.buf, *len = lb.buf;
    char *copy = NULL;
    if (n < 0 || lb.len != sb.len || !blocks_valid(start, len, k, n) || off[0] < 0 || off[n] > db.len ||
        off[n] < off[0]) {
        PyErr_SetString(PyExc_ValueError, "the blocks must cover the column's rows");
        goto done;
    }
    copy = malloc((size_t)(off[n] - off[0]) + 1);
    if (!copy) {
        PyErr_NoMemory();
        goto done;
    }
    char *data = db.buf;
    memcpy(copy, data + off[0], (size_t)(off[n] - off[0]));
    int64_t at = off[0];
    for (Py_ssize_t b = 0; b < k; b++) {
        int64_t lo = off[start[b]], hi = off[start[b] + len[b]];
        memcpy(data + at, copy + (lo - off[0]), (size_t)(hi - lo));
        at += hi - lo;
    }
    free(copy);
    copy = malloc(((size_t)n + 1) * sizeof *off);
    if (!copy) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *was = memcpy(copy, off, ((size_t)n + 1) * sizeof *off);
    Py_ssize_t row = 0;
    at = was[0];
    for (Py_ssize_t b = 0; b < k; b++) {
        int64_t lo = was[start[b]];
        for (int64_t j = 0; j < len[b]; j++) off[row + j] = at + (was[start[b] + j] - lo);
        at += was[start[b] + len[b]] - lo;
        row += len[b];
    }
    off[n] = at;
    result = Py_None;
    Py_INCREF(result);
done:
    free(copy);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&lb);
    return result;
}

/* rewrite_rows(offsets int64 (writable), data (writable), rows int64 ascending, sources int64): row rows[i]
 * takes the string that row sources[i] holds now. Every block of consecutive rows must be a permutation of
 * itself (as when tied results are re-ordered), so each block keeps its byte span and nothing moves outside. */
static PyObject *rewrite_rows(PyObject *self, PyObject *args) {
    Py_buffer ob, db, rb, sb;
    if (!PyArg_ParseTuple(args, "w*w*y*y*", &ob, &db, &rb, &sb)) return NULL;
    int64_t *off = ob.buf;
    char *data = db.buf;
    const int64_t *rows = rb.buf, *sources = sb.buf;
    Py_ssize_t n = rb.len / (Py_ssize_t)sizeof(int64_t);
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) total += off[sources[i] + 1] - off[sources[i]];
    char *tmp = malloc((size_t)total + 1);
    int64_t *lens = malloc(((size_t)n + 1) * sizeof *lens);
    PyObject *result = NULL;
    if (!tmp || !lens) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        lens[i] = off[sources[i] + 1] - off[sources[i]];
        memcpy(tmp + at, data + off[sources[i]], (size_t)lens[i]);
        at += lens[i];
    }
    at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t pos = off[rows[i]];
        memcpy(data + pos, tmp + at, (size_t)lens[i]);
        off[rows[i] + 1] = pos + lens[i];
        at += lens[i];
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(tmp);
    free(lens);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    PyBuffer_Release(&rb);
    PyBuffer_Release(&sb);
    return result;
}

/* ---- The joined parse: a run file read straight into what evaluation needs -------------------------------
 *
 * parse_joined(path, keys, qcodes, doc_offsets, doc_data, judged_queries) reads a TREC run in pieces and joins
 * each row to the qrels while its document id is still in the read buffer, so no document id is kept: per
 * query (numbered by first appearance) its number of rows, and per judged row its query, its rank in
 * trec_eval 9's order (score descending compared as C floats, then doc id descending) and its qrels row. The
 * qrels come as their stored columns (pair keys, query codes, doc id offsets and bytes) and a dict from query
 * id bytes to qrels query code. It takes only the runs the general path would store without sorting: every
 * query's rows contiguous and in score order, no (query, doc) key repeated within a query, every field ASCII
 * and without NUL, no bad line. Anything else returns ("decline", reason, line) and the caller reads the run
 * the general way, which gives the same numbers slowly or the error that names the line. */

typedef struct { /* one row of the current tie group */
    size_t doc_at, doc_len, order;
    int32_t rank;
    int64_t qrow;
} Member;

/* A growable buffer of C memory: the joined parse runs without the GIL, so it holds no Python object. */
typedef struct {
    char *p;
    size_t used, cap;
} CBuf;

static int cbuf_put(CBuf *b, const void *src, size_t n) {
    if (b->used + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->used + n) cap *= 2;
        char *grown = realloc(b->p, cap);
        if (!grown) return -1;
        b->p = grown;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->used, src, n);
    b->used += n;
    return 0;
}

/* Query ids, each with a value, found by their query_hash: the ids' bytes and offsets in order of addition, and
 * an open-addressing table of their indexes (-1: an empty slot), at most half full. */
typedef struct {
    CBuf bytes, offsets, hashes, values; /* offsets: int64, one more than the ids; hashes uint64, values int64 */
    int32_t *slot;
    size_t cap;
    int32_t count;
} IdTable;

static int idtable_init(IdTable *t) {
    memset(t, 0, sizeof *t);
    int64_t zero = 0;
    return cbuf_put(&t->offsets, &zero, sizeof zero);
}

static void idtable_free(IdTable *t) {
    free(t->bytes.p);
    free(t->offsets.p);
    free(t->hashes.p);
    free(t->values.p);
    free(t->slot);
}

static inline const char *idtable_id(const IdTable *t, int32_t i, size_t *n) {
    const int64_t *off = (const int64_t *)(const void *)t->offsets.p;
    *n = (size_t)(off[i + 1] - off[i]);
    return t->bytes.p + off[i];
}

static inline int64_t idtable_value(const IdTable *t, int32_t i) {
    return ((const int64_t *)(const void *)t->values.p)[i];
}

/* The index of id (its query_hash h), or -1. */
static int32_t idtable_find(const IdTable *t, uint64_t h, const char *id, size_t n) {
    if (!t->cap) return -1;
    const uint64_t *hashes = (const uint64_t *)(const void *)t->hashes.p;
    for (size_t k = (size_t)mix(h) & (t->cap - 1); t->slot[k] >= 0; k = (k + 1) & (t->cap - 1)) {
        int32_t i = t->slot[k];
        size_t len;
        const char *known = idtable_id(t, i, &len);
        if (hashes[i] == h && len == n && memcmp(known, id, n) == 0) return i;
    }
    return -1;
}

/* id (not already in t) added with its value: its index, or -1 out of memory. */
static int32_t idtable_add(IdTable *t, uint64_t h, const char *id, size_t n, int64_t value) {
    if ((size_t)(t->count + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        int32_t *slot = malloc(cap * sizeof *slot);
        if (!slot) return -1;
        memset(slot, 0xff, cap * sizeof *slot);
        const uint64_t *hashes = (const uint64_t *)(const void *)t->hashes.p;
        for (int32_t i = 0; i < t->count; i++) {
            size_t k = (size_t)mix(hashes[i]) & (cap - 1);
            while (slot[k] >= 0) k = (k + 1) & (cap - 1);
            slot[k] = i;
        }
        free(t->slot);
        t->slot = slot;
        t->cap = cap;
    }
    int64_t end = (int64_t)(t->bytes.used + n);
    if (cbuf_put(&t->bytes, id, n) || cbuf_put(&t->offsets, &end, sizeof end) || cbuf_put(&t->hashes, &h, sizeof h) ||
        cbuf_put(&t->values, &value, sizeof value))
        return -1;
    size_t k = (size_t)mix(h) & (t->cap - 1);
    while (t->slot[k] >= 0) k = (k + 1) & (t->cap - 1);
    t->slot[k] = t->count;
    return t->count++;
}

typedef struct {
    /* the qrels, stored by query: pair keys, query codes, each query's first row, doc ids; an open-addressing
     * table of (key, row) for the queries with many judgements (row -1: an empty slot); their query ids with
     * each one's qrels code. Shared, read only, by the joiners of a file's parts. */
    const uint64_t *qkey;
    const int32_t *qcode;
    const int64_t *qstart, *qoff;
    const char *qdata;
    const struct Judgement { uint64_t key; int64_t row; } *table;
    size_t mask;
    const IdTable *judged;
    int64_t lo, hi; /* the current query's judgements: qrels rows [lo, hi) */
    uint64_t judged_bits; /* bit (key >> 58) of each of them: a row whose bit is clear is not judged */
    /* what is kept: the run's query ids in first-seen order (the value: the line of the query's first row),
     * each query's length, and each judged row's query, rank and qrels row */
    IdTable seen;
    CBuf lengths, judged_query, judged_rank, judged_row;
    /* the current query: its id, codes, rows stored so far, keys (for the repeat check) */
    char *q;
    size_t q_len, q_cap;
    int32_t code, qrels_code;
    int64_t stored;
    uint64_t query_state; /* query_hash of the query id */
    uint64_t *block_keys;
    size_t block_n, block_cap;
    BlockSet set;
    /* the current tie group: rows of the query whose scores equal as C floats, and their doc id bytes */
    Member *group, *spare; /* spare: the merge sort's other half */
    size_t group_n, group_cap, spare_cap;
    char *docs;
    size_t docs_len, docs_cap;
    float group_score;
    /* the run's rank column in stored order: adjacent pairs within a query that rise and fall */
    int ranks_ok, have_prev;
    int32_t prev_rank;
    int64_t up, down, rows;
    Py_ssize_t line;
    const char *decline;
    Py_ssize_t decline_line;
} Joiner;

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t cap2 = *cap ? *cap * 2 : 64;
    while (cap2 < need) cap2 *= 2;
    void *q = realloc(*p, cap2 * size);
    if (!q) return -1;
    *p = q;
    *cap = cap2;
    return 0;
}

/* doc id descending (strcmp on the bytes, a prefix before its extensions), then input order */
static inline int member_before(const Member *x, const Member *y, const char *docs) {
    size_t n = x->doc_len < y->doc_len ? x->doc_len : y->doc_len;
    int c = memcmp(docs + y->doc_at, docs + x->doc_at, n);
    if (c) return c < 0;
    if (x->doc_len != y->doc_len) return x->doc_len > y->doc_len;
    return x->order < y->order;
}

/* Sort a[0..n) by member_before with tmp[0..n) beside it (a merge sort: its order is a total one, and no
 * global comparator state, as qsort would need, is shared by the parts' threads). */
static void sort_members(Member *a, Member *tmp, size_t n, const char *docs) {
    if (n < 2) return;
    if (n <= 8) { /* insertion sort */
        for (size_t i = 1; i < n; i++) {
            Member m = a[i];
            size_t k = i;
            for (; k > 0 && member_before(&m, &a[k - 1], docs); k--) a[k] = a[k - 1];
            a[k] = m;
        }
        return;
    }
    size_t half = n / 2, i = 0, k = half, o = 0;
    sort_members(a, tmp, half, docs);
    sort_members(a + half, tmp + half, n - half, docs);
    while (i < half && k < n) tmp[o++] = member_before(&a[k], &a[i], docs) ? a[k++] : a[i++];
    while (i < half) tmp[o++] = a[i++];
    while (k < n) tmp[o++] = a[k++];
    memcpy(a, tmp, n * sizeof *a);
}

/* Store the tie group: its rows take the query's next places in doc id descending order. 0, or -1 out of
 * memory. */
static int joiner_flush_group(Joiner *j) {
    if (j->group_n > 1) {
        if (grow((void **)&j->spare, &j->spare_cap, j->group_n, sizeof(Member))) return -1;
        sort_members(j->group, j->spare, j->group_n, j->docs);
    }
    for (size_t i = 0; i < j->group_n; i++) {
        const Member *m = &j->group[i];
        int64_t place = j->stored++;
        if (j->have_prev) {
            j->up += m->rank > j->prev_rank;
            j->down += m->rank < j->prev_rank;
        }
        j->prev_rank = m->rank;
        j->have_prev = 1;
        if (m->qrow >= 0) {
            int32_t rank = (int32_t)(place + 1);
            if (cbuf_put(&j->judged_query, &j->code, sizeof j->code) || cbuf_put(&j->judged_rank, &rank, sizeof rank) ||
                cbuf_put(&j->judged_row, &m->qrow, sizeof m->qrow))
                return -1;
        }
    }
    j->group_n = 0;
    j->docs_len = 0;
    return 0;
}

static int joiner_end_query(Joiner *j) {
    if (j->code < 0) return 0;
    if (joiner_flush_group(j)) return -1;
    return cbuf_put(&j->lengths, &j->stored, sizeof j->stored);
}

/* 0: a new query started; 1: declined (its rows came earlier: not grouped); -1: out of memory. */
static int joiner_start_query(Joiner *j, const char *q, size_t n) {
    if (joiner_end_query(j)) return -1;
    uint64_t h = query_hash(q, n);
    if (idtable_find(&j->seen, h, q, n) >= 0) {
        j->decline = "the run's rows of a query are not contiguous";
        return 1;
    }
    int32_t code = idtable_add(&j->seen, h, q, n, (int64_t)j->line);
    if (code < 0) return -1;
    j->code = code;
    int32_t found = idtable_find(j->judged, h, q, n);
    j->qrels_code = found < 0 ? -1 : (int32_t)idtable_value(j->judged, found);
    j->lo = j->qrels_code < 0 ? 0 : j->qstart[j->qrels_code];
    j->hi = j->qrels_code < 0 ? 0 : j->qstart[j->qrels_code + 1];
    j->judged_bits = 0;
    for (int64_t r = j->lo; r < j->hi; r++) j->judged_bits |= 1ULL << (j->qkey[r] >> 58);
    j->stored = 0;
    j->have_prev = 0;
    j->block_n = 0;
    j->query_state = h;
    blockset_next(&j->set);
    return keep_copy(&j->q, &j->q_cap, &j->q_len, q, n);
}

static inline int same_doc(const Joiner *j, int64_t r, const char *doc, size_t n) {
    return (size_t)(j->qoff[r + 1] - j->qoff[r]) == n && memcmp(j->qdata + j->qoff[r], doc, n) == 0;
}

/* The qrels row of (the current query, doc), or -1: keys matched, then confirmed on the bytes. A query's few
 * judgements are scanned (their keys sit together, in cache); a query with many is looked up in the table. */
static int64_t joiner_lookup(const Joiner *j, uint64_t key, const char *doc, size_t n) {
    if (!(j->judged_bits & (1ULL << (key >> 58)))) return -1; /* most rows: no judgement has the key's bit */
    if (j->hi - j->lo <= 16) {
        for (int64_t r = j->lo; r < j->hi; r++)
            if (j->qkey[r] == key && same_doc(j, r, doc, n)) return r;
        return -1;
    }
    for (size_t slot = (size_t)mix(key) & j->mask; j->table[slot].row >= 0; slot = (slot + 1) & j->mask) {
        int64_t r = j->table[slot].row;
        if (j->table[slot].key == key && j->qcode[r] == j->qrels_code && same_doc(j, r, doc, n)) return r;
    }
    return -1;
}

/* Bytes by class: 1 a blank (a field separator, as is_blank), 2 a byte no id of the joined parse may hold (NUL,
 * or not ASCII: the general path checks such ids' encoding and names the line). */
static unsigned char BYTE_CLASS[256];

static void byte_classes(void) {
    for (int b = 0; b < 256; b++) BYTE_CLASS[b] = (unsigned char)(is_blank((char)b) | ((b == 0 || b >= 0x80) << 1));
}

/* A line's fields, split as parse_lines_into splits them; *odd is set when a field holds a NUL or a byte that
 * is not ASCII. */
static int split_fields(const char *p, const char *eol, const char **start, size_t *len, int *odd) {
    int nf = 0;
    unsigned char seen = 0;
    const char *c = p;
    while (nf < MAX_FIELDS) {
        while (c < eol && is_blank(*c)) c++;
        if (c >= eol) break;
        start[nf] = c;
        for (unsigned char k; c < eol && !((k = BYTE_CLASS[(unsigned char)*c]) & 1); c++) seen |= k;
        len[nf] = (size_t)(c - start[nf]);
        nf++;
    }
    *odd = seen != 0;
    return nf;
}

#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>

/* The line at p split as split_fields splits it, from four 16-byte loads (PAD bytes past end are readable):
 * its end (the '\n', or end), fields and odd bytes. 0 when the line is 64 bytes or longer (the caller then
 * splits it byte by byte). */
static inline int split_window(const char *p, const char *end, const char **eol, const char **start, size_t *len,
                               int *nf_out, int *odd) {
    const __m128i lf = _mm_set1_epi8('\n'), space = _mm_set1_epi8(' '), nine = _mm_set1_epi8(9),
                  four = _mm_set1_epi8(4), zero = _mm_setzero_si128();
    uint64_t nl = 0, blank = 0, bad = 0;
    for (int k = 0; k < 4; k++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        __m128i d = _mm_sub_epi8(x, nine);
        __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(d, four), d); /* 9..13: \t \n \v \f \r */
        __m128i is_lf = _mm_cmpeq_epi8(x, lf);
        __m128i is_blank = _mm_or_si128(_mm_andnot_si128(is_lf, control), _mm_cmpeq_epi8(x, space));
        nl |= (uint64_t)(uint16_t)_mm_movemask_epi8(is_lf) << (16 * k);
        blank |= (uint64_t)(uint16_t)_mm_movemask_epi8(is_blank) << (16 * k);
        bad |= (uint64_t)(uint16_t)(_mm_movemask_epi8(x) | _mm_movemask_epi8(_mm_cmpeq_epi8(x, zero))) << (16 * k);
    }
    size_t avail = (size_t)(end - p), n;
    if (avail < 64) nl &= (1ULL << avail) - 1;
    if (nl)
        n = (size_t)__builtin_ctzll(nl);
    else if (avail < 64)
        n = avail;
    else
        return 0;
    blank |= ~((1ULL << n) - 1); /* n < 64: every byte past the line separates */
    /* a field starts at a byte that is not blank after one that is (or at the line's start) and ends at the
     * first blank after it: each bit popped on its own, no chain from one field to the next */
    uint64_t filled = ~blank, starts = filled & ~(filled << 1), ends = blank & (filled << 1);
    int nf = 0;
    for (; starts && nf < MAX_FIELDS; nf++) {
        int s0 = __builtin_ctzll(starts), e0 = __builtin_ctzll(ends); /* e0 <= 63: n < 64 */
        start[nf] = p + s0;
        len[nf] = (size_t)(e0 - s0);
        starts &= starts - 1;
        ends &= ends - 1;
    }
    /* the bytes of the fields kept (those after the last kept field are not looked at, as split_fields) */
    uint64_t in_fields = starts ? filled & ((1ULL << (start[nf - 1] - p + len[nf - 1])) - 1) : filled;
    *eol = p + n;
    *nf_out = nf;
    *odd = (bad & in_fields) != 0;
    return 1;
}
#else
static inline int split_window(const char *p, const char *end, const char **eol, const char **start, size_t *len,
                               int *nf_out, int *odd) {
    return 0;
}
#endif

/* The table of the query's keys twice as large (at least 1024 slots), its keys inserted again: 0, or -1. */
static int joiner_rehash(Joiner *j) {
    BlockSet *s = &j->set;
    size_t cap = s->cap ? s->cap * 2 : 1024;
    if (blockset_realloc(s, cap)) return -1;
    for (size_t i = 0; i < j->block_n; i++) {
        size_t slot = (size_t)j->block_keys[i] & (cap - 1);
        while (s->stamp[slot] == s->block) slot = (slot + 1) & (cap - 1);
        s->stamp[slot] = s->block;
        s->key[slot] = j->block_keys[i];
    }
    return 0;
}

/* 1 when key is already one of the query's keys, 0 when added, -1 out of memory. The keys come out of
 * pair_hash's final mix, so their low bits index the table as they are. */
static inline int joiner_key_seen(Joiner *j, uint64_t key) {
    BlockSet *s = &j->set;
    if (j->block_n + 1 > blockset_most(s) && joiner_rehash(j)) return -1;
    size_t mask = s->cap - 1, slot = (size_t)key & mask;
    while (s->stamp[slot] == s->block) {
        if (s->key[slot] == key) return 1;
        slot = (slot + 1) & mask;
    }
    s->stamp[slot] = s->block;
    s->key[slot] = key;
    return 0;
}

/* One row (a data line's fields) into the joiner: 0, 1 when declined, -1 out of memory. */
static int joiner_row(Joiner *j, const char **start, size_t *len) {
    double score;
    if (parse_double(start[4], len[4], &score)) {
        j->decline = "a score is not a finite number";
        return 1;
    }
    if (j->code < 0 || len[0] != j->q_len || memcmp(start[0], j->q, len[0]) != 0) {
        int status = joiner_start_query(j, start[0], len[0]);
        if (status) return status;
    }
    uint64_t key = pair_hash_after(j->query_state, start[2], len[2]);
    int repeated = joiner_key_seen(j, key);
    if (repeated < 0 || grow((void **)&j->block_keys, &j->block_cap, j->block_n + 1, sizeof(uint64_t))) {
        return -1;
    }
    if (repeated) {
        j->decline = "a (query, doc) key repeats within a query";
        return 1;
    }
    j->block_keys[j->block_n++] = key;
    float now = as_single(score);
    if (j->group_n > 0 && now > j->group_score) {
        j->decline = "the run's scores rise within a query";
        return 1;
    }
    if (j->group_n > 0 && now < j->group_score && joiner_flush_group(j)) return -1;
    j->group_score = now;
    int64_t parsed_rank;
    int32_t rank = 0;
    if (!parse_long(start[3], len[3], &parsed_rank) && parsed_rank > INT32_MIN && parsed_rank <= INT32_MAX)
        rank = (int32_t)parsed_rank;
    else
        j->ranks_ok = 0;
    if (grow((void **)&j->group, &j->group_cap, j->group_n + 1, sizeof(Member)) ||
        grow((void **)&j->docs, &j->docs_cap, j->docs_len + len[2], 1)) {
        return -1;
    }
    Member *m = &j->group[j->group_n];
    m->doc_at = j->docs_len;
    m->doc_len = len[2];
    m->order = j->group_n++;
    m->rank = rank;
    m->qrow = joiner_lookup(j, key, start[2], len[2]);
    memcpy(j->docs + j->docs_len, start[2], len[2]);
    j->docs_len += len[2];
    j->rows++;
    return 0;
}

/* The complete lines in [p, end): 0, 1 when declined, -1 out of memory. */
static int joiner_lines(void *state, const char *p, const char *end) {
    Joiner *j = state;
    while (p < end) {
        const char *eol, *start[MAX_FIELDS];
        size_t len[MAX_FIELDS];
        int odd = 0, nf = 0;
        if (!split_window(p, end, &eol, start, len, &nf, &odd)) {
            eol = memchr(p, '\n', (size_t)(end - p));
            if (!eol) eol = end;
            nf = split_fields(p, eol, start, len, &odd);
        }
        j->line++;
        p = eol + 1;
        if (nf == 0 || start[0][0] == '#') continue;
        int status = 0;
        if (nf < 6) {
            j->decline = "a line has fewer than 6 fields";
            status = 1;
        } else if (odd) {
            j->decline = "a field holds a NUL or a non-ASCII byte";
            status = 1;
        } else {
            status = joiner_row(j, start, len);
        }
        if (status) {
            j->decline_line = j->line;
            return status;
        }
    }
    return 0;
}

/* A joiner for one part of a run, sharing the qrels' columns, table and query ids (read only). */
static int joiner_open(Joiner *j, const Joiner *shared) {
    memset(j, 0, sizeof *j);
    j->qkey = shared->qkey;
    j->qcode = shared->qcode;
    j->qstart = shared->qstart;
    j->qoff = shared->qoff;
    j->qdata = shared->qdata;
    j->table = shared->table;
    j->mask = shared->mask;
    j->judged = shared->judged;
    j->code = -1;
    j->ranks_ok = 1;
    return idtable_init(&j->seen);
}

static void joiner_close(Joiner *j) {
    idtable_free(&j->seen);
    free(j->lengths.p);
    free(j->judged_query.p);
    free(j->judged_rank.p);
    free(j->judged_row.p);
    free(j->q);
    free(j->block_keys);
    free(j->set.key);
    free(j->set.stamp);
    free(j->group);
    free(j->spare);
    free(j->docs);
}

#define MAX_PARTS 8

#ifdef HAVE_MMAP
#include <pthread.h>

/* One part of a mapped run, the lines in [from, to), read by its own joiner: those before the mapping's stop
 * from the mapping, the rest (the part that ends at the file's end) from the padded tail. */
typedef struct {
    const Mapping *m;
    size_t from, to;
    int status;
    Joiner *j;
} Part;

static void *part_read(void *arg) {
    Part *part = arg;
    const Mapping *m = part->m;
    part->status = mapping_lines(m, part->from, part->to < m->stop ? part->to : m->stop, joiner_lines, part->j);
    if (part->status == 0 && part->from <= m->stop && part->to > m->stop) /* the part the tail belongs to */
        part->status = mapping_tail(m, joiner_lines, part->j);
    if (part->status == 0 && joiner_end_query(part->j)) part->status = -1;
    return NULL;
}

/* The first field of the line at p (before limit): its start, and its length in *n (0: a blank line). */
static const char *first_field(const char *p, const char *limit, size_t *n) {
    while (p < limit && is_blank(*p)) p++;
    const char *s = p;
    while (p < limit && *p != '\n' && !is_blank(*p)) p++;
    *n = (size_t)(p - s);
    return s;
}

/* The start of the first data line after from's line whose query id differs from the data line before it
 * (blank and comment lines are passed over), so that no query's rows fall on both sides; a boundary past the
 * mapping's stop (among the lines the tail copy reads) or none at all is the file's end. */
static size_t query_boundary(const Mapping *m, size_t from) {
    size_t found = m->size;
    const char *limit = m->map + m->size, *p = memchr(m->map + from, '\n', m->size - from);
    const char *prev = NULL;
    size_t prev_n = 0;
    for (p = p ? p + 1 : limit; p < limit;) {
        size_t n;
        const char *q = first_field(p, limit, &n);
        if (n && *q != '#') {
            if (prev && (n != prev_n || memcmp(q, prev, n) != 0)) {
                found = (size_t)(p - m->map);
                break;
            }
            prev = q;
            prev_n = n;
        }
        const char *eol = memchr(p, '\n', (size_t)(limit - p));
        p = eol ? eol + 1 : limit;
    }
    return found <= m->stop ? found : m->size;
}

/* The parts a mapped run of this size is read in: one per core, each at least split bytes, at most MAX_PARTS;
 * a negative split asks for exactly -split parts (up to MAX_PARTS) whatever the cores (the tests' knob). */
static int parts_for(size_t size, Py_ssize_t split) {
    if (split < 0) return -split > MAX_PARTS ? MAX_PARTS : (int)-split;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t by_size = split <= 0 ? MAX_PARTS : size / (size_t)split;
    size_t n = by_size < (size_t)(cores > 0 ? cores : 1) ? by_size : (size_t)(cores > 0 ? cores : 1);
    return n < 1 ? 1 : n > MAX_PARTS ? MAX_PARTS : (int)n;
}

/* The mapped run read by parts, each in a thread of its own (the last in this one), into joiners j[0..*count):
 * 0, 1 when a part declined, -1 out of memory. Runs without the GIL. */
static int read_parts(const Mapping *m, Joiner *j, int parts, int *count) {
    size_t at[MAX_PARTS + 1];
    at[0] = 0;
    for (int i = 1; i < parts; i++) {
        size_t b = query_boundary(m, m->stop * (size_t)i / (size_t)parts);
        at[i] = b > at[i - 1] ? b : at[i - 1];
    }
    at[parts] = m->size;
    Part part[MAX_PARTS];
    pthread_t thread[MAX_PARTS];
    int started[MAX_PARTS] = {0};
    for (int i = 0; i < parts; i++) {
        part[i] = (Part){m, at[i], at[i + 1], 0, &j[i]};
        if (i < parts - 1) started[i] = pthread_create(&thread[i], NULL, part_read, &part[i]) == 0;
    }
    part_read(&part[parts - 1]);
    for (int i = 0; i < parts - 1; i++) {
        if (started[i])
            pthread_join(thread[i], NULL);
        else
            part_read(&part[i]); /* no thread to be had: read here */
    }
    *count = parts;
    for (int i = 0; i < parts; i++)
        if (part[i].status) return part[i].status;
    return 0;
}
#endif

/* The parts' joiners as one: the first that declined (its line counted from the file's start), or a query of
 * one part seen in an earlier one (rows not contiguous); 0, 1 declined (reason and line in *first), -1 out of
 * memory. Their outputs are left for parse_joined to concatenate. */
static int parts_agree(Joiner *j, int count) {
    Py_ssize_t before = 0; /* lines in the parts before */
    for (int i = 0; i < count; i++) {
        if (j[i].decline) {
            j[0].decline = j[i].decline;
            j[0].decline_line = before + j[i].decline_line;
            return 1;
        }
        for (int32_t k = 0; i > 0 && k < j[i].seen.count; k++) {
            size_t n;
            const char *id = idtable_id(&j[i].seen, k, &n);
            uint64_t h = ((const uint64_t *)(const void *)j[i].seen.hashes.p)[k];
            for (int e = 0; e < i; e++)
                if (idtable_find(&j[e].seen, h, id, n) >= 0) {
                    j[0].decline = "the run's rows of a query are not contiguous";
                    j[0].decline_line = before + (Py_ssize_t)idtable_value(&j[i].seen, k);
                    return 1;
                }
        }
        before += j[i].line;
    }
    return 0;
}

/* The parts' outputs concatenated into the result dict (their query codes renumbered after the earlier parts'). */
static PyObject *joined_result(Joiner *j, int count) {
    PyObject *qids = PyList_New(0), *result = NULL;
    PyObject *lengths = PyByteArray_FromStringAndSize(NULL, 0), *query = PyByteArray_FromStringAndSize(NULL, 0),
             *rank = PyByteArray_FromStringAndSize(NULL, 0), *row = PyByteArray_FromStringAndSize(NULL, 0);
    int ranks_ok = 1, ok = qids && lengths && query && rank && row;
    long long up = 0, down = 0, rows = 0;
    int32_t base = 0;
    for (int i = 0; ok && i < count; i++) {
        for (int32_t k = 0; ok && k < j[i].seen.count; k++) {
            size_t n;
            const char *id = idtable_id(&j[i].seen, k, &n);
            PyObject *b = PyBytes_FromStringAndSize(id, (Py_ssize_t)n);
            ok = b && PyList_Append(qids, b) == 0;
            Py_XDECREF(b);
        }
        int32_t *codes = (int32_t *)(void *)j[i].judged_query.p;
        for (size_t k = 0; k < j[i].judged_query.used / sizeof(int32_t); k++) codes[k] += base;
        ok = ok && !PyByteArray_Resize(lengths, PyByteArray_GET_SIZE(lengths) + (Py_ssize_t)j[i].lengths.used);
        if (ok && j[i].lengths.used)
            memcpy(PyByteArray_AS_STRING(lengths) + PyByteArray_GET_SIZE(lengths) - j[i].lengths.used, j[i].lengths.p,
                   j[i].lengths.used);
        PyObject *into[3] = {query, rank, row};
        CBuf *from[3] = {&j[i].judged_query, &j[i].judged_rank, &j[i].judged_row};
        for (int c = 0; ok && c < 3; c++) {
            Py_ssize_t had = PyByteArray_GET_SIZE(into[c]);
            ok = !PyByteArray_Resize(into[c], had + (Py_ssize_t)from[c]->used);
            if (ok && from[c]->used) memcpy(PyByteArray_AS_STRING(into[c]) + had, from[c]->p, from[c]->used);
        }
        base += j[i].seen.count;
        ranks_ok &= j[i].ranks_ok;
        up += j[i].up;
        down += j[i].down;
        rows += j[i].rows;
    }
    if (ok)
        result = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:O,s:L,s:L,s:L}", "qids", qids, "lengths", lengths,
                               "judged_query", query, "judged_rank", rank, "judged_row", row, "ranks_ok",
                               ranks_ok ? Py_True : Py_False, "up", up, "down", down, "rows", rows);
    Py_XDECREF(qids);
    Py_XDECREF(lengths);
    Py_XDECREF(query);
    Py_XDECREF(rank);
    Py_XDECREF(row);
    return result;
}

/* parse_joined(path, keys uint64, qcodes int32, starts int64, doc_offsets int64, doc_data, judged_queries dict
 * [, split]) (starts: each qrels query's first row, and the row count) -> dict of
 * qids (run query ids, first-seen order), lengths (int64 rows of each), judged_query (int32 first-seen code),
 * judged_rank (int32, 1-based, trec_eval 9's order), judged_row (int64 qrels row) of each judged row in stored
 * order, ranks_ok, up, down (adjacent pairs of the rank column, stored order, within a query) and rows; or
 * ("decline", reason, line). A mapped file is read in parts of at least split bytes (default 32 MB), one a
 * core, each cut where a query ends and read in a thread of its own, without the GIL; the parts' outputs are
 * the one pass's, concatenated. A split below 4 MB maps files that small too; a negative one asks for -split
 * parts whatever the cores (both for tests). */
static PyObject *parse_joined(PyObject *self, PyObject *args) {
    PyObject *path_bytes = NULL, *judged_queries = NULL, *result = NULL;
    Py_buffer kb, cb, sb, ob, db;
    Py_ssize_t split = (Py_ssize_t)32 << 20;
    if (!PyArg_ParseTuple(args, "O&y*y*y*y*y*O!|n", PyUnicode_FSConverter, &path_bytes, &kb, &cb, &sb, &ob, &db,
                          &PyDict_Type, &judged_queries, &split))
        return NULL;
    Joiner shared, j[MAX_PARTS];
    IdTable judged;
    int count = 0, status = 0;
    memset(&shared, 0, sizeof shared);
    struct Judgement *table = NULL;
    FILE *f = NULL;
    if (idtable_init(&judged)) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = kb.len / (Py_ssize_t)sizeof(uint64_t);
    Py_ssize_t n_queries = sb.len / (Py_ssize_t)sizeof(int64_t) - 1;
    const int64_t *qstart = sb.buf;
    int valid = cb.len == n * (Py_ssize_t)sizeof(int32_t) && ob.len == (n + 1) * (Py_ssize_t)sizeof(int64_t) &&
                n_queries >= 0 && PyDict_Size(judged_queries) <= n_queries;
    for (Py_ssize_t c = 0; valid && c < n_queries; c++) valid = qstart[c] >= 0 && qstart[c] <= qstart[c + 1];
    if (!valid || (n_queries >= 0 && qstart[n_queries] != n)) {
        PyErr_SetString(PyExc_ValueError, "the qrels columns must have one entry per judgement (offsets: n + 1)");
        goto done;
    }
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap *= 2;
    table = malloc(cap * sizeof *table);
    if (!table) {
        PyErr_NoMemory();
        goto done;
    }
    memset(table, 0xff, cap * sizeof *table); /* every row -1: empty */
    const uint64_t *qkey = kb.buf;
    for (Py_ssize_t r = 0; r < n; r++) {
        size_t slot = (size_t)mix(qkey[r]) & (cap - 1);
        while (table[slot].row >= 0) slot = (slot + 1) & (cap - 1);
        table[slot].key = qkey[r];
        table[slot].row = r;
    }
    /* the qrels' query ids, each with its code, as C data the parts' threads can read */
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(judged_queries, &pos, &key, &value)) {
        long code = PyLong_Check(value) ? PyLong_AsLong(value) : -2;
        if (!PyBytes_Check(key) || code < 0 || code >= n_queries) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "judged_queries maps query id bytes to codes");
            goto done;
        }
        const char *id = PyBytes_AS_STRING(key);
        size_t len = (size_t)PyBytes_GET_SIZE(key);
        if (idtable_add(&judged, query_hash(id, len), id, len, code) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    shared.qkey = qkey;
    shared.qcode = cb.buf;
    shared.qstart = qstart;
    shared.qoff = ob.buf;
    shared.qdata = db.buf;
    shared.table = table;
    shared.mask = cap - 1;
    shared.judged = &judged;
    f = fopen(PyBytes_AS_STRING(path_bytes), "rb");
    if (!f) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_bytes);
        goto done;
    }
#ifdef HAVE_MMAP
    struct stat st;
    Mapping m;
    size_t least = split < (Py_ssize_t)(PIECE / 4) ? (size_t)(split > 0 ? split : 1) : PIECE / 4;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= least &&
        mapping_open(&m, fileno(f), (size_t)st.st_size) == 0) {
        int parts = parts_for(m.size, split);
        for (; count < parts; count++)
            if (joiner_open(&j[count], &shared)) {
                count++;
                status = -1;
                break;
            }
        if (status == 0) {
            Py_BEGIN_ALLOW_THREADS status = read_parts(&m, j, parts, &count);
            Py_END_ALLOW_THREADS
        }
        mapping_close(&m);
    } else
#endif
    {
        if (joiner_open(&j[0], &shared)) {
            count = 1;
            status = -1;
        } else {
            count = 1;
            status = read_pieces(f, path_bytes, joiner_lines, &j[0]);
            if (status == 0 && joiner_end_query(&j[0])) status = -1;
        }
    }
    if (status >= 0 && count) status = parts_agree(j, count);
    long long rows = 0;
    for (int i = 0; i < count; i++) rows += j[i].rows;
    if (status == 0 && rows == 0) {
        j[0].decline = "the run has no data lines";
        status = 1;
    }
    if (status == 1)
        result = Py_BuildValue("(ssn)", "decline", j[0].decline, j[0].decline_line);
    else if (status == 0)
        result = joined_result(j, count);
    else if (!PyErr_Occurred())
        PyErr_NoMemory();
done:
    if (f) fclose(f);
    for (int i = 0; i < count; i++) joiner_close(&j[i]);
    idtable_free(&judged);
    free(table);
    PyBuffer_Release(&kb);
    PyBuffer_Release(&cb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    Py_DECREF(path_bytes);
    return result;
}

static PyMethodDef methods[] = {
    {"rewrite_rows", rewrite_rows, METH_VARARGS, "Permute strings within blocks of rows, in place."},
    {"parse_file", parse_file, METH_VARARGS, "Parse a TREC run (kind 0) or qrels (kind 1) file in pieces."},
    {"parse_joined", parse_joined, METH_VARARGS, "Read a run file joined to qrels: what evaluation needs, no doc ids."},
    {"parse", parse, METH_VARARGS, "Parse TREC run (kind 0) or qrels (kind 1) bytes into column buffers."},
    {"hash_pairs", hash_pairs, METH_VARARGS, "64-bit keys of (query id, doc id) pairs, as parse computes."},
    {"move_blocks", move_blocks, METH_VARARGS, "Lay a column's blocks of rows out again, in place."},
    {"move_string_blocks", move_string_blocks, METH_VARARGS, "move_blocks for a string column."},
    {"run_layout", run_layout, METH_VARARGS, "Grouped, ordered, tied rows, first repeated key, block starts."},
    {"first_duplicate", first_duplicate, METH_VARARGS, "First row repeating a (query, doc) key, or -1/-2."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trecparse", NULL, -1, methods};

PyMODINIT_FUNC PyInit__trecparse(void) {
    byte_classes();
    return PyModule_Create(&module);
}
