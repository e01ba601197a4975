/* GopherRepetition's n-gram statistics in C: curate.filters._repetition.ngram_stats.
 *
 * Why: in Python (a dict of word ids, then numpy per n) these statistics were most of the filter's cost and
 * about a sixth of the web pipeline's CPU. The decisions stay in Python (curate/filters/gopher.py); this module
 * only counts, and counts exactly what the Python implementation (gopher._ngram_stats_python, the reference in
 * tests/test_gopher_repetition_compiled.py) counts:
 *
 *  - words get ids in order of first appearance, from 1;
 *  - the n-gram starting at word i is hashed as h_n[i] = h_{n-1}[i] * M + id[i + n - 1] (mod 2^64), h_1 = id,
 *    so that both sides see the same 64-bit values and agree even on a collision;
 *  - top n-gram characters: the n-gram with the highest count, ties to the one that occurs first, times its
 *    length (its words' characters plus n - 1 spaces);
 *  - duplicate n-gram characters: scan left to right; at an n-gram seen before, add its words' characters
 *    and jump n words, else remember it and move one word (what datatrove's GopherRepetitionFilter does).
 *
 * Time is linear in the words for each n. Memory, freed on return, is at most about 220 bytes a word (the
 * n-gram table, 2-4 slots of 24 bytes a word, reused across n by a generation stamp; the word table, 2-4 entries
 * of 24 bytes; ids, hashes and prefix sums, 24 bytes); no string is copied. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MULT 0x9E3779B97F4A7C15ull /* gopher._HASH_MULT */

typedef struct { /* 24 bytes: counts and positions fit 32 bits (ngram_stats refuses 2^31 words or more) */
    uint64_t key;
    uint32_t stamp; /* the slot is in use for the current pass when stamp == the table's */
    uint32_t count;
    uint32_t first;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask;
    uint32_t stamp;
} Table;

static inline size_t mix(uint64_t h) { /* MurmurHash3's fmix64: the low bits of h alone are poor */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (size_t)h;
}

static int table_init(Table *t, Py_ssize_t items) {
    size_t cap = 16;
    while (cap < (size_t)items * 2) cap <<= 1;
    t->slots = PyMem_Calloc(cap, sizeof(Slot));
    if (!t->slots) {
        PyErr_NoMemory();
        return -1;
    }
    t->mask = cap - 1;
    t->stamp = 0;
    return 0;
}

/* The slot of `key` in the current pass: found (its stamp is current) or free (the caller claims it). */
static inline Slot *table_find(Table *t, uint64_t key) {
    for (size_t i = mix(key) & t->mask;; i = (i + 1) & t->mask) {
        Slot *s = &t->slots[i];
        if (s->stamp != t->stamp || s->key == key) return s;
    }
}

/* Word ids by first appearance (1, 2, ...) and each word's length in code points. */
static int word_ids(PyObject *words, Py_ssize_t n, uint64_t *ids, int64_t *lens) {
    typedef struct {
        PyObject *word;
        Py_hash_t hash;
        uint64_t id;
    } Entry;
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap <<= 1;
    Entry *tab = PyMem_Calloc(cap, sizeof(Entry));
    if (!tab) {
        PyErr_NoMemory();
        return -1;
    }
    uint64_t next = 1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *w = PyList_GET_ITEM(words, i);
        if (!PyUnicode_CheckExact(w)) { /* exact str: hashing and comparing run no Python code */
            PyErr_Format(PyExc_TypeError, "words must be str, got %.100s", Py_TYPE(w)->tp_name);
            rc = -1;
            break;
        }
        Py_hash_t hash = PyObject_Hash(w);
        if (hash == -1) {
            rc = -1;
            break;
        }
        lens[i] = PyUnicode_GET_LENGTH(w);
        for (size_t j = mix((uint64_t)hash) & (cap - 1);; j = (j + 1) & (cap - 1)) {
            if (!tab[j].word) {
                tab[j] = (Entry){w, hash, next++};
                ids[i] = tab[j].id;
                break;
            }
            if (tab[j].hash != hash) continue;
            int eq = PyObject_RichCompareBool(tab[j].word, w, Py_EQ);
            if (eq < 0) {
                rc = -1;
                break;
            }
            if (eq) {
                ids[i] = tab[j].id;
                break;
            }
        }
    }
    PyMem_Free(tab);
    return rc;
}

/* Characters of the most frequent n-gram times its count (ties: the one that occurs first). */
static int64_t top_chars(Table *t, const uint64_t *h, Py_ssize_t m, const int64_t *csum, Py_ssize_t n) {
    t->stamp++;
    uint32_t best = 0, best_first = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        Slot *s = table_find(t, h[i]);
        if (s->stamp != t->stamp) {
            *s = (Slot){h[i], t->stamp, 0, (uint32_t)i};
        }
        s->count++;
        if (s->count > best || (s->count == best && s->first < best_first)) {
            best = s->count;
            best_first = s->first;
        }
    }
    return (int64_t)best * (csum[best_first + n] - csum[best_first] + n - 1);
}

