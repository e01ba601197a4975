"""The linear-work method of `dedup.Substrings` (`method="hash"`): every window of `min_length` bytes hashed,
repeats found by grouping the hashes in partitions on disk.

Why windows suffice: a repeat is a run of whole characters of at least L = `min_length` bytes that occurs twice
(or earlier, for `keep="first"`). Its substrings of whole characters of at least L bytes repeat too, so the union
of all repeats equals the union of the *minimal* ones, and two families of minimal windows cover every repeat:

- the start window of a character boundary i: [i, b(i)), b(i) the first boundary >= i + L in i's document;
- the end window of a boundary e: [a(e), e), a(e) the last boundary <= e - L in e's document.

A repeat [p, p + M) (M >= L) is the union of the start windows of the boundaries j in [p, p + M - L] and the end
window of p + M: a byte x in it lies in the start window of its own character's boundary j0 when j0 <= p + M - L,
and otherwise (x >= j0 > p + M - L >= a(p + M)) in the end window. Start windows alone miss a repeat such as
"😀ab" with L = 4 (the start window of "😀" ends at "a"; that of "a" runs past the repeat). Each window lies
inside the repeat, so it occurs wherever the repeat does: at the same offset of an earlier copy for "first".
Conversely every repeated window is a repeat. The bytes of a window fix its own boundaries (UTF-8 lead bytes), so
every occurrence of a window's text is itself a window of the same family: a text's occurrences are exactly the
windows with its hash. A window of one family identical to the other's at the same start (always, in text of
one character width) is written once.

A window's text is hashed by two polynomial hashes mod the Mersenne prime 2^61 - 1 (fixed random bases; bytes
mapped to 1..256, so texts of different lengths differ as polynomials): two different texts of at most L + 3
bytes collide in both with probability at most ((L + 2) / (2^61 - 1))^2, about 2e-33 at L = 100, so with N
windows the chance of any false repeat is at most N^2 / 2 times that (below 1e-9 for N = 10^12, a terabyte). The
bound is over the bases' choice: it holds for text not crafted against these fixed bases. A false repeat would
strike one window of L to L + 3 bytes; nothing else depends on the hash.

Phases, each one task per item, resumable (`common.run_phase`), after `Substrings`' own `text` phase:

1. `windows` (per shard): each piece of the shard (`Substrings`' pieces cut again at document boundaries to at
   most `part_bytes` / SHARE) hashed; records (hash 1, hash 2, key) with key = shard << 43 | byte offset << 3 | (length - L) << 1 | flag. A text seen twice
   in one piece is settled there: its later copies (`keep="first"`) or all copies but one (`"none"`, the one kept
   flagged as repeated) written to the shard's `local` file; the rest written sorted by hash partition.
2. `repeats` (per hash partition): its records of every piece (one ranged read each) grouped by hash (`groups`,
   a hash table); a text of two or more records (or a flagged one), `"none"`: every record; `"first"`: all but
   the earliest (smallest key).
3. `spans` (per shard): the shard's repeated windows (its `local` file and every partition's rows for it) merged
   into byte intervals per document, written as `Substrings`' `rewrite` phase reads them.

Memory per task (peak RSS over the interpreter's, 16 MB of the benchmark's text; numba's arrays are invisible to
tracemalloc): `windows` about 81 bytes per byte of a piece (0.94 records per byte there: one per character start,
plus the few end windows where character widths mix; up to two per byte at worst); `repeats` about 68 per record
of its partition (24 of them the record), partitions sized at `part_bytes` / SHARE records. With SHARE = 3 both
are about 27 x `part_bytes`, what a suffix pair task takes with `keep="none"` (14 per byte of 2 parts). `spans`
is bounded by a shard, not a part: about 50 bytes per repeated window of its shard (the keys read, sorted, and
their intervals; 560 MB over the interpreter for a 12.5 MB shard 95% repeated), so inputs should be shards of a
size a worker holds 50 times. Disk: 24 bytes per window that is not settled in its piece, 8 per one that is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from curate.dedup import common
from curate.io import fs

M61 = np.uint64((1 << 61) - 1)
BASES = (np.uint64(0x1F2E3D4C5B6A798), np.uint64(0x0ABCDEF12345677))  # fixed: the same hash in every task
RECORD = 24  # bytes of a record: hash 1, hash 2, key as little-endian uint64
OFFSET_BITS = 40  # a shard's text below 1 TiB; shards below 2^21
SHARE = 3  # a window piece and a partition's records are about part_bytes / SHARE: see the memory note above


@numba.njit(inline="always")
def _mul(a: np.uint64, b: np.uint64) -> np.uint64:
    """a * b mod 2^61 - 1, for a, b < 2^61, in 64-bit pieces."""
    m30, m31 = np.uint64((1 << 30) - 1), np.uint64((1 << 31) - 1)
    au, ad, bu, bd = a >> np.uint64(31), a & m31, b >> np.uint64(31), b & m31
    mid = ad * bu + au * bd
    x = au * bu * np.uint64(2) + (mid >> np.uint64(30)) + ((mid & m30) << np.uint64(31)) + ad * bd
    x = (x >> np.uint64(61)) + (x & M61)
    return x - M61 if x >= M61 else x


@numba.njit(inline="always")
def _sub_hash(h: np.ndarray, pw: np.ndarray, a: int, b: int) -> np.uint64:
    """Hash of bytes [a, b) from prefix hashes: h[b] - h[a] * base^(b - a) mod 2^61 - 1."""
    x = _mul(h[a], pw[b - a])
    return h[b] - x if h[b] >= x else h[b] + M61 - x


@numba.njit(cache=True)
def _windows(t: np.ndarray, L: int) -> tuple:
    """(start, length - L, hash 1, hash 2) of every window of a piece (both families, once each), in order of
    emission. `t` ends with SEP (0xFF) after its last document."""
    n = len(t)
    hs = np.zeros((2, n + 1), dtype=np.uint64)
    pw = np.ones((2, L + 5), dtype=np.uint64)
    for k in range(2):
        b = BASES[k]
        for i in range(n):
            hs[k, i + 1] = _mul(hs[k, i], b) + np.uint64(t[i]) + np.uint64(1)
            if hs[k, i + 1] >= M61:
                hs[k, i + 1] -= M61
        for i in range(1, L + 5):
            pw[k, i] = _mul(pw[k, i - 1], b)
    nxt = np.empty(n + 1, dtype=np.int64)  # the next SEP at or after each position
    nxt[n] = n
    for i in range(n - 1, -1, -1):
        nxt[i] = i if t[i] == 0xFF else nxt[i + 1]
    start = np.empty(n + 1, dtype=np.int64)
    extra = np.empty(n + 1, dtype=np.int8)
    count = 0
    last_sep = -1
    for k in range(n):  # k as a start (its start window), then as an end (its end window)
        c = t[k]
        if count + 2 > len(start):  # more windows than bytes: grow (text mixing character widths)
            start = np.concatenate((start, np.empty(n, dtype=np.int64)))
            extra = np.concatenate((extra, np.empty(n, dtype=np.int8)))
        if c != 0xFF and (c & 0xC0) != 0x80:
            j = _end_of(t, k, L, nxt)
            if j >= 0:
                start[count], extra[count] = k, j - k - L
                count += 1
        if (c & 0xC0) != 0x80 and k - L > last_sep:  # a boundary: an end window [a, k)
            a = k - L
            while (t[a] & 0xC0) == 0x80:
                a -= 1
            if _end_of(t, a, L, nxt) != k:
                start[count], extra[count] = a, k - a - L
                count += 1
        if c == 0xFF:
            last_sep = k
    start, extra = start[:count], extra[:count]
    h1 = np.empty(count, dtype=np.uint64)
    h2 = np.empty(count, dtype=np.uint64)
    for w in range(count):
        a, b = start[w], start[w] + L + extra[w]
        h1[w] = _sub_hash(hs[0], pw[0], a, b)
        h2[w] = _sub_hash(hs[1], pw[1], a, b)
    return start, extra, h1, h2


@numba.njit(inline="always")
def _end_of(t: np.ndarray, i: int, L: int, nxt: np.ndarray) -> int:
    """b(i): the first character boundary >= i + L in i's document, or -1 when the document ends first."""
    j = i + L
    if j > nxt[i]:
        return -1
    while (t[j] & 0xC0) == 0x80:  # t ends with SEP, so j stays inside
        j += 1
    return j if j <= nxt[i] else -1


