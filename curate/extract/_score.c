/* extract.Main's block classifier (features.py): every block's features and the two logistic models'
 * probabilities, in one call per page.
 *
 * Why C: a page has ~170 blocks, and the ~40 numpy operations that computed the features on columns of that
 * size cost more in per-call overhead than in arithmetic (with the two products ~500 us of a Dragnet page;
 * this call takes ~190, most of it the one pass over the text). Every feature is computed with the
 * floating-point operations of the numpy code it replaced, in the same order, so the values are the same bit
 * for bit, except where libm's log1p and exp differ from numpy's AVX-512 ones (by one ulp, on ~1% and ~5% of
 * arguments); the products of the logistic models sum in another order than numpy's einsum. tests/test_extract_features.py checks all of it against that numpy code
 * (tests/_features_ref.py) on every block of every gold page. */
#include "_walk.h"
#include <math.h>
#include <stdlib.h>

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
        PyErr_SetString(PyExc_RuntimeError,
                        "more than 256 distinct stop-word sets (features.stoplist returns one of jusText's lists)");
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

/* The quantities of stage 1 (features.LOCAL) and stage 2 (features.CONTEXT); configure_scores maps the
 * names that features.py lists, in its order, to these, so the columns have one order, features.py's. */
enum { Q_BIAS, Q_LOG_CHARS, Q_STOP, Q_LINK, Q_PUNCT, Q_ENDS, Q_CAPS, Q_DIGITS, Q_NEG, Q_POS, Q_POSITION, Q_SHARE,
       Q_NEG_ANY, Q_LINK_SQ, Q_STOP_X_LEN, Q_STOP_REL, Q_NEG_REL, Q_KIND /* + kind index */ };
static const char *const local_names[Q_KIND] = {
    "bias", "log_chars", "stop", "link", "punct", "ends", "caps", "digits", "neg", "pos", "position", "share",
    "neg_any", "link_sq", "stop_x_len", "stop_rel", "neg_rel"};
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
    int kind;    /* index in cfg.kinds, -1: none */
    int comment; /* in a comment section (mark_comments) and comments are dropped */
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
    PyObject *text = PyStructSequence_GET_ITEM(b, 0);
    if (!PyUnicode_Check(text) || PyUnicode_READY(text) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a Block's text must be a str");
        return -1;
    }
    Py_ssize_t len = PyUnicode_GET_LENGTH(text); /* whether it ends with one of cfg.ends */
    s->ends = len && PyUnicode_FindChar(cfg.ends, PyUnicode_READ_CHAR(text, len - 1), 0,
                                        PyUnicode_GET_LENGTH(cfg.ends), 1) >= 0;
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

void init_classes(void) {
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

/* Comment sections (features.comments): a block under more comment-section cues than the page's first prose
 * block (PROSE_CHARS characters or more, under half of them link text, ending like a sentence; with none, the
 * page's least-cued block) is in one. Why the first prose block: an article comes before its comments, and a
 * template may name the article's own element after them (class "commented", or a body wrapped in
 * "comments-wrap"), so the cues that count are the ones beyond the article's. With keep_comments comments are
 * text the user asked for: every comment cue leaves the boilerplate count `neg` (where each is counted too),
 * the first prose block's included, since on a page whose first prose is a comment (a video tutorial and its
 * thread) the thread would otherwise be read as boilerplate. Without, comment sections are marked, and their probabilities are set to 0 (drop_comments) before the region is sought and after
 * stage 2, so they neither pull the region towards themselves nor are kept. */
#define PROSE_CHARS 150
static void mark_comments(Stats *st, Py_ssize_t n, int keep) {
    double base = 0;
    Py_ssize_t first = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        base = i == 0 || st[i].com < base ? st[i].com : base;
        if (first < 0 && st[i].chars >= PROSE_CHARS && st[i].link * 2 < st[i].chars && st[i].ends) first = i;
    }
    if (first >= 0) base = st[first].com;
    for (Py_ssize_t i = 0; i < n; i++) {
        double extra = st[i].com - base;
        st[i].comment = !keep && extra > 0;
        if (keep) st[i].neg -= st[i].com;
    }
}

static void drop_comments(const Stats *st, Py_ssize_t n, double *p) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (st[i].comment) p[i] = 0.0;
}

/* Every block's Stats, its stop words counted in the list that stoplist(top words) picks (a set, or None
 * for none): one pass over the texts, each lower-cased and hashed word by word once; comment sections marked
 * or read as text (mark_comments). */