/* Characters in repeated n-grams by the reference's left-to-right scan with jumps. */
static int64_t dup_chars(Table *t, const uint64_t *h, Py_ssize_t m, const int64_t *csum, Py_ssize_t n) {
    t->stamp++;
    int64_t chars = 0;
    for (Py_ssize_t i = 0; i < m;) {
        Slot *s = table_find(t, h[i]);
        if (s->stamp == t->stamp) {
            chars += csum[i + n] - csum[i];
            i += n;
        } else {
            *s = (Slot){h[i], t->stamp, 1, (uint32_t)i};
            i += 1;
        }
    }
    return chars;
}

/* The largest n-gram size in the tuple (each an int >= 2), 0 for none, -1 with an exception set. */
static Py_ssize_t max_size(PyObject *sizes) {
    Py_ssize_t hi = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(sizes); i++) {
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(sizes, i));
        if (n == -1 && PyErr_Occurred()) return -1;
        if (n < 2) {
            PyErr_Format(PyExc_ValueError, "n-gram size %zd is under 2", n);
            return -1;
        }
        if (n > hi) hi = n;
    }
    return hi;
}

/* want[n] |= bit for each size up to `hi` in the tuple (checked by max_size): a larger n has no n-gram. */
static void mark_sizes(PyObject *sizes, unsigned char *want, Py_ssize_t hi, unsigned char bit) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(sizes); i++) {
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(sizes, i));
        if (n <= hi) want[n] |= bit;
    }
}

static PyObject *ngram_stats(PyObject *self, PyObject *args) {
    PyObject *words, *top_ns, *dup_ns;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &words, &PyTuple_Type, &top_ns, &PyTuple_Type, &dup_ns))
        return NULL;
    Py_ssize_t hi_top = max_size(top_ns);
    Py_ssize_t hi_dup = hi_top < 0 ? -1 : max_size(dup_ns);
    if (hi_dup < 0) return NULL;
    Py_ssize_t hi = hi_top > hi_dup ? hi_top : hi_dup;
    Py_ssize_t w = PyList_GET_SIZE(words);
    if (hi > w) hi = w; /* no n-gram longer than the text: nothing to count, nothing to allocate */
    unsigned char *want = PyMem_Calloc((size_t)hi + 1, 1); /* want[n]: 1 top, 2 duplicate, 3 both */
    PyObject *top = PyDict_New(), *dup = PyDict_New();
    uint64_t *ids = PyMem_Malloc(((size_t)w + 1) * sizeof(uint64_t));
    uint64_t *h = PyMem_Malloc(((size_t)w + 1) * sizeof(uint64_t));
    int64_t *csum = PyMem_Malloc(((size_t)w + 1) * sizeof(int64_t));
    Table t = {0};
    PyObject *result = NULL;
    if (!top || !dup || !ids || !h || !csum || !want) {
        PyErr_NoMemory();
        goto done;
    }
    mark_sizes(top_ns, want, hi, 1);
    mark_sizes(dup_ns, want, hi, 2);
    if (w < 2) goto ok; /* no n-gram: both dicts empty, as the Python side returns early */
    if (w >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "ngram_stats counts up to 2^31 - 1 words");
        goto done;
    }
    if (word_ids(words, w, ids, csum + 1) < 0 || table_init(&t, w) < 0) goto done;
    csum[0] = 0;
    for (Py_ssize_t i = 0; i < w; i++) csum[i + 1] += csum[i];
    memcpy(h, ids, (size_t)w * sizeof(uint64_t));
    for (Py_ssize_t n = 2; n <= hi && n <= w; n++) {
        Py_ssize_t m = w - n + 1;
        for (Py_ssize_t i = 0; i < m; i++) h[i] = h[i] * MULT + ids[i + n - 1];
        for (int which = 1; which <= 2; which++) {
            if (!(want[n] & which)) continue;
            int64_t chars = which == 1 ? top_chars(&t, h, m, csum, n) : dup_chars(&t, h, m, csum, n);
            PyObject *key = PyLong_FromSsize_t(n), *val = PyLong_FromLongLong(chars);
            int bad = !key || !val || PyDict_SetItem(which == 1 ? top : dup, key, val) < 0;
            Py_XDECREF(key);
            Py_XDECREF(val);
            if (bad) goto done;
        }
    }
ok:
    result = PyTuple_Pack(2, top, dup);
done:
    PyMem_Free(want);
    PyMem_Free(t.slots);
    PyMem_Free(ids);
    PyMem_Free(h);
    PyMem_Free(csum);
    Py_XDECREF(top);
    Py_XDECREF(dup);
    return result;
}