def window_records(text: np.ndarray, min_length: int, shard: int, offset: int) -> tuple[np.ndarray, ...]:
    """(hash 1, hash 2, key) of a piece's windows; `offset`: the piece's byte in its shard."""
    start, extra, h1, h2 = _windows(text, min_length)
    key = ((np.uint64(shard) << np.uint64(OFFSET_BITS + 3)) | ((start + offset).astype(np.uint64) << np.uint64(3))
           | (extra.astype(np.uint64) << np.uint64(1)))
    return h1, h2, key


@numba.njit(cache=True)
def groups(h1: np.ndarray, h2: np.ndarray, key: np.ndarray) -> tuple:
    """(first, size, flagged) per record, grouped by (hash 1, hash 2) in an open-addressing table (linear time;
    a sort of 10^7 records took longer): whether it is its group's earliest (smallest key), the group's size, and
    whether any record of the group has the flag bit. A slot is 16 bytes (hash 1; the earliest record, the flag
    and the count), one cache line per probe; 24 to 48 bytes per record (load factor 1/3 to 2/3), plus 10 for the
    results."""
    n = len(h1)
    cap = 1
    while 2 * cap < 3 * n:  # load factor at most 2/3
        cap <<= 1
    mask = np.uint64(cap - 1)
    table = np.zeros((cap, 2), dtype=np.uint64)  # [hash 1, record << 32 | flag << 31 | count]; empty: count 0
    slot = np.empty(n, dtype=np.int32)
    for r in range(n):
        s = np.int64(h1[r] & mask)
        while True:
            meta = table[s, 1]
            if meta == 0:
                table[s, 0], meta = h1[r], np.uint64(r) << np.uint64(32)
                break
            h = np.int64(meta >> np.uint64(32))
            if table[s, 0] == h1[r] and h2[h] == h2[r]:
                if key[r] < key[h]:
                    meta = (np.uint64(r) << np.uint64(32)) | (meta & np.uint64(0xFFFFFFFF))
                break
            s = (s + 1) & (cap - 1)
        if key[r] & np.uint64(1):
            meta |= np.uint64(1 << 31)
        table[s, 1] = meta + np.uint64(1)
        slot[r] = s
    first = np.empty(n, dtype=np.bool_)
    size = np.empty(n, dtype=np.int32)
    flagged = np.empty(n, dtype=np.bool_)
    for r in range(n):
        meta = table[slot[r], 1]
        first[r] = np.int64(meta >> np.uint64(32)) == r
        size[r] = np.int32(meta & np.uint64(0x7FFFFFFF))
        flagged[r] = (meta & np.uint64(1 << 31)) != 0
    return first, size, flagged


