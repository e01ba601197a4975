"""curate models fetch|list: put models in the user cache (verified by sha256) and show what is there."""

from __future__ import annotations

import sys

from curate.core.errors import UsageError
from curate.io import models


def add_parser(sub):
    p = sub.add_parser("models", help="fetch models into the user cache (sha256-verified) or list them")
    msub = p.add_subparsers(dest="models_command", required=True)
    f = msub.add_parser("fetch", help="download or copy a model into the cache")
    f.add_argument("name", choices=sorted(models.MODELS), help="model to fetch")
    f.add_argument("--from", dest="source", metavar="PATH_OR_URL",
                   help="a local file or URL to take the model from (default: its official address)")
    msub.add_parser("list", help="known models, where they are cached, and whether they are present")
    return p


def main(args) -> int:
    if args.models_command == "list":
        for name, spec in models.MODELS.items():
            path = models.cached_path(name)
            state = "present" if path.is_file() else "missing"
            print(f"{name:<6} {state:<8} {path}\n       {spec.about}")
        return 0
    spec = models.MODELS[args.name]
    print(f"{args.name}: fetching {args.source or spec.url} …", file=sys.stderr)  # announced: never a silent download
    try:
        dest = models.fetch(args.name, args.source)
    except (OSError, ValueError) as e:
        offline = "" if args.source or not isinstance(e, OSError) else (
            f"; offline, take the file {spec.filename} from a machine that has it: "
            f"`curate models fetch {args.name} --from PATH` (a local file or URL)")
        raise UsageError(f"could not fetch {args.name} from {args.source or spec.url}: {e}{offline}") from e
    print(f"{args.name}: {dest} (sha256 {spec.sha256[:12]}… verified)")
    return 0