static int page_stats(PyObject *blocks, PyObject *stoplist, int keep_comments, Stats *st, int *has_stop) {
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
    mark_comments(st, n, keep_comments);
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

/* The page's typical boilerplate-cue count: the chars-weighted median of min(neg, 3) over its blocks (the
 * smallest count whose blocks, with those of fewer cues, hold at least half the characters). */
static double typical_neg(const Stats *st, Py_ssize_t n, double total) {
    double bins[4] = {0, 0, 0, 0}, cum = 0;
    for (Py_ssize_t i = 0; i < n; i++) bins[st[i].neg < 3 ? (int)st[i].neg : 3] += st[i].chars;
    for (int k = 0; k < 4; k++)
        if ((cum += bins[k]) * 2 >= total) return k;
    return 3;
}

/* A block's boilerplate cues beyond the page's typical count (typical_neg), 0 to 3. */
static double neg_rel(double neg, double typical) {
    double d = (neg < 3 ? neg : 3) - typical;
    return d > 0 ? d : 0;
}

/* The stage-1 matrix (n x cfg.nlocal, features.LOCAL's columns; features.py's docstrings say why each one).
 * sd and tmp: room for n doubles each. */
static void local_rows(const Stats *st, Py_ssize_t n, int has_stop, double *x, double *sd, double *tmp) {
    double total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double nw = st[i].words > 1 ? st[i].words : 1;
        sd[i] = has_stop ? st[i].stops / nw : cfg.neutral_stop;
        total += st[i].chars; /* sums of whole numbers: exact in any order */
    }
    double denom = total != 0 ? total : 1.0, prose = prose_stop(st, sd, n, tmp);
    double last = n - 1 > 1 ? (double)(n - 1) : 1.0, typical = typical_neg(st, n, total);
    for (Py_ssize_t i = 0; i < n; i++, x += cfg.nlocal) {
        const Stats *s = &st[i];
        double nw = s->words > 1 ? s->words : 1, lc = log1p(s->chars), ld = s->link / s->chars;
        double punct = s->punct / nw;
        double q[Q_KIND] = {
            [Q_BIAS] = 1.0, [Q_LOG_CHARS] = lc, [Q_STOP] = sd[i], [Q_LINK] = ld, [Q_PUNCT] = punct < 1.0 ? punct : 1.0,
            [Q_ENDS] = s->ends, [Q_CAPS] = s->caps / (s->spaces + 1), [Q_DIGITS] = s->nums / nw,
            [Q_NEG] = s->neg < 3 ? s->neg : 3, [Q_POS] = s->pos < 2 ? s->pos : 2, [Q_POSITION] = (double)i / last,
            [Q_SHARE] = s->chars / denom, [Q_NEG_ANY] = s->neg > 0, [Q_LINK_SQ] = ld * ld, [Q_STOP_X_LEN] = sd[i] * lc,
            [Q_STOP_REL] = sd[i] / prose, [Q_NEG_REL] = neg_rel(s->neg, typical)};
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

/* The main-content region. First the container (an element number of the blocks' paths) whose blocks have
 * the largest sum of (p1 - 0.5) x chars, each block's evidence weighed by how far below the container it lies
 * (depth_weight), ties to the deepest (numbered last). Then the runs beside it: from
 * that container up to the first ancestor holding more than one container (`hub`), and every child of the hub
 * whose sum is positive joins the region (the container's own line of descent always does; a block directly in
 * the hub joins when its own evidence is positive). Why: an article's text is often several runs of blocks
 * interrupted by an ad, an embed, a sponsored-post notice, a recipe card, a gallery or a data table, and the
 * interruption's negative evidence can make one paragraph outweigh the article's container; the hub's children
 * with positive sums are the runs, the interruptions stay out. inside[i]: 2 if block i lies in the best container,
 * 1 in a run beside it, 0 outside the region.
 * The numbers are small (elements of one page, in document order), so the sums live in arrays. */
/* A block's evidence counts whole in its own element and its parent, and 1/sqrt(d - 1) in the ancestor d levels
 * above it (after Readability, which gives a paragraph's score to its parent whole and less to each ancestor
 * above): an article is paragraphs close under one container, a teaser stream (Yahoo's river beside an
 * article, a blog's "recent posts") is as much text spread one summary an item, each several levels below the
 * list. Readability's own steps (1, 1/2, then 1/(3 level)) and a cut-off after 3 or 4 levels were weaker in
 * the fit's leave-one-set-out comparison (benchmarks/extract_fit.py; docs/extract.md). */
static double depth_weight(Py_ssize_t d) { return d <= 1 ? 1.0 : 1.0 / sqrt((double)(d - 1)); }

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
    size_t m = (size_t)top + 1;
    double *sums = PyMem_Calloc(m, sizeof(double)), *near = PyMem_Calloc(m, sizeof(double));
    uint8_t *seen = PyMem_Calloc(m, 1);
    Py_ssize_t *parent = PyMem_Malloc(m * sizeof(Py_ssize_t)), *kids = PyMem_Calloc(m, sizeof(Py_ssize_t));
    if (!sums || !near || !seen || !parent || !kids) {
        PyMem_Free(sums);
        PyMem_Free(near);
        PyMem_Free(seen);
        PyMem_Free(parent);
        PyMem_Free(kids);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t e = 0; e < m; e++) parent[e] = -1;
    for (Py_ssize_t i = 0; i < n; i++) { /* in the order of numpy's bincount over the flattened paths */
        PyObject *path = PyStructSequence_GET_ITEM(PyList_GET_ITEM(blocks, i), 7);
        double v = (p1[i] - 0.5) * st[i].chars;
        Py_ssize_t len = PyTuple_GET_SIZE(path);
        for (Py_ssize_t k = 0; k < len; k++) {
            Py_ssize_t e = PyLong_AsSsize_t(PyTuple_GET_ITEM(path, k));
            sums[e] += v;
            near[e] += v * depth_weight(len - 1 - k);
            seen[e] = 1;
            if (k > 0) parent[e] = PyLong_AsSsize_t(PyTuple_GET_ITEM(path, k - 1));
        }
    }
    Py_ssize_t best = -1, hub = -1, via = -1;
    for (Py_ssize_t e = 0; e <= top; e++) {
        if (seen[e] && (best < 0 || near[e] >= near[best])) best = e;
        if (seen[e] && parent[e] >= 0) kids[parent[e]]++;
    }
    for (hub = best >= 0 ? parent[best] : -1, via = best; hub >= 0 && kids[hub] < 2; via = hub, hub = parent[hub]) {}
    for (Py_ssize_t i = 0; i < n && best >= 0; i++) {
        PyObject *path = PyStructSequence_GET_ITEM(PyList_GET_ITEM(blocks, i), 7);
        Py_ssize_t len = PyTuple_GET_SIZE(path);
        for (Py_ssize_t k = 0; k < len && inside[i] < 2; k++) {
            Py_ssize_t e = PyLong_AsSsize_t(PyTuple_GET_ITEM(path, k)), c;
            if (e == best) inside[i] = 2;
            else if (e == hub) {
                c = k + 1 < len ? PyLong_AsSsize_t(PyTuple_GET_ITEM(path, k + 1)) : -1;
                inside[i] = c < 0 ? p1[i] > 0.5 : c == via || sums[c] > 0;
            }
        }
    }
    PyMem_Free(sums);
    PyMem_Free(near);
    PyMem_Free(seen);
    PyMem_Free(parent);
    PyMem_Free(kids);
    return 0;
}

/* The stage-2 extra columns (n x C_COLS, features.CONTEXT's order; features.py's docstrings say why each
 * one): the neighbours' stage-1 scores, the chars-weighted window of 3 each side, the region and what
 * follows from it. cum: room for 2 (n + 1) doubles; inside: n bytes. */
static int context_rows(PyObject *blocks, const Stats *st, const double *p1, double *ctx, double *cum,
                        uint8_t *inside) {
    Py_ssize_t n = PyList_GET_SIZE(blocks), first = -1, core = -1;
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
        if (core < 0 && inside[i] == 2) core = i;
    }
    double share = in_chars / (total != 0 ? total : 1.0);
    Py_ssize_t headline = -1; /* the last heading in the 30 blocks before the region's best container */
    for (Py_ssize_t i = (core > 0 ? core : 0) - 1; i >= 0 && i >= core - 30 && headline < 0; i--)
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
        q[C_REGION] = inside[i] != 0;
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
static int page_local(PyObject *blocks, PyObject *stoplist, int keep_comments, Page *pg, int64_t *words) {
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    int has_stop = 0;
    if (page_stats(blocks, stoplist, keep_comments, pg->st, &has_stop) < 0) return -1;
    if (PyList_GET_SIZE(blocks) != n) { /* stoplist() is Python: the list is read again after it */
        PyErr_SetString(PyExc_RuntimeError, "the list of blocks changed during stoplist()");
        return -1;
    }
    local_rows(pg->st, n, has_stop, pg->x, pg->scratch, pg->scratch + n + 1);
    for (Py_ssize_t i = 0; words && i < n; i++) words[i] = (int64_t)pg->st[i].words;
    return 0;
}

/* local(blocks, stoplist, keep_comments=False) -> (bytearray, bytearray): the stage-1 matrix (float64, n x
 * len(LOCAL)) and each block's number of words (int64); stoplist(top words) -> set or None picks the stop words. */
static PyObject *local(PyObject *self, PyObject *args) {
    PyObject *blocks, *stoplist, *x = NULL, *words = NULL, *out = NULL;
    int keep = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &blocks, &stoplist, &keep) || check_configured(blocks) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    Page pg;
    if (page_alloc(&pg, n) < 0) return NULL;
    if (!(words = bytes_of(NULL, n * (Py_ssize_t)sizeof(int64_t)))) goto done;
    if (page_local(blocks, stoplist, keep, &pg, (int64_t *)PyByteArray_AS_STRING(words)) < 0) goto done;
    if ((x = bytes_of(pg.x, n * cfg.nlocal * (Py_ssize_t)sizeof(double)))) out = PyTuple_Pack(2, x, words);
done:
    Py_XDECREF(x);
    Py_XDECREF(words);
    page_free(&pg);
    return out;
}