def partition_shift(parts: int) -> int:
    """Records go to partition hash 1 >> this: the top bits of the 61-bit hash (`parts` a power of two)."""
    return 61 - (parts.bit_length() - 1)


# ---------------------------------------------------------------- phase 1: windows


@dataclass
class WindowTask:
    shard: int
    text: str  # Substrings' text file of the shard
    pieces: list[list[int]]  # [row_lo, row_hi, byte_lo, byte_hi]
    offsets: str  # Substrings' offsets file of the shard
    piece_bytes: int
    records: str
    local: str
    keep: str
    min_length: int
    parts: int


def window_shard(task: WindowTask) -> dict:
    """Phase 1: the records of each piece, settled in the piece where a text repeats in it, by hash partition."""
    cpu = time.process_time()
    rec_out, loc_out = fs.Staged(task.records), fs.Staged(task.local)
    counts, windows = [], 0
    try:
        with common.naming(rec_out.tmp), open(rec_out.tmp, "wb") as rf, open(loc_out.tmp, "wb") as lf:
            for lo, hi in cut(task.pieces, np.frombuffer(fs.read_bytes(task.offsets), "<i8"), task.piece_bytes):
                text = np.frombuffer(common.read_range(task.text, lo, hi - lo), dtype=np.uint8)
                h1, h2, key = window_records(text, task.min_length, task.shard, lo)
                windows += len(key)
                first, size, _ = groups(h1, h2, key)
                rec, local, count = _settle(h1, h2, key, first, size, task.keep == "none", task.parts,
                                            partition_shift(task.parts))
                del h1, h2, key, first, size
                lf.write(local.data)
                rf.write(rec.data)
                counts.append(count.tolist())
    except BaseException:
        rec_out.discard()
        loc_out.discard()
        raise
    rec_out.commit()
    loc_out.commit()
    return {"windows": windows, "counts": counts, "cpu": time.process_time() - cpu}


@numba.njit(cache=True)
def _settle(h1: np.ndarray, h2: np.ndarray, key: np.ndarray, first: np.ndarray, size: np.ndarray, flag: bool,
            parts: int, shift: int) -> tuple:
    """(records by partition, local keys, records per partition) of a piece: a copy after its text's first in
    the piece is struck either way (local); the first goes to its partition, flagged (`flag`, keep="none") when
    the piece holds another copy, so that phase 2 strikes it too. One pass, a counting sort by partition."""
    count = np.zeros(parts, dtype=np.int64)
    n_local = 0
    for r in range(len(h1)):
        if first[r]:
            count[np.int64(h1[r] >> np.uint64(shift))] += 1
        else:
            n_local += 1
    at = np.zeros(parts, dtype=np.int64)
    for p in range(1, parts):
        at[p] = at[p - 1] + count[p - 1]
    rec = np.empty((len(h1) - n_local, 3), dtype=np.uint64)
    local = np.empty(n_local, dtype=np.uint64)
    j = 0
    for r in range(len(h1)):
        if not first[r]:
            local[j] = key[r]
            j += 1
            continue
        p = np.int64(h1[r] >> np.uint64(shift))
        rec[at[p], 0], rec[at[p], 1] = h1[r], h2[r]
        rec[at[p], 2] = key[r] | np.uint64(1) if flag and size[r] > 1 else key[r]
        at[p] += 1
    return rec, local, count


