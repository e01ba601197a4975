"""Normalisation and n-gram hashing shared by the index builder and the scanner.

Both sides must turn text into exactly the same word sequence, so everything that decides what a
"word" is lives here, in one function per concern:

* `unentity`: numeric character references left in corpus text (`&#26085;`, `&#x627;`: a page whose extractor
  did not decode them) become their characters first, with a map back to the original offsets.
* `fold`: one rule per character, applied to every character on its own (`fold_char`):
  NFKD (compatibility forms such as full-width letters, ligatures, "…", non-breaking spaces, math-bold
  letters fold to plain ones), then drop what is invisible or decorative (format characters, category
  Cf: soft hyphen, zero-width space and joiners, bidi marks, BOM; every combining mark, category M:
  accents, `e` + U+0301; the other default-ignorable code points: Hangul fillers, variation
  selectors, tags; lone surrogates; the Arabic tatweel U+0640, a letter by category that only stretches a
  word), casefold, map letters that look like a Latin letter (Cyrillic
  `а`, Greek `ο`, dotless `ı`: `curate.decontam.confusables`) to it, and a Traditional Han character to its
  Simplified form (OpenCC's `t2s` character table, one character at a time, so a Traditional copy of a
  Simplified item has its words; phrase-level conversions such as 計算機 -> 计算机 are not made). So a copy of a benchmark item
  that went through a word processor, a hyphenating web page or a homoglyph substitution still has
  the item's words. Because the rule is per character, every character of the folded text comes from
  exactly one character of the original, which makes `char_map` exact. ASCII text is only lowercased
  (the rule does nothing else to ASCII), which is most web text and the fast path.
* words are maximal runs of Unicode letters and digits (`[^\\W_]+`): every punctuation mark, symbol,
  underscore and whitespace character is a separator, so spacing, line breaks and punctuation changes
  do not matter. A Han, kana, Thai, Lao, Khmer or Burmese letter is a word of its own (`curate.lang.UNIT`):
  those languages do not space words, and a dictionary segmenter may cut the same passage differently inside a
  benchmark item and inside a page, so the n-grams of both sides are of characters, which no context changes.
  The index scales its n and floor to them (`curate.lang.scale`: 13 English words are 20 Chinese characters).
  (v4; v3 kept the space-separated runs of Thai, Lao, Khmer and Burmese, v2 made a Chinese sentence one word.)
* `WordBatch` hashes the words of many texts at once with numpy (a polynomial hash over code points
  via prefix sums, then a 64-bit mixer) and `WordBatch.grams(k)` combines k consecutive word hashes
  into one 64-bit n-gram hash. Nothing runs a Python loop per word, which is what makes the scan fast.

Hashes are stable across processes and machines (no Python `hash()`), so an index built once can be
used by every worker. `NORMALIZATION` names the scheme; the index records it and refuses a mismatch.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from curate.decontam.confusables import CONFUSABLES
from curate.lang import UNIT, UNIT_RANGES
from curate.lang.scale import UNIT_SCRIPTS

NORMALIZATION = ("numeric-entities-nfkd-nocf-nomarks-notatweel-casefold-confusables-t2s-alnum-words-"
                 "han-kana-thai-lao-khmer-myanmar-chars/polyhash64-v4")

_SEP = re.compile(r"[\W_]")  # a separator: anything but a letter or digit (Python's isalnum)
_U64 = np.uint64
_P = 0x100000001B3  # odd, so it is invertible modulo 2**64
_P_INV = pow(_P, -1, 2**64)
_Q = 0x9E3779B97F4A7C15  # combines word hashes into n-gram hashes
_LEN_SALT = 0xD6E8FEB86659FD93


# Default-ignorable code points that are not format characters (Cf) or marks (M), both dropped by
# category: Hangul fillers (letters, so they would otherwise sit inside a word) and unassigned
# ranges reserved as ignorable (DerivedCoreProperties.txt, Default_Ignorable_Code_Point).
_IGNORABLE = frozenset([0x115F, 0x1160, 0x3164, 0xFFA0, 0x2065, *range(0xFFF0, 0xFFF9), *range(0xE0000, 0xE1000),
                        0x0640])  # and the Arabic tatweel (kashida): a letter (Lm) that only stretches a word


def _dropped(c: str) -> bool:
    cat = unicodedata.category(c)
    return cat == "Cf" or cat[0] == "M" or cat == "Cs" or ord(c) in _IGNORABLE


def fold_char(c: str) -> str:
    """The fold of one character: NFKD, drop invisible characters and marks, casefold, confusables.

    Repeated until nothing changes (casefolding can produce a decomposable character), so the fold
    is idempotent: `fold(fold(t)) == fold(t)`. `lower()` after `casefold()` undoes the one place where
    casefolding goes to uppercase (Cherokee), so `fold` may lowercase a whole text at the end.
    """
    out = c
    for _ in range(4):
        prev = out
        out = "".join(x for x in unicodedata.normalize("NFKD", out) if not _dropped(x)).casefold().lower()
        out = "".join(CONFUSABLES.get(x, x) for x in out)
        out = "".join(_simplified(x) if _HAN.match(x) else x for x in out)
        if out == prev:
            break
    return out


_T2S: list = []
_HAN = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in UNIT_SCRIPTS["zh"]) + "]")


def _simplified(c: str) -> str:
    """A Han character's Simplified form by OpenCC's character table (itself when it has none)."""
    if not _T2S:
        import opencc

        _T2S.append(opencc.OpenCC("t2s"))
    out = _T2S[0].convert(c)
    return out if len(out) == 1 else c


_ENTITY = re.compile(r"&#(?:([0-9]{1,7})|[xX]([0-9a-fA-F]{1,6}));?")


def _entity_char(m: re.Match) -> str | None:
    cp = int(m.group(1)) if m.group(1) else int(m.group(2), 16)
    return chr(cp) if 0 < cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF else None


def unentity(text: str) -> tuple[str, np.ndarray | None]:
    """`text` with its numeric character references decoded, and the offsets in `text` of every offset of the
    result (length len(result) + 1; an offset inside a reference maps to its start, its end to the reference's
    end), or None when there was none to decode (the common case, one substring test)."""
    if "&#" not in text:
        return text, None
    out, src, last = [], [], 0
    for m in _ENTITY.finditer(text):
        ch = _entity_char(m)
        if ch is None:
            continue
        out.append(text[last:m.start()])
        src.extend(range(last, m.start()))
        out.append(ch)
        src.append(m.start())
        last = m.end()
    if not src and last == 0:
        return text, None
    out.append(text[last:])
    src.extend(range(last, len(text)))
    src.append(len(text))
    return "".join(out), np.array(src, dtype=np.int64)


class _FoldTable(dict):
    """`str.translate` table of the fold, filled one code point at a time as texts bring them.

    A value is the code point itself (unchanged), another string, or None (dropped). Every distinct
    character is folded once per process; later lookups are one dict hit inside `str.translate`.
    """

    def __missing__(self, cp: int) -> int | str | None:
        c = chr(cp)
        out = fold_char(c)
        value = None if not out else cp if out == c else out
        self[cp] = value
        return value

    def length(self, cp: int) -> int:
        v = self[cp]
        return 0 if v is None else 1 if isinstance(v, int) else len(v)


_FOLD = _FoldTable()


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _fold_run(m: re.Match) -> str:
    return m.group().translate(_FOLD)


def fold(text: str) -> str:
    """The text as the index sees it (see the module docstring); ASCII text is only lowercased.

    Equal to `"".join(map(fold_char, text))`, computed faster: the table only for the runs of non-ASCII
    characters (web text in other languages is still mostly ASCII spaces, digits and markup residue),
    then one `lower()` for the ASCII rest, which leaves folded characters as they are.
    """
    if text.isascii():  # the fold of ASCII is its lowercase
        return text.lower()
    return _NON_ASCII.sub(_fold_run, text).lower()


def _spaced(m: re.Match) -> str:
    return f" {m.group()} "


def words(text: str) -> list[str]:
    """The normalised words of a text, for humans and for the reference implementation in benchmarks/."""
    return UNIT.sub(_spaced, _SEP.sub(" ", fold(unentity(text)[0]))).split()


def mix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: spreads every input bit over the whole output (in place on a copy)."""
    x = x.copy()
    x ^= x >> _U64(30)
    x *= _U64(0xBF58476D1CE4E5B9)
    x ^= x >> _U64(27)
    x *= _U64(0x94D049BB133111EB)
    x ^= x >> _U64(31)
    return x