/* context(blocks, p1, keep_comments=False) -> bytearray: the stage-2 extra columns (float64, n x len(CONTEXT))
 * given the blocks' stage-1 probabilities (n float64; a comment block's is read as 0 without keep_comments). */
static PyObject *context(PyObject *self, PyObject *args) {
    PyObject *blocks, *p1, *out = NULL;
    Py_buffer view;
    int keep = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &blocks, &p1, &keep) || check_configured(blocks) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    Page pg;
    if (doubles_of(p1, &view, n, "p1") < 0) return NULL;
    if (page_alloc(&pg, n) < 0) goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (read_block(PyList_GET_ITEM(blocks, i), &pg.st[i]) < 0) goto done;
    mark_comments(pg.st, n, keep);
    memcpy(pg.p1, view.buf, (size_t)n * sizeof(double));
    drop_comments(pg.st, n, pg.p1);
    if (context_rows(blocks, pg.st, pg.p1, pg.ctx, pg.scratch, pg.inside) == 0)
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

/* scores(blocks, stoplist, w1, w2, keep_comments=False) -> (bytearray, bytearray): each block's stage-2
 * probability (float64; 0 for a comment block without keep_comments) and number of words (int64); w1 weighs the
 * LOCAL columns, w2 the LOCAL then the CONTEXT columns. */
