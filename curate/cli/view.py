"""curate view RUN [RUN2 ...]: a read-only web application over run folders (curate/view, docs/view.md)."""

from __future__ import annotations

import socket
import sys

from curate.core.errors import UsageError


def add_parser(sub):
    p = sub.add_parser("view")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders (local paths or URLs; an ablation folder of "
                                                          "`python -m train ablate` stands for its variants' runs); "
                                                          "two or more can be compared document by document")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine "
                                                        "only; the pages show crawled content, keep it local)")
    p.add_argument("--port", type=int, default=8044, help="port (default 8044; 0: any free port)")
    p.add_argument("--open", action="store_true", help="open the first page in the default browser")
    p.add_argument("--cache", metavar="DIR", help="where the per-shard indexes go (default ~/.cache/peneira/view; "
                                                  "each text's length and the narrow columns, built once per shard "
                                                  "in the background)")
    p.add_argument("--no-cache", action="store_true", help="no index: every query reads the shards themselves")
    return p


def main(args) -> int:
    try:
        import uvicorn

        from curate.view.app import make_app
        from curate.view.folders import runs_of
        from curate.view.query import ViewError
    except ImportError as e:
        if e.name not in ("uvicorn", "starlette", "jinja2", "markupsafe"):
            raise
        raise UsageError(f"curate view needs the `view` extra ({e.name} is missing): pip install 'peneira[view]'") \
            from None
    runs = [run for path in args.runs for run in runs_of(path)]
    _index(runs, None if args.no_cache else args.cache or "")
    for run in runs:  # the shards' footers read now, not on the first page someone opens
        try:
            if run.kind == "run":
                run.columns()
        except ViewError as e:  # a damaged shard: its pages say so; the other runs are still worth a look
            print(f"curate view: note: {e}", file=sys.stderr)
    sock = _bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    hosts = ["*"] if args.host in ("0.0.0.0", "::") else [args.host, "localhost", "127.0.0.1", "[::1]"]
    print(f"curate view: {url} ({len(runs)} run{'s' * (len(runs) > 1)}; Ctrl-C stops)", flush=True)
    if args.open:
        import webbrowser

        webbrowser.open(url)
    server = uvicorn.Server(uvicorn.Config(make_app(runs, hosts), log_level="warning", access_log=False))
    server.run(sockets=[sock])
    return 0


def _index(runs: list, folder: str | None) -> None:
    """Give each local run the shard index (curate/view/index.py) and queue its shards for the builder thread."""
    if folder is None:
        return
    from curate.io import fs
    from curate.view.index import ShardIndex, default_folder

    try:
        index = ShardIndex(folder or default_folder())
    except OSError as e:
        print(f"curate view: note: no index ({e}); queries read the shards", file=sys.stderr)
        return
    for run in runs:
        if run.kind == "run" and not fs.is_url(run.path):
            run.index = index
            index.want(run.shards("data") + run.shards("rejected"))


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that `--port 0` can print the port it got before serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror} (another --port?)") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
