/* The block walk of extract.Main in C: one pass over Lexbor's serialisation of the cleaned <body>.
 *
 * Why the serialisation and not the tree: selectolax exposes Lexbor's tree only through Python
 * objects (about 1 us per node), while its serialiser writes the whole tree in C in a fraction of
 * that. The serialisation is regular HTML5 output, so a small scanner reads it exactly:
 *   - every element is closed in order, except the void elements, which have no end tag;
 *   - text escapes only &amp; &lt; &gt; &nbsp;, attribute values also &quot; and are always
 *     double-quoted, so the first '>' after '<' ends a tag;
 *   - comments are <!--...--> and never contain "-->"; the raw-text elements (xmp, iframe, noembed,
 *     noframes, noscript, plaintext, style) hold their text unescaped up to their end tag. Scripts
 *     are removed by Lexbor before (a script's text may hold "</script>" that does not end it).
 * The rules of the walk (which elements start a block, how links, <br>, <pre> and whitespace are
 * handled, the cues of ancestors, the container path) are those documented in blocks.py; this file
 * only makes them fast. tests/test_extract_walk.py checks it block for block against a walk of
 * Lexbor's tree on every gold page.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Tag flags, set by configure() from blocks.py's tables. */
enum { T_BLOCK = 1, T_NEG = 2, T_POS = 4, T_VOID = 8, T_RAW = 16, T_A = 32, T_BR = 64, T_PRE = 128, T_DROP = 256 };

#define NTAGS 512
#define MAXNAME 16
typedef struct {
    char name[MAXNAME];
    int flags;
    PyObject *kind; /* block kind string ("p", "h", ...) or NULL for the generic "div" */
} Tag;

static Tag tags[NTAGS];
static PyObject *kind_div, *too_deep;
static PyTypeObject *block_type;

static PyStructSequence_Field block_fields[] = {
    {"text", "the block's text, whitespace folded, one line per <br>"},
    {"chars", "len(text)"},
    {"link_chars", "how many of its characters are link text"},
    {"kind", "p, h, li, td, pre, cap or div: the block element that holds it"},
    {"neg", "boilerplate cues (tag or class/id) among its block ancestors"},
    {"pos", "content cues among its block ancestors"},
    {"com", "comment-section cues among its block ancestors"},
    {"path", "the numbers (in document order) of its block ancestors, outermost first"},
    {"index", "its place in the page's list of blocks"},
    {NULL, NULL}};

static PyStructSequence_Desc block_desc = {
    "curate.extract._walk.Block", "One block of text and the features of its place in the page.", block_fields, 9};

