"""Word tokens as spaCy's rule-based English tokenizer makes them, without spaCy: the words of every language
that spaces its words (`curate.lang.units` segments the others first).

datatrove (and so FineWeb) counts the words of its Gopher and FineWeb rules with `spacy.blank("en")`:
whitespace chunks, then punctuation split off the edges one mark at a time, clitics ("'s", "n't")
split off, and chunks cut inside at hyphens between letters, at "/" and ":" before letters, and at
operators between digits. Ratios such as "words with a letter / all tokens" move with every such
split (`e-mail` is three tokens, `),` two), so matching datatrove's decisions means counting the same
tokens. This module applies the same prefix, suffix, infix and exception rules (spaCy 3.x English
defaults, abridged to what changes counts on real web text) with plain Python string tests.

Most chunks are plain words or numbers and are taken whole by one regex test; only the rest are split.
"""

from __future__ import annotations

import re
import unicodedata


def _words(spaced: str) -> list[str]:
    return spaced.split()


_PLAIN = re.compile(r"[^\W\d_]+|[0-9]+(?:[.,][0-9]+)*")  # words, and numbers like 1,000 or 3.5: one token each
_PUNCT = set(",:;!?¿؟¡()[]{}<>_#*&。？！，、；：～·।،۔؛٪")
_QUOTES = set("'\"”“`‘´’‚„»«「」『』（）〔〕【】《》〈〉⟦⟧")
_CURRENCY = set("$£€¥฿₽₹₩₪₫₱₴₺₿₦₡₲₵₸")
_PREFIX = _PUNCT | _QUOTES | _CURRENCY | set("§%=—–°")
_SUFFIX = _PUNCT | _QUOTES | set("—–")
_CLITICS = ("'s", "'S", "’s", "’S")
_UNITS = ("km", "kg", "cm", "mm", "mg", "kb", "KB", "MB", "GB", "TB", "gb", "mb", "tb", "ha", "nm", "lb", "oz",
          "ft", "yd", "in", "mph", "am", "pm", "m", "g", "t", "%", "°", "G", "M", "K", "T")
_CONTRACTION = re.compile(r"(?i)^([^\W\d_]+)(n['’]t)$|^(i|you|he|she|it|we|they|who|what|where|there|that|how|"
                          r"would|could|should)(['’](?:re|ll|ve|m|d))$")
_URL = re.compile(r"^(?:(?:https?|ftp)://|www\.)\S+$|^(?:[\w-]+\.)+[a-z]{2,6}(?:/\S*)?$")
_INFIX = re.compile(r"\.\.+|…|---?|——|[.,\-–—~:<>=/+*^°]|[^\w\s.,\-–—~:<>=/+*^…°]")
# Abbreviations the tokenizer keeps whole with their period (spaCy's English exceptions, the common ones).
_ABBREVIATIONS = frozenset(
    _words("Mr. Mrs. Ms. Messrs. Dr. Prof. St. Mt. Jr. Sr. Rev. Gen. Gov. Sen. Rep. Adm. Inc. Ltd. Co. co. Corp. Bros. "
    "Jan. Feb. Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct. Nov. Dec. vs. v.s. e.g. i.e. E.g. I.e. a.m. p.m. Ph.D. "
    "Calif. Mass. Fla. Pa. Va. Wash. Ill. Mich. Minn. Tenn. Ariz. Colo. Conn. Ind. Kan. Ky. La. Md. Mo. Neb. Nev. "
    "Okla. Ore. Wis. Ala. Ark. Del. Ga.")
) | {f"{c}." for c in "abcdefghijklmnopqrstuvwxyzäöü"}
# Emoticons the tokenizer keeps whole (they would otherwise be split into their punctuation marks).
_EMOTICONS = frozenset(_words(":) :( :-) :-( ;) ;-) :D :P :p :-D :-P <3 </3 ): (: :/ :| :'( =) =( :] :[ xD XD ^_^ -_- "
                       ":o :O :-/ ;( :* :-* 8) 8-) ._. =D =] ^^"))
