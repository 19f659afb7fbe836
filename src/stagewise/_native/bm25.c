/*
 * stagewise._native._bm25: the loops of BM25 indexing and search that do not vectorise.
 *
 * tokenize       one pass over many Python strings: optional str.lower(), maximal runs of word characters
 *                (exactly Python re's \w for str patterns: Py_UNICODE_ISALNUM or '_'), kept when at least
 *                min_len code points long, interned through a hash table so each distinct token is one id.
 * build_postings (doc offsets, term id per token) -> postings grouped by term, sorted by document, with term
 *                frequencies, document lengths, and per term the largest tf and the shortest document (the
 *                inputs of a safe upper bound for any monotone BM25 term weight).
 * find_terms     binary search of query terms in the index's sorted vocabulary (offsets + UTF-8 bytes).
 * run_rows       the rows of search results in trec_eval's order (score as a C float descending, then doc id
 *                descending in byte order, through a rank array), for building a Run without sorting it again.
 * checksum       an additive 128-bit hash of a corpus (so an index grown by batches has the checksum of a
 *                rebuild).
 * search         top-k per query. Document-at-a-time MaxScore (Turtle & Flood 1995) when every query term
 *                weight is >= 0, else exhaustive term-at-a-time accumulation. Both sum a document's term
 *                contributions in the same order (query terms sorted by upper bound), so both give the same
 *                scores to the last bit, and both break ties in score by the smaller document index.
 *
 * The term weight computed here must stay the same arithmetic as the pure Python functions of
 * stagewise.retrieval.variants (tests compare them): with L = 1 - b + b * dl / avgdl (passed in, per document)
 *   mode 0 (saturating BM25):  tf * (k1 + 1) / (tf + k1 * L)
 *   mode 1 (BM25+):            tf * (k1 + 1) / (tf + k1 * L) + delta
 *   mode 2 (BM25L):            c = tf / L;  (k1 + 1) * (c + delta) / (k1 + c + delta)
 * and a document's score is the sum over query terms of weight_t * that, weight_t = query tf * idf.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h> /* block_top's vector max */
#endif

/* ------------------------------------------------------------------------------------------------ helpers */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buf_append(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static PyObject *buf_to_bytes(Buf *b) {
    PyObject *out = PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    return out;
}

static inline uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, p, n);
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return h;
}