static PyObject *scores(PyObject *self, PyObject *args) {
    PyObject *blocks, *stoplist, *w1, *w2, *p = NULL, *words = NULL, *out = NULL;
    Py_buffer v1, v2;
    int keep = 0;
    if (!PyArg_ParseTuple(args, "OOOO|p", &blocks, &stoplist, &w1, &w2, &keep) || check_configured(blocks) < 0)
        return NULL;
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
    if (page_local(blocks, stoplist, keep, &pg, (int64_t *)PyByteArray_AS_STRING(words)) < 0) goto done;
    logistic_rows(pg.x, n, (int)L, v1.buf, NULL, pg.p1);
    drop_comments(pg.st, n, pg.p1);
    if (context_rows(blocks, pg.st, pg.p1, pg.ctx, pg.scratch, pg.inside) < 0) goto done;
    double *z = pg.scratch; /* stage 2: the context columns' part of the product, then the LOCAL columns' */
    for (Py_ssize_t i = 0; i < n; i++) {
        z[i] = 0.0;
        for (int j = 0; j < C_COLS; j++) z[i] += pg.ctx[i * C_COLS + j] * ((const double *)v2.buf)[L + j];
    }
    logistic_rows(pg.x, n, (int)L, v2.buf, z, (double *)PyByteArray_AS_STRING(p));
    drop_comments(pg.st, n, (double *)PyByteArray_AS_STRING(p));
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

PyMethodDef score_methods[] = {
    {"local", local, METH_VARARGS,
     "local(blocks, stoplist, keep_comments=False) -> (stage-1 matrix, words per block) (features.py)."},
    {"context", context, METH_VARARGS, "context(blocks, p1, keep_comments=False) -> the stage-2 extra columns (features.py)."},
    {"logistic", logistic, METH_VARARGS, "logistic(x, w) -> a logistic model's probability of each row of x."},
    {"scores", scores, METH_VARARGS,
     "scores(blocks, stoplist, w1, w2, keep_comments=False) -> (stage-2 probabilities, words)."},
    {"configure_scores", configure_scores, METH_VARARGS,
     "configure_scores(local, context, kinds, ends, neutral_stop, top_limit, top_n) (features.py)."},
    {NULL, NULL, 0, NULL}};
