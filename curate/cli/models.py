"""curate models fetch|list: put models in the user cache (verified by sha256) and show what is there.

A name the registry does not know is any fastText language-ID model (GlotLID, OpenLID, one of your own),
taken from `--from`, checked to load as a fastText classifier, and named in a pipeline by that name:
`filters.Language(model="glotlid")`."""

from __future__ import annotations

import sys

from curate.core.errors import UsageError
from curate.io import models


def add_parser(sub):
    p = sub.add_parser("models", help="fetch models into the user cache (sha256-verified) or list them")
    msub = p.add_subparsers(dest="models_command", required=True)
    f = msub.add_parser("fetch", help="download or copy a model into the cache")
    f.add_argument("name", help=f"model to fetch: {', '.join(sorted(models.MODELS))}, or a name of your own "
                                "for any fastText language-ID model given with --from (e.g. glotlid)")
    f.add_argument("--from", dest="source", metavar="PATH_OR_URL",
                   help="a local file or URL to take the model from (default: its official address)")
    msub.add_parser("list", help="known models, where they are cached, and whether they are present")
    return p


def main(args) -> int:
    if args.models_command == "list":
        for name in [*models.MODELS, *models.user_models()]:
            spec, path = models.model_spec(name), models.cached_path(name)
            state = "present" if path.is_file() else "missing"
            about = spec.about if spec.sha256 else f"fastText model, sha256 {models.recorded_sha256(name)} (recorded at fetch)"
            print(f"{name:<6} {state:<8} {path}\n       {about}")
        return 0
    try:
        spec = models.model_spec(args.name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not spec.url and not args.source:
        raise UsageError(f"{args.name} is not a model the registry knows ({', '.join(sorted(models.MODELS))}); "
                         f"for any fastText language-ID model give its file: "
                         f"`curate models fetch {args.name} --from PATH_OR_URL`")
    print(f"{args.name}: fetching {args.source or spec.url} …", file=sys.stderr)  # announced: never a silent download
    try:
        dest = models.fetch(args.name, args.source)
    except (OSError, ValueError) as e:
        offline = "" if args.source or not isinstance(e, OSError) else (
            f"; offline, take the file {spec.filename} from a machine that has it: "
            f"`curate models fetch {args.name} --from PATH` (a local file or URL)")
        raise UsageError(f"could not fetch {args.name} from {args.source or spec.url}: {e}{offline}") from e
    if spec.sha256:
        print(f"{args.name}: {dest} (sha256 {spec.sha256[:12]}… verified)")
    else:
        print(f"{args.name}: {dest} (sha256 {models.recorded_sha256(args.name)} recorded; "
              f'use it with filters.Language(model="{args.name}"))')
    return 0
