/* The block walk of extract.Main in C: one depth-first pass over Lexbor's tree of the <body>.
 *
 * Why C on Lexbor's own tree: selectolax exposes the tree to Python only as objects (about 1 us per
 * node), and serialising the body for a C scanner cost as much as the scan. But selectolax's
 * extension module exports Lexbor's C API as dynamic symbols, and a node's mem_id is its
 * lxb_dom_node_t *. lexbor() binds the few functions the walk needs by name (dlsym on the loaded
 * module) and the walk reads the tree only through them: child and sibling links, node type, tag id
 * and local name, class and id, a text node's data. Nothing depends on Lexbor's struct layouts; tag
 * ids, which differ between Lexbor versions, are mapped to blocks.py's table by name at run time
 * (custom tags' ids are pointers, looked up by name each time). blocks.py walks a known page once
 * at import and fails with an ImportError if the bound functions do not give its blocks, and
 * pyproject.toml pins the selectolax versions checked.
 * The rules of the walk (which elements start a block, how links, <br>, <pre> and whitespace are
 * handled, the cues of ancestors, the container path) are those documented in blocks.py; this file
 * only makes them fast. tests/test_extract_walk.py checks it block for block against a Python walk of
 * the same tree through selectolax's API on every gold page.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

/* Tag flags, set by configure() from blocks.py's tables. */
enum { T_BLOCK = 1, T_NEG = 2, T_POS = 4, T_A = 8, T_BR = 16, T_PRE = 32, T_DROP = 64 };

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

/* Lexbor's C API as selectolax's extension module exports it, bound once by lexbor() (blocks.py). Lexbor's
 * structs are read only through these functions, so the walk depends on their names and signatures alone. */
enum { LXB_ELEMENT = 1, LXB_TEXT = 3 }; /* lxb_dom_node_type_t: the DOM's nodeType numbers */
static struct {
    void *(*first_child)(void *node);
    void *(*next)(void *node);
    int (*type)(void *node);
    uintptr_t (*tag_id)(void *node);
    const unsigned char *(*local_name)(void *element, size_t *len);
    const unsigned char *(*class_)(void *element, size_t *len);
    const unsigned char *(*id)(void *element, size_t *len);
    unsigned char *(*text)(void *node, size_t *len); /* a copy in the document's arena */
} lx;
static int lx_bound;

/* The context that an element gives its children (blocks.py: visit's arguments). */
typedef struct {
    PyObject *kind;
    int neg, pos, com, in_link, pre;
    Py_ssize_t path_len;
    int flags;  /* the element's own tag flags */
    void *node; /* the element (lxb_dom_node_t *) */
} Frame;

/* Tag ids below this are Lexbor's own tags, numbered differently by each Lexbor version (a custom tag's id is
 * a pointer); each walk maps the ones it meets to blocks.py's table by name, once. */
#define TAG_CACHE 512

typedef struct {
    Buf raw;     /* the current block's text, as the walk collects it */
    Buf tmp;     /* one text node or one attribute value, decoded */
    Buf clean;   /* the block's text after whitespace folding */
    Buf ltext;   /* one link's text */
    Py_ssize_t link;
    Frame *stack;
    Py_ssize_t depth, stack_cap;
    void **nodes; /* the open elements inside a link (link_text) */
    Py_ssize_t nodes_cap;
    long *path;
    Py_ssize_t path_cap;
    PyObject **ints; /* ints[v]: the int v of a container path, made once per page */
    Py_ssize_t ints_cap;
    long counter;
    PyObject *blocks;
    Tag *tag_cache[TAG_CACHE];
} Walk;

/* \w of Python's re: alphanumeric or '_' (ASCII without a call into the Unicode database). */
static inline int is_word(Py_UCS4 c) {
    if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    return Py_UNICODE_ISALNUM(c);
}

static inline int is_decimal(Py_UCS4 c) { return c < 128 ? (c >= '0' && c <= '9') : Py_UNICODE_ISDECIMAL(c); }

