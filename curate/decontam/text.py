"""Normalisation and n-gram hashing shared by the index builder and the scanner.

Both sides must turn text into exactly the same word sequence, so everything that decides what a
"word" is lives here, in one function per concern:

* `nfkc_lower`: Unicode NFKC, then lowercase. Compatibility forms (full-width letters, ligatures,
  "…", non-breaking spaces) fold to their plain equivalents, so a copy of a benchmark item that went
  through a word processor or a different encoding still matches.
* words are maximal runs of Unicode letters and digits (`[^\\W_]+`): every punctuation mark, symbol,
  underscore and whitespace character is a separator, so spacing, line breaks and punctuation changes
  do not matter.
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

NORMALIZATION = "nfkc-lower-alnum-words/polyhash64-v1"

_SEP = re.compile(r"[\W_]")  # a separator: anything but a letter or digit (Python's isalnum)
_U64 = np.uint64
_P = 0x100000001B3  # odd, so it is invertible modulo 2**64
_P_INV = pow(_P, -1, 2**64)
_Q = 0x9E3779B97F4A7C15  # combines word hashes into n-gram hashes
_LEN_SALT = 0xD6E8FEB86659FD93


def nfkc_lower(text: str) -> str:
    """NFKC + lowercase. ASCII text skips NFKC (it is already normal), which is most web text."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):  # both checks are far cheaper than NFKC
        return text.lower()
    return unicodedata.normalize("NFKC", text).lower()


def words(text: str) -> list[str]:
    """The normalised words of a text, for humans and for the reference implementation in benchmarks/."""
    return [w for w in _SEP.sub(" ", nfkc_lower(text)).split()]


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

    `start`/`end` are offsets into each text's *normalised* form (`nfkc_lower(text)`); `char_offsets`
    maps them back to the original text when normalisation changed its length.
    """

    hashes: np.ndarray  # uint64, one per word
    doc: np.ndarray  # int64, index of the text each word belongs to
    start: np.ndarray  # int64, offset of the word in its normalised text
    end: np.ndarray
    first: np.ndarray  # int64 per text: index of its first word (len(hashes) when it has none)
    counts: np.ndarray  # int64 per text: number of words

    @classmethod
    def from_texts(cls, texts: list[str]) -> WordBatch:
        norms = [nfkc_lower(t) for t in texts]
        joined = "\n".join(norms)  # "\n" is a separator, so no word crosses two texts
        base = np.zeros(len(norms) + 1, dtype=np.int64)
        np.cumsum([len(s) + 1 for s in norms], out=base[1:])
        cp = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        is_word = np.zeros(len(cp) + 2, dtype=np.int8)
        is_word[1:-1] = _IS_WORD(cp)
        edges = np.diff(is_word)
        starts = np.flatnonzero(edges == 1)
        ends = np.flatnonzero(edges == -1)
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


def char_map(text: str, norm: str) -> np.ndarray | None:
    """Map offsets in `nfkc_lower(text)` back to `text`, or None when they are the same offsets.

    ASCII text and most other text keep their length under NFKC + lowercase, and then offsets are
    shared. Otherwise each character is normalised on its own to learn how many characters it became;
    if that concatenation differs from the whole-text normalisation (a composing sequence), offsets are
    scaled proportionally, which is off by a few characters at most: enough for a ±200-character cut.
    """
    if len(norm) == len(text):
        return None
    pieces = [unicodedata.normalize("NFKC", c).lower() for c in text]
    if "".join(pieces) == norm:
        src = np.repeat(np.arange(len(text), dtype=np.int64), [len(p) for p in pieces])
        return np.append(src, len(text))
    return np.round(np.arange(len(norm) + 1) * (len(text) / max(len(norm), 1))).astype(np.int64)