static unsigned hash_name(const char *s, size_t n) {
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static Tag *find_tag(const char *s, size_t n, int insert) {
    if (n == 0 || n >= MAXNAME) return NULL;
    unsigned h = hash_name(s, n) % NTAGS;
    for (int probe = 0; probe < NTAGS; probe++, h = (h + 1) % NTAGS) {
        Tag *t = &tags[h];
        if (t->name[0] == 0) {
            if (!insert) return NULL;
            memcpy(t->name, s, n);
            t->name[n] = 0;
            return t;
        }
        if (strlen(t->name) == n && memcmp(t->name, s, n) == 0) return t;
    }
    return NULL;
}

/* A growable buffer of code points. */
typedef struct {
    Py_UCS4 *p;
    Py_ssize_t len, cap;
} Buf;

/* Make room for `need` items of `size` bytes in *p (capacity *cap, doubling from 256), new room zeroed. */
static int grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
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

static int buf_grow(Buf *b, Py_ssize_t extra) {
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

static size_t hash_ucs4(const Py_UCS4 *p, Py_ssize_t n) {
    size_t h = 1469598103934665603ull;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void words_free(Words *t) {
    PyMem_Free(t->slots);
    PyMem_Free(t->arena.p);
    memset(t, 0, sizeof *t);
}

/* The slot of word p[0:n] whose hash_ucs4 is `hash`: found, or a new one with count 0 (insert=1), or NULL
 * (not found / no memory). */
static Slot *words_slot_hashed(Words *t, const Py_UCS4 *p, Py_ssize_t n, size_t hash, int insert) {
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

static Slot *words_slot(Words *t, const Py_UCS4 *p, Py_ssize_t n, int insert) {
    return words_slot_hashed(t, p, n, hash_ucs4(p, n), insert);
}

/* The context that an element gives its children (blocks.py: visit's arguments). */
typedef struct {
    PyObject *kind;
    int neg, pos, com, in_link, pre;
    Py_ssize_t path_len;
    int flags; /* the element's own tag flags */
} Frame;

typedef struct {
    Py_UCS4 *u; /* the serialised body as code points (one copy: direct reads in every loop below) */
    Py_ssize_t n;
    Buf raw;     /* the current block's text, as the walk collects it */
    Buf tmp;     /* one text node or one link's text, decoded */
    Buf clean;   /* the block's text after whitespace folding */
    Py_ssize_t link;
    Frame *stack;
    Py_ssize_t depth, stack_cap;
    long *path;
    Py_ssize_t path_cap;
    PyObject **ints; /* ints[v]: the int v of a container path, made once per page */
    Py_ssize_t ints_cap;
    long counter;
    PyObject *blocks;
} Walk;

#define CH(w, i) ((w)->u[(i)])

/* \w of Python's re: alphanumeric or '_' (ASCII without a call into the Unicode database). */
static inline int is_word(Py_UCS4 c) {
    if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    return Py_UNICODE_ISALNUM(c);
}

static inline int is_decimal(Py_UCS4 c) { return c < 128 ? (c >= '0' && c <= '9') : Py_UNICODE_ISDECIMAL(c); }

/* Decode the text of [start, end) into w->tmp: the four escapes of serialised text (and &quot;). */
static int decode(Walk *w, Py_ssize_t start, Py_ssize_t end, int escaped) {
    w->tmp.len = 0;
    if (buf_grow(&w->tmp, end - start) < 0) return -1;
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = CH(w, i);
        if (c == '&' && escaped) {
            static const struct { const char *s; int n; Py_UCS4 c; } ents[] = {
                {"amp;", 4, '&'}, {"lt;", 3, '<'}, {"gt;", 3, '>'}, {"nbsp;", 5, 0xA0}, {"quot;", 5, '"'}};
            int hit = 0;
            for (size_t k = 0; k < sizeof ents / sizeof ents[0] && !hit; k++) {
                if (i + ents[k].n >= end) continue;
                int ok = 1;
                for (int j = 0; j < ents[k].n && ok; j++) ok = CH(w, i + 1 + j) == (Py_UCS4)ents[k].s[j];
                if (ok) {
                    c = ents[k].c;
                    i += ents[k].n;
                    hit = 1;
                }
            }
        }
        w->tmp.p[w->tmp.len++] = c;
    }
    return 0;
}

static int all_space(const Buf *b) {
    for (Py_ssize_t i = 0; i < b->len; i++)
        if (!Py_UNICODE_ISSPACE(b->p[i])) return 0;
    return 1;
}

/* len(t.strip()) */
static Py_ssize_t stripped_len(const Buf *b) {
    Py_ssize_t lo = 0, hi = b->len;
    while (lo < hi && Py_UNICODE_ISSPACE(b->p[lo])) lo++;
    while (hi > lo && Py_UNICODE_ISSPACE(b->p[hi - 1])) hi--;
    return hi - lo;
}

/* Append `t` to the block's text; outside <pre> a newline of the source is a space. */
static int append(Walk *w, const Buf *t, int pre) {
    if (buf_grow(&w->raw, t->len) < 0) return -1;
    for (Py_ssize_t i = 0; i < t->len; i++) {
        Py_UCS4 c = t->p[i];
        w->raw.p[w->raw.len++] = (!pre && c == '\n') ? ' ' : c;
    }
    return 0;
}

/* The whitespace folding of blocks._clean: within lines outside <pre>, trailing only in <pre>; empty lines dropped. */
static int clean(Walk *w, int pre) {
    Buf *o = &w->clean;
    o->len = 0;
    if (buf_grow(o, w->raw.len) < 0) return -1;
    const Py_UCS4 *r = w->raw.p;
    Py_ssize_t n = w->raw.len, i = 0;
    while (i < n) {
        Py_ssize_t e = i;
        while (e < n && r[e] != '\n') e++;
        Py_ssize_t mark = o->len;
        if (o->len) o->p[o->len++] = '\n';
        Py_ssize_t body = o->len;
        if (pre) {
            Py_ssize_t hi = e;
            while (hi > i && Py_UNICODE_ISSPACE(r[hi - 1])) hi--;
            for (Py_ssize_t k = i; k < hi; k++) o->p[o->len++] = r[k];
        } else {
            int gap = 0;
            for (Py_ssize_t k = i; k < e; k++) {
                if (Py_UNICODE_ISSPACE(r[k])) {
                    gap = 1;
                    continue;
                }
                if (gap && o->len > body) o->p[o->len++] = ' ';
                gap = 0;
                o->p[o->len++] = r[k];
            }
        }
        if (o->len == body) o->len = mark; /* an empty line: dropped */
        i = e + 1;
    }
    return 0;
}

/* End the current block: a Block when its text has a word character (blocks.py: flush). */
static int flush(Walk *w, const Frame *f) {
    Py_ssize_t n_link = w->link;
    w->link = 0;
    int word = 0;
    for (Py_ssize_t i = 0; i < w->raw.len && !word; i++) word = is_word(w->raw.p[i]);
    if (!word) {
        w->raw.len = 0;
        return 0;
    }
    if (clean(w, f->pre) < 0) return -1;
    w->raw.len = 0;
    Py_ssize_t chars = w->clean.len;
    PyObject *path = PyTuple_New(f->path_len);
    if (!path) return -1;
    for (Py_ssize_t i = 0; i < f->path_len; i++) {
        long v = w->path[i];
        if (grow((void **)&w->ints, &w->ints_cap, v + 1, sizeof(PyObject *)) < 0) {
            Py_DECREF(path);
            return -1;
        }
        if (!w->ints[v] && !(w->ints[v] = PyLong_FromLong(v))) {
            Py_DECREF(path);
            return -1;
        }
        Py_INCREF(w->ints[v]);
        PyTuple_SET_ITEM(path, i, w->ints[v]);
    }
    PyObject *text = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, w->clean.p, chars);
    PyObject *b = text ? PyStructSequence_New(block_type) : NULL;
    if (!b) {
        Py_XDECREF(text);
        Py_DECREF(path);
        return -1;
    }
    PyObject *items[9] = {text, PyLong_FromSsize_t(chars), PyLong_FromSsize_t(n_link < chars ? n_link : chars),
                          f->kind, PyLong_FromLong(f->neg), PyLong_FromLong(f->pos), PyLong_FromLong(f->com), path,
                          PyLong_FromSsize_t(PyList_GET_SIZE(w->blocks))};
    Py_INCREF(f->kind);
    int bad = 0;
    for (int k = 0; k < 9; k++) {
        if (!items[k]) bad = 1;
        PyStructSequence_SET_ITEM(b, k, items[k]); /* steals; a NULL slot is fine for the dealloc */
    }
    if (bad) {
        Py_DECREF(b);
        return -1;
    }
    int rc = PyList_Append(w->blocks, b);
    Py_DECREF(b);
    return rc;
}

/* Class/id cue words (blocks.COMMENT_CUES, BOILERPLATE_CUES, CONTENT_CUES), each found anywhere in a word,
 * or, written "^w", "w$" or "^w$", only at its start, at its end or as the whole word. */
typedef struct {
    char s[32];
    int len, at_start, at_end;
} Cue;
#define MAXCUES 160
static Cue cues[3][MAXCUES];
static int ncues[3];
static Words cue_memo; /* normalised word -> its cue + 10 (in the count field) */

static int cue_matches(const Py_UCS4 *k, Py_ssize_t n, const Cue *c) {
    if (n < c->len) return 0;
    Py_ssize_t lo = c->at_end ? n - c->len : 0, hi = c->at_start ? 0 : n - c->len;
    if (c->at_start && c->at_end && n != c->len) return 0;
    for (Py_ssize_t at = lo; at <= hi; at++) {
        int j = 0;
        while (j < c->len && k[at + j] == (Py_UCS4)c->s[j]) j++;
        if (j == c->len) return 1;
    }
    return 0;
}

/* -2 a comment section's word, -1 other boilerplate, +1 content, 0 none: the first list that matches. */
static int classify(const Py_UCS4 *k, Py_ssize_t n) {
    static const int value[3] = {-2, -1, 1};
    for (int list = 0; list < 3; list++)
        for (int i = 0; i < ncues[list]; i++)
            if (cue_matches(k, n, &cues[list][i])) return value[list];
    return 0;
}

/* The cues of the words of w->tmp folded into lo and hi. A word is first normalised as blocks.py says
 * (ASCII lower case, a run of digits one "0"), then looked up in a bounded memo: templates repeat their
 * class names across pages and sites. */
static int word_cues(Walk *w, int *lo, int *hi) {
    const Py_UCS4 *p = w->tmp.p;
    Py_ssize_t n = w->tmp.len, i = 0;
    Py_UCS4 *key = w->tmp.p + n; /* room reserved by the caller */
    while (i < n) {
        while (i < n && Py_UNICODE_ISSPACE(p[i])) i++;
        Py_ssize_t len = 0;
        while (i < n && !Py_UNICODE_ISSPACE(p[i])) {
            Py_UCS4 c = p[i++];
            if (c >= '0' && c <= '9') {
                if (len && key[len - 1] == '0' && i >= 2 && p[i - 2] >= '0' && p[i - 2] <= '9') continue;
                c = '0';
            } else if (c >= 'A' && c <= 'Z') {
                c += 'a' - 'A';
            }
            key[len++] = c;
        }
        if (!len) break;
        if (cue_memo.used > 50000) words_free(&cue_memo); /* bounded: a crawl has unlimited class names */
        Slot *e = words_slot(&cue_memo, key, len, 1);
        if (!e) return -1;
        if (!e->count) e->count = classify(key, len) + 10;
        int c = e->count - 10;
        if (c < *lo) *lo = c;
        if (c > *hi) *hi = c;
    }
    return 0;
}

/* The cue of a block element from its class and id attributes (blocks.cue): a comment cue in any word wins,
 * then a boilerplate cue, then a content cue. [start, end) is the tag's text after its name. */
static int cue_of(Walk *w, Py_ssize_t start, Py_ssize_t end, int *cue) {
    Py_ssize_t cls[2] = {-1, -1}, id[2] = {-1, -1};
    Py_ssize_t i = start;
    while (i < end) {
        while (i < end && Py_UNICODE_ISSPACE(CH(w, i))) i++;
        Py_ssize_t ns = i;
        if (i < end && CH(w, i) == '=') i++; /* a name may begin with '=' */
        while (i < end && CH(w, i) != '=' && !Py_UNICODE_ISSPACE(CH(w, i)) && CH(w, i) != '/') i++;
        Py_ssize_t ne = i, vs = -1, ve = -1;
        if (i + 1 < end && CH(w, i) == '=' && CH(w, i + 1) == '"') {
            vs = i + 2;
            ve = vs;
            while (ve < end && CH(w, ve) != '"') ve++;
            i = ve + 1;
        } else if (i < end && !Py_UNICODE_ISSPACE(CH(w, i))) {
            i++;
        }
        if (vs < 0) continue;
        if (ne - ns == 5 && CH(w, ns) == 'c' && CH(w, ns + 1) == 'l' && CH(w, ns + 2) == 'a' &&
            CH(w, ns + 3) == 's' && CH(w, ns + 4) == 's' && cls[0] < 0) {
            cls[0] = vs;
            cls[1] = ve;
        } else if (ne - ns == 2 && CH(w, ns) == 'i' && CH(w, ns + 1) == 'd' && id[0] < 0) {
            id[0] = vs;
            id[1] = ve;
        }
    }
    int lo = 0, hi = 0;
    for (int a = 0; a < 2; a++) {
        Py_ssize_t *v = a ? id : cls;
        if (v[0] < 0) continue;
        if (decode(w, v[0], v[1], 1) < 0 || buf_grow(&w->tmp, w->tmp.len) < 0 || word_cues(w, &lo, &hi) < 0) return -1;
    }
    *cue = lo < 0 ? lo : hi;
    return 0;
}

static int push(Walk *w, Frame f) {
    if (grow((void **)&w->stack, &w->stack_cap, w->depth + 1, sizeof(Frame)) < 0 ||
        grow((void **)&w->path, &w->path_cap, f.path_len, sizeof(long)) < 0)
        return -1;
    w->stack[w->depth++] = f;
    return 0;
}

/* Index of the first end tag of `name` at or after i (or n): "</name" in any case, then a space, '/' or '>',
 * as the HTML tokenizer ends raw text. */
static Py_ssize_t find_end_tag(Walk *w, Py_ssize_t i, const char *name, size_t len) {
    for (; i + 1 < w->n; i++) {
        if (CH(w, i) != '<' || CH(w, i + 1) != '/') continue;
        Py_ssize_t j = i + 2;
        size_t k = 0;
        while (k < len && j < w->n && Py_UNICODE_TOLOWER(CH(w, j)) == (Py_UCS4)name[k]) k++, j++;
        if (k == len && (j == w->n || CH(w, j) == '>' || CH(w, j) == '/' || Py_UNICODE_ISSPACE(CH(w, j)))) return i;
    }
    return w->n;
}

/* Index just past the end of the tag or comment that starts at i (a '<'). */
static Py_ssize_t skip_markup(Walk *w, Py_ssize_t i) {
    if (i + 3 < w->n && CH(w, i + 1) == '!' && CH(w, i + 2) == '-' && CH(w, i + 3) == '-') {
        for (Py_ssize_t j = i + 4; j + 2 < w->n; j++)
            if (CH(w, j) == '-' && CH(w, j + 1) == '-' && CH(w, j + 2) == '>') return j + 3;
        return w->n;
    }
    while (i < w->n && CH(w, i) != '>') i++;
    return i < w->n ? i + 1 : w->n;
}

/* A tag's name at i (just past '<' or '</'), copied as ASCII into `name`; its length, or 0 if not ASCII/too long. */
static size_t read_name(Walk *w, Py_ssize_t *i, char *name) {
    size_t len = 0;
    int ascii = 1;
    while (*i < w->n) {
        Py_UCS4 c = CH(w, *i);
        if (c == '>' || c == '/' || Py_UNICODE_ISSPACE(c)) break;
        if (c > 127) ascii = 0;
        if (len < MAXNAME - 1) name[len] = (char)c;
        len++;
        (*i)++;
    }
    return (ascii && len < MAXNAME) ? len : 0;
}

/* Index just past the end tag of the element whose start tag ends at i, skipping all it holds. */
static Py_ssize_t skip_element(Walk *w, Py_ssize_t i, const char *name, size_t len, int flags) {
    if (flags & T_VOID) return i;
    if (flags & T_RAW) return skip_markup(w, find_end_tag(w, i, name, len));
    Py_ssize_t open = 1;
    while (i < w->n && open > 0) {
        if (CH(w, i) != '<') {
            i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        int end = j < w->n && CH(w, j) == '/', other = j < w->n && (CH(w, j) == '!' || CH(w, j) == '?');
        char inner[MAXNAME];
        size_t n = (end || other) ? 0 : read_name(w, &j, inner);
        Tag *t = n ? find_tag(inner, n, 0) : NULL;
        int f = t ? t->flags : 0;
        i = skip_markup(w, i);
        if (end) {
            open--;
        } else if (!other && !(f & T_VOID)) {
            if (f & T_RAW) i = find_end_tag(w, i, inner, n); /* its end tag closes it on the next turn */
            open++;
        }
    }
    return i;
}

/* A space in a link's text where a block or <br> inside it begins or ends, unless one is there already. */
static int link_gap(Buf *out) {
    return (out->len && out->p[out->len - 1] != ' ') ? buf_put(out, ' ') : 0;
}

/* The text of a link and everything in it, from just past its start tag; blocks inside it (teaser cards)
 * are separated by a space. */
static Py_ssize_t link_text(Walk *w, Py_ssize_t i, Buf *out) {
    Py_ssize_t open = 1;
    out->len = 0;
    while (i < w->n && open > 0) {
        if (CH(w, i) != '<') {
            Py_ssize_t e = i;
            while (e < w->n && CH(w, e) != '<') e++;
            if (decode(w, i, e, 1) < 0) return -1;
            if (buf_grow(out, w->tmp.len) < 0) return -1;
            memcpy(out->p + out->len, w->tmp.p, (size_t)w->tmp.len * sizeof(Py_UCS4));
            out->len += w->tmp.len;
            i = e;
            continue;
        }
        Py_ssize_t j = i + 1;
        if (j < w->n && (CH(w, j) == '!' || CH(w, j) == '?')) {
            i = skip_markup(w, i);
            continue;
        }
        int end = j < w->n && CH(w, j) == '/';
        j += end;
        char name[MAXNAME];
        size_t len = read_name(w, &j, name);
        Tag *t = len ? find_tag(name, len, 0) : NULL;
        int flags = t ? t->flags : 0;
        i = skip_markup(w, i);
        if ((flags & (T_BLOCK | T_BR)) && link_gap(out) < 0) return -1;
        if (end) {
            open--;
            continue;
        }
        if (flags & T_DROP) {
            i = skip_element(w, i, name, len, flags);
            continue;
        }
        if (flags & T_VOID) continue;
        if (flags & T_RAW) { /* raw text up to its end tag, which the loop then reads */
            Py_ssize_t e = find_end_tag(w, i, name, len);
            if (decode(w, i, e, 0) < 0 || buf_grow(out, w->tmp.len) < 0) return -1;
            memcpy(out->p + out->len, w->tmp.p, (size_t)w->tmp.len * sizeof(Py_UCS4));
            out->len += w->tmp.len;
            i = e;
        }
        open++;
    }
    return i;
}

/* One text node of the walk (blocks.py: the "-text" case). */
static int text_node(Walk *w, const Frame *f) {
    if (!f->pre) {
        if (all_space(&w->tmp)) {
            if (w->raw.len) return buf_put(&w->raw, ' ');
            return 0;
        }
    }
    if (f->in_link) w->link += stripped_len(&w->tmp);
    return append(w, &w->tmp, f->pre);
}

static int start_tag(Walk *w, Py_ssize_t lt, Py_ssize_t *pos, long max_depth, Buf *link) {
    Py_ssize_t j = lt + 1;
    char name[MAXNAME];
    size_t len = read_name(w, &j, name);
    Tag *t = len ? find_tag(name, len, 0) : NULL;
    int flags = t ? t->flags : 0;
    Py_ssize_t end = skip_markup(w, lt);
    *pos = end;
    if (w->depth == 0) { /* the <body> itself: the root context, not a block */
        Frame root = {kind_div, 0, 0, 0, 0, 0, 1, 0};
        w->path[0] = 0;
        return push(w, root);
    }
    if (flags & T_DROP) { /* never main text: skipped with all it holds */
        *pos = skip_element(w, end, name, len, flags);
        return 0;
    }
    Frame *top = &w->stack[w->depth - 1];
    if ((flags & T_A) && !top->pre) { /* a link's whole text in one piece: it is inline wherever its blocks are */
        Py_ssize_t after = link_text(w, end, link);
        if (after < 0) return -1;
        *pos = after;
        if (link->len && !all_space(link)) {
            w->link += stripped_len(link);
            return append(w, link, 0);
        }
        return w->raw.len ? buf_put(&w->raw, ' ') : 0;
    }
    if (flags & T_BR) return buf_put(&w->raw, '\n');
    if (w->depth > max_depth) { /* this element would be nested max_depth + 1 deep below <body> */
        PyErr_SetNone(too_deep);
        return -1;
    }
    Frame f = *top;
    f.flags = flags;
    if (flags & T_BLOCK) {
        if (w->raw.len && flush(w, top) < 0) return -1;
        int c = 0;
        if (cue_of(w, j, end - 1, &c) < 0) return -1;
        f.kind = (t && t->kind) ? t->kind : kind_div;
        f.neg += (c < 0) + ((flags & T_NEG) != 0);
        f.pos += (c > 0) + ((flags & T_POS) != 0);
        f.com += (c == -2);
        f.pre = f.pre || (flags & T_PRE);
        f.path_len = top->path_len + 1;
        w->counter++;
    } else {
        f.in_link = f.in_link || (flags & T_A);
    }
    if (flags & T_VOID) return 0; /* visited (its depth counts) but has no children and no end tag */
    if (push(w, f) < 0) return -1;
    if (flags & T_BLOCK) w->path[f.path_len - 1] = w->counter;
    if (flags & T_RAW) { /* its unescaped text, one text node */
        Py_ssize_t e = find_end_tag(w, end, name, len);
        if (e > end) {
            if (decode(w, end, e, 0) < 0 || text_node(w, &w->stack[w->depth - 1]) < 0) return -1;
        }
        *pos = e;
    }
    return 0;
}

static int end_tag(Walk *w) {
    if (w->depth == 0) return 0;
    Frame f = w->stack[--w->depth];
    if ((f.flags & T_BLOCK) && w->raw.len) return flush(w, &f);
    return 0;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *html;
    long max_depth;
    if (!PyArg_ParseTuple(args, "Ul", &html, &max_depth) || PyUnicode_READY(html) < 0) return NULL;
    if (!too_deep) {
        PyErr_SetString(PyExc_RuntimeError, "_walk.configure() was not called");
        return NULL;
    }
    Walk w = {0};
    w.u = PyUnicode_AsUCS4Copy(html);
    if (!w.u) return NULL;
    w.n = PyUnicode_GET_LENGTH(html);
    w.blocks = PyList_New(0);
    Buf link = {0};
    int failed = !w.blocks || buf_grow(&w.raw, 1024) < 0;
    if (grow((void **)&w.path, &w.path_cap, 1, sizeof(long)) < 0) failed = 1; /* the root's path */
    Py_ssize_t i = 0;
    while (!failed && i < w.n) {
        if (CH(&w, i) != '<') {
            Py_ssize_t e = i;
            while (e < w.n && CH(&w, e) != '<') e++;
            if (w.depth > 0 && (decode(&w, i, e, 1) < 0 || text_node(&w, &w.stack[w.depth - 1]) < 0)) failed = 1;
            i = e;
        } else if (i + 1 < w.n && CH(&w, i + 1) == '/') {
            if (end_tag(&w) < 0) failed = 1;
            i = skip_markup(&w, i);
        } else if (i + 1 < w.n && (CH(&w, i + 1) == '!' || CH(&w, i + 1) == '?')) {
            i = skip_markup(&w, i);
        } else if (start_tag(&w, i, &i, max_depth, &link) < 0) {
            failed = 1;
        }
    }
    if (!failed && w.raw.len) {
        Frame root = {kind_div, 0, 0, 0, 0, 0, 1, 0};
        w.path[0] = 0;
        if (flush(&w, &root) < 0) failed = 1;
    }
    PyMem_Free(w.u);
    PyMem_Free(w.raw.p);
    PyMem_Free(w.tmp.p);
    PyMem_Free(w.clean.p);
    PyMem_Free(link.p);
    PyMem_Free(w.stack);
    PyMem_Free(w.path);
    for (Py_ssize_t i = 0; i < w.ints_cap; i++) Py_XDECREF(w.ints[i]);
    PyMem_Free(w.ints);
    if (failed) {
        Py_XDECREF(w.blocks);
        return NULL;
    }
    return w.blocks;
}

/* features.py's character classes. */
static int is_cap(Py_UCS4 c) { /* [A-ZÀ-ÖØ-ÞА-ЯΑ-Ω] */
    return (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xD6) || (c >= 0xD8 && c <= 0xDE) ||
           (c >= 0x410 && c <= 0x42F) || (c >= 0x391 && c <= 0x3A9);
}

static int is_punct(Py_UCS4 c) { /* [.,;:!?。、，] */
    return c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?' || c == 0x3002 || c == 0x3001 ||
           c == 0xFF0C;
}


/* The stop-word lists seen so far, each as a table (the lists are few and live as long as the process). */
#define MAXLISTS 256
static struct {
    PyObject *set;
    Words words;
} stop_tables[MAXLISTS];

static Words *stop_table(PyObject *set) {
    int k = 0;
    for (; k < MAXLISTS && stop_tables[k].set; k++)
        if (stop_tables[k].set == set) return &stop_tables[k].words;
    if (k == MAXLISTS) {
        PyErr_SetString(PyExc_RuntimeError, "block_stats(): more than 256 distinct stop-word sets");
        return NULL;
    }
    Words t = {0};
    PyObject *it = PyObject_GetIter(set), *w;
    if (!it) return NULL;
    while ((w = PyIter_Next(it))) {
        Py_UCS4 *u = PyUnicode_Check(w) ? PyUnicode_AsUCS4Copy(w) : NULL;
        Py_ssize_t n = u ? PyUnicode_GET_LENGTH(w) : 0;
        Slot *e = u && n ? words_slot(&t, u, n, 1) : NULL;
        PyMem_Free(u);
        Py_DECREF(w);
        if (!u || (n && !e)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "stop words must be str");
            Py_DECREF(it);
            words_free(&t);
            return NULL;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        words_free(&t);
        return NULL;
    }
    Py_INCREF(set);
    stop_tables[k].set = set;
    stop_tables[k].words = t;
    return &stop_tables[k].words;
}


/* ---- extract.Main's block classifier (features.py): every block's features and the two logistic models'
 * probabilities, in one call per page.
 *
 * Why C: a page has ~170 blocks, and the ~40 numpy operations that computed the features on columns of that
 * size cost more in per-call overhead than in arithmetic (with the two products ~500 us of a Dragnet page;
 * this call takes ~190, most of it the one pass over the text). Every feature is computed with the
 * floating-point operations of the numpy code it replaced, in the same order, so the values are the same bit
 * for bit, except where libm's log1p and exp differ from numpy's AVX-512 ones (by one ulp, on ~1% and ~5% of
 * arguments); the products of the logistic models sum in another order than numpy's einsum. tests/test_extract_features.py checks all of it against that numpy code
 * (tests/_features_ref.py) on every block of every gold page. */

/* The quantities of stage 1 (features.LOCAL) and stage 2 (features.CONTEXT); configure_scores maps the
 * names that features.py lists, in its order, to these, so the columns have one order, features.py's. */
enum { Q_BIAS, Q_LOG_CHARS, Q_STOP, Q_LINK, Q_PUNCT, Q_ENDS, Q_CAPS, Q_DIGITS, Q_NEG, Q_POS, Q_POSITION, Q_SHARE,
       Q_NEG_ANY, Q_LINK_SQ, Q_STOP_X_LEN, Q_STOP_REL, Q_COMMENTS, Q_COMMENTS_SHARE, Q_KIND /* + kind index */ };
static const char *const local_names[Q_KIND] = {
    "bias", "log_chars", "stop", "link", "punct", "ends", "caps", "digits", "neg", "pos", "position", "share",
    "neg_any", "link_sq", "stop_x_len", "stop_rel", "comments", "comments_share"};
enum { C_PREV, C_NEXT, C_WINDOW, C_REGION, C_SHARE, C_NEG, C_DIST, C_HEADLINE, C_COLS };
static const char *const context_names[C_COLS] = {
    "p1_prev", "p1_next", "p1_window", "region", "region_share", "region_neg", "region_dist", "headline"};

#define MAXKINDS 16
static struct {
    int local[Q_KIND + MAXKINDS], nlocal; /* stage-1 column j holds quantity local[j] */
    int context[C_COLS];                  /* stage-2 extra column j holds quantity context[j] */
    PyObject *kinds[MAXKINDS];            /* interned, so a Block's kind is found by identity */
    int nkinds, heading;                  /* heading: the index of "h" in kinds */
    PyObject *ends;                       /* a block ending with one of these ends like a sentence */
    double neutral_stop;                  /* the stop-word density of a page without a stop-word list */
    Py_ssize_t top_limit, top_n;          /* the language vote reads the top_n words of the first top_limit */
} cfg;

/* What the features need of one block: its Block's numbers, then counts over its text. */
typedef struct {
    double chars, link, neg, pos, com;
    int kind; /* index in cfg.kinds, -1: none */
    double words, stops, punct, caps, nums, spaces, ends;
} Stats;

static int kind_index(PyObject *kind) {
    for (int k = 0; k < cfg.nkinds; k++)
        if (cfg.kinds[k] == kind) return k;
    if (!PyUnicode_Check(kind) || PyUnicode_CHECK_INTERNED(kind)) return -1; /* interned and not one of them */
    for (int k = 0; k < cfg.nkinds; k++)
        if (PyUnicode_Compare(cfg.kinds[k], kind) == 0) return k;
    return -1;
}

/* The numeric fields of Block b (chars, link_chars, neg, pos, com, kind) into *s; -1 if b is not a Block. */
static int read_block(PyObject *b, Stats *s) {
    if (Py_TYPE(b) != block_type) {
        PyErr_SetString(PyExc_TypeError, "expected a list of Block");
        return -1;
    }
    double *f[5] = {&s->chars, &s->link, &s->neg, &s->pos, &s->com};
    static const int at[5] = {1, 2, 4, 5, 6}; /* their places in Block */
    for (int k = 0; k < 5; k++) *f[k] = PyLong_AsDouble(PyStructSequence_GET_ITEM(b, at[k]));
    s->kind = kind_index(PyStructSequence_GET_ITEM(b, 3));
    return PyErr_Occurred() ? -1 : 0;
}

/* The words of a page: each \w+ run of each block's text, lower-cased a code point at a time (Unicode's simple
 * case mapping; str.lower() differs only where it writes two code points for one, as for "İ", or applies the
 * final-sigma rule), hashed once into `seen`, where it gets a number (Slot.first, in order of first
 * appearance) and its count among the page's first cfg.top_limit words. */
typedef struct {
    Words seen;
    int32_t *tok; /* the number of every word of the page, in order */
    Py_ssize_t ntok, tok_cap;
    Buf low; /* one text, lower-cased */
} Scan;

/* Character classes: \w, decimal digit, [.,;:!?。、，], [A-ZÀ-ÖØ-ÞА-ЯΑ-Ω], whitespace; by table for ASCII. */
enum { K_WORD = 1, K_DIGIT = 2, K_PUNCT = 4, K_CAP = 8, K_SPACE = 16 };
static uint8_t ascii_class[128];

static void init_classes(void) {
    for (Py_UCS4 c = 0; c < 128; c++)
        ascii_class[c] = (uint8_t)(is_word(c) * K_WORD | is_decimal(c) * K_DIGIT | is_punct(c) * K_PUNCT |
                                   is_cap(c) * K_CAP | (Py_UNICODE_ISSPACE(c) ? K_SPACE : 0));
}

static int class_of(Py_UCS4 c) {
    if (c < 128) return ascii_class[c];
    return is_word(c) * K_WORD | is_decimal(c) * K_DIGIT | is_punct(c) * K_PUNCT | is_cap(c) * K_CAP |
           (Py_UNICODE_ISSPACE(c) ? K_SPACE : 0);
}

/* The word low[start:end] of the text, whose hash_ucs4 is `hash`: found or added in sc->seen, counted, its
 * number appended to sc->tok. */
static int add_word(Scan *sc, Py_ssize_t start, Py_ssize_t end, size_t hash, Stats *st) {
    Slot *e = words_slot_hashed(&sc->seen, sc->low.p + start, end - start, hash, 1);
    if (!e || grow((void **)&sc->tok, &sc->tok_cap, sc->ntok + 1, sizeof(int32_t)) < 0) return -1;
    if (sc->ntok < cfg.top_limit) e->count++;
    sc->tok[sc->ntok++] = e->first;
    st->words++;
    return 0;
}

/* Over `text`, one pass: the matches of [.,;:!?。、，], of (?<!\S)[A-ZÀ-ÖØ-ÞА-ЯΑ-Ω] and of \b\d+\b and
 * str.count(" ") over the text as it is; its words (\w+ runs of it lower-cased, each hashed as it is read)
 * into Scan; whether it ends with one of cfg.ends. The state is in locals, one loop per code-point width
 * (a read through PyUnicode_READ is a switch per code point). */
static int scan_text(Scan *sc, PyObject *text, Stats *st) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text), start = -1;
    long punct = 0, caps = 0, nums = 0, spaces = 0;
    int after_space = 1, in_word = 0, all_digits = 0;
    size_t hash = 0;
    if (buf_grow(&sc->low, len + 1) < 0) return -1;
    Py_UCS4 *low = sc->low.p;
    st->words = 0;
#define PASS(type)                                                                                                  \
    for (Py_ssize_t i = 0; i < len; i++) {                                                                          \
        Py_UCS4 c = ((const type *)data)[i], lc;                                                                    \
        int k = class_of(c), word = k & K_WORD, low_word;                                                           \
        if (word) {                                                                                                 \
            if (!in_word) all_digits = 1;                                                                           \
            all_digits = all_digits && (k & K_DIGIT);                                                               \
        } else if (in_word && all_digits) {                                                                         \
            nums++; /* a run of word characters that are all decimal digits: \b\d+\b */                             \
        }                                                                                                           \
        in_word = word;                                                                                             \
        punct += (k & K_PUNCT) != 0;                                                                                \
        caps += after_space && (k & K_CAP);                                                                         \
        spaces += c == ' ';                                                                                         \
        after_space = (k & K_SPACE) != 0;                                                                           \
        if (c < 128) {                                                                                              \
            lc = c >= 'A' && c <= 'Z' ? c + 32 : c;                                                                 \
            low_word = word;                                                                                        \
        } else {                                                                                                    \
            lc = Py_UNICODE_TOLOWER(c);                                                                             \
            low_word = is_word(lc);                                                                                 \
        }                                                                                                           \
        low[i] = lc;                                                                                                \
        if (low_word) {                                                                                             \
            if (start < 0) start = i, hash = 1469598103934665603ull; /* hash_ucs4, a code point at a time */       \
            hash = (hash ^ lc) * 1099511628211ull;                                                                  \
        } else if (start >= 0) {                                                                                    \
            if (add_word(sc, start, i, hash, st) < 0) return -1;                                                    \
            start = -1;                                                                                             \
        }                                                                                                           \
    }
    switch (kind) {
    case PyUnicode_1BYTE_KIND: PASS(Py_UCS1) break;
    case PyUnicode_2BYTE_KIND: PASS(Py_UCS2) break;
    default: PASS(Py_UCS4) break;
    }
#undef PASS
    if (in_word && all_digits) nums++;
    if (start >= 0 && add_word(sc, start, len, hash, st) < 0) return -1;
    st->punct = (double)punct;
    st->caps = (double)caps;
    st->nums = (double)nums;
    st->spaces = (double)spaces;
    st->ends = len && PyUnicode_FindChar(cfg.ends, PyUnicode_READ(kind, data, len - 1), 0,
                                         PyUnicode_GET_LENGTH(cfg.ends), 1) >= 0;
    return 0;
}

/* x before y: more frequent, or as frequent and seen first. */
static int before(const Slot *x, const Slot *y) {
    return x->count > y->count || (x->count == y->count && x->first < y->first);
}

/* The cfg.top_n most frequent of the page's first cfg.top_limit words as a list of str, most frequent first,
 * ties in order of first appearance (Counter.most_common). */
static PyObject *top_words(const Words *t) {
    Py_ssize_t n = cfg.top_n, k = 0;
    Slot **order = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Slot *));
    if (!order) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < t->cap && n > 0; i++) { /* insertion into a sorted array of at most n */
        Slot *e = &t->slots[i];
        if (!e->len || !e->count || (k == n && !before(e, order[n - 1]))) continue;
        Py_ssize_t j = k < n ? k++ : n - 1;
        while (j > 0 && before(e, order[j - 1])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = e;
    }
    PyObject *out = PyList_New(k);
    for (Py_ssize_t i = 0; out && i < k; i++) {
        PyObject *w = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, t->arena.p + order[i]->start, order[i]->len);
        if (!w) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, w);
    }
    PyMem_Free(order);
    return out;
}

