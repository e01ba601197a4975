"""MinHash signatures for many documents at once, bit for bit equal to `datasketch.MinHash`.

datasketch (2.x, default scheme "affine32") hashes each shingle with the first 4 bytes of its SHA-1
read little-endian, mixes that once with the MurmurHash3 32-bit finalizer, and keeps, per
permutation k, the minimum of `a_k * h + b_k mod 2**32`. The `a_k`, `b_k` come from
`numpy.random.RandomState(seed)`. Doing that per document in Python costs a Python call per
shingle; here one compiled loop (numba) walks the normalised UTF-8 text of a whole batch, cuts the
word n-grams in place, hashes them and folds them into the signature matrix, with no Python object
per shingle.
"""

from __future__ import annotations

import numba
import numpy as np

from curate.dedup.text import normalize_batch


def permutations(num_perm: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) of datasketch's affine32 scheme: `a` odd, both uniform 32-bit, from RandomState(seed)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


@numba.njit(cache=True, inline="always")
def _rotl(x, n):
    return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF


@numba.njit(cache=True, inline="always")
def _compress(src, pos, h, w):
    """One SHA-1 block: src[pos:pos+64] into the state h (int64 holding 32-bit words)."""
    for i in range(16):
        j = pos + 4 * i
        w[i] = (np.int64(src[j]) << 24) | (np.int64(src[j + 1]) << 16) | (np.int64(src[j + 2]) << 8) | np.int64(src[j + 3])
    for i in range(16, 80):
        w[i] = _rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1)
    a, b, c, d, e = h[0], h[1], h[2], h[3], h[4]
    for i in range(20):
        t = (_rotl(a, 5) + ((b & c) | (~b & d & 0xFFFFFFFF)) + e + 0x5A827999 + w[i]) & 0xFFFFFFFF
        e, d, c, b, a = d, c, _rotl(b, 30), a, t
    for i in range(20, 40):
        t = (_rotl(a, 5) + (b ^ c ^ d) + e + 0x6ED9EBA1 + w[i]) & 0xFFFFFFFF
        e, d, c, b, a = d, c, _rotl(b, 30), a, t
    for i in range(40, 60):
        t = (_rotl(a, 5) + ((b & c) | (b & d) | (c & d)) + e + 0x8F1BBCDC + w[i]) & 0xFFFFFFFF
        e, d, c, b, a = d, c, _rotl(b, 30), a, t
    for i in range(60, 80):
        t = (_rotl(a, 5) + (b ^ c ^ d) + e + 0xCA62C1D6 + w[i]) & 0xFFFFFFFF
        e, d, c, b, a = d, c, _rotl(b, 30), a, t
    h[0] = (h[0] + a) & 0xFFFFFFFF
    h[1] = (h[1] + b) & 0xFFFFFFFF
    h[2] = (h[2] + c) & 0xFFFFFFFF
    h[3] = (h[3] + d) & 0xFFFFFFFF
    h[4] = (h[4] + e) & 0xFFFFFFFF


@numba.njit(cache=True)
def _sha1_32(buf, start, end, h, w, tail):
    """SHA-1 of buf[start:end], first 4 digest bytes read little-endian (datasketch's sha1_hash32).

    Whole 64-byte blocks are read in place; the last bytes, the 0x80 marker and the bit length go
    through the 128-byte scratch `tail`.
    """
    length = end - start
    h[0], h[1], h[2], h[3], h[4] = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0
    full = length // 64
    for blk in range(full):
        _compress(buf, start + 64 * blk, h, w)
    rem = length - 64 * full
    tail[:] = 0
    for i in range(rem):
        tail[i] = buf[start + 64 * full + i]
    tail[rem] = 0x80
    ntail = 1 if rem < 56 else 2
    bitlen = np.int64(length) * 8
    for i in range(8):
        tail[64 * ntail - 1 - i] = (bitlen >> (8 * i)) & 0xFF
    for blk in range(ntail):
        _compress(tail, 64 * blk, h, w)
    h0 = h[0]  # digest[:4] is h0 big-endian; datasketch unpacks it little-endian: a byte swap
    return ((h0 & 0xFF) << 24) | ((h0 & 0xFF00) << 8) | ((h0 >> 8) & 0xFF00) | (h0 >> 24)


@numba.njit(cache=True, inline="always")
def _fmix32(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


@numba.njit(cache=True)
def _signatures(data, offsets, ngram, a, b, out):
    """Fill out[d] with the signature of document d: data[offsets[d]:offsets[d+1]] is its normalised text.

    Returns the number of shingles per document (0 for an empty document, whose row stays all-max).
    """
    ndocs = offsets.shape[0] - 1
    nperm = a.shape[0]
    counts = np.zeros(ndocs, dtype=np.int64)
    w = np.zeros(80, dtype=np.int64)  # int64 throughout: numba turns uint64-int64 mixes into floats
    h = np.zeros(5, dtype=np.int64)
    tail = np.zeros(128, dtype=np.uint8)
    starts = np.empty(64, dtype=np.int64)  # word start positions; grows with the longest document
    for d in range(ndocs):
        lo, hi = offsets[d], offsets[d + 1]
        if hi <= lo:
            continue
        nwords = 0
        for i in range(lo, hi):
            if i == lo or data[i - 1] == 32:
                if nwords == starts.shape[0]:
                    bigger = np.empty(2 * nwords, dtype=np.int64)
                    bigger[:nwords] = starts
                    starts = bigger
                starts[nwords] = i
                nwords += 1
        nshingles = max(nwords - ngram + 1, 1)
        row = out[d]
        for s in range(nshingles):
            last = s + ngram
            end = hi if last >= nwords else starts[last] - 1
            hv = np.uint32(_fmix32(_sha1_32(data, starts[s], end, h, w, tail)))
            for k in range(nperm):  # uint32 operands and a 32-bit mask let LLVM vectorise this loop
                p = np.uint32((a[k] * hv + b[k]) & 0xFFFFFFFF)
                row[k] = min(row[k], p)
        counts[d] = nshingles
    return counts


def signatures(texts: list[str], num_perm: int = 112, seed: int = 1, ngram: int = 5,
               perms: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Signatures (len(texts), num_perm) uint32 and shingle counts for raw texts.

    Equal to `datasketch.MinHash(num_perm, seed)` updated with `text.shingles(t, ngram)`; documents
    with no word get an all-0xFFFFFFFF row and a count of 0 (datasketch's empty sketch).
    """
    a, b = perms if perms is not None else permutations(num_perm, seed)
    data, offsets = normalize_batch(texts)
    out = np.full((len(texts), len(a)), 0xFFFFFFFF, dtype=np.uint32)
    counts = _signatures(data, offsets, ngram, a, b, out)
    return out, counts
