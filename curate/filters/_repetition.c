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
 * Time and memory are linear in the words for each n: one open-addressing table of 2 x words slots, reused
 * across n by a generation stamp; no string is copied. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MULT 0x9E3779B97F4A7C15ull /* gopher._HASH_MULT */

typedef struct {
    uint64_t key;
    uint32_t stamp; /* the slot is in use for the current pass when stamp == the table's */
    int64_t count;
    Py_ssize_t first;
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
    int64_t best = 0;
    Py_ssize_t best_first = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        Slot *s = table_find(t, h[i]);
        if (s->stamp != t->stamp) {
            *s = (Slot){h[i], t->stamp, 0, i};
        }
        s->count++;
        if (s->count > best || (s->count == best && s->first < best_first)) {
            best = s->count;
            best_first = s->first;
        }
    }
    return best * (csum[best_first + n] - csum[best_first] + n - 1);
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
            *s = (Slot){h[i], t->stamp, 1, i};
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

static PyMethodDef methods[] = {
    {"ngram_stats", ngram_stats, METH_VARARGS,
     "ngram_stats(words: list[str], top_ns: tuple[int], dup_ns: tuple[int]) -> ({n: top n-gram chars}, "
     "{n: duplicate n-gram chars}), for each n with at least one n-gram (see curate/filters/gopher.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_repetition", NULL, -1, methods};

PyMODINIT_FUNC PyInit__repetition(void) { return PyModule_Create(&module); }