/* One piece of the text: code points [start, start + len), and its hash over the raw bytes (one string has one
 * kind, so equal pieces have equal bytes). */
typedef struct {
    uint64_t hash;
    Py_ssize_t start, len; /* len 0: a free slot (an empty piece is never stored: see dup_pieces) */
} Piece;

static uint64_t hash_bytes(const unsigned char *p, size_t n) { /* 8 bytes a multiply, then fmix64 (in mix) */
    uint64_t h = n * MULT, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull + (h >> 29);
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The index of the first newline at or after i, or n: memchr for one-byte strings, the usual case. */
static inline Py_ssize_t next_newline(const unsigned char *data, int kind, Py_ssize_t i, Py_ssize_t n) {
    if (kind == PyUnicode_1BYTE_KIND) {
        const unsigned char *q = memchr(data + i, '\n', (size_t)(n - i));
        return q ? q - data : n;
    }
    while (i < n && PyUnicode_READ(kind, data, i) != '\n') i++;
    return i;
}

/* 1 if an equal piece was seen before, else 0 and the piece is remembered (the table is sized for every piece). */
static int seen_before(Piece *tab, size_t mask, const unsigned char *data, int kind, Py_ssize_t start, Py_ssize_t len) {
    const unsigned char *p = data + (size_t)start * (size_t)kind;
    size_t bytes = (size_t)len * (size_t)kind;
    uint64_t h = hash_bytes(p, bytes);
    for (size_t i = mix(h) & mask;; i = (i + 1) & mask) {
        Piece *e = &tab[i];
        if (!e->len) {
            *e = (Piece){h, start, len};
            return 0;
        }
        if (e->hash == h && e->len == len && memcmp(data + (size_t)e->start * (size_t)kind, p, bytes) == 0) return 1;
    }
}

/* dup_pieces(text, min_run) -> (pieces, repeated pieces, their characters): the text cut at every run of at least
 * `min_run` newlines (re.split(r"\n{min_run,}", text) with text stripped, as gopher.py passes it), and a piece
 * counted as repeated when an equal one came before it (_text.find_duplicates). Two passes, linear in the text. */
static PyObject *dup_pieces(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t min_run;
    if (!PyArg_ParseTuple(args, "Un", &text, &min_run)) return NULL;
    if (min_run < 1) {
        PyErr_SetString(PyExc_ValueError, "min_run must be at least 1");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const unsigned char *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), pieces = 1;
    for (Py_ssize_t i = next_newline(data, kind, 0, n); i < n; i = next_newline(data, kind, i, n)) {
        Py_ssize_t run = 0; /* pass 1: count the cuts, to size the table */
        while (i < n && PyUnicode_READ(kind, data, i) == '\n') run++, i++;
        pieces += run >= min_run;
    }
    size_t cap = 16;
    while (cap < (size_t)pieces * 2) cap <<= 1;
    Piece *tab = PyMem_Calloc(cap, sizeof(Piece));
    if (!tab) return PyErr_NoMemory();
    Py_ssize_t dups = 0, dup_chars = 0, start = 0, total = 0, seen_empty = 0;
    for (Py_ssize_t i = next_newline(data, kind, 0, n);; i = next_newline(data, kind, i, n)) {
        Py_ssize_t run = 0; /* pass 2: a piece ends where a run of at least min_run newlines starts, or at the end */
        while (i + run < n && PyUnicode_READ(kind, data, i + run) == '\n') run++;
        if (i < n && run < min_run) {
            i += run;
            continue;
        }
        Py_ssize_t len = i - start;
        total++;
        if (len == 0) { /* only at the ends of an unstripped text: "" is a piece to re.split too */
            dups += seen_empty;
            seen_empty = 1;
        } else if (seen_before(tab, cap - 1, data, kind, start, len)) {
            dups++;
            dup_chars += len;
        }
        if (i == n) break;
        start = i += run;
    }
    PyMem_Free(tab);
    return Py_BuildValue("nnn", total, dups, dup_chars);
}

static PyMethodDef methods[] = {
    {"ngram_stats", ngram_stats, METH_VARARGS,
     "ngram_stats(words: list[str], top_ns: tuple[int], dup_ns: tuple[int]) -> ({n: top n-gram chars}, "
     "{n: duplicate n-gram chars}), for each n with at least one n-gram (see curate/filters/gopher.py)."},
    {"dup_pieces", dup_pieces, METH_VARARGS,
     "dup_pieces(text, min_run) -> (pieces, repeated pieces, their characters), cut at runs of min_run+ newlines."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_repetition", NULL, -1, methods};

PyMODINIT_FUNC PyInit__repetition(void) { return PyModule_Create(&module); }
