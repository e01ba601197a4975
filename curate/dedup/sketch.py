"""MinHash signatures for many documents at once, bit for bit equal to `datasketch.MinHash`.

datasketch (2.x, default scheme "affine32") hashes each shingle with the first 4 bytes of its SHA-1
read little-endian, mixes that once with the MurmurHash3 32-bit finalizer, and keeps, per
permutation k, the minimum of `a_k * h + b_k mod 2**32`. The `a_k`, `b_k` come from
`numpy.random.RandomState(seed)`. Doing that per document in Python costs a Python call per
shingle; here one compiled loop (numba) walks the normalised UTF-8 text of a whole batch, cuts the
word n-grams in place, hashes them and folds them into the signature matrix, with no Python object
per shingle.

SHA-1 is most of the cost, so it has two implementations that give the same digest:

* `sha-ni`: the x86 SHA extensions (`sha1rnds4`, `sha1nexte`, `sha1msg1/2`; every AMD Zen, Intel
  since Ice Lake / Goldmont), emitted as LLVM intrinsics; about 10x faster per block;
* `portable`: SHA-1 in plain numba on uint32 words, for every other CPU.

`implementation()` picks `sha-ni` when the CPU numba compiles for has it (and the environment
variable `PENEIRA_SHA_NI` is not `0`). The min over the permutations is one loop over uint32
arrays, which LLVM vectorises (vpmulld / vpminud with AVX2).
"""

from __future__ import annotations

import os
import platform
import re
import sys
import unicodedata
from functools import lru_cache

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from curate.dedup.text import (
    MAPPED,
    PYTHON,
    WORD,
    _assigned,
    _tables,
    char_classes,
    kept_on_disk,
    match_form_batch,
    second_parts,
    spaced,
)

IMPLEMENTATIONS = ("sha-ni", "portable")


def permutations(num_perm: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) of datasketch's affine32 scheme: `a` odd, both uniform 32-bit, from RandomState(seed)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


@lru_cache(maxsize=1)
def has_sha_ni() -> bool:
    """Whether the CPU that numba compiles for has the SHA extensions (and PENEIRA_SHA_NI is not 0).

    Compiling the `sha-ni` kernel for a CPU without them would abort LLVM, so this looks at the
    target numba really uses: NUMBA_CPU_NAME / NUMBA_CPU_FEATURES when set, else the host.
    """
    if os.environ.get("PENEIRA_SHA_NI", "1") == "0":
        return False
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    cfg = numba.config
    if cfg.CPU_NAME and cfg.CPU_NAME != "host":
        return "+sha" in (cfg.CPU_FEATURES or "").split(",")
    try:
        import llvmlite.binding as llvm

        return bool(llvm.get_host_cpu_features().get("sha"))
    except RuntimeError:  # features unknown on this platform
        return False


def implementation() -> str:
    """The SHA-1 implementation `signatures` uses by default here: "sha-ni" or "portable"."""
    return "sha-ni" if has_sha_ni() else "portable"


# ---------------------------------------------------------------- SHA-1 compress, portable


@numba.njit(cache=True, inline="always")
def _rotl(x, n):
    return np.uint32((x << np.uint32(n)) | (x >> np.uint32(32 - n)))


@numba.njit(cache=True)
def _compress(src, pos, st, w):
    """One SHA-1 block: src[pos:pos+64] into the state st (uint32[5]); w is a uint32[80] scratch.

    Every value is a np.uint32, so numba keeps 32-bit arithmetic (wrapping is the mod 2**32 SHA-1
    wants) and never mixes signed and unsigned 64-bit operands into floats.
    """
    for i in range(16):
        j = pos + 4 * i
        w[i] = ((np.uint32(src[j]) << np.uint32(24)) | (np.uint32(src[j + 1]) << np.uint32(16))
                | (np.uint32(src[j + 2]) << np.uint32(8)) | np.uint32(src[j + 3]))
    for i in range(16, 80):
        w[i] = _rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1)
    a, b, c, d, e = st[0], st[1], st[2], st[3], st[4]
    for i in range(20):
        t = np.uint32(_rotl(a, 5) + np.uint32(d ^ (b & (c ^ d))) + e + np.uint32(0x5A827999) + w[i])
        e, d, c, b, a = d, c, _rotl(b, 30), a, t
    for i in range(20, 40):
        t = np.uint32(_rotl(a, 5) + np.uint32(b ^ c ^ d) + e + np.uint32(0x6ED9EBA1) + w[i])
        e, d, c, b, a = d, c, _rotl(b, 30), a, t
    for i in range(40, 60):
        t = np.uint32(_rotl(a, 5) + np.uint32((b & c) | (d & (b | c))) + e + np.uint32(0x8F1BBCDC) + w[i])
        e, d, c, b, a = d, c, _rotl(b, 30), a, t
    for i in range(60, 80):
        t = np.uint32(_rotl(a, 5) + np.uint32(b ^ c ^ d) + e + np.uint32(0xCA62C1D6) + w[i])
        e, d, c, b, a = d, c, _rotl(b, 30), a, t
    st[0] = np.uint32(st[0] + a)
    st[1] = np.uint32(st[1] + b)
    st[2] = np.uint32(st[2] + c)
    st[3] = np.uint32(st[3] + d)
    st[4] = np.uint32(st[4] + e)


# ---------------------------------------------------------------- SHA-1 compress, SHA extensions

_I8, _I32, _I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
_V4 = ir.VectorType(_I32, 4)


