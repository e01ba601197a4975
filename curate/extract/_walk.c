/* The parse and the block walk of extract.Main in C: Lexbor (vendored in third_party/lexbor, compiled into this
 * module) parses the page, and one depth-first pass over its tree of the <body> cuts it into blocks, all in one
 * call (`parse`) from the page's text to its list of blocks.
 *
 * Why C on Lexbor's own tree: a Python binding exposes the tree only as objects (about 1 us per node), and
 * serialising the body for a C scanner cost as much as the scan. Lexbor is compiled into this module with hidden
 * visibility (setup.py), so the module exports only PyInit__walk and depends on no other package's build; the
 * walk reads the tree through Lexbor's own API: child and sibling links, node type, tag id and local name, class
 * and id, a text node's data. Tag ids, which differ between Lexbor versions, are still mapped to blocks.py's table
 * by name at run time (custom tags' ids are pointers, looked up by name each time), so the table is one place.
 * The rules of the walk (which elements start a block, how links, <br>, <pre> and whitespace are
 * handled, the cues of ancestors, the container path) are those documented in blocks.py; this file
 * only makes them fast. tests/test_extract_walk.py checks it block for block against a Python walk of
 * selectolax's tree of the same page (a test oracle only) on every gold page.
 * This file also makes the extension module curate.extract._walk: its init adds the functions of _score.c
 * (the block classifier) and _depth.c (the nesting-depth pre-scan); _walk.h lists what the files share.
 */
#include "_walk.h"
#include "lexbor/dom/interfaces/character_data.h"
#include "lexbor/html/html.h"

/* Tag flags, set by configure() from blocks.py's tables. */
enum { T_BLOCK = 1, T_NEG = 2, T_POS = 4, T_A = 8, T_BR = 16, T_PRE = 32, T_DROP = 64 };

#define NTAGS 512
typedef struct {
    char name[MAXNAME];
    int flags;
    PyObject *kind; /* block kind string ("p", "h", ...) or NULL for the generic "div" */
} Tag;

static Tag tags[NTAGS];
static PyObject *kind_div, *too_deep;
PyTypeObject *block_type;

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

/* The few reads of Lexbor's tree the walk makes. */
enum { LXB_ELEMENT = 1, LXB_TEXT = 3 }; /* lxb_dom_node_type_t: the DOM's nodeType numbers */
typedef lxb_dom_node_t Node;
#define FIRST_CHILD(n) ((n)->first_child)
#define NEXT(n) ((n)->next)

/* The context that an element gives its children (blocks.py: visit's arguments). */
typedef struct {
    PyObject *kind;
    int neg, pos, com, in_link, pre;
    Py_ssize_t path_len;
    int flags;  /* the element's own tag flags */
    Node *node; /* the element */
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
    Node **nodes; /* the open elements inside a link (link_text) */
    Py_ssize_t nodes_cap;
    long *path;
    Py_ssize_t path_cap;
    PyObject **ints; /* ints[v]: the int v of a container path, made once per page */
    Py_ssize_t ints_cap;
    long counter;
    PyObject *blocks;
    Tag *tag_cache[TAG_CACHE];
} Walk;

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

/* A text node's data, decoded into w->tmp (read in place: Lexbor's text getter would copy it into the document). */
static int node_text(Walk *w, Node *node) {
    const lexbor_str_t *d = &lxb_dom_interface_character_data(node)->data;
    return utf8(&w->tmp, d->data, d->data ? d->length : 0);
}

/* Hidden elements: skipped with all they hold, as DROP elements are. An element is hidden by its own markup as
 * Mozilla Readability's _isProbablyVisible reads it (a browser does not render it): a `hidden` attribute, or an
 * inline style whose display is none or whose visibility is hidden. The style is read declaration by declaration
 * (";"-separated "name: value"), names and values ASCII case-insensitive and trimmed of CSS whitespace, a
 * trailing "!important" ignored, the last declaration of a property winning. Style sheets are not read, and
 * aria-hidden is not a cue (screen readers skip it, but it is shown). tests/_tree_walk.py: `hidden`. */
static int css_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

static void css_trim(const unsigned char **s, const unsigned char **e) {
    while (*s < *e && css_space(**s)) (*s)++;
    while (*e > *s && css_space((*e)[-1])) (*e)--;
}

static int css_eq(const unsigned char *s, const unsigned char *e, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(e - s) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if ((s[i] >= 'A' && s[i] <= 'Z' ? s[i] + ('a' - 'A') : s[i]) != (unsigned char)word[i]) return 0;
    return 1;
}