/* Lexbor's UTF-8 as code points into b. Lexbor passes bytes that are not UTF-8 through, and selectolax reads
 * them as U+FFFD (PyUnicode_DecodeUTF8, "replace"): a text with such bytes is decoded that way instead. */
static int utf8(Buf *b, const unsigned char *s, size_t n) {
    b->len = 0;
    if (buf_grow(b, (Py_ssize_t)n) < 0) return -1;
    for (size_t i = 0; i < n;) {
        Py_UCS4 c = s[i];
        int more = c < 0x80 ? 0 : c < 0xC2 ? -1 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF5 ? 3 : -1; /* bytes to follow */
        int ok = more >= 0 && i + (size_t)more < n;
        if (more > 0) c &= 0x3F >> more;
        for (int k = 1; ok && k <= more; k++) {
            ok = (s[i + k] & 0xC0) == 0x80;
            c = (c << 6) | (s[i + k] & 0x3F);
        }
        /* no overlong forms, surrogates or code points past U+10FFFF */
        ok = ok && !(more == 2 && (c < 0x800 || (c >= 0xD800 && c < 0xE000)));
        ok = ok && !(more == 3 && (c < 0x10000 || c > 0x10FFFF));
        if (!ok) {
            PyObject *u = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)n, "replace");
            if (!u || buf_grow(b, PyUnicode_GET_LENGTH(u)) < 0 || !PyUnicode_AsUCS4(u, b->p, b->cap, 0)) {
                Py_XDECREF(u);
                return -1;
            }
            b->len = PyUnicode_GET_LENGTH(u);
            Py_DECREF(u);
            return 0;
        }
        b->p[b->len++] = c;
        i += (size_t)more + 1;
    }
    return 0;
}

/* A text node's data, decoded into w->tmp. Lexbor's getter copies it into the document's arena, freed with the
 * document; handing each copy back at once (lxb_dom_document_destroy_text) cost 13% of the walk, for nothing. */
static int node_text(Walk *w, void *node) {
    size_t n = 0;
    unsigned char *s = lx.text(node, &n);
    return utf8(&w->tmp, s, s ? n : 0);
}