/* Every block's Stats, its stop words counted in the list that stoplist(top words) picks (a set, or None
 * for none): one pass over the texts, each lower-cased and hashed word by word once. */
static int page_stats(PyObject *blocks, PyObject *stoplist, Stats *st, int *has_stop) {
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    Scan sc = {0};
    uint8_t *is_stop = NULL;
    PyObject *top = NULL, *stop = NULL;
    int rc = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyList_GET_ITEM(blocks, i), *text;
        if (read_block(b, &st[i]) < 0) goto done;
        text = PyStructSequence_GET_ITEM(b, 0);
        if (!PyUnicode_Check(text) || PyUnicode_READY(text) < 0) {
            PyErr_SetString(PyExc_TypeError, "a Block's text must be a str");
            goto done;
        }
        if (scan_text(&sc, text, &st[i]) < 0) goto done;
    }
    if (!(top = top_words(&sc.seen)) || !(stop = PyObject_CallOneArg(stoplist, top))) goto done;
    *has_stop = stop != Py_None;
    Words *table = NULL;
    if (*has_stop && (!PyAnySet_Check(stop) || !(table = stop_table(stop)))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "stoplist() must return a set, a frozenset or None");
        goto done;
    }
    if (!(is_stop = PyMem_Calloc((size_t)sc.seen.used + 1, 1))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; table && k < sc.seen.cap; k++) { /* each distinct word looked up once, by its hash */
        const Slot *e = &sc.seen.slots[k];
        if (e->len) is_stop[e->first] = words_slot_hashed(table, sc.seen.arena.p + e->start, e->len, e->hash, 0) != NULL;
    }
    for (Py_ssize_t i = 0, t = 0; i < n; i++) {
        st[i].stops = 0;
        for (Py_ssize_t end = t + (Py_ssize_t)st[i].words; t < end; t++) st[i].stops += is_stop[sc.tok[t]];
    }
    rc = PyErr_Occurred() ? -1 : 0;