static int style_hides(const unsigned char *v, size_t n) {
    const unsigned char *end = v + n;
    int none = 0, invisible = 0;
    while (v < end) {
        const unsigned char *semi = memchr(v, ';', (size_t)(end - v)), *stop = semi ? semi : end;
        const unsigned char *colon = memchr(v, ':', (size_t)(stop - v));
        if (colon) {
            const unsigned char *ns = v, *ne = colon, *vs = colon + 1, *ve = stop;
            css_trim(&ns, &ne);
            css_trim(&vs, &ve);
            if (ve - vs >= 9 && css_eq(ve - 9, ve, "important")) { /* "!important", "! important" */
                const unsigned char *bang = ve - 9;
                while (bang > vs && css_space(bang[-1])) bang--;
                if (bang > vs && bang[-1] == '!') {
                    ve = bang - 1;
                    css_trim(&vs, &ve);
                }
            }
            if (css_eq(ns, ne, "display")) none = css_eq(vs, ve, "none");
            if (css_eq(ns, ne, "visibility")) invisible = css_eq(vs, ve, "hidden");
        }
        v = semi ? semi + 1 : end;
    }
    return none || invisible;
}

static int is_hidden(Node *el) {
    for (lxb_dom_attr_t *a = lxb_dom_interface_element(el)->first_attr; a; a = a->next) {
        size_t n = 0;
        const unsigned char *name = lxb_dom_attr_local_name(a, &n);
        if (!name) continue;
        if (n == 6 && memcmp(name, "hidden", 6) == 0) return 1;
        if (n == 5 && memcmp(name, "style", 5) == 0 && a->value && style_hides(a->value->data, a->value->length))
            return 1;
    }
    return 0;
}