/* The tag table's entry of an element (no_tag when blocks.py does not name it). */
static Tag no_tag;
static Tag *tag_of(Walk *w, void *el) {
    uintptr_t id = lx.tag_id(el);
    if (id < TAG_CACHE && w->tag_cache[id]) return w->tag_cache[id];
    size_t n = 0;
    const unsigned char *name = lx.local_name(el, &n);
    Tag *t = name ? find_tag((const char *)name, n, 0) : NULL;
    if (!t) t = &no_tag;
    if (id < TAG_CACHE) w->tag_cache[id] = t;
    return t;
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
 * then a boilerplate cue, then a content cue. */
static int cue_of(Walk *w, void *el, int *cue) {
    int lo = 0, hi = 0;
    for (int a = 0; a < 2; a++) {
        size_t n = 0;
        const unsigned char *v = a ? lx.id(el, &n) : lx.class_(el, &n);
        if (!v || !n) continue;
        if (utf8(&w->tmp, v, n) < 0 || buf_grow(&w->tmp, w->tmp.len) < 0 || word_cues(w, &lo, &hi) < 0) return -1;
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

/* A space in a link's text where a block or <br> inside it begins or ends, unless one is there already. */
static int link_gap(Buf *out) {
    return (out->len && out->p[out->len - 1] != ' ') ? buf_put(out, ' ') : 0;
}

/* The text of link `a` and everything in it but DROP elements into out; blocks and <br> inside it (teaser
 * cards) are separated by a space. An explicit stack: nothing inside a link counts towards max_depth. */
static int link_text(Walk *w, void *a, Buf *out) {
    Py_ssize_t depth = 0;
    out->len = 0;
    void *node = lx.first_child(a);
    for (;;) {
        if (!node) {
            if (!depth) return 0;
            void *up = w->nodes[--depth];
            if ((tag_of(w, up)->flags & (T_BLOCK | T_BR)) && link_gap(out) < 0) return -1;
            node = lx.next(up);
            continue;
        }
        int type = lx.type(node);
        if (type == LXB_TEXT) {
            if (node_text(w, node) < 0 || buf_grow(out, w->tmp.len) < 0) return -1;
            memcpy(out->p + out->len, w->tmp.p, (size_t)w->tmp.len * sizeof(Py_UCS4));
            out->len += w->tmp.len;
        } else if (type == LXB_ELEMENT) {
            int flags = tag_of(w, node)->flags;
            if (!(flags & T_DROP)) {
                if ((flags & (T_BLOCK | T_BR)) && link_gap(out) < 0) return -1;
                if (grow((void **)&w->nodes, &w->nodes_cap, depth + 1, sizeof(void *)) < 0) return -1;
                w->nodes[depth++] = node;
                node = lx.first_child(node);
                continue;
            }
        }
        node = lx.next(node);
    }
}

/* A link outside <pre>: its whole text one inline piece, wherever its blocks are. */
static int read_link(Walk *w, void *a) {
    if (link_text(w, a, &w->ltext) < 0) return -1;
    if (w->ltext.len && !all_space(&w->ltext)) {
        w->link += stripped_len(&w->ltext);
        return append(w, &w->ltext, 0);
    }
    return w->raw.len ? buf_put(&w->raw, ' ') : 0;
}

/* One text node of the walk (blocks.py: the "-text" case). */
static int text_node(Walk *w, const Frame *f, void *node) {
    if (node_text(w, node) < 0) return -1;
    if (!w->tmp.len) return 0;
    if (!f->pre && all_space(&w->tmp)) return w->raw.len ? buf_put(&w->raw, ' ') : 0;
    if (f->in_link) w->link += stripped_len(&w->tmp);
    return append(w, &w->tmp, f->pre);
}

/* An element met by the walk: skipped (DROP), read whole (a link, <br>), or entered: its frame pushed, *enter set. */
static int element(Walk *w, void *el, long max_depth, int *enter) {
    Tag *t = tag_of(w, el);
    int flags = t->flags;
    Frame *top = &w->stack[w->depth - 1];
    *enter = 0;
    if (flags & T_DROP) return 0; /* never main text: skipped with all it holds */
    if ((flags & T_A) && !top->pre) return read_link(w, el);
    if (flags & T_BR) return buf_put(&w->raw, '\n');
    if (w->depth > max_depth) { /* this element would be nested max_depth + 1 deep below <body> */
        PyErr_SetNone(too_deep);
        return -1;
    }
    Frame f = *top;
    f.flags = flags;
    f.node = el;
    if (flags & T_BLOCK) {
        int c = 0;
        if ((w->raw.len && flush(w, top) < 0) || cue_of(w, el, &c) < 0) return -1;
        f.kind = t->kind ? t->kind : kind_div;
        f.neg += (c < 0) + ((flags & T_NEG) != 0);
        f.pos += (c > 0) + ((flags & T_POS) != 0);
        f.com += (c == -2);
        f.pre = f.pre || (flags & T_PRE);
        f.path_len = top->path_len + 1;
        w->counter++;
    } else {
        f.in_link = f.in_link || (flags & T_A);
    }
    if (push(w, f) < 0) return -1;
    if (flags & T_BLOCK) w->path[f.path_len - 1] = w->counter;
    *enter = 1;
    return 0;
}

/* The blocks under `body` into w->blocks, in document order: a depth-first walk with an explicit stack (a tree
 * may nest thousands deep before the depth limit is checked, and links are read whole at any depth). */
static int walk_body(Walk *w, void *body, long max_depth) {
    Frame root = {kind_div, 0, 0, 0, 0, 0, 1, 0, body};
    if (push(w, root) < 0) return -1;
    w->path[0] = 0;
    void *node = lx.first_child(body);
    while (w->depth > 0) {
        if (!node) { /* the end of an element: a block ends there */
            Frame f = w->stack[--w->depth];
            if ((f.flags & T_BLOCK) && w->raw.len && flush(w, &f) < 0) return -1;
            node = w->depth ? lx.next(f.node) : NULL;
            continue;
        }
        int type = lx.type(node), enter = 0;
        if (type == LXB_TEXT && text_node(w, &w->stack[w->depth - 1], node) < 0) return -1;
        if (type == LXB_ELEMENT && element(w, node, max_depth, &enter) < 0) return -1;
        node = enter ? lx.first_child(node) : lx.next(node);
    }
    return w->raw.len ? flush(w, &root) : 0;
}

/* walk(body, max_depth) -> list of Block: body is the lxb_dom_node_t * of a <body> (selectolax's mem_id); the
 * caller keeps its tree alive. */
static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *id;
    long max_depth;
    if (!PyArg_ParseTuple(args, "O!l", &PyLong_Type, &id, &max_depth)) return NULL;
    void *body = PyLong_AsVoidPtr(id);
    if (!body) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "walk(): no node");
        return NULL;
    }
    if (!too_deep || !lx_bound) {
        PyErr_SetString(PyExc_RuntimeError, "_walk.configure() and _walk.lexbor() were not called");
        return NULL;
    }
    Walk *w = PyMem_Calloc(1, sizeof(Walk));
    if (!w) return PyErr_NoMemory();
    w->blocks = PyList_New(0);
    int failed = !w->blocks || buf_grow(&w->raw, 1024) < 0 || walk_body(w, body, max_depth) < 0;
    PyObject *blocks = w->blocks;
    Buf *bufs[] = {&w->raw, &w->tmp, &w->clean, &w->ltext};
    for (int k = 0; k < 4; k++) PyMem_Free(bufs[k]->p);
    PyMem_Free(w->stack);
    PyMem_Free(w->nodes);
    PyMem_Free(w->path);
    for (Py_ssize_t i = 0; i < w->ints_cap; i++) Py_XDECREF(w->ints[i]);
    PyMem_Free(w->ints);
    PyMem_Free(w);
    if (failed) {
        Py_XDECREF(blocks);
        return NULL;
    }
    return blocks;
}