done:
    Py_XDECREF(top);
    Py_XDECREF(stop);
    PyMem_Free(is_stop);
    PyMem_Free(sc.tok);
    PyMem_Free(sc.low.p);
    words_free(&sc.seen);
    return rc;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The page's typical stop-word density of prose: the median of sd over blocks of 10+ words (numpy's median:
 * the middle value, or the mean of the two middle ones), at least 0.05; with no such block, neutral_stop. */
static double prose_stop(const Stats *st, const double *sd, Py_ssize_t n, double *tmp) {
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if ((st[i].words > 1 ? st[i].words : 1) >= 10) tmp[m++] = sd[i];
    if (!m) return cfg.neutral_stop;
    qsort(tmp, (size_t)m, sizeof(double), cmp_double);
    double median = m % 2 ? tmp[m / 2] : (tmp[m / 2 - 1] + tmp[m / 2]) / 2;
    return median > 0.05 ? median : 0.05;
}

/* The stage-1 matrix (n x cfg.nlocal, features.LOCAL's columns; features.py's docstrings say why each one).
 * sd and tmp: room for n doubles each. */
static void local_rows(const Stats *st, Py_ssize_t n, int has_stop, double *x, double *sd, double *tmp) {
    double total = 0, com_chars = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double nw = st[i].words > 1 ? st[i].words : 1;
        sd[i] = has_stop ? st[i].stops / nw : cfg.neutral_stop;
        total += st[i].chars; /* sums of whole numbers: exact in any order */
        com_chars += st[i].com > 0 ? st[i].chars : 0;
    }
    double denom = total != 0 ? total : 1.0, prose = prose_stop(st, sd, n, tmp);
    double com_share = com_chars / denom, last = n - 1 > 1 ? (double)(n - 1) : 1.0;
    for (Py_ssize_t i = 0; i < n; i++, x += cfg.nlocal) {
        const Stats *s = &st[i];
        double nw = s->words > 1 ? s->words : 1, lc = log1p(s->chars), ld = s->link / s->chars;
        double punct = s->punct / nw, com = s->com > 0;
        double q[Q_KIND] = {
            [Q_BIAS] = 1.0, [Q_LOG_CHARS] = lc, [Q_STOP] = sd[i], [Q_LINK] = ld, [Q_PUNCT] = punct < 1.0 ? punct : 1.0,
            [Q_ENDS] = s->ends, [Q_CAPS] = s->caps / (s->spaces + 1), [Q_DIGITS] = s->nums / nw,
            [Q_NEG] = s->neg < 3 ? s->neg : 3, [Q_POS] = s->pos < 2 ? s->pos : 2, [Q_POSITION] = (double)i / last,
            [Q_SHARE] = s->chars / denom, [Q_NEG_ANY] = s->neg > 0, [Q_LINK_SQ] = ld * ld, [Q_STOP_X_LEN] = sd[i] * lc,
            [Q_STOP_REL] = sd[i] / prose, [Q_COMMENTS] = com, [Q_COMMENTS_SHARE] = com * com_share};
        for (int j = 0; j < cfg.nlocal; j++) {
            int k = cfg.local[j];
            x[j] = k < Q_KIND ? q[k] : (double)(s->kind == k - Q_KIND);
        }
    }
}