/* The tag table's entry of an element (no_tag when blocks.py does not name it). */
static Tag no_tag;
static Tag *tag_of(Walk *w, Node *el) {
    uintptr_t id = el->local_name;
    if (id < TAG_CACHE && w->tag_cache[id]) return w->tag_cache[id];
    size_t n = 0;
    const unsigned char *name = lxb_dom_element_local_name(lxb_dom_interface_element(el), &n);
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

/* -2 a comment section's word, -1 other boilerplate, +1 content, 0 none: the first list that matches. A word
 * holding "(" is an atomic-CSS utility class (Atomizer's "Bxsh(modalShadow)", "Mx(a)--modalCentered"): a style,
 * not a name, so it carries no cue (blocks.py). */
static int classify(const Py_UCS4 *k, Py_ssize_t n) {
    static const int value[3] = {-2, -1, 1};
    for (Py_ssize_t i = 0; i < n; i++)
        if (k[i] == '(') return 0;
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
static int cue_of(Walk *w, Node *el, int *cue) {
    int lo = 0, hi = 0;
    for (int a = 0; a < 2; a++) {
        size_t n = 0;
        lxb_dom_element_t *e = lxb_dom_interface_element(el);
        const unsigned char *v = a ? lxb_dom_element_id(e, &n) : lxb_dom_element_class(e, &n);
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

/* The text of link `a` and everything in it but DROP and hidden elements into out; blocks and <br> inside it (teaser
 * cards) are separated by a space. An explicit stack: nothing inside a link counts towards max_depth. */
static int link_text(Walk *w, Node *a, Buf *out) {
    Py_ssize_t depth = 0;
    out->len = 0;
    Node *node = FIRST_CHILD(a);
    for (;;) {
        if (!node) {
            if (!depth) return 0;
            Node *up = w->nodes[--depth];
            if ((tag_of(w, up)->flags & (T_BLOCK | T_BR)) && link_gap(out) < 0) return -1;
            node = NEXT(up);
            continue;
        }
        int type = node->type;
        if (type == LXB_TEXT) {
            if (node_text(w, node) < 0 || buf_grow(out, w->tmp.len) < 0) return -1;
            memcpy(out->p + out->len, w->tmp.p, (size_t)w->tmp.len * sizeof(Py_UCS4));
            out->len += w->tmp.len;
        } else if (type == LXB_ELEMENT) {
            int flags = tag_of(w, node)->flags;
            if (!(flags & T_DROP) && !is_hidden(node)) {
                if ((flags & (T_BLOCK | T_BR)) && link_gap(out) < 0) return -1;
                if (grow((void **)&w->nodes, &w->nodes_cap, depth + 1, sizeof(Node *)) < 0) return -1;
                w->nodes[depth++] = node;
                node = FIRST_CHILD(node);
                continue;
            }
        }
        node = NEXT(node);
    }
}

/* A link outside <pre>: its whole text one inline piece, wherever its blocks are. */
static int read_link(Walk *w, Node *a) {
    if (link_text(w, a, &w->ltext) < 0) return -1;
    if (w->ltext.len && !all_space(&w->ltext)) {
        w->link += stripped_len(&w->ltext);
        return append(w, &w->ltext, 0);
    }
    return w->raw.len ? buf_put(&w->raw, ' ') : 0;
}

/* One text node of the walk (blocks.py: the "-text" case). */
static int text_node(Walk *w, const Frame *f, Node *node) {
    if (node_text(w, node) < 0) return -1;
    if (!w->tmp.len) return 0;
    if (!f->pre && all_space(&w->tmp)) return w->raw.len ? buf_put(&w->raw, ' ') : 0;
    if (f->in_link) w->link += stripped_len(&w->tmp);
    return append(w, &w->tmp, f->pre);
}

/* An element met by the walk: skipped (DROP or hidden), read whole (a link, <br>), or entered: its frame pushed, *enter set. */
static int element(Walk *w, Node *el, long max_depth, int *enter) {
    Tag *t = tag_of(w, el);
    int flags = t->flags;
    Frame *top = &w->stack[w->depth - 1];
    *enter = 0;
    if ((flags & T_DROP) || is_hidden(el)) return 0; /* never main text: skipped with all it holds */
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
static int walk_body(Walk *w, Node *body, long max_depth) {
    Frame root = {kind_div, 0, 0, 0, 0, 0, 1, 0, body};
    if (push(w, root) < 0) return -1;
    w->path[0] = 0;
    Node *node = FIRST_CHILD(body);
    while (w->depth > 0) {
        if (!node) { /* the end of an element: a block ends there */
            Frame f = w->stack[--w->depth];
            if ((f.flags & T_BLOCK) && w->raw.len && flush(w, &f) < 0) return -1;
            node = w->depth ? NEXT(f.node) : NULL;
            continue;
        }
        int type = node->type, enter = 0;
        if (type == LXB_TEXT && text_node(w, &w->stack[w->depth - 1], node) < 0) return -1;
        if (type == LXB_ELEMENT && element(w, node, max_depth, &enter) < 0) return -1;
        node = enter ? FIRST_CHILD(node) : NEXT(node);
    }
    return w->raw.len ? flush(w, &root) : 0;
}

/* The blocks under `body`, or NULL with the exception set. */
static PyObject *walk(Node *body, long max_depth) {
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

/* The text of the document's first <title> element in document order (any namespace, as the CSS selector
 * "title" finds it), all its descendants' text joined, decoded as the walk decodes; None without one. */
static PyObject *title_text(lxb_html_document_t *doc) {
    Node *node = FIRST_CHILD(lxb_dom_interface_node(doc));
    while (node) {
        if ((int)node->type == LXB_ELEMENT && node->local_name == LXB_TAG_TITLE) {
            size_t n = 0;
            lxb_char_t *s = lxb_dom_node_text_content(node, &n); /* a copy in the document, freed with it */
            return PyUnicode_DecodeUTF8(s ? (const char *)s : "", s ? (Py_ssize_t)n : 0, "replace");
        }
        if (FIRST_CHILD(node)) {
            node = FIRST_CHILD(node);
            continue;
        }
        while (node && !NEXT(node)) node = node->parent;
        node = node ? NEXT(node) : NULL;
    }
    Py_RETURN_NONE;
}

/* parse(html, max_depth, title) -> (blocks, title text or None): Lexbor parses the page (its text as UTF-8, any
 * lone surrogate dropped), the walk cuts its <body> into blocks (none without a body), and the document is freed
 * before the call returns. TooDeep (configure) past max_depth nested elements. */
static PyObject *parse(PyObject *self, PyObject *args) {
    PyObject *html;
    long max_depth;
    int want_title;
    if (!PyArg_ParseTuple(args, "Ulp", &html, &max_depth, &want_title)) return NULL;
    if (!too_deep) {
        PyErr_SetString(PyExc_RuntimeError, "_walk.configure() was not called");
        return NULL;
    }
    PyObject *bytes = PyUnicode_AsEncodedString(html, "utf-8", "ignore");
    if (!bytes) return NULL;
    lxb_html_document_t *doc = lxb_html_document_create();
    if (!doc) {
        Py_DECREF(bytes);
        return PyErr_NoMemory();
    }
    lxb_status_t status;
    Py_BEGIN_ALLOW_THREADS
    status = lxb_html_document_parse(doc, (const lxb_char_t *)PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes));
    Py_END_ALLOW_THREADS
    Py_DECREF(bytes);
    PyObject *blocks = NULL, *title = NULL, *out = NULL;
    if (status != LXB_STATUS_OK) {
        if (status == LXB_STATUS_ERROR_MEMORY_ALLOCATION) PyErr_NoMemory();
        else PyErr_Format(PyExc_ValueError, "Lexbor could not parse the page (status %d)", (int)status);
        goto done;
    }
    title = want_title ? title_text(doc) : Py_NewRef(Py_None);
    if (!title) goto done;
    lxb_html_body_element_t *body = lxb_html_document_body_element(doc);
    blocks = body ? walk(lxb_dom_interface_node(body), max_depth) : PyList_New(0);
    if (blocks) out = PyTuple_Pack(2, blocks, title);
done:
    lxb_html_document_destroy(doc);
    Py_XDECREF(blocks);
    Py_XDECREF(title);
    return out;
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
    {"parse", parse, METH_VARARGS, "parse(html, max_depth, title) -> (list of Block, <title> text or None)."},
    {"configure", configure, METH_VARARGS, "configure(tags, cues, too_deep)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    init_classes();
    block_type = PyStructSequence_NewType(&block_desc);
    if (!block_type || PyModule_AddObjectRef(m, "Block", (PyObject *)block_type) < 0 ||
        PyModule_AddFunctions(m, score_methods) < 0 || PyModule_AddFunctions(m, depth_methods) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
