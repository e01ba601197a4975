/* Text utilities shared by the files of curate.extract._walk: growable buffers, a hash table of words (runs of
 * code points) and the character classes of Python's re that the walk (_walk.c) and the block classifier
 * (_score.c) both need. _text.c defines the functions declared here; the tiny hot ones are static inline. */
#ifndef CURATE_EXTRACT_TEXT_H
#define CURATE_EXTRACT_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* A growable buffer of code points. */
typedef struct {
    Py_UCS4 *p;
    Py_ssize_t len, cap;
} Buf;

/* Make room for `need` items of `size` bytes in *p (capacity *cap, doubling from 256), new room zeroed. */
static inline int grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    char *q = PyMem_Realloc(*p, (size_t)c * size);
    if (!q) {
        PyErr_NoMemory();
        return -1;
    }
    memset(q + (size_t)*cap * size, 0, (size_t)(c - *cap) * size);
    *p = q;
    *cap = c;
    return 0;
}

static inline int buf_grow(Buf *b, Py_ssize_t extra) {
    return grow((void **)&b->p, &b->cap, b->len + extra, sizeof(Py_UCS4));
}

static inline int buf_put(Buf *b, Py_UCS4 c) {
    if (b->len == b->cap && buf_grow(b, 1) < 0) return -1;
    b->p[b->len++] = c;
    return 0;
}

/* A hash table of words (runs of code points), for stop-word lookups and word frequencies without making a
 * Python str per token. Open addressing; the words' code points live in one arena. */
typedef struct {
    uint64_t hash;
    int32_t start, len; /* in the arena; len 0: an empty slot */
    int32_t count, first;
} Slot;

typedef struct {
    Slot *slots;
    Py_ssize_t cap, used;
    Buf arena;
} Words;

/* FNV-1a over the code points p[0:n] (_score.c's scan_text computes it inline, a code point at a time). */
size_t hash_ucs4(const Py_UCS4 *p, Py_ssize_t n);

void words_free(Words *t);

/* The slot of word p[0:n] whose hash_ucs4 is `hash`: found, or a new one with count 0 (insert=1), or NULL
 * (not found / no memory). */
Slot *words_slot_hashed(Words *t, const Py_UCS4 *p, Py_ssize_t n, size_t hash, int insert);

Slot *words_slot(Words *t, const Py_UCS4 *p, Py_ssize_t n, int insert);

/* \w of Python's re: alphanumeric or '_' (ASCII without a call into the Unicode database). */
static inline int is_word(Py_UCS4 c) {
    if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    return Py_UNICODE_ISALNUM(c);
}

static inline int is_decimal(Py_UCS4 c) { return c < 128 ? (c >= '0' && c <= '9') : Py_UNICODE_ISDECIMAL(c); }

#endif