_WHOLE = _ABBREVIATIONS | _EMOTICONS | {"and/or"}
_WHOLE_LONGEST = max(map(len, _WHOLE))
_SUFFIX_EMOTICONS = tuple(sorted((e for e in _EMOTICONS if not e[0].isalnum()), key=len, reverse=True))
# Apostrophe-less contractions the tokenizer splits like "don't" (spaCy's exceptions, the common ones).
_SPLIT_LOWER = {w: len(w) - 2 for w in _words("dont doesnt didnt isnt arent wasnt werent hasnt havent hadnt couldnt "
                                         "shouldnt wouldnt mustnt")} | {
    "cannot": 3, "cant": 2, "im": 1, "ive": 1, "id": 1, "gonna": 3, "gotta": 3, "thats": 4}
# lower-case and capitalised forms only: "ID" and "DONT" stay whole; "Wed" is spaCy's "We" + "d"
_SPLIT_WORDS = {f: n for w, n in _SPLIT_LOWER.items() for f in (w, w.capitalize())} | {"Wed": 2}


def _lowerish(c: str) -> bool:
    """Lower-case, or a letter of a script without case (spaCy's ALPHA_LOWER includes those)."""
    return c.islower() or (c.isalpha() and not c.isupper())


def _is_icon(c: str) -> bool:
    return len(c) == 1 and c != "°" and unicodedata.category(c) == "So"


_DOTS = re.compile(r"\.+")


def _prefix(c: str, i: int, j: int) -> int:
    """Length of the prefix token at the start of `c[i:j]` (not empty), 0 if none. Positions, not a slice: a chunk
    of 100,000 `=` is peeled one mark at a time, and copying what is left at each step made that quadratic."""
    ch = c[i]
    if ch == "." and i + 1 < j and c[i + 1] == ".":
        return _DOTS.match(c, i, j).end() - i
    if (ch == "'" or ch == "`") and i + 1 < j and c[i + 1] == ch:  # '' and ``
        return 2
    if ch in _PREFIX or ch == "…" or _is_icon(ch) or (ch == "+" and not (i + 1 < j and c[i + 1].isdigit())):
        return 1
    return 0


def _suffix(c: str, i: int, j: int) -> int:
    """Length of the suffix token at the end of `c[i:j]` (not empty), 0 if none. The common marks are tested
    first. Every step that peels costs the length it peels (a run of periods or currency signs is scanned once
    and taken whole); only the unit rule reads the whole rest, and it peels once at most (what it leaves ends in
    a digit, period or comma), so a chunk is peeled in time linear in its length."""
    n = j - i
    ch = c[j - 1]
    if ch == ".":
        if n > 1:
            b = c[j - 2]
            if b == ".":
                k = j - 2
                while k > i and c[k - 1] == ".":
                    k -= 1
                return j - k
            if (_lowerish(b) or b.isdigit() or b in "%²-+" or b in _PUNCT or b in _QUOTES
                    or (b.isupper() and n > 2 and c[j - 3].isupper())):
                return 1
        return 0
    if ch in _SUFFIX or ch == "…":
        if ch == "'" and n > 1 and c[j - 2] == "'":
            return 2
        if c.endswith(_SUFFIX_EMOTICONS, i, j):  # one C call; which one only when some emoticon ends the chunk
            for e in _SUFFIX_EMOTICONS:
                if c.endswith(e, i, j) and n > len(e):
                    return len(e)
        return 1
    if n > 2 and c.endswith(_CLITICS, i, j):
        return 2
    if _is_icon(ch):
        return 1
    if ch == "+" and n > 1 and c[j - 2].isdigit():
        return 1
    if ch in _CURRENCY:
        k = j - 1
        while k > i and c[k - 1] in _CURRENCY:
            k -= 1
        return j - k if k > i and c[k - 1].isdigit() else 0
    if not (c[i].isdigit() and c.endswith(_UNITS, i, j)):
        return 0
    s = c[i:j]
    for unit in _UNITS:
        if s.endswith(unit) and len(s) > len(unit) and s[-len(unit) - 1].isdigit() and not s[:-len(unit)].isalpha():
            return len(unit) if s[: -len(unit)].replace(",", "").replace(".", "").isdigit() else 0
    return 0