static int check_buffer(Py_buffer *view, Py_ssize_t itemsize, const char *name) {
    if (view->len % itemsize != 0) {
        PyErr_Format(PyExc_ValueError, "%s: buffer length %zd is not a multiple of %zd", name, view->len, itemsize);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------ tokenize */

/* Interned distinct tokens: UTF-8 bytes in an arena, open addressing on a 64-bit hash. */
typedef struct {
    Buf arena;          /* token bytes */
    Buf offsets;        /* int64 start of each token in arena, plus the end */
    int32_t *slots;     /* token id + 1, 0 = empty */
    uint64_t *hashes;   /* hash of each token id */
    size_t n, cap;      /* distinct tokens, slot capacity (power of two) */
    size_t hcap;
} Vocab;

static int vocab_init(Vocab *v) {
    memset(v, 0, sizeof(*v));
    v->cap = 1 << 16;
    v->slots = calloc(v->cap, sizeof(int32_t));
    v->hcap = 1 << 14;
    v->hashes = malloc(v->hcap * sizeof(uint64_t));
    int64_t zero = 0;
    if (!v->slots || !v->hashes || buf_append(&v->offsets, &zero, sizeof zero) < 0) return -1;
    return 0;
}

static void vocab_free(Vocab *v) {
    free(v->arena.data);
    free(v->offsets.data);
    free(v->slots);
    free(v->hashes);
}

static int vocab_grow(Vocab *v) {
    size_t cap = v->cap * 2;
    int32_t *slots = calloc(cap, sizeof(int32_t));
    if (!slots) return -1;
    for (size_t id = 0; id < v->n; id++) {
        size_t i = v->hashes[id] & (cap - 1);
        while (slots[i]) i = (i + 1) & (cap - 1);
        slots[i] = (int32_t)(id + 1);
    }
    free(v->slots);
    v->slots = slots;
    v->cap = cap;
    return 0;
}

/* The id of token s[0:n], adding it when new; -1 on memory failure. */
static int64_t vocab_intern(Vocab *v, const unsigned char *s, size_t n) {
    uint64_t h = hash_bytes(s, n);
    size_t mask = v->cap - 1, i = h & mask;
    const int64_t *offs = (const int64_t *)v->offsets.data;
    for (;;) {
        int32_t slot = v->slots[i];
        if (!slot) break;
        size_t id = (size_t)(slot - 1);
        if (v->hashes[id] == h) {
            int64_t a = offs[id], e = offs[id + 1];
            if ((size_t)(e - a) == n && memcmp(v->arena.data + a, s, n) == 0) return (int64_t)id;
        }
        i = (i + 1) & mask;
    }
    if (v->n >= INT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "more than 2**31 distinct tokens");
        return -1;
    }
    size_t id = v->n;
    if (id == v->hcap) {
        uint64_t *p = realloc(v->hashes, 2 * v->hcap * sizeof(uint64_t));
        if (!p) return -1;
        v->hashes = p;
        v->hcap *= 2;
    }
    v->hashes[id] = h;
    if (buf_append(&v->arena, s, n) < 0) return -1;
    int64_t end = (int64_t)v->arena.len;
    if (buf_append(&v->offsets, &end, sizeof end) < 0) return -1;
    v->slots[i] = (int32_t)(id + 1);
    v->n++;
    if (v->n * 2 > v->cap && vocab_grow(v) < 0) return -1;
    return (int64_t)id;
}

static unsigned char ASCII_WORD[128];

static void init_ascii_table(void) {
    for (int c = 0; c < 128; c++)
        ASCII_WORD[c] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline int is_word(Py_UCS4 ch) {
    if (ch < 128) return ASCII_WORD[ch];
    return Py_UNICODE_ISALNUM(ch) || ch == '_';
}

static inline size_t utf8_put(unsigned char *out, Py_UCS4 ch) {
    if (ch < 0x80) {
        out[0] = (unsigned char)ch;
        return 1;
    }
    if (ch < 0x800) {
        out[0] = (unsigned char)(0xC0 | (ch >> 6));
        out[1] = (unsigned char)(0x80 | (ch & 0x3F));
        return 2;
    }
    if (ch < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (ch >> 12));
        out[1] = (unsigned char)(0x80 | ((ch >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (ch & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (ch >> 18));
    out[1] = (unsigned char)(0x80 | ((ch >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((ch >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (ch & 0x3F));
    return 4;
}

/* tokenize(texts, lowercase, min_len) -> (offsets int64 bytes, token ids int32 bytes, distinct tokens list) */
static PyObject *tokenize(PyObject *self, PyObject *args) {
    PyObject *seq_in;
    int lowercase;
    Py_ssize_t min_len;
    if (!PyArg_ParseTuple(args, "Opn", &seq_in, &lowercase, &min_len)) return NULL;
    PyObject *seq = PySequence_Fast(seq_in, "texts must be a sequence of str");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *lower_name = PyUnicode_InternFromString("lower");
    Vocab vocab;
    Buf ids = {0}, offsets = {0}, scratch = {0};
    PyObject *result = NULL;
    if (!lower_name || vocab_init(&vocab) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t zero = 0;
    if (buf_append(&offsets, &zero, sizeof zero) < 0) goto nomem;
    for (Py_ssize_t doc = 0; doc < n; doc++) {
        PyObject *text = items[doc];
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "document %zd is %.100s, not str", doc, Py_TYPE(text)->tp_name);
            goto done;
        }
        PyObject *owned = NULL;
        if (lowercase) {
            owned = PyObject_CallMethodNoArgs(text, lower_name);
            if (!owned) goto done;
            text = owned;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(text);
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        if (PyUnicode_IS_ASCII(text)) {
            const unsigned char *s = (const unsigned char *)data;
            Py_ssize_t i = 0;
            while (i < len) {
                while (i < len && !ASCII_WORD[s[i]]) i++;
                Py_ssize_t start = i;
                while (i < len && ASCII_WORD[s[i]]) i++;
                if (i > start && i - start >= min_len) {
                    int64_t id = vocab_intern(&vocab, s + start, (size_t)(i - start));
                    if (id < 0) goto fail_owned;
                    int32_t id32 = (int32_t)id;
                    if (buf_append(&ids, &id32, sizeof id32) < 0) goto nomem_owned;
                }
            }
        } else {
            Py_ssize_t i = 0;
            while (i < len) {
                while (i < len && !is_word(PyUnicode_READ(kind, data, i))) i++;
                Py_ssize_t start = i;
                scratch.len = 0;
                while (i < len) {
                    Py_UCS4 ch = PyUnicode_READ(kind, data, i);
                    if (!is_word(ch)) break;
                    if (buf_reserve(&scratch, 4) < 0) goto nomem_owned;
                    scratch.len += utf8_put((unsigned char *)scratch.data + scratch.len, ch);
                    i++;
                }
                if (i > start && i - start >= min_len) {
                    int64_t id = vocab_intern(&vocab, (const unsigned char *)scratch.data, scratch.len);
                    if (id < 0) goto fail_owned;
                    int32_t id32 = (int32_t)id;
                    if (buf_append(&ids, &id32, sizeof id32) < 0) goto nomem_owned;
                }
            }
        }
        Py_XDECREF(owned);
        int64_t end = (int64_t)(ids.len / sizeof(int32_t));
        if (buf_append(&offsets, &end, sizeof end) < 0) goto nomem;
        continue;
    nomem_owned:
        Py_XDECREF(owned);
        goto nomem;
    fail_owned:
        Py_XDECREF(owned);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    {
        PyObject *tokens = PyList_New((Py_ssize_t)vocab.n);
        if (!tokens) goto done;
        const int64_t *offs = (const int64_t *)vocab.offsets.data;
        for (size_t id = 0; id < vocab.n; id++) {
            PyObject *s = PyUnicode_DecodeUTF8(vocab.arena.data + offs[id], (Py_ssize_t)(offs[id + 1] - offs[id]),
                                               "strict");
            if (!s) {
                Py_DECREF(tokens);
                goto done;
            }
            PyList_SET_ITEM(tokens, (Py_ssize_t)id, s);
        }
        PyObject *ob = buf_to_bytes(&offsets), *ib = buf_to_bytes(&ids);
        if (ob && ib) result = PyTuple_Pack(3, ob, ib, tokens);
        Py_XDECREF(ob);
        Py_XDECREF(ib);
        Py_DECREF(tokens);
    }
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(ids.data);
    free(offsets.data);
    free(scratch.data);
    vocab_free(&vocab);
    Py_XDECREF(lower_name);
    Py_DECREF(seq);
    return result;
}

/* ------------------------------------------------------------------------------------------ build_postings */

/* build_postings(doc_offsets int64[n+1], term_ids int32[tokens] (-1 = dropped), n_terms)
 *   -> (term_ptr int64[V+1], post_docs int32[nnz], post_tf int32[nnz], doc_len int32[n], max_tf int32[V],
 *       min_dl int32[V]) as bytes */
static PyObject *build_postings(PyObject *self, PyObject *args) {
    Py_buffer ob, tb;
    Py_ssize_t n_terms;
    if (!PyArg_ParseTuple(args, "y*y*n", &ob, &tb, &n_terms)) return NULL;
    PyObject *result = NULL;
    int32_t *last = NULL;
    int64_t *slot = NULL;
    PyObject *ptr_b = NULL, *docs_b = NULL, *tf_b = NULL, *len_b = NULL, *maxtf_b = NULL, *mindl_b = NULL;
    if (check_buffer(&ob, 8, "doc_offsets") < 0 || check_buffer(&tb, 4, "term_ids") < 0) goto done;
    Py_ssize_t n_docs = ob.len / 8 - 1;
    if (n_docs < 0 || n_terms < 0) {
        PyErr_SetString(PyExc_ValueError, "empty doc_offsets");
        goto done;
    }
    if (n_docs > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "more than 2**31 documents");
        goto done;
    }
    const int64_t *offs = (const int64_t *)ob.buf;
    const int32_t *terms = (const int32_t *)tb.buf;
    Py_ssize_t n_tokens = tb.len / 4;
    if (offs[0] != 0 || offs[n_docs] != n_tokens) {
        PyErr_SetString(PyExc_ValueError, "doc_offsets do not span term_ids");
        goto done;
    }
    ptr_b = PyBytes_FromStringAndSize(NULL, (n_terms + 1) * 8);
    len_b = PyBytes_FromStringAndSize(NULL, n_docs * 4);
    maxtf_b = PyBytes_FromStringAndSize(NULL, n_terms * 4);
    mindl_b = PyBytes_FromStringAndSize(NULL, n_terms * 4);
    last = malloc((n_terms ? n_terms : 1) * sizeof(int32_t));
    slot = malloc((n_terms ? n_terms : 1) * sizeof(int64_t));
    if (!ptr_b || !len_b || !maxtf_b || !mindl_b || !last || !slot) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int64_t *ptr = (int64_t *)PyBytes_AS_STRING(ptr_b);
    int32_t *dl = (int32_t *)PyBytes_AS_STRING(len_b);
    int32_t *max_tf = (int32_t *)PyBytes_AS_STRING(maxtf_b);
    int32_t *min_dl = (int32_t *)PyBytes_AS_STRING(mindl_b);
    int64_t nnz = 0;
    memset(ptr, 0, (n_terms + 1) * 8);
    for (Py_ssize_t t = 0; t < n_terms; t++) last[t] = -1;
    /* pass 1: document lengths and document frequencies */
    for (Py_ssize_t d = 0; d < n_docs; d++) {
        int64_t count = 0;
        if (offs[d + 1] < offs[d]) {
            PyErr_SetString(PyExc_ValueError, "doc_offsets decrease");
            goto done;
        }
        for (int64_t j = offs[d]; j < offs[d + 1]; j++) {
            int32_t t = terms[j];
            if (t < 0) continue;
            if (t >= n_terms) {
                PyErr_SetString(PyExc_ValueError, "term id out of range");
                goto done;
            }
            count++;
            if (last[t] != (int32_t)d) {
                last[t] = (int32_t)d;
                ptr[t + 1]++;
                nnz++;
            }
        }
        if (count > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a document longer than 2**31 tokens");
            goto done;
        }
        dl[d] = (int32_t)count;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        ptr[t + 1] += ptr[t];
        slot[t] = ptr[t]; /* the write head of each term */
        last[t] = -1;
        max_tf[t] = 0;
        min_dl[t] = INT32_MAX;
    }
    docs_b = PyBytes_FromStringAndSize(NULL, nnz * 4);
    tf_b = PyBytes_FromStringAndSize(NULL, nnz * 4);
    if (!docs_b || !tf_b) goto done;
    int32_t *pdocs = (int32_t *)PyBytes_AS_STRING(docs_b);
    int32_t *ptf = (int32_t *)PyBytes_AS_STRING(tf_b);
    /* pass 2: each (term, doc) pair once, in document order, counting repeats */
    for (Py_ssize_t d = 0; d < n_docs; d++) {
        for (int64_t j = offs[d]; j < offs[d + 1]; j++) {
            int32_t t = terms[j];
            if (t < 0) continue;
            if (last[t] != (int32_t)d) {
                last[t] = (int32_t)d;
                int64_t at = slot[t]++;
                pdocs[at] = (int32_t)d;
                ptf[at] = 1;
            } else {
                ptf[slot[t] - 1]++;
            }
        }
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        for (int64_t j = ptr[t]; j < ptr[t + 1]; j++) {
            if (ptf[j] > max_tf[t]) max_tf[t] = ptf[j];
            if (dl[pdocs[j]] < min_dl[t]) min_dl[t] = dl[pdocs[j]];
        }
        if (ptr[t] == ptr[t + 1]) min_dl[t] = 0;
    }
    result = PyTuple_Pack(6, ptr_b, docs_b, tf_b, len_b, maxtf_b, mindl_b);
done:
    free(last);
    free(slot);
    Py_XDECREF(ptr_b);
    Py_XDECREF(docs_b);
    Py_XDECREF(tf_b);
    Py_XDECREF(len_b);
    Py_XDECREF(maxtf_b);
    Py_XDECREF(mindl_b);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&tb);
    return result;
}

/* ---------------------------------------------------------------------------------------------- find_terms */

/* find_terms(vocab_offsets int64[V+1], vocab_data bytes (sorted, byte order), terms list[str]) -> int32 bytes:
 * the index of each term, or -(insertion point + 1) when it is absent. */
static PyObject *find_terms(PyObject *self, PyObject *args) {
    Py_buffer ob, db;
    PyObject *terms_in;
    if (!PyArg_ParseTuple(args, "y*y*O", &ob, &db, &terms_in)) return NULL;
    PyObject *result = NULL, *seq = NULL;
    if (check_buffer(&ob, 8, "vocab_offsets") < 0) goto done;
    if (ob.len < 8) {
        PyErr_SetString(PyExc_ValueError, "damaged index: vocab_offsets is empty");
        goto done;
    }
    seq = PySequence_Fast(terms_in, "terms must be a sequence of str");
    if (!seq) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), V = ob.len / 8 - 1;
    const int64_t *offs = (const int64_t *)ob.buf;
    const unsigned char *data = (const unsigned char *)db.buf;
    result = PyBytes_FromStringAndSize(NULL, n * 4);
    if (!result) goto done;
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t qn;
        const char *q = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(seq, i), &qn);
        if (!q) {
            Py_CLEAR(result);
            goto done;
        }
        Py_ssize_t lo = 0, hi = V;
        int found = 0;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            int64_t a = offs[mid], e = offs[mid + 1];
            if (a < 0 || e < a || e > db.len) { /* a damaged index: never read outside the data */
                PyErr_Format(PyExc_ValueError, "damaged index: vocabulary offset %zd out of range", mid);
                Py_CLEAR(result);
                goto done;
            }
            size_t tn = (size_t)(e - a);
            size_t m = tn < (size_t)qn ? tn : (size_t)qn;
            int c = m ? memcmp(data + a, q, m) : 0;
            if (c == 0) c = tn < (size_t)qn ? -1 : (tn > (size_t)qn ? 1 : 0);
            if (c == 0) {
                out[i] = (int32_t)mid;
                found = 1;
                break;
            }
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (!found) out[i] = (int32_t)(-lo - 1);
    }
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    return result;
}

/* vocab_table(vocab_offsets int64[V+1], vocab_data bytes) -> int32 bytes: an open-addressing table of the
 * vocabulary's term ids (a power of two slots, at least 1.5 V, -1 when empty; linear probing on hash_bytes),
 * for lookup_terms. Built once per index and kept by the caller: a query's terms are then found with a hash
 * and one compare each, not a binary search of about 17 compares. */
static PyObject *vocab_table(PyObject *self, PyObject *args) {
    Py_buffer ob, db;
    if (!PyArg_ParseTuple(args, "y*y*", &ob, &db)) return NULL;
    PyObject *result = NULL;
    if (check_buffer(&ob, 8, "vocab_offsets") < 0) goto done;
    if (ob.len < 8 || ob.len / 8 - 1 > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "damaged index: vocab_offsets is empty or too long");
        goto done;
    }
    Py_ssize_t V = ob.len / 8 - 1;
    const int64_t *offs = (const int64_t *)ob.buf;
    const unsigned char *data = (const unsigned char *)db.buf;
    size_t cap = 16;
    while (cap < (size_t)V + (size_t)V / 2 + 1) cap <<= 1;
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap * 4));
    if (!result) goto done;
    int32_t *slot = (int32_t *)PyBytes_AS_STRING(result);
    memset(slot, 0xff, cap * 4);
    for (Py_ssize_t t = 0; t < V; t++) {
        int64_t a = offs[t], e = offs[t + 1];
        if (a < 0 || e < a || e > db.len) {
            PyErr_Format(PyExc_ValueError, "damaged index: vocabulary offset %zd out of range", t);
            Py_CLEAR(result);
            goto done;
        }
        size_t at = (size_t)hash_bytes(data + a, (size_t)(e - a)) & (cap - 1);
        while (slot[at] >= 0) at = (at + 1) & (cap - 1);
        slot[at] = (int32_t)t;
    }
done:
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    return result;
}

/* lookup_terms(vocab_offsets, vocab_data, table (vocab_table's), terms list[str]) -> int32 bytes: each term's
 * id, -1 when absent. Every id and offset read from the table and the vocabulary is checked before use. */
static PyObject *lookup_terms(PyObject *self, PyObject *args) {
    Py_buffer ob, db, tb;
    PyObject *terms_in;
    if (!PyArg_ParseTuple(args, "y*y*y*O", &ob, &db, &tb, &terms_in)) return NULL;
    PyObject *result = NULL, *seq = NULL;
    if (check_buffer(&ob, 8, "vocab_offsets") < 0 || check_buffer(&tb, 4, "table") < 0) goto done;
    size_t cap = (size_t)tb.len / 4;
    if (ob.len < 8 || cap == 0 || (cap & (cap - 1)) != 0) {
        PyErr_SetString(PyExc_ValueError,
                        "damaged index: vocab_offsets is empty or the term table is not a power of two");
        goto done;
    }
    seq = PySequence_Fast(terms_in, "terms must be a sequence of str");
    if (!seq) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), V = ob.len / 8 - 1;
    const int64_t *offs = (const int64_t *)ob.buf;
    const unsigned char *data = (const unsigned char *)db.buf;
    const int32_t *slot = (const int32_t *)tb.buf;
    result = PyBytes_FromStringAndSize(NULL, n * 4);
    if (!result) goto done;
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t qn;
        const char *q = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(seq, i), &qn);
        if (!q) {
            Py_CLEAR(result);
            goto done;
        }
        size_t at = (size_t)hash_bytes((const unsigned char *)q, (size_t)qn) & (cap - 1);
        out[i] = -1;
        for (size_t probes = 0; probes < cap; probes++, at = (at + 1) & (cap - 1)) {
            int32_t t = slot[at];
            if (t < 0) break;
            int64_t a = t < V ? offs[t] : -1, e = t < V ? offs[t + 1] : -1;
            if (a < 0 || e < a || e > db.len) {
                PyErr_Format(PyExc_ValueError, "damaged index: term table entry %lld out of range", (long long)t);
                Py_CLEAR(result);
                goto done;
            }
            if (e - a == qn && memcmp(data + a, q, (size_t)qn) == 0) {
                out[i] = t;
                break;
            }
        }
    }
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    PyBuffer_Release(&tb);
    return result;
}

