"""A partitioned Bloom filter over word n-grams, and DCLM's BFF rule that uses it (one pass, approximate).

The filter has `hashes` partitions of `part_bits` bits; an n-gram sets one bit in each, at a
splitmix64 mix of its 64-bit hash and the partition number. With n n-grams inserted the chance that a
new one is reported present is prod_i fill_i, about (1 - exp(-n / part_bits)) ** hashes; `sized` picks
the fewest bits that keep that at `fp_rate` for `expected` n-grams (and hashes = ceil(log2(1 / fp_rate))),
so the memory, `bytes`, is known before a document is read: about 1.2 bytes per n-gram at 1%.

`bff_batch` applies DCLM's `old-both` removal (its BFF `process_line_oldboth`) to a batch of
documents, in order: each unit (a line, for DCLM's paragraphs split at newlines) contributes its word
`ngram`-grams, or one n-gram of all its words when it has fewer than `ngram` but at least `min_ngram`
words; a unit whose share of n-grams already in the filter exceeds `threshold` is removed, otherwise
its n-grams are inserted; a document whose share over all its units exceeds `threshold` is removed
whole. Words are those of the match form (`curate.dedup.text`), not BFF's case-sensitive Unicode
word segments, so case, punctuation and digits do not hide a repeat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, inline="always")
def _mix(x):
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@dataclass
class Filter:
    """The bits of a partitioned Bloom filter (`words` uint64 words) and its shape."""

    hashes: int
    part_bits: int
    words: np.ndarray

    @classmethod
    def sized(cls, expected: int, fp_rate: float) -> Filter:
        hashes = max(1, math.ceil(math.log2(1 / fp_rate)))
        part_bits = math.ceil(-max(expected, 1) / math.log1p(-fp_rate ** (1 / hashes)))
        part_bits = 64 * math.ceil(part_bits / 64)
        return cls(hashes, part_bits, np.zeros(hashes * part_bits // 64, dtype=np.uint64))

    @staticmethod
    def bytes_for(expected: int, fp_rate: float) -> int:
        hashes = max(1, math.ceil(math.log2(1 / fp_rate)))
        part_bits = math.ceil(-max(expected, 1) / math.log1p(-fp_rate ** (1 / hashes)))
        return hashes * 8 * math.ceil(part_bits / 64)

    @property
    def bytes(self) -> int:
        return self.words.nbytes

    def fp_rate(self) -> float:
        """The chance that an n-gram never inserted is reported present now: the product of the partitions' fill."""
        fill = _popcounts(self.words.reshape(self.hashes, -1)) / self.part_bits
        return float(np.prod(fill))

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        return _contains_many(self.words, self.hashes, self.part_bits, hashes.astype(np.uint64))

    def insert(self, hashes: np.ndarray) -> None:
        _insert_many(self.words, self.hashes, self.part_bits, hashes.astype(np.uint64))


@numba.njit(cache=True)
def _popcounts(rows):
    """Set bits per row of a uint64 matrix, without a copy (unpacking bits would take 8 bytes per bit)."""
    out = np.zeros(rows.shape[0], dtype=np.int64)
    for r in range(rows.shape[0]):
        n = 0
        for w in rows[r]:
            while w:
                w &= w - np.uint64(1)
                n += 1
        out[r] = n
    return out


@numba.njit(cache=True, inline="always")
def _bit(h, i, part_bits):
    return np.uint64(i) * np.uint64(part_bits) + _mix(h + np.uint64(i + 1) * _GOLDEN) % np.uint64(part_bits)


@numba.njit(cache=True)
def _contains(words, k, part_bits, h):
    for i in range(k):
        b = _bit(h, i, part_bits)
        if not (words[b >> np.uint64(6)] >> (b & np.uint64(63))) & np.uint64(1):
            return False
    return True


@numba.njit(cache=True)
def _insert(words, k, part_bits, h):
    for i in range(k):
        b = _bit(h, i, part_bits)
        words[b >> np.uint64(6)] |= np.uint64(1) << (b & np.uint64(63))


@numba.njit(cache=True)
def _contains_many(words, k, part_bits, hs):
    out = np.zeros(len(hs), dtype=np.bool_)
    for j in range(len(hs)):
        out[j] = _contains(words, k, part_bits, hs[j])
    return out


@numba.njit(cache=True)
def _insert_many(words, k, part_bits, hs):
    for j in range(len(hs)):
        _insert(words, k, part_bits, hs[j])


@numba.njit(cache=True)
def _unit_ngrams(data, lo, hi, ngram, min_ngram, words_buf, out):
    """Hashes of the word n-grams of data[lo:hi] (a match form: words split by single spaces) into `out`."""
    nw = 0
    h = np.uint64(0xCBF29CE484222325)
    in_word = False
    for i in range(lo, hi + 1):
        if i == hi or data[i] == 32:
            if in_word:
                words_buf[nw] = _mix(h)
                nw += 1
                h = np.uint64(0xCBF29CE484222325)
                in_word = False
        else:
            h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
            in_word = True
    n = 0
    if nw >= ngram:
        for s in range(nw - ngram + 1):
            g = np.uint64(ngram)
            for j in range(s, s + ngram):
                g = _mix(g ^ words_buf[j])
            out[n] = g
            n += 1
    elif nw >= min_ngram and nw > 0:
        g = np.uint64(nw)
        for j in range(nw):
            g = _mix(g ^ words_buf[j])
        out[0] = g
        n = 1
    return n


@numba.njit(cache=True)
def bff_batch(data, unit_off, doc_units, words, k, part_bits, ngram, min_ngram, threshold, removed, doc_removed):
    """DCLM's old-both BFF over the documents of a batch, in order; returns (n-grams seen, n-grams found).

    Unit u is data[unit_off[u]:unit_off[u + 1]]; document d has units doc_units[d]:doc_units[d + 1].
    Sets removed[u] for removed units and doc_removed[d] for documents removed whole.
    """
    longest = 1
    for u in range(len(unit_off) - 1):
        longest = max(longest, unit_off[u + 1] - unit_off[u] + 1)
    words_buf = np.empty(longest, dtype=np.uint64)
    grams = np.empty(longest, dtype=np.uint64)
    seen_all, found_all = 0, 0
    for d in range(len(doc_units) - 1):
        total, found = 0, 0
        for u in range(doc_units[d], doc_units[d + 1]):
            n = _unit_ngrams(data, unit_off[u], unit_off[u + 1], ngram, min_ngram, words_buf, grams)
            hit = 0
            for j in range(n):
                if _contains(words, k, part_bits, grams[j]):
                    hit += 1
            total += n
            found += hit
            if n > 0 and hit > threshold * n:
                removed[u] = True
            else:
                for j in range(n):
                    _insert(words, k, part_bits, grams[j])
        if total > 0 and found > threshold * total:
            doc_removed[d] = True
        seen_all += total
        found_all += found
    return seen_all, found_all