/* p[i] = sigmoid(x[i] . w + add[i]) for each of n rows of m columns (add: NULL or n values), with the clip of
 * main.py's former numpy version. */
static void logistic_rows(const double *x, Py_ssize_t n, int m, const double *w, const double *add, double *p) {
    for (Py_ssize_t i = 0; i < n; i++, x += m) {
        double z = add ? add[i] : 0.0;
        for (int j = 0; j < m; j++) z += x[j] * w[j];
        z = z < -30.0 ? -30.0 : z > 30.0 ? 30.0 : z;
        p[i] = 1.0 / (1.0 + exp(-z));
    }
}

/* The main-content region: the container (an element number of the blocks' paths) whose blocks have the
 * largest sum of (p1 - 0.5) x chars, ties to the deepest (numbered last); inside[i]: block i lies in it.
 * The numbers are small (elements of one page, in document order), so the sums live in an array. */
static int region(PyObject *blocks, const Stats *st, const double *p1, uint8_t *inside) {
    Py_ssize_t n = PyList_GET_SIZE(blocks), top = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *path = PyStructSequence_GET_ITEM(PyList_GET_ITEM(blocks, i), 7);
        if (!PyTuple_Check(path)) {
            PyErr_SetString(PyExc_TypeError, "a Block's path must be a tuple");
            return -1;
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(path); k++) {
            Py_ssize_t v = PyLong_AsSsize_t(PyTuple_GET_ITEM(path, k));
            if (v < 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "negative element number in a path");
                return -1;
            }
            if (v > top) top = v;
        }
    }
    if (n > 0) memset(inside, 0, (size_t)n);
    double *sums = PyMem_Calloc((size_t)top + 1, sizeof(double));
    uint8_t *seen = PyMem_Calloc((size_t)top + 1, 1);
    if (!sums || !seen) {
        PyMem_Free(sums);
        PyMem_Free(seen);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* in the order of numpy's bincount over the flattened paths */
        PyObject *path = PyStructSequence_GET_ITEM(PyList_GET_ITEM(blocks, i), 7);
        double v = (p1[i] - 0.5) * st[i].chars;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(path); k++) {
            Py_ssize_t e = PyLong_AsSsize_t(PyTuple_GET_ITEM(path, k));
            sums[e] += v;
            seen[e] = 1;
        }
    }
    Py_ssize_t best = -1;
    for (Py_ssize_t e = 0; e <= top; e++)
        if (seen[e] && (best < 0 || sums[e] >= sums[best])) best = e;
    for (Py_ssize_t i = 0; i < n && best >= 0; i++) {
        PyObject *path = PyStructSequence_GET_ITEM(PyList_GET_ITEM(blocks, i), 7);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(path) && !inside[i]; k++)
            inside[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(path, k)) == best;
    }
    PyMem_Free(sums);
    PyMem_Free(seen);
    return 0;
}