def cut(pieces: list[list[int]], starts: np.ndarray, size: int) -> list[tuple[int, int]]:
    """The shard's pieces cut again, at document boundaries, into (byte_lo, byte_hi) of at most `size` bytes (a
    longer document alone)."""
    out = []
    for _, _, lo, hi in pieces:
        ends = starts[(starts > lo) & (starts <= hi)]
        while lo < hi:
            k = int(np.searchsorted(ends, lo + size, side="right"))
            stop = int(ends[k - 1]) if k and ends[k - 1] > lo else int(ends[np.searchsorted(ends, lo, side="right")])
            out.append((lo, stop))
            lo = stop
    return out


# ---------------------------------------------------------------- phase 2: repeats


@dataclass
class RepeatTask:
    reads: list[tuple[str, int, int]]  # (records file, first record, records) of every piece
    out: str
    keep: str


def repeat_partition(task: RepeatTask) -> dict:
    """Phase 2: one hash partition's records of every piece, grouped by hash; the keys of the repeated windows
    written, sorted."""
    cpu = time.process_time()
    rec, at = np.empty((sum(n for *_, n in task.reads), 3), np.uint64), 0
    for path, lo, n in task.reads:  # read into place: no second copy of the records
        rec[at:at + n] = np.frombuffer(common.read_range(path, RECORD * lo, RECORD * n), "<u8").reshape(-1, 3)
        at += n
    key = rec[:, 2]
    first, size, flagged = groups(rec[:, 0], rec[:, 1], key)
    repeated = (size > 1) | flagged if task.keep == "none" else ~first
    key = np.sort(key[repeated] & ~np.uint64(1))
    common.write_table(pa.table({"shard": (key >> np.uint64(OFFSET_BITS + 3)).astype(np.int32), "key": key}), task.out,
                       segments=["shard"])
    return {"records": len(rec), "repeated": len(key), "cpu": time.process_time() - cpu}


# ---------------------------------------------------------------- phase 3: spans


@dataclass
class SpanTask:
    shard: int
    local: str
    repeats: list[str]
    offsets: str  # Substrings' offsets file of the shard
    out: str
    min_length: int


def span_shard(task: SpanTask) -> dict:
    """Phase 3: the shard's repeated windows as merged (shard, row, start, end) byte intervals of its documents."""
    cpu = time.process_time()
    local = np.frombuffer(fs.read_bytes(task.local), "<u8")
    found = common.read_where(task.repeats, {"shard": task.shard}, ["key"])
    remote = found["key"].to_numpy() if found.num_columns else np.zeros(0, np.uint64)  # no file holds the shard
    key = np.sort(np.concatenate((local.astype(np.uint64), remote.astype(np.uint64))))
    del local, remote
    lo = ((key >> np.uint64(3)) & np.uint64((1 << OFFSET_BITS) - 1)).astype(np.int64)
    hi = lo + task.min_length + ((key >> np.uint64(1)) & np.uint64(3)).astype(np.int64)
    del key
    lo, hi = merge(lo, hi)  # a window never crosses its document's SEP, so no interval joins two documents
    starts = np.frombuffer(fs.read_bytes(task.offsets), "<i8")
    row = np.searchsorted(starts, lo, side="right") - 1
    common.write_table(pa.table({"shard": np.full(len(lo), task.shard, np.int32), "row": row.astype(np.uint32),
                                 "start": lo - starts[row], "end": hi - starts[row]}), task.out, segments=["shard"])
    return {"intervals": len(lo), "covered": int((hi - lo).sum()), "cpu": time.process_time() - cpu}


def merge(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping or touching intervals, sorted by start, merged."""
    if not len(lo):
        return lo, hi
    reach = np.maximum.accumulate(hi)
    first = np.ones(len(lo), dtype=bool)
    first[1:] = lo[1:] > reach[:-1]  # starts past everything before: a new interval
    return lo[first], np.maximum.reduceat(hi, np.flatnonzero(first))