/* -------------------------------------------------------------------------------------------------- search */

enum { MODE_BM25 = 0, MODE_PLUS = 1, MODE_L = 2 };
enum { STRATEGY_MAXSCORE = 0, STRATEGY_EXHAUSTIVE = 1, STRATEGY_ALL_DOCS = 2, STRATEGY_AUTO = 3 };

typedef struct {
    const int64_t *ptr;
    const int32_t *docs;
    const void *tf;
    int tf_size; /* 2 (uint16) or 4 (int32) */
    const double *norm;
    int32_t n_docs;
    int mode;
    double k1, delta;
    const double *tw; /* the weight cache: tw[j] = term_weight(tf of posting j, norm of its document) */
} Postings;

static inline double tf_at(const Postings *P, int64_t j) {
    return P->tf_size == 2 ? (double)((const uint16_t *)P->tf)[j] : (double)((const int32_t *)P->tf)[j];
}

static inline double term_weight(const Postings *P, double tf, double L) {
    switch (P->mode) {
    case MODE_PLUS:
        return tf * (P->k1 + 1) / (tf + P->k1 * L) + P->delta;
    case MODE_L: {
        double c = tf / L;
        return (P->k1 + 1) * (c + P->delta) / (P->k1 + c + P->delta);
    }
    default:
        return tf * (P->k1 + 1) / (tf + P->k1 * L);
    }
}

/* A bounded min-heap of (score, doc): the root is the worst kept result. "Better" is a higher score, then a
 * smaller document index, so results do not depend on the order candidates arrive in. */
typedef struct {
    double *s;
    int32_t *d;
    int64_t size, cap;
    int sorted; /* set when s and d already hold the results best first (the exhaustive path's sort) */
} Heap;

static inline int worse(double s1, int32_t d1, double s2, int32_t d2) { return s1 < s2 || (s1 == s2 && d1 > d2); }

static void heap_sift_down(Heap *h, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->size && worse(h->s[l], h->d[l], h->s[m], h->d[m])) m = l;
        if (r < h->size && worse(h->s[r], h->d[r], h->s[m], h->d[m])) m = r;
        if (m == i) return;
        double ts = h->s[i];
        int32_t td = h->d[i];
        h->s[i] = h->s[m];
        h->d[i] = h->d[m];
        h->s[m] = ts;
        h->d[m] = td;
        i = m;
    }
}

static void heap_offer(Heap *h, double s, int32_t d) {
    if (h->size < h->cap) {
        int64_t i = h->size++;
        h->s[i] = s;
        h->d[i] = d;
        while (i > 0) {
            int64_t p = (i - 1) / 2;
            if (!worse(h->s[i], h->d[i], h->s[p], h->d[p])) break;
            double ts = h->s[i];
            int32_t td = h->d[i];
            h->s[i] = h->s[p];
            h->d[i] = h->d[p];
            h->s[p] = ts;
            h->d[p] = td;
            i = p;
        }
    } else if (worse(h->s[0], h->d[0], s, d)) {
        h->s[0] = s;
        h->d[0] = d;
        heap_sift_down(h, 0);
    }
}

/* Pop everything, worst first, writing best-first into out (size entries). */
static void heap_drain(Heap *h, int32_t *out_d, double *out_s) {
    int64_t n = h->size;
    if (h->sorted) {
        memcpy(out_d, h->d, (size_t)n * sizeof(int32_t));
        memcpy(out_s, h->s, (size_t)n * sizeof(double));
        h->size = 0;
        return;
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        out_d[i] = h->d[0];
        out_s[i] = h->s[0];
        h->size--;
        if (h->size > 0) {
            h->s[0] = h->s[h->size];
            h->d[0] = h->d[h->size];
            heap_sift_down(h, 0);
        }
    }
}

typedef struct {
    int32_t term;
    double w, ub;
    int64_t pos, end;
} Cursor;

static int cursor_cmp(const void *a, const void *b) {
    const Cursor *x = a, *y = b;
    if (x->ub < y->ub) return -1;
    if (x->ub > y->ub) return 1;
    return (x->term > y->term) - (x->term < y->term);
}

/* cursor_cmp's order; by insertion for a query's few terms (qsort's call per compare was 3% of the SciFact
 * kernel at top 10), qsort beyond 32 */
static void sort_cursors(Cursor *cur, size_t m) {
    if (m > 32) {
        qsort(cur, m, sizeof(Cursor), cursor_cmp);
        return;
    }
    for (size_t i = 1; i < m; i++) {
        Cursor x = cur[i];
        size_t j = i;
        for (; j > 0 && cursor_cmp(&x, &cur[j - 1]) < 0; j--) cur[j] = cur[j - 1];
        cur[j] = x;
    }
}

