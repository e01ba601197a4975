"""curate inspect OUT -n 3: print a few kept (or, with --rejected, dropped) documents."""

from __future__ import annotations

import fnmatch

from curate.core.errors import UsageError
from curate.core.shown import for_terminal
from curate.io import fs


def add_parser(sub):
    p = sub.add_parser("inspect", help="print a few documents of a run")
    p.add_argument("output", help="a run's output directory")
    p.add_argument("-n", type=int, default=3, help="how many documents")
    p.add_argument("--rejected", action="store_true", help="show dropped documents and their reasons")
    p.add_argument("--chars", type=int, default=600, help="characters of text to show per document")
    p.add_argument("--reason", metavar="PATTERN",
                   help="with --rejected: only documents dropped for this reason: a step (`c4`), a whole reason "
                        "(`c4:too_few_sentences`) or a glob (`gopher_*`); one this run never dropped for is refused")
    return p


def reason_matches(pattern: str, reason: str) -> bool:
    """A step name matches all its reasons (`c4` matches `c4:too_few_sentences`); otherwise a glob on the reason."""
    return reason.split(":", 1)[0] == pattern or fnmatch.fnmatchcase(reason, pattern)


def check_reason(output: str, pattern: str) -> None:
    """Refuse a --reason that matches no reason this run dropped a document for, naming the closest and the run's
    reasons: a misspelt or made-up reason (`c4:too_few_lines`, which C4 never emits) used to print nothing and exit 0.

    The run's own stats are the vocabulary: every drop is counted there under its reason, so a pattern that matches
    none of them can match no rejected document either."""
    import difflib
    import json

    path = fs.join(output, "stats.json")
    if not fs.exists(path):
        return  # a run being written has no stats yet: every shard is searched
    steps = json.loads(fs.read_bytes(path))["steps"]
    reasons = sorted({r for s in steps for r, n in s["dropped"].items() if n})
    if any(reason_matches(pattern, r) for r in reasons):
        return
    near = difflib.get_close_matches(pattern, reasons, n=1, cutoff=0.5)
    hint = f"did you mean {for_terminal(repr(near[0]))}? " if near else ""
    listed = ", ".join(for_terminal(r, lines=False) for r in reasons) or "none (nothing was dropped)"
    raise UsageError(f"--reason {for_terminal(repr(pattern))} matches no reason this run dropped a document for; "
                     f"{hint}its reasons: {listed}")


def main(args) -> int:
    from curate.io.writers import parquet_shards  # Arrow: loaded to read shards, not by `curate inspect --help`

    if args.reason and not args.rejected:
        raise UsageError("--reason selects dropped documents: add --rejected")
    if args.reason:
        check_reason(args.output, args.reason)
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
            fields = [("source", rec["source"]), ("lang", rec.get("lang")), ("url", rec.get("url"))]
            fields += [("drop_reason", rec["drop_reason"]), *_evidence(rec)] if args.rejected else []
            print(f"── {for_terminal(rec['id'], lines=False)}  "
                  + "  ".join(f"{k}={for_terminal(v, lines=False)}" for k, v in fields))
            text = rec["text"]
            print(for_terminal(text[: args.chars]) + (" …" if len(text) > args.chars else ""))
            print()
            shown += 1
    if args.reason and not shown:
        print(f"no rejected document has a reason matching {for_terminal(repr(args.reason))} (`curate stats` lists the reasons)")
    return 0


def _evidence(rec: dict) -> list[tuple[str, str]]:
    """Why a drop happened, in numbers: the value the rule measured against its limit (`Reject.measured`, `.limit`),
    and for a page that extracted to nothing, its HTTP status and how much HTML it had (from the metadata)."""
    out = []
    if rec.get("drop_limit") is not None:
        out.append(("measured", f"{rec['drop_measured']:.4g} (limit {rec['drop_limit']:.4g})"))
    if rec["drop_reason"] == "extract:empty" and rec.get("metadata"):
        import json

        meta = json.loads(rec["metadata"])
        out += [(k, str(meta[k])) for k in ("http_status", "html_chars") if k in meta]
    return out


def _records(path: str, batch_size: int):
    """Rows of a shard, one row group batch at a time: showing 3 documents must not decode a 512 MB shard."""
    from curate.io.state import DAMAGED_SHARD, reading

    with reading(path, DAMAGED_SHARD):
        for batch in fs.parquet_file(path).iter_batches(batch_size=max(batch_size, 1)):
            yield from batch.to_pylist()