@intrinsic
def _compress_ni(typingctx, src, pos, st):
    """One SHA-1 block like `_compress`, with the x86 SHA instructions (only compile where present).

    The state is kept as ABCD in one vector (A in lane 3) and E in lane 3 of another; the message
    as 4 vectors of 4 big-endian words (W0 in lane 3). Per 4 rounds: sha1nexte derives E from the
    A of 4 rounds earlier and adds the next 4 words, sha1rnds4 does the rounds (function and
    constant chosen by the immediate, round // 20), sha1msg1 / xor / sha1msg2 extend the schedule:
    W[4i..4i+3] = msg2(msg1(W[4i-16..], W[4i-12..]) ^ W[4i-8..], W[4i-4..]).
    """
    sig = types.void(src, pos, st)

    def codegen(context, builder, signature, args):
        src_t, _, st_t = signature.args
        data = context.make_array(src_t)(context, builder, args[0]).data
        state = context.make_array(st_t)(context, builder, args[2]).data
        block = builder.gep(data, [args[1]])
        mod = builder.module

        def fn(name, *extra):
            return cgutils.get_or_insert_function(mod, ir.FunctionType(_V4, [_V4, _V4, *extra]), f"llvm.x86.{name}")

        rnds4, nexte, msg1, msg2 = fn("sha1rnds4", _I8), fn("sha1nexte"), fn("sha1msg1"), fn("sha1msg2")
        h = [builder.load(builder.gep(state, [ir.Constant(_I32, i)])) for i in range(5)]
        abcd0 = ir.Constant(_V4, ir.Undefined)
        for lane, v in enumerate((h[3], h[2], h[1], h[0])):
            abcd0 = builder.insert_element(abcd0, v, ir.Constant(_I32, lane))
        e0 = builder.insert_element(ir.Constant(_V4, [0, 0, 0, 0]), h[4], ir.Constant(_I32, 3))
        v16 = ir.VectorType(_I8, 16)
        reverse = ir.Constant(ir.VectorType(_I32, 16), list(range(15, -1, -1)))  # byte swap + lane order
        w = []
        for i in range(4):
            raw = builder.load(builder.bitcast(builder.gep(block, [ir.Constant(_I64, 16 * i)]), v16.as_pointer()), align=1)
            w.append(builder.bitcast(builder.shuffle_vector(raw, raw, reverse), _V4))
        for i in range(4, 20):
            w.append(builder.call(msg2, [builder.xor(builder.call(msg1, [w[i - 4], w[i - 3]]), w[i - 2]), w[i - 1]]))
        abcd, before = abcd0, abcd0
        for i in range(20):
            e = builder.add(e0, w[0]) if i == 0 else builder.call(nexte, [before, w[i]])
            before = abcd
            abcd = builder.call(rnds4, [abcd, e, ir.Constant(_I8, i // 5)])
        e_out = builder.call(nexte, [before, e0])  # rotl(A of round 76, 30) + E: the E after round 80
        abcd = builder.add(abcd, abcd0)
        for lane in range(4):
            builder.store(builder.extract_element(abcd, ir.Constant(_I32, lane)),
                          builder.gep(state, [ir.Constant(_I32, 3 - lane)]))
        builder.store(builder.extract_element(e_out, ir.Constant(_I32, 3)), builder.gep(state, [ir.Constant(_I32, 4)]))
        return context.get_dummy_value()

    return sig, codegen


# ---------------------------------------------------------------- shingles and signatures


@intrinsic
def _pad_block(typingctx, src, pos, copy, mark, bitlen, dst):
    """dst[0:64] = one padded SHA-1 block, built in a vector register and stored at once.

    Byte i is src[pos + i] for i < copy, 0x80 at i == mark, the big-endian `bitlen` in bytes 56-63
    when bitlen != 0, else 0. Reads src[pos:pos+64] whatever `copy` is, so needs pos + 64 <= len(src).
    Copying the shingle's last bytes one at a time and writing the length byte by byte cost as much
    as the SHA-NI compress (and the 16-byte loads of mixed byte stores stall store forwarding).
    """
    sig = types.void(src, pos, copy, mark, bitlen, dst)

    def codegen(context, builder, signature, args):
        src_t, dst_t = signature.args[0], signature.args[5]
        v64, idx64 = ir.VectorType(_I8, 64), ir.VectorType(_I32, 64)
        data = context.make_array(src_t)(context, builder, args[0]).data
        out = context.make_array(dst_t)(context, builder, args[5]).data
        raw = builder.load(builder.bitcast(builder.gep(data, [args[1]]), v64.as_pointer()), align=1)
        lanes = ir.Constant(v64, list(range(64)))

        def splat(x):
            one = builder.insert_element(ir.Constant(ir.VectorType(x.type, 64), ir.Undefined), x, ir.Constant(_I32, 0))
            return builder.shuffle_vector(one, ir.Constant(one.type, ir.Undefined), ir.Constant(idx64, [0] * 64))

        def byte(x):  # an i64 in [-1, 64]: -1 becomes 255, which no lane equals
            return builder.trunc(x, _I8)

        zero = ir.Constant(v64, [0] * 64)
        block = builder.select(builder.icmp_unsigned("==", lanes, splat(byte(args[3]))), ir.Constant(v64, [0x80] * 64), zero)
        bitlen = args[4]
        bswap = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I64, [_I64]), "llvm.bswap.i64")
        length8 = builder.bitcast(builder.call(bswap, [bitlen]), ir.VectorType(_I8, 8))
        length = builder.shuffle_vector(length8, ir.Constant(length8.type, ir.Undefined),
                                        ir.Constant(idx64, [0] * 56 + list(range(8))))
        in_tail = builder.and_(builder.icmp_unsigned(">=", lanes, ir.Constant(v64, [56] * 64)),
                               splat(builder.icmp_unsigned("!=", bitlen, ir.Constant(_I64, 0))))
        block = builder.select(in_tail, length, block)
        block = builder.select(builder.icmp_unsigned("<", lanes, splat(byte(args[2]))), raw, block)
        builder.store(block, builder.bitcast(out, v64.as_pointer()), align=1)
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=True, inline="always")
def _pad(buf, start, end, full, tail):
    """SHA-1 padding of buf[start:end] after its `full` whole blocks into `tail`; returns its block count."""
    length = end - start
    pos = start + 64 * full
    rem = length - 64 * full
    bitlen = np.int64(length) * 8
    ntail = 1 if rem < 56 else 2
    if pos + 64 <= buf.shape[0]:
        if ntail == 1:
            _pad_block(buf, pos, rem, rem, bitlen, tail)
        else:
            _pad_block(buf, pos, rem, rem, np.int64(0), tail)
            _pad_block(buf, pos, np.int64(0), np.int64(-1), bitlen, tail[64:])
    else:  # the batch's last bytes: byte by byte
        for i in range(rem):
            tail[i] = buf[pos + i]
        tail[rem] = 0x80
        for i in range(rem + 1, 64 * ntail - 8):
            tail[i] = 0
        for i in range(8):
            tail[64 * ntail - 1 - i] = np.uint8((bitlen >> (8 * i)) & 0xFF)
    return ntail


@numba.njit(cache=True, inline="always")
def _init(st):
    st[0], st[1], st[2], st[3], st[4] = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0


@numba.njit(cache=True, inline="always")
def _finish(h0):
    """datasketch's value of a shingle: digest[:4] (h0 big-endian) read little-endian, then fmix32."""
    h = np.uint32(((h0 & np.uint32(0xFF)) << np.uint32(24)) | ((h0 & np.uint32(0xFF00)) << np.uint32(8))
                  | ((h0 >> np.uint32(8)) & np.uint32(0xFF00)) | (h0 >> np.uint32(24)))
    h ^= h >> np.uint32(16)
    h = np.uint32(h * np.uint32(0x85EBCA6B))
    h ^= h >> np.uint32(13)
    h = np.uint32(h * np.uint32(0xC2B2AE35))
    return np.uint32(h ^ (h >> np.uint32(16)))


@numba.njit(cache=True)
def _sha1_32(buf, start, end, st, w, tail):
    """fmix32 of datasketch's sha1_hash32 of buf[start:end], portable SHA-1."""
    _init(st)
    full = (end - start) // 64
    for blk in range(full):
        _compress(buf, start + 64 * blk, st, w)
    for blk in range(_pad(buf, start, end, full, tail)):
        _compress(tail, 64 * blk, st, w)
    return _finish(st[0])