/* First position in [lo, end) whose document is >= target (docs sorted ascending). */
static inline int64_t gallop(const int32_t *docs, int64_t lo, int64_t end, int32_t target) {
    if (lo >= end || docs[lo] >= target) return lo;
    int64_t step = 1, hi = lo + 1;
    while (hi < end && docs[hi] < target) {
        lo = hi;
        step <<= 1;
        hi = lo + step;
    }
    if (hi > end) hi = end;
    lo++; /* docs[lo - 1] < target; the answer is in [lo, hi] */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (docs[mid] < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

enum { SELECT_BUCKETS = 2048, SELECT_MIN_K = 64 }; /* select_top: its histogram, and from which k it pays */
enum { TOP_BLOCK = 64 }; /* offer_above_blocks: slots a block */

typedef struct {
    double s;
    int32_t d;
} Scored;

typedef struct {
    double *acc;
    unsigned char *seen;
    Cursor *cur;
    double *cum;
    size_t cur_cap;
    int32_t *cand;
    size_t cand_cap;
    int32_t *touched; /* the documents the exhaustive path met, each once: the only slots it reads and resets */
    double *vals;     /* the scores of the documents met, in touched order */
    uint32_t *hist;   /* select_top's bucket counts */
    Scored *pairs;    /* the exhaustive path's candidates, and room to merge-sort them */
    int64_t pairs_cap;
    double *block_max; /* offer_above_blocks' maximum of each block of slots */
    int64_t n_touched;
    int32_t bad_doc; /* a document id outside 0..n_docs-1 was met (a damaged index): >= 0 when set */
} Scratch;

/* Document ids come from the index files: each is checked before it indexes anything (one compare, which the
 * branch predictor learns; a damaged index then ends the search with an error instead of a crash). */
static inline int doc_ok(const Postings *P, Scratch *S, int32_t d) {
    if ((uint32_t)d < (uint32_t)P->n_docs) return 1;
    if (S->bad_doc < 0) S->bad_doc = d < 0 ? INT32_MAX : d;
    return 0;
}

static int scratch_terms(Scratch *s, size_t m) {
    if (m <= s->cur_cap) return 0;
    Cursor *c = realloc(s->cur, m * sizeof(Cursor));
    if (c) s->cur = c;
    double *k = realloc(s->cum, m * sizeof(double));
    if (k) s->cum = k;
    if (!c || !k) return -1;
    s->cur_cap = m;
    return 0;
}

/* The dense arrays, one slot a document, padded to whole 8-slot words (and 8 more) for collect_marked. */
static int scratch_dense(Scratch *s, int32_t n_docs) {
    if (s->acc) return 0;
    size_t slots = ((size_t)n_docs + 7) / 8 * 8 + 8;
    s->acc = calloc(slots, sizeof(double));
    s->seen = calloc(slots, 1);
    s->touched = malloc(slots * sizeof(int32_t));
    s->vals = malloc(slots * sizeof(double));
    s->hist = malloc(SELECT_BUCKETS * sizeof(uint32_t));
    s->block_max = malloc((slots / TOP_BLOCK + 1) * sizeof(double));
    return (s->acc && s->seen && s->touched && s->vals && s->hist && s->block_max) ? 0 : -1;
}

/* First position in [lo, end) whose document is >= target, by binary search. */
static inline int64_t lower_bound(const int32_t *docs, int64_t lo, int64_t end, int32_t target) {
    while (lo < end) {
        int64_t mid = lo + (end - lo) / 2;
        if (docs[mid] < target)
            lo = mid + 1;
        else
            end = mid;
    }
    return lo;
}

static int cmp_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* A lower bound on the final k-th best score, so pruning starts at once instead of after k candidates. From
 * the posting lists in decreasing order of upper bound, take each list's k documents with the largest
 * contribution from that term, until at least k distinct documents are collected; score them fully (same
 * arithmetic and order as the traversal) and return the k-th best of those scores. k real documents score at
 * least that much, so a document whose upper bound is below it cannot be in the top k. -inf when fewer than k
 * documents contain a query term. */
static double seed_threshold(const Postings *P, const Cursor *cur, size_t m, Heap *tmp, Scratch *S) {
    int64_t k = tmp->cap, n = 0;
    if (k > 16384 || m == 0) return -INFINITY; /* a deep top k: the seed would cost more than it saves */
    if ((size_t)(m * k) > S->cand_cap) {
        int32_t *p = realloc(S->cand, m * k * sizeof(int32_t));
        if (!p) return -INFINITY; /* no seed: still correct, only slower */
        S->cand = p;
        S->cand_cap = m * k;
    }
    for (size_t j = m; j-- > 0 && n < k;) {
        int64_t len = cur[j].end - cur[j].pos;
        if (len <= k) {
            if (len > 0) memcpy(S->cand + n, P->docs + cur[j].pos, len * sizeof(int32_t));
            n += len;
        } else {
            tmp->size = 0;
            for (int64_t p = cur[j].pos; p < cur[j].end; p++) {
                int32_t d = P->docs[p];
                if (!doc_ok(P, S, d)) return -INFINITY;
                heap_offer(tmp, cur[j].w * P->tw[p], d);
            }
            memcpy(S->cand + n, tmp->d, tmp->size * sizeof(int32_t));
            n += tmp->size;
        }
        if (n >= k && j > 0 && n > 1) { /* count distinct documents so far */
            qsort(S->cand, n, sizeof(int32_t), cmp_int32);
            int64_t u = 0;
            for (int64_t i = 0; i < n; i++)
                if (u == 0 || S->cand[i] != S->cand[u - 1]) S->cand[u++] = S->cand[i];
            n = u;
        }
    }
    if (n < k) return -INFINITY; /* also spares qsort an empty (NULL) array: undefined behaviour */
    qsort(S->cand, n, sizeof(int32_t), cmp_int32);
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++)
        if (u == 0 || S->cand[i] != S->cand[u - 1]) S->cand[u++] = S->cand[i];
    if (u < k) return -INFINITY;
    tmp->size = 0;
    for (int64_t t = 0; t < u; t++) {
        int32_t d = S->cand[t];
        if (!doc_ok(P, S, d)) return -INFINITY;
        double score = 0.0;
        for (size_t i = m; i-- > 0;) { /* the traversal's order: descending upper bound */
            int64_t at = lower_bound(P->docs, cur[i].pos, cur[i].end, d);
            if (at < cur[i].end && P->docs[at] == d) score += cur[i].w * P->tw[at];
        }
        heap_offer(tmp, score, d);
    }
    return tmp->s[0];
}

/* Add one term's contributions (cursor c, whole list) into the dense accumulator, listing each document the
 * first time it is met (branch-free: the slot is always written, the count moves only for a new document). */
static inline void accumulate(const Postings *P, const Cursor *c, Scratch *S) {
    double *acc = S->acc, w = c->w;
    unsigned char *seen = S->seen;
    int32_t *touched = S->touched;
    int64_t n = S->n_touched;
    const int32_t *docs = P->docs;
    const double *tw = P->tw;
    for (int64_t j = c->pos; j < c->end; j++) {
        int32_t d = docs[j];
        if (!doc_ok(P, S, d)) break;
        touched[n] = d;
        n += !seen[d];
        seen[d] = 1;
        acc[d] += w * tw[j];
    }
    S->n_touched = n;
}

/* The cost model (strategy "auto"): MaxScore only where pruning should pay. With the weight cache, exhaustive
 * accumulation costs one cheap step per posting (about 1-2 ns) plus one heap test per document met; MaxScore's
 * document-at-a-time walk costs several steps per posting of its essential lists (finding the next document
 * among them, probing the others), plus the seed. Pruning pays only when whole long lists can be skipped:
 * a very common term (in over 1 / COST_COMMON of the documents, so its weight is small) among postings
 * many times k (more than COST_FEW * k), with k a small share of the corpus (k * COST_SHARE < documents).
 * Then the seed is computed and, as a last check, MaxScore runs only if the lists it must walk (the essential
 * ones) hold less than 1 / COST_DAAT of the postings. The constants were measured on SciFact and on the Zipf
 * corpus (docs/bm25.md); every path gives the same results, so a wrong guess costs time, never a result. */
enum { COST_SHARE = 8, COST_FEW = 800, COST_COMMON = 2, COST_DAAT = 6 };

static int worth_seeding(int64_t k, int32_t n_docs, int64_t total, int64_t longest) {
    return k * COST_SHARE < n_docs && total > k * COST_FEW && longest * COST_COMMON > n_docs;
}

static int pays_to_prune(const Cursor *cur, size_t m, double seed, int64_t total) {
    size_t fe = 0;
    double run = 0.0;
    while (fe < m && run + cur[fe].ub < seed) run += cur[fe++].ub;
    int64_t essential = 0;
    for (size_t i = fe; i < m; i++) essential += cur[i].end - cur[i].pos;
    return essential * COST_DAAT < total;
}

/* MaxScore (Turtle & Flood 1995). Query terms are sorted by upper bound, ascending; cum[i] bounds the sum of
 * terms 0..i. Terms [fe, m) are "essential": a document containing none of them has at most cum[fe - 1] and
 * is skipped. Every document's score is summed in descending order of upper bound (essential terms first),
 * which is the order the exhaustive path uses too, so all paths agree to the last bit.
 *
 * A document is pruned when its bound is below the seed (k documents reach the seed) or, once the heap is
 * full, when the bound does not beat the worst kept score (documents arrive in index order, so a later one
 * loses a tie). The essential lists are walked document-at-a-time; the other lists are only probed (galloping
 * search) for documents whose bound survives.
 *
 * With total >= 0 (strategy "auto") the seed also decides whether pruning pays (pays_to_prune); when it does
 * not, nothing is done and 0 is returned, so the caller accumulates exhaustively. Returns 1 otherwise. */
static int maxscore(const Postings *P, Cursor *cur, size_t m, Heap *h, Heap *tmp, Scratch *S, int64_t total) {
    double *cum = S->cum;
    double run = 0.0;
    for (size_t i = 0; i < m; i++) {
        run += cur[i].ub;
        cum[i] = run;
    }
    if (m == 0) return 1;
    double seed = seed_threshold(P, cur, m, tmp, S);
    if (S->bad_doc >= 0) return 1;
    if (total >= 0 && !pays_to_prune(cur, m, seed, total)) return 0;
    double theta = -INFINITY;
    size_t fe = 0;
    while (fe < m && cum[fe] < seed) fe++;
    if (fe == m) return 1;
    const int32_t *docs = P->docs;
    for (;;) {
        if (h->size == h->cap) theta = h->s[0];
        while (fe < m && (cum[fe] < seed || cum[fe] <= theta)) fe++;
        if (fe == m) break;
        int32_t d = INT32_MAX;
        for (size_t i = fe; i < m; i++)
            if (cur[i].pos < cur[i].end && docs[cur[i].pos] < d) d = docs[cur[i].pos];
        if (d == INT32_MAX || !doc_ok(P, S, d)) break;
        double partial = 0.0;
        const double *tw = P->tw;
        for (size_t i = m; i-- > fe;) {
            if (cur[i].pos < cur[i].end && docs[cur[i].pos] == d) {
                partial += cur[i].w * tw[cur[i].pos];
                cur[i].pos++;
            }
        }
        int rejected = 0;
        for (size_t k = fe; k-- > 0;) {
            double bound = partial + cum[k];
            if (bound < seed || bound <= theta) {
                rejected = 1;
                break;
            }
            cur[k].pos = gallop(docs, cur[k].pos, cur[k].end, d);
            if (cur[k].pos < cur[k].end && docs[cur[k].pos] == d)
                partial += cur[k].w * tw[cur[k].pos];
        }
        if (!rejected) heap_offer(h, partial, d);
    }
    return 1;
}

/* Better: a higher score, then a smaller document index (the heap's order, as a strict total order). */
static inline int better(Scored a, Scored b) { return a.s > b.s || (a.s == b.s && a.d < b.d); }

/* Sort n pairs best first: runs of 8 by insertion, then a bottom-up merge sort through tmp (n more) whose step
 * has no branch on the comparison (the merged runs interleave at random, so a branch would miss often). */
static void sort_scored(Scored *a, Scored *tmp, int64_t n) {
    enum { RUN = 8 };
    for (int64_t lo = 0; lo < n; lo += RUN) {
        int64_t hi = lo + RUN < n ? lo + RUN : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            Scored x = a[i];
            int64_t j = i;
            for (; j > lo && better(x, a[j - 1]); j--) a[j] = a[j - 1];
            a[j] = x;
        }
    }
    Scored *from = a, *to = tmp;
    for (int64_t width = RUN; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                Scored x = from[i], y = from[j];
                int take_j = (y.s > x.s) | ((y.s == x.s) & (y.d < x.d)); /* better(y, x), without branches */
                to[o++] = take_j ? y : x;
                j += take_j;
                i += 1 - take_j;
            }
            while (i < mid) to[o++] = from[i++];
            while (j < hi) to[o++] = from[j++];
        }
        Scored *t = from;
        from = to;
        to = t;
    }
    if (from != a) memcpy(a, from, (size_t)n * sizeof(Scored));
}

/* Rearrange a[0..n) so that a[0..m) are its m best pairs, in no particular order (0 < m < n): Hoare's
 * selection (Wirth's form) around a median of three. `better` is a strict total order here (the documents are
 * distinct), so the m best are one set and sorting just them gives the first m of a full sort. Used when a
 * deep top k has at least 2k candidates (SciFact's claims at top 100: about 210): sorting k of them after a
 * selection was 7% faster over the whole kernel; with fewer (the Zipf corpus at top 1000: 1.3-2k) selecting
 * first was slower than sorting them all. */
static void keep_best(Scored *a, int64_t n, int64_t m) {
    int64_t lo = 0, hi = n - 1, t = m - 1;
    while (lo < hi) {
        Scored x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi], p;
        if (better(x, y))
            p = better(y, z) ? y : (better(x, z) ? z : x);
        else
            p = better(x, z) ? x : (better(y, z) ? z : y);
        int64_t i = lo, j = hi;
        do {
            while (better(a[i], p)) i++;
            while (better(p, a[j])) j--;
            if (i <= j) {
                Scored s = a[i];
                a[i++] = a[j];
                a[j--] = s;
            }
        } while (i <= j);
        if (j < t) lo = i;
        if (t < i) hi = j;
    }
}

/* Offer (score[i], doc[i]) to the heap, testing the worst kept one before the call (most documents lose). */
static void offer_all(Heap *h, const double *score, const int32_t *doc, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (h->size < h->cap || score[i] >= h->s[0]) heap_offer(h, score[i], doc[i]);
}

/* The top k (h->cap) of n documents with scores v, for a deep k, without heap churn: the scores' range is cut
 * into SELECT_BUCKETS equal buckets (a score's bucket is monotone in it: a difference and a product by a
 * positive constant both round monotonically), the buckets are counted from the top until k documents are
 * covered, and only the documents in those buckets (about k) are merge-sorted, best first, into h
 * (h->sorted). Same documents, same order, as the heap. Falls back to the heap for a NaN score (no place in a
 * histogram) or a range too narrow to divide, and offers only the top buckets' documents to the heap when they
 * are too many to sort (more than SORT_FACTOR * k + buckets: many equal scores). */
enum { SORT_FACTOR = 4 };

