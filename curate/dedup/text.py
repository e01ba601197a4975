"""The match form: the normalised text that exact and near-duplicate detection compare.

Two copies of a page differ in ways that say nothing about their content: case, punctuation,
Unicode compatibility forms (full-width letters, ligatures), numbers (dates, counters, prices) and
whitespace. Both dedup steps compare documents after folding all of these away:

1. Unicode NFKC, then lowercase (exactly `unicodedata.normalize("NFKC", t).lower()`);
2. every decimal digit becomes `0`;
3. every run of characters that are not letters, marks or numbers (punctuation, symbols,
   whitespace, `_`) becomes one space, with none at either end.

All three steps run in one compiled pass over the UTF-8 bytes of a batch (numba), with
per-code-point tables built once per process from the running Python's `unicodedata`, because
Python's NFKC and regular expressions cost more than hashing the shingles. NFKC may be applied one
character at a time wherever each character starts a normalisation segment (its NFKD begins with
a starter that no composition takes as its second part; see `_tables`), and `str.lower` may be
except for `Σ` (final sigma) and `İ`. A document containing any other character (combining marks,
conjoining jamo, ...) is normalised and lowercased by Python instead, and the compiled pass does
steps 2 and 3 only; both routes give the same bytes.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import os
import tempfile
import unicodedata
import zipfile
from functools import lru_cache

import numba
import numpy as np
import pyarrow as pa

from curate.core import kernel_cache
from curate.lang import is_segmented, words
from curate.lang.units import NOSPACE_CHAR

SEP, WORD, DIGIT = 0, 1, 2
MAPPED, PYTHON = 3, 4  # kinds of `_tables`: replaced by a pool entry; document goes through Python


def kept_on_disk(build):
    """`build()`'s arrays (one, or a tuple), made once per machine instead of once per process.

    The per-code-point tables cost a process ~0.25 CPU s each before its first document (issue 45: every dedup
    worker, every Slurm task of a dedup phase paid them); loaded they cost milliseconds. They are kept beside
    numba's cache of the kernels that read them (`kernel_cache.folder`), in a file whose name carries the Unicode
    version and a digest of the modules that build them, so another Python or a changed rule builds them anew.
    A file that cannot be read or written is no error: the tables are built. `.build` is the builder itself."""

    @lru_cache(maxsize=1)
    @functools.wraps(build)
    def cached():
        path = os.path.join(kernel_cache.folder(os.path.dirname(__file__)),
                            f"{build.__module__}.{build.__name__}-{_tables_key()}.npz")
        with contextlib.suppress(OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile), np.load(path) as f:
            return f["single"] if "single" in f.files else tuple(f[f"a{i}"] for i in range(len(f.files)))
        out = build()
        with contextlib.suppress(OSError):
            _save_arrays(path, out)
            for old in glob.glob(glob.escape(path.rsplit("-", 1)[0]) + "-*.npz"):  # an older Python or rule's
                if old != path:
                    os.remove(old)
        return out

    cached.build = build
    return cached


@lru_cache(maxsize=1)
def _tables_key() -> str:
    """The Unicode version and a digest of this module and sketch.py, whose rules make the tables."""
    digest = hashlib.sha256(unicodedata.unidata_version.encode())
    for name in ("text.py", "sketch.py"):
        with open(os.path.join(os.path.dirname(__file__), name), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def _save_arrays(path: str, out) -> None:
    """Written whole or not at all (a temporary file renamed), as workers may build the same tables at once."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    arrays = {"single": out} if isinstance(out, np.ndarray) else {f"a{i}": a for i, a in enumerate(out)}
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.chmod(tmp, 0o644)  # a shared install's users all read them
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


@lru_cache(maxsize=1)
def _categories() -> np.ndarray:
    every = "".join(map(chr, range(0x110000)))
    return np.frombuffer("".join(map(unicodedata.category, every)).encode("ascii"), dtype=np.uint8).reshape(-1, 2)