/* The stage-2 extra columns (n x C_COLS, features.CONTEXT's order; features.py's docstrings say why each
 * one): the neighbours' stage-1 scores, the chars-weighted window of 3 each side, the region and what
 * follows from it. cum: room for 2 (n + 1) doubles; inside: n bytes. */
static int context_rows(PyObject *blocks, const Stats *st, const double *p1, double *ctx, double *cum,
                        uint8_t *inside) {
    Py_ssize_t n = PyList_GET_SIZE(blocks), first = -1;
    if (region(blocks, st, p1, inside) < 0) return -1;
    double *cp = cum, *cc = cum + n + 1; /* running sums of p1 x chars and of chars, numpy's cumsum */
    double total = 0, in_chars = 0, base = 0;
    cp[0] = cc[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        cp[i + 1] = cp[i] + p1[i] * st[i].chars;
        cc[i + 1] = cc[i] + st[i].chars;
        total += st[i].chars;
        if (!inside[i]) continue;
        in_chars += st[i].chars;
        base = first < 0 || st[i].neg < base ? st[i].neg : base; /* cues met inside the region count */
        if (first < 0) first = i;
    }
    double share = in_chars / (total != 0 ? total : 1.0);
    Py_ssize_t headline = -1; /* the last heading in the 30 blocks before the region */
    for (Py_ssize_t i = (first > 0 ? first : 0) - 1; i >= 0 && i >= first - 30 && headline < 0; i--)
        if (st[i].kind == cfg.heading) headline = i;
    Py_ssize_t prev = -1; /* the last block of the region at or before i */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (inside[i]) prev = i;
        ctx[i * C_COLS + C_DIST] = prev >= 0 ? (double)(i - prev) : -1;
    }
    for (Py_ssize_t i = n - 1, next = -1; i >= 0; i--) { /* log(1 + blocks to the nearest block of the region) / 3 */
        if (inside[i]) next = i;
        double d = ctx[i * C_COLS + C_DIST];
        if (next >= 0 && (d < 0 || next - i < d)) d = (double)(next - i);
        ctx[i * C_COLS + C_DIST] = first < 0 ? 0.0 : log1p(d) / 3;
    }
    double q[C_COLS];
    for (Py_ssize_t i = 0; i < n; i++) {
        double *row = ctx + i * C_COLS, pc = p1[i] * st[i].chars, neg = inside[i] ? st[i].neg - base : st[i].neg;
        double wp = cp[i + 4 < n ? i + 4 : n] - cp[i > 3 ? i - 3 : 0], wc = cc[i + 4 < n ? i + 4 : n] - cc[i > 3 ? i - 3 : 0];
        q[C_PREV] = i > 0 ? p1[i - 1] : 0.0;
        q[C_NEXT] = i + 1 < n ? p1[i + 1] : 0.0;
        q[C_WINDOW] = (wp - pc) / (wc - st[i].chars > 1.0 ? wc - st[i].chars : 1.0);
        q[C_REGION] = inside[i];
        q[C_SHARE] = share;
        q[C_NEG] = neg < 3 ? neg : 3;
        q[C_DIST] = row[C_DIST];
        q[C_HEADLINE] = i == headline;
        for (int j = 0; j < C_COLS; j++) row[j] = q[cfg.context[j]];
    }
    return 0;
}

/* Room for one page: n Stats, then doubles for the stage-1 matrix, p1, the context columns and scratch. */
typedef struct {
    Stats *st;
    double *x, *p1, *ctx, *scratch;
    uint8_t *inside;
} Page;

static void page_free(Page *pg) {
    PyMem_Free(pg->st);
    PyMem_Free(pg->x);
    PyMem_Free(pg->inside);
    memset(pg, 0, sizeof *pg);
}

static int page_alloc(Page *pg, Py_ssize_t n) {
    size_t m = (size_t)n + 1, doubles = m * ((size_t)cfg.nlocal + 1 + C_COLS + 2);
    pg->st = PyMem_Calloc(m, sizeof(Stats));
    pg->x = PyMem_Calloc(doubles, sizeof(double));
    pg->inside = PyMem_Calloc(m, 1);
    if (!pg->st || !pg->x || !pg->inside) {
        page_free(pg);
        PyErr_NoMemory();
        return -1;
    }
    pg->p1 = pg->x + m * (size_t)cfg.nlocal;
    pg->ctx = pg->p1 + m;
    pg->scratch = pg->ctx + m * C_COLS; /* 2 m doubles: sd and tmp of local_rows, or cum of context_rows */
    return 0;
}