static void select_top(Heap *h, const double *v, const int32_t *doc, int64_t n, Scratch *S) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double x = v[i];
        if (x != x) return offer_all(h, v, doc, n);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    double scale = (SELECT_BUCKETS - 1) / (hi - lo);
    int64_t limit = SORT_FACTOR * h->cap + SELECT_BUCKETS;
    if (!(hi > lo) || !(scale < INFINITY) || !(scale > 0.0)) return offer_all(h, v, doc, n);
    if (S->pairs_cap < 2 * limit) {
        Scored *p = realloc(S->pairs, (size_t)(2 * limit) * sizeof(Scored));
        if (!p) return offer_all(h, v, doc, n); /* the heap needs no memory: still correct */
        S->pairs = p;
        S->pairs_cap = 2 * limit;
    }
    uint32_t *count = S->hist;
    memset(count, 0, SELECT_BUCKETS * sizeof(uint32_t));
    for (int64_t i = 0; i < n; i++) {
        int64_t at = (int64_t)((v[i] - lo) * scale);
        count[at < SELECT_BUCKETS ? at : SELECT_BUCKETS - 1]++;
    }
    int64_t covered = 0, b = SELECT_BUCKETS;
    while (b > 0 && covered < h->cap) covered += count[--b];
    if (covered > limit) { /* many equal scores: the heap, but only for the documents in those buckets */
        for (int64_t i = 0; i < n; i++) {
            int64_t at = (int64_t)((v[i] - lo) * scale);
            if ((at < SELECT_BUCKETS ? at : SELECT_BUCKETS - 1) >= b && (h->size < h->cap || v[i] >= h->s[0]))
                heap_offer(h, v[i], doc[i]);
        }
        return;
    }
    Scored *pairs = S->pairs;
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t at = (int64_t)((v[i] - lo) * scale);
        if ((at < SELECT_BUCKETS ? at : SELECT_BUCKETS - 1) >= b) {
            pairs[c].s = v[i];
            pairs[c].d = doc[i];
            c++;
        }
    }
    int64_t kept = c < h->cap ? c : h->cap;
    if (c >= 2 * kept) keep_best(pairs, c, kept); /* pays when it drops half or more */
    sort_scored(pairs, pairs + limit, c >= 2 * kept ? kept : c);
    for (int64_t i = 0; i < kept; i++) {
        h->s[i] = pairs[i].s;
        h->d[i] = pairs[i].d;
    }
    h->size = kept;
    h->sorted = 1;
}

/* Add one term's contributions into the dense accumulator and mark each document met (a store, no test:
 * collect_marked finds them afterwards in index order). */
static inline void accumulate_marked(const Postings *P, const Cursor *c, Scratch *S) {
    double *acc = S->acc, w = c->w;
    unsigned char *seen = S->seen;
    const int32_t *docs = P->docs;
    const double *tw = P->tw;
    for (int64_t j = c->pos; j < c->end; j++) {
        int32_t d = docs[j];
        if (!doc_ok(P, S, d)) break;
        seen[d] = 1;
        acc[d] += w * tw[j];
    }
}

/* accumulate_marked without the marks, for offer_above_blocks, which finds the documents met by their scores
 * (a store fewer a posting: 10% of the kernel on SciFact's claims at top 10). */
static inline void accumulate_unmarked(const Postings *P, const Cursor *c, Scratch *S) {
    double *acc = S->acc, w = c->w;
    const int32_t *docs = P->docs;
    const double *tw = P->tw;
    for (int64_t j = c->pos; j < c->end; j++) {
        int32_t d = docs[j];
        if (!doc_ok(P, S, d)) break;
        acc[d] += w * tw[j];
    }
}

/* Room in S->pairs for n pairs and as many again to merge-sort them through. */
static int reserve_pairs(Scratch *S, int64_t n) {
    if (S->pairs_cap >= 2 * n) return 0;
    Scored *p = realloc(S->pairs, (size_t)(2 * n) * sizeof(Scored));
    if (!p) return -1;
    S->pairs = p;
    S->pairs_cap = 2 * n;
    return 0;
}

/* select_ordered's bucket of score x: monotone in x (a difference and a product by a positive constant both
 * round monotonically, and the clamps keep that), lo in the first bucket, hi in the last; NaN in the first. */
static inline int bucket_of(double x, double lo, double scale) {
    double at = (x - lo) * scale;
    return at >= 0.0 ? (at < SELECT_BUCKETS ? (int)at : SELECT_BUCKETS - 1) : 0;
}

/* The documents marked, in index order, with their scores (into S->touched and S->vals), their slots reset;
 * returns how many. Marks are read a word (8 documents) at a time, so unmarked stretches cost little; within a
 * word the writes are unconditional and only the count moves (a branch on the random marks would be
 * mispredicted half the time; the slots past the last document are padding, never marked). */
static int64_t collect_marked(const Postings *P, Scratch *S) {
    unsigned char *seen = S->seen;
    double *acc = S->acc, *v = S->vals;
    int32_t *doc = S->touched;
    int64_t n = 0;
    for (int32_t base = 0; base < P->n_docs; base += 8) {
        uint64_t word;
        memcpy(&word, seen + base, 8);
        if (!word) continue;
        for (int32_t d = base; d < base + 8; d++) {
            doc[n] = d;
            v[n] = acc[d];
            acc[d] = 0.0;
            n += seen[d];
        }
        memset(seen + base, 0, 8);
    }
    return n;
}

/* Offer the marked documents to the heap in index order, resetting their slots: for a shallow top k, where the
 * heap is cheap (a later document loses a tie, so one that only ties the worst kept need not be offered). The
 * reference for offer_above_blocks, and its way when that cannot place a threshold. */
static void offer_marked(const Postings *P, Heap *h, Scratch *S) {
    unsigned char *seen = S->seen;
    double *acc = S->acc;
    double worst = h->size < h->cap ? -INFINITY : h->s[0];
    for (int32_t base = 0; base < P->n_docs; base += 8) {
        uint64_t word;
        memcpy(&word, seen + base, 8);
        if (!word) continue;
        for (int32_t d = base; d < base + 8; d++) {
            double x = acc[d];
            acc[d] = 0.0;
            /* The score first: an unmarked slot holds 0.0, which loses to a full heap of positive scores, so
             * this branch is rarely taken and the random marks are read only then (a branch on them would
             * be mispredicted half the time). */
            if (!(x <= worst) && seen[d]) {
                heap_offer(h, x, d);
                worst = h->size < h->cap ? -INFINITY : h->s[0];
            }
        }
        memset(seen + base, 0, 8);
    }
}

/* The largest of a[0..n) and 0.0 (n a multiple of 8; a NaN would be skipped, as x > top is false: the caller
 * makes sure there is none). No test or branch on the data: with SSE2 (every x86-64) two slots an instruction,
 * in four independent chains; GCC did not vectorise the plain loop. */
static inline double block_top(const double *a, int64_t n) {
#if defined(__SSE2__)
    __m128d m0 = _mm_setzero_pd(), m1 = m0, m2 = m0, m3 = m0;
    for (int64_t i = 0; i < n; i += 8) {
        __m128d x0 = _mm_loadu_pd(a + i), x1 = _mm_loadu_pd(a + i + 2);
        __m128d x2 = _mm_loadu_pd(a + i + 4), x3 = _mm_loadu_pd(a + i + 6);
        m0 = _mm_max_pd(x0, m0); /* x > m ? x : m, lane by lane */
        m1 = _mm_max_pd(x1, m1);
        m2 = _mm_max_pd(x2, m2);
        m3 = _mm_max_pd(x3, m3);
    }
    double m[2];
    _mm_storeu_pd(m, _mm_max_pd(_mm_max_pd(m0, m1), _mm_max_pd(m2, m3)));
    return m[1] > m[0] ? m[1] : m[0];
#else
    double top = 0.0;
    for (int64_t i = 0; i < n; i++) top = a[i] > top ? a[i] : top;
    return top;
#endif
}

/* The shallow top k (h->cap < SELECT_MIN_K) of the documents met, accumulated without marks, resetting every
 * slot. One pass takes the maximum of each block of TOP_BLOCK slots (block_top) and keeps the k largest
 * positive maxima: they are the scores of k distinct documents (a slot no posting reached holds 0.0, so a
 * positive maximum is a document met), so the k-th of them, theta, is at most the k-th best score, and a
 * document below theta cannot be in the top k. Only the blocks whose maximum reaches theta (about k of them)
 * are read again, and only their documents at or above theta are offered to the heap, in index order: the
 * heap's result over every document, in the same order, with a few dozen offers instead of one per document
 * that beats the worst kept so far (on SciFact's claims at top 10, about 55 offers and most of the selection's
 * time). Returns 0, having changed nothing, when fewer than k blocks have a positive maximum (documents met
 * that score 0 may then belong in the top k, and only marks tell them from slots no posting reached): the
 * caller then accumulates again with marks. Called only when every weight and cached term weight of the query
 * is finite, so no score is NaN (which a maximum would skip; finite terms of BM25's size cannot sum to
 * infinity, nor then to NaN). */
static int offer_above_blocks(const Postings *P, Heap *h, Scratch *S) {
    double *acc = S->acc, *block_max = S->block_max;
    int64_t k = h->cap, have = 0, n_docs = P->n_docs, n_blocks = (n_docs + TOP_BLOCK - 1) / TOP_BLOCK;
    double best[SELECT_MIN_K]; /* the largest block maxima so far, ascending: best[0] is the k-th */
    int64_t padded = (n_docs + 7) / 8 * 8; /* the slots past the last document are padding, always 0.0 */
    for (int64_t b = 0; b < n_blocks; b++) {
        int64_t lo = b * TOP_BLOCK, hi = lo + TOP_BLOCK < padded ? lo + TOP_BLOCK : padded;
        double top = block_top(acc + lo, hi - lo);
        block_max[b] = top;
        if (!(top > 0.0)) continue;
        int64_t i;
        if (have < k) { /* room: insert in place */
            for (i = have++; i > 0 && best[i - 1] > top; i--) best[i] = best[i - 1];
            best[i] = top;
        } else if (top > best[0]) { /* full: drop the smallest, insert in place */
            for (i = 0; i + 1 < k && best[i + 1] < top; i++) best[i] = best[i + 1];
            best[i] = top;
        }
    }
    if (have < k) return 0;
    double theta = best[0];
    for (int64_t b = 0; b < n_blocks; b++) {
        if (block_max[b] < theta) continue;
        int64_t lo = b * TOP_BLOCK, hi = lo + TOP_BLOCK < n_docs ? lo + TOP_BLOCK : n_docs;
        for (int64_t d = lo; d < hi; d++)
            if (acc[d] >= theta) heap_offer(h, acc[d], (int32_t)d);
    }
    memset(acc, 0, (size_t)n_docs * sizeof(double));
    return 1;
}

/* The top k (h->cap) of n documents met in index order (doc ascending) with scores v, for a deep k, many equal
 * scores included: unless they are few enough to sort at once, the scores' range is cut into SELECT_BUCKETS
 * buckets, the buckets wholly inside the top k are taken, and the one bucket the k-th best falls in is cut
 * again, in place (order kept), until it is small enough to sort or holds a single score, whose best documents are then simply its first ones (a smaller
 * document wins a tie). What was taken, at most k pairs, is merge-sorted best first into h (h->sorted): the
 * heap's documents in the heap's order. Falls back to the heap for a NaN score or a range too narrow to cut. */