@kept_on_disk
def char_classes() -> np.ndarray:
    """Class of every code point: SEP, WORD (categories L*, M*, N*) or DIGIT (Nd), from `unicodedata`.

    Built from the two-letter general categories of all code points at once (about a quarter of a second, once
    per machine: `kept_on_disk`), so it always matches the running Python's Unicode version.
    """
    cats = _categories()
    table = np.zeros(0x110000, dtype=np.uint8)
    table[np.isin(cats[:, 0], np.frombuffer(b"LMN", dtype=np.uint8))] = WORD
    table[(cats[:, 0] == ord("N")) & (cats[:, 1] == ord("d"))] = DIGIT
    return table


def _per_char(form: str, chars: list[str]) -> list[str]:
    """`unicodedata.normalize(form, c)` of each character, in one call (NUL separates them: it is a
    starter that nothing composes with, so it splits the string into independent segments)."""
    return unicodedata.normalize(form, "\x00".join(chars)).split("\x00")


def _assigned() -> list[str]:
    """Every assigned code point (general category not Cn, Co, Cs) but NUL, as characters."""
    cats = _categories()
    unassigned = (cats[:, 0] == ord("C")) & np.isin(cats[:, 1], np.frombuffer(b"nos", np.uint8))
    return [chr(c) for c in np.flatnonzero(~unassigned)[1:].tolist()]


@lru_cache(maxsize=1)
def second_parts() -> frozenset[str]:
    """The characters found after the first place of some canonical decomposition (full, or one level deep in
    case a second part decomposes further): every character that a composition may join to what precedes it."""
    chars = _assigned()
    later = {ch for d in _per_char("NFD", chars) for ch in d[1:]}
    for c in chars:
        parts = unicodedata.decomposition(c).split()
        if len(parts) > 1 and not parts[0].startswith("<"):
            later.update(chr(int(x, 16)) for x in parts[1:])
    return frozenset(later)