static int check_configured(PyObject *blocks) {
    if (!cfg.nlocal) {
        PyErr_SetString(PyExc_RuntimeError, "configure_scores() was not called");
        return -1;
    }
    if (!PyList_Check(blocks)) {
        PyErr_SetString(PyExc_TypeError, "expected a list of Block");
        return -1;
    }
    return 0;
}

/* A float64 buffer of exactly `count` values (a numpy array or bytes); -1 with an error otherwise. */
static int doubles_of(PyObject *obj, Py_buffer *view, Py_ssize_t count, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->len != count * (Py_ssize_t)sizeof(double) || (view->format && strcmp(view->format, "d") != 0)) {
        PyErr_Format(PyExc_ValueError, "%s must hold %zd float64 values", what, count);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *bytes_of(const void *p, Py_ssize_t size) { /* a bytearray: numpy's frombuffer makes it writable */
    return PyByteArray_FromStringAndSize(p, size);
}

/* Stage 1 of a page into pg->st and pg->x; the words of each block into words (n int64, may be NULL). */
static int page_local(PyObject *blocks, PyObject *stoplist, Page *pg, int64_t *words) {
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    int has_stop = 0;
    if (page_stats(blocks, stoplist, pg->st, &has_stop) < 0) return -1;
    if (PyList_GET_SIZE(blocks) != n) { /* stoplist() is Python: the list is read again after it */
        PyErr_SetString(PyExc_RuntimeError, "the list of blocks changed during stoplist()");
        return -1;
    }
    local_rows(pg->st, n, has_stop, pg->x, pg->scratch, pg->scratch + n + 1);
    for (Py_ssize_t i = 0; words && i < n; i++) words[i] = (int64_t)pg->st[i].words;
    return 0;
}

/* local(blocks, stoplist) -> (bytearray, bytearray): the stage-1 matrix (float64, n x len(LOCAL)) and each
 * block's number of words (int64); stoplist(top words) -> set or None picks the stop words. */
static PyObject *local(PyObject *self, PyObject *args) {
    PyObject *blocks, *stoplist, *x = NULL, *words = NULL, *out = NULL;
    if (!PyArg_ParseTuple(args, "OO", &blocks, &stoplist) || check_configured(blocks) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    Page pg;
    if (page_alloc(&pg, n) < 0) return NULL;
    if (!(words = bytes_of(NULL, n * (Py_ssize_t)sizeof(int64_t)))) goto done;
    if (page_local(blocks, stoplist, &pg, (int64_t *)PyByteArray_AS_STRING(words)) < 0) goto done;
    if ((x = bytes_of(pg.x, n * cfg.nlocal * (Py_ssize_t)sizeof(double)))) out = PyTuple_Pack(2, x, words);
done:
    Py_XDECREF(x);
    Py_XDECREF(words);
    page_free(&pg);
    return out;
}

/* context(blocks, p1) -> bytearray: the stage-2 extra columns (float64, n x len(CONTEXT)) given the blocks'
 * stage-1 probabilities (n float64). */
static PyObject *context(PyObject *self, PyObject *args) {
    PyObject *blocks, *p1, *out = NULL;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OO", &blocks, &p1) || check_configured(blocks) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    Page pg;
    if (doubles_of(p1, &view, n, "p1") < 0) return NULL;
    if (page_alloc(&pg, n) < 0) goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (read_block(PyList_GET_ITEM(blocks, i), &pg.st[i]) < 0) goto done;
    if (context_rows(blocks, pg.st, view.buf, pg.ctx, pg.scratch, pg.inside) == 0)
        out = bytes_of(pg.ctx, n * C_COLS * (Py_ssize_t)sizeof(double));
done:
    PyBuffer_Release(&view);
    page_free(&pg);
    return out;
}

/* logistic(x, w) -> bytearray: a logistic model's probability (float64) for each row of x (a C-contiguous
 * float64 matrix of len(w) columns, as numpy gives). */
static PyObject *logistic(PyObject *self, PyObject *args) {
    PyObject *x, *w, *out = NULL;
    Py_buffer xv = {0}, wv = {0};
    if (!PyArg_ParseTuple(args, "OO", &x, &w) || PyObject_GetBuffer(w, &wv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(x, &xv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
    Py_ssize_t m = wv.len / (Py_ssize_t)sizeof(double);
    if (wv.ndim != 1 || strcmp(wv.format, "d") != 0 || xv.ndim != 2 || strcmp(xv.format, "d") != 0 ||
        xv.shape[1] != m || m > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "logistic(): x must be a float64 matrix of len(w) columns, w float64");
        goto done;
    }
    if ((out = bytes_of(NULL, xv.shape[0] * (Py_ssize_t)sizeof(double))))
        logistic_rows(xv.buf, xv.shape[0], (int)m, wv.buf, NULL, (double *)PyByteArray_AS_STRING(out));
done:
    if (xv.obj) PyBuffer_Release(&xv);
    PyBuffer_Release(&wv);
    return out;
}

/* scores(blocks, stoplist, w1, w2) -> (bytearray, bytearray): each block's stage-2 probability (float64) and
 * number of words (int64); w1 weighs the LOCAL columns, w2 the LOCAL then the CONTEXT columns. */
static PyObject *scores(PyObject *self, PyObject *args) {
    PyObject *blocks, *stoplist, *w1, *w2, *p = NULL, *words = NULL, *out = NULL;
    Py_buffer v1, v2;
    if (!PyArg_ParseTuple(args, "OOOO", &blocks, &stoplist, &w1, &w2) || check_configured(blocks) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(blocks), L = cfg.nlocal;
    Page pg = {0};
    if (doubles_of(w1, &v1, L, "w1") < 0) return NULL;
    if (doubles_of(w2, &v2, L + C_COLS, "w2") < 0) {
        PyBuffer_Release(&v1);
        return NULL;
    }
    if (page_alloc(&pg, n) < 0 || !(words = bytes_of(NULL, n * (Py_ssize_t)sizeof(int64_t))) ||
        !(p = bytes_of(NULL, n * (Py_ssize_t)sizeof(double))))
        goto done;
    if (page_local(blocks, stoplist, &pg, (int64_t *)PyByteArray_AS_STRING(words)) < 0) goto done;
    logistic_rows(pg.x, n, (int)L, v1.buf, NULL, pg.p1);
    if (context_rows(blocks, pg.st, pg.p1, pg.ctx, pg.scratch, pg.inside) < 0) goto done;
    double *z = pg.scratch; /* stage 2: the context columns' part of the product, then the LOCAL columns' */
    for (Py_ssize_t i = 0; i < n; i++) {
        z[i] = 0.0;
        for (int j = 0; j < C_COLS; j++) z[i] += pg.ctx[i * C_COLS + j] * ((const double *)v2.buf)[L + j];
    }
    logistic_rows(pg.x, n, (int)L, v2.buf, z, (double *)PyByteArray_AS_STRING(p));
    out = PyTuple_Pack(2, p, words);
done:
    Py_XDECREF(p);
    Py_XDECREF(words);
    PyBuffer_Release(&v1);
    PyBuffer_Release(&v2);
    page_free(&pg);
    return out;
}

/* The place of `name` in names[0:count], -1 if absent. */
static int name_index(PyObject *name, const char *const *names, int count) {
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int k = 0; s && k < count; k++)
        if (strcmp(s, names[k]) == 0) return k;
    return -1;
}

/* The quantity that stage-1 column `name` holds: one of local_names, or "kind_" + one of cfg.kinds. */
static int local_quantity(PyObject *name) {
    int q = name_index(name, local_names, Q_KIND);
    const char *s = q < 0 && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int k = 0; s && strncmp(s, "kind_", 5) == 0 && k < cfg.nkinds; k++)
        if (strcmp(s + 5, PyUnicode_AsUTF8(cfg.kinds[k])) == 0) q = Q_KIND + k;
    return q;
}

/* Each name of `names` (a tuple) mapped to its quantity into cols; every quantity exactly once. */
static int map_columns(PyObject *names, int (*quantity)(PyObject *), int count, int *cols, const char *what) {
    uint8_t used[Q_KIND + MAXKINDS] = {0};
    if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != count) {
        PyErr_Format(PyExc_ValueError, "configure_scores(): %s must be a tuple of the %d columns C computes", what, count);
        return -1;
    }
    for (int j = 0; j < count; j++) {
        PyObject *name = PyTuple_GET_ITEM(names, j);
        int q = quantity(name);
        if (q < 0 || used[q]++) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "configure_scores(): %s column %R unknown or twice", what, name);
            return -1;
        }
        cols[j] = q;
    }
    return 0;
}

static int context_quantity(PyObject *name) { return name_index(name, context_names, C_COLS); }