static void select_ordered(Heap *h, double *v, int32_t *doc, int64_t n, Scratch *S) {
    int64_t need = h->cap, kept = 0, small = 4 * h->cap + SELECT_BUCKETS;
    if (reserve_pairs(S, h->cap + small) < 0) return offer_all(h, v, doc, n); /* the heap needs no memory */
    Scored *pairs = S->pairs, *sorting = S->pairs + h->cap, *tail = NULL; /* taken pairs, then room to sort */
    uint32_t *count = S->hist;
    int one_score = 0;
    while (n > need) {
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            double x = v[i];
            if (x != x) lo = hi = NAN;
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
        if (lo == hi) { /* one score left: its first documents are its best, already in order */
            one_score = 1;
            break;
        }
        double scale = (SELECT_BUCKETS - 1) / (hi - lo);
        if (!(hi > lo) || !(scale < INFINITY) || !(scale > 0.0)) { /* NaN, or no room to cut: the heap */
            h->size = 0;
            for (int64_t i = 0; i < kept; i++) heap_offer(h, pairs[i].s, pairs[i].d);
            return offer_all(h, v, doc, n);
        }
        if (n <= small) { /* few enough to sort: the best of them follow, in order, what was taken above */
            for (int64_t i = 0; i < n; i++) {
                sorting[i].s = v[i];
                sorting[i].d = doc[i];
            }
            if (n >= 2 * need) keep_best(sorting, n, need); /* pays when it drops half or more */
            sort_scored(sorting, sorting + n, n >= 2 * need ? need : n);
            tail = sorting;
            n = 0;
            break;
        }
        memset(count, 0, SELECT_BUCKETS * sizeof(uint32_t));
        for (int64_t i = 0; i < n; i++) count[bucket_of(v[i], lo, scale)]++;
        int64_t above = 0;
        int b = SELECT_BUCKETS - 1;
        while (above + count[b] < need) above += count[b--]; /* b: the bucket of the need-th best */
        int64_t w = 0;
        for (int64_t i = 0; i < n; i++) {
            int at = bucket_of(v[i], lo, scale);
            if (at > b) {
                pairs[kept].s = v[i];
                pairs[kept++].d = doc[i];
            } else if (at == b) {
                v[w] = v[i];
                doc[w++] = doc[i];
            }
        }
        need -= above;
        n = w;
    }
    if (!tail && !one_score) { /* no more than need were left: all of them are in, to sort with the rest */
        for (int64_t i = 0; i < n; i++) {
            pairs[kept].s = v[i];
            pairs[kept++].d = doc[i];
        }
        n = 0;
    }
    /* the pairs taken above the last cut, sorted, then the best `need` of what was left below it: those sorted
     * (tail), or, when one score was left, the first in index order */
    sort_scored(pairs, sorting + 2 * small, kept);
    for (int64_t i = 0; i < kept; i++) {
        h->s[i] = pairs[i].s;
        h->d[i] = pairs[i].d;
    }
    int64_t rest = tail ? need : (n < need ? n : need);
    for (int64_t i = 0; i < rest; i++) {
        h->s[kept + i] = tail ? tail[i].s : v[i];
        h->d[kept + i] = tail ? tail[i].d : doc[i];
    }
    h->size = kept + rest;
    h->sorted = 1;
}

/* The r-th largest of a[0..n) (1 <= r <= n), reordering a: quickselect with a three-way partition, so many
 * equal values cost one step, not one each. */
static double rth_largest(double *a, int64_t n, int64_t r) {
    int64_t lo = 0, hi = n, want = r - 1; /* the answer's place in descending order, within [lo, hi) */
    while (hi - lo > 1) {
        double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
        double pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y)); /* median of 3 */
        int64_t gt = lo, i = lo, lt = hi; /* [lo, gt) > pivot, [gt, i) == pivot, [lt, hi) < pivot */
        while (i < lt) {
            double t = a[i];
            if (t > pivot) {
                a[i++] = a[gt];
                a[gt++] = t;
            } else if (t < pivot) {
                a[i] = a[--lt];
                a[lt] = t;
            } else {
                i++;
            }
        }
        if (want < gt)
            hi = gt;
        else if (want < lt)
            return pivot;
        else
            lo = lt;
    }
    return a[lo];
}

/* select_above_sample reads one slot in 16, in 32 from 65,536 documents (measured on SciFact's 5,183 and the
 * Zipf corpus's 100,000: on the larger corpus the sample's own cost matters more than its precision) */
enum { SAMPLE_STRIDE = 16, SAMPLE_STRIDE_LARGE = 32, SAMPLE_LARGE = 65536 };

/* A deep top k of the marked documents when every weight is positive (so every marked score is > 0 and every
 * unmarked slot holds 0.0), from a sample: the scores of one slot in a stride place a threshold a little below
 * the k-th best (the sample's r-th best, r = k / stride plus two standard deviations of that count, plus 2). One pass then takes the documents above the threshold and, in index order, the first k that equal it (a
 * later one cannot beat an earlier one it ties), resetting every slot; select_ordered picks the k best of those
 * few. When they are k or more they hold the top k, so the result is the heap's: the same documents in the same
 * order. Returns 1 when done; 0, having changed nothing, when the sample is too thin to place a threshold; -1
 * when fewer than k documents reached it (the slots are then reset: the caller accumulates again). */
static int select_above_sample(const Postings *P, Heap *h, Scratch *S) {
    double *acc = S->acc, *v = S->vals;
    int32_t *doc = S->touched;
    int64_t k = h->cap, n_docs = P->n_docs, n = 0, equal = 0;
    int64_t stride = n_docs >= SAMPLE_LARGE ? SAMPLE_STRIDE_LARGE : SAMPLE_STRIDE;
    double expected = (double)k / stride;
    int64_t r = (int64_t)(expected + 2.0 * sqrt(expected)) + 2;
    for (int64_t d = 0; d < n_docs; d += stride) { /* v is free until the candidates are taken */
        v[n] = acc[d];
        n += acc[d] > 0.0;
    }
    if (n < 2 * r) return 0; /* too few marked documents in the sample to place the threshold */
    double threshold = rth_largest(v, n, r);
    n = 0;
    for (int64_t d = 0; d < n_docs; d++) {
        double x = acc[d];
        acc[d] = 0.0;
        if (x >= threshold && (x > threshold || equal++ < k)) { /* only marked documents score > 0 */
            v[n] = x;
            doc[n++] = (int32_t)d;
        }
    }
    memset(S->seen, 0, (size_t)n_docs);
    if (n < k) return -1;
    select_ordered(h, v, doc, n, S);
    return 1;
}

/* Every posting of every query term, term-at-a-time in descending order of upper bound (the order MaxScore
 * sums in), then the top k of the documents met. Used when a term weight is negative (no safe pruning), for
 * all_docs, and when the cost model finds pruning would not pay. Two ways to find the documents met:
 *  - dense (the query's postings are at least an eighth of the corpus size): each posting only marks its
 *    document; one pass over the marks (a word of 8 at a time) collects the documents in index order, which
 *    lets a deep top k resolve ties by position (select_ordered);
 *  - sparse: each document is listed the first time it is met, and only those slots are read and reset, so a
 *    query costs its postings, not the corpus size.
 * all_docs, which ranks documents matching no term too, reads every slot. */
static void exhaustive(const Postings *P, Cursor *cur, size_t m, Heap *h, Scratch *S, int all_docs, int finite) {
    int64_t total = 0;
    int signed_weights = 0;
    for (size_t i = 0; i < m; i++) {
        total += cur[i].end - cur[i].pos;
        signed_weights |= !(cur[i].w > 0.0);
    }
    if (!all_docs && finite && total >= P->n_docs / 8 && h->cap < SELECT_MIN_K) {
        for (size_t i = m; i-- > 0 && S->bad_doc < 0;) accumulate_unmarked(P, &cur[i], S);
        if (offer_above_blocks(P, h, S)) return;
        /* no threshold (few documents scored above 0, or a NaN): once more with marks, offering every one */
        memset(S->acc, 0, (size_t)P->n_docs * sizeof(double));
        for (size_t i = m; i-- > 0 && S->bad_doc < 0;) accumulate_marked(P, &cur[i], S);
        return offer_marked(P, h, S);
    }
    if (!all_docs && total >= P->n_docs / 8) {
        for (size_t i = m; i-- > 0 && S->bad_doc < 0;) accumulate_marked(P, &cur[i], S);
        if (h->cap < SELECT_MIN_K) return offer_marked(P, h, S); /* a weight that is not finite */
        if (!signed_weights) {
            int done = select_above_sample(P, h, S);
            if (done > 0) return;
            if (done < 0) /* the threshold was too high: the slots were reset, so once more in full */
                for (size_t i = m; i-- > 0 && S->bad_doc < 0;) accumulate_marked(P, &cur[i], S);
        }
        select_ordered(h, S->vals, S->touched, collect_marked(P, S), S);
        return;
    }
    S->n_touched = 0;
    for (size_t i = m; i-- > 0 && S->bad_doc < 0;) accumulate(P, &cur[i], S);
    double *acc = S->acc, *v = S->vals;
    const int32_t *touched = S->touched;
    int64_t n = S->n_touched;
    if (all_docs)
        for (int32_t d = 0; d < P->n_docs; d++) heap_offer(h, acc[d], d);
    for (int64_t i = 0; i < n; i++) { /* gather the scores met, in list order, and reset their slots */
        int32_t d = touched[i];
        v[i] = acc[d];
        acc[d] = 0.0;
        S->seen[d] = 0;
    }
    if (all_docs) return;
    if (h->cap >= SELECT_MIN_K && n > 2 * h->cap)
        select_top(h, v, touched, n, S);
    else
        offer_all(h, v, touched, n);
}

/* Fill the weight cache for every query term not filled yet: tw[j] = term_weight(tf_j, norm of doc_j) over the
 * term's postings, then ready[t] = 1 (2 when a weight is not finite: NaN or infinity, which the parameters'
 * checks should rule out, but offer_above_blocks must not meet). Runs holding the GIL, so threads searching
 * with the same cache never write a term another reads (a term is read only once ready). Checks each term's
 * posting range (bad_term) and each document id (S->bad_doc) before using them. */
static void fill_weights(const Postings *P, double *tw, unsigned char *ready, const int32_t *qt, Py_ssize_t n_qt,
                         int64_t n_postings, Scratch *S, int64_t *bad_term) {
    for (Py_ssize_t i = 0; i < n_qt; i++) {
        int32_t t = qt[i];
        if (ready[t]) continue;
        int64_t a = P->ptr[t], e = P->ptr[t + 1];
        if (a < 0 || e < a || e > n_postings) {
            *bad_term = t;
            return;
        }
        int finite = 1;
        for (int64_t j = a; j < e; j++) {
            int32_t d = P->docs[j];
            if (!doc_ok(P, S, d)) return;
            tw[j] = term_weight(P, tf_at(P, j), P->norm[d]);
            finite &= isfinite(tw[j]) != 0;
        }
        ready[t] = finite ? 1 : 2;
    }
}

/* search(term_ptr, post_docs, post_tf, tf_size, norm, q_ptr, q_terms, q_weights, q_ub, k, mode, k1, delta,
 *        strategy, tw, ready) -> (res_ptr int64 bytes [nq+1], res_docs int32 bytes, res_scores float64 bytes)
 * q_ub is an upper bound of weight * term_weight over the term's postings (used by MaxScore only). tw (float64,
 * one per posting) and ready (uint8, one per term) are the weight cache, writable, kept by the caller across
 * calls with the same mode, k1, delta and norm; ready all zero for a new one. */