/* lexbor(path): bind the Lexbor functions the walk calls from selectolax's extension module at `path` (already
 * loaded by the import of selectolax.lexbor). An ImportError names what is missing. */
static PyObject *lexbor(PyObject *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    void *lib = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) return PyErr_Format(PyExc_ImportError, "_walk.lexbor(): %s is not loaded (%s)", path, dlerror());
    static const char *names[] = {
        "lxb_dom_node_first_child_noi", "lxb_dom_node_next_noi", "lxb_dom_node_type_noi",
        "lxb_dom_node_tag_id_noi", "lxb_dom_element_local_name", "lxb_dom_element_class_noi",
        "lxb_dom_element_id_noi", "lxb_dom_node_text_content"};
    void *found[sizeof names / sizeof names[0]];
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (!(found[k] = dlsym(lib, names[k])))
            return PyErr_Format(PyExc_ImportError, "selectolax's Lexbor module %s does not export %s: extract.Main's "
                                "walk needs selectolax>=1.0.2,<1.1", path, names[k]);
    }
    _Static_assert(sizeof lx == sizeof found, "one symbol per function of lx");
    memcpy(&lx, found, sizeof lx); /* dlsym's object pointers as the function pointers they are (POSIX) */
    lx_bound = 1;
    Py_RETURN_NONE;
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
    {"walk", walk, METH_VARARGS, "walk(body, max_depth) -> list of Block: the blocks under a <body> (its mem_id)."},
    {"lexbor", lexbor, METH_VARARGS, "lexbor(path): bind Lexbor's functions from selectolax's module at path."},
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