@numba.njit(cache=True)
def _sha1_32_ni(buf, start, end, st, w, tail):
    """fmix32 of datasketch's sha1_hash32 of buf[start:end], SHA extensions."""
    _init(st)
    full = (end - start) // 64
    for blk in range(full):
        _compress_ni(buf, start + 64 * blk, st)
    for blk in range(_pad(buf, start, end, full, tail)):
        _compress_ni(tail, 64 * blk, st)
    return _finish(st[0])


@numba.njit(cache=True, inline="always")
def _word_starts(data, lo, hi, starts):
    """Start offsets of the words of data[lo:hi] into `starts` (grown first if it may be too small).

    Normalised text has one space between words and none at the ends, so it has at most
    (hi - lo + 1) // 2 words; sizing for that up front keeps the scan free of capacity checks.
    """
    most = (hi - lo + 1) // 2
    if starts.shape[0] < most:
        starts = np.empty(max(most, 2 * starts.shape[0]), dtype=np.int64)
    starts[0] = lo
    nwords = 1
    for i in range(lo, hi - 1):
        if data[i] == 32:
            starts[nwords] = i + 1
            nwords += 1
    return starts, nwords


@numba.njit(cache=True, inline="always")
def _fold(row, a, b, hv):
    for k in range(a.shape[0]):  # uint32 operands: LLVM vectorises this (vpmulld, vpminud)
        row[k] = min(row[k], np.uint32(a[k] * hv + b[k]))


@numba.njit(cache=True)
def _signatures(data, offsets, ngram, a, b, out):
    """Fill out[d] with the signature of document d: data[offsets[d]:offsets[d+1]] is its normalised text.

    Returns the number of shingles per document (0 for an empty document, whose row stays all-max).
    The `_ni` twin below differs only in the SHA-1 call; they are two functions so that the SHA
    instructions are never compiled on a CPU without them.
    """
    counts = np.zeros(offsets.shape[0] - 1, dtype=np.int64)
    st, w, tail = np.zeros(5, np.uint32), np.zeros(80, np.uint32), np.zeros(128, np.uint8)
    starts = np.empty(64, dtype=np.int64)
    for d in range(counts.shape[0]):
        lo, hi = offsets[d], offsets[d + 1]
        if hi > lo:
            starts, nwords = _word_starts(data, lo, hi, starts)
            counts[d] = max(nwords - ngram + 1, 1)
            for s in range(counts[d]):
                end = hi if s + ngram >= nwords else starts[s + ngram] - 1
                _fold(out[d], a, b, _sha1_32(data, starts[s], end, st, w, tail))
    return counts


@numba.njit(cache=True)
def _signatures_ni(data, offsets, ngram, a, b, out):
    """`_signatures` with `_sha1_32_ni`."""
    counts = np.zeros(offsets.shape[0] - 1, dtype=np.int64)
    st, w, tail = np.zeros(5, np.uint32), np.zeros(80, np.uint32), np.zeros(128, np.uint8)
    starts = np.empty(64, dtype=np.int64)
    for d in range(counts.shape[0]):
        lo, hi = offsets[d], offsets[d + 1]
        if hi > lo:
            starts, nwords = _word_starts(data, lo, hi, starts)
            counts[d] = max(nwords - ngram + 1, 1)
            for s in range(counts[d]):
                end = hi if s + ngram >= nwords else starts[s + ngram] - 1
                _fold(out[d], a, b, _sha1_32_ni(data, starts[s], end, st, w, tail))
    return counts