static PyObject *search(PyObject *self, PyObject *args) {
    Py_buffer pb, db, tb, nb, qpb, qtb, qwb, qub, twb, rb;
    int tf_size, mode, strategy;
    Py_ssize_t k;
    double k1, delta;
    if (!PyArg_ParseTuple(args, "y*y*y*iy*y*y*y*y*nidd" "iw*w*", &pb, &db, &tb, &tf_size, &nb, &qpb, &qtb, &qwb,
                          &qub, &k, &mode, &k1, &delta, &strategy, &twb, &rb))
        return NULL;
    PyObject *result = NULL;
    Buf out_docs = {0}, out_scores = {0};
    Scratch S = {0};
    S.bad_doc = -1;
    int64_t bad_term = -1;
    Heap h = {0}, tmp = {0};
    PyObject *ptr_out = NULL;
    int failed = 0;
    if (check_buffer(&pb, 8, "term_ptr") < 0 || check_buffer(&db, 4, "post_docs") < 0 ||
        check_buffer(&nb, 8, "norm") < 0 || check_buffer(&qpb, 8, "q_ptr") < 0 || check_buffer(&qtb, 4, "q_terms") < 0 ||
        check_buffer(&qwb, 8, "q_weights") < 0 || check_buffer(&qub, 8, "q_ub") < 0)
        goto done;
    if (twb.len != db.len * 2 || rb.len != pb.len / 8 - 1) {
        PyErr_SetString(PyExc_ValueError, "the weight cache must hold one float64 a posting and one byte a term");
        goto done;
    }
    if ((tf_size != 2 && tf_size != 4) || tb.len != db.len / 4 * tf_size) {
        PyErr_SetString(PyExc_ValueError, "post_tf must be uint16 or int32 and as long as post_docs");
        goto done;
    }
    if (k < 1) {
        PyErr_SetString(PyExc_ValueError, "k must be >= 1");
        goto done;
    }
    if (pb.len < 8 || nb.len / 8 > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "damaged index: term_ptr is empty or there are too many documents");
        goto done;
    }
    Postings P = {(const int64_t *)pb.buf, (const int32_t *)db.buf, tb.buf, tf_size, (const double *)nb.buf,
                  (int32_t)(nb.len / 8), mode, k1, delta, (const double *)twb.buf};
    const int64_t n_postings = db.len / 4;
    Py_ssize_t n_terms = pb.len / 8 - 1, nq = qpb.len / 8 - 1;
    const int64_t *qp = (const int64_t *)qpb.buf;
    const int32_t *qt = (const int32_t *)qtb.buf;
    const double *qw = (const double *)qwb.buf, *qu = (const double *)qub.buf;
    if (nq < 0 || qp[0] != 0 || qp[nq] != qtb.len / 4 || qwb.len != qtb.len * 2 || qub.len != qtb.len * 2) {
        PyErr_SetString(PyExc_ValueError, "query arrays disagree");
        goto done;
    }
    for (Py_ssize_t i = 0; i < qtb.len / 4; i++)
        if (qt[i] < 0 || qt[i] >= n_terms) {
            PyErr_SetString(PyExc_ValueError, "query term id out of range");
            goto done;
        }
    fill_weights(&P, (double *)twb.buf, (unsigned char *)rb.buf, qt, qtb.len / 4, n_postings, &S, &bad_term);
    const unsigned char *ready = (const unsigned char *)rb.buf;
    if (bad_term >= 0 || S.bad_doc >= 0) goto report;
    int64_t cap = k < P.n_docs ? k : P.n_docs;
    if (cap < 1) cap = 1;
    h.s = malloc(cap * sizeof(double));
    h.d = malloc(cap * sizeof(int32_t));
    h.cap = cap;
    tmp.s = malloc(cap * sizeof(double));
    tmp.d = malloc(cap * sizeof(int32_t));
    tmp.cap = cap;
    ptr_out = PyBytes_FromStringAndSize(NULL, (nq + 1) * 8);
    if (!h.s || !h.d || !tmp.s || !tmp.d || !ptr_out) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int64_t *rp = (int64_t *)PyBytes_AS_STRING(ptr_out);
    rp[0] = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t q = 0; q < nq && !failed; q++) {
        size_t m = (size_t)(qp[q + 1] - qp[q]);
        h.size = 0;
        h.sorted = 0;
        if (scratch_terms(&S, m ? m : 1) < 0) {
            failed = 1;
            break;
        }
        int use_maxscore = strategy == STRATEGY_MAXSCORE || strategy == STRATEGY_AUTO, finite = 1;
        int64_t total = 0, longest = 0;
        for (size_t i = 0; i < m; i++) {
            int32_t t = qt[qp[q] + i];
            Cursor c = {t, qw[qp[q] + i], qu[qp[q] + i], P.ptr[t], P.ptr[t + 1]};
            if (c.pos < 0 || c.end < c.pos || c.end > n_postings) { /* a damaged index */
                bad_term = t;
                break;
            }
            if (!(c.w >= 0.0)) use_maxscore = 0;
            finite &= isfinite(c.w) && ready[t] == 1;
            total += c.end - c.pos;
            if (c.end - c.pos > longest) longest = c.end - c.pos;
            S.cur[i] = c;
        }
        if (bad_term >= 0) break;
        if (m > 1) sort_cursors(S.cur, m);
        if (use_maxscore && strategy == STRATEGY_AUTO)
            use_maxscore = worth_seeding(cap, P.n_docs, total, longest);
        if (!use_maxscore || !maxscore(&P, S.cur, m, &h, &tmp, &S, strategy == STRATEGY_AUTO ? total : -1)) {
            if (scratch_dense(&S, P.n_docs) < 0) {
                failed = 1;
                break;
            }
            exhaustive(&P, S.cur, m, &h, &S, strategy == STRATEGY_ALL_DOCS, finite);
        }
        if (S.bad_doc >= 0) break;
        if (buf_reserve(&out_docs, h.size * sizeof(int32_t)) < 0 ||
            buf_reserve(&out_scores, h.size * sizeof(double)) < 0) {
            failed = 1;
            break;
        }
        int64_t got = h.size;
        heap_drain(&h, (int32_t *)(out_docs.data + out_docs.len), (double *)(out_scores.data + out_scores.len));
        out_docs.len += got * sizeof(int32_t);
        out_scores.len += got * sizeof(double);
        rp[q + 1] = rp[q] + got;
    }
    Py_END_ALLOW_THREADS;
report:
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    if (bad_term >= 0) {
        PyErr_Format(PyExc_ValueError, "damaged index: the postings of term %lld lie outside 0..%lld",
                     (long long)bad_term, (long long)n_postings);
        goto done;
    }
    if (S.bad_doc >= 0) {
        PyErr_Format(PyExc_ValueError, "damaged index: a posting names document %lld, outside 0..%lld",
                     S.bad_doc == INT32_MAX ? -1LL : (long long)S.bad_doc, (long long)P.n_docs - 1);
        goto done;
    }
    {
        PyObject *d = buf_to_bytes(&out_docs), *s = buf_to_bytes(&out_scores);
        if (d && s) result = PyTuple_Pack(3, ptr_out, d, s);
        Py_XDECREF(d);
        Py_XDECREF(s);
    }
done:
    Py_XDECREF(ptr_out);
    free(out_docs.data);
    free(out_scores.data);
    free(h.s);
    free(h.d);
    free(tmp.s);
    free(tmp.d);
    free(S.acc);
    free(S.seen);
    free(S.cur);
    free(S.cum);
    free(S.cand);
    free(S.touched);
    free(S.hist);
    free(S.block_max);
    free(S.vals);
    free(S.pairs);
    PyBuffer_Release(&twb);
    PyBuffer_Release(&rb);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&db);
    PyBuffer_Release(&tb);
    PyBuffer_Release(&nb);
    PyBuffer_Release(&qpb);
    PyBuffer_Release(&qtb);
    PyBuffer_Release(&qwb);
    PyBuffer_Release(&qub);
    return result;
}

/* ------------------------------------------------------------------------------------------------ run_rows */

/* A score as trec_eval 9 and pytrec_eval hold it, a C float (out of float range: infinity, as IEEE rounding
 * has it; tested first, since C leaves converting an out-of-range double to float undefined). */
static inline double as_single(double x) {
    if (x >= 0x1.ffffffp127) return INFINITY;
    if (x <= -0x1.ffffffp127) return -INFINITY;
    return (double)(float)x;
}

/* Sort distinct keys ascending: runs of 8 by insertion, then a bottom-up merge sort through tmp (n more) whose
 * step has no branch on the comparison. */
static void sort_keys(uint64_t *a, uint64_t *tmp, int64_t n) {
    enum { RUN = 8 };
    for (int64_t lo = 0; lo < n; lo += RUN) {
        int64_t hi = lo + RUN < n ? lo + RUN : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            uint64_t x = a[i];
            int64_t j = i;
            for (; j > lo && a[j - 1] > x; j--) a[j] = a[j - 1];
            a[j] = x;
        }
    }
    uint64_t *from = a, *to = tmp;
    for (int64_t width = RUN; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                uint64_t x = from[i], y = from[j];
                int take_j = y < x;
                to[o++] = take_j ? y : x;
                j += take_j;
                i += 1 - take_j;
            }
            while (i < mid) to[o++] = from[i++];
            while (j < hi) to[o++] = from[j++];
        }
        uint64_t *t = from;
        from = to;
        to = t;
    }
    if (from != a) memcpy(a, from, (size_t)n * sizeof(uint64_t));
}

/* The rows of query results lo..hi (best first as doubles) in trec_eval's order, appended to rows[*at...]:
 * runs of rows whose scores tie as C floats sorted by doc id rank descending. Returns 1 when the scores rise
 * or are NaN (not the kernel's order), -1 for a document outside the rank array, else 0. */
static int order_query(int64_t lo, int64_t hi, const int32_t *docs, const double *scores, const int32_t *rank,
                       int64_t n_docs, uint64_t *keys, uint64_t *tmp, int64_t *rows, int64_t *at) {
    for (int64_t a = lo; a < hi;) {
        double s = as_single(scores[a]);
        int64_t e = a + 1;
        while (e < hi && as_single(scores[e]) == s) e++;
        if (s != s || (e < hi && !(as_single(scores[e]) < s))) return 1; /* NaN, or rising */
        if (e - a == 1) {
            rows[(*at)++] = a++;
            continue;
        }
        for (int64_t p = a; p < e; p++) {
            int32_t d = docs[p];
            if (d < 0 || d >= n_docs || rank[d] < 0) return -1;
            keys[p - a] = ((uint64_t)(uint32_t)(INT32_MAX - rank[d]) << 32) | (uint64_t)(p - lo);
        }
        sort_keys(keys, tmp, e - a);
        for (int64_t p = 0; p < e - a; p++) rows[(*at)++] = lo + (int64_t)(keys[p] & 0xFFFFFFFFu);
        a = e;
    }
    return 0;
}

