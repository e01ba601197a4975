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
import unicodedata
from functools import lru_cache

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from curate.dedup.text import _tables, char_classes, match_form_batch  # the match form's tables, shared

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
               impl: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Signatures (len(texts), num_perm) uint32 and shingle counts for raw texts.

    Equal to `datasketch.MinHash(num_perm, seed)` updated with `text.shingles(t, ngram)`; documents
    with no word get an all-0xFFFFFFFF row and a count of 0 (datasketch's empty sketch). `impl`
    ("sha-ni" or "portable"; default `implementation()`) only changes the speed.
    """
    data, offsets = match_form_batch(texts)
    return signatures_of_match_form(data, offsets, num_perm, seed, ngram, perms, impl)


# ------------------------------------------------------------------ the "fast" scheme (not datasketch's values)

SCHEMES = ("datasketch", "fast")
_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
_POSITION = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                      0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x27D4EB2F165667C5, 0x85EBCA77C2B2AE63],
                     dtype=np.uint64)  # odd multipliers, one per word position in a shingle (ngram <= 8)


@numba.njit(cache=True, inline="always")
def _fmix64(h):
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


@numba.njit(cache=True, inline="always")
def _feed(h, byte):
    return (h ^ np.uint64(byte)) * np.uint64(_FNV_PRIME)


@numba.njit(cache=True, inline="always")
def _feed_cp(h, cp):
    """FNV-1a of code point cp's UTF-8 bytes, fed one by one."""
    if cp < 0x80:
        return _feed(h, cp)
    if cp < 0x800:
        return _feed(_feed(h, 0xC0 | (cp >> 6)), 0x80 | (cp & 0x3F))
    if cp < 0x10000:
        return _feed(_feed(_feed(h, 0xE0 | (cp >> 12)), 0x80 | ((cp >> 6) & 0x3F)), 0x80 | (cp & 0x3F))
    h = _feed(_feed(h, 0xF0 | (cp >> 18)), 0x80 | ((cp >> 12) & 0x3F))
    return _feed(_feed(h, 0x80 | ((cp >> 6) & 0x3F)), 0x80 | (cp & 0x3F))


@numba.njit(cache=True, inline="always")
def _scan(data, i, hi, normed, kind, start, pool_cp, pool_cls, ascii_out, wh, nw, h, inword):
    """Word hashes (FNV-1a so far, not yet mixed) of data[i:hi] into wh from word nw on, carrying the word being
    hashed (h, inword) in and out: returns (nw, h, inword), nw -1 when the text holds a character that only
    Python's NFKC handles (`text._tables`' PYTHON kind). Raw text is folded to its match form here as `text._fold`
    does (ASCII by `ascii_out`; other code points by kind: SEP, WORD kept, DIGIT `0`, MAPPED to the pool's code
    points), but the bytes go into the word's hash instead of a buffer; with `text.char_classes()` as `kind` the
    text is taken as NFKC'd and lowercased already (only SEP, WORD, DIGIT); `normed` text is match form already
    (words of any bytes, one space between them)."""
    while i < hi:
        b0 = data[i]
        if normed or b0 < 0x80:  # without branches on the text: the word's hash so far is stored at every
            m = (0 if b0 == 32 else b0) if normed else ascii_out[b0]  # byte and kept only where a word ends
            wh[nw] = h
            nw += inword & (m == 0)
            h = _feed(h, m) if m != 0 else np.uint64(_FNV_OFFSET)
            inword = m != 0
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
        k = kind[cp]
        if k == 4:  # text.PYTHON
            return -1, h, inword
        if k == 3:  # text.MAPPED: its pool entries, each a separator, a digit or a code point of a word
            for j in range(start[cp], start[cp + 1]):
                if pool_cls[j] == 0:
                    if inword:
                        wh[nw], nw, h, inword = h, nw + 1, np.uint64(_FNV_OFFSET), False
                else:
                    h, inword = (_feed(h, 48) if pool_cls[j] == 2 else _feed_cp(h, pool_cp[j])), True
        elif k == 0:  # text.SEP
            if inword:
                wh[nw], nw, h, inword = h, nw + 1, np.uint64(_FNV_OFFSET), False
        elif k == 2:  # text.DIGIT
            h, inword = _feed(h, 48), True
        else:  # text.WORD: its own bytes
            for j in range(size):
                h = _feed(h, data[i + j])
            inword = True
        i += size
    return nw, h, inword


@numba.njit(cache=True, inline="always")
def _close(wh, nw, h, inword):
    """End the last word and mix every word's FNV-1a (fmix64); returns the number of words."""
    if inword:
        wh[nw], nw = h, nw + 1
    for j in range(nw):
        wh[j] = _fmix64(wh[j])
    return nw


@numba.njit(cache=True)
def _word_hashes(data, lo, hi, normed, kind, start, pool_cp, pool_cls, ascii_out, wh):
    """Hashes of the words of data[lo:hi] into wh (`_scan`, then `_close`); returns their number, or -1 when the
    text holds a character that only Python's NFKC handles."""
    nw, h, inword = _scan(data, lo, hi, normed, kind, start, pool_cp, pool_cls, ascii_out, wh, 0,
                          np.uint64(_FNV_OFFSET), False)
    if nw < 0:
        return -1
    return _close(wh, nw, h, inword)


@numba.njit(cache=True, inline="always")
def _all_ascii(doc):
    """Whether every byte of `doc` is ASCII (a loop LLVM vectorises)."""
    high = 0
    for t in range(doc.shape[0]):
        high |= doc[t]
    return high < 0x80


@numba.njit(cache=True, inline="never")
def _ascii2(da, db, ascii_out, wh, na, ha, wa, wh2, nb, hb, wb):
    """Two ASCII texts of the same length, each its own word state (words so far, hash so far, in a word: 0 or 1),
    hashed a byte of each per turn, so that the two FNV-1a chains (a multiply per byte, each waiting for the one
    before) overlap. Returns both states. A function of its own (never inlined) over slices indexed from a
    `range`: so numba adds no wraparound test per byte and the loop's state stays in registers (either undoes the
    overlap)."""
    for t in range(da.shape[0]):
        m = np.int64(ascii_out[da[t]])
        wh[na] = ha
        na += wa > m  # a word ends here: it was in one and m is a separator (0)
        ha = _feed(ha, m) if m != 0 else np.uint64(_FNV_OFFSET)
        wa = np.int64(m != 0)
        m2 = np.int64(ascii_out[db[t]])
        wh2[nb] = hb
        nb += wb > m2
        hb = _feed(hb, m2) if m2 != 0 else np.uint64(_FNV_OFFSET)
        wb = np.int64(m2 != 0)
    return na, ha, wa, nb, hb, wb


@numba.njit(cache=True)
def _word_hashes_ascii(data, lo, hi, kind, start, pool_cp, pool_cls, ascii_out, wh, wh2):
    """`_word_hashes` of an all-ASCII raw text, cut in two at a separator near its middle and both halves hashed
    at once (`_ascii2`); the second half's words go to wh2, then after the first's: the same words, the same
    hashes."""
    mid = lo + (hi - lo) // 2
    while mid < hi and ascii_out[data[mid]] != 0:
        mid += 1
    if mid >= hi:
        return _word_hashes(data, lo, hi, False, kind, start, pool_cp, pool_cls, ascii_out, wh)
    n = min(mid - lo, hi - mid)
    na, ha, wa, nb, hb, wb = _ascii2(data[lo:lo + n], data[mid:mid + n], ascii_out, wh, 0, np.uint64(_FNV_OFFSET), 0,
                                     wh2, 0, np.uint64(_FNV_OFFSET), 0)
    na, ha, ia = _scan(data, lo + n, mid, False, kind, start, pool_cp, pool_cls, ascii_out, wh, na, ha, wa != 0)
    nb, hb, ib = _scan(data, mid + n, hi, False, kind, start, pool_cp, pool_cls, ascii_out, wh2, nb, hb, wb != 0)
    if ia:  # the first half ends before a separator: so does its last word
        wh[na], na = ha, na + 1
    for k in range(nb):
        wh[na + k] = wh2[k]
    return _close(wh, na + nb, hb, ib)


@numba.njit(cache=True, inline="always")
def _sign(wh, nw, ngram, pos, a, b, hv, row):
    """A document's signature from its nw word hashes into row; returns its shingle count. A shingle's hash is the
    high 32 bits of fmix64 of the sum of its word hashes times a multiplier per position, so each word is read
    once however many shingles hold it; the min over the permutations runs per permutation over the document's
    shingle hashes, which LLVM vectorises."""
    ns = max(nw - ngram + 1, 1)
    for s in range(ns):
        x = np.uint64(0)
        for j in range(min(ngram, nw - s)):
            x += wh[s + j] * pos[j]
        hv[s] = np.uint32(_fmix64(x) >> np.uint64(32))
    for k in range(a.shape[0]):
        ak, bk, low = a[k], b[k], np.uint32(0xFFFFFFFF)
        for s in range(ns):
            v = np.uint32(ak * hv[s] + bk)
            low = v if v < low else low
        row[k] = low
    return ns


@numba.njit(cache=True)
def _fast(data, offsets, normed, kind, start, pool_cp, pool_cls, ascii_out, ngram, pos, a, b, out, rows, counts):
    """The "fast" scheme's signature of each document d into out[rows[d]] and its shingle count into counts[d]
    (-1, row left alone, for a document that needs Python's NFKC first). An all-ASCII raw document of 64 bytes or
    more is hashed as two halves at once (`_word_hashes_ascii`); doing that for documents with other characters
    too was tried and lost more at each of them than it gained."""
    wh = np.empty(64, dtype=np.uint64)
    wh2 = np.empty(64, dtype=np.uint64)
    hv = np.empty(64, dtype=np.uint32)
    for d in range(offsets.shape[0] - 1):
        lo, hi = offsets[d], offsets[d + 1]
        if wh.shape[0] < 2 * (hi - lo) + 2:  # a MAPPED code point may become more words than its bytes
            wh = np.empty(4 * (hi - lo) + 2, dtype=np.uint64)
            wh2 = np.empty(4 * (hi - lo) + 2, dtype=np.uint64)
            hv = np.empty(4 * (hi - lo) + 2, dtype=np.uint32)
        if not normed and hi - lo >= 64 and _all_ascii(data[lo:hi]):
            nw = _word_hashes_ascii(data, lo, hi, kind, start, pool_cp, pool_cls, ascii_out, wh, wh2)
        else:
            nw = _word_hashes(data, lo, hi, normed, kind, start, pool_cp, pool_cls, ascii_out, wh)
        if nw <= 0:
            counts[d] = nw
            continue
        counts[d] = _sign(wh, nw, ngram, pos, a, b, hv, out[rows[d]])


@numba.njit(cache=True)
def _stretches(data, offsets, docs, kind):
    """The stretches of documents `docs` that Python must NFKC: each run of PYTHON-kind characters with the
    character before it (which it may compose with), runs that touch merged. Everywhere else a character starts a
    normalisation segment (`text._tables`), so NFKC of the text is the stretches' NFKC with the rest, folded by
    the tables, in between. Returns their byte ranges in data (rows of `runs`, those of docs[r] at
    run_off[r]:run_off[r + 1]) and their bytes end to end, each followed by a NUL, docs[r]'s at
    text[text_off[r]:text_off[r + 1]]."""
    total = 0
    for d in docs:
        total += offsets[d + 1] - offsets[d]
    runs = np.empty((total // 2 + docs.shape[0], 2), dtype=np.int64)  # a run holds a PYTHON character: >= 2 bytes
    run_off = np.zeros(docs.shape[0] + 1, dtype=np.int64)
    n = 0
    for r in range(docs.shape[0]):
        lo, hi = offsets[docs[r]], offsets[docs[r] + 1]
        i, prev = lo, -1
        while i < hi:
            b0 = data[i]
            size = 1 if b0 < 0x80 else 2 if b0 < 0xE0 else 3 if b0 < 0xF0 else 4
            if size > 1:
                if size == 2:
                    cp = ((np.int64(b0) & 0x1F) << 6) | (data[i + 1] & 0x3F)
                elif size == 3:
                    cp = ((np.int64(b0) & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (data[i + 2] & 0x3F)
                else:
                    cp = ((np.int64(b0) & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12)
                    cp |= ((np.int64(data[i + 2]) & 0x3F) << 6) | (data[i + 3] & 0x3F)
                if kind[cp] == 4:  # text.PYTHON
                    s = prev if prev >= 0 else i
                    if n > run_off[r] and runs[n - 1, 1] >= s:
                        runs[n - 1, 1] = i + size
                    else:
                        runs[n, 0], runs[n, 1] = s, i + size
                        n += 1
            prev = i
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


@numba.njit(cache=True)
def _fast_mixed(data, offsets, docs, runs, run_off, enc, enc_off, whole, kind, start, pool_cp, pool_cls, ascii_out,
                classes, ngram, pos, a, b, out, counts):
    """`_fast` for the documents `docs` that hold PYTHON-kind characters: document d = docs[r] is data's raw bytes,
    folded by the tables, except its stretches runs[run_off[r]:run_off[r + 1]] (byte ranges), which are taken from
    enc[enc_off[r]:enc_off[r + 1]] instead: their NFKC'd and lowercased text, separated by NUL bytes (or, when
    whole[r], one stretch: the whole document), folded by `classes`. The word being hashed carries across."""
    wh = np.empty(64, dtype=np.uint64)
    hv = np.empty(64, dtype=np.uint32)
    for r in range(docs.shape[0]):
        d = docs[r]
        lo, hi = offsets[d], offsets[d + 1]
        e, e1 = enc_off[r], enc_off[r + 1]
        need = 2 * (hi - lo) + 2 * (e1 - e) + 2
        if wh.shape[0] < need:
            wh = np.empty(2 * need, dtype=np.uint64)
            hv = np.empty(2 * need, dtype=np.uint32)
        nw, h, inword, i = 0, np.uint64(_FNV_OFFSET), False, lo
        for q in range(run_off[r], run_off[r + 1]):
            nw, h, inword = _scan(data, i, runs[q, 0], False, kind, start, pool_cp, pool_cls, ascii_out, wh, nw, h,
                                  inword)
            pe = e
            if whole[r]:
                pe = e1
            else:
                while pe < e1 and enc[pe] != 0:
                    pe += 1
            nw, h, inword = _scan(enc, e, pe, False, classes, start, pool_cp, pool_cls, ascii_out, wh, nw, h, inword)
            e, i = pe + 1, runs[q, 1]
        nw, h, inword = _scan(data, i, hi, False, kind, start, pool_cp, pool_cls, ascii_out, wh, nw, h, inword)
        nw = _close(wh, nw, h, inword)
        counts[d] = _sign(wh, nw, ngram, pos, a, b, hv, out[d]) if nw > 0 else 0


def _nfkc_stretches(texts: list[str], data: np.ndarray, offsets: np.ndarray, docs: np.ndarray, kind: np.ndarray):
    """For `_fast_mixed`: each document's stretches that need Python's NFKC (`_stretches`) and their NFKC'd,
    lowercased UTF-8.

    NFKC is per stretch (NUL, a starter that nothing composes with, keeps them apart in one call per document);
    `str.lower` too, which is per character except for `Σ` (final sigma looks at its neighbours): a document whose
    stretches hold a `Σ` after NFKC, or that holds a NUL itself, is one stretch, the whole text, NFKC'd and
    lowercased as `text.match_form_batch`'s Python route does."""
    runs, run_off, text, text_off = _stretches(data, offsets, docs, kind)
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
                    perms: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Signatures of the "fast" scheme: the same shingles (word n-grams of the match form, `text.shingles`) and the
    same permutations as `signatures`, but each shingle hashed from 64-bit word hashes instead of SHA-1, so the
    values differ from datasketch's while estimating the same Jaccard similarity. Each document is folded to its
    match form in the same pass that hashes it, from `text`'s per-code-point tables; in a document with characters
    that need Python's NFKC in context (`text._tables`' PYTHON kind), only the stretches around them go through
    Python (`_nfkc_stretches`), and a second pass hashes the rest from the tables and those from Python's text."""
    if not 1 <= ngram <= len(_POSITION):
        raise ValueError(f"the fast scheme takes ngram 1..{len(_POSITION)}; got {ngram}")
    a, b = perms if perms is not None else permutations(num_perm, seed)
    out = np.full((len(texts), len(a)), 0xFFFFFFFF, dtype=np.uint32)
    counts = np.zeros(len(texts), dtype=np.int64)
    data, offsets = _utf8_batch(texts)
    kind, start, pool_cp, pool_cls, ascii_out = _tables()
    _fast(data, offsets, False, kind, start, pool_cp, pool_cls, ascii_out, ngram, _POSITION, a, b, out,
          np.arange(len(texts)), counts)
    rest = np.flatnonzero(counts < 0)
    if len(rest):
        runs, run_off, enc, enc_off, whole = _nfkc_stretches(texts, data, offsets, rest, kind)
        _fast_mixed(data, offsets, rest, runs, run_off, enc, enc_off, whole, kind, start, pool_cp, pool_cls,
                    ascii_out, char_classes(), ngram, _POSITION, a, b, out, counts)
    return out, counts


def signatures_by_scheme(texts: list[str], scheme: str = "datasketch", num_perm: int = 112, seed: int = 1,
                         ngram: int = 5, perms: tuple[np.ndarray, np.ndarray] | None = None,
                         ) -> tuple[np.ndarray, np.ndarray]:
    """`signatures` (datasketch's values, bit for bit) or `fast_signatures`, by name (`SCHEMES`)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    fn = signatures if scheme == "datasketch" else fast_signatures
    return fn(texts, num_perm=num_perm, seed=seed, ngram=ngram, perms=perms)