@kept_on_disk
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the compiled pass does with each code point: (kind, start, pool_cp, pool_cls, ascii_out).

    kind[c] is SEP, WORD or DIGIT when `nfkc(c).lower() == c` (copy its bytes; that class),
    MAPPED when it is other characters (pool_cp[start[c]:start[c + 1]], of classes pool_cls), and
    PYTHON when the document must be normalised by Python (never an ASCII character):

    * c does not start a segment: NFKD(c) is empty, or begins with a non-starter (canonical
      combining class > 0), or with a character that appears after the first place in some
      canonical decomposition (which includes every character a composition takes as its second
      part, and the conjoining jamo V and T). Then NFKC of the text may join c to what precedes.
      Otherwise NFKC(a + c + b) == NFKC(a) + NFKC(c + b) for all a, b: nothing before c reorders or
      composes with c's decomposition or anything after it (its first character is a starter that
      blocks them). So a document of such characters only is NFKC'd character by character.
    * NFKC(c) contains `Σ` (lowercased by context) or a character whose lowercase is not one
      character (`İ`), so `str.lower` is not per character.

    Only assigned code points (general category not Cn, Co, Cs) but NUL are looked up; the others have no
    decomposition, case or combining class. ASCII is included, as its own kinds.
    """
    classes = char_classes()
    chars = _assigned()  # NUL (a separator below) is SEP as it is
    cps = np.array([ord(c) for c in chars], dtype=np.int64)
    nfkc, nfkd = _per_char("NFKC", chars), _per_char("NFKD", chars)
    lower = "\x00".join(nfkc).lower().split("\x00")  # no context: NUL is neither cased nor case-ignorable
    later = second_parts()
    kind = classes.copy()
    start = np.zeros(0x110001, dtype=np.int32)
    lengths = np.zeros(0x110000, dtype=np.int32)
    pool: list[int] = []
    for cp, c, k, d, lo in zip(cps.tolist(), chars, nfkc, nfkd, lower, strict=True):
        if (
            not d
            or unicodedata.combining(d[0])
            or d[0] in later
            or any(ch == "\u03a3" or len(ch.lower()) != 1 for ch in k)
        ):
            kind[cp] = PYTHON
        elif lo != c:
            kind[cp] = MAPPED
            lengths[cp] = len(lo)
            pool.extend(map(ord, lo))
    start[1:] = np.cumsum(lengths)
    pool_cp = np.array(pool, dtype=np.int32)
    ascii_out = np.zeros(128, dtype=np.uint8)  # the byte an ASCII character becomes, 0 for SEP
    for b in range(1, 128):
        assert kind[b] != PYTHON and (kind[b] != MAPPED or start[b + 1] - start[b] == 1)
        lo = ord(chr(b).lower())
        ascii_out[b] = 0 if classes[lo] == SEP else 48 if classes[lo] == DIGIT else lo
    return kind, start, pool_cp, classes[pool_cp], ascii_out


@numba.njit(cache=True, inline="always")
def _put(out, n, cp):
    """Write code point cp as UTF-8 at out[n]; returns the new n."""
    if cp < 0x80:
        out[n] = cp
        return n + 1
    if cp < 0x800:
        out[n] = 0xC0 | (cp >> 6)
        out[n + 1] = 0x80 | (cp & 0x3F)
        return n + 2
    if cp < 0x10000:
        out[n] = 0xE0 | (cp >> 12)
        out[n + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[n + 2] = 0x80 | (cp & 0x3F)
        return n + 3
    out[n] = 0xF0 | (cp >> 18)
    out[n + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[n + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[n + 3] = 0x80 | (cp & 0x3F)
    return n + 4


@numba.njit(cache=True)
def _fold(data, offsets, classes, kind, start, pool_cp, pool_cls, ascii_out, mapping, out, out_offsets, python, first):
    """Write the normalised bytes of documents `first`... of `data` (UTF-8) to `out`; returns the
    bytes used, or -1 - d when a replacement needs more room than `out` has in document d.

    With `mapping`, every step runs here, except that a document holding a PYTHON character is left
    empty and flagged in `python`. Without, the text is taken as NFKC'd and lowercased already.
    """
    n = out_offsets[first]
    total = offsets[offsets.shape[0] - 1]
    for d in range(first, offsets.shape[0] - 1):
        out_offsets[d] = n
        begin = n
        pending_space = False
        i, hi = offsets[d], offsets[d + 1]
        while i < hi:
            b0 = data[i]
            if b0 < 0x80:  # ASCII, without branches that depend on the text: one byte out or none
                w = ascii_out[b0] != 0
                out[n] = 32
                n += pending_space & w
                out[n] = ascii_out[b0]
                n += w
                pending_space = (not w) & (n > begin)
                i += 1
                continue
            if b0 < 0xE0:
                cp, size = ((np.int64(b0) & 0x1F) << 6) | (data[i + 1] & 0x3F), 2
            elif b0 < 0xF0:
                cp = ((np.int64(b0) & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (data[i + 2] & 0x3F)
                size = 3
            else:
                cp = ((np.int64(b0) & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12)
                cp |= ((np.int64(data[i + 2]) & 0x3F) << 6) | (data[i + 3] & 0x3F)
                size = 4
            k = kind[cp] if mapping else classes[cp]
            if k == SEP:
                pending_space = n > begin
            elif k == MAPPED:
                lo, up = start[cp], start[cp + 1]
                if n + 5 * (up - lo) + (total - i) + 2 > out.shape[0]:
                    out_offsets[d] = begin
                    return -1 - d
                for j in range(lo, up):
                    cls = pool_cls[j]
                    if cls == SEP:
                        pending_space = n > begin
                    else:
                        if pending_space:
                            out[n] = 32
                            n += 1
                            pending_space = False
                        if cls == DIGIT:
                            out[n] = 48
                            n += 1
                        else:
                            n = _put(out, n, pool_cp[j])
            elif k == PYTHON:
                python[d] = True
                n = begin
                break
            else:
                if pending_space:
                    out[n] = 32
                    n += 1
                    pending_space = False
                if k == DIGIT:
                    out[n] = 48
                    n += 1
                else:
                    for j in range(size):
                        out[n + j] = data[i + j]
                    n += size
            i += size
    out_offsets[offsets.shape[0] - 1] = n
    return n


@numba.njit(cache=True)
def _splice(out, offsets, out2, offsets2, redone, res, res_offsets):
    """Documents of `out` with those flagged in `redone` taken, in order, from `out2` instead."""
    n, r = 0, 0
    for d in range(offsets.shape[0] - 1):
        res_offsets[d] = n
        if redone[d]:
            src, lo, hi = out2, offsets2[r], offsets2[r + 1]
            r += 1
        else:
            src, lo, hi = out, offsets[d], offsets[d + 1]
        res[n : n + hi - lo] = src[lo:hi]
        n += hi - lo
    res_offsets[offsets.shape[0] - 1] = n


def _utf8(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    arr = pa.array(texts, type=pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=len(arr) + 1)
    raw = arr.buffers()[2]
    return (np.frombuffer(raw, dtype=np.uint8) if raw is not None else np.zeros(0, np.uint8)), offsets


def _run(texts: list[str], mapping: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data, offsets = _utf8(texts)
    out = np.empty(int(offsets[-1]) + 2, dtype=np.uint8)
    out_offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    python = np.zeros(len(texts), dtype=np.bool_)
    n = _fold(data, offsets, char_classes(), *_tables(), mapping, out, out_offsets, python, 0)
    while n < 0:  # a replacement longer than the text it replaces ran out of room: grow, resume
        bigger = np.empty(2 * len(out), dtype=np.uint8)
        bigger[: len(out)] = out
        out = bigger
        n = _fold(data, offsets, char_classes(), *_tables(), mapping, out, out_offsets, python, -1 - n)
    return out[:n], out_offsets, python


def match_form_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Match form of many texts as UTF-8: (bytes, offsets), document d at bytes[offsets[d]:offsets[d+1]]."""
    out, offsets, python = _run(texts, True)
    if not python.any():
        return out, offsets
    redo = [unicodedata.normalize("NFKC", texts[d]).lower() for d in np.flatnonzero(python).tolist()]
    out2, offsets2, _ = _run(redo, False)
    res = np.empty(len(out) + len(out2), dtype=np.uint8)
    res_offsets = np.empty_like(offsets)
    _splice(out, offsets, out2, offsets2, python, res, res_offsets)
    return res, res_offsets