class _WordChars:
    """`str.isalnum()` per code point, as a numpy table for the Basic Multilingual Plane.

    The same predicate as the regex `[^\\W_]`, but one vectorised lookup per character instead of a
    regex pass, which was the most expensive part of the scan. Code points beyond the BMP (emoji,
    rare CJK) are looked up one distinct code point at a time.
    """

    def __init__(self) -> None:
        self.table: np.ndarray | None = None

    def __call__(self, cp: np.ndarray) -> np.ndarray:
        if self.table is None:
            self.table = np.array([chr(c).isalnum() for c in range(0x10000)], dtype=bool)
        out = self.table[np.minimum(cp, 0xFFFF)]
        astral = np.flatnonzero(cp > 0xFFFF)
        if len(astral):
            uniq, inv = np.unique(cp[astral], return_inverse=True)
            out[astral] = np.array([chr(c).isalnum() for c in uniq.tolist()], dtype=bool)[inv]
        return out


_IS_WORD = _WordChars()


def _character_words(cp: np.ndarray) -> np.ndarray:
    """Whether each code point is a word by itself (Han, kana, Thai, Lao, Khmer, Myanmar: `curate.lang.UNIT_RANGES`)."""
    out = np.zeros(len(cp), dtype=bool)
    for a, b in UNIT_RANGES:
        out |= (cp >= a) & (cp <= b)
    return out


