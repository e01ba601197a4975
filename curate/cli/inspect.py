"""curate inspect OUT -n 3: print a few kept (or, with --rejected, dropped) documents."""

from __future__ import annotations

import fnmatch
import unicodedata

from curate.core.errors import UsageError
from curate.io import fs
from curate.io.state import DAMAGED_SHARD, reading
from curate.io.writers import parquet_shards


def add_parser(sub):
    p = sub.add_parser("inspect", help="print a few documents of a run")
    p.add_argument("output", help="a run's output directory")
    p.add_argument("-n", type=int, default=3, help="how many documents")
    p.add_argument("--rejected", action="store_true", help="show dropped documents and their reasons")
    p.add_argument("--chars", type=int, default=600, help="characters of text to show per document")
    p.add_argument("--reason", metavar="PATTERN",
                   help="with --rejected: only documents dropped for this reason: a step (`c4`), a whole reason "
                        "(`c4:too_few_lines`) or a glob (`gopher_*`)")
    return p


def reason_matches(pattern: str, reason: str) -> bool:
    """A step name matches all its reasons (`c4` matches `c4:too_few_lines`); otherwise a glob on the reason."""
    return reason.split(":", 1)[0] == pattern or fnmatch.fnmatchcase(reason, pattern)


def main(args) -> int:
    if args.reason and not args.rejected:
        raise UsageError("--reason selects dropped documents: add --rejected")
    sub = "rejected" if args.rejected else "data"
    files = parquet_shards(fs.join(args.output, sub), "curate inspect") if fs.isdir(fs.join(args.output, sub)) else []
    if not files:
        raise UsageError(f"no shards under {fs.join(args.output, sub)}")
    shown = 0
    for path in files:
        for rec in _records(path, args.n):
            if shown >= args.n:
                return 0
            if args.reason and not reason_matches(args.reason, rec["drop_reason"] or ""):
                continue
            head = f"── {rec['id']}  source={rec['source']}  lang={rec.get('lang')}  url={rec.get('url')}"
            if args.rejected:
                head += f"  drop_reason={rec['drop_reason']}"
            print(shown_safely(head))
            text = rec["text"]
            print(shown_safely(text[: args.chars]) + (" …" if len(text) > args.chars else ""))
            print()
            shown += 1
    if args.reason and not shown:
        print(f"no rejected document has a reason matching {args.reason!r} (`curate stats` lists the reasons)")
    return 0


_KEPT = {"\n", "\t"}


def shown_safely(text: str) -> str:
    """Text from crawled pages fit for a terminal: control and format characters (Unicode Cc, Cf, Zl, Zp: escape
    sequences that clear the screen or retitle the window, bidi overrides that reorder what is shown) are
    printed as `\\xNN` / `\\uNNNN`; newlines and tabs stay. The stored text is unchanged."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch in _KEPT or unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def _records(path: str, batch_size: int):
    """Rows of a shard, one row group batch at a time: showing 3 documents must not decode a 512 MB shard."""
    with reading(path, DAMAGED_SHARD):
        for batch in fs.parquet_file(path).iter_batches(batch_size=max(batch_size, 1)):
            yield from batch.to_pylist()
