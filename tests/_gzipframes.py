"""Every gzip framing a WARC or JSONL file can legally have, written with Python's own zlib (no bgzip binary):
one member per record, one single member, bgzip blocks (BGZF: members of at most 64 KiB of input, each with
the `BC` extra subfield holding the block's size less one, then an empty end-of-file block, as the SAM/BAM
specification sets them), and members cut at arbitrary places (`cat a.gz b.gz` of pieces)."""

from __future__ import annotations

import gzip
import struct
import zlib

BGZF_INPUT = 0xFF00  # bgzip's input per block: a block's compressed size must fit BSIZE's 16 bits


def bgzf_block(data: bytes) -> bytes:
    """One BGZF block: a gzip member with FLG.FEXTRA, XLEN 6 and the subfield `BC` (SLEN 2, BSIZE)."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = c.compress(data) + c.flush()
    bsize = 12 + 6 + len(body) + 8  # header with XLEN, extra field, deflate data, CRC32 and ISIZE
    header = b"\x1f\x8b\x08\x04" + b"\0\0\0\0" + b"\x00\xff" + struct.pack("<H", 6) + b"BC" + struct.pack("<HH", 2, bsize - 1)
    return header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def bgzip(data: bytes) -> bytes:
    """`data` as bgzip writes it: blocks of `BGZF_INPUT` bytes and the 28-byte empty end-of-file block."""
    blocks = [bgzf_block(data[i:i + BGZF_INPUT]) for i in range(0, len(data), BGZF_INPUT)]
    return b"".join(blocks) + bgzf_block(b"")


def members_at(data: bytes, cuts: list[int]) -> bytes:
    """`data` gzipped as one member per piece between `cuts` (pieces that need not follow records)."""
    bounds = [0, *cuts, len(data)]
    return b"".join(gzip.compress(data[a:b], mtime=0) for a, b in zip(bounds, bounds[1:], strict=False) if b > a)