/* configure_scores(local, context, kinds, ends, neutral_stop, top_limit, top_n): features.py's column names
 * (LOCAL, CONTEXT: their order is the matrices'), block kinds, sentence ends, neutral stop-word density and
 * the language vote's word counts. A name C does not compute, or one it computes and is not named, is an
 * error: the two sides cannot silently disagree. */
static PyObject *configure_scores(PyObject *self, PyObject *args) {
    PyObject *lnames, *cnames, *kinds, *ends;
    double neutral;
    Py_ssize_t limit, top;
    if (!PyArg_ParseTuple(args, "OOO!Udnn", &lnames, &cnames, &PyTuple_Type, &kinds, &ends, &neutral, &limit, &top))
        return NULL;
    int nkinds = (int)PyTuple_GET_SIZE(kinds), heading = -1;
    if (nkinds > MAXKINDS) {
        PyErr_SetString(PyExc_ValueError, "configure_scores(): at most 16 kinds");
        return NULL;
    }
    cfg.nlocal = 0; /* unconfigured until all went well */
    for (int k = 0; k < cfg.nkinds; k++) Py_CLEAR(cfg.kinds[k]);
    cfg.nkinds = 0;
    for (int k = 0; k < nkinds; k++) {
        PyObject *kind = PyTuple_GET_ITEM(kinds, k);
        if (!PyUnicode_Check(kind)) {
            PyErr_SetString(PyExc_TypeError, "configure_scores(): kinds must be str");
            return NULL;
        }
        Py_INCREF(kind);
        PyUnicode_InternInPlace(&kind);
        cfg.kinds[cfg.nkinds++] = kind;
        if (PyUnicode_CompareWithASCIIString(kind, "h") == 0) heading = k;
    }
    int cols[Q_KIND + MAXKINDS];
    if (map_columns(lnames, local_quantity, Q_KIND + nkinds, cols, "local") < 0 ||
        map_columns(cnames, context_quantity, C_COLS, cfg.context, "context") < 0)
        return NULL;
    if (heading < 0) {
        PyErr_SetString(PyExc_ValueError, "configure_scores(): kinds must hold \"h\" (the headline column's)");
        return NULL;
    }
    memcpy(cfg.local, cols, sizeof cols);
    Py_INCREF(ends);
    Py_XSETREF(cfg.ends, ends);
    cfg.heading = heading;
    cfg.neutral_stop = neutral;
    cfg.top_limit = limit;
    cfg.top_n = top;
    cfg.nlocal = Q_KIND + nkinds;
    Py_RETURN_NONE;
}

/* nesting_depth(html, stop, flat) -> int: base.nesting_depth's estimate, one C pass doing what the regex
 * <(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)> finds: a start tag adds one, an end tag removes one (never below 0),
 * tags named in `flat` (lower case) and self-closed tags count for nothing; stops once the depth passes `stop`. */
static PyObject *nesting_depth(PyObject *self, PyObject *args) {
    PyObject *html, *flat;
    long stop;
    if (!PyArg_ParseTuple(args, "UlO!", &html, &stop, &PyTuple_Type, &flat) || PyUnicode_READY(html) < 0) return NULL;
    char names[64][MAXNAME];
    Py_ssize_t nflat = PyTuple_GET_SIZE(flat);
    if (nflat > 64) nflat = 64;
    for (Py_ssize_t k = 0; k < nflat; k++) {
        Py_ssize_t len;
        const char *u = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(flat, k), &len);
        if (!u) return NULL;
        if (len >= MAXNAME) len = MAXNAME - 1;
        memcpy(names[k], u, (size_t)len);
        names[k][len] = 0;
    }
    int kind = PyUnicode_KIND(html);
    const void *data = PyUnicode_DATA(html);
    Py_ssize_t n = PyUnicode_GET_LENGTH(html);
    long depth = 0, deepest = 0;
    for (Py_ssize_t i = 0; i < n && deepest <= stop; i++) {
        if (PyUnicode_READ(kind, data, i) != '<') continue;
        Py_ssize_t j = i + 1;
        int close = j < n && PyUnicode_READ(kind, data, j) == '/';
        j += close;
        char name[MAXNAME];
        size_t len = 0;
        while (j < n) {
            Py_UCS4 c = PyUnicode_READ(kind, data, j);
            int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
            if (!letter && !(len && c >= '0' && c <= '9')) break;
            if (len < MAXNAME - 1) name[len] = (char)(c | 0x20 * (c >= 'A' && c <= 'Z'));
            len++;
            j++;
        }
        if (!len) continue;
        Py_ssize_t k = j;
        while (k < n && PyUnicode_READ(kind, data, k) != '>') k++;
        if (k == n) break; /* no '>' left: no tag matches from here on */
        int self_closed = PyUnicode_READ(kind, data, k - 1) == '/';
        int is_flat = 0;
        if (len < MAXNAME) {
            name[len] = 0;
            for (Py_ssize_t f = 0; f < nflat && !is_flat; f++) is_flat = strcmp(names[f], name) == 0;
        }
        i = k;
        if (is_flat || self_closed) continue;
        depth = close ? (depth > 0 ? depth - 1 : 0) : depth + 1;
        if (depth > deepest) deepest = depth;
    }
    return PyLong_FromLong(deepest);
}

/* configure(tags, cues, too_deep): tags maps a name to (flags, kind or None); cues holds the three lists of
 * class/id cue words (comment section, boilerplate, content). */
static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *table, *lists, *exc;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyDict_Type, &table, &PyTuple_Type, &lists, &exc)) return NULL;
    if (PyTuple_GET_SIZE(lists) != 3) {
        PyErr_SetString(PyExc_ValueError, "configure(): cues must be three lists of words");
        return NULL;
    }
    for (int list = 0; list < 3; list++) {
        PyObject *words = PyTuple_GET_ITEM(lists, list);
        if (!PyTuple_Check(words) || PyTuple_GET_SIZE(words) > MAXCUES) {
            PyErr_SetString(PyExc_ValueError, "configure(): each cue list is a tuple of at most 160 words");
            return NULL;
        }
        ncues[list] = 0;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(words); k++) {
            Py_ssize_t len;
            const char *u = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(words, k), &len);
            if (!u) return NULL;
            Cue *c = &cues[list][ncues[list]++];
            c->at_start = len && u[0] == '^';
            c->at_end = len > c->at_start && u[len - 1] == '$';
            u += c->at_start;
            len -= c->at_start + c->at_end;
            if (len <= 0 || len >= (Py_ssize_t)sizeof c->s) {
                PyErr_Format(PyExc_ValueError, "configure(): bad cue word %R", PyTuple_GET_ITEM(words, k));
                return NULL;
            }
            memcpy(c->s, u, (size_t)len);
            c->s[len] = 0;
            c->len = (int)len;
        }
    }
    words_free(&cue_memo);
    for (int i = 0; i < NTAGS; i++) {
        Py_CLEAR(tags[i].kind);
        tags[i].name[0] = 0;
        tags[i].flags = 0;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(table, &pos, &key, &value)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(key, &n);
        int flags;
        PyObject *kind;
        if (!s || !PyArg_ParseTuple(value, "iO", &flags, &kind)) return NULL;
        Tag *t = find_tag(s, (size_t)n, 1);
        if (!t) {
            PyErr_Format(PyExc_ValueError, "tag name %R too long or table full", key);
            return NULL;
        }
        t->flags = flags;
        if (kind != Py_None) {
            Py_INCREF(kind);
            t->kind = kind;
        }
    }
    Py_XSETREF(kind_div, PyUnicode_InternFromString("div"));
    Py_INCREF(exc);
    Py_XSETREF(too_deep, exc);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "walk(body_html, max_depth) -> list of Block: the blocks of a serialised <body>."},
    {"local", local, METH_VARARGS, "local(blocks, stoplist) -> (stage-1 matrix, words per block) (features.py)."},
    {"context", context, METH_VARARGS, "context(blocks, p1) -> the stage-2 extra columns (features.py)."},
    {"logistic", logistic, METH_VARARGS, "logistic(x, w) -> a logistic model's probability of each row of x."},
    {"scores", scores, METH_VARARGS, "scores(blocks, stoplist, w1, w2) -> (stage-2 probabilities, words)."},
    {"configure_scores", configure_scores, METH_VARARGS,
     "configure_scores(local, context, kinds, ends, neutral_stop, top_limit, top_n) (features.py)."},
    {"nesting_depth", nesting_depth, METH_VARARGS, "nesting_depth(html, stop, flat) -> int (base.nesting_depth)."},
    {"configure", configure, METH_VARARGS, "configure(tags, cues, too_deep)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    init_classes();
    block_type = PyStructSequence_NewType(&block_desc);
    if (!block_type || PyModule_AddObjectRef(m, "Block", (PyObject *)block_type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
