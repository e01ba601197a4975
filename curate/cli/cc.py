"""curate cc list | paths | query: Common Crawl's snapshots, a selection's files, an index query's records.

What `--input cc://...` will read, before a run: `curate cc paths CC-MAIN-2024-10 --kind wet --sample 0.01`
prints the files, `curate cc query CC-MAIN-2024-10 --domain example.com` counts the records an index query
selects and the files they lie in. Where the data is: `--base` or `$PENEIRA_CC_BASE` (curate.io.commoncrawl).
"""

from __future__ import annotations

import urllib.parse


def add_parser(sub):
    p = sub.add_parser("cc", help="Common Crawl: snapshots, path lists, index queries (what --input cc://... reads)")
    cmds = p.add_subparsers(dest="cc_command", required=True)
    ls = cmds.add_parser("list", help="the crawls, from collinfo.json")
    ls.add_argument("--index", default=None, help="where collinfo.json is (default $PENEIRA_CC_INDEX or index.commoncrawl.org)")
    paths = cmds.add_parser("paths", help="the files a path-list selection reads, one URL a line")
    paths.add_argument("snapshot", help="e.g. CC-MAIN-2024-10")
    paths.add_argument("--kind", choices=["warc", "wet", "wat"], default="warc")
    paths.add_argument("--segments", default=None, help="the first N segments, or names separated by commas")
    paths.add_argument("--sample", type=float, default=None, help="a stable fraction of the files")
    paths.add_argument("--files", default=None, help="the first N files, or A:B")
    query = cmds.add_parser("query", help="count the records an index query selects (and the files they lie in)")
    query.add_argument("snapshot")
    for name in ("domain", "host", "mime", "status", "lang", "url", "subset", "limit"):
        query.add_argument(f"--{name}", default=None)
    for q in (paths, query):
        q.add_argument("--base", default=None, help="where the files are (default $PENEIRA_CC_BASE or data.commoncrawl.org)")
    return p


def main(args) -> int:
    """One line when the store cannot be reached after the retries (or a file is not there), not a traceback."""
    import sys

    from curate.io.retry import Exhausted

    try:
        return _main(args)
    except (Exhausted, FileNotFoundError) as e:
        sys.stderr.write(f"curate cc {args.cc_command}: {e}\n")
        return 1


def _main(args) -> int:
    from curate.core.shown import for_terminal
    from curate.io import commoncrawl as cc

    def shown(value) -> str:  # what the index and the path lists say is a server's text: shown, never obeyed
        return for_terminal(value, lines=False)

    if args.cc_command == "list":
        for s in cc.snapshots(args.index):
            dates = f"{str(s.get('from', ''))[:10]} .. {str(s.get('to', ''))[:10]}"
            print(f"{shown(s['id'])}\t{shown(s.get('name', ''))}\t{shown(dates)}")
        return 0
    if args.cc_command == "paths":
        params = {"segments": args.segments, "sample": args.sample, "files": args.files, "base": args.base}
        for s in cc.cc_splits(_url(args.snapshot, args.kind, params)):
            print(shown(s.url))
        return 0
    names = ("domain", "host", "mime", "status", "lang", "url", "subset", "limit", "base")
    splits = cc.cc_splits(_url(args.snapshot, "index", {n: getattr(args, n) for n in names}))
    d = cc.describe_splits(splits)
    print(f"{d['records']:,} record(s) in {d['files']:,} file(s), {d['splits']:,} task(s)")
    return 0


def _url(snapshot: str, kind: str, params: dict) -> str:
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    return f"cc://{snapshot}/{kind}" + (f"?{query}" if query else "")
