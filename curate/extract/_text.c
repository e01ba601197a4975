/* The word table of curate.extract._walk's shared text utilities (_text.h says what each function does; the
 * buffers' functions and the character classes, small and hot, are inline there). */
#include "_text.h"

size_t hash_ucs4(const Py_UCS4 *p, Py_ssize_t n) {
    size_t h = 1469598103934665603ull;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

void words_free(Words *t) {
    PyMem_Free(t->slots);
    PyMem_Free(t->arena.p);
    memset(t, 0, sizeof *t);
}

Slot *words_slot_hashed(Words *t, const Py_UCS4 *p, Py_ssize_t n, size_t hash, int insert) {
    if (insert && (t->used + 1) * 2 > t->cap) { /* keep it at most half full */
        Py_ssize_t cap = t->cap ? t->cap * 2 : 2048; /* a page's first 1,500 words fit without growing */
        Slot *slots = PyMem_Calloc((size_t)cap, sizeof(Slot));
        if (!slots) {
            PyErr_NoMemory();
            return NULL;
        }
        for (Py_ssize_t k = 0; k < t->cap; k++) {
            if (!t->slots[k].len) continue;
            size_t h = t->slots[k].hash & (size_t)(cap - 1);
            while (slots[h].len) h = (h + 1) & (size_t)(cap - 1);
            slots[h] = t->slots[k];
        }
        PyMem_Free(t->slots);
        t->slots = slots;
        t->cap = cap;
    }
    if (!t->cap) return NULL;
    if (n > INT32_MAX || t->arena.len > INT32_MAX - n) {
        PyErr_SetString(PyExc_OverflowError, "word table too large");
        return NULL;
    }
    size_t h = hash & (size_t)(t->cap - 1);
    for (;; h = (h + 1) & (size_t)(t->cap - 1)) {
        Slot *e = &t->slots[h];
        if (!e->len) break;
        if (e->hash == hash && e->len == n && memcmp(t->arena.p + e->start, p, (size_t)n * sizeof(Py_UCS4)) == 0)
            return e;
    }
    if (!insert) return NULL;
    if (buf_grow(&t->arena, n) < 0) return NULL;
    Slot *e = &t->slots[h];
    e->hash = hash;
    e->start = (int32_t)t->arena.len;
    e->len = (int32_t)n;
    e->count = 0;
    e->first = (int32_t)t->used++;
    memcpy(t->arena.p + t->arena.len, p, (size_t)n * sizeof(Py_UCS4));
    t->arena.len += n;
    return e;
}

Slot *words_slot(Words *t, const Py_UCS4 *p, Py_ssize_t n, int insert) {
    return words_slot_hashed(t, p, n, hash_ucs4(p, n), insert);
}