/* run_rows(res_ptr int64 [nq + 1], docs int32 [n], scores float64 [n], doc_rank int32 [n_docs],
 *          query_order int64 [m], id_offsets int64 [n_docs + 1] or None, id_data or None,
 *          out_offsets int64 [t + 1] or None, out_scores float64 [t] or None)
 *   -> rows (bytes), or (rows, doc id bytes) with the ids given; or None
 * The search results in trec_eval's order, as the rows of the results to take (int32, or int64 from 2**31
 * rows): the queries in query_order, each query's rows by score descending compared as C floats (trec_eval 9,
 * pytrec_eval), then doc id descending in byte order, which is doc_rank descending (doc_rank[d]: the place of
 * document d's id among all ids in byte order). The results come best first (double score descending), so the
 * float order is already there and only runs of rows with equal float scores are sorted, by rank. With the
 * index's doc id column, also each taken row's doc id (a string column: offsets written into out_offsets, the
 * bytes returned) and score (into out_scores); t is the number of rows taken, and the caller allocates those
 * two (numpy's large arrays come on huge pages: fewer page faults than fresh bytes here). None when a query's
 * scores are not in descending order (the caller then sorts everything itself). */
static PyObject *run_rows(PyObject *self, PyObject *args) {
    Py_buffer pb, db, sb, rb, ob, ib = {0}, tb = {0}, fb = {0}, cb = {0};
    PyObject *id_offsets, *id_data, *out_offsets, *out_scores;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*OOOO", &pb, &db, &sb, &rb, &ob, &id_offsets, &id_data, &out_offsets,
                          &out_scores))
        return NULL;
    PyObject *result = NULL, *out = NULL, *data = NULL;
    uint64_t *keys = NULL, *tmp = NULL;
    int64_t *rows = NULL;
    int status = 0, gather = id_offsets != Py_None;
    if (gather && (PyObject_GetBuffer(id_offsets, &ib, PyBUF_SIMPLE) < 0 ||
                   PyObject_GetBuffer(id_data, &tb, PyBUF_SIMPLE) < 0 ||
                   PyObject_GetBuffer(out_offsets, &fb, PyBUF_WRITABLE) < 0 ||
                   PyObject_GetBuffer(out_scores, &cb, PyBUF_WRITABLE) < 0))
        goto done;
    if (check_buffer(&pb, 8, "res_ptr") < 0 || check_buffer(&db, 4, "docs") < 0 || check_buffer(&sb, 8, "scores") < 0 ||
        check_buffer(&rb, 4, "doc_rank") < 0 || check_buffer(&ob, 8, "query_order") < 0 ||
        (gather && check_buffer(&ib, 8, "id_offsets") < 0))
        goto done;
    const int64_t *ptr = pb.buf, *order = ob.buf, *ids_at = ib.buf;
    const int32_t *docs = db.buf, *rank = rb.buf;
    const double *scores = sb.buf;
    const char *ids = tb.buf;
    int64_t n = db.len / 4, nq = pb.len / 8 - 1, m = ob.len / 8, n_docs = rb.len / 4, total = 0, longest = 0;
    if (nq < 0 || sb.len != 2 * db.len || ptr[0] != 0 || ptr[nq] != n) {
        PyErr_SetString(PyExc_ValueError, "run_rows: result arrays disagree");
        goto done;
    }
    for (int64_t i = 0; i < m; i++) {
        int64_t q = order[i];
        if (q < 0 || q >= nq || ptr[q + 1] < ptr[q] || ptr[q + 1] > n) {
            PyErr_SetString(PyExc_ValueError, "run_rows: a query outside the results");
            goto done;
        }
        total += ptr[q + 1] - ptr[q];
        if (ptr[q + 1] - ptr[q] > longest) longest = ptr[q + 1] - ptr[q];
    }
    if (gather && (ib.len != (n_docs + 1) * 8 || fb.len != (total + 1) * 8 || cb.len != total * 8)) {
        PyErr_SetString(PyExc_ValueError, "run_rows: id offsets or output arrays of the wrong size");
        goto done;
    }
    int wide = total >= INT32_MAX;
    out = PyBytes_FromStringAndSize(NULL, total * (wide ? 8 : 4));
    rows = malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    keys = malloc((size_t)(longest ? longest : 1) * sizeof(uint64_t));
    tmp = malloc((size_t)(longest ? longest : 1) * sizeof(uint64_t));
    if (!out || !rows || !keys || !tmp) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int64_t at = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (int64_t i = 0; i < m && !status; i++)
        status = order_query(ptr[order[i]], ptr[order[i] + 1], docs, scores, rank, n_docs, keys, tmp, rows, &at);
    if (!status) {
        char *raw = PyBytes_AS_STRING(out);
        for (int64_t i = 0; i < total; i++) {
            if (wide)
                memcpy(raw + 8 * i, &rows[i], 8);
            else {
                int32_t r32 = (int32_t)rows[i];
                memcpy(raw + 4 * i, &r32, 4);
            }
        }
    }
    Py_END_ALLOW_THREADS;
    if (status < 0) {
        PyErr_SetString(PyExc_ValueError, "damaged index: a result names a document outside the document ids");
        goto done;
    }
    if (status > 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    if (!gather) {
        result = out;
        out = NULL;
        goto done;
    }
    int64_t bytes = 0; /* the doc ids' total length, each checked against the data (a damaged index) */
    for (int64_t i = 0; i < total && status == 0; i++) {
        int32_t d = docs[rows[i]];
        int64_t a = ids_at[d], e = ids_at[d + 1];
        if (a < 0 || e < a || e > tb.len) status = -1;
        bytes += e - a;
    }
    if (status < 0) {
        PyErr_SetString(PyExc_ValueError, "damaged index: doc id offsets out of range");
        goto done;
    }
    data = PyBytes_FromStringAndSize(NULL, bytes);
    if (!data) goto done;
    int64_t *off = (int64_t *)fb.buf;
    double *sc = (double *)cb.buf;
    char *to = PyBytes_AS_STRING(data);
    Py_BEGIN_ALLOW_THREADS;
    int64_t filled = 0;
    for (int64_t i = 0; i < total; i++) {
        int32_t d = docs[rows[i]];
        int64_t a = ids_at[d], len = ids_at[d + 1] - a;
        off[i] = filled;
        if (len <= 8 && a + 8 <= tb.len && filled + 8 <= bytes) /* one word, not a call: ids are short, and */
            memcpy(to + filled, ids + a, 8);                     /* the bytes past len are overwritten next */
        else
            memcpy(to + filled, ids + a, (size_t)len);
        filled += len;
        sc[i] = scores[rows[i]];
    }
    off[total] = filled;
    Py_END_ALLOW_THREADS;
    result = PyTuple_Pack(2, out, data);
done:
    Py_XDECREF(out);
    Py_XDECREF(data);
    free(rows);
    free(keys);
    free(tmp);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&db);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&rb);
    PyBuffer_Release(&ob);
    if (ib.obj) PyBuffer_Release(&ib);
    if (tb.obj) PyBuffer_Release(&tb);
    if (fb.obj) PyBuffer_Release(&fb);
    if (cb.obj) PyBuffer_Release(&cb);
    return result;
}

/* ------------------------------------------------------------------------------------------------ checksum */

/* A 64-bit multiply-xorshift chain over bytes (8 at a time), continuing from state h. */
static inline uint64_t hash_more(uint64_t h, const unsigned char *p, size_t n) {
    h ^= (uint64_t)n * 0x9E3779B97F4A7C15ULL;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, p, n);
    h = (h ^ v ^ ((uint64_t)n << 56)) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    return h;
}

static inline uint64_t finish(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* checksum(ids, texts, start) -> (low, high): the sum modulo 2**128 over documents of a 128-bit hash (two
 * independent 64-bit chains) of (start + i, UTF-8 id, UTF-8 text). Additive, so checksums of batches add up. */
static PyObject *checksum(PyObject *self, PyObject *args) {
    PyObject *ids_in, *texts_in;
    long long start;
    if (!PyArg_ParseTuple(args, "OOL", &ids_in, &texts_in, &start)) return NULL;
    PyObject *ids = PySequence_Fast(ids_in, "ids must be a sequence of str");
    if (!ids) return NULL;
    PyObject *texts = PySequence_Fast(texts_in, "texts must be a sequence of str");
    if (!texts) {
        Py_DECREF(ids);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(texts);
    if (PySequence_Fast_GET_SIZE(ids) != n) {
        PyErr_SetString(PyExc_ValueError, "ids and texts differ in length");
        goto done;
    }
    uint64_t lo = 0, hi = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t idn, tn;
        const char *id = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(ids, i), &idn);
        if (!id) goto done;
        PyObject *text = PySequence_Fast_GET_ITEM(texts, i);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "document %zd is %.100s, not str", i, Py_TYPE(text)->tp_name);
            goto done;
        }
        const char *t = PyUnicode_AsUTF8AndSize(text, &tn);
        if (!t) goto done;
        uint64_t position = (uint64_t)(start + i);
        uint64_t a = finish(position ^ 0x5EED5EED5EED5EEDULL), b = finish(position + 0x243F6A8885A308D3ULL);
        a = hash_more(hash_more(a, (const unsigned char *)id, (size_t)idn), (const unsigned char *)t, (size_t)tn);
        b = hash_more(hash_more(b, (const unsigned char *)t, (size_t)tn), (const unsigned char *)id, (size_t)idn);
        a = finish(a);
        b = finish(b ^ 0x13198A2E03707344ULL);
        uint64_t old = lo;
        lo += a;
        hi += b + (lo < old);
    }
    result = Py_BuildValue("(KK)", (unsigned long long)lo, (unsigned long long)hi);
done:
    Py_DECREF(ids);
    Py_DECREF(texts);
    return result;
}

/* ------------------------------------------------------------------------------------------------- module */

static PyMethodDef methods[] = {
    {"tokenize", tokenize, METH_VARARGS, "Word-character runs of many strings, interned: (offsets, ids, tokens)."},
    {"build_postings", build_postings, METH_VARARGS, "Postings grouped by term and sorted by document."},
    {"find_terms", find_terms, METH_VARARGS, "Positions of terms in a sorted vocabulary, -(insertion point + 1) when absent."},
    {"vocab_table", vocab_table, METH_VARARGS, "A hash table of a sorted vocabulary's term ids, for lookup_terms."},
    {"lookup_terms", lookup_terms, METH_VARARGS, "Term ids through vocab_table's table, -1 when absent."},
    {"search", search, METH_VARARGS, "Top-k BM25 results per query (MaxScore or exhaustive)."},
    {"run_rows", run_rows, METH_VARARGS, "Search results' rows in trec_eval's order, with their doc ids and scores."},
    {"checksum", checksum, METH_VARARGS, "Additive 128-bit checksum of (position, id, text) triples."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bm25", "BM25 tokenising, indexing and search loops.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__bm25(void) {
    init_ascii_table();
    return PyModule_Create(&module);
}