def signatures_of_match_form(data: np.ndarray, offsets: np.ndarray, num_perm: int = 112, seed: int = 1, ngram: int = 5,
                          perms: tuple[np.ndarray, np.ndarray] | None = None,
                          impl: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`signatures` of text already normalised by `match_form_batch` (its bytes and offsets)."""
    impl = impl or implementation()
    if impl not in IMPLEMENTATIONS:
        raise ValueError(f"impl must be one of {IMPLEMENTATIONS}; got {impl!r}")
    if impl == "sha-ni" and not has_sha_ni():
        raise ValueError("impl='sha-ni' needs a CPU with the SHA extensions (or PENEIRA_SHA_NI is 0)")
    a, b = perms if perms is not None else permutations(num_perm, seed)
    out = np.full((len(offsets) - 1, len(a)), 0xFFFFFFFF, dtype=np.uint32)
    kernel = _signatures_ni if impl == "sha-ni" else _signatures
    counts = kernel(data, offsets, ngram, a, b, out)
    return out, counts


def signatures(texts: list[str], num_perm: int = 112, seed: int = 1, ngram: int = 5,
               perms: tuple[np.ndarray, np.ndarray] | None = None,
               impl: str | None = None, langs: list[str | None] | None = None,
               default_lang: str = "en") -> tuple[np.ndarray, np.ndarray]:
    """Signatures (len(texts), num_perm) uint32 and shingle counts for raw texts.

    Equal to `datasketch.MinHash(num_perm, seed)` updated with `text.shingles(t, ngram, lang)`; documents
    with no word get an all-0xFFFFFFFF row and a count of 0 (datasketch's empty sketch). `impl`
    ("sha-ni" or "portable"; default `implementation()`) only changes the speed. `langs` (else `default_lang`):
    each document's language, whose words `text.spaced` gives where the language does not space them.
    """
    data, offsets = match_form_batch(spaced(texts, langs, default_lang))
    return signatures_of_match_form(data, offsets, num_perm, seed, ngram, perms, impl)


# ------------------------------------------------------------------ the "fast" scheme (not datasketch's values)

SCHEMES = ("datasketch", "fast")
FAST_VERSION = 2  # of the fast scheme's values: 1 hashed words with FNV-1a; 2 by 8-byte pieces (`_word_hashes`)
_K0, _K1, _K2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9)
_POSITION = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                      0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x27D4EB2F165667C5, 0x85EBCA77C2B2AE63],
                     dtype=np.uint64)  # odd multipliers, one per word position in a shingle (ngram <= 8)
_LOW = np.array([(1 << 8 * min(n, 8)) - 1 for n in range(17)], dtype=np.uint64)  # a word's first 8 bytes, by length
_HIGH = np.array([(1 << 8 * min(max(n - 8, 0), 8)) - 1 for n in range(17)], dtype=np.uint64)  # its next 8
_CHUNK = 32  # bytes folded at once by `_fold32`
_SLACK = 64  # bytes past a document's folded text that the loads may touch


MARK, COMPOSER = 5, 6  # kinds of `_fast_tables` only: a character that NFKC leaves alone where its neighbours allow
_JAMO = re.compile("[\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff]")  # composed by Hangul's own rule, not by pairs


@kept_on_disk
def _fast_tables() -> tuple[np.ndarray, ...]:
    """`text._tables` (kind, start, pool_cp, pool_cls, ascii_out) for the fast scheme, with the kind MARK for the
    PYTHON-kind characters that NFKC and `str.lower` leave as they are wherever no reordering can happen: combining
    marks (canonical combining class > 0, of class WORD) that decompose to nothing else, are their own lowercase
    and are never a second part of a composition (`text.second_parts`), like the viramas of Indic scripts and
    Myanmar's or Thai's tone marks. So NFKC of x + m is NFKC(x) + m when the combining class of m is at least that
    of the last character of NFKC(x) (`tail`: 0 for a starter), since canonical ordering then moves nothing and
    m composes with nothing; `_fold_text` and `_stretches` check that, and send a mark that fails it to Python.
    And the kind COMPOSER for the starters among them that are a second part of a composition (Tamil's `ா`,
    Myanmar's `ီ`): NFKC of p + c is NFKC(p) + c unless p may compose with c (`_pairs`) or is MAPPED, PYTHON or
    a COMPOSER refused itself (`_composes`, which looks at the character before c). A document of Myanmar,
    Tamil or Hindi then folds without Python. Returned: `text._tables`' five with those kinds, then `tail`
    (that combining class of each MARK, and for each MAPPED code point the combining class of the last character
    of its replacement, 0 elsewhere) and `pairs` (`_pairs`)."""
    kind, start, pool_cp, pool_cls, ascii_out = _tables()
    kind = kind.copy()
    later, classes = second_parts(), char_classes()
    tail = np.zeros(0x110000, dtype=np.uint8)
    for cp in np.flatnonzero(kind == PYTHON).tolist():
        c = chr(cp)
        ccc = unicodedata.combining(c)
        plain = classes[cp] == WORD and unicodedata.normalize("NFKD", c) == c and c.lower() == c
        if plain and ccc and c not in later:
            kind[cp], tail[cp] = MARK, ccc
        elif plain and not ccc and not _JAMO.fullmatch(c):
            kind[cp] = COMPOSER
    for cp in np.flatnonzero(kind == MAPPED).tolist():
        if start[cp + 1] > start[cp]:
            tail[cp] = unicodedata.combining(chr(pool_cp[start[cp + 1] - 1]))
    return kind, start, pool_cp, pool_cls, ascii_out, tail, _pairs(kind)


def _pairs(kind: np.ndarray) -> np.ndarray:
    """Sorted keys p * 0x110000 + c of the characters p after which a COMPOSER c may compose: p is the first part
    of a canonical decomposition whose second is c, or the last character of p's NFD is."""
    canonical = {}
    for ch in _assigned():
        parts = unicodedata.decomposition(ch).split()
        if parts and not parts[0].startswith("<"):
            canonical[ord(ch)] = [int(x, 16) for x in parts]
    first: dict[int, set[int]] = {}
    for parts in canonical.values():
        if len(parts) == 2 and kind[parts[1]] == COMPOSER:
            first.setdefault(parts[1], set()).add(parts[0])
    keys = {p * 0x110000 + c for c, ps in first.items() for p in ps}
    for p in canonical:
        end = ord(unicodedata.normalize("NFD", chr(p))[-1])
        keys |= {p * 0x110000 + c for c, ps in first.items() if end in ps}
    return np.array(sorted(keys), dtype=np.int64)


@intrinsic
def _fold32(typingctx, src, pos, dst, at):
    """dst[at:at + 32] = the match form of src[pos:pos + 32] where those bytes are ASCII (`text._tables`' ascii_out
    in vector form: a letter lowercased, a digit `0`, anything else a separator, 0); returns the word-byte mask
    (bit t: byte t is a letter or digit) in the high 32 bits and the non-ASCII mask in the low 32 (movemasks)."""
    sig = types.uint64(src, pos, dst, at)

    def codegen(context, builder, signature, args):
        vec = ir.VectorType(_I8, _CHUNK)
        src_p = context.make_array(signature.args[0])(context, builder, args[0]).data
        dst_p = context.make_array(signature.args[2])(context, builder, args[2]).data
        x = builder.load(builder.bitcast(builder.gep(src_p, [args[1]]), vec.as_pointer()), align=1)

        def splat(n):
            return ir.Constant(vec, [n] * _CHUNK)

        low = builder.or_(x, splat(0x20))
        letter = builder.icmp_unsigned("<", builder.sub(low, splat(ord("a"))), splat(26))
        digit = builder.icmp_unsigned("<", builder.sub(x, splat(ord("0"))), splat(10))
        out = builder.select(letter, low, builder.select(digit, splat(ord("0")), splat(0)))
        builder.store(out, builder.bitcast(builder.gep(dst_p, [args[3]]), vec.as_pointer()), align=1)
        mask = ir.IntType(_CHUNK)
        word = builder.zext(builder.bitcast(builder.or_(letter, digit), mask), _I64)
        high = builder.zext(builder.bitcast(builder.icmp_signed("<", x, splat(0)), mask), _I64)
        return builder.or_(builder.shl(word, ir.Constant(_I64, 32)), high)

    return sig, codegen


@intrinsic
def _cttz(typingctx, x):
    """Trailing zero bits of a uint64 that is not 0 (`llvm.cttz`: tzcnt / bsf)."""
    sig = types.uint64(x)

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return sig, codegen


@intrinsic
def _load64(typingctx, src, pos):
    """The 8 bytes src[pos:pos + 8] as a little-endian uint64 (an unaligned load; x86 and ARM are little-endian,
    and `fast_signatures` refuses other byte orders)."""
    sig = types.uint64(src, pos)

    def codegen(context, builder, signature, args):
        base = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.load(builder.bitcast(builder.gep(base, [args[1]]), _I64.as_pointer()), align=1)

    return sig, codegen


@numba.njit(cache=True, inline="always")
def _fmix64(h):
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


@numba.njit(cache=True, inline="always")
def _put_utf8(buf, j, c):
    """Code point c's UTF-8 bytes at buf[j:]; returns the position after them."""
    if c < 0x80:
        buf[j] = c
        return j + 1
    if c < 0x800:
        buf[j], buf[j + 1] = 0xC0 | (c >> 6), 0x80 | (c & 0x3F)
        return j + 2
    if c < 0x10000:
        buf[j], buf[j + 1], buf[j + 2] = 0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)
        return j + 3
    buf[j], buf[j + 1] = 0xF0 | (c >> 18), 0x80 | ((c >> 12) & 0x3F)
    buf[j + 2], buf[j + 3] = 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)
    return j + 4


@numba.njit(cache=True, inline="always")
def _decode(data, i):
    """The code point of the UTF-8 character at data[i] and its size in bytes."""
    b0 = data[i]
    if b0 < 0x80:
        return np.int64(b0), 1
    if b0 < 0xE0:
        return ((np.int64(b0) & 0x1F) << 6) | (data[i + 1] & 0x3F), 2
    if b0 < 0xF0:
        return ((np.int64(b0) & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (data[i + 2] & 0x3F), 3
    cp = ((np.int64(b0) & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12)
    return cp | ((np.int64(data[i + 2]) & 0x3F) << 6) | (data[i + 3] & 0x3F), 4


@numba.njit(cache=True, inline="always")
def _composes(data, first, i, c, kind, pairs):
    """Whether the COMPOSER c at data[i] may compose with the character before it (none before `first`, where
    its document starts): a MARK between them blocks that, a MAPPED or PYTHON one may, others by `pairs`."""
    if i == first:
        return False
    q = i - 1
    while data[q] & 0xC0 == 0x80:
        q -= 1
    p = _decode(data, q)[0]
    k = kind[p]
    if k == 5:
        return False
    if k == 3 or k == 4:
        return True
    key = p * 0x110000 + c
    at = np.searchsorted(pairs, key)
    return at < pairs.shape[0] and pairs[at] == key


@numba.njit(cache=True, inline="always")
def _insert_mark(data, i, size, buf, j, tail):
    """The MARK at data[i:i + size] written into buf[:j] where NFKC's canonical ordering puts it: before the
    characters at the end of buf whose combining class (`tail`; only MARKs there, `_fold_text` checks) is higher
    than its own, after the others (a stable sort by class). Returns the new end of buf."""
    c = tail[_decode(data, i)[0]]
    q = j
    while q > 0:
        r = q - 1
        while buf[r] & 0xC0 == 0x80:
            r -= 1
        if tail[_decode(buf, r)[0]] <= c:
            break
        q = r
    for t in range(j - 1, q - 1, -1):
        buf[t + size] = buf[t]
    for t in range(size):
        buf[q + t] = data[i + t]
    return j + size


@numba.njit(cache=True, inline="never")
def _fold_text(data, i, hi, kind, start, pool_cp, pool_cls, ascii_out, tail, pairs, first, buf, j, bounds, nb,
               rest):
    """Fold data[i:hi] to its match form into buf from j on, as `text._fold` does (ASCII by `ascii_out`; other code
    points by kind: SEP, WORD kept, DIGIT `0`, MAPPED to the pool's code points), and note where each word starts
    and ends in buf: bounds[2k], bounds[2k + 1] for word k, nb the number noted so far (odd: inside a word). Both
    carry in and out, so a text may be folded in pieces. With `text.char_classes()` as `kind` the text is taken as
    NFKC'd and lowercased already. Returns (i, j, nb); i is -1 when the text holds a character that only Python's
    NFKC handles (`text._tables`' PYTHON kind, or a MARK or a COMPOSER that its neighbours change: see
    `_fast_tables`; `first` is where the document starts), -2 when a MAPPED code point would not fit in buf. `rest` is the number
    of bytes of the pieces still to fold after this one: on entry len(buf) >= j + (hi - i) + rest + _SLACK must hold,
    and it still holds on return, since every character but a MAPPED one (checked) folds to no more bytes than it
    has; so the 32-byte stores and the 8-byte loads past a word never leave buf.

    32 ASCII bytes at a time go through `_fold32`, whose word mask gives the bytes where a word starts or ends;
    at the first other byte of a chunk, that character goes through the per-character code below."""
    last = 0  # the combining class of the last character folded (`tail`)
    mapped_tail = False  # whether the last starter was MAPPED to text that ends in a combining mark
    while i < hi:
        b0 = data[i]
        if b0 < 0x80 and i + _CHUNK <= hi:  # then at least this byte is folded by the vector code
            r = _fold32(data, i, buf, j)
            p = np.int64(_cttz((r & np.uint64(0xFFFFFFFF)) | np.uint64(1 << _CHUNK)))  # ASCII bytes before another
            word = r >> np.uint64(32)
            edges = word ^ ((word << np.uint64(1)) | np.uint64(nb & 1))  # bits where word-ness changes
            edges &= (np.uint64(1) << np.uint64(p)) - np.uint64(1)
            while edges:
                bounds[nb] = j + np.int64(_cttz(edges))
                nb += 1
                edges &= edges - np.uint64(1)
            i += p
            j += p
            last, mapped_tail = 0, False
            continue
        if b0 < 0x80:
            last, mapped_tail = 0, False
            m = ascii_out[b0]
            buf[j] = m
            bounds[nb] = j
            nb += (nb & 1) ^ np.int64(m != 0)  # an edge where the byte's word-ness differs from the state's
            i += 1
            j += 1
            continue
        cp, size = _decode(data, i)
        k = kind[cp]
        if k == 5:  # MARK: kept as a WORD character, moved before the MARKs of higher class just before it
            if last > tail[cp]:
                if mapped_tail:
                    return -1, j, nb
                j = _insert_mark(data, i, size, buf, j, tail)
                i += size
                continue
            k = 1
        elif k == 6:  # COMPOSER: kept as a WORD character where it composes with nothing
            if _composes(data, first, i, cp, kind, pairs):
                return -1, j, nb
            k = 1
        if k == 4:  # text.PYTHON
            return -1, j, nb
        if kind[cp] != 5:
            mapped_tail = k == 3 and tail[cp] > 0
        last = tail[cp]
        if k == 3:  # text.MAPPED: its pool entries, each a separator, a digit or a code point of a word
            if j + 4 * (start[cp + 1] - start[cp]) + (hi - i) + rest + _SLACK > buf.shape[0]:
                return -2, j, nb
            for q in range(start[cp], start[cp + 1]):
                if (pool_cls[q] == 0) == ((nb & 1) == 1):  # an edge
                    bounds[nb] = j
                    nb += 1
                if pool_cls[q] == 2:
                    buf[j] = 48
                    j += 1
                elif pool_cls[q] != 0:
                    j = _put_utf8(buf, j, pool_cp[q])
        else:  # SEP (0), WORD (1), DIGIT (2)
            if (k == 0) == ((nb & 1) == 1):
                bounds[nb] = j
                nb += 1
            if k == 2:
                buf[j] = 48
                j += 1
            elif k == 1:
                for q in range(size):
                    buf[j + q] = data[i + q]
                j += size
        i += size
    return i, j, nb


@numba.njit(cache=True, inline="always")
def _word_hashes(buf, bounds, nw, wh):
    """Each word's 64-bit hash into wh: for a word of n bytes whose little-endian 8-byte pieces are c0, c1, ...
    (the last one padded with zero bytes; c1 = 0 when n <= 8), h = ((n K0) ^ c0) K1 + (c1 ^ K0) K2, then
    h = (rotl(h, 31) ^ ci) K1 for each further piece, and the hash is fmix64(h) (all mod 2^64). The two first pieces
    are multiplied independently, so that words of up to 16 bytes, nearly all of them, hash without a loop or a
    chain of multiplications, and words of different hashes' work overlap."""
    for k in range(nw):
        s, e = bounds[2 * k], bounds[2 * k + 1]
        n = e - s
        m = min(n, 16)
        h = ((np.uint64(n) * _K0) ^ (_load64(buf, s) & _LOW[m])) * _K1
        h += ((_load64(buf, s + 8) & _HIGH[m]) ^ _K0) * _K2
        p = s + 16
        while p < e:
            r = min(e - p, 8)
            piece = _load64(buf, p) & _LOW[r]
            h = (((h << np.uint64(31)) | (h >> np.uint64(33))) ^ piece) * _K1
            p += 8
        wh[k] = _fmix64(h)


def _min_affine_kernel(groups: int):
    """An intrinsic `kernel(hv, ns, a, b, k0, low)`: low[t] = min over s < ns of a[k0 + t] hv[s] + b[k0 + t] mod 2^32
    for t < 16 groups, the 16 groups lanes of minima held in vector registers across the loop over the shingles
    (one broadcast, then a multiply, an add and a min per 16 permutations), which LLVM's own vectorisation of the
    loop over shingles per permutation does not do: it reduces each permutation's vector of minima to one number,
    and reads the shingle hashes again for every permutation."""

    @intrinsic
    def kernel(typingctx, hv, ns, a, b, k0, low):
        sig = types.void(hv, ns, a, b, k0, low)

        def codegen(context, builder, signature, args):
            v16 = ir.VectorType(_I32, 16)
            hv_p, a_p, b_p, low_p = (context.make_array(signature.args[n])(context, builder, args[n]).data
                                     for n in (0, 2, 3, 5))

            def at(ptr, n):
                return builder.bitcast(builder.gep(ptr, [n]), v16.as_pointer())

            offs = [builder.add(args[4], ir.Constant(_I64, 16 * g)) for g in range(groups)]
            av = [builder.load(at(a_p, o), align=4) for o in offs]
            bv = [builder.load(at(b_p, o), align=4) for o in offs]
            entry = builder.block
            head, body, done = (builder.append_basic_block(f"min_affine.{n}") for n in ("head", "body", "done"))
            builder.branch(head)
            builder.position_at_end(head)
            s = builder.phi(_I64)
            lows = [builder.phi(v16) for _ in range(groups)]
            s.add_incoming(ir.Constant(_I64, 0), entry)
            for low in lows:
                low.add_incoming(ir.Constant(v16, [0xFFFFFFFF] * 16), entry)
            builder.cbranch(builder.icmp_signed("<", s, args[1]), body, done)
            builder.position_at_end(body)
            one = builder.insert_element(ir.Constant(v16, ir.Undefined), builder.load(builder.gep(hv_p, [s])),
                                         ir.Constant(_I32, 0))
            h = builder.shuffle_vector(one, ir.Constant(v16, ir.Undefined), ir.Constant(v16, [0] * 16))
            for g in range(groups):
                v = builder.add(builder.mul(av[g], h), bv[g])
                lows[g].add_incoming(builder.select(builder.icmp_unsigned("<", v, lows[g]), v, lows[g]), body)
            s.add_incoming(builder.add(s, ir.Constant(_I64, 1)), body)
            builder.branch(head)
            builder.position_at_end(done)
            for g in range(groups):
                builder.store(lows[g], at(low_p, ir.Constant(_I64, 16 * g)), align=4)
            return context.get_dummy_value()

        return sig, codegen

    return kernel


_min1, _min2, _min3, _min4, _min5, _min6, _min7, _min8 = (_min_affine_kernel(g) for g in range(1, 9))


@numba.njit(cache=True, inline="always")
def _min_affine(hv, ns, a, b, row, low):
    """row[k] = min over s < ns of a[k] hv[s] + b[k] mod 2^32, for k < len(row); a and b padded to a multiple of 16
    (`_padded`). Up to 128 permutations per pass over hv, each pass one `_min_affine_kernel`."""
    nk = row.shape[0]
    for k0 in range(0, a.shape[0], 128):
        g = min((a.shape[0] - k0) // 16, 8)
        if g == 8:
            _min8(hv, ns, a, b, k0, low)
        elif g == 7:
            _min7(hv, ns, a, b, k0, low)
        elif g == 6:
            _min6(hv, ns, a, b, k0, low)
        elif g == 5:
            _min5(hv, ns, a, b, k0, low)
        elif g == 4:
            _min4(hv, ns, a, b, k0, low)
        elif g == 3:
            _min3(hv, ns, a, b, k0, low)
        elif g == 2:
            _min2(hv, ns, a, b, k0, low)
        else:
            _min1(hv, ns, a, b, k0, low)
        for t in range(min(16 * g, nk - k0)):
            row[k0 + t] = low[t]


def _padded(perms: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) padded to a multiple of 16 permutations with a = 0, b = 2^32 - 1, whose minimum is never read."""
    a, b = perms
    pad = (-len(a)) % 16
    return (np.concatenate([a, np.zeros(pad, np.uint32)]).astype(np.uint32),
            np.concatenate([b, np.full(pad, 0xFFFFFFFF, np.uint32)]).astype(np.uint32))


@numba.njit(cache=True, inline="always")
def _sign(wh, nw, ngram, pos, a, b, hx, hv, row, low):
    """A document's signature from its nw word hashes into row; returns its shingle count. A shingle's hash is the
    high 32 bits of fmix64 of the sum of its word hashes times a multiplier per position, so each word is read
    once however many shingles hold it, position by position over all shingles (vectorised); the min over the
    permutations is `_min_affine`'s, a and b padded (`_padded`), low its scratch of 128."""
    ns = max(nw - ngram + 1, 1)
    for s in range(ns):
        hx[s] = wh[s] * pos[0]
    for j in range(1, min(ngram, nw)):  # position by position, so that each loop runs over shingles, vectorised
        pj = pos[j]
        for s in range(ns):
            hx[s] += wh[s + j] * pj
    for s in range(ns):
        hv[s] = np.uint32(_fmix64(hx[s]) >> np.uint64(32))
    _min_affine(hv, ns, a, b, row, low)
    return ns


@numba.njit(cache=True)
def _scratch(size):
    """The folded text's bytes, word bounds, word hashes, shingle sums and shingle hashes of a document folding to
    `size` bytes."""
    half = size // 2 + 2
    return (np.empty(size, dtype=np.uint8), np.empty(size + 2, dtype=np.int64), np.empty(half, dtype=np.uint64),
            np.empty(half, dtype=np.uint64), np.empty(half, dtype=np.uint32))


@numba.njit(cache=True, inline="never")
def _sign_doc(buf, j, bounds, nb, wh, hx, hv, low, ngram, pos, a, b, row):
    """Close the last word, hash the words and sign the document into row; returns its shingle count (0: no word)."""
    if nb & 1:
        bounds[nb] = j
        nb += 1
    if nb == 0:
        return 0
    _word_hashes(buf, bounds, nb // 2, wh)
    return _sign(wh, nb // 2, ngram, pos, a, b, hx, hv, row, low)


@numba.njit(cache=True)
def _fast(data, offsets, kind, start, pool_cp, pool_cls, ascii_out, tail, pairs, ngram, pos, a, b, out, counts):
    """The "fast" scheme's signature of each document d into out[d] and its shingle count into counts[d] (-1, row
    left alone, for a document that needs Python's NFKC first). The scratch arrays grow to the largest document
    (twice its bytes, more only where MAPPED code points expand), and are reused."""
    if a.shape[0] % 16 or b.shape[0] != a.shape[0]:  # the vector minima read 16 permutations at a time
        raise ValueError("the permutations must be padded to a multiple of 16 (_padded)")
    buf, bounds, wh, hx, hv = _scratch(4096)
    low = np.empty(128, dtype=np.uint32)  # a pass's minima (`_min_affine`)
    for d in range(offsets.shape[0] - 1):
        lo, hi = offsets[d], offsets[d + 1]
        need = 2 * (hi - lo) + _SLACK
        while True:
            if buf.shape[0] < need:
                buf, bounds, wh, hx, hv = _scratch(need)
            i, j, nb = _fold_text(data, lo, hi, kind, start, pool_cp, pool_cls, ascii_out, tail, pairs, lo, buf, 0, bounds,
                                  0, 0)
            if i != -2:
                break
            need = 2 * buf.shape[0]
        counts[d] = -1 if i == -1 else _sign_doc(buf, j, bounds, nb, wh, hx, hv, low, ngram, pos, a, b, out[d])


@numba.njit(cache=True)
def _stretches(data, offsets, docs, kind, tail, pairs):
    """The stretches of documents `docs` that Python must NFKC: each run of characters that `_fold_text` refuses
    (PYTHON, or a MARK after a higher combining class: `_fast_tables`) from the last character before it that is
    not a MARK (a composition may join them across marks), with the MARKs after it (canonical ordering may move
    them), runs that touch merged. Everywhere else a character starts a normalisation segment (`text._tables`), so
    NFKC of the text is the stretches' NFKC with the rest, folded by the tables, in between. Returns their byte
    ranges in data (rows of `runs`, those of docs[r] at run_off[r]:run_off[r + 1]) and their bytes end to end,
    each followed by a NUL, docs[r]'s at text[text_off[r]:text_off[r + 1]]."""
    total = 0
    for d in docs:
        total += offsets[d + 1] - offsets[d]
    runs = np.empty((total // 2 + docs.shape[0], 2), dtype=np.int64)  # a run holds a non-ASCII character: >= 2 bytes
    run_off = np.zeros(docs.shape[0] + 1, dtype=np.int64)
    n = 0
    for r in range(docs.shape[0]):
        lo, hi = offsets[docs[r]], offsets[docs[r] + 1]
        i, anchor, last, mapped_tail = lo, lo, 0, False  # anchor: where the last non-MARK character before i starts
        while i < hi:
            cp, size = _decode(data, i)
            k, cls = 0, 0
            if size > 1:
                k, cls = kind[cp], np.int64(tail[cp])
            mark_refused = k == 5 and last > cls and (last == 255 or mapped_tail)
            if k == 4 or mark_refused or (k == 6 and (last == 255 or _composes(data, lo, i, cp, kind, pairs))):
                if n > run_off[r] and runs[n - 1, 1] >= anchor:
                    runs[n - 1, 1] = i + size
                else:
                    runs[n, 0], runs[n, 1] = anchor, i + size
                    n += 1
                last = 255  # what follows may reorder or compose with the stretch: MARKs join it
            elif k != 5:
                last, mapped_tail = cls, k == 3 and cls > 0
            else:
                last = max(last, cls)  # a MARK, moved before those of higher class (`_insert_mark`)
            if k != 5:
                anchor = i
            i += size
        run_off[r + 1] = n
    size = 0
    for q in range(n):
        size += runs[q, 1] - runs[q, 0] + 1
    text = np.empty(size, dtype=np.uint8)
    text_off = np.zeros(docs.shape[0] + 1, dtype=np.int64)
    m = 0
    for r in range(docs.shape[0]):
        for q in range(run_off[r], run_off[r + 1]):
            for j in range(runs[q, 0], runs[q, 1]):
                text[m] = data[j]
                m += 1
            text[m] = 0
            m += 1
        text_off[r + 1] = m
    return runs[:n], run_off, text, text_off


@numba.njit(cache=True, inline="always")
def _fold_mixed(data, lo, hi, runs, q0, q1, enc, e, e1, whole, kind, start, pool_cp, pool_cls, ascii_out, tail, pairs,
                classes,
                buf, bounds):
    """`_fold_text` of a document whose stretches runs[q0:q1] (byte ranges of data[lo:hi]) are taken from enc[e:e1]
    instead: their NFKC'd and lowercased text, separated by NUL bytes (or, when `whole`, one stretch: the whole
    document), folded by `classes`. Returns (status, j, nb) as `_fold_text` does (status -2: buf is too small)."""
    left = (hi - lo) + (e1 - e)  # an upper bound of the bytes still to fold
    i, j, nb = lo, 0, 0
    for q in range(q0, q1):
        left -= runs[q, 0] - i
        st, j, nb = _fold_text(data, i, runs[q, 0], kind, start, pool_cp, pool_cls, ascii_out, tail, pairs, lo, buf, j,
                               bounds, nb, left)
        if st == -1:  # `_stretches` and `_fold_text` disagree on what Python must normalise: a defect, never data
            raise RuntimeError("fast MinHash: a character that Python must normalise is outside every stretch")
        if st == -2:
            return st, j, nb
        pe = e1
        if not whole:
            pe = e
            while pe < e1 and enc[pe] != 0:
                pe += 1
        left -= pe - e
        _, j, nb = _fold_text(enc, e, pe, classes, start, pool_cp, pool_cls, ascii_out, tail, pairs, e, buf, j, bounds, nb,
                              left)
        e, i = pe + 1, runs[q, 1]
    st, j, nb = _fold_text(data, i, hi, kind, start, pool_cp, pool_cls, ascii_out, tail, pairs, lo, buf, j, bounds, nb, 0)
    if st == -1:
        raise RuntimeError("fast MinHash: a character that Python must normalise is outside every stretch")
    return min(st, 0), j, nb


@numba.njit(cache=True)
def _fast_mixed(data, offsets, docs, runs, run_off, enc, enc_off, whole, kind, start, pool_cp, pool_cls, ascii_out,
                tail, pairs, classes, ngram, pos, a, b, out, counts):
    """`_fast` for the documents `docs` that hold PYTHON-kind characters, document docs[r] folded by `_fold_mixed`
    with its stretches runs[run_off[r]:run_off[r + 1]] and their text enc[enc_off[r]:enc_off[r + 1]]."""
    if a.shape[0] % 16 or b.shape[0] != a.shape[0]:  # the vector minima read 16 permutations at a time
        raise ValueError("the permutations must be padded to a multiple of 16 (_padded)")
    buf, bounds, wh, hx, hv = _scratch(4096)
    low = np.empty(128, dtype=np.uint32)  # a pass's minima (`_min_affine`)
    for r in range(docs.shape[0]):
        d = docs[r]
        lo, hi = offsets[d], offsets[d + 1]
        need = 2 * ((hi - lo) + (enc_off[r + 1] - enc_off[r])) + _SLACK
        while True:
            if buf.shape[0] < need:
                buf, bounds, wh, hx, hv = _scratch(need)
            st, j, nb = _fold_mixed(data, lo, hi, runs, run_off[r], run_off[r + 1], enc, enc_off[r], enc_off[r + 1],
                                    whole[r], kind, start, pool_cp, pool_cls, ascii_out, tail, pairs, classes, buf,
                                    bounds)
            if st != -2:
                break
            need = 2 * buf.shape[0]
        counts[d] = _sign_doc(buf, j, bounds, nb, wh, hx, hv, low, ngram, pos, a, b, out[d])


def _nfkc_stretches(texts: list[str], data: np.ndarray, offsets: np.ndarray, docs: np.ndarray, kind: np.ndarray,
                    tail: np.ndarray, pairs: np.ndarray):
    """For `_fast_mixed`: each document's stretches that need Python's NFKC (`_stretches`) and their NFKC'd,
    lowercased UTF-8.

    NFKC is per stretch (NUL, a starter that nothing composes with, keeps them apart in one call per document);
    `str.lower` too, which is per character except for `Σ` (final sigma looks at its neighbours): a document whose
    stretches hold a `Σ` after NFKC, or that holds a NUL itself, is one stretch, the whole text, NFKC'd and
    lowercased as `text.match_form_batch`'s Python route does."""
    runs, run_off, text, text_off = _stretches(data, offsets, docs, kind, tail, pairs)
    whole, encs = np.zeros(len(docs), dtype=np.bool_), []
    for r, d in enumerate(docs.tolist()):
        t = texts[d]
        joined = None
        if "\x00" not in t:
            joined = unicodedata.normalize("NFKC", text[text_off[r]:text_off[r + 1] - 1].tobytes().decode("utf-8"))
        if joined is None or "\u03a3" in joined:
            joined, whole[r] = unicodedata.normalize("NFKC", t), True
        encs.append(joined.lower().encode("utf-8"))
    if whole.any():  # those documents' runs become one, the whole text
        parts = [np.array([[offsets[d], offsets[d + 1]]], dtype=np.int64) if w else runs[run_off[r]:run_off[r + 1]]
                 for r, (d, w) in enumerate(zip(docs.tolist(), whole.tolist(), strict=True))]
        runs, run_off = np.concatenate(parts), np.r_[0, np.cumsum([len(x) for x in parts])]
    enc_off = np.zeros(len(docs) + 1, dtype=np.int64)
    enc_off[1:] = np.cumsum([len(x) for x in encs])
    enc = np.frombuffer(b"".join(encs), dtype=np.uint8) if enc_off[-1] else np.zeros(1, np.uint8)
    return runs, run_off.astype(np.int64), enc, enc_off, whole


def _utf8_batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The texts' UTF-8 bytes end to end and their offsets, through one Arrow array (no Python loop)."""
    import pyarrow as pa

    arr = pa.array(texts, type=pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=len(arr) + 1) - arr.offset
    raw = arr.buffers()[2]
    return (np.frombuffer(raw, dtype=np.uint8) if raw is not None else np.zeros(0, np.uint8)), offsets


def fast_signatures(texts: list[str], num_perm: int = 112, seed: int = 1, ngram: int = 5,
                    perms: tuple[np.ndarray, np.ndarray] | None = None, langs: list[str | None] | None = None,
                    default_lang: str = "en") -> tuple[np.ndarray, np.ndarray]:
    """Signatures of the "fast" scheme: the same shingles (word n-grams of the match form, `text.shingles`) and the
    same permutations as `signatures`, but each shingle hashed from 64-bit word hashes instead of SHA-1, so the
    values differ from datasketch's while estimating the same Jaccard similarity. Each document is folded to its
    match form from `text`'s per-code-point tables, 32 ASCII bytes at a time (`_fold_text`), its words hashed by 8-byte
    pieces (`_word_hashes`) and signed (`_sign`); in a document with characters that need Python's NFKC in context
    (`text._tables`' PYTHON kind), only the stretches around them go through Python (`_nfkc_stretches`), and a
    second pass folds the rest from the tables and those from Python's text. `FAST_VERSION` names these values.
    A document in a language that does not space its words (`langs`, else `default_lang`) is folded from its words
    (`text.spaced`, ICU through `curate.lang`), every other one from its raw text as before."""
    texts = spaced(texts, langs, default_lang)
    if not 1 <= ngram <= len(_POSITION):
        raise ValueError(f"the fast scheme takes ngram 1..{len(_POSITION)}; got {ngram}")
    if sys.byteorder != "little":
        raise RuntimeError("the fast MinHash scheme reads words as little-endian 8-byte pieces; use scheme='datasketch'")
    perms = perms if perms is not None else permutations(num_perm, seed)
    out = np.full((len(texts), len(perms[0])), 0xFFFFFFFF, dtype=np.uint32)
    a, b = _padded(perms)
    counts = np.zeros(len(texts), dtype=np.int64)
    data, offsets = _utf8_batch(texts)
    kind, start, pool_cp, pool_cls, ascii_out, tail, pairs = _fast_tables()
    _fast(data, offsets, kind, start, pool_cp, pool_cls, ascii_out, tail, pairs, ngram, _POSITION, a, b, out, counts)
    rest = np.flatnonzero(counts < 0)
    if len(rest):
        runs, run_off, enc, enc_off, whole = _nfkc_stretches(texts, data, offsets, rest, kind, tail, pairs)
        _fast_mixed(data, offsets, rest, runs, run_off, enc, enc_off, whole, kind, start, pool_cp, pool_cls,
                    ascii_out, tail, pairs, char_classes(), ngram, _POSITION, a, b, out, counts)
    return out, counts


def signatures_by_scheme(texts: list[str], scheme: str = "datasketch", num_perm: int = 112, seed: int = 1,
                         ngram: int = 5, perms: tuple[np.ndarray, np.ndarray] | None = None,
                         langs: list[str | None] | None = None, default_lang: str = "en",
                         ) -> tuple[np.ndarray, np.ndarray]:
    """`signatures` (datasketch's values, bit for bit) or `fast_signatures`, by name (`SCHEMES`)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    fn = signatures if scheme == "datasketch" else fast_signatures
    return fn(texts, num_perm=num_perm, seed=seed, ngram=ngram, perms=perms, langs=langs, default_lang=default_lang)
