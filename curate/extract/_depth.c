/* The guards' pre-scan (base.nesting_depth, run by every Extractor): how deep a page's tags nest, estimated
 * from its HTML text alone before any parser sees it, so that a page nested too deep is rejected first. */
#include "_walk.h"

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

PyMethodDef depth_methods[] = {
    {"nesting_depth", nesting_depth, METH_VARARGS, "nesting_depth(html, stop, flat) -> int (base.nesting_depth)."},
    {NULL, NULL, 0, NULL}};
