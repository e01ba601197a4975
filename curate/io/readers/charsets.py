"""Decoding HTML bytes as a browser would: byte-order mark, HTTP charset, <meta> charset, then detection."""

from __future__ import annotations

import codecs
import re

from curate.core.stats import StepStats
from curate.io.readers.base import figure

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_HTTP_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([^\s;"',]+)""", re.I)
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
# Codecs Python knows that are no web charset (a page declaring them is decoded as if it declared none),
# and the labels that browsers read as a superset (WHATWG Encoding Standard).
_NOT_WEB = {"idna", "punycode", "unicode-escape", "raw-unicode-escape", "utf-7", "undefined", "mbcs", "oem"}
_AS_BROWSERS = {"iso8859-1": "cp1252", "ascii": "cp1252", "gb2312": "gb18030", "gbk": "gb18030",
                "iso8859-9": "cp1254", "iso8859-11": "cp874", "euc_kr": "cp949"}


def web_charset(label: str | None) -> str | None:
    """The Python codec for a declared charset label, as a browser would read it; None if unusable."""
    if not label:
        return None
    try:
        info = codecs.lookup(label.strip().lower())
    except (LookupError, ValueError, TypeError):
        return None
    if not info._is_text_encoding or info.name in _NOT_WEB:  # base64, zlib, idna, …: not a page's charset
        return None
    return _AS_BROWSERS.get(info.name, label.strip().lower())


def declared_charsets(body: bytes, content_type: str | None) -> tuple[list[str], int]:
    """Usable charsets a page declares (HTTP header first, then <meta>), and how many labels were unusable."""
    labels = []
    m = _HTTP_CHARSET.search(content_type or "")
    if m:
        labels.append(m.group(1))
    m = _META_CHARSET.search(body[:4096])
    if m:
        meta = m.group(1).decode("ascii", "ignore")
        labels.append("utf-8" if meta.lower().startswith(("utf-16", "utf16")) else meta)  # a byte page cannot be UTF-16
    usable = [c for c in (web_charset(x) for x in labels) if c]
    return list(dict.fromkeys(usable)), len(labels) - len(usable)


def utf16_without_bom(body: bytes, sample: int = 4096) -> str | None:
    """"utf-16-le" or "utf-16-be" for UTF-16 text without a byte-order mark, else None.

    Markup is mostly ASCII, which UTF-16 writes as the byte and a NUL, so at least a quarter of the
    sampled pairs have their NUL on one side (odd bytes: little-endian) and almost none on the other.
    No byte charset puts NULs in a page, and NUL-interleaved ASCII is valid UTF-8, so without this
    check the raw markup would be kept as text.
    """
    head = body[: sample - sample % 2]
    pairs = len(head) // 2
    if pairs < 8:
        return None
    odd, even = head[1::2].count(0), head[0::2].count(0)
    if odd >= pairs / 4 and even <= odd / 16:
        return "utf-16-le"
    if even >= pairs / 4 and odd <= even / 16:
        return "utf-16-be"
    return None


def decode_html(body: bytes, content_type: str | None, stats: StepStats | None = None) -> tuple[str, str]:
    """Decode HTML bytes: a BOM, then UTF-16 without a BOM (`utf16_without_bom`), then the HTTP charset, then <meta>, then detection (charset-normalizer).

    A declared charset the bytes do not decode in is passed over for the next one (mislabelled pages
    are common); if none decodes cleanly, the first declared is used with U+FFFD for the bad bytes. An
    unknown or non-text label (`charset=idna`, `x-no-such`) counts as no declaration. Figures:
    `read:charset_guessed` (no usable declaration held), `read:charset_invalid` (an unusable label).
    """
    for bom, enc in _BOMS:
        if body.startswith(bom):
            return body[len(bom):].decode(enc, errors="replace"), enc
    if (enc := utf16_without_bom(body)) is not None:
        if stats is not None:
            figure(stats, "charset_guessed")
        return body.decode(enc, errors="replace"), enc
    declared, invalid = declared_charsets(body, content_type)
    if stats is not None and invalid:
        figure(stats, "charset_invalid", invalid)
    for enc in declared:
        try:
            return body.decode(enc), enc
        except (UnicodeError, LookupError):
            continue
    if stats is not None:
        figure(stats, "charset_guessed")
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    if declared:
        return body.decode(declared[0], errors="replace"), declared[0]
    from charset_normalizer import from_bytes

    best = from_bytes(body[:65536]).best()
    enc = web_charset(best.encoding if best else None) or "utf-8"
    return body.decode(enc, errors="replace"), enc