class _Powers:
    """P**i and P**-i modulo 2**64 for i < size, grown by doubling and shared by all batches."""

    def __init__(self) -> None:
        self.pow = np.ones(1, dtype=_U64)
        self.inv = np.ones(1, dtype=_U64)

    def get(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.pow) < size:
            n = max(size, 2 * len(self.pow), 1 << 16)
            self.pow, self.inv = np.ones(n, dtype=_U64), np.ones(n, dtype=_U64)
            np.cumprod(np.full(n - 1, _P, dtype=_U64), out=self.pow[1:])  # wraps modulo 2**64, as intended
            np.cumprod(np.full(n - 1, _P_INV, dtype=_U64), out=self.inv[1:])
        return self.pow[:size], self.inv[:size]


_POWERS = _Powers()


@dataclass
class WordBatch:
    """The words of a batch of texts: one hash, owning text and character span per word.

    `start`/`end` are offsets into each text's *normalised* form (`fold(text)`); `char_map` maps
    them back to the original text exactly.
    """

    hashes: np.ndarray  # uint64, one per word
    doc: np.ndarray  # int64, index of the text each word belongs to
    start: np.ndarray  # int64, offset of the word in its normalised text
    end: np.ndarray
    first: np.ndarray  # int64 per text: index of its first word (len(hashes) when it has none)
    counts: np.ndarray  # int64 per text: number of words

    @classmethod
    def from_texts(cls, texts: list[str]) -> WordBatch:
        norms = [fold(unentity(t)[0]) for t in texts]
        joined = "\n".join(norms)  # "\n" is a separator, so no word crosses two texts
        base = np.zeros(len(norms) + 1, dtype=np.int64)
        np.cumsum([len(s) + 1 for s in norms], out=base[1:])
        cp = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        is_word = np.zeros(len(cp) + 2, dtype=bool)
        is_word[1:-1] = _IS_WORD(cp)
        single = np.zeros(len(cp) + 2, dtype=bool)
        single[1:-1] = _character_words(cp) & is_word[1:-1]
        # a word starts at a word character after a separator or a character word, or at a character word; it
        # ends likewise: runs of letters and digits, with every Han or kana character a run of its own
        w, prev_w, next_w = is_word[1:-1], is_word[:-2], is_word[2:]
        s, prev_s, next_s = single[1:-1], single[:-2], single[2:]
        starts = np.flatnonzero(w & (~prev_w | s | prev_s))
        ends = np.flatnonzero(w & (~next_w | s | next_s)) + 1
        # Polynomial hash of each word, position-independent: (H[end] - H[start]) * P**-start.
        pw, inv = _POWERS.get(len(cp) + 1)
        prefix = np.zeros(len(cp) + 1, dtype=_U64)
        np.cumsum(cp.astype(_U64) * pw[: len(cp)], out=prefix[1:])
        raw = (prefix[ends] - prefix[starts]) * inv[starts]
        hashes = mix64(raw + (ends - starts).astype(_U64) * _U64(_LEN_SALT))
        doc = np.searchsorted(base, starts, side="right") - 1
        counts = np.bincount(doc, minlength=len(texts)).astype(np.int64)
        first = np.searchsorted(doc, np.arange(len(texts)))
        return cls(hashes, doc, starts - base[doc], ends - base[doc], first, counts)

    def grams(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Hashes of every run of k consecutive words, and a mask of those that stay inside one text.

        Element i covers words i .. i+k-1. The length is mixed in, so a 9-word item never collides
        with the first 9 words of a 13-gram by construction.
        """
        m = len(self.hashes) - k + 1
        if m <= 0:
            return np.zeros(0, dtype=_U64), np.zeros(0, dtype=bool)
        g = self.hashes[:m].copy()
        for j in range(1, k):
            g *= _U64(_Q)
            g += self.hashes[j : j + m]
        valid = self.doc[:m] == self.doc[k - 1 :]
        return mix64(g ^ _U64(k * _LEN_SALT & 0xFFFFFFFFFFFFFFFF)), valid


def char_map(text: str, norm: str | None = None) -> np.ndarray | None:
    """Exact offsets in `text` of offsets in `fold(text)`, or None when they are the same offsets.

    Row 0 maps a start offset, row 1 an end offset (both of length `len(fold(text)) + 1`). The fold
    works character by character, so each folded character comes from one source character: a match
    starts where its first character's source starts and ends after its last character's source and
    any characters the fold dropped right after it (a combining accent, a soft hyphen). `norm`, when
    given, is checked to be `fold(text)`.
    """
    if text.isascii():
        return None
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    uniq, inv = np.unique(cp, return_inverse=True)
    lens = np.array([_FOLD.length(c) for c in uniq.tolist()], dtype=np.int64)[inv]
    if (lens == 1).all():
        return None
    src = np.repeat(np.arange(len(text), dtype=np.int64), lens)
    if norm is not None and len(norm) != len(src):
        raise ValueError("char_map: norm is not fold(text)")
    starts = np.append(src, len(text))
    ends = starts.copy()
    ends[1:] = np.maximum(starts[1:], src + 1)  # a character split by a word edge ("½" -> "1⁄2") stays whole
    return np.stack([starts, ends])