def _infix_split(s: str) -> list[str]:
    """Cut `s` at infixes: hyphens and dashes before a letter, / : < > = before a letter, operators between
    digits, a period between a lower- and an upper-case letter, a comma between letters, ellipses."""
    out, start = [], 0
    for m in _INFIX.finditer(s):
        i, j = m.span()
        mark = m.group()
        if _is_icon(mark):
            out += [s[start:i], mark] if i > start else [mark]
            start = j
            continue
        if i == 0 or j == len(s):
            continue
        a, b = s[i - 1], s[j]
        cut = (
            mark.startswith("..") or mark == "…"
            or (mark in "+-*^" and a.isdigit() and (b.isdigit() or b == "-"))
            or (mark in ("-", "–", "—", "--", "---", "——", "~") and (a.isalnum()) and b.isalpha())
            or (mark in ":<>=/" and a.isalnum() and b.isalpha())
            or (mark == "." and (_lowerish(a) or a in "'\"”’") and (b.isupper() or b in "'\"“‘"))
            or (mark == "," and a.isalpha() and b.isalpha())
            or (mark == "°" and a.isdigit())
        )
        if cut and i >= start:
            out += [s[start:i], mark] if i > start else [mark]
            start = j
    out.append(s[start:])
    return [p for p in out if p]


def _plain(s: str) -> list[str]:
    n = _SPLIT_WORDS.get(s)
    return [s] if n is None else [s[:n], s[n:]]


def _core(s: str) -> list[str]:
    if s in _WHOLE or _URL.match(s):
        return [s]
    if _PLAIN.fullmatch(s):
        return _plain(s)
    m = _CONTRACTION.match(s)
    if m:
        return [g for g in m.groups() if g]
    return _infix_split(s)


def split_chunk(chunk: str) -> list[str]:
    """The tokens of one whitespace-free chunk: prefixes and suffixes peeled off its edges, then its core split.
    Linear in the chunk's length (the edges are tracked as positions; tests/test_linear.py)."""
    if _PLAIN.fullmatch(chunk):
        return _plain(chunk)
    head: list[str] = []
    tail: list[str] = []
    i, j = 0, len(chunk)
    while i < j and (j - i > _WHOLE_LONGEST or chunk[i:j] not in _WHOLE):
        n = _prefix(chunk, i, j)
        if n:
            head.append(chunk[i : i + n])
            i += n
            continue
        m = _suffix(chunk, i, j)
        if not m:
            break
        tail.append(chunk[j - m : j])
        j -= m
    return head + (_core(chunk[i:j]) if i < j else []) + tail[::-1]


_CHUNKS: dict[str, tuple[str, ...]] = {}  # chunk -> its tokens: web text repeats "said." and "it's" a lot
_CHUNKS_MAX = 1 << 17  # entries; the cache is dropped and refilled past this, so memory stays bounded


def word_tokens(text: str) -> list[str]:
    """Every token of `text`, punctuation included, whitespace dropped (datatrove's `split_into_words`)."""
    out: list[str] = []
    cache = _CHUNKS
    for chunk in text.split():
        toks = cache.get(chunk)
        if toks is None:
            plain = _PLAIN.fullmatch(chunk) and chunk not in _SPLIT_WORDS
            toks = (chunk,) if plain else tuple(split_chunk(chunk))
            if len(cache) >= _CHUNKS_MAX:
                cache.clear()
            cache[chunk] = toks
        out += toks
    return out
