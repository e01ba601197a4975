"""Text normalisation shared by exact and near-duplicate detection.

Two copies of a page differ in ways that say nothing about their content: case, punctuation,
Unicode compatibility forms (full-width letters, ligatures), numbers (dates, counters, prices) and
whitespace. Both dedup steps compare documents after folding all of these away:

1. Unicode NFKC, then lowercase (Python's `str` methods);
2. every decimal digit becomes `0`;
3. every run of characters that are not letters, marks or numbers (punctuation, symbols,
   whitespace, `_`) becomes one space, with none at either end.

Steps 2 and 3 run compiled over a whole batch (a code-point class table and one pass over the
UTF-8 bytes), because as regular expressions they cost more than hashing the shingles.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import numba
import numpy as np
import pyarrow as pa

SEP, WORD, DIGIT = 0, 1, 2


@lru_cache(maxsize=1)
def char_classes() -> np.ndarray:
    """Class of every code point: SEP, WORD (categories L*, M*, N*) or DIGIT (Nd), from `unicodedata`.

    Built once per process from the two-letter general categories of all code points at once
    (about half a second), so it always matches the running Python's Unicode version.
    """
    every = "".join(map(chr, range(0x110000)))
    cats = np.frombuffer("".join(map(unicodedata.category, every)).encode("ascii"), dtype=np.uint8).reshape(-1, 2)
    table = np.zeros(0x110000, dtype=np.uint8)
    table[np.isin(cats[:, 0], np.frombuffer(b"LMN", dtype=np.uint8))] = WORD
    table[(cats[:, 0] == ord("N")) & (cats[:, 1] == ord("d"))] = DIGIT
    return table


@numba.njit(cache=True)
def _fold(data, offsets, table, out, out_offsets):
    """Write the normalised bytes of each document of `data` (UTF-8) to `out`; returns the bytes used."""
    n = 0
    for d in range(offsets.shape[0] - 1):
        out_offsets[d] = n
        start = n
        pending_space = False
        i, hi = offsets[d], offsets[d + 1]
        while i < hi:
            b0 = data[i]
            if b0 < 0x80:
                cp, size = np.int64(b0), 1
            elif b0 < 0xE0:
                cp, size = ((np.int64(b0) & 0x1F) << 6) | (data[i + 1] & 0x3F), 2
            elif b0 < 0xF0:
                cp, size = ((np.int64(b0) & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (data[i + 2] & 0x3F), 3
            else:
                cp = ((np.int64(b0) & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12)
                cp |= ((np.int64(data[i + 2]) & 0x3F) << 6) | (data[i + 3] & 0x3F)
                size = 4
            cls = table[cp] if cp < 0x110000 else 0
            if cls == 0:
                pending_space = n > start
            else:
                if pending_space:
                    out[n] = 32
                    n += 1
                    pending_space = False
                if cls == 2:
                    out[n] = 48
                    n += 1
                else:
                    for j in range(size):
                        out[n + j] = data[i + j]
                    n += size
            i += size
    out_offsets[offsets.shape[0] - 1] = n
    return n


def normalize_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Normalised UTF-8 of many texts: (bytes, offsets), document d at bytes[offsets[d]:offsets[d+1]]."""
    folded = [t if t.isascii() else unicodedata.normalize("NFKC", t) for t in texts]
    arr = pa.array([t.lower() for t in folded], type=pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=len(arr) + 1)
    raw = arr.buffers()[2]
    data = np.frombuffer(raw, dtype=np.uint8) if raw is not None else np.zeros(0, np.uint8)
    out = np.empty(max(int(offsets[-1]), 1), dtype=np.uint8)
    out_offsets = np.empty(len(texts) + 1, dtype=np.int64)
    n = _fold(data, offsets, char_classes(), out, out_offsets)
    return out[:n], out_offsets


def normalize(text: str) -> str:
    """The normalised form of one text (see the module docstring)."""
    data, _ = normalize_batch([text])
    return data.tobytes().decode("utf-8")


def shingles(text: str, n: int = 5) -> list[bytes]:
    """Word n-grams of the normalised text, UTF-8 encoded: the reference definition, one text at a time.

    A text shorter than `n` words is one shingle of all its words; an empty one has none. The
    vectorised signature code hashes exactly these byte strings without building them.
    """
    norm = normalize(text)
    words = norm.split(" ") if norm else []
    if len(words) <= n:
        return [norm.encode()] if words else []
    return [" ".join(words[i : i + n]).encode() for i in range(len(words) - n + 1)]