def match_form(text: str) -> str:
    """The match form of one text: what dedup compares (see the module docstring).

    Decontamination's n-gram form and the quality model's input are other foldings, with their own names.
    """
    data, _ = match_form_batch([text])
    return data.tobytes().decode("utf-8")


def spaced(texts: list[str], langs: list[str | None] | None = None, default_lang: str = "en") -> list[str]:
    """The texts with the words of their language (`curate.lang.words`) separated by spaces, where the language
    does not space its words: what MinHash shingles (and `shingles` cuts) instead of the raw text.

    The match form's words are runs of letters, marks and numbers between separators, right for every language
    that spaces its words; in Chinese, Japanese, Thai, Lao, Khmer and Burmese such a run is a whole clause, so a
    near-duplicate with one word changed in fifty shared almost no 5-gram. Those documents (by `langs`, else
    `default_lang`; `curate.lang.is_segmented`) holding a character of those scripts get ICU's words joined by
    spaces, which the match form keeps as word boundaries; every other text is returned as it is, so the
    compiled passes run on it unchanged (with no `langs` and a spaced `default_lang`, the list itself)."""
    if langs is None:
        langs = [None] * len(texts)
    if len(langs) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(langs)} languages")
    segmented = {lang for lang in set(langs) if is_segmented(lang or default_lang)}  # a few distinct values
    if not segmented:
        return texts
    out = list(texts)
    for i, lang in enumerate(langs):
        if lang in segmented and NOSPACE_CHAR.search(texts[i]):
            out[i] = " ".join(words(texts[i], lang or default_lang))
    return out


def shingles(text: str, n: int = 5, lang: str | None = None) -> list[bytes]:
    """Word n-grams of the normalised text, UTF-8 encoded: the reference definition, one text at a time.

    A text shorter than `n` words is one shingle of all its words; an empty one has none. The
    vectorised signature code hashes exactly these byte strings without building them. A text in a language
    that does not space its words is first given its words (`spaced`).
    """
    norm = match_form(spaced([text], [lang])[0])
    words = norm.split(" ") if norm else []
    if len(words) <= n:
        return [norm.encode()] if words else []
    return [" ".join(words[i : i + n]).encode() for i in range(len(words) - n + 1)]
